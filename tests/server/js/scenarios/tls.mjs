// strata only: the stream protocol over TLS with the stock client's own TLS (Node's, over its OpenSSL). Certificates
// are made here by the `openssl` program: a CA, the server's, a client's the CA signed and one it did not.
//  - PLAIN over TLS with the client's certificate: create, publish with confirms and consume large chunks (bodies that
//    go by sendfile on a plain connection are copied and encrypted here), the publisher's leader connection made to
//    the TLS port Metadata advertises;
//  - EXTERNAL: the certificate's common name is the user; without a certificate EXTERNAL is not offered; a
//    certificate from another CA fails the handshake, an expired one too, each with OpenSSL's reason in the server's
//    log; a plain client on the TLS port fails it too;
//  - only TLS 1.2 and 1.3: a TLS 1.0/1.1 client is refused (logged as such), a TLS 1.2 one accepted;
//  - a server certificate for another host name is refused by the client;
//  - a client that never starts its handshake is closed at the handshake timeout;
//  - SIGHUP loads a renewed server certificate for new connections;
//  - /status counts TLS connections and failed handshakes, and says whether kernel TLS carried the deliveries;
//  - the client reconnects over TLS after a restart of the server and publishes again.
import fs from "node:fs";
import path from "node:path";
import tls from "node:tls";
import net from "node:net";
import { LOOPBACK_SAN, makeCa, signCert } from "../lib/certs.mjs";
import { Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, scaled,
  uniqueName, unhandled } from "../lib/client.mjs";

export const name = "tls";
export const timeoutSec = 180;
export const strataOnly = "TLS listener settings are strata's configuration";

// A CA (ca.pem), another (rogue-ca.pem), and certificates they sign: `name`.pem / `name`.key.
function makeCerts(dir) {
  makeCa(dir, "ca");
  makeCa(dir, "rogue-ca");
  signCert(dir, "server", "/CN=localhost/O=strata tests", "ca", { san: LOOPBACK_SAN });
  signCert(dir, "server2", "/CN=localhost/O=strata tests renewed", "ca", { san: LOOPBACK_SAN });
  signCert(dir, "client", "/CN=app-user/O=strata tests", "ca");
  signCert(dir, "rogue", "/CN=app-user/O=rogue", "rogue-ca");
  signCert(dir, "expired", "/CN=app-user/O=strata tests expired", "ca", { days: -1 });
}

export const strataServer = (dir) => {
  makeCerts(dir);
  return {
    config: {
      server: { auth_mechanisms: ["PLAIN", "EXTERNAL"], handshake_timeout_ms: 2000 },
      users: [
        { name: "guest", password: "guest", tags: ["administrator"] },
        { name: "app-user", password_hash: "", tags: [] },
      ],
      tls: {
        listen: "127.0.0.1:0",
        cert_file: path.join(dir, "server.pem"),
        key_file: path.join(dir, "server.key"),
        ca_file: path.join(dir, "ca.pem"),
        verify_peer: true,
        cert_login_from: "common_name",
      },
    },
    args: ["--http", "127.0.0.1:0"],
  };
};

const body = (i) => Buffer.from(`tls ${i} ${"x".repeat(8 * 1024)}`);

// The client's TLS options: the CA to trust the server by, and a certificate of its own.
function sslOptions(dir, { cert = "client" } = {}) {
  const o = { ca: fs.readFileSync(path.join(dir, "ca.pem")), servername: "localhost" };
  if (cert) {
    o.cert = fs.readFileSync(path.join(dir, `${cert}.pem`));
    o.key = fs.readFileSync(path.join(dir, `${cert}.key`));
  }
  return o;
}

