#include "cluster/cluster_workload.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace strata::test {

using namespace proto;
using namespace std::chrono_literals;

namespace {

// Waiting for another process to change (a leader to appear): a short pause
// before asking again.
void pause() {
  std::this_thread::sleep_for(100ms);
}

}  // namespace

Workload::Workload(ServeCluster& cluster, WorkloadOptions options)
    : cluster_(cluster), opt_(std::move(options)) {}

Workload::~Workload() {
  stop();
}

void Workload::start() {
  for (int k = 0; k < opt_.publishers; ++k) {
    threads_.emplace_back([this, k] { publisher_loop(uint32_t(k)); });
  }
  if (opt_.consume) threads_.emplace_back([this] { consumer_loop(); });
}

void Workload::stop() {
  stop_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t Workload::confirms() const {
  std::lock_guard lock(mu_);
  return confirms_;
}

bool Workload::await_confirms(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return confirms_ >= n; });
}

bool Workload::drain(std::chrono::milliseconds timeout) {
  draining_ = true;
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return drained_ >= opt_.publishers; });
}

History Workload::history() const {
  std::lock_guard lock(mu_);
  return history_;
}

std::vector<Workload::ConfirmAt> Workload::confirm_times() const {
  std::lock_guard lock(mu_);
  return confirm_times_;
}

void Workload::record_publish(MessageId m) {
  std::lock_guard lock(mu_);
  history_.publish(m);
}

void Workload::record_confirm(MessageId m, int node) {
  {
    std::lock_guard lock(mu_);
    history_.confirm(m);
    confirm_times_.push_back({Clock::now(), node});
    confirms_ += 1;
  }
  cv_.notify_all();
}

int Workload::new_subscription() {
  std::lock_guard lock(mu_);
  return subscriptions_++;
}

int Workload::connect_leader(int hint, StreamClient* out) {
  const int n = cluster_.size();
  for (int j = 0; j < n; ++j) {
    int leader = cluster_.leader((hint + j) % n, opt_.stream);
    if (leader < 0) continue;
    auto c = cluster_.client(leader);
    if (!c.ok()) continue;
    *out = std::move(*c);
    return leader;
  }
  return -1;
}

void Workload::publisher_loop(uint32_t k) {
  const std::string ref = "w" + std::to_string(k);
  std::set<uint64_t> unconfirmed;
  uint64_t next = 1;
  int hint = int(k) % cluster_.size();
  Bytes storage;
  // One Publish frame of `ids` (recorded as published).
  auto send = [&](StreamClient& c, const std::vector<uint64_t>& ids) {
    std::vector<std::string> bodies;
    for (uint64_t id : ids) bodies.push_back(body_of({k, id}));
    storage.clear();
    std::vector<size_t> at;
    for (const auto& b : bodies) {
      at.push_back(storage.size());
      append_simple_entry(&storage, b);
    }
    PublishRequest p;
    p.publisher_id = 1;
    for (size_t i = 0; i < ids.size(); ++i) {
      size_t end = i + 1 < ids.size() ? at[i + 1] : storage.size();
      p.messages.push_back({ids[i], std::nullopt, BytesView(storage.data() + at[i], end - at[i])});
      record_publish({k, ids[i]});
    }
    return c.send(p).ok();
  };
  auto done_draining = [&] { return draining_ && unconfirmed.empty(); };

  while (!stop_ && !done_draining()) {
    StreamClient c;
    const int node = connect_leader(hint, &c);
    if (node < 0) {
      pause();
      continue;
    }
    hint = node;
    if (!c.send(DeclarePublisherRequest{c.corr(), 1, ref, opt_.stream}).ok()) continue;
    auto declared = c.expect<DeclarePublisherResponse>(opt_.stall);
    if (!declared.ok() || declared->code != ResponseCode::ok) {
      // A new owner still opening the stream, or a stale leader.
      pause();
      continue;
    }
    // Everything unconfirmed again, same ids: the server drops what it
    // already stored and confirms it.
    bool broken = false;
    std::vector<uint64_t> ids;
    for (uint64_t id : unconfirmed) {
      ids.push_back(id);
      if (int(ids.size()) == opt_.frame) {
        broken = broken || !send(c, ids);
        ids.clear();
      }
    }
    if (!ids.empty()) broken = broken || !send(c, ids);

    auto progress = Clock::now();
    auto next_send = Clock::now();
    while (!stop_ && !broken && !done_draining()) {
      auto now = Clock::now();
      const bool room = !draining_ && int(unconfirmed.size()) + opt_.frame <= opt_.window;
      if (room && now >= next_send) {
        if (unconfirmed.empty()) progress = now;
        ids.clear();
        for (int i = 0; i < opt_.frame; ++i) {
          ids.push_back(next);
          unconfirmed.insert(next++);
        }
        broken = !send(c, ids);
        next_send = now + opt_.pace;
        continue;
      }
      auto wait = 200ms;
      if (room) {
        wait = std::min(
            wait, std::chrono::duration_cast<std::chrono::milliseconds>(next_send - now) + 1ms);
      }
      auto f = c.read(wait);
      if (!f.ok()) {
        if (f.error().code != Errc::timeout) broken = true;
        if (!unconfirmed.empty() && Clock::now() - progress > opt_.stall) broken = true;
        continue;
      }
      if (auto* conf = std::get_if<PublishConfirm>(&*f)) {
        for (uint64_t id : conf->publishing_ids) {
          record_confirm({k, id}, node);
          unconfirmed.erase(id);
        }
        progress = Clock::now();
      } else if (std::holds_alternative<PublishError>(*f) ||
                 std::holds_alternative<MetadataUpdate>(*f)) {
        broken = true;
      }
    }
  }
  if (done_draining()) {
    {
      std::lock_guard lock(mu_);
      drained_ += 1;
    }
    cv_.notify_all();
  }
}

