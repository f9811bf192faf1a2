// What a connection's clients amount to per stream, for /metrics and the
// stream list: the streams its publishers write and, for each consumer,
// its stream, lag and group. Taken on the connection's strand without
// building its JSON description (a scrape with a thousand connections
// would spend most of its time there).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::server {

struct ClientTally {
  struct Consumer {
    std::string stream;
    uint64_t lag = 0;   // offset_lag
    std::string group;  // its name property ("" when unnamed)
  };
  std::vector<std::string> publisher_streams;
  std::vector<Consumer> consumers;
};

}  // namespace strata::server
