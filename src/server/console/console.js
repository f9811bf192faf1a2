// The strata web console: one page over the node's management API. Every
// request carries the credentials the user logged in with (HTTP Basic);
// nothing is loaded from elsewhere. It polls the API (every 2 s, or
// ?poll=MS), keeps the last hour of each stream's upload lag and consumer
// lag in memory for the charts (the hour before the page opened comes from
// the node's own samples, GET /api/history), and draws the page the
// address names:
// #/overview, #/streams, #/streams/NAME, #/connections, #/consumers, #/cluster.
"use strict";

const HOUR_MS = 3600 * 1000;
const state = {
  auth: sessionStorage.getItem("strata.auth"),
  user: sessionStorage.getItem("strata.user"),
  pollMs: Math.max(200, Number(new URLSearchParams(location.search).get("poll")) || 2000),
  data: null,
  totals: [],            // [{t, messages, uploadBytes, lag}]
  history: new Map(),    // stream -> [{t, uploadBytes, uploadOffsets, lag, messages}]
  loaded: new Set(),     // streams ("" : the totals) whose server-side hour is merged in
  timer: null,
};

// Elements from data, never from markup strings: names are user input.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("data-")) el.setAttribute(k, v);
    else el[k] = v;
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null) continue;
    el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return el;
}

const svgNs = "http://www.w3.org/2000/svg";
function s(tag, attrs) {
  const el = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  return el;
}

function bytes(n) {
  if (n === undefined || n === null) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}
const num = (n) => (n === undefined || n === null ? "—" : Number(n).toLocaleString("en"));

function base64(text) {
  let bin = "";
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin);
}

class Unauthorized extends Error {}

async function api(path) {
  // X-Requested-With: a refusal comes without a Basic challenge, which
  // would make the browser ask with its own dialog.
  const res = await fetch(path, {
    headers: { Authorization: state.auth, "X-Requested-With": "strata-console" },
    cache: "no-store",
  });
  if (res.status === 401) throw new Unauthorized("login refused");
  if (!res.ok) {
    let why = `HTTP ${res.status}`;
    try { why += `: ${(await res.json()).reason}`; } catch { /* not JSON */ }
    throw new Error(`${path}: ${why}`);
  }
  return res.json();
}

// ---- logging in and out ----

function showLogin(message) {
  clearTimeout(state.timer);
  state.auth = null;
  sessionStorage.removeItem("strata.auth");
  document.getElementById("login").hidden = false;
  document.getElementById("view").hidden = true;
  document.getElementById("nav").hidden = true;
  document.getElementById("who").textContent = "";
  document.getElementById("login-error").textContent = message || "";
}

async function logIn(user, password) {
  state.auth = "Basic " + base64(`${user}:${password}`);
  try {
    const me = await api("/api/whoami");
    state.user = me.name;
    sessionStorage.setItem("strata.auth", state.auth);
    sessionStorage.setItem("strata.user", me.name);
    start();
  } catch (e) {
    showLogin(e instanceof Unauthorized ? "Wrong user name or password." : e.message);
  }
}

function start() {
  document.getElementById("login").hidden = true;
  document.getElementById("view").hidden = false;
  document.getElementById("nav").hidden = false;
  const out = h("button", { type: "button", onclick: () => showLogin("Logged out.") }, "Log out");
  document.getElementById("who").replaceChildren(`${state.user} `, out);
  loadHistory("");
  poll();
}

// The hour before the page opened, as the node sampled it (GET
// /api/history), put in front of what the page has recorded since.
function seed(arr, samples) {
  const first = arr.length ? arr[0].t : Infinity;
  const older = samples.filter((x) => x.t < first).map((x) => ({
    t: x.t,
    messages: x.messages,
    uploadBytes: x.upload_lag_bytes,
    uploadOffsets: x.upload_lag_offsets,
    lag: x.consumer_max_lag,
  }));
  arr.unshift(...older);
}

async function loadHistory(stream) {
  if (state.loaded.has(stream)) return;
  state.loaded.add(stream);
  try {
    const [vhost, name] = splitKey(stream || "");
    const r = await api(stream ? `/api/history?stream=${encodeURIComponent(name)}&vhost=${encodeURIComponent(vhost)}` : "/api/history");
    if (stream && !state.history.has(stream)) state.history.set(stream, []);
    seed(stream ? state.history.get(stream) : state.totals, r.samples || []);
    render();
  } catch {
    // No history here (not served, or not sampled yet): the charts start now.
  }
}

// ---- polling ----

