// `strata import rabbitmq` against the real thing: Debian's RabbitMQ 3.10.8 (osiris 1.3.1) is started beside strata and
// given four streams through the stock JS client — `plain` (300 messages of varied sizes and bytes, empty to 100 KB,
// some with application properties, no publisher reference), `dedup` (200 messages from publisher reference "app-1",
// consumer offsets stored for "c1" and "c2", the latter twice), `segmented` (5000-byte segments, each after the first
// opening with a tracking snapshot that takes an offset of its own; publisher "seg-writer", consumer "s1") and
// `retained` (a small max-length-bytes as well, so RabbitMQ's retention has deleted its first segments; publisher
// "ret-writer", consumers "r1" and "r2": RabbitMQ keeps or forgets r1, stored below the new first offset, depending on
// when retention ran, and the import must do as RabbitMQ does). RabbitMQ is restarted so that it recovers its streams
// from its files, as the import does; then everything it delivers from `first` is recorded (offset, chunk timestamp,
// bytes, application properties), with its stored offsets, publisher sequences and where two offset specs start (a
// snapshot's offset, a timestamp); its definitions are exported and the node stopped. strata (stopped) then imports the
// node's stream directory: the JSON report must give RabbitMQ's first/next offsets, strata's stream settings RabbitMQ's
// arguments, every message must come back from strata with the same offset, timestamp and bytes, the stored offsets,
// publisher sequences and offset specs must be RabbitMQ's, and deduplication must go on from the imported sequence. A
// second import reports the streams as existing; a stream whose segment has a flipped byte fails (twice: nothing of it
// is kept), naming the segment file and a position.
//
// The client does not hand the chunk timestamp to the message handler: it is taken from the client's own debug log of
// each Deliver frame's chunk header (one client per consumed stream, so chunk ids do not mix).
//
// STRATA_IMPORT_FIXTURE_ONLY=1 stops after RabbitMQ's side and leaves its node directory, definitions and what it
// delivered in /tmp/rmq-import-fixture (for the importer's own tests).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { Confirms, Offset, check, connect, rabbit as clientLib, responseCodeOf, unhandled } from "../lib/client.mjs";
import { RabbitServer } from "../lib/rabbitmq.mjs";

export const name = "rabbitmq_import";
export const timeoutSec = 300;
export const strataOnly = "it starts RabbitMQ itself, beside strata, and imports its files into strata";

const SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const FIXTURE = "/tmp/rmq-import-fixture";

// ---- message bodies --------------------------------------------------------------------------------------------

// Deterministic bytes (all 256 values occur) for message i of a stream.
function bytes(seed, n) {
  const b = Buffer.alloc(n);
  let x = (seed * 2654435761 + 12345) >>> 0;
  for (let k = 0; k < n; k++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    b[k] = x >>> 24;
  }
  return b;
}

const PLAIN_N = 300;
function plainMessage(i) {
  let size;
  if (i === 0) size = 0;
  else if (i === 1) size = 1;
  else if (i === 150) size = 100 * 1024;
  else if (i % 50 === 7) size = 20000 + i * 10;
  else size = 5 + ((i * 37) % 700);
  const opts = i % 10 === 3 ? { applicationProperties: { idx: i, tag: `t${i}`, "ü-key": "wert ✓" } } : {};
  return { content: bytes(i, size), opts };
}

const DEDUP_N = 200;
const dedupMessage = (i) => Buffer.concat([Buffer.from(`dedup ${i} `), bytes(1000 + i, (i * 13) % 300)]);

const SEGMENTED_N = 400;
const segmentedMessage = (i) => Buffer.concat([Buffer.from(`segmented ${i} `), bytes(3000 + i, 100 + (i % 150))]);

const RETAINED_N = 600;
const retainedMessage = (i) => Buffer.concat([Buffer.from(`retained ${i} `), bytes(5000 + i, 150 + (i % 100))]);
const retainedTail = (k) => Buffer.from(`retained tail ${k}`);

const STREAMS = ["plain", "dedup", "segmented", "retained"];

// ---- osiris files (an independent reader of the chunk headers, for the expected first/next offsets) --------------

const CHUNK_TYPES = { 0: "user", 1: "tracking_delta", 2: "tracking_snapshot" };

// Every chunk header of every segment of an osiris stream directory, in file order.
function osirisChunks(streamDir) {
  const out = [];
  const segments = fs.readdirSync(streamDir).filter((f) => f.endsWith(".segment")).sort();
  for (const seg of segments) {
    const buf = fs.readFileSync(path.join(streamDir, seg));
    check(buf.length >= 8 && buf.toString("latin1", 0, 4) === "OSIL", `${seg}: no OSIL header`);
    let pos = 8;
    while (pos + 48 <= buf.length) {
      const magicVersion = buf.readUInt8(pos);
      if (magicVersion === 0) break; // preallocated / zero tail
      const h = {
        segment: seg,
        pos,
        magic_version: magicVersion,
        type: CHUNK_TYPES[buf.readUInt8(pos + 1)] ?? buf.readUInt8(pos + 1),
        entries: buf.readUInt16BE(pos + 2),
        records: buf.readUInt32BE(pos + 4),
        timestamp: Number(buf.readBigInt64BE(pos + 8)),
        epoch: Number(buf.readBigUInt64BE(pos + 16)),
        chunk_id: Number(buf.readBigUInt64BE(pos + 24)),
        crc: buf.readUInt32BE(pos + 32),
        data_length: buf.readUInt32BE(pos + 36),
        trailer_length: buf.readUInt32BE(pos + 40),
        reserved: buf.readUInt32BE(pos + 44),
      };
      out.push(h);
      pos += 48 + h.data_length + h.trailer_length;
    }
  }
  return out;
}

