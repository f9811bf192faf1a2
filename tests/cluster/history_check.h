// The history checker of the cluster fault tests: a pure function over what
// publishers and consumers saw (no I/O, no clock), so that it is tested on
// hand-made histories, including ones it must reject
// (history_check_test.cpp).
//
// A message is named by its publisher and publishing id; publishers declare
// a publisher reference, so the server deduplicates by (reference,
// publishing id) — a republished message whose id it already stored is
// confirmed again and not stored again. What the checker demands:
//   1. every confirmed message was published (no confirm from nowhere);
//   2. every confirmed message is delivered to every *final* subscription
//      (one from `first` after the faults);
//   3. no subscription gets a message twice. With deduplication by
//      reference the protocol allows no duplicate at all: a republished
//      message is stored at most once per stream, across takeovers too
//      (a new owner reads the publishers' sequences back from the bucket,
//      src/tier/writer_recovery.h) — DuplicatePolicy::none.
//      DuplicatePolicy::republished tolerates a duplicate of a message
//      published more than once, and counts it (for a server without that
//      recovery); a message published once and delivered twice is always
//      a violation;
//   4. offsets strictly increase within a subscription;
//   5. no subscription gets a message that was never published;
//   6. with ReadPolicy::committed_only, every subscription agrees on which
//      message an offset holds: no consumer read a record that a takeover
//      discarded and the next owner replaced (what `confirm = remote`
//      promises, src/server/delivery_limit.h). ReadPolicy::uncommitted_allowed
//      does not demand it (under `confirm = local` a consumer may read from
//      the owner's local log what a takeover discards).
// Not demanded: that unconfirmed messages arrive (they may be lost with an
// owner).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace strata::test {

struct MessageId {
  uint32_t publisher = 0;
  uint64_t id = 0;
  auto operator<=>(const MessageId&) const = default;
};

// "p<publisher>-<id>", the body the workload publishes; parse_body is its
// inverse (false for any other body).
std::string body_of(MessageId m);
bool parse_body(const std::string& body, MessageId* out);

struct HistoryEvent {
  enum class Kind : uint8_t { publish, confirm, deliver };
  Kind kind = Kind::publish;
  MessageId message;
  int subscription = -1;  // deliver only
  uint64_t offset = 0;    // deliver only
};

struct History {
  std::vector<HistoryEvent> events;
  std::vector<int> final_subscriptions;

  void publish(MessageId m) { events.push_back({HistoryEvent::Kind::publish, m, -1, 0}); }
  void confirm(MessageId m) { events.push_back({HistoryEvent::Kind::confirm, m, -1, 0}); }
  void deliver(int subscription, uint64_t offset, MessageId m) {
    events.push_back({HistoryEvent::Kind::deliver, m, subscription, offset});
  }
};

enum class DuplicatePolicy : uint8_t { none, republished };
enum class ReadPolicy : uint8_t { uncommitted_allowed, committed_only };

struct HistoryReport {
  size_t published = 0;             // distinct messages
  size_t confirmed = 0;             // distinct messages
  size_t delivered = 0;             // deliveries, every subscription
  size_t tolerated_duplicates = 0;  // DuplicatePolicy::republished
  // One line per violation (at most `max_violations` kept, the rest
  // counted in `more`).
  std::vector<std::string> violations;
  size_t more = 0;
  bool ok() const { return violations.empty(); }
  std::string to_string() const;
};

HistoryReport check_history(const History& h, DuplicatePolicy duplicates = DuplicatePolicy::none,
                            ReadPolicy reads = ReadPolicy::uncommitted_allowed,
                            size_t max_violations = 20);

// What one subscription got, as runs of consecutive offsets holding
// consecutive ids of one publisher: "0-99: p0-1..100, 100-109: p0-91..100"
// (for a failure message).
std::string describe_subscription(const History& h, int subscription);

}  // namespace strata::test
