// Cuts a byte stream of concatenated JSON objects ({...}{...} or one per
// line, as etcd's gateway streams watch and keepalive replies) into whole
// objects, without parsing them: it tracks brace depth outside strings.
// Pure; tested in tests/etcd/json_splitter_test.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace strata::etcd {

class JsonSplitter {
 public:
  void append(std::string_view bytes) { buf_.append(bytes); }
  // The next complete top-level object; nullopt if none is complete yet;
  // Errc::corrupt if the stream holds something other than objects.
  std::optional<Result<std::string>> next();
  size_t buffered() const { return buf_.size(); }

 private:
  std::string buf_;
  size_t scan_ = 0;  // where scanning resumes inside buf_
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  size_t start_ = std::string::npos;
};

}  // namespace strata::etcd
