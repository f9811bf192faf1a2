// Stored offsets survive a server restart: StoreOffset for a consumer reference, QueryOffset answers it (and 19
// "no offset" for a reference never stored), restart the server, QueryOffset from a new connection still answers it,
// and consuming from the next offset gets the rest of the stream.
import { afterRestart, Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, responseCodeOf,
  uniqueName } from "../lib/client.mjs";

export const name = "offset_restart";
export const timeoutSec = 240;

const body = (i) => Buffer.from(`tracked ${i}`);

export async function run({ server, log }) {
  const n = 500;
  const stored = 321n;
  const ref = "js-tracking-ref";
  const stream = uniqueName("tracking");
  const confirms = new Confirms();
  let client = await connect(server, { confirms });
  await client.createStream({ stream });
  const publisher = await client.declarePublisher({ stream });
  await publishConfirmed(publisher, confirms, n, body);

  const got = new Collector("consumer with reference");
  const consumer = await client.declareConsumer({ stream, offset: Offset.first(), consumerRef: ref }, got.handle);
  await got.until(n, 60000);
  const noOffset = await responseCodeOf(client.queryOffset({ reference: ref, stream }));
  check(noOffset === 19, `QueryOffset before any StoreOffset answered code ${noOffset}, expected 19 (no offset)`);
  await consumer.storeOffset(stored);
  // StoreOffset has no response; a QueryOffset on the same connection comes after it.
  const before = await consumer.queryOffset();
  check(before === stored, `QueryOffset after StoreOffset is ${before}, expected ${stored}`);
  await client.close();

  log("offset stored; restarting the server");
  await server.restart();
  log(`server back on ${server.host}:${server.port}`);

  client = await connect(server);
  const after = await afterRestart(server, "QueryOffset", () => client.queryOffset({ reference: ref, stream }));
  check(after === stored, `QueryOffset after restart is ${after}, expected ${stored}`);
  const other = await responseCodeOf(client.queryOffset({ reference: "js-never-stored", stream }));
  check(other === 19, `QueryOffset for a reference never stored answered ${other}, expected 19`);

  const rest = new Collector("consumer resumed after restart");
  const c2 = await client.declareConsumer({ stream, offset: Offset.offset(after + 1n) }, rest.handle);
  const want = n - Number(after) - 1;
  await rest.until(want, 60000);
  expectSequence("resume from the stored offset + 1", rest.messages, want, body,
    { first: Number(after) + 1, offset0: after + 1n });
  await c2.close();
  await client.deleteStream({ stream });
  await client.close();
}
