// Holds N idle stream-protocol connections open (the stock JS client, as the
// tests run it: tests/server/js/lib/client.mjs), over TLS or not, for
// bench/server/tls_bench.sh to read the server's resident memory with them:
// prints "ready" once all are open, closes them when its stdin closes.
//   node bench/server/tls_conns.mjs strata|rabbitmq PORT N [CA_FILE]   (CA_FILE: TLS)
import fs from "node:fs";
import { connect } from "../../tests/server/js/lib/client.mjs";

const [kind, port, n, ca] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5]];
const server = { kind, host: "127.0.0.1", port };
const clients = [];
for (let i = 0; i < n; i++) {
  clients.push(await connect(server, ca ? { ssl: { ca: fs.readFileSync(ca), servername: "localhost" } } : {}));
}
console.log("ready");
process.stdin.resume();
process.stdin.on("end", async () => {
  for (const c of clients) await c.close().catch(() => {});
  process.exit(0);
});
