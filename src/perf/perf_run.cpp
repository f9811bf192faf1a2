#include "perf/perf_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
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

Status create_stream(Connection& c, const std::string& stream, const proto::Properties& args) {
  CreateStreamRequest req;
  req.stream = stream;
  req.arguments = args;
  STRATA_ASSIGN_OR_RETURN(auto r, c.call<CreateStreamResponse>(req));
  if (r.code != ResponseCode::ok && r.code != ResponseCode::stream_already_exists) {
    return make_error(Errc::invalid_argument,
                      fmt::format("create stream {}: {}", stream, response_code_name(r.code)));
  }
  return {};
}

// One run: its connections, its clients and the counters they share, from
// set-up to the summary. Everything runs on one io_context on the calling
// thread.
class PerfRun {
 public:
  PerfRun(const PerfOptions& o, std::ostream& progress)
      : o_(o), progress_(progress), admin_(io_), ticker_(io_) {}

  Result<PerfSummary> run() {
    STRATA_TRY(setup());
    STRATA_TRY(await_subscribed());
    t0_ = last_ns_ = now_ns();
    for (auto& p : producers_) p->start(t0_);
    arm_tick();
    io_.run();
    end_ns_ = now_ns();
    teardown();
    return summary();
  }

 private:
  // The admin connection and the stream, then the clients (consumers
  // first: none misses what the producers send).
  Status setup() {
    STRATA_TRY(admin_.open(o_.connect));
    STRATA_TRY(create_stream(admin_, o_.stream, o_.stream_args));
    const uint64_t run_id = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
    for (int i = 0; i < o_.consumers; ++i) {
      consumers_.push_back(std::make_unique<Consumer>(io_, stats_, o_, i, run_id));
      STRATA_TRY(consumers_.back()->setup());
    }
    for (int i = 0; i < o_.producers; ++i) {
      uint64_t quota = 0;
      if (o_.messages) {
        quota = o_.messages / o_.producers + (uint64_t(i) < o_.messages % o_.producers);
      }
      double rate = o_.rate ? double(o_.rate) / o_.producers : 0;
      producers_.push_back(std::make_unique<Producer>(io_, stats_, o_, i, run_id, quota, rate));
      STRATA_TRY(producers_.back()->setup());
    }
    return {};
  }

  // Publishing starts only once every consumer is subscribed.
  Status await_subscribed() {
    for (auto& c : consumers_) c->start();
    auto all_subscribed = [&] {
      for (auto& c : consumers_) {
        if (!c->subscribed()) return false;
      }
      return true;
    };
    asio::steady_timer deadline(io_, kSubscribeDeadline);
    // Shared with the handler: cancelled below, it still runs (aborted) in
    // a later turn of the io_context, after this function has returned.
    auto timeout = std::make_shared<bool>(false);
    deadline.async_wait([timeout](asio::error_code ec) { *timeout = !ec; });
    while (!all_subscribed() && stats_.errors.empty() && !*timeout) io_.run_one();
    deadline.cancel();
    if (all_subscribed()) return {};
    std::string why = *timeout ? fmt::format("no answer in {} s", kSubscribeDeadline.count())
                               : stats_.errors.front();
    return make_error(Errc::unavailable, "subscribing consumers: " + why);
  }

  void arm_tick() {
    ticker_.expires_after(kTick);
    ticker_.async_wait([this](asio::error_code ec) {
      if (!ec) on_tick();
    });
  }

  void on_tick() {
    const uint64_t now = now_ns();
    const double elapsed = double(now - t0_) / 1e9;
    bool publishing = false;
    for (auto& p : producers_) publishing |= !p->finished_publishing();
    if (publishing && o_.messages == 0 && elapsed >= o_.time_s) {
      for (auto& p : producers_) p->stop();
      publishing = false;
    }
    if (!publishing && publish_end_ns_ == 0) publish_end_ns_ = now;
    if (++tick_ % kTicksPerProgressLine == 0) report_progress(now, elapsed);
    if (finished(now, elapsed)) {
      io_.stop();
      return;
    }
    arm_tick();
  }

  void report_progress(uint64_t now, double elapsed) {
    double dt = double(now - last_ns_) / 1e9;
    progress_ << fmt::format(
                     "{:>4.0f}s published {:.0f} msg/s, confirmed {:.0f} msg/s, consumed {:.0f} "
                     "msg/s, {:.1f} MB/s | confirm latency {} | latency {}",
                     elapsed, double(stats_.published - last_.published) / dt,
                     double(stats_.confirmed - last_.confirmed) / dt,
                     double(stats_.consumed_all - last_.consumed_all) / dt,
                     double(stats_.published_bytes - last_.published_bytes) / dt / 1e6,
                     latency_line(stats_.interval_confirm_ns),
                     latency_line(stats_.interval_deliver_ns))
              << std::endl;
    last_.published = stats_.published;
    last_.confirmed = stats_.confirmed;
    last_.consumed_all = stats_.consumed_all;
    last_.published_bytes = stats_.published_bytes;
    last_ns_ = now;
    stats_.interval_confirm_ns.reset();
    stats_.interval_deliver_ns.reset();
  }

