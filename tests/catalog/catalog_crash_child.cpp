// catalog_crash_child <dir> <seed>
//
// The process the kill -9 test kills: opens (recovering) the embedded
// catalog in <dir> and makes random calls forever. Before each call it logs
// "op <n> <call>" (catalog_ops.h's text form) on stdout, and after it
// "ack <n> <outcome>" or "err <n> <code>". Each line goes out with one
// write(2), so a kill cuts at most the last line short.
#include <cstdio>
#include <cstdlib>

#include "catalog/embedded_catalog.h"
#include "catalog_ops.h"
#include "support/child_output.h"

using namespace strata;
using namespace strata::catalog;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <dir> <seed>\n", argv[0]);
    return 2;
  }
  EmbeddedCatalogOptions o;
  o.capacity = 16;
  o.wal_bytes = 24 * 1024;  // small: compactions run while the test kills
  auto opened = EmbeddedCatalog::open(posix_fs(), argv[1], o);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.error().to_string().c_str());
    return 1;
  }
  auto& c = **opened;
  Random rng(std::strtoull(argv[2], nullptr, 0));
  for (uint64_t n = 0;; ++n) {
    const std::string stream = ops::random_stream(rng);
    auto cur = c.get(stream);
    if (!cur.ok() && cur.code() != Errc::not_found) {
      std::fprintf(stderr, "get: %s\n", cur.error().to_string().c_str());
      return 1;
    }
    ops::Op op =
        ops::random_op(rng, stream, cur.ok() ? std::optional<StreamEntry>(*cur) : std::nullopt);
    strata::test::emit_line("op " + std::to_string(n) + " " + ops::format_op(op));
    auto r = ops::run_op(c, op);
    if (r.ok()) {
      strata::test::emit_line("ack " + std::to_string(n) + " " + *r);
    } else {
      strata::test::emit_line("err " + std::to_string(n) + " " + std::string(errc_name(r.code())));
    }
  }
}
