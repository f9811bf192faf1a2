// strata only: the web console the node serves (src/server/console/), in a real browser — Debian's chromium driven by
// playwright-core. A wrong password is refused; guest logs in; a stream appears on the Streams page while a publisher
// (the stock JS client) writes to it, with an upload lag; its link leads to the stream's page, where the lag falls to
// 0 once the publisher stops and the uploads are persisted, and the upload-lag chart is drawn: a screenshot of the
// page is decoded and must hold the chart line's colour. A stream of the same name in another vhost has its own row
// and page, named with its vhost.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { check, connect, repoRoot, uniqueName } from "../lib/client.mjs";

export const name = "web_console";
export const timeoutSec = 180;
export const strataOnly = "the web console is strata's";

// Fragments cut by age (1.5 s), so a running publisher always leaves an upload lag that falls once it stops. The node
// samples its streams every 200 ms for the charts' history.
export const strataServer = () => ({
  config: {
    tiering: { fragment_target_bytes: 67108864, fragment_max_age_ms: 1500, persist_threshold: 1, persist_interval_ms: 100 },
    server: { history_interval_ms: 200 },
  },
  args: ["--http", "127.0.0.1:0"],
});

const require = createRequire(path.join(repoRoot, "tools/package.json"));
const CHROMIUM = process.env.STRATA_CHROMIUM ?? "/usr/bin/chromium";
// The chart line's stroke (--accent in console.css).
const ACCENT = [0x21, 0x56, 0xd1];

// Polls fn() until it returns a truthy value.
async function until(what, fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms (last: ${last})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Pixels of `png` (a screenshot) within 40 of `rgb` on each channel, counted by the browser itself.
async function pixelsOfColour(browser, png, rgb) {
  const page = await browser.newPage();
  try {
    return await page.evaluate(async ({ data, rgb }) => {
      const img = new Image();
      img.src = `data:image/png;base64,${data}`;
      await img.decode();
      const c = document.createElement("canvas");
      c.width = img.width;
      c.height = img.height;
      const g = c.getContext("2d");
      g.drawImage(img, 0, 0);
      const px = g.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < px.length; i += 4) {
        if (Math.abs(px[i] - rgb[0]) < 40 && Math.abs(px[i + 1] - rgb[1]) < 40 && Math.abs(px[i + 2] - rgb[2]) < 40) n++;
      }
      return n;
    }, { data: png.toString("base64"), rgb });
  } finally {
    await page.close();
  }
}

