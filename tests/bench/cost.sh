#!/usr/bin/env bash
# What steerd costs (issue 6), called by run.sh:  cost.sh OUTDIR
#
# 1. Instructions per daemon tick (callgrind): steerd --foreground on generated
#    fixture roots (tests/gen-fixture-root.py, --root) with synthetic hwloc
#    topologies (--topology), mode latency, /bench1 opted in, under
#    `valgrind --tool=callgrind --dump-after=manager_on_tick`: one dump per tick; the
#    median of the steady ticks, and its parts (sampler, policy, ...).
#    Against CPUs (2..1024, at THREADS_AT threads) and opted-in threads
#    (100..50,000, at 1,024 CPUs).
# 2. The policy engine under load (callgrind): steerd --replay of a busy
#    snapshot stream built from the same fixture (cost-stream.py): Ir per
#    policy_decide.
# 3. Wall-clock and CPU time per tick, plain (no valgrind): the same daemon,
#    uprobes on manager_on_tick's entry and return (perf probe), SamplePeriodMs=500.
# 4. A real run: N sleeping threads (sleepers.c) in an opted-in cgroup,
#    steerd mode latency at SamplePeriodMs (100 ms) on this host: its CPU
#    share (CPU time / wall) and tick times; REAL_REPS rounds of 0, 100,
#    1,000, 10,000 threads, 1,000 of which 10 spin, and nothing opted in
#    (metrics named METRIC@ROUND in cost.csv). Two builds side by side:
#    tests/bench/cost-curve.sh.
#
# Results: OUTDIR/cost.csv (kind,cpus,threads,metric,value), logs in OUTDIR/logs/cost.
# The fixtures go to $BENCH_FIXTURES (default /var/tmp/steerd-bench-fixtures)
# and are removed afterwards (BENCH_KEEP_FIXTURES=1 keeps them).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUT=$(cd "$1" && pwd)
QUICK=${QUICK:-0}
PERIOD=${PERIOD:-100}
FX=${BENCH_FIXTURES:-/var/tmp/steerd-bench-fixtures}
W=$OUT/logs/cost
CSV=$OUT/cost.csv
GEN=$BENCH_TOP/tests/gen-fixture-root.py
mkdir -p "$W" "$FX"
echo "kind,cpus,threads,metric,value" >"$CSV"

# PLAIN_ONLY: points measured without valgrind only (too slow under it for --quick).
if [ "$QUICK" = 1 ]; then
        CPUS_SWEEP=(2 64 1024) THREADS_AT=1000
        THREADS_SWEEP=(100 1000 10000) PLAIN_ONLY=" 1024x10000 "
        CG_DUMPS=3 CG_TIMEOUT=60 PLAIN_SECONDS=3
        REAL_POINTS=(none 0:0 1000:0 1000:10) REAL_SECONDS=10 REAL_REPS=1
else
        CPUS_SWEEP=(2 8 32 128 512 1024) THREADS_AT=1000
        THREADS_SWEEP=(100 1000 10000 50000) PLAIN_ONLY=
        CG_DUMPS=6 CG_TIMEOUT=240 PLAIN_SECONDS=6
        REAL_POINTS=(none 0:0 100:0 1000:0 10000:0 1000:10) REAL_SECONDS=10 REAL_REPS=3
fi

# A synthetic hwloc topology of N CPUs: 16-CPU LLCs (8 cores x 2 SMT) in two
# packages from 32 CPUs up; below that one package with one LLC.
topology() {
        local n=$1
        if [ "$n" -ge 32 ] && [ $((n % 32)) -eq 0 ]; then echo "pack:2 l3:$((n / 32)) l2:8 core:1 pu:2"
        elif [ "$n" -eq 2 ]; then echo "pack:1 l3:1 l2:2 core:1 pu:1"
        else echo "pack:1 l3:1 l2:$((n / 2)) core:1 pu:2"; fi
}

row() { echo "$1,$2,$3,$4,$5" >>"$CSV"; }
rows() { # KIND CPUS THREADS < "metric value" lines
        local k v
        while read -r k v; do [ -n "$k" ] && row "$1" "$2" "$3" "$k" "$v"; done
}

