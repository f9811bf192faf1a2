#include "catalog/memory_catalog.h"

#include <fmt/format.h>

#include "catalog/entry_rules.h"
#include "common/stream_name.h"

namespace strata::catalog {

namespace {

bool matches(const std::optional<CatalogCall>& only, CatalogCall c) {
  return !only || *only == c;
}

}  // namespace

// Counts a call in progress for the destructor, which waits for none to be
// left. Constructed and destroyed with mu_ held.
class MemoryCatalog::InProgress {
 public:
  explicit InProgress(MemoryCatalog& c) : c_(c) { ++c_.in_progress_; }
  ~InProgress() {
    --c_.in_progress_;
    c_.cv_.notify_all();
  }
  InProgress(const InProgress&) = delete;
  InProgress& operator=(const InProgress&) = delete;

 private:
  MemoryCatalog& c_;
};

MemoryCatalog::MemoryCatalog(MemoryCatalogOptions options) : options_(options) {}

MemoryCatalog::~MemoryCatalog() {
  std::unique_lock lock(mu_);
  closing_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return in_progress_ == 0; });
}

Status MemoryCatalog::enter(CatalogCall c, std::unique_lock<std::mutex>& lock) {
  calls_[size_t(c)] += 1;
  if (holding_ && matches(hold_only_, c)) {
    const uint64_t gen = release_gen_;
    ++held_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return release_gen_ != gen || closing_; });
    --held_;
  }
  if (fail_left_ > 0 && matches(fail_only_, c)) {
    --fail_left_;
    return Error(fail_error_.code, "memory catalog: " + fail_error_.message);
  }
  return Status::OK();
}

std::optional<StreamEntry> MemoryCatalog::find(std::string_view stream) const {
  auto it = entries_.find(stream);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

Status MemoryCatalog::check_root_key(std::string_view stream, std::string_view root_key) const {
  if (root_key.size() > options_.max_root_key_bytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("memory catalog: put of stream \"{}\": root key is {} bytes; this "
                             "catalog stores at most {} (MemoryCatalogOptions::max_root_key_bytes)",
                             printable_name(stream), root_key.size(), options_.max_root_key_bytes));
  }
  return Status::OK();
}

void MemoryCatalog::apply(const Decision& d) {
  switch (d.write) {
    case Write::none:
      break;
    case Write::store:
      entries_[d.entry.stream] = d.entry;
      break;
    case Write::erase:
      revision_floor_ = floor_after_remove(revision_floor_, d.entry);
      entries_.erase(d.entry.stream);
      break;
  }
}

Result<StreamEntry> MemoryCatalog::create(std::string_view stream, uint64_t epoch) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_TRY(check_epoch(stream, epoch, "create"));
  std::unique_lock lock(mu_);
  InProgress ip(*this);
  STRATA_TRY(enter(CatalogCall::create, lock));
  const auto stored = find(stream);
  STRATA_ASSIGN_OR_RETURN(StreamEntry e, decide_create(stored, stream, epoch, revision_floor_));
  assert_write(stored, 0, Decision{{}, Write::store, e}, revision_floor_);
  entries_[e.stream] = e;
  return e;
}

Result<StreamEntry> MemoryCatalog::get(std::string_view stream) {
  STRATA_TRY(validate_stream_name(stream));
  std::unique_lock lock(mu_);
  InProgress ip(*this);
  STRATA_TRY(enter(CatalogCall::get, lock));
  auto e = find(stream);
  if (!e) {
    return Error(Errc::not_found,
                 fmt::format("memory catalog: no stream \"{}\"", printable_name(stream)));
  }
  return *e;
}

Result<std::vector<StreamEntry>> MemoryCatalog::list() {
  std::unique_lock lock(mu_);
  InProgress ip(*this);
  STRATA_TRY(enter(CatalogCall::list, lock));
  std::vector<StreamEntry> out;
  out.reserve(entries_.size());
  for (const auto& [name, e] : entries_) out.push_back(e);
  return out;
}

Result<PutResult> MemoryCatalog::put(std::string_view stream, std::string_view root_key,
                                     uint64_t epoch, uint64_t expected_revision) {
  STRATA_TRY(check_put_args(stream, root_key, epoch));
  STRATA_TRY(check_root_key(stream, root_key));
  std::unique_lock lock(mu_);
  InProgress ip(*this);
  STRATA_TRY(enter(CatalogCall::put, lock));
  const auto stored = find(stream);
  STRATA_ASSIGN_OR_RETURN(
      Decision d, decide_put(stored, stream, root_key, epoch, expected_revision, revision_floor_));
  assert_write(stored, expected_revision, d, revision_floor_);
  apply(d);
  return d.result;
}

Result<PutResult> MemoryCatalog::bump_epoch(std::string_view stream, uint64_t expected_revision,
                                            uint64_t min_epoch) {
  STRATA_TRY(validate_stream_name(stream));
  std::unique_lock lock(mu_);
  InProgress ip(*this);
  STRATA_TRY(enter(CatalogCall::bump_epoch, lock));
  const auto stored = find(stream);
  STRATA_ASSIGN_OR_RETURN(Decision d, decide_bump_epoch(stored, expected_revision, min_epoch));
  assert_write(stored, expected_revision, d, revision_floor_);
  apply(d);
  return d.result;
}

Result<PutResult> MemoryCatalog::remove(std::string_view stream, uint64_t expected_revision) {
  STRATA_TRY(validate_stream_name(stream));
  std::unique_lock lock(mu_);
  InProgress ip(*this);
  STRATA_TRY(enter(CatalogCall::remove, lock));
  const auto stored = find(stream);
  Decision d = decide_remove(stored, expected_revision);
  assert_write(stored, expected_revision, d, revision_floor_);
  apply(d);
  return d.result;
}

void MemoryCatalog::fail_next(uint64_t calls, Error error, std::optional<CatalogCall> only) {
  std::lock_guard lock(mu_);
  fail_left_ = calls;
  fail_error_ = std::move(error);
  fail_only_ = only;
}

void MemoryCatalog::hold(std::optional<CatalogCall> only) {
  std::lock_guard lock(mu_);
  holding_ = true;
  hold_only_ = only;
}

void MemoryCatalog::release() {
  std::lock_guard lock(mu_);
  holding_ = false;
  ++release_gen_;
  cv_.notify_all();
}

bool MemoryCatalog::wait_held(size_t calls, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return held_ >= calls; });
}

uint64_t MemoryCatalog::calls(CatalogCall c) const {
  std::lock_guard lock(mu_);
  return calls_[size_t(c)];
}

}  // namespace strata::catalog
