#include "fake_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace strata::test {

FakeHttp::FakeHttp(std::function<FakeReply(const std::string&)> handler)
    : handler_(std::move(handler)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(fd_, 16);
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { run(); });
}

FakeHttp::~FakeHttp() {
  stop_ = true;
  thread_.join();
  ::close(fd_);
}

namespace {

// Waits up to `ms` for fd to be readable, checking `stop` every 20 ms.
bool readable(int fd, int ms, const std::atomic<bool>& stop) {
  for (int waited = 0; waited < ms && !stop.load(); waited += 20) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) return true;
  }
  return false;
}

}  // namespace

void FakeHttp::run() {
  while (!stop_.load()) {
    if (!readable(fd_, 1 << 30, stop_)) return;
    int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) continue;
    // Reads the request head and its body (Content-Length).
    std::string req;
    char buf[4096];
    size_t need = std::string::npos;
    while (readable(c, 2000, stop_)) {
      ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) break;
      req.append(buf, size_t(n));
      auto head_end = req.find("\r\n\r\n");
      if (head_end != std::string::npos && need == std::string::npos) {
        auto cl = req.find("Content-Length: ");
        size_t body = cl == std::string::npos ? 0 : std::stoul(req.substr(cl + 16));
        need = head_end + 4 + body;
      }
      if (need != std::string::npos && req.size() >= need) break;
    }
    ++requests_;
    auto sp1 = req.find(' ');
    auto sp2 = req.find(' ', sp1 + 1);
    std::string path = sp1 == std::string::npos ? "" : req.substr(sp1 + 1, sp2 - sp1 - 1);
    FakeReply r = handler_(path);
    // A slow server: wait (interruptibly) before answering.
    auto until = std::chrono::steady_clock::now() + r.delay;
    while (!stop_.load() && std::chrono::steady_clock::now() < until) {
      pollfd p{c, POLLIN, 0};
      ::poll(&p, 1, 20);
    }
    std::string out = "HTTP/1.1 " + std::to_string(r.status) +
                      " X\r\nContent-Type: application/json\r\nConnection: close\r\n"
                      "Content-Length: " +
                      std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
    (void)!::write(c, out.data(), out.size());
    ::close(c);
  }
}

}  // namespace strata::test
