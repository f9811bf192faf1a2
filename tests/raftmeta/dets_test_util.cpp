#include "raftmeta/dets_test_util.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/process.h"

namespace strata::raftmeta::dets::test {

std::string run_dets_gen(const std::string& cmd, const std::vector<std::string>& args) {
  if (!strata::test::have_program("erl")) {
    return "erl not found in PATH: these tests need Erlang/OTP (Debian erlang-nox, see "
           "scripts/setup.sh)";
  }
  const std::string beam_dir = STRATA_DETS_BEAM_DIR;
  struct stat st;
  if (::stat((beam_dir + "/dets_gen.beam").c_str(), &st) != 0) {
    return beam_dir +
           "/dets_gen.beam is missing: erlc was not found when CMake configured the "
           "build (install erlang-nox and re-run cmake)";
  }
  std::vector<std::string> argv = {"erl",   "-noshell",        "-pa",    beam_dir,
                                   "-eval", "dets_gen:main()", "-extra", cmd};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = strata::test::run(argv);
  if (r.status == 0) return "";
  std::string line;
  for (const auto& a : argv) line += a + " ";
  return "`" + line + "` exited with status " + std::to_string(r.status) + ":\n" + r.output;
}

std::vector<std::string> sorted_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string hex_upper(BytesView b) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string s;
  for (char c : b) {
    s += kDigits[uint8_t(c) >> 4];
    s += kDigits[uint8_t(c) & 15];
  }
  return s;
}

std::string row_line(const RaMetaRow& row) {
  const auto counter = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("undefined");
  };
  std::string vote;
  switch (row.voted_for.form) {
    case VotedFor::Form::none:
      vote = "none";
      break;
    case VotedFor::Form::bare_name:
      vote = "atom:" + hex_upper(row.voted_for.name);
      break;
    case VotedFor::Form::server_id:
      vote = "id:" + hex_upper(row.voted_for.name) + "," + hex_upper(row.voted_for.node);
      break;
  }
  return "bin:" + hex_upper(row.uid) + " " + counter(row.current_term) + " " + vote + " " +
         counter(row.last_applied);
}

std::vector<std::string> sorted_row_lines(const std::vector<RaMetaRow>& rows) {
  std::vector<std::string> lines;
  for (const auto& r : rows) lines.push_back(row_line(r));
  std::sort(lines.begin(), lines.end());
  return lines;
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, BytesView data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), std::streamsize(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace strata::raftmeta::dets::test
