// A secret kept in a file (a password for etcd, for the nodes' login, for
// a user): worth as much as the file's mode, so one that group or others
// may read or write is refused, as ssh refuses such a key.
#pragma once

#include <string>

#include "common/result.h"

namespace strata {

// The file's content with one trailing line end dropped (as `echo secret >
// file` writes it). invalid_argument naming the file when it is missing or
// unreadable, open to group or others ("chmod 600 it"), or empty.
Result<std::string> read_secret_file(const std::string& path);

}  // namespace strata
