// Single active consumers on a super stream across a rebalance, with the stock client's super stream consumer (one
// single-active consumer per partition, named by its consumerRef, "super-stream" set). Consumer A alone is active on
// both partitions and reads everything; consumer B joins the group: the server rebalances (partition i goes to member
// i mod 2), so A steps down on partition 1 (ConsumerUpdate inactive, answered as the client answers) and B takes it
// over from A's stored offset + 1. Messages published afterwards go to A on partition 0 and to B on partition 1 only:
// nothing is lost, and nothing read twice beyond what the stored offset allows. Needs a server >= 3.13.
import { Collector, Confirms, Offset, check, connect, uniqueName, versionAtLeast } from "../lib/client.mjs";

export const name = "super_stream_sac";
export const timeoutSec = 240;

const KEYS = ["k0", "k1"];
const body = (key, i) => Buffer.from(`${key} ${i}`);

async function publishRound(publisher, confirms, round, perKey) {
  const sent = new Map();
  for (let i = 0; i < perKey; i++) {
    for (const key of KEYS) {
      const r = await publisher.send(body(key, `${round}-${i}`), { applicationProperties: { key } });
      const pk = Confirms.keyOf(r);
      if (!sent.has(pk)) sent.set(pk, { result: r, ids: [] });
      sent.get(pk).ids.push(r.publishingId);
    }
  }
  for (const p of publisher.publishers.values()) await p.flush();
  for (const { result, ids } of sent.values()) await confirms.waitFor(result, ids, 60000, `round ${round}`);
}

const count = (c, key, round) => c.messages.filter((m) => m.content.toString().startsWith(`${key} ${round}-`)).length;

export async function run({ server, log, skip }) {
  const perKey = 100;
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  if (!versionAtLeast(client, "3.13.0")) {
    await client.close();
    skip(`server version ${client.rabbitManagementVersion} has no super streams (3.13+)`);
  }
  const superStream = uniqueName("ssac");
  await client.createSuperStream({ streamName: superStream }, KEYS);
  const publisher = await client.declareSuperStreamPublisher({ superStream, routingStrategy: "key" },
    (_content, opts) => opts?.applicationProperties?.key);
  await publishRound(publisher, confirms, 1, perKey);

  const group = "ssac-group";
  const clientA = await connect(server);
  const a = new Collector("consumer A");
  const consumerA = await clientA.declareSuperStreamConsumer({ superStream, consumerRef: group, offset: Offset.first() },
    a.handle);
  await a.until(2 * perKey, 60000);
  check(count(a, "k0", 1) === perKey && count(a, "k1", 1) === perKey, "A alone did not get both partitions");
  // A tracks what it read on partition 1 (the client stores offsets per partition consumer).
  const p1 = `${superStream}-k1`;
  const stored = BigInt(perKey - 1);
  await consumerA.consumers.get(p1).storeOffset(stored);
  log("A read both partitions and stored its offset on partition 1; B joins");

  const clientB = await connect(server);
  const b = new Collector("consumer B");
  await clientB.declareSuperStreamConsumer({ superStream, consumerRef: group, offset: Offset.first() }, b.handle);
  // The rebalance is done once B is active on partition 1: it reads the partition from where its answer says
  // (its offset spec, first, as the client answers), so round 1 of k1 reaches it.
  await b.until(perKey, 60000);
  const aBefore = a.messages.length;
  const bBefore = b.messages.length;
  await publishRound(publisher, confirms, 2, perKey);
  const deadline = Date.now() + 60000;
  while ((count(a, "k0", 2) < perKey || count(b, "k1", 2) < perKey) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  // Anything misrouted would arrive alongside.
  await new Promise((r) => setTimeout(r, 500));
  const a2 = { k0: count(a, "k0", 2), k1: count(a, "k1", 2) };
  const b2 = { k0: count(b, "k0", 2), k1: count(b, "k1", 2) };
  log(`after the rebalance: A got k0 ${a2.k0}, k1 ${a2.k1}; B got k0 ${b2.k0}, k1 ${b2.k1} ` +
    `(B read ${bBefore} before round 2, A ${a.messages.length - aBefore} in round 2)`);
  check(a2.k0 === perKey, `partition 0's new messages: A got ${a2.k0} of ${perKey}`);
  check(b2.k0 === 0, `partition 0's new messages also reached B (${b2.k0})`);
  check(b2.k1 === perKey, `partition 1's new messages: B got ${b2.k1} of ${perKey}`);
  check(a2.k1 === 0, `partition 1's new messages also reached A after it stepped down (${a2.k1})`);
  // B starts partition 1 where the client's answer says (its offset spec, or the stored offset + 1): at most the
  // first round again, never a gap.
  check(count(b, "k1", 1) <= perKey, `B read partition 1's first round ${count(b, "k1", 1)} times`);
  await clientA.close();
  await clientB.close();
  await client.deleteSuperStream({ streamName: superStream });
  await client.close();
}
