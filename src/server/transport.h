// Transport: the byte stream under a client connection's frames
// (frame_channel.h) — plain TCP, or TLS over it (tls_context.h). The
// channel reads, writes and closes through it and never sees which. A
// link to a cluster peer (owner_link.h) is the client's side of one.
//
// Deliver frames (delivery.h, ChunkFrame) go out as the transport can:
//  - plain TCP: the in-memory part by write, a file part by sendfile(2),
//    never entering user space;
//  - TLS (tls_transport.cpp: OpenSSL on the socket itself): with kernel
//    TLS, records are encrypted by the kernel and a file part goes by
//    SSL_sendfile (sendfile() true); without it (no `tls` module, or an
//    OpenSSL built without it), encrypted in user space, so the connection
//    asks its deliveries for in-memory bodies (sendfile() false: read on
//    the blocking pool, not on the event loop). TlsInfo::kernel_send and
//    the status's `zero_copy` say which path runs.
//
// Thread safety: the connection's strand (the socket's executor); every
// completion runs there.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "common/task.h"
#include "server/delivery.h"

namespace strata::server {

// What the TLS handshake settled, for the log, EXTERNAL and the status.
struct TlsInfo {
  std::string version;  // "TLSv1.3"
  std::string cipher;   // "TLS_AES_256_GCM_SHA384"
  // The client certificate, when one was presented and verified against
  // the CA: its subject as RFC 4514 text ("CN=app,O=Example") and its
  // common name.
  bool peer_verified = false;
  std::string peer_subject;
  std::string peer_common_name;
  // Records sent by the kernel (kernel TLS): bodies go by SSL_sendfile.
  bool kernel_send = false;
};

class Transport {
 public:
  using IoDone = std::function<void(const std::error_code&, size_t)>;
  virtual ~Transport() = default;

  // The TCP socket underneath (addresses, options).
  virtual asio::ip::tcp::socket& tcp() = 0;
  // Calls `ready` once frames may flow: at once for plain TCP; for TLS
  // after the handshake, which must finish within `deadline` (an error
  // then: asio::error::timed_out, or the handshake's).
  virtual void start(std::chrono::milliseconds deadline,
                     std::function<void(std::error_code)> ready) = 0;
  virtual void read_some(asio::mutable_buffer into, IoDone done) = 0;
  // Writes all of `buffers` (they stay valid until `done`).
  virtual void write(const std::vector<asio::const_buffer>& buffers, IoDone done) = 0;
  // Writes one Deliver frame, file part included; `done` once, with the
  // first error or success.
  virtual void write_frame(std::shared_ptr<const ChunkFrame> frame,
                           std::function<void(std::error_code)> done) = 0;
  // Ends the connection after what was written, telling the peer first:
  // plain TCP half-closes, TLS sends close_notify (so the peer can tell
  // the end from a truncation). What the peer still sends is read and
  // dropped until it ends its side too — closing with unread bytes resets
  // the connection, which can destroy the last frames before the peer
  // reads them — and then `done` runs, once; close() ends it sooner. No
  // read or write may be in flight.
  virtual void finish(std::function<void()> done) = 0;
  // Closes at once; operations in flight end with an error.
  virtual void close() = 0;
  // Whether a file part goes out without a copy (sendfile).
  virtual bool sendfile() const = 0;
  // Null for plain TCP; for TLS, set once start() succeeded.
  virtual const TlsInfo* tls() const = 0;
  // After start() failed over TLS: why the other side's certificate was
  // refused ("certificate has expired"): the server's on a link to a peer,
  // a client's on the listener; else "".
  virtual std::string verify_error() const { return ""; }
};

std::unique_ptr<Transport> plain_transport(asio::ip::tcp::socket socket, Strand strand);
// Reads and drops what arrives on `socket` until its end (or an error, or
// close()), then calls `done`: the end of both transports' finish().
void drain_socket(asio::ip::tcp::socket& socket, const Strand& strand, std::function<void()> done);
// `context` stays alive as long as the transport.
std::unique_ptr<Transport> tls_transport(asio::ip::tcp::socket socket, Strand strand,
                                         std::shared_ptr<asio::ssl::context> context);
// The client's side, for a link to a cluster peer at `host` (a connected
// socket): SNI for a host name; with `verify_host`, the peer's certificate
// must name `host` (a DNS name, or an IP address in its IP entries) besides
// being verified by the context's CAs.
std::unique_ptr<Transport> tls_client_transport(asio::ip::tcp::socket socket, Strand strand,
                                                std::shared_ptr<asio::ssl::context> context,
                                                const std::string& host, bool verify_host);

}  // namespace strata::server
