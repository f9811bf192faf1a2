// The victim of node_kill_test: runs a node that appends to one stream as
// fast as it can, with small fragments and frequent persists, until it is
// killed. Prints, one line per write(2) (support/child_output.h):
//   ack <next>        every offset below <next> is acknowledged (fsync always)
//   persisted <next>  every offset below <next> is in a persisted manifest
//
//   node_child DATA_DIR STREAM
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "node/node.h"
#include "node/node_test_util.h"
#include "support/child_output.h"

using namespace strata;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: node_child DATA_DIR STREAM\n");
    return 2;
  }
  std::string dir = argv[1], stream = argv[2];
  auto doc = node::test::small_node_doc();
  doc["tiering"]["fragment_target_bytes"] = 8 << 10;
  doc["tiering"]["persist_threshold"] = 1;
  doc["tiering"]["persist_interval_ms"] = 20;
  doc["log"]["retention"] = {{"max_bytes", 1}};
  auto cfg = node::load_node_config(doc, dir, objstore::process_env());
  if (!cfg.ok()) {
    std::fprintf(stderr, "config: %s\n", cfg.error().to_string().c_str());
    return 1;
  }
  auto n = node::Node::open(*cfg);
  if (!n.ok()) {
    std::fprintf(stderr, "open: %s\n", n.error().to_string().c_str());
    return 1;
  }
  auto log = (*n)->stream(stream);
  if (!log.ok()) log = (*n)->create_stream(stream);
  if (!log.ok()) {
    std::fprintf(stderr, "stream: %s\n", log.error().to_string().c_str());
    return 1;
  }
  auto up = (*n)->uploader(stream);
  test::emit_line("started");
  uint64_t persisted = 0;
  for (;;) {
    uint64_t first = (*log)->committed_next();
    std::vector<std::string> vals;
    for (uint64_t i = 0; i < 20; ++i) vals.push_back(node::test::value_of(first + i));
    std::vector<BytesView> views(vals.begin(), vals.end());
    auto r = (*log)->append(std::span<const BytesView>(views));
    if (!r.ok()) {
      std::fprintf(stderr, "append: %s\n", r.error().to_string().c_str());
      return 1;
    }
    test::emit_line(fmt::format("ack {}", r->next_offset));
    uint64_t p = up->persisted_next();
    if (p != persisted) {
      persisted = p;
      test::emit_line(fmt::format("persisted {}", p));
    }
  }
}
