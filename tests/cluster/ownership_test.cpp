// Cluster ownership with real components: a 3-member etcd cluster (Debian's
// etcd on 127.0.0.1), two nodes in this process over one directory object
// store, each with its own data directory and its own etcd client.
//   - exactly one node owns and serves a stream; nodes racing for many
//     ownerless streams at once split them, one owner each;
//   - a node cut off from etcd (its only member frozen) stops serving on
//     its own clock; the other node takes over within the lease bound,
//     with a higher epoch, and every flushed record stays readable and the
//     manifest intact after the cut-off node comes back;
//   - a revoked lease stops the owner at once;
//   - an owner cut off from etcd with nobody to take over takes the stream
//     back with its unuploaded tail kept and uploaded; one that takes it
//     back after another owner wrote past its tail counts what it drops.
#include "cluster/ownership.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "catalog/etcd_catalog.h"
#include "cluster/cluster_status.h"
#include "log/reader.h"
#include "node/node_test_util.h"
#include "node/stream_settings_file.h"
#include "support/assertions.h"
#include "support/etcd_cluster.h"
#include "support/temp_dir.h"

namespace strata::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr int64_t kTtlMs = 2000;

struct ClusterNode {
  std::unique_ptr<node::Node> node;
  std::unique_ptr<Ownership> own;
  ~ClusterNode() {
    if (own) own->stop();
    if (node) (void)node->close();
  }
};

class OwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    etcd_ = test::EtcdCluster::start(dir_.path(), 3, &err);
    ASSERT_NE(etcd_, nullptr) << err;
    auto c = open_client(etcd_->endpoints());
    ASSERT_NE(c, nullptr);
    admin_client_ = c;
    auto cat = catalog::EtcdCatalog::open(c, {"ct"});
    ASSERT_OK(cat);
    admin_ = std::move(cat).value();
  }

  std::shared_ptr<etcd::EtcdClient> open_client(const std::vector<std::string>& endpoints) {
    etcd::ClientOptions o;
    o.endpoints = endpoints;
    o.request_timeout = 1500ms;
    o.attempt_timeout = 500ms;
    o.connect_timeout = 300ms;
    auto c = etcd::EtcdClient::open(o);
    EXPECT_TRUE(c.ok()) << c.error().to_string();
    return c.ok() ? std::shared_ptr<etcd::EtcdClient>(std::move(c).value()) : nullptr;
  }

  std::unique_ptr<ClusterNode> start_node(const std::string& id,
                                          const std::vector<std::string>& endpoints,
                                          int64_t grace_ms = 0, const json& patch = json::object(),
                                          std::function<void(OwnershipConfig&)> tweak = {}) {
    auto doc = node::test::small_node_doc();
    doc.merge_patch(patch);
    doc["catalog"] = {{"backend", "etcd"},
                      {"endpoints", endpoints},
                      {"namespace", "ct"},
                      {"request_timeout_ms", 1500},
                      {"attempt_timeout_ms", 500}};
    doc["objstore"] = {{"backend", "fs"}, {"fs", {{"root", dir_.sub("bucket")}}}};
    auto cfg = node::load_node_config(doc, dir_.sub("node-" + id), objstore::process_env());
    EXPECT_TRUE(cfg.ok()) << cfg.error().to_string();
    if (!cfg.ok()) return nullptr;
    cfg->open_streams_at_start = false;
    auto out = std::make_unique<ClusterNode>();
    auto n = node::Node::open(*cfg);
    EXPECT_TRUE(n.ok()) << n.error().to_string();
    if (!n.ok()) return nullptr;
    out->node = std::move(n).value();
    OwnershipConfig oc;
    oc.node_id = id;
    oc.advertise = "127.0.0.1:" + std::to_string(5550 + int(id[0]));
    oc.ns = "ct";
    oc.timing.lease_ttl_ms = kTtlMs;
    oc.timing.acquire_grace_ms = grace_ms;
    // A deletion requested through the catalog, as `strata serve` runs it.
    oc.on_remove = [n = out->node.get()](const std::string& s) { return n->delete_stream(s); };
    if (tweak) tweak(oc);
    auto o = Ownership::start(oc, open_client(endpoints), out->node.get());
    EXPECT_TRUE(o.ok()) << o.error().to_string();
    if (!o.ok()) return nullptr;
    out->own = std::move(o).value();
    return out;
  }

  // A stream name whose first choice among {a, b} is `want`.
  static std::string stream_for(const std::string& want, const std::string& base) {
    for (int i = 0;; ++i) {
      std::string s = base + std::to_string(i);
      if (first_choice(s, {"a", "b"}) == want) return s;
    }
  }

  // The start of the takeover tests: a reaches etcd through member 0 only
  // and b through members 1 and 2 (freezing member 0 cuts a off alone);
  // once they see each other, a stream named from `base` whose first
  // choice is a is created and served by a. The stream's name, or "" after
  // reporting what failed.
  std::string serve_on_a(std::unique_ptr<ClusterNode>* a, std::unique_ptr<ClusterNode>* b,
                         const std::string& base, const json& patch = json::object());
  void takes_back_and_counts_the_dropped_tail(bool restart_a);

  test::TempDir dir_;
  std::unique_ptr<test::EtcdCluster> etcd_;
  std::shared_ptr<etcd::EtcdClient> admin_client_;
  std::unique_ptr<catalog::EtcdCatalog> admin_;
};

