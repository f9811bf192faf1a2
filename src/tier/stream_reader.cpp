#include "tier/stream_reader.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/stream_name.h"
#include "tier/remote_reader.h"
#include "tier/tier_limits.h"

namespace strata::tier {

class StreamReader::Impl {
 public:
  Impl(std::shared_ptr<log::StreamLog> l, TierContext c, StreamReaderOptions o)
      : log(std::move(l)), ctx(std::move(c)), opts(o) {}

  Status start(const log::OffsetSpec& spec);
  // located: local chunks by location only (log::Reader::next_chunk_location).
  Result<std::optional<TieredChunk>> next_chunk(bool located = false);
  // The steps of next_chunk (see there).
  Result<bool> remote_step(std::optional<TieredChunk>* out);
  Result<bool> local_step(bool located, std::optional<TieredChunk>* out);
  // The remote reader's next chunk below `local_first`, counted in st.
  Result<std::optional<RemoteChunk>> read_remote(uint64_t local_first);
  // Moves the remote reader to the newest manifest, which must still hold
  // the cursor (out_of_range: it is in neither tier).
  Status refresh_remote(uint64_t local_first);
  // The local reader's next chunk (its location only when `located`).
  Result<std::optional<TieredChunk>> read_local(bool located);

  bool tiered() const { return keys.has_value(); }
  Result<CachedManifest> manifest() const;
  Result<bool> open_remote(std::shared_ptr<const Manifest> m, const RemoteStart& rs,
                           uint64_t local_first);
  // Moves the local reader to `cursor`; false when retention removed it.
  Result<bool> switch_to_local();
  Status switch_to_remote();
  Error annotate(const Error& e) const;
  void track_memory();

