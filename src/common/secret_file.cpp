#include "common/secret_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace strata {

Result<std::string> read_secret_file(const std::string& path) {
  auto bad = [](std::string why) { return Error(Errc::invalid_argument, std::move(why)); };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return bad(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  if ((st.st_mode & 077) != 0) {
    return bad(
        fmt::format("'{}' is readable or writable by group or others (mode {:04o}); "
                    "chmod 600 it",
                    path, st.st_mode & 07777));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return bad(fmt::format("cannot read '{}'", path));
  std::string s = ss.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  if (s.empty()) return bad(fmt::format("'{}' is empty", path));
  return s;
}

}  // namespace strata
