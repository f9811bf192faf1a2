#include "node/deletion_marker.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/name_component.h"
#include "common/publish_file.h"
#include "common/stream_name.h"

namespace strata::node {

namespace {

constexpr std::string_view kSuffix = ".json";
constexpr std::string_view kTempSuffix = ".json.tmp";  // publish_file's temporary name
constexpr std::string_view kFormat = "strata-stream-deletion";
constexpr int kVersion = 1;

// The marker in `body`, of the file `path` named by `component`. The
// stream is the component decoded; for a hashed component, the stream the
// file names when that stream's component is this one.
DeletionMarker parse_marker(const std::string& path, const std::string& component,
                            const Bytes& body) {
  DeletionMarker m;
  m.component = component;
  m.stream = name_of_component(component).value_or("");
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    m.problem = fmt::format("deletion marker {} is not a JSON object", path);
    return m;
  }
  if (j.value("format", "") != kFormat || !j.contains("version") ||
      !j["version"].is_number_integer()) {
    m.problem =
        fmt::format("deletion marker {} does not say format \"{}\" with a version", path, kFormat);
    return m;
  }
  if (j["version"].get<int64_t>() != kVersion) {
    m.problem = fmt::format("deletion marker {} has version {}; this build reads version {}", path,
                            j["version"].dump(), kVersion);
    return m;
  }
  const bool named = j.contains("stream") && j["stream"].is_string();
  if (named && m.stream.empty() && name_component(j["stream"].get<std::string>()) == component) {
    m.stream = j["stream"].get<std::string>();
  }
  if (!named || j["stream"].get<std::string>() != m.stream) {
    m.problem =
        fmt::format("deletion marker {} names stream {} instead of {}", path,
                    j.contains("stream") ? j["stream"].dump() : "(none)",
                    m.stream.empty() ? "the stream of its file name" : printable_name(m.stream));
    return m;
  }
  if (j.contains("requested_at_ms") && j["requested_at_ms"].is_number_integer()) {
    m.requested_at_ms = j["requested_at_ms"].get<int64_t>();
  }
  return m;
}

}  // namespace

std::string deletion_marker_path(const std::string& dir, const std::string& stream) {
  return path_join(dir, name_component(stream) + std::string(kSuffix));
}

Status write_deletion_marker(FileSystem& fs, const std::string& dir, const DeletionMarker& m) {
  STRATA_TRY(create_dirs(fs, dir));
  nlohmann::json j = {{"format", kFormat},
                      {"version", kVersion},
                      {"stream", m.stream},
                      {"requested_at_ms", m.requested_at_ms}};
  const std::string body = j.dump() + "\n";
  const std::string path = deletion_marker_path(dir, m.stream);
  Status s = publish_file(fs, path, [&](File& f) { return f.append(body); });
  if (!s.ok()) return std::move(s).error().with_context("writing deletion marker " + path);
  return Status::OK();
}

Result<std::vector<DeletionMarker>> scan_deletion_markers(FileSystem& fs, const std::string& dir) {
  std::vector<DeletionMarker> out;
  auto names = fs.list_dir(dir);
  if (!names.ok()) {
    if (names.code() == Errc::not_found) return out;
    return std::move(names).error().with_context("listing deletion markers in " + dir);
  }
  bool removed = false;
  for (const auto& n : *names) {
    const std::string path = path_join(dir, n);
    if (n.ends_with(kTempSuffix)) {
      // A marker write cut short: the deletion it was to record never
      // started (the marker comes before every destructive step).
      STRATA_TRY(fs.remove(path));
      spdlog::warn("node: removed {}, left by an interrupted deletion request", path);
      removed = true;
      continue;
    }
    const std::string component =
        n.ends_with(kSuffix) ? n.substr(0, n.size() - kSuffix.size()) : std::string();
    if (!is_name_component(component)) {
      spdlog::warn("node: ignoring {}: not a deletion marker", path);
      continue;
    }
    auto body = read_file(fs, path);
    if (!body.ok()) {
      DeletionMarker m;
      m.component = component;
      m.stream = name_of_component(component).value_or("");
      m.problem = fmt::format("reading deletion marker {}: {}", path, body.error().to_string());
      out.push_back(std::move(m));
      continue;
    }
    out.push_back(parse_marker(path, component, *body));
  }
  if (removed) STRATA_TRY(fs.sync_dir(dir));
  return out;
}

Status remove_deletion_marker(FileSystem& fs, const std::string& dir, const std::string& stream) {
  const std::string path = deletion_marker_path(dir, stream);
  Status s = fs.remove(path);
  if (!s.ok() && s.code() != Errc::not_found) {
    return std::move(s).error().with_context("removing deletion marker " + path);
  }
  // Also when the file was already gone: an earlier removal may have been
  // cut short before its directory sync.
  Status d = fs.sync_dir(dir);
  if (!d.ok() && d.code() != Errc::not_found) {
    return std::move(d).error().with_context("syncing " + dir);
  }
  return Status::OK();
}

}  // namespace strata::node
