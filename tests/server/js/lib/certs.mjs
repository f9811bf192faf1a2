// Certificates for TLS scenarios, made by the `openssl` program in the scenario's temp dir: CAs, and certificates a
// CA signs. Every file is PEM: <name>.pem (certificate) and <name>.key (its key, unencrypted).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

function openssl(dir, ...args) {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

// A self-signed CA: <name>.pem, <name>.key.
export function makeCa(dir, name) {
  openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
    "-subj", `/CN=${name} test CA`, "-keyout", `${name}.key`, "-out", `${name}.pem`);
}

// <name>.pem / <name>.key with subject `subj`, signed by CA `caName`; `san` (e.g. "DNS:localhost,IP:127.0.0.1") sets
// subjectAltName; `days` its validity from now (-1: expired since yesterday). Returns the two paths.
export function signCert(dir, name, subj, caName, { san, days = 2 } = {}) {
  openssl(dir, "req", "-newkey", "rsa:2048", "-nodes", "-subj", subj, "-keyout", `${name}.key`, "-out", `${name}.csr`);
  const extra = [];
  if (san) {
    const ext = path.join(dir, `${name}.ext`);
    fs.writeFileSync(ext, `subjectAltName=${san}\n`);
    extra.push("-extfile", ext);
  }
  openssl(dir, "x509", "-req", "-in", `${name}.csr`, "-CA", `${caName}.pem`, "-CAkey", `${caName}.key`,
    "-CAcreateserial", "-days", String(days), "-out", `${name}.pem`, ...extra);
  return { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`) };
}

// The SAN of a certificate for a service on this machine's loopback.
export const LOOPBACK_SAN = "DNS:localhost,IP:127.0.0.1";
