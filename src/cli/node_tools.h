// What `strata scrub` and `strata gc` open of a node without opening the
// node itself (it may be running): its configuration, its object store, and
// its embedded catalog read-only (no lock, never written), re-opened at
// every read because a read-only open is a snapshot — or its etcd catalog
// (read through one client; never written).
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "node/node_config.h"
#include "objstore/object_store.h"
#include "tier/scrub_run.h"

namespace strata::cli {

struct NodeTools {
  node::NodeConfig config;
  std::unique_ptr<objstore::ObjectStore> store;
  tier::CatalogSource catalog;
};

// The node part of a configuration file as `strata serve` reads it (a
// node's own file with its server, users, tls and cluster sections, or a
// node-only file), checked whole; `data_dir`, if not empty, overrides the
// file's. Every tool that takes --config reads it so.
Result<node::NodeConfig> load_tool_config(const std::string& path, const std::string& data_dir);

// Loads the configuration file (load_tool_config), opens the object store
// and checks the catalog opens.
Result<NodeTools> open_node_tools(const std::string& config_path, const std::string& data_dir);

// "90m", "1h", "30s", "250ms", "2d", "0" -> milliseconds. Errors name the
// flag and the value.
Result<int64_t> parse_duration_ms(const std::string& flag, const std::string& text);

// "3.2 h", "41 s", "120 ms": an age for a person.
std::string human_age(int64_t ms);

}  // namespace strata::cli
