# SPDX-License-Identifier: MIT
# Shared by tests/t-kill.sh and tests/t-faults.sh (sourced, after BUILD=$1):
# the skips (root, a v1 cpuset hierarchy, python3, unshare, 2+ CPUs), a
# parent cgroup $TOP for the test's cgroups, loads inside them, steerd run
# in a cgroup namespace rooted at $TOP (tools/in-cgroup-ns.sh: it sees only
# the test's cgroups, as "/a", "/b", ...), cleanup of every cgroup and
# process on every exit path, and fail() with the logs.
#
# Sets: STEERD LOAD HELPER PY CPUSET ALL MEMS FIRST LAST TMP NAME TOP RUN
# ISO (the steerd command line without --config), PIDS, DAEMON.
STEERD=$BUILD/steerd
LOAD=$BUILD/steerd-test-load
TOOLS=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
HELPER=$TOOLS/kill-helper.py

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
[ -n "$CPUSET" ] || { echo "SKIP: no cgroup v1 cpuset hierarchy on this host"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 needed"; exit 77; }
command -v taskset >/dev/null || { echo "SKIP: taskset needed"; exit 77; }
unshare --cgroup --mount true 2>/dev/null || { echo "SKIP: unshare --cgroup --mount refused"; exit 77; }
[ -x "$STEERD" ] && [ -x "$LOAD" ] || { echo "SKIP: $STEERD or $LOAD not built"; exit 77; }
# The interpreter itself, not a wrapper (a pyenv shim costs 0.4 s a call).
PY=$(python3 -c 'import sys; print(sys.executable)')
ALL=$(cat "$CPUSET/cpuset.effective_cpus" 2>/dev/null || cat "$CPUSET/cpuset.cpus")
MEMS=$(cat "$CPUSET/cpuset.mems")
read -r -a CPUV <<<"$("$PY" -S "$HELPER" list "$ALL")"
[ "${#CPUV[@]}" -ge 2 ] || { echo "SKIP: needs 2 CPUs or more in $CPUSET (has $ALL)"; exit 77; }
FIRST=${CPUV[0]}
LAST=${CPUV[-1]}
# A window needs one LLC over the test's CPUs (tools/one-llc.sh); a test
# that must see the live topology (hotplug) sets LIVE_TOPOLOGY=1.
. "$TOOLS/one-llc.sh"
one_llc_args "$STEERD" "$ALL" || { echo "SKIP: $TOPO_NOTE"; exit 77; }
if [ "${LIVE_TOPOLOGY:-0}" = 1 ] && [ ${#TOPO_ARGS[@]} -gt 0 ]; then
        echo "SKIP: $TOPO_NOTE, and this test needs the live topology"
        exit 77
fi
echo "topology: $TOPO_NOTE"

TMP=$(mktemp -d)
NAME=${NAME:-steerd-test}$$
TOP=$CPUSET/$NAME
RUN=$TMP/run
PIDS=()
DAEMON=
CLEANUP_HOOKS=()
cleanup() {
        local h p d
        for h in "${CLEANUP_HOOKS[@]}"; do eval "$h"; done
        [ -n "$DAEMON" ] && kill -9 "$DAEMON" 2>/dev/null
        for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
        wait 2>/dev/null
        if [ -d "$TOP" ]; then
                for d in "$TOP"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
                rmdir "$TOP" 2>/dev/null || echo "warning: cannot remove $TOP" >&2
        fi
        [ -n "${KEEP:-}" ] && { echo "kept $TMP"; return; }
        rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
exec 3>&2
FAIL_HINT=
fail() {
        echo "FAIL: $*" >&3
        [ -n "$FAIL_HINT" ] && echo "($FAIL_HINT)" >&3
        local f
        for f in "$TMP"/last-*.log; do [ -e "$f" ] && { echo "--- $f:" >&3; tail -25 "$f" >&3; }; done
        exit 1
}

mkdir "$TOP" && echo "$MEMS" >"$TOP/cpuset.mems" && echo "$ALL" >"$TOP/cpuset.cpus" || fail "cannot create $TOP"
mkdir -m 0700 "$RUN"
ISO=("$TOOLS/in-cgroup-ns.sh" "$TOP" "$CPUSET" "$STEERD" --runtime-dir "$RUN" --state-dir "$TMP/lib" --foreground
        "${TOPO_ARGS[@]}")

mkgroup() {
        mkdir -p "$TOP/$1"
        echo "$MEMS" >"$TOP/$1/cpuset.mems"
        echo "$ALL" >"$TOP/$1/cpuset.cpus"
}

# start_load GROUP THREADS DUTY [MORE LOAD ARGS] -> its pid in LAST_PID,
# running inside the group. Not niced: steerd leaves cgroups alone whose
# demand is under a quarter of a CPU, which a niced load on a machine that
# other tests keep busy would be.
start_load() {
        local g=$1 n=$2 duty=$3
        shift 3
        coproc LOADP { exec "$LOAD" --threads "$n" --duty "$duty" --seconds 900 "$@"; }
        local line
        read -r line <&"${LOADP[0]}"
        local pid=${line#ready }
        echo "$pid" >"$TOP/$g/cgroup.procs"
        PIDS+=("$pid")
        LAST_PID=$pid
        echo go >&"${LOADP[1]}"
        local i
        for i in $(seq 200); do
                [ "$(ls /proc/"$pid"/task | wc -l)" -gt "$n" ] && return
                sleep 0.01
        done
        fail "the load in $g did not start its threads"
}

# An operator's own mask on a worker thread of a load (the first, or the Nth).
operator_pin() { # pid cpu [n]
        local tid
        tid=$(ls /proc/"$1"/task | grep -vx "$1" | sort -n | sed -n "${3:-1}p")
        taskset -p -c "$2" "$tid" >/dev/null || fail "taskset $tid"
}

# Milliseconds, for deadlines (loops that run a python check take much longer
# a round on a busy machine than their sleep).
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# Where a steerd that does not get on is stuck.
diagnose() { # [log]
        local p=$DAEMON
        echo "--- steerd $p: $(grep State /proc/$p/status), wchan $(cat /proc/$p/wchan 2>/dev/null)" >&3
        cat /proc/$p/stack >&3 2>/dev/null
        grep -E "Cpus_allowed_list|ctxt_switches" /proc/$p/status >&3
        grep -E "sum_exec_runtime|nr_switches|policy|prio" /proc/$p/sched >&3
        ls -l /proc/$p/fd/ | sed 1d >&3
        echo "fd 2: $(tr '\n' ' ' </proc/$p/fdinfo/2); the log: $(stat -c %s "${1:-/dev/null}") bytes" >&3
        command -v gdb >/dev/null && gdb -p "$p" -batch -ex "thread apply all bt" 2>/dev/null | grep "^#" >&3
}

# start_daemon CONFIG LOG [ENV...]: steerd in the background, in $DAEMON.
start_daemon() {
        local conf=$1 log=$2
        shift 2
        env "$@" "${ISO[@]}" --config "$conf" >"$log" 2>&1 &
        DAEMON=$!
}

# wait_started LOG [SECONDS]: steerd logs "steerd ... started: " once its
# start is done (the take-over of a predecessor's state included).
wait_started() {
        local end=$(( $(now_ms) + ${2:-20} * 1000 ))
        while [ "$(now_ms)" -lt "$end" ]; do
                grep -q "^steerd .* started: " "$1" && return 0
                kill -0 "$DAEMON" 2>/dev/null || fail "steerd exited at its start: $(tail -3 "$1")"
                sleep 0.01
        done
        grep -q "^steerd .* started: " "$1" && return 0
        diagnose "$1"
        fail "steerd did not start within ${2:-20} s"
}

stop_daemon() {
        kill -TERM "$DAEMON"
        wait "$DAEMON"
        local rc=$?
        DAEMON=
        return $rc
}
