#include "raftmeta_test_util.h"

#include <algorithm>
#include <memory>

#include "raftmeta/dets_test_util.h"
#include "slotstore/format.h"
#include "slotstore/wal_chain.h"
#include "support/temp_dir.h"

namespace strata::raftmeta::test {

const DetsFixtures& dets_fixtures() {
  static const DetsFixtures* fx = [] {
    auto* f = new DetsFixtures;  // lives until exit
    const std::string dir = RAFTMETA_FIXTURE_DIR;
    f->ra = dir + "/ra.dets";
    f->ra_small = dir + "/ra_small.dets";
    f->ra_1417 = dir + "/ra_1417.dets";
    f->halted = dir + "/halted.dets";
    f->fixed = dir + "/fixed.dets";
    for (const std::string& p : {f->ra, f->ra_small, f->ra_1417, f->halted, f->fixed}) {
      if (!exists(posix_fs(), p) || !exists(posix_fs(), p + ".rows")) {
        f->error = p +
                   " is missing: the build writes it with Erlang (target "
                   "raftmeta_dets_fixtures; needs erl/erlc from erlang-nox when CMake runs)";
        return f;
      }
    }
    f->ra_rows = dets::test::sorted_lines(f->ra + ".rows");
    f->ra_small_rows = dets::test::sorted_lines(f->ra_small + ".rows");
    f->ra_1417_rows = dets::test::sorted_lines(f->ra_1417 + ".rows");
    f->halted_rows = dets::test::sorted_lines(f->halted + ".rows");
    return f;
  }();
  return *fx;
}

void copy_into(FileSystem& fs, const std::string& from, const std::string& to) {
  const Bytes data = dets::test::read_bytes(from);
  auto f = fs.open(to, OpenOptions::create_truncate());
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  ASSERT_OK((*f)->write_at(0, data));
  ASSERT_OK((*f)->sync());
  ASSERT_OK(fs.sync_dir(path_parent(to)));
}

Bytes file_bytes(FileSystem& fs, const std::string& path) {
  auto b = read_file(fs, path);
  return b.ok() ? *b : Bytes();
}

uint64_t damage_middle_of_live_wal(FileSystem& fs, const std::string& path) {
  using namespace slotstore::test;
  const Bytes file = file_bytes(fs, path);
  uint64_t need = 0;
  auto l = slotstore::format::decode_header(file, path, &need);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return 0;
  const std::vector<EntryAt> puts = puts_of(chain_of(file, *l, active_half(file, *l)));
  EXPECT_GT(puts.size(), 2u) << path << ": the live WAL half holds too few puts to damage";
  if (puts.size() <= 2) return 0;
  const EntryAt victim = puts[puts.size() / 2];
  const uint64_t at = victim.offset + victim.size - 3;  // inside its body
  auto f = fs.open(path, OpenOptions::read_write());
  EXPECT_TRUE(f.ok()) << f.error().to_string();
  if (!f.ok()) return 0;
  EXPECT_OK((*f)->write_at(at, Bytes(1, char(file[at] ^ 0x10))));
  EXPECT_OK((*f)->sync());
  return victim.offset;
}

std::vector<std::string> row_lines(const std::vector<std::pair<Bytes, ServerMeta>>& servers) {
  std::vector<dets::RaMetaRow> rows;
  for (const auto& [id, m] : servers) {
    dets::RaMetaRow r;
    r.uid = id;
    r.current_term = m.current_term;
    r.last_applied = m.last_applied;
    r.voted_for.name = m.voted_for.name;
    r.voted_for.node = m.voted_for.node;
    switch (m.voted_for.form) {
      case VotedFor::Form::none:
        r.voted_for.form = dets::VotedFor::Form::none;
        break;
      case VotedFor::Form::bare_name:
        r.voted_for.form = dets::VotedFor::Form::bare_name;
        break;
      case VotedFor::Form::server_id:
        r.voted_for.form = dets::VotedFor::Form::server_id;
        break;
    }
    rows.push_back(r);
  }
  return dets::test::sorted_row_lines(rows);
}

}  // namespace strata::raftmeta::test