// Waits for `pred` (a condition the test cannot be told about by a
// callback: another node's state), checking every 20 ms.
template <class F>
bool eventually(std::chrono::milliseconds timeout, F pred) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

// Placement ranks the nodes each one sees: both must see both before a
// stream exists, or a node that has not yet seen the other ranks itself
// first and takes the stream at once. Whether they do within 10 s.
bool see_each_other(ClusterNode& a, ClusterNode& b) {
  return eventually(
      10s, [&] { return a.own->view().nodes.size() == 2 && b.own->view().nodes.size() == 2; });
}

std::string OwnershipTest::serve_on_a(std::unique_ptr<ClusterNode>* a,
                                      std::unique_ptr<ClusterNode>* b, const std::string& base,
                                      const json& patch) {
  *a = start_node("a", {etcd_->endpoint(0)}, 0, patch);
  *b = start_node("b", {etcd_->endpoint(1), etcd_->endpoint(2)}, 0, patch);
  if (!*a || !*b) return "";
  if (!see_each_other(**a, **b)) {
    ADD_FAILURE() << "a and b never saw each other";
    return "";
  }
  const std::string s = stream_for("a", base);
  if (auto c = admin_->create(s, 1); !c.ok()) {
    ADD_FAILURE() << c.error().to_string();
    return "";
  }
  auto owner = (*a)->own->await_owner(s, 10s);
  if (!owner.ok() || *owner != "a" || !eventually(10s, [&] { return (*a)->own->serving(s); })) {
    ADD_FAILURE() << s << ": not served by a";
    return "";
  }
  return s;
}

uint64_t read_all(node::Node& n, const std::string& stream, uint64_t upto,
                  std::vector<std::string>* errors) {
  auto r = n.open_reader(stream, log::OffsetSpec::first());
  if (!r.ok()) {
    errors->push_back(r.error().to_string());
    return 0;
  }
  uint64_t next = 0;
  std::vector<log::Record> recs;
  while (next < upto) {
    recs.clear();
    auto k = (*r)->next_records(&recs);
    if (!k.ok()) {
      errors->push_back(k.error().to_string());
      break;
    }
    if (*k == 0) break;
    for (const auto& rec : recs) {
      if (rec.offset != next || std::string(rec.value) != node::test::value_of(rec.offset)) {
        errors->push_back("offset " + std::to_string(rec.offset) + " wrong");
        return next;
      }
      next += 1;
    }
  }
  return next;
}

// The writer epoch of every chunk in `log`, in offset order.
std::vector<uint64_t> chunk_epochs(log::StreamLog& log) {
  std::vector<uint64_t> epochs;
  auto r = log.open_reader(log::OffsetSpec::first());
  EXPECT_OK(r);
  if (!r.ok()) return epochs;
  for (;;) {
    auto c = (*r)->next_chunk();
    EXPECT_OK(c);
    if (!c.ok() || !c->has_value()) return epochs;
    epochs.push_back((*c)->header.epoch);
  }
}

