// Crash victim for parts_offset_store_test: stores increasing offsets for a
// few references of two streams as fast as it can, flushing every 200
// rounds and printing "flushed N" once round N is durable, until killed.
#include <cstdio>
#include <string>

#include "server/offset_store.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: parts_offset_child DIR\n");
    return 2;
  }
  strata::server::OffsetStoreOptions o;
  o.flush_interval = std::chrono::milliseconds(5);  // the background flusher races the kill too
  auto s = strata::server::OffsetStore::open(argv[1], o);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.error().message.c_str());
    return 1;
  }
  for (uint64_t round = 1;; ++round) {
    for (const char* stream : {"orders", "events"}) {
      for (int ref = 0; ref < 3; ++ref) {
        auto st = (*s)->store(stream, "consumer-" + std::to_string(ref), round);
        if (!st.ok()) return 1;
      }
    }
    if (round % 200 == 0) {
      if (!(*s)->flush().ok()) return 1;
      std::printf("flushed %llu\n", static_cast<unsigned long long>(round));
      std::fflush(stdout);
    }
  }
}
