#!/usr/bin/env bash
# The simulated host's own test (tests/sim/simhost.c): on 8 CPUs in 2 LLCs
# of 4, 2 cgroups of 4 threads, without steerd: the root it writes, that
# its counters move, that it takes a thread request and a cgroup write in
# as the kernel would compose them (request ∩ the cgroup's CPUs, the
# cgroup's CPUs when nothing is left), that it removes and creates cgroups;
# and that steerd refuses --affinity-table where it has no place.
#
# $1 = build dir. Needs nothing of the host.
set -uo pipefail
BUILD=$1
SIM=$BUILD/steerd-simhost
[ -x "$SIM" ] && [ -x "$BUILD/steerd" ] || { echo "SKIP: $SIM or steerd not built"; exit 77; }
TMP=$(mktemp -d)
ROOT=$TMP/root
PID=
trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
fail() {
        echo "FAIL: $*"
        tail -5 "$TMP/sim.log"
        exit 1
}
mask() { sed -n 's/^Cpus_allowed_list:\t//p' "$ROOT/proc/$1/task/$1/status"; }
wait_for() { # wait_for SECONDS cmd...
        local i
        for ((i = 0; i < $1 * 10; i++)); do
                "${@:2}" && return 0
                sleep 0.1
        done
        return 1
}
is() { [ "$(mask "$1")" = "$2" ]; }

# The arguments are checked.
"$SIM" "$ROOT" --cpus 8 --llc-cpus 3 --cgroups 2 --threads 8 --requests "$TMP/req" >/dev/null 2>&1 &&
        fail "8 CPUs in LLCs of 3 accepted"
"$BUILD/steerd" --foreground --affinity-table "$TMP/x" >"$TMP/out" 2>&1 && fail "--affinity-table without --root accepted"
grep -q "needs --root" "$TMP/out" || fail "--affinity-table without --root: unclear: $(cat "$TMP/out")"

: >"$TMP/req"
"$SIM" "$ROOT" --cpus 8 --llc-cpus 4 --cgroups 2 --threads 8 --phase-s 1 --churn-s 8 --busy-pct 100 \
        --seconds 30 --seed 3 --requests "$TMP/req" --summary "$TMP/summary.json" >"$TMP/sim.log" 2>&1 &
PID=$!
wait_for 10 test -e "$ROOT/.ready" || fail "no .ready after 10 s"

# The root: every CPU, both cgroups with 4 threads each, a mount table.
[ "$(cat "$ROOT/sys/devices/system/cpu/online")" = 0-7 ] || fail "online: $(cat "$ROOT/sys/devices/system/cpu/online")"
[ "$(grep -c '^cpu[0-9]' "$ROOT/proc/stat")" = 8 ] || fail "/proc/stat has not 8 CPUs"
grep -q "cpuset,cpuacct" "$ROOT/proc/self/mounts" || fail "no cpuset mount in the root"
CG=$ROOT/sys/fs/cgroup/cpuset
[ "$(wc -l <"$CG/sim0000/tasks")" = 4 ] && [ "$(wc -l <"$CG/sim0001/tasks")" = 4 ] || fail "not 4 threads per cgroup"
read -r T1 T2 _ < <(tr '\n' ' ' <"$CG/sim0000/tasks")
[ "$(cat "$ROOT/proc/$T1/cpuset")" = /sim0000 ] || fail "/proc/$T1/cpuset: $(cat "$ROOT/proc/$T1/cpuset")"
is "$T1" 0-7 || fail "a new thread's mask is $(mask "$T1"), not 0-7"

