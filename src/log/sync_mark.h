// The sync mark of a stream directory: the file `synced_below`, which says
// that every segment starting below a given offset was fsynced (with its
// index) when it was sealed.
//
// Under FsyncPolicy::never a sealed segment is synced in the background
// (stream_log.h), so after a power loss the newest few sealed segments may
// be torn while their successors exist. Recovery must tell that apart from
// corruption of a segment that was synced: segments at or above the mark
// are "maybe unsynced" and recovered like the newest segment (a torn tail
// is cut and every later segment dropped); segments below it, or every
// sealed segment when there is no mark, are trusted as synced
// (docs/formats/log-files.md, "The sync mark").
//
// Layout (16 bytes): magic "SSYN" u32, offset u64, CRC32C of bytes 0..11
// u32, all big-endian. Written crash-atomically (write_file_atomic).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/fs.h"

namespace strata::log {

inline constexpr const char* kSyncMarkName = "synced_below";

Bytes encode_sync_mark(uint64_t synced_below);
// `path` names the file in errors.
Result<uint64_t> decode_sync_mark(BytesView in, const std::string& path);

// nullopt if the directory has no mark; corrupt (naming the file) if it is
// malformed.
Result<std::optional<uint64_t>> read_sync_mark(FileSystem& fs, const std::string& dir);
// Replaces the mark crash-atomically (the directory is synced too, which
// also makes every other entry of the directory durable).
Status write_sync_mark(FileSystem& fs, const std::string& dir, uint64_t synced_below);
// Removes the mark, if any, and syncs the directory.
Status remove_sync_mark(FileSystem& fs, const std::string& dir);

}  // namespace strata::log
