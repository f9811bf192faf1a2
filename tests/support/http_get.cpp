#include "support/http_get.h"

#include <curl/curl.h>

namespace strata::test {

namespace {
size_t collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}
}  // namespace

std::string http_get(const std::string& url, std::chrono::milliseconds timeout) {
  CURL* h = curl_easy_init();
  if (!h) return {};
  std::string body;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(timeout.count()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(h);
  curl_easy_cleanup(h);
  return rc == CURLE_OK ? body : std::string();
}

}  // namespace strata::test
