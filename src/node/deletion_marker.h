// The durable intent to delete a stream: one small file per stream under
// <data_dir>/deletions/, published crash-atomically (common/publish_file.h)
// before the first destructive step and removed after the last one. A node
// that opens with a marker present neither opens nor lists the stream and
// finishes its deletion (node/stream_deletion.h); docs/formats/stream-deletion.md,
// "Marker", gives the protocol.
//
//   <data_dir>/deletions/<component>.json
//   {"format":"strata-stream-deletion","version":1,"stream":"s1","requested_at_ms":1700000000000}
//
// <component> is the stream's name as a file name (common/name_component.h);
// the file also holds the name, which is how a hashed component's stream is
// known. No component ends in ".json.tmp", publish_file's temporary name.
//
// Why a file and not the catalog: a catalog entry holds an epoch, a root key
// and a revision (catalog/catalog.h) and nothing else; marking it "being
// deleted" would need a new field or an overloaded root key that every
// reader and uploader would have to recognise. The marker is local to the
// node that owns the data directory, which is the only writer of the stream
// on a single node, and it must survive until the catalog entry itself is
// gone, so it cannot live in that entry anyway.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/result.h"

namespace strata::node {

struct DeletionMarker {
  // The stream; "" only when the marker is unreadable and its file name is
  // a hashed component (the name is in the file): `component` then says
  // which stream it is.
  std::string stream;
  std::string component;  // of the file name
  int64_t requested_at_ms = 0;
  // Set when the file is unreadable (bad JSON, another format or version,
  // a name that differs from the file's): the deletion is then blocked, and
  // nothing of the stream is touched until an operator fixes or removes it.
  std::string problem;
};

// "<dir>/<component of stream>.json".
std::string deletion_marker_path(const std::string& dir, const std::string& stream);

// Writes the marker and makes it durable (file and directory entry) before
// returning OK. Creates `dir` if missing. Overwrites an existing marker.
Status write_deletion_marker(FileSystem& fs, const std::string& dir, const DeletionMarker& m);

// Every marker in `dir` (none if `dir` is absent), sorted by file name.
// Temporary files left by a write a crash interrupted are removed; other
// files that are no marker are left alone with a warning.
Result<std::vector<DeletionMarker>> scan_deletion_markers(FileSystem& fs, const std::string& dir);

// Removes the marker durably (the directory is synced). Absent: OK.
Status remove_deletion_marker(FileSystem& fs, const std::string& dir, const std::string& stream);

}  // namespace strata::node
