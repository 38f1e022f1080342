#!/usr/bin/env bash
# Trials (issue 31) as a benchmark: the issue's three trial targets, measured
# live on this host and printed as figures with their 95% intervals and
# met / missed / can't tell (docs/BENCHMARKS.md "Trials").
#
#   1. calibration: N A/A trials (default 20) of a cgroup steerd takes no
#      action on (policy balanced, a light load that never overloads an LLC;
#      checked in each record and in steerd's log): at most 2 of 20 may say
#      "better" or "worse".
#   2. power: trials of `perf bench sched pipe` (in a loop, in an opted-in
#      cgroup, judged by the built-in signal slices, higher is better) say
#      "better" with the interval excluding 1.00, 5 of 5; next to it the
#      benchmark's own paired ratio (pipe's ops/s, mode latency / mode
#      observe, alternated) with steerd-ratio-ci, and whether each trial's
#      effect lies inside that interval.
#   3. cost: steerd's CPU time over equal windows with a trial running and
#      without one, the same light load, alternated pairs: a trial adds at
#      most 0.05% of one CPU.
#   4. harm: a setting that makes steering hurt (stickiness with its limits
#      off: every thread pinned where it last ran, never let go, no guard)
#      on perf bench sched messaging: a trial says "worse"; opted in again
#      with Evaluate=auto at its defaults, steering is off within 10 min;
#      then msg's run time there against a cgroup never opted in, runs
#      alternated: within 2%.
#   5. an application's metric: a trial of a small service on 127.0.0.1
#      (tests/tools/latency-service.py), judged by its request latency
#      histogram's p99 over http, reports on that metric.
#
#   tests/bench/trials.sh [--quick] [--out DIR] [--calibration N] [--power N]
#
# Runs steerd (SamplePeriodMs=100, PersistRuntime=no, Mode=latency) on a
# private D-Bus (tests/tools/private-bus.sh) with cgroups of its own, as
# tests/t-trial.sh does; builds steerd (Release) into build-bench/ unless
# --no-build. Exit 0 also when a target is missed (a benchmark reports),
# 77 when root, dbus-daemon, python3 or perf are missing, 2 on a usage
# error, 1 on an error.
set -uo pipefail
# shellcheck source=tests/bench/lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"

usage() {
        cat <<EOF
usage: tests/bench/trials.sh [OPTIONS]

  --quick            a smoke run (under 5 min): 3 A/A trials of 6 blocks of 2 s,
                     1 power trial of 20 s, 2 benchmark pairs, 2 cost pairs of 10 s
  --out DIR          results folder (default tests/bench/results/trials)
  --calibration N    A/A trials (default 20; --quick 3)
  --power N          power trials (default 5; --quick 1)
  --bench-pairs N    pairs of the benchmark's own pipe ratio (default 5; --quick 2)
  --cost N           cost pairs (default 12; --quick 2)
  --harm-pairs N     msg runs per arm once Evaluate=auto turned steering off
                     (default 20; --quick 4)
  --only ROWS        run only these of calibration,cost,power,app,harm (comma
                     separated; the summary leaves the others out)
  --no-build         use the binaries already in the build folder
  --build-dir DIR    the build folder (default build-bench; implies --no-build)
  -h, --help         this text
EOF
}

ARGS_SEEN="$*"
QUICK=0 OUT='' N_CAL='' N_POW='' N_PAIRS='' N_COST='' N_HARM='' DO_BUILD=1 ONLY=''
BUILD_DIR=$BENCH_TOP/build-bench
while [ $# -gt 0 ]; do
        case $1 in
        --quick) QUICK=1 ;;
        --out) OUT=${2:?--out needs a folder}; shift ;;
        --calibration) N_CAL=${2:-}; shift ;;
        --power) N_POW=${2:-}; shift ;;
        --bench-pairs) N_PAIRS=${2:-}; shift ;;
        --cost) N_COST=${2:-}; shift ;;
        --harm-pairs) N_HARM=${2:-}; shift ;;
        --only) ONLY=${2:?--only needs rows}; shift ;;
        --no-build) DO_BUILD=0 ;;
        --build-dir) BUILD_DIR=${2:?--build-dir needs a folder}; DO_BUILD=0; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
        esac
        shift
done
for row in ${ONLY//,/ }; do
        case $row in
        calibration | cost | power | app | harm) ;;
        *) say "'$row' is no row (calibration, cost, power, app, harm)"; usage >&2; exit 2 ;;
        esac
