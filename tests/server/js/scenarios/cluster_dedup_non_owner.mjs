// strata only: a deduplicating publisher declared through nodes of a cluster that do not own its stream. A cluster of
// 3 strata nodes on a 3-member etcd (lib/cluster.mjs) gets stream "dedup-via-replica"; once every node names the same
// leader, a stock client connected to non-owner A declares publisher reference "ref-js" and publishes ids 1..100; a
// second client, connected to the other non-owner B, declares the same reference, must be told 100, and publishes
// ids 51..150 (50 duplicates, 50 new). A consumer from `first` (placed by the client on a replica, a non-owner) must
// then get exactly ids 1..150 once each, in order, the duplicates not stored, then a sentinel.
//
// Which connection of the stock client (rabbitmq-stream-js-client 1.0.0, tools/node_modules, dist/) sends what:
//   - connect() opens the "locator" connection to the address given (here a non-owner); Metadata, CreateStream,
//     StreamStats (client.streamStatsRequest, client.js:411-412) go over it.
//   - declarePublisher (client.js:172-196) asks Metadata on the locator, then opens (or reuses from its pool) a
//     connection to the stream's *leader* (getConnection -> chooseNode(metadata, true) = metadata.leader,
//     client.js:627-633, 785-788) and sends DeclarePublisher there; for a publisherRef it then sends
//     QueryPublisherSequence over the *locator* connection (client.js:187: this.locatorConnection.queryPublisherSequence)
//     and starts the publisher's sequence (its `publishingId` field) from that answer. So the declaration's
//     QueryPublisherSequence goes to the non-owner the client connected to: before strata forwarded it to the owner
//     that node answered 6 (stream_not_available) and declarePublisher rejected.
//   - publisher.getLastPublishingId() (publisher.js:162-163) sends QueryPublisherSequence over the publisher's own
//     connection, i.e. to the leader; Publish frames go to the leader too.
//   - declareConsumer connects to a random replica (chooseNode(metadata, false), client.js:789): a non-owner here.
// So besides the declaration, the scenario asks QueryPublisherSequence and StreamStats over each non-owner's locator
// connection directly (client.locatorConnection.queryPublisherSequence, client.streamStatsRequest) and checks the
// answers equal the owner's, and checks through getConnectionInfo() (the node's advertised port) which node each
// connection reached.
import path from "node:path";
import { Collector, Confirms, Offset, check, connect } from "../lib/client.mjs";
import { StrataCluster } from "../lib/cluster.mjs";

export const name = "cluster_dedup_non_owner";
export const timeoutSec = 150;
export const strataOnly = "a strata cluster (etcd catalog) forwarding a non-owner's questions to the owner";

const STREAM = "dedup-via-replica";
const REF = "ref-js";
const FIRST = 100; // ids 1..100 through A
const RESENT_FROM = 51; // then ids 51..150 through B
const LAST = 150;
const body = (id, round) => Buffer.from(`${STREAM} id ${id} round ${round}`);
const SENTINEL = Buffer.from(`${STREAM} sentinel`);

async function sendIds(publisher, from, to, round) {
  const ids = [];
  for (let id = from; id <= to; id++) {
    await publisher.send(body(id, round), { publishingId: BigInt(id) });
    ids.push(BigInt(id));
  }
  await publisher.flush();
  return ids;
}

// The stats of StreamStats as plain numbers (for messages and comparisons).
const statsOf = (s) => JSON.stringify(Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v === undefined ? null : Number(v)])));

export async function run({ server, dir, log, own }) {
  const cluster = own(new StrataCluster(path.join(dir, "cluster"), { bin: server.bin }));
  const clients = [];
  try {
    await runOnCluster(cluster, clients, log);
  } catch (e) {
    console.log(`--- cluster output (tails) ---\n${cluster.logs()}\n---`);
    throw e;
  } finally {
    // Before the runner stops the nodes: a client left open would see its connections closed under it.
    for (const c of clients) await c.close().catch(() => {});
  }
}

