#include "server/tls_context.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>

namespace strata::server {
namespace {

// OpenSSL's reasons for the last failure, oldest first, and its error queue
// emptied (a later call must not report this one).
std::string openssl_reason() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : buf;
  }
  return out.empty() ? "unknown error" : out;
}

Error tls_error(const std::string& what, const std::string& why) {
  return Error(Errc::invalid_argument, fmt::format("tls.{}: {}", what, why));
}

bool has(const std::vector<std::string>& v, const char* x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// What the server and the peer-client contexts share: versions, options,
// ciphers, and this node's certificate and key.
Status configure_common(SSL_CTX* c, const TlsSettings& s) {
  // Versions: the lowest and highest of those listed (only 1.2 and 1.3
  // exist to list, so the range has no gap).
  const int lo = has(s.versions, "tlsv1.2") ? TLS1_2_VERSION : TLS1_3_VERSION;
  const int hi = has(s.versions, "tlsv1.3") ? TLS1_3_VERSION : TLS1_2_VERSION;
  if (SSL_CTX_set_min_proto_version(c, lo) != 1 || SSL_CTX_set_max_proto_version(c, hi) != 1) {
    return tls_error("versions", openssl_reason());
  }
  SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                             SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_SINGLE_ECDH_USE);
  if (!s.ciphers.empty() && SSL_CTX_set_cipher_list(c, s.ciphers.c_str()) != 1) {
    return tls_error("ciphers", fmt::format("'{}': {}", s.ciphers, openssl_reason()));
  }
  if (!s.ciphersuites.empty() && SSL_CTX_set_ciphersuites(c, s.ciphersuites.c_str()) != 1) {
    return tls_error("ciphersuites", fmt::format("'{}': {}", s.ciphersuites, openssl_reason()));
  }
  if (SSL_CTX_use_certificate_chain_file(c, s.cert_file.c_str()) != 1) {
    return tls_error("cert_file",
                     fmt::format("{}: cannot load: {}", s.cert_file, openssl_reason()));
  }
  if (SSL_CTX_use_PrivateKey_file(c, s.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    const std::string why = openssl_reason();
    if (why.find("mismatch") != std::string::npos) {
      return tls_error("key_file", fmt::format("{}: does not match the certificate in {} ({})",
                                               s.key_file, s.cert_file, why));
    }
    return tls_error("key_file", fmt::format("{}: cannot load: {}", s.key_file, why));
  }
  if (SSL_CTX_check_private_key(c) != 1) {
    return tls_error("key_file", fmt::format("{}: does not match the certificate in {}: {}",
                                             s.key_file, s.cert_file, openssl_reason()));
  }
  return Status::OK();
}

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> make_tls_context(const TlsSettings& s) {
  ERR_clear_error();
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* c = ctx->native_handle();
  STRATA_TRY(configure_common(c, s));
  if (!s.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(c, s.ca_file.c_str(), nullptr) != 1) {
      return tls_error("ca_file", fmt::format("{}: cannot load: {}", s.ca_file, openssl_reason()));
    }
    // The CAs a client may pick its certificate by.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(c, names);
    }
    ERR_clear_error();
  }
  int mode = SSL_VERIFY_NONE;
  if (s.verify_peer) mode = SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE;
  if (s.fail_if_no_peer_cert) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(c, mode, nullptr);
  // Sessions are resumed by tickets; a context of its own per reload keeps
  // tickets of an old key from being taken after a reload.
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_SERVER);
  static const unsigned char kSessionContext[] = "strata-stream";
  SSL_CTX_set_session_id_context(c, kSessionContext, sizeof(kSessionContext) - 1);
  return ctx;
}

Result<std::shared_ptr<asio::ssl::context>> make_tls_client_context(const TlsSettings& s) {
  if (s.ca_file.empty()) {
    return tls_error("ca_file", "required to verify the certificates of the cluster's peers");
  }
  ERR_clear_error();
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX* c = ctx->native_handle();
  STRATA_TRY(configure_common(c, s));
  if (SSL_CTX_load_verify_locations(c, s.ca_file.c_str(), nullptr) != 1) {
    return tls_error("ca_file", fmt::format("{}: cannot load: {}", s.ca_file, openssl_reason()));
  }
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
  return ctx;
}

Result<TlsContexts::Current> TlsContexts::load(const TlsSettings& s, bool peer_client) {
  Current out;
  STRATA_ASSIGN_OR_RETURN(out.context, make_tls_context(s));
  if (peer_client) {
    STRATA_ASSIGN_OR_RETURN(out.client, make_tls_client_context(s));
  }
  out.settings = std::make_shared<const TlsSettings>(s);
  return out;
}

Result<std::unique_ptr<TlsContexts>> TlsContexts::make(const TlsSettings& s, bool peer_client) {
  STRATA_ASSIGN_OR_RETURN(Current c, load(s, peer_client));
  std::unique_ptr<TlsContexts> t(new TlsContexts());
  t->peer_client_ = peer_client;
  t->current_ = std::move(c);
  return t;
}

Status TlsContexts::reload(const TlsSettings& s) {
  STRATA_ASSIGN_OR_RETURN(Current c, load(s, peer_client_));
  {
    std::lock_guard l(mu_);
    current_ = std::move(c);
  }
  reloads_ += 1;
  return Status::OK();
}

}  // namespace strata::server