done
want() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }
for v in N_CAL N_POW N_PAIRS N_COST N_HARM; do
        [ -z "${!v}" ] || [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { say "'${!v}' is not a positive number"; usage >&2; exit 2; }
done

# ---- sizes (docs/BENCHMARKS.md "Trials" has the arithmetic) ----
if [ "$QUICK" = 1 ]; then
        : "${N_CAL:=3}" "${N_POW:=1}" "${N_PAIRS:=2}" "${N_COST:=2}" "${N_HARM:=4}"
        CAL_BLOCK=2 CAL_DURATION=12  # 2 readiness blocks + 2 pairs
        HARM_BLOCK=3 HARM_DURATION=18 # the harm trial: 2 readiness blocks + 2 pairs
        EVAL_BLOCK_MS=3000 EVAL_WAIT=120 # Evaluate=auto's blocks (the default is 30 s); the longest wait
        APP_BLOCK=2 APP_DURATION=12
        POW_BLOCK=3 POW_DURATION=20  # 2 readiness blocks + 2 pairs
        PIPE_LOOPS=300000            # one benchmark run of pipe
        COST_WINDOW=10 COST_BLOCK=2  # s of steerd's CPU time per arm; the cost trial's blocks
else
        : "${N_CAL:=20}" "${N_POW:=5}" "${N_PAIRS:=5}" "${N_COST:=12}" "${N_HARM:=20}"
        CAL_BLOCK=5 CAL_DURATION=60  # 2 readiness blocks + 5 pairs
        HARM_BLOCK=10 HARM_DURATION=120 # 2 readiness blocks + 5 pairs
        EVAL_BLOCK_MS='' EVAL_WAIT=600 # Evaluate=auto at its defaults; the target's 10 min
        APP_BLOCK=5 APP_DURATION=60
        POW_BLOCK=10 POW_DURATION=120 # 2 readiness blocks + 5 pairs
        PIPE_LOOPS=1000000
        COST_WINDOW=15 COST_BLOCK=5
fi
CAL_TARGET_MAX=$((N_CAL * 2 / 20)) # "at most 2 of 20" for N trials
COST_TARGET_PCT=0.05               # % of one CPU a running trial may add
HARM_TARGET=0.02                   # steering off: msg within 2% of a cgroup never opted in
# The harmful setting: stickiness with its limits off (every thread pinned
# where it last ran after one quiet tick, whatever its CPU's load and wait,
# never released, the guard's threshold out of reach, no groups).
HARM_POLICY=${STEERD_TRIALS_HARM_POLICY:-StickyIdlePercent=100 StickyMaxWaitPercent=100 StickyTicks=1 StickyMinWakeups=0 StickyReleasePercent=100 StickyMaxPinsPerTick=1000 WakeGroups=no GuardPercent=1000}
MSG=(perf bench sched messaging -t -g 1 -l 2000) # msg of the full report
CAL_THREADS=2 CAL_DUTY=30          # the calibration and cost load: 0.6 CPU of steerd-test-load
OUT=${OUT:-$BENCH_DIR/results/trials}

# ---- what it needs: root, dbus, python3, perf (else 77) ----
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (cgroups, steerd)"
command -v dbus-daemon >/dev/null || skip "dbus-daemon not installed (steerctl talks to steerd over D-Bus)"
command -v python3 >/dev/null || skip "python3 not installed"
command -v perf >/dev/null || skip "perf not installed (the power target runs perf bench sched pipe)"
perf bench sched pipe -l 1000 >/dev/null 2>&1 || skip "perf bench sched pipe does not run here"

CG2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/self/mounts)
if [ -n "$CPUSET" ]; then
        CGROOT=$CPUSET TASKS=tasks
elif [ -n "$CG2" ] && [ -f "$CG2/cgroup.subtree_control" ]; then
        CGROOT=$CG2 TASKS=cgroup.procs
else
        skip "no cgroup hierarchy mounted"
fi

mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
LOGS=$OUT/logs
REC=$OUT/records
rm -rf "$LOGS" "$REC"
rm -f "$OUT"/summary.md "$OUT"/*.csv "$OUT"/meta.txt
mkdir -p "$LOGS" "$REC"
START=$(date +%s)

# ---- build ----
if [ "$DO_BUILD" = 1 ]; then
        say "building steerd (Release) in build-bench/"
        if ! cmake -S "$BENCH_TOP" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS= >"$LOGS/build.log" 2>&1 ||
                ! make -C "$BUILD_DIR" -j"$NCPU" steerd steerctl steerd-test-load steerd-ratio-ci >>"$LOGS/build.log" 2>&1; then
                die "build failed, see $LOGS/build.log"
        fi
fi
STEERD=$BUILD_DIR/steerd
STEERCTL=$BUILD_DIR/steerctl
LOAD=$BUILD_DIR/steerd-test-load
RATIO_CI=${STEERD_RATIO_CI:-$BUILD_DIR/steerd-ratio-ci}
for b in "$STEERD" "$STEERCTL" "$LOAD" "$RATIO_CI"; do
        [ -x "$b" ] || skip "$b not built (drop --no-build, or build it)"
done
"$STEERCTL" --help 2>&1 | grep -q 'trial CGROUP' || skip "$STEERCTL has no trials (an old build? drop --no-build)"

# ---- clean up on every exit ----
TMP=$(mktemp -d)
chmod 755 "$TMP"
BUS_PID='' DAEMON=''
CGROUPS=()
cg_kill() { # DIR: kill what runs in the cgroup, wait until it is empty
        local i
        for i in $(seq 50); do
                [ -n "$(cat "$1/$TASKS" 2>/dev/null)" ] || return 0
                xargs -r kill -KILL <"$1/$TASKS" 2>/dev/null
                sleep 0.1
        done
}
# shellcheck disable=SC2317 # run by the trap
cleanup() {
        local d
        trap - EXIT INT TERM
        for d in "${CGROUPS[@]}"; do cg_kill "$d"; done
        if [ -n "$DAEMON" ]; then
                kill -TERM "$DAEMON" 2>/dev/null
                for _ in $(seq 50); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$DAEMON" 2>/dev/null
        fi
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        wait 2>/dev/null
        for d in "${CGROUPS[@]}"; do rmdir "$d" 2>/dev/null || say "warning: cannot remove $d"; done
        rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=tests/tools/private-bus.sh disable=SC1091
. "$BENCH_TOP/tests/tools/private-bus.sh"
start_private_bus "$TMP" "" || { cp "$TMP/bus.log" "$LOGS/" 2>/dev/null; die "dbus-daemon did not start (see $LOGS/bus.log)"; }

NAME=sbench-trials-$$
CAL=$NAME-cal   # the A/A and cost cgroup (policy balanced, a light load)
PIPE=$NAME-pipe # the power cgroup (policy latency, perf bench sched pipe)
HARM=$NAME-harm # the harm cgroup (msg under the harmful setting)
BASE=$NAME-base # msg never opted in: the hands-off baseline of the harm row
APP=$NAME-app   # the application-metric cgroup (latency-service.py)
mkcg() {
        mkdir "$CGROOT/$1" || die "cannot create cgroup $CGROOT/$1"
        CGROUPS+=("$CGROOT/$1")
        if [ "$CGROOT" = "$CPUSET" ]; then
                cat "$CPUSET/cpuset.mems" >"$CPUSET/$1/cpuset.mems"
                cat "$CPUSET/cpuset.cpus" >"$CPUSET/$1/cpuset.cpus"
        fi
}
# in_cg CGROUP CMD...: CMD in CGROUP, in the background.
in_cg() {
        local cg=$1
        shift
        sh -c 'echo $$ >"$1/'"$TASKS"'" && shift && exec "$@"' sh "$CGROOT/$cg" "$@" &
        disown # cg_kill ends it, without a "Killed" from this shell
}
mkcg "$CAL"
mkcg "$PIPE"
mkcg "$HARM"
mkcg "$BASE"
mkcg "$APP"

cat >"$TMP/steerd.conf" <<EOF
[Manager]
Mode=latency
SamplePeriodMs=100
RescanIntervalMs=300ms
PersistRuntime=no
EOF
# No background evaluation (Evaluate=auto's light trials) where steerd has
# it: its hands-off blocks would fall into the A/A trials and the cost windows.
grep -qa 'EvaluateDuty' "$STEERD" && echo 'Evaluate=no' >>"$TMP/steerd.conf"
cp "$TMP/steerd.conf" "$OUT/steerd.conf"
# Its log time stamped (wall clock), as the other benchmarks keep it.
STEERD_LOG_STDERR=1 "$STEERD" --config "$TMP/steerd.conf" --state-dir "$TMP/state" --runtime-dir "$TMP/run" \
        --foreground > >(python3 -u "$BENCH_DIR/tstamp.py" >"$LOGS/steerd.log") 2>&1 &
DAEMON=$!
for _ in $(seq 100); do
        "$STEERCTL" status >/dev/null 2>&1 && break
        kill -0 "$DAEMON" 2>/dev/null || die "steerd exited at start (see $LOGS/steerd.log)"
        sleep 0.1
done
"$STEERCTL" status >/dev/null 2>&1 || die "steerd did not answer within 10 s"

# ctl ARGS...: steerctl, its stdout in OUT_TXT; dies on an error.
ctl() {
        OUT_TXT=$("$STEERCTL" "$@" 2>"$TMP/err") || die "steerctl $*: $(cat "$TMP/err")"
}
jget() { python3 -c 'import json,sys; v=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

# trial_run FILE ARGS...: start a trial (steerctl trial ARGS --no-wait --json),
# wait until it ends, keep its record in FILE. TRIAL_ID: its id.
trial_start() {
        ctl trial --no-wait --json "$@"
        TRIAL_ID=$(jget "$OUT_TXT" 'v["id"]')
}
trial_wait() { # FILE SECONDS CGROUP
        local i state=running
        for i in $(seq "$2"); do
                sleep 1
                state=$("$STEERCTL" trial --show "$TRIAL_ID" --json 2>/dev/null |
                        python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)
                [ "$state" = running ] || [ -z "$state" ] || break
        done
        if [ "$state" = running ]; then
                "$STEERCTL" trial --stop "$3" >/dev/null 2>&1
                say "warning: trial $TRIAL_ID did not end within $2 s: stopped"
        fi
        "$STEERCTL" trial --show "$TRIAL_ID" --json >"$1" 2>"$TMP/err" || die "trial --show $TRIAL_ID: $(cat "$TMP/err")"
}
trial_run() { # FILE ARGS... CGROUP
        local file=$1
        shift
        trial_start "$@"
        trial_wait "$file" $((TRIAL_DURATION + 60)) "${*: -1}"
}
# One line for the console: verdict, ratio [ci].
trial_line() {
        python3 -c 'import json,sys
j = json.load(open(sys.argv[1])); e = j.get("estimate")
est = "%.3f [%.3f, %.3f], %d pairs" % (e["ratio"], e["ci_low"], e["ci_high"], e["pairs"]) if e else "no estimate"
print("%s: %s, %s (%s)" % (j["id"], j["state"], j["verdict"], est))' "$1"
}
# Lines of steerd's log that are actions on cgroup /CG, from line FROM on.
log_actions() { # CG FROM
        tail -n +"$2" "$LOGS/steerd.log" |
                grep -E "cgroup /$1( tid [0-9]+)?: (CPUs |sticky )|(set_cgroup_cpus|set_thread_cpus|restore) /$1( |$)" || true
}
log_lines() { wc -l <"$LOGS/steerd.log"; }

# ---- metadata ----
{
        echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "command=tests/bench/trials.sh${ARGS_SEEN:+ $ARGS_SEEN}"
        echo "host_kernel=$(uname -r)"
        echo "cpu_model=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
        echo "ncpu=$NCPU"
        echo "virt=$(systemd-detect-virt --vm 2>/dev/null || echo unknown)"
        echo "steerd_commit=$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "steerd_tree_dirty=$(git -C "$BENCH_TOP" --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
        echo "build_dir=$BUILD_DIR"
        echo "cgroup_root=$CGROOT"
        echo "llcs=$("$STEERD" --once --json --interval 50 --config /dev/null 2>/dev/null | python3 -c 'import json,sys; print(" ".join(l["cpus"] for l in json.load(sys.stdin)["llcs"]))' 2>/dev/null)"
        echo "quick=$QUICK"
        echo "only=${ONLY:-all}"
        echo "calibration=$N_CAL trials of $CAL_DURATION s in blocks of $CAL_BLOCK s"
        echo "calibration_load=steerd-test-load --threads $CAL_THREADS --duty $CAL_DUTY"
        echo "power=$N_POW trials of $POW_DURATION s in blocks of $POW_BLOCK s"
        echo "bench=$N_PAIRS pairs of perf bench sched pipe -l $PIPE_LOOPS"
        echo "cost=$N_COST pairs of $COST_WINDOW s windows, the trial's blocks $COST_BLOCK s"
        echo "harm_policy=$HARM_POLICY"
        echo "harm=a trial of $HARM_DURATION s in blocks of $HARM_BLOCK s; Evaluate=auto blocks ${EVAL_BLOCK_MS:-30000 (default)} ms, waited up to $EVAL_WAIT s; $N_HARM msg runs per arm"
        echo "msg=${MSG[*]}"
        echo "app=a trial of $APP_DURATION s in blocks of $APP_BLOCK s of latency-service.py by its p99"
        echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"

# ---- 1. calibration: A/A trials ----
# Policy balanced (no window, no pin) and a light load (2 threads at 30%
# duty) that never overloads an LLC: steerd has nothing to do for the cgroup,
# so its steered and hands-off blocks are the same and every "better" or
# "worse" is a false alarm.
if want calibration || want cost; then
        ctl opt-in --policy balanced "/$CAL"
        # shellcheck disable=SC2016 # expanded by that sh
        in_cg "$CAL" sh -c 'printf "go\n" | exec "$0" --threads "$1" --duty "$2" --seconds 100000 >/dev/null' \
                "$LOAD" "$CAL_THREADS" "$CAL_DUTY"
        sleep 2
        if want calibration; then
                say "calibration: $N_CAL A/A trials of $CAL_DURATION s (blocks of $CAL_BLOCK s) of /$CAL"
                : >"$OUT/calibration-actions.log"
                TRIAL_DURATION=$CAL_DURATION
                for i in $(seq "$N_CAL"); do
                        from=$(log_lines)
                        f=$REC/calibration-$(printf %02d "$i").json
                        trial_run "$f" --duration "${CAL_DURATION}s" --block "${CAL_BLOCK}s" "/$CAL"
                        log_actions "$CAL" $((from + 1)) | sed "s/^/trial $i: /" >>"$OUT/calibration-actions.log"
                        say "  A/A $i/$N_CAL: $(trial_line "$f")"
                done
        fi

        if want cost; then
                # ---- 3. cost: steerd's CPU time with and without a running trial ----
                # The same light load in the same cgroup; windows of COST_WINDOW s, the arms
                # alternated (pair i: "none" first when i is odd). A trial's work happens at
                # its block ends (counters read, the record written, a bus signal): blocks of
                # COST_BLOCK s put several into every window.
                # cpu: "ns ticks" - steerd's CPU time, all threads (task/*/schedstat, ns)
                # and utime+stime of /proc/PID/stat (clock ticks).
                steerd_cpu() {
                        local ns ticks
                        ns=$(cat /proc/"$DAEMON"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}')
                        ticks=$(awk '{sub(/^.*\) /, ""); print $12 + $13}' /proc/"$DAEMON"/stat)
                        echo "$ns $ticks"
                }
                CLK_TCK=$(getconf CLK_TCK)
                say "cost: $N_COST pairs of $COST_WINDOW s windows, a trial running / none"
                echo "pair,order,arm,wall_ns,cpu_ns,cpu_ticks,clk_tck" >"$OUT/cost.csv"
                for i in $(seq "$N_COST"); do
                        if [ $((i % 2)) = 1 ]; then arms="none trial"; else arms="trial none"; fi
                        k=0
                        for arm in $arms; do
                                k=$((k + 1))
                                if [ "$arm" = trial ]; then
                                        trial_start --duration "$((COST_WINDOW + 60))s" --block "${COST_BLOCK}s" "/$CAL"
                                fi
                                sleep 1
                                read -r ns0 t0 <<<"$(steerd_cpu)"
                                w0=$(date +%s%N)
                                sleep "$COST_WINDOW"
                                read -r ns1 t1 <<<"$(steerd_cpu)"
                                w1=$(date +%s%N)
                                echo "$i,$k,$arm,$((w1 - w0)),$((ns1 - ns0)),$((t1 - t0)),$CLK_TCK" >>"$OUT/cost.csv"
                                if [ "$arm" = trial ]; then
                                        "$STEERCTL" trial --stop "/$CAL" >/dev/null 2>&1 || say "warning: the cost trial $TRIAL_ID had ended"
                                        "$STEERCTL" trial --show "$TRIAL_ID" --json >"$REC/cost-$(printf %02d "$i").json" 2>/dev/null
                                fi
                                say "  pair $i $arm: steerd $(awk -v c=$((ns1 - ns0)) -v w=$((w1 - w0)) 'BEGIN {printf "%.4f", 100 * c / w}')% of one CPU"
                        done
                done
        fi
        cg_kill "$CGROOT/$CAL"
        ctl opt-out "/$CAL"
