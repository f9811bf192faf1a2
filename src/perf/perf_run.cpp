#include "perf/perf_run.h"

#include <fmt/format.h>

#include <random>

#include "perf/load.h"

namespace strata::perf {

using namespace strata::proto;

namespace {

nlohmann::json latency_json(const LogHistogram& h) {
  auto us = [](uint64_t ns) { return double(ns) / 1000.0; };
  return {{"count", h.count()},          {"p50", us(h.quantile(0.50))},
          {"p99", us(h.quantile(0.99))}, {"p999", us(h.quantile(0.999))},
          {"max", us(h.max())},          {"mean", h.mean() / 1000.0}};
}

std::string ms(uint64_t ns) {
  return fmt::format("{:.2f}", double(ns) / 1e6);
}

std::string latency_line(const LogHistogram& h) {
  if (h.count() == 0) return "-";
  return fmt::format("{}/{}/{} ms", ms(h.quantile(0.5)), ms(h.quantile(0.99)),
                     ms(h.quantile(0.999)));
}

Status create_stream(Connection& c, const std::string& stream) {
  CreateStreamRequest req;
  req.stream = stream;
  STRATA_ASSIGN_OR_RETURN(auto r, c.call<CreateStreamResponse>(req));
  if (r.code != ResponseCode::ok && r.code != ResponseCode::stream_already_exists) {
    return make_error(Errc::invalid_argument,
                      fmt::format("create stream {}: {}", stream, response_code_name(r.code)));
  }
  return {};
}

}  // namespace

Result<PerfSummary> run_perf(const PerfOptions& o, std::ostream& progress) {
  if (o.producers < 0 || o.consumers < 0 || (o.producers == 0 && o.consumers == 0)) {
    return make_error(Errc::invalid_argument, "need at least one producer or consumer");
  }
  if (o.sub_entry_size > 0xffff) {
    return make_error(Errc::invalid_argument, "--sub-entry-size: at most 65535");
  }
  asio::io_context io;
  Connection admin(io);
  STRATA_TRY(admin.open(o.connect));
  STRATA_TRY(create_stream(admin, o.stream));

  RunStats stats;
  uint64_t run_id = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  std::vector<std::unique_ptr<Consumer>> consumers;
  std::vector<std::unique_ptr<Producer>> producers;
  for (int i = 0; i < o.consumers; ++i) {
    consumers.push_back(std::make_unique<Consumer>(io, stats, o, i, run_id));
    STRATA_TRY(consumers.back()->setup());
  }
  for (int i = 0; i < o.producers; ++i) {
    uint64_t quota = 0;
    if (o.messages) quota = o.messages / o.producers + (uint64_t(i) < o.messages % o.producers);
    double rate = o.rate ? double(o.rate) / o.producers : 0;
    producers.push_back(std::make_unique<Producer>(io, stats, o, i, run_id, quota, rate));
    STRATA_TRY(producers.back()->setup());
  }

  // Consumers first, and publishing only once they are subscribed.
  for (auto& c : consumers) c->start();
  auto all_subscribed = [&] {
    for (auto& c : consumers) {
      if (!c->subscribed()) return false;
    }
    return true;
  };
  asio::steady_timer subscribe_deadline(io, std::chrono::seconds(30));
  bool subscribe_timeout = false;
  subscribe_deadline.async_wait([&](asio::error_code ec) { subscribe_timeout = !ec; });
  while (!all_subscribed() && stats.errors.empty() && !subscribe_timeout) io.run_one();
  subscribe_deadline.cancel();
  if (!all_subscribed()) {
    std::string why = subscribe_timeout ? "no answer in 30 s" : stats.errors.front();
    return make_error(Errc::unavailable, "subscribing consumers: " + why);
  }

  uint64_t t0 = now_ns();
  for (auto& p : producers) p->start(t0);

  uint64_t publish_end_ns = 0;
  bool drain_timeout = false;
  RunStats last;  // counters at the previous progress line
  uint64_t last_ns = t0;
  int tick = 0;
  asio::steady_timer ticker(io);
  std::function<void()> on_tick = [&] {
    uint64_t now = now_ns();
    double elapsed = double(now - t0) / 1e9;
    bool publishing = false;
    for (auto& p : producers) publishing |= !p->finished_publishing();
    if (publishing && o.messages == 0 && elapsed >= o.time_s) {
      for (auto& p : producers) p->stop();
      publishing = false;
    }
    if (!publishing && publish_end_ns == 0) publish_end_ns = now;
    if (++tick % 10 == 0) {
      double dt = double(now - last_ns) / 1e9;
      progress << fmt::format(
                      "{:>4.0f}s published {:.0f} msg/s, confirmed {:.0f} msg/s, consumed {:.0f} "
                      "msg/s, {:.1f} MB/s | confirm latency {} | latency {}",
                      elapsed, double(stats.published - last.published) / dt,
                      double(stats.confirmed - last.confirmed) / dt,
                      double(stats.consumed_all - last.consumed_all) / dt,
                      double(stats.published_bytes - last.published_bytes) / dt / 1e6,
                      latency_line(stats.interval_confirm_ns),
                      latency_line(stats.interval_deliver_ns))
               << std::endl;
      last.published = stats.published;
      last.confirmed = stats.confirmed;
      last.consumed_all = stats.consumed_all;
      last.published_bytes = stats.published_bytes;
      last_ns = now;
      stats.interval_confirm_ns.reset();
      stats.interval_deliver_ns.reset();
    }
    bool done = false;
    if (!stats.errors.empty()) {
      done = true;
    } else if (publish_end_ns != 0) {
      bool confirmed = true;
      for (auto& p : producers) confirmed &= p->idle();
      bool consumed = true;
      for (auto& c : consumers) {
        consumed &= o.producers == 0 ? false : c->consumed() >= stats.confirmed;
      }
      // Consumers only (no producers): read --messages each (whoever wrote
      // them: a check of what an earlier run left), or run for --time.
      if (o.producers == 0 && o.messages > 0) {
        consumed = true;
        for (auto& c : consumers) consumed &= c->consumed_any() >= o.messages;
      } else if (o.producers == 0) {
        consumed = elapsed >= o.time_s;
      }
      if (confirmed && consumed) done = true;
      if (double(now - publish_end_ns) / 1e9 > o.drain_timeout_s) {
        drain_timeout = true;
        done = true;
      }
    }
    if (done) {
      io.stop();
      return;
    }
    ticker.expires_after(std::chrono::milliseconds(100));
    ticker.async_wait([&](asio::error_code ec) {
      if (!ec) on_tick();
    });
  };
  ticker.expires_after(std::chrono::milliseconds(100));
  ticker.async_wait([&](asio::error_code ec) {
    if (!ec) on_tick();
  });
  io.run();
  uint64_t end_ns = now_ns();
  for (auto& p : producers) p->close();
  for (auto& c : consumers) c->close();
  io.restart();

  if (o.delete_stream) {
    DeleteStreamRequest d;
    d.stream = o.stream;
    auto r = admin.call<DeleteStreamResponse>(d);
    if (!r.ok()) {
      stats.errors.push_back("delete stream: " + r.error().message);
    } else if (r->code != ResponseCode::ok) {
      stats.errors.push_back(
          fmt::format("delete stream {}: {}", o.stream, response_code_name(r->code)));
    }
  }
  auto cr = admin.call<CloseResponse>(CloseRequest{.code = ResponseCode::ok, .reason = "done"});
  (void)cr;
  admin.close();

  auto secs = [&](uint64_t from, uint64_t to) { return to > from ? double(to - from) / 1e9 : 0; };
  double publish_s = secs(t0, publish_end_ns ? publish_end_ns : end_ns);
  double confirm_s = secs(t0, stats.last_confirm_ns);
  double consume_s = secs(t0, stats.last_consume_ns);
  auto per_s = [](double n, double s) { return s > 0 ? n / s : 0.0; };

  nlohmann::json per_consumer = nlohmann::json::array();
  for (auto& c : consumers) per_consumer.push_back(c->consumed());
  PerfSummary sum;
  sum.json = {
      {"server",
       {{"product", admin.server_property("product")},
        {"version", admin.server_property("version")}}},
      {"settings",
       {{"stream", o.stream},
        {"producers", o.producers},
        {"consumers", o.consumers},
        {"size", o.message_size},
        {"batch_size", o.batch_size},
        {"sub_entry_size", o.sub_entry_size},
        {"confirms", o.confirm_window},
        {"rate", o.rate},
        {"time_s", o.time_s},
        {"messages", o.messages}}},
      {"duration_s", secs(t0, end_ns)},
      {"published", stats.published},
      {"confirmed", stats.confirmed},
      {"consumed", stats.consumed},
      {"consumed_per_consumer", per_consumer},
      {"consumed_all", stats.consumed_all},
      {"chunks", stats.chunks},
      {"publish_errors", stats.publish_errors},
      {"crc_errors", stats.crc_errors},
      {"gaps", stats.gaps},
      {"drain_timeout", drain_timeout},
      {"errors", stats.errors},
      {"rates",
       {{"published_msg_s", per_s(double(stats.published), publish_s)},
        {"confirmed_msg_s", per_s(double(stats.confirmed), confirm_s)},
        {"consumed_msg_s", per_s(double(stats.consumed_all), consume_s)},
        {"published_mb_s", per_s(double(stats.published_bytes), publish_s) / 1e6},
        {"consumed_mb_s", per_s(double(stats.consumed_bytes), consume_s) / 1e6}}},
      {"confirm_latency_us", latency_json(stats.confirm_latency_ns)},
      {"deliver_latency_us", latency_json(stats.deliver_latency_ns)},
  };
  bool all_consumed = true;
  for (auto& c : consumers) {
    if (o.producers > 0) {
      all_consumed &= c->consumed() == stats.published;
    } else if (o.messages > 0) {
      all_consumed &= c->consumed_any() == o.messages;
    }
  }
  sum.ok = stats.errors.empty() && !drain_timeout && stats.crc_errors == 0 && stats.gaps == 0 &&
           stats.publish_errors == 0 && stats.confirmed == stats.published && all_consumed;
  sum.json["ok"] = sum.ok;
  return sum;
}

std::string format_summary(const nlohmann::json& j) {
  std::string s;
  const auto& r = j["rates"];
  const auto& cl = j["confirm_latency_us"];
  const auto& dl = j["deliver_latency_us"];
  s += fmt::format("strata perf against {} {}: {:.1f} s\n",
                   j["server"]["product"].get<std::string>(),
                   j["server"]["version"].get<std::string>(), j["duration_s"].get<double>());
  s += fmt::format("  published {} ({:.0f} msg/s, {:.1f} MB/s), confirmed {} ({:.0f} msg/s)\n",
                   j["published"].get<uint64_t>(), r["published_msg_s"].get<double>(),
                   r["published_mb_s"].get<double>(), j["confirmed"].get<uint64_t>(),
                   r["confirmed_msg_s"].get<double>());
  s += fmt::format("  consumed {} of this run ({:.0f} msg/s, {:.1f} MB/s, {} chunks)\n",
                   j["consumed"].get<uint64_t>(), r["consumed_msg_s"].get<double>(),
                   r["consumed_mb_s"].get<double>(), j["chunks"].get<uint64_t>());
  s += fmt::format(
      "  confirm latency p50 {:.0f} us, p99 {:.0f} us, p99.9 {:.0f} us, max {:.0f} us\n",
      cl["p50"].get<double>(), cl["p99"].get<double>(), cl["p999"].get<double>(),
      cl["max"].get<double>());
  s += fmt::format(
      "  publish-to-deliver latency p50 {:.0f} us, p99 {:.0f} us, p99.9 {:.0f} us, "
      "max {:.0f} us\n",
      dl["p50"].get<double>(), dl["p99"].get<double>(), dl["p999"].get<double>(),
      dl["max"].get<double>());
  s += fmt::format("  errors: publish {}, crc {}, gaps {}{}\n", j["publish_errors"].get<uint64_t>(),
                   j["crc_errors"].get<uint64_t>(), j["gaps"].get<uint64_t>(),
                   j["drain_timeout"].get<bool>() ? ", drain timed out" : "");
  for (const auto& e : j["errors"]) s += "  error: " + e.get<std::string>() + "\n";
  return s;
}

}  // namespace strata::perf
