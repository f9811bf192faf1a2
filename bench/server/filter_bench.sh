#!/usr/bin/env bash
# Filtered consume: a consumer of 1 % of a stream's filter values against the
# same consumer unfiltered, both `strata perf` against one `strata serve`
# (issue 24). MESSAGES (default 1 000 000) are published once in frames of
# 100 with 100 filter values (frame k carries "v<k mod 100>"), one frame per
# chunk (a confirm window of one frame); then, RUNS times alternating, an
# unfiltered consumer reads every message from the first offset and a
# consumer with filter.0 = v7 reads its value's MESSAGES/100. Prints the
# medians of the bytes of the chunks each received and its time.
#   bench/server/filter_bench.sh BUILD_DIR [RUNS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$1/strata"
runs="${2:-3}"
messages="${MESSAGES:-1000000}"
work="$(mktemp -d /tmp/strata-filter-bench.XXXXXX)"
pid=""
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

printf '{"log": {"fsync": "never"}}\n' >"$work/serve.json"
"$bin" serve --config "$work/serve.json" --data-dir "$work/data" --listen 127.0.0.1:0 \
  >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
for _ in $(seq 1 300); do
  grep -q 'listening on' "$work/serve.out" 2>/dev/null && break
  sleep 0.1
done
port=$(sed -n 's/^strata serve: listening on .*:\([0-9]*\)$/\1/p' "$work/serve.out")
[ -n "$port" ] || { cat "$work/serve.err" >&2; exit 1; }

echo "publishing $messages messages with 100 filter values ..." >&2
"$bin" --json perf --port "$port" --stream filtered --consumers 0 --messages "$messages" \
  --filter-values 100 --confirms 100 >"$work/publish.json"

# consume NAME ARGS...: one run; appends "chunk_bytes seconds" to $work/NAME.
consume() {
  local name=$1
  shift
  "$bin" --json perf --port "$port" --stream filtered --producers 0 --offset first "$@" \
    >"$work/last.json"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ok"], j["errors"]; print(j["chunk_bytes"], j["duration_s"])' \
    "$work/last.json" >>"$work/$name"
}
for r in $(seq 1 "$runs"); do
  echo "run $r: unfiltered, then filter.0 = v7 ..." >&2
  consume all --messages "$messages"
  consume one --messages "$((messages / 100))" --filter v7
done

python3 - "$work/all" "$work/one" <<'EOF'
import statistics, sys
def med(path):
    rows = [tuple(map(float, l.split())) for l in open(path)]
    return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
(ab, at), (ob, ot) = med(sys.argv[1]), med(sys.argv[2])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"CPU: {cpu}; medians")
print("| consumer | chunk bytes received | time (s) |")
print("|---|---|---|")
print(f"| every message | {ab:,.0f} | {at:.3f} |")
print(f"| filter.0 = v7 (1 of 100 values) | {ob:,.0f} | {ot:.3f} |")
print(f"| ratio filtered / unfiltered | {ob/ab:.4f} | {ot/at:.3f} |")
EOF
