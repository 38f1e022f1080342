#!/usr/bin/env bash
# steerd benchmarks (issue 6): the seed workloads under kernel default (twice:
# default and default-aa, the A/A pair that measures the run's noise), steerd
# observe / latency / balanced and static per-group pinning, side by side in
# rounds (each round runs every configuration once per workload, in an order
# shuffled per round from --seed), plus what steerd costs; writes a Markdown
# report with 95% intervals (steerd-ratio-ci), gnuplot PNGs and the raw
# figures (CSV) into the results folder.
#
#   tests/bench/run.sh [--quick] [--reps N] [--seed N] [--out DIR]
#
# Run as root on the benchmark machine (it creates cpuset cgroups, runs
# steerd, perf stat -a). Installs the Debian packages it needs, builds steerd
# into build-bench/. See docs/BENCHMARKS.md.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$BENCH_DIR/workloads.sh"

usage() {
        cat <<EOF
usage: tests/bench/run.sh [OPTIONS]

  --quick            an interval for ONE workload (hb4cg unless --workloads names
                     another): default, default-aa, latency, 8 rounds, no cost
                     measurements, the longer workload sizes of the runs before
                     issue 30 (hb4cg: ~8 min; every workload within 10 min)
  --reps N           rounds (default 8, also with --quick)
  --seed N           seed of the per-round shuffle of the configurations (default:
                     random; printed in meta.txt: the same seed gives the same order)
  --out DIR          results folder (default tests/bench/results/latest)
  --workloads LIST   comma-separated subset of: ${WORKLOADS[*]}
  --configs LIST     comma-separated subset of: default default-aa observe latency balanced
                     static (default-aa: the kernel default again, the A/A pair);
                     experiments may add variants of the steerd modes: MODE-nodbg (steerd
                     without debugfs, in its own mount namespace), MODE-noguard
                     (GuardWindowMs=0), MODE-nocoloc (issue 14's co-location off:
                     Consolidate=no WakeGroups=no StickyPairWakeups=0), MODE-search (the
                     placement search on: Search=yes SearchBlockMs=1s), MODE-base (the
                     steerd binary STEERD_BASE, e.g. the commit before a change), e.g.
                     latency-nodbg
  --policy KEY=VAL   extra [Policy] setting for every steerd run (repeatable), e.g.
                     --policy GuardPercent=20 to try another default
  --period MS        SamplePeriodMs of the steerd runs (default 100)
  --scale N          every workload N times as long (loops, iterations, seconds)
  --no-cost          skip the cost measurements (callgrind, fixtures, real threads)
  --cost-only        only the cost measurements
  --no-build         use the existing build-bench/steerd
  -h, --help         this text
EOF
}

ARGS_SEEN="$*"
QUICK=0 REPS= OUT= ONLY_W= ONLY_C= DO_COST=1 DO_MATRIX=1 BUILD=1 PERIOD=100 SEED= SCALE=1
POLICY_EXTRA=()
while [ $# -gt 0 ]; do
        case $1 in
        --quick) QUICK=1 ;;
        --reps) REPS=$2; shift ;;
        --seed) SEED=$2; shift ;;
        --out) OUT=$2; shift ;;
        --workloads) ONLY_W=$2; shift ;;
        --configs) ONLY_C=$2; shift ;;
        --policy) POLICY_EXTRA+=("$2"); shift ;;
        --period) PERIOD=$2; shift ;;
        --scale) SCALE=$2; shift ;;
        --no-cost) DO_COST=0 ;;
        --cost-only) DO_MATRIX=0 ;;
        --no-build) BUILD=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
        esac
        shift
done
[ "$(id -u)" -eq 0 ] || die "run as root (cpuset cgroups, perf stat -a, steerd)"
[ -n "$CPUSET" ] || die "no cgroup v1 cpuset hierarchy mounted; the benchmarks steer cpuset v1 cgroups"

