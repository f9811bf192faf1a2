// `strata import rabbitmq`, one stream at a time: a stream of a stopped
// RabbitMQ node (rabbit_layout.h) becomes a stream of a strata node with
// every chunk at its offset, with its time and its bytes (the osiris
// entries are strata's own: they are appended verbatim), its arguments as
// settings, its publishers' sequences in the chunks' writer trailers, and
// its consumers' stored offsets in the node's offset store.
//
// Nothing is half-imported: a stream is marked pending in <data_dir>/import
// before it is created and the mark is removed once the node has synced it
// (finish_imports); a stream that fails is deleted at once, and one found
// marked at the next run (the import was killed) is deleted and imported
// again. A stream the node already has is left alone ("exists").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "import/rabbit_layout.h"
#include "node/node.h"
#include "server/offset_store.h"

namespace strata::import {

struct ImportProgress {
  std::string stream;
  uint64_t bytes_done = 0;   // segment bytes read
  uint64_t bytes_total = 0;  // of this stream's segments
};

struct ImportOptions {
  bool dry_run = false;  // read and check everything, write nothing
  // Called every few MiB and at each stream's end.
  std::function<void(const ImportProgress&)> progress;
};

struct StreamImport {
  std::string name;
  std::string dir;
  std::string outcome;  // imported, would_import, exists, failed
  std::string error;
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  uint64_t chunks = 0;           // user chunks
  uint64_t tracking_chunks = 0;  // kept for their offsets, never delivered
  uint64_t messages = 0;
  uint64_t bytes = 0;  // segment bytes read
  uint64_t publishers = 0;
  uint64_t offsets = 0;
  uint64_t segments = 0;
  std::vector<std::string> ignored_arguments;
  std::vector<std::string> notes;
};

// Where the pending marks of a node live.
std::string import_marks_dir(const std::string& data_dir);

// Streams a killed import left marked: deleted from the node (and their
// offsets from `offsets`) so that this run imports them again. Returns
// their names.
Result<std::vector<std::string>> undo_unfinished_imports(FileSystem& fs,
                                                         const std::string& data_dir,
                                                         node::Node& node,
                                                         server::OffsetStore& offsets);

// `node` and `offsets` may be null for a dry run only (which then does not
// see whether the node has the stream already).
StreamImport import_stream(FileSystem& fs, const std::string& data_dir, node::Node* node,
                           server::OffsetStore* offsets, const RabbitStream& source,
                           const ImportOptions& o);

// After node.close() and offsets.close() succeeded (everything synced):
// removes the marks of the imported streams.
Status finish_imports(FileSystem& fs, const std::string& data_dir);

}  // namespace strata::import
