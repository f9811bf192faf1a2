#include "raftmeta_test_util.h"

#include <algorithm>
#include <memory>

#include "raftmeta/dets_test_util.h"
#include "support/temp_dir.h"

namespace strata::raftmeta::test {

const DetsFixtures& dets_fixtures() {
  static const DetsFixtures* fx = [] {
    auto* f = new DetsFixtures;  // lives until exit
    const std::string dir = RAFTMETA_FIXTURE_DIR;
    f->ra = dir + "/ra.dets";
    f->ra_small = dir + "/ra_small.dets";
    f->halted = dir + "/halted.dets";
    f->fixed = dir + "/fixed.dets";
    for (const std::string& p : {f->ra, f->ra_small, f->halted, f->fixed}) {
      if (!exists(posix_fs(), p) || !exists(posix_fs(), p + ".rows")) {
        f->error = p +
                   " is missing: the build writes it with Erlang (target "
                   "raftmeta_dets_fixtures; needs erl/erlc from erlang-nox when CMake runs)";
        return f;
      }
    }
    f->ra_rows = dets::test::sorted_lines(f->ra + ".rows");
    f->ra_small_rows = dets::test::sorted_lines(f->ra_small + ".rows");
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
