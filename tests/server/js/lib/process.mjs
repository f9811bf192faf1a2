// Child processes for the JS tests: spawn, wait for a line on stdout (the readiness handshake), stop by pid.
import { spawn } from "node:child_process";
import net from "node:net";

export class Child {
  constructor(name, argv, opts = {}) {
    this.name = name;
    this.out = "";
    this.err = "";
    this.lineWaiters = [];
    this.proc = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], ...opts });
    this.exited = new Promise((resolve) => {
      this.proc.on("exit", (code, signal) => {
        this.exitCode = code;
        this.exitSignal = signal;
        for (const w of this.lineWaiters) w.reject(new Error(`${name} exited (code ${code}, signal ${signal}) ` +
          `before printing ${w.re}; stderr: ${this.tail(this.err)}; stdout: ${this.tail(this.out)}`));
        this.lineWaiters = [];
        resolve({ code, signal });
      });
    });
    this.proc.on("error", (e) => { this.err += `spawn error: ${e.message}\n`; });
    this.proc.stdout.on("data", (d) => { this.out += d; this.checkWaiters(); });
    this.proc.stderr.on("data", (d) => { this.err += d; });
  }

  get pid() { return this.proc.pid; }
  get running() { return this.exitCode === undefined && this.exitSignal === undefined; }

  tail(s, n = 2000) { return s.length > n ? "..." + s.slice(-n) : s; }

  checkWaiters() {
    this.lineWaiters = this.lineWaiters.filter((w) => {
      const m = this.out.match(w.re);
      if (m) w.resolve(m);
      return !m;
    });
  }

  // Resolves with the regex match once stdout contains `re`; rejects on exit or after timeoutMs.
  waitForOutput(re, timeoutMs) {
    return new Promise((resolve, reject) => {
      const m = this.out.match(re);
      if (m) return resolve(m);
      if (!this.running) return reject(new Error(`${this.name} is not running; stderr: ${this.tail(this.err)}`));
      const timer = setTimeout(() => reject(new Error(`${this.name} did not print ${re} within ${timeoutMs} ms; ` +
        `stdout: ${this.tail(this.out)}; stderr: ${this.tail(this.err)}`)), timeoutMs);
      this.lineWaiters.push({ re, resolve: (x) => { clearTimeout(timer); resolve(x); },
        reject: (e) => { clearTimeout(timer); reject(e); } });
    });
  }

  // SIGTERM, then SIGKILL if it has not exited within graceMs. Resolves with how it ended.
  async stop(graceMs = 20000, signal = "SIGTERM") {
    if (!this.running) return { code: this.exitCode, signal: this.exitSignal, graceful: true };
    this.proc.kill(signal);
    let timer;
    const timedOut = new Promise((r) => { timer = setTimeout(() => r("timeout"), graceMs); });
    const res = await Promise.race([this.exited, timedOut]);
    clearTimeout(timer);
    if (res !== "timeout") return { ...res, graceful: true };
    this.proc.kill("SIGKILL");
    return { ...(await this.exited), graceful: false };
  }
}

// A port that was free a moment ago on 127.0.0.1 (for servers that cannot pick their own).
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Resolves once a TCP connect to host:port succeeds; rejects after timeoutMs. Used only where a server
// offers no readiness line (epmd).
export async function waitForPort(port, timeoutMs, host = "127.0.0.1") {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, host);
      s.once("connect", () => { s.destroy(); resolve(true); });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