PROBES=0
probes_add() {
        perf probe -q -d 'sbench:*' 2>/dev/null || true
        perf probe -q -x "$STEERD" -a 'sbench:tick_in=manager_on_tick' -a 'sbench:tick_out=manager_on_tick%return' 2>"$W/probe.err" &&
                PROBES=1 || say "no uprobes (perf probe failed: $(head -1 "$W/probe.err")); tick times from CPU time / ticks"
}
probes_del() { [ "$PROBES" = 1 ] && perf probe -q -d 'sbench:*' 2>/dev/null || true; }
trap 'probes_del; [ -n "$STEERD_PID" ] && steerd_stop; cg_destroy_all all; [ "${BENCH_KEEP_FIXTURES:-0}" = 1 ] || rm -rf "$FX"' EXIT

REPLAY_TICKS=12
conf() { # FILE MODE PERIOD OPTIN
        printf '[Manager]\nMode=%s\nSamplePeriodMs=%s\n[OptIn]\n%s=latency\n' "$2" "$3" "$4" >"$1"
}

# measure CPUS THREADS: fixture, callgrind ticks, policy replay, plain ticks.
measure() {
        local n=$1 t=$2 topo root d t0 t1 pid i dumps=$CG_DUMPS
        [ "$t" -ge 10000 ] && dumps=3
        # 50,000 threads: the fourth tick (the first sticky pins, quadratic
        # in the number of pins) runs for many minutes under valgrind.
        [ "$t" -ge 50000 ] && dumps=2
        topo=$(topology "$n")
        root=$FX/c$n-t$t
        d=$W/c$n-t$t
        mkdir -p "$d"
        if [ ! -d "$root" ]; then
                t0=$(date +%s.%N)
                python3 "$GEN" "$root" --cpus "$n" --threads "$t" --tick 0 --schedstat
                t1=$(date +%s.%N)
                row gen "$n" "$t" gen_seconds "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", b - a}')"
                row gen "$n" "$t" gen_mb "$(du -sm "$root" | cut -f1)"
        fi
        row gen "$n" "$t" topology "$topo"

        if [[ $PLAIN_ONLY == *" ${n}x$t "* ]]; then
                say "cost $n CPUs x $t threads: plain run only"
        else
                measure_callgrind "$n" "$t" "$topo" "$root" "$d" "$dumps"
        fi
        measure_plain "$n" "$t" "$topo" "$root" "$d"
}

measure_callgrind() {
        local n=$1 t=$2 topo=$3 root=$4 d=$5 dumps=$6 pid i
        # 1. callgrind, one dump per tick
        conf "$d/daemon.conf" latency "$PERIOD" /bench1
        rm -rf "$d/cg" && mkdir -p "$d/cg/run" "$d/cg/lib"
        valgrind --tool=callgrind --dump-after=manager_on_tick --dump-instr=no --callgrind-out-file="$d/cg/out" \
                "$STEERD" --foreground --root "$root" --topology "$topo" --config "$d/daemon.conf" \
                --runtime-dir "$d/cg/run" --state-dir "$d/cg/lib" >"$d/callgrind.log" 2>&1 &
        pid=$!
        for i in $(seq $((CG_TIMEOUT * 5))); do
                [ "$(find "$d/cg" -maxdepth 1 -name 'out.*' | wc -l)" -ge "$((dumps + 1))" ] && break
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null && [ "$(find "$d/cg" -maxdepth 1 -name 'out.*' | wc -l)" -lt "$((dumps + 1))" ]; then
                # A tick still running at the timeout: dump what it has done
                # so far (a lower bound of its cost), then stop valgrind hard:
                # steerd would only see SIGTERM after the tick.
                local before
                before=$(find "$d/cg" -maxdepth 1 -name 'out.*' | wc -l)
                callgrind_control -d "$pid" >/dev/null 2>&1 || true
                for i in $(seq 50); do
                        [ "$(find "$d/cg" -maxdepth 1 -name 'out.*' | wc -l)" -gt "$before" ] && break
                        sleep 0.2
                done
                local last
                last=$(find "$d/cg" -maxdepth 1 -name 'out.*' | sort -t. -k2 -n | tail -1)
                if [ "$(find "$d/cg" -maxdepth 1 -name 'out.*' | wc -l)" -gt "$before" ] && [ -n "$last" ]; then
                        row callgrind "$n" "$t" ir_tick_unfinished "$(awk '/^(totals|summary):/ {print $2; exit}' "$last")"
                        rm -f "$last"
                fi
                row callgrind "$n" "$t" timeout_s "$CG_TIMEOUT"
                kill -KILL "$pid" 2>/dev/null || true
        fi
        # Enough ticks: stop it, hard if the next tick is a long one (steerd
        # sees SIGTERM only between ticks; at 50,000 threads the tick of the
        # first sticky pins runs for many minutes under valgrind).
        stop_hard "$pid" 10
        python3 "$BENCH_DIR/cost-parse.py" dumps "$d/cg/out" 1 | rows callgrind "$n" "$t"
        rm -rf "$d/cg"

        # 2. the policy engine on a busy stream (not at 50,000 threads: minutes under valgrind)
        [ "$t" -le 10000 ] || { say "cost $n CPUs x $t threads: no busy replay above 10,000 threads"; return 0; }
        "$STEERD" --record "$d/template.jsonl" --ticks 1 --root "$root" --topology "$topo" \
                --config "$d/daemon.conf" >/dev/null 2>&1
        python3 "$BENCH_DIR/cost-stream.py" "$d/template.jsonl" "$REPLAY_TICKS" >"$d/busy.jsonl"
        valgrind --tool=callgrind --callgrind-out-file="$d/replay.cg" "$STEERD" --replay "$d/busy.jsonl" --json \
                --config "$d/daemon.conf" >"$d/plans.jsonl" 2>"$d/replay.log" || true
        python3 "$BENCH_DIR/cost-parse.py" inclusive "$d/replay.cg" policy_decide |
                awk -v k="$REPLAY_TICKS" '{printf "ir_policy_decide_busy %.0f\n", $2 / k}' | rows replay "$n" "$t"
        row replay "$n" "$t" actions "$(python3 -c 'import json,sys; print(sum(len(json.loads(l)["actions"]) for l in open(sys.argv[1])))' "$d/plans.jsonl")"
        rm -f "$d/template.jsonl" "$d/busy.jsonl" "$d/replay.cg"
}

