#!/usr/bin/env bash
# steerd's CPU against opted-in threads on this host, two builds side by side
# (issue 12):
#
#   tests/bench/cost-curve.sh OUTDIR STEERD_NEW [STEERD_BASE]
#
# Points: 100, 1,000 and 10,000 sleeping threads (sleepers.c: each wakes
# once a second), and 1,000 threads of which 10 spin, in one opted-in cpuset
# cgroup; steerd --foreground in mode latency at SamplePeriodMs (100 ms),
# in its own cgroup and mount namespace (steerd-ns.sh). For each point and
# round the builds run one after the other on the same threads (base, new,
# then new, base in the next round: drifts of a shared machine cancel), each
# for CURVE_SECONDS after CURVE_WARMUP seconds. CPU share = steerd's CPU time
# (all its threads) / wall time over the window.
#
# Then instructions per tick under callgrind (repeatable, unlike time on a
# shared machine) for both builds on a generated fixture root of 1,024 CPUs
# x 10,000 opted-in threads (tests/gen-fixture-root.py; CURVE_FIXTURES: the
# variants, "procs1" = one process of 10,000 threads in a cpuset without
# cpuacct, as on this host; "cpuacct" = cpuacct mounted with cpuset, one
# process per thread; "procsall" = a process per thread, no cpuacct, the
# worst case of the per-process fallback): median and worst of CURVE_DUMPS
# ticks after the first (which only primes); and, without valgrind, steerd's
# CPU time per tick there at SamplePeriodMs=500, twice per build.
#
# Results: OUTDIR/curve.csv (build,threads,busy,round,cpu_pct,window_s),
# OUTDIR/ticks.csv (build,fixture,tick,ir) and Markdown tables on stdout.
# Environment: CURVE_POINTS ("100:0 1000:0 10000:0 1000:10"), CURVE_ROUNDS (3),
# CURVE_SECONDS (10), CURVE_WARMUP (3), PERIOD (100), CURVE_FIXTURES
# ("procs1 cpuacct"), CURVE_DUMPS (12); CURVE_SKIP_LIVE=1 or
# CURVE_SKIP_CALLGRIND=1 to run one part only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUT=$(mkdir -p "$1" && cd "$1" && pwd)
NEW=$(realpath "$2")
BASE=${3:+$(realpath "$3")}
POINTS=${CURVE_POINTS:-100:0 1000:0 10000:0 1000:10}
ROUNDS=${CURVE_ROUNDS:-3}
SECS=${CURVE_SECONDS:-10}
WARM=${CURVE_WARMUP:-3}
PERIOD=${PERIOD:-100}
W=$OUT/logs/curve
CSV=$OUT/curve.csv
mkdir -p "$W"
now() { date +%s.%N; }
[ "$(id -u)" -eq 0 ] || die "needs root (cpuset cgroups, steerd)"
[ -n "$CPUSET" ] || die "no cgroup v1 cpuset hierarchy"
[ "${CURVE_SKIP_LIVE:-0}" = 1 ] || echo "build,threads,busy,round,cpu_pct,window_s" >"$CSV"

FIXTURES=${CURVE_FIXTURES:-procs1 cpuacct}
DUMPS=${CURVE_DUMPS:-12}
FX=${BENCH_FIXTURES:-/var/tmp/steerd-curve-fixtures}
SP=
trap '[ -n "$STEERD_PID" ] && steerd_stop; [ -n "$SP" ] && kill "$SP" 2>/dev/null; wait 2>/dev/null; cg_destroy_all all; rm -rf "$FX"' EXIT
cg_setup
gcc -O2 -pthread -o "$W/sleepers" "$BENCH_DIR/sleepers.c"

# run BUILD-NAME BINARY THREADS BUSY ROUND
run() {
        local name=$1 bin=$2 t=$3 b=$4 r=$5 d c0 c1 t0 t1
        d=$W/$name-t$t-b$b-r$r
        mkdir -p "$d"
        printf '[Manager]\nMode=latency\nSamplePeriodMs=%s\n[OptIn]\n/curve=latency\n' "$PERIOD" >"$d/steerd.conf"
        STEERD=$bin steerd_start "$d/steerd.conf" "$d/steerd.log" || die "steerd did not start: $d/steerd.log"
        sleep "$WARM"
        c0=$(steerd_cpu_ns)
        t0=$(now)
        sleep "$SECS"
        c1=$(steerd_cpu_ns)
        t1=$(now)
        steerd_stop
        awk -v n="$name" -v t="$t" -v b="$b" -v r="$r" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" \
                'BEGIN {printf "%s,%s,%s,%s,%.3f,%.1f\n", n, t, b, r, 100 * (c1 - c0) / 1e9 / (t1 - t0), t1 - t0}' >>"$CSV"
        say "curve: $name, $t threads ($b busy), round $r: $(tail -1 "$CSV" | cut -d, -f5)% of a CPU"
}

