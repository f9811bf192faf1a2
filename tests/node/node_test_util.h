// Helpers for node tests: configurations with small fragments, the demo's
// self-describing records, and reading a stream back from the remote tier.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "catalog/catalog.h"
#include "log/chunk.h"
#include "node/node.h"
#include "node/node_config.h"
#include "objstore/object_store.h"
#include "tier/fragment_object.h"
#include "tier/object_keys.h"
#include "tier/remote_audit.h"
#include "tier/uploader.h"

namespace strata::node::test {

inline std::string value_of(uint64_t i, size_t size = 300) {
  std::string v = fmt::format("v{:010}:", i);
  v.resize(size, char('A' + i % 26));
  return v;
}

// A node document with small fragments and quick persists.
inline nlohmann::json small_node_doc() {
  return {{"log", {{"fsync", "always"}, {"segment_bytes", 64 << 10}}},
          {"tiering",
           {{"key_prefix", "t"},
            {"fragment_target_bytes", 16 << 10},
            {"fragment_max_age_ms", 200},
            {"persist_threshold", 2},
            {"persist_interval_ms", 100},
            {"request_timeout_ms", 2000},
            {"delete_grace_ms", 0}}},
          {"threads", {{"io", 2}, {"blocking", 4}}}};
}

// Opens a node on `dir` (failures are reported to the test; null then).
inline std::unique_ptr<Node> open_node(const std::string& dir,
                                       nlohmann::json doc = small_node_doc()) {
  auto cfg = load_node_config(doc, dir, objstore::process_env());
  EXPECT_TRUE(cfg.ok()) << cfg.error().to_string();
  auto n = Node::open(*cfg);
  EXPECT_TRUE(n.ok()) << n.error().to_string();
  return n.ok() ? std::move(n).value() : nullptr;
}

// Appends `batches` chunks of `per` records (value_of(offset)); returns the
// next offset.
inline uint64_t append_values(log::StreamLog& log, uint64_t batches, uint32_t per = 10) {
  uint64_t next = log.committed_next();
  for (uint64_t b = 0; b < batches; ++b) {
    uint64_t first = log.committed_next();
    std::vector<std::string> vals;
    for (uint32_t i = 0; i < per; ++i) vals.push_back(value_of(first + i));
    std::vector<BytesView> views(vals.begin(), vals.end());
    auto r = log.append(std::span<const BytesView>(views));
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    if (!r.ok()) return next;
    next = r->next_offset;
  }
  return next;
}

// Every record in the persisted remote tier of `stream`, by offset, with
// the audit (which must be free of damage for the records to be trusted).
struct RemoteView {
  tier::AuditReport audit;
  std::map<uint64_t, std::string> records;
  std::vector<std::string> errors;
};

inline RemoteView read_remote(objstore::ObjectStore& store, catalog::Catalog& catalog,
                              const std::string& prefix, const std::string& stream) {
  RemoteView v;
  auto keys = tier::ObjectKeys::make(prefix, stream);
  auto a = tier::audit_stream(store, catalog, *keys);
  if (!a.ok()) {
    v.errors.push_back(a.error().to_string());
    return v;
  }
  v.audit = std::move(a).value();
  for (const auto& p : v.audit.problems) v.errors.push_back(p.kind + " " + p.key + ": " + p.detail);
  for (const auto& key : v.audit.referenced) {
    auto parsed = keys->parse(key);
    if (!parsed.ok() || parsed->type != tier::ObjectType::fragment) continue;
    auto body = store.get(key);
    if (!body.ok()) {
      v.errors.push_back(body.error().to_string());
      continue;
    }
    auto f = tier::decode_fragment(*body, key, true);
    if (!f.ok()) {
      v.errors.push_back(f.error().to_string());
      continue;
    }
    for (const auto& rec : f->index) {
      BytesView chunk = f->data.substr(rec.position);
      auto h = log::decode_chunk_header(chunk, key);
      auto values = log::parse_records(*h, chunk.substr(log::kChunkHeaderSize, h->data_len), key);
      for (size_t i = 0; i < values->size(); ++i) {
        if (!v.records.emplace(h->first_offset + i, std::string((*values)[i])).second) {
          v.errors.push_back(fmt::format("offset {} twice", h->first_offset + i));
        }
      }
    }
  }
  return v;
}

}  // namespace strata::node::test
