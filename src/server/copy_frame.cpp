#include "server/copy_frame.h"

#include <fmt/format.h>

#include "log/chunk.h"
#include "proto/osiris_chunk.h"

namespace strata::server {

Result<Bytes> stored_chunk_of(BytesView osiris_chunk, const std::string& where) {
  auto h = proto::decode_osiris_header(osiris_chunk);
  if (!h.ok()) return std::move(h).error().with_context(where);
  BytesView body = osiris_chunk.substr(proto::kOsirisChunkHeaderSize);
  if (h->bloom_size != 0 || h->trailer_len < log::kChunkHeaderSize ||
      body.size() != h->body_len()) {
    return Error(Errc::corrupt,
                 fmt::format("{}: not a copy chunk (bloom {}, data {}, trailer {}, {} bytes)",
                             where, h->bloom_size, h->data_len, h->trailer_len, body.size()));
  }
  BytesView data = body.substr(0, h->data_len);
  BytesView trailer = body.substr(h->data_len);
  Bytes stored;
  stored.reserve(body.size());
  stored.append(trailer.substr(0, log::kChunkHeaderSize));
  stored.append(data);
  stored.append(trailer.substr(log::kChunkHeaderSize));
  return stored;
}

}  // namespace strata::server