void Workload::record_deliveries(int subscription, const DeliverFrame& d, uint64_t from,
                                 std::optional<uint64_t>* last) {
  auto h = decode_osiris_header(d.chunk);
  auto recs = chunk_records(d);
  if (!h.ok() || !recs.ok()) {
    ADD_FAILURE() << "a delivered chunk does not decode: "
                  << (h.ok() ? recs.error() : h.error()).to_string();
    return;
  }
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < recs->size(); ++i) {
    const uint64_t offset = h->chunk_id + i;
    // A chunk is delivered whole: records before the requested offset are
    // the client's to skip.
    if (offset < from) continue;
    MessageId m;
    if (!parse_body((*recs)[i], &m)) {
      ADD_FAILURE() << "a delivered record is no workload message: " << (*recs)[i];
      continue;
    }
    history_.deliver(subscription, offset, m);
    *last = offset;
  }
}

void Workload::consumer_loop() {
  std::optional<uint64_t> last;
  int hint = 0;
  bool refused = false;
  while (!stop_) {
    StreamClient c;
    const int node = connect_leader(hint, &c);
    if (node < 0) {
      pause();
      continue;
    }
    hint = node;
    OffsetSpec spec{OffsetType::first, 0};
    uint64_t from = 0;
    if (last) {
      from = *last + 1;
      // After a takeover the new owner's log may end before where the last
      // one's local log did (a refusal): go on from its end then.
      spec =
          refused ? OffsetSpec{OffsetType::next, 0} : OffsetSpec{OffsetType::offset, int64_t(from)};
    }
    if (!c.send(SubscribeRequest{c.corr(), 1, opt_.stream, spec, 10, {}}).ok()) continue;
    auto r = c.expect<SubscribeResponse>(opt_.stall);
    if (!r.ok() || r->code != ResponseCode::ok) {
      refused = r.ok();
      pause();
      continue;
    }
    refused = false;
    const int sub = new_subscription();
    auto heard = Clock::now();
    while (!stop_) {
      auto f = c.read(200ms);
      if (!f.ok()) {
        if (f.error().code != Errc::timeout || Clock::now() - heard > opt_.stall) break;
        continue;
      }
      if (auto* d = std::get_if<DeliverFrame>(&*f)) {
        record_deliveries(sub, *d, from, &last);
        heard = Clock::now();
        if (!c.send(CreditRequest{1, 1}).ok()) break;
      } else if (std::holds_alternative<MetadataUpdate>(*f)) {
        break;
      } else if (std::holds_alternative<HeartbeatFrame>(*f)) {
        continue;
      }
    }
  }
}

