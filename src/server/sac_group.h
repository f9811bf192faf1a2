// Single active consumer (the protocol's "single-active-consumer"
// subscription property), as a pure state machine: no I/O, no clock, no
// threads. One SacGroup per (stream, consumer name); SacGroups routes the
// events of a node's groups. The connection shell feeds it events and runs
// the effects it returns.
//
// As RabbitMQ's stream SAC coordinator does:
//  - plain stream: the first consumer registered is active; when the active
//    one leaves (unsubscribe or connection gone) the next in registration
//    order becomes active;
//  - super stream partition (a group created with the partition's index):
//    the active consumer is members[index % members], so consumers spread
//    over the partitions; when membership changes the designated consumer
//    can change, and the current one steps down first: it is sent
//    ConsumerUpdate(active=false) and stops receiving chunks, and only once
//    it has answered (or left) is the new one sent ConsumerUpdate(active=true).
//  - a consumer becomes active in two steps: the server sends
//    ConsumerUpdate(active=true), the client answers with the offset spec to
//    resume from, then delivery starts there (effect `activate`).
//  - a consumer that does not answer a ConsumerUpdate within the answer
//    timeout has failed: it leaves its group (effect `timed_out`, and the
//    next one is asked), so a client that never answers cannot stall the
//    group. RabbitMQ (rabbit_stream_reader, `request_timeout`, default
//    60 s) closes the connection of a client whose answer timed out; the
//    shell does the same on `timed_out`.
// Time is passed in: every event carries `now`, and expire(now) — called
// by the shell's timer at next_deadline() — fails the late consumers.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::server {

// A subscription: the connection (the shell's id for it) and the
// subscription id on that connection.
struct ConsumerRef {
  uint64_t connection = 0;
  uint8_t subscription = 0;
  bool operator==(const ConsumerRef&) const = default;
  auto operator<=>(const ConsumerRef&) const = default;
};

using SacTime = std::chrono::steady_clock::time_point;
// How long a consumer has to answer a ConsumerUpdate: RabbitMQ's default
// `rabbitmq_stream.request_timeout`.
constexpr std::chrono::milliseconds kDefaultSacAnswerTimeout{60'000};

struct SacEffect {
  enum class Kind : uint8_t {
    // Send ConsumerUpdate(active) to the consumer (it answers with an
    // offset spec; feed that back as consumer_update_answered).
    send_update,
    // The consumer answered its activation: start delivering from the
    // offset spec in its answer.
    activate,
    // Stop delivering to the consumer now (it is stepping down).
    deactivate,
    // The consumer did not answer its ConsumerUpdate in time: it has left
    // the group (any next one is asked in the same step). Its connection
    // is unresponsive: the shell closes it.
    timed_out,
  };
  Kind kind = Kind::send_update;
  ConsumerRef consumer;
  bool active = false;  // send_update only
  bool operator==(const SacEffect&) const = default;
};

class SacGroup {
 public:
  enum class State : uint8_t { inactive, activating, active, deactivating };
  struct Member {
    ConsumerRef ref;
    State state = State::inactive;
    // While activating or deactivating: when its answer is due.
    SacTime deadline{};
  };

  // partition_index: the partition's index in its super stream, or nullopt
  // for a plain stream. answer_timeout: how long a consumer asked with
  // ConsumerUpdate has to answer.
  explicit SacGroup(std::optional<uint32_t> partition_index = std::nullopt,
                    std::chrono::milliseconds answer_timeout = kDefaultSacAnswerTimeout)
      : partition_index_(partition_index), answer_timeout_(answer_timeout) {}

  // Every event carries the time it happens at (`now`), which starts the
  // answer timeout of a consumer it asks.
  // A consumer joins (at the end of the registration order). Joining twice
  // is ignored.
  std::vector<SacEffect> subscribe(ConsumerRef c, SacTime now);
  std::vector<SacEffect> unsubscribe(ConsumerRef c, SacTime now);
  std::vector<SacEffect> connection_gone(uint64_t connection, SacTime now);
  // The consumer answered a ConsumerUpdate. Stale answers (not awaited)
  // produce nothing.
  std::vector<SacEffect> consumer_update_answered(ConsumerRef c, SacTime now);
  // The awaited consumer, if its answer is due at or before `now`, fails:
  // `timed_out` for it, and it leaves the group (the next one is asked).
  std::vector<SacEffect> expire(SacTime now);
  // When the awaited answer is due, if one is awaited.
  std::optional<SacTime> next_deadline() const;

  bool empty() const { return members_.empty(); }
  bool contains(ConsumerRef c) const;
  // The consumer that is active (delivering), if any.
  std::optional<ConsumerRef> active() const;
  const std::vector<Member>& members() const { return members_; }

 private:
  std::vector<SacEffect> reconcile(SacTime now);
  std::vector<SacEffect> remove_where(bool (*match)(const Member&, const void*), const void* arg,
                                      SacTime now);

  std::optional<uint32_t> partition_index_;
  std::chrono::milliseconds answer_timeout_;
  std::vector<Member> members_;  // registration order
};

// The groups of a node, keyed by (stream, consumer name); a group is
// created with its first consumer and dropped with its last.
class SacGroups {
 public:
  explicit SacGroups(std::chrono::milliseconds answer_timeout = kDefaultSacAnswerTimeout)
      : answer_timeout_(answer_timeout) {}

  std::vector<SacEffect> subscribe(const std::string& stream, const std::string& name,
                                   ConsumerRef c, std::optional<uint32_t> partition_index,
                                   SacTime now);
  std::vector<SacEffect> unsubscribe(const std::string& stream, const std::string& name,
                                     ConsumerRef c, SacTime now);
  // Every group the connection had consumers in.
  std::vector<SacEffect> connection_gone(uint64_t connection, SacTime now);
  std::vector<SacEffect> consumer_update_answered(const std::string& stream,
                                                  const std::string& name, ConsumerRef c,
                                                  SacTime now);
  // Every group's late consumer fails (SacGroup::expire).
  std::vector<SacEffect> expire(SacTime now);
  // The earliest answer due over all groups.
  std::optional<SacTime> next_deadline() const;
  const SacGroup* group(const std::string& stream, const std::string& name) const;
  size_t size() const { return groups_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;
  std::vector<SacEffect> after(std::map<Key, SacGroup>::iterator it, std::vector<SacEffect> e);
  std::chrono::milliseconds answer_timeout_;
  std::map<Key, SacGroup> groups_;
};

}  // namespace strata::server