measure_plain() {
        local n=$1 t=$2 topo=$3 root=$4 d=$5 pid
        # 3. plain: wall and CPU time per tick
        conf "$d/plain.conf" latency 500 /bench1
        rm -rf "$d/plain" && mkdir -p "$d/plain/run" "$d/plain/lib"
        "$STEERD" --foreground --root "$root" --topology "$topo" --config "$d/plain.conf" \
                --runtime-dir "$d/plain/run" --state-dir "$d/plain/lib" >"$d/plain.log" 2>&1 &
        pid=$!
        sleep 1.5
        # 50,000 threads: a tick takes about a second and one of them (the
        # first sticky pins) far longer: a longer window.
        local secs=$PLAIN_SECONDS
        [ "$t" -lt 50000 ] || secs=$((PLAIN_SECONDS * 6))
        plain_window "$pid" "$secs" 500 "$d" | rows plain "$n" "$t"
        stop_hard "$pid"
        rm -rf "$d/plain"
        say "cost $n CPUs x $t threads: $(awk -F, -v n="$n" -v t="$t" '$2==n && $3==t && ($4=="ir_tick" || $4=="wall_us_tick" || $4=="ir_policy_decide_busy") {printf "%s %s  ", $4, $5}' "$CSV")"
}

# stop_hard PID [SECONDS]: SIGTERM; steerd handles it between ticks, so after
# SECONDS (default 20; a tick that long) SIGKILL. Fixture roots have nothing
# to give back.
stop_hard() {
        local i
        kill -TERM "$1" 2>/dev/null || true
        for i in $(seq $((${2:-20} * 5))); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
}

# CPU time of PID so far in ns, all its threads.
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%.0f\n", s}'; }