// [first offset, next offset] of a stream directory as its chunks say.
function osirisRange(chunks) {
  if (!chunks.length) return [0, 0];
  const last = chunks[chunks.length - 1];
  return [chunks[0].chunk_id, last.chunk_id + last.records];
}

// ---- the client ---------------------------------------------------------------------------------------------------

// Consumes `stream` from `offset` until `done(messages)`; each message with its chunk's timestamp (from the client's
// debug log of the Deliver frame), on a client of its own.
async function consumeRecorded(server, stream, offset, done, what, timeoutMs = 60000) {
  const chunks = []; // { first, entries, timestamp } in arrival order
  const parse = (m) => {
    if (typeof m !== "string" || !m.includes("chunkFirstOffset")) return;
    const first = /chunkFirstOffset: (\d+)n/.exec(m);
    const ts = /timestamp: (-?\d+)n/.exec(m);
    const entries = /numEntries: (\d+)/.exec(m);
    if (first && ts && entries) chunks.push({ first: BigInt(first[1]), timestamp: BigInt(ts[1]), entries: Number(entries[1]) });
  };
  const logger = { debug: parse, info: () => {}, warn: () => {}, error: () => {} };
  // lib/client.mjs's connect installs the pre-3.11 shim; this one connects the same way, with the logger.
  await (await connect(server)).close();
  const client = await clientLib.connect({
    hostname: server.host, port: server.port, username: "guest", password: "guest", vhost: "/", heartbeat: 0,
  }, logger);
  const messages = [];
  let wake = () => {};
  const consumer = await client.declareConsumer({ stream, offset }, (msg) => { messages.push(msg); wake(); });
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: ${messages.length} messages after ${timeoutMs} ms ` +
        `(last offset ${messages[messages.length - 1]?.offset})`)), timeoutMs);
      wake = () => { if (done(messages)) { clearTimeout(timer); resolve(); } };
      wake();
    });
  } finally {
    await consumer.close().catch(() => {});
    await client.close().catch(() => {});
  }
  // Attach each message's chunk timestamp: the chunk whose [first, first + entries) holds its offset.
  const sorted = [...chunks].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  let c = 0;
  return messages.map((m) => {
    while (c + 1 < sorted.length && sorted[c + 1].first <= m.offset) c++;
    const ch = sorted[c];
    if (!ch || m.offset < ch.first || m.offset >= ch.first + BigInt(ch.entries)) {
      throw new Error(`${what}: no chunk header logged for offset ${m.offset}`);
    }
    return { offset: m.offset, timestamp: ch.timestamp, chunk: ch.first, content: m.content,
      applicationProperties: m.applicationProperties ?? {} };
  });
}

// Publishes with confirms, `perFlush` messages per Publish frame.
async function publishAll(publisher, confirms, n, msg, { perFlush = 50, ids, what }) {
  const sent = [];
  for (let i = 0; i < n; i++) {
    const { content, opts } = msg(i);
    const r = await publisher.send(content, { ...(opts ?? {}), ...(ids ? { publishingId: ids(i) } : {}) });
    sent.push(r.publishingId);
    if ((i + 1) % perFlush === 0) await publisher.flush();
  }
  await publisher.flush();
  await confirms.waitFor(publisher, sent, 120000, what);
  return sent;
}

// RabbitMQ writes a StoreOffset through the stream's writer, after the frame: QueryOffset may answer 19 (no offset)
// or the previous value for a moment.
async function storedOffset(consumer, want, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let got;
    try {
      got = await consumer.queryOffset();
    } catch (e) {
      got = e;
    }
    if (got === want) return got;
    if (Date.now() > deadline) throw new Error(`QueryOffset of ${consumer.consumerRef}: ${got?.message ?? got}, expected ${want}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// After its restart RabbitMQ answers "stream not available" or "not found on any node" until its coordinator has
// recovered the stream: retry for a while.
async function retrying(what, fn, timeoutMs = 60000, when = "after RabbitMQ's restart") {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (e?.fatal || Date.now() > deadline) throw new Error(`${what} ${when}: ${e?.message ?? e}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

// RabbitMQ 3.10's Metadata is answered from its stream coordinator, which can list a stream just created (and
// already published to) without a leader for a moment; the client then throws "Stream was not found on any
// node" (a CI run hit it). Only that error is retried, for up to 10 s.
function rabbitConsumer(client, params) {
  return retrying(`declareConsumer ${params.stream}/${params.consumerRef}`, async () => {
    try {
      return await client.declareConsumer(params, () => {});
    } catch (e) {
      if (!/not found on any node/.test(e?.message ?? "")) throw Object.assign(e, { fatal: true });
      throw e;
    }
  }, 10000, "on RabbitMQ");
}

// Closes RabbitMQ-side clients with `close`. A connection RabbitMQ already closed (its consumer connection, once
// retention passed the consumer's offset) fails the client's close write with EPIPE or ECONNRESET outside any
// promise the scenario holds (a CI run hit it): nothing was left to close, so those are taken here; any other error
// the client raises meanwhile is kept in `deferred` (the scenario fails on it at the end).
//
// The client waits for a response without a deadline, and where the peer's FIN came before its write, the write
// succeeds and no response ever comes (a CI run hung 300 s there). So the close has `timeoutMs`: then every socket
// of `client` is destroyed; that is taken where RabbitMQ had closed one of them, and kept in `deferred` otherwise (a
// connection RabbitMQ holds open but does not answer).
async function closingRabbitClients(deferred, log, client, close, timeoutMs = 20000) {
  const closedByPeer = (e) => /EPIPE|ECONNRESET/.test(e?.code ?? e?.message ?? "");
  unhandled.capture = (e) => {
    if (!closedByPeer(e)) deferred.push(`closing RabbitMQ's clients: ${e?.stack ?? e}`);
  };
  let timer;
  try {
    const closing = close().then(() => "closed", (e) => {
      if (!closedByPeer(e)) throw e;
      return "closed";
    });
    const outcome = await Promise.race([closing,
      new Promise((r) => { timer = setTimeout(() => r("timeout"), timeoutMs); })]);
    if (outcome === "timeout") {
      // The client's maps keep some closed publishers; connections it closed itself are left out.
      const connections = [...new Set([client.locatorConnection,
        ...[...client.consumers.values(), ...client.publishers.values()].map((x) => x.connection)])]
        .filter((c) => !c.userManuallyClose);
      const states = connections.map((c) => `${c.connectionId}: ${c.socket.destroyed ? "destroyed" : "open"}, ` +
        `${c.socket.readableEnded ? "FIN received" : "no FIN"}`);
      const peerClosed = connections.some((c) => c.socket.destroyed || c.socket.readableEnded);
      log(`RabbitMQ's clients did not close within ${timeoutMs} ms (${states.join("; ")}); their sockets destroyed`);
      if (!peerClosed) deferred.push(`RabbitMQ answered no close within ${timeoutMs} ms on open connections: ${states.join("; ")}`);
      for (const c of connections) c.socket.destroy();
      closing.catch(() => {});
    }
    // The client's writes fail on the socket's next turn.
    await new Promise((r) => setTimeout(r, 200));
  } finally {
    clearTimeout(timer);
    unhandled.capture = null;
  }
}

// A consumer's stored offset, or null where QueryOffset answers 19 (no offset).
async function queryOr19(consumer) {
  try {
    return await consumer.queryOffset();
  } catch (e) {
    if (/code 19\b/.test(e?.message ?? "") || e === 19) return null;
    throw e;
  }
}

const j = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x));

