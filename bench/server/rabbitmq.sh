#!/usr/bin/env bash
# Runs Debian's RabbitMQ (3.10.8, rabbitmq_stream plugin) on loopback only,
# its data, logs, cookie and epmd private to DIR, so several can run on one
# machine and nothing outlives `stop`.
#   bench/server/rabbitmq.sh start DIR [STREAM_PORT]   prints the stream port
#   bench/server/rabbitmq.sh stop DIR
#   bench/server/rabbitmq.sh pid DIR                   the Erlang VM's pid (for RSS)
#   bench/server/rabbitmq.sh tls-port DIR              the TLS stream port (see below)
# With RMQ_TLS_CERT, RMQ_TLS_KEY and RMQ_TLS_CA (PEM files) set at start, the
# stream plugin also listens with TLS (RabbitMQ's stream.listeners.ssl) on a
# free port, client certificates not asked for.
set -euo pipefail

RMQ_BIN=/usr/lib/rabbitmq/bin
cmd=${1:?usage: rabbitmq.sh start|stop|pid DIR [STREAM_PORT]}
dir=${2:?usage: rabbitmq.sh start|stop|pid DIR [STREAM_PORT]}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The environment every rabbitmq command of this instance needs.
load_env() {
  # shellcheck disable=SC1091
  source "$dir/env"
  export HOME="$dir/home" ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$EPMD_PORT"
  export RABBITMQ_NODENAME="$NODE" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_DIST_PORT="$DIST_PORT"
  export RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log"
  export RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
  export RABBITMQ_PID_FILE="$dir/rabbitmq.pid"
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} -start_epmd false"
  export RABBITMQ_CTL_ERL_ARGS="-start_epmd false"
}

case "$cmd" in
  start)
    mkdir -p "$dir/home" "$dir/mnesia" "$dir/log"
    dir=$(cd "$dir" && pwd)
    stream_port=${3:-$(free_port)}
    epmd_port=$(free_port)
    dist_port=$(free_port)
    tls_port=""
    [ -n "${RMQ_TLS_CERT:-}" ] && tls_port=$(free_port)
    cat >"$dir/env" <<ENV
NODE=rabbit-$stream_port@localhost
STREAM_PORT=$stream_port
TLS_PORT=$tls_port
EPMD_PORT=$epmd_port
DIST_PORT=$dist_port
ENV
    cat >"$dir/rabbitmq.conf" <<CONF
listeners.tcp = none
stream.listeners.tcp.1 = 127.0.0.1:$stream_port
stream.advertised_host = 127.0.0.1
stream.advertised_port = $stream_port
log.console = false
log.file.level = warning
CONF
    if [ -n "$tls_port" ]; then
      cat >>"$dir/rabbitmq.conf" <<CONF
stream.listeners.ssl.1 = 127.0.0.1:$tls_port
ssl_options.cacertfile = ${RMQ_TLS_CA:?RMQ_TLS_CA is needed with RMQ_TLS_CERT}
ssl_options.certfile = $RMQ_TLS_CERT
ssl_options.keyfile = ${RMQ_TLS_KEY:?RMQ_TLS_KEY is needed with RMQ_TLS_CERT}
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
ssl_options.versions.1 = tlsv1.3
ssl_options.versions.2 = tlsv1.2
CONF
    fi
    echo '[rabbitmq_stream].' >"$dir/enabled_plugins"
    load_env
    epmd -port "$epmd_port" -address 127.0.0.1 >"$dir/log/epmd.out" 2>&1 &
    echo $! >"$dir/epmd.pid"
    "$RMQ_BIN/rabbitmq-server" >"$dir/log/server.out" 2>&1 &
    echo $! >"$dir/server-script.pid"
    if ! "$RMQ_BIN/rabbitmqctl" -q wait "$RABBITMQ_PID_FILE" --timeout 120 >"$dir/log/wait.out" 2>&1; then
      echo "rabbitmq.sh: RabbitMQ did not start; see $dir/log" >&2
      exit 1
    fi
    # The stream listener comes up after the node reports started.
    for _ in $(seq 1 300); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$stream_port") 2>/dev/null; then
        echo "$stream_port"
        exit 0
      fi
      sleep 0.1
    done
    echo "rabbitmq.sh: stream port $stream_port not listening; see $dir/log" >&2
    exit 1
    ;;
  stop)
    [ -f "$dir/env" ] || exit 0
    dir=$(cd "$dir" && pwd)
    load_env
    "$RMQ_BIN/rabbitmqctl" -q stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1 || {
      [ -f "$RABBITMQ_PID_FILE" ] && kill "$(cat "$RABBITMQ_PID_FILE")" 2>/dev/null || true
    }
    [ -f "$dir/epmd.pid" ] && kill "$(cat "$dir/epmd.pid")" 2>/dev/null || true
    rm -f "$dir/epmd.pid"
    ;;
  pid)
    cat "$dir/rabbitmq.pid"
    ;;
  tls-port)
    # shellcheck disable=SC1091
    source "$dir/env"
    echo "$TLS_PORT"
    ;;
  *)
    echo "usage: rabbitmq.sh start|stop|pid DIR [STREAM_PORT]" >&2
    exit 2
    ;;
esac
