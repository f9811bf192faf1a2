// strata only: a cluster with TLS everywhere it talks. 3 strata nodes on a 3-member etcd whose client URLs are https
// with client certificates required (--client-cert-auth); each node has its own certificate from one CA, a TLS listener
// only (tls.only: no plain port at all) and cluster.peer_tls, so every link between nodes — replica feeds, the copies
// replicated confirms wait for, questions to an owner — is TLS, each side verifying the other's certificate. The
// nodes log in to each other by those certificates (cluster.peer_auth "certificate", SASL EXTERNAL), each as a user
// of its own: node i's certificate names strata-peer-i as its common name, every node lists the three
// (cluster.peer_users), and no node holds a password for any of them.
//  - the stock client, over TLS only, creates a stream; every node's Metadata names the same leader and the others as
//    replicas, all by their TLS ports;
//  - with tiering.confirm "replicated" every other node keeps a copy of the stream's tail: its copy subscription to
//    the owner runs over a TLS peer link, and /status counts the chunks it copied;
//  - a consumer placed on a replica (not the owner) reads the whole stream, and then messages published while it
//    reads: the replica forwards them from the owner over a TLS peer link;
//  - a user added through one node's management API logs in (over TLS) on another node;
//  - a stream of another vhost (prod) is copied by every other node, each linking to the owner as its own peer user,
//    and read on a replica;
//  - /status: every node runs peer TLS, registered its TLS address and no plain one, and no node logged a refused
//    TLS handshake with a peer; the owner's connections from its peers authenticated with EXTERNAL, each as the
//    other node's own peer user, and a client cannot log in as a peer user with an empty password.
import fs from "node:fs";
import path from "node:path";
import { LOOPBACK_SAN, makeCa, signCert } from "../lib/certs.mjs";
import { Collector, Confirms, Offset, check, connect, expectSequence, publishConfirmed, scaled, unhandled } from "../lib/client.mjs";
import { StrataCluster } from "../lib/cluster.mjs";

export const name = "cluster_tls";
export const timeoutSec = 180;
export const strataOnly = "a strata cluster over etcd with TLS between nodes";

