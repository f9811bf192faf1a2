// The pinned rabbitmq-stream-js-client 1.0.0 (tools/node_modules, never patched) and small helpers around it.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "../../../..");
const require = createRequire(path.join(repoRoot, "tools/package.json"));
export const rabbit = require("rabbitmq-stream-js-client");
const { Connection } = require("rabbitmq-stream-js-client/dist/connection");
const semver = require("semver");
export const { Offset } = rabbit;
export const { CompressionType } = require("rabbitmq-stream-js-client/dist/compression");
export const { CreateStreamRequest } = require("rabbitmq-stream-js-client/dist/requests/create_stream_request");

// RabbitMQ 3.10 does not know ExchangeCommandVersions (0x1b) and closes the connection on it, while the client always
// sends it after Open. Replace the step at run time, per connection, only when that server's `version` peer property is
// below 3.11; a newer server (and strata, which announces >= 3.13.0) goes through the client's own code.
let shimInstalled = false;
function installPre311Shim() {
  if (shimInstalled) return;
  shimInstalled = true;
  const original = Connection.prototype.exchangeCommandVersions;
  Connection.prototype.exchangeCommandVersions = async function exchangeCommandVersionsUnlessPre311() {
    const v = semver.coerce(this.peerProperties?.version);
    if (v && semver.lt(v, "3.11.0")) return true;
    return original.call(this);
  };
}

export function serverVersion(client) { return client.rabbitManagementVersion; }
export function serverProperties(client) { return client.locatorConnection.peerProperties; }
export function versionAtLeast(client, v) { return semver.gte(semver.coerce(client.rabbitManagementVersion), v); }

// Publish confirmations (and errors) per publisher, from the client-wide listeners (a connection may be shared
// by several publishers, so confirms are keyed by connection and publisher id).
export class Confirms {
  constructor() {
    this.ids = new Map();
    this.counts = new Map();
    this.errors = [];
    this.waiters = [];
    this.onConfirm = (confirm, connectionId) => {
      const key = `${connectionId}/${confirm.publisherId}`;
      let set = this.ids.get(key);
      if (!set) this.ids.set(key, (set = new Set()));
      for (const id of confirm.publishingIds) set.add(id);
      this.counts.set(key, (this.counts.get(key) ?? 0) + confirm.publishingIds.length);
      this.wake();
    };
    this.onError = (err, connectionId) => {
      this.errors.push({ connectionId, ...err.publishingError, publisherId: err.publisherId });
      this.wake();
    };
  }
  // A publisher, or a SendResult (super stream publishers hide the partition publisher that sent a message).
  static keyOf(p) {
    return p.connectionId !== undefined ? `${p.connectionId}/${p.publisherId}` : `${p.getConnectionInfo().id}/${p.publisherId}`;
  }
  confirmed(publisher) { return this.ids.get(Confirms.keyOf(publisher)) ?? new Set(); }
  wake() { this.waiters = this.waiters.filter((w) => !w()); }

  // Resolves once `publisher` has `n` confirmations in all (ids repeated count each time).
  waitForCount(publisher, n, timeoutMs, what = "publish") {
    return new Promise((resolve, reject) => {
      const count = () => this.counts.get(Confirms.keyOf(publisher)) ?? 0;
      const timer = setTimeout(() => reject(new Error(`${what}: ${count()} of ${n} confirms after ${timeoutMs} ms`)),
        timeoutMs);
      const check = () => {
        if (this.errors.length) {
          clearTimeout(timer);
          reject(new Error(`${what}: the server answered PublishError (client 1.0.0 cannot decode its code)`));
          return true;
        }
        if (count() >= n) { clearTimeout(timer); resolve(); return true; }
        return false;
      };
      if (!check()) this.waiters.push(check);
    });
  }

  // Resolves when every id in `ids` is confirmed for `publisher`; rejects on a publish error or after timeoutMs.
  waitFor(publisher, ids, timeoutMs, what = "publish") {
    return new Promise((resolve, reject) => {
      const start = Date.now();
      const timer = setTimeout(() => {
        const set = this.confirmed(publisher);
        const missing = ids.filter((i) => !set.has(i));
        reject(new Error(`${what}: ${ids.length - missing.length} of ${ids.length} confirmed after ${Date.now() - start} ms ` +
          `(first missing publishing id ${missing[0]})`));
      }, timeoutMs);
      const check = () => {
        if (this.errors.length) {
          clearTimeout(timer);
          reject(new Error(`${what}: the server answered PublishError (client 1.0.0 decodes that frame as a ` +
            `response, so its publishing id and code are not known; see the server's log)`));
          return true;
        }
        const set = this.confirmed(publisher);
        if (ids.every((i) => set.has(i))) { clearTimeout(timer); resolve(); return true; }
        return false;
      };
      if (!check()) this.waiters.push(check);
    });
  }
}

// STRATA_JS_DEBUG=1 prints the client's own log (every frame it writes and receives at debug level) to stderr.
const clientLogger = process.env.STRATA_JS_DEBUG
  ? Object.fromEntries(["debug", "info", "warn", "error"].map((l) => [l, (m) => console.error(`[client ${l}] ${m}`)]))
  : undefined;

