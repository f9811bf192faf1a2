// The watch: one thread per watch streaming POST /v3/watch through the curl
// multi interface (so destroying the watch wakes the thread at once with
// curl_multi_wakeup, however idle the stream). The gateway streams one JSON
// object per message ({"result": {...}}); JsonSplitter cuts them out of the
// byte stream. A lost connection moves to the next endpoint and resumes
// from the revision after the last one delivered, so no event is missed or
// delivered twice. A silent stream is probed (etcd_client.h): the probe is a
// second transfer on the same multi handle, so stopping still wakes at once.
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/assert.h"
#include "etcd/curl_post.h"
#include "etcd/etcd_client.h"
#include "etcd/etcd_json.h"
#include "etcd/etcd_limits.h"
#include "etcd/json_splitter.h"
#include "net/curl_pool.h"

namespace strata::etcd {

namespace {

using nlohmann::json;

class EtcdWatch final : public Watch {
 public:
  using TokenFn = std::function<Result<std::string>(bool renew)>;

  EtcdWatch(const ClientOptions& opts, size_t first_endpoint, WatchRequest req,
            WatchEventsFn on_events, WatchErrorFn on_error, TokenFn token)
      : opts_(opts),
        token_fn_(std::move(token)),
        req_(std::move(req)),
        on_events_(std::move(on_events)),
        on_error_(std::move(on_error)),
        endpoint_(first_endpoint),
        next_rev_(req_.start_revision) {
    net::ensure_curl_initialized();
    multi_ = curl_multi_init();
    thread_ = std::thread([this] { run(); });
  }

  ~EtcdWatch() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    curl_multi_wakeup(multi_);
    thread_.join();
    curl_multi_cleanup(multi_);
  }

  int64_t next_revision() const override { return next_rev_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  // What ended one connection.
  enum class End : uint8_t { reconnect, finished, stopped };

  void run() {
    while (!stopping()) {
      // With etcd's authentication on: the client's token, a new one after
      // a member refused it. Not getting one (etcd unreachable) is a
      // reconnect like any other.
      End e = End::reconnect;
      if (auto t = token_fn_(renew_token_); t.ok()) {
        token_ = std::move(t).value();
        renew_token_ = false;
        e = stream_once(opts_.endpoints[endpoint_ % opts_.endpoints.size()]);
      } else {
        last_problem_ = t.error().message;
      }
      if (e != End::reconnect) return;
      ++endpoint_;
      // A short pause before the next endpoint (woken at once by stop).
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, kWatchReconnectPause, [&] { return stop_; });
    }
  }

  bool stopping() {
    std::lock_guard lock(mu_);
    return stop_;
  }

  static size_t on_data(char* data, size_t size, size_t n, void* user) {
    auto* self = static_cast<EtcdWatch*>(user);
    self->last_heard_ = Clock::now();
    return self->feed(std::string_view(data, size * n)) ? size * n : 0;
  }

  static size_t on_probe_data(char* data, size_t size, size_t n, void* user) {
    static_cast<std::string*>(user)->append(data, size * n);
    return size * n;
  }

  // The probe of a silent member: a linearizable read of the watched key.
  struct Probe {
    CURL* h = nullptr;
    curl_slist* headers = nullptr;
    std::string body, reply;
  };

  void start_probe(const std::string& ep, Probe* p) {
    // One probe at a time: a second would leave the first on the multi
    // handle, never cleaned up.
    STRATA_ASSERT(p->h == nullptr, "etcd watch: a probe started while one runs");
    p->h = curl_easy_init();
    if (!p->h) return;
    p->body = range_json(req_.key, "", 1).dump();
    p->reply.clear();
    p->headers = set_json_post(p->h, ep + "/v3/kv/range", p->body, opts_.tls, token_);
    curl_easy_setopt(p->h, CURLOPT_CONNECTTIMEOUT_MS, long(opts_.connect_timeout.count()));
    curl_easy_setopt(p->h, CURLOPT_TIMEOUT_MS, long(opts_.attempt_timeout.count()));
    curl_easy_setopt(p->h, CURLOPT_WRITEFUNCTION, on_probe_data);
    curl_easy_setopt(p->h, CURLOPT_WRITEDATA, &p->reply);
    curl_multi_add_handle(multi_, p->h);
  }

  void end_probe(Probe* p) {
    if (!p->h) return;
    curl_multi_remove_handle(multi_, p->h);
    curl_easy_cleanup(p->h);
    curl_slist_free_all(p->headers);
    p->h = nullptr;
    p->headers = nullptr;
  }

