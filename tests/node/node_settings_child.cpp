// The victim of node_settings_kill_test: opens a node and creates streams
// s0, s1, ... each with its own settings (settings_for(i)), as fast as it
// can, until it is killed; with `alter`, creates stream s0 and alters its
// retention again and again (altered_for(k)). Prints one line per write(2)
// (support/child_output.h):
//   created <i>   stream s<i> was created (create_stream returned)
//   altered <k>   s0 now has altered_for(k) (alter_stream returned)
//
//   node_settings_child DATA_DIR [alter]
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "node/node.h"
#include "node/node_settings_kill.h"
#include "support/child_output.h"

using namespace strata;

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: node_settings_child DATA_DIR [alter]\n");
    return 2;
  }
  auto cfg =
      node::load_node_config(node::test::settings_kill_doc(), argv[1], objstore::process_env());
  if (!cfg.ok()) {
    std::fprintf(stderr, "config: %s\n", cfg.error().to_string().c_str());
    return 1;
  }
  auto n = node::Node::open(*cfg);
  if (!n.ok()) {
    std::fprintf(stderr, "open: %s\n", n.error().to_string().c_str());
    return 1;
  }
  test::emit_line("started");
  if (argc == 3) {
    auto log = (*n)->create_stream("s0", node::test::settings_for(0));
    if (!log.ok()) {
      std::fprintf(stderr, "create: %s\n", log.error().to_string().c_str());
      return 1;
    }
    test::emit_line("created 0");
    for (uint64_t k = 0;; ++k) {
      if (auto st = (*n)->alter_stream("s0", node::test::altered_for(k)); !st.ok()) {
        std::fprintf(stderr, "alter: %s\n", st.error().to_string().c_str());
        return 1;
      }
      test::emit_line(fmt::format("altered {}", k));
    }
  }
  for (uint64_t i = 0;; ++i) {
    auto log = (*n)->create_stream(fmt::format("s{}", i), node::test::settings_for(i));
    if (!log.ok()) {
      std::fprintf(stderr, "create: %s\n", log.error().to_string().c_str());
      return 1;
    }
    test::emit_line(fmt::format("created {}", i));
  }
}