[ "${CURVE_SKIP_LIVE:-0}" = 1 ] && POINTS=
for p in $POINTS; do
        t=${p%%:*} b=${p##*:}
        cg_create curve
        cg_exec curve "$W/sleepers" "$t" "$b" >"$W/sleepers.out" 2>&1 &
        SP=$!
        for i in $(seq 200); do grep -q ready "$W/sleepers.out" 2>/dev/null && break; sleep 0.1; done
        for r in $(seq "$ROUNDS"); do
                if [ -z "$BASE" ]; then run new "$NEW" "$t" "$b" "$r"
                elif [ $((r % 2)) = 1 ]; then run base "$BASE" "$t" "$b" "$r"; run new "$NEW" "$t" "$b" "$r"
                else run new "$NEW" "$t" "$b" "$r"; run base "$BASE" "$t" "$b" "$r"; fi
        done
        kill "$SP" 2>/dev/null || true
        wait "$SP" 2>/dev/null || true
        SP=
        cg_destroy curve
done

# ---- instructions per tick (callgrind), 1,024 CPUs x 10,000 threads ----
TICKS=$OUT/ticks.csv
echo "build,fixture,tick,ir" >"$TICKS"
callgrind_ticks() { # NAME BINARY FIXTURE ROOT
        local name=$1 bin=$2 fx=$3 root=$4 d=$W/cg-$1-$3 pid i
        rm -rf "$d" && mkdir -p "$d/run" "$d/lib"
        printf '[Manager]\nMode=latency\nSamplePeriodMs=%s\n[OptIn]\n/bench1=latency\n' "$PERIOD" >"$d/daemon.conf"
        valgrind --tool=callgrind --dump-after=manager_on_tick --dump-instr=no --callgrind-out-file="$d/out" \
                "$bin" --foreground --root "$root" --topology "pack:2 l3:32 l2:8 core:1 pu:2" \
                --config "$d/daemon.conf" --runtime-dir "$d/run" --state-dir "$d/lib" >"$d/log" 2>&1 &
        pid=$!
        for i in $(seq 3000); do
                [ "$(find "$d" -maxdepth 1 -name 'out.*' | wc -l)" -gt "$DUMPS" ] && break
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.2
        done
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        # out.1 is the first tick (it only primes); the steady ticks follow.
        for f in $(find "$d" -maxdepth 1 -name 'out.*' | sort -t. -k2 -n | tail -n +2 | head -n "$DUMPS"); do
                echo "$name,$fx,${f##*.},$(awk '/^(totals|summary):/ {print $2; exit}' "$f")" >>"$TICKS"
        done
        say "callgrind: $name on $fx: $(awk -F, -v n="$name" -v x="$fx" '$1==n && $2==x {printf "%s ", $4}' "$TICKS")"
}
# plain NAME BINARY FIXTURE ROOT: without valgrind, SamplePeriodMs=500 on the
# fixture for CURVE_PLAIN_SECONDS: steerd's CPU time per tick (ticks = the
# window / the period; a tick longer than the period is not expected here).
PLAIN=$OUT/plain.csv
echo "build,fixture,cpu_us_tick,window_s" >"$PLAIN"
plain() {
        local name=$1 bin=$2 fx=$3 root=$4 d=$W/plain-$1-$3 pid c0 c1 t0 t1
        rm -rf "$d" && mkdir -p "$d/run" "$d/lib"
        printf '[Manager]\nMode=latency\nSamplePeriodMs=500\n[OptIn]\n/bench1=latency\n' >"$d/daemon.conf"
        "$bin" --foreground --root "$root" --topology "pack:2 l3:32 l2:8 core:1 pu:2" --config "$d/daemon.conf" \
                --runtime-dir "$d/run" --state-dir "$d/lib" >"$d/log" 2>&1 &
        pid=$!
        sleep 3 # past the first ticks (and the old build's pin-everything tick)
        c0=$(awk '{s += $1} END {printf "%.0f", s}' /proc/"$pid"/task/*/schedstat)
        t0=$(now)
        sleep "${CURVE_PLAIN_SECONDS:-10}"
        c1=$(awk '{s += $1} END {printf "%.0f", s}' /proc/"$pid"/task/*/schedstat)
        t1=$(now)
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        awk -v n="$name" -v x="$fx" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" \
                'BEGIN {printf "%s,%s,%.0f,%.1f\n", n, x, (c1 - c0) / 1e3 / ((t1 - t0) / 0.5), t1 - t0}' >>"$PLAIN"
        say "plain: $name on $fx: $(tail -1 "$PLAIN" | cut -d, -f3) us of CPU per tick"
}
if [ "${CURVE_SKIP_CALLGRIND:-0}" != 1 ]; then
        mkdir -p "$FX"
        for fx in $FIXTURES; do
                case $fx in
                procs1) extra="--procs 1" ;;
                cpuacct) extra="--cpuacct" ;;
                procsall) extra="" ;;
                *) die "unknown fixture $fx" ;;
                esac
                root=$FX/$fx
                rm -rf "$root"
                # shellcheck disable=SC2086
                python3 "$BENCH_TOP/tests/gen-fixture-root.py" "$root" --cpus 1024 --threads 10000 --tick 0 \
                        --schedstat $extra
                [ -z "$BASE" ] || callgrind_ticks base "$BASE" "$fx" "$root"
                callgrind_ticks new "$NEW" "$fx" "$root"
                for r in 1 2; do
                        [ -z "$BASE" ] || plain base "$BASE" "$fx" "$root"
                        plain new "$NEW" "$fx" "$root"
                done
                rm -rf "$root"
        done
