#include "store_registry.h"

#include "open_store.h"

namespace strata::erl {

void StoreRegistry::add(const std::shared_ptr<OpenStore>& store) {
  std::lock_guard<std::mutex> l(mu_);
  // Entries of freed stores are dropped as new ones come (bounded by the
  // directories opened in this VM).
  for (auto it = stores_.begin(); it != stores_.end();) {
    it = it->second.expired() ? stores_.erase(it) : std::next(it);
  }
  stores_[store->dir()] = store;
}

std::shared_ptr<OpenStore> StoreRegistry::unclosed(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = stores_.find(dir);
  if (it == stores_.end()) return nullptr;
  std::shared_ptr<OpenStore> s = it->second.lock();
  if (!s || s->closed()) return nullptr;
  return s;
}

}  // namespace strata::erl
