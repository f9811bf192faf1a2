// Publishing a file crash-atomically: write it under a temporary name, fsync
// it, rename it to its final name, fsync the directory. After a crash at any
// step the final name holds either what it held before (or nothing) or the
// complete new file, never part of it; only the temporary name can be left
// behind (owners that scan their directory remove such leftovers).
//
// Every durable file strata creates or replaces whole goes through here:
// write_file_atomic (fs.h), the log's rebuilt indexes, slotstore's new store
// file, the file system object store's objects. Files whose contents another
// component wrote and made durable (a migrated store, a stream directory
// built under a temporary name) are published with rename_durable alone.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/fs.h"

namespace strata {

// Renames `from` to `to` (replacing it) and fsyncs the directory of `to`, so
// the rename survives a crash. `from` must be complete and durable already,
// and in the same directory.
Status rename_durable(FileSystem& fs, const std::string& from, const std::string& to);

// Publishes `temp`, a file the caller created and wrote in the directory of
// `final_path`: fsync, close, rename_durable. If a step up to the rename
// fails, the temporary file is removed (best effort) and the error returned;
// `final_path` is untouched. If only the directory fsync fails, the file is
// visible under `final_path` but may not survive a crash: the error says so.
Status publish_file(FileSystem& fs, std::unique_ptr<File> temp, const std::string& final_path);

// The temporary name publish_file writes under by default: `final_path` + this.
inline constexpr std::string_view kPublishTempSuffix = ".tmp";

// Creates `final_path + temp_suffix` (truncating a leftover), lets `write`
// fill it, then publishes it as above. An error from `write` is returned as
// is, after the temporary file is removed. A directory whose file names come
// from elsewhere (stream names) passes a suffix none of them can end with
// (common/name_component.h, kTempSuffix).
Status publish_file(FileSystem& fs, const std::string& final_path,
                    const std::function<Status(File&)>& write,
                    std::string_view temp_suffix = kPublishTempSuffix);

}  // namespace strata