[ -z "$REPS" ] || [[ $REPS =~ ^[1-9][0-9]*$ ]] || die "--reps: '$REPS' is not a positive number"
[ -z "$SEED" ] || [[ $SEED =~ ^[0-9]+$ ]] || die "--seed: '$SEED' is not a number"
[[ $SCALE =~ ^[1-9][0-9]*$ ]] || die "--scale: '$SCALE' is not a positive whole number"
: "${REPS:=8}"
: "${SEED:=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
# Sizes (docs/BENCHMARKS.md "How long a run takes" has the arithmetic).
# Full run: 8 rounds of 50 runs (6 configurations, phases 8 with its static
# splits) plus the cost section within 45 min: about 4 s a run.
HB4_LOOPS=5000 HB1_LOOPS=3000 MSG_ITERS=2 PIPE_LOOPS=60000 CYC_SECONDS=3 TB_SECONDS=3 TB_CLIENTS=1
PH_LOOPS=500 RING_HOPS=200000
CONFIGS=(default default-aa observe latency balanced static)
if [ "$QUICK" = 1 ]; then
        # One workload, three configurations, 8 rounds, within 10 min: room for
        # the sizes of the full runs before issue 30 (phases: half of them).
        HB4_LOOPS=20000 HB1_LOOPS=12000 MSG_ITERS=5 PIPE_LOOPS=300000 CYC_SECONDS=10 TB_SECONDS=10 TB_CLIENTS=1
        PH_LOOPS=2000 RING_HOPS=1000000
        CONFIGS=(default default-aa latency)
        DO_COST=0
        WORKLOADS=(hb4cg)
fi
if [ "$SCALE" != 1 ]; then
        # Longer runs, e.g. for the placement search, which starts afresh
        # with each run's steerd: its search time is then a smaller part.
        HB4_LOOPS=$((HB4_LOOPS * SCALE)) HB1_LOOPS=$((HB1_LOOPS * SCALE)) MSG_ITERS=$((MSG_ITERS * SCALE))
        PIPE_LOOPS=$((PIPE_LOOPS * SCALE)) CYC_SECONDS=$((CYC_SECONDS * SCALE)) TB_SECONDS=$((TB_SECONDS * SCALE))
        PH_LOOPS=$((PH_LOOPS * SCALE)) RING_HOPS=$((RING_HOPS * SCALE))
fi
OUT=${OUT:-$BENCH_DIR/results/latest}
[ -n "$ONLY_C" ] && IFS=, read -ra CONFIGS <<<"$ONLY_C"
[ -n "$ONLY_W" ] && IFS=, read -ra WORKLOADS <<<"$ONLY_W"
[ "$QUICK" = 0 ] || [ "${#WORKLOADS[@]}" = 1 ] || die "--quick measures one workload; --workloads names ${#WORKLOADS[@]}"

START=$(date +%s)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOGS=$OUT/logs
rm -rf "$LOGS"
mkdir -p "$LOGS"

# ---- packages, debugfs, build ----
steerd_install_packages "${BENCH_PACKAGES[@]}"
if ! grep -q ' /sys/kernel/debug ' /proc/self/mounts; then
        mount -t debugfs none /sys/kernel/debug 2>/dev/null || say "debugfs cannot be mounted; steerd samples without it"
fi
if [ "$BUILD" = 1 ]; then
        steerd_install_packages "${STEERD_BUILD_PACKAGES[@]}"
        say "building steerd (Release) in build-bench/"
        # CMAKE_C_FLAGS= clears what an older build-bench/ may have cached.
        cmake -S "$BENCH_TOP" -B "$BENCH_TOP/build-bench" -DCMAKE_BUILD_TYPE=Release \
                -DCMAKE_C_FLAGS= >"$LOGS/build.log" 2>&1 &&
                make -C "$BENCH_TOP/build-bench" -j"$NCPU" steerd steerctl steerd-test-load steerd-ratio-ci >>"$LOGS/build.log" 2>&1 ||
                die "build failed, see $LOGS/build.log"
