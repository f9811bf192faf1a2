// The owner-epoch file: `<stream dir>/owner-epoch.json`, the catalog epoch
// this node's uploader of the stream last ran under as a cluster owner
// (docs/formats/data-dir.md). A node that restarts with its disk and
// acquires the stream again compares it with the epoch its acquire raised:
// equal, no other owner wrote since, so the remote tier is a prefix of the
// local log and the tail past it — confirmed here, never uploaded — is the
// stream's own and kept (stream_open.cpp, align_with_remote).
//
// Written after the uploader's take-over, so it may lag: an older epoch
// than the catalog's only makes a take-back drop the tail (the old rule),
// never keep one that is not the stream's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/fs.h"
#include "common/result.h"

namespace strata::node {

inline constexpr std::string_view kOwnerEpochFileName = "owner-epoch.json";

// Publishes {"version":1,"epoch":N} crash-atomically (publish_file.h).
Status write_owner_epoch(FileSystem& fs, const std::string& stream_dir, uint64_t epoch);
// nullopt when there is none; an error naming the file when it is
// unreadable or not what this version writes.
Result<std::optional<uint64_t>> read_owner_epoch(FileSystem& fs, const std::string& stream_dir);

}  // namespace strata::node
