#!/usr/bin/env bash
# The whole test suite: first under AddressSanitizer + UndefinedBehaviorSanitizer
# (randomized tests at reduced iteration counts), then the regular build. Real
# servers (s3rver, etcd, haproxy, Erlang) are started by the tests themselves
# on 127.0.0.1. Ends with ctest's summary line of the regular run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"
# ccache keys on absolute paths and the build directory by default; a clean
# clone at another path (CI) would then miss a cache kept under $HOME. Paths
# below the clone are hashed relative to it, the working directory is not
# hashed, and the compiler is identified by content, not mtime.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$here}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
export CCACHE_COMPILERCHECK="${CCACHE_COMPILERCHECK:-content}"

echo "== sanitizer build (ASan+UBSan) =="
# A failed build shows its errors (the tail of its log), not only a status.
build_or_show() {
  local blog
  blog="$(mktemp /tmp/strata-build-XXXXXX.log)"
  if ! "$here/scripts/build.sh" "$@" >"$blog" 2>&1; then
    grep -E "error|FAILED" -A4 "$blog" | head -n 80
    echo "build of $1 failed; full log in $blog" >&2
    exit 1
  fi
  rm -f "$blog"
}
build_or_show "$here/build-asan" -DSTRATA_SANITIZE=ON -DSTRATA_BENCH=OFF
log="$here/build-asan/ctest.log"
if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    STRATA_TEST_SCALE="${STRATA_ASAN_SCALE:-0.2}" \
    ctest --test-dir "$here/build-asan" --output-on-failure -j "$jobs" >"$log" 2>&1; then
  tail -n 200 "$log"
  echo "sanitizer tests failed; full log in $log" >&2
  exit 1
fi
grep -E "tests passed|Total Test time" "$log"
echo "sanitizer stage: ${SECONDS} s (CI budget for the whole run: 45 min)"

echo "== regular build =="
# Line tables only and tests without debug info: a CI build is read by
# backtraces (function, file and line), not by a debugger; full -g costs a
# third of the compile time.
build_or_show "$here/build" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  "-DSTRATA_TEST_OPTIONS=-O1;-g0"
echo "regular build done at ${SECONDS} s"
ctest --test-dir "$here/build" --output-on-failure -j "$jobs"