fi
[ -x "$STEERD" ] || die "no $STEERD (build it, or drop --no-build)"
# The report's intervals come from steerd-ratio-ci (analyze.py finds it the same way): fail now, not after the run.
RATIO_CI=${STEERD_RATIO_CI:-}
[ -n "$RATIO_CI" ] || for RATIO_CI in "$BENCH_TOP/build-bench/steerd-ratio-ci" "$BENCH_TOP/build/steerd-ratio-ci"; do
        [ -x "$RATIO_CI" ] && break
done
[ -x "$RATIO_CI" ] || die "no steerd-ratio-ci for the report's intervals (build it, or drop --no-build, or set STEERD_RATIO_CI)"
PERF_OK=1
perf bench sched pipe -l 1000 >/dev/null 2>&1 || PERF_OK=0
PERF_HW=$(perf stat -x, -e instructions true 2>&1 | grep -q 'not supported' && echo no || echo yes)
perf stat -a -x, -e cpu-migrations -o /dev/null true 2>/dev/null || die "perf stat -a with software events does not work"

cleanup() {
        perf_stop 2>/dev/null || true
        [ -n "$STEERD_PID" ] && steerd_stop
        cg_destroy_all all
        noise_teardown
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cg_destroy_all
cg_setup
noise_setup

# ---- metadata ----
{
        echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "title=${BENCH_TITLE:-}"
        echo "command=tests/bench/run.sh${ARGS_SEEN:+ $ARGS_SEEN}"
        echo "host_kernel=$(uname -r)"
        echo "cpu_model=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
        echo "ncpu=$NCPU"
        echo "cpus=$ALL_CPUS"
        echo "virt=$(systemd-detect-virt --vm 2>/dev/null || echo unknown)"
        echo "steerd_commit=$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "steerd_tree_dirty=$(git -C "$BENCH_TOP" --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
        echo "steerd_version=$("$STEERD" --version 2>/dev/null | head -1)"
        echo "runnable_source=$("$STEERD" --once --interval 100 2>/dev/null | awk -F'runnable from: ' '/runnable from/ {print $2}')"
        echo "quick=$QUICK"
        echo "reps=$REPS"
        echo "seed=$SEED"
        echo "period_ms=$PERIOD"
        echo "policy_extra=${POLICY_EXTRA[*]:-}"
        echo "configs=${CONFIGS[*]}"
        echo "workloads=${WORKLOADS[*]}"
        echo "perf_bench=$PERF_OK"
        echo "perf_hw_counters=$PERF_HW"
        echo "hb4_loops=$HB4_LOOPS"
        echo "hb1_loops=$HB1_LOOPS"
        echo "msg_iters=$MSG_ITERS"
        echo "pipe_loops=$PIPE_LOOPS"
        echo "ring_hops=$RING_HOPS"
        echo "cyc_seconds=$CYC_SECONDS"
        echo "tb_seconds=$TB_SECONDS"
        echo "tb_clients=$TB_CLIENTS"
        echo "ph_loops=$PH_LOOPS"
        for w in "${WORKLOADS[@]}"; do echo "what_$w=$("${w}_WHAT")"; echo "better_$w=$(eval echo "\$${w}_BETTER")"; echo "unit_$w=$(eval echo "\"\$${w}_UNIT\"")"; done
        echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"

# ---- one run ----
RAW=$OUT/raw.csv

# steerd_conf MODE FILE GROUPS...  (RUN_POLICY: extra [Policy] lines of this run)
RUN_POLICY=() RUN_MANAGER=()
steerd_conf() {
        local mode=$1 file=$2 g kv
        shift 2
        {
                printf '[Manager]\nMode=%s\nSamplePeriodMs=%s\n' "$mode" "$PERIOD"
                for kv in "${RUN_MANAGER[@]}"; do [ -z "$kv" ] || echo "$kv"; done
                echo '[Policy]'
                for kv in "${POLICY_EXTRA[@]}" "${RUN_POLICY[@]}"; do [ -z "$kv" ] || echo "$kv"; done
                echo '[OptIn]'
                for g in "$@"; do echo "/$g=latency"; done # steerd-ns.sh: /sbench is its /
        } >"$file"
}

run_one() { # REP ORDER WORKLOAD CONFIG
        local rep=$1 order=$2 w=$3 cfg=$4 dir g i n cpus t0 t1 c0=0 c1=0 n0 n1 restored=1
        dir=$LOGS/r$rep-$w-$cfg
        mkdir -p "$dir"
        METRICS=$dir/metrics
        : >"$METRICS"
        local -a groups extra
        eval "groups=(\"\${${w}_GROUPS[@]}\")"
        eval "extra=(\"\${${w}_EXTRA_GROUPS[@]:-}\")"
        n=${#groups[@]}
        declare -A want=()
        for i in "${!groups[@]}"; do
                cpus=$ALL_CPUS
                if [[ $cfg == static* ]]; then
                        if declare -F "wl_${w}_static" >/dev/null; then cpus=$("wl_${w}_static" "$i" "$n" "$cfg")
                        else cpus=$(static_cpu "$i" "$n"); fi
                fi
                cg_create "${groups[$i]}" "$cpus"
                want[${groups[$i]}]=$(cg_cpus "${groups[$i]}")
        done
        for g in "${extra[@]}"; do [ -n "$g" ] && cg_create "$g"; done
        case $cfg in
        observe* | latency* | balanced*)
                # MODE[-nodbg][-noguard][-nocoloc][-search]: variants for experiments (see usage)
                RUN_POLICY=() RUN_MANAGER=()
                [[ $cfg != *-noguard* ]] || RUN_POLICY+=(GuardWindowMs=0)
                # MODE-search: the placement search on, blocks of 1 s (a run is
                # a fresh start: its search time is in the figure)
                [[ $cfg != *-search* ]] || RUN_MANAGER+=(Search=yes SearchBlockMs=1s)
                [[ $cfg != *-nocoloc* ]] || RUN_POLICY+=(Consolidate=no WakeGroups=no StickyPairWakeups=0)
                local nodbg=0 bin=$STEERD
                [[ $cfg != *-nodbg* ]] || nodbg=1
                # MODE-base: the build named by STEERD_BASE (another commit), side by side
                if [[ $cfg == *-base* ]]; then
                        [ -x "${STEERD_BASE:-}" ] || die "$cfg needs STEERD_BASE=path/to/steerd"
                        bin=$STEERD_BASE
                fi
                steerd_conf "${cfg%%-*}" "$dir/steerd.conf" "${groups[@]}"
                STEERD=$bin STEERD_NS_NO_DEBUGFS=$nodbg steerd_start "$dir/steerd.conf" "$dir/steerd.log" ||
                        die "steerd did not start, see $dir/steerd.log"
                m runnable_debugfs "$(grep -c 'runnable from debugfs' "$dir/steerd.log")"
                sleep 0.3 ;;
        esac
        perf_start "$dir/perf.txt"
        n0=$(noise_read)
        c0=$(steerd_cpu_ns)
        t0=$(now)
        "wl_$w" "$cfg" "$dir" || say "warning: $w under $cfg failed (see $dir)"
        t1=$(now)
        c1=$(steerd_cpu_ns)
        n1=$(noise_read)
        perf_stop
        if [ -n "$STEERD_PID" ]; then
                steerd_stop
                m steerd_rc "$STEERD_RC"
                for g in "${groups[@]}"; do
                        [ "$(cg_cpus "$g")" = "${want[$g]}" ] || { restored=0; say "warning: $g CPUs $(cg_cpus "$g") after steerd, not ${want[$g]}"; }
                done
                m restored_ok "$restored"
                m steerd_cpu_ms "$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.1f\n", (b - a) / 1e6}')"
                m steerd_cpu_pct "$(awk -v a="$c0" -v b="$c1" -v s="$(elapsed "$t0" "$t1")" 'BEGIN {printf "%.3f\n", (b - a) / 1e7 / s}')"
                local phases=()
                [ ! -s "$dir/phases.txt" ] || phases=("$dir/phases.txt")
                python3 "$BENCH_DIR/steerd-log.py" "$dir/steerd.log" "$t0" "$PERIOD" "${phases[@]}" >>"$METRICS"
        fi
        for g in "${groups[@]}" "${extra[@]}"; do [ -n "$g" ] && cg_destroy "$g"; done
        m run_wall_s "$(elapsed "$t0" "$t1")"
        awk -F, '$3 == "cpu-migrations" {print "migrations", $1} $3 == "context-switches" {print "ctxsw", $1}' \
                "$dir/perf.txt" >>"$METRICS"
        # Noise: CPU time of everything else on the machine during the run,
        # as percent of all CPUs; steal: time the hypervisor gave elsewhere.
        read -r b0 s0 o0 <<<"$n0"
        read -r b1 s1 o1 <<<"$n1"
        awk -v b0="$b0" -v b1="$b1" -v s0="$s0" -v s1="$s1" -v o0="$o0" -v o1="$o1" -v w="$(elapsed "$t0" "$t1")" -v n="$NCPU" \
                -v hz="$(getconf CLK_TCK)" 'BEGIN {
                        f = (b1 - b0) / hz - (o1 - o0) / 1e9; if (f < 0) f = 0
                        printf "foreign_cpu_pct %.1f\nsteal_pct %.1f\n", 100 * f / (w * n), 100 * (s1 - s0) / hz / (w * n) }' >>"$METRICS"
        awk -v r="$rep" -v o="$order" -v w="$w" -v c="$cfg" 'NF == 2 && $2 != "" {print r "," o "," w "," c "," $1 "," $2}' \
                "$METRICS" >>"$RAW"
        say "rep $rep $w $cfg: $(awk '$1=="primary" {p=$2} $1=="migrations" {mg=$2} $1=="foreign_cpu_pct" {f=$2}
                END {printf "%s (migrations %s, foreign load %s%%)", p, mg, f}' "$METRICS")"
}

