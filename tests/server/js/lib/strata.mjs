// `strata serve` as a child: a data dir in the test's temp dir, 127.0.0.1 port 0 on first start (the same port on a
// restart, so clients reconnect to the address they know), ready when it prints its "listening on" line.
import fs from "node:fs";
import path from "node:path";
import { Child } from "./process.mjs";

export class StrataServer {
  // config: an object written as the --config JSON file (or undefined); args: extra flags.
  constructor(dir, { bin, config, args = [] } = {}) {
    this.kind = "strata";
    this.dir = dir;
    this.bin = bin;
    this.config = config;
    this.args = args;
    this.host = "127.0.0.1";
    this.port = 0;
  }

  async start() {
    // A scenario abandoned on failure may still try to restart a server the runner has closed.
    if (this.closed) throw new Error("the server was closed by the runner");
    if (!this.bin || !fs.existsSync(this.bin)) throw new Error(`strata binary not found (${this.bin}); set STRATA_BIN`);
    const argv = [this.bin, "serve", "--data-dir", path.join(this.dir, "data"), "--listen", `127.0.0.1:${this.port}`];
    if (this.config) {
      const file = path.join(this.dir, "strata-serve.json");
      fs.writeFileSync(file, JSON.stringify(this.config, null, 2));
      argv.push("--config", file);
    }
    argv.push(...this.args);
    this.proc = new Child("strata serve", argv, { cwd: this.dir });
    const m = await this.proc.waitForOutput(/strata serve: listening on ([0-9.]+):([0-9]+)\r?\n/, 60000);
    this.host = m[1];
    this.port = Number(m[2]);
    if (this.config?.tls?.listen) {
      const t = await this.proc.waitForOutput(/strata serve: tls on ([0-9.]+):([0-9]+)\r?\n/, 10000);
      // A restart keeps the TLS port too (the config asks for the one it got).
      this.tlsPort = Number(t[2]);
      this.config.tls.listen = `127.0.0.1:${this.tlsPort}`;
    }
    if (argv.includes("--http")) {
      const h = await this.proc.waitForOutput(/strata serve: http on ([0-9.]+:[0-9]+)\r?\n/, 10000);
      this.http = `http://${h[1]}`;
    }
  }

  // The node's /status document (needs --http).
  async status() {
    if (!this.http) throw new Error("strata serve was started without --http");
    const res = await fetch(`${this.http}/status`);
    if (!res.ok) throw new Error(`GET ${this.http}/status: HTTP ${res.status}`);
    return res.json();
  }

  // SIGTERM must stop it gracefully with exit 0 (the contract); a test that restarts checks that.
  async stop() {
    if (!this.proc) return undefined;
    const r = await this.proc.stop(30000);
    if (!r.graceful || r.code !== 0) {
      throw new Error(`strata serve did not stop cleanly on SIGTERM (code ${r.code}, signal ${r.signal}, ` +
        `graceful ${r.graceful}); stderr: ${this.proc.tail(this.proc.err)}`);
    }
    return r;
  }

  async restart() {
    await this.stop();
    await this.start();
  }

  async close() {
    this.closed = true;
    if (this.proc && this.proc.running) await this.stop();
  }

  logs() { return this.proc ? this.proc.out + this.proc.err : ""; }
}
