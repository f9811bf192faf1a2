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
// A client that never answers keeps the group waiting; the shell bounds
// that with a deadline and reports the connection gone.
#pragma once

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
  };

  // partition_index: the partition's index in its super stream, or nullopt
  // for a plain stream.
  explicit SacGroup(std::optional<uint32_t> partition_index = std::nullopt)
      : partition_index_(partition_index) {}

  // A consumer joins (at the end of the registration order). Joining twice
  // is ignored.
  std::vector<SacEffect> subscribe(ConsumerRef c);
  std::vector<SacEffect> unsubscribe(ConsumerRef c);
  std::vector<SacEffect> connection_gone(uint64_t connection);
  // The consumer answered a ConsumerUpdate. Stale answers (not awaited)
  // produce nothing.
  std::vector<SacEffect> consumer_update_answered(ConsumerRef c);

  bool empty() const { return members_.empty(); }
  bool contains(ConsumerRef c) const;
  // The consumer that is active (delivering), if any.
  std::optional<ConsumerRef> active() const;
  const std::vector<Member>& members() const { return members_; }

 private:
  std::vector<SacEffect> reconcile();
  std::vector<SacEffect> remove_where(bool (*match)(const Member&, const void*), const void* arg);

  std::optional<uint32_t> partition_index_;
  std::vector<Member> members_;  // registration order
};

// The groups of a node, keyed by (stream, consumer name); a group is
// created with its first consumer and dropped with its last.
class SacGroups {
 public:
  std::vector<SacEffect> subscribe(const std::string& stream, const std::string& name,
                                   ConsumerRef c,
                                   std::optional<uint32_t> partition_index = std::nullopt);
  std::vector<SacEffect> unsubscribe(const std::string& stream, const std::string& name,
                                     ConsumerRef c);
  // Every group the connection had consumers in.
  std::vector<SacEffect> connection_gone(uint64_t connection);
  std::vector<SacEffect> consumer_update_answered(const std::string& stream,
                                                  const std::string& name, ConsumerRef c);
  const SacGroup* group(const std::string& stream, const std::string& name) const;
  size_t size() const { return groups_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;
  std::vector<SacEffect> after(std::map<Key, SacGroup>::iterator it, std::vector<SacEffect> e);
  std::map<Key, SacGroup> groups_;
};

}  // namespace strata::server
