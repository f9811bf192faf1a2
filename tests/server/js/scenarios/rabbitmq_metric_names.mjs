// strata's metrics under RabbitMQ's names (docs/METRICS.md, "RabbitMQ's names") against the real thing: Debian's
// RabbitMQ 3.10.8 with its rabbitmq_prometheus plugin is started beside strata and both get the same workload from the
// stock JS client — a stream, 20 messages published with confirms, a consumer that reads them, a subscription to a
// missing stream, a second Subscribe with a used id, a login with a wrong password. Every rabbitmq_ family strata's
// /metrics has must be on RabbitMQ's page with the same type and label names, and every sample strata gives must have
// RabbitMQ's value (a counter: what the workload added to it), but for the differences listed in DIFFERS. The families RabbitMQ added after 3.10 are listed below with the release that
// added them, and must be missing from 3.10.8's page (so that the list stays true).
import fs from "node:fs";
import path from "node:path";
import { Offset, check, connect, Collector, Confirms, publishConfirmed, refusedConnect, responseCodeOf } from "../lib/client.mjs";
import { RabbitServer } from "../lib/rabbitmq.mjs";

export const name = "rabbitmq_metric_names";
export const timeoutSec = 240;
export const strataOnly = "it starts RabbitMQ itself, beside strata";
export const strataServer = () => ({ args: ["--http", "127.0.0.1:0"] });

const SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";
// Families strata offers that RabbitMQ 3.10.8 does not have yet: name → the release that added it.
const NEWER = {
  rabbitmq_stream_consumer_max_offset_lag: "4.0.5 (rabbitmq-server pull request 12765)",
  rabbitmq_detailed_stream_consumer_max_offset_lag: "4.0.5 (rabbitmq-server pull request 12765)",
};
// Measurements of the machine both servers run on (their data directories share a file system): checked for RabbitMQ's
// type and labels, and for a value within 1 % of RabbitMQ's (files come and go between the two reads).
const MEASURED = new Set(["rabbitmq_disk_space_available_bytes"]);
// Samples where strata counts what RabbitMQ 3.10.8 does not, on purpose: name → [strata's value, RabbitMQ's value]
// after the workload, and why. Checked as such, so that the difference stays the one documented (docs/METRICS.md).
const DIFFERS = {
  rabbitmq_global_stream_error_authentication_failure_total: {
    values: [1, 0],
    why: "a refused login: RabbitMQ 3.10.8 answers it with code 8 but does not count it; strata does",
  },
};

