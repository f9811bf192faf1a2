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
set -euo pipefail

build=${1:?usage: ra_meta_bench.sh BUILD_DIR [options]}
shift
build=$(cd "$build" && pwd)
ebin=${STRATA_RA_APP:-$build/erlang/strata_ra}/ebin
bench=$build/bench/erlang
for f in "$ebin/strata_ra_log_meta.beam" "$bench/ra_meta_bench.beam" "$bench/dets_log_meta.beam"; do
  [ -f "$f" ] || { echo "ra_meta_bench.sh: $f is missing (ninja -C $build ra_meta_bench)" >&2; exit 2; }
done
if [ "${1:-}" = "--help" ]; then
  exec erl -noshell -pa "$ebin" -pa "$bench" -eval 'io:format("~s", [ra_meta_bench:usage()]), halt().'
fi
exec erl -noshell -pa "$ebin" -pa "$bench" -eval 'ra_meta_bench:main().' -extra "$@"
