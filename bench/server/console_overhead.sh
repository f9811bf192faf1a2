#!/usr/bin/env bash
# What an open web console costs the hot path: `strata perf` publish and
# consume throughput (1 producer, 1 consumer reading along, 100-byte
# messages) against `strata serve` without anyone on its HTTP endpoint,
# against the same with a poller requesting what the console requests. Goal:
# with/without >= 0.97 for both rates.
#   bench/server/console_overhead.sh BUILD_DIR [RUNS]
# BUILD_DIR holds the `strata` binary (with `serve` and `perf`). RUNS
# (default 3) runs per variant, alternating without, with, without, with, ...
# so that machine noise hits both; each run has its own `strata serve` on a
# fresh temp data dir (--http 127.0.0.1:0), stopped after it.
# The "with" poller opens the console once (GET /console/, console.css,
# console.js, /api/whoami), then, as src/server/console/console.js's poll()
# does, requests GET /api/streams, /api/stream/connections,
# /api/stream/consumers (HTTP Basic guest:guest, X-Requested-With) and
# /status (no credentials), waits POLL_S and starts again, from before perf
# starts until it ends. (The console's own default wait is 2 s; 1 s is
# harsher.)
# Environment: TIME (seconds perf publishes, default 10), SIZE (message
# bytes, default 100), POLL_S (seconds between polls, default 1),
# STRATA_FSYNC (log.fsync of the server; default: the server's own, always;
# `never` makes the hot path CPU-bound, where the poller's cost shows most).
# Prints a table: medians of published and consumed msg/s without and with,
# the ratio with/without, how many polls ran and how many failed, the CPU.
set -euo pipefail

build=${1:?usage: console_overhead.sh BUILD_DIR [RUNS]}
runs=${2:-3}
TIME=${TIME:-10}
SIZE=${SIZE:-100}
POLL_S=${POLL_S:-1}
STRATA_FSYNC=${STRATA_FSYNC:-}
strata=$(cd "$build" && pwd)/strata
[ -x "$strata" ] || { echo "console_overhead.sh: no strata binary in $build" >&2; exit 2; }
command -v curl >/dev/null || { echo "console_overhead.sh: needs curl" >&2; exit 2; }