# plain_window PID SECONDS PERIOD_MS DIR: per-tick wall (uprobes) and CPU time
# of steerd PID over SECONDS; prints metric lines.
plain_window() {
        local pid=$1 secs=$2 period=$3 d=$4 c0 c1 t0 t1 ticks
        c0=$(cpu_ns "$pid")
        t0=$(date +%s.%N)
        if [ "$PROBES" = 1 ]; then
                perf record -q -a -e 'sbench:*' -o "$d/ticks.data" -- sleep "$secs" >/dev/null 2>&1 || true
                c1=$(cpu_ns "$pid")
                t1=$(date +%s.%N)
                perf script -i "$d/ticks.data" -F comm,pid,time,event 2>/dev/null | awk -v p="$pid" '$2 == p' >"$d/ticks.txt"
                python3 "$BENCH_DIR/cost-parse.py" ticks "$d/ticks.txt" >"$d/ticks.m"
                rm -f "$d/ticks.data"
        else
                sleep "$secs"
                c1=$(cpu_ns "$pid")
                t1=$(date +%s.%N)
                : >"$d/ticks.m"
        fi
        cat "$d/ticks.m"
        # Ticks in the CPU-time window: one per period while a tick is
        # shorter than the period (steerd keeps the cadence), else back to back.
        local wall
        wall=$(awk '$1 == "wall_us_tick" {print $2}' "$d/ticks.m")
        ticks=$(awk -v a="$t0" -v b="$t1" -v p="$period" -v w="${wall:-0}" 'BEGIN {
                s = p * 1000; if (w > s) s = w; printf "%.2f\n", (b - a) * 1e6 / s }')
        awk -v a="$c0" -v b="$c1" -v t="$ticks" -v w0="$t0" -v w1="$t1" 'BEGIN {
                printf "cpu_us_tick %.0f\n", (b - a) / 1e3 / (t > 0 ? t : 1)
                printf "cpu_pct %.3f\n", 100 * (b - a) / 1e9 / (w1 - w0)
                printf "window_s %.1f\n", w1 - w0 }'
}

probes_add
T0=$(date +%s)
say "cost: CPUs ${CPUS_SWEEP[*]} at $THREADS_AT threads; threads ${THREADS_SWEEP[*]} at 1024 CPUs"
for n in "${CPUS_SWEEP[@]}"; do
        measure "$n" "$THREADS_AT"
        [ "$n" = 1024 ] || rm -rf "$FX/c$n-t$THREADS_AT"
done
for t in "${THREADS_SWEEP[@]}"; do
        [ "$t" = "$THREADS_AT" ] || measure 1024 "$t"
        rm -rf "$FX/c1024-t$t"
done
row meta 0 0 fixtures_seconds "$(($(date +%s) - T0))"

# 4. the real thing: sleeping threads in an opted-in cgroup on this host
cg_setup
gcc -O2 -pthread -o "$W/sleepers" "$BENCH_DIR/sleepers.c"
# A point is THREADS:BUSY (sleepers.c: BUSY of them spin) in the opted-in
# cgroup /idle, or "none": nothing opted in (what steerd's tick costs by
# itself). Kinds in cost.csv: real (all sleeping), realbusy, realnone.
for rr in $(seq "$REAL_REPS"); do
for p in "${REAL_POINTS[@]}"; do
        t=${p%%:*} b=${p##*:} kind=real sp=
        [ "$p" = none ] && t=0 b=0 kind=realnone
        [ "$b" -gt 0 ] && kind=realbusy
        d=$W/real-$p-r$rr
        d=${d//:/-}
        mkdir -p "$d"
        cg_create idle
        if [ "$kind" != realnone ]; then
                cg_exec idle "$W/sleepers" "$t" "$b" >"$d/sleepers.out" 2>&1 &
                sp=$!
                for i in $(seq 100); do grep -q ready "$d/sleepers.out" 2>/dev/null && break; sleep 0.1; done
                conf "$d/steerd.conf" latency "$PERIOD" /idle
        else
                printf '[Manager]\nMode=latency\nSamplePeriodMs=%s\n' "$PERIOD" >"$d/steerd.conf"
        fi
        steerd_start "$d/steerd.conf" "$d/steerd.log"
        sleep 2
        plain_window "$STEERD_PID" "$REAL_SECONDS" "$PERIOD" "$d" | awk -v r="$rr" '{print $1 "@" r, $2}' | rows "$kind" "$NCPU" "$t"
        steerd_stop
        if [ -n "$sp" ]; then
                kill "$sp" 2>/dev/null || true
                wait "$sp" 2>/dev/null || true
        fi
        cg_destroy idle
        say "real: $p, round $rr: $(awk -F, -v k="$kind" -v t="$t" -v r="$rr" '$1==k && $3==t && ($4=="cpu_pct@" r || $4=="wall_us_tick@" r) {printf "%s %s  ", $4, $5}' "$CSV")"
done
done
