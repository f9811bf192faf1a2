#!/usr/bin/env bash
# TLS against plain TCP on the stream protocol, in one run: strata serve and
# RabbitMQ 3.10.8 (Debian's, bench/server/rabbitmq.sh), each with a plain and
# a TLS listener on loopback, driven by the same `strata perf`. Prints one
# table of medians.
#   bench/server/tls_bench.sh BUILD_DIR [RUNS]
# Rows: publish (1 producer, confirmed msg/s), consume (1 consumer reading
# CONSUME_MSGS stored messages from the first offset), the time to open a
# connection and its TLS handshake's part, the server's CPU time per MB consumed
# (from /proc), and resident memory per idle
# connection (CONNS connections held by the stock JS client,
# bench/server/tls_conns.mjs). Runs alternate plain and TLS, and the servers.
# Environment: TIME (seconds of the publish run, default 5), SIZE (message
# bytes, default 100), CONSUME_MSGS (default 2000000), CONNS (default 200),
# STRATA_FSYNC (default never: RabbitMQ does not fsync on its write path).
set -euo pipefail

build=${1:?usage: tls_bench.sh BUILD_DIR [RUNS]}
runs=${2:-3}
TIME=${TIME:-5}
SIZE=${SIZE:-100}
CONSUME_MSGS=${CONSUME_MSGS:-2000000}
CONNS=${CONNS:-200}
STRATA_FSYNC=${STRATA_FSYNC:-never}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/server/json_median.sh
source "$here/json_median.sh"
source "$here/../../scripts/localhost_certs.sh"
strata=$(cd "$build" && pwd)/strata
[ -x "$strata" ] || { echo "tls_bench.sh: no strata binary in $build" >&2; exit 2; }

work=$(mktemp -d /tmp/strata-tls-bench.XXXXXX)
strata_pid=""
cleanup() {
  [ -n "$strata_pid" ] && kill -TERM "$strata_pid" 2>/dev/null && wait "$strata_pid" 2>/dev/null || true
  "$here/rabbitmq.sh" stop "$work/rabbit" || true
  rm -rf "$work"
}
trap cleanup EXIT

