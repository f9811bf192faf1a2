#include "import/osiris_tracking.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/endian.h"

namespace strata::import {

namespace {

constexpr uint8_t kSequence = 0;
constexpr uint8_t kOffset = 1;
constexpr uint8_t kTimestamp = 2;

Error cut_short(size_t at, const char* what) {
  return Error(Errc::corrupt,
               fmt::format("tracking entry at byte {}: its {} runs past the end", at, what));
}

}  // namespace

Result<OsirisTracking> parse_osiris_tracking(BytesView body, TrackingForm form) {
  OsirisTracking t;
  size_t at = 0;
  while (at < body.size()) {
    const size_t start = at;
    if (body.size() - at < 2) return cut_short(start, "header");
    const uint8_t type = uint8_t(body[at]);
    const size_t id_len = uint8_t(body[at + 1]);
    at += 2;
    if (body.size() - at < id_len) return cut_short(start, "reference");
    std::string id(body.substr(at, id_len));
    at += id_len;
    // A snapshot's sequence also names the chunk that carried it.
    const size_t value_len = type == kSequence && form == TrackingForm::snapshot ? 16 : 8;
    if (type > kTimestamp) {
      return Error(Errc::corrupt,
                   fmt::format("tracking entry at byte {}: unknown type {}", start, type));
    }
    if (body.size() - at < value_len) return cut_short(start, "value");
    const uint64_t v = get_be64(u8(body.data() + at + value_len - 8));
    at += value_len;
    switch (type) {
      case kSequence:
        t.sequences[id] = v;
        break;
      case kOffset:
        t.offsets[id] = v;
        break;
      default:
        t.timestamps[id] = int64_t(v);
        break;
    }
  }
  return t;
}

void apply_osiris_tracking(const OsirisTracking& t, TrackingForm form, OsirisTracking* into) {
  if (form == TrackingForm::snapshot) {
    *into = t;
    return;
  }
  for (const auto& [id, seq] : t.sequences) {
    auto [it, inserted] = into->sequences.try_emplace(id, seq);
    if (!inserted) it->second = std::max(it->second, seq);
  }
  for (const auto& [id, off] : t.offsets) into->offsets[id] = off;
  for (const auto& [id, ts] : t.timestamps) into->timestamps[id] = ts;
}

}  // namespace strata::import
