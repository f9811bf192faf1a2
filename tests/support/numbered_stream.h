// Client steps of the cluster tests over a stream that one publisher
// writes with numbered messages: bodies "m-<id>", ids from 1, so the
// message at offset o has id o + 1 — a consumer checks every record it
// gets against its offset. Uses a ServeCluster (serve_cluster.h) to find
// leaders and connect.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/serve_cluster.h"

namespace strata::test {

std::string numbered_body(uint64_t id);

// Declares publisher `id` (no reference) on `stream`, retrying for 20 s
// while the node answers otherwise (a stream still being opened).
bool declare_publisher(StreamClient& c, const std::string& stream, uint8_t id = 1);

// Publishes ids [*next, *next + count) as publisher 1 in frames of 10, at
// most 4 frames unconfirmed, and waits for every confirm; *next moves on,
// `confirmed` gets the confirmed ids. False on an error, a PublishError or
// a MetadataUpdate.
bool publish_numbered(StreamClient& c, uint64_t* next, uint64_t count,
                      std::set<uint64_t>* confirmed);

// The same on the stream's current leader as node `ask`'s Metadata names it.
bool publish_on_leader(ServeCluster& cluster, int ask, const std::string& stream, uint64_t* next,
                       uint64_t count, std::set<uint64_t>* confirmed);

// What one subscription received: each message id with its offset in
// arrival order, the first chunk's id, deliveries per id.
struct Received {
  std::vector<std::pair<uint64_t, uint64_t>> records;  // (offset, id)
  std::optional<uint64_t> first_chunk;
  uint64_t delivers = 0;          // Deliver frames (a frame may hold several stored chunks)
  std::map<uint64_t, int> count;  // id -> deliveries
  bool metadata_update = false;
};

// A client of node i subscribed (id `sub`, credit 10) at `spec`; the
// response is checked (a gtest failure otherwise).
StreamClient subscribe_numbered(ServeCluster& cluster, int i, const std::string& stream,
                                proto::OffsetSpec spec, uint8_t sub);

// Reads deliveries of subscription `sub` (one credit back per chunk) until
// `done(*got)`, a MetadataUpdate or the timeout; records every message and
// checks (gtest) that each id matches its offset and offsets only grow.
void read_numbered_until(StreamClient& c, uint8_t sub, Received* got,
                         std::chrono::milliseconds timeout,
                         const std::function<bool(const Received&)>& done);

bool has_all(const Received& got, const std::set<uint64_t>& want);
// Every confirmed id received, none twice (gtest expectations).
void expect_exactly_once(const Received& got, const std::set<uint64_t>& confirmed);

// Node i's /status document (its http listener, printed at start, must be
// on: "http": {"listen": "127.0.0.1:0"}); null if it does not answer.
nlohmann::json node_status(ServeCluster& cluster, int i);

}  // namespace strata::test
