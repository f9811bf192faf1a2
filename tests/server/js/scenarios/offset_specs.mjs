// Subscribe from a numeric offset, from a timestamp, and with `next`/`last`: each consumer starts exactly where the
// offset specification says and then sees every later message in order.
import { Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, uniqueName } from "../lib/client.mjs";

export const name = "offset_specs";
export const timeoutSec = 180;

const body = (i) => Buffer.from(`offset-specs ${i}`);

// Resolves once the wall clock has passed `ms` (chunk timestamps are milliseconds of the same clock).
async function clockPast(ms) {
  while (Date.now() <= ms) await new Promise((r) => setTimeout(r, ms - Date.now() + 1));
}

export async function run({ server, log }) {
  const a = 3000;
  const b = 2000;
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  const stream = uniqueName("offsets");
  await client.createStream({ stream });
  const publisher = await client.declarePublisher({ stream });

  await publishConfirmed(publisher, confirms, a, body);
  // Every chunk of batch A was written before tA; every chunk of batch B after ts > tA.
  const tA = Date.now();
  await clockPast(tA + 5);
  const ts = tA + 2;

  // `next` attached now sees only what is published from here on (batch B).
  const next = new Collector("consumer from next");
  const nextConsumer = await client.declareConsumer({ stream, offset: Offset.next() }, next.handle);
  // `last` starts at the last chunk of batch A: its first message is inside A, and it reaches the end of B.
  const last = new Collector("consumer from last");
  const lastConsumer = await client.declareConsumer({ stream, offset: Offset.last() }, last.handle);

  await publishConfirmed(publisher, confirms, b, (i) => body(a + i));
  log(`published ${a} + ${b} messages`);

  const k = 1234;
  const fromOffset = new Collector(`consumer from offset ${k}`);
  const c1 = await client.declareConsumer({ stream, offset: Offset.offset(BigInt(k)) }, fromOffset.handle);
  await fromOffset.until(a + b - k, 60000);
  expectSequence(`consume from offset ${k}`, fromOffset.messages, a + b - k, body, { first: k, offset0: BigInt(k) });

  const fromTs = new Collector("consumer from timestamp");
  const c2 = await client.declareConsumer({ stream, offset: Offset.timestamp(new Date(ts)) }, fromTs.handle);
  await fromTs.until(b, 60000);
  expectSequence(`consume from timestamp (between batch A and B)`, fromTs.messages, b, (i) => body(a + i),
    { offset0: BigInt(a) });

  await next.until(b, 60000);
  expectSequence("consume from next", next.messages, b, (i) => body(a + i), { offset0: BigInt(a) });

  await last.until(1, 60000);
  const lastFirst = Number(last.messages[0].offset);
  // Where the last chunk of A begins depends on how the server cut chunks; it must be inside A.
  check(lastFirst >= 0 && lastFirst < a, `consumer from last started at offset ${lastFirst}, expected inside batch A (0..${a - 1})`);
  await last.until(a + b - lastFirst, 60000);
  expectSequence("consume from last", last.messages, a + b - lastFirst, body, { first: lastFirst, offset0: BigInt(lastFirst) });

  for (const c of [c1, c2, nextConsumer, lastConsumer]) await c.close();
  await publisher.close();
  await client.deleteStream({ stream });
  await client.close();
}
