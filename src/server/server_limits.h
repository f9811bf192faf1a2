// The server layer's fixed limits, in one place: bounds, deadlines and waits
// that are not settings (docs/CONFIGURATION.md lists those, `server.*`) but
// decide how `strata serve` behaves when a client or the disk is slow. Each
// says why it has its value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::server {

// ---- a connection's transport (frame_channel.h) ----

// Until Open succeeds the peer is a stranger: no frame larger than this,
// whatever server.frame_max allows afterwards (the protocol's ceiling
// before Open, PROTOCOL.adoc; the handshake's frames are far smaller).
inline constexpr uint32_t kPreOpenFrameMax = 8192;
// An open connection's socket is read into a buffer of this much: a few
// Publish frames of the usual size per read. Before Open the buffer is only
// as large as a frame may be then, so a crowd of strangers costs little; a
// large frame grows the buffer as its bytes arrive, never from its size
// field alone.
inline constexpr size_t kReadChunk = 64u << 10;
// Small frames queued back to back go out in one gathered write of at most
// this many frames (a burst of confirms and credits is one syscall).
inline constexpr size_t kWriteBatchFrames = 64;
// Bytes queued on one connection (replies, confirms, in-memory Deliver
// bodies) past which its requests are no longer read and its deliveries read
// nothing more until its client has read some: a client that sends
// requests and never reads the answers (or publishes and never reads the
// confirms) makes the server hold at most this much, plus what one read of
// its requests answers. A few of the largest delivery batches: a client
// reading at its own pace stays far below it.
inline constexpr uint64_t kConnectionBacklogMax = 4u << 20;
// While the server holds more than server.max_buffered_bytes for its
// clients, a connection with more than this queued is held back the same
// way; one with less (a client keeping up) goes on.
inline constexpr uint64_t kConnectionBacklogFloor = 256u << 10;
// A connection closed by the server ends its side first and reads what the
// peer still sends for at most this long before closing: closing with
// unread bytes resets the connection, which can destroy the Close frame
// that says why before the peer reads it.
inline constexpr std::chrono::milliseconds kHalfCloseLinger{1000};
// How often a cluster node re-reads the live changes to users another node
// may have stored (server/access_admin.h): a change made on one node is in
// force on every node within about this long.
inline constexpr std::chrono::milliseconds kAccessPollInterval{2000};
// How long the management API waits for the connections to describe
// themselves (each on its strand).
inline constexpr std::chrono::milliseconds kDescribeWait{1000};
// How far back GET /api/history reaches (the console's "last hour").
inline constexpr int64_t kHistoryWindowMs = 3'600'000;
// After a failed accept (EMFILE: out of descriptors until a connection
// closes), the listener waits this long before accepting again.
inline constexpr std::chrono::milliseconds kAcceptRetryPause{100};

// ---- publishing (publisher_room.h, stream_appender.h) ----

