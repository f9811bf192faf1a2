#include "server/named_files.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/name_component.h"
#include "common/publish_file.h"

namespace strata::server {

std::string named_file_path(const std::string& dir, std::string_view name) {
  return path_join(dir, name_component(name));
}

Status publish_named_file(FileSystem& fs, const std::string& dir, std::string_view name,
                          BytesView bytes) {
  return publish_file(
      fs, named_file_path(dir, name), [&](File& f) { return f.append(bytes); }, kTempSuffix);
}

bool may_be_previous_temp(std::string_view entry) {
  return entry.size() > kPublishTempSuffix.size() && entry.ends_with(kPublishTempSuffix);
}

namespace {

// A name the previous version took (and so a file name it may have
// written): 1..255 bytes of [A-Za-z0-9._~-], not "." or "..".
bool previous_version_name(std::string_view entry) {
  if (entry.empty() || entry.size() > 255 || entry == "." || entry == "..") return false;
  for (char c : entry) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '~' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Status load_named_files(
    FileSystem& fs, const std::string& dir, std::string_view owner, std::string_view file_kind,
    const std::function<Result<NamedFileUse>(const NamedEntry& entry, Bytes bytes)>& each) {
  STRATA_TRY(create_dirs(fs, dir));
  STRATA_ASSIGN_OR_RETURN(auto entries, fs.list_dir(dir));
  bool changed = false;
  for (const std::string& name : entries) {
    NamedEntry e{name, path_join(dir, name), std::nullopt};
    if (name.ends_with(kTempSuffix) &&
        is_name_component(std::string_view(name).substr(0, name.size() - kTempSuffix.size()))) {
      STRATA_TRY(fs.remove(e.path));
      spdlog::warn("{}: removed {}, left by an interrupted write", owner, e.path);
      changed = true;
      continue;
    }
    if (!is_name_component(name)) {
      if (!previous_version_name(name)) {
        spdlog::warn("{}: ignoring {}: not {}", owner, e.path, file_kind);
        continue;
      }
      e.component = name_component(name);
      e.previous_name = name;
      if (exists(fs, path_join(dir, e.component))) {
        spdlog::warn("{}: ignoring {}: {} exists too", owner, e.path, e.component);
        continue;
      }
    }
    STRATA_ASSIGN_OR_RETURN(Bytes bytes, read_file(fs, e.path));
    STRATA_ASSIGN_OR_RETURN(NamedFileUse use, each(e, std::move(bytes)));
    if (use == NamedFileUse::previous_temp) {
      STRATA_TRY(fs.remove(e.path));
      spdlog::warn("{}: removed {}, a temporary file left by an earlier version", owner, e.path);
      changed = true;
    } else if (e.previous_name) {
      // Its component is what every later write and removal uses.
      STRATA_TRY(fs.rename(e.path, path_join(dir, e.component)));
      spdlog::info("{}: renamed {} to {} (file names are encoded now)", owner, e.path, e.component);
      changed = true;
    }
  }
  if (changed) STRATA_TRY(fs.sync_dir(dir));
  return Status::OK();
}

bool has_header(BytesView file, uint32_t magic, uint8_t version) {
  return file.size() >= 5 && get_be32(u8(file.data())) == magic && uint8_t(file[4]) == version;
}

Result<BytesView> checked_body(BytesView file, size_t min_size, std::string_view file_kind,
                               const std::string& where) {
  if (file.size() < std::max<size_t>(min_size, 4)) {
    return Error(Errc::corrupt,
                 fmt::format("{}: {} bytes is too short for {}", where, file.size(), file_kind));
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