async function runOnCluster(cluster, clients, log) {
  await cluster.start(log);
  const nodes = cluster.nodes;
  const open = async (i, opts = {}) => {
    const c = await connect(nodes[i], opts);
    clients.push(c);
    const port = c.getConnectionInfo().port;
    check(port === nodes[i].port, `a client connected to node n${i} (port ${nodes[i].port}) is on port ${port}`);
    return c;
  };
  const close = async (c) => {
    await c.close();
    clients.splice(clients.indexOf(c), 1);
  };

  // One client per node for Metadata (and the owner's answers).
  const meta = [];
  for (let i = 0; i < nodes.length; i++) meta.push(await open(i));
  await meta[0].createStream({ stream: STREAM });
  const leader = await cluster.awaitAgreedLeader(meta, STREAM, 30000);
  const [a, b] = [0, 1, 2].filter((i) => i !== leader);
  log(`stream ${STREAM}: every node names n${leader} (port ${nodes[leader].port}) leader; non-owners n${a}, n${b}`);
  const nodeOf = (port) => { const i = cluster.indexOfPort(port); return i < 0 ? `port ${port}` : `n${i}`; };

  // The owner's answer and a non-owner's (over its locator connection) must be the same.
  const sequenceAt = (c) => c.locatorConnection.queryPublisherSequence({ stream: STREAM, publisherRef: REF });
  const expectSequenceEverywhere = async (want, when) => {
    for (let i = 0; i < nodes.length; i++) {
      const where = `n${i}${i === leader ? " (the owner)" : " (a non-owner)"}`;
      const got = await sequenceAt(meta[i]).catch((e) => {
        throw new Error(`${when}: QueryPublisherSequence of ${REF} through ${where}: ${e.message}`);
      });
      check(got === want, `${when}: QueryPublisherSequence of ${REF} through ${where} answered ${got}, expected ${want}`);
    }
  };
  const expectStatsEverywhere = async (when) => {
    // Nothing is published meanwhile; a moment's difference (a chunk being committed) gets a few tries.
    let last;
    for (let attempt = 0; attempt < 20; attempt++) {
      const owner = statsOf(await meta[leader].streamStatsRequest(STREAM));
      const others = [];
      for (const i of [a, b]) others.push(statsOf(await meta[i].streamStatsRequest(STREAM)));
      last = { owner, others };
      if (others.every((s) => s === owner)) return owner;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`${when}: StreamStats through the non-owners n${a}, n${b} answered ${last.others.join(", ")}; ` +
      `the owner n${leader} answered ${last.owner}`);
  };
  // Metadata names the owner as soon as the catalog does; the owner answers 6 (stream_not_available, which clients
  // retry) until it has opened the stream it was just given. Wait for the owner itself; from then on the non-owners
  // get no retries.
  const t0 = Date.now();
  for (;;) {
    try {
      await sequenceAt(meta[leader]);
      break;
    } catch (e) {
      if (!/code 6\b/.test(e?.message ?? "") || Date.now() - t0 > 20000) {
        throw new Error(`QueryPublisherSequence through the owner n${leader} after ${Date.now() - t0} ms: ${e.message}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  log(`the owner n${leader} answers QueryPublisherSequence after ${Date.now() - t0} ms`);
  await expectSequenceEverywhere(0n, "before publishing");

  // 1: through non-owner A, ids 1..100.
  let confirms = new Confirms();
  const clientA = await open(a, { confirms });
  const pubA = await clientA.declarePublisher({ stream: STREAM, publisherRef: REF });
  check(pubA.publishingId === 0n, `the sequence non-owner n${a} gave the new publisher is ${pubA.publishingId}, expected 0`);
  log(`publisher declared through n${a}: its connection is on ${nodeOf(pubA.getConnectionInfo().port)}, ` +
    `its sequence (n${a}'s answer) ${pubA.publishingId}`);
  await confirms.waitFor(pubA, await sendIds(pubA, 1, FIRST, 1), 30000, `ids 1..${FIRST} through n${a}`);
  check((await pubA.getLastPublishingId()) === BigInt(FIRST), `the publisher's own query after ids 1..${FIRST} is not ${FIRST}`);
  await pubA.close();
  await close(clientA);
  log(`ids 1..${FIRST} confirmed; publisher and client closed`);
  await expectSequenceEverywhere(BigInt(FIRST), `after ids 1..${FIRST}`);
  const stats1 = await expectStatsEverywhere(`after ids 1..${FIRST}`);
  log(`every node answers sequence ${FIRST} and the owner's stats ${stats1}`);

  // 2: through the other non-owner B, the same reference: told 100; ids 51..150.
  confirms = new Confirms();
  const clientB = await open(b, { confirms });
  const pubB = await clientB.declarePublisher({ stream: STREAM, publisherRef: REF });
  check(pubB.publishingId === BigInt(FIRST),
    `the sequence non-owner n${b} gave the redeclared publisher is ${pubB.publishingId}, expected ${FIRST}`);
  const lastB = await pubB.getLastPublishingId();
  check(lastB === BigInt(FIRST), `getLastPublishingId() of the redeclared publisher is ${lastB}, expected ${FIRST}`);
  log(`publisher redeclared through n${b} (connection on ${nodeOf(pubB.getConnectionInfo().port)}): ` +
    `n${b} answered ${pubB.publishingId}, getLastPublishingId() ${lastB}`);
  // The duplicates 51..100 are confirmed too (as RabbitMQ does), without being stored.
  await confirms.waitFor(pubB, await sendIds(pubB, RESENT_FROM, LAST, 2), 30000, `ids ${RESENT_FROM}..${LAST} through n${b}`);
  check((await pubB.getLastPublishingId()) === BigInt(LAST), `getLastPublishingId() after ids ${RESENT_FROM}..${LAST} is not ${LAST}`);
  // A sentinel from a publisher without reference marks the end: "exactly 150" needs no waiting for silence.
  const plain = await clientB.declarePublisher({ stream: STREAM });
  const r = await plain.send(SENTINEL);
  await plain.flush();
  await confirms.waitFor(plain, [r.publishingId], 30000, "sentinel");
  await pubB.close();
  await plain.close();
  log(`ids ${RESENT_FROM}..${LAST} and a sentinel confirmed`);
  await expectSequenceEverywhere(BigInt(LAST), `after ids ${RESENT_FROM}..${LAST}`);
  const stats2 = await expectStatsEverywhere(`after ids ${RESENT_FROM}..${LAST}`);
  log(`every node answers sequence ${LAST} and the owner's stats ${stats2}`);

  // 3: consume from first, through a non-owner (the client places consumers on a replica).
  const got = new Collector("consumer from first");
  const consumer = await clientB.declareConsumer({ stream: STREAM, offset: Offset.first() }, got.handle);
  const consumerNode = cluster.indexOfPort(consumer.getConnectionInfo().port);
  check(consumerNode >= 0 && consumerNode !== leader,
    `the consumer's connection is on ${nodeOf(consumer.getConnectionInfo().port)}, not on a non-owner`);
  log(`consumer on n${consumerNode}`);
  await got.until(LAST + 1, 30000);
  // A moment for anything more to show up.
  await new Promise((res) => setTimeout(res, 500));
  const msgs = got.messages;
  const end = msgs.findIndex((m) => m.content.equals(SENTINEL));
  check(end === LAST, `the stream holds ${end < 0 ? "no sentinel among " + msgs.length + " messages" : end + " messages"} ` +
    `before the sentinel, expected exactly ${LAST}`);
  check(msgs.length === LAST + 1, `${msgs.length} messages delivered, expected ${LAST + 1} (the sentinel last)`);
  const seen = new Set();
  for (let k = 0; k < LAST; k++) {
    const id = k + 1;
    const want = body(id, id <= FIRST ? 1 : 2);
    const m = msgs[k];
    check(m.content.equals(want), `message ${k} (offset ${m.offset}) is ${JSON.stringify(m.content.toString())}, ` +
      `expected ${JSON.stringify(want.toString())}`);
    check(m.offset === BigInt(k), `message ${k} has offset ${m.offset}, expected ${k}`);
    check(!seen.has(m.content.toString()), `message ${k} is a duplicate`);
    seen.add(m.content.toString());
  }
  log(`consumer through n${consumerNode}: ids 1..${LAST} once each, in order (51..100 from the first round), ` +
    "then the sentinel");
  await consumer.close();
}