// A publisher's bytes handed to the log but not confirmed yet, before its
// connection stops reading the socket: enough for a few chunks in flight at
// full speed, bounded per connection so a fast publisher cannot make the
// server buffer without limit.
inline constexpr uint64_t kUnconfirmedBudget = 16u << 20;
// A drain of the append queue that has not ended by then is stuck in the
// file system; the appender stops rather than confirm anything after it.
inline constexpr std::chrono::milliseconds kDrainDeadline{120'000};

// ---- stream administration (stream_admin_room.h, offset_room.h) ----

// Creating or deleting a stream (or a super stream) as a task: a deletion
// lists and removes every object of the stream, which on a large bucket
// takes a while, but a task must end in an event (common/task.h).
inline constexpr std::chrono::milliseconds kStreamOpDeadline{120'000};
// A cluster's offset query is one etcd read (with the client's retries).
inline constexpr std::chrono::milliseconds kOffsetQueryDeadline{30'000};

// ---- stopping and handing over (served_streams.h, server.cpp) ----

// A stream handed over to another node (or deleted) first lets the
// appends in flight end: one fsync'ed drain, with margin.
inline constexpr std::chrono::seconds kRetireDrainWait{10};
// At shutdown, appends already handed to the log are appended and
// confirmed before the connections go.
inline constexpr std::chrono::seconds kShutdownDrainWait{30};
// At shutdown, the last confirms and the connections' closes are given
// this long to go out.
inline constexpr std::chrono::seconds kShutdownCloseWait{5};

// ---- cluster answers (stream_ops.h) ----

// A Create in a cluster is answered once an owner serves the stream: a
// lease TTL for the placement's owner to see it twice, plus its open.
inline constexpr std::chrono::milliseconds kCreateAwaitsOwnerMargin{5000};
// A Delete forwarded to another node's owner waits for the catalog entry
// to go: four TTLs (an owner that dies meanwhile is replaced) plus the
// deletion of the stream's objects.
inline constexpr std::chrono::milliseconds kForwardedDeleteMargin{60'000};

// ---- replica subscriptions (served_streams.cpp, replica_feed.h) ----

// A replica subscription whose owner is gone looks for the new one for three
// lease TTLs plus this margin (the new owner's recovery) before the consumer
// is told to look again.
inline constexpr std::chrono::milliseconds kReplicaReconnectMargin{5000};
// It compares the cluster's view with its owner every TTL / 8, but not more
// often than this.
inline constexpr std::chrono::milliseconds kReplicaOwnerCheckMin{50};
// A replica reads the remote tier for its consumer in batches of at most
// this many chunks and bytes per task (fewer when the consumer's credit is
// smaller): enough to keep a consumer busy between reads, small enough that
// a slow consumer does not pin much memory on a node that does not own the
// stream.
inline constexpr uint32_t kReplicaBatchChunks = 32;
inline constexpr uint64_t kReplicaBatchBytes = 1ull << 20;
// A replica's link to the owner holds at most this much of its consumer's
// credit beyond the chunks not yet written to the consumer: enough to keep
// a live tail flowing, little to queue for a slow consumer.
inline constexpr uint32_t kReplicaLinkWindow = 32;
// Loading the manifest for a replica is one catalog read and one root GET
// with the object store's own retries; a task must end in an event.
inline constexpr std::chrono::milliseconds kReplicaLoadDeadline{60'000};
// The link to the owner is retried with a doubling wait up to this: quick
// after a blip, and at most once a second while the owner is away (the
// owner search above bounds the whole wait).
inline constexpr std::chrono::milliseconds kReplicaMaxBackoff{1000};
// The link's socket is read in pieces of this size (as a connection's,
// kReadChunk): deliveries of a few chunks per read.
inline constexpr size_t kLinkReadChunk = kReadChunk;

// ---- questions forwarded to a stream's owner (owner_asker.h) ----

// A question a non-owner asks the owner for its client (connect, log in,
// ask, answer): a few round trips on a healthy cluster. Past this the
// client is answered stream_not_available and asks again, as it would
// during a takeover.
inline constexpr std::chrono::milliseconds kOwnerQuestionDeadline{3000};
// What a strata node calls itself when it connects to another
// (PeerProperties "product"): a question from it is never forwarded on.
inline constexpr std::string_view kPeerProduct = "strata replica";
// The Subscribe property ("1") a node's copier sends for a copy
// subscription (server/replica_copier.h); honoured on peer connections only.
inline constexpr std::string_view kCopyProperty = "x-strata-copy";
// ... and the copier's node id beside it.
inline constexpr std::string_view kCopyNodeProperty = "x-strata-node";
// ... and "1" when the copy holds the chunk the subscription starts at (its
// last, which it checks against the owner's): an owner whose log ends at or
// before that offset refuses the subscription (precondition_failed), since
// a copy only ever holds what its owner committed — that tail is another
// tenure's, and the copy starts afresh at once instead of waiting for the
// owner to write there.
inline constexpr std::string_view kCopyHoldsProperty = "x-strata-copy-holds";

// ---- super streams (super_streams.h) ----

// Partitions per super stream: the protocol counts them in an int32; a
// sane bound keeps a bad request from creating thousands of streams.
inline constexpr size_t kMaxPartitions = 1024;

}  // namespace strata::server
