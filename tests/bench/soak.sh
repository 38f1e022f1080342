#!/usr/bin/env bash
# The soak (issue 15): steerd steering for a long time while everything
# around it moves: thread churn in an opted-in cgroup (steerd-test-load
# --churn), a mode switch every second (latency, balanced, observe, off, in
# turn) and an opt-in/opt-out of a second cgroup every 5 s, through steerctl
# on a private system bus. Every SAMPLE seconds it records steerd's RSS, its
# open descriptors and its ticks (missed ticks = the ticks a steady
# SamplePeriodMs would have taken, minus those taken, in the modes that
# sample; mode off takes none by design).
#
#   tests/bench/soak.sh [--minutes N] [--out DIR] [--build DIR]
#
# Default: 30 minutes into tests/bench/results/soak/ (soak.csv, soak.gp,
# soak.png when gnuplot is there, SUMMARY.md). Needs root and a cgroup v1
# cpuset hierarchy. Runs with PersistRuntime=no: nothing leaks into later runs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MINUTES=30
OUT=$BENCH_TOP/tests/bench/results/soak
BUILD=$BENCH_TOP/build
SAMPLE=10
while [ $# -gt 0 ]; do
        case $1 in
        --minutes) MINUTES=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --build) BUILD=$2; shift 2 ;;
        --sample) SAMPLE=$2; shift 2 ;;
        *) die "unknown option $1 (see the header of $0)" ;;
        esac