  // Whether a finished probe found the member able to serve: HTTP 200 and a
  // reply that is not a gateway error. Otherwise *why says what it saw.
  bool probe_answered(const Probe& p, CURLcode rc, std::string* why) {
    long status = 0;
    curl_easy_getinfo(p.h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) {
      *why = curl_easy_strerror(rc);
      return false;
    }
    auto reply = json::parse(p.reply, nullptr, false);
    if (status != 200 || !reply.is_object() || reply.contains("error")) {
      *why = fmt::format("HTTP {}: {}", status, p.reply.substr(0, kProbeSnippetBytes));
      return false;
    }
    return true;
  }

  // False ends the transfer.
  bool feed(std::string_view bytes) {
    splitter_.append(bytes);
    while (auto doc = splitter_.next()) {
      if (!doc->ok()) {
        last_problem_ = doc->error().message;
        return false;
      }
      if (!handle(json::parse(doc->value(), nullptr, false))) return false;
    }
    if (splitter_.buffered() > kMaxWatchMessageBytes) {
      last_problem_ = fmt::format("a watch message larger than {} bytes", kMaxWatchMessageBytes);
      return false;
    }
    return true;
  }

  // One message of the stream. False ends the transfer (reconnect, or, if
  // finish() was called, the end of the watch).
  bool handle(const json& msg) {
    if (msg.is_discarded() || !msg.is_object()) {
      last_problem_ = "unparsable JSON in the watch stream";
      return false;
    }
    auto res = msg.find("result");
    if (res == msg.end() || !res->is_object()) {
      auto ge = decode_gateway_error(
          msg.contains("error") && msg["error"].is_object() ? msg["error"] : msg);
      if (ge && invalid_auth_token(ge->message)) {
        // Expired: reconnect with a new one.
        renew_token_ = true;
        last_problem_ = ge->message;
      } else if (ge && !retry_elsewhere(ge->grpc_code)) {
        finish(Error(errc_for_grpc(ge->grpc_code), ge->message));
      } else {
        last_problem_ = ge ? ge->message : "a watch message without \"result\"";
      }
      return false;
    }
    if (ended_by_etcd(*res)) return false;
    return deliver(*res);
  }

  // A compacted start revision or a cancelled watch ends the watch; a watch
  // cancelled for an expired token ends only this connection (true, no
  // finish()).
  bool ended_by_etcd(const json& res) {
    auto compact = int64_field(res, "compact_revision");
    if (compact.ok() && *compact > 0) {
      finish(Error(Errc::out_of_range,
                   fmt::format("revision {} was compacted (compact revision {}); re-read the "
                               "current state and watch from there",
                               next_rev_.load(), *compact)));
      return true;
    }
    auto canceled = res.find("canceled");
    if (canceled != res.end() && canceled->is_boolean() && canceled->get<bool>()) {
      auto reason = res.find("cancel_reason");
      // With etcd's authentication on, a member cancels a watch whose
      // token expired: reconnect (with a new token), not the watch's end.
      if (reason != res.end() && reason->is_string() &&
          invalid_auth_token(reason->get<std::string>())) {
        renew_token_ = true;
        last_problem_ = reason->get<std::string>();
        return true;
      }
      finish(Error(Errc::invalid_argument, fmt::format("etcd cancelled the watch: {}",
                                                       reason != res.end() && reason->is_string()
                                                           ? reason->get<std::string>()
                                                           : std::string("no reason given"))));
      return true;
    }
    return false;
  }

  // The message's events from next_rev_ on go to on_events, in revision
  // order; a message whose events go back in revision is not etcd's order
  // and ends the transfer (the watch resumes from next_rev_).
  bool deliver(const json& res) {
    auto events = decode_events(res);
    if (!events.ok()) {
      last_problem_ = events.error().message;
      return false;
    }
    std::vector<WatchEvent> fresh;
    for (auto& ev : *events) {
      // After a reconnect etcd replays from next_rev_; anything older was delivered.
      if (ev.kv.mod_revision < next_rev_.load()) continue;
      if (!fresh.empty() && ev.kv.mod_revision < fresh.back().kv.mod_revision) {
        last_problem_ = "watch events out of revision order";
        return false;
      }
      fresh.push_back(std::move(ev));
    }
    if (!fresh.empty()) {
      advance(fresh.back().kv.mod_revision + 1);
      STRATA_ASSERT(!finished_, "etcd watch: events delivered after the watch ended");
      on_events_(fresh);
    } else if (next_rev_.load() == 0) {
      // Watching "from now": pin the start so a reconnect resumes, not skips.
      auto rev = header_revision(res);
      if (rev.ok() && *rev > 0) advance(*rev + 1);
    }
    return true;
  }

