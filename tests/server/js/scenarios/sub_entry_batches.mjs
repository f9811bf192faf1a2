// Sub-entry batches (the client's sendSubEntries: one osiris sub-batch entry per publish, uncompressed and gzip) are
// stored as they came and delivered back: the consumer decodes every message, in order.
// The client decodes only one sub-batch entry per chunk and numbers its messages from 0, so each batch is confirmed
// before the next is sent (a chunk of its own) and only contents are checked, not offsets.
import { Collector, CompressionType, Confirms, Offset, connect, expectSequence, uniqueName } from "../lib/client.mjs";

export const name = "sub_entry_batches";
export const timeoutSec = 180;

const body = (i) => Buffer.from(`sub-entry ${i} ${"s".repeat(i % 61)}`);

export async function run({ server, log }) {
  const batches = 20;
  const perBatch = 50;
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  const stream = uniqueName("subentry");
  await client.createStream({ stream });
  const publisher = await client.declarePublisher({ stream });
  for (let j = 0; j < batches; j++) {
    const messages = [];
    for (let i = 0; i < perBatch; i++) messages.push({ content: body(j * perBatch + i) });
    const type = j % 2 ? CompressionType.Gzip : CompressionType.None;
    await publisher.sendSubEntries(messages, type);
    await confirms.waitForCount(publisher, j + 1, 30000, `sub-entry batch ${j} (${j % 2 ? "gzip" : "none"})`);
  }
  log(`${batches} sub-entry batches of ${perBatch} confirmed (alternately uncompressed and gzip)`);

  const got = new Collector("consumer of sub-entry batches");
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
  await got.until(batches * perBatch, 60000);
  expectSequence("sub-entry batches from first", got.messages.slice(0, batches * perBatch), batches * perBatch, body);
  await consumer.close();
  await publisher.close();
  await client.deleteStream({ stream });
  await client.close();
}
