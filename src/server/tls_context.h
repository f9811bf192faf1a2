// TLS contexts of the stream protocol's TLS listener (serve_config.h,
// TlsSettings): an OpenSSL server context made from the certificate, key
// and CA files, the protocol versions (TLS 1.2 and 1.3 only), the cipher
// lists and the client-certificate rules. Compression and renegotiation
// are off; the server's cipher order wins.
//
// The context in force can be replaced while the server runs (SIGHUP, a
// renewed certificate): a connection accepted later uses the new one, the
// open ones keep the one they were made with (each holds it). A reload
// that fails to load changes nothing.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <asio/ssl/context.hpp>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "server/serve_config.h"

namespace strata::server {

// A context for `s`. Errors name the setting, the file and OpenSSL's
// reason ("tls.cert_file /etc/strata/cert.pem: cannot load: no start
// line").
Result<std::shared_ptr<asio::ssl::context>> make_tls_context(const TlsSettings& s);
// The context this node dials its cluster peers with (ServeConfig's
// cluster.peer_tls): the same versions and ciphers, this node's certificate
// and key as its client certificate, and peers' certificates verified
// against ca_file (required). The host name is checked per connection
// (transport.h, tls_client_transport).
Result<std::shared_ptr<asio::ssl::context>> make_tls_client_context(const TlsSettings& s);

class TlsContexts {
 public:
  // With `peer_client`, a client context too (make_tls_client_context),
  // made and reloaded with the server's.
  static Result<std::unique_ptr<TlsContexts>> make(const TlsSettings& s, bool peer_client = false);

  // The context new connections get, with the settings it was made from.
  struct Current {
    std::shared_ptr<asio::ssl::context> context;
    std::shared_ptr<const TlsSettings> settings;
    // For the links to cluster peers; null unless made with `peer_client`.
    std::shared_ptr<asio::ssl::context> client;
  };
  Current current() const {
    std::lock_guard l(mu_);
    return current_;
  }
  // Loads `s` (the listener's address stays as it started); on an error
  // the context in force stays.
  Status reload(const TlsSettings& s);
  // How many reloads took effect.
  uint64_t reloads() const { return reloads_.load(); }

 private:
  TlsContexts() = default;
  static Result<Current> load(const TlsSettings& s, bool peer_client);
  bool peer_client_ = false;
  mutable std::mutex mu_;
  Current current_;
  std::atomic<uint64_t> reloads_{0};
};

}  // namespace strata::server
