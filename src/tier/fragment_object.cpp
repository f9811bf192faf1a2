#include "tier/fragment_object.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/crc32.h"
#include "common/crc32c.h"
#include "common/endian.h"
#include "log/chunk.h"

namespace strata::tier {

namespace {

constexpr size_t kHeaderCrcPos = 60;

Error corrupt(const std::string& where, const std::string& what) {
  return Error(Errc::corrupt, fmt::format("fragment object {}: {}", where, what));
}

// Checks an index against the fragment's bounds; shared by encoder and decoders.
Status check_index(const std::vector<ChunkIndexRecord>& index, uint64_t first_offset,
                   uint64_t next_offset, uint64_t data_size, const std::string& where) {
  if (index.empty()) return corrupt(where, "index has no chunks");
  if (index[0].position != 0) {
    return corrupt(where, fmt::format("first chunk at data position {}, not 0", index[0].position));
  }
  if (index[0].first_offset != first_offset) {
    return corrupt(where, fmt::format("first chunk at offset {} but the fragment starts at {}",
                                      index[0].first_offset, first_offset));
  }
  for (size_t i = 0; i < index.size(); ++i) {
    uint64_t end = i + 1 < index.size() ? index[i + 1].position : data_size;
    uint64_t next = i + 1 < index.size() ? index[i + 1].first_offset : next_offset;
    if (end < index[i].position || end - index[i].position < log::kChunkHeaderSize) {
      return corrupt(where, fmt::format("chunk {} at data position {} is shorter than a chunk "
                                        "header (next position {})",
                                        i, index[i].position, end));
    }
    if (next <= index[i].first_offset) {
      return corrupt(where, fmt::format("chunk offsets not increasing: chunk {} at offset {} "
                                        "followed by {}",
                                        i, index[i].first_offset, next));
    }
  }
  return Status::OK();
}

void put_index_record(uint8_t* p, const ChunkIndexRecord& r) {
  put_be64(p, r.first_offset);
  put_be64(p + 8, uint64_t(r.timestamp_ms));
  put_be64(p + 16, r.position);
}

}  // namespace

Result<FragmentEncoder> FragmentEncoder::make(const FragmentMeta& meta,
                                              std::vector<ChunkIndexRecord> index, uint64_t epoch,
                                              bool verify_chunks) {
  std::string where = fmt::format("[{}, {})", meta.first_offset, meta.next_offset);
  if (index.size() != meta.chunk_count) {
    return corrupt(where, fmt::format("index has {} records but the fragment has {} chunks",
                                      index.size(), meta.chunk_count));
  }
  STRATA_TRY(check_index(index, meta.first_offset, meta.next_offset, meta.size, where));
  FragmentEncoder e;
  e.meta_ = meta;
  e.epoch_ = epoch;
  e.index_ = std::move(index);
  e.verify_ = verify_chunks;
  e.header_.resize(kFragmentHeaderSize);
  uint8_t* p = u8(e.header_.data());
  put_be32(p, kFragmentMagic);
  put_be16(p + 4, kFragmentVersion);
  put_be16(p + 6, 0);
  put_be64(p + 8, meta.first_offset);
  put_be64(p + 16, meta.next_offset);
  put_be64(p + 24, uint64_t(meta.first_ts));
  put_be64(p + 32, uint64_t(meta.last_ts));
  put_be64(p + 40, epoch);
  put_be64(p + 48, meta.size);
  put_be32(p + 56, meta.chunk_count);
  put_be32(p + kHeaderCrcPos, crc32c::value(p, kHeaderCrcPos));
  e.crc_ = crc32c::value(e.header_);
  return e;
}

Status FragmentEncoder::verify(BytesView piece) {
  std::string where = fmt::format("[{}, {})", meta_.first_offset, meta_.next_offset);
  while (!piece.empty()) {
    const ChunkIndexRecord& rec = index_[chunk_];
    uint64_t chunk_size =
        (chunk_ + 1 < index_.size() ? index_[chunk_ + 1].position : meta_.size) - rec.position;
    if (in_chunk_ < log::kChunkHeaderSize) {
      size_t take = std::min<size_t>(log::kChunkHeaderSize - in_chunk_, piece.size());
      chunk_header_.append(piece.data(), take);
      piece.remove_prefix(take);
      in_chunk_ += take;
      if (in_chunk_ < log::kChunkHeaderSize) continue;
      std::string at =
          fmt::format("fragment {} chunk {} (data position {})", where, chunk_, rec.position);
      auto h = log::decode_chunk_header(chunk_header_, at);
      if (!h.ok()) return Error(h.error());
      uint64_t next =
          chunk_ + 1 < index_.size() ? index_[chunk_ + 1].first_offset : meta_.next_offset;
      if (h->first_offset != rec.first_offset || h->timestamp_ms != rec.timestamp_ms ||
          h->total_size() != chunk_size || h->next_offset() != next) {
        return Error(
            Errc::corrupt,
            fmt::format("{}: chunk header says offsets [{}, {}), timestamp {}, {} bytes; "
                        "the fragment index expects [{}, {}), timestamp {}, {} bytes",
                        at, h->first_offset, h->next_offset(), h->timestamp_ms, h->total_size(),
                        rec.first_offset, next, rec.timestamp_ms, chunk_size));
      }
      decoded_header_ = *h;
      body_crc_ = 0;
      wire_crc_ = 0;
    } else {
      size_t take = size_t(std::min<uint64_t>(chunk_size - in_chunk_, piece.size()));
      body_crc_ = log::extend_body_crc(decoded_header_, body_crc_, piece.data(), take);
      if (decoded_header_.version == log::kChunkVersionCrc32c) {
        // The part of this piece inside the data section (not the trailer).
        const uint64_t data_end = log::kChunkHeaderSize + uint64_t(decoded_header_.data_len);
        if (in_chunk_ < data_end) {
          const size_t n = size_t(std::min<uint64_t>(take, data_end - in_chunk_));
          wire_crc_ = crc32_zlib(piece.data(), n, wire_crc_);
        }
      }
      piece.remove_prefix(take);
      in_chunk_ += take;
    }
    if (in_chunk_ == chunk_size) {
      if (body_crc_ != decoded_header_.data_crc) {
        return Error(
            Errc::corrupt,
            fmt::format("fragment {} chunk {} at offset {}: chunk data CRC mismatch "
                        "(header {:#010x}, computed {:#010x})",
                        where, chunk_, rec.first_offset, decoded_header_.data_crc, body_crc_));
      }
      if (decoded_header_.version == log::kChunkVersionCrc32c &&
          wire_crc_ != decoded_header_.wire_crc) {
        return Error(
            Errc::corrupt,
            fmt::format("fragment {} chunk {} at offset {}: chunk wire CRC32 mismatch "
                        "(header {:#010x}, computed {:#010x})",
                        where, chunk_, rec.first_offset, decoded_header_.wire_crc, wire_crc_));
      }
      chunk_ += 1;
      in_chunk_ = 0;
      chunk_header_.clear();
    }
  }
  return Status::OK();
}

Status FragmentEncoder::add_body(BytesView piece) {
  if (failed_) return Error(Errc::invalid_argument, "fragment encoder used after an error");
  if (piece.size() > meta_.size - fed_) {
    failed_ = true;
    return Error(
        Errc::corrupt,
        fmt::format("fragment [{}, {}): {} body bytes fed but the fragment has {}",
                    meta_.first_offset, meta_.next_offset, fed_ + piece.size(), meta_.size));
  }
  if (verify_) {
    Status s = verify(piece);
    if (!s.ok()) {
      failed_ = true;
      return s;
    }
  }
  crc_ = crc32c::extend(crc_, piece.data(), piece.size());
  fed_ += piece.size();
  return Status::OK();
}

Result<Bytes> FragmentEncoder::finish() {
  if (failed_) return Error(Errc::invalid_argument, "fragment encoder used after an error");
  if (fed_ != meta_.size) {
    return Error(Errc::corrupt,
                 fmt::format("fragment [{}, {}): finished after {} of {} body bytes",
                             meta_.first_offset, meta_.next_offset, fed_, meta_.size));
  }
  Bytes out;
  out.resize(index_.size() * kFragmentIndexRecordSize + kFragmentTrailerSize);
  uint8_t* p = u8(out.data());
  for (size_t i = 0; i < index_.size(); ++i) {
    put_index_record(p + i * kFragmentIndexRecordSize, index_[i]);
  }
  size_t index_bytes = index_.size() * kFragmentIndexRecordSize;
  uint8_t* t = p + index_bytes;
  put_be32(t, meta_.chunk_count);
  put_be32(t + 4, crc32c::value(p, index_bytes));
  put_be32(t + 8, kFragmentTrailerMagic);
  uint32_t crc = crc32c::extend(crc_, p, index_bytes + 12);
  put_be32(t + 12, crc);
  return out;
}

Result<Bytes> encode_fragment(const FragmentMeta& meta, const std::vector<ChunkIndexRecord>& index,
                              uint64_t epoch, BytesView body) {
  STRATA_ASSIGN_OR_RETURN(auto enc, FragmentEncoder::make(meta, index, epoch));
  Bytes out = enc.header();
  STRATA_TRY(enc.add_body(body));
  out.append(body.data(), body.size());
  STRATA_ASSIGN_OR_RETURN(Bytes tail, enc.finish());
  out += tail;
  return out;
}

Result<FragmentHeader> decode_fragment_header(BytesView in, const std::string& where) {
  if (in.size() < kFragmentHeaderSize) {
    return corrupt(
        where, fmt::format("header truncated ({} of {} bytes)", in.size(), kFragmentHeaderSize));
  }
  const uint8_t* p = u8(in.data());
  if (get_be32(p) != kFragmentMagic) {
    return corrupt(where, fmt::format("wrong magic {:#010x} (expected {:#010x} \"STFG\")",
                                      get_be32(p), kFragmentMagic));
  }
  uint32_t want = get_be32(p + kHeaderCrcPos);
  uint32_t got = crc32c::value(p, kHeaderCrcPos);
  if (want != got) {
    return corrupt(
        where, fmt::format("header CRC mismatch (stored {:#010x}, computed {:#010x})", want, got));
  }
  if (get_be16(p + 4) != kFragmentVersion) {
    return Error(Errc::unsupported_version,
                 fmt::format("fragment object {}: version {} (this build reads {})", where,
                             get_be16(p + 4), kFragmentVersion));
  }
  if (get_be16(p + 6) != 0) return corrupt(where, "reserved header flags are not zero");
  FragmentHeader h;
  h.meta.first_offset = get_be64(p + 8);
  h.meta.next_offset = get_be64(p + 16);
  h.meta.first_ts = int64_t(get_be64(p + 24));
  h.meta.last_ts = int64_t(get_be64(p + 32));
  h.epoch = get_be64(p + 40);
  h.meta.size = get_be64(p + 48);
  h.meta.chunk_count = get_be32(p + 56);
  if (h.meta.next_offset <= h.meta.first_offset) {
    return corrupt(where, fmt::format("next offset {} not above first offset {}",
                                      h.meta.next_offset, h.meta.first_offset));
  }
  if (h.meta.chunk_count == 0) return corrupt(where, "zero chunks");
  // Every chunk is at least a chunk header; this also bounds the index size
  // computed from the count below.
  if (h.meta.size / log::kChunkHeaderSize < h.meta.chunk_count) {
    return corrupt(where, fmt::format("{} chunks cannot fit in {} data bytes", h.meta.chunk_count,
                                      h.meta.size));
  }
  return h;
}

Result<std::vector<ChunkIndexRecord>> decode_fragment_index(BytesView tail,
                                                            const FragmentExpectation& expect,
                                                            const std::string& where) {
  if (tail.size() < kFragmentTrailerSize) {
    return corrupt(where, fmt::format("index tail truncated: {} bytes, trailer alone is {}",
                                      tail.size(), kFragmentTrailerSize));
  }
  size_t index_bytes = tail.size() - kFragmentTrailerSize;
  if (index_bytes % kFragmentIndexRecordSize != 0) {
    return corrupt(where, fmt::format("index of {} bytes is not a whole number of {}-byte "
                                      "records (truncated entry)",
                                      index_bytes, kFragmentIndexRecordSize));
  }
  const uint8_t* p = u8(tail.data());
  const uint8_t* t = p + index_bytes;
  uint32_t count = get_be32(t);
  if (get_be32(t + 8) != kFragmentTrailerMagic) {
    return corrupt(where, fmt::format("wrong trailer magic {:#010x} (expected {:#010x} \"STFE\")",
                                      get_be32(t + 8), kFragmentTrailerMagic));
  }
  if (uint64_t(count) * kFragmentIndexRecordSize != index_bytes) {
    return corrupt(where, fmt::format("trailer says {} chunks but the index holds {} bytes", count,
                                      index_bytes));
  }
  uint32_t want = get_be32(t + 4);
  uint32_t got = crc32c::value(p, index_bytes);
  if (want != got) {
    return corrupt(
        where, fmt::format("index CRC mismatch (stored {:#010x}, computed {:#010x})", want, got));
  }
  std::vector<ChunkIndexRecord> index(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* r = p + size_t(i) * kFragmentIndexRecordSize;
    index[i] = ChunkIndexRecord{get_be64(r), int64_t(get_be64(r + 8)), get_be64(r + 16)};
  }
  STRATA_TRY(check_index(index, expect.first_offset, expect.next_offset, expect.data_size, where));
  return index;
}

Result<DecodedFragment> decode_fragment(BytesView object, const std::string& where,
                                        bool verify_chunks) {
  STRATA_ASSIGN_OR_RETURN(FragmentHeader h, decode_fragment_header(object, where));
  // Checked first so the size arithmetic below cannot wrap around.
  if (h.meta.size > object.size()) {
    return corrupt(where, fmt::format("header says {} data bytes but the object is {} bytes",
                                      h.meta.size, object.size()));
  }
  uint64_t expected = fragment_object_size(h.meta.size, h.meta.chunk_count);
  if (object.size() != expected) {
    return corrupt(where, fmt::format("object is {} bytes but its header implies {} ({} data "
                                      "bytes, {} chunks)",
                                      object.size(), expected, h.meta.size, h.meta.chunk_count));
  }
  size_t crc_pos = object.size() - 4;
  uint32_t want = get_be32(u8(object.data()) + crc_pos);
  uint32_t got = crc32c::value(object.data(), crc_pos);
  if (want != got) {
    return corrupt(
        where, fmt::format("object CRC mismatch (stored {:#010x}, computed {:#010x})", want, got));
  }
  BytesView tail = object.substr(size_t(fragment_index_position(h.meta.size)));
  FragmentExpectation ex{h.meta.first_offset, h.meta.next_offset, h.meta.size};
  STRATA_ASSIGN_OR_RETURN(auto index, decode_fragment_index(tail, ex, where));
  DecodedFragment out;
  out.header = h;
  out.data = object.substr(kFragmentHeaderSize, size_t(h.meta.size));
  if (verify_chunks) {
    STRATA_ASSIGN_OR_RETURN(auto enc, FragmentEncoder::make(h.meta, index, h.epoch, true));
    Status s = enc.add_body(out.data);
    if (!s.ok()) return Error(s.error()).with_context("fragment object " + where);
  }
  if (!index.empty()) {
    int64_t max_ts = index[0].timestamp_ms;
    for (auto& r : index) max_ts = std::max(max_ts, r.timestamp_ms);
    if (index[0].timestamp_ms != h.meta.first_ts || max_ts != h.meta.last_ts) {
      return corrupt(where,
                     fmt::format("header timestamps [{}, {}] disagree with the index "
                                 "[{}, {}]",
                                 h.meta.first_ts, h.meta.last_ts, index[0].timestamp_ms, max_ts));
    }
  }
  out.index = std::move(index);
  return out;
}

std::optional<size_t> find_chunk_by_offset(const std::vector<ChunkIndexRecord>& index,
                                           uint64_t offset) {
  auto it =
      std::upper_bound(index.begin(), index.end(), offset,
                       [](uint64_t o, const ChunkIndexRecord& r) { return o < r.first_offset; });
  if (it == index.begin()) return std::nullopt;
  return size_t(it - index.begin()) - 1;
}

std::optional<size_t> find_chunk_by_timestamp(const std::vector<ChunkIndexRecord>& index,
                                              int64_t ts) {
  auto it = std::partition_point(index.begin(), index.end(),
                                 [ts](const ChunkIndexRecord& r) { return r.timestamp_ms < ts; });
  if (it == index.end()) return std::nullopt;
  return size_t(it - index.begin());
}

}  // namespace strata::tier
