// SacCoordinator: the single-active-consumer groups of a server
// (sac_group.h, a pure state machine) under one lock, stepped with the time
// now. Each step's effects go to the connections they name, in the order
// the groups produced them; the groups' next answer deadline is armed on a
// timer whose expiry is a step of its own (SacGroups::expire).
//
// Thread safety: any thread.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "server/sac_group.h"

namespace strata::server {

class SacCoordinator {
 public:
  // `deliver` hands one effect to the connection it names (a connection
  // gone meanwhile drops it); called under the coordinator's lock, so it
  // must only post.
  SacCoordinator(asio::io_context& io, std::chrono::milliseconds answer_timeout,
                 std::function<void(const SacEffect&)> deliver);
  ~SacCoordinator();
  SacCoordinator(const SacCoordinator&) = delete;
  SacCoordinator& operator=(const SacCoordinator&) = delete;

  // One step of the groups: `step` runs under the lock with the time now;
  // its effects are delivered.
  void step(const std::function<std::vector<SacEffect>(SacGroups&, SacTime)>& step);
  // No timer fires after this (the server is stopping).
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace strata::server
