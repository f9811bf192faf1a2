#include "log/entries.h"

#include <fmt/format.h>

#include "log/sub_batch_codec.h"

namespace strata::log {

std::string compression_name(uint8_t code) {
  switch (code) {
    case 0:
      return "none";
    case 1:
      return "gzip";
    case 2:
      return "snappy";
    case 3:
      return "lz4";
    case 4:
      return "zstd";
    case 7:
      return "user-defined compression";
    default:
      return fmt::format("unknown compression {}", code);
  }
}

std::string compressed_sub_batch_reason(const Entry& e) {
  return fmt::format(
      "sub-batch of {} records at data byte {} is compressed with {}; its records "
      "can only be read as the whole entry",
      e.num_records, e.position, compression_name(e.compression));
}

Error EntryProblem::error(const std::string& where) const {
  return Error(code, fmt::format("{}: {}", where, reason));
}

namespace {

EntryProblem corrupt(size_t pos, std::string reason) {
  return EntryProblem{Errc::corrupt, pos, std::move(reason)};
}

// An uncompressed sub-batch's body must be exactly `nrec` simple entries.
std::optional<EntryProblem> check_inner(const Entry& e) {
  const size_t base = e.position + kSubBatchHeaderSize;
  size_t in = 0;
  uint32_t n = 0;
  while (in < e.body.size()) {
    if (e.body.size() - in < kEntryHeaderSize) {
      return corrupt(base + in, fmt::format("sub-batch at data byte {}: inner record header "
                                            "truncated at data byte {}",
                                            e.position, base + in));
    }
    uint32_t eh = get_be32(u8(e.body.data() + in));
    if (eh & kSubBatchFlag) {
      return corrupt(base + in, fmt::format("sub-batch at data byte {}: inner entry at data byte "
                                            "{} is not a simple entry",
                                            e.position, base + in));
    }
    if (eh > e.body.size() - in - kEntryHeaderSize) {
      return corrupt(base + in, fmt::format("sub-batch at data byte {}: inner record of {} bytes "
                                            "at data byte {} overruns the sub-batch",
                                            e.position, eh, base + in));
    }
    in += kEntryHeaderSize + eh;
    ++n;
  }
  if (n != e.num_records) {
    return corrupt(e.position, fmt::format("sub-batch at data byte {} holds {} records, its "
                                           "header says {}",
                                           e.position, n, e.num_records));
  }
  return std::nullopt;
}

}  // namespace

std::optional<EntryProblem> read_entry(BytesView data, size_t pos, Entry* out) {
  proto::OsirisEntry oe;
  switch (proto::frame_osiris_entry(data.substr(pos), &oe)) {
    case proto::EntryFraming::ok:
      break;
    case proto::EntryFraming::header_truncated:
      return corrupt(pos, fmt::format("{} header truncated at data byte {}",
                                      oe.sub_batch ? "sub-batch" : "entry", pos));
    case proto::EntryFraming::empty_sub_batch:
      return corrupt(pos, fmt::format("sub-batch at data byte {} holds 0 records", pos));
    case proto::EntryFraming::overrun:
      return corrupt(pos, fmt::format("{} of {} bytes at data byte {} overruns the chunk",
                                      oe.sub_batch ? "sub-batch" : "entry", oe.body_len, pos));
  }
  Entry e;
  e.position = pos;
  e.body = oe.body;
  if (oe.sub_batch) {
    e.kind = EntryKind::sub_batch;
    e.compression = uint8_t(oe.compression);
    e.num_records = oe.num_records;
    e.uncompressed_len = oe.uncompressed_len;
    // Uncompressed, the body must be exactly nrec simple entries.
    if (e.compression == kCompressionNone) {
      if (e.uncompressed_len != oe.body_len) {
        return corrupt(pos, fmt::format("uncompressed sub-batch at data byte {}: uncompressed "
                                        "length {} differs from its length {}",
                                        pos, e.uncompressed_len, oe.body_len));
      }
      if (auto problem = check_inner(e)) return problem;
    }
  }
  *out = e;
  return std::nullopt;
}

std::optional<EntryProblem> decode_sub_batch(const Entry& e, std::deque<std::string>* decoded,
                                             BytesView* body) {
  auto plain = decompress_sub_batch(e.compression, e.body, e.uncompressed_len);
  if (!plain.ok()) {
    return EntryProblem{Errc::unsupported, e.position,
                        fmt::format("sub-batch of {} records at data byte {}: {}", e.num_records,
                                    e.position, plain.error().message)};
  }
  decoded->push_back(std::move(*plain));
  Entry inner = e;
  inner.body = decoded->back();
  // The client's batch, not the stored bytes (their CRC held), is at fault
  // if the decompressed records are not nrec simple entries.
  if (auto problem = check_inner(inner)) {
    return EntryProblem{
        Errc::unsupported, e.position,
        fmt::format("decompressed {} {}", compression_name(e.compression), problem->reason)};
  }
  *body = decoded->back();
  return std::nullopt;
}

std::optional<EntryProblem> count_entries(BytesView data, EntryCounts* counts) {
  *counts = {};
  size_t pos = 0;
  while (pos < data.size()) {
    Entry e;
    if (auto p = read_entry(data, pos, &e)) return p;
    counts->entries += 1;
    counts->records += e.num_records;
    pos += e.size();
  }
  return std::nullopt;
}

bool only_simple_entries(BytesView data) {
  size_t pos = 0;
  while (pos < data.size()) {
    proto::OsirisEntry e;
    if (proto::frame_osiris_entry(data.substr(pos), &e) != proto::EntryFraming::ok || e.sub_batch) {
      return false;
    }
    pos += e.encoded.size();
  }
  return true;
}

Status check_counts(const ChunkHeader& h, const EntryCounts& n, const std::string& where) {
  if (n.entries != h.num_entries || n.records != h.num_records) {
    return Error(Errc::corrupt,
                 fmt::format("{}: chunk holds {} entries / {} records, header says {} entries / "
                             "{} records",
                             where, n.entries, n.records, h.num_entries, h.num_records));
  }
  return Status::OK();
}

Status records_status(const ChunkHeader& h, const std::optional<EntryProblem>& problem,
                      const EntryCounts& n, const std::string& where) {
  if (problem && problem->code == Errc::unsupported) {
    return Error(Errc::unsupported, fmt::format("{}: offset {}: {}", where,
                                                h.first_offset + n.records, problem->reason));
  }
  if (problem) return problem->error(where);
  return check_counts(h, n, where);
}

Result<std::vector<Entry>> parse_entries(const ChunkHeader& h, BytesView data,
                                         const std::string& where) {
  if (data.size() != h.data_len) {
    return Error(Errc::corrupt, fmt::format("{}: chunk data is {} bytes, header says {}", where,
                                            data.size(), h.data_len));
  }
  std::vector<Entry> out;
  out.reserve(h.num_entries);
  EntryCounts n;
  size_t pos = 0;
  while (pos < data.size()) {
    Entry e;
    if (auto p = read_entry(data, pos, &e)) return p->error(where);
    n.entries += 1;
    n.records += e.num_records;
    pos += e.size();
    out.push_back(e);
  }
  STRATA_TRY(check_counts(h, n, where));
  return out;
}

}  // namespace strata::log
