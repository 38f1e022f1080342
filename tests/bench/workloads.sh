# shellcheck shell=bash
# The workloads of issue 6. Sourced by run.sh after lib.sh.
#
# Each workload W has:
#   W_GROUPS      the opted-in cgroups (names under the cpuset hierarchy)
#   W_UNIT, W_BETTER, W_WHAT   its primary figure, "lower" or "higher", a description
#   wl_W_static I N  the CPUs of group I of N under static pinning (default: spread evenly)
#   wl_W CFG DIR  runs it once; writes "metric value" lines to DIR/metrics.
# The primary figure is the metric "primary".
#
# Sizes come from run.sh (full or --quick): HB4_LOOPS, HB1_LOOPS, MSG_ITERS,
# PIPE_LOOPS, RING_HOPS, CYC_SECONDS, TB_SECONDS, TB_CLIENTS, PH_LOOPS. The
# full run's are short (about 4 s a run: 8 rounds in 45 min), --quick's the
# longer ones of the runs before; docs/BENCHMARKS.md "How long a run takes".
# A configuration that is neither a steerd mode nor static* (default,
# default-aa) runs the workload with no steerd and no pinning.
#
# A workload with W_STATICS runs the static configuration once per variant
# (static-V for each V), wl_W_static I N static-V giving the CPUs; the report
# adds static-best, the best variant of each round.

WORKLOADS=(hb4cg hb1p msg pipe ring cyc tbench phases)