  // After publishing: everything confirmed and consumed, or an error, or
  // the drain's time is up.
  bool finished(uint64_t now, double elapsed) {
    if (!stats_.errors.empty()) return true;
    if (publish_end_ns_ == 0) return false;
    bool confirmed = true;
    for (auto& p : producers_) confirmed &= p->idle();
    bool consumed = true;
    for (auto& c : consumers_) {
      consumed &= o_.producers == 0 ? false : c->consumed() >= stats_.confirmed;
    }
    // Consumers only (no producers): read --messages each (whoever wrote
    // them: a check of what an earlier run left), or run for --time.
    if (o_.producers == 0 && o_.messages > 0) {
      consumed = true;
      for (auto& c : consumers_) consumed &= c->consumed_any() >= o_.messages;
    } else if (o_.producers == 0) {
      consumed = elapsed >= o_.time_s;
    }
    if (confirmed && consumed) return true;
    if (double(now - publish_end_ns_) / 1e9 > o_.drain_timeout_s) {
      drain_timeout_ = true;
      return true;
    }
    return false;
  }

  void teardown() {
    for (auto& p : producers_) p->close();
    for (auto& c : consumers_) c->close();
    io_.restart();
    if (o_.delete_stream) {
      DeleteStreamRequest d;
      d.stream = o_.stream;
      auto r = admin_.call<DeleteStreamResponse>(d);
      if (!r.ok()) {
        stats_.errors.push_back("delete stream: " + r.error().message);
      } else if (r->code != ResponseCode::ok) {
        stats_.errors.push_back(
            fmt::format("delete stream {}: {}", o_.stream, response_code_name(r->code)));
      }
    }
    auto cr = admin_.call<CloseResponse>(CloseRequest{.code = ResponseCode::ok, .reason = "done"});
    (void)cr;
    admin_.close();
  }

  // How the connections opened: over TLS or not, the time to open each
  // (TCP connect to Open's answer) and the TLS handshake's part.
  nlohmann::json connections_json() const {
    OpenTimes& t = *o_.connect.open_times;
    std::lock_guard l(t.mu);
    auto ms = [](std::vector<double> v) {
      if (v.empty()) return nlohmann::json(nullptr);
      std::sort(v.begin(), v.end());
      return nlohmann::json{{"p50", v[v.size() / 2]}, {"max", v.back()}};
    };
    return {{"count", t.open_ms.size()},    {"tls", o_.connect.tls != nullptr},
            {"tls_version", t.tls_version}, {"tls_cipher", t.tls_cipher},
            {"open_ms", ms(t.open_ms)},     {"tls_handshake_ms", ms(t.tls_handshake_ms)}};
  }

