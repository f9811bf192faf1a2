// The tier layer's fixed limits, in one place: retry counts and waits that
// are not settings (UploaderOptions, StreamReaderOptions, ScrubOptions and
// the retention spec hold those) but decide how the tier's readers, scrub
// and gc behave when something is slow or keeps changing. Each says why it
// has its value. (The uploader shell keeps its own; the retry schedules
// are BackoffPolicy::transient() and fatal(), backoff.h; sizes of the
// object formats stay beside the formats.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier/backoff.h"

namespace strata::tier {

// A StreamReader opening at an offset the local log held looks again when
// local retention removed it before the reader opened (it is then remote).
// Each look sees a newer state, and retention moves only after an upload
// persists, so two looks normally settle it; past this many it fails as
// unavailable (retry) rather than spin.
inline constexpr int kReaderOpenAttempts = 8;

// A transient GET failure of a remote reader's range is retried after
// this backoff (20 ms doubling to 1 s, jittered; the count is
// StreamReaderOptions::transient_retries): short, since a consumer waits
// on it, but doubling so a struggling store is not hammered.
inline constexpr BackoffPolicy kRangeRetryBackoff{false, 20, 1000};

// Scrub and gc retry an object-store call that fails transiently (with
// BackoffPolicy::transient(), no immediate first retry) up to this many
// tries in all: a run should not fail on one 503, nor wait out an outage.
inline constexpr uint32_t kTransientTries = 4;

// Scrub reads a stream's manifest tree while its uploader may replace the
// root: each replacement makes it start again from the new root. Past this
// many fresh starts (each needs a persist to land mid-read) it gives up and
// reports the stream as changing.
inline constexpr int kScrubTreeAttempts = 8;

// Gc's delete of an orphan batch that fails transiently is tried this many
// times in all; what is left stays for the next run (an orphan harms
// nothing but space).
inline constexpr int kGcRemoveTries = 3;

// Longest segment of a key prefix (a stream's own segment, its component,
// is at most 200 bytes: common/name_component.h): the fs store makes each
// segment a file or directory name, which may have 255 bytes, and S3's
// 1024-byte keys leave room for the rest of the key.
inline constexpr size_t kMaxKeySegmentBytes = 255;

}  // namespace strata::tier
