// Deduplication by publisher reference across a reconnect: publish ids 1..N, close the client, reconnect with the same
// reference, publish 1..N+M. The stream then holds exactly N+M messages (the resent 1..N were dropped, but confirmed),
// and QueryPublisherSequence answers N+M.
import { Collector, Confirms, Offset, check, connect, expectSequence, uniqueName } from "../lib/client.mjs";

export const name = "dedup_reconnect";
export const timeoutSec = 180;

const first = (i) => Buffer.from(`dedup first round ${i}`);
const second = (i) => Buffer.from(`dedup second round ${i}`);
const SENTINEL = Buffer.from("dedup sentinel");

async function sendIds(publisher, from, to, body) {
  const ids = [];
  for (let id = from; id <= to; id++) {
    await publisher.send(body(id), { publishingId: BigInt(id) });
    ids.push(BigInt(id));
  }
  await publisher.flush();
  return ids;
}

export async function run({ server, log }) {
  const n = 1000;
  const m = 500;
  const ref = "js-dedup-ref";
  const stream = uniqueName("dedup");

  let confirms = new Confirms();
  let client = await connect(server, { confirms });
  await client.createStream({ stream });
  let publisher = await client.declarePublisher({ stream, publisherRef: ref });
  check((await publisher.getLastPublishingId()) === 0n, "a new publisher reference has a sequence other than 0");
  await confirms.waitFor(publisher, await sendIds(publisher, 1, n, first), 60000, "first round");
  check((await publisher.getLastPublishingId()) === BigInt(n), `sequence after the first round is not ${n}`);
  await client.close();
  log(`first round: ids 1..${n} confirmed; reconnecting`);

  confirms = new Confirms();
  client = await connect(server, { confirms });
  publisher = await client.declarePublisher({ stream, publisherRef: ref });
  const seq = await publisher.getLastPublishingId();
  check(seq === BigInt(n), `QueryPublisherSequence after reconnect is ${seq}, expected ${n}`);
  // The duplicates 1..N are confirmed too (as RabbitMQ does), without being stored.
  await confirms.waitFor(publisher, await sendIds(publisher, 1, n + m, second), 60000, "second round");
  const seq2 = await publisher.getLastPublishingId();
  check(seq2 === BigInt(n + m), `QueryPublisherSequence after the second round is ${seq2}, expected ${n + m}`);

  // A sentinel from a publisher without reference marks the end, so "exactly N+M" needs no waiting for silence.
  const plain = await client.declarePublisher({ stream });
  const r = await plain.send(SENTINEL);
  await plain.flush();
  await confirms.waitFor(plain, [r.publishingId], 30000, "sentinel");

  const got = new Collector("consumer from first");
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
  await got.until(n + m + 1, 60000);
  const end = got.messages.findIndex((x) => x.content.equals(SENTINEL));
  check(end === n + m, `the stream holds ${end < 0 ? "more than " + (n + m + 1) : end} messages before the sentinel, ` +
    `expected exactly ${n + m}`);
  expectSequence("first round", got.messages.slice(0, n), n, (i) => first(i + 1), { offset0: 0n });
  expectSequence("second round (new ids only)", got.messages.slice(n, n + m), m, (i) => second(n + 1 + i),
    { offset0: BigInt(n) });
  log(`stream holds exactly ${n + m} messages; sequence ${seq2}`);
  await consumer.close();
  // The stream is deleted with both publishers still open: the client closes them on the server's MetadataUpdate
  // and close() must still settle (scenario delete_with_open_publishers).
  await client.deleteStream({ stream });
  await client.close();
}
