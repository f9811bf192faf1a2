#!/usr/bin/env bash
# strata serve vs RabbitMQ 3.10.8, both driven by `strata perf` with identical
# settings on this machine (loopback). Prints one table of medians.
#   bench/server/compare.sh BUILD_DIR [RUNS]
# BUILD_DIR holds the `strata` binary (with `serve` and `perf`). RUNS (default
# 3) runs per scenario and server; the table shows medians.
# Environment: TIME (seconds per timed run, default 5), SIZE (message bytes,
# default 100), RATE (msg/s of the latency run, default 10000), CONSUME_MSGS
# (messages read back in the consume run, default 2000000), STRATA_FSYNC
# (strata's log fsync policy, default never — RabbitMQ does not fsync on its
# write path either), SCENARIOS (which to run, default
# "pub1 pub4 consume lat js"; rows of the others print n/a), PEER_BUILD (a
# build directory of another strata — e.g. an older commit's: its
# `strata serve` is the peer instead of RabbitMQ, driven by the same client,
# so that two versions are compared side by side in one run).
set -euo pipefail

build=${1:?usage: compare.sh BUILD_DIR [RUNS]}
runs=${2:-3}
TIME=${TIME:-5}
SIZE=${SIZE:-100}
RATE=${RATE:-10000}
CONSUME_MSGS=${CONSUME_MSGS:-2000000}
STRATA_FSYNC=${STRATA_FSYNC:-never}
SCENARIOS=" ${SCENARIOS:-pub1 pub4 consume lat js} "
want() { [[ "$SCENARIOS" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/server/json_median.sh
source "$here/json_median.sh"
strata=$(cd "$build" && pwd)/strata
[ -x "$strata" ] || { echo "compare.sh: no strata binary in $build" >&2; exit 2; }

peer_strata=""
if [ -n "${PEER_BUILD:-}" ]; then
  peer_strata=$(cd "$PEER_BUILD" && pwd)/strata
  [ -x "$peer_strata" ] || { echo "compare.sh: no strata binary in $PEER_BUILD" >&2; exit 2; }
fi
peer_name=${peer_strata:+strata ($PEER_BUILD)}
peer_name=${peer_name:-RabbitMQ}

work=$(mktemp -d /tmp/strata-compare.XXXXXX)
strata_pid=""
rabbit_pid=""
cleanup() {
  [ -n "$strata_pid" ] && kill -TERM "$strata_pid" 2>/dev/null && wait "$strata_pid" 2>/dev/null || true
  if [ -n "$peer_strata" ]; then
    [ -n "$rabbit_pid" ] && kill -TERM "$rabbit_pid" 2>/dev/null && wait "$rabbit_pid" 2>/dev/null || true
  else
    "$here/rabbitmq.sh" stop "$work/rabbit" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# start_serve BIN NAME: `strata serve` from BIN in $work/NAME; sets
# serve_pid and serve_port.
start_serve() {
  local bin=$1 name=$2
  mkdir -p "$work/$name"
  printf '{"log": {"fsync": "%s"}}\n' "$STRATA_FSYNC" >"$work/$name.json"
  "$bin" serve --config "$work/$name.json" --data-dir "$work/$name" --listen 127.0.0.1:0 \
    >"$work/$name.out" 2>"$work/$name.err" &
  serve_pid=$!
  for _ in $(seq 1 300); do
    grep -q 'listening on' "$work/$name.out" 2>/dev/null && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/$name.err" >&2; exit 1; }
    sleep 0.1
  done
  serve_port=$(sed -n 's/^strata serve: listening on .*:\([0-9]*\)$/\1/p' "$work/$name.out")
  [ -n "$serve_port" ] || { echo "compare.sh: strata serve ($bin) did not start" >&2; exit 1; }
}

# The peer keeps RabbitMQ's variable names (rabbit_*) whichever it is.
if [ -n "$peer_strata" ]; then
  echo "starting the peer, strata serve of $PEER_BUILD (fsync $STRATA_FSYNC) ..." >&2
  start_serve "$peer_strata" peer
  rabbit_pid=$serve_pid
  rabbit_port=$serve_port
else
  echo "starting RabbitMQ 3.10.8 ..." >&2
  rabbit_port=$("$here/rabbitmq.sh" start "$work/rabbit")
  rabbit_pid=$("$here/rabbitmq.sh" pid "$work/rabbit")
fi

echo "starting strata serve (fsync $STRATA_FSYNC) ..." >&2
start_serve "$strata" strata
strata_pid=$serve_pid
strata_port=$serve_port

# perf PORT NAME ARGS...: one run, its JSON summary in $work/NAME.json.
perf() {
  local port=$1 name=$2
  shift 2
  "$strata" --json perf --port "$port" --size "$SIZE" "$@" >"$work/$name.json" 2>"$work/$name.err" || {
    echo "compare.sh: run $name failed:" >&2
    tail -5 "$work/$name.err" >&2
    cat "$work/$name.json" >&2
  }
}
median() { json_median 1 "$@"; }  # median FIELD FILES...
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
# VmHWM counts file pages a process maps: strata's uploader maps the segment
# spans it uploads (page cache, not memory of its own), RabbitMQ reads its
# files. The private part, RssAnon, has no high-water mark: sampled 5 times a
# second, its peak goes to OUT.
sample_anon() {  # sample_anon PID OUT
  local peak=0 v
  while kill -0 "$1" 2>/dev/null; do
    v=$(awk '/^RssAnon/ {print $2}' "/proc/$1/status" 2>/dev/null || true)
    if [ -n "$v" ] && ((v > peak)); then
      peak=$v
      echo "$peak" >"$2"
    fi
    sleep 0.2
  done
}

sample_anon "$rabbit_pid" "$work/rabbit.anon" &
samplers="$!"
sample_anon "$strata_pid" "$work/strata.anon" &
samplers="$samplers $!"

declare -A result
# The servers of run R in the order they run: alternating, so neither always
# runs right after the other's load (RabbitMQ's schedulers spin for a while
# after work, which on 2 cores takes CPU from whatever runs next).
order() { if (($1 % 2)); then echo rabbitmq strata; else echo strata rabbitmq; fi; }
port_of() { if [ "$1" = strata ]; then echo "$strata_port"; else echo "$rabbit_port"; fi; }
scenario() {  # scenario KEY FIELD ARGS... (run on both servers, RUNS times)
  local key=$1 field=$2
  shift 2
  local r server
  for r in $(seq 1 "$runs"); do
    for server in $(order "$r"); do
      perf "$(port_of "$server")" "$key-$server-$r" --stream "cmp-$key-$r" --delete-stream "$@"
    done
  done
  for server in rabbitmq strata; do
    local files=()
    for r in $(seq 1 "$runs"); do files+=("$work/$key-$server-$r.json"); done
    for f in $field; do
      result["$key|$f|$server"]=$(median "$f" "${files[@]}")
    done
  done
}

if want pub1; then
  echo "publish, 1 producer ..." >&2
  scenario pub1 "rates.confirmed_msg_s" --producers 1 --consumers 0 --time "$TIME"
fi
if want pub4; then
  echo "publish, 4 producers ..." >&2
  scenario pub4 "rates.confirmed_msg_s" --producers 4 --consumers 0 --time "$TIME"
fi
# Publish once per server and run, then read everything back from the start.
want consume && echo "consume ..." >&2
for r in $(seq 1 "$runs"); do
  want consume || break
  for server in $(order "$r"); do
    port=$(port_of "$server")
    perf "$port" "fill-$server-$r" --stream "cmp-consume-$r" --producers 2 --consumers 0 \
      --messages "$CONSUME_MSGS"
    perf "$port" "consume-$server-$r" --stream "cmp-consume-$r" --producers 0 --consumers 1 \
      --offset first --time "$((TIME * 3))" --delete-stream
  done
done
for server in rabbitmq strata; do
  want consume || break
  files=()
  for r in $(seq 1 "$runs"); do files+=("$work/consume-$server-$r.json"); done
  result["consume|rates.consumed_msg_s|$server"]=$(median rates.consumed_msg_s "${files[@]}")
done
if want lat; then
  echo "latency at $RATE msg/s ..." >&2
  scenario lat "confirm_latency_us.p50 confirm_latency_us.p99 deliver_latency_us.p50 deliver_latency_us.p99" \
    --producers 1 --consumers 1 --rate "$RATE" --time "$TIME" --batch-size 10
fi

want js && echo "JS client (second opinion) ..." >&2
js="$here/js_perf.mjs"
for r in $(seq 1 "$runs"); do
  want js || break
  for server in $(order "$r"); do
    timeout 120 node "$js" --port "$(port_of "$server")" --messages "${JS_MSGS:-100000}" --size "$SIZE" \
      --stream "cmp-js-$r" >"$work/js-$server-$r.json" 2>"$work/js-$server-$r.err" ||
      tail -3 "$work/js-$server-$r.err" >&2
  done
done
for server in rabbitmq strata; do
  want js || break
  files=()
  for r in $(seq 1 "$runs"); do files+=("$work/js-$server-$r.json"); done
  result["js|confirmed_msg_s|$server"]=$(median confirmed_msg_s "${files[@]}")
  result["js|consumed_msg_s|$server"]=$(median consumed_msg_s "${files[@]}")
done

# shellcheck disable=SC2086
kill $samplers 2>/dev/null || true
rabbit_anon=$(cat "$work/rabbit.anon" 2>/dev/null || echo 0)
strata_anon=$(cat "$work/strata.anon" 2>/dev/null || echo 0)
rabbit_rss=$(rss_kib "$rabbit_pid"); rabbit_hwm=$(hwm_kib "$rabbit_pid")
strata_rss=$(rss_kib "$strata_pid"); strata_hwm=$(hwm_kib "$strata_pid")

row() {  # row LABEL KEY FIELD UNIT
  local r=${result["$2|$3|rabbitmq"]:-n/a} s=${result["$2|$3|strata"]:-n/a}
  local ratio
  ratio=$(python3 -c "import sys; a,b=sys.argv[1:]; print(f'{float(b)/float(a):.2f}' if a!='n/a' and b!='n/a' and float(a)>0 else 'n/a')" "$r" "$s")
  printf '| %-44s | %12s | %12s | %6s |\n' "$1 ($4)" "$r" "$s" "$ratio"
}
echo
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); runs: $runs (medians); size $SIZE B; time $TIME s; strata fsync $STRATA_FSYNC"
printf '| %-44s | %12s | %12s | %6s |\n' "scenario" "$peer_name" "strata" "ratio"
printf '|%s|%s|%s|%s|\n' "----------------------------------------------" "--------------" "--------------" "--------"
row "publish with confirms, 1 producer" pub1 rates.confirmed_msg_s "msg/s"
row "publish with confirms, 4 producers" pub4 rates.confirmed_msg_s "msg/s"
row "consume from first, 1 consumer" consume rates.consumed_msg_s "msg/s"
row "confirm latency p50 at $RATE msg/s" lat confirm_latency_us.p50 "us"
row "confirm latency p99 at $RATE msg/s" lat confirm_latency_us.p99 "us"
row "publish-to-deliver p50 at $RATE msg/s" lat deliver_latency_us.p50 "us"
row "publish-to-deliver p99 at $RATE msg/s" lat deliver_latency_us.p99 "us"
row "JS client: publish with confirms" js confirmed_msg_s "msg/s"
row "JS client: consume from first" js consumed_msg_s "msg/s"
printf '| %-44s | %12s | %12s | %6s |\n' "server RSS at the end (MiB)" "$((rabbit_rss / 1024))" "$((strata_rss / 1024))" \
  "$(python3 -c "print(f'{$strata_rss/$rabbit_rss:.2f}')")"
printf '| %-44s | %12s | %12s | %6s |\n' "server peak RSS (MiB)" "$((rabbit_hwm / 1024))" "$((strata_hwm / 1024))" \
  "$(python3 -c "print(f'{$strata_hwm/$rabbit_hwm:.2f}')")"
printf '| %-44s | %12s | %12s | %6s |\n' "server peak private RSS, RssAnon (MiB)" "$((rabbit_anon / 1024))" \
  "$((strata_anon / 1024))" "$(python3 -c "print(f'{$strata_anon/max($rabbit_anon,1):.2f}')")"
