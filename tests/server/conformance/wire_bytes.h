// Byte-level tools of the conformance conversations
// (tests/server/conformance/*_conversation_test.cpp): each conversation
// sends the frames a stock client sends, byte for byte as that client's
// encoder writes them, to a `strata serve` child and checks the answers as
// RabbitMQ 3.13/4.x gives them (rabbit_stream_reader.erl, frames from
// rabbit_stream_core.erl). Nothing here goes through proto/: the writer,
// the answer reader and the chunk reader are this file's own, so a codec bug
// in strata cannot hide on both sides of a conversation.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "server/serve_fixture.h"

namespace strata::test::wire {

using namespace std::chrono_literals;
using Props = std::vector<std::pair<std::string, std::string>>;

// Command keys (PROTOCOL.adoc); a response carries its request's key with
// the top bit set.
constexpr uint16_t kDeclarePublisher = 0x01, kPublish = 0x02, kPublishConfirm = 0x03,
                   kPublishError = 0x04, kQueryPublisherSequence = 0x05, kDeletePublisher = 0x06,
                   kSubscribe = 0x07, kDeliver = 0x08, kCredit = 0x09, kStoreOffset = 0x0a,
                   kQueryOffset = 0x0b, kUnsubscribe = 0x0c, kCreate = 0x0d, kDelete = 0x0e,
                   kMetadata = 0x0f, kMetadataUpdate = 0x10, kPeerProperties = 0x11,
                   kSaslHandshake = 0x12, kSaslAuthenticate = 0x13, kTune = 0x14, kOpen = 0x15,
                   kClose = 0x16, kHeartbeat = 0x17, kRoute = 0x18, kPartitions = 0x19,
                   kConsumerUpdate = 0x1a, kExchangeCommandVersions = 0x1b, kStreamStats = 0x1c,
                   kCreateSuperStream = 0x1d, kDeleteSuperStream = 0x1e, kResolveOffsetSpec = 0x1f;
constexpr uint16_t kAnswer = 0x8000;

// Response codes.
constexpr uint16_t kOk = 1, kStreamDoesNotExist = 2, kSubscriptionIdExists = 3,
                   kSubscriptionIdDoesNotExist = 4, kStreamAlreadyExists = 5,
                   kStreamNotAvailable = 6, kUnknownFrame = 13, kFrameTooLarge = 14,
                   kPreconditionFailed = 17, kPublisherDoesNotExist = 18, kNoOffset = 19;

// Offset types as clients write them (0 "none" only in ConsumerUpdate
// answers).
constexpr uint16_t kNone = 0, kFirst = 1, kLast = 2, kNext = 3, kOffset = 4, kTimestamp = 5;

// Big-endian fields, appended the way the clients append them.
class Out {
 public:
  Out& u8(uint8_t v) {
    b_.push_back(char(v));
    return *this;
  }
  Out& u16(uint16_t v) { return u8(uint8_t(v >> 8)).u8(uint8_t(v)); }
  Out& u32(uint32_t v) { return u16(uint16_t(v >> 16)).u16(uint16_t(v)); }
  Out& u64(uint64_t v) { return u32(uint32_t(v >> 32)).u32(uint32_t(v)); }
  Out& i16(int16_t v) { return u16(uint16_t(v)); }
  Out& i32(int32_t v) { return u32(uint32_t(v)); }
  Out& i64(int64_t v) { return u64(uint64_t(v)); }
  // int16 length + bytes.
  Out& str(std::string_view s) { return u16(uint16_t(s.size())).raw(s); }
  // int32 length + bytes.
  Out& blob(std::string_view s) { return u32(uint32_t(s.size())).raw(s); }
  Out& raw(std::string_view s) {
    b_.append(s.data(), s.size());
    return *this;
  }
  // int32 count + key/value strings.
  Out& map(const Props& p) {
    u32(uint32_t(p.size()));
    for (const auto& [k, v] : p) str(k).str(v);
    return *this;
  }
  // int32 count + strings.
  Out& strs(const std::vector<std::string>& v) {
    u32(uint32_t(v.size()));
    for (const auto& s : v) str(s);
    return *this;
  }
  const Bytes& bytes() const { return b_; }
  size_t size() const { return b_.size(); }