  // The resume point only rises: a step back would deliver a revision twice.
  void advance(int64_t next) {
    STRATA_ASSERT(next >= next_rev_.load(), "etcd watch: the resume revision went back");
    next_rev_.store(next);
  }

  // Ends the watch: on_error once, nothing after it.
  void finish(Error e) {
    STRATA_ASSERT(!finished_, "etcd watch: ended twice");
    finished_ = true;
    on_error_(
        std::move(e).with_context(fmt::format("etcd watch of \"{}\"", printable_key(req_.key))));
  }

  // The watch's POST /v3/watch on `ep`, added to the multi handle.
  CURL* start_transfer(const std::string& ep, const std::string& body, curl_slist** headers) {
    CURL* h = curl_easy_init();
    if (!h) return nullptr;
    *headers = set_json_post(h, ep + "/v3/watch", body, opts_.tls, token_);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, long(opts_.connect_timeout.count()));
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, kWatchKeepIdleSeconds);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, kWatchKeepIntervalSeconds);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
    curl_multi_add_handle(multi_, h);
    return h;
  }

  // The transfers that ended since the last look: whether the watch's own
  // did, and whether a probe found its member unable to serve.
  void read_ended(const std::string& ep, CURL* watch, Probe* probe, bool* watch_done,
                  bool* member_silent) {
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      if (m->easy_handle == watch) {
        *watch_done = true;
      } else if (probe->h && m->easy_handle == probe->h) {
        std::string why;
        if (probe_answered(*probe, m->data.result, &why)) {
          last_heard_ = Clock::now();
        } else {
          last_problem_ =
              fmt::format("{} did not answer a read within {} ms of a silent watch ({})", ep,
                          opts_.attempt_timeout.count(), why);
          *member_silent = true;
        }
        end_probe(probe);
      }
    }
  }

  // How long to sleep in curl_multi_poll: until the next probe is due, at
  // most kWatchPollMax.
  int poll_wait_ms(const Probe& probe, Clock::time_point now) const {
    const auto probe_every = opts_.watch_probe_interval;
    if (probe_every.count() <= 0 || probe.h) return int(kWatchPollMax.count());
    auto until =
        std::chrono::duration_cast<std::chrono::milliseconds>(last_heard_ + probe_every - now);
    return int(std::clamp<int64_t>(until.count(), 1, kWatchPollMax.count()));
  }

  // One connection to `ep`, until it ends, its member goes silent, etcd
  // ends the watch, or the watch is stopped.
  End stream_once(const std::string& ep) {
    splitter_ = JsonSplitter();
    WatchRequest r = req_;
    r.start_revision = next_rev_.load();
    const std::string body = watch_create_json(r).dump();
    curl_slist* headers = nullptr;
    CURL* h = start_transfer(ep, body, &headers);
    if (!h) return End::reconnect;
    last_heard_ = Clock::now();
    const auto probe_every = opts_.watch_probe_interval;
    Probe probe;
    End end = End::reconnect;
    for (;;) {
      if (stopping()) {
        end = End::stopped;
        break;
      }
      int running = 0;
      curl_multi_perform(multi_, &running);
      if (finished_) {
        end = End::finished;
        break;
      }
      bool watch_done = false, member_silent = false;
      read_ended(ep, h, &probe, &watch_done, &member_silent);
      // The watch connection ended, or its member cannot serve: reconnect.
      if (watch_done || member_silent) break;
      const auto now = Clock::now();
      if (probe_every.count() > 0 && !probe.h && now - last_heard_ >= probe_every) {
        start_probe(ep, &probe);
      }
      curl_multi_poll(multi_, nullptr, 0, poll_wait_ms(probe, now), nullptr);
    }
    end_probe(&probe);
    curl_multi_remove_handle(multi_, h);
    curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    return end;
  }

  const ClientOptions opts_;
  const TokenFn token_fn_;
  std::string token_;  // the one this connection sends
  bool renew_token_ = false;
  const WatchRequest req_;
  WatchEventsFn on_events_;
  WatchErrorFn on_error_;
  size_t endpoint_;
  std::atomic<int64_t> next_rev_;
  // When the stream last delivered bytes or a probe was answered.
  Clock::time_point last_heard_;
  CURLM* multi_ = nullptr;
  JsonSplitter splitter_;
  std::string last_problem_;
  bool finished_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Watch> EtcdClient::watch(WatchRequest request, WatchEventsFn on_events,
                                         WatchErrorFn on_error) {
  return std::make_unique<EtcdWatch>(options_, preferred_endpoint(), std::move(request),
                                     std::move(on_events), std::move(on_error),
                                     [this](bool renew) { return auth_token(renew); });
}

}  // namespace strata::etcd
