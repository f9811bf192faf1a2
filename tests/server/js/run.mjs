#!/usr/bin/env node
// Runs JS client scenarios against a server it starts: `strata serve` (default; STRATA_BIN names the binary) or, with
// STRATA_JS_TARGET=rabbitmq, Debian's RabbitMQ 3.10.8. Each scenario gets its own temp dir and server, a timeout, and the
// server stopped by pid at the end. Exit 0: all passed; 77: all skipped (ctest SKIP_RETURN_CODE); 1: a failure.
//   node tests/server/js/run.mjs [scenario ...]      (no names: all)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { repoRoot, unhandled } from "./lib/client.mjs";
import { RabbitServer } from "./lib/rabbitmq.mjs";
import { StrataServer } from "./lib/strata.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const SKIP = 77;

class Skip extends Error {}

async function loadScenarios() {
  const dir = path.join(here, "scenarios");
  const out = new Map();
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".mjs")).sort()) {
    const mod = await import(path.join(dir, f));
    // ctest names its tests after the files (tests/server/CMakeLists.txt): the two must agree.
    if (mod.name !== path.basename(f, ".mjs")) throw new Error(`scenarios/${f} exports name ${mod.name}`);
    out.set(mod.name, mod);
  }
  return out;
}

function makeServer(target, dir, scenario) {
  if (target === "rabbitmq") return new RabbitServer(dir);
  const bin = process.env.STRATA_BIN ?? path.join(repoRoot, "build-dev/strata");
  return new StrataServer(dir, { bin, ...(scenario.strataServer ? scenario.strataServer(dir) : {}) });
}

// The server of the running scenario, stopped if this runner is interrupted (ctest's timeout, Ctrl-C).
let current;
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    console.log(`interrupted by ${sig}; stopping the server`);
    try {
      for (const s of current?.owned ?? []) await s.close().catch(() => {});
      await current?.server.close();
    } finally {
      if (current && !process.env.STRATA_JS_KEEP) fs.rmSync(current.dir, { recursive: true, force: true });
      process.exit(1);
    }
  });
}

// An error the client throws where no test awaits it fails the running scenario (instead of killing node and
// orphaning the server).
let crashed = () => {};
for (const ev of ["unhandledRejection", "uncaughtException"]) {
  process.on(ev, (e) => {
    if (ev === "unhandledRejection" && unhandled.capture) unhandled.capture(e);
    else crashed(e);
  });
}

async function runOne(target, scenario) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `strata-js-${scenario.name}-`));
  const server = makeServer(target, dir, scenario);
  // Servers a scenario starts itself (ctx.own): closed with the server under test, whatever the scenario's end.
  const owned = [];
  current = { server, dir, owned };
  const t0 = Date.now();
  const log = (m) => console.log(`[${scenario.name} +${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);
  const ctx = {
    target, server, dir, log,
    skip: (reason) => { throw new Skip(reason); },
    own: (s) => { owned.push(s); return s; },
  };
  let result = "pass";
  let timer;
  try {
    if (scenario.strataOnly && target !== "strata") throw new Skip(`strata only: ${scenario.strataOnly}`);
    await server.start();
    log(`${server.kind} ready on ${server.host}:${server.port}`);
    const timeoutMs = (scenario.timeoutSec ?? 120) * 1000;
    await Promise.race([
      scenario.run(ctx),
      new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`timed out after ${timeoutMs / 1000} s`)), timeoutMs); }),
      new Promise((_, rej) => { crashed = (e) => rej(new Error(`error outside the scenario's awaits: ${e?.stack ?? e}`)); }),
    ]);
    log("PASS");
  } catch (e) {
    if (e instanceof Skip) {
      result = "skip";
      log(`SKIP: ${e.message}`);
    } else {
      result = "fail";
      log(`FAIL: ${e && e.stack ? e.stack : e}`);
      const logs = server.logs();
      if (logs) console.log(`--- ${server.kind} output (tail) ---\n${logs.slice(-4000)}\n---`);
    }
  } finally {
    clearTimeout(timer);
    crashed = () => {};
    for (const s of [...owned, server]) {
      try {
        await s.close();
      } catch (e) {
        result = "fail";
        log(`FAIL on stop of ${s.kind}: ${e.message}`);
      }
    }
    if (process.env.STRATA_JS_KEEP) log(`kept ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
    current = undefined;
  }
  return result;
}

const target = process.env.STRATA_JS_TARGET ?? "strata";
if (!["strata", "rabbitmq"].includes(target)) {
  console.error(`STRATA_JS_TARGET must be strata or rabbitmq, not ${target}`);
  process.exit(2);
}
const all = await loadScenarios();
const names = process.argv.slice(2);
for (const n of names) {
  if (!all.has(n)) {
    console.error(`unknown scenario ${n}; known: ${[...all.keys()].join(", ")}`);
    process.exit(2);
  }
}
const results = [];
for (const n of names.length ? names : [...all.keys()]) results.push([n, await runOne(target, all.get(n))]);
console.log(results.map(([n, r]) => `${r.toUpperCase()} ${n}`).join("\n"));
const failed = results.some(([, r]) => r === "fail");
const allSkipped = results.every(([, r]) => r === "skip");
// The client keeps sockets and timers that a failed scenario may leave behind: exit explicitly.
process.exit(failed ? 1 : allSkipped ? SKIP : 0);
