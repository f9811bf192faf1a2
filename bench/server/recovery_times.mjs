#!/usr/bin/env node
// How long a node takes to serve again after the two bad days of issue 27, with the stock JS client as the
// application (tests/server/js/lib), each measured RUNS times (median, min, max):
//  - full disk: `strata serve` with its data directory on a 48 MiB tmpfs (mounted here: run as root) and the disk
//    alarm at 8 MB; a filler file takes the disk below it, publishes are refused; the filler is deleted at T0 and
//    a publisher retrying every 10 ms gets its first confirm at T1. Default disk.check_interval_ms (1000).
//  - lost disk: STREAMS streams with MESSAGES messages each, confirmed remotely (tiering.confirm remote: in the
//    bucket), the node stopped and its data directory deleted; at T0 `strata recover --from-bucket` runs, then
//    `strata serve` starts, and a consumer from `first` of one stream (retrying while the node answers 6) gets its
//    first message at T1; T2 when every stream has delivered its first message.
//   STRATA_BIN=build/strata node bench/server/recovery_times.mjs [RUNS]
// Environment: STREAMS (default 20), MESSAGES (default 1000).
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Confirms, Offset, connect, publishConfirmed } from "../../tests/server/js/lib/client.mjs";
import { StrataServer } from "../../tests/server/js/lib/strata.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.STRATA_BIN ?? path.join(here, "../../build/strata");
const runs = Number(process.argv[2] ?? 3);
const STREAMS = Number(process.env.STREAMS ?? 20);
const MESSAGES = Number(process.env.MESSAGES ?? 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor((s.length - 1) / 2)], min: s[0], max: s[s.length - 1] };
}

// The first message of `stream` from `first`, retrying while the node is not serving it yet.
async function firstMessage(server, stream, deadline) {
  for (;;) {
    let client;
    try {
      client = await connect(server);
      const got = await new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error("no message within 2 s")), 2000);
        client.declareConsumer({ stream, offset: Offset.first() }, (m) => { clearTimeout(t); resolve(m); }).catch(reject);
      });
      await client.close().catch(() => {});
      return got;
    } catch (e) {
      if (client) await client.close().catch(() => {});
      if (Date.now() > deadline) throw new Error(`${stream}: not served: ${e.message}`);
      await sleep(20);
    }
  }
}

async function fullDisk(work) {
  const mnt = path.join(work, "data");
  fs.mkdirSync(mnt, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt]);
  const server = new StrataServer(work, {
    bin,
    config: { objstore: { fs: { root: path.join(work, "objects") } }, disk: { free_limit_bytes: 8_000_000 } },
    args: ["--http", "127.0.0.1:0"],
  });
  try {
    await server.start();
    const confirms = new Confirms();
    const client = await connect(server, { confirms });
    await client.createStream({ stream: "full", arguments: {} });
    const publisher = await client.declarePublisher({ stream: "full" });
    await publishConfirmed(publisher, confirms, 100, () => Buffer.alloc(100, 1));
    // Below the limit: the alarm refuses publishes within a check interval.
    const free = Number(execFileSync("df", ["-B1", "--output=avail", mnt]).toString().split("\n")[1]);
    const filler = path.join(mnt, "filler");
    execFileSync("fallocate", ["-l", String(free - 4_000_000), filler]);
    for (const deadline = Date.now() + 10000; ; await sleep(50)) {
      if ((await server.status()).node?.disk?.alarm) break;
      if (Date.now() > deadline) throw new Error("the disk alarm did not go off");
    }
    const t0 = Date.now();
    fs.rmSync(filler);
    const before = confirms.counts.get(Confirms.keyOf(publisher)) ?? 0;
    for (;;) {
      await publisher.send(Buffer.alloc(100, 2));
      await sleep(10);
      if ((confirms.counts.get(Confirms.keyOf(publisher)) ?? 0) > before) break;
      if (Date.now() - t0 > 60000) throw new Error("publishing did not resume within 60 s");
    }
    const ms = Date.now() - t0;
    await client.close().catch(() => {});
    return ms;
  } finally {
    await server.close?.().catch(() => {});
    await server.stop().catch(() => {});
    spawnSync("umount", ["-l", mnt]);
  }
}

async function lostDisk(work) {
  fs.mkdirSync(work, { recursive: true });
  const config = {
    objstore: { fs: { root: path.join(work, "objects") } },
    tiering: { confirm: "remote", fragment_max_age_ms: 200 },
  };
  const server = new StrataServer(work, { bin, config, args: ["--http", "127.0.0.1:0"] });
  await server.start();
  const confirms = new Confirms();
  const client = await connect(server, { confirms });
  for (let s = 0; s < STREAMS; s++) {
    await client.createStream({ stream: `s${s}`, arguments: {} });
    const p = await client.declarePublisher({ stream: `s${s}` });
    await publishConfirmed(p, confirms, MESSAGES, () => Buffer.alloc(200, s % 256));
  }
  await client.close().catch(() => {});
  await server.stop();
  fs.rmSync(path.join(work, "data"), { recursive: true, force: true });
  const t0 = Date.now();
  execFileSync(bin, ["recover", "--from-bucket", "--config", path.join(work, "strata-serve.json"), "--data-dir",
    path.join(work, "data")], { stdio: "ignore" });
  await server.start();
  const deadline = t0 + 60000;
  try {
    await firstMessage(server, "s0", deadline);
    const first = Date.now() - t0;
    await Promise.all(Array.from({ length: STREAMS }, (_, s) => firstMessage(server, `s${s}`, deadline)));
    const all = Date.now() - t0;
    return { first, all };
  } catch (e) {
    console.error(`strata serve's log:\n${server.proc.tail(server.proc.out + server.proc.err, 8000)}`);
    if (process.env.STACKS) {
      const r = spawnSync("gdb", ["-p", String(server.proc.proc.pid), "-batch", "-ex", "thread apply all bt"],
        { encoding: "utf8" });
      fs.writeFileSync(process.env.STACKS, r.stdout + r.stderr);
    }
    throw e;
  } finally {
    await server.stop();
  }
}

const cpu = os.cpus()[0]?.model ?? "unknown CPU";
console.log(`CPU: ${cpu}, ${os.cpus().length} cores; ${runs} runs; lost disk: ${STREAMS} streams x ${MESSAGES} messages`);
const full = [], first = [], all = [];
for (let r = 0; r < runs; r++) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "strata-recovery-"));
  try {
    full.push(await fullDisk(path.join(work, "full")));
    const l = await lostDisk(path.join(work, "lost"));
    first.push(l.first);
    all.push(l.all);
    console.log(`run ${r + 1}: full disk freed -> publishing ${full.at(-1)} ms; lost disk -> first stream ${l.first} ms, ` +
      `all ${STREAMS} ${l.all} ms`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
const f = (x) => `${x.median} ms (min ${x.min}, max ${x.max})`;
console.log(`full disk freed -> first confirmed publish: ${f(stats(full))}`);
console.log(`lost disk -> first stream served (recover + start + first message): ${f(stats(first))}`);
console.log(`lost disk -> all ${STREAMS} streams served: ${f(stats(all))}`);
process.exit(0);
