// Catalog interface (placeholder copy for the node work; the catalog layer's
// own header replaces it at merge).
#pragma once

#include <cstdint>
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
};
enum class PutOutcome : uint8_t { ok, conflict, not_found, fenced };
struct PutResult {
  PutOutcome outcome = PutOutcome::ok;
  uint64_t revision = 0;  // ok: the new revision; conflict/fenced: the stored revision
  uint64_t epoch = 0;     // the stored epoch after the call
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
  virtual Result<PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                                uint64_t expected_revision) = 0;
  // Takeover: sets the epoch to max(stored + 1, min_epoch) if the stored revision equals
  // expected_revision (else conflict), keeping the root; returns the new entry via `get` semantics.
  virtual Result<PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                                       uint64_t min_epoch) = 0;
  // Deletes the entry if its revision equals expected_revision (conflict otherwise; not_found if
  // absent). Durable before ok.
  virtual Result<PutResult> remove(std::string_view stream, uint64_t expected_revision) = 0;
  // "embedded:/var/lib/strata/catalog.slots", for logs and status.
  virtual std::string describe() const = 0;
};
}
