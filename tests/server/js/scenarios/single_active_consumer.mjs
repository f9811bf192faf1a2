// Single active consumer fail-over: two consumers with the same name on one stream (each on its own connection). The
// first is active and gets everything, the second nothing; the first stores an offset and unsubscribes; the second is
// told it is active (ConsumerUpdate), answers with the stored offset + 1, and gets exactly the rest, including what is
// published after the fail-over. Needs RabbitMQ >= 3.11 (ConsumerUpdate, 0x1a).
import { Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, uniqueName,
  versionAtLeast } from "../lib/client.mjs";

export const name = "single_active_consumer";
export const timeoutSec = 180;

const body = (i) => Buffer.from(`sac ${i}`);

// What a consumer that becomes active answers: resume after the offset its group stored, or from the start.
const resumeFromStored = (client) => async (reference, stream) => {
  try {
    return Offset.offset((await client.queryOffset({ reference, stream })) + 1n);
  } catch {
    return Offset.first();
  }
};

export async function run({ server, log, skip }) {
  const n = 1000;
  const m = 500;
  const stored = 399n;
  const group = "js-sac-group";
  const confirms = new Confirms();
  const pub = await connect(server, { confirms });
  if (!versionAtLeast(pub, "3.11.0")) {
    await pub.close();
    skip(`server version ${pub.rabbitManagementVersion} has no single active consumer for streams (3.11+)`);
  }
  const stream = uniqueName("sac");
  await pub.createStream({ stream });
  const publisher = await pub.declarePublisher({ stream });
  await publishConfirmed(publisher, confirms, n, body);

  const clientA = await connect(server);
  const clientB = await connect(server);
  const a = new Collector("consumer A (first, active)");
  const b = new Collector("consumer B (second, standby)");
  const params = (client) => ({ stream, offset: Offset.first(), singleActive: true, consumerRef: group,
    consumerUpdateListener: resumeFromStored(client) });
  const consumerA = await clientA.declareConsumer(params(clientA), a.handle);
  await clientB.declareConsumer(params(clientB), b.handle);

  await a.until(n, 60000);
  expectSequence("active consumer A", a.messages, n, body, { offset0: 0n });
  check(b.messages.length === 0, `standby consumer B received ${b.messages.length} messages while A was active`);

  await consumerA.storeOffset(stored);
  check((await consumerA.queryOffset()) === stored, "consumer A's stored offset did not read back");
  log(`A consumed ${n}, stored offset ${stored}; closing A`);
  await clientA.closeConsumer(consumerA.extendedId);

  await publishConfirmed(publisher, confirms, m, (i) => body(n + i), { what: "publish after the fail-over" });
  const rest = n + m - Number(stored) - 1;
  await b.until(rest, 60000);
  expectSequence("consumer B after the fail-over", b.messages, rest, body,
    { first: Number(stored) + 1, offset0: stored + 1n });
  log(`B took over at offset ${stored + 1n} and got the remaining ${rest} messages`);
  await clientA.close();
  await clientB.close();
  // Deleted with the publisher still open (scenario delete_with_open_publishers).
  await pub.deleteStream({ stream });
  await pub.close();
}