work=$(mktemp -d /tmp/strata-console-overhead.XXXXXX)
serve_pid=""
poller_pid=""
perf_pid=""
stop_poller() {
  if [ -n "$poller_pid" ]; then
    kill -TERM "$poller_pid" 2>/dev/null || true
    wait "$poller_pid" 2>/dev/null || true
    poller_pid=""
  fi
}
stop_serve() {
  if [ -n "$serve_pid" ]; then
    kill -TERM "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=""
  fi
}
cleanup() {
  if [ -n "$perf_pid" ]; then
    kill -TERM "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
  fi
  stop_poller
  stop_serve
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# start_serve NAME: `strata serve` in $work/NAME; sets serve_pid, serve_port,
# http_port.
start_serve() {
  local name=$1 config=()
  mkdir -p "$work/$name"
  if [ -n "$STRATA_FSYNC" ]; then
    printf '{"log": {"fsync": "%s"}}\n' "$STRATA_FSYNC" >"$work/$name.json"
    config=(--config "$work/$name.json")
  fi
  "$strata" serve "${config[@]}" --data-dir "$work/$name/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
    >"$work/$name/serve.out" 2>"$work/$name/serve.err" &
  serve_pid=$!
  serve_port="" http_port=""
  for _ in $(seq 1 300); do
    serve_port=$(sed -n 's/^strata serve: listening on .*:\([0-9]*\)$/\1/p' "$work/$name/serve.out")
    http_port=$(sed -n 's/^strata serve: http on .*:\([0-9]*\)$/\1/p' "$work/$name/serve.out")
    [ -n "$serve_port" ] && [ -n "$http_port" ] && return 0
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "console_overhead.sh: strata serve did not start:" >&2
  tail -5 "$work/$name/serve.err" >&2
  exit 1
}

# poller BASE LOG: the console's requests until killed; one line per poll
# in LOG, "ok" or the HTTP codes of a poll that failed. Its curl and sleep
# run in the background and are waited for, so that TERM ends them at once.
poller() {
  local base=$1 out=$2 child=""
  trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM
  # (curl's -o names one URL's output: one per URL.)
  local api=(-s --max-time 5 -u guest:guest -H "X-Requested-With: strata-console" -w '%{http_code} ')
  curl -s --max-time 5 -o /dev/null "$base/console/" -o /dev/null "$base/console/console.css" \
    -o /dev/null "$base/console/console.js" --next "${api[@]}" -o /dev/null "$base/api/whoami" >/dev/null &
  child=$!
  wait "$child" || true
  while :; do
    curl "${api[@]}" -o /dev/null "$base/api/streams" -o /dev/null "$base/api/stream/connections" \
      -o /dev/null "$base/api/stream/consumers" --next -s -o /dev/null --max-time 5 -w '%{http_code}' "$base/status" >"$out.codes" &
    child=$!
    wait "$child" || true
    if [ "$(cat "$out.codes")" = "200 200 200 200" ]; then echo ok; else echo "failed: $(cat "$out.codes")"; fi >>"$out"
    sleep "$POLL_S" &
    child=$!
    wait "$child" || true
  done
}

# run VARIANT R: one run; perf's JSON summary in $work/VARIANT-R.json.
run() {
  local variant=$1 r=$2 name="$1-$2"
  start_serve "$name"
  : >"$work/$name.polls"
  if [ "$variant" = with ]; then
    poller "http://127.0.0.1:$http_port" "$work/$name.polls" &
    poller_pid=$!
  fi
  # In the background and waited for: a signal to the script is handled at
  # once, not after perf.
  "$strata" --json perf --port "$serve_port" -x 1 -y 1 -z "$TIME" -s "$SIZE" \
    >"$work/$name.json" 2>"$work/$name.err" &
  perf_pid=$!
  wait "$perf_pid" || {
    echo "console_overhead.sh: perf of run $name failed:" >&2
    tail -3 "$work/$name.err" >&2
  }
  perf_pid=""
  stop_poller
  stop_serve
  python3 - "$work/$name.json" "$name" "$work/$name.polls" <<'PY' >&2
import json, sys
try:
    r = json.load(open(sys.argv[1]))["rates"]
    rates = f"published {r['published_msg_s']:.0f} msg/s, consumed {r['consumed_msg_s']:.0f} msg/s"
except Exception:
    rates = "no result"
polls = open(sys.argv[3]).read().split("\n")[:-1]
extra = f", {len(polls)} polls ({sum(p != 'ok' for p in polls)} failed)" if sys.argv[2].startswith("with-") else ""
print(f"  {sys.argv[2]}: {rates}{extra}")
PY
}

echo "$runs run(s) per variant, $TIME s each, alternating without/with ..." >&2
for r in $(seq 1 "$runs"); do
  run without "$r"
  run with "$r"
done

python3 - "$work" "$runs" "$TIME" "$SIZE" "$POLL_S" "${STRATA_FSYNC:-default (always)}" <<'PY'
import glob, json, os, statistics, sys
work, runs, time_s, size, poll_s, fsync = sys.argv[1:]
def med(variant, field):
    vals = []
    for f in sorted(glob.glob(os.path.join(work, f"{variant}-*.json"))):
        try:
            vals.append(float(json.load(open(f))["rates"][field]))
        except Exception:
            pass
    return statistics.median(vals) if vals else None
polls = failed = 0
for f in glob.glob(os.path.join(work, "with-*.polls")):
    lines = open(f).read().split("\n")[:-1]
    polls += len(lines)
    failed += sum(l != "ok" for l in lines)
cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
fmt = lambda v: "n/a" if v is None else f"{v:.0f}"
ratio = lambda a, b: "n/a" if a is None or b is None or a == 0 else f"{b / a:.3f}"
print()
print(f"CPU: {cpu}; {runs} run(s) per variant (medians); perf -x 1 -y 1 -z {time_s} -s {size}; "
      f"fsync {fsync}; poll every {poll_s} s ({polls} polls, {failed} failed)")
print(f"| {'variant':<38} | {'published msg/s':>15} | {'consumed msg/s':>15} |")
print(f"|{'-' * 40}|{'-' * 17}|{'-' * 17}|")
rows = {}
for v, label in (("without", "without console"), ("with", "with console polled")):
    rows[v] = (med(v, "published_msg_s"), med(v, "consumed_msg_s"))
    print(f"| {label:<38} | {fmt(rows[v][0]):>15} | {fmt(rows[v][1]):>15} |")
print(f"| {'ratio with/without (goal >= 0.97)':<38} | {ratio(rows['without'][0], rows['with'][0]):>15} | "
      f"{ratio(rows['without'][1], rows['with'][1]):>15} |")
PY
