// strata's management API names a super stream's partitions and binding keys as `rabbitmq-streams add_super_stream`
// does, checked against the real thing: Debian's RabbitMQ 3.10.8 is started beside strata and the same two super
// streams are made on both (by a partition count, and by keys). RabbitMQ keeps a super stream as a direct exchange
// bound to its partition streams, each binding with its key and an `x-stream-partition-order` argument: its
// `rabbitmqctl list_bindings` must name the same partitions, in the same order, with the same keys as strata's
// GET /api/super-streams/NAME. (3.10.8 names the keys option `--routing-keys`, later releases `--binding-keys`; the
// stock JS client 1.0.0 cannot ask 3.10 for Partitions itself: it gates super stream commands on 3.13.)
import fs from "node:fs";
import path from "node:path";
import { check } from "../lib/client.mjs";
import { RabbitServer } from "../lib/rabbitmq.mjs";

export const name = "super_stream_naming";
export const timeoutSec = 240;
export const strataOnly = "it starts RabbitMQ itself, beside strata";
export const strataServer = () => ({ args: ["--http", "127.0.0.1:0"] });

const SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const SUPERS = [
  { name: "orders", rabbit: ["--partitions", "3"], strata: { partitions: 3 } },
  { name: "regions", rabbit: ["--routing-keys", "eu,us-east"], strata: { binding_keys: ["eu", "us-east"] } },
];
const AUTH = { Authorization: `Basic ${Buffer.from("guest:guest").toString("base64")}` };

// RabbitMQ's definition of super stream `name`: its partitions in partition order, and their keys.
function rabbitDefinition(rabbit, name) {
  const out = rabbit.cli("rabbitmqctl", ["list_bindings", "source_name", "destination_name", "routing_key", "arguments",
    "--formatter", "json", "--quiet"]);
  const bindings = JSON.parse(out).filter((b) => b.source_name === name);
  // arguments: [["x-stream-partition-order", "long", N]]
  const order = (b) => {
    const a = (b.arguments ?? []).find((x) => x[0] === "x-stream-partition-order");
    if (!a) throw new Error(`binding ${JSON.stringify(b)} has no x-stream-partition-order`);
    return Number(a[2]);
  };
  bindings.sort((a, b) => order(a) - order(b));
  return { partitions: bindings.map((b) => b.destination_name), binding_keys: bindings.map((b) => b.routing_key) };
}

export async function run({ server, dir, log, skip, own }) {
  if (!fs.existsSync(SERVER)) skip(`${SERVER} missing (Debian's rabbitmq-server)`);
  const rabbit = own(new RabbitServer(path.join(dir, "rabbitmq")));
  try {
    await rabbit.start();
    for (const s of SUPERS) {
      rabbit.cli("rabbitmq-streams", ["add_super_stream", s.name, ...s.rabbit]);
      const res = await fetch(`${server.http}/api/super-streams/${s.name}`, {
        method: "PUT",
        headers: { ...AUTH, "Content-Type": "application/json" },
        body: JSON.stringify(s.strata),
      });
      check(res.status === 201, `PUT /api/super-streams/${s.name}: HTTP ${res.status} ${await res.text()}`);
      const doc = await (await fetch(`${server.http}/api/super-streams/${s.name}`, { headers: AUTH })).json();
      const ours = { partitions: doc.partitions, binding_keys: doc.binding_keys };
      const theirs = rabbitDefinition(rabbit, s.name);
      log(`${s.name}: strata ${JSON.stringify(ours)}, RabbitMQ ${JSON.stringify(theirs)}`);
      check(theirs.partitions.length > 0, `RabbitMQ lists no bindings of ${s.name}`);
      check(JSON.stringify(ours) === JSON.stringify(theirs),
        `super stream ${s.name}: strata has ${JSON.stringify(ours)}, RabbitMQ ${JSON.stringify(theirs)}`);
    }
  } finally {
    await rabbit.close();
  }
}
