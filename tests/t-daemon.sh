#!/usr/bin/env bash
# The daemon steers real threads in real cpuset cgroups and always gives them
# back: opt-in via config and xattr, a third party's change is respected,
# SIGTERM restores, a SIGKILLed daemon's successor restores, a reused tid is
# not touched, the config names a cgroup that does not exist, a cgroup is
# removed while managed. $1 = build dir. Needs root and cgroup v1 cpuset
# (or a cgroup2 with the cpuset controller).
set -uo pipefail
BUILD=$1
STEERD=$BUILD/steerd
LOAD=$BUILD/steerd-test-load

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
[ -n "$CPUSET" ] || { echo "SKIP: no cgroup v1 cpuset hierarchy on this host"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 needed"; exit 77; }
ALL=$(cat "$CPUSET/cpuset.effective_cpus" 2>/dev/null || cat "$CPUSET/cpuset.cpus")
MEMS=$(cat "$CPUSET/cpuset.mems")

. "$(dirname "$(readlink -f "$0")")/tools/one-llc.sh"
one_llc_args "$STEERD" "$ALL" || { echo "SKIP: $TOPO_NOTE"; exit 77; }
echo "topology: $TOPO_NOTE"

TMP=$(mktemp -d)
PREFIX=steerd-t$$
PIDS=()
DAEMON=
cleanup() {
        [ -n "$DAEMON" ] && kill -9 "$DAEMON" 2>/dev/null
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        for d in "$CPUSET"/$PREFIX-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- steerd log:" >&2; tail -40 "$TMP"/steerd*.log >&2; exit 1; }

mkgroup() {
        mkdir -p "$CPUSET/$PREFIX-$1"
        echo "$MEMS" >"$CPUSET/$PREFIX-$1/cpuset.mems"
        echo "$ALL" >"$CPUSET/$PREFIX-$1/cpuset.cpus"
}

# start_load GROUP THREADS DUTY -> pid in LAST_PID, running inside the group
start_load() {
        coproc LOADP { "$LOAD" --threads "$2" --duty "$3" --seconds 120; }
        local line
        read -r line <&"${LOADP[0]}"
        local pid=${line#ready }
        echo "$pid" >"$CPUSET/$PREFIX-$1/cgroup.procs"
        echo go >&"${LOADP[1]}"
        PIDS+=("$pid")
        LAST_PID=$pid
        sleep 0.2
}

masks_of() { # pid -> "tid:mask" lines
        for t in /proc/$1/task/*; do
                echo "${t##*/}:$(awk '/Cpus_allowed_list/ {print $2}' "$t/status")"
        done | sort
}

start_daemon() { # config log
        "$STEERD" --config "$1" --runtime-dir "$TMP/state" --state-dir "$TMP/lib" --foreground "${TOPO_ARGS[@]}" \
                >"$2" 2>&1 &
        DAEMON=$!
}

stop_daemon() {
        kill -TERM "$DAEMON"
        local i
        for i in $(seq 50); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.1; done
        wait "$DAEMON"
        local rc=$?
        DAEMON=
        return $rc
}

for g in 1 2 3 4; do mkgroup $g; done
mkgroup x   # opted in by xattr
for g in 1 2 3 4; do start_load $g 2 100; done
LOAD1=${PIDS[0]}
start_load x 1 100
before=$(for p in "${PIDS[@]}"; do masks_of "$p"; done)

python3 -c "import os; os.setxattr('$CPUSET/$PREFIX-x', 'user.steerd.policy', b'latency')"
cat >"$TMP/steerd.conf" <<EOC
[Manager]
Mode=latency
SamplePeriodMs=100
MetricsFile=$TMP/steerd.prom
MetricsIntervalMs=100
[Policy]
GuardPercent=1000
[OptIn]
/$PREFIX-1=latency
/$PREFIX-2=latency
/$PREFIX-3=latency
/$PREFIX-4=latency
/$PREFIX-does-not-exist=latency
EOC

# 1. Opt in -> steerd steers: windows on the overloaded LLC.
start_daemon "$TMP/steerd.conf" "$TMP/steerd1.log"
changed=
for i in $(seq 60); do
        sleep 0.25
        for g in 1 2 3 4 x; do
                [ "$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")" != "$ALL" ] && changed=1
        done
        [ -n "$changed" ] && break
done
[ -n "$changed" ] || fail "no cgroup was steered within 15 s"
sleep 1
echo "steered:"; for g in 1 2 3 4 x; do echo "  $PREFIX-$g: $(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")"; done
grep -q "does-not-exist" "$TMP/steerd1.log" || fail "the missing cgroup was not reported"
# The engine decided only what its checker lets through: nothing dropped.
grep -q '^steerd_actions_dropped_total 0$' "$TMP/steerd.prom" ||
        fail "the policy engine dropped actions: $(grep dropped "$TMP/steerd.prom")"
grep -Eq '^steerd_actions_applied_total [1-9]' "$TMP/steerd.prom" || fail "the metrics show no applied action"
# Per cgroup: a steered group's window in the metrics is its cpuset now
# (read as one file, written whole: no torn read), and steerd's own cost
# and the write's time are there for an operator's alerts.
cp "$TMP/steerd.prom" "$TMP/m1.prom"
copied=$(date +%s.%N)
for g in 1 2 3 4; do
        cpus=$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")
        [ "$cpus" = "$ALL" ] && continue
        w=$(awk -v k="steerd_cgroup_window_cpus{cgroup=\"/$PREFIX-$g\"}" '$1 == k { print $2 }' "$TMP/m1.prom")
        [ -n "$w" ] && [ "$w" -ge 1 ] || fail "no window in the metrics for /$PREFIX-$g (cpuset $cpus): $(grep "$PREFIX-$g" "$TMP/m1.prom")"
        echo "metrics: /$PREFIX-$g window $w CPUs, cpuset $cpus"
        grep -Eq "^steerd_cgroup_actions_total\{cgroup=\"/$PREFIX-$g\"\} [1-9]" "$TMP/m1.prom" ||
                fail "/$PREFIX-$g was steered but its actions counter is not: $(grep "actions_total.*$PREFIX-$g" "$TMP/m1.prom")"
done
grep -Eq '^steerd_cgroup_steering\{cgroup="/'"$PREFIX"'-x"\} 1$' "$TMP/m1.prom" || fail "the xattr cgroup is not said to be steered"
grep -Eq '^steerd_cpu_seconds_total [0-9.]+$' "$TMP/m1.prom" || fail "no steerd_cpu_seconds_total"
grep -Eq '^steerd_resident_memory_bytes [1-9][0-9]+$' "$TMP/m1.prom" || fail "no steerd_resident_memory_bytes"
t1=$(awk '$1 == "steerd_last_write_timestamp_seconds" { print $2 }' "$TMP/m1.prom")
python3 -c "import sys; sys.exit(0 if 0 <= float(sys.argv[2]) - float(sys.argv[1]) < 5 else 1)" "$t1" "$copied" ||
        fail "steerd_last_write_timestamp_seconds '$t1' is not the time of the write (copied at $copied)"
sleep 0.5
t2=$(awk '$1 == "steerd_last_write_timestamp_seconds" { print $2 }' "$TMP/steerd.prom")
python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) > float(sys.argv[1]) else 1)" "$t1" "$t2" ||
        fail "the metrics file was not rewritten within 0.5 s at MetricsIntervalMs=100 ($t1, $t2)"
