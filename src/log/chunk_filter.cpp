#include "log/chunk_filter.h"

#include <fmt/format.h>
#include <xxhash.h>

#include "common/assert.h"

namespace strata::log {

namespace {

// The two bits of a non-empty value in a filter of `bits` bits: in
// 1..bits-1 (bit 0 marks unfiltered messages).
std::pair<uint32_t, uint32_t> value_bits(std::string_view value, size_t bits) {
  const XXH128_hash_t h = XXH3_128bits(value.data(), value.size());
  const uint64_t span = bits - 1;
  return {uint32_t(h.low64 % span) + 1, uint32_t(h.high64 % span) + 1};
}

// Bit i is the (i % 8)-th bit, most significant first, of byte i / 8.
void set_bit(Bytes& f, uint32_t i) {
  f[i / 8] = char(uint8_t(f[i / 8]) | (0x80u >> (i % 8)));
}
bool bit_set(BytesView f, uint32_t i) {
  return (uint8_t(f[i / 8]) & (0x80u >> (i % 8))) != 0;
}

}  // namespace

void FilterValues::add(std::string_view value) {
  if (value.empty()) {
    unfiltered = true;
  } else if (values.find(value) == values.end()) {
    values.emplace(value);
  }
}

void FilterValues::merge(const FilterValues& other) {
  values.insert(other.values.begin(), other.values.end());
  unfiltered = unfiltered || other.unfiltered;
}

Bytes build_chunk_filter(const FilterValues& v, size_t size_bytes) {
  STRATA_ASSERT(size_bytes >= kMinChunkFilterBytes && size_bytes <= kMaxChunkFilterBytes,
                "chunk filter size out of range");
  if (v.values.empty()) return {};
  Bytes f(size_bytes, '\0');
  const size_t bits = size_bytes * 8;
  for (const std::string& value : v.values) {
    auto [a, b] = value_bits(value, bits);
    set_bit(f, a);
    set_bit(f, b);
  }
  if (v.unfiltered) set_bit(f, 0);
  return f;
}

FilterMatcher::FilterMatcher(std::vector<std::string> values, bool match_unfiltered)
    : values_(std::move(values)), match_unfiltered_(match_unfiltered) {}

bool FilterMatcher::may_match(BytesView filter) const {
  if (filter.empty()) return match_unfiltered_;
  const size_t bits = filter.size() * 8;
  if (bits != bits_for_) {
    bits_.clear();
    for (const std::string& v : values_) {
      if (!v.empty()) bits_.push_back(value_bits(v, bits));
    }
    bits_for_ = bits;
  }
  if (match_unfiltered_ && bit_set(filter, 0)) return true;
  for (auto [a, b] : bits_) {
    if (bit_set(filter, a) && bit_set(filter, b)) return true;
  }
  return false;
}

void encode_filter_section(BytesView filter, Bytes* out) {
  if (filter.empty()) return;
  STRATA_ASSERT(filter.size() <= kMaxChunkFilterBytes, "chunk filter too large");
  out->push_back(char(kFilterTrailerSection));
  out->push_back(char(uint8_t(filter.size())));
  out->append(filter.data(), filter.size());
}

Result<BytesView> chunk_filter_of(BytesView trailer, const std::string& where) {
  if (trailer.empty() || uint8_t(trailer[0]) != kFilterTrailerSection) return BytesView();
  if (trailer.size() < 2) {
    return Error(Errc::corrupt,
                 fmt::format("{}: chunk filter section cut after its first byte", where));
  }
  const size_t n = uint8_t(trailer[1]);
  if (n < kMinChunkFilterBytes || 2 + n > trailer.size()) {
    return Error(Errc::corrupt,
                 fmt::format("{}: chunk filter of {} bytes in a trailer of {} (16..255 bytes, "
                             "within the trailer)",
                             where, n, trailer.size()));
  }
  return trailer.substr(2, n);
}

BytesView skip_filter_section(BytesView trailer) {
  if (trailer.size() < 2 || uint8_t(trailer[0]) != kFilterTrailerSection) return trailer;
  return trailer.substr(std::min(trailer.size(), 2 + size_t(uint8_t(trailer[1]))));
}

}  // namespace strata::log
