#!/usr/bin/env bash
# Consume throughput of one stream's remote data with consumers spread over
# the nodes of a cluster: the owner's path against the replica path
# (src/server/replica_feed.h). One etcd member, three `strata serve` nodes
# over one directory object store, all on this machine (loopback), driven
# by `strata perf` consumers pointed at each node.
#   bench/cluster/replica_consume.sh BUILD_DIR [RUNS]
# BUILD_DIR holds the `strata` binary. RUNS (default 3) runs per layout;
# the table shows medians. Environment: MESSAGES (written once and read
# back from `first` by every consumer, default 1000000), SIZE (message
# bytes, default 100), KEEP (set: leave the work directory for a look).
# Layouts (one consumer per listed node, run at the same time; msg/s summed):
#   owner        1 consumer on the owner
#   replica      1 consumer on a replica
#   owner+1      the owner and one replica
#   owner+2      all three nodes
# The nodes keep at most LOCAL_BYTES (default 8 MiB) of the stream on local
# disk, so the owner's consumer too reads (nearly) all of it from the
# bucket; confirm = remote, so what perf wrote is in the bucket when the
# fill ends.
set -euo pipefail

build=${1:?usage: replica_consume.sh BUILD_DIR [RUNS]}
runs=${2:-3}
MESSAGES=${MESSAGES:-1000000}
SIZE=${SIZE:-100}
LOCAL_BYTES=${LOCAL_BYTES:-8388608}
strata=$(cd "$build" && pwd)/strata
[ -x "$strata" ] || { echo "replica_consume.sh: no strata binary in $build" >&2; exit 2; }
command -v etcd >/dev/null || { echo "replica_consume.sh: etcd is not on PATH" >&2; exit 2; }

work=$(mktemp -d /tmp/strata-replica.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cport=$(free_port)
pport=$(free_port)
etcd --name b0 --data-dir "$work/etcd" \
  --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
  --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
  --initial-cluster "b0=http://127.0.0.1:$pport" --log-level warn >"$work/etcd.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$cport/health" >/dev/null 2>&1 && break
  sleep 0.1
done

mkdir -p "$work/bucket"
ports=()
for i in 0 1 2; do
  cat >"$work/node-$i.json" <<JSON
{"objstore": {"backend": "fs", "fs": {"root": "$work/bucket"}},
 "catalog": {"backend": "etcd", "endpoints": ["http://127.0.0.1:$cport"], "namespace": "bench"},
 "log": {"fsync": "never", "segment_bytes": 4194304, "retention": {"max_bytes": $LOCAL_BYTES}},
 "tiering": {"confirm": "remote", "fragment_target_bytes": 16777216},
 "cluster": {"enabled": true, "node_id": "n$i", "lease_ttl_ms": 5000}}
JSON
  "$strata" serve --config "$work/node-$i.json" --data-dir "$work/data-$i" --listen 127.0.0.1:0 \
    >"$work/node-$i.out" 2>"$work/node-$i.err" &
  pids+=($!)
  for _ in $(seq 1 300); do
    grep -q 'listening on' "$work/node-$i.out" 2>/dev/null && break
    sleep 0.1
  done
  ports+=("$(sed -n 's/^strata serve: listening on .*:\([0-9]*\)$/\1/p' "$work/node-$i.out")")
  [ -n "${ports[$i]}" ] || { cat "$work/node-$i.err" >&2; exit 1; }
done

# The fill: perf creates the stream on whichever node it asks; only the
# owner takes its publisher, so the node that accepts it is the owner.
owner=""
for attempt in $(seq 1 20); do
  for i in 0 1 2; do
    if "$strata" --json perf --port "${ports[$i]}" --stream bench --size "$SIZE" --producers 1 \
      --consumers 0 --messages "$MESSAGES" >"$work/fill.json" 2>"$work/fill.err"; then
      owner=$i
      break 2
    fi
  done
  sleep 1
done
[ -n "$owner" ] || { echo "replica_consume.sh: no node took the publisher" >&2; cat "$work/fill.err" >&2; exit 1; }
r1=$(((owner + 1) % 3))
r2=$(((owner + 2) % 3))
echo "owner n$owner; filled $MESSAGES messages of $SIZE bytes;" \
  "owner's local log: $(du -sm "$work/data-$owner/streams" | cut -f1) MiB," \
  "bucket: $(du -sm "$work/bucket" | cut -f1) MiB" >&2

# consume NAME NODE...: one consumer per node at once; the sum of msg/s.
consume() {
  local name=$1
  shift
  local cpids=() k=0
  for n in "$@"; do
    "$strata" --json perf --port "${ports[$n]}" --stream bench --producers 0 --consumers 1 \
      --offset first --messages "$MESSAGES" --credit 20 >"$work/$name-$k.json" 2>"$work/$name-$k.err" &
    cpids+=($!)
    k=$((k + 1))
  done
  for p in "${cpids[@]}"; do wait "$p" || { echo "consumer failed: $(cat "$work"/"$name"-*.err)" >&2; exit 1; }; done
  python3 - "$work" "$name" "$k" <<'PY'
import json, sys
work, name, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(sum(json.load(open(f"{work}/{name}-{i}.json"))["rates"]["consumed_msg_s"] for i in range(k)))
PY
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

declare -A res
for layout in owner replica owner+1 owner+2; do
  case $layout in
    owner) nodes=("$owner") ;;
    replica) nodes=("$r1") ;;
    owner+1) nodes=("$owner" "$r1") ;;
    owner+2) nodes=("$owner" "$r1" "$r2") ;;
  esac
  vals=()
  for r in $(seq 1 "$runs"); do vals+=("$(consume "$layout-$r" "${nodes[@]}")"); done
  res[$layout]=$(median "${vals[@]}")
  echo "$layout: ${vals[*]} -> median ${res[$layout]}" >&2
done

lscpu | grep 'Model name' | sed 's/^ */# /'
printf '%-10s %14s %10s\n' layout "msg/s (sum)" "vs owner"
for layout in owner replica owner+1 owner+2; do
  awk -v l="$layout" -v v="${res[$layout]}" -v o="${res[owner]}" \
    'BEGIN { printf "%-10s %14.0f %9.2fx\n", l, v, v / o }'
done
