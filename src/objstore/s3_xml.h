// The XML documents of the S3 API that strata reads and writes, parsed with
// pugixml by element *local name* (s3rver uses a non-standard namespace, and
// AWS may or may not prefix). Parsers never trust the input: a document
// that is not well-formed, has the wrong root element, or a field that does
// not parse gives an error message naming the document and field.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "objstore/object_store.h"

namespace strata::objstore::s3xml {

// <Error><Code/><Message/></Error>; nullopt if body is not such a document.
struct S3ErrorBody {
  std::string code;
  std::string message;
};
std::optional<S3ErrorBody> parse_error(std::string_view body);

// ListObjectsV2 result (<ListBucketResult>).
struct ListResult {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_token;
};
Result<ListResult> parse_list(std::string_view body);

// DeleteObjects result: keys confirmed deleted and per-key errors.
struct DeleteResult {
  std::vector<std::string> deleted;
  struct KeyError {
    std::string key, code, message;
  };
  std::vector<KeyError> errors;
};
Result<DeleteResult> parse_delete_result(std::string_view body);

// The <Delete> request body for DeleteObjects (not quiet: every key is
// confirmed individually).
std::string build_delete_request(std::span<const std::string> keys);

}  // namespace strata::objstore::s3xml
