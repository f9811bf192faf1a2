// The request setup every gateway call shares (etcd_client.cpp's calls and
// etcd_watch.cpp's stream): a JSON POST to `url`, no proxy, no signals, TCP
// keepalive, and no "Expect: 100-continue" round trip for bodies above
// 1 KiB; over https, the CA and the client certificate of TlsFiles; with
// etcd's authentication on, the token.
// Returns the header list, which the caller frees after the transfer.
#pragma once

#include <curl/curl.h>

#include <string>

namespace strata::etcd {

// TLS to etcd (https endpoints): the CAs a member's certificate is
// verified against ("": the system's), and the client certificate and key
// a member started with --client-cert-auth asks for ("": none).
struct TlsFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// `auth_token`: etcd's token from /v3/auth/authenticate ("": none), sent
// as the Authorization header the gateway reads.
inline curl_slist* set_json_post(CURL* h, const std::string& url, const std::string& body,
                                 const TlsFiles& tls, const std::string& auth_token = {}) {
  if (!tls.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
  if (!tls.cert_file.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, tls.cert_file.c_str());
  if (!tls.key_file.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, tls.key_file.c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  if (!auth_token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: " + auth_token).c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  return headers;
}

}  // namespace strata::etcd