fi

# ---- 2. power: trials of perf bench sched pipe, judged by slices ----
if want power; then
        ctl opt-in "/$PIPE"
        say "power: $N_POW trials of $POW_DURATION s (blocks of $POW_BLOCK s) of pipe in /$PIPE, judged by slices"
        TRIAL_DURATION=$POW_DURATION
        for i in $(seq "$N_POW"); do
                in_cg "$PIPE" sh -c 'while :; do perf bench sched pipe -l 1000000000 >/dev/null 2>&1 || exit; done'
                sleep 2
                f=$REC/power-$(printf %02d "$i").json
                trial_run "$f" --duration "${POW_DURATION}s" --block "${POW_BLOCK}s" --metric slices "/$PIPE"
                cg_kill "$CGROOT/$PIPE"
                say "  power $i/$N_POW: $(trial_line "$f")"
                sleep 1
        done

        # The benchmark's own ratio: pipe's ops/s with steerd in mode latency
        # (steered) / mode observe (unsteered; the mode change gives every mask
        # back), the order alternated per pair, each run a fresh pipe in /PIPE.
        say "benchmark: $N_PAIRS pairs of perf bench sched pipe -l $PIPE_LOOPS, mode latency / observe"
        echo "pair,order,mode,ops_per_s,usecs_per_op" >"$OUT/pipe.csv"
        for i in $(seq "$N_PAIRS"); do
                if [ $((i % 2)) = 1 ]; then modes="latency observe"; else modes="observe latency"; fi
                k=0
                for mode in $modes; do
                        k=$((k + 1))
                        ctl mode "$mode"
                        sleep 1
                        sh -c 'echo $$ >"$1/'"$TASKS"'" && exec perf bench sched pipe -l "$2"' sh "$CGROOT/$PIPE" "$PIPE_LOOPS" \
                                >"$LOGS/pipe-$i-$mode.txt" 2>&1 || die "perf bench sched pipe failed: $(tail -3 "$LOGS/pipe-$i-$mode.txt")"
                        ops=$(awk '/ops\/sec/ {print $1; exit}' "$LOGS/pipe-$i-$mode.txt")
                        us=$(awk '/usecs\/op/ {print $1; exit}' "$LOGS/pipe-$i-$mode.txt")
                        [ -n "$ops" ] || die "no ops/sec in $LOGS/pipe-$i-$mode.txt"
                        echo "$i,$k,$mode,$ops,$us" >>"$OUT/pipe.csv"
                        say "  pair $i $mode: $ops ops/s"
                done
        done
        ctl mode latency
        ctl opt-out "/$PIPE"