grep -q "$PREFIX-x.*opted in with policy latency (xattr)" "$TMP/steerd1.log" || fail "the xattr opt-in was not picked up"
kill -0 "$DAEMON" || fail "steerd died"

# 2. A third party changes a steered group's CPUs: steerd lets go of it and
#    never touches it again.
victim_group=
for g in 1 2 3 4; do
        [ "$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")" != "$ALL" ] && { victim_group=$g; break; }
done
[ -n "$victim_group" ] || fail "no config-opted group was steered"
echo "$ALL" >"$CPUSET/$PREFIX-$victim_group/cpuset.cpus"
for i in $(seq 20); do
        sleep 0.1
        [ "$(cat "$CPUSET/$PREFIX-$victim_group/cpuset.cpus")" = "$ALL" ] || fail "steerd took back $PREFIX-$victim_group, which someone else changed"
done
grep -qi "let go\|letting go\|someone else\|changed by another" "$TMP/steerd1.log" || fail "no let-go message"

# 3. SIGTERM -> everything back exactly as it was.
stop_daemon || fail "steerd exited non-zero on SIGTERM"
for g in 1 2 3 4 x; do
        [ "$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")" = "$ALL" ] || fail "$PREFIX-$g not restored: $(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")"
done
after=$(for p in "${PIDS[@]}"; do masks_of "$p"; done)
[ "$before" = "$after" ] || fail "thread masks not restored: $(diff <(echo "$before") <(echo "$after"))"
[ -e "$TMP/state/state.json" ] && fail "state file left after a clean stop"
echo "SIGTERM: every mask restored"

# 4. SIGKILL, then a successor in observe mode restores from the state file.
start_daemon "$TMP/steerd.conf" "$TMP/steerd2.log"
for i in $(seq 60); do
        sleep 0.25
        n=0; for g in 2 3 4 x; do [ "$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")" != "$ALL" ] && n=1; done
        [ $n = 1 ] && [ -s "$TMP/state/state.json" ] && break
done
[ -s "$TMP/state/state.json" ] || fail "no state file while steering"
[ "$(stat -c %a "$TMP/state/state.json")" = 600 ] || fail "state file mode is not 0600"
kill -9 "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
sed 's/^Mode=latency/Mode=observe/' "$TMP/steerd.conf" >"$TMP/observe.conf"
start_daemon "$TMP/observe.conf" "$TMP/steerd3.log"
# The successor restores at start; on a loaded machine the start may take a while.
for i in $(seq 100); do
        n=0; for g in 1 2 3 4 x; do [ "$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")" = "$ALL" ] || n=1; done
        [ $n = 0 ] && break
        sleep 0.1
done
for g in 1 2 3 4 x; do
        [ "$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")" = "$ALL" ] || fail "$PREFIX-$g not restored after SIGKILL"
done
stop_daemon || fail "observe steerd exited non-zero"
echo "SIGKILL + restart: restored from the state file"

# 5. A recorded tid whose starttime differs is not touched.
victim=$(ls /proc/"$LOAD1"/task | head -1)
taskset -p -c 0 "$victim" >/dev/null
vmask=$(awk '/Cpus_allowed_list/ {print $2}' /proc/"$victim"/status)
mkdir -p "$TMP/state"
cat >"$TMP/state/state.json" <<EOJ
{"version": 1, "threads": [{"tid": $victim, "starttime": 1, "cgroup": "/$PREFIX-1", "original": "$ALL", "original_full": true, "request": "$vmask", "last_set": "$vmask", "pending": null}], "cgroups": []}
EOJ
STEERD_DEBUG=1 start_daemon "$TMP/observe.conf" "$TMP/steerd4.log"
for i in $(seq 100); do
        grep -q "tid was reused" "$TMP/steerd4.log" && break
        sleep 0.1
done
grep -q "tid was reused" "$TMP/steerd4.log" || fail "the mismatching starttime was not reported"
grep -q "malformed" "$TMP/steerd4.log" && fail "the hand-made state file was not understood"
[ "$(awk '/Cpus_allowed_list/ {print $2}' /proc/"$victim"/status)" = "$vmask" ] || fail "a thread with another starttime was touched"
stop_daemon || fail "steerd exited non-zero"
taskset -p -c "$ALL" "$victim" >/dev/null
echo "reused tid: not touched"

# 6. A cgroup removed while managed: the rest keeps working.
start_daemon "$TMP/steerd.conf" "$TMP/steerd5.log"
sleep 3
kill "${PIDS[4]}"; wait "${PIDS[4]}" 2>/dev/null
sleep 0.3
rmdir "$CPUSET/$PREFIX-x" || fail "cannot remove the test cgroup"
sleep 2
kill -0 "$DAEMON" || fail "steerd died when a managed cgroup was removed"
stop_daemon || fail "steerd exited non-zero after a cgroup vanished"
for g in 2 3 4; do
        [ "$(cat "$CPUSET/$PREFIX-$g/cpuset.cpus")" = "$ALL" ] || fail "$PREFIX-$g not restored"
done
echo "t-daemon: all checks passed"
