// A strata cluster for JS scenarios: a 3-member etcd cluster (Debian's `etcd` on PATH) and strata nodes on 127.0.0.1,
// all in the scenario's temp dir, as the C++ tests build one (tests/support/etcd_cluster.cpp, serve_cluster.cpp).
// Hand it to ctx.own() before starting it: the runner closes it (nodes first, then etcd) however the scenario ends,
// and a start that failed halfway is closed too.
//
//   const cluster = ctx.own(new StrataCluster(path.join(dir, "cluster"), { bin: server.bin }));
//   await cluster.start(log);
//   cluster.nodes[i]                     // StrataServer: host, port, http, status(), logs()
//   await cluster.awaitAgreedLeader(clients, stream, 30000)   // index of the node every node names leader
import fs from "node:fs";
import path from "node:path";
import { Child, freePort } from "./process.mjs";
import { StrataServer } from "./strata.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// etcd members on 127.0.0.1 with the flags of tests/support/etcd_cluster.cpp's spawn(), each healthy
// (GET /health says "true") within 20 s. A port free when picked may be taken before etcd binds it: such a start is
// retried with new ports, as the C++ helper does. With `tls` ({cert, key, ca}: PEM paths) the client URLs are https
// with that certificate, and clients must present a certificate from `ca` (--client-cert-auth); health is then read
// on a plain metrics URL, as the C++ helper does.
export class EtcdCluster {
  constructor(dir, { members = 3, tls } = {}) {
    this.kind = "etcd";
    this.dir = dir;
    this.size = members;
    this.tls = tls;
    this.members = [];
  }

  scheme() { return this.tls ? "https" : "http"; }
  endpoints() { return this.members.map((m) => `${this.scheme()}://127.0.0.1:${m.clientPort}`); }

  async start() {
    const attempts = 5;
    for (let attempt = 0; ; attempt++) {
      this.members = [];
      const used = new Set();
      const fresh = async () => {
        for (;;) {
          const p = await freePort();
          if (!used.has(p)) { used.add(p); return p; }
        }
      };
      for (let i = 0; i < this.size; i++) {
        const name = `m${i}`;
        const dataDir = path.join(this.dir, attempt === 0 ? `etcd-${i}` : `etcd-${i}-retry${attempt}`);
        fs.mkdirSync(dataDir, { recursive: true });
        this.members.push({ name, dataDir, clientPort: await fresh(), peerPort: await fresh(),
          metricsPort: this.tls ? await fresh() : undefined });
      }
      const initialCluster = this.members.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(",");
      for (const m of this.members) {
        const client = `${this.scheme()}://127.0.0.1:${m.clientPort}`;
        const peer = `http://127.0.0.1:${m.peerPort}`;
        const tlsFlags = this.tls ? ["--cert-file", this.tls.cert, "--key-file", this.tls.key, "--client-cert-auth",
          "--trusted-ca-file", this.tls.ca, "--listen-metrics-urls", `http://127.0.0.1:${m.metricsPort}`] : [];
        m.proc = new Child(`etcd ${m.name}`, ["etcd",
          "--name", m.name,
          "--data-dir", m.dataDir,
          "--listen-client-urls", client,
          "--advertise-client-urls", client,
          "--listen-peer-urls", peer,
          "--initial-advertise-peer-urls", peer,
          "--initial-cluster", initialCluster,
          "--initial-cluster-state", "new",
          "--initial-cluster-token", "strata-test",
          "--heartbeat-interval", "50",
          "--election-timeout", "500",
          "--logger=zap",
          "--log-level", "warn", ...tlsFlags], { cwd: this.dir });
      }
      let failure;
      for (let i = 0; i < this.size && !failure; i++) {
        if (!(await this.waitHealthy(i, 20000))) failure = i;
      }
      if (failure === undefined) return;
      const logs = this.memberLog(failure);
      await this.close();
      if (logs.includes("address already in use") && attempt + 1 < attempts) continue;
      throw new Error(`etcd member ${failure} did not become healthy within 20 s: ${logs}`);
    }
  }

  async waitHealthy(i, timeoutMs) {
    const m = this.members[i];
    const url = `http://127.0.0.1:${this.tls ? m.metricsPort : m.clientPort}/health`;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!m.proc.running) return false;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
        if ((await res.text()).includes('"true"')) return true;
      } catch {
        // not listening yet, or no quorum yet
      }
      await sleep(20);
    }
    return false;
  }

  memberLog(i) {
    const p = this.members[i]?.proc;
    return p ? p.tail(p.err, 4000) : "";
  }

  logs() { return this.members.map((m, i) => `--- etcd ${m.name} ---\n${this.memberLog(i)}`).join("\n"); }

  // SIGKILL, as the C++ helper: etcd's data dir is thrown away with the temp dir.
  async close() {
    await Promise.all(this.members.map((m) => m.proc?.stop(10000, "SIGKILL")));
  }
}

