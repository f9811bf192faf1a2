#!/usr/bin/env bash
# The main job on embedded defaults, through the product's real interface:
# builds strata, starts `strata serve` (RabbitMQ Stream protocol; a local
# directory as object store, the embedded catalog) in a fresh temporary
# directory with small segments and fragments so that data reaches the
# remote tier within seconds, drives it with `strata perf` (publishers with
# confirms and a live consumer), waits until the uploads are persisted and
# local retention has dropped the tiered segments, then consumes the whole
# stream from `first` over the protocol — remote fragments, then local
# segments — checking every chunk's CRC32 and that offsets are contiguous,
# prints a summary and stops the server with SIGTERM.
#   scripts/demo.sh [--seconds N] [--json]
# (`strata demo` is the same job without the protocol, on a node in-process.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=5
json=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --json) json=1; shift ;;
    *) echo "demo.sh: unknown argument $1 (use --seconds N, --json)" >&2; exit 2 ;;
  esac
done

"$here/scripts/build.sh" "$here/build" >/dev/null
bin="$here/build/strata"
work="$(mktemp -d /tmp/strata-demo-XXXXXX)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

say() { [ "$json" = 1 ] || echo "$@"; }

# 4 MiB segments, at most 8 MiB of them kept locally once uploaded; 1 MiB
# fragments cut at least every second; fsync never (RabbitMQ's default).
cat >"$work/serve.json" <<EOF
{
  "data_dir": "$work/data",
  "log": { "fsync": "never", "segment_bytes": 4194304,
           "retention": { "max_bytes": 8388608 } },
  "tiering": { "fragment_target_bytes": 1048576, "fragment_max_age_ms": 1000,
               "persist_interval_ms": 500 },
  "server": { "listen": "127.0.0.1:0" },
  "http": { "listen": "127.0.0.1:0" }
}
EOF

"$bin" serve --config "$work/serve.json" >"$work/serve.out" 2>"$work/serve.log" &
server_pid=$!
port=""
http=""
for _ in $(seq 1 300); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    cat "$work/serve.log" >&2
    echo "demo.sh: strata serve exited before it was ready" >&2
    exit 1
  fi
  port="$(sed -n 's/^strata serve: listening on .*:\([0-9]*\)$/\1/p' "$work/serve.out")"
  http="$(sed -n 's/^strata serve: http on \(.*\)$/\1/p' "$work/serve.out")"
  [ -n "$port" ] && [ -n "$http" ] && break
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "demo.sh: strata serve did not report its port; its log: $work/serve.log" >&2
  exit 1
fi
say "strata serve on 127.0.0.1:$port (status http://$http/status), data in $work/data"

say "== publishing for ${seconds} s: 2 producers with confirms, 1 live consumer"
"$bin" perf --port "$port" --stream demo --producers 2 --consumers 1 --size 200 \
  --time "$seconds" --json >"$work/publish.json" 2>"$work/publish.err" || {
  cat "$work/publish.err" "$work/publish.json" >&2
  echo "demo.sh: the publishing run failed" >&2
  exit 1
}
published="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["confirmed"])' "$work/publish.json")"

say "== waiting for the uploads to be persisted and local retention to drop tiered segments"
"$bin" status --url "http://$http" --json >"$work/status.json"
for _ in $(seq 1 600); do
  "$bin" status --url "http://$http" --json >"$work/status.json" 2>/dev/null || true
  if python3 - "$work/status.json" <<'EOF'; then break; fi
import json, sys
s = json.load(open(sys.argv[1]))
st = s.get("streams", {}).get("demo", {})
t = st.get("tiering", {})
sys.exit(0 if st.get("local_first_offset", 0) > 0 and
         t.get("remote_next_offset", 0) >= st["local_first_offset"] and
         t.get("fragments_pending_persist", 1) == 0 else 1)
EOF
  sleep 0.1
done

say "== consuming the whole stream from first over the protocol (remote, then local)"
"$bin" perf --port "$port" --stream demo --producers 0 --consumers 1 --offset first \
  --messages "$published" --json >"$work/consume.json" 2>"$work/consume.err" || {
  cat "$work/consume.err" "$work/consume.json" >&2
  echo "demo.sh: the consuming run failed" >&2
  exit 1
}

kill -TERM "$server_pid"
rc=0
wait "$server_pid" || rc=$?
server_pid=""
if [ "$rc" != 0 ]; then
  cat "$work/serve.log" >&2
  echo "demo.sh: strata serve exited with $rc after SIGTERM" >&2
  exit 1
fi

python3 - "$work/publish.json" "$work/consume.json" "$work/status.json" "$json" <<'EOF'
import json, sys
pub, con, status = (json.load(open(p)) for p in sys.argv[1:4])
st = status.get("streams", {}).get("demo", {})
summary = {
    "published": pub["published"], "confirmed": pub["confirmed"],
    "publish_msg_s": round(pub["rates"]["confirmed_msg_s"]),
    "confirm_latency_us": pub["confirm_latency_us"],
    "deliver_latency_us": pub["deliver_latency_us"],
    "consumed_from_first": con["consumed_all"],
    "consume_msg_s": round(con["rates"]["consumed_msg_s"]),
    "crc_errors": con["crc_errors"], "gaps": con["gaps"],
    "local_first_offset": st.get("local_first_offset"),
    "remote_next_offset": st.get("tiering", {}).get("remote_next_offset"),
    "ok": bool(pub["ok"] and con["ok"] and con["consumed_all"] == pub["confirmed"]),
}
if sys.argv[4] == "1":
    print(json.dumps(summary, indent=2))
else:
    cl, dl = summary["confirm_latency_us"], summary["deliver_latency_us"]
    print(f"published {summary['published']} messages of 200 B, all confirmed: {summary['confirmed']} "
          f"({summary['publish_msg_s']} msg/s); confirm latency p50 {cl['p50']:.0f} us p99 {cl['p99']:.0f} us; "
          f"publish-to-deliver p50 {dl['p50']:.0f} us p99 {dl['p99']:.0f} us")
    print(f"remote tier holds offsets below {summary['remote_next_offset']}; local log starts at "
          f"{summary['local_first_offset']}")
    print(f"consumed from first: {summary['consumed_from_first']} messages ({summary['consume_msg_s']} msg/s), "
          f"CRC errors {summary['crc_errors']}, gaps {summary['gaps']}")
    print("verified: every confirmed message read back across both tiers" if summary["ok"]
          else "VERIFICATION FAILED")
sys.exit(0 if summary["ok"] else 1)
EOF
