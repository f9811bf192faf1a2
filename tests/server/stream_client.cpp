#include "server/stream_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <regex>
#include <thread>

#include "proto/client_handshake.h"
#include "support/temp_dir.h"

#ifndef STRATA_BIN
#error "STRATA_BIN must point at the strata binary"
#endif

namespace strata::test {

Result<StreamClient> StreamClient::connect(int port, const std::string& host) {
  StreamClient c;
  c.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c.fd_ < 0) return Error(Errc::io, "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(c.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return Error(Errc::io, "connect to port " + std::to_string(port) + ": " + strerror(errno));
  }
  int one = 1;
  ::setsockopt(c.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return c;
}

StreamClient::StreamClient(StreamClient&& o) noexcept {
  *this = std::move(o);
}
StreamClient& StreamClient::operator=(StreamClient&& o) noexcept {
  std::swap(fd_, o.fd_);
  in_ = std::move(o.in_);
  next_corr_ = o.next_corr_;
  skipped = std::move(o.skipped);
  peer_properties = std::move(o.peer_properties);
  open_response = std::move(o.open_response);
  server_tune = o.server_tune;
  return *this;
}
StreamClient::~StreamClient() {
  if (fd_ >= 0) ::close(fd_);
}

Status StreamClient::send_raw(BytesView b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return Error(Errc::closed, std::string("send: ") + strerror(errno));
    off += size_t(n);
  }
  return Status::OK();
}

size_t StreamClient::send_within(BytesView b, std::chrono::milliseconds wait) {
  size_t off = 0;
  while (off < b.size()) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, int(wait.count())) <= 0) break;
    ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    off += size_t(n);
  }
  return off;
}

Result<Bytes> StreamClient::read_frame(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (in_.size() >= 4) {
      uint32_t size = get_be32(u8(in_.data()));
      if (in_.size() >= 4 + size_t(size)) {
        Bytes body = in_.substr(4, size);
        in_.erase(0, 4 + size_t(size));
        return body;
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Error(Errc::timeout, "no frame within the timeout");
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, int(left.count()));
    if (r == 0) continue;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0) return Error(Errc::closed, "server closed the connection");
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error(Errc::closed, std::string("recv: ") + strerror(errno));
    }
    in_.append(buf, size_t(n));
  }
}

Result<proto::ServerFrame> StreamClient::read(std::chrono::milliseconds timeout) {
  auto body = read_frame(timeout);
  if (!body.ok()) return std::move(body).error();
  // Deliver frames hold views into the body: keep it alive.
  static thread_local std::vector<Bytes> keep;
  if (keep.size() > 4096) keep.erase(keep.begin(), keep.begin() + 2048);
  keep.push_back(std::move(body).value());
  return proto::decode_server_frame(keep.back());
}

bool StreamClient::closed_by_server(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    auto f = read_frame(left);
    if (!f.ok()) return f.error().code == Errc::closed;
  }
}

Status StreamClient::handshake(const std::string& user, const std::string& password,
                               bool exchange_versions, const std::string& vhost) {
  using namespace proto;
  ClientHandshakeOptions o;
  o.properties = {{"product", "strata-test"}};
  o.user = user;
  o.password = password;
  o.virtual_host = vhost;
  if (exchange_versions) o.versions = supported_client_versions();
  ClientHandshake hs(std::move(o));
  Bytes out = hs.start();
  while (!hs.done()) {
    STRATA_TRY(send_raw(out));
    auto f = read();
    if (!f.ok()) return std::move(f).error();
    STRATA_ASSIGN_OR_RETURN(out, hs.on(*f));
  }
  STRATA_TRY(send_raw(out));
  peer_properties.properties = hs.server_properties();
  server_tune = hs.server_tune();
  open_response = hs.open_response();
  next_corr_ = hs.next_correlation();
  return Status::OK();
}

