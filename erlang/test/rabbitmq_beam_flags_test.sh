#!/usr/bin/env bash
# bench/erlang/ra_meta_bench.sh --beam rabbitmq claims to run the BEAM with
# the emulator flags Debian's rabbitmq-server starts it with. This checks
# that claim against the installed package's sbin/rabbitmq-env: the
# scheduler busy-wait threshold and bind type it defaults to, and that its
# server arguments pass them as +sbwt, +sbwtdcpu, +sbwtdio and +stbt.
# Exit 77 (skipped) without rabbitmq-server.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
env_file=$(ls /usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-env 2>/dev/null | head -1 || true)
if [ -z "$env_file" ]; then
  echo "rabbitmq-server is not installed (Debian: rabbitmq-server): skipped"
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
value_of() {
  # DEFAULT_X=value or DEFAULT_X="value"
  sed -n "s/^$1=\"\\{0,1\\}\\([^\"]*\\)\"\\{0,1\\}\$/\\1/p" "$env_file" | head -1
}
busy_wait=$(value_of DEFAULT_SCHEDULER_BUSY_WAIT_THRESHOLD)
bind_type=$(value_of DEFAULT_SCHEDULER_BIND_TYPE)
[ -n "$busy_wait" ] || fail "$env_file: no DEFAULT_SCHEDULER_BUSY_WAIT_THRESHOLD"
[ -n "$bind_type" ] || fail "$env_file: no DEFAULT_SCHEDULER_BIND_TYPE"
args=$(grep '^SERVER_ERL_ARGS=' "$env_file" || true)
[ -n "$args" ] || fail "$env_file: no SERVER_ERL_ARGS"
expected=""
for flag in sbwt sbwtdcpu sbwtdio; do
  [[ $args == *"+$flag \$RABBITMQ_SCHEDULER_BUSY_WAIT_THRESHOLD"* ]] ||
    fail "$env_file: SERVER_ERL_ARGS does not pass +$flag the busy-wait threshold: $args"
  expected+="+$flag $busy_wait "
done
[[ $args == *"+stbt \$RABBITMQ_SCHEDULER_BIND_TYPE"* ]] ||
  fail "$env_file: SERVER_ERL_ARGS does not pass +stbt the bind type: $args"
expected+="+stbt $bind_type"
got=$("$repo/bench/erlang/ra_meta_bench.sh" --print-rabbitmq-flags)
[ "$got" = "$expected" ] || fail "ra_meta_bench.sh --beam rabbitmq runs '$got'; $env_file gives '$expected'"
# The BEAM takes them.
erl $got -noshell -eval 'halt(0).' || fail "erl $got does not start"
echo "ok: ra_meta_bench.sh --beam rabbitmq runs the BEAM with '$got', as $env_file"
