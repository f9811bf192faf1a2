#!/usr/bin/env bash
# Kernel TLS, run for real. The test machines' kernels have no `tls` module,
# so strata's kernel-TLS delivery path (SSL_sendfile from the segment file,
# src/server/tls_transport.cpp) cannot run on them. This boots Debian's cloud
# kernel, which has it, in QEMU (TCG: no hardware virtualization needed),
# from an initramfs holding busybox, the kernel's TLS and AES-GCM modules,
# this build's strata (stripped) and its libraries; inside, it:
#   1. loads the `tls` module;
#   2. starts `strata serve` with a plain and a TLS listener;
#   3. publishes messages over plain TCP with `strata perf`;
#   4. consumes them all over TLS with `strata perf`, which checks every
#      chunk's CRC and every offset (no gap), plain as well;
#   5. reads /status;
#   6. runs the TLS transport's tests whose path kernel TLS changes
#      (server_unit_test's PeerTlsTest: a frame's file part, which must go
#      out by SSL_sendfile byte for byte with STRATA_EXPECT_KERNEL_TLS set;
#      a read and a write in flight under backpressure; close_notify after
#      the last bytes), when the build has it, with P-256 certificates
#      (STRATA_TEST_CERT_EC: RSA keys take ~20 s a test on the emulated
#      CPU).
# It passes when the TLS consume got every message intact and /status says
# the deliveries went by kernel TLS (server.tls.kernel_send_connections > 0,
# delivery "sendfile (kernel TLS)", and sendfile_bytes at least the bodies of
# every message).
#   tests/vm/ktls_vm_test.sh BUILD_DIR [--bench RUNS]
# --bench RUNS then also consumes the stream RUNS times each over plain TCP
# (sendfile), kernel TLS and user-space TLS (the `tls` module unloaded and
# its loading refused), alternating, and prints each one's median rate and
# the server's CPU per MB. The VM's CPU is emulated (TCG): the figures are
# ratios of one emulated machine, not a hardware measurement.
# Needs: qemu-system-x86, busybox-static, cpio, kmod (depmod), and the
# kernel package scripts/setup.sh downloads (linux-image-*-cloud-amd64 .deb,
# in $STRATA_VM_DIR, default ~/.cache/strata/vm); STRATA_VM_KERNEL_DEB
# names another.
set -euo pipefail
source "$(dirname "$0")/../../scripts/localhost_certs.sh"

build=$(cd "${1:?usage: ktls_vm_test.sh BUILD_DIR}" && pwd)
MESSAGES=${MESSAGES:-100000}
size=1000  # bytes per message
bench_runs=0
if [ "${2:-}" = "--bench" ]; then bench_runs=${3:?--bench RUNS}; fi
# One emulated CPU (one host thread) for the test, as one ctest slot; two,
# as the machine has, for --bench.
vm_cpus=${VM_CPUS:-$([ "$bench_runs" -gt 0 ] && echo 2 || echo 1)}
vm_dir=${STRATA_VM_DIR:-$HOME/.cache/strata/vm}
deb=${STRATA_VM_KERNEL_DEB:-$(ls "$vm_dir"/linux-image-*-cloud-amd64_*.deb 2>/dev/null | sort -V | tail -1 || true)}
[ -n "$deb" ] && [ -f "$deb" ] || {
  echo "ktls_vm_test.sh: no kernel package in $vm_dir (scripts/setup.sh downloads it)" >&2
  exit 2
}
for tool in qemu-system-x86_64 cpio depmod busybox openssl strip; do
  command -v "$tool" >/dev/null || { echo "ktls_vm_test.sh: $tool is missing (scripts/setup.sh)" >&2; exit 2; }
done
[ -x "$build/strata" ] || { echo "ktls_vm_test.sh: no strata binary in $build" >&2; exit 2; }

work=$(mktemp -d /tmp/strata-ktls-vm.XXXXXX)
[ -n "${STRATA_KEEP_TEST_DIRS:-}" ] || trap 'rm -rf "$work"' EXIT

