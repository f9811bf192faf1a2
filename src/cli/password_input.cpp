#include "cli/password_input.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace strata::cli {

Result<std::string> read_password_input(const std::string& file) {
  std::string pw;
  if (file.empty()) {
    std::getline(std::cin, pw);
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error(Errc::io, fmt::format("cannot read '{}'", file));
    std::stringstream ss;
    ss << in.rdbuf();
    pw = ss.str();
    // One trailing line end, as `strata serve` reads a password_file.
    if (!pw.empty() && pw.back() == '\n') pw.pop_back();
  }
  if (!pw.empty() && pw.back() == '\r') pw.pop_back();
  if (pw.empty()) return Error(Errc::invalid_argument, "the password is empty");
  return pw;
}

}  // namespace strata::cli