fi

[ -s "$CSV" ] && python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def fig(build, t, b):
    v = sorted(float(r['cpu_pct']) for r in rows if r['build'] == build and r['threads'] == t and r['busy'] == b)
    return '%.3g / **%.3g** / %.3g' % (v[0], statistics.median(v), v[-1]) if v else '-', (statistics.median(v) if v else None)
points = []
for r in rows:
    if (r['threads'], r['busy']) not in points:
        points.append((r['threads'], r['busy']))
builds = [b for b in ('base', 'new') if any(r['build'] == b for r in rows)]
print('| opted-in threads | ' + ' | '.join('%s: steerd %% of one CPU' % b for b in builds) + (' | new / base |' if len(builds) == 2 else ' |'))
print('|---' * (len(builds) + 1 + (len(builds) == 2)) + '|')
for t, b in points:
    cells = [fig(x, t, b) for x in builds]
    what = '{:,}'.format(int(t)) + (' (%s busy)' % b if b != '0' else ' sleeping')
    line = '| %s | %s |' % (what, ' | '.join(c[0] for c in cells))
    if len(builds) == 2 and cells[0][1]:
        line += ' %.3f |' % (cells[1][1] / cells[0][1])
    print(line)
EOF

python3 - "$TICKS" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if not rows:
    sys.exit(0)
print()
print('| 1,024 CPUs x 10,000 threads | build | Ir / tick, median | worst tick | worst / median | ticks |')
print('|---|---|---|---|---|---|')
for fx in dict.fromkeys(r['fixture'] for r in rows):
    for b in ('base', 'new'):
        v = [int(r['ir']) for r in rows if r['fixture'] == fx and r['build'] == b and r['ir']]
        if v:
            m = statistics.median(v)
            print('| %s | %s | {:,} | {:,} | %.1fx | %d |'.format(int(m), max(v)) % (fx, b, max(v) / m, len(v)))
EOF

python3 - "$PLAIN" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if rows:
    print()
    print('| 1,024 CPUs x 10,000 threads, plain | build | CPU us per tick (each run) |')
    print('|---|---|---|')
    for fx in dict.fromkeys(r['fixture'] for r in rows):
        for b in ('base', 'new'):
            v = [r['cpu_us_tick'] for r in rows if r['fixture'] == fx and r['build'] == b]
            if v:
                print('| %s | %s | %s |' % (fx, b, ', '.join('{:,}'.format(int(x)) for x in v)))
EOF
