// kill -9 of a real writer process (raftmeta_child write) on the real file
// system, at random moments, with compactions running (tiny WAL). Each
// round reopens what the previous child left, checks that every server is
// in a state it really went through that is no older than the last
// acknowledged one, then lets a new child go on from there.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <thread>

#include "common/random.h"
#include "raftmeta/raft_meta.h"
#include "raftmeta_test_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::raftmeta {
namespace {

using namespace test;
// Replays the child's log onto the histories (see raftmeta_child.cpp).
void replay(const std::string& out, std::map<std::string, History>* hist) {
  std::istringstream in(out);
  std::string line;
  auto push = [&](const std::string& id, const State& s) {
    History& h = (*hist)[id];
    if (!(h.states.back() == s)) h.states.push_back(s);
  };
  while (std::getline(in, line)) {
    if (in.eof() && !out.empty() && out.back() != '\n') break;  // cut by the kill
    std::istringstream ls(line);
    std::string what, kind, id;
    uint64_t n = 0, v = 0;
    ls >> what >> n;
    if (what == "ack") {
      for (auto& [k, h] : *hist) h.acked = h.states.size() - 1;
      continue;
    }
    ASSERT_EQ(what, "op") << line;
    ls >> kind >> id;
    State cur = (*hist)[id].states.back();
    ServerMeta m = cur.value_or(ServerMeta{});
    if (kind == "T") {
      ls >> v;
      if (m.current_term != v) m.voted_for = VotedFor::none();
      m.current_term = v;
      push(id, m);
      m.voted_for = VotedFor::server("c" + std::to_string(n), "node" + std::to_string(n % 3));
      push(id, m);
    } else if (kind == "A" || kind == "S") {
      ls >> v;
      m.last_applied = v;
      push(id, m);
    } else if (kind == "E") {
      push(id, std::nullopt);
    } else {
      FAIL() << "bad line " << line;
    }
  }
}

TEST(RaftMetaKill, KillNineLosesNothingAcknowledged) {
  strata::test::TempDir dir, logs;
  Options o;
  o.store.capacity = 32;
  o.store.wal_bytes = 16 * 1024;
  std::map<std::string, History> hist;
  for (int i = 0; i < 16; ++i) hist["s" + std::to_string(i)].states = {std::nullopt};
  Random rng(strata::test::test_seed(31));
  const int rounds = strata::test::scaled(10);
  int acks = 0;
  for (int r = 0; r <= rounds; ++r) {
    SCOPED_TRACE("round " + std::to_string(r));
    {
      auto m = RaftMeta::open(posix_fs(), dir.path(), o);
      ASSERT_TRUE(m.ok()) << m.error().to_string();
      for (auto& [id, h] : hist) {
        const State got = (*m)->fetch_all(id);
        bool found = false;
        for (size_t k = h.acked; k < h.states.size() && !found; ++k) found = h.states[k] == got;
        ASSERT_TRUE(found) << id << " recovered as [" << show(got) << "]; acknowledged ["
                           << show(h.states[h.acked]) << "], latest [" << show(h.states.back())
                           << "]";
        h.states = {got};
        h.acked = 0;
      }
    }
    if (r == rounds) break;
    const std::string log_dir = logs.sub("r" + std::to_string(r));
    ASSERT_OK(create_dirs(posix_fs(), log_dir));
    auto p = strata::test::Process::spawn(
        {RAFTMETA_CHILD, "write", dir.path(), std::to_string(r + 1)}, log_dir);
    ASSERT_TRUE(p.wait_for_output("ack", std::chrono::seconds(20)).has_value()) << p.stderr_text();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng.range(20, 200)));
    p.kill(9);
    ASSERT_EQ(p.wait(std::chrono::seconds(20)), 128 + 9) << p.stderr_text();
    const std::string out = p.stdout_text();
    for (size_t at = out.find("ack"); at != std::string::npos; at = out.find("ack", at + 1)) ++acks;
    replay(out, &hist);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(acks, rounds);
}

}  // namespace
}  // namespace strata::raftmeta
