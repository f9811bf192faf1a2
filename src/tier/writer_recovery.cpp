#include "tier/writer_recovery.h"

#include <fmt/format.h>

#include <vector>

#include "log/chunk.h"
#include "tier/manifest_lookup.h"

namespace strata::tier {
namespace {

// The writer trailers of one fragment's chunks, in offset order.
Result<std::vector<log::WriterTrailer>> fragment_trailers(const RemoteReaderDeps& deps,
                                                          const ObjectKeys& keys,
                                                          std::shared_ptr<const Manifest> root,
                                                          const FragmentRef& f) {
  RemoteStart start;
  start.offset = f.offset;
  STRATA_ASSIGN_OR_RETURN(auto reader, RemoteReader::open(deps, keys, std::move(root), start));
  std::vector<log::WriterTrailer> out;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(auto c, reader->next(f.next_offset));
    if (!c) break;
    const auto& h = c->header;
    if (h.trailer_len == 0) continue;
    const std::string where = fmt::format("{} chunk at offset {}",
                                          keys.fragment(f.offset, f.epoch, f.uid), h.first_offset);
    STRATA_ASSIGN_OR_RETURN(
        auto t, log::decode_writer_trailer(
                    c->bytes.substr(log::kChunkHeaderSize + h.data_len, h.trailer_len), where));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

Result<RemoteWriters> remote_writer_sequences(const RemoteReaderDeps& deps, const ObjectKeys& keys,
                                              std::shared_ptr<const Manifest> root,
                                              uint64_t max_bytes) {
  RemoteWriters r;
  // Trailers of the fragments read so far, newest fragment first.
  std::vector<std::vector<log::WriterTrailer>> newer;
  uint64_t at = root->next_offset;
  bool found = false;
  while (at > root->first_offset && !root->empty()) {
    STRATA_ASSIGN_OR_RETURN(auto f, find_fragment(*root, at - 1, deps.groups));
    if (!f) {
      return Error(Errc::corrupt, fmt::format("stream {}: the manifest has no fragment holding "
                                              "offset {}",
                                              keys.stream(), at - 1));
    }
    STRATA_ASSIGN_OR_RETURN(auto trailers, fragment_trailers(deps, keys, root, *f));
    r.fragments_read += 1;
    r.bytes_read += f->size;
    // The newest snapshot in this fragment, then the deltas after it.
    for (size_t i = trailers.size(); i-- > 0;) {
      if (!trailers[i].snapshot) continue;
      for (size_t j = i; j < trailers.size(); ++j)
        log::apply_writer_trailer(trailers[j], &r.writers);
      found = true;
      break;
    }
    if (found) break;
    newer.push_back(std::move(trailers));
    at = f->offset;
    if (r.bytes_read >= max_bytes) break;
  }
  r.from_snapshot = found;
  // Older fragments first: each delta raises a writer to at least its value.
  for (auto it = newer.rbegin(); it != newer.rend(); ++it) {
    for (const auto& t : *it) log::apply_writer_trailer(t, &r.writers);
  }
  return r;
}

}  // namespace strata::tier