 private:
  Bytes b_;
};

// A whole frame: uint32 size of what follows, key, version, body.
inline Bytes frame(uint16_t key, uint16_t version, const Out& body) {
  Out f;
  f.u32(uint32_t(4 + body.size())).u16(key).u16(version).raw(body.bytes());
  return f.bytes();
}

// Reads big-endian fields of an answer; past the end it reads zeros and
// remembers the overrun.
class In {
 public:
  explicit In(BytesView b) : b_(b) {}
  uint8_t u8() {
    if (pos_ >= b_.size()) {
      ok_ = false;
      return 0;
    }
    return uint8_t(b_[pos_++]);
  }
  uint16_t u16() { return uint16_t(uint16_t(u8()) << 8 | u8()); }
  uint32_t u32() { return uint32_t(u16()) << 16 | u16(); }
  uint64_t u64() { return uint64_t(u32()) << 32 | u32(); }
  int64_t i64() { return int64_t(u64()); }
  std::string raw(size_t n) {
    if (b_.size() - pos_ < n) {
      ok_ = false;
      pos_ = b_.size();
      return {};
    }
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::string str() {
    uint16_t n = u16();
    return n == 0xffff ? std::string() : raw(n);
  }
  std::map<std::string, std::string> map() {
    std::map<std::string, std::string> m;
    for (uint32_t n = u32(); n > 0 && ok_; --n) {
      std::string k = str();
      m[k] = str();
    }
    return m;
  }
  std::vector<std::string> strs() {
    std::vector<std::string> v;
    for (uint32_t n = u32(); n > 0 && ok_; --n) v.push_back(str());
    return v;
  }
  size_t left() const { return b_.size() - pos_; }
  bool ok() const { return ok_; }
  // Every byte read, none missing.
  bool done() const { return ok_ && pos_ == b_.size(); }

 private:
  BytesView b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

inline std::string hex(BytesView b) {
  std::string s;
  char buf[4];
  for (unsigned char c : b) {
    std::snprintf(buf, sizeof buf, "%02x ", c);
    s += buf;
  }
  return s;
}
inline uint16_t key_of(BytesView body) {
  return body.size() < 2 ? 0 : uint16_t(uint8_t(body[0]) << 8 | uint8_t(body[1]));
}
inline uint16_t version_of(BytesView body) {
  return body.size() < 4 ? 0 : uint16_t(uint8_t(body[2]) << 8 | uint8_t(body[3]));
}

inline int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A connection as a client sees it: frames out as bytes, frames in by key.
// Heartbeats are dropped; a frame that is not the one asked for is kept for
// a later call, so server-initiated frames (ConsumerUpdate, Deliver,
// MetadataUpdate) may interleave with answers as they do on the wire.
class Peer {
 public:
  explicit Peer(int port) {
    auto c = StreamClient::connect(port);
    if (c.ok()) {
      c_ = std::move(c).value();
    } else {
      ADD_FAILURE() << c.error().message;
    }
  }
  void send(const Bytes& f) {
    auto st = c_.send_raw(f);
    EXPECT_TRUE(st.ok()) << st.error().message;
  }
  // The next frame body (after the size) with one of `keys`; empty (and a
  // test failure) if none comes within the timeout or the server closes.
  Bytes next(std::initializer_list<uint16_t> keys, std::chrono::milliseconds timeout = 10s) {
    auto wanted = [&](uint16_t k) {
      for (uint16_t w : keys)
        if (w == k) return true;
      return false;
    };
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (wanted(key_of(*it))) {
        Bytes b = std::move(*it);
        kept_.erase(it);
        return b;
      }
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto f =
          left.count() > 0 ? c_.read_frame(left) : Result<Bytes>(Error(Errc::timeout, "timed out"));
      if (!f.ok()) {
        ADD_FAILURE() << "waiting for key 0x" << std::hex << *keys.begin() << std::dec << ": "
                      << f.error().message;
        return {};
      }
      uint16_t k = key_of(*f);
      if (wanted(k)) return std::move(f).value();
      if (k != kHeartbeat) kept_.push_back(std::move(f).value());
    }
  }
  Bytes next(uint16_t key, std::chrono::milliseconds timeout = 10s) { return next({key}, timeout); }
  // True when no frame with `key` arrives within `wait` (frames that do
  // arrive are kept).
  bool quiet(uint16_t key, std::chrono::milliseconds wait = 400ms) {
    for (const auto& b : kept_)
      if (key_of(b) == key) return false;
    auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return true;
      auto f = c_.read_frame(left);
      if (!f.ok()) return true;
      if (key_of(*f) == key) {
        kept_.push_back(std::move(f).value());
        return false;
      }
      if (key_of(*f) != kHeartbeat) kept_.push_back(std::move(f).value());
    }
  }
  // Waits for the server to close the socket.
  bool closed_by_server(std::chrono::milliseconds timeout = 10s) {
    return c_.closed_by_server(timeout);
  }
  // "" while the server has not sent Close within `wait`, else its code and
  // reason.
  std::string close_within(std::chrono::milliseconds wait = 400ms) {
    if (quiet(kClose, wait)) return "";
    Bytes b = next(kClose);
    In in(b);
    in.u16();
    in.u16();
    in.u32();
    uint16_t code = in.u16();
    return "Close " + std::to_string(code) + " \"" + in.str() + "\"";
  }
  // Whether a frame with `key` came and was not asked for yet.
  bool holds(uint16_t key) const {
    for (const auto& b : kept_)
      if (key_of(b) == key) return true;
    return false;
  }