# The counters move: every thread is busy (--busy-pct 100).
read -r e1 _ <"$ROOT/proc/$T1/task/$T1/schedstat"
u1=$(awk '$1 == "cpu0" {print $2 + $5}' "$ROOT/proc/stat")
sleep 0.5
read -r e2 _ <"$ROOT/proc/$T1/task/$T1/schedstat"
u2=$(awk '$1 == "cpu0" {print $2 + $5}' "$ROOT/proc/stat")
[ "$e2" -gt "$e1" ] || fail "a busy thread's run time did not move: $e1 -> $e2"
[ "$u2" -gt "$u1" ] || fail "cpu0's time did not move in /proc/stat: $u1 -> $u2"
# ... in place, as /proc's do (steerd --keep-open keeps them open): the
# same inodes, and the same length (fixed-width counters).
i1=$(stat -c '%i %s' "$ROOT/proc/$T1/task/$T1/schedstat" "$ROOT/proc/$T1/task/$T1/stat" "$ROOT/proc/stat" "$ROOT/proc/pressure/cpu")
sleep 0.3
i2=$(stat -c '%i %s' "$ROOT/proc/$T1/task/$T1/schedstat" "$ROOT/proc/$T1/task/$T1/stat" "$ROOT/proc/stat" "$ROOT/proc/pressure/cpu")
[ "$i1" = "$i2" ] || fail "the counters' files were not rewritten in place: $i1 -> $i2"
read -r e3 _ <"$ROOT/proc/$T1/task/$T1/schedstat"
[ "$e3" -gt "$e2" ] || fail "a busy thread's run time did not move in place: $e2 -> $e3"

# A request is composed with the cgroup's CPUs, again when they change.
echo "$T1 1-2,6" >>"$TMP/req"
echo 0-3 >"$CG/sim0000/cpuset.cpus"
wait_for 3 is "$T1" 1-2 || fail "request 1-2,6 in a cgroup of 0-3: $(mask "$T1"), expected 1-2"
wait_for 3 is "$T2" 0-3 || fail "a thread without a request in a cgroup of 0-3: $(mask "$T2")"
# (rewritten in place: a shorter list is padded with blanks, which readers strip)
[ "$(tr -d ' \n' <"$CG/sim0000/cpuset.effective_cpus")" = 0-3 ] || fail "effective_cpus not 0-3"
echo 5-7 >"$CG/sim0000/cpuset.cpus"
wait_for 3 is "$T1" 6 || fail "request 1-2,6 in a cgroup of 5-7: $(mask "$T1"), expected 6"
echo 4-5 >"$CG/sim0000/cpuset.cpus"
wait_for 3 is "$T1" 4-5 || fail "no room for the request in 4-5: $(mask "$T1"), expected the cgroup's 4-5"
echo "$T1 all" >>"$TMP/req"
echo 0-7 >"$CG/sim0000/cpuset.cpus"
wait_for 3 is "$T1" 0-7 || fail "request withdrawn, cgroup 0-7: $(mask "$T1")"
# A thread runs on a CPU its mask allows.
echo 3 >"$CG/sim0001/cpuset.cpus"
read -r T5 _ < <(tr '\n' ' ' <"$CG/sim0001/tasks")
cpu_of() { sed 's/.*) //' "$ROOT/proc/$1/task/$1/stat" | awk '{print $37 + 0}'; } # field 39
on_cpu() { [ "$(cpu_of "$1")" = "$2" ]; }
wait_for 3 on_cpu "$T5" 3 || fail "thread $T5 of a cgroup of CPU 3 runs on $(cpu_of "$T5")"

# Churn: after 8 s the oldest cgroup is gone with its threads, a new one came.
wait_for 10 test ! -e "$CG/sim0000" || fail "sim0000 not removed after its churn period"
[ ! -e "$ROOT/proc/$T1" ] || fail "a removed cgroup's thread $T1 is still in /proc"
[ -e "$CG/sim0002/tasks" ] || fail "no new cgroup sim0002"
kill -TERM "$PID"
wait "$PID" || fail "simhost exited $?"
PID=
grep -q '"request_errors": 0' "$TMP/summary.json" || fail "request errors: $(cat "$TMP/summary.json")"
grep -q '"requests_read": 2' "$TMP/summary.json" || fail "not 2 requests read: $(cat "$TMP/summary.json")"
echo "PASS: the simulated host's root, counters, composition of requests and cgroup CPUs, placement and churn"
