// Counts fsync(2) and fdatasync(2) calls made anywhere in this process —
// by slotstore, SQLite and RocksDB alike — by interposing both symbols (the
// executable exports them, so the shared libraries bind to them first) and
// forwarding to libc.
#pragma once

#include <cstdint>

namespace strata::bench {
uint64_t fsync_count();
}
