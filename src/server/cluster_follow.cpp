#include "server/cluster_follow.h"

#include <spdlog/spdlog.h>

#include <set>
#include <string>
#include <vector>

#include "common/stream_name.h"
#include "node/node.h"
#include "server/super_streams.h"

namespace strata::server {

namespace {

constexpr std::string_view kSettingsDir = "settings/";

// Applies the catalog's settings of each of `streams` this node has open.
void adopt_settings(node::Node& node, const std::set<std::string>& streams) {
  for (const std::string& name : streams) {
    if (!node.stream(name).ok()) continue;
    auto kept = node.catalog_stream_settings(name);
    if (!kept.ok()) {
      // Deleted meanwhile, or the catalog unreachable: the next owner reads
      // them when it opens the stream; this one at the next change.
      if (kept.code() != Errc::not_found) {
        spdlog::warn("cluster: stream {}: reading its altered settings: {}", printable_name(name),
                     kept.error().to_string());
      }
      continue;
    }
    Status st = node.adopt_catalog_settings(name, *kept);
    if (!st.ok() && st.code() != Errc::not_found) {
      spdlog::warn("cluster: stream {}: applying the settings another node stored: {}",
                   printable_name(name), st.error().to_string());
    }
  }
}

}  // namespace

void follow_cluster_keys(cluster::OwnershipConfig& oc, node::Node& node, SuperStreams& supers,
                         std::shared_ptr<BlockingPool> pool) {
  oc.followed_dirs = {std::string(kSettingsDir), std::string(kSuperStreamKeyDir)};
  oc.on_followed = [&node, &supers, pool](const std::vector<cluster::FollowedKey>& keys,
                                          bool snapshot) {
    std::set<std::string> settings;
    std::vector<SuperStream> all;
    for (const auto& k : keys) {
      std::string_view key = k.key;
      if (key.substr(0, kSettingsDir.size()) == kSettingsDir) {
        // A removal goes with the stream's; nothing to apply.
        if (k.value) settings.insert(std::string(key.substr(kSettingsDir.size())));
        continue;
      }
      const std::string_view name = key.substr(kSuperStreamKeyDir.size());
      std::optional<SuperStream> s;
      if (k.value) {
        auto d = decode_super_stream_key(name, *k.value, "etcd key " + k.key);
        if (!d.ok()) {
          // Left as this node knew it; the key is named for the operator.
          spdlog::warn("cluster: {}", d.error().to_string());
          continue;
        }
        s = std::move(d).value();
      }
      if (snapshot) {
        if (s) all.push_back(std::move(*s));
      } else {
        supers.learned(name, std::move(s));
      }
    }
    if (snapshot) supers.learned_all(std::move(all));
    if (!settings.empty()) {
      pool->post([&node, settings = std::move(settings)] { adopt_settings(node, settings); });
    }
  };
}

}  // namespace strata::server