TEST_F(OwnershipTest, ExactlyOneNodeOwnsAndTheOtherTakesOverWhenTheOwnerIsCutOffFromEtcd) {
  std::unique_ptr<ClusterNode> a, b;
  const std::string s = serve_on_a(&a, &b, "orders");
  ASSERT_FALSE(s.empty());
  ASSERT_OK(b->own->await_owner(s, 10s));
  EXPECT_FALSE(b->own->serving(s));
  EXPECT_EQ(b->node->stream(s).code(), Errc::not_found);
  EXPECT_EQ(b->own->owner_address(s), a->own->config().advertise);
  auto log = a->node->stream(s);
  ASSERT_OK(log);
  const uint64_t flushed = node::test::append_values(**log, 20);
  ASSERT_OK(a->node->flush(s, 10s));
  const uint64_t epoch_a = admin_->get(s)->epoch;
  // One raise per tenure (the acquire's; the uploader adopts it), and a's
  // chunks carry it.
  EXPECT_EQ(epoch_a, 2u);
  EXPECT_EQ((*log)->epoch(), epoch_a);
  for (uint64_t ep : chunk_epochs(**log)) ASSERT_EQ(ep, epoch_a);

  // Cut a off: its only member frozen. a must stop by its own clock (TTL
  // minus margin after its last keepalive was sent); b owns after the
  // lease expires (TTL) — within TTL + grace + recovery.
  const auto cut = Clock::now();
  etcd_->freeze(0);
  EXPECT_TRUE(
      eventually(std::chrono::milliseconds(kTtlMs + 1000), [&] { return !a->own->serving(s); }));
  EXPECT_EQ(a->node->stream(s).code(), Errc::not_found);
  EXPECT_FALSE((*log)->append(std::vector<BytesView>{BytesView("late")}).ok());
  EXPECT_TRUE(eventually(20s, [&] { return b->own->serving(s); }));
  const auto took = Clock::now() - cut;
  EXPECT_LT(took, std::chrono::milliseconds(3 * kTtlMs + 8000));
  std::cerr << "takeover after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  const auto e = admin_->get(s);
  ASSERT_OK(e);
  EXPECT_GT(e->epoch, epoch_a);

  // Every flushed record is readable on b, and b appends after them.
  std::vector<std::string> errors;
  EXPECT_EQ(read_all(*b->node, s, flushed, &errors), flushed);
  EXPECT_TRUE(errors.empty()) << errors.front();
  auto blog = b->node->stream(s);
  ASSERT_OK(blog);
  EXPECT_EQ((*blog)->committed_next(), flushed);
  const uint64_t more = node::test::append_values(**blog, 5);
  ASSERT_OK(b->node->flush(s, 10s));
  // b's tenure raised the epoch once, and its chunks carry the new one.
  EXPECT_EQ(admin_->get(s)->epoch, epoch_a + 1);
  const auto b_epochs = chunk_epochs(**blog);
  ASSERT_FALSE(b_epochs.empty());
  EXPECT_EQ(b_epochs.back(), epoch_a + 1);

  // a comes back: fenced (it gave its lease up), competes again, but the
  // stream has an owner; the manifest holds exactly what was flushed.
  etcd_->thaw(0);
  EXPECT_TRUE(eventually(10s, [&] { return a->own->view().nodes.count("a") == 1; }));
  EXPECT_GE(a->own->fences(), 1u);
  EXPECT_FALSE(a->own->serving(s));
  auto remote = node::test::read_remote(b->node->store(), *admin_, "t", s);
  EXPECT_TRUE(remote.errors.empty()) << remote.errors.front();
  EXPECT_EQ(remote.records.size(), more);
  for (const auto& [off, v] : remote.records) ASSERT_EQ(v, node::test::value_of(off)) << off;
}

uint64_t node_counter(node::Node& n, const char* field) {
  return n.status_json()["node"][field].get<uint64_t>();
}

// b keeps a copy of the tail a has not uploaded (Node::open_copy, the
// owner's chunks appended whole); a is cut off from etcd and b takes the
// stream over: the copy's last chunk was written by a's tenure — the one
// b's acquire fences — so b keeps the tail and uploads it, nothing lost.
TEST_F(OwnershipTest, ACopyOfTheOwnersTailIsKeptByTheNodeThatTakesTheStreamOver) {
  const json slow = {
      {"tiering", {{"fragment_max_age_ms", 600000}, {"fragment_target_bytes", 64 << 20}}}};
  std::unique_ptr<ClusterNode> a, b;
  const std::string s = serve_on_a(&a, &b, "copied", slow);
  ASSERT_FALSE(s.empty());
  auto log = a->node->stream(s);
  ASSERT_OK(log);
  const uint64_t flushed = node::test::append_values(**log, 20);
  ASSERT_OK(a->node->flush(s, 10s));
  const uint64_t tail = node::test::append_values(**log, 7);
  const uint64_t epoch_a = admin_->get(s)->epoch;

  // b's copy starts where the remote tier ends and takes a's chunks whole.
  auto copy = b->node->open_copy(s, flushed);
  ASSERT_OK(copy);
  auto same = b->node->open_copy(s, 0);
  ASSERT_OK(same);
  EXPECT_EQ(same->get(), copy->get());
  EXPECT_EQ(a->node->open_copy(s, flushed).code(), Errc::conflict) << "a serves it";
  {
    auto r = (*log)->open_reader(log::OffsetSpec::at_offset(flushed));
    ASSERT_OK(r);
    for (;;) {
      auto c = (*r)->next_chunk();
      ASSERT_OK(c);
      if (!c->has_value()) break;
      ASSERT_OK((*copy)->append_copy((*c)->bytes, "a's chunk"));
    }
  }
  EXPECT_EQ((*copy)->committed_next(), tail);
  EXPECT_EQ((*copy)->last_chunk_epoch(), epoch_a);

  etcd_->freeze(0);
  EXPECT_TRUE(
      eventually(std::chrono::milliseconds(kTtlMs + 1000), [&] { return !a->own->serving(s); }));
  ASSERT_TRUE(eventually(20s, [&] { return b->own->serving(s); }));
  EXPECT_TRUE((*copy)->closed()) << "the acquire closed the copy before opening the log";
  auto blog = b->node->stream(s);
  ASSERT_OK(blog);
  EXPECT_EQ((*blog)->committed_next(), tail);
  EXPECT_EQ(node_counter(*b->node, "takeover_kept_offsets"), tail - flushed);
  EXPECT_EQ(node_counter(*b->node, "takeover_dropped_offsets"), 0u);
  ASSERT_OK(b->node->flush(s, 10s));
  auto remote = node::test::read_remote(b->node->store(), *admin_, "t", s);
  EXPECT_TRUE(remote.errors.empty()) << remote.errors.front();
  EXPECT_EQ(remote.records.size(), tail);
  for (const auto& [off, v] : remote.records) ASSERT_EQ(v, node::test::value_of(off)) << off;
  node::test::append_values(**blog, 1);
  EXPECT_EQ(chunk_epochs(**blog).back(), epoch_a + 1);
  etcd_->thaw(0);
}