export async function connect(server, { confirms, listeners = {}, ...extra } = {}) {
  if (server.kind === "rabbitmq") installPre311Shim();
  const client = await rabbit.connect({
    hostname: server.host,
    port: server.port,
    username: "guest",
    password: "guest",
    vhost: "/",
    heartbeat: 0,
    listeners: confirms ? { publish_confirm: confirms.onConfirm, publish_error: confirms.onError, ...listeners } : listeners,
    ...extra,
  }, clientLogger);
  return client;
}

// Collects messages of one subscription; `until(n)` resolves once n messages have arrived.
export class Collector {
  constructor(name) {
    this.name = name;
    this.messages = [];
    this.waiters = [];
    this.handle = (msg) => {
      this.messages.push(msg);
      this.waiters = this.waiters.filter((w) => !w());
    };
  }
  until(n, timeoutMs) {
    return new Promise((resolve, reject) => {
      const start = Date.now();
      const timer = setTimeout(() => {
        const last = this.messages[this.messages.length - 1];
        reject(new Error(`${this.name}: ${this.messages.length} of ${n} messages after ${Date.now() - start} ms ` +
          `(last offset ${last?.offset})`));
      }, timeoutMs);
      const check = () => {
        if (this.messages.length >= n) { clearTimeout(timer); resolve(this.messages); return true; }
        return false;
      };
      if (!check()) this.waiters.push(check);
    });
  }
}

// Sends bodies[i] for i in [0, n) through `publisher` and waits for every confirm.
export async function publishConfirmed(publisher, confirms, n, body, { timeoutMs = 120000, what } = {}) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const r = await publisher.send(body(i));
    ids.push(r.publishingId);
  }
  await publisher.flush();
  await confirms.waitFor(publisher, ids, timeoutMs, what ?? `publish of ${n} messages`);
  return ids;
}

// Checks that `messages` are exactly bodies first..first+count-1 at offsets offset0.. (when offset0 is given).
export function expectSequence(what, messages, count, body, { first = 0, offset0 } = {}) {
  if (messages.length !== count) throw new Error(`${what}: expected ${count} messages, got ${messages.length}`);
  for (let i = 0; i < count; i++) {
    const want = body(first + i);
    const got = messages[i].content;
    if (!got.equals(want)) {
      throw new Error(`${what}: message ${i} (offset ${messages[i].offset}) is ${JSON.stringify(got.toString().slice(0, 80))}, ` +
        `expected ${JSON.stringify(want.toString().slice(0, 80))}`);
    }
    if (offset0 !== undefined && messages[i].offset !== offset0 + BigInt(i)) {
      throw new Error(`${what}: message ${i} has offset ${messages[i].offset}, expected ${offset0 + BigInt(i)}`);
    }
  }
}

export function check(cond, msg) { if (!cond) throw new Error(msg); }

// STRATA_TEST_SCALE scales the heavy loops (tests/support); `min` keeps them meaningful.
export function scaled(n, min) {
  const s = Number(process.env.STRATA_TEST_SCALE ?? "1");
  return Math.max(min, Math.round(n * (Number.isFinite(s) && s > 0 ? s : 1)));
}

export function uniqueName(prefix) { return `${prefix}-${process.pid}-${Date.now().toString(36)}`; }

// The protocol response code of a failed client call: the client rejects with the bare code or with an Error naming it.
export async function responseCodeOf(promise) {
  try {
    await promise;
  } catch (e) {
    return codeOf(e);
  }
  return 1;
}

// After a restart RabbitMQ answers 6 (stream not available) until its stream coordinator has recovered the stream, and
// clients retry. strata opens its streams before it prints "listening on", so it gets no retries: a 6 there is a failure.
export async function afterRestart(server, what, fn, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      const code = typeof e === "number" ? e : Number(/code (\d+)/.exec(e?.message ?? "")?.[1]);
      if (server.kind !== "rabbitmq" || code !== 6 || Date.now() > deadline) {
        throw new Error(`${what} after a restart: ${e?.message ?? "response code " + e}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

// Errors the client raises outside any promise the test holds (e.g. inside its socket "connect" handler) reach the
// runner's unhandledRejection handler; a scenario expecting one sets `capture` to take it instead.
export const unhandled = { capture: null };

// Connects expecting a refusal: resolves with the protocol response code the refusal names. The client 1.0.0 throws an
// authentication failure from its socket handler, where the connect promise never settles, so that error is taken
// from the unhandled rejections.
export function refusedConnect(server, opts, timeoutMs = 20000) {
  return new Promise((resolve, reject) => {
    let timer;
    const done = (f) => { clearTimeout(timer); unhandled.capture = null; f(); };
    unhandled.capture = (e) => done(() => resolve(codeOf(e)));
    timer = setTimeout(() => done(() => reject(new Error(`connect was neither refused nor accepted in ${timeoutMs} ms`))),
      timeoutMs);
    connect(server, opts).then(
      (c) => done(() => { c.close().catch(() => {}); reject(new Error("the connection was accepted")); }),
      (e) => done(() => resolve(codeOf(e))));
  });
}

function codeOf(e) {
  if (typeof e === "number") return e;
  const m = /(?:code|->) (\d+)/.exec(e?.message ?? "");
  if (m) return Number(m[1]);
  throw e;
}
