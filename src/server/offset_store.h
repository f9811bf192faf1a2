// OffsetStore: consumer offset tracking (StoreOffset / QueryOffset of the
// stream protocol) per (stream, reference), kept in memory and persisted
// under the node's data directory, one file per stream:
//   <dir>/<component>     (dir is typically <data_dir>/tracking; the
//                          stream's name as a file name, server/named_files.h)
// Byte layout in docs/formats/server-state.md ("Offset tracking file"). A file is
// replaced whole and crash-atomically (common/publish_file.h), so after a
// crash it holds the offsets of some completed flush, never part of one.
//
// Batching: store() only updates memory and marks the stream dirty; a
// flusher thread writes the dirty streams every `flush_interval` (one
// fsync'd file per dirty stream per interval, however many stores). A
// consumer storing every message therefore costs no fsync per call.
// Loss window: on a crash (kill -9, power loss) the offsets stored during
// the last flush_interval (plus the flush in progress) may be lost and
// queries answer the previous flushed value — consumers resume a little
// earlier and see some messages again (at-least-once, as with RabbitMQ's
// own tracking). close() and flush() lose nothing.
//
// Thread safety: every method may be called from any thread. store() and
// query() take one mutex briefly and never wait for I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/fs.h"
#include "common/result.h"

namespace strata::server {

// The protocol's reference is a short string; RabbitMQ caps it at 255 bytes.
constexpr size_t kMaxReferenceBytes = 255;

struct OffsetStoreOptions {
  FileSystem* fs = nullptr;  // nullptr: posix_fs()
  // How often dirty streams are written (the crash-loss window). Zero: no
  // flusher thread; the owner calls flush().
  std::chrono::milliseconds flush_interval{1000};
};

struct OffsetStoreStats {
  uint64_t stores = 0;
  uint64_t flushes = 0;  // flush rounds that wrote at least one file
  uint64_t files_written = 0;
  uint64_t flush_failures = 0;
};

class OffsetStore {
 public:
  // Loads every stream's file under `dir` (created if missing) and starts
  // the flusher. Leftover temporary files of an interrupted flush are
  // removed. Errors: a damaged file (Errc::corrupt naming it), I/O.
  static Result<std::unique_ptr<OffsetStore>> open(std::string dir, OffsetStoreOptions opts = {});
  // close(), ignoring its error (logged).
  ~OffsetStore();
  OffsetStore(const OffsetStore&) = delete;
  OffsetStore& operator=(const OffsetStore&) = delete;

  // Records `offset` for (stream, reference); durable at the next flush.
  // invalid_argument: empty or oversized reference, invalid stream name.
  // not_found: the stream was removed (remove_stream) and not created
  // again since. closed: after close().
  Status store(std::string_view stream, std::string_view reference, uint64_t offset);
  // The offset stored for (stream, reference), or nullopt (the protocol's
  // no_offset) if none.
  std::optional<uint64_t> query(std::string_view stream, std::string_view reference) const;

  // Writes every dirty stream now and waits for it.
  Status flush();
  // Forgets a stream's offsets and removes its file (durably): called when
  // the stream is deleted. Until stream_created(stream), store() refuses
  // the stream: a StoreOffset that checked the stream's existence before
  // the deletion but stores after it would otherwise leave offsets (and at
  // the next flush a file) that a re-created stream would inherit.
  Status remove_stream(std::string_view stream);
  // A stream of this name is being created (again): store() accepts it.
  // It starts with no offsets (remove_stream dropped them).
  void stream_created(std::string_view stream);
  // Stops the flusher and flushes. Idempotent.
  Status close();

  OffsetStoreStats stats() const;
  const std::string& dir() const { return dir_; }

 private:
  OffsetStore(std::string dir, OffsetStoreOptions opts);
  Status load();
  void run_flusher();
  std::string file_of(std::string_view stream) const;

  std::string dir_;
  OffsetStoreOptions opts_;
  FileSystem& fs_;
  struct State;  // offset_store.cpp: the offsets, the flusher and their locks
  std::unique_ptr<State> st_;
};

// The file for one stream's offsets (docs/formats/server-state.md,
// "Offset tracking file"). Exposed for tests.
struct TrackingFile {
  uint8_t version = 0;  // 2; 1 for a file written before names were encoded
  std::string stream;   // "" in version 1, which did not hold it
  std::map<std::string, uint64_t, std::less<>> offsets;
};
Bytes encode_tracking_file(std::string_view stream,
                           const std::map<std::string, uint64_t, std::less<>>& offsets);
Result<TrackingFile> decode_tracking_file(BytesView in, const std::string& where);

}  // namespace strata::server
