#include "server/named_files.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "catalog/stream_name.h"
#include "common/crc32c.h"
#include "common/endian.h"
#include "common/publish_file.h"

namespace strata::server {

Status load_named_files(FileSystem& fs, const std::string& dir, std::string_view owner,
                        std::string_view file_kind,
                        const std::function<Status(const std::string& name, const std::string& path,
                                                   Bytes bytes)>& each) {
  STRATA_TRY(create_dirs(fs, dir));
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(dir));
  for (const std::string& name : names) {
    const std::string path = path_join(dir, name);
    if (is_publish_leftover(name)) {
      STRATA_TRY(fs.remove(path));
      continue;
    }
    if (!catalog::validate_stream_name(name).ok()) {
      spdlog::warn("{}: ignoring {}: not {}", owner, path, file_kind);
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Bytes bytes, read_file(fs, path));
    STRATA_TRY(each(name, path, std::move(bytes)));
  }
  return Status::OK();
}

Result<BytesView> checked_body(BytesView file, size_t min_size, std::string_view file_kind,
                               const std::string& where) {
  if (file.size() < std::max<size_t>(min_size, 4)) {
    return Error(Errc::corrupt, fmt::format("{}: {} bytes is too short for {}", where,
                                            file.size(), file_kind));
  }
  const BytesView body = file.substr(0, file.size() - 4);
  const uint32_t stored = get_be32(u8(file.data() + body.size()));
  const uint32_t actual = crc32c::value(body);
  if (stored != actual) {
    return Error(Errc::corrupt,
                 fmt::format("{}: checksum mismatch (stored {:08x}, computed {:08x})", where,
                             stored, actual));
  }
  return body;
}

void append_checksum_trailer(Bytes* out) {
  const uint32_t crc = crc32c::value(*out);
  ByteWriter(out).be32(crc);
}

}  // namespace strata::server
