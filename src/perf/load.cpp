#include "perf/load.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/crc32.h"
#include "common/endian.h"

namespace strata::perf {

using namespace strata::proto;

Producer::Producer(asio::io_context& io, RunStats& stats, const PerfOptions& o, int index,
                   uint64_t run_id, uint64_t quota, double rate)
    : conn_(io),
      timer_(io),
      stats_(stats),
      o_(o),
      index_(index),
      run_id_(run_id),
      quota_(quota),
      rate_(rate) {}

Status Producer::setup() {
  ConnectOptions c = o_.connect;
  c.connection_name = fmt::format("strata-perf-producer-{}", index_);
  STRATA_TRY(conn_.open(c));
  DeclarePublisherRequest d;
  d.publisher_id = publisher_id_;
  d.stream = o_.stream;
  STRATA_ASSIGN_OR_RETURN(auto r, conn_.call<DeclarePublisherResponse>(d));
  if (r.code != ResponseCode::ok) {
    return make_error(Errc::invalid_argument,
                      fmt::format("producer {}: declare publisher on stream {}: {}", index_,
                                  o_.stream, response_code_name(r.code)));
  }
  // Entries per frame: the batch size, unless the frame limit says fewer.
  uint64_t entry_bytes = o_.sub_entry_size ? kSubBatchEntryHeaderSize +
                                                 uint64_t(o_.sub_entry_size) * (4 + o_.message_size)
                                           : kSimpleEntryHeaderSize + uint64_t(o_.message_size);
  uint64_t per_entry = 8 + entry_bytes;
  uint64_t room = conn_.frame_max() > 64 ? conn_.frame_max() - 64 : 0;
  max_entries_per_frame_ = uint32_t(std::clamp<uint64_t>(
      std::min<uint64_t>(o_.batch_size, room / per_entry), 1, o_.batch_size ? o_.batch_size : 1));
  uint64_t window_entries = o_.confirm_window / msgs_per_entry() + max_entries_per_frame_ + 1;
  sent_ns_.assign(window_entries, 0);
  return {};
}

void Producer::start(uint64_t t0_ns) {
  t0_ns_ = t0_ns;
  conn_.start([this](const ServerFrame& f) { on_frame(f); },
              [this](const Error& e) {
                stats_.errors.push_back(fmt::format("producer {}: {}", index_, e.message));
                stopped_ = true;
                in_flight_ = 0;
              });
  pump();
}

void Producer::pump() {
  const uint32_t per_entry = msgs_per_entry();
  while (!finished_publishing()) {
    uint32_t entries = max_entries_per_frame_;
    if (quota_) {
      uint64_t left = quota_ - sent_msgs_;
      entries = uint32_t(std::min<uint64_t>(entries, (left + per_entry - 1) / per_entry));
    }
    uint64_t msgs = uint64_t(entries) * per_entry;
    // The confirm window; a batch larger than the window goes alone.
    if (in_flight_ > 0 && in_flight_ + msgs > o_.confirm_window) break;
    if (rate_ > 0) {
      uint64_t now = now_ns();
      double allowed = rate_ * double(now - t0_ns_) / 1e9;
      if (double(sent_msgs_ + msgs) > allowed) {
        if (!timer_armed_) {
          timer_armed_ = true;
          double at_s = double(sent_msgs_ + msgs) / rate_;
          timer_.expires_at(Clock::time_point(std::chrono::nanoseconds(t0_ns_)) +
                            std::chrono::nanoseconds(uint64_t(at_s * 1e9)));
          timer_.async_wait([this](asio::error_code ec) {
            timer_armed_ = false;
            if (!ec) pump();
          });
        }
        break;
      }
    }
    publish_batch(entries);
  }
  conn_.flush();
}

void Producer::publish_batch(uint32_t entries) {
  Bytes* out = conn_.out();
  const uint32_t per_entry = msgs_per_entry();
  uint64_t now = now_ns();
  const bool filtered = o_.filter_values > 0;
  size_t start = begin_frame(out, kPublish, filtered ? 2 : 1);
  WireWriter w(out);
  w.u8(publisher_id_);
  w.u32(entries);
  const std::string value =
      filtered ? fmt::format("v{}", frames_published_++ % o_.filter_values) : std::string();
  uint8_t head[kBodyHeader];
  put_be64(head, now);
  put_be64(head + 8, run_id_);
  auto body = [&] {
    // Bodies shorter than the header carry no timestamp (all filler).
    if (o_.message_size >= kBodyHeader) {
      out->append(reinterpret_cast<const char*>(head), kBodyHeader);
      out->append(o_.message_size - kBodyHeader, 'x');
    } else {
      out->append(o_.message_size, 'x');
    }
  };
  for (uint32_t i = 0; i < entries; ++i) {
    uint64_t id = next_id_++;
    sent_ns_[id % sent_ns_.size()] = now;
    w.u64(id);
    if (filtered) w.string(value);
    if (o_.sub_entry_size == 0) {
      w.u32(o_.message_size);
      body();
    } else {
      uint32_t len = per_entry * (4 + o_.message_size);
      w.u8(0x80);  // sub-batch, no compression
      w.u16(uint16_t(per_entry));
      w.u32(len);  // uncompressed length
      w.u32(len);
      for (uint32_t k = 0; k < per_entry; ++k) {
        w.u32(o_.message_size);
        body();
      }
    }
  }
  finish_frame(out, start);
  uint64_t msgs = uint64_t(entries) * per_entry;
  sent_msgs_ += msgs;
  in_flight_ += msgs;
  stats_.published += msgs;
  stats_.published_bytes += msgs * o_.message_size;
}

void Producer::on_frame(const ServerFrame& f) {
  const uint32_t per_entry = msgs_per_entry();
  if (auto* c = std::get_if<PublishConfirm>(&f)) {
    uint64_t now = now_ns();
    for (uint64_t id : c->publishing_ids) {
      uint64_t lat = now - sent_ns_[id % sent_ns_.size()];
      stats_.confirm_latency_ns.record_n(lat, per_entry);
      stats_.interval_confirm_ns.record_n(lat, per_entry);
    }
    uint64_t n = uint64_t(c->publishing_ids.size()) * per_entry;
    stats_.confirmed += n;
    in_flight_ -= std::min(in_flight_, n);
    stats_.last_confirm_ns = now;
    pump();
  } else if (auto* e = std::get_if<PublishError>(&f)) {
    uint64_t n = uint64_t(e->errors.size()) * per_entry;
    stats_.publish_errors += n;
    in_flight_ -= std::min(in_flight_, n);
    if (!e->errors.empty() && stats_.errors.size() < 20) {
      stats_.errors.push_back(fmt::format("producer {}: publish error {} for id {}", index_,
                                          response_code_name(e->errors[0].code),
                                          e->errors[0].publishing_id));
    }
    pump();
  } else if (std::holds_alternative<HeartbeatFrame>(f)) {
    encode(HeartbeatFrame{}, conn_.out());
    conn_.flush();
  } else if (auto* m = std::get_if<MetadataUpdate>(&f)) {
    stats_.errors.push_back(fmt::format("producer {}: stream {} went away ({})", index_, m->stream,
                                        response_code_name(m->code)));
    stopped_ = true;
    in_flight_ = 0;
  } else if (auto* cl = std::get_if<CloseRequest>(&f)) {
    stats_.errors.push_back(
        fmt::format("producer {}: server closed the connection: {}", index_, cl->reason));
    stopped_ = true;
    in_flight_ = 0;
  }
}

Consumer::Consumer(asio::io_context& io, RunStats& stats, const PerfOptions& o, int index,
                   uint64_t run_id)
    : conn_(io), stats_(stats), o_(o), index_(index), run_id_(run_id) {}

Status Consumer::setup() {
  ConnectOptions c = o_.connect;
  c.connection_name = fmt::format("strata-perf-consumer-{}", index_);
  return conn_.open(c);
}

void Consumer::start() {
  conn_.start([this](const ServerFrame& f) { on_frame(f); },
              [this](const Error& e) {
                stats_.errors.push_back(fmt::format("consumer {}: {}", index_, e.message));
              });
  // Subscribed asynchronously: a server may deliver right after answering.
  SubscribeRequest s;
  s.correlation_id = 1;
  s.subscription_id = 0;
  s.stream = o_.stream;
  s.offset = o_.offset;
  s.credit = o_.initial_credit;
  if (!o_.filter.empty()) s.properties = {{"filter.0", o_.filter}};
  encode(s, conn_.out());
  conn_.flush();
}

void Consumer::on_frame(const ServerFrame& f) {
  if (auto* d = std::get_if<DeliverFrame>(&f)) {
    on_chunk(d->chunk);
    // Credit flow: one more chunk for each chunk received.
    encode(CreditRequest{.subscription_id = 0, .credit = 1}, conn_.out());
    conn_.flush();
  } else if (auto* r = std::get_if<SubscribeResponse>(&f)) {
    if (r->code == ResponseCode::ok) {
      subscribed_ = true;
    } else {
      stats_.errors.push_back(fmt::format("consumer {}: subscribe to {}: {}", index_, o_.stream,
                                          response_code_name(r->code)));
    }
  } else if (auto* c = std::get_if<CreditResponse>(&f)) {
    stats_.errors.push_back(
        fmt::format("consumer {}: credit refused: {}", index_, response_code_name(c->code)));
  } else if (std::holds_alternative<HeartbeatFrame>(f)) {
    encode(HeartbeatFrame{}, conn_.out());
    conn_.flush();
  } else if (auto* m = std::get_if<MetadataUpdate>(&f)) {
    stats_.errors.push_back(fmt::format("consumer {}: stream {} went away ({})", index_, m->stream,
                                        response_code_name(m->code)));
  } else if (auto* cl = std::get_if<CloseRequest>(&f)) {
    stats_.errors.push_back(
        fmt::format("consumer {}: server closed the connection: {}", index_, cl->reason));
  }
}

void Consumer::on_chunk(BytesView chunk) {
  auto h = decode_osiris_header(chunk);
  if (!h.ok()) {
    stats_.errors.push_back(fmt::format("consumer {}: {}", index_, h.error().message));
    return;
  }
  stats_.chunks++;
  stats_.chunk_bytes += chunk.size();
  // The data follows the 48-byte header whatever its bloom size says:
  // RabbitMQ 3.13 sends a chunk's stored header (bloom size included) but
  // skips its filter bytes (osiris_log, select_amount_to_send).
  BytesView data = chunk.substr(kOsirisChunkHeaderSize, h->data_len);
  // zlib's CRC32 through ISA-L (common/crc32.h): with zlib's own routine
  // the check took 40% of a consumer's CPU and capped what it can measure.
  uint32_t crc = crc32_zlib(data);
  if (crc != h->crc) {
    stats_.crc_errors++;
    if (stats_.errors.size() < 20) {
      stats_.errors.push_back(
          fmt::format("consumer {}: chunk {} CRC 0x{:08x}, header says 0x{:08x}", index_,
                      h->chunk_id, crc, h->crc));
    }
  }
  if (h->chunk_type != uint8_t(OsirisChunkType::user)) return;
  // Chunks follow each other without holes: each starts where the last
  // ended.
  // A filtered consumer is sent only some chunks: holes are the point.
  if (have_next_ && h->chunk_id != next_offset_ && o_.filter.empty()) {
    stats_.gaps++;
    if (stats_.errors.size() < 20) {
      stats_.errors.push_back(fmt::format("consumer {}: chunk at offset {}, expected {}", index_,
                                          h->chunk_id, next_offset_));
    }
  }
  have_next_ = true;
  next_offset_ = h->chunk_id + h->num_records;

  uint64_t now = now_ns();
  uint64_t offset = h->chunk_id;
  OsirisEntryReader entries(data);
  OsirisEntry e;
  while (entries.next(&e)) {
    if (!e.sub_batch) {
      on_record(offset++, e.body, now);
      continue;
    }
    if (e.compression != Compression::none) {
      // Not ours (strata perf never compresses): count without reading.
      stats_.consumed_all += e.num_records;
      consumed_any_ += e.num_records;
      offset += e.num_records;
      continue;
    }
    BytesView rest = e.body;
    for (uint16_t i = 0; i < e.num_records; ++i) {
      if (rest.size() < 4) break;
      uint32_t len = get_be32(strata::u8(rest.data()));
      if (rest.size() - 4 < len) break;
      on_record(offset++, rest.substr(4, len), now);
      rest = rest.substr(4 + len);
    }
  }
  if (entries.failed()) {
    stats_.errors.push_back(
        fmt::format("consumer {}: chunk {}: {}", index_, h->chunk_id, entries.error().message));
  }
}

void Consumer::on_record(uint64_t offset, BytesView body, uint64_t now) {
  // A chunk can begin before the offset asked for.
  if (o_.offset.type == OffsetType::offset && offset < uint64_t(o_.offset.value)) return;
  stats_.consumed_all++;
  consumed_any_++;
  stats_.consumed_bytes += body.size();
  stats_.last_consume_ns = now;
  if (body.size() < kBodyHeader) return;
  const uint8_t* p = strata::u8(body.data());
  if (get_be64(p + 8) != run_id_) return;
  consumed_++;
  stats_.consumed++;
  uint64_t sent = get_be64(p);
  uint64_t lat = now > sent ? now - sent : 0;
  stats_.deliver_latency_ns.record(lat);
  stats_.interval_deliver_ns.record(lat);
}

}  // namespace strata::perf
