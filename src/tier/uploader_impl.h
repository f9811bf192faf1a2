// Private to the uploader shell (uploader.cpp, uploader_effects.cpp): the
// state behind tier/uploader.h. Everything below "strand state" is touched
// only on the uploader's strand.
#pragma once

#include <deque>
#include <map>
#include <set>

#include "common/log_limiter.h"
#include "common/random.h"
#include "tier/upload_jobs.h"
#include "tier/uploader.h"

namespace strata::tier {

// A failure that is retried is logged once, then at most once per this
// long while the failures go on (with how many were held back).
constexpr int64_t kRepeatedWarningMs = 30'000;

class Uploader::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(UploaderEnv env, UploaderOptions opts, std::shared_ptr<log::StreamLog> log, ObjectKeys keys,
       uint64_t owner);

  // ---- entry points (any thread) ----
  void begin();
  void on_commit(const log::CommittedChunk& c);
  void await_persisted(uint64_t offset, std::function<void(Status)> done, bool urgent, bool hurry);
  void force_cut();
  void request_retention();
  void set_retention(const RetentionSpec& spec);
  void close();
  UploaderStatus status() const;

  std::atomic<uint64_t> persisted_next{0};
  std::atomic<UploaderState> state{UploaderState::starting};

 private:
  struct LiveChunk {
    log::CommittedChunk chunk;
  };
  struct Await {
    uint64_t offset = 0;
    std::function<void(Status)> done;
    bool urgent = false;
    bool hurry = false;  // a remote confirm: cut the fragment holding `offset` soon
  };

