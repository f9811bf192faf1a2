// StoreRegistry: the stores opened in this VM, by data directory.
//
// When an owner dies, its store is closed on the StoreCloser's thread, and
// the down callback that queues that close may run after the owner's
// supervisor has already started a new owner (the EXIT signal and the
// monitor's callback are not ordered). The new owner's open asks here for
// the directory's previous store: if that one is not closed yet and its
// owner is no longer alive, the open waits for its close (which releases
// the LOCK) instead of failing on the LOCK. If its owner is alive, it is a
// second owner of the directory and the open goes on to fail on the LOCK.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace strata::erl {

class OpenStore;

class StoreRegistry {
 public:
  // Records `store` as its directory's latest store.
  void add(const std::shared_ptr<OpenStore>& store);
  // The directory's latest store if it is not closed yet, else nullptr.
  std::shared_ptr<OpenStore> unclosed(const std::string& dir);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::weak_ptr<OpenStore>> stores_;
};

}  // namespace strata::erl