fi

# ---- 5. an application's metric: a service's latency histogram over http ----
if want app; then
        PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        in_cg "$APP" python3 "$BENCH_TOP/tests/tools/latency-service.py" "$PORT" --workers 4 --rate 300 --work-us 1000 \
                >"$LOGS/service.log" 2>&1
        for _ in $(seq 50); do grep -q ready "$LOGS/service.log" && break; sleep 0.1; done
        grep -q ready "$LOGS/service.log" || die "the latency service did not start: $(cat "$LOGS/service.log")"
        ctl opt-in "/$APP"
        say "application metric: a trial of $APP_DURATION s (blocks of $APP_BLOCK s) of latency-service.py by its p99"
        TRIAL_DURATION=$APP_DURATION
        trial_run "$REC/app.json" --duration "${APP_DURATION}s" --block "${APP_BLOCK}s" \
                --metric "http://127.0.0.1:$PORT/metrics#app_request_duration_seconds@p99" "/$APP"
        say "  app: $(trial_line "$REC/app.json")"
        cg_kill "$CGROOT/$APP"
        ctl opt-out "/$APP"
fi

# ---- 4. harm: a setting that hurts, a trial that says so, auto that stops it ----
if want harm; then
        { echo "[Policy]"; tr ' ' '\n' <<<"$HARM_POLICY"; } >>"$TMP/steerd.conf"
        [ -z "$EVAL_BLOCK_MS" ] || sed -i "s/^\[Manager\]$/[Manager]\nEvaluateBlockMs=$EVAL_BLOCK_MS/" "$TMP/steerd.conf"
        cp "$TMP/steerd.conf" "$OUT/steerd-harm.conf"
        ctl reload
        msg_loop() { # CGROUP: msg over and over, in the background
                # shellcheck disable=SC2016 # expanded by that sh
                in_cg "$1" sh -c 'while :; do "$@" >/dev/null 2>&1 || exit; done' sh "${MSG[@]}"
        }
        ctl opt-in "/$HARM"
        msg_loop "$HARM"
        sleep 2
        say "harm: a trial of $HARM_DURATION s (blocks of $HARM_BLOCK s) of msg under $HARM_POLICY"
        TRIAL_DURATION=$HARM_DURATION
        from=$(log_lines)
        trial_run "$REC/harm.json" --duration "${HARM_DURATION}s" --block "${HARM_BLOCK}s" "/$HARM"
        log_actions "$HARM" $((from + 1)) >"$OUT/harm-actions.log"
        say "  harm trial: $(trial_line "$REC/harm.json") ($(wc -l <"$OUT/harm-actions.log") action lines)"
        ctl opt-out "/$HARM"
        sleep 1
        ctl opt-in --evaluate "/$HARM"
        t_eval=$(date +%s%N)
        off_s='' ex=''
        for _ in $(seq "$EVAL_WAIT"); do
                sleep 1
                ex=$("$STEERCTL" explain "/$HARM" 2>/dev/null | grep "Evaluate=auto")
                if grep -q "steering is OFF" <<<"$ex"; then
                        off_s=$(awk -v a="$t_eval" -v b="$(date +%s%N)" 'BEGIN {printf "%.0f", (b - a) / 1e9}')
                        break
                fi
        done
        echo "${off_s:-never} ${ex}" >"$OUT/harm-auto.txt"
        say "  Evaluate=auto: steering off after ${off_s:-more than $EVAL_WAIT} s: ${ex:-no evaluation}"
        cg_kill "$CGROOT/$HARM"
        echo "pair,order,arm,total_s" >"$OUT/harm.csv"
        if [ -n "$off_s" ]; then
                # msg with steering off (opted in, Evaluate=auto turned it off) and
                # in a cgroup never opted in, alternated, one run each a pair.
                say "harm: $N_HARM pairs of msg runs, steering off / never opted in"
                for i in $(seq "$N_HARM"); do
                        if [ $((i % 2)) = 1 ]; then arms="$HARM $BASE"; else arms="$BASE $HARM"; fi
                        k=0
                        for cg in $arms; do
                                k=$((k + 1))
                                sh -c 'echo $$ >"$1/'"$TASKS"'" && shift && exec "$@"' sh "$CGROOT/$cg" "${MSG[@]}" \
                                        >"$LOGS/msg-$i-$k.txt" 2>&1 || die "msg failed: $(tail -3 "$LOGS/msg-$i-$k.txt")"
                                t=$(awk '/Total time/ {print $3; exit}' "$LOGS/msg-$i-$k.txt")
                                [ -n "$t" ] || die "no Total time in $LOGS/msg-$i-$k.txt"
                                arm=off
                                [ "$cg" = "$BASE" ] && arm=never
                                echo "$i,$k,$arm,$t" >>"$OUT/harm.csv"
                        done
                done
                ex=$("$STEERCTL" explain "/$HARM" 2>/dev/null | grep "Evaluate=auto")
                grep -q "steering is OFF" <<<"$ex" || say "warning: steering of /$HARM came back on during the runs: $ex"
                echo "after the runs: $ex" >>"$OUT/harm-auto.txt"
        fi
        ctl opt-out "/$HARM"
