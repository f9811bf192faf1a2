#include "server/admin_http.h"

#include <fmt/format.h>
#include <httplib.h>

#include <asio/ip/address.hpp>
#include <atomic>
#include <charconv>
#include <chrono>
#include <memory>
#include <thread>

#include "server/console_assets.h"

namespace strata::server {

struct AdminHttp::Impl {
  httplib::Server svr;
};

namespace {

Result<std::pair<std::string, int>> parse_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon > 0) {
    auto [p, ec] = std::from_chars(listen.data() + colon + 1, listen.data() + listen.size(), port);
    if (ec != std::errc() || p != listen.data() + listen.size()) port = -1;
  }
  if (port < 0 || port > 65535) {
    return Error(
        Errc::invalid_argument,
        fmt::format("http listen address '{}': expected host:port (port 0..65535)", listen));
  }
  return std::make_pair(listen.substr(0, colon), port);
}

// As the stream listener decides it (asio's is_loopback), and an IPv4
// loopback address mapped into IPv6 too.
bool is_loopback_address(const std::string& text) {
  std::error_code ec;
  auto a = asio::ip::make_address(text, ec);
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return a.is_loopback();
}

}  // namespace

Result<std::unique_ptr<AdminHttp>> AdminHttp::start(const std::string& listen,
                                                    AdminHandlers handlers) {
  STRATA_ASSIGN_OR_RETURN(auto hp, parse_listen(listen));
  std::unique_ptr<AdminHttp> a(new AdminHttp());
  a->impl_ = std::make_unique<Impl>();
  auto& svr = a->impl_->svr;
  svr.Get("/metrics", [h = handlers](const httplib::Request&, httplib::Response& res) {
    res.set_content(h.metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  svr.Get("/status", [h = handlers](const httplib::Request&, httplib::Response& res) {
    res.set_content(h.status(), "application/json");
  });
  if (handlers.api) {
    auto serve_api = [h = handlers](const httplib::Request& req, httplib::Response& res) {
      ApiRequest r;
      r.method = req.method;
      r.path = req.path;
      r.body = req.body;
      r.from_vhost = req.get_param_value("from_vhost");
      r.page = req.get_param_value("page");
      r.page_size = req.get_param_value("page_size");
      r.stream = req.get_param_value("stream");
      r.reference = req.get_param_value("reference");
      r.vhost = req.get_param_value("vhost");
      r.authorization = req.get_header_value("Authorization");
      r.loopback = is_loopback_address(req.remote_addr);
      ApiReply a = h.api(r);
      res.status = a.status;
      // Not to a script that says it is one (the web console): a browser
      // would answer the challenge with its own login dialog.
      if (a.status == 401 && !req.has_header("X-Requested-With")) {
        res.set_header("WWW-Authenticate", "Basic realm=\"strata\"");
      }
      if (!a.body.empty()) res.set_content(a.body, "application/json");
    };
    // The web console (console_assets.h): static files; what they show
    // comes from /api with the credentials the user logs in with.
    auto to_console = [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/console/");
    };
    svr.Get("/", to_console);
    svr.Get("/console", to_console);
    svr.Get(R"(/console/(.*))", [](const httplib::Request& req, httplib::Response& res) {
      std::string name = req.matches[1];
      if (name.empty()) name = "index.html";
      for (const auto& a : console_assets()) {
        if (a.name != name) continue;
        const std::string_view type = name.ends_with(".html") ? "text/html; charset=utf-8"
                                      : name.ends_with(".js") ? "text/javascript; charset=utf-8"
                                                              : "text/css; charset=utf-8";
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Content-Type-Options", "nosniff");
        // Nothing from elsewhere, no inline script, not framed.
        res.set_header("Content-Security-Policy",
                       "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
        res.set_content(std::string(a.body), std::string(type));
        return;
      }
      res.status = 404;
      res.set_content("no such file of the console\n", "text/plain");
    });
    svr.Get("/api/.*", serve_api);
    svr.Put("/api/.*", serve_api);
    svr.Delete("/api/.*", serve_api);
    svr.Patch("/api/.*", serve_api);
    svr.Post("/api/.*", serve_api);
  }
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second node given the same --http address binds it too and the kernel
  // splits requests between the two (a Prometheus scraping either at
  // random). The port must be refused instead.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // A fixed count, not one per CPU. Each keep-alive connection holds a
  // worker while it idles, and a browser on the console keeps up to six
  // open beside Prometheus and the CLI: eight workers, and idle
  // connections let go after 2 s, so no request waits on another's idle one.
  svr.new_task_queue = [] { return new httplib::ThreadPool(8); };
  svr.set_keep_alive_max_count(100);
  svr.set_keep_alive_timeout(2);
  // A response httplib writes in two pieces (head, then a small body) on a
  // kept-alive connection otherwise waits for the client's delayed ACK
  // (Nagle): ~40 ms added to every small API answer a browser or
  // Prometheus asks for over its open connection.
  svr.set_tcp_nodelay(true);
  a->host_ = hp.first;
  int port = hp.second;
  if (port == 0) {
    port = svr.bind_to_any_port(a->host_);
  } else if (!svr.bind_to_port(a->host_, port)) {
    port = -1;
  }
  if (port <= 0) {
    return Error(Errc::io, fmt::format("http: cannot listen on {} (address in use or not "
                                       "local?)",
                                       listen));
  }
  a->port_ = port;
  auto ended = std::make_shared<std::atomic<bool>>(false);
  a->thread_ = std::thread([impl = a->impl_.get(), ended] {
    impl->svr.listen_after_bind();
    ended->store(true);
  });
  // Bound already: connections wait in the backlog until the thread accepts.
  // But httplib's stop() only stops a server whose listen loop runs: a stop
  // before the thread got there (a SIGTERM right after start, on a loaded
  // machine) was lost and the join hung. So return once it runs (or ended).
  while (!svr.is_running() && !ended->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (ended->load()) {
    return Error(Errc::io, fmt::format("http: the listener on {} stopped at once", listen));
  }
  return a;
}

std::string AdminHttp::url() const {
  return fmt::format("http://{}:{}", host_, port_);
}

void AdminHttp::stop() {
  if (impl_) impl_->svr.stop();
  if (thread_.joinable()) thread_.join();
}

AdminHttp::~AdminHttp() {
  stop();
}

Result<std::string> admin_get(const std::string& url, const std::string& path, int timeout_ms) {
  httplib::Client cli(url);
  cli.set_connection_timeout(std::chrono::milliseconds(timeout_ms));
  cli.set_read_timeout(std::chrono::milliseconds(timeout_ms));
  auto res = cli.Get(path);
  if (!res) {
    return Error(Errc::unavailable,
                 fmt::format("GET {}{}: {}", url, path, httplib::to_string(res.error())));
  }
  if (res->status != 200) {
    return Error(Errc::io, fmt::format("GET {}{}: HTTP {}", url, path, res->status));
  }
  return res->body;
}

Result<ApiReply> api_request(const std::string& url, const ApiCall& call, int timeout_ms) {
  httplib::Client cli(url);
  cli.set_connection_timeout(std::chrono::milliseconds(timeout_ms));
  cli.set_read_timeout(std::chrono::milliseconds(timeout_ms));
  cli.set_write_timeout(std::chrono::milliseconds(timeout_ms));
  cli.set_basic_auth(call.user, call.password);
  if (call.method != "GET" && call.method != "PUT" && call.method != "DELETE" &&
      call.method != "POST" && call.method != "PATCH") {
    return Error(Errc::invalid_argument, "api_request: method " + call.method);
  }
  httplib::Result res = call.method == "GET"    ? cli.Get(call.path)
                        : call.method == "PUT"  ? cli.Put(call.path, call.body, "application/json")
                        : call.method == "POST" ? cli.Post(call.path, call.body, "application/json")
                        : call.method == "PATCH"
                            ? cli.Patch(call.path, call.body, "application/json")
                            : cli.Delete(call.path);
  if (!res) {
    return Error(Errc::unavailable, fmt::format("{} {}{}: {}", call.method, url, call.path,
                                                httplib::to_string(res.error())));
  }
  return ApiReply{res->status, res->body};
}

}  // namespace strata::server