function recordJson(messages) {
  return messages.map((m) => ({
    offset: Number(m.offset), timestamp: Number(m.timestamp), chunk: Number(m.chunk),
    content_b64: m.content.toString("base64"), length: m.content.length,
    ...(Object.keys(m.applicationProperties).length ? { application_properties: m.applicationProperties } : {}),
  }));
}

// Compares what strata delivers with what RabbitMQ delivered, message by message.
function compareDeliveries(stream, theirs, ours) {
  const problems = [];
  if (ours.length !== theirs.length) problems.push(`${ours.length} messages, RabbitMQ delivered ${theirs.length}`);
  for (let i = 0; i < Math.min(ours.length, theirs.length) && problems.length < 10; i++) {
    const a = theirs[i];
    const b = ours[i];
    const at = `message ${i} (RabbitMQ offset ${a.offset})`;
    if (a.offset !== b.offset) problems.push(`${at}: strata's offset ${b.offset}`);
    if (a.timestamp !== b.timestamp) problems.push(`${at}: strata's timestamp ${b.timestamp}, RabbitMQ's ${a.timestamp}`);
    if (!a.content.equals(b.content)) {
      problems.push(`${at}: strata's ${b.content.length} bytes differ from RabbitMQ's ${a.content.length}` +
        ` (first difference at byte ${[...a.content].findIndex((x, k) => b.content[k] !== x)})`);
    }
    if (!isDeepStrictEqual(a.applicationProperties, b.applicationProperties)) {
      problems.push(`${at}: application properties ${j(b.applicationProperties)}, RabbitMQ's ${j(a.applicationProperties)}`);
    }
  }
  check(problems.length === 0, `${stream}: strata differs from RabbitMQ:\n  ${problems.join("\n  ")}`);
}

// ---- strata import -----------------------------------------------------------------------------------------------

// Runs `strata import rabbitmq ARGS`: { status, doc, stderr }. --json must print one JSON object on stdout; anything
// else there is noted in `deferred` (the scenario fails on it at the end) and the object is taken from its own line.
function runImport(bin, args, log, deferred) {
  const argv = ["import", "rabbitmq", ...args];
  const t0 = Date.now();
  const r = spawnSync(bin, argv, { encoding: "utf8", timeout: 120000 });
  log(`strata ${argv.join(" ")}: exit ${r.status} in ${Date.now() - t0} ms`);
  let doc;
  try {
    doc = JSON.parse(r.stdout);
  } catch {
    const line = r.stdout.split("\n").find((l) => l.startsWith("{"));
    try {
      doc = JSON.parse(line);
    } catch {
      throw new Error(`strata import: exit ${r.status}, stdout not one JSON object: ${r.stdout.slice(0, 2000)}\n` +
        `stderr: ${r.stderr.slice(0, 2000)}`);
    }
    const other = r.stdout.split("\n").filter((l) => l.trim() && l !== line);
    // Once per scenario (the line carries a time of its own each run).
    if (!deferred.some((d) => d.startsWith("import --json printed"))) {
      deferred.push(`import --json printed line(s) besides its JSON object on stdout, e.g. ` +
        `${JSON.stringify(other[0].slice(0, 400))}`);
    }
  }
  return { status: r.status, doc, stderr: r.stderr };
}

