// SlotStore's public face, reads, sync/close, fail-stop and the compaction
// thread.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "slotstore/store_impl.h"

namespace strata::slotstore {

SlotStore::Impl::Impl(FileSystem& fs, std::string path, Options options, format::Layout layout,
                      std::unique_ptr<File> file)
    : fs_(fs),
      path_(std::move(path)),
      opt_(std::move(options)),
      layout_(std::move(layout)),
      file_(std::move(file)),
      table_(layout_),
      compactor_(*file_, layout_, opt_.compaction_buffer_bytes, opt_.compaction_hook,
                 [this] { return sync_file(); }) {}

SlotStore::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> l(comp_mu_);
    stop_ = true;
  }
  comp_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Error SlotStore::Impl::fail_stopped_error() const {
  std::lock_guard<std::mutex> l(fail_mu_);
  return Error(Errc::fail_stopped,
               fmt::format("{}: the store stopped after a failed write or fsync ({}); reopen it "
                           "to recover",
                           path_, fail_reason_));
}

void SlotStore::Impl::fail_stop(const Error& e) {
  {
    std::lock_guard<std::mutex> l(fail_mu_);
    if (failed_) return;
    fail_reason_ = e.to_string();
    failed_ = true;
  }
  spdlog::error("slotstore {}: fail-stop: {}", path_, e.to_string());
  std::lock_guard<std::mutex> l(comp_mu_);
  comp_cv_.notify_all();
}

Status SlotStore::Impl::check_usable(bool writing) const {
  if (closed_) return Error(Errc::closed, path_ + ": store is closed");
  if (failed_) return fail_stopped_error();
  if (writing && opt_.read_only) {
    return Error(Errc::invalid_argument, path_ + ": store was opened read-only");
  }
  return Status::OK();
}

Status SlotStore::Impl::sync_file() {
  if (failed_) return fail_stopped_error();
  Status s = file_->sync();
  ++fsyncs_;
  if (!s.ok()) {
    // After a failed fsync the kernel may have dropped the dirty pages; a
    // later fsync can succeed without them. Nothing written so far can be
    // trusted to be durable, so stop.
    fail_stop(std::move(s).error().with_context("fsync"));
    return fail_stopped_error();
  }
  return Status::OK();
}

void SlotStore::Impl::run_compaction(std::unique_lock<std::mutex>& l) {
  CompactionJob job = *job_;
  comp_state_ = CompState::running;
  l.unlock();
  Compactor::Stats stats;
  Status s = failed_ ? Status(fail_stopped_error()) : compactor_.run(job, &stats);
  stale_ += stats.stale;
  l.lock();
  if (s.ok()) {
    job_.reset();
    sealed_used_ = 0;
    comp_state_ = CompState::idle;
    ++compactions_;
  } else {
    comp_state_ = CompState::failed;
    ++compactions_failed_;
    last_comp_error_ = s.error();
    spdlog::warn("slotstore {}: compaction of WAL half {} aborted: {}", path_, job.half,
                 s.to_string());
  }
  comp_cv_.notify_all();
  if (s.ok() && opt_.compaction_hook) {
    l.unlock();
    (void)opt_.compaction_hook(CompactionPoint::finished);
    l.lock();
  }
}

void SlotStore::Impl::compaction_main() {
  std::unique_lock<std::mutex> l(comp_mu_);
  for (;;) {
    comp_cv_.wait(l, [&] { return stop_ || (job_ && comp_state_ == CompState::idle); });
    if (stop_) return;
    run_compaction(l);
  }
}

Result<Record> SlotStore::Impl::read(BytesView key) const {
  STRATA_TRY(check_usable(false));
  std::shared_lock<std::shared_mutex> l(mu_);
  std::optional<uint32_t> s = table_.find(key);
  if (!s) {
    return Error(Errc::not_found,
                 fmt::format("{}: key {} not found", path_, format::describe_key(key)));
  }
  return table_.to_record(*s);
}

Status SlotStore::Impl::fold(const std::function<bool(BytesView, const Record&)>& fn) const {
  STRATA_TRY(check_usable(false));
  constexpr uint32_t kStep = 256;
  std::vector<std::pair<Bytes, Record>> chunk;
  for (uint32_t first = 0; first < layout_.slots; first += kStep) {
    chunk.clear();
    {
      std::shared_lock<std::shared_mutex> l(mu_);
      uint32_t end = std::min(layout_.slots, first + kStep);
      for (uint32_t s = first; s < end; ++s) {
        if (!table_.live(s)) continue;
        STRATA_ASSIGN_OR_RETURN(Record r, table_.to_record(s));
        chunk.emplace_back(Bytes(table_.key(s)), std::move(r));
      }
    }
    for (const auto& [k, r] : chunk) {
      if (!fn(k, r)) return Status::OK();
    }
  }
  return Status::OK();
}