// A Prometheus text page as families: name → { type, samples: [{ labels: {…}, value }] }.
function parsePage(text) {
  const families = new Map();
  const family = (n) => {
    if (!families.has(n)) families.set(n, { type: "untyped", samples: [] });
    return families.get(n);
  };
  for (const line of text.split("\n")) {
    const t = line.match(/^# TYPE (\S+) (\S+)$/);
    if (t) {
      family(t[1]).type = t[2];
      continue;
    }
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels = {};
    for (const l of (m[3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    family(m[1]).samples.push({ labels, value: Number(m[4]) });
  }
  return families;
}

const labelKey = (labels) => JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));

async function page(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return parsePage(await res.text());
}

// The same client work on either server; the publisher and the consumer stay open for the scrape.
async function workload(server, log) {
  const bad = await refusedConnect(server, { password: "not-the-password" });
  check(bad === 8, `${server.kind}: a wrong password answered ${bad}`);
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  const stream = "metric-names";
  await client.createStream({ stream, arguments: {} });
  const publisher = await client.declarePublisher({ stream });
  await publishConfirmed(publisher, confirms, 20, (i) => Buffer.from(`m${i}`));
  const got = new Collector(`${server.kind} consumer`);
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
  await got.until(20, 30000);
  const missing = await responseCodeOf(client.subscribe({ subscriptionId: 90, stream: "metric-names-missing", credit: 1, offset: Offset.first() }));
  check(missing === 2, `${server.kind}: Subscribe to a missing stream answered ${missing}`);
  await client.subscribe({ subscriptionId: 91, stream, credit: 1, offset: Offset.next() });
  const dup = await responseCodeOf(client.subscribe({ subscriptionId: 91, stream, credit: 1, offset: Offset.next() }));
  check(dup === 3, `${server.kind}: a used subscription id answered ${dup}`);
  log(`${server.kind}: workload done`);
  return { client, publisher, consumer };
}

export async function run({ server, dir, log, skip, own }) {
  if (!fs.existsSync(SERVER)) skip(`${SERVER} missing (Debian's rabbitmq-server)`);
  const rabbit = own(new RabbitServer(path.join(dir, "rabbitmq"), { prometheus: true }));
  try {
    await rabbit.start();
    log(`rabbitmq ready on ${rabbit.port}, prometheus ${rabbit.prometheus}`);
    // Counters are compared as what the workload added: RabbitMQ's harness probes its port before (a connection
    // closed), strata's page starts at zero.
    const before = await page(`${rabbit.prometheus}/metrics`);
    const ours = await workload(server, log);
    const theirs = await workload(rabbit, log);
    // RabbitMQ's global counters and gauges are updated by the connection processes as they go; give both a moment.
    await new Promise((r) => setTimeout(r, 1000));
    const strata = await page(`${server.http}/metrics`);
    const reference = await page(`${rabbit.prometheus}/metrics`);
    const detailed = await page(`${rabbit.prometheus}/metrics/detailed?family=queue_coarse_metrics`);
    for (const [n, f] of detailed) if (!reference.has(n)) reference.set(n, f);

    const problems = [];
    let compared = 0;
    for (const [n, f] of strata) {
      if (!n.startsWith("rabbitmq_")) continue;
      if (NEWER[n]) {
        if (reference.has(n)) problems.push(`${n} is listed as added in ${NEWER[n]}, but RabbitMQ 3.10.8 has it`);
        continue;
      }
      const r = reference.get(n);
      if (!r) {
        problems.push(`${n}: RabbitMQ 3.10.8 has no such family`);
        continue;
      }
      if (r.type !== f.type) problems.push(`${n}: type ${f.type}, RabbitMQ's ${r.type}`);
      const theirLabels = new Set(r.samples.flatMap((s) => Object.keys(s.labels)));
      for (const s of f.samples) {
        for (const l of Object.keys(s.labels)) {
          if (!theirLabels.has(l)) problems.push(`${n}: label ${l}, which RabbitMQ's samples do not have`);
        }
        for (const l of theirLabels) {
          if (!(l in s.labels)) problems.push(`${n}: no label ${l}, which RabbitMQ's samples have`);
        }
        const same = r.samples.find((x) => labelKey(x.labels) === labelKey(s.labels));
        if (!same) {
          problems.push(`${n}${labelKey(s.labels)}: no such sample on RabbitMQ's page`);
          continue;
        }
        let theirs = same.value;
        if (r.type === "counter") {
          const was = before.get(n)?.samples.find((x) => labelKey(x.labels) === labelKey(s.labels));
          theirs -= was ? was.value : 0;
        }
        if (MEASURED.has(n)) {
          if (Math.abs(s.value - theirs) > 0.01 * Math.max(theirs, 1)) {
            problems.push(`${n}${labelKey(s.labels)}: strata ${s.value}, RabbitMQ ${theirs}: more than 1 % apart`);
          } else {
            compared += 1;
          }
          continue;
        }
        const expected = DIFFERS[n] ? DIFFERS[n].values : [theirs, theirs];
        if (s.value !== expected[0] || theirs !== expected[1]) {
          problems.push(`${n}${labelKey(s.labels)}: strata ${s.value}, RabbitMQ ${theirs}` +
            (DIFFERS[n] ? ` (expected ${expected[0]} and ${expected[1]}: ${DIFFERS[n].why})` : ""));
        } else {
          compared += 1;
        }
      }
    }
    const ourNames = [...strata.keys()].filter((n) => n.startsWith("rabbitmq_"));
    log(`${ourNames.length} rabbitmq_ families, ${compared} samples equal to RabbitMQ's`);
    check(ourNames.length >= 20, `strata's page has only ${ourNames.length} rabbitmq_ families`);
    check(problems.length === 0, `against RabbitMQ 3.10.8:\n  ${problems.join("\n  ")}`);

    for (const w of [ours, theirs]) await w.client.close();
  } finally {
    await rabbit.close();
  }
}
