#!/usr/bin/env python3
"""Two builds of strata side by side: the log's and the node's benchmarks.

    bench/compare_builds.py OLD_BUILD NEW_BUILD [--rounds N] [--quick]

Runs, for each round, `log_bench append`, `log_bench read` and
`node_bench hot` of both builds, alternating which goes first, and prints
one table of medians over the rounds with the ratio NEW / OLD. Each build's
own figures are already side by side with their physical peer (raw write,
raw read, tiering off), so the table also shows those ratios: a change in
the machine between two runs moves the peer too. Both build directories
need STRATA_BENCH=ON (bench/log/log_bench, bench/node/node_bench). The
server is compared with bench/server/compare.sh and PEER_BUILD.
--quick: smaller runs (a smoke test of the script, not figures).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    last = [line for line in out.splitlines() if line.strip()][-1]
    if last.startswith("json: "):
        last = last[len("json: "):]
    return json.loads(last)


def log_append(build, quick):
    reps = "1" if quick else "3"
    d = run_json([f"{build}/bench/log/log_bench", "append", "--reps", reps])
    out = {}
    for row in d["append"]:
        key = f"log append fsync={row['fsync']} {row['record_size']} B"
        out[key + " (MB/s)"] = row["log_mb_per_s"]
        out[key + " (vs raw)"] = row["ratio"]
    return out


def log_read(build, quick):
    reps = "1" if quick else "5"
    d = run_json([f"{build}/bench/log/log_bench", "read", "--reps", reps])["read"]
    out = {}
    for k in ("chunks_verified", "records_verified"):
        out[f"log read {k} (MB/s)"] = d[k]["mb_per_s"]
        out[f"log read {k} (vs raw)"] = d[k]["ratio"]
    return out


def node_hot(build, quick):
    args = ["--rounds", "1"]
    if quick:
        args += ["--never-mib", "64", "--always-mib", "32"]
    d = run_json([f"{build}/bench/node/node_bench", "hot", "--json"] + args)
    out = {}
    for res in d["results"]:
        for mode, m in res["modes"].items():
            key = f"node hot fsync={res['fsync']} tiering {mode}"
            out[key + " (MB/s)"] = m["mb_per_s"]
            if "ratio_median" in m:
                out[key + " (vs off)"] = m["ratio_median"]
    return out


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    builds = {"old": os.path.abspath(a.old), "new": os.path.abspath(a.new)}
    figures = {"old": {}, "new": {}}
    for r in range(a.rounds):
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for bench in (log_append, log_read, node_hot):
            for which in order:
                print(f"round {r + 1}/{a.rounds}: {bench.__name__} of {which}", file=sys.stderr)
                for k, v in bench(builds[which], a.quick).items():
                    figures[which].setdefault(k, []).append(v)
    print(f"CPU: {cpu_name()}; {a.rounds} rounds, alternating; medians")
    print(f"old: {builds['old']}\nnew: {builds['new']}\n")
    print("| figure | old | new | new / old |")
    print("|---|---|---|---|")
    for k in figures["old"]:
        o = statistics.median(figures["old"][k])
        n = statistics.median(figures["new"].get(k, [float("nan")]))
        print(f"| {k} | {o:.3f} | {n:.3f} | {n / o if o else float('nan'):.3f} |")


if __name__ == "__main__":
    main()
