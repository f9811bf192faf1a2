// A copy subscription's chunk (delivery.h DeliveryOptions::copy) turned
// back into the stored chunk it was sent from: the osiris chunk's data is
// the stored data, its trailer the stored 56-byte header and then the
// stored trailer (docs/formats/protocol-frames.md, "Copy subscriptions").
#pragma once

#include "common/bytes.h"
#include "common/result.h"

namespace strata::server {

// `osiris_chunk`: a Deliver frame's chunk (48-byte osiris header and body).
// corrupt, naming `where`, when it is no copy chunk; the stored chunk's
// own checks (log::StreamLog::append_copy) come after.
Result<Bytes> stored_chunk_of(BytesView osiris_chunk, const std::string& where);

}  // namespace strata::server
