#include "proto/osiris_chunk.h"

#include <fmt/format.h>

#include <cstring>

#include "common/endian.h"

namespace strata::proto {

void encode_osiris_header(const OsirisChunkHeader& h, uint8_t out[kOsirisChunkHeaderSize]) {
  out[0] = uint8_t((kOsirisMagic << 4) | kOsirisVersion);
  out[1] = h.chunk_type;
  put_be16(out + 2, h.num_entries);
  put_be32(out + 4, h.num_records);
  put_be64(out + 8, uint64_t(h.timestamp_ms));
  put_be64(out + 16, h.epoch);
  put_be64(out + 24, h.chunk_id);
  put_be32(out + 32, h.crc);
  put_be32(out + 36, h.data_len);
  put_be32(out + 40, h.trailer_len);
  out[44] = h.bloom_size;
  out[45] = out[46] = out[47] = 0;
}

void encode_osiris_header(const OsirisChunkHeader& h, Bytes* out) {
  uint8_t buf[kOsirisChunkHeaderSize];
  encode_osiris_header(h, buf);
  out->append(reinterpret_cast<const char*>(buf), sizeof buf);
}

Result<OsirisChunkHeader> decode_osiris_header(BytesView in) {
  if (in.size() < kOsirisChunkHeaderSize) {
    return make_error(Errc::corrupt, fmt::format("osiris chunk header: {} bytes, needs {}",
                                                 in.size(), kOsirisChunkHeaderSize));
  }
  const uint8_t* p = strata::u8(in.data());
  if ((p[0] >> 4) != kOsirisMagic || (p[0] & 0x0f) != kOsirisVersion) {
    return make_error(
        Errc::corrupt,
        fmt::format("osiris chunk header: magic/version byte 0x{:02x}, expected 0x{:02x}", p[0],
                    (kOsirisMagic << 4) | kOsirisVersion));
  }
  OsirisChunkHeader h;
  h.chunk_type = p[1];
  h.num_entries = get_be16(p + 2);
  h.num_records = get_be32(p + 4);
  h.timestamp_ms = int64_t(get_be64(p + 8));
  h.epoch = get_be64(p + 16);
  h.chunk_id = get_be64(p + 24);
  h.crc = get_be32(p + 32);
  h.data_len = get_be32(p + 36);
  h.trailer_len = get_be32(p + 40);
  h.bloom_size = p[44];
  return h;
}

EntryFraming frame_osiris_entry(BytesView in, OsirisEntry* out) {
  OsirisEntry e;
  const uint8_t* p = strata::u8(in.data());
  e.sub_batch = !in.empty() && (p[0] & 0x80) != 0;
  const size_t header = e.sub_batch ? kSubBatchEntryHeaderSize : kSimpleEntryHeaderSize;
  if (in.size() < header) {
    *out = e;
    return EntryFraming::header_truncated;
  }
  if (e.sub_batch) {
    e.compression = Compression((p[0] >> 4) & 0x07);
    e.num_records = get_be16(p + 1);
    e.uncompressed_len = get_be32(p + 3);
    e.body_len = get_be32(p + 7);
  } else {
    e.body_len = get_be32(p) & kMaxSimpleEntryLen;
  }
  *out = e;
  if (e.sub_batch && e.num_records == 0) return EntryFraming::empty_sub_batch;
  if (in.size() - header < e.body_len) return EntryFraming::overrun;
  out->body = in.substr(header, e.body_len);
  out->encoded = in.substr(0, header + size_t(e.body_len));
  return EntryFraming::ok;
}

Result<OsirisEntry> parse_osiris_entry(BytesView in) {
  if (in.empty()) return make_error(Errc::corrupt, "osiris entry: empty input");
  OsirisEntry e;
  const EntryFraming f = frame_osiris_entry(in, &e);
  const char* kind = e.sub_batch ? "osiris sub-batch entry" : "osiris simple entry";
  const size_t header = e.sub_batch ? kSubBatchEntryHeaderSize : kSimpleEntryHeaderSize;
  switch (f) {
    case EntryFraming::ok:
      return e;
    case EntryFraming::header_truncated:
      return make_error(Errc::corrupt,
                        fmt::format("{}: header truncated ({} bytes)", kind, in.size()));
    case EntryFraming::overrun:
      return make_error(Errc::corrupt, fmt::format("{}: length {} but {} bytes follow", kind,
                                                   e.body_len, in.size() - header));
    case EntryFraming::empty_sub_batch:
      return make_error(Errc::corrupt, fmt::format("{}: holds 0 records", kind));
  }
  return make_error(Errc::internal, "osiris entry: unknown framing outcome");
}

void append_simple_entry(Bytes* out, BytesView body) {
  uint8_t h[kSimpleEntryHeaderSize];
  put_be32(h, uint32_t(body.size()) & kMaxSimpleEntryLen);
  out->append(reinterpret_cast<const char*>(h), sizeof h);
  out->append(body.data(), body.size());
}

void append_sub_batch_entry(Bytes* out, Compression c, uint16_t num_records,
                            uint32_t uncompressed_len, BytesView body) {
  uint8_t h[kSubBatchEntryHeaderSize];
  h[0] = uint8_t(0x80 | ((uint8_t(c) & 0x07) << 4));
  put_be16(h + 1, num_records);
  put_be32(h + 3, uncompressed_len);
  put_be32(h + 7, uint32_t(body.size()));
  out->append(reinterpret_cast<const char*>(h), sizeof h);
  out->append(body.data(), body.size());
}

void append_sub_batch_record(Bytes* out, BytesView record) {
  uint8_t h[4];
  put_be32(h, uint32_t(record.size()));
  out->append(reinterpret_cast<const char*>(h), sizeof h);
  out->append(record.data(), record.size());
}

bool OsirisEntryReader::next(OsirisEntry* e) {
  if (failed_ || pos_ >= data_.size()) return false;
  auto r = parse_osiris_entry(data_.substr(pos_));
  if (!r.ok()) {
    failed_ = true;
    err_ = std::move(r).error().with_context(fmt::format("at byte {} of the entries", pos_));
    return false;
  }
  *e = *r;
  pos_ += e->encoded.size();
  return true;
}

}  // namespace strata::proto