export async function run({ server, dir, log }) {
  check(fs.existsSync(CHROMIUM), `no browser at ${CHROMIUM} (scripts/setup.sh installs Debian's chromium)`);
  // The root leads to the console; its files come from the node, nothing from elsewhere.
  const root = await fetch(`${server.http}/`, { redirect: "manual" });
  check(root.status === 302 && root.headers.get("location") === "/console/", `GET / answered ${root.status}`);
  const js = await fetch(`${server.http}/console/console.js`);
  check(js.ok && js.headers.get("content-type").startsWith("text/javascript"), `console.js: HTTP ${js.status}`);
  check((await fetch(`${server.http}/console/nope.js`)).status === 404, "an unknown console file is not 404");

  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  const client = await connect(server);
  let publishing = true;
  let publisherDone = Promise.resolve();
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const failures = [];
  page.on("pageerror", (e) => failures.push(`page error: ${e.message}`));
  // Errors on the page's console fail the test, but the wrong password's 401 (the browser logs every refused fetch).
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().includes("status of 401")) failures.push(`console error: ${m.text()}`);
  });
  try {
    await page.goto(`${server.http}/console/?poll=300`);
    await page.fill("#user", "guest");
    await page.fill("#password", "wrong");
    await page.click("button[type=submit]");
    await until("the wrong password refused", async () =>
      (await page.textContent("#login-error")).includes("Wrong user name or password"));
    await page.fill("#password", "guest");
    await page.click("button[type=submit]");
    await page.waitForSelector("#nav:not([hidden])");
    check((await page.textContent("#who")).includes("guest"), "the console does not name the user");
    check(await page.isHidden("#login"), "the login form is still shown after logging in");
    await page.waitForSelector("h1:has-text('Overview')");
    check((await page.textContent(".card.disk .value")).includes("free of"), "the overview shows no disk space");
    log("logged in");

    await page.click("#nav a[data-page=streams]");
    const stream = uniqueName("console");
    await client.createStream({ stream });
    const publisher = await client.declarePublisher({ stream });
    publisherDone = (async () => {
      for (let i = 0; publishing; i++) {
        for (let j = 0; j < 20; j++) await publisher.send(Buffer.from(`console ${i}.${j} ${"c".repeat(200)}`));
        await publisher.flush();
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const row = `tr[data-stream="${stream}"]`;
    await page.waitForSelector(row, { timeout: 30000 });
    log("the stream appeared on the Streams page");
    const lag = await until("an upload lag shown while the publisher runs", async () => {
      const t = (await page.textContent(`${row} td.upload-lag`)).trim();
      return t !== "0 B" && t !== "—" ? t : null;
    });
    log(`upload lag while publishing: ${lag}`);

    await page.click(`${row} a`);
    await page.waitForSelector(`h1:has-text('Stream ${stream}')`);
    check(decodeURIComponent(new URL(page.url()).hash) === `#/streams/${stream}`, `followed to ${page.url()}`);
    // A few samples for the chart while the lag is there.
    await new Promise((r) => setTimeout(r, 2000));
    publishing = false;
    await publisherDone;
    log("publisher stopped");
    await until("the upload lag falling to 0", async () =>
      (await page.textContent(".card.upload-lag .value")).startsWith("0 B,"), 60000);
    const peak = await page.textContent("figure.chart-upload-lag svg text");
    check(peak !== "0 B", `the upload-lag chart's scale never rose above 0 (${peak})`);
    const points = (await page.getAttribute("figure.chart-upload-lag polyline", "points")).trim().split(" ");
    check(points.length >= 5, `the upload-lag chart has ${points.length} points`);
    log(`upload lag fell to 0; chart of ${points.length} points, peak ${peak}`);

    const png = await page.screenshot({ fullPage: true });
    fs.writeFileSync(path.join(dir, "web_console.png"), png);
    // Clipped from the page rather than an element screenshot: the console redraws the element every 300 ms.
    // null while a redraw swaps the element: measured again.
    const box = await until("the upload-lag chart's box", () => page.locator("figure.chart-upload-lag").boundingBox());
    const chartPng = await page.screenshot({ clip: box });
    const line = await pixelsOfColour(browser, chartPng, ACCENT);
    check(line >= 50, `the upload-lag chart's screenshot holds ${line} pixels of the line's colour`);
    log(`screenshot: ${png.length} bytes; the chart line is ${line} pixels`);

    // The overview now counts the uploads among the object store's requests.
    await page.click("#nav a[data-page=overview]");
    await until("the object store's puts on the overview", async () =>
      Number((await page.textContent("tr[data-op=put] td:nth-child(2)")).replace(/,/g, "")) > 0);
    await page.click("#nav a[data-page=connections]");
    await page.waitForSelector("h1:has-text('Connections')");
    check((await page.$$("main table tbody tr")).length >= 1, "the Connections page lists no connection");

    // The same name in another vhost is another stream: its own row on the Streams page, and its own page, named
    // with its vhost and showing its own messages.
    const auth = "Basic " + Buffer.from("guest:guest").toString("base64");
    for (const [p, doc] of [["/api/vhosts/prod", {}], ["/api/permissions/prod/guest", { configure: ".*", write: ".*", read: ".*" }]]) {
      const res = await fetch(`${server.http}${p}`, { method: "PUT", headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify(doc) });
      check(res.ok, `PUT ${p}: HTTP ${res.status} ${await res.text()}`);
    }
    const prod = await connect(server, { vhost: "prod" });
    try {
      await prod.createStream({ stream });
      const prodPublisher = await prod.declarePublisher({ stream });
      for (let i = 0; i < 7; i++) await prodPublisher.send(Buffer.from(`prod ${i}`));
      await prodPublisher.flush();
      await page.click("#nav a[data-page=streams]");
      const prodRow = `tr[data-stream="${stream}"][data-vhost="prod"]`;
      await until("the prod stream's row with its 7 messages", async () =>
        (await page.textContent(`${prodRow} td:nth-child(2)`)).trim() === "7");
      check((await page.$$(`tr[data-stream="${stream}"]`)).length === 2, "the two streams of that name are not two rows");
      await page.click(`${prodRow} a`);
      await page.waitForSelector(`h1:has-text('Stream ${stream} (vhost prod)')`);
      check(decodeURIComponent(new URL(page.url()).hash) === `#/streams/prod\n${stream}`, `followed to ${page.url()}`);
      await until("the prod stream's page counting its own 7 messages", async () =>
        (await page.textContent(".card.messages .value")).trim() === "7");
      log("a stream of the same name in vhost prod: its own row and page");
    } finally {
      await prod.close();
    }

    // A console opened now (a fresh session, polling every 2 s) charts the time before it: the node's own samples.
    const late = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    try {
      await late.goto(`${server.http}/console/#/streams/${encodeURIComponent(stream)}`);
      await late.fill("#user", "guest");
      await late.fill("#password", "guest");
      await late.click("button[type=submit]");
      await late.waitForSelector(`h1:has-text('Stream ${stream}')`);
      // Polling every 2 s the page itself records at most 8 points in 15 s: 10 come from the node's samples.
      const n = await until("the stream's history charted", async () => {
        const p = await late.getAttribute("figure.chart-upload-lag polyline", "points");
        const count = p ? p.trim().split(" ").length : 0;
        return count >= 10 ? count : null;
      }, 15000);
      log(`a console opened later charts ${n} points of the node's history`);
    } finally {
      await late.close();
    }
    check(failures.length === 0, failures.join("; "));
  } catch (e) {
    try { fs.writeFileSync(path.join(dir, "web_console_failure.png"), await page.screenshot({ fullPage: true })); } catch { /* closed */ }
    throw e;
  } finally {
    publishing = false;
    await publisherDone.catch(() => {});
    await browser.close();
    await client.close();
  }
}
