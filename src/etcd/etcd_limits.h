// The etcd client's fixed limits, in one place: bounds on what a server may
// send, and the pauses and waits of the client and the watch that are not
// settings (ClientOptions holds those). Each says why it has its value.
#pragma once

#include <chrono>
#include <cstddef>

namespace strata::etcd {

// A reply larger than any etcd answer we ask for is a misbehaving server
// (etcd's own request limit is 1.5 MiB; a range of a large namespace stays
// far below this): the transfer is cut instead of growing memory.
inline constexpr size_t kMaxReplyBytes = 64u << 20;
// The same bound on one message of a watch stream (a revision's events).
inline constexpr size_t kMaxWatchMessageBytes = 64u << 20;

// When every endpoint failed one round of a call, a pause before the next
// round, so that a cluster electing a leader is not hammered (the call's
// deadline still bounds the whole).
inline constexpr std::chrono::milliseconds kPauseBetweenRounds{50};
// A watch whose connection ended waits this long before the next endpoint
// (woken at once by its destruction): a member restarting is not hammered.
inline constexpr std::chrono::milliseconds kWatchReconnectPause{100};
// The longest the watch's thread sleeps in curl_multi_poll between checks
// of its silence probe (destruction wakes it at once anyway).
inline constexpr std::chrono::milliseconds kWatchPollMax{1000};
// TCP keepalive of the watch's long-lived connection: a peer gone without a
// FIN (a host powered off) is noticed within idle + a few intervals, not
// the kernel's two hours.
inline constexpr long kWatchKeepIdleSeconds = 5;
inline constexpr long kWatchKeepIntervalSeconds = 2;

// How much of an unreadable reply an error message quotes.
inline constexpr size_t kReplySnippetBytes = 120;
// How much of a silent member's probe reply the watch's error quotes.
inline constexpr size_t kProbeSnippetBytes = 200;
// How much of a field that is not a number an error message quotes.
inline constexpr size_t kFieldSnippetBytes = 40;

}  // namespace strata::etcd