Status SlotStore::Impl::sync() {
  STRATA_TRY(check_usable(true));
  {
    // Finish an in-flight compaction first (the contract callers rely on:
    // after sync returns, no state lives only in a half-done compaction).
    std::unique_lock<std::mutex> l(comp_mu_);
    comp_cv_.wait(l, [&] {
      return !job_ || comp_state_ == CompState::failed || failed_ || stop_ ||
             !opt_.background_compaction;
    });
  }
  WriteBatch empty;
  return write_internal(empty, WriteOptions{true}, false);
}

Status SlotStore::Impl::close() {
  if (closed_.exchange(true)) return Status::OK();
  Status result;
  if (!opt_.read_only && !failed_) {
    WriteBatch empty;
    result = write_internal(empty, WriteOptions{true}, true);
  }
  {
    std::unique_lock<std::mutex> l(comp_mu_);
    // A running compaction finishes (its result would only be redone at the
    // next open); one that has not started is left for the next open.
    comp_cv_.wait(l, [&] { return comp_state_ != CompState::running; });
    stop_ = true;
  }
  comp_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Nothing writes the file after this point: let the next writer in.
  lock_.release();
  if (failed_ && result.ok()) result = fail_stopped_error();
  return result;
}

Info SlotStore::Impl::info() const {
  Info i;
  i.path = path_;
  i.format_version = format::kVersion;
  i.slots_total = layout_.slots;
  i.strings_total = layout_.strings;
  i.record_size = layout_.record_size;
  i.file_size = layout_.file_size;
  i.wal_bytes_total = 2 * layout_.half_size;
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    i.slots_used = table_.used();
    i.strings_used = table_.strings.used();
  }
  i.wal_bytes_used = active_used_ + sealed_used_;
  i.unsynced_bytes = unsynced_;
  i.last_lsn = last_lsn_;
  i.wal_switches = switches_;
  {
    std::lock_guard<std::mutex> l(comp_mu_);
    i.compacting = comp_state_ == CompState::running;
    i.compactions = compactions_;
    i.compactions_failed = compactions_failed_;
    if (last_comp_error_) i.last_compaction_error = last_comp_error_->to_string();
    i.compaction_waits = compaction_waits_;
  }
  i.fsyncs = fsyncs_;
  i.stale_entries_skipped = stale_;
  i.fail_stopped = failed_;
  if (i.fail_stopped) {
    std::lock_guard<std::mutex> l(fail_mu_);
    i.fail_stop_reason = fail_reason_;
  }
  return i;
}

// ---- SlotStore ----

SlotStore::SlotStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SlotStore::~SlotStore() {
  if (!impl_) return;
  Status s = impl_->close();
  if (!s.ok()) spdlog::warn("slotstore close: {}", s.to_string());
}

Result<std::unique_ptr<SlotStore>> SlotStore::open(FileSystem& fs, const std::string& path,
                                                   const Schema& schema, const Options& options) {
  STRATA_ASSIGN_OR_RETURN(auto impl, Impl::open(fs, path, &schema, options));
  return std::unique_ptr<SlotStore>(new SlotStore(std::move(impl)));
}

Result<std::unique_ptr<SlotStore>> SlotStore::open_existing(FileSystem& fs, const std::string& path,
                                                            const Options& options) {
  STRATA_ASSIGN_OR_RETURN(auto impl, Impl::open(fs, path, nullptr, options));
  return std::unique_ptr<SlotStore>(new SlotStore(std::move(impl)));
}

Status SlotStore::write_batch(const WriteBatch& batch, const WriteOptions& options) {
  return impl_->write_batch(batch, options);
}

Status SlotStore::put(BytesView key, std::vector<FieldUpdate> updates,
                      const WriteOptions& options) {
  WriteBatch b;
  b.put(key, std::move(updates));
  return impl_->write_batch(b, options);
}

Status SlotStore::erase(BytesView key) {
  WriteBatch b;
  b.erase(key);
  return impl_->write_batch(b, WriteOptions{});
}

Status SlotStore::sync() {
  return impl_->sync();
}
Status SlotStore::close() {
  return impl_->close();
}
Result<Record> SlotStore::read(BytesView key) const {
  return impl_->read(key);
}

Result<std::vector<std::pair<Bytes, Record>>> SlotStore::read_all() const {
  std::vector<std::pair<Bytes, Record>> out;
  STRATA_TRY(impl_->fold([&](BytesView k, const Record& r) {
    out.emplace_back(Bytes(k), r);
    return true;
  }));
  return out;
}

Status SlotStore::fold(const std::function<bool(BytesView, const Record&)>& fn) const {
  return impl_->fold(fn);
}

Info SlotStore::info() const {
  return impl_->info();
}
const Schema& SlotStore::schema() const {
  return impl_->schema();
}

}  // namespace strata::slotstore
