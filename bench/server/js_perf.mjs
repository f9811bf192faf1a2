// Second opinion for bench/server/compare.sh: the same publish and consume
// measurement through the independent JavaScript client
// (tools/node_modules/rabbitmq-stream-js-client 1.0.0, unpatched).
//   node bench/server/js_perf.mjs --port PORT [--messages N] [--size BYTES] [--stream NAME]
//                                 [--publish-only]
// Prints one JSON line: published/confirmed and consumed msg/s. With
// --publish-only the consume half is skipped and the stream kept (to look at
// how the server chunked the client's publishes).
//
// RabbitMQ 3.10 does not know ExchangeCommandVersions (0x1b) and closes the
// connection on it, while the client always sends it after Open. For servers
// below 3.11 the client's step is replaced at run time (before connecting),
// which leaves the package's files untouched.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../../tools/package.json"));
const rabbit = require("rabbitmq-stream-js-client");
const { Connection } = require("rabbitmq-stream-js-client/dist/connection.js");

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const port = Number(arg("port", "5552"));
const messages = Number(arg("messages", "100000"));
const size = Number(arg("size", "100"));
const stream = arg("stream", `js-perf-${process.pid}`);
const publishOnly = process.argv.includes("--publish-only");

const original = Connection.prototype.exchangeCommandVersions;
Connection.prototype.exchangeCommandVersions = async function () {
  const [major, minor] = String(this.peerProperties?.version ?? "0.0")
    .split(".")
    .map(Number);
  serverVersion = String(this.peerProperties?.version ?? "");
  if (major < 3 || (major === 3 && minor < 11)) return true;
  return original.call(this);
};

let serverVersion = "";
const client = await rabbit.connect({
  hostname: "127.0.0.1",
  port,
  username: "guest",
  password: "guest",
  vhost: "/",
});
await client.createStream({ stream, arguments: {} });

// Publish with confirms: sends awaited in groups of 500 (the client batches
// and flushes; awaiting each send alone paces it to one flush per message).
const publisher = await client.declarePublisher({ stream });
let confirmed = 0;
let allConfirmed;
const confirmedPromise = new Promise((resolve) => (allConfirmed = resolve));
publisher.on("publish_confirm", (err, ids) => {
  if (err) throw new Error(`publish error ${err}`);
  confirmed += ids.length;
  if (confirmed >= messages) allConfirmed();
});
const body = Buffer.alloc(size, "x");
const t0 = process.hrtime.bigint();
let pending = [];
for (let i = 0; i < messages; i++) {
  pending.push(publisher.send(body));
  if (pending.length === 500) {
    await Promise.all(pending);
    pending = [];
  }
}
await Promise.all(pending);
await publisher.flush();
await confirmedPromise;
const publishS = Number(process.hrtime.bigint() - t0) / 1e9;
// Closed before the stream is deleted: with the publisher still open,
// client.close() after deleteStream sometimes never returned against
// RabbitMQ 3.10.8 (the hung JS runs of docs/BENCHMARKS.md, runs A and C).
await publisher.close();
if (publishOnly) {
  await client.close();
  console.log(JSON.stringify({ server_version: serverVersion, messages, size, confirmed_msg_s: messages / publishS }));
  process.exit(0);
}

// Consume everything from the start.
let consumed = 0;
let allConsumed;
const consumedPromise = new Promise((resolve) => (allConsumed = resolve));
const t1 = process.hrtime.bigint();
const consumer = await client.declareConsumer(
  { stream, offset: rabbit.Offset.first() },
  () => {
    if (++consumed === messages) allConsumed();
  },
);
await consumedPromise;
const consumeS = Number(process.hrtime.bigint() - t1) / 1e9;

await consumer.close();
await client.deleteStream({ stream });
await client.close();
console.log(
  JSON.stringify({
    server_version: serverVersion,
    messages,
    size,
    confirmed_msg_s: messages / publishS,
    consumed_msg_s: messages / consumeS,
  }),
);
