// Names as RabbitMQ allows them: a stream named with spaces, a slash, '%' and '~', and a stream whose name ends in
// ".tmp" next to the stream without the suffix, are created, published to, tracked (StoreOffset) and read back through
// a server restart, each keeping its own messages and offsets. Not non-ASCII: the client 1.0.0 writes a string's
// length as its count of UTF-16 code units, not of bytes (requests/buffer_data_writer.js, writeString), so a name like
// "€" makes a malformed frame that RabbitMQ and strata both close the connection on (code 13);
// tests/server/server_names_test.cpp covers non-ASCII names on the wire.
import { afterRestart, Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed } from "../lib/client.mjs";

export const name = "unusual_names";
export const timeoutSec = 240;

export async function run({ server, log }) {
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  const names = [`orders ${tag}/Q1 100% ~draft`, `plain-${tag}`, `plain-${tag}.tmp`];
  const n = 50;
  const confirms = new Confirms();
  let client = await connect(server, { confirms });
  for (const [k, stream] of names.entries()) {
    await client.createStream({ stream });
    const publisher = await client.declarePublisher({ stream });
    await publishConfirmed(publisher, confirms, n, (i) => Buffer.from(`${k}:${i}`));
    const got = new Collector(`consumer of ${stream}`);
    const consumer = await client.declareConsumer({ stream, offset: Offset.first(), consumerRef: `ref-${k}` }, got.handle);
    await got.until(n, 60000);
    await consumer.storeOffset(BigInt(10 + k));
    check(await consumer.queryOffset() === BigInt(10 + k), `${stream}: stored offset not read back`);
  }
  await client.close();

  log("three streams with their offsets; restarting the server");
  await server.restart();
  client = await connect(server);
  for (const [k, stream] of names.entries()) {
    const stored = await afterRestart(server, `QueryOffset of ${stream}`,
      () => client.queryOffset({ reference: `ref-${k}`, stream }));
    check(stored === BigInt(10 + k), `${stream}: offset after restart is ${stored}, expected ${10 + k}`);
    const got = new Collector(`consumer of ${stream} after restart`);
    const c = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
    await got.until(n, 60000);
    expectSequence(`${stream} after restart`, got.messages, n, (i) => Buffer.from(`${k}:${i}`), { offset0: 0n });
    await c.close();
    await client.deleteStream({ stream });
  }
  await client.close();
}
