// RabbitMQ 3.10.8 (Debian's rabbitmq-server) as the reference server: loopback only, its own epmd on a private port,
// its data in a temp dir, stopped by pid. Facts: /work/shared/reference/test-servers.md.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Child, freePort, waitForPort } from "./process.mjs";

const SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";

export class RabbitServer {
  // prometheus: also run rabbitmq_prometheus, its /metrics at this.prometheus (http://127.0.0.1:PORT).
  constructor(dir, { prometheus = false } = {}) {
    this.kind = "rabbitmq";
    this.dir = dir;
    this.host = "127.0.0.1";
    this.withPrometheus = prometheus;
    this.nodeName = `strata-js-${process.pid}@localhost`;
  }

  // The node's own directory, $RABBITMQ_MNESIA_BASE/<nodename>: its streams' osiris files are under stream/.
  get nodeDir() { return path.join(this.dir, "mnesia", this.nodeName); }

  async start() {
    // A scenario abandoned on failure may still try to restart a server the runner has closed.
    if (this.closed) throw new Error("the server was closed by the runner");
    if (!fs.existsSync(SERVER)) throw new Error(`${SERVER} missing: install Debian's rabbitmq-server`);
    if (!this.port) {
      this.port = await freePort();
      this.epmdPort = await freePort();
      this.distPort = await freePort();
      if (this.withPrometheus) this.prometheusPort = await freePort();
    }
    fs.mkdirSync(path.join(this.dir, "home"), { recursive: true });
    const plugins = this.withPrometheus ? "rabbitmq_stream,rabbitmq_prometheus" : "rabbitmq_stream";
    fs.writeFileSync(path.join(this.dir, "enabled_plugins"), `[${plugins}].\n`);
    fs.writeFileSync(path.join(this.dir, "rabbitmq.conf"), [
      "listeners.tcp = none",
      `stream.listeners.tcp.1 = 127.0.0.1:${this.port}`,
      "stream.advertised_host = 127.0.0.1",
      `stream.advertised_port = ${this.port}`,
      "log.console = true",
      "log.console.level = info",
      "log.file = false",
      ...(this.withPrometheus ? ["prometheus.tcp.ip = 127.0.0.1", `prometheus.tcp.port = ${this.prometheusPort}`] : []),
      "",
    ].join("\n"));
    const env = (this.env = {
      ...process.env,
      HOME: path.join(this.dir, "home"),
      ERL_EPMD_ADDRESS: "127.0.0.1",
      ERL_EPMD_PORT: String(this.epmdPort),
      RABBITMQ_NODENAME: this.nodeName,
      RABBITMQ_NODE_IP_ADDRESS: "127.0.0.1",
      RABBITMQ_DIST_PORT: String(this.distPort),
      RABBITMQ_MNESIA_BASE: path.join(this.dir, "mnesia"),
      RABBITMQ_LOG_BASE: path.join(this.dir, "log"),
      RABBITMQ_CONFIG_FILE: path.join(this.dir, "rabbitmq.conf"),
      RABBITMQ_ENABLED_PLUGINS_FILE: path.join(this.dir, "enabled_plugins"),
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: "-kernel inet_dist_use_interface {127,0,0,1} -start_epmd false",
    });
    // Our own epmd (a direct child, stopped by its pid) so the node never starts a shared daemon.
    if (!this.epmd || !this.epmd.running) {
      this.epmd = new Child("epmd", ["epmd", "-port", String(this.epmdPort), "-address", "127.0.0.1"], { env });
      await waitForPort(this.epmdPort, 10000);
    }
    this.proc = new Child("rabbitmq-server", [SERVER], { env, cwd: this.dir });
    await this.proc.waitForOutput(/Server startup complete/, 90000);
    await waitForPort(this.port, 30000);
    if (this.withPrometheus) {
      await waitForPort(this.prometheusPort, 30000);
      this.prometheus = `http://127.0.0.1:${this.prometheusPort}`;
    }
  }

  // Runs one of RabbitMQ's CLI tools (rabbitmq-streams, rabbitmqctl, …) against this node; its stdout, or an error
  // with its output.
  cli(tool, args, timeoutMs = 60000) {
    if (!this.env) throw new Error("the server was never started");
    const r = spawnSync(path.join(path.dirname(SERVER), tool), args, { env: this.env, cwd: this.dir, timeout: timeoutMs, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${tool} ${args.join(" ")}: exit ${r.status}: ${r.stdout}${r.stderr}`);
    return r.stdout;
  }

  // `rabbitmqctl export_definitions FILE`: the node's definitions (queues with their arguments, …) as JSON.
  exportDefinitions(file) {
    this.cli("rabbitmqctl", ["export_definitions", file]);
    return JSON.parse(fs.readFileSync(file, "utf8"));
  }

  // `rabbitmqctl stop` (the node stops its applications and closes its files), then waits for the server to exit.
  async shutdown(timeoutMs = 60000) {
    if (!this.proc || !this.proc.running) return;
    this.cli("rabbitmqctl", ["stop"], timeoutMs);
    let timer;
    const res = await Promise.race([this.proc.exited,
      new Promise((r) => { timer = setTimeout(() => r("timeout"), timeoutMs); })]);
    clearTimeout(timer);
    if (res === "timeout") throw new Error(`rabbitmq-server still running ${timeoutMs} ms after rabbitmqctl stop`);
  }

  async stop() {
    const r = this.proc ? await this.proc.stop(60000) : undefined;
    return r;
  }

  async restart() {
    await this.stop();
    await this.start();
  }

  async close() {
    this.closed = true;
    await this.stop();
    if (this.epmd) await this.epmd.stop(5000);
  }

  logs() { return this.proc ? this.proc.out + this.proc.err : ""; }
}