  int64_t now() const { return env_.clock->now_ms(); }
  template <class F>
  void on_strand(F&& f) {
    // Once the node's event loop has ended nothing is posted to it (it
    // would never run, and would keep this uploader alive).
    std::shared_lock l(env_.tasks.lifetime->mu);
    if (!env_.tasks.lifetime->alive) return;
    asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable { f(); });
  }
  std::chrono::milliseconds deadline_ms(int64_t ms) const { return std::chrono::milliseconds(ms); }

  // ---- lifecycle (uploader.cpp) ----
  void load(bool take_over);
  void on_loaded(uint64_t gen, bool take_over, TaskOutcome<Result<LoadedState>> o);
  void start_core(LoadedState st);
  // The manifest the core starts from, given the persisted one (`has_root`:
  // the catalog names a root) and the local log: the persisted one, or one
  // empty at the local first offset (nothing uploaded yet, or a gap);
  // nullopt when the remote tier is ahead of the local log (stalled).
  std::optional<Manifest> reconcile_with_local(Manifest m, bool has_root,
                                               const log::LocalRange& local);
  // The core's configuration from the options; each call draws a new seed.
  UploaderConfig core_config();
  void restart(std::string reason);
  void terminate(UploaderState s, std::string reason);
  // Ends the current core generation, for restart (a new core follows) and
  // terminate (none does): late results of its tasks are dropped (gen_),
  // its transfers still waiting for the governor are cancelled, and the
  // state built for that core goes with it. Delayed work (timers_) stays:
  // the deletes it holds are owed whatever core comes next.
  void end_generation();
  void retry_later(int64_t delay_ms, std::function<void()> fn);

  // ---- tail (uploader.cpp) ----
  void pump();
  // Feeds one chunk to assembly; false when feeding must stop (a cut is
  // held for lack of room, or the tail needs a catch-up read).
  bool feed_chunk(const log::CommittedChunk& c);
  void cut(FragmentPlan plan);
  // Cuts the pending fragment once the assembly has reached cut_through_
  // (a force_cut that came before the chunks it covers were fed).
  void cut_if_through();
  void start_catchup();
  // The catch-up read's outcome: its chunks fed, the walk kept for the next
  // read, the queue taken up again once the read reached the committed end.
  struct CatchUpRead {
    std::shared_ptr<log::ChunkWalk> tail;
    Result<log::ChunkRun> batch;
  };
  void on_catchup_read(uint64_t from, TaskOutcome<CatchUpRead> o);
  void arm_wake();
  void on_wake();
  // The assembly is hurried while a remote confirm waits for offsets not
  // cut yet (tier/fragment_assembly.h).
  void update_hurry();

  // ---- core and effects (uploader_effects.cpp) ----
  void feed(const upload::Event& e);
  void execute(upload::Effects effects);
  void submit_transfer(const upload::SubmitTransfer& t);
  void start_transfer(const upload::SubmitTransfer& t, uint64_t gen,
                      std::shared_ptr<Governor::Permit> permit);
  // A transfer's outcome as the one core event it is owed (complete,
  // failed, deadline), counted.
  using TransferResult = Result<uint64_t, TransferFailure>;
  void on_transfer_done(const upload::SubmitTransfer& t, TaskOutcome<TransferResult> o);
  void upload_group(const upload::UploadGroup& g);
  void start_persist(const upload::StartPersist& p);
  void evaluate_retention(const upload::EvaluateRetention& r);
  void delete_later(const upload::DeleteObjects& d);
  void update_local_retention(const upload::UpdateLocalRetention& u);
  void reply_waiters(const upload::ReplyWaiters& w);
  void note_failure(const std::string& cls, const std::string& message);
  // A request to the store or the catalog succeeded: the failure streak
  // ends (strata_tier_up is 1 again, the next warning is logged at once).
  void note_success();
  // A warning of a failure that is retried: rate-limited per uploader
  // (kRepeatedWarningMs), so a store that fails every request does not
  // flood the log.
  void warn_repeated(const std::string& message);
  void publish_status();

  UploaderEnv env_;
  // Changed only by set_retention (its `retention`), on the strand.
  UploaderOptions opts_;
  const std::shared_ptr<log::StreamLog> log_;
  const ObjectKeys keys_;
  const uint64_t owner_;
  // Seeds each core generation (and jitters start retries). One sequence
  // for the uploader's life: a core made after a reinitialize must not
  // draw the object-key uids of the one before it (same epoch, same keys),
  // or a delete the old core scheduled would remove the new core's object.
  Random rng_;
  // Set by close() at once, read by jobs on the pool: one that begins after
  // it does not take the stream over (the closed uploader's successor would
  // be fenced by its own predecessor).
  const std::shared_ptr<std::atomic<bool>> closing_ = std::make_shared<std::atomic<bool>>(false);
  Strand strand_;
  ShellTimer wake_;

  // ---- hook queue (tail_mu_) ----
  std::mutex tail_mu_;
  std::deque<LiveChunk> live_;
  bool overflow_ = false;
  bool drain_posted_ = false;

  // ---- strand state ----
  bool closed_ = false;
  uint64_t gen_ = 1;  // core generation: results of older generations are dropped
  uint64_t epoch_ = 0;
  // Starting under an adopted epoch (UploaderOptions::adopt_epoch) until
  // the first start succeeds.
  bool adopting_ = false;
  std::optional<UploaderCore> core_;
  std::optional<FragmentAssembly> asm_;
  std::map<uint64_t, std::shared_ptr<const FragmentPlan>> plans_;  // by first offset
  std::optional<FragmentPlan> held_cut_;  // cut, but the core had no room yet
  uint64_t cut_through_ = 0;              // force_cut: cut once fed up to here (0: none)
  std::deque<LiveChunk> backlog_;         // taken from live_, not yet fed
  bool catching_up_ = true;
  bool catchup_running_ = false;
  std::shared_ptr<log::ChunkWalk> tail_;
  uint32_t start_failures_ = 0;
  bool fenced_hint_ = false;               // the last persist was refused for a higher epoch
  std::set<std::string> attempted_roots_;  // root keys this epoch tried to persist
  std::optional<int64_t> core_timer_at_;
  std::map<uint64_t, Await> awaits_;
  uint64_t next_await_ = 1;
  std::map<uint64_t, std::shared_ptr<ShellTimer>> timers_;  // delayed work
  uint64_t next_timer_ = 1;
  std::deque<std::pair<uint64_t, int64_t>> ttr_pending_;  // (fragment next offset, first ts)
  bool local_retention_running_ = false;
  bool local_retention_again_ = false;

  UploaderStatus st_;  // counters and state, published by publish_status()
  LogLimiter warnings_{kRepeatedWarningMs};

  // ---- status (status_mu_) ----
  mutable std::mutex status_mu_;
  UploaderStatus status_;
  LatencyHistogram ttr_;  // thread-safe on its own
};

}  // namespace strata::tier
