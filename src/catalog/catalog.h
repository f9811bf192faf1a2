// The catalog: per stream, whether it exists, the owning writer's epoch, the
// object key of its current manifest root and a revision, changed only by
// compare-and-set. It is the single point of truth a persist commits to:
// a root object is visible only once the catalog points to it, and a writer
// deposed by a higher epoch can no longer move the pointer (fencing).
//
// Backends: EmbeddedCatalog (embedded_catalog.h: one slotstore file, the
// single-node default), EtcdCatalog (etcd_catalog.h: an etcd v3 cluster,
// for several nodes) and MemoryCatalog (memory_catalog.h: for tests of the
// layers above, with fault injection). All follow the rules of
// catalog/entry_rules.h, so they cannot disagree on an outcome.
//
// Results: a Result's error means the backend failed (io, fail_stopped,
// unavailable, store_full, invalid_argument for a bad stream name, a root
// key longer than the backend stores, or epoch 0). Logical outcomes of a
// compare-and-set are PutOutcome values, never errors.
//
// Stream names: the one rule of common/stream_name.h (RabbitMQ's names:
// any UTF-8 of 1..255 bytes not starting with "amq.", without NUL, CR, LF).
//
// The etcd backend (etcd_catalog.h) follows this mapping. Per stream two
// keys in one namespace: E = <ns>/streams/<stream> holding {epoch, root_key}
// (and the nonce of its last write, see etcd_catalog.h), and
// P = <ns>/epochs/<stream> holding the epoch as 20 zero-padded decimal
// digits, so that etcd's bytewise value comparison orders epochs
// numerically. `revision` is E's mod_revision: global in etcd, so it
// strictly grows but is not consecutive, and a re-created stream gets a
// revision above every revision it had before (the embedded backend keeps
// that property too, see entry_rules.h). Every write changes E and P in one
// transaction; every failed Txn's else branch reads E (its epoch is the
// one E holds), and the outcome follows the order the contract gives below.
//   create       Txn(If create_revision(E) == 0; Then put E, put P)
//                else -> already_exists
//   get          Range(E) (linearizable read) -> value, mod_revision
//   list         Range(<ns>/streams/ .. prefix end): key order = name order
//   put, exp 0   Txn(If create_revision(E) == 0; Then put E, put P)
//   put, exp R   Txn(If mod_revision(E) == R and value(P) < pad(epoch + 1);
//                Then put E, put P) else: absent -> not_found, stored epoch
//                > epoch -> fenced, else conflict
//   bump_epoch   Range(E) for the stored epoch, then
//                Txn(If mod_revision(E) == R; Then put E, put P with the
//                new epoch and the same root)
//   remove       Txn(If mod_revision(E) == R; Then delete E, delete P)
// Leases: catalog entries carry none (a stream outlives the process that
// writes it). A writer's liveness lease, if a cluster node adds one, is a
// separate key granted and kept alive outside this interface; losing it
// leads to a bump_epoch by the next owner, which fences the old writer here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace strata::catalog {

struct StreamEntry {
  std::string stream;
  uint64_t epoch = 0;     // the owning writer's epoch; a put from a lower epoch is fenced
  std::string root_key;   // object key of the current manifest root; "" before the first persist
  uint64_t revision = 0;  // > 0 once the entry exists; strictly grows with every change of the
                          // entry (consecutive in the embedded backend; etcd's mod_revision later)

  bool operator==(const StreamEntry&) const = default;
};

enum class PutOutcome : uint8_t { ok, conflict, not_found, fenced };

// "ok", "conflict", "not_found", "fenced".
std::string_view outcome_name(PutOutcome o);

struct PutResult {
  PutOutcome outcome = PutOutcome::ok;
  uint64_t revision = 0;  // ok: the new revision; conflict/fenced: the stored revision
  uint64_t epoch = 0;     // the stored epoch after the call
  // not_found: revision and epoch are 0. remove ok: both are 0 (nothing is
  // stored after the call).

  bool operator==(const PutResult&) const = default;
};

// The condition a cluster owner's takeover carries (cluster/ownership.h):
// the key `key`, outside the catalog's entries, holds `value` attached to
// lease `lease` (the stream's owner key naming this node on its current
// lease). A node whose lease has just expired, or whose owner key another
// node now holds, can then no longer raise the epoch and fence the new owner.
struct OwnerCondition {
  std::string key;
  std::string value;
  int64_t lease = 0;
};

class Catalog {
 public:
  virtual ~Catalog() = default;
  // Creates the entry (no root, revision > 0) at `epoch` (>= 1). Errc::already_exists if present.
  virtual Result<StreamEntry> create(std::string_view stream, uint64_t epoch) = 0;
  // Errc::not_found when absent.
  virtual Result<StreamEntry> get(std::string_view stream) = 0;
  // Every entry, ordered by stream name.
  virtual Result<std::vector<StreamEntry>> list() = 0;
  // The compare-and-set of a persist. expected_revision == 0: create-if-absent (conflict if the
  // entry exists). Otherwise, in this order: absent -> not_found; stored epoch > epoch -> fenced;
  // stored revision != expected_revision -> conflict; else store (root_key, epoch), bump the
  // revision, ok. The write is durable (fsynced) before ok is returned.
  // root_key must be non-empty (invalid_argument): a persist always has a root.
  virtual Result<PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                                uint64_t expected_revision) = 0;
  // Takeover: sets the epoch to max(stored + 1, min_epoch) if the stored revision equals
  // expected_revision (else conflict), keeping the root; returns the new entry via `get` semantics.
  // Absent -> not_found. Durable before ok.
  virtual Result<PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                                       uint64_t min_epoch) = 0;
  // bump_epoch that applies only while `owner` holds, checked in the same atomic step: absent ->
  // not_found; `owner` does not hold -> fenced (with the stored revision and epoch); else as
  // bump_epoch. A revision that differs may be answered conflict before the owner is looked at
  // (the caller's retry at the new revision then gets fenced). Backends without owner keys
  // (embedded, memory): unsupported.
  virtual Result<PutResult> bump_epoch_if_owner(std::string_view stream, uint64_t expected_revision,
                                                uint64_t min_epoch, const OwnerCondition& owner);
  // Stream settings kept with the entry (a cluster: every owner runs the stream as it was
  // created). create_with_settings is create() that also stores `settings` — opaque here, the
  // node layer's JSON (node/stream_settings.h) — in the same atomic step; they change only by
  // update_settings (an operator altering the stream's retention: replaces them while the entry
  // exists, not_found otherwise; durable before ok) and go with the entry's remove.
  // settings(): what was stored, nullopt when none (also for an absent stream). Backends that
  // keep settings elsewhere (embedded, memory: the stream's settings file): unsupported.
  virtual Result<StreamEntry> create_with_settings(std::string_view stream, uint64_t epoch,
                                                   std::string_view settings);
  virtual Result<std::optional<std::string>> settings(std::string_view stream);
  virtual Status update_settings(std::string_view stream, std::string_view settings);
  // Deletes the entry if its revision equals expected_revision (conflict otherwise; not_found if
  // absent). Durable before ok.
  virtual Result<PutResult> remove(std::string_view stream, uint64_t expected_revision) = 0;
  // "embedded:/var/lib/strata/catalog.slots", for logs and status.
  virtual std::string describe() const = 0;
};

}  // namespace strata::catalog