async function poll() {
  clearTimeout(state.timer);
  const line = document.getElementById("status-line");
  try {
    const list = (r) => (Array.isArray(r) ? r : r.items || []);
    const [streams, connections, consumers, status] = await Promise.all([
      api("/api/streams"),
      api("/api/stream/connections").then(list),
      api("/api/stream/consumers").then(list),
      fetch("/status", { cache: "no-store" }).then((r) => (r.ok ? r.json() : {})).catch(() => ({})),
    ]);
    state.data = { streams, connections, consumers, status };
    record(streams);
    render();
    line.textContent = `updated ${new Date().toLocaleTimeString("en-GB")}`;
    line.className = "muted";
  } catch (e) {
    if (e instanceof Unauthorized) return showLogin("Your credentials were refused; log in again.");
    line.textContent = `not updated: ${e.message}`;
    line.className = "error";
  }
  state.timer = setTimeout(poll, state.pollMs);
}

function record(streams) {
  const t = Date.now();
  const keep = (arr) => { while (arr.length && arr[0].t < t - HOUR_MS) arr.shift(); };
  let messages = 0, uploadBytes = 0, lag = 0;
  for (const st of streams) {
    if (!st.served_here) continue;
    const p = {
      t,
      uploadBytes: st.upload_lag ? st.upload_lag.bytes : 0,
      uploadOffsets: st.upload_lag ? st.upload_lag.offsets : 0,
      lag: st.consumer_max_lag || 0,
      messages: st.messages || 0,
    };
    const key = keyOf(st.name, st.vhost);
    if (!state.history.has(key)) state.history.set(key, []);
    const arr = state.history.get(key);
    arr.push(p);
    keep(arr);
    messages += p.messages;
    uploadBytes += p.uploadBytes;
    lag = Math.max(lag, p.lag);
  }
  state.totals.push({ t, messages, uploadBytes, lag });
  keep(state.totals);
}

// ---- drawing ----

function chart(title, points, pick, format, cls) {
  const W = 480, H = 150, L = 70, B = 18;
  const now = Date.now();
  // The time since the first sample, between a minute and the hour kept.
  const span = Math.min(HOUR_MS, Math.max(60 * 1000, points.length ? now - points[0].t : 0));
  const max = Math.max(1, ...points.map(pick));
  const svg = s("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
  svg.append(s("line", { x1: L, y1: H - B, x2: W, y2: H - B }), s("line", { x1: L, y1: 0, x2: L, y2: H - B }));
  const label = (x, y, text, anchor) => {
    const t = s("text", { x, y, "text-anchor": anchor });
    t.textContent = text;
    svg.append(t);
  };
  label(L - 4, 10, format(max), "end");
  label(L - 4, H - B, format(0), "end");
  label(L, H - 4, span >= 120 * 1000 ? `−${Math.round(span / 60000)} min` : `−${Math.round(span / 1000)} s`, "start");
  label(W - 2, H - 4, "now", "end");
  const xy = points.map((p) => {
    const x = L + ((p.t - (now - span)) / span) * (W - L);
    const y = H - B - (pick(p) / max) * (H - B - 4);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  svg.append(s("polyline", { points: xy.join(" ") }));
  const last = points.length ? format(pick(points[points.length - 1])) : "—";
  return h("figure", { class: cls }, h("figcaption", {}, `${title}: `, h("strong", {}, last)), svg);
}

function table(columns, rows, rowAttrs) {
  const head = h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : "" }, c.title)));
  const body = rows.map((r) =>
    h("tr", rowAttrs ? rowAttrs(r) : {},
      columns.map((c) => h("td", { class: [c.num ? "num" : "", c.cls || ""].join(" ").trim() }, c.value(r)))));
  return h("table", {}, h("thead", {}, head), h("tbody", {}, body));
}

function card(label, value, cls) {
  return h("div", { class: `card ${cls || ""}` }, h("div", { class: "value" }, value), h("div", { class: "label" }, label));
}

// A stream's key: its stored name — a stream of the vhost "/" by its name,
// one of another vhost by the vhost, a line feed and the name (no name or
// vhost holds a line feed) — unique across vhosts, as the server keys it.
const keyOf = (name, vhost) => (!vhost || vhost === "/" ? name : `${vhost}\n${name}`);
const splitKey = (key) => {
  const i = key.indexOf("\n");
  return i < 0 ? ["/", key] : [key.slice(0, i), key.slice(i + 1)];
};
const shownName = (key) => {
  const [vhost, name] = splitKey(key);
  return vhost === "/" ? name : `${name} (vhost ${vhost})`;
};
const streamLink = (key) => h("a", { href: `#/streams/${encodeURIComponent(key)}` }, shownName(key));