  std::shared_ptr<log::StreamLog> log;
  TierContext ctx;
  StreamReaderOptions opts;
  std::optional<ObjectKeys> keys;
  Tier tier = Tier::local;
  std::unique_ptr<log::Reader> local;
  // tier == remote with no reader: a switch to remote is pending (it
  // failed, e.g. the cache was not ready; the next call tries again).
  std::unique_ptr<RemoteReader> remote;
  uint64_t cursor = 0;        // first offset of the next chunk
  uint64_t start_offset = 0;  // records below it are not delivered
  StreamReaderStats st;
  // Decompressed sub-batches of the last next_records call (its views).
  std::deque<std::string> decoded;
};

namespace {

// Whether `spec` may ask for data older than the local log.
bool reaches_below(const log::OffsetSpec& spec, const log::LocalRange& local) {
  if (local.first_offset == 0) return false;
  switch (spec.kind) {
    case log::OffsetSpec::Kind::first:
      return true;
    case log::OffsetSpec::Kind::offset:
      return spec.offset() < local.first_offset;
    case log::OffsetSpec::Kind::timestamp:
      return local.first_timestamp_ms < 0 || spec.value <= local.first_timestamp_ms;
    case log::OffsetSpec::Kind::last:
    case log::OffsetSpec::Kind::next:
      return false;
  }
  return false;
}

}  // namespace

RemoteReaderDeps remote_reader_deps(const TierContext& ctx, const StreamReaderOptions& o,
                                    const ObjectKeys& keys) {
  RemoteReaderDeps d;
  d.store = ctx.store;
  d.pool = ctx.pool;
  d.groups = ctx.cache->groups().fetcher(*ctx.store, keys);
  d.range_bytes = std::max<uint64_t>(o.range_bytes, 1);
  d.verify_crc = o.verify_crc;
  d.prefetch.budget_bytes = o.prefetch_bytes;
  d.prefetch.max_in_flight = std::max<uint32_t>(o.max_ranges_in_flight, 1);
  d.prefetch.deadline = o.request_deadline;
  d.prefetch.transient_retries = o.transient_retries;
  d.counters = ctx.reads;
  return d;
}

Result<CachedManifest> StreamReader::Impl::manifest() const {
  auto m = ctx.cache->get(ctx.stream);
  if (!m.ok()) {
    return Error(Errc::unavailable,
                 fmt::format("stream {}: the remote tier's manifest is not loaded on this node "
                             "yet; retry ({})",
                             ctx.stream, m.error().message));
  }
  return m;
}

Error StreamReader::Impl::annotate(const Error& e) const {
  return Error(e.code, fmt::format("stream {} offset {} ({} tier): {}", ctx.stream, cursor,
                                   tier == Tier::remote ? "remote" : "local", e.message));
}

// Opens the remote reader; false when what `rs` asks for is not below
// `local_first` (the local log answers it).
Result<bool> StreamReader::Impl::open_remote(std::shared_ptr<const Manifest> m,
                                             const RemoteStart& rs, uint64_t local_first) {
  STRATA_ASSIGN_OR_RETURN(auto r,
                          RemoteReader::open(remote_reader_deps(ctx, opts, *keys), *keys, m, rs));
  st.group_reads += r->group_reads();
  if (r->cursor() >= local_first) return false;
  remote = std::move(r);
  tier = Tier::remote;
  cursor = remote->cursor();
  return true;
}

Status StreamReader::Impl::start(const log::OffsetSpec& spec) {
  // Retention may move the local start between looking and opening; a
  // few tries settle it (each one sees a newer state).
  for (int attempt = 0; attempt < kReaderOpenAttempts; ++attempt) {
    const log::LocalRange lr = log->local_range();
    if (tiered() && reaches_below(spec, lr)) {
      STRATA_ASSIGN_OR_RETURN(CachedManifest cm, manifest());
      const Manifest& m = *cm.manifest;
      if (!m.empty() && m.first_offset < lr.first_offset) {
        RemoteStart rs;
        if (spec.kind == log::OffsetSpec::Kind::timestamp) {
          rs.kind = RemoteStart::Kind::timestamp;
          rs.timestamp = spec.value;
        } else {
          rs.offset = spec.kind == log::OffsetSpec::Kind::offset
                          ? std::max(spec.offset(), m.first_offset)
                          : m.first_offset;
        }
        STRATA_ASSIGN_OR_RETURN(bool is_remote, open_remote(cm.manifest, rs, lr.first_offset));
        if (is_remote) {
          start_offset =
              spec.kind == log::OffsetSpec::Kind::offset ? std::max(spec.offset(), cursor) : cursor;
          return Status::OK();
        }
      }
    }
    STRATA_ASSIGN_OR_RETURN(auto r, log->open_reader(spec, log::ReaderOptions{opts.verify_crc}));
    // Asked for an offset the local log had, but retention removed it
    // before the reader opened: look again (now it is remote).
    if (tiered() && spec.kind == log::OffsetSpec::Kind::offset &&
        spec.offset() >= lr.first_offset && r->next_chunk_offset() > spec.offset()) {
      continue;
    }
    local = std::move(r);
    tier = Tier::local;
    cursor = local->next_chunk_offset();
    start_offset = local->next_offset();
    return Status::OK();
  }
  return Error(Errc::unavailable,
               fmt::format("stream {}: local retention kept moving while the reader opened; retry",
                           ctx.stream));
}

Result<bool> StreamReader::Impl::switch_to_local() {
  STRATA_ASSIGN_OR_RETURN(auto r, log->open_reader(log::OffsetSpec::at_offset(cursor),
                                                   log::ReaderOptions{opts.verify_crc}));
  if (r->next_chunk_offset() > cursor) return false;
  if (r->next_chunk_offset() < cursor) {
    return Error(Errc::internal,
                 fmt::format("stream {}: offset {} is a chunk boundary in the remote tier but the "
                             "local chunk holding it starts at {}",
                             ctx.stream, cursor, r->next_chunk_offset()));
  }
  local = std::move(r);
  remote.reset();
  tier = Tier::local;
  st.tier_switches += 1;
  return true;
}

Status StreamReader::Impl::switch_to_remote() {
  STRATA_ASSIGN_OR_RETURN(CachedManifest cm, manifest());
  const Manifest& m = *cm.manifest;
  if (cursor < m.first_offset || cursor >= m.next_offset) {
    return Error(Errc::out_of_range,
                 fmt::format("stream {}: offset {} left the local log and the remote tier holds "
                             "[{}, {})",
                             ctx.stream, cursor, m.first_offset, m.next_offset));
  }
  STRATA_ASSIGN_OR_RETURN(
      auto r, RemoteReader::open(remote_reader_deps(ctx, opts, *keys), *keys, cm.manifest,
                                 RemoteStart{RemoteStart::Kind::offset, cursor, 0}));
  if (r->cursor() != cursor) {
    return Error(Errc::internal,
                 fmt::format("stream {}: offset {} is a chunk boundary locally but the remote "
                             "chunk holding it starts at {}",
                             ctx.stream, cursor, r->cursor()));
  }
  st.group_reads += r->group_reads();
  remote = std::move(r);
  st.tier_switches += 1;
  return Status::OK();
}

void StreamReader::Impl::track_memory() {
  if (!remote) return;
  st.peak_buffered_bytes =
      std::max({st.peak_buffered_bytes, remote->held_bytes(), remote->prefetch_stats().peak_bytes});
}

// next_chunk, step by step. Each step either delivers (a chunk, or nullopt
// at the committed end) into *out and returns false, or moves the reader
// (between tiers, or to a newer manifest) and returns true: take the next
// step.
Result<std::optional<TieredChunk>> StreamReader::Impl::next_chunk(bool located) {
  while (true) {
    std::optional<TieredChunk> out;
    STRATA_ASSIGN_OR_RETURN(bool moved,
                            tier == Tier::remote ? remote_step(&out) : local_step(located, &out));
    if (!moved) return out;
  }
}

Result<bool> StreamReader::Impl::remote_step(std::optional<TieredChunk>* out) {
  if (!remote) {
    if (Status s = switch_to_remote(); !s.ok()) return annotate(s.error());
  }
  const uint64_t local_first = log->first_offset();
  auto r = read_remote(local_first);
  if (!r.ok()) return annotate(r.error());
  if (*r) {
    const RemoteChunk& c = **r;
    cursor = c.header.next_offset();
    st.remote_chunks += 1;
    st.remote_bytes += c.bytes.size();
    *out = TieredChunk{c.header, c.bytes, Tier::remote, 0, 0, nullptr};
    return false;
  }
  // Nothing more remote below the local log: on to the local log, ...
  if (cursor >= local_first) {
    STRATA_ASSIGN_OR_RETURN(bool switched, switch_to_local());
    if (switched) return true;
  }
  // ... or, when the manifest snapshot ends below it, on to a newer one.
  if (Status s = refresh_remote(local_first); !s.ok()) return annotate(s.error());
  return true;
}

Result<std::optional<RemoteChunk>> StreamReader::Impl::read_remote(uint64_t local_first) {
  const uint64_t gets_before = remote->range_gets();
  const uint64_t groups_before = remote->group_reads();
  const uint64_t retries_before = remote->prefetch_stats().retries;
  auto r = remote->next(local_first);
  st.range_gets += remote->range_gets() - gets_before;
  st.group_reads += remote->group_reads() - groups_before;
  st.range_retries += remote->prefetch_stats().retries - retries_before;
  track_memory();
  return r;
}

Status StreamReader::Impl::refresh_remote(uint64_t local_first) {
  STRATA_ASSIGN_OR_RETURN(CachedManifest cm, manifest());
  const Manifest& m = *cm.manifest;
  if (m.first_offset > cursor || m.next_offset <= cursor) {
    return Error(Errc::out_of_range,
                 fmt::format("offsets [{}, {}) are in neither tier (remote holds [{}, {}))", cursor,
                             local_first, m.first_offset, m.next_offset));
  }
  remote->refresh(cm.manifest);
  return Status::OK();
}

Result<bool> StreamReader::Impl::local_step(bool located, std::optional<TieredChunk>* out) {
  auto r = read_local(located);
  if (!r.ok()) {
    if (r.error().code == Errc::out_of_range && tiered()) {
      // Local retention removed what this reader was about to read: the
      // remote tier has it (retention waits for the upload).
      cursor = local->next_chunk_offset();
      local.reset();
      tier = Tier::remote;
      return true;
    }
    if (r.error().code == Errc::out_of_range && log->first_offset() > cursor) {
      // A local stream has nothing below its log: retention removed what
      // this reader was about to read (a slow consumer, or retention
      // shrunk under it). It goes on from the oldest chunk left, as a
      // reader from `first` would; the offsets in between are gone.
      STRATA_ASSIGN_OR_RETURN(auto next,
                              log->open_reader(log::OffsetSpec::at_offset(log->first_offset()),
                                               log::ReaderOptions{opts.verify_crc}));
      spdlog::warn(
          "stream {}: a reader at offset {} goes on at {}: retention removed the offsets "
          "in between",
          printable_stream(ctx.stream), cursor, next->next_chunk_offset());
      st.retention_skipped_offsets += next->next_chunk_offset() - cursor;
      cursor = next->next_chunk_offset();
      local = std::move(next);
      return true;
    }
    return annotate(r.error());
  }
  if (*r) {
    const log::ChunkHeader& h = (*r)->header;
    if (h.first_offset != cursor) {
      return annotate(
          Error(Errc::internal, fmt::format("the local chunk starts at {}", h.first_offset)));
    }
    cursor = h.next_offset();
    st.local_chunks += 1;
    st.local_bytes += h.total_size();
  }
  *out = std::move(*r);
  return false;
}

Result<std::optional<TieredChunk>> StreamReader::Impl::read_local(bool located) {
  if (located) {
    STRATA_ASSIGN_OR_RETURN(std::optional<log::ChunkLocation> c, local->next_chunk_location());
    if (!c) return std::optional<TieredChunk>();
    return std::optional<TieredChunk>(TieredChunk{c->header, BytesView(), Tier::local,
                                                  c->segment_first_offset, c->position,
                                                  std::move(c->file)});
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<log::ChunkView> c, local->next_chunk());
  if (!c) return std::optional<TieredChunk>();
  return std::optional<TieredChunk>(
      TieredChunk{c->header, c->bytes, Tier::local, c->segment_first_offset, c->position, nullptr});
}

// ---- StreamReader ----

StreamReader::StreamReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamReader::~StreamReader() = default;

Result<std::unique_ptr<StreamReader>> StreamReader::open(std::shared_ptr<log::StreamLog> log,
                                                         TierContext ctx,
                                                         const log::OffsetSpec& spec,
                                                         StreamReaderOptions opts) {
  if (!log) return Error(Errc::invalid_argument, "StreamReader::open: no log");
  auto impl = std::make_unique<Impl>(std::move(log), std::move(ctx), opts);
  if (impl->ctx.store && impl->ctx.cache) {
    STRATA_ASSIGN_OR_RETURN(ObjectKeys k, ObjectKeys::make(impl->ctx.key_prefix, impl->ctx.stream));
    impl->keys = std::move(k);
  }
  STRATA_TRY(impl->start(spec));
  return std::unique_ptr<StreamReader>(new StreamReader(std::move(impl)));
}

Result<std::optional<TieredChunk>> StreamReader::next_chunk() {
  return impl_->next_chunk();
}

Result<std::optional<TieredChunk>> StreamReader::next_chunk_location() {
  return impl_->next_chunk(true);
}

Result<size_t> StreamReader::next_records(std::vector<log::Record>* out) {
  impl_->decoded.clear();
  while (true) {
    STRATA_ASSIGN_OR_RETURN(auto c, impl_->next_chunk());
    if (!c) return size_t(0);
    // A tracking chunk (imported from RabbitMQ) holds offsets, not records.
    if (c->header.type != log::ChunkType::user) continue;
    const std::string where =
        fmt::format("stream {} chunk at offset {}", impl_->ctx.stream, c->header.first_offset);
    STRATA_ASSIGN_OR_RETURN(auto values,
                            log::parse_records(c->header, c->data(), where, &impl_->decoded));
    const size_t before = out->size();
    uint64_t off = c->header.first_offset;
    for (BytesView v : values) {
      if (off >= impl_->start_offset) out->push_back(log::Record{off, c->header.timestamp_ms, v});
      ++off;
    }
    // A chunk wholly below the start offset (the start is in a later
    // record of its chunk only for the first one) yields nothing: go on.
    if (out->size() > before) return out->size() - before;
  }
}

bool StreamReader::wait(std::chrono::milliseconds timeout) {
  if (impl_->tier == Tier::remote || !impl_->local) return true;
  return impl_->local->wait(timeout);
}

uint64_t StreamReader::next_offset() const {
  return std::max(impl_->cursor, impl_->start_offset);
}
Tier StreamReader::tier() const {
  return impl_->tier;
}
StreamReaderStats StreamReader::stats() const {
  return impl_->st;
}

}  // namespace strata::tier
