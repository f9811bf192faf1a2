#include "catalog/entry_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/assert.h"
#include "common/stream_name.h"

namespace strata::catalog {

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

PutResult stored_result(PutOutcome o, const StreamEntry& e) {
  return PutResult{o, e.revision, e.epoch};
}

Error exhausted(std::string_view stream, std::string_view what) {
  return Error(Errc::out_of_range,
               fmt::format("catalog: stream \"{}\": {} cannot grow past 2^64 - 1",
                           printable_name(stream), what));
}

}  // namespace

std::string_view outcome_name(PutOutcome o) {
  switch (o) {
    case PutOutcome::ok:
      return "ok";
    case PutOutcome::conflict:
      return "conflict";
    case PutOutcome::not_found:
      return "not_found";
    case PutOutcome::fenced:
      return "fenced";
  }
  return "unknown";
}

Status check_epoch(std::string_view stream, uint64_t epoch, std::string_view what) {
  if (epoch == 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("catalog: {} of stream \"{}\": epoch 0; epochs start at 1", what,
                             printable_name(stream)));
  }
  return Status::OK();
}

Status check_put_args(std::string_view stream, std::string_view root_key, uint64_t epoch) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_TRY(check_epoch(stream, epoch, "put"));
  if (root_key.empty()) {
    return Error(Errc::invalid_argument,
                 fmt::format("catalog: put of stream \"{}\": the root key is empty",
                             printable_name(stream)));
  }
  return Status::OK();
}

Result<StreamEntry> decide_create(const std::optional<StreamEntry>& stored, std::string_view stream,
                                  uint64_t epoch, uint64_t revision_floor) {
  if (stored) {
    return Error(Errc::already_exists,
                 fmt::format("catalog: stream \"{}\" already exists (epoch {}, revision {})",
                             printable_name(stream), stored->epoch, stored->revision));
  }
  if (revision_floor == kMax) return exhausted(stream, "the revision");
  return StreamEntry{std::string(stream), epoch, "", revision_floor + 1};
}

Result<Decision> decide_put(const std::optional<StreamEntry>& stored, std::string_view stream,
                            std::string_view root_key, uint64_t epoch, uint64_t expected_revision,
                            uint64_t revision_floor) {
  Decision d;
  if (expected_revision == 0) {
    if (stored) {
      d.result = stored_result(PutOutcome::conflict, *stored);
      return d;
    }
    if (revision_floor == kMax) return exhausted(stream, "the revision");
    d.entry = StreamEntry{std::string(stream), epoch, std::string(root_key), revision_floor + 1};
  } else {
    if (!stored) {
      d.result = PutResult{PutOutcome::not_found, 0, 0};
      return d;
    }
    if (stored->epoch > epoch) {
      d.result = stored_result(PutOutcome::fenced, *stored);
      return d;
    }
    if (stored->revision != expected_revision) {
      d.result = stored_result(PutOutcome::conflict, *stored);
      return d;
    }
    if (stored->revision == kMax) return exhausted(stream, "the revision");
    d.entry = StreamEntry{stored->stream, epoch, std::string(root_key), stored->revision + 1};
  }
  d.write = Write::store;
  d.result = stored_result(PutOutcome::ok, d.entry);
  return d;
}

Result<Decision> decide_bump_epoch(const std::optional<StreamEntry>& stored,
                                   uint64_t expected_revision, uint64_t min_epoch) {
  Decision d;
  if (!stored) {
    d.result = PutResult{PutOutcome::not_found, 0, 0};
    return d;
  }
  if (stored->revision != expected_revision) {
    d.result = stored_result(PutOutcome::conflict, *stored);
    return d;
  }
  if (stored->epoch == kMax) return exhausted(stored->stream, "the epoch");
  if (stored->revision == kMax) return exhausted(stored->stream, "the revision");
  d.entry = *stored;
  d.entry.epoch = std::max(stored->epoch + 1, min_epoch);
  d.entry.revision = stored->revision + 1;
  d.write = Write::store;
  d.result = stored_result(PutOutcome::ok, d.entry);
  return d;
}

void assert_write(const std::optional<StreamEntry>& stored, uint64_t expected_revision,
                  const Decision& d, uint64_t revision_floor) {
  if (d.write == Write::none) return;
  if (d.write == Write::erase) {
    STRATA_ASSERT(stored && stored->revision == expected_revision &&
                      d.entry.stream == stored->stream && d.entry.revision == stored->revision,
                  "catalog: an erase of an entry other than the one read at the expected revision");
    return;
  }
  if (!stored) {
    STRATA_ASSERT(expected_revision == 0 && d.entry.revision > revision_floor && d.entry.epoch >= 1,
                  "catalog: a new entry at or below the revision floor, or not expected new");
    return;
  }
  STRATA_ASSERT(stored->revision == expected_revision,
                "catalog: a write over an entry read at another revision than expected");
  STRATA_ASSERT(d.entry.stream == stored->stream, "catalog: a write to another stream's entry");
  STRATA_ASSERT(d.entry.epoch >= stored->epoch, "catalog: a write that lowers the epoch");
  STRATA_ASSERT(d.entry.revision > stored->revision,
                "catalog: a write that does not raise the revision");
}

Decision decide_remove(const std::optional<StreamEntry>& stored, uint64_t expected_revision) {
  Decision d;
  if (!stored) {
    d.result = PutResult{PutOutcome::not_found, 0, 0};
    return d;
  }
  if (stored->revision != expected_revision) {
    d.result = stored_result(PutOutcome::conflict, *stored);
    return d;
  }
  d.write = Write::erase;
  d.entry = *stored;
  d.result = PutResult{PutOutcome::ok, 0, 0};
  return d;
}

}  // namespace strata::catalog