m() { echo "$1 $2" >>"$METRICS"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f\n", b - a}'; }

# ---- hackbench, four -g 1 processes, each in its own opted-in cgroup ----
hb4cg_GROUPS=("hb1" "hb2" "hb3" "hb4")
hb4cg_BETTER=lower
hb4cg_UNIT=s
hb4cg_WHAT() { echo "4 x \`hackbench -g 1 -f 20 --threads --pipe -s 100 -l $HB4_LOOPS\`, each in its own opted-in cgroup; wall time until the last finishes"; }
wl_hb4cg() {
        local cfg=$1 dir=$2 i pids=() t0 t1
        t0=$(now)
        for i in 1 2 3 4; do
                cg_exec "hb$i" hackbench -g 1 -f 20 --threads --pipe -s 100 -l "$HB4_LOOPS" \
                        >"$dir/hackbench$i.out" 2>&1 &
                pids+=($!)
        done
        wait "${pids[@]}"
        t1=$(now)
        m primary "$(elapsed "$t0" "$t1")"
        for i in 1 2 3 4; do m "hackbench${i}_s" "$(awk '/^Time:/ {print $2}' "$dir/hackbench$i.out")"; done
}

# ---- hackbench -g 4, one process in one opted-in cgroup ----
# Static pinning: the threads of groups 1-2 on the first CPU, 3-4 on the
# second (pin-hackbench.py, right after the threads exist).
hb1p_GROUPS=("hb")
hb1p_BETTER=lower
hb1p_UNIT=s
wl_hb1p_static() { echo "$ALL_CPUS"; }
hb1p_WHAT() { echo "\`hackbench -g 4 -f 20 --threads --pipe -s 100 -l $HB1_LOOPS\`, one process in one opted-in cgroup; its Time:"; }
wl_hb1p() {
        local cfg=$1 dir=$2 pid pin= t0 t1
        if [ "$cfg" = static ]; then
                # Started first, at real-time priority: once hackbench's 160
                # threads run, a new normal process takes seconds to get a CPU.
                chrt -f 10 python3 "$BENCH_DIR/pin-hackbench.py" "$BENCH_CG/hb" 4 40 "$ALL_CPUS" \
                        >"$dir/pin.out" 2>&1 &
                pin=$!
                sleep 0.3
        fi
        t0=$(now)
        cg_exec "hb" hackbench -g 4 -f 20 --threads --pipe -s 100 -l "$HB1_LOOPS" \
                >"$dir/hackbench.out" 2>&1 &
        pid=$!
        [ -z "$pin" ] || wait "$pin" || true
        wait "$pid"
        t1=$(now)
        m primary "$(awk '/^Time:/ {print $2}' "$dir/hackbench.out")"
        m wall_s "$(elapsed "$t0" "$t1")"
}

# ---- perf bench sched messaging -t -g 1 -l 2000, MSG_ITERS times in a row ----
msg_GROUPS=("msg")
msg_BETTER=lower
msg_UNIT=s
msg_WHAT() { echo "\`perf bench sched messaging -t -g 1 -l 2000\` $MSG_ITERS times in a row in one opted-in cgroup; sum of Total time"; }
wl_msg() {
        local cfg=$1 dir=$2 i
        for i in $(seq "$MSG_ITERS"); do
                cg_exec "msg" perf bench sched messaging -t -g 1 -l 2000 >>"$dir/messaging.out" 2>&1
        done
        m primary "$(awk '/Total time:/ {s += $3} END {printf "%.3f\n", s}' "$dir/messaging.out")"
}

# ---- perf bench sched pipe ----
pipe_GROUPS=("pipe")
pipe_BETTER=lower
pipe_UNIT="us/op"
pipe_WHAT() { echo "\`perf bench sched pipe -l $PIPE_LOOPS\` in one opted-in cgroup; usecs/op"; }
wl_pipe() {
        local cfg=$1 dir=$2
        cg_exec "pipe" perf bench sched pipe -l "$PIPE_LOOPS" >"$dir/pipe.out" 2>&1
        m primary "$(awk '/usecs\/op/ {print $1}' "$dir/pipe.out")"
        m total_s "$(awk '/Total time:/ {print $3}' "$dir/pipe.out")"
}

# ---- a token ring of four threads (tests/tools/load.c --rings): each wakes
# the next over a pipe; below overload, the consolidation window's case ----
ring_GROUPS=("ring")
ring_BETTER=lower
ring_UNIT=s
ring_WHAT() { echo "one ring of 4 threads passing a token over pipes (\`steerd-test-load --rings 1 --threads 4 --hops $RING_HOPS\`) in one opted-in cgroup; time for $RING_HOPS hand-overs"; }
wl_ring() {
        local cfg=$1 dir=$2
        echo go | cg_exec "ring" "$BENCH_TOP/build-bench/steerd-test-load" --rings 1 --threads 4 \
                --hops "$RING_HOPS" --seconds 300 >"$dir/ring.out" 2>&1
        m primary "$(awk '/^ring:/ {print $5}' "$dir/ring.out")"
}

# ---- cyclictest (SCHED_OTHER) opted in, stress-ng --cpu noise not opted in ----
# Static pinning: cyclictest's thread i on CPU i (-a), the noise untouched.
cyc_GROUPS=("cyc")
cyc_EXTRA_GROUPS=("noise")
cyc_BETTER=lower
cyc_UNIT=us
cyc_WHAT() { echo "\`cyclictest -t $NCPU -i 1000 -D $CYC_SECONDS\` (SCHED_OTHER) in an opted-in cgroup with \`stress-ng --cpu $NCPU\` in a cgroup that is not opted in; p99 wakeup latency"; }
wl_cyc_static() { echo "$ALL_CPUS"; }
wl_cyc() {
        local cfg=$1 dir=$2 noise aff=()
        [ "$cfg" = static ] && aff=(-a "$ALL_CPUS")
        cg_exec "noise" stress-ng --cpu "$NCPU" --timeout "$((CYC_SECONDS + 2))" --metrics-brief \
                >"$dir/stress-ng.out" 2>&1 &
        noise=$!
        sleep 1
        cg_exec "cyc" cyclictest -m -q -t "$NCPU" "${aff[@]}" -i 1000 -D "$CYC_SECONDS" -h 20000 \
                --histfile="$dir/histogram.txt" >"$dir/cyclictest.out" 2>&1 || true
        wait "$noise" || true
        python3 "$BENCH_DIR/cyclic-hist.py" "$dir/histogram.txt" >>"$METRICS"
        # stress-ng --metrics-brief: "cpu  BOGO-OPS  REAL  USR  SYS  OPS/S(real)  OPS/S(usr+sys)"
        m noise_bogo_ops_s "$(awk '/metrc:.* cpu / {print $(NF-1)}' "$dir/stress-ng.out")"
        # per CPU second it got: how efficiently it ran, whatever its share
        m noise_bogo_ops_cpu_s "$(awk '/metrc:.* cpu / {print $NF}' "$dir/stress-ng.out")"
}

# ---- tbench over loopback: two server+client pairs, each in its own opted-in
# cgroup and its own network namespace (tbench_srv listens on all addresses
# of its namespace, where only lo exists: nothing is reachable from outside).
tbench_GROUPS=("tb1" "tb2")
tbench_BETTER=higher
tbench_UNIT="MB/s"
tbench_WHAT() { echo "2 pairs of \`tbench_srv\` + \`tbench -t $TB_SECONDS $TB_CLIENTS 127.0.0.1\`, each pair in its own opted-in cgroup and network namespace; summed throughput"; }
wl_tbench() {
        local cfg=$1 dir=$2 i pids=()
        for i in 1 2; do
                (cd "$dir" && cg_exec "tb$i" unshare -n sh -c '
                        ip link set lo up || exit 1
                        tbench_srv >/dev/null 2>&1 & srv=$!
                        sleep 0.5
                        tbench -t "$1" "$2" 127.0.0.1; rc=$?
                        kill $srv; wait $srv 2>/dev/null; exit $rc' sh "$TB_SECONDS" "$TB_CLIENTS" \
                        >"$dir/tbench$i.out" 2>&1) &
                pids+=($!)
        done
        wait "${pids[@]}" || true
        m primary "$(awk '/^Throughput/ {s += $2} END {printf "%.2f\n", s}' "$dir"/tbench?.out)"
        for i in 1 2; do m "tbench${i}_mbs" "$(awk '/^Throughput/ {print $2}' "$dir/tbench$i.out")"; done
}

# ---- phases: the load moves between four opted-in cgroups (issue 13) ----
# A fixed schedule: each of the six pairs of the four groups in turn, then
# all four, then one alone; twice. In a phase each busy group runs
# `hackbench -g 1 -l PH_LOOPS` (the same work every time) and the others
# sleep; the next phase starts when the last busy group is done. Static:
# every distinct 2+2 split of the groups over the two halves of the CPUs.
phases_GROUPS=("ph1" "ph2" "ph3" "ph4")
phases_BETTER=lower
phases_UNIT=s
phases_STATICS=(a b c)
PHASES=("1 2" "1 3" "1 4" "2 3" "2 4" "3 4" "1 2 3 4" "1")
phases_WHAT() { echo "four opted-in cgroups; ${#PHASES[@]} phases twice (the 6 pairs, all four, one alone), each busy group runs \`hackbench -g 1 -f 20 --threads --pipe -s 100 -l $PH_LOOPS\` per phase; total wall time"; }
# static-a: 1+2 | 3+4, static-b: 1+3 | 2+4, static-c: 1+4 | 2+3.
wl_phases_static() { # I N CFG
        local i=$1 half=$((${#CPU_ARRAY[@]} / 2)) side
        case ${3#static-} in
        a) side=$((i / 2)) ;;
        b) side=$((i % 2)) ;;
        c) case $i in 0 | 3) side=0 ;; *) side=1 ;; esac ;;
        *) echo "$ALL_CPUS"; return ;;
        esac
        [ "$half" -ge 1 ] || { echo "$ALL_CPUS"; return; }
        if [ "$side" = 0 ]; then echo "${CPU_ARRAY[@]:0:half}"; else echo "${CPU_ARRAY[@]:half}"; fi | tr ' ' ,
}
wl_phases() {
        local cfg=$1 dir=$2 round p g k=0 pids t0 t1 ta tb
        ta=$(now)
        for round in 1 2; do
                for p in "${PHASES[@]}"; do
                        k=$((k + 1))
                        pids=()
                        t0=$(now)
                        for g in $p; do
                                cg_exec "ph$g" hackbench -g 1 -f 20 --threads --pipe -s 100 -l "$PH_LOOPS" \
                                        >>"$dir/hackbench$g.out" 2>&1 &
                                pids+=($!)
                        done
                        wait "${pids[@]}"
                        t1=$(now)
                        m "phase${k}_s" "$(elapsed "$t0" "$t1")"
                        # when each phase started, for the reaction figures
                        echo "$k $t0 ${p// /+}" >>"$dir/phases.txt"
                done
        done
        tb=$(now)
        m primary "$(elapsed "$ta" "$tb")"
}
