#!/usr/bin/env bash
# Import throughput of `strata import rabbitmq` against a raw copy of the
# same files (`cp -r` then `sync`: the physical limit of moving them), on
# osiris files written by bench/import/osiris_gen.py in two shapes: large
# chunks (100 messages of 1000 bytes, as a batching publisher makes them) and
# small ones (1 message of 100 bytes, as a publisher awaiting each confirm
# makes them: the cost per chunk). The node imports with tiering off, so
# both sides write the data once; both read from the page cache (the files
# were just written).
#   bench/import/import_rabbitmq.sh BUILD_DIR [RUNS]
# Environment: LARGE_MB (default 1024), SMALL_MB (default 64).
# Prints the median seconds and MB/s of each over RUNS (default 3) runs.
set -euo pipefail

build=${1:?usage: import_rabbitmq.sh BUILD_DIR [RUNS]}
runs=${2:-3}
LARGE_MB=${LARGE_MB:-1024}
SMALL_MB=${SMALL_MB:-64}
here=$(cd "$(dirname "$0")" && pwd)
strata=$(cd "$build" && pwd)/strata
[ -x "$strata" ] || { echo "import_rabbitmq.sh: no strata binary in $build" >&2; exit 2; }
work=$(mktemp -d /tmp/strata-import-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo '{"tiering": {"enabled": false}}' > "$work/node.json"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
calc() { awk "BEGIN {print $1}"; }
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); calc "$t1 - $t0"; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
printf '%-34s %10s %10s %10s %10s %8s\n' shape MB copy_s import_s import_MB/s ratio
for shape in "large $LARGE_MB 100 1000" "small $SMALL_MB 1 100"; do
  set -- $shape
  name=$1 mb=$2 per=$3 size=$4
  src="$work/src-$name"
  python3 "$here/osiris_gen.py" "$src" "$mb" "$per" "$size" > "$work/gen-$name.json"
  bytes=$(du -sb "$src/node" | cut -f1)
  copies=() imports=()
  for r in $(seq "$runs"); do
    rm -rf "$work/copy" "$work/data"
    sync
    copies+=("$(seconds bash -c "cp -r '$src/node' '$work/copy' && sync")")
    rm -rf "$work/copy"
    sync
    imports+=("$(seconds "$strata" import rabbitmq --config "$work/node.json" --data-dir "$work/data" \
      --rabbitmq-dir "$src/node" --definitions "$src/definitions.json" --json)")
    # The import must have brought everything in.
    "$strata" import rabbitmq --config "$work/node.json" --data-dir "$work/data" \
      --rabbitmq-dir "$src/node" --definitions "$src/definitions.json" --json |
      grep -q '"outcome":"exists"' || { echo "import_rabbitmq.sh: the import did not land" >&2; exit 1; }
  done
  c=$(printf '%s\n' "${copies[@]}" | median)
  i=$(printf '%s\n' "${imports[@]}" | median)
  printf '%-34s %10.0f %10.3f %10.3f %10.0f %8.2f\n' "$name ($per x $size B per chunk)" \
    "$(calc "$bytes / 1000000")" "$c" "$i" "$(calc "$bytes / 1000000 / $i")" "$(calc "$c / $i")"
done
