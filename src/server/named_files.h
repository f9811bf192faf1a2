// A directory of small state files, one per stream or super stream, each
// published whole (common/publish_file.h) and named for what it holds:
// <data_dir>/tracking (offset_store.h) and <data_dir>/super_streams
// (super_streams.h). Loading one is one rule: the leftovers of an
// interrupted publish are removed (the final file is intact, or was never
// there), a name that is no stream's name is skipped with a warning, and
// every other file is read and handed over.
#pragma once

#include <functional>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "common/fs.h"

namespace strata::server {

// Creates `dir` if missing and calls `each` for every file in it. `what`
// names the directory's owner and its files for the warning (e.g. "offset
// store", "a stream's tracking file"). The first error (I/O, or `each`'s)
// ends the load.
Status load_named_files(FileSystem& fs, const std::string& dir, std::string_view owner,
                        std::string_view file_kind,
                        const std::function<Status(const std::string& name, const std::string& path,
                                                   Bytes bytes)>& each);

// The files' common framing: their body, then the CRC32C of the body,
// big-endian, in the last 4 bytes. The body once the trailer checks out;
// corrupt, naming `where`, when the file is shorter than `min_size` (trailer
// included) or the checksum differs. `file_kind`: "an offset tracking file".
Result<BytesView> checked_body(BytesView file, size_t min_size, std::string_view file_kind,
                               const std::string& where);
// Appends the trailer checked_body() checks to `out`.
void append_checksum_trailer(Bytes* out);

}  // namespace strata::server