// Waits (10 s at most) for the server's log to match `re`.
async function logged(server, re, what) {
  const deadline = Date.now() + 10000;
  while (!re.test(server.logs())) {
    if (Date.now() > deadline) throw new Error(`the server's log says nothing of ${what} (${re})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// A bare TLS handshake with Node's tls: resolves with the protocol and the server certificate's subject, or rejects.
function handshake(port, opts) {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port, ...opts }, () => {
      const r = { protocol: s.getProtocol(), subject: s.getPeerCertificate().subject };
      s.end();
      resolve(r);
    });
    s.on("error", reject);
    s.setTimeout(10000, () => { s.destroy(); reject(new Error("handshake timed out")); });
  });
}

// A client certificate the server refuses. Under TLS 1.3 the client finishes its handshake before the server has
// verified its certificate, and learns of the refusal by the alert that follows: the connection must end (with an
// error) within a few seconds instead of staying open. Resolves with the error's code.
function refusedCertificate(port, opts) {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port, ...opts });
    let err = null;
    s.on("error", (e) => { err = e; });
    s.on("close", () => (err ? resolve(err.code ?? err.message) : reject(new Error("closed without a TLS alert"))));
    s.setTimeout(5000, () => { s.destroy(); reject(new Error("a refused certificate's connection stayed open")); });
  });
}

// Connects expecting a refusal: resolves with the client's error. The client 1.0.0 throws a failed SASL step from its
// socket handler, where the connect promise never settles, so that error is taken from the unhandled rejections.
function refused(connecting, what) {
  return new Promise((resolve, reject) => {
    let timer;
    const done = (f) => { clearTimeout(timer); unhandled.capture = null; f(); };
    unhandled.capture = (e) => done(() => resolve(e));
    timer = setTimeout(() => done(() => reject(new Error(`${what}: neither refused nor accepted in 20 s`))), 20000);
    connecting().then(
      (c) => done(() => { c.close().catch(() => {}); reject(new Error(`${what}: the connection was accepted`)); }),
      (e) => done(() => resolve(e)));
  });
}

export async function run({ server, log, dir }) {
  const port = server.tlsPort;
  check(port > 0, "the server printed no TLS port");

  // PLAIN over TLS: a whole publish and consume of chunks above the sendfile threshold.
  const n = scaled(200, 60);
  const confirms = new Confirms();
  const client = await connect(server, { port, ssl: sslOptions(dir), confirms });
  const stream = uniqueName("tls");
  await client.createStream({ stream });
  const publisher = await client.declarePublisher({ stream });
  await publishConfirmed(publisher, confirms, n, body);
  const got = new Collector("consumer over TLS");
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, got.handle);
  await got.until(n, 60000);
  expectSequence("consume over TLS", got.messages.slice(0, n), n, body, { offset0: 0n });
  log(`${n} messages of 8 KiB published, confirmed and consumed over TLS`);
  await consumer.close();
  await publisher.close();

  // EXTERNAL: the certificate names the user.
  const ext = await connect(server, { port, ssl: sslOptions(dir), mechanism: "EXTERNAL", username: "", password: "" });
  const [meta] = await ext.queryMetadata({ streams: [stream] });
  check(meta.responseCode === 1, `EXTERNAL user's Metadata answered ${meta.responseCode}`);
  await ext.close();
  log("EXTERNAL logged in as the certificate's common name");

  // No client certificate: EXTERNAL is not offered.
  const noCert = await refused(() => connect(server, { port, ssl: sslOptions(dir, { cert: null }), mechanism: "EXTERNAL" }),
    "EXTERNAL without a client certificate");
  check(/Unable to find EXTERNAL mechanism/.test(noCert.message ?? ""),
    `EXTERNAL without a certificate: ${noCert.message ?? noCert}`);

  // A certificate from another CA, an expired one, and a plain client on the TLS port: no handshake. The server's log
  // says why it refused each certificate, in OpenSSL's words.
  log(`a certificate of another CA is refused: ${await refusedCertificate(port, sslOptions(dir, { cert: "rogue" }))}`);
  await logged(server, /TLS handshake failed: .*\(client certificate: unable to get local issuer certificate\)/,
    "the other CA's certificate");
  log(`an expired certificate is refused: ${await refusedCertificate(port, sslOptions(dir, { cert: "expired" }))}`);
  await logged(server, /TLS handshake failed: .*\(client certificate: certificate has expired\)/,
    "the expired certificate");
  await new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => s.write(Buffer.from("0000000f001100010000000100000000", "hex")));
    s.on("close", resolve);
    s.on("error", resolve);
    s.setTimeout(15000, () => { s.destroy(); reject(new Error("a plain client on the TLS port was kept open")); });
  });

  // A client that connects and never starts its handshake is closed after the handshake timeout.
  const t0 = Date.now();
  await new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    s.on("close", resolve);
    s.on("error", resolve);
    s.setTimeout(15000, () => { s.destroy(); reject(new Error("a silent client on the TLS port was kept open")); });
  });
  check(Date.now() - t0 < 10000, `a silent client was closed only after ${Date.now() - t0} ms`);
  log(`a silent client on the TLS port was closed after ${Date.now() - t0} ms`);

  // Versions: 1.0 and 1.1 refused (the server's log says so), 1.2 accepted.
  await handshake(port, { ...sslOptions(dir), minVersion: "TLSv1", maxVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" }).then(
    () => { throw new Error("a TLS 1.1 handshake was accepted"); },
    (e) => log(`TLS 1.0/1.1 refused: ${e.code ?? e.message}`));
  await logged(server, /TLS handshake failed: unsupported protocol/, "the TLS 1.1 client");

  // A server certificate that does not name the host the client dialled: the client refuses it (the server cannot
  // tell: to it the handshake succeeded).
  await handshake(port, { ...sslOptions(dir), servername: "wrong.example" }).then(
    () => { throw new Error("a certificate for another host was accepted"); },
    (e) => {
      check(e.code === "ERR_TLS_CERT_ALTNAME_INVALID", `wrong host name: ${e.code ?? e.message}`);
      log(`a server certificate for another host name is refused by the client: ${e.code}`);
    });
  const v12 = await handshake(port, { ...sslOptions(dir), maxVersion: "TLSv1.2" });
  check(v12.protocol === "TLSv1.2", `a TLS 1.2 client got ${v12.protocol}`);

  // A renewed certificate, loaded by SIGHUP, for new connections.
  const before = await handshake(port, sslOptions(dir));
  check(before.subject.O === "strata tests", `server certificate before the reload: ${JSON.stringify(before.subject)}`);
  fs.copyFileSync(path.join(dir, "server2.pem"), path.join(dir, "server.pem"));
  fs.copyFileSync(path.join(dir, "server2.key"), path.join(dir, "server.key"));
  server.proc.proc.kill("SIGHUP");
  const deadline = Date.now() + 10000;
  for (;;) {
    const now = await handshake(port, sslOptions(dir));
    if (now.subject.O === "strata tests renewed") break;
    if (Date.now() > deadline) throw new Error(`after SIGHUP the server still presents ${JSON.stringify(now.subject)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  log("SIGHUP loaded the renewed certificate");

  const st = (await server.status()).server.tls;
  check(st && st.connections >= 5, `status tls.connections: ${JSON.stringify(st)}`);
  check(st.handshake_failures >= 3, `status tls.handshake_failures: ${JSON.stringify(st)}`);
  // Kernel TLS where this kernel and OpenSSL have it (then the bodies above went by SSL_sendfile), else none: the
  // status says which, consistently.
  const ktls = st.kernel_send_connections;
  check(st.reloads === 1 && Number.isInteger(ktls) && ktls <= st.connections && st.zero_copy === ktls > 0,
    `status tls: ${JSON.stringify(st)}`);
  // Bodies by SSL_sendfile only over kernel TLS (tests/vm/ktls_vm_test.sh runs that path).
  check(ktls > 0 || st.sendfile_bytes === 0, `status tls.sendfile_bytes: ${JSON.stringify(st)}`);
  log(`deliveries over TLS: ${st.delivery} (kernel TLS on ${ktls} of ${st.connections} connections)`);

  await client.deleteStream({ stream });
  await client.close();

  // The client reconnects over TLS after a restart of the server (same ports): Client.restart() opens its connection
  // again, handshake included, and re-declares its publisher, whose new messages are confirmed.
  let closed;
  const closedOnce = new Promise((r) => { closed = r; });
  const rc = new Confirms();
  const again = await connect(server, { port, ssl: sslOptions(dir), confirms: rc,
    listeners: { connection_closed: () => closed() } });
  const stream2 = uniqueName("tls-reconnect");
  await again.createStream({ stream: stream2 });
  const p2 = await again.declarePublisher({ stream: stream2 });
  await publishConfirmed(p2, rc, 10, body, { what: "before the restart" });
  await server.restart();
  await closedOnce;
  await again.restart();
  const ids = [];
  for (let i = 0; i < 10; i++) ids.push((await p2.send(body(10 + i))).publishingId);
  await p2.flush();
  await rc.waitFor(p2, ids, 60000, "after the restart, over TLS");
  check((await server.status()).server.tls.connections >= 1, "no TLS connection after the restart");
  log("the client reconnected over TLS after a restart of the server and published again");
  await p2.close();
  await again.deleteStream({ stream: stream2 });
  await again.close();
}
