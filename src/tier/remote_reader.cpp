#include "tier/remote_reader.h"

#include <fmt/format.h>

#include <cstring>

#include "tier/manifest_lookup.h"

namespace strata::tier {

namespace {

Error corrupt(std::string msg) {
  return Error(Errc::corrupt, std::move(msg));
}

}  // namespace

Result<std::vector<ChunkIndexRecord>> read_fragment_index(objstore::ObjectStore& store,
                                                          const std::string& key,
                                                          const FragmentRef& f) {
  // The count of chunks is only in the object; every chunk is at least a
  // chunk header long, which bounds it.
  const uint64_t max_chunks = f.size / log::kChunkHeaderSize + 1;
  const uint64_t length = max_chunks * kFragmentIndexRecordSize + kFragmentTrailerSize;
  auto tail = store.get_range(key, fragment_index_position(f.size), length);
  if (!tail.ok()) {
    Error e = tail.error().to_error();
    return Error(e.code, fmt::format("reading the index of fragment {} (offsets {}..{}): {}", key,
                                     f.offset, f.next_offset, e.message));
  }
  return decode_fragment_index(*tail, FragmentExpectation{f.offset, f.next_offset, f.size}, key);
}

RemoteReader::RemoteReader(RemoteReaderDeps deps, const ObjectKeys& keys,
                           std::shared_ptr<const Manifest> root, uint64_t from)
    : deps_(std::move(deps)),
      keys_(keys),
      iter_(std::move(root), from, deps_.groups),
      prefetch_(deps_.store, deps_.pool, deps_.prefetch),
      cursor_(from) {}

Result<std::unique_ptr<RemoteReader>> RemoteReader::open(RemoteReaderDeps deps,
                                                         const ObjectKeys& keys,
                                                         std::shared_ptr<const Manifest> root,
                                                         const RemoteStart& start) {
  uint64_t from = std::max(start.offset, root->first_offset);
  if (start.kind == RemoteStart::Kind::timestamp) {
    STRATA_ASSIGN_OR_RETURN(auto f,
                            find_fragment_by_timestamp(*root, start.timestamp, deps.groups));
    from = f ? f->offset : root->next_offset;
  }
  std::unique_ptr<RemoteReader> rr(new RemoteReader(std::move(deps), keys, root, from));
  STRATA_ASSIGN_OR_RETURN(auto first, rr->iter_.next());
  if (!first) {
    rr->exhausted_ = true;
    return rr;
  }
  rr->cursor_ = first->offset;
  rr->lookahead_ = *first;
  STRATA_ASSIGN_OR_RETURN(auto at, rr->locate_in_fragment(*first, start));
  if (at.first == first->next_offset) {
    // No chunk of this fragment qualifies (timestamp): start at the next.
    rr->lookahead_.reset();
  }
  rr->cursor_ = at.first;
  rr->first_start_pos_ = at.second;
  return rr;
}

// The chunk where the reader starts inside `f`: (its first offset, its data
// position). Reads the fragment's index unless the start is f's first chunk.
Result<std::pair<uint64_t, uint64_t>> RemoteReader::locate_in_fragment(const FragmentRef& f,
                                                                       const RemoteStart& start) {
  const bool by_offset = start.kind == RemoteStart::Kind::offset;
  if (by_offset && start.offset <= f.offset) return std::pair<uint64_t, uint64_t>{f.offset, 0};
  std::string key = keys_.for_entry(f.entry());
  index_gets_ += 1;
  STRATA_ASSIGN_OR_RETURN(auto index, read_fragment_index(*deps_.store, key, f));
  std::optional<size_t> i = by_offset ? find_chunk_by_offset(index, start.offset)
                                      : find_chunk_by_timestamp(index, start.timestamp);
  if (!i) return std::pair<uint64_t, uint64_t>{f.next_offset, f.size};
  return std::pair<uint64_t, uint64_t>{index[*i].first_offset, index[*i].position};
}

void RemoteReader::refresh(std::shared_ptr<const Manifest> newer) {
  iter_.refresh(std::move(newer));
  exhausted_ = false;
}

Status RemoteReader::plan(uint64_t stop_at, uint64_t need) {
  while (true) {
    Planned* p = frags_.empty() ? nullptr : &frags_.back();
    if (p == nullptr || p->planned == p->ref.size) {
      if (exhausted_) return Status::OK();
      if (!lookahead_) {
        STRATA_ASSIGN_OR_RETURN(auto f, iter_.next());
        if (!f) {
          exhausted_ = true;
          return Status::OK();
        }
        lookahead_ = *f;
      }
      if (lookahead_->offset >= stop_at) return Status::OK();
      Planned np{*lookahead_, keys_.for_entry(lookahead_->entry()), first_start_pos_,
                 first_start_pos_};
      first_start_pos_ = 0;
      frags_.push_back(std::move(np));
      lookahead_.reset();
      continue;
    }
    const uint64_t len = std::min(deps_.range_bytes, p->ref.size - p->planned);
    const bool needed = frags_.size() == 1 && p->planned - p->pos < need;
    // Read-ahead starts once the first chunk is out: a cold reader's first
    // record waits for its own range only, not for the window being queued.
    if (!needed && (delivered_ == 0 || !prefetch_.has_room(len))) return Status::OK();
    prefetch_.push(ObjectRange{p->key, kFragmentHeaderSize + p->planned, len});
    p->planned += len;
  }
}

Status RemoteReader::check_range(size_t i, const Bytes& b) {
  const ObjectRange& r = prefetch_.range(i);
  if (b.size() != r.length) {
    return corrupt(
        fmt::format("object {} returned {} bytes for range {}+{}: it is shorter than "
                    "its manifest entry says",
                    r.key, b.size(), r.offset, r.length));
  }
  return Status::OK();
}

Status RemoteReader::copy_out(uint64_t n, char* dst) {
  uint64_t copied = 0;
  uint64_t off = rpos_;
  for (size_t i = 0; copied < n; ++i) {
    if (i >= prefetch_.size()) {
      return Error(Errc::internal, "remote reader: bytes needed beyond the queued ranges");
    }
    STRATA_ASSIGN_OR_RETURN(const Bytes* b, prefetch_.at(i));
    STRATA_TRY(check_range(i, *b));
    const uint64_t c = std::min<uint64_t>(b->size() - off, n - copied);
    std::memcpy(dst + copied, b->data() + off, c);
    copied += c;
    off = 0;
  }
  return Status::OK();
}

Result<BytesView> RemoteReader::take(uint64_t n) {
  STRATA_ASSIGN_OR_RETURN(const Bytes* b, prefetch_.at(0));
  STRATA_TRY(check_range(0, *b));
  if (b->size() - rpos_ >= n) {
    BytesView v(b->data() + rpos_, n);
    rpos_ += n;
    return v;
  }
  // Straddles ranges: one copy into the stitch buffer, then consume.
  stitch_.resize(n);
  STRATA_TRY(copy_out(n, stitch_.data()));
  uint64_t left = n;
  while (left > 0) {
    const uint64_t avail = prefetch_.range(0).length - rpos_;
    if (left >= avail) {
      left -= avail;
      prefetch_.pop_front();
      rpos_ = 0;
    } else {
      rpos_ += left;
      left = 0;
    }
  }
  return BytesView(stitch_.data(), n);
}

Result<std::optional<RemoteChunk>> RemoteReader::next(uint64_t stop_at) {
  // Ranges the previous chunk finished (kept until now: its view pointed in).
  while (!prefetch_.empty() && rpos_ == prefetch_.range(0).length) {
    prefetch_.pop_front();
    rpos_ = 0;
  }
  if (stitch_.capacity() > deps_.range_bytes) Bytes().swap(stitch_);
  while (true) {
    Status planned = plan(stop_at, log::kChunkHeaderSize);
    // A failed group read while chunks are already queued waits until the
    // consumer reaches the fragments it would have named.
    if (frags_.empty()) {
      if (!planned.ok()) return planned.error();
      return std::optional<RemoteChunk>();
    }
    Planned& f = frags_.front();
    if (f.pos == f.ref.size) {
      if (cursor_ != f.ref.next_offset) {
        return corrupt(
            fmt::format("fragment {}: its chunks end at offset {} but its manifest "
                        "entry ends at {}",
                        f.key, cursor_, f.ref.next_offset));
      }
      frags_.pop_front();
      continue;
    }
    const std::string where = fmt::format("{} data position {}", f.key, f.pos);
    if (f.ref.size - f.pos < log::kChunkHeaderSize) {
      return corrupt(where + ": the fragment's data ends inside a chunk header");
    }
    char hb[log::kChunkHeaderSize];
    STRATA_TRY(copy_out(log::kChunkHeaderSize, hb));
    STRATA_ASSIGN_OR_RETURN(log::ChunkHeader h,
                            log::decode_chunk_header(BytesView(hb, sizeof hb), where));
    if (h.first_offset != cursor_) {
      return corrupt(
          fmt::format("{}: chunk has offset {}, expected {}", where, h.first_offset, cursor_));
    }
    const uint64_t total = h.total_size();
    if (total > f.ref.size - f.pos) {
      return corrupt(where + ": chunk runs past the end of the fragment's data");
    }
    STRATA_TRY(plan(stop_at, total));
    STRATA_ASSIGN_OR_RETURN(BytesView bytes, take(total));
    f.pos += total;
    cursor_ = h.next_offset();
    delivered_ += 1;
    if (deps_.counters) {
      deps_.counters->chunks += 1;
      deps_.counters->bytes += total;
    }
    if (deps_.verify_crc) {
      STRATA_TRY(log::verify_chunk_body(h, bytes.substr(log::kChunkHeaderSize), where));
    }
    return std::optional<RemoteChunk>(RemoteChunk{h, bytes});
  }
}

}  // namespace strata::tier
