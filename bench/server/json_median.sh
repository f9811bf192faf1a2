# Sourced by the server benchmarks (compare.sh, tls_bench.sh).
# json_median DIGITS FIELD FILES...: the median of FIELD (a dotted path, e.g.
# rates.consumed_msg_s) over the JSON documents FILES (`strata perf --json`
# summaries), with DIGITS decimals; "n/a" when no file has it.
json_median() {
  local digits=$1 path=$2
  shift 2
  python3 - "$digits" "$path" "$@" <<'PY'
import json, statistics, sys
digits, path = int(sys.argv[1]), sys.argv[2].split(".")
vals = []
for f in sys.argv[3:]:
    try:
        v = json.load(open(f))
        for p in path:
            v = v[p]
        vals.append(float(v))
    except Exception:
        pass
print(f"{statistics.median(vals):.{digits}f}" if vals else "n/a")
PY
}
