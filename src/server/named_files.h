// A directory of small state files, one per stream or super stream, each
// published whole (common/publish_file.h): <data_dir>/tracking
// (offset_store.h) and <data_dir>/super_streams (super_streams.h).
//
// A file is named by its stream's component (common/name_component.h) and
// written through `<component>%tmp`, a name no component has; every file
// also holds the name it is for (a hashed component cannot be decoded).
// Loading is one rule for both directories:
//   - `<component>%tmp` is an interrupted publish's leftover (its final
//     file is intact, or was never there): removed;
//   - a component is read and handed to the owner, which checks that the
//     file holds the name of that component;
//   - a name of the previous version's alphabet that is not its own
//     component (it starts with '.', or is longer than a component) is
//     that version's file, named by the name as is: handed to the owner
//     too, and once loaded renamed to its component;
//   - anything else is skipped with a warning, never deleted.
// Upgrade: before names were encoded the temporary name was `<name>.tmp`,
// which the encoded name of a stream "x.tmp" now is. The owner tells such
// a leftover of the previous version apart by its content (a file of the
// previous format, or one cut short, or one that holds the name without
// ".tmp"): NamedFileUse::previous_temp, and it is removed with a warning.
// Files of the current format always hold their own name.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/fs.h"
#include "common/result.h"

namespace strata::server {

// One file as the owner reads it.
struct NamedEntry {
  std::string component;  // the component of the name the file must hold
  std::string path;
  // Set for a file the previous version named by the name as is (see
  // above): that name. Its component is `component`.
  std::optional<std::string> previous_name;
};

// What the owner made of one file.
enum class NamedFileUse {
  loaded,         // the file of the name its component stands for
  previous_temp,  // a temporary file the previous version left (see above)
};

// <dir>/<component of name>.
std::string named_file_path(const std::string& dir, std::string_view name);

// Publishes `bytes` as the file of `name` in `dir`, crash-atomically.
Status publish_named_file(FileSystem& fs, const std::string& dir, std::string_view name,
                          BytesView bytes);

// Whether `entry` may be a temporary file of the previous version: it ends
// in ".tmp" (the owner decides by the content).
bool may_be_previous_temp(std::string_view entry);

// Creates `dir` if missing and calls `each` for every file of a component
// in it, and for every file of the previous version under a name as is
// (the rule above). `owner` and `file_kind` name the directory's owner and
// its files in warnings (e.g. "offset store", "a stream's tracking file").
// The first error (I/O, or `each`'s) ends the load.
Status load_named_files(
    FileSystem& fs, const std::string& dir, std::string_view owner, std::string_view file_kind,
    const std::function<Result<NamedFileUse>(const NamedEntry& entry, Bytes bytes)>& each);

// The files' common framing: their body, then the CRC32C of the body,
// big-endian, in the last 4 bytes. The body once the trailer checks out;
// corrupt, naming `where`, when the file is shorter than `min_size` (trailer
// included) or the checksum differs. `file_kind`: "an offset tracking file".
Result<BytesView> checked_body(BytesView file, size_t min_size, std::string_view file_kind,
                               const std::string& where);
// Whether `file` starts with a 4-byte big-endian `magic` and the byte
// `version` (the files' common header), whatever follows.
bool has_header(BytesView file, uint32_t magic, uint8_t version);
// Appends the trailer checked_body() checks to `out`.
void append_checksum_trailer(Bytes* out);

}  // namespace strata::server