  PerfSummary summary() const {
    auto secs = [&](uint64_t from, uint64_t to) { return to > from ? double(to - from) / 1e9 : 0; };
    double publish_s = secs(t0_, publish_end_ns_ ? publish_end_ns_ : end_ns_);
    double confirm_s = secs(t0_, stats_.last_confirm_ns);
    double consume_s = secs(t0_, stats_.last_consume_ns);
    auto per_s = [](double n, double s) { return s > 0 ? n / s : 0.0; };
    nlohmann::json per_consumer = nlohmann::json::array();
    for (auto& c : consumers_) per_consumer.push_back(c->consumed());
    PerfSummary sum;
    sum.json = {
        {"server",
         {{"product", admin_.server_property("product")},
          {"version", admin_.server_property("version")}}},
        {"settings",
         {{"stream", o_.stream},
          {"producers", o_.producers},
          {"consumers", o_.consumers},
          {"size", o_.message_size},
          {"batch_size", o_.batch_size},
          {"sub_entry_size", o_.sub_entry_size},
          {"confirms", o_.confirm_window},
          {"rate", o_.rate},
          {"time_s", o_.time_s},
          {"messages", o_.messages}}},
        {"duration_s", secs(t0_, end_ns_)},
        {"published", stats_.published},
        {"confirmed", stats_.confirmed},
        {"consumed", stats_.consumed},
        {"consumed_per_consumer", per_consumer},
        {"consumed_all", stats_.consumed_all},
        {"chunks", stats_.chunks},
        {"chunk_bytes", stats_.chunk_bytes},
        {"publish_errors", stats_.publish_errors},
        {"crc_errors", stats_.crc_errors},
        {"gaps", stats_.gaps},
        {"drain_timeout", drain_timeout_},
        {"errors", stats_.errors},
        {"rates",
         {{"published_msg_s", per_s(double(stats_.published), publish_s)},
          {"confirmed_msg_s", per_s(double(stats_.confirmed), confirm_s)},
          {"consumed_msg_s", per_s(double(stats_.consumed_all), consume_s)},
          {"published_mb_s", per_s(double(stats_.published_bytes), publish_s) / 1e6},
          {"consumed_mb_s", per_s(double(stats_.consumed_bytes), consume_s) / 1e6}}},
        {"confirm_latency_us", latency_json(stats_.confirm_latency_ns)},
        {"deliver_latency_us", latency_json(stats_.deliver_latency_ns)},
        {"connections", connections_json()},
    };
    bool all_consumed = true;
    for (auto& c : consumers_) {
      if (o_.producers > 0) {
        all_consumed &= c->consumed() == stats_.published;
      } else if (o_.messages > 0) {
        // A filtered consumer also gets the other messages of the chunks
        // its filter may match: at least as many, not exactly.
        all_consumed &=
            o_.filter.empty() ? c->consumed_any() == o_.messages : c->consumed_any() >= o_.messages;
      }
    }
    sum.ok = stats_.errors.empty() && !drain_timeout_ && stats_.crc_errors == 0 &&
             stats_.gaps == 0 && stats_.publish_errors == 0 &&
             stats_.confirmed == stats_.published && all_consumed;
    sum.json["ok"] = sum.ok;
    return sum;
  }

  // Consumers not subscribed by then: the run fails.
  static constexpr std::chrono::seconds kSubscribeDeadline{30};
  // The run looks at its clients this often, and prints a line every so
  // many looks (once a second).
  static constexpr std::chrono::milliseconds kTick{100};
  static constexpr int kTicksPerProgressLine = 10;

  const PerfOptions& o_;
  std::ostream& progress_;
  asio::io_context io_;
  Connection admin_;
  RunStats stats_;
  std::vector<std::unique_ptr<Consumer>> consumers_;
  std::vector<std::unique_ptr<Producer>> producers_;
  asio::steady_timer ticker_;
  uint64_t t0_ = 0;
  uint64_t end_ns_ = 0;
  uint64_t publish_end_ns_ = 0;
  bool drain_timeout_ = false;
  RunStats last_;  // counters at the previous progress line
  uint64_t last_ns_ = 0;
  int tick_ = 0;
};

}  // namespace

Result<PerfSummary> run_perf(const PerfOptions& o, std::ostream& progress) {
  if (o.producers < 0 || o.consumers < 0 || (o.producers == 0 && o.consumers == 0)) {
    return make_error(Errc::invalid_argument, "need at least one producer or consumer");
  }
  if (o.sub_entry_size > 0xffff) {
    return make_error(Errc::invalid_argument, "--sub-entry-size: at most 65535");
  }
  PerfOptions with_times = o;
  if (!with_times.connect.open_times) with_times.connect.open_times = std::make_shared<OpenTimes>();
  return PerfRun(with_times, progress).run();
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
  const auto& cn = j["connections"];
  if (cn.is_object() && cn["open_ms"].is_object()) {
    s += fmt::format("  connections: {} over {}: open p50 {:.2f} ms, max {:.2f} ms{}\n",
                     cn["count"].get<uint64_t>(),
                     cn["tls"].get<bool>()
                         ? fmt::format("{} ({})", cn["tls_version"].get<std::string>(),
                                       cn["tls_cipher"].get<std::string>())
                         : std::string("plain TCP"),
                     cn["open_ms"]["p50"].get<double>(), cn["open_ms"]["max"].get<double>(),
                     cn["tls_handshake_ms"].is_object()
                         ? fmt::format("; TLS handshake p50 {:.2f} ms",
                                       cn["tls_handshake_ms"]["p50"].get<double>())
                         : std::string());
  }
  s += fmt::format("  errors: publish {}, crc {}, gaps {}{}\n", j["publish_errors"].get<uint64_t>(),
                   j["crc_errors"].get<uint64_t>(), j["gaps"].get<uint64_t>(),
                   j["drain_timeout"].get<bool>() ? ", drain timed out" : "");
  for (const auto& e : j["errors"]) s += "  error: " + e.get<std::string>() + "\n";
  return s;
}

}  // namespace strata::perf
