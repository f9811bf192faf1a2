// strata only: a consumer from `first` reads data that has been tiered to the object store and dropped from local
// disk. The server runs with small segments and fragments and a small local retention; once /status shows the
// stream's first local offset past 0 with the remote tier covering everything before it, a consumer from `first`
// gets every message in order (remote fragments, then local segments).
import { Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, scaled,
  uniqueName } from "../lib/client.mjs";

export const name = "tiered_read";
export const timeoutSec = 240;
export const strataOnly = "tiering to the object store is strata's";

// Settings of docs/CONFIGURATION.md "The node's configuration file" (src/node/node_config.h), sized so a few MB reach the remote tier
// and leave local disk within seconds.
export const strataServer = () => ({
  config: {
    log: { fsync: "never", segment_bytes: 65536, retention: { max_bytes: 131072 } },
    tiering: { fragment_target_bytes: 65536, fragment_max_age_ms: 200, persist_threshold: 1, persist_interval_ms: 100 },
  },
  args: ["--http", "127.0.0.1:0"],
});

const body = (i) => Buffer.from(`tiered ${i} ${"t".repeat(150)}`);

async function waitTieredAndDropped(server, stream, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let s;
  for (;;) {
    const st = await server.status();
    s = st.streams?.[stream];
    if (!s) throw new Error(`/status has no stream ${stream} (streams: ${Object.keys(st.streams ?? {}).join(", ")})`);
    const t = s.tiering;
    if (t && s.local_first_offset > 0 && t.remote_first_offset === 0 && t.remote_next_offset >= s.local_first_offset) {
      return s;
    }
    if (Date.now() > deadline) {
      throw new Error(`after ${timeoutMs} ms the stream is not tiered and dropped locally: ${JSON.stringify({
        local_first_offset: s.local_first_offset, local_next_offset: s.local_next_offset,
        remote_first_offset: t?.remote_first_offset, remote_next_offset: t?.remote_next_offset, last_error: t?.last_error })}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function run({ server, log }) {
  const n = scaled(20000, 10000);
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  const stream = uniqueName("tiered");
  await client.createStream({ stream });
  const publisher = await client.declarePublisher({ stream });
  await publishConfirmed(publisher, confirms, n, body);
  log(`${n} messages confirmed`);

  const s = await waitTieredAndDropped(server, stream, 60000);
  log(`local disk holds offsets ${s.local_first_offset}..${s.local_next_offset}; remote ` +
    `${s.tiering.remote_first_offset}..${s.tiering.remote_next_offset}`);
  check(s.local_first_offset < n, "everything was dropped locally; the read would not cross tiers");

  const got = new Collector("consumer from first across tiers");
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
  await got.until(n, 120000);
  expectSequence("consume from first across tiers", got.messages.slice(0, n), n, body, { offset0: 0n });
  await consumer.close();
  await publisher.close();
  await client.deleteStream({ stream });
  await client.close();
}
