#include "server/entry_append.h"

#include <vector>

#include "proto/osiris_chunk.h"

namespace strata::server {

Status append_osiris(log::StreamLog& log, const OsirisBatch& b) {
  std::vector<BytesView> records;
  records.reserve(b.num_entries);
  proto::OsirisEntryReader r(b.entries);
  proto::OsirisEntry e;
  while (r.next(&e)) {
    if (e.sub_batch) {
      return Error(Errc::invalid_argument,
                   "publish: sub-batch entries are not stored by this build of the log yet");
    }
    records.push_back(e.body);
  }
  if (r.failed()) return r.error();
  auto res = log.append(std::span<const BytesView>(records.data(), records.size()));
  if (!res.ok()) return std::move(res).error();
  return Status::OK();
}

}  // namespace strata::server