// `strata --json stream info NAME` of a stopped node's data directory: { status, doc, out }.
function streamInfo(bin, config, dataDir, stream) {
  const r = spawnSync(bin, ["--json", "stream", "info", "--config", config, "--data-dir", dataDir, stream],
    { encoding: "utf8", timeout: 60000 });
  let doc = {};
  try { doc = JSON.parse(r.stdout); } catch { /* reported through out */ }
  return { status: r.status, doc, out: `${r.stdout}${r.stderr}`.slice(0, 2000) };
}

function streamOf(doc, name) {
  const s = (doc.streams ?? []).find((x) => x.name === name);
  if (!s) throw new Error(`import JSON has no stream ${name}: ${JSON.stringify(doc)}`);
  return s;
}

// ---- the scenario ------------------------------------------------------------------------------------------------

export async function run({ server, dir, log, skip, own }) {
  if (!fs.existsSync(SERVER)) skip(`${SERVER} missing (Debian's rabbitmq-server)`);
  const fixtureOnly = !!process.env.STRATA_IMPORT_FIXTURE_ONLY;
  const rabbitmq = own(new RabbitServer(path.join(dir, "rabbit")));
  const expected = {}; // stream → what RabbitMQ holds
  const deferred = []; // problems that do not stop the scenario, reported at its end
  const definitionsFile = path.join(dir, "definitions.json");
  let definitions;
  let specs;

  // 1–4: RabbitMQ's side.
  {
    await rabbitmq.start();
    log(`rabbitmq ready on ${rabbitmq.port}; node dir ${rabbitmq.nodeDir}`);
    const confirms = new Confirms();
    const client = await connect(rabbitmq, { confirms });

    // (a) plain: no publisher reference.
    await client.createStream({ stream: "plain", arguments: {} });
    const p1 = await client.declarePublisher({ stream: "plain" });
    await publishAll(p1, confirms, PLAIN_N, plainMessage, { perFlush: 25, what: "plain" });
    await p1.close();

    // (b) dedup: publisher "app-1" with ids 1..200, offsets of c1 and c2 (c2 stored twice: the last one counts).
    await client.createStream({ stream: "dedup", arguments: {} });
    const p2 = await client.declarePublisher({ stream: "dedup", publisherRef: "app-1" });
    await publishAll(p2, confirms, DEDUP_N, (i) => ({ content: dedupMessage(i) }),
      { perFlush: 20, ids: (i) => BigInt(i + 1), what: "dedup" });
    const dedupSeq = await p2.getLastPublishingId();
    check(dedupSeq === BigInt(DEDUP_N), `RabbitMQ's sequence of app-1 is ${dedupSeq}, expected ${DEDUP_N}`);
    await p2.close();
    const c1 = await rabbitConsumer(client, { stream: "dedup", offset: Offset.next(), consumerRef: "c1" });
    await c1.storeOffset(57n);
    const c2 = await rabbitConsumer(client, { stream: "dedup", offset: Offset.next(), consumerRef: "c2" });
    await c2.storeOffset(100n);
    await c2.storeOffset(151n);
    const dedupOffsets = { c1: await storedOffset(c1, 57n), c2: await storedOffset(c2, 151n) };
    check(dedupOffsets.c1 === 57n && dedupOffsets.c2 === 151n, `RabbitMQ's stored offsets ${j(dedupOffsets)}`);
    await c1.close();
    await c2.close();

    // (c) segmented: small segments, no retention. Every segment after the first starts with a tracking snapshot
    // (publisher "seg-writer", consumer "s1"), which takes an offset: the messages' offsets have a gap there.
    await client.createStream({ stream: "segmented", arguments: { "stream-max-segment-size-bytes": 5000 } });
    const p4 = await client.declarePublisher({ stream: "segmented", publisherRef: "seg-writer" });
    await publishAll(p4, confirms, 100, (i) => ({ content: segmentedMessage(i) }),
      { perFlush: 10, ids: (i) => BigInt(i + 1), what: "segmented, first part" });
    const s1 = await rabbitConsumer(client, { stream: "segmented", offset: Offset.next(), consumerRef: "s1" });
    await s1.storeOffset(30n);
    await storedOffset(s1, 30n);
    await publishAll(p4, confirms, SEGMENTED_N - 100, (i) => ({ content: segmentedMessage(100 + i) }),
      { perFlush: 10, ids: (i) => BigInt(100 + i + 1), what: "segmented, second part" });
    const segmentedSeq = await p4.getLastPublishingId();
    await p4.close();
    const segmentedOffsets = { s1: await storedOffset(s1, 30n) };
    await s1.close();

    // (d) retained: small segments and max-length-bytes, so that retention deletes the oldest segments. RabbitMQ
    // 3.10.8 rolls a segment after the write that fills it (the new one holds only a tracking snapshot) and then
    // deletes every older segment; a tail of small messages, one chunk each, puts data in the newest segment again.
    const retainedArgs = { "max-length-bytes": 20000, "stream-max-segment-size-bytes": 5000 };
    await client.createStream({ stream: "retained", arguments: retainedArgs });
    const retainedDir = () => {
      const d = fs.readdirSync(path.join(rabbitmq.nodeDir, "stream")).filter((x) => x.startsWith("__retained_"));
      check(d.length === 1, `RabbitMQ's stream dir holds ${j(d)} for retained`);
      return path.join(rabbitmq.nodeDir, "stream", d[0]);
    };
    const segmentsOf = (d) => fs.readdirSync(d).filter((f) => f.endsWith(".segment")).sort();
    const p3 = await client.declarePublisher({ stream: "retained", publisherRef: "ret-writer" });
    const half = RETAINED_N / 2;
    await publishAll(p3, confirms, half, (i) => ({ content: retainedMessage(i) }),
      { perFlush: 10, ids: (i) => BigInt(i + 1), what: "retained, first half" });
    // r1 is stored below what retention keeps: RabbitMQ forgets it once retention has passed it.
    const r1 = await rabbitConsumer(client, { stream: "retained", offset: Offset.next(), consumerRef: "r1" });
    await r1.storeOffset(BigInt(half - 5));
    await storedOffset(r1, BigInt(half - 5));
    await publishAll(p3, confirms, half, (i) => ({ content: retainedMessage(half + i) }),
      { perFlush: 10, ids: (i) => BigInt(half + i + 1), what: "retained, second half" });
    for (let t = 0; Number(segmentsOf(retainedDir())[0].slice(0, 20)) === 0; t++) {
      check(t < 100, "RabbitMQ's retention deleted no segment of retained in 10 s");
      await new Promise((r) => setTimeout(r, 100));
    }
    // r2 is stored at the newest segment's first offset + 1 (RabbitMQ keeps it if no roll follows).
    const newest = Number(segmentsOf(retainedDir()).at(-1).slice(0, 20));
    const r2 = await rabbitConsumer(client, { stream: "retained", offset: Offset.next(), consumerRef: "r2" });
    await r2.storeOffset(BigInt(newest + 1));
    await storedOffset(r2, BigInt(newest + 1));
    let tail = 0;
    for (;; tail++) {
      const d = retainedDir();
      const last = segmentsOf(d).at(-1);
      const users = osirisChunks(d).filter((c) => c.segment === last && c.type === "user").length;
      if (users >= 4) break;
      check(tail < 60, `retained: ${tail} tail messages and still ${users} user chunks in RabbitMQ's newest segment`);
      await publishAll(p3, confirms, 1, () => ({ content: retainedTail(tail) }),
        { ids: () => BigInt(RETAINED_N + tail + 1), what: `retained, tail message ${tail}` });
    }
    const lastRetained = retainedTail(tail - 1);
    const retainedSeq = await p3.getLastPublishingId();
    check(retainedSeq === BigInt(RETAINED_N + tail), `RabbitMQ's sequence of ret-writer is ${retainedSeq}`);
    await p3.close();
    const retainedOffsets = { r1: await queryOr19(r1), r2: await queryOr19(r2) };
    log(`retained: ${tail} tail messages; RabbitMQ's stored offsets now ${j(retainedOffsets)} (r1 was ${half - 5}, ` +
      `r2 ${newest + 1}; 3.10.8 may forget an offset below the first one)`);
    await closingRabbitClients(deferred, log, client, async () => {
      await r1.close();
      await r2.close();
      await client.close();
    });
    const live = {
      publishers: { dedup: { "app-1": dedupSeq }, segmented: { "seg-writer": segmentedSeq }, retained: { "ret-writer": retainedSeq } },
      offsets: { dedup: dedupOffsets, segmented: segmentedOffsets, retained: retainedOffsets },
    };

    // 3: what RabbitMQ makes of its files: restarted, it recovers every stream from them (as an import does), then
    // answers QueryOffset / QueryPublisherSequence and delivers from `first`.
    await rabbitmq.shutdown();
    await rabbitmq.start();
    log("RabbitMQ restarted");
    const rc = await connect(rabbitmq);
    const publishers = {};
    const offsets = {};
    for (const st of Object.keys(live.publishers)) {
      publishers[st] = {};
      for (const ref of Object.keys(live.publishers[st])) {
        publishers[st][ref] = await retrying(`QueryPublisherSequence ${st}/${ref}`, async () => {
          const p = await rc.declarePublisher({ stream: st, publisherRef: ref });
          const seq = await p.getLastPublishingId();
          await p.close();
          return seq;
        });
      }
      offsets[st] = {};
      for (const ref of Object.keys(live.offsets[st])) {
        offsets[st][ref] = await retrying(`QueryOffset ${st}/${ref}`, async () => {
          try {
            return await rc.queryOffset({ reference: ref, stream: st });
          } catch (e) {
            if (/code 19\b/.test(e?.message ?? "")) return null;
            throw e;
          }
        });
      }
    }
    await rc.close();
    if (j(live.publishers) !== j(publishers) || j(live.offsets) !== j(offsets)) {
      log(`RabbitMQ answers differently after its restart: before ${j(live)}, after ${j({ publishers, offsets })}`);
    }
    const consumeAfterRestart = (st, done) => retrying(`consume ${st}`,
      () => consumeRecorded(rabbitmq, st, Offset.first(), done, `RabbitMQ ${st}`));
    const delivered = {
      plain: await consumeAfterRestart("plain", (m) => m.length >= PLAIN_N),
      dedup: await consumeAfterRestart("dedup", (m) => m.length >= DEDUP_N),
      segmented: await consumeAfterRestart("segmented", (m) => m.length >= SEGMENTED_N),
      retained: await consumeAfterRestart("retained", (m) => m.length > 0 && m[m.length - 1].content.equals(lastRetained)),
    };
    for (let i = 0; i < PLAIN_N; i++) {
      const want = plainMessage(i);
      check(delivered.plain[i].content.equals(want.content), `RabbitMQ's plain message ${i} is not what was sent`);
      check(isDeepStrictEqual(delivered.plain[i].applicationProperties, want.opts.applicationProperties ?? {}),
        `RabbitMQ's plain message ${i} has application properties ${j(delivered.plain[i].applicationProperties)}`);
    }
    for (let i = 0; i < DEDUP_N; i++) {
      check(delivered.dedup[i].content.equals(dedupMessage(i)), `RabbitMQ's dedup message ${i} is not what was sent`);
    }
    for (let i = 0; i < SEGMENTED_N; i++) {
      check(delivered.segmented[i].content.equals(segmentedMessage(i)), `RabbitMQ's segmented message ${i} is not what was sent`);
    }
    // Two offset specs that need RabbitMQ's chunk layout: a numeric offset that is a tracking snapshot's (no message:
    // RabbitMQ starts at the next message), and a timestamp (the first chunk at or after it).
    const segDir = path.join(rabbitmq.nodeDir, "stream",
      fs.readdirSync(path.join(rabbitmq.nodeDir, "stream")).find((d) => d.startsWith("__segmented_")));
    const gap = osirisChunks(segDir).find((c) => c.type === "tracking_snapshot").chunk_id;
    const plainChunks = [...new Set(delivered.plain.map((m) => m.chunk))];
    const tsChunk = delivered.plain.find((m) => m.chunk === plainChunks[Math.floor(plainChunks.length / 2)]);
    specs = {
      gap: { stream: "segmented", offset: Offset.offset(BigInt(gap)), what: `segmented from offset ${gap} (a snapshot's)` },
      timestamp: { stream: "plain", offset: Offset.timestamp(new Date(Number(tsChunk.timestamp))),
        what: `plain from timestamp ${tsChunk.timestamp}` },
    };
    for (const sp of Object.values(specs)) {
      sp.first = (await retrying(`consume ${sp.what}`,
        () => consumeRecorded(rabbitmq, sp.stream, sp.offset, (m) => m.length >= 1, `RabbitMQ ${sp.what}`)))[0];
      log(`RabbitMQ: ${sp.what} starts at offset ${sp.first.offset}`);
    }
    const retainedFirst = delivered.retained[0].offset;
    check(retainedFirst > 0n, `RabbitMQ's retained stream still starts at offset ${retainedFirst}: retention deleted nothing`);
    log(`RabbitMQ delivered plain ${delivered.plain.length}, dedup ${delivered.dedup.length}, segmented ` +
      `${delivered.segmented.length}, retained ${delivered.retained.length} (from offset ${retainedFirst}); ` +
      `publishers ${j(publishers)}, offsets ${j(offsets)}`);
    const numbers = (o) => Object.fromEntries(Object.entries(o ?? {}).map(([k, v]) => [k, v === null ? null : Number(v)]));

    // 4: definitions, then stop the node (its files closed).
    definitions = rabbitmq.exportDefinitions(definitionsFile);
    await rabbitmq.shutdown();
    log("RabbitMQ stopped");

    const streamRoot = path.join(rabbitmq.nodeDir, "stream");
    const dirs = fs.readdirSync(streamRoot);
    for (const s of STREAMS) {
      const mine = dirs.filter((d) => d === s || d.startsWith(`__${s}_`));
      check(mine.length === 1, `stream dir of ${s} among ${j(dirs)}: ${j(mine)}`);
      const chunks = osirisChunks(path.join(streamRoot, mine[0]));
      const [first, next] = osirisRange(chunks);
      const msgs = delivered[s];
      // The first chunk may be a tracking snapshot (osiris writes one at the head of every segment after the first,
      // when it tracks anything): it takes an offset of its own, and RabbitMQ delivers from the next one.
      const firstUser = chunks.find((c) => c.type === "user");
      check(BigInt(firstUser.chunk_id) === msgs[0].offset, `${s}: the first user chunk of its files is ` +
        `${firstUser.chunk_id}, RabbitMQ delivered from ${msgs[0].offset}`);
      check(BigInt(next) >= msgs[msgs.length - 1].offset + 1n, `${s}: its files end at ${next}`);
      const queue = (definitions.queues ?? []).find((q) => q.name === s);
      check(queue, `definitions have no queue ${s}`);
      expected[s] = {
        dir: mine[0], first_offset: first, first_message_offset: Number(msgs[0].offset), next_offset: next,
        arguments: queue.arguments,
        publishers: numbers(publishers[s]),
        offsets: numbers(offsets[s]),
        delivered: msgs,
        chunks,
      };
      const types = {};
      for (const c of chunks) types[c.type] = (types[c.type] ?? 0) + 1;
      log(`${s}: dir ${mine[0]}, offsets [${first}, ${next}), ${new Set(chunks.map((c) => c.segment)).size} segments, ` +
        `chunks ${j(types)}, arguments ${j(queue.arguments)}`);
    }
  }

  if (fixtureOnly) {
    fs.rmSync(FIXTURE, { recursive: true, force: true });
    fs.mkdirSync(FIXTURE, { recursive: true });
    fs.cpSync(rabbitmq.nodeDir, path.join(FIXTURE, "node"), { recursive: true });
    fs.copyFileSync(definitionsFile, path.join(FIXTURE, "definitions.json"));
    const doc = { rabbitmq: "3.10.8", osiris: "1.3.1", node_name: rabbitmq.nodeName, streams: {} };
    for (const [s, e] of Object.entries(expected)) {
      doc.streams[s] = { dir: e.dir, first_offset: e.first_offset, first_message_offset: e.first_message_offset,
        next_offset: e.next_offset, arguments: e.arguments,
        publishers: e.publishers, offsets: e.offsets, messages: recordJson(e.delivered), chunks: e.chunks };
    }
    fs.writeFileSync(path.join(FIXTURE, "expected.json"), JSON.stringify(doc, null, 1));
    log(`fixture written to ${FIXTURE}`);
    return;
  }

  // 5: import into the stopped strata node.
  const dataDir = path.join(dir, "data");
  await server.stop();
  log("strata stopped");
  const imp = runImport(server.bin, ["--data-dir", dataDir, "--rabbitmq-dir", rabbitmq.nodeDir,
    "--definitions", definitionsFile, "--json"], log, deferred);
  log(`import: ${JSON.stringify(imp.doc)}`);
  check(imp.status === 0, `import exited ${imp.status}: ${imp.stderr}`);
  check(imp.doc.imported === STREAMS.length && imp.doc.failed === 0,
    `import counts: imported ${imp.doc.imported}, failed ${imp.doc.failed}`);
  check(imp.doc.streams.length === STREAMS.length, `import reports ${imp.doc.streams.length} streams`);
  for (const [s, e] of Object.entries(expected)) {
    const r = streamOf(imp.doc, s);
    check(r.outcome === "imported", `${s}: outcome ${r.outcome} ${r.error ?? ""}`);
    // RabbitMQ's first offset is its first chunk's, a tracking snapshot in `retained`: either that or the first
    // message's offset will do; the next offset counts RabbitMQ's tracking chunks (each takes an offset).
    check((r.first_offset === e.first_offset || r.first_offset === e.first_message_offset) && r.next_offset === e.next_offset,
      `${s}: imported [${r.first_offset}, ${r.next_offset}), RabbitMQ's files hold [${e.first_offset}, ${e.next_offset}) ` +
      `with the first message at ${e.first_message_offset}`);
    check(r.messages === e.delivered.length, `${s}: ${r.messages} messages imported, RabbitMQ delivered ${e.delivered.length}`);
    check(r.publishers === Object.keys(e.publishers).length, `${s}: ${r.publishers} publishers imported, ` +
      `expected ${Object.keys(e.publishers).length}`);
    const kept = Object.values(e.offsets).filter((v) => v !== null).length;
    check(r.offsets === kept, `${s}: ${r.offsets} offsets imported, RabbitMQ answers ${kept}`);
  }
  check(streamOf(imp.doc, "retained").first_offset > 0, "retained imported from offset 0");
  // The arguments RabbitMQ's definitions give each stream, as strata's settings.
  const infoConfig = path.join(dir, "info.json");
  fs.writeFileSync(infoConfig, "{}");
  const want = { plain: {}, dedup: {}, segmented: { segment_bytes: 5000 }, retained: { max_bytes: 20000, segment_bytes: 5000 } };
  for (const s of STREAMS) {
    const info = streamInfo(server.bin, infoConfig, dataDir, s);
    check(info.status === 0, `strata stream info ${s}: exit ${info.status}: ${info.out}`);
    const settings = info.doc.settings ?? {};
    for (const [k, v] of Object.entries(want[s])) {
      check(settings[k] === v, `${s}: strata's setting ${k} is ${settings[k]}, RabbitMQ's arguments ${j(expected[s].arguments)}`);
    }
    check(settings.max_bytes === undefined || want[s].max_bytes !== undefined, `${s}: strata has max_bytes ${settings.max_bytes}`);
    log(`${s}: strata's settings ${j(settings)} (RabbitMQ's arguments ${j(expected[s].arguments)})`);
  }

  // 6: strata serves what RabbitMQ had.
  await server.start();
  log(`strata back on ${server.port}`);
  for (const [s, e] of Object.entries(expected)) {
    const n = e.delivered.length;
    const ours = await consumeRecorded(server, s, Offset.first(), (m) => m.length >= n, `strata ${s}`);
    compareDeliveries(s, e.delivered, ours);
    log(`${s}: ${n} messages with RabbitMQ's offsets, timestamps and bytes`);
  }
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  for (const [s, e] of Object.entries(expected)) {
    for (const [ref, want] of Object.entries(e.offsets)) {
      if (want === null) {
        const code = await responseCodeOf(client.queryOffset({ reference: ref, stream: s }));
        check(code === 19, `${s}: strata's QueryOffset of ${ref} answered ${code}; RabbitMQ answered 19 (no offset)`);
        continue;
      }
      const got = await client.queryOffset({ reference: ref, stream: s });
      check(got === BigInt(want), `${s}: strata's stored offset of ${ref} is ${got}, RabbitMQ's ${want}`);
    }
    for (const [ref, want] of Object.entries(e.publishers)) {
      const p = await client.declarePublisher({ stream: s, publisherRef: ref });
      const got = await p.getLastPublishingId();
      check(got === BigInt(want), `${s}: strata's sequence of ${ref} is ${got}, RabbitMQ's ${want}`);
      await p.close();
    }
  }
  log("stored offsets and publisher sequences are RabbitMQ's");
  for (const sp of Object.values(specs)) {
    const first = (await consumeRecorded(server, sp.stream, sp.offset, (m) => m.length >= 1, `strata ${sp.what}`))[0];
    check(first.offset === sp.first.offset && first.content.equals(sp.first.content),
      `${sp.what}: strata starts at offset ${first.offset}, RabbitMQ at ${sp.first.offset}`);
    log(`strata: ${sp.what} starts at offset ${first.offset}, as RabbitMQ`);
  }

  const dedup = expected.dedup;
  const c1 = BigInt(dedup.offsets.c1);
  const fromC1 = await consumeRecorded(server, "dedup", Offset.offset(c1), (m) => m.length >= 1, "strata dedup from c1");
  const atC1 = dedup.delivered.find((m) => m.offset === c1);
  check(fromC1[0].offset === c1 && fromC1[0].content.equals(atC1.content) && fromC1[0].timestamp === atC1.timestamp,
    `dedup from c1's offset ${c1}: strata delivered offset ${fromC1[0].offset} first`);

  const seq = BigInt(dedup.publishers["app-1"]);
  const pub = await client.declarePublisher({ stream: "dedup", publisherRef: "app-1" });
  const dup = Buffer.from("a duplicate that must not be stored");
  const fresh = Buffer.from("the first message after the import");
  await pub.send(dup, { publishingId: seq - 3n });
  await pub.send(fresh, { publishingId: seq + 1n });
  await pub.flush();
  await confirms.waitFor(pub, [seq - 3n, seq + 1n], 30000, "dedup after import");
  const after = await pub.getLastPublishingId();
  check(after === seq + 1n, `app-1's sequence after publishing ${seq + 1n} is ${after}`);
  await pub.close();
  await client.close();
  const all = await consumeRecorded(server, "dedup", Offset.first(),
    (m) => m.length > 0 && m[m.length - 1].content.equals(fresh), "strata dedup after publishing");
  check(all.length === dedup.delivered.length + 1, `dedup holds ${all.length} messages after one new and one ` +
    `duplicate, expected ${dedup.delivered.length + 1}`);
  check(!all.some((m) => m.content.equals(dup)), "the duplicate publishing id was stored");
  check(all[all.length - 1].offset === BigInt(dedup.next_offset),
    `the new message is at offset ${all[all.length - 1].offset}, expected the imported next offset ${dedup.next_offset}`);
  log(`dedup: id ${seq - 3n} deduplicated, id ${seq + 1n} appended at ${dedup.next_offset}`);

  // 7: a second import changes nothing.
  await server.stop();
  const again = runImport(server.bin, ["--data-dir", dataDir, "--rabbitmq-dir", rabbitmq.nodeDir,
    "--definitions", definitionsFile, "--json"], log, deferred);
  check(again.status === 0, `second import exited ${again.status}: ${JSON.stringify(again.doc)} ${again.stderr}`);
  for (const s of Object.keys(expected)) {
    const r = streamOf(again.doc, s);
    check(r.outcome === "exists", `second import: ${s} is ${r.outcome} ${r.error ?? ""}`);
  }
  await server.start();
  const still = await consumeRecorded(server, "dedup", Offset.first(),
    (m) => m.length > 0 && m[m.length - 1].content.equals(fresh), "strata dedup after the second import");
  check(still.length === dedup.delivered.length + 1, `dedup holds ${still.length} messages after the second import`);
  log("second import: every stream exists, nothing changed");

  // 8: a damaged segment fails its stream and leaves nothing behind.
  const damagedRoot = path.join(dir, "damaged");
  const plainDir = path.join(damagedRoot, "stream", expected.plain.dir);
  fs.cpSync(path.join(rabbitmq.nodeDir, "stream", expected.plain.dir), plainDir, { recursive: true });
  const userChunks = expected.plain.chunks.filter((c) => c.type === "user" && c.data_length > 100);
  const victim = userChunks[Math.floor(userChunks.length / 2)];
  const segFile = path.join(plainDir, victim.segment);
  const seg = fs.readFileSync(segFile);
  const bytePos = victim.pos + 48 + Math.floor(victim.data_length / 2);
  seg[bytePos] ^= 0x5a;
  fs.writeFileSync(segFile, seg);
  log(`flipped byte ${bytePos} of ${victim.segment} (chunk ${victim.chunk_id} at ${victim.pos})`);
  const data2 = path.join(dir, "data2");
  const args2 = ["--data-dir", data2, "--rabbitmq-dir", damagedRoot, "--definitions", definitionsFile,
    "--stream", "plain", "--json"];
  for (const round of ["first", "second"]) {
    const bad = runImport(server.bin, args2, log, deferred);
    const r = streamOf(bad.doc, "plain");
    log(`damaged import (${round}): ${JSON.stringify(r)}`);
    check(bad.status === 1, `damaged import (${round}) exited ${bad.status}, expected 1`);
    check(r.outcome === "failed", `damaged import (${round}): outcome ${r.outcome}, expected failed`);
    check(typeof r.error === "string" && r.error.includes(victim.segment),
      `damaged import (${round}): the error does not name ${victim.segment}: ${r.error}`);
    const positions = [victim.pos, bytePos, victim.pos + 48].map(String);
    check(positions.some((p) => new RegExp(`\\b${p}\\b`).test(r.error)),
      `damaged import (${round}): the error names no position of the damage (chunk at ${victim.pos}, byte ${bytePos}): ${r.error}`);
    // --stream plain: the other streams of the definitions are not part of this import (absent or "skipped").
    const others = (bad.doc.streams ?? []).filter((x) => x.name !== "plain" && x.outcome !== "skipped");
    if (bad.doc.failed !== 1 || bad.doc.imported !== 0 || others.length) {
      deferred.push(`damaged import with --stream plain: imported ${bad.doc.imported}, failed ${bad.doc.failed}, and ` +
        `reports streams it was not asked for: ${others.map((x) => `${x.name} ${x.outcome} (${x.error})`).join("; ")}`);
    }
  }
  const left = streamInfo(server.bin, infoConfig, data2, "plain");
  check(left.status !== 0, `after the failed import data2 has stream plain: ${left.out}`);
  log("damaged segment: failed twice, naming the segment and the position; nothing left behind");
  check(deferred.length === 0, `also wrong:\n  ${[...new Set(deferred)].join("\n  ")}`);
}