fi
END=$(date +%s)
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
echo "elapsed_s=$((END - START))" >>"$OUT/meta.txt"

# ---- the summary ----
python3 - "$OUT" "$RATIO_CI" "$CAL_TARGET_MAX" "$COST_TARGET_PCT" "$POW_DURATION" "$HARM_TARGET" "$EVAL_WAIT" "$ONLY" <<'EOF'
import csv, glob, json, math, os, subprocess, sys

out, ratio_ci, cal_max, cost_target, pow_duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
harm_target, eval_wait = float(sys.argv[6]), int(sys.argv[7])
only = [r for r in sys.argv[8].split(",") if r]
ROW_OF = {"1.": "calibration", "2.": "power", "2b.": "power", "3.": "cost", "4.": "harm", "4b.": "harm",
          "4c.": "harm", "5.": "app"}
meta = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "meta.txt")) if "=" in l)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
L = []
res = {"meta": meta}

def load(pattern):
    recs = []
    for f in sorted(glob.glob(os.path.join(out, "records", pattern))):
        try:
            recs.append((os.path.basename(f), json.load(open(f))))
        except (OSError, ValueError):
            recs.append((os.path.basename(f), None))
    return recs

def est(j, key=None):
    e = (j.get("signals") or {}).get(key) if key else j.get("estimate")
    if not e:
        return "no estimate"
    return "%.3f [%.3f, %.3f]" % (e["ratio"], e["ci_low"], e["ci_high"])

def ratio_tool(pairs, *opts):
    text = "".join("%r %r\n" % p for p in pairs)
    r = subprocess.run([ratio_ci, *opts], input=text, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)

def iv(j):
    if not j or j.get("ci_low") is None:
        return "n/a"
    return "%.3f [%.3f, %.3f]" % (j["ratio"], j["ci_low"], j["ci_high"])

L.append("# Trials benchmark (tests/bench/trials.sh)")
L.append("")
L.append("%s, commit %s%s, %s CPUs (LLCs: %s), %s; %s; %s s." % (
    meta.get("date"), meta.get("steerd_commit"),
    " (+%s changed files)" % meta["steerd_tree_dirty"] if meta.get("steerd_tree_dirty", "0") != "0" else "",
    meta.get("ncpu"), meta.get("llcs"), meta.get("virt"), meta.get("command"), meta.get("elapsed_s")))
L.append("")
L.append("Load average at the start %s, at the end %s: everything else that runs shows up in the figures." % (
    meta.get("loadavg_start"), meta.get("loadavg_end")))
L.append("")
rows = []

# ---- 1. calibration ----
cal = load("calibration-*.json")
acts = [l for l in open(os.path.join(out, "calibration-actions.log"))] if os.path.exists(os.path.join(out, "calibration-actions.log")) else []
acted_log = {int(l.split(":")[0].split()[1]) for l in acts}
n = len(cal)
false = valid = 0
lines = []
for k, (f, j) in enumerate(cal, 1):
    if j is None:
        lines.append("| %d | (no record) | | | |" % k)
        continue
    acted = any("last_action_usec" in b for b in j.get("blocks", [])) or k in acted_log
    said = j.get("state") == "done" and j.get("estimate") is not None
    if said and not acted:
        valid += 1
        if j["verdict"] in ("better", "worse"):
            false += 1
    lines.append("| %d | %s | %s | %s | %s |" % (k, j["verdict"], est(j), j.get("state"),
                                                "steerd acted" if acted else "no action"))
# Wilson 95% interval of the false-alarm rate
def wilson(x, m, z=1.96):
    if m == 0:
        return (0.0, 1.0)
    p = x / m
    d = 1 + z * z / m
    c = (p + z * z / (2 * m)) / d
    h = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / d
    return (max(0.0, c - h), min(1.0, c + h))
lo, hi = wilson(false, valid)
if false > cal_max:
    st = "missed"
elif valid < n or n == 0:
    st = "can't tell"
else:
    st = "met"
verdicts = [j["verdict"] for _, j in cal if j]
cal_fig = "%d of %d A/A trials said better/worse (rate %.0f%% [%.0f%%, %.0f%%]); same: %d, can't tell: %d" % (
    false, valid, 100 * false / max(valid, 1), 100 * lo, 100 * hi, verdicts.count("same"), verdicts.count("can't tell"))
if valid < n:
    cal_fig += "; %d of %d trials left out (no estimate, or steerd acted)" % (n - valid, n)
rows.append(("1. calibration: at most %d of %d A/A trials say better/worse" % (cal_max, n), cal_fig, st))
res["calibration"] = {"trials": n, "valid": valid, "better_or_worse": false, "rate_ci": [lo, hi], "allowed": cal_max, "status": st}

# ---- 2. power ----
pw = load("power-*.json")
ok = bad = 0
plines = []
ratios = []
for k, (f, j) in enumerate(pw, 1):
    if j is None or not j.get("estimate") or j.get("state") != "done":
        plines.append((k, j, None))
        continue
    e = j["estimate"]
    ratios.append(e["ratio"])
    good = j["verdict"] == "better" and e["ci_low"] > 1.0
    ok += good
    bad += not good
    plines.append((k, j, good))
pipe = list(csv.DictReader(open(os.path.join(out, "pipe.csv")))) if os.path.exists(os.path.join(out, "pipe.csv")) else []
pairs = {}
for r in pipe:
    pairs.setdefault(r["pair"], {})[r["mode"]] = float(r["ops_per_s"])
