#include "node/owner_epoch_file.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/publish_file.h"

namespace strata::node {

Status write_owner_epoch(FileSystem& fs, const std::string& stream_dir, uint64_t epoch) {
  const std::string bytes = nlohmann::json{{"version", 1}, {"epoch", epoch}}.dump() + "\n";
  return publish_file(fs, path_join(stream_dir, std::string(kOwnerEpochFileName)),
                      [&](File& f) { return f.append(bytes); });
}

Result<std::optional<uint64_t>> read_owner_epoch(FileSystem& fs, const std::string& stream_dir) {
  const std::string path = path_join(stream_dir, std::string(kOwnerEpochFileName));
  auto bytes = read_file(fs, path);
  if (!bytes.ok()) {
    if (bytes.code() == Errc::not_found) return std::optional<uint64_t>();
    return std::move(bytes).error().with_context("reading " + path);
  }
  auto j = nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("version", 0) != 1 || !j.contains("epoch") ||
      !j["epoch"].is_number_unsigned()) {
    return Error(Errc::corrupt,
                 fmt::format("{}: not an owner-epoch file of version 1 ({{\"version\":1,"
                             "\"epoch\":N}})",
                             path));
  }
  return std::optional<uint64_t>(j["epoch"].get<uint64_t>());
}

}  // namespace strata::node
