// slotstore_crash_child <path> <seed> <background 0|1>
//
// A writer for the kill -9 test: opens (recovering) the store at <path>
// with raftmeta's schema and writes random ops forever. Before each
// write_batch it logs the ops on stdout, one line each:
//   op <n> P <key> [T=<u64>|T=-] [V=<name>,<node>|V=-] [A=<u64>]
//   op <n> E <key>
// and after it returns: "ack <n>" (applied), or "err <n> <code>" (refused,
// nothing applied). Every 20 batches: "compactions <count>". Lines go out with one write(2) each,
// so a kill leaves at most the last line cut short.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "common/random.h"
#include "slotstore/slotstore.h"
#include "support/child_output.h"

using namespace strata;
using namespace strata::slotstore;

namespace {

using strata::test::emit_line;

Schema schema() {
  Schema s;
  s.max_key_len = 64;
  s.fields = {
      {"current_term", FieldType::u64(), Frequency::low},
      {"voted_for", FieldType::tuple_of({FieldType::interned(64), FieldType::interned(64)}),
       Frequency::low},
      {"last_applied", FieldType::u64(), Frequency::high},
  };
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <path> <seed> <background 0|1>\n", argv[0]);
    return 2;
  }
  Options o;
  o.slots = 48;
  o.strings = 40;
  o.wal_bytes = 8 * 1024;
  o.background_compaction = std::atoi(argv[3]) != 0;
  auto opened = SlotStore::open(posix_fs(), argv[1], schema(), o);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.error().to_string().c_str());
    return 1;
  }
  auto& s = *opened;
  std::set<std::string> live;
  auto all = s->read_all();
  if (!all.ok()) return 1;
  for (auto& [k, r] : *all) live.insert(k);
  Random rng(std::strtoull(argv[2], nullptr, 0));
  uint64_t counter = std::strtoull(argv[2], nullptr, 0) * 1000000;
  for (uint64_t n = 0;; ++n) {
    WriteBatch b;
    std::vector<std::string> lines;
    int ops = rng.chance(1, 6) ? int(rng.range(2, 5)) : 1;
    std::set<std::string> batch_live = live;
    for (int i = 0; i < ops; ++i) {
      if (rng.chance(1, 8) && !batch_live.empty()) {
        auto it = batch_live.begin();
        std::advance(it, rng.uniform(batch_live.size()));
        std::string k = *it;
        batch_live.erase(it);
        b.erase(k);
        lines.push_back("E " + k);
        continue;
      }
      std::string k = "server-" + std::to_string(rng.uniform(60));
      std::string line = "P " + k;
      std::vector<FieldUpdate> ups;
      ++counter;
      uint64_t kind = rng.uniform(10);
      if (kind < 8) {
        ups.push_back(set(2, Value::u64(counter)));
        line += " A=" + std::to_string(counter);
      } else if (kind < 9) {
        ups.push_back(set(0, Value::u64(counter)));
        ups.push_back(clear(1));
        line += " T=" + std::to_string(counter) + " V=-";
      } else {
        std::string name = "srv" + std::to_string(rng.uniform(30));
        std::string node = "node" + std::to_string(rng.uniform(8));
        ups.push_back(set(1, Value::tuple({Scalar(name), Scalar(node)})));
        line += " V=" + name + "," + node;
      }
      batch_live.insert(k);
      b.put(k, std::move(ups));
      lines.push_back(line);
    }
    for (const auto& l : lines) emit_line("op " + std::to_string(n) + " " + l);
    WriteOptions wo{rng.chance(1, 20)};
    Status st = s->write_batch(b, wo);
    if (st.ok()) {
      live = batch_live;
      emit_line("ack " + std::to_string(n));
    } else if (st.code() == Errc::store_full || st.code() == Errc::string_table_full) {
      emit_line("err " + std::to_string(n) + " " + std::string(errc_name(st.code())));
    } else {
      std::fprintf(stderr, "write_batch: %s\n", st.to_string().c_str());
      return 1;
    }
    if (n % 20 == 0) emit_line("compactions " + std::to_string(s->info().compactions));
    if (rng.chance(1, 30)) {
      Status ss = s->sync();
      if (!ss.ok()) return 1;
    }
  }
}
