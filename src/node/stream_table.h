// StreamTable: which streams a node has open, and which it is opening. A
// plain table under the node's lock (node_impl.h): nothing here does I/O or
// waits, so every lookup answers at once whatever an open in progress is
// waiting for (a slow bucket, a takeover reading the remote tier).
//
// A name is in one state at a time:
//   opening     an open runs outside the lock (stream_open.cpp); lookups
//               answer Errc::unavailable, a second open waits for it;
//               release() marks it so that the opener closes what it
//               opened instead of publishing it;
//   open        listed, served;
//   handing off hidden from lookups while a hand-over persists it
//               (node_ownership.cpp), but still closed by the node's close.
// Deletions are kept beside it (node_impl.h, Deletion) under the same
// lock, so that a name moves from open to deleting in one step.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "log/stream_log.h"
#include "node/stream_gate.h"
#include "node/stream_settings.h"
#include "tier/tiering_hooks.h"
#include "tier/uploader.h"

namespace strata::node {

// What the node holds of one open stream.
struct StreamEntry {
  std::shared_ptr<log::StreamLog> log;
  std::shared_ptr<tier::TieringHooks> hooks;
  std::shared_ptr<tier::Uploader> uploader;
  // What the uploader reaches the object store and catalog through, so
  // that a deletion can wait until its last request has ended.
  std::shared_ptr<StreamGate> gate;
  StreamSettings settings;
  EffectiveSettings effective;

  // Detaches the uploader and closes it and the log (what a release, a
  // hand-over and the node's close do with an entry). Logs what fails.
  void close(const std::string& name) const;
};

class StreamTable {
 public:
  enum class State { absent, opening, open, handing_off };
  State state(const std::string& name) const;

  // The open entry of `name`, or null.
  const StreamEntry* find(const std::string& name) const;
  // An open entry's settings after an alteration, if it is still the
  // entry whose log is `log` (false: released, reopened or handed over).
  bool update_settings(const std::string& name, const log::StreamLog* log,
                       const StreamSettings& settings, const EffectiveSettings& effective);
  std::vector<std::string> names() const;
  // Copies of the open entries (status, metrics, close).
  std::map<std::string, StreamEntry> open_entries() const;

  // ---- opening ----
  // absent -> opening.
  void begin_open(const std::string& name);
  // Whether release() was called while `name` is being opened: its opener
  // then closes what it opened instead of publishing it.
  bool release_requested(const std::string& name) const;
  // opening -> open with `e` (not after a release was asked for).
  void finish_open(const std::string& name, StreamEntry e);
  // opening -> absent (the open failed, or was released).
  void abort_open(const std::string& name);
  bool any_opening() const;
  // open: removes and returns the entry; opening: marks it to be closed by
  // its opener; otherwise nothing.
  std::optional<StreamEntry> release(const std::string& name);
  // absent -> open with an entry release() returned (a deletion that could
  // not begin gives the stream back as it was).
  void put_back(const std::string& name, StreamEntry e);

  // ---- hand-over ----
  // open -> handing off; the entry.
  StreamEntry begin_handoff(const std::string& name);
  // handing off -> open again.
  void cancel_handoff(const std::string& name);
  // handing off -> absent.
  void end_handoff(const std::string& name);
  bool any_handing_off() const;
  size_t handing_off() const;
  std::map<std::string, StreamEntry> handoff_entries() const;

  // Everything open (not handing off), removed from the table.
  std::map<std::string, StreamEntry> take_all_open();

 private:
  struct Slot {
    State state = State::absent;
    StreamEntry entry;               // open, handing off
    bool release_requested = false;  // opening
  };
  Slot* slot(const std::string& name);
  std::map<std::string, Slot> slots_;
};

}  // namespace strata::node
