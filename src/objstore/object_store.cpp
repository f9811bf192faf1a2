#include "objstore/object_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace strata::objstore {

namespace {

// get_range windows up to this size are read straight into the returned
// buffer (zero-filled first, as std::string must be). Larger ones - a
// caller asking for "everything from offset" with a huge length - go into
// uninitialized memory that only the bytes received touch, then are copied
// out: a 1 GiB window for a 100-byte answer must not cost 1 GiB of memory.
constexpr uint64_t kDirectWindow = 64ull << 20;

ObjectError length_zero(std::string_view key) {
  ObjectError e;
  e.op = Op::get_range;
  e.key = std::string(key);
  e.retry = RetryClass::fatal;
  e.message = "ranged get of length 0";
  return e;
}

}  // namespace

Status for_each_body_piece(BodyParts body, const std::function<Status(BytesView)>& fn,
                           const std::function<void(uint64_t)>& progress) {
  uint64_t done = 0;
  if (progress) progress(0);
  for (BytesView part : body) {
    for (size_t pos = 0; pos < part.size();) {
      const size_t n = size_t(std::min<uint64_t>(kBodyStepBytes, part.size() - pos));
      if (Status s = fn(part.substr(pos, n)); !s.ok()) return s;
      pos += n;
      done += n;
      if (progress) progress(done);
    }
  }
  return Status::OK();
}

ObjectResult<Bytes> ObjectStore::get(std::string_view key) {
  Bytes out;
  GetSink sink;
  sink.on_size = [&out](uint64_t n) {
    reserve_body(&out, n);
    return Status::OK();
  };
  sink.on_piece = [&out](BytesView piece) {
    out.append(piece.data(), piece.size());
    return Status::OK();
  };
  auto r = get_to(key, sink, GetLimits{max_get_bytes()});
  if (!r.ok()) return std::move(r).error();
  return out;
}

ObjectResult<Bytes> ObjectStore::get_range(std::string_view key, uint64_t offset, uint64_t length) {
  if (length == 0) return length_zero(key);
  const uint64_t cap = max_get_bytes();
  // One byte more than the cap tells "the window holds more than the cap"
  // from "exactly the cap".
  const uint64_t window = std::min(length, cap == UINT64_MAX ? cap : cap + 1);
  auto check_cap = [&](uint64_t n) -> std::optional<ObjectError> {
    if (n > cap) return over_cap_error(Op::get_range, key, cap, std::nullopt);
    return std::nullopt;
  };
  if (window <= kDirectWindow) {
    Bytes out;
    reserve_body(&out, window);
    out.resize(window);
    auto n = read_range(key, offset, std::span<uint8_t>(u8(out.data()), out.size()));
    if (!n.ok()) return std::move(n).error();
    if (auto e = check_cap(*n)) return *e;
    const bool mostly_empty = *n < out.size() / 2;
    out.resize(*n);
    if (mostly_empty) out.shrink_to_fit();
    return out;
  }
  auto buf = std::make_unique_for_overwrite<uint8_t[]>(window);
  auto n = read_range(key, offset, std::span<uint8_t>(buf.get(), window));
  if (!n.ok()) return std::move(n).error();
  if (auto e = check_cap(*n)) return *e;
  return Bytes(reinterpret_cast<const char*>(buf.get()), *n);
}

ObjectResult<std::vector<ObjectInfo>> list_all(ObjectStore& store, std::string_view prefix,
                                               size_t max_objects) {
  std::vector<ObjectInfo> all;
  ListRequest req;
  req.prefix = std::string(prefix);
  auto fail = [&](std::string msg) {
    ObjectError e;
    e.op = Op::list;
    e.key = std::string(prefix);
    e.retry = RetryClass::fatal;
    e.message = std::move(msg);
    return e;
  };
  while (true) {
    auto page = store.list(req);
    if (!page.ok()) return std::move(page).error();
    for (auto& o : page->objects) all.push_back(std::move(o));
    if (all.size() > max_objects) {
      return fail(fmt::format("more than {} objects under the prefix", max_objects));
    }
    if (page->next_token.empty()) return all;
    // A server that hands back the token it was given would loop forever.
    if (page->next_token == req.continuation_token) {
      return fail("the store returned the same continuation token twice");
    }
    req.continuation_token = std::move(page->next_token);
  }
}

}  // namespace strata::objstore
