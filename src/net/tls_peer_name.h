// The name a TLS client gives the server it dials, on an OpenSSL connection
// before its handshake: SNI for a host name (SNI carries no addresses), and,
// when the certificate must be checked, what it must name — a DNS name, or
// an IP address matched against its IP entries. Shared by the cluster's
// links to peers (server/tls_transport.cpp) and `strata perf` (perf/).
#pragma once

#include <openssl/ssl.h>

#include <string>

namespace strata::net {

// False when OpenSSL refuses the name (then the handshake must not start).
bool name_tls_peer(SSL* ssl, const std::string& host, bool verify);

}  // namespace strata::net
