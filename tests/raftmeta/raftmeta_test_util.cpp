#include "raftmeta_test_util.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <memory>

#include "raftmeta/dets_test_util.h"
#include "support/temp_dir.h"

namespace strata::raftmeta::test {

namespace {

// A directory for the fixtures that lives until exit: on tmpfs if there is
// one (erl's DETS writes are slow on a busy disk), else under $TMPDIR.
class FixtureDir {
 public:
  FixtureDir() {
    std::string tmpl =
        (::access("/dev/shm", W_OK) == 0 ? std::string("/dev/shm") : std::string(temp_.path())) +
        "/raftmeta-fixtures-XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : temp_.path();
  }
  ~FixtureDir() {
    if (path_ != temp_.path()) (void)remove_all(posix_fs(), path_);
  }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  strata::test::TempDir temp_;
  std::string path_;
};

}  // namespace

const DetsFixtures& dets_fixtures() {
  static const DetsFixtures* fx = [] {
    static FixtureDir dir;
    auto* f = new DetsFixtures;  // lives until exit
    f->ra = dir.sub("ra.dets");
    f->ra_small = dir.sub("ra_small.dets");
    f->halted = dir.sub("halted.dets");
    f->fixed = dir.sub("fixed.dets");
    struct Gen {
      std::string cmd;
      std::vector<std::string> args;
    };
    const std::vector<Gen> gens = {
        {"ra",
         {"file=" + f->ra, "expected=" + f->ra + ".rows", "n=5000", "seed=21", "churn=true",
          "extra_after_churn=200"}},
        {"ra", {"file=" + f->ra_small, "expected=" + f->ra_small + ".rows", "n=400", "seed=5"}},
        {"ra",
         {"file=" + f->halted, "expected=" + f->halted + ".rows", "n=600", "seed=9",
          "finish=halt"}},
        {"fixed", {"file=" + f->fixed, "expected=" + f->fixed + ".rows"}},
    };
    // The Erlang VMs run in parallel (each mostly waits).
    std::vector<std::future<std::string>> runs;
    for (const Gen& g : gens) {
      runs.push_back(
          std::async(std::launch::async, [g] { return dets::test::run_dets_gen(g.cmd, g.args); }));
    }
    for (auto& r : runs) {
      std::string e = r.get();
      if (f->error.empty()) f->error = e;
    }
    if (!f->error.empty()) return f;
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