const pages = {
  overview() {
    const { streams, connections, consumers } = state.data;
    const served = streams.filter((x) => x.served_here);
    const total = (f) => served.reduce((a, x) => a + (f(x) || 0), 0);
    return [
      h("h1", {}, "Overview"),
      h("div", { class: "cards" },
        card("streams", num(streams.length), "streams-count"),
        card("messages", num(total((x) => x.messages))),
        card("connections", num(connections.length), "connections-count"),
        card("consumers", num(consumers.length)),
        card("publishers", num(total((x) => x.publishers))),
        card("largest consumer lag", num(Math.max(0, ...served.map((x) => x.consumer_max_lag || 0)))),
        card("upload lag", bytes(total((x) => (x.upload_lag ? x.upload_lag.bytes : 0)))),
        card("streams whose uploads fail", num(served.filter((x) => x.tiering_error).length))),
      nodeSection(state.data.status.node),
      h("h2", {}, "The last hour"),
      h("div", { class: "charts" },
        chart("Messages", state.totals, (p) => p.messages, num),
        chart("Upload lag", state.totals, (p) => p.uploadBytes, bytes),
        chart("Largest consumer lag", state.totals, (p) => p.lag, num)),
    ];
  },

  streams() {
    const { streams } = state.data;
    return [
      h("h1", {}, "Streams"),
      streams.length === 0 ? h("p", { class: "muted" }, "No streams yet.") :
        table([
          { title: "Name", value: (x) => streamLink(keyOf(x.name, x.vhost)) },
          { title: "Messages", num: true, value: (x) => num(x.messages) },
          { title: "First", num: true, value: (x) => num(x.first_offset) },
          { title: "Next", num: true, value: (x) => num(x.next_offset) },
          { title: "Local", num: true, value: (x) => (x.local ? bytes(x.local.bytes) : "—") },
          { title: "Remote", num: true, value: (x) => (x.remote ? bytes(x.remote.bytes) : "—") },
          { title: "Upload lag", num: true, cls: "upload-lag", value: (x) => (x.upload_lag ? bytes(x.upload_lag.bytes) : "—") },
          { title: "Publishers", num: true, value: (x) => num(x.publishers) },
          { title: "Consumers", num: true, value: (x) => num(x.consumers) },
          { title: "Consumer lag", num: true, cls: "consumer-lag", value: (x) => num(x.consumer_max_lag) },
          { title: "Tiering", value: (x) => (x.served_here ? x.tiering_state || "local" : "served elsewhere") },
        ], streams, (x) => ({ "data-stream": x.name, "data-vhost": x.vhost || "/" })),
    ];
  },

  stream(key) {
    const st = state.data.streams.find((x) => keyOf(x.name, x.vhost) === key);
    if (!st) return [h("h1", {}, shownName(key)), h("p", { class: "error" }, "No such stream (deleted?).")];
    loadHistory(key);
    const hist = state.history.get(key) || [];
    const mine = state.data.consumers.filter((c) => keyOf(c.stream, c.vhost) === key);
    const args = Object.entries(st.arguments || {});
    return [
      h("h1", {}, `Stream ${shownName(key)}`),
      h("div", { class: "cards" },
        card("messages", num(st.messages), "messages"),
        card("offsets", `${num(st.first_offset)} … ${num(st.next_offset)}`),
        card("local", st.local ? bytes(st.local.bytes) : "—"),
        card("remote", st.remote ? `${bytes(st.remote.bytes)} (${num(st.remote.first_offset)} … ${num(st.remote.next_offset)})` : "—"),
        card("upload lag", st.upload_lag ? `${bytes(st.upload_lag.bytes)}, ${num(st.upload_lag.offsets)} offsets` : "—", "upload-lag"),
        card("since last persist", st.upload_lag && st.upload_lag.seconds_since_last_persist !== null ? `${st.upload_lag.seconds_since_last_persist} s` : "—"),
        card("consumer lag", num(st.consumer_max_lag), "consumer-lag")),
      st.tiering_error ? h("p", { class: "error" }, `Tiering: ${st.tiering_error}`) : null,
      h("h2", {}, "The last hour"),
      h("div", { class: "charts" },
        chart("Upload lag", hist, (p) => p.uploadBytes, bytes, "chart-upload-lag"),
        chart("Consumer lag", hist, (p) => p.lag, num, "chart-consumer-lag"),
        chart("Messages", hist, (p) => p.messages, num)),
      h("h2", {}, "Arguments"),
      args.length ? table([{ title: "Argument", value: (a) => a[0] }, { title: "Value", value: (a) => String(a[1]) }], args)
        : h("p", { class: "muted" }, "None."),
      h("h2", {}, "Consumers"),
      mine.length ? consumersTable(mine) : h("p", { class: "muted" }, "None on this node."),
    ];
  },

  connections() {
    const { connections } = state.data;
    const client = (c) => {
      const p = c.client_properties || {};
      return [p.product, p.version, p.connection_name].filter(Boolean).join(" ");
    };
    return [
      h("h1", {}, "Connections"),
      connections.length === 0 ? h("p", { class: "muted" }, "No connections.") :
        table([
          { title: "Id", num: true, value: (c) => c.id },
          { title: "Peer", value: (c) => c.peer },
          { title: "User", value: (c) => c.user },
          { title: "Vhost", value: (c) => c.vhost },
          { title: "State", value: (c) => c.state },
          { title: "TLS", value: (c) => (c.tls ? c.tls_version || "yes" : "no") },
          { title: "Received", num: true, value: (c) => bytes(c.recv_oct) },
          { title: "Sent", num: true, value: (c) => bytes(c.send_oct) },
          { title: "Publishers", num: true, value: (c) => num(c.publishers) },
          { title: "Consumers", num: true, value: (c) => num(c.consumers) },
          { title: "Client", value: client },
        ], connections),
    ];
  },

  consumers() {
    const { consumers } = state.data;
    return [h("h1", {}, "Consumers"), consumers.length ? consumersTable(consumers) : h("p", { class: "muted" }, "No consumers.")];
  },

  cluster() {
    const c = state.data.status.cluster;
    if (!c) return [h("h1", {}, "Cluster"), h("p", { class: "muted" }, "This node runs alone (its configuration has no cluster section).")];
    const out = [h("h1", {}, "Cluster")];
    const scalars = [];
    for (const [k, v] of Object.entries(c)) {
      if (Array.isArray(v) && v.length && typeof v[0] === "object") {
        const cols = Object.keys(v[0]).map((key) => ({ title: key, value: (r) => JSON.stringify(r[key] ?? null).replace(/^"|"$/g, "") }));
        out.push(h("h2", {}, k), table(cols, v));
      } else {
        scalars.push([k, typeof v === "object" ? JSON.stringify(v) : String(v)]);
      }
    }
    if (scalars.length) out.splice(1, 0, table([{ title: "", value: (a) => a[0] }, { title: "", value: (a) => a[1] }], scalars));
    return out;
  },
};

