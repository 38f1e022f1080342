# shellcheck shell=bash
# The set-up the live tests share (t-trial, t-search): root and tools, a
# private bus, the host's cpuset hierarchy (v1, else v2), cgroups made and
# removed, the test load moved into one. Source it with $1 = the build dir
# and NAME set (the cgroups' prefix); it defines TMP, CGROOT, TASKS, mkcg,
# load, fail, and a trap that stops steerd ($DAEMON), the loads and the bus.
BUILD=$1
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STEERD=$BUILD/steerd
STEERCTL=$BUILD/steerctl
LOAD=$BUILD/steerd-test-load

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for tool in dbus-daemon python3; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
for b in "$STEERD" "$STEERCTL" "$LOAD"; do
        [ -x "$b" ] || { echo "SKIP: $b not built"; exit 77; }
done

TMP=$(mktemp -d)
chmod 755 "$TMP"
BUS_PID=
DAEMON=
BG_PIDS=()
CGROUPS=()
cleanup() {
        for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
        [ -n "$DAEMON" ] && { kill -TERM "$DAEMON" 2>/dev/null; sleep 0.5; kill -9 "$DAEMON" 2>/dev/null; }
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        wait 2>/dev/null
        for d in "${CGROUPS[@]}"; do rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
        echo "FAIL: $*" >&2
        echo "--- steerd log:" >&2
        tail -40 "$TMP/steerd.log" >&2 2>/dev/null
        exit 1
}

. "$SRC/tests/tools/private-bus.sh"
start_private_bus "$TMP" "" || { cat "$TMP/bus.log" >&2; fail "dbus-daemon did not start"; }

CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
CG2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/self/mounts)
if [ -n "$CPUSET" ]; then
        CGROOT=$CPUSET
        TASKS=tasks
elif [ -n "$CG2" ] && [ -f "$CG2/cgroup.subtree_control" ]; then
        CGROOT=$CG2
        TASKS=cgroup.procs
else
        echo "SKIP: no cgroup hierarchy mounted"
        exit 77
fi
mkcg() {
        mkdir "$CGROOT/$1" || fail "cannot create cgroup $CGROOT/$1"
        CGROUPS+=("$CGROOT/$1")
        if [ "$CGROOT" = "$CPUSET" ]; then
                cat "$CPUSET/cpuset.mems" >"$CPUSET/$1/cpuset.mems"
                cat "$CPUSET/cpuset.cpus" >"$CPUSET/$1/cpuset.cpus"
        fi
}
# load CGROUP ARGS...: the test load, moved into CGROUP before it starts.
load() {
        local cg=$1
        shift
        # It starts once a line comes on stdin, after the move.
        printf 'go\n' | sh -c 'echo $$ >"$1/'$TASKS'"; shift; exec "$@" >/dev/null' sh "$CGROOT/$cg" "$LOAD" "$@" &
        BG_PIDS+=($!)
}
