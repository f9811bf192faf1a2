// One HTTP GET for tests (etcd's health endpoint, a node's /status).
#pragma once

#include <chrono>
#include <string>

namespace strata::test {

// GET url within `timeout`; the body, or "" on any failure.
std::string http_get(const std::string& url, std::chrono::milliseconds timeout);

}  // namespace strata::test
