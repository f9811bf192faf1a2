// Ra's meta.dets rows, typed: what ra_log_meta stored per Raft server.
//
// A row is the Erlang tuple {UId, CurrentTerm, VotedFor, LastApplied}:
//  - UId: a binary (Ra's ra_uid() is binary() in every version; an atom or
//    string UId was never written by Ra and is rejected);
//  - CurrentTerm, LastApplied: non-negative integers, or `undefined` — Ra
//    creates a row as {UId, undefined, undefined, undefined} and sets one
//    field, so a server that only ever stored last_applied has an
//    undefined term on disk. Both are kept as "absent", not defaulted, so
//    the migration can decide (Ra's readers default them to 0);
//  - VotedFor: `undefined`, a bare atom (the legacy ra_server_id() form,
//    a registered name on the local node) or {Name, Node} with two atoms.
//    The form is preserved so it can be written back in the same form.
//
// Integers must fit 64 bits. Anything else is an error naming the file,
// the row's byte position, its uid and the offending field.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/result.h"
#include "raftmeta/dets/dets_file.h"

namespace strata::raftmeta::dets {

struct VotedFor {
  enum class Form : uint8_t {
    none,       // `undefined`: no vote
    bare_name,  // 'name': legacy form, the server's registered name only
    server_id,  // {'name', 'node'}
  };
  Form form = Form::none;
  std::string name;  // UTF-8 atom text; empty for none
  std::string node;  // UTF-8 atom text; only for server_id

  bool operator==(const VotedFor&) const = default;
};

struct RaMetaRow {
  Bytes uid;
  std::optional<uint64_t> current_term;  // nullopt: `undefined` on disk
  VotedFor voted_for;
  std::optional<uint64_t> last_applied;  // nullopt: `undefined` on disk

  bool operator==(const RaMetaRow&) const = default;
};

// Reads one DETS object as a Ra meta row; `path` names the file in errors
// (Errc::schema_mismatch for a row of unexpected shape).
Result<RaMetaRow> decode_ra_meta_row(const Object& obj, const std::string& path);

// A uid for messages: <<"printable">> or <<16#hex>>.
std::string describe_uid(BytesView uid);

class RaMetaReader {
 public:
  // Opens meta.dets and validates it completely — the DETS structure (see
  // DetsReader) and the shape of every row — before anything is streamed.
  // Also rejects a table whose key is not element 1 (Ra's keypos).
  static Result<std::unique_ptr<RaMetaReader>> open(FileSystem& fs, const std::string& path);

  // info().object_count is the exact number of rows for_each will deliver
  // (for progress); info().closed_properly tells whether Ra's node shut
  // down cleanly.
  const Info& info() const { return dets_->info(); }

  // Calls fn(row, index) for every row, index counting from 0, in file
  // order. Fails only if the file changed since open() (or a read fails);
  // on any error the caller must discard the rows it was given.
  Status for_each(const std::function<Status(const RaMetaRow&, uint64_t index)>& fn);

 private:
  explicit RaMetaReader(std::unique_ptr<DetsReader> d) : dets_(std::move(d)) {}
  std::unique_ptr<DetsReader> dets_;
};

// All rows of `path`, or the first error.
Result<std::vector<RaMetaRow>> read_ra_meta(FileSystem& fs, const std::string& path);

}  // namespace strata::raftmeta::dets
