#!/usr/bin/env bash
# What steerd costs at the scale it is for (issue 33): steerd end to end on
# a simulated host (tests/sim/simhost.c, docs/BENCHMARKS.md "The simulated
# host") whose load moves, at the real sample period (100 ms).
#
#   scale.sh BUILD OUTDIR
#
# 1. The long run: 1,024 CPUs in 64 LLCs of 16, 200 opted-in cgroups, 10,000
#    threads, SCALE_SECONDS (600): per tick CPU and wall time (median, p99,
#    worst, with 95% bootstrap intervals), RSS and descriptors over the run,
#    actions by kind and policy, the checker's drops.
# 2. The same host in 128 LLCs of 8, SCALE_SECONDS_B (180).
# 3. The sweep, SWEEP_SECONDS (60) each: CPUs 64, 256, 1,024, 4,096 at 10,000
#    threads; threads 1,000, 10,000, 50,000 at 1,024 CPUs.
#
# Writes OUTDIR/scale/<run>/ (ticks.txt, summary.json, report.json, logs)
# and OUTDIR/scale.md, the report's section, with the targets: median tick
# at most 1 ms of CPU, p99 at most 2x the median, the worst at most 4x, RSS
# at most 32 MB and flat, descriptors flat, nothing dropped, every kind of
# action. A target is met when its interval says so, missed when it says
# the opposite, else "can't tell".
set -euo pipefail
BUILD=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
TOP=$(cd "$(dirname "$0")/../.." && pwd)
LONG=${SCALE_SECONDS:-600} LONG_B=${SCALE_SECONDS_B:-180} SWEEP=${SWEEP_SECONDS:-60}
W=$OUT/scale
mkdir -p "$W"
say() { echo "scale: $*" >&2; }

run() { # run NAME CPUS LLC CGROUPS THREADS SECONDS
        local name=$1
        say "$name: $2 CPUs in LLCs of $3, $4 cgroups, $5 threads, $6 s"
        bash "$TOP/tests/sim/run-sim.sh" "$BUILD" "$W/$name" "$2" "$3" "$4" "$5" "$6"
        python3 "$TOP/tests/bench/scale-report.py" "$W/$name/ticks.txt" "$W/$name/summary.json" \
                --warmup-s "$((${6} >= 120 ? 30 : 10))" >"$W/$name/report.json"
}

run long 1024 16 200 10000 "$LONG"
run llc8 1024 8 200 10000 "$LONG_B"
for c in 64 256 1024 4096; do
        run "cpus$c" "$c" 16 200 10000 "$SWEEP"
done
for t in 1000 50000; do
        run "threads$t" 1024 16 200 "$t" "$SWEEP"
done
python3 "$TOP/tests/bench/scale-section.py" "$W" >"$OUT/scale.md"
say "wrote $OUT/scale.md"