bool Workload::final_read(int ask, std::chrono::milliseconds timeout) {
  std::set<MessageId> want;
  {
    std::lock_guard lock(mu_);
    for (const auto& e : history_.events) {
      if (e.kind == HistoryEvent::Kind::confirm) want.insert(e.message);
    }
  }
  StreamClient c;
  if (connect_leader(ask, &c) < 0) return false;
  if (!c.send(SubscribeRequest{c.corr(), 1, opt_.stream, {OffsetType::first, 0}, 10, {}}).ok()) {
    return false;
  }
  auto r = c.expect<SubscribeResponse>(opt_.stall);
  if (!r.ok() || r->code != ResponseCode::ok) return false;
  const int sub = new_subscription();
  {
    std::lock_guard lock(mu_);
    history_.final_subscriptions.push_back(sub);
  }
  std::optional<uint64_t> last;
  size_t seen_before = 0;
  const auto deadline = Clock::now() + timeout;
  auto heard = Clock::now();
  while (Clock::now() < deadline && Clock::now() - heard < opt_.stall) {
    auto f = c.read(200ms);
    if (!f.ok()) {
      if (f.error().code != Errc::timeout) break;
      continue;
    }
    auto* d = std::get_if<DeliverFrame>(&*f);
    if (!d) continue;
    record_deliveries(sub, *d, 0, &last);
    heard = Clock::now();
    if (!c.send(CreditRequest{1, 1}).ok()) break;
    // Done once every wanted message has arrived.
    std::lock_guard lock(mu_);
    for (size_t i = seen_before; i < history_.events.size(); ++i) {
      const auto& e = history_.events[i];
      if (e.kind == HistoryEvent::Kind::deliver && e.subscription == sub) {
        want.erase(e.message);
      }
    }
    seen_before = history_.events.size();
    if (want.empty()) break;
  }
  return true;
}

std::unique_ptr<ServeCluster> start_serving(const std::string& dir,
                                            const ServeClusterOptions& options,
                                            const std::string& stream, int* leader) {
  std::string err;
  auto cluster = ServeCluster::start(dir, options, &err);
  if (!cluster) {
    ADD_FAILURE() << "cluster: " << err;
    return nullptr;
  }
  if (Status s = cluster->create_stream(0, stream); !s.ok()) {
    ADD_FAILURE() << "creating " << stream << ": " << s.to_string();
    return nullptr;
  }
  const int l = cluster->await_agreed_leader(stream, std::chrono::seconds(20));
  if (l < 0) {
    ADD_FAILURE() << stream << ": no leader every node names";
    return nullptr;
  }
  if (leader) *leader = l;
  return cluster;
}

void drain_and_check(Workload& w, const std::string& stream, int read_from) {
  EXPECT_TRUE(w.drain(std::chrono::seconds(60))) << stream << ": unconfirmed messages left";
  w.stop();
  ASSERT_TRUE(w.final_read(read_from, std::chrono::seconds(60))) << stream;
  const auto report = check_history(w.history(), DuplicatePolicy::none, ReadPolicy::committed_only);
  EXPECT_TRUE(report.ok()) << stream << ": " << report.to_string()
                           << every_subscription(w.history());
  std::cout << stream << ": " << report.to_string() << "\n";
}

std::string every_subscription(const History& h) {
  std::set<int> ids;
  for (const auto& e : h.events) {
    if (e.kind == HistoryEvent::Kind::deliver) ids.insert(e.subscription);
  }
  std::string out;
  for (int id : ids) {
    out += "\nsubscription " + std::to_string(id) +
           " (offsets: messages): " + describe_subscription(h, id);
  }
  return out;
}

}  // namespace strata::test
