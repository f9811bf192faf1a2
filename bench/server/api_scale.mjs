// How fast `strata serve` answers its monitoring and management endpoints
// when it holds many streams and many idle consumer connections. The goal:
// `/metrics` and the API's consumer list answered in < 50 ms with 1 000
// streams and 1 000 connections.
//   node bench/server/api_scale.mjs --strata BUILD_DIR/strata [--streams 1000]
//        [--connections 1000] [--requests 30] [--batch 50] [--fresh]
// It starts `strata serve` on a fresh temp data dir (stream and HTTP ports
// chosen by the system, server.max_connections raised when the default 1024
// would refuse the clients), creates --streams streams through the
// management API (PUT /api/streams/NAME {"arguments":{}}), then opens
// --connections stream protocol connections with the stock JavaScript client
// (tools/node_modules/rabbitmq-stream-js-client), each holding one consumer
// (Offset.first()) of a different stream, round-robin over the streams,
// --batch of them opening at once. The client pools connections per stream:
// one client whose consumers all read different streams gives each consumer
// a connection of its own, so ceil(connections/streams) clients are used,
// each adding its idle locator connection (1 with the defaults; the output's
// connections_listed is what the server itself counts).
// With everything connected and idle it sends --requests rounds of GET
// /metrics, /api/stream/consumers, /api/stream/connections, /api/streams,
// /status (HTTP Basic guest:guest on /api/*), one request at a time over one
// keep-alive connection as a browser or Prometheus would (--fresh: a new TCP
// connection per request, as curl run once per request), after one
// uncounted warm-up round, and times each from sending to the last byte of
// the body.
// Prints one JSON line: per endpoint the median, p90 and max in ms and the
// body's size in bytes; the counts; how long setting up took; the server's
// RSS; the CPU model; goal_ms. Exits 1 if a stream or a consumer could not be
// created or an endpoint answered other than 200 (the JSON is still printed
// when the measurement ran). The server and the temp dir go on every exit.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../../tools/package.json"));
const rabbit = require("rabbitmq-stream-js-client");

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const strata = arg("strata");
const nStreams = Number(arg("streams", "1000"));
const nConns = Number(arg("connections", "1000"));
const nRequests = Number(arg("requests", "30"));
const batch = Number(arg("batch", "50"));
const fresh = process.argv.includes("--fresh");
if (!strata || !fs.existsSync(strata) || !(nStreams > 0) || !(nConns >= 0) || !(nRequests > 0)) {
  console.error(
    "usage: node bench/server/api_scale.mjs --strata BUILD_DIR/strata [--streams N] [--connections M] [--requests R] [--batch B] [--fresh]",
  );
  process.exit(2);
}
const log = (...a) => console.error("api_scale:", ...a);
const AUTH = "Basic " + Buffer.from("guest:guest").toString("base64");
const ENDPOINTS = ["/metrics", "/api/stream/consumers", "/api/stream/connections", "/api/streams", "/status"];

// ---- the server and cleanup ----

const work = fs.mkdtempSync(path.join(os.tmpdir(), "strata-api-scale."));
let server = null;
let serverExited = null;
let cleaning = null;

async function cleanup() {
  if (cleaning) return cleaning;
  cleaning = (async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      server.kill("SIGTERM");
      const killer = setTimeout(() => server.kill("SIGKILL"), 15000);
      await serverExited;
      clearTimeout(killer);
    }
    fs.rmSync(work, { recursive: true, force: true });
  })();
  return cleaning;
}
// Last resort (an exception escaping, process.exit elsewhere): synchronous.
process.on("exit", () => {
  if (server && server.exitCode === null && server.signalCode === null) server.kill("SIGKILL");
  fs.rmSync(work, { recursive: true, force: true });
});
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, async () => {
    log(`${sig}: stopping`);
    await cleanup();
    process.exit(130);
  });
}
// The client's sockets fail when the server goes first; only then.
process.on("unhandledRejection", (e) => {
  if (cleaning) return;
  log("unhandled rejection:", e);
  cleanup().then(() => process.exit(1));
});