ServeProcess ServeProcess::start(const std::string& data_dir, const std::vector<std::string>& extra,
                                 const std::string& log_dir) {
  std::vector<std::string> argv = {STRATA_BIN, "serve",    "--data-dir",
                                   data_dir,   "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ServeProcess s;
  s.proc_ = Process::spawn(argv, log_dir.empty() ? data_dir + "-logs" : log_dir);
  auto out = s.proc_.wait_for_output("strata serve: listening on ", 60s);
  if (out) {
    // The line may still be arriving: wait for its end.
    std::smatch m;
    for (int i = 0; i < 1000; ++i) {
      static const std::regex re("listening on 127\\.0\\.0\\.1:([0-9]+)\n");
      if (std::regex_search(*out, m, re)) {
        s.port_ = std::stoi(m[1]);
        break;
      }
      out = s.proc_.wait_for_output("\n", 1s);
      if (!out) break;
    }
  }
  return s;
}

std::string ServeProcess::http_url(std::chrono::milliseconds wait) {
  static const std::regex re("http on (127\\.0\\.0\\.1:[0-9]+)\n");
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    std::smatch m;
    const std::string out = proc_.stdout_text();
    if (std::regex_search(out, m, re)) return "http://" + m[1].str();
    if (std::chrono::steady_clock::now() >= deadline) return "";
    std::this_thread::sleep_for(50ms);
  }
}

std::optional<int> ServeProcess::stop(std::chrono::milliseconds timeout) {
  proc_.kill(SIGTERM);
  auto st = proc_.wait(timeout);
  if (st || !proc_.running()) return st;
  // A server that does not stop is a bug to be found, not waited out: show
  // where each of its threads is (gdb, when the machine has it) and what
  // it logged, then kill it so the test ends.
  std::cerr << "strata serve (pid " << proc_.pid() << ") did not exit within " << timeout.count()
            << " ms of SIGTERM; its threads:\n";
  auto bt = run(
      {"gdb", "-p", std::to_string(proc_.pid()), "-batch", "-nx", "-ex", "thread apply all bt 30"},
      {}, std::chrono::seconds(60));
  std::cerr << bt.output << "\n--- its stderr:\n"
            << proc_.stderr_text() << "\n--- its stdout (tail):\n";
  const std::string out = proc_.stdout_text();
  std::cerr << out.substr(out.size() > 20000 ? out.size() - 20000 : 0) << std::endl;
  proc_.kill(SIGKILL);
  (void)proc_.wait(std::chrono::seconds(10));
  return std::nullopt;
}

bool wait_served(StreamClient& c, const std::string& stream, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (!c.send(proto::MetadataRequest{c.corr(), {stream}}).ok()) return false;
    auto m = c.expect<proto::MetadataResponse>();
    if (!m.ok()) return false;
    if (m->streams.size() == 1 && m->streams[0].code == proto::ResponseCode::ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

proto::PublishRequest make_publish(uint8_t publisher_id, uint64_t first_id,
                                   const std::vector<std::string>& bodies, Bytes* storage) {
  size_t total = 0;
  for (const auto& b : bodies) total += 4 + b.size();
  storage->clear();
  storage->reserve(total);
  proto::PublishRequest p;
  p.publisher_id = publisher_id;
  for (size_t i = 0; i < bodies.size(); ++i) {
    size_t at = storage->size();
    proto::append_simple_entry(storage, bodies[i]);
    p.messages.push_back(
        {first_id + i, std::nullopt, BytesView(storage->data() + at, storage->size() - at)});
  }
  return p;
}

Result<std::vector<std::string>> chunk_records(const proto::DeliverFrame& d) {
  auto h = proto::decode_osiris_header(d.chunk);
  if (!h.ok()) return std::move(h).error();
  // The data follows the header whatever its bloom size says (RabbitMQ
  // sends the stored header but not the filter bytes).
  BytesView data = d.chunk.substr(proto::kOsirisChunkHeaderSize, h->data_len);
  if (data.size() != h->data_len) return Error(Errc::corrupt, "chunk shorter than data_len");
  uint32_t crc = uint32_t(::crc32(0L, u8(data.data()), uInt(data.size())));
  if (crc != h->crc) return Error(Errc::corrupt, "chunk CRC mismatch");
  std::vector<std::string> out;
  proto::OsirisEntryReader r(data);
  proto::OsirisEntry e;
  while (r.next(&e)) {
    if (e.sub_batch) return Error(Errc::corrupt, "unexpected sub-batch");
    out.emplace_back(e.body);
  }
  if (r.failed()) return r.error();
  if (out.size() != h->num_entries) return Error(Errc::corrupt, "entry count mismatch");
  return out;
}

}  // namespace strata::test