echo "kernel package: $(basename "$deb")"
dpkg-deb -x "$deb" "$work/kernel"
kver=$(ls "$work/kernel/lib/modules")
vmlinuz=$work/kernel/boot/vmlinuz-$kver

ir=$work/initramfs
mkdir -p "$ir"/{bin,sbin,etc,proc,sys,dev,tmp,lib/modules/"$kver"}
cp "$(command -v busybox)" "$ir/bin/busybox"
for applet in sh mount ip modprobe rmmod cat grep sed sleep wget poweroff echo ls tail kill tr; do
  ln -s busybox "$ir/bin/$applet"
done
ln -s ../bin/busybox "$ir/sbin/modprobe"
# The TLS upper-layer protocol and the AES-GCM it asks the crypto API for
# (the kernel loads those through /sbin/modprobe, by alias).
(cd "$work/kernel" && cp -r --parents "lib/modules/$kver/kernel/net/tls" \
  "lib/modules/$kver/kernel/crypto" "lib/modules/$kver/kernel/arch/x86/crypto" \
  "lib/modules/$kver/kernel/lib" "$ir/")
cp "$work/kernel/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$ir/lib/modules/$kver/"
depmod -b "$ir" "$kver"

strip -o "$ir/bin/strata" "$build/strata"
programs=("$ir/bin/strata")
unit=$build/tests/server/server_unit_test
if [ -x "$unit" ]; then
  strip -o "$ir/bin/server_unit_test" "$unit"
  # Its fixtures make their certificates with the openssl program.
  cp "$(command -v openssl)" "$ir/bin/openssl"
  cp --parents -L "$(openssl version -d | sed 's/^OPENSSLDIR: "\(.*\)"$/\1/')/openssl.cnf" "$ir/"
  programs+=("$ir/bin/server_unit_test" "$ir/bin/openssl")
fi
for p in "${programs[@]}"; do ldd "$p"; done |
  awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u | while read -r lib; do
    cp --parents -L "$lib" "$ir/"
  done
echo "127.0.0.1 localhost" >"$ir/etc/hosts"
echo "root:x:0:0:root:/:/bin/sh" >"$ir/etc/passwd"

make_localhost_certs "$ir/etc" ktls-ca
rm -f "$ir/etc/ca.key" "$ir/etc/openssl.out"
cat >"$ir/etc/strata.json" <<JSON
{"log": {"fsync": "never"},
 "tls": {"listen": "127.0.0.1:5551", "cert_file": "/etc/srv.pem", "key_file": "/etc/srv.key"}}
JSON

cat >"$ir/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
ip link set lo up
result() { echo "KTLS-RESULT \$*"; }
finish() { echo "KTLS-END"; poweroff -f; }
# As udev does at boot on a machine with AES-NI: else the kernel's AES-GCM
# would be its table-driven C code.
modprobe aesni_intel || result aesni-failed
modprobe tls || { result module-failed; finish; }
result ulp "\$(cat /proc/sys/net/ipv4/tcp_available_ulp)"
tls_args="--port 5551 --tls --tls-ca-file /etc/ca.pem --tls-server-name localhost"
export HOME=/tmp
strata serve --config /etc/strata.json --data-dir /tmp/data --listen 127.0.0.1:5552 \
  --http 127.0.0.1:15672 >/tmp/serve.out 2>/tmp/serve.err &
spid=\$!
for i in \$(seq 1 600); do grep -q 'tls on' /tmp/serve.out && break; sleep 0.2; done
grep -q 'tls on' /tmp/serve.out || { result serve-failed; tail -20 /tmp/serve.err; finish; }
strata --json perf --port 5552 --stream ktls --producers 1 --consumers 0 --size $size \
  --messages $MESSAGES >/tmp/publish.json 2>/tmp/publish.err
result publish-rc \$?
strata --json perf \$tls_args --stream ktls --producers 0 --consumers 1 --offset first \
  --messages $MESSAGES >/tmp/consume.json 2>/tmp/consume.err
