// The log layer's fixed limits, in one place: bounds and waits that are not
// settings (LogOptions holds those) but decide how much memory the log's
// paths may take and how its background work paces itself. Each says why
// it has its value. (Sizes that are the on-disk format's, such as the
// header sizes or the 255-byte writer reference, stay beside the format.)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace strata::log {

// The largest chunk (header + data + trailer) the log writes or reads. A
// chunk header claiming more is treated as damage, so no reader or scan
// ever allocates more than this for one chunk; LogOptions::max_chunk_bytes
// must stay below it. 1 GiB: far above any batch a client can send (a
// frame is 1 MiB by default), small enough to refuse a garbage length.
inline constexpr uint64_t kMaxChunkSize = 1ull << 30;

// A sub-batch's declared uncompressed size is refused above this: a damaged
// or hostile header must not make a reader allocate gigabytes. Clients
// batch at most a frame's worth of messages (frame max 1 MiB by default),
// so 64 MiB is far above any real batch.
inline constexpr uint32_t kMaxUncompressedSubBatch = 64u << 20;

// ---- the append path (stream_log_write.cpp) ----

// One group-commit leader takes at most this many bytes of queued batches
// per round, so a burst of appenders cannot make one round (and its
// buffer) unbounded; the rest go in the next round.
inline constexpr uint64_t kMaxGroupBytes = 64ull << 20;
// The leader hands written chunks to the file once this many bytes are
// buffered: one write per MiB keeps the syscall count low without holding
// a whole round in memory first.
inline constexpr size_t kFlushBytes = 1 << 20;
// The leader's buffers are released after a round when they grew past this
// (a burst), so an idle stream does not keep a burst's memory.
inline constexpr size_t kKeepBufferBytes = 4 << 20;

// ---- seal syncs under FsyncPolicy::never (stream_log_seal.cpp) ----

// The sealer thread's nice value: its fsyncs yield the CPU to the writer
// and readers.
inline constexpr int kSealerNice = 10;
// A queued seal's sync starts once the writer has paused this long (a
// burst is not slowed by the writeback of its own first segment), ...
inline constexpr std::chrono::milliseconds kSealIdle{20};
// ... or this long after the seal at the latest (or at once when
// max_pending_seal_syncs are pending, or on close), so a stream that never
// pauses still gets its sealed segments durable within a second.
inline constexpr std::chrono::milliseconds kSealMaxDelay{1000};

// ---- reading files whole (segment_scan.cpp, writer_sequences.cpp) ----

// Recovery's scan and the writer-sequence rebuild read a segment through a
// window of this many bytes: small chunks cost no syscall each, and the
// window is the scan's whole memory.
inline constexpr size_t kScanBlock = 1 << 20;

// ---- readers (reader.cpp) ----

// A reader of a read-only log (its writer is another process, so no commit
// wakes it) looks at the files this often while it waits.
inline constexpr std::chrono::milliseconds kReadOnlyRefreshInterval{50};

}  // namespace strata::log