// etcd out of a's reach (its only member frozen) and no other node: a
// stops on its clock with records committed that its uploader could not
// persist (the catalog is in etcd), then acquires the stream again. The
// catalog is still at a's epoch, so its tail is the stream's own: kept,
// uploaded, nothing lost.
TEST_F(OwnershipTest, AnOwnerCutOffFromEtcdTakesItsStreamBackWithItsUnuploadedTail) {
  // Fragments are cut only by a flush: the tail stays unuploaded (and no
  // persist of it waits in the frozen member to run after the thaw).
  auto a = start_node(
      "a", {etcd_->endpoint(0)}, 0,
      {{"tiering", {{"fragment_max_age_ms", 600000}, {"fragment_target_bytes", 64 << 20}}}});
  ASSERT_TRUE(a);
  const std::string s = "tail";
  ASSERT_OK(admin_->create(s, 1));
  ASSERT_OK(a->own->await_owner(s, 10s));
  ASSERT_TRUE(eventually(10s, [&] { return a->own->serving(s); }));
  auto log = a->node->stream(s);
  ASSERT_OK(log);
  const uint64_t flushed = node::test::append_values(**log, 20);
  ASSERT_OK(a->node->flush(s, 10s));
  const uint64_t epoch_a = admin_->get(s)->epoch;

  etcd_->freeze(0);
  // Committed here while the lease still holds; never persisted.
  const uint64_t tail = node::test::append_values(**log, 7);
  ASSERT_EQ(tail, flushed + 70);
  EXPECT_TRUE(
      eventually(std::chrono::milliseconds(kTtlMs + 1000), [&] { return !a->own->serving(s); }));
  EXPECT_EQ(admin_->get(s)->epoch, epoch_a);
  // Member 0 holds a's requests sent while it was frozen and runs them
  // when thawed: thawed only once a's old lease (and with it the owner key
  // the uploader's persists are guarded by) has expired, none of them can
  // persist the tail behind the take-back's back.
  EXPECT_TRUE(eventually(10s, [&] {
    auto r = admin_client_->range("ct/owners/" + s);
    return r.ok() && r->kvs.empty();
  }));
  etcd_->thaw(0);
  ASSERT_TRUE(eventually(20s, [&] { return a->own->serving(s); }));
  auto again = a->node->stream(s);
  ASSERT_OK(again);
  EXPECT_EQ((*again)->committed_next(), tail);
  // The kept tail still names the tenure that wrote it; the new tenure's
  // chunks carry the epoch the take-back raised.
  for (uint64_t ep : chunk_epochs(**again)) ASSERT_EQ(ep, epoch_a);
  EXPECT_EQ((*again)->epoch(), epoch_a + 1);
  EXPECT_EQ(admin_->get(s)->epoch, epoch_a + 1);
  EXPECT_EQ(node_counter(*a->node, "takeover_kept_offsets"), tail - flushed);
  EXPECT_EQ(node_counter(*a->node, "takeover_dropped_offsets"), 0u);
  ASSERT_OK(a->node->flush(s, 10s));
  auto remote = node::test::read_remote(a->node->store(), *admin_, "t", s);
  EXPECT_TRUE(remote.errors.empty()) << remote.errors.front();
  EXPECT_EQ(remote.records.size(), tail);
  for (const auto& [off, v] : remote.records) ASSERT_EQ(v, node::test::value_of(off)) << off;
  node::test::append_values(**again, 1);
  EXPECT_EQ(chunk_epochs(**again).back(), epoch_a + 1);
}

