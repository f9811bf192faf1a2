// Create a stream, publish N messages (100 000 scaled, at least 10 000) with confirms, consume them all from `first`
// checking content and order.
import { Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, scaled, serverProperties,
  serverVersion, uniqueName } from "../lib/client.mjs";

export const name = "publish_consume";
export const timeoutSec = 300;

const body = (i) => Buffer.from(`publish-consume message ${i} ${"x".repeat(i % 97)}`);

export async function run({ server, log }) {
  const n = scaled(100000, 10000);
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  const props = serverProperties(client);
  log(`server version ${serverVersion(client)}, product ${props.product}`);
  if (server.kind === "strata") {
    check(props.product === "strata", `PeerProperties product is ${props.product}, expected "strata"`);
    check(client.serverVersions.length > 0, "strata answered ExchangeCommandVersions with no versions");
  }
  const stream = uniqueName("pc");
  await client.createStream({ stream });
  const meta = await client.queryMetadata({ streams: [stream] });
  check(meta[0].leader && meta[0].leader.host === server.host && meta[0].leader.port === server.port,
    `Metadata leader is ${JSON.stringify(meta[0].leader)}, expected ${server.host}:${server.port}`);

  const publisher = await client.declarePublisher({ stream });
  const t0 = Date.now();
  const ids = await publishConfirmed(publisher, confirms, n, body);
  log(`${n} messages confirmed in ${Date.now() - t0} ms`);
  check(ids[0] === 1n && ids[n - 1] === BigInt(n), `publishing ids ${ids[0]}..${ids[n - 1]}, expected 1..${n}`);

  const got = new Collector("consumer from first");
  const t1 = Date.now();
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
  await got.until(n, 120000);
  log(`${n} messages consumed in ${Date.now() - t1} ms`);
  expectSequence("consume from first", got.messages.slice(0, n), n, body, { offset0: 0n });
  await consumer.close();
  await publisher.close();
  await client.deleteStream({ stream });
  await client.close();
}
