#include "net/tls_peer_name.h"

#include <openssl/x509v3.h>

#include <asio/ip/address.hpp>

namespace strata::net {

bool name_tls_peer(SSL* ssl, const std::string& host, bool verify) {
  asio::error_code not_ip;
  const auto ip = asio::ip::make_address(host, not_ip);
  if (not_ip && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) return false;
  if (!verify) return true;
  X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
  return (not_ip ? X509_VERIFY_PARAM_set1_host(p, host.c_str(), 0)
                 : X509_VERIFY_PARAM_set1_ip_asc(p, ip.to_string().c_str())) == 1;
}

}  // namespace strata::net
