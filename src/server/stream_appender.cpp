#include "server/stream_appender.h"

#include <spdlog/spdlog.h>

#include <asio/post.hpp>

#include "server/entry_append.h"

namespace strata::server {

using proto::ResponseCode;

namespace {
// A drain that has not ended by then is stuck in the file system; the
// appender stops rather than confirm anything after it.
constexpr std::chrono::milliseconds kDrainDeadline{120'000};
// A chunk holds at most this many entries (its header counts them in 16 bits).
constexpr size_t kMaxEntries = 65535;

ResponseCode code_for(const Error& e) {
  switch (e.code) {
    case Errc::closed:
    case Errc::fail_stopped:
    case Errc::not_found:
      return ResponseCode::stream_not_available;
    case Errc::invalid_argument:
      return ResponseCode::precondition_failed;
    default:
      return ResponseCode::internal_error;
  }
}
}  // namespace

StreamAppender::StreamAppender(std::shared_ptr<log::StreamLog> log, asio::io_context& io,
                               TaskContext tasks)
    : log_(std::move(log)), strand_(asio::make_strand(io)), tasks_(std::move(tasks)) {}

void StreamAppender::submit(std::weak_ptr<PublishSink> sink, uint8_t publisher_id,
                            const std::string& ref,
                            const std::vector<proto::PublishedMessage>& messages, uint64_t bytes) {
  std::vector<Item> rejected;
  {
    std::lock_guard l(mu_);
    stats_.batches += 1;
    std::optional<uint64_t> last;
    if (!ref.empty()) {
      auto it = seqs_.find(ref);
      if (it != seqs_.end()) last = it->second;
    }
    Item cur;
    auto push = [&] {
      if (cur.ids.empty()) return;
      cur.sink = sink;
      cur.publisher_id = publisher_id;
      cur.ref = ref;
      if (stopped_) {
        cur.code = stop_code_;
        rejected.push_back(std::move(cur));
      } else {
        queue_.push_back(std::move(cur));
      }
      cur = Item();
    };
    for (const auto& m : messages) {
      if (cur.num_entries == kMaxEntries) push();
      cur.ids.push_back(m.publishing_id);
      // A publisher that resends what is stored gets a confirm, not a copy.
      if (!ref.empty() && last && m.publishing_id <= *last) {
        stats_.duplicates += 1;
        continue;
      }
      if (!ref.empty()) last = m.publishing_id;
      cur.entries.append(m.entry);
      cur.num_entries += 1;
      auto e = proto::parse_osiris_entry(m.entry);
      cur.num_records += e.ok() ? e->num_records : 1;
      cur.max_seq = std::max(cur.max_seq, m.publishing_id);
    }
    // The budget travels with the last item, so the connection gets it back
    // once the whole frame is done.
    cur.bytes = bytes;
    if (cur.ids.empty() && !queue_.empty() && !stopped_) {
      queue_.back().bytes += bytes;
    }
    push();
    if (!ref.empty() && last) seqs_[ref] = *last;
    if (!stopped_) start_locked();
  }
  notify(rejected);
}

std::optional<uint64_t> StreamAppender::sequence(const std::string& ref) {
  std::lock_guard l(mu_);
  auto it = seqs_.find(ref);
  if (it == seqs_.end()) return std::nullopt;
  return it->second;
}

void StreamAppender::stop(ResponseCode code) {
  std::vector<Item> failed;
  {
    std::lock_guard l(mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_code_ = code;
    for (auto& it : queue_) {
      it.code = code;
      failed.push_back(std::move(it));
    }
    queue_.clear();
    if (!running_) idle_cv_.notify_all();
  }
  notify(failed);
}

bool StreamAppender::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock l(mu_);
  return idle_cv_.wait_for(l, timeout, [&] { return !running_ && queue_.empty(); });
}

AppenderStats StreamAppender::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

void StreamAppender::start_locked() {
  if (running_ || queue_.empty()) return;
  running_ = true;
  auto items = std::make_shared<std::vector<Item>>(std::make_move_iterator(queue_.begin()),
                                                   std::make_move_iterator(queue_.end()));
  queue_.clear();
  auto self = shared_from_this();
  // run_task must start on the strand that receives its outcome.
  asio::post(strand_, [self, items] {
    auto log = self->log_;
    auto counted = std::make_shared<AppenderStats>();
    run_task<bool>(
        self->tasks_, self->strand_, kDrainDeadline, "append to " + log->dir(),
        [log, items, counted] {
          append_all(*log, *items, counted.get());
          return true;
        },
        [self, items, counted](TaskOutcome<bool> out) {
          if (out.end != TaskEnd::completed) {
            spdlog::error("stream {}: {}; stopping its appender", self->log_->dir(),
                          out.error.to_string());
            for (auto& it : *items) it.code = ResponseCode::internal_error;
            self->stop(ResponseCode::internal_error);
          }
          {
            std::lock_guard l(self->mu_);
            self->stats_.appends += counted->appends;
            self->stats_.messages += counted->messages;
            self->stats_.failed += counted->failed;
          }
          self->finish(std::move(*items));
        });
  });
}

void StreamAppender::append_all(log::StreamLog& log, std::vector<Item>& items,
                                AppenderStats* stats) {
  const uint64_t max_bytes = log.options().max_chunk_bytes;
  Bytes merged;
  size_t i = 0;
  while (i < items.size()) {
    if (items[i].num_entries == 0) {
      ++i;
      continue;
    }
    // Consecutive batches of the same writer go into one chunk: one write
    // and one sync for all of them.
    size_t j = i + 1;
    uint64_t bytes = items[i].entries.size();
    uint32_t entries = items[i].num_entries;
    while (j < items.size() && items[j].ref == items[i].ref &&
           (items[j].num_entries == 0 || (entries + items[j].num_entries <= kMaxEntries &&
                                          bytes + items[j].entries.size() <= max_bytes))) {
      bytes += items[j].entries.size();
      entries += items[j].num_entries;
      ++j;
    }
    OsirisBatch b;
    b.writer_ref = items[i].ref;
    if (j == i + 1) {
      b.entries = items[i].entries;
    } else {
      merged.clear();
      for (size_t k = i; k < j; ++k) merged.append(items[k].entries);
      b.entries = merged;
    }
    for (size_t k = i; k < j; ++k) {
      b.num_entries = uint16_t(b.num_entries + items[k].num_entries);
      b.num_records += items[k].num_records;
      b.writer_seq = std::max(b.writer_seq, items[k].max_seq);
    }
    Status st = append_osiris(log, b);
    stats->appends += 1;
    if (st.ok()) {
      stats->messages += b.num_entries;
    } else {
      spdlog::warn("stream {}: append failed: {}", log.dir(), st.error().to_string());
      for (size_t k = i; k < j; ++k) {
        items[k].code = code_for(st.error());
        stats->failed += 1;
      }
    }
    i = j;
  }
}

void StreamAppender::finish(std::vector<Item> items) {
  notify(items);
  std::lock_guard l(mu_);
  running_ = false;
  if (!stopped_) start_locked();
  if (!running_) idle_cv_.notify_all();
}

void StreamAppender::notify(std::vector<Item>& items) {
  for (auto& it : items) {
    if (auto s = it.sink.lock()) {
      s->on_appended(it.publisher_id, std::move(it.ids), it.code, it.bytes);
    }
  }
}

}  // namespace strata::server
