// The file a stream's settings are kept in: <data_dir>/streams/<name>/
// settings.json, beside the log's segments (the log ignores names that are
// not its own). Layout in docs/formats/stream-settings.md:
//
//   {"crc32c":<CRC32C of the compact dump of "settings">,"settings":{...},"version":1}
//
// The node writes it into the stream's directory while that directory is
// still being built under its temporary name (log/registry.h, create's
// `prepare`), so a stream is never visible without it. A stream directory
// without the file (created before per-stream settings existed) runs with
// the node's configuration.
#pragma once

#include <string>
#include <string_view>

#include "common/fs.h"
#include "common/result.h"
#include "node/stream_settings.h"

namespace strata::node {

inline constexpr std::string_view kSettingsFileName = "settings.json";
inline constexpr int kSettingsFileVersion = 1;

std::string encode_settings_file(const StreamSettings& s);
// Errc::corrupt (unparseable, bad CRC, bad field) or Errc::unsupported_version (a
// newer version), each naming `path`.
Result<StreamSettings> decode_settings_file(std::string_view bytes, const std::string& path);

// Publishes <stream_dir>/settings.json crash-atomically (common/publish_file.h).
Status write_settings_file(FileSystem& fs, const std::string& stream_dir, const StreamSettings& s);
// The settings of the stream in `stream_dir`: empty when it has no file.
// Errors name the file and say what to do.
Result<StreamSettings> read_settings_file(FileSystem& fs, const std::string& stream_dir);

}  // namespace strata::node
