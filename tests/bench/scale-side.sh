#!/usr/bin/env bash
# Two builds of steerd side by side on the simulated host (issue 33):
#
#   scale-side.sh BASE_BUILD NEW_BUILD OUTDIR [ROUNDS] [SECONDS]
#
# ROUNDS (3) rounds of one run each, SECONDS (60) a run, the order swapped
# each round so that a drift of the shared machine falls on both; each run
# is tests/sim/run-sim.sh on 1,024 CPUs in 64 LLCs of 16, 200 cgroups,
# 10,000 threads (SIM_ARGS changes that), its first WARMUP_TICKS (150)
# ticks left out. Writes OUTDIR/rR-{base,new}-ticks.txt.gz and
# OUTDIR/summary.txt: per run the median, p99 and worst CPU time of a tick
# and the descriptors; then new/base with its 95% interval
# (steerd-ratio-ci) over the rounds' medians, the figure to quote, and over
# the ticks paired by index (too narrow: ticks are not independent; shown
# for the direction only).
set -euo pipefail
BASE=$1 NEW=$2 OUT=$3 ROUNDS=${4:-3} SECONDS_RUN=${5:-60}
HERE=$(cd "$(dirname "$0")" && pwd)
WARMUP=${WARMUP_TICKS:-150}
read -r -a ARGS <<<"${SIM_ARGS:-1024 16 200 10000}"
RATIO=$NEW/steerd-ratio-ci
[ -x "$RATIO" ] || RATIO=$BASE/steerd-ratio-ci
mkdir -p "$OUT"
: >"$OUT/summary.txt"

one() { # round build-name build-dir
        local d="$OUT/r$1-$2"
        rm -rf "$d"
        bash "$HERE/../sim/run-sim.sh" "$3" "$d" "${ARGS[@]}" "$SECONDS_RUN" >/dev/null 2>&1 || {
                echo "scale-side: run $1 $2 failed: $(tail -3 "$d/steerd.log" 2>/dev/null)" >&2
                exit 1
        }
        gzip -c "$d/ticks.txt" >"$OUT/r$1-$2-ticks.txt.gz"
        local fds
        fds=$(awk '!/^#/ { f = $15 } END { print f }' "$d/ticks.txt")
        awk -v w="$WARMUP" '!/^#/ && $1 >= w { print $4 / 1000 }' "$d/ticks.txt" | sort -g |
                awk -v r="$1" -v b="$2" -v f="$fds" '{ c[n++] = $1 }
                END { printf "round %s %s: %d ticks, cpu median %.2f ms, p99 %.2f, max %.2f; fds %d\n",
                      r, b, n, c[int(n / 2)], c[int(n * 0.99)], c[n - 1], f }' >>"$OUT/summary.txt"
}

for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then
                one "$r" base "$BASE"
                one "$r" new "$NEW"
        else
                one "$r" new "$NEW"
                one "$r" base "$BASE"
        fi
done

median_of() { # round build
        awk -v r="$1" -v b="$2" '$1 == "round" && $2 == r && $3 == b":" { print $8 }' "$OUT/summary.txt"
}
{
        printf 'per-round medians new/base: '
        for r in $(seq "$ROUNDS"); do echo "$(median_of "$r" new) $(median_of "$r" base)"; done |
                "$RATIO" --lower-is-better
        printf 'per-tick pairs new/base: '
        for r in $(seq "$ROUNDS"); do
                paste <(zcat "$OUT/r$r-new-ticks.txt.gz" | awk -v w="$WARMUP" '!/^#/ && $1 >= w { print $4 }') \
                        <(zcat "$OUT/r$r-base-ticks.txt.gz" | awk -v w="$WARMUP" '!/^#/ && $1 >= w { print $4 }') |
                        awk 'NF == 2 && $1 > 0 && $2 > 0'
        done | "$RATIO" --lower-is-better
} >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
