#include "log/sync_mark.h"

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"

namespace strata::log {

namespace {

constexpr uint32_t kSyncMarkMagic = 0x5353594E;  // "SSYN"
constexpr size_t kSyncMarkSize = 16;
constexpr size_t kSyncMarkCrcPos = 12;

}  // namespace

Bytes encode_sync_mark(uint64_t synced_below) {
  Bytes out(kSyncMarkSize, '\0');
  uint8_t* p = u8(out.data());
  put_be32(p, kSyncMarkMagic);
  put_be64(p + 4, synced_below);
  put_be32(p + kSyncMarkCrcPos, crc32c::value(p, kSyncMarkCrcPos));
  return out;
}

Result<uint64_t> decode_sync_mark(BytesView in, const std::string& path) {
  if (in.size() != kSyncMarkSize) {
    return Error(Errc::corrupt, fmt::format("{}: sync mark of {} bytes (want {})", path, in.size(),
                                            kSyncMarkSize));
  }
  const uint8_t* p = u8(in.data());
  if (get_be32(p) != kSyncMarkMagic) {
    return Error(Errc::corrupt, fmt::format("{}: wrong magic {:#010x} at position 0 (want "
                                            "{:#010x}, a strata sync mark)",
                                            path, get_be32(p), kSyncMarkMagic));
  }
  uint32_t want = get_be32(p + kSyncMarkCrcPos);
  uint32_t got = crc32c::value(p, kSyncMarkCrcPos);
  if (want != got) {
    return Error(Errc::corrupt,
                 fmt::format("{}: sync mark CRC mismatch (stored {:#010x}, computed {:#010x})",
                             path, want, got));
  }
  return get_be64(p + 4);
}

Result<std::optional<uint64_t>> read_sync_mark(FileSystem& fs, const std::string& dir) {
  const std::string path = path_join(dir, kSyncMarkName);
  auto b = read_file(fs, path);
  if (!b.ok() && b.code() == Errc::not_found) return std::optional<uint64_t>();
  if (!b.ok()) return std::move(b).error();
  STRATA_ASSIGN_OR_RETURN(uint64_t v, decode_sync_mark(*b, path));
  return std::optional<uint64_t>(v);
}

Status write_sync_mark(FileSystem& fs, const std::string& dir, uint64_t synced_below) {
  return write_file_atomic(fs, path_join(dir, kSyncMarkName), encode_sync_mark(synced_below));
}

Status remove_sync_mark(FileSystem& fs, const std::string& dir) {
  const std::string path = path_join(dir, kSyncMarkName);
  Status s = fs.remove(path);
  if (!s.ok() && s.code() == Errc::not_found) return Status::OK();
  STRATA_TRY(s);
  return fs.sync_dir(dir);
}

}  // namespace strata::log
