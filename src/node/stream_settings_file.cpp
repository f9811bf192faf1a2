#include "node/stream_settings_file.h"

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/publish_file.h"

namespace strata::node {

using json = nlohmann::json;

namespace {

uint32_t settings_crc(const json& settings) {
  return crc32c::value(settings.dump());
}

Error settings_error(Errc code, const std::string& path, std::string_view why) {
  return Error(code, fmt::format("stream settings file {}: {}; the stream is not opened with "
                                 "settings it may not have been created with (restore the file, "
                                 "or remove it to run the stream with the node's configuration)",
                                 path, why));
}

}  // namespace

std::string encode_settings_file(const StreamSettings& s) {
  json settings = settings_to_json(s);
  json doc = {{"version", kSettingsFileVersion},
              {"settings", settings},
              {"crc32c", settings_crc(settings)}};
  return doc.dump() + "\n";
}

Result<StreamSettings> decode_settings_file(std::string_view bytes, const std::string& path) {
  json doc = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return settings_error(Errc::corrupt, path, "not a JSON object");
  }
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer()) {
    return settings_error(Errc::corrupt, path, "no integer \"version\"");
  }
  if (version->get<int64_t>() != kSettingsFileVersion) {
    return settings_error(Errc::unsupported_version, path,
                          fmt::format("version {} (this build reads version {})", version->dump(),
                                      kSettingsFileVersion));
  }
  auto settings = doc.find("settings");
  auto crc = doc.find("crc32c");
  if (settings == doc.end() || crc == doc.end() || !crc->is_number_unsigned()) {
    return settings_error(Errc::corrupt, path, "\"settings\" or \"crc32c\" missing");
  }
  if (doc.size() != 3) return settings_error(Errc::corrupt, path, "unexpected fields");
  if (crc->get<uint64_t>() != settings_crc(*settings)) {
    return settings_error(Errc::corrupt, path,
                          fmt::format("CRC32C mismatch (stored {}, computed {})", crc->dump(),
                                      settings_crc(*settings)));
  }
  auto s = settings_from_json(*settings);
  if (!s.ok()) return settings_error(Errc::corrupt, path, s.error().message);
  return s;
}

Status write_settings_file(FileSystem& fs, const std::string& stream_dir, const StreamSettings& s) {
  std::string bytes = encode_settings_file(s);
  return publish_file(fs, path_join(stream_dir, std::string(kSettingsFileName)),
                      [&](File& f) { return f.append(bytes); });
}

Result<StreamSettings> read_settings_file(FileSystem& fs, const std::string& stream_dir) {
  const std::string path = path_join(stream_dir, std::string(kSettingsFileName));
  auto bytes = read_file(fs, path);
  if (!bytes.ok()) {
    if (bytes.code() == Errc::not_found) return StreamSettings{};
    return settings_error(bytes.code(), path, bytes.error().message);
  }
  return decode_settings_file(*bytes, path);
}

}  // namespace strata::node
