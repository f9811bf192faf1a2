// Deleting a stream while publishers of the deleting client are still open on it, then closing the client: the server
// tells the publishers' connection the stream is gone (MetadataUpdate), the client closes its publishers, and
// client.close() settles. Both with the publishers on the locator's own client and with a second client's publisher
// that learns of the deletion only from the server.
import { Confirms, check, connect, publishConfirmed, uniqueName } from "../lib/client.mjs";

export const name = "delete_with_open_publishers";
export const timeoutSec = 60;

const body = (i) => Buffer.from(`delete with open publishers ${i}`);

// A close that does not settle is the failure this scenario is about: name it rather than wait for the runner's timeout.
async function closeWithin(client, what, ms = 10000) {
  let timer;
  await Promise.race([
    client.close(),
    new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`${what}: close() did not settle in ${ms} ms`)), ms); }),
  ]);
  clearTimeout(timer);
}

export async function run({ server, log }) {
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  const otherConfirms = new Confirms();
  const other = await connect(server, { confirms: otherConfirms });
  const stream = uniqueName("delopen");
  await client.createStream({ stream });
  const withRef = await client.declarePublisher({ stream, publisherRef: "js-delete-open" });
  const plain = await client.declarePublisher({ stream });
  const foreign = await other.declarePublisher({ stream });
  await publishConfirmed(withRef, confirms, 100, body);
  await publishConfirmed(plain, confirms, 100, body);
  await publishConfirmed(foreign, otherConfirms, 100, body);
  log("three publishers open with 100 confirmed messages each; deleting the stream");

  // close() right after the deletion's answer, while the client is still closing its publishers on the server's
  // MetadataUpdate: it then sends Close twice on the publishers' connection and waits for both answers.
  await client.deleteStream({ stream });
  await closeWithin(client, "the deleting client");
  const meta = await other.queryMetadata({ streams: [stream] });
  check(meta[0]?.responseCode === 2, `metadata of the deleted stream answers code ${meta[0]?.responseCode}, expected 2`);
  await closeWithin(other, "the other client");
  log("both clients closed");
}
