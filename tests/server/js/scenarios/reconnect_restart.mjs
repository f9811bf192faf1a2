// The client reconnects after a server restart: a publisher and a consumer live through a restart of the server (same
// address). The client reports the closed connection, Client.restart() re-opens its connections and re-declares both,
// then the same publisher's new messages are confirmed and the same consumer receives them, in order.
import { Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, uniqueName } from "../lib/client.mjs";

export const name = "reconnect_restart";
export const timeoutSec = 240;

const body = (i) => Buffer.from(`reconnect ${i}`);

export async function run({ server, log }) {
  const a = 1000;
  const b = 1000;
  const stream = uniqueName("reconnect");
  const confirms = new Confirms();
  let closed;
  const closedOnce = new Promise((r) => { closed = r; });
  const client = await connect(server, { confirms, listeners: { connection_closed: (hadError) => closed(hadError) } });
  await client.createStream({ stream });
  const publisher = await client.declarePublisher({ stream });
  const got = new Collector("consumer across the restart");
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);

  await publishConfirmed(publisher, confirms, a, body, { what: "before the restart" });
  await got.until(a, 60000);
  expectSequence("before the restart", got.messages, a, body, { offset0: 0n });
  const beforeCount = got.messages.length;

  log("restarting the server under a connected client");
  await server.restart();
  await closedOnce;
  log("client saw its connection close; Client.restart()");
  await client.restart();
  check(client.getConnectionInfo().ready, "the locator connection is not ready after Client.restart()");

  const ids = [];
  for (let i = 0; i < b; i++) ids.push((await publisher.send(body(a + i))).publishingId);
  await publisher.flush();
  await confirms.waitFor(publisher, ids, 60000, "after the restart");

  // The consumer resubscribes at the last offset it saw, so the server may send part of the last chunk of the first
  // batch again; what matters is that every new message arrives once, in order.
  const fresh = () => got.messages.slice(beforeCount).filter((m) => m.offset >= BigInt(a));
  const deadline = Date.now() + 60000;
  while (fresh().length < b && Date.now() < deadline) await got.until(got.messages.length + 1, deadline - Date.now());
  expectSequence("after the restart", fresh(), b, (i) => body(a + i), { offset0: BigInt(a) });
  for (const m of got.messages.slice(beforeCount).filter((m) => m.offset < BigInt(a))) {
    check(m.content.equals(body(Number(m.offset))), `re-delivered offset ${m.offset} has the wrong content`);
  }
  log(`consumer got all ${b} new messages after the restart`);
  await consumer.close();
  await publisher.close();
  await client.deleteStream({ stream });
  await client.close();
}
