// The victim of node_delete_kill_test: opens a node (which resumes a
// deletion found pending, in the background) and deletes the given streams
// one after the other, with small listing pages so that each deletion
// lists and removes many times. Prints, one line per write(2)
// (support/child_output.h):
//   opened         the node is open
//   deleted NAME   delete_stream returned OK
//   gone NAME      there was nothing to delete (an earlier round finished it)
//
//   node_delete_child DATA_DIR PAGE_KEYS STREAM...
#include <cstdio>
#include <string>

#include "node/node.h"
#include "node/node_test_util.h"
#include "support/child_output.h"

using namespace strata;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: node_delete_child DATA_DIR PAGE_KEYS STREAM...\n");
    return 2;
  }
  std::string dir = argv[1];
  auto cfg = node::load_node_config(node::test::small_node_doc(), dir, objstore::process_env());
  if (!cfg.ok()) {
    std::fprintf(stderr, "config: %s\n", cfg.error().to_string().c_str());
    return 1;
  }
  cfg->deletion.list_page_keys = std::stoi(argv[2]);
  auto n = node::Node::open(*cfg);
  if (!n.ok()) {
    std::fprintf(stderr, "open: %s\n", n.error().to_string().c_str());
    return 1;
  }
  test::emit_line("opened");
  for (int i = 3; i < argc; ++i) {
    const std::string stream = argv[i];
    Status s = (*n)->delete_stream(stream);
    if (s.code() == Errc::not_found) {
      test::emit_line("gone " + stream);
    } else if (s.ok()) {
      test::emit_line("deleted " + stream);
    } else {
      std::fprintf(stderr, "delete %s: %s\n", stream.c_str(), s.to_string().c_str());
      return 1;
    }
  }
  Status c = (*n)->close();
  if (!c.ok()) {
    std::fprintf(stderr, "close: %s\n", c.to_string().c_str());
    return 1;
  }
  return 0;
}
