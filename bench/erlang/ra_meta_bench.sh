#!/usr/bin/env bash
# The Erlang binding (strata_ra_log_meta) against a reproduction of Ra's
# DETS-based ra_log_meta (dets_log_meta.erl), side by side in one BEAM:
# store_sync throughput and latency with many servers, store (cast)
# throughput, fetch latency against a plain ETS read, memory for 10 000
# servers. Results: docs/BENCHMARKS.md (issue 28).
#   ninja -C BUILD_DIR ra_meta_bench
#   bench/erlang/ra_meta_bench.sh BUILD_DIR [options]    (--help lists them)
# The data directories go under --dir (default /tmp), which must be on a real
# disk for the fsyncs to be real (not tmpfs such as /dev/shm).
# Environment: STRATA_RA_APP, another build of the binding to measure (an
# application directory holding ebin/ and priv/; default
# BUILD_DIR/erlang/strata_ra).
#
# --beam default|rabbitmq (first option only): the BEAM's own emulator flags
# (the default), or the ones Debian's rabbitmq-server 3.10.8 starts its BEAM
# with, as Ra runs inside RabbitMQ: schedulers that never busy-wait (normal,
# dirty CPU and dirty I/O) and are bound to the CPUs (`db`). They change the
# DETS peer's rate by half on a 2-vCPU machine (docs/BENCHMARKS.md).
# erlang/test/rabbitmq_beam_flags_test.sh checks them against the installed
# package's sbin/rabbitmq-env; --print-rabbitmq-flags prints them.
set -euo pipefail

RABBITMQ_BEAM_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none +stbt db"
if [ "${1:-}" = "--print-rabbitmq-flags" ]; then
  echo "$RABBITMQ_BEAM_FLAGS"
  exit 0
fi

build=${1:?usage: ra_meta_bench.sh BUILD_DIR [--beam default|rabbitmq] [options]}
shift
beam=default
if [ "${1:-}" = "--beam" ]; then
  beam=${2:?--beam needs default or rabbitmq}
  shift 2
fi
case $beam in
  default) beam_flags="" ;;
  rabbitmq) beam_flags=$RABBITMQ_BEAM_FLAGS ;;
  *) echo "ra_meta_bench.sh: --beam $beam: expected default or rabbitmq" >&2; exit 2 ;;
esac
# The header names them (ra_meta_bench:header/2).
export RA_META_BENCH_BEAM="$beam${beam_flags:+ ($beam_flags)}"
build=$(cd "$build" && pwd)
ebin=${STRATA_RA_APP:-$build/erlang/strata_ra}/ebin
bench=$build/bench/erlang
for f in "$ebin/strata_ra_log_meta.beam" "$bench/ra_meta_bench.beam" "$bench/dets_log_meta.beam"; do
  [ -f "$f" ] || { echo "ra_meta_bench.sh: $f is missing (ninja -C $build ra_meta_bench)" >&2; exit 2; }
done
if [ "${1:-}" = "--help" ]; then
  exec erl -noshell -pa "$ebin" -pa "$bench" -eval 'io:format("~s", [ra_meta_bench:usage()]), halt().'
fi
# shellcheck disable=SC2086 # the flags are words
exec erl $beam_flags -noshell -pa "$ebin" -pa "$bench" -eval 'ra_meta_bench:main().' -extra "$@"
