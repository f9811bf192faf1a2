// The ownership core's timing in its unit tests (ownership_core_test,
// election_test): a 3 s lease renewed every second and given up 500 ms
// before it could expire, a 2 s acquire grace, retries after 100 ms.
#pragma once

#include "cluster/ownership_core.h"

namespace strata::cluster {

inline OwnershipTiming core_test_timing(bool elect_most_complete = false) {
  OwnershipTiming t;
  t.lease_ttl_ms = 3000;
  t.keepalive_interval_ms = 1000;
  t.safety_margin_ms = 500;
  t.acquire_grace_ms = 2000;
  t.retry_ms = 100;
  t.elect_most_complete = elect_most_complete;
  return t;
}

}  // namespace strata::cluster
