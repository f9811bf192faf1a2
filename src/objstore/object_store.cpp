#include "objstore/object_store.h"

#include <fmt/format.h>

namespace strata::objstore {

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