// a is cut off with an unpersisted tail; b takes over and writes past
// where a's log ends; a takes the stream back when b stops. Its tail is
// dropped (b's records hold those offsets) — and counted, not hidden
// because b wrote past it: from where a had persisted (known while its
// process lives), or, with `restart_a` (a fresh Node on a's data
// directory), from where the manifest shows the uploads of the tenures
// after the one that wrote the log's last chunks begin.
void OwnershipTest::takes_back_and_counts_the_dropped_tail(bool restart_a) {
  std::unique_ptr<ClusterNode> a, b;
  const std::string s = serve_on_a(&a, &b, restart_a ? "gone" : "past");
  ASSERT_FALSE(s.empty());
  auto log = a->node->stream(s);
  ASSERT_OK(log);
  const uint64_t flushed = node::test::append_values(**log, 20);
  ASSERT_OK(a->node->flush(s, 10s));

  etcd_->freeze(0);
  const uint64_t tail = node::test::append_values(**log, 7);
  ASSERT_TRUE(eventually(20s, [&] { return b->own->serving(s); }));
  auto blog = b->node->stream(s);
  ASSERT_OK(blog);
  ASSERT_EQ((*blog)->committed_next(), flushed);
  const uint64_t more = node::test::append_values(**blog, 10);
  ASSERT_GT(more, tail);
  ASSERT_OK(b->node->flush(s, 10s));
  if (restart_a) {
    log = Error(Errc::closed, "a is restarted");
    a.reset();
    etcd_->thaw(0);
    a = start_node("a", {etcd_->endpoint(0)});
    ASSERT_TRUE(a);
    ASSERT_TRUE(see_each_other(*a, *b));
  } else {
    etcd_->thaw(0);
    ASSERT_TRUE(eventually(10s, [&] { return a->own->view().nodes.count("a") == 1; }));
  }
  // b leaves (its lease revoked): a, the first choice, takes the stream.
  b->own->stop();
  ASSERT_TRUE(eventually(20s, [&] { return a->own->serving(s); }));
  auto again = a->node->stream(s);
  ASSERT_OK(again);
  EXPECT_EQ((*again)->committed_next(), more);
  EXPECT_EQ(node_counter(*a->node, "takeover_dropped_offsets"), tail - flushed);
  EXPECT_EQ(node_counter(*a->node, "takeover_kept_offsets"), 0u);
  EXPECT_NE(a->node->metrics_text().find("strata_node_takeover_dropped_offsets_total " +
                                         std::to_string(tail - flushed)),
            std::string::npos);
  std::vector<std::string> errors;
  EXPECT_EQ(read_all(*a->node, s, more, &errors), more);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(OwnershipTest, AnOwnerThatTakesBackAStreamAnotherWroteCountsTheTailItDrops) {
  takes_back_and_counts_the_dropped_tail(/*restart_a=*/false);
}

TEST_F(OwnershipTest, ARestartedOwnerThatTakesBackAStreamAnotherWroteCountsTheTailItDrops) {
  takes_back_and_counts_the_dropped_tail(/*restart_a=*/true);
}

TEST_F(OwnershipTest, ARevokedLeaseStopsTheOwnerAtOnceAndTheStreamIsOwnedAgain) {
  auto a = start_node("a", etcd_->endpoints());
  auto b = start_node("b", etcd_->endpoints());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(see_each_other(*a, *b));
  const std::string s = stream_for("a", "events");
  ASSERT_OK(admin_->create(s, 1));
  ASSERT_OK(a->own->await_owner(s, 10s));
  ASSERT_TRUE(a->own->serving(s));
  auto log = a->node->stream(s);
  ASSERT_OK(log);
  const uint64_t flushed = node::test::append_values(**log, 10);
  ASSERT_OK(a->node->flush(s, 10s));
  const uint64_t epoch_a = admin_->get(s)->epoch;
  const int64_t lease = std::stoll(a->own->status_json()["lease"].get<std::string>());
  ASSERT_OK(admin_client_->lease_revoke(lease));
  // The next keepalive (within a third of the TTL) hears "not found".
  EXPECT_TRUE(eventually(std::chrono::milliseconds(kTtlMs), [&] { return a->own->fences() >= 1; }));
  EXPECT_EQ(
      a->own->status_json()["last_fence"].get<std::string>().find("gone") != std::string::npos,
      true);
  // Owned again (by a, its first choice, under a fresh lease, or by b).
  ClusterNode* owner = nullptr;
  EXPECT_TRUE(eventually(15s, [&] {
    if (a->own->serving(s)) owner = a.get();
    if (b->own->serving(s)) owner = b.get();
    return owner != nullptr;
  }));
  ASSERT_NE(owner, nullptr);
  EXPECT_GT(admin_->get(s)->epoch, epoch_a);
  std::vector<std::string> errors;
  EXPECT_EQ(read_all(*owner->node, s, flushed, &errors), flushed);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// The other half of the fencing gap: if a stale takeover did raise the
// epoch over the owner's (here the admin client plays it), the owner's
// uploader stops fenced on its next persist — and the owner, whose key is
// still its own, closes and acquires the stream again instead of serving
// it with no uploader.
TEST_F(OwnershipTest, AWriterFencedWhileItsNodeStillOwnsTheStreamIsAcquiredAgain) {
  auto a = start_node("a", etcd_->endpoints());
  auto b = start_node("b", etcd_->endpoints());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(see_each_other(*a, *b));
  const std::string s = stream_for("a", "fenced");
  ASSERT_OK(admin_->create(s, 1));
  ASSERT_OK(a->own->await_owner(s, 10s));
  ASSERT_TRUE(a->own->serving(s));
  auto log = a->node->stream(s);
  ASSERT_OK(log);
  const uint64_t flushed = node::test::append_values(**log, 10);
  ASSERT_OK(a->node->flush(s, 10s));
  auto e = admin_->get(s);
  ASSERT_OK(e);
  auto stale = admin_->bump_epoch(s, e->revision, 0);
  ASSERT_OK(stale);
  ASSERT_EQ(stale->outcome, catalog::PutOutcome::ok);
  // The next persist is refused by epoch: the uploader stops fenced.
  EXPECT_GT(node::test::append_values(**log, 5), flushed);
  EXPECT_FALSE(a->node->flush(s, 10s).ok());
  EXPECT_TRUE(eventually(10s, [&] { return a->own->writer_fences() >= 1 && a->own->serving(s); }));
  EXPECT_FALSE(b->own->serving(s));
  EXPECT_GT(admin_->get(s)->epoch, stale->epoch);
  // Served again with an uploader: what was flushed is there, the
  // unuploaded five are the takeover's loss, and new appends persist.
  auto again = a->node->stream(s);
  ASSERT_OK(again);
  EXPECT_EQ((*again)->committed_next(), flushed);
  const uint64_t end = node::test::append_values(**again, 5);
  ASSERT_OK(a->node->flush(s, 10s));
  std::vector<std::string> errors;
  EXPECT_TRUE(eventually(10s, [&] {
    errors.clear();
    return read_all(*a->node, s, end, &errors) == end;
  })) << (errors.empty() ? "" : errors.front());
}

// A stream's settings live with it in the catalog: the owner that creates
// nothing on disk runs them, and so does a node with an empty disk that
// takes the stream over — with the retention an operator altered since.
TEST_F(OwnershipTest, SettingsKeptInTheCatalogFollowTheStreamToAFreshNode) {
  auto a = start_node("a", etcd_->endpoints());
  auto b = start_node("b", etcd_->endpoints());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(see_each_other(*a, *b));
  node::StreamSettings want{
      .max_age_ms = 86'400'000, .segment_bytes = 32 << 10, .fragment_target_bytes = 8 << 10};
  // Settings the nodes cannot honour are refused and nothing is created.
  auto bad = b->node->create_catalog_stream("badsettings", {.segment_bytes = 1});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), Errc::invalid_argument);
  EXPECT_EQ(admin_->get("badsettings").code(), Errc::not_found);
  // Created through b; a, the first choice, serves it with them.
  const std::string s = stream_for("a", "settled");
  ASSERT_OK(b->node->create_catalog_stream(s, want));
  EXPECT_EQ(b->node->create_catalog_stream(s, {}).code(), Errc::already_exists);
  auto kept = admin_->settings(s);
  ASSERT_OK(kept);
  ASSERT_TRUE(kept->has_value());
  EXPECT_EQ(json::parse(**kept), node::settings_to_json(want));
  ASSERT_OK(a->own->await_owner(s, 10s));
  ASSERT_TRUE(a->own->serving(s));
  EXPECT_EQ(a->node->stream_settings(s).value(), want);
  EXPECT_EQ(a->node->effective_settings(s)->segment_bytes, uint64_t(32 << 10));
  auto log = a->node->stream(s);
  ASSERT_OK(log);
  const uint64_t flushed = node::test::append_values(**log, 10);
  ASSERT_OK(a->node->flush(s, 10s));
  // Its retention altered on its owner: kept in the catalog for the next
  // owner. A node that does not serve it has nothing to alter; an absent
  // stream's settings cannot be written.
  node::StreamSettings altered = want;
  altered.max_age_ms = 3'600'000;
  altered.max_bytes = 1ull << 30;
  EXPECT_EQ(b->node->alter_stream(s, altered).code(), Errc::not_found);
  ASSERT_OK(a->node->alter_stream(s, altered));
  kept = admin_->settings(s);
  ASSERT_OK(kept);
  ASSERT_TRUE(kept->has_value());
  EXPECT_EQ(json::parse(**kept), node::settings_to_json(altered));
  EXPECT_EQ(admin_->update_settings("never-created", "{}").code(), Errc::not_found);
  EXPECT_FALSE(admin_->settings("never-created")->has_value());

  // a stops (its lease revoked): b, which never held the stream, takes it
  // over with the catalog's settings, on disk too.
  a->own->stop();
  ASSERT_TRUE(eventually(15s, [&] { return b->own->serving(s); }));
  want = altered;
  auto got = b->node->stream_settings(s);
  ASSERT_OK(got);
  EXPECT_EQ(*got, want);
  EXPECT_EQ(b->node->effective_settings(s)->segment_bytes, uint64_t(32 << 10));
  EXPECT_EQ(b->node->effective_settings(s)->fragment_target_bytes, uint64_t(8 << 10));
  auto file = node::read_settings_file(posix_fs(), dir_.sub("node-b") + "/streams/" + s);
  ASSERT_OK(file);
  EXPECT_EQ(*file, want);
  // Readable once b's uploader has loaded the manifest (reads fail closed,
  // "unavailable", until then).
  std::vector<std::string> errors;
  EXPECT_TRUE(eventually(10s, [&] {
    errors.clear();
    return read_all(*b->node, s, flushed, &errors) == flushed;
  })) << (errors.empty() ? "" : errors.front());
}