# ---- the side-by-side matrix ----
# Each round runs every workload under every configuration (static expanded
# into the workload's static variants); within a round and workload the
# configurations run in an order shuffled from the seed and the round
# (shuffle_seeded, lib.sh): the same --seed gives the same order. The order
# is in meta.txt (order_rREP_W) and in raw.csv's order column.
if [ "$DO_MATRIX" = 1 ]; then
        echo "rep,order,workload,config,metric,value" >"$RAW"
        say "matrix: ${#WORKLOADS[@]} workloads x ${#CONFIGS[@]} configurations x $REPS rounds, seed $SEED"
        order=0
        for rep in $(seq "$REPS"); do
                for w in "${WORKLOADS[@]}"; do
                        [ "$w" = msg ] || [ "$w" = pipe ] && [ "$PERF_OK" = 0 ] && continue
                        units=()
                        for cfg in "${CONFIGS[@]}"; do
                                local_cfgs=("$cfg")
                                if [ "$cfg" = static ]; then
                                        eval "variants=(\"\${${w}_STATICS[@]:-}\")"
                                        [ -z "${variants[0]}" ] || local_cfgs=("${variants[@]/#/static-}")
                                fi
                                units+=("${local_cfgs[@]}")
                        done
                        read -ra units <<<"$(shuffle_seeded "$SEED:$rep:$w" "${units[@]}")"
                        echo "order_r${rep}_$w=${units[*]}" >>"$OUT/meta.txt"
                        for c in "${units[@]}"; do
                                order=$((order + 1))
                                run_one "$rep" "$order" "$w" "$c"
                                sleep 0.5
                        done
                done
        done
fi
echo "matrix_seconds=$(($(date +%s) - START))" >>"$OUT/meta.txt"

# ---- cost ----
if [ "$DO_COST" = 1 ]; then
        C0=$(date +%s)
        QUICK=$QUICK PERIOD=$PERIOD "$BENCH_DIR/cost.sh" "$OUT" || say "warning: cost measurements failed"
        echo "cost_seconds=$(($(date +%s) - C0))" >>"$OUT/meta.txt"
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
echo "total_seconds=$(($(date +%s) - START))" >>"$OUT/meta.txt"
python3 "$BENCH_DIR/analyze.py" "$OUT"
say "done in $(($(date +%s) - START)) s: $OUT/REPORT.md"
