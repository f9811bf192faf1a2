// Stream filtering with the stock client (RabbitMQ 3.13's feature): a publisher gives each message a filter value
// (one of 100 regions), a consumer asks for one region. It receives every message of its region, and few others: the
// server sends only the chunks whose filter may hold that region (the client drops the rest of those chunks with its
// post-filter, counted here before it). Skipped (77) against a server without filtering (RabbitMQ 3.10). (Client
// 1.0.0 does not show a message's chunk timestamp; tests/server/chunk_truth_test.cpp checks those on the wire.)
import { Collector, Confirms, Offset, check, connect, uniqueName, versionAtLeast } from "../lib/client.mjs";

export const name = "filtering";
export const timeoutSec = 300;

const regions = 100;
const perRegion = 20;

export async function run({ server, log }) {
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  if (!versionAtLeast(client, "3.13.0")) {
    log(`server version ${client.rabbitManagementVersion}: no filtering`);
    await client.close();
    return 77;
  }
  const stream = uniqueName("filtering");
  await client.createStream({ stream, arguments: {} });
  const publisher = await client.declarePublisher({ stream }, (msg) => msg.applicationProperties?.region);
  // One region per publish, each confirmed before the next: a chunk holds one region, as a publisher that batches
  // by filter value gets (a chunk's filter covers all it holds).
  for (let r = 0; r < regions; r++) {
    const ids = [];
    for (let i = 0; i < perRegion; i++) {
      const res = await publisher.send(Buffer.from(`r${r}-${i}`), { applicationProperties: { region: `r${r}` } });
      ids.push(res.publishingId);
    }
    await publisher.flush();
    await confirms.waitFor(publisher, ids, 60000, `region r${r}`);
  }
  log(`published ${regions} regions x ${perRegion}`);

  const all = new Collector("unfiltered");
  const c1 = await client.declareConsumer({ stream, offset: Offset.first() }, all.handle);
  await all.until(regions * perRegion, 60000);

  let delivered = 0;  // every message of the chunks the server sent, before the client's post-filter
  const mine = new Collector("region r42");
  const c2 = await client.declareConsumer({
    stream, offset: Offset.first(),
    filter: { values: ["r42"], matchUnfiltered: false, postFilterFunc: (msg) => { delivered++; return msg.applicationProperties?.region === "r42"; } },
  }, mine.handle);
  await mine.until(perRegion, 60000);
  // Whatever else is in flight arrives well within this.
  await new Promise((r) => setTimeout(r, 1000));
  check(mine.messages.length === perRegion, `filtered consumer: ${mine.messages.length} messages of r42, expected ${perRegion}`);
  for (let i = 0; i < perRegion; i++) {
    check(mine.messages.some((m) => m.content.toString() === `r42-${i}`), `r42-${i} missing`);
  }
  const total = regions * perRegion;
  log(`filtered consumer was sent ${delivered} messages of ${total} (${(100 * delivered / total).toFixed(1)} %)`);
  check(delivered * 20 <= total, `filtered consumer was sent ${delivered} of ${total} messages (> 5 %)`);
  await c1.close(true);
  await c2.close(true);
  await client.deleteStream({ stream });
  await client.close();
}
