// A password typed for a command: read from a file or from the first line
// of stdin, never from argv (which other users of the machine can read).
#pragma once

#include <string>

#include "common/result.h"

namespace strata::cli {

// `file` empty: the first line of stdin. One trailing line end is dropped;
// an empty password is invalid_argument; an unreadable file names itself.
Result<std::string> read_password_input(const std::string& file);

}  // namespace strata::cli