// Delete from a node that does not serve the stream: the owner deletes it;
// an ownerless stream is taken by the node that asked, which deletes it.
TEST_F(OwnershipTest, ADeletionRequestedThroughTheCatalogIsDoneByTheOwnerOrByTheNodeThatAsked) {
  // No grace to speak of: a takes only what it ranks first for, or asked to delete.
  auto a = start_node("a", etcd_->endpoints(), /*grace_ms=*/600'000);
  auto b = start_node("b", etcd_->endpoints(), /*grace_ms=*/600'000);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(see_each_other(*a, *b));
  EXPECT_EQ(a->own->request_deletion("nosuch", 5s).code(), Errc::not_found);

  // Served by b, deleted from a.
  const std::string s = stream_for("b", "served");
  ASSERT_OK(a->node->create_catalog_stream(s, {}));
  ASSERT_OK(b->own->await_owner(s, 10s));
  ASSERT_TRUE(eventually(10s, [&] { return b->own->serving(s); }));
  auto log = b->node->stream(s);
  ASSERT_OK(log);
  node::test::append_values(**log, 3);
  ASSERT_OK(b->node->flush(s, 10s));
  ASSERT_OK(a->own->request_deletion(s, 30s));
  EXPECT_EQ(admin_->get(s).code(), Errc::not_found);
  EXPECT_TRUE(eventually(10s, [&] { return !b->own->serving(s); }));
  EXPECT_EQ(b->node->stream(s).code(), Errc::not_found);
  auto keys = admin_client_->range("ct/owners/" + s);
  ASSERT_OK(keys);
  EXPECT_TRUE(keys->kvs.empty()) << "the remove takes the owner key";
  EXPECT_TRUE(admin_client_->range("ct/deletions/" + s)->kvs.empty());

  // Ownerless: its first choice z is registered but never takes it.
  auto lz = admin_client_->lease_grant(60);
  ASSERT_OK(lz);
  ASSERT_OK(admin_client_->put("ct/nodes/z", "{\"address\":\"x:1\"}", lz->id));
  std::string orphan;
  for (int i = 0;; ++i) {
    orphan = "orphan" + std::to_string(i);
    if (first_choice(orphan, {"a", "b", "z"}) == "z") break;
  }
  ASSERT_TRUE(eventually(10s, [&] { return a->own->view().nodes.size() == 3; }));
  ASSERT_OK(admin_->create(orphan, 1));
  ASSERT_TRUE(eventually(10s, [&] {
    auto v = a->own->view();
    return std::find(v.streams.begin(), v.streams.end(), orphan) != v.streams.end();
  }));
  EXPECT_EQ(a->own->view().owners.count(orphan), 0u);
  ASSERT_OK(a->own->request_deletion(orphan, 30s));
  EXPECT_EQ(admin_->get(orphan).code(), Errc::not_found);
  EXPECT_FALSE(b->own->serving(orphan));
  ASSERT_OK(admin_client_->lease_revoke(lz->id));
}

TEST_F(OwnershipTest, NodesRacingForManyOwnerlessStreamsSplitThemOneOwnerEach) {
  // No grace: both nodes try every ownerless stream at once.
  auto a = start_node("a", etcd_->endpoints(), /*grace_ms=*/1);
  auto b = start_node("b", etcd_->endpoints(), /*grace_ms=*/1);
  ASSERT_TRUE(a && b);
  const int n = 12;
  for (int i = 0; i < n; ++i) ASSERT_OK(admin_->create("race" + std::to_string(i), 1));
  for (int i = 0; i < n; ++i) {
    const std::string s = "race" + std::to_string(i);
    auto o = a->own->await_owner(s, 15s);
    ASSERT_OK(o);
    ClusterNode* mine = *o == "a" ? a.get() : b.get();
    ClusterNode* other = *o == "a" ? b.get() : a.get();
    EXPECT_TRUE(eventually(10s, [&] { return mine->own->serving(s); })) << s;
    EXPECT_FALSE(other->own->serving(s)) << s;
    EXPECT_EQ(other->node->stream(s).code(), Errc::not_found) << s;
  }
  // `strata cluster status` reads the same from etcd.
  auto st = read_cluster_status(*admin_client_, "ct");
  ASSERT_OK(st);
  EXPECT_EQ((*st)["nodes"].size(), 2u);
  EXPECT_EQ((*st)["nodes"]["a"]["address"], a->own->config().advertise);
  EXPECT_GT((*st)["nodes"]["b"]["ttl_s"].get<int64_t>(), 0);
  // Lease ids as decimal strings (63 bits; a JavaScript number keeps 53).
  EXPECT_EQ((*st)["nodes"]["a"]["lease"], a->own->status_json()["lease"]);
  EXPECT_TRUE((*st)["nodes"]["a"]["lease"].is_string());
  for (int i = 0; i < n; ++i) {
    const json& e = (*st)["streams"]["race" + std::to_string(i)];
    EXPECT_EQ(e["owner"], a->own->view().owners.at("race" + std::to_string(i)).node_id);
    EXPECT_GE(e["epoch"].get<uint64_t>(), 2u);
    EXPECT_EQ(e["owner_lease"],
              lease_json(a->own->view().owners.at("race" + std::to_string(i)).lease));
  }
}

// What etcd holds is input: an entry whose epoch is not a number (or too
// large for one) shows as null instead of failing (it used to throw out of
// `strata cluster status`).
TEST_F(OwnershipTest, ClusterStatusShowsAnUnreadableEpochAsNull) {
  ASSERT_OK(admin_client_->put("cs/streams/bad", "{\"epoch\":\"zz\",\"root_key\":\"r\"}"));
  ASSERT_OK(admin_client_->put("cs/streams/big", "{\"epoch\":\"99999999999999999999999\"}"));
  ASSERT_OK(admin_client_->put("cs/streams/good", "{\"epoch\":\"7\"}"));
  auto st = read_cluster_status(*admin_client_, "cs");
  ASSERT_OK(st);
  EXPECT_TRUE((*st)["streams"]["bad"]["epoch"].is_null());
  EXPECT_EQ((*st)["streams"]["bad"]["root_key"], "r");
  EXPECT_TRUE((*st)["streams"]["big"]["epoch"].is_null());
  EXPECT_EQ((*st)["streams"]["good"]["epoch"].get<uint64_t>(), 7u);
  EXPECT_TRUE((*st)["streams"]["good"]["owner_lease"].is_null());
}

// Nodes that disagree on cluster.peer_tls cannot link to each other: a
// node dialling over TLS shows (and logs once) a peer that registered no
// TLS address, a node dialling plain TCP one that registered no plain
// address; a peer with both is reachable either way.
TEST_F(OwnershipTest, PeersANodeCannotDialAreShownInItsStatus) {
  auto a = start_node("a", {etcd_->endpoint(0)}, 0, json::object(), [](OwnershipConfig& oc) {
    oc.tls_advertise = "127.0.0.1:6651";
    oc.peer_tls = true;
  });
  auto b = start_node("b", {etcd_->endpoint(1)});
  auto c = start_node("c", {etcd_->endpoint(2)}, 0, json::object(), [](OwnershipConfig& oc) {
    oc.advertise = "";
    oc.tls_advertise = "127.0.0.1:6653";
  });
  ASSERT_TRUE(a && b && c);
  auto unreachable = [](ClusterNode& n) {
    return n.own->status_json()["unreachable_peers"].get<std::vector<std::string>>();
  };
  ASSERT_TRUE(eventually(10s, [&] {
    return a->own->status_json()["nodes"].size() == 3 && b->own->status_json()["nodes"].size() == 3;
  }));
  EXPECT_EQ(unreachable(*a), std::vector<std::string>{"b"});
  EXPECT_EQ(unreachable(*b), std::vector<std::string>{"c"});
  EXPECT_TRUE(unreachable(*c).empty()) << c->own->status_json().dump();
}

}  // namespace
}  // namespace strata::cluster
