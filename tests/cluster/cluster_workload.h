// A workload for the cluster fault tests: publishers and a consumer against
// a ServeCluster (support/serve_cluster.h) that ride out faults the way real
// clients do, recording a History (history_check.h).
//
// Publisher k declares publisher reference "w<k>" (so the server
// deduplicates), publishes ids 1, 2, ... as bodies p<k>-<id> at a steady
// pace with a window of unconfirmed messages. On a PublishError, a
// MetadataUpdate, a closed connection or no confirm for `stall` while
// messages are outstanding, it asks Metadata (of any node that answers)
// for the leader, connects there, declares again and republishes every
// unconfirmed message with the same publishing id, then goes on.
//
// The consumer subscribes at the leader from `first`; when its subscription
// ends (closed, MetadataUpdate, silence for `stall`) it subscribes again
// from the offset after the last it got — each subscription is one
// subscription of the history.
//
// Threads: one per publisher and one for the consumer; the controlling
// thread (a test) injects faults through the ServeCluster meanwhile.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/history_check.h"
#include "support/serve_cluster.h"

namespace strata::test {

struct WorkloadOptions {
  std::string stream;
  int publishers = 2;
  int frame = 5;                          // messages per Publish frame
  int window = 20;                        // unconfirmed messages per publisher at most
  std::chrono::milliseconds pace{20};     // between new frames of one publisher
  std::chrono::milliseconds stall{3000};  // no progress: find the leader again
  bool consume = true;
};

class Workload {
 public:
  using Clock = std::chrono::steady_clock;
  // A confirm as the bench sees it: when and from which node.
  struct ConfirmAt {
    Clock::time_point at;
    int node = -1;
  };

  Workload(ServeCluster& cluster, WorkloadOptions options);
  ~Workload();  // stop()
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  void start();
  // Confirms so far (distinct messages are not tracked here: every id of
  // every PublishConfirm counts).
  size_t confirms() const;
  // Waits until confirms() >= `n`; false after `timeout`.
  bool await_confirms(size_t n, std::chrono::milliseconds timeout);
  // Publishers stop publishing new messages and republish until every
  // message they published is confirmed; true if all are within `timeout`.
  bool drain(std::chrono::milliseconds timeout);
  // Joins every thread. Idempotent.
  void stop();
  // After stop(): subscribes from `first` at the leader (as node `ask`
  // names it) and reads until every confirmed message has arrived or
  // nothing arrives for `stall`; the subscription is recorded as final.
  // False if no leader answered or the subscription was refused.
  bool final_read(int ask, std::chrono::milliseconds timeout);

  History history() const;
  std::vector<ConfirmAt> confirm_times() const;

 private:
  void publisher_loop(uint32_t k);
  void consumer_loop();
  // A client on the stream's leader, asking each node that answers in turn
  // (from `hint`); -1 and an empty client when none answered.
  int connect_leader(int hint, StreamClient* out);
  void record_publish(MessageId m);
  void record_confirm(MessageId m, int node);
  void record_deliveries(int subscription, const proto::DeliverFrame& d, uint64_t from,
                         std::optional<uint64_t>* last);
  int new_subscription();

  ServeCluster& cluster_;
  const WorkloadOptions opt_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int> drained_{0};  // publishers with nothing unconfirmed while draining
  std::vector<std::thread> threads_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  History history_;
  std::vector<ConfirmAt> confirm_times_;
  size_t confirms_ = 0;
  int subscriptions_ = 0;
};

// A cluster started with `options` under `dir`, with `stream` created
// through node 0 and a leader every node names (*leader, when given); null
// after reporting what failed.
std::unique_ptr<ServeCluster> start_serving(const std::string& dir,
                                            const ServeClusterOptions& options,
                                            const std::string& stream, int* leader = nullptr);

// The end of a run: the publishers drain (every message confirmed) and
// stop, the stream is read back from `first` through node `read_from`, and
// the history is checked: no confirmed message lost, none duplicated, no
// offset that changed its message (DuplicatePolicy::none,
// ReadPolicy::committed_only). Failures are reported under `stream`; the
// report is printed.
void drain_and_check(Workload& w, const std::string& stream, int read_from = 0);

// What every subscription of `h` read, a line each ("\nsubscription N
// (offsets: messages): …", describe_subscription): printed beside a failed
// history check, so that a lost message shows who read it and where.
std::string every_subscription(const History& h);

}  // namespace strata::test
