#include "node/stream_table.h"

#include <spdlog/spdlog.h>

#include "common/assert.h"
#include "common/stream_name.h"

namespace strata::node {

void StreamEntry::close(const std::string& name) const {
  if (hooks) hooks->detach();
  if (uploader) uploader->close();
  if (log) {
    if (Status s = log->close(); !s.ok()) {
      spdlog::warn("node: stream {}: closing its log: {}", printable_stream(name), s.to_string());
    }
  }
}

StreamTable::Slot* StreamTable::slot(const std::string& name) {
  auto it = slots_.find(name);
  return it == slots_.end() ? nullptr : &it->second;
}

StreamTable::State StreamTable::state(const std::string& name) const {
  auto it = slots_.find(name);
  return it == slots_.end() ? State::absent : it->second.state;
}

const StreamEntry* StreamTable::find(const std::string& name) const {
  auto it = slots_.find(name);
  if (it == slots_.end() || it->second.state != State::open) return nullptr;
  return &it->second.entry;
}

bool StreamTable::update_settings(const std::string& name, const log::StreamLog* log,
                                  const StreamSettings& settings,
                                  const EffectiveSettings& effective) {
  auto it = slots_.find(name);
  if (it == slots_.end() || it->second.state != State::open || it->second.entry.log.get() != log) {
    return false;
  }
  it->second.entry.settings = settings;
  it->second.entry.effective = effective;
  return true;
}

std::vector<std::string> StreamTable::names() const {
  std::vector<std::string> out;
  for (const auto& [name, s] : slots_) {
    if (s.state == State::open) out.push_back(name);
  }
  return out;
}

std::map<std::string, StreamEntry> StreamTable::open_entries() const {
  std::map<std::string, StreamEntry> out;
  for (const auto& [name, s] : slots_) {
    if (s.state == State::open) out.emplace(name, s.entry);
  }
  return out;
}

void StreamTable::begin_open(const std::string& name) {
  STRATA_ASSERT(!slots_.count(name), "a stream is opened while it is in the table");
  slots_[name].state = State::opening;
}

bool StreamTable::release_requested(const std::string& name) const {
  auto it = slots_.find(name);
  return it != slots_.end() && it->second.state == State::opening && it->second.release_requested;
}

void StreamTable::finish_open(const std::string& name, StreamEntry e) {
  Slot* s = slot(name);
  STRATA_ASSERT(s && s->state == State::opening, "an open ends that was not begun");
  STRATA_ASSERT(!s->release_requested, "a stream released while opening is published");
  s->state = State::open;
  s->entry = std::move(e);
}

void StreamTable::abort_open(const std::string& name) {
  Slot* s = slot(name);
  STRATA_ASSERT(s && s->state == State::opening, "an open is abandoned that was not begun");
  slots_.erase(name);
}

bool StreamTable::any_opening() const {
  for (const auto& [name, s] : slots_) {
    if (s.state == State::opening) return true;
  }
  return false;
}

std::optional<StreamEntry> StreamTable::release(const std::string& name) {
  Slot* s = slot(name);
  if (!s) return std::nullopt;
  if (s->state == State::opening) {
    s->release_requested = true;
    return std::nullopt;
  }
  if (s->state != State::open) return std::nullopt;
  StreamEntry e = std::move(s->entry);
  slots_.erase(name);
  return e;
}

void StreamTable::put_back(const std::string& name, StreamEntry e) {
  STRATA_ASSERT(!slots_.count(name), "a stream is put back while its name is in the table");
  Slot& s = slots_[name];
  s.state = State::open;
  s.entry = std::move(e);
}

StreamEntry StreamTable::begin_handoff(const std::string& name) {
  Slot* s = slot(name);
  STRATA_ASSERT(s && s->state == State::open, "a hand-over of a stream that is not open");
  s->state = State::handing_off;
  return s->entry;
}

void StreamTable::cancel_handoff(const std::string& name) {
  Slot* s = slot(name);
  STRATA_ASSERT(s && s->state == State::handing_off, "a hand-over cancelled that was not begun");
  s->state = State::open;
}

void StreamTable::end_handoff(const std::string& name) {
  Slot* s = slot(name);
  STRATA_ASSERT(s && s->state == State::handing_off, "a hand-over ended that was not begun");
  slots_.erase(name);
}

bool StreamTable::any_handing_off() const {
  return handing_off() > 0;
}

size_t StreamTable::handing_off() const {
  size_t n = 0;
  for (const auto& [name, s] : slots_) n += s.state == State::handing_off ? 1 : 0;
  return n;
}

std::map<std::string, StreamEntry> StreamTable::handoff_entries() const {
  std::map<std::string, StreamEntry> out;
  for (const auto& [name, s] : slots_) {
    if (s.state == State::handing_off) out.emplace(name, s.entry);
  }
  return out;
}

std::map<std::string, StreamEntry> StreamTable::take_all_open() {
  std::map<std::string, StreamEntry> out;
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (it->second.state == State::open) {
      out.emplace(it->first, std::move(it->second.entry));
      it = slots_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace strata::node