 private:
  StreamClient c_;
  std::deque<Bytes> kept_;
};

// --- RabbitMQ's answers (rabbit_stream_core:frame/1) ---------------------------------------

// A response with a correlation id and a code only.
inline Bytes code_answer(uint16_t request_key, uint32_t corr, uint16_t code) {
  Out o;
  o.u16(request_key | kAnswer).u16(1).u32(corr).u16(code);
  return o.bytes();
}
inline void expect_code(Peer& p, uint16_t request_key, uint32_t corr, uint16_t code) {
  EXPECT_EQ(hex(p.next(request_key | kAnswer)), hex(code_answer(request_key, corr, code)))
      << "answer to key 0x" << std::hex << request_key << std::dec << ", correlation " << corr;
}

// Reads a code-only answer's frame, checking its length; returns the code.
inline uint16_t answer_code(Peer& p, uint16_t request_key, uint32_t corr);

// Reads the head every correlated answer starts with; returns its code.
inline uint16_t answer_head(In& in, uint16_t request_key, uint32_t corr) {
  EXPECT_EQ(in.u16(), request_key | kAnswer);
  EXPECT_EQ(in.u16(), 1) << "answer version";
  EXPECT_EQ(in.u32(), corr) << "correlation id";
  return in.u16();
}

inline uint16_t answer_code(Peer& p, uint16_t request_key, uint32_t corr) {
  Bytes b = p.next(request_key | kAnswer);
  In in(b);
  uint16_t code = answer_head(in, request_key, corr);
  EXPECT_TRUE(in.done()) << hex(b);
  return code;
}

inline std::map<std::string, std::string> expect_peer_properties(Peer& p, uint32_t corr) {
  Bytes b = p.next(kPeerProperties | kAnswer);
  In in(b);
  EXPECT_EQ(answer_head(in, kPeerProperties, corr), kOk);
  auto props = in.map();
  EXPECT_TRUE(in.done()) << hex(b);
  return props;
}
inline std::vector<std::string> expect_sasl_mechanisms(Peer& p, uint32_t corr) {
  Bytes b = p.next(kSaslHandshake | kAnswer);
  In in(b);
  EXPECT_EQ(answer_head(in, kSaslHandshake, corr), kOk);
  auto m = in.strs();
  EXPECT_TRUE(in.done()) << hex(b);
  return m;
}
struct Tune {
  uint32_t frame_max = 0;
  uint32_t heartbeat = 0;
};
// The server's Tune (key 0x0014, no correlation id) after authentication.
inline Tune expect_server_tune(Peer& p) {
  Bytes b = p.next(kTune);
  In in(b);
  EXPECT_EQ(in.u16(), kTune);
  EXPECT_EQ(in.u16(), 1);
  Tune t;
  t.frame_max = in.u32();
  t.heartbeat = in.u32();
  EXPECT_TRUE(in.done()) << hex(b);
  return t;
}
// Open's answer: ok and the connection properties.
inline std::map<std::string, std::string> expect_open(Peer& p, uint32_t corr) {
  Bytes b = p.next(kOpen | kAnswer);
  In in(b);
  EXPECT_EQ(answer_head(in, kOpen, corr), kOk);
  auto props = in.map();
  EXPECT_TRUE(in.done()) << hex(b);
  return props;
}

struct CommandVersion {
  uint16_t key = 0, min = 0, max = 0;
  bool operator==(const CommandVersion&) const = default;
};
inline std::ostream& operator<<(std::ostream& os, const CommandVersion& v) {
  return os << "{0x" << std::hex << v.key << std::dec << ", " << v.min << ", " << v.max << "}";
}
inline std::vector<CommandVersion> expect_command_versions(Peer& p, uint32_t corr) {
  Bytes b = p.next(kExchangeCommandVersions | kAnswer);
  In in(b);
  EXPECT_EQ(answer_head(in, kExchangeCommandVersions, corr), kOk);
  std::vector<CommandVersion> v;
  for (uint32_t n = in.u32(); n > 0 && in.ok(); --n) {
    CommandVersion c;
    c.key = in.u16();
    c.min = in.u16();
    c.max = in.u16();
    v.push_back(c);
  }
  EXPECT_TRUE(in.done()) << hex(b);
  return v;
}
// RabbitMQ 4.x's answer (rabbit_stream_utils:command_versions/0), in its
// order: what a client may send, whatever the client listed.
inline std::vector<CommandVersion> rabbit_command_versions() {
  std::vector<CommandVersion> v;
  for (uint16_t k : {0x01, 0x02, 0x05, 0x06, 0x07, 0x09, 0x0a, 0x0b, 0x0c, 0x0d,
                     0x0e, 0x0f, 0x16, 0x17, 0x18, 0x19, 0x1c, 0x1d, 0x1e, 0x1f}) {
    v.push_back({k, 1, uint16_t(k == kPublish ? 2 : 1)});
  }
  return v;
}

// Whether the first x.y.z in `v` is at least a.b.c, as the clients compare
// the server's `version` peer property before using a feature.
inline bool version_at_least(const std::string& v, int a, int b, int c) {
  int x = 0, y = 0, z = 0;
  if (std::sscanf(v.c_str(), "%d.%d.%d", &x, &y, &z) != 3) return false;
  return std::tie(x, y, z) >= std::tie(a, b, c);
}

inline uint64_t expect_u64_answer(Peer& p, uint16_t request_key, uint32_t corr, uint16_t code) {
  Bytes b = p.next(request_key | kAnswer);
  In in(b);
  EXPECT_EQ(answer_head(in, request_key, corr), code);
  uint64_t v = in.u64();
  EXPECT_TRUE(in.done()) << hex(b);
  return v;
}
inline std::vector<std::string> expect_streams_answer(Peer& p, uint16_t request_key, uint32_t corr,
                                                      uint16_t code) {
  Bytes b = p.next(request_key | kAnswer);
  In in(b);
  EXPECT_EQ(answer_head(in, request_key, corr), code);
  auto v = in.strs();
  EXPECT_TRUE(in.done()) << hex(b);
  return v;
}

struct Metadata {
  struct Broker {
    uint16_t ref = 0;
    std::string host;
    uint32_t port = 0;
  };
  struct Stream {
    uint16_t code = 0;
    uint16_t leader = 0;
    std::vector<uint16_t> replicas;
  };
  std::vector<Broker> brokers;
  std::map<std::string, Stream> streams;
};
inline Metadata expect_metadata(Peer& p, uint32_t corr) {
  Bytes b = p.next(kMetadata | kAnswer);
  In in(b);
  EXPECT_EQ(in.u16(), kMetadata | kAnswer);
  EXPECT_EQ(in.u16(), 1);
  EXPECT_EQ(in.u32(), corr);
  Metadata m;
  for (uint32_t n = in.u32(); n > 0 && in.ok(); --n) {
    Metadata::Broker br;
    br.ref = in.u16();
    br.host = in.str();
    br.port = in.u32();
    m.brokers.push_back(br);
  }
  for (uint32_t n = in.u32(); n > 0 && in.ok(); --n) {
    std::string name = in.str();
    Metadata::Stream s;
    s.code = in.u16();
    s.leader = in.u16();
    for (uint32_t r = in.u32(); r > 0 && in.ok(); --r) s.replicas.push_back(in.u16());
    m.streams[name] = s;
  }
  EXPECT_TRUE(in.done()) << hex(b);
  return m;
}
// MetadataUpdate (0x0010, no correlation id): code, stream.
inline std::pair<uint16_t, std::string> expect_metadata_update(Peer& p) {
  Bytes b = p.next(kMetadataUpdate);
  In in(b);
  EXPECT_EQ(in.u16(), kMetadataUpdate);
  EXPECT_EQ(in.u16(), 1);
  uint16_t code = in.u16();
  std::string stream = in.str();
  EXPECT_TRUE(in.done()) << hex(b);
  return {code, stream};
}

// A ConsumerUpdate request (0x001a): correlation id, subscription id, active.
struct ConsumerUpdate {
  uint32_t corr = 0;
  uint8_t subscription = 0;
  uint8_t active = 0;
};
inline ConsumerUpdate expect_consumer_update(Peer& p, std::chrono::milliseconds timeout = 10s) {
  Bytes b = p.next(kConsumerUpdate, timeout);
  In in(b);
  EXPECT_EQ(in.u16(), kConsumerUpdate);
  EXPECT_EQ(in.u16(), 1);
  ConsumerUpdate u;
  u.corr = in.u32();
  u.subscription = in.u8();
  u.active = in.u8();
  EXPECT_TRUE(in.done()) << hex(b);
  return u;
}

// Reads PublishConfirm frames of `publisher` until every id of `want` is
// confirmed; a PublishError or an id not asked for fails the test.
inline void expect_confirms(Peer& p, uint8_t publisher, std::set<uint64_t> want) {
  while (!want.empty()) {
    Bytes b = p.next({kPublishConfirm, kPublishError});
    if (b.empty()) return;
    In in(b);
    uint16_t key = in.u16();
    EXPECT_EQ(in.u16(), 1);
    EXPECT_EQ(in.u8(), publisher);
    if (key == kPublishError) {
      ADD_FAILURE() << "PublishError: " << hex(b);
      return;
    }
    for (uint32_t n = in.u32(); n > 0 && in.ok(); --n) {
      uint64_t id = in.u64();
      EXPECT_EQ(want.erase(id), 1u) << "confirm of id " << id << " not expected";
    }
    EXPECT_TRUE(in.done()) << hex(b);
  }
}

// --- Messages and chunks --------------------------------------------------------------------

// An AMQP 1.0 message holding only a body, as the clients' codecs write it:
// a Data section (described 0x00 0x53 0x75) of vbin8 (0xa0) up to 255
// bytes, vbin32 (0xb0) above.
inline std::string amqp(std::string_view body) {
  Out o;
  o.u8(0x00).u8(0x53).u8(0x75);
  if (body.size() <= 255) {
    o.u8(0xa0).u8(uint8_t(body.size()));
  } else {
    o.u8(0xb0).u32(uint32_t(body.size()));
  }
  o.raw(body);
  return o.bytes();
}
inline std::vector<std::string> amqp_all(const std::vector<std::string>& bodies) {
  std::vector<std::string> v;
  for (const auto& b : bodies) v.push_back(amqp(b));
  return v;
}
inline std::vector<std::string> numbered(int from, int to, const std::string& prefix) {
  std::vector<std::string> v;
  for (int i = from; i < to; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

// A Deliver frame as every client reads it.
struct Chunk {
  uint16_t version = 0;
  uint8_t subscription = 0;
  uint64_t committed_chunk_id = 0;  // version 2
  uint8_t type = 0;
  uint16_t entries = 0;
  uint32_t records = 0;
  int64_t timestamp = 0;
  uint64_t chunk_id = 0;
  uint8_t bloom_size = 0;
  uint32_t trailer_len = 0;
  // The records in order (sub-batches opened); record k is at chunk_id + k.
  std::vector<std::string> messages;
};
// Reads a Deliver body; every problem fails the test. RabbitMQ sends the
// 48-byte osiris header and then the entries: neither the Bloom filter nor
// the trailer (osiris_log:send_file, user_data selector), whatever the
// header's sizes say; the clients read the entries right after the header.
inline Chunk read_deliver(BytesView body) {
  In in(body);
  Chunk c;
  EXPECT_EQ(in.u16(), kDeliver);
  c.version = in.u16();
  c.subscription = in.u8();
  if (c.version == 2) c.committed_chunk_id = in.u64();
  EXPECT_EQ(in.u8(), 0x50) << "magic 5, version 0";
  c.type = in.u8();
  c.entries = in.u16();
  c.records = in.u32();
  c.timestamp = in.i64();
  in.u64();  // epoch
  c.chunk_id = in.u64();
  uint32_t crc = in.u32();
  uint32_t data_len = in.u32();
  c.trailer_len = in.u32();
  c.bloom_size = in.u8();
  in.raw(3);
  EXPECT_EQ(c.type, 0) << "only user chunks are delivered";
  EXPECT_EQ(in.left(), data_len) << "entries must follow the header (no filter, no trailer)";
  std::string data = in.raw(in.left());
  EXPECT_EQ(uint32_t(::crc32(0L, u8(data.data()), uInt(data.size()))), crc) << "chunk CRC";
  In d(data);
  for (uint16_t e = 0; e < c.entries && d.ok(); ++e) {
    uint8_t head = d.u8();
    if ((head & 0x80) == 0) {
      uint32_t len = uint32_t(head & 0x7f) << 24 | uint32_t(d.u8()) << 16 | d.u16();
      c.messages.push_back(d.raw(len));
      continue;
    }
    EXPECT_EQ(head & 0x70, 0) << "compressed sub-batch";
    uint16_t n = d.u16();
    d.u32();  // uncompressed length
    std::string batch = d.raw(d.u32());
    In sub(batch);
    for (uint16_t i = 0; i < n && sub.ok(); ++i) c.messages.push_back(sub.raw(sub.u32()));
    EXPECT_TRUE(sub.done());
  }
  EXPECT_TRUE(d.done()) << "chunk entries";
  EXPECT_EQ(c.messages.size(), c.records);
  return c;
}

// Messages as a consumer hands them to the application: (offset, body).
using Received = std::vector<std::pair<uint64_t, std::string>>;

// Reads Deliver frames of `subscription` until `n` messages at offsets from
// `from` on have arrived (earlier records of a chunk are skipped, as every
// client skips them), calling `after_chunk` after each chunk (where the
// client sends its credit).
inline Received receive(Peer& p, uint8_t subscription, size_t n, uint64_t from,
                        const std::function<void(const Chunk&)>& after_chunk,
                        std::vector<Chunk>* chunks = nullptr) {
  Received got;
  while (got.size() < n) {
    Bytes b = p.next(kDeliver);
    if (b.empty()) break;
    Chunk c = read_deliver(b);
    EXPECT_EQ(c.subscription, subscription);
    for (size_t i = 0; i < c.messages.size(); ++i) {
      if (c.chunk_id + i >= from) got.emplace_back(c.chunk_id + i, c.messages[i]);
    }
    if (after_chunk) after_chunk(c);
    if (chunks) chunks->push_back(std::move(c));
  }
  return got;
}
inline std::vector<std::string> bodies(const Received& r) {
  std::vector<std::string> v;
  for (const auto& [o, b] : r) v.push_back(b);
  return v;
}

// --- A client's connection -----------------------------------------------------------------

// An offset specification: type, and a value for offset (u64) and
// timestamp (i64 ms) only, as PROTOCOL.adoc lays it out.
struct Spec {
  uint16_t type = kFirst;
  int64_t value = 0;
};
inline Out& put_spec(Out& o, const Spec& s) {
  o.u16(s.type);
  if (s.type == kOffset || s.type == kTimestamp) o.i64(s.value);
  return o;
}

// A connection of a stock client: its socket and its correlation ids. The
// conversations spell every frame's fields themselves, as their client
// writes them; this only frames requests (size, key, version 1,
// correlation id, fields) and reads code-only answers.
class ClientConnection {
 public:
  ClientConnection(int port, uint32_t first_correlation) : peer(port), next_(first_correlation) {}
  Peer peer;
  uint32_t corr() { return next_++; }
  void set_next_corr(uint32_t c) { next_ = c; }
  // Sends a correlated request; returns its correlation id.
  uint32_t rpc(uint16_t key, const Out& fields) {
    uint32_t c = corr();
    Out body;
    body.u32(c).raw(fields.bytes());
    peer.send(frame(key, 1, body));
    return c;
  }
  // Sends a request whose answer is a code alone; returns the code.
  uint16_t rpc_code(uint16_t key, const Out& fields) {
    uint32_t c = rpc(key, fields);
    return answer_code(peer, key, c);
  }
  // Sends a frame without correlation id (Publish, Credit, StoreOffset, ...).
  void cast(uint16_t key, uint16_t version, const Out& fields) {
    peer.send(frame(key, version, fields));
  }

 private:
  uint32_t next_;
};

// Publish v1 of simple entries as every client lays them out: publisher
// id, int32 count, then per message u64 publishing id, u32 length, bytes.
inline Out simple_publish(uint8_t publisher, uint64_t first_id,
                          const std::vector<std::string>& messages) {
  Out o;
  o.u8(publisher).u32(uint32_t(messages.size()));
  for (size_t i = 0; i < messages.size(); ++i) o.u64(first_id + i).blob(messages[i]);
  return o;
}
// An uncompressed sub-batch entry (after its publishing id): 0x80 (sub-batch,
// compression 0), u16 record count, u32 uncompressed length, u32 length,
// then each record as u32 length + bytes.
inline Out& put_sub_batch(Out& o, const std::vector<std::string>& messages) {
  Out data;
  for (const auto& m : messages) data.blob(m);
  o.u8(0x80).u16(uint16_t(messages.size())).u32(uint32_t(data.size())).u32(uint32_t(data.size()));
  return o.raw(data.bytes());
}

// The stream's messages as a fresh consumer from `first` sees them.
inline Received read_all(ClientConnection& c, uint8_t sub, size_t n, uint64_t from = 0) {
  return receive(c.peer, sub, n, from,
                 [&](const Chunk&) { c.cast(kCredit, 1, Out().u8(sub).u16(1)); });
}

}  // namespace strata::test::wire
