// `strata serve`: a node behind the RabbitMQ Stream protocol
// (server/server.h). Prints `strata serve: listening on HOST:PORT` once
// ready (and `strata serve: http on HOST:PORT` with an HTTP endpoint);
// SIGTERM or SIGINT stop it gracefully (exit 0); SIGHUP re-reads the
// configuration file's users, vhosts and permissions.
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/command.h"
#include "cli/log_output.h"
#include "server/admin_http.h"
#include "server/server.h"

namespace strata::cli {
namespace {

// Longer than the bounded waits of Server::stop() together (appends 30 s,
// connections 5 s, hand-overs 30 s, the blocking pool's grace 5 s, the
// uploaders' last persists).
constexpr std::chrono::seconds kStopDeadline{120};

struct ServeCliFlags {
  std::string config;
  server::ServeFlags flags;
};

// SIGHUP: the users, vhosts and permissions of the file as it is now, and
// the TLS certificate, key, CA and rules. A file that does not load changes
// nothing (and says why); a TLS section that does not load leaves TLS as it
// was; settings other than those take effect at the next start.
void reload(const ServeCliFlags& f, server::Server& s) {
  if (f.config.empty()) {
    spdlog::warn("serve: SIGHUP: no --config file to reload users from");
    return;
  }
  auto cfg = server::load_serve_config_file(f.config, f.flags, objstore::process_env());
  if (!cfg.ok()) {
    spdlog::error("serve: SIGHUP: users not reloaded: {}", cfg.error().to_string());
    return;
  }
  s.reload_users(cfg->server.users);
  spdlog::info("serve: SIGHUP: users, vhosts and permissions reloaded from {}", f.config);
  if (s.tls_port() == 0) return;
  if (auto st = s.reload_tls(cfg->tls); !st.ok()) {
    spdlog::error("serve: SIGHUP: TLS not reloaded: {}", st.error().to_string());
  } else {
    spdlog::info("serve: SIGHUP: TLS certificate reloaded from {}", cfg->tls.cert_file);
  }
}

void run_serve(const ServeCliFlags& f, Context& ctx) {
  auto cfg = server::load_serve_config_file(f.config, f.flags, objstore::process_env());
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("serve"));
  // A node logs at info unless told otherwise (connections opened and
  // closed, logins refused); the other commands at warn.
  if (!ctx.log_level_given) spdlog::set_level(spdlog::level::from_str(cfg->logging.level));
  spdlog::set_formatter(cfg->logging.format == "json" ? json_log_formatter()
                                                      : text_log_formatter());
  // Every thread the server starts inherits this mask: the signals are
  // taken here, by sigwait, and nowhere else.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A peer that closes while a Deliver body goes out by sendfile(2) makes
  // the kernel raise SIGPIPE (sendfile has no MSG_NOSIGNAL, unlike the
  // sends Asio makes), whose default action ends the process: the write
  // must fail with EPIPE instead and end only that connection.
  ::signal(SIGPIPE, SIG_IGN);

  std::string http_listen = cfg->node.http_listen;
  std::string tls_host = cfg->tls.listen.substr(0, cfg->tls.listen.rfind(':'));
  auto srv = server::Server::start(std::move(cfg).value());
  if (!srv.ok()) return ctx.fail(std::move(srv).error());
  server::Server* s = srv->get();
  std::unique_ptr<server::AdminHttp> http;
  if (!http_listen.empty()) {
    auto h = server::AdminHttp::start(
        http_listen, {[s] { return s->metrics_text(); }, [s] { return s->status_json().dump(); },
                      [s](const server::ApiRequest& r) { return s->api(r); }});
    if (!h.ok()) {
      (void)s->stop();
      return ctx.fail(std::move(h).error().with_context("serve"));
    }
    http = std::move(h).value();
  }
  std::cout << fmt::format("strata serve: listening on {}:{}\n", s->host(), s->port());
  if (s->tls_port() != 0) {
    std::cout << fmt::format("strata serve: tls on {}:{}\n", tls_host, s->tls_port());
  }
  if (http) std::cout << fmt::format("strata serve: http on {}:{}\n", http->host(), http->port());
  std::cout.flush();

  int sig = 0;
  for (;;) {
    sigwait(&set, &sig);
    if (sig != SIGHUP) break;
    reload(f, *s);
  }
  spdlog::info("serve: {} received, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  // Every step of a stop is bounded; should one hang all the same, the
  // process must still end, saying where it hung. What is stored survives
  // that as it survives a crash (the logs recover their tails at open).
  // The watchdog may wake after the server is gone (the process's exit
  // hanging): it asks the server only while `stopping` says it is there.
  struct StopWatch {
    std::mutex mu;
    bool stopping = true;
  };
  auto watch = std::make_shared<StopWatch>();
  std::thread([s, watch] {
    std::this_thread::sleep_for(kStopDeadline);
    std::lock_guard l(watch->mu);
    const std::string stage = watch->stopping ? s->stop_stage() : "done";
    std::cerr << fmt::format(
        "strata serve: stopping did not finish within {} s (at: {}); exiting without it\n",
        kStopDeadline.count(), stage);
    std::cerr.flush();
    std::_Exit(stage == "done" ? 0 : 70);
  }).detach();
  if (http) http->stop();
  Status st = s->stop();
  {
    std::lock_guard l(watch->mu);
    watch->stopping = false;
  }
  if (!st.ok()) return ctx.fail(Error(st.error()).with_context("serve: closing the node"));
}

Registrar reg_serve([](CLI::App& app, Context& ctx) {
  auto f = std::make_shared<ServeCliFlags>();
  auto* cmd = app.add_subcommand("serve", "Serve streams over the RabbitMQ Stream protocol");
  cmd->add_option("--config", f->config, "JSON configuration file (node settings, server, users)");
  cmd->add_option("--data-dir", f->flags.data_dir, "Data directory (overrides the file's)");
  cmd->add_option("--listen", f->flags.listen,
                  "host:port of the stream listener (default "
                  "127.0.0.1:5552; port 0: a free one)");
  cmd->add_option("--advertised-host", f->flags.advertised_host,
                  "Host clients are told to connect to (default: the listener's)");
  cmd->add_option("--advertised-port", f->flags.advertised_port,
                  "Port clients are told to connect to (default: the listener's)");
  cmd->add_option("--http", f->flags.http, "Serve /metrics and /status on host:port");
  cmd->add_option("--s3-endpoint", f->flags.s3_endpoint,
                  "Use an S3 endpoint as object store (credentials from AWS_ACCESS_KEY_ID / "
                  "AWS_SECRET_ACCESS_KEY)");
  cmd->add_option("--bucket", f->flags.bucket, "S3 bucket (with --s3-endpoint)");
  cmd->callback([f, &ctx] { run_serve(*f, ctx); });
});

}  // namespace
}  // namespace strata::cli
