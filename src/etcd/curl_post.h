// The request setup every gateway call shares (etcd_client.cpp's calls and
// etcd_watch.cpp's stream): a JSON POST to `url`, no proxy, no signals, TCP
// keepalive, and no "Expect: 100-continue" round trip for bodies above
// 1 KiB. Returns the header list, which the caller frees after the transfer.
#pragma once

#include <curl/curl.h>

#include <string>

namespace strata::etcd {

inline curl_slist* set_json_post(CURL* h, const std::string& url, const std::string& body) {
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  return headers;
}

}  // namespace strata::etcd