result consume-rc \$?
wget -q -O /tmp/status.json http://127.0.0.1:15672/status
result status-rc \$?
if [ -x /bin/server_unit_test ]; then
  (cd /tmp && STRATA_EXPECT_KERNEL_TLS=1 STRATA_TEST_CERT_EC=1 server_unit_test \
    --gtest_filter='PeerTlsTest.AFrames*:PeerTlsTest.AReadAndAWrite*:PeerTlsTest.EndingA*' \
    >/tmp/unit.out 2>&1)
  result unit-rc \$?
else
  result unit-rc skipped
fi
echo "KTLS-FILE unit.out"; grep -E '^\[( +OK|  FAILED|  PASSED) ' /tmp/unit.out; grep -B2 -A8 'Failure' /tmp/unit.out | head -40
echo "KTLS-FILE consume.json"; cat /tmp/consume.json
echo "KTLS-FILE status.json"; cat /tmp/status.json; echo
echo "KTLS-FILE serve.err"; tail -20 /tmp/serve.err
echo "KTLS-FILE consume.err"; tail -20 /tmp/consume.err
cpu() { set -- \$(cat /proc/\$1/stat); echo \$((\${14} + \${15})); }
consume() {
  case \$1 in
    plain) args="--port 5552" ;;
    *) args=\$tls_args ;;
  esac
  c0=\$(cpu \$spid)
  strata --json perf \$args --stream ktls --producers 0 --consumers 1 --offset first \
    --messages $MESSAGES >/tmp/run.json 2>/dev/null
  c1=\$(cpu \$spid)
  wget -q -O /tmp/st.json http://127.0.0.1:15672/status
  echo "KTLS-BENCH \$1 \$((c1 - c0)) \$(tr -d '\n' </tmp/run.json) STATUS \$(tr -d '\n' </tmp/st.json)"
}
echo "KTLS-CRYPTO \$(grep -A2 "^name *: gcm(aes)" /proc/crypto | grep driver | tr -s " " | tr "\n" " ")"
for r in \$(seq 1 $bench_runs); do
  consume plain
  consume ktls
  # User-space TLS: the module out, and the kernel's loading of it refused.
  echo /bin/false >/proc/sys/kernel/modprobe
  rmmod tls && consume user
  echo /sbin/modprobe >/proc/sys/kernel/modprobe
  modprobe tls
