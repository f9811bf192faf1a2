// `strata perf`: load a stream protocol server (strata serve or RabbitMQ)
// with N publishers and M consumers; see perf/perf_run.h.
#include <iostream>

#include "cli/command.h"
#include "perf/perf_run.h"

namespace strata::cli {
namespace {

struct PerfFlags {
  perf::PerfOptions o;
  std::string uri;
  std::string offset = "next";
  std::vector<std::string> stream_args;
  std::string host;
  int port = 0;
  bool tls = false;
  bool tls_no_verify = false;
};

Registrar reg_perf([](CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<PerfFlags>();
  auto& o = flags->o;
  auto* cmd = app.add_subcommand(
      "perf", "Load a RabbitMQ Stream protocol server (strata serve or RabbitMQ) and measure it");
  cmd->add_option("--uri", flags->uri,
                  "rabbitmq-stream://USER:PASS@HOST:PORT/VHOST (or HOST:PORT)");
  cmd->add_option("--host", flags->host, "Server host (default 127.0.0.1)");
  cmd->add_option("--port", flags->port, "Server port (default 5552)");
  cmd->add_flag(
      "--tls", flags->tls,
      "Connect over TLS (also a rabbitmq-stream+tls:// URI; RabbitMQ's TLS port is 5551)");
  cmd->add_option("--tls-ca-file", o.connect.tls_options.ca_file,
                  "CA certificates the server's certificate is checked against (default: the "
                  "system's)");
  cmd->add_option("--tls-cert-file", o.connect.tls_options.cert_file,
                  "Client certificate (PEM; with --tls-key-file)");
  cmd->add_option("--tls-key-file", o.connect.tls_options.key_file, "Client key (PEM)");
  cmd->add_option("--tls-server-name", o.connect.tls_options.server_name,
                  "Name the server's certificate must carry, and SNI (default: the host)");
  cmd->add_flag("--tls-no-verify", flags->tls_no_verify,
                "Do not check the server's certificate (encrypted, not authenticated)");
  cmd->add_option("--username", o.connect.username)->capture_default_str();
  cmd->add_option("--password", o.connect.password)->capture_default_str();
  cmd->add_option("--stream", o.stream, "Stream (created if missing)")->capture_default_str();
  cmd->add_flag("--delete-stream", o.delete_stream, "Delete the stream at the end");
  cmd->add_option("--stream-arg", flags->stream_args,
                  "KEY=VALUE argument of the stream's Create (repeatable): max-length-bytes, "
                  "initial-cluster-size, x-strata-confirm, ...");
  cmd->add_option("--producers,-x", o.producers, "Publishers")->capture_default_str();
  cmd->add_option("--consumers,-y", o.consumers, "Consumers")->capture_default_str();
  cmd->add_option("--size,-s", o.message_size, "Message size in bytes (>= 16 for latency)")
      ->capture_default_str();
  cmd->add_option("--batch-size", o.batch_size, "Entries per Publish frame")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  cmd->add_option("--sub-entry-size", o.sub_entry_size,
                  "Messages per (uncompressed) sub-batch entry; 0 = simple entries")
      ->capture_default_str();
  cmd->add_option("--confirms,-c", o.confirm_window, "Unconfirmed messages allowed per producer")
      ->check(CLI::Range(1u, 100000000u))
      ->capture_default_str();
  cmd->add_option("--rate,-r", o.rate, "Messages/s over all producers; 0 = unlimited")
      ->capture_default_str();
  cmd->add_option("--time,-z", o.time_s, "Seconds to publish (unless --messages)")
      ->capture_default_str();
  cmd->add_option("--messages,-C", o.messages,
                  "Messages to publish in all (then stop); with --producers 0, messages each "
                  "consumer reads (then stop; fewer is a failure)");
  cmd->add_option("--offset,-o", flags->offset, "first|last|next|OFFSET|@MS_SINCE_EPOCH")
      ->capture_default_str();
  cmd->add_option(
         "--filter-values", o.filter_values,
         "Publish with filter values (Publish v2): frame k's messages carry \"v<k mod N>\"")
      ->capture_default_str();
  cmd->add_option("--filter", o.filter,
                  "Consume with a filter (filter.0): only chunks that may hold this value");
  cmd->add_option("--credit", o.initial_credit, "Initial credit (chunks) per consumer")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", o.drain_timeout_s,
                  "Seconds to wait for confirms and consumers after publishing stops")
      ->capture_default_str();
  cmd->callback([flags, &ctx] {
    auto& o = flags->o;
    if (!flags->uri.empty()) {
      auto s = perf::apply_uri(flags->uri, &o.connect);
      if (!s.ok()) return ctx.fail(s.error());
    }
    if (flags->uri.rfind("rabbitmq-stream+tls://", 0) == 0) flags->tls = true;
    if (flags->tls) {
      o.connect.tls_options.verify = !flags->tls_no_verify;
      auto tls = perf::make_tls_client_context(o.connect.tls_options);
      if (!tls.ok()) return ctx.fail(tls.error());
      o.connect.tls = std::move(tls).value();
    }
    if (!flags->host.empty()) o.connect.host = flags->host;
    if (flags->port != 0) {
      if (flags->port < 0 || flags->port > 65535) return ctx.fail("--port: out of range");
      o.connect.port = uint16_t(flags->port);
    }
    for (const std::string& a : flags->stream_args) {
      const size_t eq = a.find('=');
      if (eq == std::string::npos || eq == 0) {
        return ctx.fail("--stream-arg: '" + a + "' is not KEY=VALUE");
      }
      o.stream_args.emplace_back(a.substr(0, eq), a.substr(eq + 1));
    }
    auto off = perf::parse_offset_spec(flags->offset);
    if (!off.ok()) return ctx.fail(off.error());
    o.offset = *off;
    // With --json the progress lines go to stderr so stdout is one document.
    auto r = perf::run_perf(o, ctx.json ? std::cerr : std::cout);
    if (!r.ok()) return ctx.fail(r.error());
    if (ctx.json) {
      ctx.print_json(r->json);
    } else {
      std::cout << perf::format_summary(r->json);
    }
    if (!r->ok) ctx.exit_code = 1;
  });
});

}  // namespace
}  // namespace strata::cli