done
[ "$(id -u)" -eq 0 ] || die "needs root"
[ -n "$CPUSET" ] || die "needs a cgroup v1 cpuset hierarchy"
STEERD=$BUILD/steerd STEERCTL=$BUILD/steerctl LOAD=$BUILD/steerd-test-load
for b in "$STEERD" "$STEERCTL" "$LOAD"; do [ -x "$b" ] || die "$b missing: build first (scripts/run.sh)"; done
steerd_install_packages dbus-daemon gnuplot-nox
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d)
ROOT=$CPUSET/steerd-soak$$
PIDS=() DAEMON= BUS=
cleanup() {
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
        [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
        [ -n "$BUS" ] && kill "$BUS" 2>/dev/null
        wait 2>/dev/null || true
        for g in a b ""; do rmdir "$ROOT/$g" 2>/dev/null || true; done
        rm -rf "$TMP"
}
trap cleanup EXIT

# A private system bus with the policy steerd ships.
. "$BENCH_TOP/tests/tools/private-bus.sh"
start_private_bus "$TMP" "$BENCH_TOP/units/org.steerd1.conf" || die "dbus-daemon did not start: $(cat "$TMP/bus.log")"
BUS=$BUS_PID

# The cgroups: a (thread churn, opted in by the config), b (steady, opted in
# and out by steerctl). steerd runs in its own cgroup namespace rooted at
# ROOT (steerd-ns.sh): it sees only these two.
for d in "$ROOT" "$ROOT/a" "$ROOT/b"; do
        mkdir "$d"
        cat "$CPUSET/cpuset.mems" >"$d/cpuset.mems"
        cat "$CPUSET/cpuset.cpus" >"$d/cpuset.cpus"
done
start_load() { # CGROUP ARGS...
        local g=$1
        shift
        (echo "$BASHPID" >"$ROOT/$g/cgroup.procs" && echo go | exec "$LOAD" "$@" >/dev/null) &
        PIDS+=($!)
}
start_load a --threads 4 --duty 30 --churn 1000 --seconds $((MINUTES * 60 + 60))
start_load b --threads 4 --duty 40 --seconds $((MINUTES * 60 + 60))

PERIOD_MS=100
cat >"$TMP/steerd.conf" <<EOF
[Manager]
Mode=latency
SamplePeriodMs=$PERIOD_MS
PersistRuntime=no
RescanIntervalMs=5s
[OptIn]
/a=latency
EOF
"$BENCH_DIR/steerd-ns.sh" "$ROOT" "$STEERD" --config "$TMP/steerd.conf" --runtime-dir "$TMP/run" \
        --state-dir "$TMP/lib" --foreground >"$TMP/steerd.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do timeout 5 "$STEERCTL" status >/dev/null 2>&1 && break; sleep 0.1; done
timeout 5 "$STEERCTL" status >/dev/null || die "steerd did not come up: $(tail -5 "$TMP/steerd.log")"

ticks() { "$STEERCTL" status --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["ticks"])'; }
CSV=$OUT/soak.csv
echo "seconds,rss_kb,fds,ticks,sampling_seconds,missed_ticks" >"$CSV"
MODES=(latency balanced observe off)
start=$(date +%s)
end=$((start + MINUTES * 60))
last_ticks=$(ticks) sampling_ms=0 switches=0 optins=0 errors=0
prev_mode=latency prev_ms=$(date +%s%3N)
say "soak: $MINUTES min, steerd PID $DAEMON, results in $OUT"
i=0
while [ "$(date +%s)" -lt "$end" ]; do
        sleep 1
        i=$((i + 1))
        kill -0 "$DAEMON" 2>/dev/null || die "steerd died after $i s: $(tail -5 "$TMP/steerd.log")"
        mode=${MODES[$((i % ${#MODES[@]}))]}
        # Wall time spent in modes that sample (not off), for the missed-tick count.
        now_ms=$(date +%s%3N)
        [ "$prev_mode" != off ] && sampling_ms=$((sampling_ms + now_ms - prev_ms))
        "$STEERCTL" mode "$mode" >/dev/null 2>&1 || errors=$((errors + 1))
        prev_mode=$mode prev_ms=$now_ms
        switches=$((switches + 1))
        if [ $((i % 5)) -eq 0 ]; then
                if [ $((i % 10)) -eq 0 ]; then
                        "$STEERCTL" opt-in /b --policy latency >/dev/null 2>&1 || errors=$((errors + 1))
                else
                        "$STEERCTL" opt-out /b >/dev/null 2>&1 || errors=$((errors + 1))
                fi
                optins=$((optins + 1))
        fi
        if [ $((i % SAMPLE)) -eq 0 ]; then
                now=$(date +%s)
                t=$(ticks)
                [ "$prev_mode" != off ] && sampling_ms=$((sampling_ms + $(date +%s%3N) - prev_ms)) && prev_ms=$(date +%s%3N)
                rss=$(awk '/^VmRSS/ {print $2}' /proc/$DAEMON/status)
                fds=$(ls /proc/$DAEMON/fd | wc -l)
                # A tick per period while sampling; a mode switch may cost
                # its tick a period (one switch a second): that is no miss.
                want=$((sampling_ms / PERIOD_MS))
                missed=$((want - (t - last_ticks) - SAMPLE))
                [ $missed -lt 0 ] && missed=0
                echo "$((now - start)),$rss,$fds,$t,$((sampling_ms / 1000)),$missed" >>"$CSV"
                last_ticks=$t sampling_ms=0
        fi
done
rc=0
kill -TERM "$DAEMON"
wait "$DAEMON" || rc=$?
DAEMON=
errs=$(grep -ciE "error|failed|sanitizer" "$TMP/steerd.log" || true)
gzip -9c "$TMP/steerd.log" >"$OUT/steerd.log.gz" 2>/dev/null || true
python3 - "$CSV" "$OUT/SUMMARY.md" "$MINUTES" "$switches" "$optins" "$errors" "$rc" "$errs" <<'EOP'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out, minutes, switches, optins, errors, rc, errs = sys.argv[2], *sys.argv[3:]
def col(k): return [int(r[k]) for r in rows]
def slope(ys):  # per hour, least squares over seconds
    xs = col("seconds"); n = len(xs)
    if n < 2: return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    d = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / d * 3600 if d else 0.0
rss, fds, missed = col("rss_kb"), col("fds"), col("missed_ticks")
with open(out, "w") as f:
    f.write(f"# Soak: {minutes} min\n\n")
    f.write(f"Thread churn (1,000 threads/s) in /a, a mode switch every second ({switches} in all), an opt-in or\n"
            f"opt-out of /b every 5 s ({optins}), steerctl errors {errors}; steerd exit status {rc} at SIGTERM,\n"
            f"{errs} log lines with error/failed.\n\n")
    f.write("| figure | first sample | last sample | min | max | trend |\n|---|---|---|---|---|---|\n")
    f.write(f"| RSS (kB) | {rss[0]} | {rss[-1]} | {min(rss)} | {max(rss)} | {slope(rss):+.0f} kB/h |\n")
    f.write(f"| open descriptors | {fds[0]} | {fds[-1]} | {min(fds)} | {max(fds)} | {slope(fds):+.1f} /h |\n")
    step = int(rows[1]["seconds"]) - int(rows[0]["seconds"]) if len(rows) > 1 else 0
    f.write(f"| missed ticks per {step} s | {missed[0]} | {missed[-1]} | {min(missed)} | {max(missed)} |"
            f" {sum(missed)} in all |\n")
    f.write("\nPlot: soak.png (soak.gp); raw: soak.csv; steerd's log: steerd.log.gz.\n")
print(open(out).read())
EOP
if command -v gnuplot >/dev/null; then
        cat >"$OUT/soak.gp" <<'EOG'
set terminal pngcairo size 900,600
set output 'soak.png'
set datafile separator ','
set multiplot layout 3,1 title 'steerd soak: RSS, descriptors, missed ticks'
set xlabel 'seconds'
set ylabel 'RSS kB'
plot 'soak.csv' using 1:2 skip 1 with lines title 'RSS'
set ylabel 'fds'
plot 'soak.csv' using 1:3 skip 1 with lines title 'open descriptors'
set ylabel 'missed'
plot 'soak.csv' using 1:6 skip 1 with impulses title 'missed ticks per sample'
unset multiplot
EOG
        (cd "$OUT" && gnuplot soak.gp) || say "gnuplot failed; soak.csv has the figures"
fi
say "soak done: $OUT/SUMMARY.md"