// The node: where its data and objects are, its disk, and its object
// store requests by operation and outcome (/status "node").
function nodeSection(node) {
  if (!node) return null;
  const disk = node.disk ? `${bytes(node.disk.free_bytes)} free of ${bytes(node.disk.size_bytes)}` : "—";
  const ops = Object.entries(node.object_store_requests || {});
  return h("div", {},
    h("h2", {}, "Node"),
    h("div", { class: "cards" },
      card("disk", disk, "disk"),
      card("memory", bytes(node.rss_bytes)),
      card("uptime", `${Math.round(node.uptime_s)} s`)),
    h("p", { class: "muted" }, `data ${node.data_dir} · objects ${node.object_store} · catalog ${node.catalog}`),
    ops.length ? table([
      { title: "Object store operation", value: ([op]) => op },
      { title: "Requests", num: true, value: ([, x]) => num(x.requests) },
      { title: "Transient errors", num: true, value: ([, x]) => num(x.transient_errors) },
      { title: "Fatal errors", num: true, value: ([, x]) => num(x.fatal_errors) },
      { title: "Not found", num: true, value: ([, x]) => num(x.not_found) },
      { title: "Bytes", num: true, value: ([, x]) => bytes(x.bytes) },
    ], ops, ([op]) => ({ "data-op": op })) : null);
}

function consumersTable(rows) {
  return table([
    { title: "Connection", num: true, value: (c) => c.connection },
    { title: "Subscription", num: true, value: (c) => c.subscription_id },
    { title: "Stream", value: (c) => streamLink(keyOf(c.stream, c.vhost)) },
    { title: "Offset", num: true, value: (c) => num(c.offset) },
    { title: "Lag", num: true, cls: "consumer-lag", value: (c) => num(c.offset_lag) },
    { title: "Lag bytes", num: true, value: (c) => (c.offset_lag_bytes == null ? "" : (c.offset_lag_bytes_estimated ? "≈ " : "") + bytes(c.offset_lag_bytes)) },
    { title: "Group", value: (c) => c.consumer_group || "" },
    { title: "Credit", num: true, value: (c) => num(c.credit) },
    { title: "Delivered", num: true, value: (c) => num(c.messages_delivered) },
    { title: "Single active", value: (c) => (c.single_active_consumer ? JSON.stringify(c.single_active_consumer) : "") },
  ], rows);
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  if (parts[0] === "streams" && parts.length > 1) return ["stream", decodeURIComponent(parts.slice(1).join("/"))];
  return [pages[parts[0]] ? parts[0] : "overview"];
}

function render() {
  if (!state.data) return;
  const [page, arg] = route();
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.page === (page === "stream" ? "streams" : page));
  }
  document.getElementById("view").replaceChildren(...pages[page](arg).filter((x) => x));
}

window.addEventListener("hashchange", render);
document.getElementById("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  logIn(document.getElementById("user").value, document.getElementById("password").value);
});
if (state.auth) start(); else showLogin();