done
finish
INIT
chmod +x "$ir/init"
(cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.cpio.gz"

echo "booting $kver in QEMU (TCG, $vm_cpus CPU) ..."
timeout 900 qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp "$vm_cpus" -nographic -no-reboot \
  -kernel "$vmlinuz" -initrd "$work/initramfs.cpio.gz" \
  -append "console=ttyS0 quiet panic=-1" </dev/null >"$work/console.log" 2>&1 || true
tr -d '\r' <"$work/console.log" >"$work/console.txt"
grep -q "KTLS-END" "$work/console.txt" || {
  echo "ktls_vm_test.sh: the VM did not finish; its console:" >&2
  tail -40 "$work/console.txt" >&2
  exit 1
}
grep "KTLS-RESULT" "$work/console.txt"
python3 - "$work/console.txt" "$MESSAGES" "$size" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
want, size = int(sys.argv[2]), int(sys.argv[3])
def results(key):
    m = re.search(r"KTLS-RESULT %s (.*)" % key, text)
    return m.group(1).strip() if m else None
def section(name):
    m = re.search(r"KTLS-FILE %s\n(.*?)(?=\nKTLS-FILE |\nKTLS-END)" % re.escape(name), text, re.S)
    return m.group(1) if m else ""
fails = []
if "tls" not in (results("ulp") or "").split():
    fails.append("the tls module did not load (ulp: %s)" % results("ulp"))
for step in ("publish-rc", "consume-rc", "status-rc"):
    if results(step) != "0":
        fails.append("%s was %s" % (step, results(step)))
if results("unit-rc") not in ("0", "skipped"):
    fails.append("the TLS transport's tests failed over kernel TLS:\n" + section("unit.out"))
print("PeerTlsTest over kernel TLS:", results("unit-rc"))
consume, status = {}, {}
try:
    consume = json.loads(section("consume.json"))
    status = json.loads(section("status.json"))
except ValueError as e:
    fails.append("unreadable output: %s" % e)
print("consume over TLS:", json.dumps({k: consume.get(k) for k in ("ok", "rates", "crc_errors", "gaps")}))
conn = consume.get("connections", {})
print("TLS session:", conn.get("tls_version"), conn.get("tls_cipher"))
tls = status.get("server", {}).get("tls", {})
print("status server.tls:", json.dumps(tls))
if consume.get("ok") is not True:
    fails.append("the TLS consume did not end ok")
if tls.get("kernel_send_connections", 0) < 1:
    fails.append("no connection got kernel TLS (kernel_send_connections %s)" % tls.get("kernel_send_connections"))
# Every message's body went out by SSL_sendfile (the chunks' headers and
# framing add to it; nothing else is sent that way).
if tls.get("sendfile_bytes", 0) < want * size:
    fails.append("sendfile_bytes %s < %d bodies of %d bytes" % (tls.get("sendfile_bytes"), want, size))
if tls.get("delivery") != "sendfile (kernel TLS)":
    fails.append("delivery was %r" % tls.get("delivery"))
if fails:
    print("FAILED:\n  " + "\n  ".join(fails))
    print(section("serve.err")); print(section("consume.err"))
    sys.exit(1)
print("PASSED: every message consumed over kernel TLS (SSL_sendfile)")
PY
[ "$bench_runs" -gt 0 ] || exit 0
python3 - "$work/console.txt" "$bench_runs" "$vm_cpus" <<'PY'
import json, re, statistics, sys
text = open(sys.argv[1]).read()
runs = {"plain": [], "ktls": [], "user": []}
for m in re.finditer(r"KTLS-BENCH (\w+) (\d+) (.*) STATUS (.*)", text):
    mode, ticks, run, st = m.group(1), int(m.group(2)), json.loads(m.group(3)), json.loads(m.group(4))
    mb = run["rates"]["consumed_mb_s"] * run["duration_s"]
    runs[mode].append({"ok": run.get("ok"), "mb_s": run["rates"]["consumed_mb_s"],
                       "cpu_ms_per_mb": ticks * 10.0 / mb if mb else float("nan"),
                       "ktls": st["server"]["tls"]["kernel_send_connections"],
                       "sendfile_bytes": st["server"]["tls"]["sendfile_bytes"]})
for mode, rs in runs.items():
    print(mode, json.dumps(rs))
if not all(runs.values()) or not all(r["ok"] for rs in runs.values() for r in rs):
    sys.exit("bench: a consume failed or did not run")
cpu = open("/proc/cpuinfo").read()
model = re.search(r"model name\s*: (.*)", cpu).group(1)
med = {k: (statistics.median(r["mb_s"] for r in v), statistics.median(r["cpu_ms_per_mb"] for r in v))
       for k, v in runs.items()}
print("\nhost CPU: %s; the VM's CPU emulated by QEMU TCG (-cpu max), %s vCPUs; %d runs each, medians"
      % (model, sys.argv[3], len(runs["plain"])))
print("| consume from first | MB/s | / plain | server CPU per MB, ms | / plain |")
print("|---|---:|---:|---:|---:|")
for k, label in (("plain", "plain TCP (sendfile)"), ("ktls", "kernel TLS (SSL_sendfile)"),
                 ("user", "user-space TLS (module unloaded)")):
    print("| %s | %.1f | %.2f | %.1f | %.2f |" % (label, med[k][0], med[k][0] / med["plain"][0],
                                                 med[k][1], med[k][1] / med["plain"][1]))
PY
