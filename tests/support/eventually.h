// eventually(): polling for another process's state in tests.
#pragma once

#include <chrono>
#include <thread>

namespace strata::test {

// Waits for `pred` (another process's state, which nothing here can be told
// about by a callback), checking every 50 ms.
template <class F>
bool eventually(std::chrono::milliseconds timeout, F pred) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

}  // namespace strata::test