bp = [(v["latency"], v["observe"]) for v in pairs.values() if "latency" in v and "observe" in v]
bench = ratio_tool(bp, "--higher-is-better") if bp else None
res["power"] = {"trials": len(pw), "better": ok, "records": [j for _, j in pw], "bench": bench, "bench_pairs": bp}
if bad:
    st = "missed"
elif ok < len(pw) or not pw or pow_duration > 300:
    st = "can't tell" if pow_duration <= 300 else "missed"
else:
    st = "met"
gm = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
fig = "%d of %d trials of %d s said better with the interval above 1.00" % (ok, len(pw), pow_duration)
if gm:
    fig += " (slices ratio: geometric mean %.3f)" % gm
rows.append(("2. power: pipe trials of at most 5 min say better, CI excluding 1.00, %d of %d" % (len(pw), len(pw)), fig, st))
if bench and bench.get("ci_low") is not None:
    inside = [bench["ci_low"] <= r <= bench["ci_high"] for r in ratios]
    fig = "pipe ops/s latency / observe %s (%d pairs, %s); trial effects inside it: %d of %d" % (
        iv(bench), bench["n"], bench["verdict"], sum(inside), len(ratios))
    st2 = ("met" if all(inside) else "missed") if ratios else "can't tell"
else:
    fig = "no interval (%d pairs)" % len(bp)
    st2 = "can't tell"
rows.append(("2b. the trial's effect lies inside the benchmark's own paired interval", fig, st2))

# ---- 3. cost ----
cost = list(csv.DictReader(open(os.path.join(out, "cost.csv")))) if os.path.exists(os.path.join(out, "cost.csv")) else []
cp = {}
for r in cost:
    w = float(r["wall_ns"])
    cp.setdefault(r["pair"], {})[r["arm"]] = (100 * float(r["cpu_ns"]) / w,
                                            100 * float(r["cpu_ticks"]) / float(r["clk_tck"]) / (w / 1e9))
cpairs = [(v["trial"][0], v["none"][0]) for v in cp.values() if "trial" in v and "none" in v]
tpairs = [(v["trial"][1], v["none"][1]) for v in cp.values() if "trial" in v and "none" in v]
cratio = ratio_tool([p for p in cpairs if p[0] > 0 and p[1] > 0], "--lower-is-better") if cpairs else None
d = [a - b for a, b in cpairs]
dt = [a - b for a, b in tpairs]
cost_res = {"pairs": cpairs, "ratio": cratio, "added_pct": None}
if len(d) >= 2:
    m = sum(d) / len(d)
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1))
    t = T975[len(d) - 2] if len(d) - 1 <= len(T975) else 1.96
    lo, hi = m - t * sd / math.sqrt(len(d)), m + t * sd / math.sqrt(len(d))
    st = "met" if hi <= cost_target else "missed" if lo > cost_target else "can't tell"
    fig = "%+.4f%% of one CPU [%+.4f, %+.4f] (%d pairs; steerd %.3f%% without a trial); ratio with / without %s" % (
        m, lo, hi, len(d), sum(b for _, b in cpairs) / len(cpairs), iv(cratio))
    if dt:
        fig += "; by /proc/PID/stat ticks: %+.4f%%" % (sum(dt) / len(dt))
    cost_res["added_pct"] = [m, lo, hi]
elif d:
    st = "can't tell"
    fig = "%+.4f%% of one CPU (1 pair, no interval)" % d[0]
else:
    st, fig = "can't tell", "no measurement"
cost_res["status"] = st
res["cost"] = cost_res
rows.append(("3. cost: a running trial adds at most %.2f%% of one CPU to steerd" % cost_target, fig, st))

# ---- 4. harm ----
hj = dict(load("harm.json")).get("harm.json")
if hj and hj.get("estimate"):
    st = "met" if hj["verdict"] == "worse" else "missed"
    fig = "%s: latency steered / hands-off %s, %d pairs" % (hj["verdict"], est(hj), hj["estimate"]["pairs"])
else:
    st, fig = "can't tell", "no estimate (%s)" % (hj.get("state") if hj else "no record")
rows.append(("4. harm: a trial of msg under a harmful setting says worse", fig, st))
auto_txt = open(os.path.join(out, "harm-auto.txt")).read().split("\n") if os.path.exists(os.path.join(out, "harm-auto.txt")) else [""]
first = auto_txt[0].split(" ", 1)
off_s = int(first[0]) if first[0].isdigit() else None
fig = ("steering off %d s after the opt-in" % off_s) if off_s is not None else "not off within %d s" % eval_wait
if len(first) > 1 and first[1]:
    fig += " (%s)" % first[1].strip().replace("|", "/")
st = "met" if off_s is not None and off_s <= 600 else "missed"
rows.append(("4b. Evaluate=auto turns steering of it off within 10 min", fig, st))
hr = list(csv.DictReader(open(os.path.join(out, "harm.csv")))) if os.path.exists(os.path.join(out, "harm.csv")) else []
hp = {}
for r in hr:
    hp.setdefault(r["pair"], {})[r["arm"]] = float(r["total_s"])
hpairs = [(v["off"], v["never"]) for v in hp.values() if "off" in v and "never" in v]
hratio = ratio_tool(hpairs, "--lower-is-better") if len(hpairs) >= 2 else None
if hratio and hratio.get("ci_low") is not None:
    if hratio["ci_low"] >= 1 - harm_target and hratio["ci_high"] <= 1 + harm_target:
        st = "met"
    elif hratio["ci_low"] > 1 + harm_target or hratio["ci_high"] < 1 - harm_target:
        st = "missed"
    else:
        st = "can't tell"
    fig = "msg run time, steering off / never opted in: %s (%d pairs)" % (iv(hratio), len(hpairs))
else:
    st, fig = "can't tell", "no measurement (%d pairs)" % len(hpairs)
