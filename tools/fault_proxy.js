#!/usr/bin/env node
// fault_proxy: an HTTP/1.1 proxy for tests that sits between a client and an
// upstream server (s3rver), records every request byte-exactly, and injects
// the faults haproxy cannot: truncated bodies, resets, wrong Content-Length,
// corrupted bytes, a Range header the server never sees, canned answers.
//
//   node fault_proxy.js --upstream 127.0.0.1:PORT [--port 0] [--rules rules.json]
//                       [--record requests.jsonl]
// Prints "fault_proxy listening on 127.0.0.1:<port>" when ready. Each recorded
// request also carries the client's source port (client_port), which shows
// whether the client reused its connection.
//
// rules.json: [{ "method": "GET", "path_prefix": "/bkt/x/", "query_contains": "list-type",
//                "times": 1, "chance": 0.25, "action": "...", ...}]  (first matching rule wins;
// a rule with "times" stops matching after that many uses; a rule with "chance" matches an
// otherwise matching request with that probability, drawn from a generator seeded by the
// file's "seed"). The file is either the array of rules or { "seed": N, "rules": [...] }, so a
// randomized test replays its faults from its seed. Actions:
//   reset            read the request, then close the connection with RST, no answer
//   hang             read the request and never answer
//   truncate         forward; send status, headers (true Content-Length) and
//                    `fraction` (default 0.5) of the body, then RST
//   content_length   forward; send the body with Content-Length = true length + `delta`,
//                    then close the connection
//   corrupt          forward; flip one bit in the middle of the body
//   strip_range      forward without the Range header (the server answers 200 whole)
//   respond          answer `status`, `headers` ({}), `body` (string) without forwarding
//   delay            wait `ms`, then forward
// Only standard Node modules; no npm dependency.
'use strict';

const http = require('http');
const fs = require('fs');

function arg(name, def) {
  const i = process.argv.indexOf('--' + name);
  return i >= 0 ? process.argv[i + 1] : def;
}

const upstream = arg('upstream');
if (!upstream) {
  console.error('fault_proxy: --upstream HOST:PORT is required');
  process.exit(2);
}
const [upHost, upPort] = upstream.split(':');
const ruleFile = arg('rules') ? JSON.parse(fs.readFileSync(arg('rules'), 'utf8')) : [];
const rules = Array.isArray(ruleFile) ? ruleFile : (ruleFile.rules || []);
const recordPath = arg('record');

// mulberry32: a small seeded generator, so that "chance" rules replay from the seed (the
// order of concurrent requests may still differ between runs).
let rngState = (Array.isArray(ruleFile) ? 1 : Number(ruleFile.seed || 1)) >>> 0;
function random() {
  rngState = (rngState + 0x6D2B79F5) >>> 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

function matches(rule, req) {
  if (rule.times !== undefined && rule.times <= 0) return false;
  if (rule.method && rule.method !== req.method) return false;
  const [path, query = ''] = req.url.split('?', 2);
  if (rule.path_prefix && !path.startsWith(rule.path_prefix)) return false;
  if (rule.query_contains && !query.includes(rule.query_contains)) return false;
  if (rule.chance !== undefined && !(random() < rule.chance)) return false;
  return true;
}

function record(req, body) {
  if (!recordPath) return;
  const headers = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
  fs.appendFileSync(recordPath, JSON.stringify({
    method: req.method, target: req.url, headers, body_b64: body.toString('base64'),
    client_port: req.socket.remotePort,
  }) + '\n');
}

function forward(req, body, dropRange) {
  return new Promise((resolve, reject) => {
    const headers = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i];
      const lower = name.toLowerCase();
      if (lower === 'expect' || lower === 'connection' || lower === 'transfer-encoding') continue;
      if (dropRange && lower === 'range') continue;
      headers[name] = req.rawHeaders[i + 1];
    }
    headers['Content-Length'] = String(body.length);
    const up = http.request({ host: upHost, port: Number(upPort), method: req.method, path: req.url,
                              headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, message: res.statusMessage,
                                    rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    up.on('error', reject);
    up.end(body);
  });
}

// Serializes a response by hand, so it can lie about its length.
function rawResponse(r, contentLength) {
  let head = `HTTP/1.1 ${r.status} ${r.message || 'X'}\r\n`;
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    const lower = r.rawHeaders[i].toLowerCase();
    if (lower === 'content-length' || lower === 'transfer-encoding' || lower === 'connection' ||
        lower === 'keep-alive') continue;
    head += `${r.rawHeaders[i]}: ${r.rawHeaders[i + 1]}\r\n`;
  }
  head += `Content-Length: ${contentLength}\r\nConnection: close\r\n\r\n`;
  return Buffer.from(head, 'latin1');
}

function reply(req, res, r) {
  const headers = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    const lower = r.rawHeaders[i].toLowerCase();
    if (lower === 'transfer-encoding' || lower === 'connection' || lower === 'keep-alive') continue;
    if (lower === 'content-length' && req.method !== 'HEAD') continue;
    headers.push(r.rawHeaders[i], r.rawHeaders[i + 1]);
  }
  if (req.method !== 'HEAD') headers.push('Content-Length', String(r.body.length));
  res.writeHead(r.status, headers);
  res.end(req.method === 'HEAD' ? undefined : r.body);
}

async function handle(req, res, body) {
  record(req, body);
  const rule = rules.find((r) => matches(r, req));
  if (rule && rule.times !== undefined) rule.times -= 1;
  const action = rule ? rule.action : 'pass';
  const sock = req.socket;
  switch (action) {
    case 'reset':
      sock.resetAndDestroy();
      return;
    case 'hang':
      return;
    case 'respond': {
      const b = Buffer.from(rule.body || '', 'utf8');
      const hdrs = Object.assign({ 'Content-Length': String(b.length) }, rule.headers || {});
      res.writeHead(rule.status || 200, hdrs);
      res.end(b);
      return;
    }
    case 'delay':
      await new Promise((r) => setTimeout(r, rule.ms || 1000));
      break;
    default:
      break;
  }
  const r = await forward(req, body, action === 'strip_range');
  switch (action) {
    case 'truncate': {
      const n = Math.floor(r.body.length * (rule.fraction === undefined ? 0.5 : rule.fraction));
      sock.write(rawResponse(r, r.body.length));
      sock.write(r.body.subarray(0, n), () => setTimeout(() => sock.resetAndDestroy(), 50));
      return;
    }
    case 'content_length': {
      sock.write(rawResponse(r, r.body.length + (rule.delta || 0)));
      sock.end(r.body);
      return;
    }
    case 'corrupt':
      if (r.body.length > 0) r.body[Math.floor(r.body.length / 2)] ^= 0x01;
      break;
    default:
      break;
  }
  reply(req, res, r);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    handle(req, res, Buffer.concat(chunks)).catch((err) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end('fault_proxy: upstream failed: ' + err.message);
      }
    });
  });
});
server.keepAliveTimeout = 30000;
server.listen(Number(arg('port', '0')), '127.0.0.1', () => {
  console.log(`fault_proxy listening on 127.0.0.1:${server.address().port}`);
});
