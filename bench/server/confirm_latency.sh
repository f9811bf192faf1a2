#!/usr/bin/env bash
# Confirm latency of `strata serve` with tiering.confirm = local vs remote at a
# fixed publish rate, and the PUT cost per GiB of stream data, over the
# directory object store and over s3rver (tools/node_modules, as the tests
# start it), and the publish-to-deliver latency of one consumer reading along
# (with `remote` a consumer reads only what is persisted,
# src/server/delivery_limit.h). Driven by `strata perf`; PUTs and bytes read from the node's
# /metrics (strata_objstore_requests_total{op="put"}, strata_tier_remote_bytes).
#   bench/server/confirm_latency.sh BUILD_DIR [RUNS]
# Environment: RATE (msg/s, default 5000), TIME (s per run, default 10), SIZE
# (message bytes, default 100), CUT_MS (remote_confirm_cut_ms, default 100),
# BATCH (messages per Publish frame, default 10), STRATA_FSYNC (default always).
# Prints one table of medians over RUNS (default 3) runs per cell.
set -euo pipefail

build=${1:?usage: confirm_latency.sh BUILD_DIR [RUNS]}
runs=${2:-3}
RATE=${RATE:-5000}
TIME=${TIME:-10}
SIZE=${SIZE:-100}
CUT_MS=${CUT_MS:-100}
BATCH=${BATCH:-10}
STRATA_FSYNC=${STRATA_FSYNC:-always}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
strata=$(cd "$build" && pwd)/strata
[ -x "$strata" ] || { echo "confirm_latency.sh: no strata binary in $build" >&2; exit 2; }

work=$(mktemp -d /tmp/strata-confirm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# s3rver on a free port, bucket "bench".
mkdir -p "$work/s3"
node --openssl-legacy-provider "$root/tools/node_modules/s3rver/bin/s3rver.js" -d "$work/s3" \
  -a 127.0.0.1 -p 0 --silent --service-endpoint localhost --configure-bucket bench \
  >"$work/s3.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do
  grep -q 'listening on' "$work/s3.out" 2>/dev/null && break
  sleep 0.1
done
s3_port=$(grep -o 'listening on [^ ]*' "$work/s3.out" | grep -o '[0-9]*$' | head -1)
[ -n "$s3_port" ] || { echo "s3rver did not start:" >&2; cat "$work/s3.out" >&2; exit 1; }

# serve NAME STORE MODE: starts strata serve; sets port and http_port.
serve() {
  local name=$1 store=$2 mode=$3 os
  if [ "$store" = fs ]; then
    os="{\"backend\": \"fs\", \"fs\": {\"root\": \"$work/$name-bucket\", \"create\": true}}"
  else
    os="{\"backend\": \"s3\", \"s3\": {\"endpoint\": \"http://127.0.0.1:$s3_port\", \"bucket\": \"bench\",
         \"region\": \"us-east-1\", \"addressing\": \"path\", \"access_key_id\": \"S3RVER\",
         \"secret_access_key\": \"S3RVER\"}}"
  fi
  cat >"$work/$name.json" <<JSON
{"data_dir": "$work/$name", "objstore": $os, "log": {"fsync": "$STRATA_FSYNC"},
 "tiering": {"key_prefix": "$name", "confirm": "$mode", "remote_confirm_cut_ms": $CUT_MS},
 "http": {"listen": "127.0.0.1:0"}}
JSON
  "$strata" serve --config "$work/$name.json" --listen 127.0.0.1:0 >"$work/$name.out" 2>"$work/$name.err" &
  serve_pid=$!
  pids+=("$serve_pid")
  for _ in $(seq 1 300); do
    grep -q 'http on' "$work/$name.out" 2>/dev/null && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/$name.err" >&2; exit 1; }
    sleep 0.1
  done
  port=$(sed -n 's/^strata serve: listening on .*:\([0-9]*\)$/\1/p' "$work/$name.out")
  http_port=$(sed -n 's/^strata serve: http on .*:\([0-9]*\)$/\1/p' "$work/$name.out")
}
metric() {  # metric HTTP_PORT SERIES_PREFIX: the sum of matching series
  curl -s "http://127.0.0.1:$1/metrics" | awk -v p="$2" 'index($0, p) == 1 {s += $NF} END {print s + 0}'
}

declare -A result
for store in fs s3; do
  for mode in local remote; do
    files=()
    for r in $(seq 1 "$runs"); do
      name="$store-$mode-$r"
      serve "$name" "$store" "$mode"
      "$strata" --json perf --port "$port" --stream bench --size "$SIZE" --batch-size "$BATCH" \
        --producers 1 --consumers 1 --rate "$RATE" --time "$TIME" >"$work/$name.perf.json" \
        2>"$work/$name.perf.err" || { tail -5 "$work/$name.perf.err" >&2; }
      # Count the PUTs of the same bytes in both modes: wait until the
      # local-mode tail is persisted too (fragment age bound + persist interval).
      for _ in $(seq 1 600); do
        [ "$(metric "$http_port" 'strata_tier_unpersisted_tail_offsets{')" = 0 ] && break
        sleep 0.1
      done
      puts=$(metric "$http_port" 'strata_objstore_requests_total{op="put"}')
      bytes=$(metric "$http_port" 'strata_tier_remote_bytes{')
      python3 - "$work/$name.perf.json" "$puts" "$bytes" >"$work/$name.sum.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
puts, b = float(sys.argv[2]), float(sys.argv[3])
d = p["deliver_latency_us"]
print(json.dumps({"p50": p["confirm_latency_us"]["p50"] / 1000, "p99": p["confirm_latency_us"]["p99"] / 1000,
                  "d50": d["p50"] / 1000, "d99": d["p99"] / 1000,
                  "rate": p["rates"]["confirmed_msg_s"], "puts": puts,
                  "puts_per_gib": puts / (b / 2**30) if b > 0 else float("nan")}))
PY
      kill -TERM "$serve_pid" && wait "$serve_pid" 2>/dev/null || true
      files+=("$work/$name.sum.json")
    done
    for f in p50 p99 d50 d99 rate puts puts_per_gib; do
      result["$store|$mode|$f"]=$(python3 -c '
import json, statistics, sys
v = [json.load(open(f))[sys.argv[1]] for f in sys.argv[2:]]
print(f"{statistics.median(v):.1f}")' "$f" "${files[@]}")
    done
  done
done

echo "confirm latency at $RATE msg/s ($SIZE B, $BATCH per frame, fsync $STRATA_FSYNC, cut $CUT_MS ms), medians of $runs runs"
printf '%-6s %-7s %10s %10s %12s %12s %12s %8s %12s\n' store confirm p50_ms p99_ms deliver_p50 deliver_p99 \
  confirmed/s PUTs PUTs/GiB
for store in fs s3; do
  for mode in local remote; do
    printf '%-6s %-7s %10s %10s %12s %12s %12s %8s %12s\n' "$store" "$mode" \
      "${result[$store|$mode|p50]}" "${result[$store|$mode|p99]}" "${result[$store|$mode|d50]}" \
      "${result[$store|$mode|d99]}" "${result[$store|$mode|rate]}" "${result[$store|$mode|puts]}" \
      "${result[$store|$mode|puts_per_gib]}"
  done
done