rows.append(("4c. steering off: msg within %.0f%% of a cgroup never opted in" % (100 * harm_target), fig, st))
res["harm"] = {"trial": hj, "off_after_s": off_s, "auto": auto_txt, "pairs": hpairs, "ratio": hratio, "status": st}

# ---- 5. application metric ----
aj = dict(load("app.json")).get("app.json")
if aj:
    blocks = aj.get("blocks", [])
    with_metric = sum(1 for b in blocks if isinstance(b.get("metric"), (int, float)) and b["metric"] > 0)
    ok = aj.get("primary") == "metric" and aj.get("state") == "done" and blocks and with_metric == len(blocks)
    fig = "judged by %s: %s %s; %d of %d blocks carry the p99" % (aj.get("primary"), aj.get("verdict"), est(aj), with_metric, len(blocks))
    st = "met" if ok else "missed"
else:
    st, fig = "missed", "no record"
rows.append(("5. a trial of a loopback service reports on its latency histogram (p99)", fig, st))
res["app"] = {"record": aj, "status": st}

def pairs_table(head_a, head_b, pairs, fmt):
    L.append("| pair | %s | %s | ratio |" % (head_a, head_b))
    L.append("|---|---|---|---|")
    for k, (a, b) in enumerate(pairs, 1):
        L.append(("| %d | " + fmt + " | " + fmt + " | %.3f |") % (k, a, b, a / b))
    L.append("")

L.append("## Targets")
L.append("")
L.append("| target | figure (95% interval) | verdict |")
L.append("|---|---|---|")
for r in rows:
    if not only or ROW_OF[r[0].split(" ")[0]] in only:
        L.append("| %s | %s | %s |" % r)
if only:
    L.append("")
    L.append("Only these rows ran (--only %s)." % ",".join(only))
L.append("")
L.append("## 1. Calibration: A/A trials")
L.append("")
L.append("A cgroup opted in with policy balanced (no window, no pin) running `" + meta.get("calibration_load", "") + "`: steerd takes no action on it (checked in each record's blocks and in steerd's log), so its steered and hands-off blocks are the same and every better/worse is a false alarm (" + meta.get("calibration", "") + ").")
L.append("")
L.append("| trial | verdict | ratio [95% CI] (latency) | state | steerd |")
L.append("|---|---|---|---|---|")
L += lines
L.append("")
if acts:
    L.append("steerd's log shows actions on the calibration cgroup (calibration-actions.log): %d lines." % len(acts))
    L.append("")
L.append("## 2. Power: perf bench sched pipe")
L.append("")
L.append("`perf bench sched pipe` in a loop in a cgroup opted in with policy latency; trials judged by slices per second (higher is better; " + meta.get("power", "") + "). A slice is a turn on a CPU (schedstat pcount): a preemption counts too, so slices/s is a proxy of pipe's ops/s, not the same figure.")
L.append("")
L.append("| trial | verdict | slices ratio [95% CI] | latency ratio [95% CI] | says |")
L.append("|---|---|---|---|---|")
for k, j, good in plines:
    if j is None:
        L.append("| %d | (no record) | | | |" % k)
        continue
    L.append("| %d | %s | %s | %s | %s |" % (k, j["verdict"], est(j), est(j, "latency"), j.get("verdict_text", "").replace("|", "/")))
L.append("")
if bp:
    L.append("The benchmark's own ratio (%s, in the same cgroup, steerd in mode latency / mode observe, the order alternated): ops/s %s, %s." % (
        meta.get("bench", ""), iv(bench), bench["verdict"] if bench else "n/a"))
    L.append("")
    pairs_table("latency ops/s", "observe ops/s", bp, "%.0f")
L.append("## 3. Cost: steerd's CPU time with a trial running")
L.append("")
L.append("The calibration cgroup's light load; windows of equal wall time, a trial running (stopped after the window) or none, alternated (" + meta.get("cost", "") + "). steerd's CPU from its threads' schedstat (ns); /proc/PID/stat utime+stime counts clock ticks of 1/%s s, too coarse for 0.05%%, shown as a cross-check." % (cost[0]["clk_tck"] if cost else "?"))
L.append("")
L.append("| pair | with a trial, % of one CPU | without | added |")
L.append("|---|---|---|---|")
for k, (a, b) in enumerate(cpairs, 1):
    L.append("| %d | %.4f | %.4f | %+.4f |" % (k, a, b, a - b))
L.append("")
L.append("## 4. Harm: msg under a setting that hurts, and Evaluate=auto")
L.append("")
L.append("`" + meta.get("msg", "") + "` in a loop in a cgroup opted in with policy latency while steerd runs with `" + meta.get("harm_policy", "") + "` (steerd-harm.conf): stickiness with its limits off. " + meta.get("harm", "") + ". The runs of 4c alternate between the cgroup (opted in, Evaluate=auto having turned steering off) and a cgroup never opted in, with the same CPUs.")
L.append("")
if hj:
    L.append("The trial: %s. Actions on the cgroup during it: harm-actions.log." % hj.get("verdict_text", "").replace("|", "/"))
    L.append("")
if hpairs:
    pairs_table("steering off (s)", "never opted in (s)", hpairs, "%.3f")
L.append("## 5. An application's metric")
L.append("")
if aj:
    L.append("latency-service.py (4 workers, 300 requests/s of 1 ms each) in a cgroup opted in with policy latency, the trial judged by `app_request_duration_seconds@p99` read over http from 127.0.0.1: %s." % aj.get("verdict_text", "").replace("|", "/"))
    L.append("")
L.append("Files: records/*.json (every trial's record, steerctl trial --show --json), pipe.csv, cost.csv, harm.csv, harm-auto.txt, harm-actions.log, meta.txt, steerd.conf, steerd-harm.conf, logs/ (steerd's log, the pipe and msg runs, the service).")
text = "\n".join(L) + "\n"
open(os.path.join(out, "summary.md"), "w").write(text)
json.dump(res, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(text)
EOF
say "results in $OUT (summary.md)"
exit 0