async function startServer() {
  const clients = Math.ceil(nConns / nStreams);
  const maxConns = Math.max(1024, nConns + clients + 64);
  const config = path.join(work, "serve.json");
  fs.writeFileSync(config, JSON.stringify({ server: { max_connections: maxConns } }) + "\n");
  const outFile = path.join(work, "serve.out");
  const errFile = path.join(work, "serve.err");
  const out = fs.openSync(outFile, "w");
  const err = fs.openSync(errFile, "w");
  server = spawn(
    strata,
    ["serve", "--config", config, "--data-dir", path.join(work, "data"), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
    { stdio: ["ignore", out, err] },
  );
  fs.closeSync(out);
  fs.closeSync(err);
  serverExited = new Promise((resolve) => server.on("exit", resolve));
  for (let i = 0; i < 300; i++) {
    const text = fs.readFileSync(outFile, "utf8");
    const stream = /^strata serve: listening on .*:(\d+)$/m.exec(text);
    const web = /^strata serve: http on .*:(\d+)$/m.exec(text);
    if (stream && web) return { port: Number(stream[1]), httpPort: Number(web[1]) };
    if (server.exitCode !== null || server.signalCode !== null) break;
    await sleep(100);
  }
  throw new Error(`strata serve did not start:\n${fs.readFileSync(errFile, "utf8").slice(-2000)}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

// ---- HTTP ----

// Streams are created over up to 8 connections at once; the timed requests
// go one at a time over one keep-alive connection (or, with --fresh, each on
// a new one).
const setupAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const timedAgent = fresh ? false : new http.Agent({ keepAlive: true, maxSockets: 1 });
let httpPort = 0;
function request(method, urlPath, body, agent = timedAgent) {
  return new Promise((resolve, reject) => {
    const headers = agent ? {} : { Connection: "close" };
    if (urlPath.startsWith("/api/")) headers.Authorization = AUTH;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = Buffer.byteLength(body);
    }
    const t0 = process.hrtime.bigint();
    const req = http.request({ host: "127.0.0.1", port: httpPort, method, path: urlPath, headers, agent }, (res) => {
      const parts = [];
      res.on("data", (d) => parts.push(d));
      res.on("end", () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        resolve({ status: res.statusCode, body: Buffer.concat(parts), ms });
      });
      res.on("error", reject);
    });
    req.setTimeout(60000, () => req.destroy(new Error(`${method} ${urlPath}: timed out`)));
    req.on("error", reject);
    req.end(body);
  });
}

// Runs fn(i) for i < n, `width` at a time.
async function pool(n, width, fn) {
  let next = 0;
  const workers = Array.from({ length: Math.min(width, n) }, async () => {
    while (next < n) await fn(next++);
  });
  await Promise.all(workers);
}

const quantile = (sorted, q) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
const round = (x) => Math.round(x * 100) / 100;
const listLength = (body) => {
  try {
    const j = JSON.parse(body.toString("utf8"));
    return Array.isArray(j) ? j.length : Array.isArray(j.items) ? j.items.length : null;
  } catch {
    return null;
  }
};
const cpuModel = () =>
  (/^model name\s*:\s*(.*)$/m.exec(fs.readFileSync("/proc/cpuinfo", "utf8")) || [])[1] || os.cpus()[0]?.model || "?";
const rssMiB = (pid) => {
  try {
    const kib = Number(/^VmRSS:\s*(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
    return Math.round(kib / 1024);
  } catch {
    return null;
  }
};

// ---- the run ----

async function main() {
  let failed = false;
  const started = await startServer();
  httpPort = started.httpPort;
  const pad = String(nStreams - 1).length;
  const name = (i) => `scale-${String(i).padStart(pad, "0")}`;

  log(`creating ${nStreams} streams ...`);
  let t = process.hrtime.bigint();
  let createErrors = 0;
  await pool(nStreams, 8, async (i) => {
    const r = await request("PUT", `/api/streams/${name(i)}`, JSON.stringify({ arguments: {} }), setupAgent);
    if (r.status !== 201 && r.status !== 204) {
      if (++createErrors <= 3) log(`PUT /api/streams/${name(i)}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
    }
  });
  const createS = Number(process.hrtime.bigint() - t) / 1e9;
  if (createErrors) {
    failed = true;
    log(`${createErrors} stream(s) not created`);
  }

  log(`opening ${nConns} consumer connections, ${batch} at a time ...`);
  t = process.hrtime.bigint();
  const clients = [];
  const nClients = Math.ceil(nConns / nStreams);
  for (let c = 0; c < nClients; c++) {
    clients.push(
      await withTimeout(
        rabbit.connect({ hostname: "127.0.0.1", port: started.port, username: "guest", password: "guest", vhost: "/" }),
        30000,
        "connect",
      ),
    );
  }
  let consumerErrors = 0;
  for (let from = 0; from < nConns; from += batch) {
    const ids = Array.from({ length: Math.min(batch, nConns - from) }, (_, k) => from + k);
    const results = await Promise.allSettled(
      ids.map((i) =>
        withTimeout(
          clients[Math.floor(i / nStreams)].declareConsumer(
            { stream: name(i % nStreams), offset: rabbit.Offset.first() },
            () => {},
          ),
          30000,
          `consumer ${i}`,
        ),
      ),
    );
    for (const r of results) {
      if (r.status === "rejected" && ++consumerErrors <= 3) log(`consumer: ${r.reason?.message ?? r.reason}`);
    }
  }
  const connectS = Number(process.hrtime.bigint() - t) / 1e9;
  if (consumerErrors) {
    failed = true;
    log(`${consumerErrors} consumer(s) not declared`);
  }

  // Let the server settle (accept backlogs, credit, the first metrics).
  await sleep(1000);
  log(`timing ${nRequests} rounds of ${ENDPOINTS.join(" ")} ...`);
  const times = Object.fromEntries(ENDPOINTS.map((e) => [e, []]));
  const bytes = {};
  const counts = {};
  for (let round_ = 0; round_ <= nRequests; round_++) {
    for (const e of ENDPOINTS) {
      const r = await request("GET", e);
      if (r.status !== 200) {
        failed = true;
        log(`GET ${e}: HTTP ${r.status}`);
      }
      if (round_ === 0) continue; // warm-up
      times[e].push(r.ms);
      bytes[e] = r.body.length;
      if (e === "/api/stream/consumers" || e === "/api/stream/connections" || e === "/api/streams") {
        counts[e] = listLength(r.body);
      }
    }
  }
  const endpoints = {};
  for (const e of ENDPOINTS) {
    const s = times[e].slice().sort((a, b) => a - b);
    endpoints[e] = {
      median_ms: round(quantile(s, 0.5)),
      p90_ms: round(quantile(s, 0.9)),
      max_ms: round(s[s.length - 1]),
      bytes: bytes[e],
    };
  }
  console.log(
    JSON.stringify({
      streams: nStreams,
      connections: nConns,
      clients: nClients,
      streams_listed: counts["/api/streams"],
      connections_listed: counts["/api/stream/connections"],
      consumers_listed: counts["/api/stream/consumers"],
      stream_create_errors: createErrors,
      consumer_errors: consumerErrors,
      create_streams_s: round(createS),
      open_connections_s: round(connectS),
      requests: nRequests,
      http_connection: fresh ? "new per request" : "keep-alive",
      server_rss_mib: rssMiB(server.pid),
      endpoints,
      cpu: cpuModel(),
      goal_ms: 50,
    }),
  );
  return failed ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (e) {
  if (!cleaning) log(e?.stack ?? String(e));
}
setupAgent.destroy();
if (timedAgent) timedAgent.destroy();
await cleanup();
process.exit(code);