# A CA and a server certificate for localhost and 127.0.0.1.
certs=$work/certs
mkdir -p "$certs"
make_localhost_certs "$certs" bench-ca
chmod 644 "$certs"/*

echo "starting strata serve (fsync $STRATA_FSYNC, plain and TLS listeners) ..." >&2
mkdir -p "$work/strata"
cat >"$work/strata.json" <<JSON
{"log": {"fsync": "$STRATA_FSYNC"},
 "tls": {"listen": "127.0.0.1:0", "cert_file": "$certs/srv.pem", "key_file": "$certs/srv.key"}}
JSON
"$strata" serve --config "$work/strata.json" --data-dir "$work/strata" --listen 127.0.0.1:0 \
  >"$work/strata.out" 2>"$work/strata.err" &
strata_pid=$!
for _ in $(seq 1 300); do
  grep -q 'tls on' "$work/strata.out" 2>/dev/null && break
  kill -0 "$strata_pid" 2>/dev/null || { cat "$work/strata.err" >&2; exit 1; }
  sleep 0.1
done
port_strata_plain=$(sed -n 's/^strata serve: listening on .*:\([0-9]*\)$/\1/p' "$work/strata.out")
port_strata_tls=$(sed -n 's/^strata serve: tls on .*:\([0-9]*\)$/\1/p' "$work/strata.out")
[ -n "$port_strata_plain" ] && [ -n "$port_strata_tls" ] || {
  echo "tls_bench.sh: strata serve did not start" >&2
  exit 1
}

echo "starting RabbitMQ 3.10.8 (plain and TLS stream listeners) ..." >&2
port_rabbitmq_plain=$(RMQ_TLS_CERT=$certs/srv.pem RMQ_TLS_KEY=$certs/srv.key RMQ_TLS_CA=$certs/ca.pem \
  "$here/rabbitmq.sh" start "$work/rabbit")
port_rabbitmq_tls=$("$here/rabbitmq.sh" tls-port "$work/rabbit")
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port_rabbitmq_tls") 2>/dev/null && break
  sleep 0.1
done
pid_strata=$strata_pid
pid_rabbitmq=$("$here/rabbitmq.sh" pid "$work/rabbit")

# perf SERVER MODE NAME ARGS...: one run, its JSON summary in $work/NAME.json.
perf() {
  local server=$1 mode=$2 name=$3
  shift 3
  local port_var="port_${server}_${mode}" tls=()
  [ "$mode" = tls ] && tls=(--tls --tls-ca-file "$certs/ca.pem" --tls-server-name localhost)
  "$strata" --json perf --port "${!port_var}" "${tls[@]}" --size "$SIZE" "$@" \
    >"$work/$name.json" 2>"$work/$name.err" || {
    echo "tls_bench.sh: run $name failed:" >&2
    tail -5 "$work/$name.err" >&2
  }
}
median() { json_median 2 "$@"; }  # median FIELD FILES...
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Alternating: neither mode nor server always runs right after another's load.
order() { if (($1 % 2)); then echo "tls plain"; else echo "plain tls"; fi; }
declare -A result
for r in $(seq 1 "$runs"); do
  for server in strata rabbitmq; do
    echo "round $r: $server ..." >&2
    # The stored messages the consume runs read, published once per round.
    perf "$server" plain "fill-$server-$r" --stream "tlsb-consume-$r" --producers 2 --consumers 0 \
      --messages "$CONSUME_MSGS"
    for mode in $(order "$r"); do
      perf "$server" "$mode" "pub-$server-$mode-$r" --stream "tlsb-pub-$mode-$r" --delete-stream \
        --producers 1 --consumers 0 --time "$TIME"
      # The server's CPU time during the consume (user + system, from
      # /proc): what TLS costs it, whatever the client on the same cores.
      pid_var="pid_$server"
      cpu0=$(cpu_ticks "${!pid_var}")
      perf "$server" "$mode" "consume-$server-$mode-$r" --stream "tlsb-consume-$r" --producers 0 \
        --consumers 1 --offset first --messages "$CONSUME_MSGS"
      cpu1=$(cpu_ticks "${!pid_var}")
      python3 -c "import json; d=json.load(open('$work/consume-$server-$mode-$r.json'))
mb = d['rates']['consumed_mb_s'] * d['duration_s']
print(json.dumps({'cpu_ms_per_mb': ($cpu1 - $cpu0) * 1000 / $(getconf CLK_TCK) / mb if mb else 'n/a'}))" \
        >"$work/cpu-$server-$mode-$r.json" 2>/dev/null || echo '{"cpu_ms_per_mb": "n/a"}' \
        >"$work/cpu-$server-$mode-$r.json"
      # Idle connections: the server's resident memory with them, less before.
      before=$(rss_kib "${!pid_var}")
      ca=()
      [ "$mode" = tls ] && ca=("$certs/ca.pem")
      port_var="port_${server}_${mode}"
      coproc CONNS_PROC { node "$here/tls_conns.mjs" "$server" "${!port_var}" "$CONNS" "${ca[@]}"; }
      read -r ready <&"${CONNS_PROC[0]}" || true
      sleep 2
      after=$(rss_kib "${!pid_var}")
      eval "exec ${CONNS_PROC[1]}>&-"
      wait "$CONNS_PROC_PID" 2>/dev/null || true
      echo "{\"rss_per_conn_kib\": $(python3 -c "print(($after - $before) / $CONNS)"), \"ready\": \"$ready\"}" \
        >"$work/rss-$server-$mode-$r.json"
      sleep 1
    done
  done
done

row() {  # row LABEL PREFIX FIELD
  local label=$1 prefix=$2 field=$3
  local line="| $label"
  for server in strata rabbitmq; do
    for mode in plain tls; do
      files=()
      for r in $(seq 1 "$runs"); do files+=("$work/$prefix-$server-$mode-$r.json"); done
      result["$prefix|$server|$mode"]=$(median "$field" "${files[@]}")
      line="$line | ${result["$prefix|$server|$mode"]}"
    done
    ratio=$(python3 -c "a='${result["$prefix|$server|tls"]}'; b='${result["$prefix|$server|plain"]}'
print('n/a' if 'n/a' in (a, b) or float(b) == 0 else f'{float(a)/float(b):.2f}')")
    line="$line | $ratio"
  done
  echo "$line |"
}
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo
echo "CPU: $cpu ($(nproc) vCPU); $runs runs, medians; message $SIZE B; strata fsync $STRATA_FSYNC"
echo
echo "| | strata plain | strata TLS | TLS / plain | RabbitMQ plain | RabbitMQ TLS | TLS / plain |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row "publish, confirmed msg/s" pub rates.confirmed_msg_s
row "consume from first, msg/s" consume rates.consumed_msg_s
row "consume from first, MB/s" consume rates.consumed_mb_s
row "server CPU per MB consumed, ms" cpu cpu_ms_per_mb
row "open a connection, ms (p50)" pub connections.open_ms.p50
row "RSS per idle connection, KiB" rss rss_per_conn_kib
tls_line=$(python3 -c "import json; c=json.load(open('$work/pub-strata-tls-1.json'))['connections']; print(c['tls_version'], c['tls_cipher'])" 2>/dev/null || echo "?")
hs_strata=$(median connections.tls_handshake_ms.p50 "$work"/pub-strata-tls-*.json)
hs_rabbit=$(median connections.tls_handshake_ms.p50 "$work"/pub-rabbitmq-tls-*.json)
echo
echo "TLS session: $tls_line; TLS handshake p50: strata $hs_strata ms, RabbitMQ $hs_rabbit ms"
ulp=$(cat /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null || echo "?")
echo "the kernel's TCP upper-layer protocols here: $ulp"
if [[ " $ulp " == *" tls "* ]]; then
  echo "kernel TLS is available: strata's TLS deliveries go by SSL_sendfile where OpenSSL was built for it"
  echo "(/status server.tls.kernel_send_connections says whether they did)"
else
  echo "no kernel TLS here (no \"tls\"): strata encrypts deliveries over TLS in user space"
fi
