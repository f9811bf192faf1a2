// Object key scheme of the remote tier. Every write goes to a new key (a
// random 32-bit uid is part of each), so nothing is ever overwritten in
// place; a stream's keys share a prefix spread by a hash of the stream name
// (S3 partitions request rates by key prefix):
//
//   <prefix>/<hash8>/<stream>/data/<first_offset:020>.<epoch>.<uid8>.frag
//   <prefix>/<hash8>/<stream>/meta/root.<epoch>.<uid8>
//   <prefix>/<hash8>/<stream>/meta/<first_offset:020>.<uid8>.g<level>
//
// hash8 is the CRC32C of the stream name in 8 lowercase hex digits; uid8 is
// the uid in 8 lowercase hex digits; epoch and level are decimal. An empty
// prefix drops the leading "<prefix>/".
//
// Stream names and prefix segments are limited to [A-Za-z0-9._~-] (plus '/'
// between prefix segments) so that a key is never ambiguous and needs no
// URL escaping; "." and ".." are refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "tier/manifest.h"

namespace strata::tier {

std::string stream_hash8(std::string_view stream);
Status validate_stream_name(std::string_view stream);

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
  static Result<ObjectKeys> make(std::string_view prefix, std::string_view stream);

  const std::string& stream() const { return stream_; }
  // "<prefix>/<hash8>/<stream>/", the prefix of every key of the stream.
  const std::string& stream_prefix() const { return base_; }

  std::string fragment(uint64_t first_offset, uint64_t epoch, uint32_t uid) const;
  std::string root(uint64_t epoch, uint32_t uid) const;
  std::string group(uint64_t first_offset, uint32_t uid, uint8_t level) const;
  // The object a manifest entry points to (fragment or group).
  std::string for_entry(const ManifestEntry& e) const;

  // Parses a key of this stream (with the full prefix). Errors name the key.
  Result<ParsedKey> parse(std::string_view key) const;

 private:
  std::string stream_;
  std::string base_;
};

}  // namespace strata::tier