const STREAM = "tls-cluster";
// Node i's own identity on its links to the others.
const peerOf = (i) => `strata-peer-${i}`;
const PEERS = [0, 1, 2].map(peerOf);
const body = (i) => Buffer.from(`${STREAM} ${i} ${"y".repeat(2000)}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function run({ server, dir, log, own }) {
  const certs = path.join(dir, "certs");
  fs.mkdirSync(certs, { recursive: true });
  makeCa(certs, "ca");
  const etcd = signCert(certs, "etcd", "/CN=etcd", "ca", { san: LOOPBACK_SAN });
  // One certificate per node, each naming the node's peer user (its common name) and the node (its organisation).
  const nodeCerts = [0, 1, 2].map((i) => signCert(certs, `node${i}`, `/CN=${peerOf(i)}/O=strata node ${i}`, "ca",
    { san: LOOPBACK_SAN }));
  const ca = path.join(certs, "ca.pem");
  const cluster = own(new StrataCluster(path.join(dir, "cluster"), {
    bin: server.bin,
    etcdTls: { ...etcd, ca },
    configure: (i, c) => ({
      ...c,
      // Each node is etcd's client by its own certificate.
      catalog: { ...c.catalog, ca_file: ca, cert_file: nodeCerts[i].cert, key_file: nodeCerts[i].key },
      tiering: { ...c.tiering, confirm: "replicated" },
      // The peer users have no password: they can only log in by a certificate.
      users: [{ name: "guest", password: "guest", tags: ["administrator"] },
        ...PEERS.map((name) => ({ name, password_hash: "" }))],
      tls: { listen: "127.0.0.1:0", cert_file: nodeCerts[i].cert, key_file: nodeCerts[i].key, ca_file: ca,
        verify_peer: true, only: true, cert_login_from: "common_name" },
      server: { ...(c.server ?? {}), auth_mechanisms: ["PLAIN", "AMQPLAIN", "EXTERNAL"] },
      cluster: { ...c.cluster, peer_tls: true, peer_auth: "certificate", peer_user: peerOf(i), peer_users: PEERS },
    }),
  }));
  const clients = [];
  try {
    await runOnCluster(cluster, clients, ca, certs, log);
  } catch (e) {
    console.log(`--- cluster output (tails) ---\n${cluster.logs()}\n---`);
    throw e;
  } finally {
    for (const c of clients) await c.close().catch(() => {});
  }
}

// Polls /status of every node but `leader` until `ok(status.cluster.copies)`, for at most 20 s.
async function untilEveryOther(nodes, leader, ok, what) {
  for (let i = 0; i < nodes.length; i++) {
    if (i === leader) continue;
    const deadline = Date.now() + 20000;
    for (;;) {
      const copies = (await nodes[i].status()).cluster?.copies;
      if (ok(copies)) break;
      if (Date.now() > deadline) throw new Error(`n${i} never ${what}: ${JSON.stringify(copies)}`);
      await sleep(100);
    }
  }
}

async function runOnCluster(cluster, clients, ca, certs, log) {
  await cluster.start(log);
  const nodes = cluster.nodes;
  check(nodes.every((n) => n.tlsPort === n.port), `every node listens on TLS only: ${nodes.map((n) => `${n.port}/${n.tlsPort}`)}`);
  const ssl = { ca: fs.readFileSync(ca), servername: "localhost" };
  const open = async (i, opts = {}) => {
    const c = await connect(nodes[i], { ssl, ...opts });
    clients.push(c);
    return c;
  };

  const meta = [];
  for (let i = 0; i < nodes.length; i++) meta.push(await open(i));
  await meta[0].createStream({ stream: STREAM });
  // Every node's Metadata names the same leader, the others as replicas, all by ports the cluster listens on: the
  // TLS ports, since there are no others.
  const leader = await cluster.awaitAgreedLeader(meta, STREAM, 30000);
  const replica = [0, 1, 2].find((i) => i !== leader);
  log(`stream ${STREAM}: leader n${leader}, every node agreeing, over TLS ports`);

  // Replicated confirms: a publish is confirmed once the other nodes' copies (made over TLS peer links) or the
  // remote tier hold it. Every other node follows the stream with a copy subscription first.
  await untilEveryOther(nodes, leader, (c) => c?.streams >= 1, "follows the stream with a copy");
  const n = scaled(300, 100);
  const confirms = new Confirms();
  const pubClient = await open(replica, { confirms });
  const publisher = await pubClient.declarePublisher({ stream: STREAM });
  await publishConfirmed(publisher, confirms, n, body, { what: `${n} replicated confirms` });
  // Copies are made over the peer links (there is no other way between these nodes): each other node copies. (A
  // confirm may also come from the remote tier, which these small chunks reach quickly: the copies are checked here.)
  await untilEveryOther(nodes, leader, (c) => c?.copied_chunks > 0, "copied a chunk from the owner");
  log(`${n} messages confirmed, the other nodes copying them`);

  // A consumer placed on a replica: the stock client picks one of Metadata's replicas.
  const got = new Collector("consumer on a replica");
  const consumer = await meta[replica].declareConsumer({ stream: STREAM, offset: Offset.first() }, got.handle);
  const served = consumer.getConnectionInfo?.()?.port;
  if (served !== undefined) {
    check(served !== nodes[leader].port, `the consumer was placed on the leader's port ${served}`);
  }
  await got.until(n, 60000);
  // Published while it reads: forwarded live by its node from the owner.
  const more = scaled(100, 50);
  await publishConfirmed(publisher, confirms, more, (i) => body(n + i), { what: `${more} more` });
  await got.until(n + more, 60000);
  expectSequence("consume on a replica over TLS", got.messages.slice(0, n + more), n + more, body, { offset0: 0n });
  // The replica's link to the owner (its feed of the newest chunks) came up: over TLS, there being no other way.
  const linked = [];
  for (let i = 0; i < nodes.length; i++) {
    if (i !== leader && (await nodes[i].status()).server.replica_links > 0) linked.push(i);
  }
  check(linked.length > 0, "no replica linked to the owner for its consumer");
  log(`${n + more} messages consumed through a replica (n${linked.join(", n")} linked to the owner)`);
  await consumer.close();
  await publisher.close();

  // A user added through node `a`'s management API logs in on node `b`.
  const [a, b] = [leader, replica];
  const auth = "Basic " + Buffer.from("guest:guest").toString("base64");
  const put = async (url, doc) => {
    const res = await fetch(url, { method: "PUT", headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify(doc) });
    check(res.ok, `PUT ${url}: HTTP ${res.status} ${await res.text()}`);
  };
  await put(`${nodes[a].http}/api/users/carol`, { password: "c4rol", tags: "" });
  await put(`${nodes[a].http}/api/permissions/%2F/carol`, { configure: ".*", write: ".*", read: ".*" });
  // Until node b has applied the change (it polls etcd every 2 s) its refusal is expected. The client 1.0.0 throws
  // a refused login from its socket handler, where the connect promise never settles: that error is taken from the
  // unhandled rejections.
  const attempt = (i, opts) => new Promise((resolve) => {
    let timer;
    const done = (v) => { clearTimeout(timer); unhandled.capture = null; resolve(v); };
    unhandled.capture = (e) => done({ error: e });
    timer = setTimeout(() => done({ error: new Error("neither accepted nor refused in 10 s") }), 10000);
    connect(nodes[i], { ssl, ...opts }).then((c) => done({ client: c }), (e) => done({ error: e }));
  });
  const deadline = Date.now() + 15000;
  for (;;) {
    const r = await attempt(b, { username: "carol", password: "c4rol" });
    if (r.client) {
      const [m] = await r.client.queryMetadata({ streams: [STREAM] });
      await r.client.close();
      check(m.responseCode === 1, `carol's Metadata on n${b} answered ${m.responseCode}`);
      break;
    }
    if (Date.now() > deadline) throw new Error(`carol, added on n${a}, cannot log in on n${b}: ${r.error?.message ?? r.error}`);
    await sleep(250);
  }
  log(`a user added on n${a} logged in on n${b} over TLS`);

  // A stream of another vhost, copied by the other nodes and read on one of them: their links to the owner name it by
  // its stored name, which only the cluster's own links may — logged in as any node's own peer user
  // (cluster.peer_users).
  await put(`${nodes[a].http}/api/vhosts/prod`, {});
  await put(`${nodes[a].http}/api/permissions/prod/guest`, { configure: ".*", write: ".*", read: ".*" });
  // Each node learns of the vhost from etcd (within 2 s): a client refused the vhost would crash (the stock client
  // 1.0.0 cannot read the short Open answer RabbitMQ and strata both send), so each node is asked first.
  const prod = [];
  for (let i = 0; i < nodes.length; i++) {
    const until = Date.now() + 15000;
    for (;;) {
      const res = await fetch(`${nodes[i].http}/api/permissions/prod/guest`, { headers: { authorization: auth } });
      if (res.ok) break;
      if (Date.now() > until) throw new Error(`vhost prod, added on n${a}, unknown to n${i}: HTTP ${res.status}`);
      await sleep(250);
    }
    prod.push(await open(i, { vhost: "prod" }));
  }
  const PROD = "tls-prod";
  await prod[0].createStream({ stream: PROD });
  const prodLeader = await cluster.awaitAgreedLeader(prod, PROD, 30000);
  const prodReplica = [0, 1, 2].find((i) => i !== prodLeader);
  // Every other node follows it with a copy before anything is published, so each copy starts at offset 0.
  // (Node i copies the two streams but the one it owns.)
  for (let i = 0; i < nodes.length; i++) {
    if (i === prodLeader) continue;
    const until = Date.now() + 20000;
    while (!((await nodes[i].status()).cluster?.copies?.streams >= (i === leader ? 1 : 2))) {
      if (Date.now() > until) throw new Error(`n${i} never followed vhost prod's stream with a copy`);
      await sleep(100);
    }
  }
  const prodConfirms = new Confirms();
  const prodPub = await open(prodLeader, { vhost: "prod", confirms: prodConfirms });
  const prodPublisher = await prodPub.declarePublisher({ stream: PROD });
  const pn = scaled(100, 50);
  await publishConfirmed(prodPublisher, prodConfirms, pn, body, { what: `${pn} in vhost prod` });
  const prodGot = new Collector("consumer of vhost prod on a replica");
  const prodConsumer = await prod[prodReplica].declareConsumer({ stream: PROD, offset: Offset.first() }, prodGot.handle);
  await prodGot.until(pn, 60000);
  expectSequence("vhost prod on a replica", prodGot.messages.slice(0, pn), pn, body, { offset0: 0n });
  const more2 = scaled(50, 20);
  await publishConfirmed(prodPublisher, prodConfirms, more2, (i) => body(pn + i), { what: `${more2} more in prod` });
  await prodGot.until(pn + more2, 60000);
  // Each other node copied it whole over its link to the owner, which names the stream by its stored name ("prod"
  // and the name) as only the cluster's own links may: a node refused would hold only what it later found in the
  // bucket, from where the bucket then ended.
  for (let i = 0; i < nodes.length; i++) {
    if (i === prodLeader) continue;
    const until = Date.now() + 20000;
    for (;;) {
      const st = await nodes[i].status();
      const copy = st.copies?.[`prod\n${PROD}`];
      if (copy?.local_first_offset === 0 && copy.local_next_offset >= pn + more2 &&
        st.cluster?.copies?.dropped_copies === 0) break;
      if (Date.now() > until) throw new Error(`n${i} did not copy vhost prod's stream from its owner: ` +
        JSON.stringify(st.copies));
      await sleep(100);
    }
  }
  await prodConsumer.close();
  await prodPublisher.close();
  log(`vhost prod: copied by every other node, ${pn + more2} messages read on replica n${prodReplica}`);

  for (let i = 0; i < nodes.length; i++) {
    const st = await nodes[i].status();
    const c = st.cluster;
    check(c?.peer_tls === true, `n${i} /status cluster.peer_tls: ${JSON.stringify(c?.peer_tls)}`);
    check(c.peer_auth === "certificate" && c.peer_user === peerOf(i) &&
      JSON.stringify(c.peer_users) === JSON.stringify(PEERS),
      `n${i} /status cluster.peer_auth ${c.peer_auth}, peer_user ${c.peer_user}, peer_users ${c.peer_users}`);
    check(c.advertise === "" && c.tls_advertise === `127.0.0.1:${nodes[i].port}`,
      `n${i} registered ${JSON.stringify({ advertise: c.advertise, tls_advertise: c.tls_advertise })}`);
    check(Object.keys(c.tls_nodes ?? {}).length === nodes.length, `n${i} sees TLS addresses ${JSON.stringify(c.tls_nodes)}`);
    const logs = nodes[i].logs();
    check(!/TLS handshake with owner/.test(logs), `n${i} logged a failed TLS handshake with a peer: ${logs.slice(-2000)}`);
  }
  log("every node runs peer TLS on TLS-only listeners");

  // The owner's connections from its peers (the replica's feed, the copies): EXTERNAL, each as the other node's own
  // peer user, over TLS with that node's certificate.
  const res = await fetch(`${nodes[leader].http}/api/stream/connections`, { headers: { authorization: auth } });
  check(res.ok, `GET /api/stream/connections: HTTP ${res.status}`);
  const peers = (await res.json()).filter((c) => PEERS.includes(c.user));
  check(peers.length > 0, `no connection from a peer on the owner n${leader}`);
  for (const c of peers) {
    const node = PEERS.indexOf(c.user);
    check(c.auth_mechanism === "EXTERNAL" && c.tls === true && node !== leader &&
      (c.tls_peer_subject ?? "").includes(`strata node ${node}`),
      `a peer connection on n${leader}: ${JSON.stringify({ user: c.user, auth_mechanism: c.auth_mechanism, tls: c.tls,
        subject: c.tls_peer_subject })}`);
  }
  const users = [...new Set(peers.map((c) => c.user))].sort();
  check(users.length === 2, `the owner n${leader} has peer connections from ${users} (expected both other nodes)`);
  // The peer users have no password: a client of the same CA (its certificate naming another user) cannot log in as
  // a peer user with PLAIN and an empty password. (EXTERNAL would make it "someone-else", whom the node does not
  // know; the stock client does not offer EXTERNAL.)
  const other = signCert(certs, "other", "/CN=someone-else/O=strata tests", "ca", { san: LOOPBACK_SAN });
  const refused = await new Promise((resolve) => {
    let timer;
    const done = (v) => { clearTimeout(timer); unhandled.capture = null; resolve(v); };
    unhandled.capture = () => done(true);
    timer = setTimeout(() => done(false), 10000);
    connect(nodes[b], { ssl: { ...ssl, cert: fs.readFileSync(other.cert), key: fs.readFileSync(other.key) },
      username: peerOf(b), password: "" }).then((c) => { c.close().catch(() => {}); done(false); }, () => done(true));
  });
  check(refused, `a client with another user's certificate logged in as ${peerOf(b)} with an empty password`);
  log(`peers authenticate to n${leader} by certificate (EXTERNAL as ${users.join(", ")}); ${peers.length} peer ` +
    "connection(s)");
}
