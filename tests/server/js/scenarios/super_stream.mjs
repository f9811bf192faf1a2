// A super stream with 3 partitions routed by key: create it (0x1d), Partitions and Route answer the partitions, a
// super stream publisher with the "key" strategy publishes messages with 3 routing keys, and each partition holds
// exactly its key's messages, in order (an end marker per key shows nothing else is there). Needs a server >= 3.13 (the client's own gate for super stream commands).
import { Collector, Confirms, Offset, check, connect, expectSequence, uniqueName, versionAtLeast } from "../lib/client.mjs";

export const name = "super_stream";
export const timeoutSec = 180;

const KEYS = ["amber", "blue", "cyan"];
const body = (key, i) => Buffer.from(`super ${key} ${i}`);

export async function run({ server, log, skip }) {
  const perKey = 400;
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  if (!versionAtLeast(client, "3.13.0")) {
    await client.close();
    skip(`server version ${client.rabbitManagementVersion} has no Create Super Stream command (3.13+)`);
  }
  const superStream = uniqueName("super");
  await client.createSuperStream({ streamName: superStream }, KEYS);
  const partitions = await client.queryPartitions({ superStream });
  const expected = KEYS.map((k) => `${superStream}-${k}`);
  check(JSON.stringify(partitions) === JSON.stringify(expected),
    `Partitions answered ${JSON.stringify(partitions)}, expected ${JSON.stringify(expected)}`);
  for (const k of KEYS) {
    const route = await client.routeQuery({ routingKey: k, superStream });
    check(JSON.stringify(route) === JSON.stringify([`${superStream}-${k}`]),
      `Route for key ${k} answered ${JSON.stringify(route)}, expected ["${superStream}-${k}"]`);
  }

  const publisher = await client.declareSuperStreamPublisher({ superStream, routingStrategy: "key" },
    (_content, opts) => opts?.applicationProperties?.key);
  const sent = new Map();
  for (let i = 0; i < perKey; i++) {
    for (const key of KEYS) {
      const r = await publisher.send(body(key, i), { applicationProperties: { key } });
      const pk = Confirms.keyOf(r);
      if (!sent.has(pk)) sent.set(pk, { result: r, ids: [] });
      sent.get(pk).ids.push(r.publishingId);
    }
  }
  // One end marker per key, routed like the rest: each partition must hold exactly perKey messages before it.
  for (const key of KEYS) {
    const r = await publisher.send(body(key, "end"), { applicationProperties: { key } });
    sent.get(Confirms.keyOf(r)).ids.push(r.publishingId);
  }
  for (const p of publisher.publishers.values()) await p.flush();
  for (const { result, ids } of sent.values()) await confirms.waitFor(result, ids, 60000, "super stream publish");
  log(`published ${perKey} messages for each of ${KEYS.join(", ")}`);

  for (const key of KEYS) {
    const stream = `${superStream}-${key}`;
    const got = new Collector(`partition ${stream}`);
    const c = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
    await got.until(perKey + 1, 60000);
    expectSequence(`partition ${stream}`, got.messages.slice(0, perKey), perKey, (i) => body(key, i), { offset0: 0n });
    check(got.messages[perKey].content.equals(body(key, "end")), `partition ${stream} holds more than ${perKey} messages`);
    for (const msg of got.messages.slice(0, perKey + 1)) {
      check(msg.applicationProperties?.key === key, `partition ${stream} holds a message with key ${msg.applicationProperties?.key}`);
    }
    await c.close();
  }
  await publisher.close();
  await client.deleteSuperStream({ streamName: superStream });
  await client.close();
}
