// Object key scheme of the remote tier. Every write goes to a new key (a
// random 32-bit uid is part of each), so nothing is ever overwritten in
// place; a stream's keys share a prefix spread by a hash (S3 partitions
// request rates by key prefix):
//
//   <prefix>/<hash8>/<component>/data/<first_offset:020>.<epoch>.<uid8>.frag
//   <prefix>/<hash8>/<component>/meta/root.<epoch>.<uid8>
//   <prefix>/<hash8>/<component>/meta/<first_offset:020>.<uid8>.g<level>
//
// component is the stream's name as one key segment
// (common/name_component.h: [A-Za-z0-9._~-] kept, every other byte %XX,
// long names hashed): never '/', never "." or "..", and the same string for
// names of [A-Za-z0-9._~-] as before names were encoded, so existing
// buckets keep their keys. hash8 is the CRC32C of the component in 8
// lowercase hex digits (so a key's hash can be checked without the name);
// uid8 is the uid in 8 lowercase hex digits; epoch and level are decimal.
// An empty prefix drops the leading "<prefix>/".
//
// Prefix segments are limited to [A-Za-z0-9._~-] (with '/' between them),
// not "." or "..", so that a key is never ambiguous.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "tier/manifest.h"

namespace strata::tier {

// CRC32C of a stream's component, 8 lowercase hex digits.
std::string stream_hash8(std::string_view component);

enum class ObjectType { fragment, root, group };

struct ParsedKey {
  ObjectType type = ObjectType::fragment;
  uint64_t first_offset = 0;  // fragment, group
  uint64_t epoch = 0;         // fragment, root
  uint32_t uid = 0;
  uint8_t level = 0;  // group
  bool operator==(const ParsedKey&) const = default;
};

class ObjectKeys {
 public:
  // The keys of stream `stream` (invalid_argument: a name that breaks
  // common/stream_name.h, or a bad prefix).
  static Result<ObjectKeys> make(std::string_view prefix, std::string_view stream);
  // The keys under a component found in a listing (gc), whose stream may
  // be unknown (a hashed component): stream() is then "".
  static Result<ObjectKeys> of_component(std::string_view prefix, std::string_view component);

  const std::string& stream() const { return stream_; }
  const std::string& component() const { return component_; }
  // "<prefix>/<hash8>/<component>/", the prefix of every key of the stream.
  const std::string& stream_prefix() const { return base_; }

  std::string fragment(uint64_t first_offset, uint64_t epoch, uint32_t uid) const;
  std::string root(uint64_t epoch, uint32_t uid) const;
  std::string group(uint64_t first_offset, uint32_t uid, uint8_t level) const;
  // The object a manifest entry points to (fragment or group).
  std::string for_entry(const ManifestEntry& e) const;

  // Parses a key of this stream (with the full prefix). Errors name the key.
  Result<ParsedKey> parse(std::string_view key) const;

 private:
  static Result<ObjectKeys> with(std::string_view prefix, std::string stream,
                                 std::string component);

  std::string stream_;
  std::string component_;
  std::string base_;
};

}  // namespace strata::tier