// `nodes` strata nodes on one etcd cluster and one fs object store (<dir>/bucket), each node's config as
// tests/support/serve_cluster.cpp's node_doc(i, true) builds it (catalog namespace "js"), each with --http.
// `etcdTls` starts etcd with TLS (EtcdCluster); `configure(i, config)` returns node i's configuration, changed.
export class StrataCluster {
  constructor(dir, { bin, nodes = 3, etcdMembers = 3, leaseTtlMs = 2000, namespace = "js", etcdTls,
    configure = (i, c) => c } = {}) {
    this.kind = "strata cluster";
    this.dir = dir;
    this.bin = bin;
    this.size = nodes;
    this.leaseTtlMs = leaseTtlMs;
    this.namespace = namespace;
    this.configure = configure;
    this.etcd = new EtcdCluster(path.join(dir, "etcd"), { members: etcdMembers, tls: etcdTls });
    this.nodes = [];
  }

  nodeConfig(i) {
    return {
      objstore: { backend: "fs", fs: { root: path.join(this.dir, "bucket") } },
      catalog: {
        backend: "etcd",
        endpoints: this.etcd.endpoints(),
        namespace: this.namespace,
        request_timeout_ms: 1500,
        attempt_timeout_ms: 500,
      },
      tiering: {
        confirm: "remote",
        remote_confirm_cut_ms: 20,
        remote_confirm_timeout_ms: 20000,
        request_timeout_ms: 2000,
      },
      cluster: { enabled: true, node_id: `n${i}`, lease_ttl_ms: this.leaseTtlMs },
    };
  }

  async start(log = () => {}) {
    fs.mkdirSync(this.dir, { recursive: true });
    await this.etcd.start();
    log(`etcd healthy: ${this.etcd.endpoints().join(", ")}`);
    fs.mkdirSync(path.join(this.dir, "bucket"), { recursive: true });
    for (let i = 0; i < this.size; i++) {
      const nodeDir = path.join(this.dir, `node-${i}`);
      fs.mkdirSync(nodeDir, { recursive: true });
      const config = this.configure(i, this.nodeConfig(i));
      const node = new StrataServer(nodeDir, { bin: this.bin, config, args: ["--http", "127.0.0.1:0"] });
      this.nodes.push(node);
      await node.start();
      log(`node n${i} listening on ${node.host}:${node.port} (http ${node.http})`);
    }
  }

  // The index of the node listening on `port` (a Metadata broker's port), or -1.
  indexOfPort(port) { return this.nodes.findIndex((n) => n.port === port); }

  // Polls Metadata of `stream` through clients[i] (a stock client connected to node i, one per node) until every node
  // names the same leader, with every other node of the cluster a replica. Resolves with that leader's index.
  async awaitAgreedLeader(clients, stream, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    let last = [];
    for (;;) {
      last = [];
      for (const c of clients) {
        try {
          const [m] = await c.queryMetadata({ streams: [stream] });
          last.push({ code: m.responseCode, leader: m.leader?.port, replicas: (m.replicas ?? []).map((r) => r.port) });
        } catch (e) {
          last.push({ error: e?.message ?? String(e) });
        }
      }
      const leaders = new Set(last.map((x) => x.leader));
      const l = leaders.size === 1 ? this.indexOfPort(last[0].leader) : -1;
      if (l >= 0 && last.every((x) => x.code === 1 && x.replicas.length === this.size - 1 &&
        !x.replicas.includes(x.leader) && x.replicas.every((p) => this.indexOfPort(p) >= 0))) {
        return l;
      }
      if (Date.now() > deadline) {
        throw new Error(`the nodes do not agree on a leader of ${stream} after ${timeoutMs} ms: ` +
          `${JSON.stringify(last)} (nodes' ports ${this.nodes.map((n) => n.port).join(", ")})`);
      }
      await sleep(100);
    }
  }

  logs(tail = 3000) {
    const out = this.nodes.map((n, i) => {
      const s = n.logs();
      return `--- node n${i} (${n.host}:${n.port}) ---\n${s.length > tail ? "..." + s.slice(-tail) : s}`;
    });
    return [...out, this.etcd.logs()].join("\n");
  }

  // Every node (each must stop cleanly on SIGTERM, as StrataServer requires), then etcd; the first failure is
  // thrown after everything has been stopped.
  async close() {
    const errors = [];
    await Promise.all(this.nodes.map(async (n, i) => {
      try {
        await n.close();
      } catch (e) {
        errors.push(`node n${i}: ${e.message}`);
      }
    }));
    await this.etcd.close();
    if (errors.length) throw new Error(errors.join("; "));
  }
}
