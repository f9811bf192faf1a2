// The one rule for the names of streams and super streams, wherever strata
// takes or stores one: the stream protocol's creates, the catalog, the
// log's registry, the tier's object keys, the server's state files.
//
// RabbitMQ takes any name of 1..255 bytes that does not start with "amq."
// (and strips CR and LF from it). strata takes the same names, except the
// ones it could neither store nor show faithfully:
//   - 1..255 bytes;
//   - not starting with "amq." (RabbitMQ reserves it; case-sensitive, as
//     there);
//   - valid UTF-8 (common/utf8.h);
//   - no NUL, CR or LF. RabbitMQ strips CR and LF at a create and then
//     answers to a name other than the one the client sent; strata refuses
//     the name instead, so a client never holds a name the server does not
//     know. NUL is refused because C strings and etcd's tooling end there.
// Every other byte is allowed: spaces, '/', '%', non-ASCII. On disk and in
// object keys a name is encoded (common/name_component.h), never used as is.
//
// Virtual hosts. A stream or super stream of the vhost "/" is stored under
// its name, as before vhosts held streams. One of any other vhost is stored
// under its qualified name: the vhost's name, a line feed, the name
// ("prod\norders"). A line feed is in no client's name (refused above) and
// in no vhost's name (validate_vhost_name), so the split is unambiguous and
// no two vhosts' streams share a stored name. Everything below the stream
// protocol's rooms (the catalog, the log, the tier, the offsets) sees only
// stored names; server/vhost_names.h translates at the protocol's edge. The
// qualified name keeps the 255-byte limit: vhost and name share it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace strata {

// RabbitMQ's limit on a queue or stream name.
inline constexpr size_t kMaxStreamNameBytes = 255;
// The prefix RabbitMQ reserves for its own names.
inline constexpr std::string_view kReservedStreamPrefix = "amq.";

// The byte between a vhost's name and a stream's in a stored name.
inline constexpr char kVhostSeparator = '\n';
// The default vhost, whose streams are stored under their own names.
inline constexpr std::string_view kDefaultVhost = "/";

// OK, or invalid_argument naming the stream (printable_name), what is wrong
// and at which byte position. Takes a stored name: a name as above, or a
// qualified one (a valid vhost other than "/", the separator, a valid name).
Status validate_stream_name(std::string_view name);

// A vhost's name: 1..255 bytes of valid UTF-8 without NUL, CR or LF.
Status validate_vhost_name(std::string_view vhost);

// The stored name of `name` in `vhost` (not validated).
std::string qualified_stream_name(std::string_view vhost, std::string_view name);

// A stored name's vhost and name: {"/", name} for an unqualified one. Views
// into `stored`.
struct StreamPlace {
  std::string_view vhost;
  std::string_view name;
};
StreamPlace split_stream_name(std::string_view stored);

// A stream's labels in metrics: {"stream", name} and, for a vhost other than
// "/", {"vhost", vhost} (the default vhost's series keep the one label they
// had before vhosts held streams).
std::vector<std::pair<std::string, std::string>> stream_labels(std::string_view stored);

// A stored name for messages: printable_name of the name, with " in vhost
// \"V\"" after it for a vhost other than "/".
std::string printable_stream(std::string_view stored);

// A name (or any bytes from a client) for messages and text output: valid
// UTF-8 as is, except '\\', '"', control characters (C0, DEL, C1) and the
// invisible characters that reorder or break lines (U+200E, U+200F,
// U+2028..U+202E, U+2066..U+2069); those and bytes that are not UTF-8 as
// \xNN per byte.
std::string printable_name(std::string_view name);

}  // namespace strata
