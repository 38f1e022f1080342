# shellcheck shell=bash
# Shared by tests/bench/*.sh: packages, cgroups, steerd, perf stat, noise.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_TOP=$(cd "$BENCH_DIR/../.." && pwd)
BENCH_PREFIX=sbench                    # every cgroup we create is below cpuset:/sbench
BENCH_PACKAGES=(rt-tests linux-perf dbench gnuplot-nox stress-ng valgrind python3 gcc
        iproute2 util-linux)

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# shuffle_seeded SEED ITEM...: the items in an order drawn from SEED (a
# string), on one line: the same seed gives the same order on any machine
# (Python's random.Random seeded with a string hashes it with SHA-512, and
# its shuffle has been the same since Python 3.2).
shuffle_seeded() {
        python3 -c 'import random, sys
items = sys.argv[2:]
random.Random(sys.argv[1]).shuffle(items)
print(" ".join(items))' "$@"
}

# steerd_install_packages PKG... (apt-get install of only what dpkg-query
# says is missing) and steerd's build package list.
. "$BENCH_TOP/scripts/lib.sh"

# ---- cgroups (cpuset v1; steerd steers those on this machine) ----

CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
CPUACCT=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuacct(,|$)/ {print $2; exit}' /proc/self/mounts)
ALL_CPUS=$( [ -n "$CPUSET" ] && cat "$CPUSET/cpuset.effective_cpus" 2>/dev/null)
ALL_MEMS=$( [ -n "$CPUSET" ] && cat "$CPUSET/cpuset.effective_mems" 2>/dev/null)
NCPU=$(nproc --all)

# cpulist_expand "0-2,5" -> "0 1 2 5"
cpulist_expand() {
        local part out=()
        IFS=, read -ra parts <<<"$1"
        for part in "${parts[@]}"; do
                if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
        done
        echo "${out[@]}"
}
read -ra CPU_ARRAY <<<"$(cpulist_expand "$ALL_CPUS")"

# The CPU of group I (0-based) of N when N groups are spread evenly: two groups
# per CPU for four groups on two CPUs.
static_cpu() { echo "${CPU_ARRAY[$(($1 * ${#CPU_ARRAY[@]} / $2))]}"; }

# Every cgroup of the benchmark is a child of BENCH_CG (cpuset:/sbench), the
# root of steerd's cgroup namespace (steerd-ns.sh): steerd knows them as /NAME.
BENCH_CG=${CPUSET:+$CPUSET/$BENCH_PREFIX}

cg_setup() {
        mkdir -p "$BENCH_CG"
        echo "$ALL_MEMS" >"$BENCH_CG/cpuset.mems"
        echo "$ALL_CPUS" >"$BENCH_CG/cpuset.cpus"
}

cg_create() { # NAME [CPUS]
        local d=$BENCH_CG/$1
        mkdir -p "$d"
        echo "$ALL_MEMS" >"$d/cpuset.mems"
        echo "${2:-$ALL_CPUS}" >"$d/cpuset.cpus"
}

cg_cpus() { cat "$BENCH_CG/$1/cpuset.cpus"; }

cg_destroy() { # NAME: kill what is left in it, then remove it
        local d=$BENCH_CG/$1 i
        [ -d "$d" ] || return 0
        for i in $(seq 50); do
                [ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] || break
                xargs -r kill -KILL <"$d/cgroup.procs" 2>/dev/null || true
                sleep 0.1
        done
        rmdir "$d" 2>/dev/null || { sleep 0.5; rmdir "$d" 2>/dev/null; } || say "warning: cannot remove $d"
}

# Remove every cgroup of the benchmark; with "all", BENCH_CG itself too.
cg_destroy_all() {
        local d
        [ -n "$BENCH_CG" ] && [ -d "$BENCH_CG" ] || return 0
        for d in "$BENCH_CG"/*/; do [ -d "$d" ] && cg_destroy "$(basename "$d")"; done
        if [ "${1:-}" = all ]; then
                [ -z "$(cat "$BENCH_CG/cgroup.procs" 2>/dev/null)" ] || xargs -r kill -KILL <"$BENCH_CG/cgroup.procs" 2>/dev/null || true
                sleep 0.2
                rmdir "$BENCH_CG" 2>/dev/null || true
        fi
        return 0
}

# cg_exec NAME CMD...: exec CMD inside the cpuset cgroup NAME.
cg_exec() {
        local d=$BENCH_CG/$1
        shift
        sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$d" "$@"
}

# ---- noise: the CPU time of everything that is not this benchmark ----
# The runner moves itself into a cpuacct cgroup; every child inherits it.
# foreign = busy CPU time (/proc/stat) - our cpuacct.usage.

NOISE_CG=
noise_setup() {
        [ -n "$CPUACCT" ] || return 0
        NOISE_CG=$CPUACCT/$BENCH_PREFIX-runner
        mkdir -p "$NOISE_CG" && echo $$ >"$NOISE_CG/cgroup.procs" || NOISE_CG=
}
noise_teardown() {
        [ -n "$NOISE_CG" ] || return 0
        echo $$ >"$CPUACCT/cgroup.procs" 2>/dev/null || true
        local p
        for p in $(cat "$NOISE_CG/cgroup.procs" 2>/dev/null); do echo "$p" >"$CPUACCT/cgroup.procs" 2>/dev/null; done
        rmdir "$NOISE_CG" 2>/dev/null || true
}
# noise_read -> "busy_ticks steal_ticks ours_ns"
noise_read() {
        local ours=0
        [ -n "$NOISE_CG" ] && ours=$(cat "$NOISE_CG/cpuacct.usage")
        awk -v ours="$ours" '$1=="cpu" {print $2+$3+$4+$7+$8, $9, ours; exit}' /proc/stat
}

# ---- perf stat, system wide, software events (they work in VMs) ----

PERF_PID=
perf_start() { # FILE
        perf stat -a -x, -e cpu-migrations,context-switches -o "$1" 2>/dev/null &
        PERF_PID=$!
        sleep 0.3
}
perf_stop() {
        [ -n "$PERF_PID" ] || return 0
        kill -INT "$PERF_PID" 2>/dev/null || true
        wait "$PERF_PID" 2>/dev/null || true
        PERF_PID=
}

# ---- steerd ----

STEERD=${STEERD:-$BENCH_TOP/build-bench/steerd}
# No system bus for our steerd: another steerd on this machine (someone's
# test) may own org.steerd1, and then ours would refuse to start. steerd runs
# without a bus (steerctl cannot reach it; the benchmarks do not need it).
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/steerd-bench
STEERD_PID=

# steerd_start CONF LOG: start steerd in the foreground in its own cgroup
# namespace (steerd-ns.sh: it sees the benchmark's cgroups only, as /NAME),
# its log lines time stamped (wall clock, for the reaction time); wait until
# it runs.
steerd_start() {
        local conf=$1 log=$2 rt
        rt=$(dirname "$log")/steerd-rt
        rm -rf "$rt"
        mkdir -p "$rt/run" "$rt/lib"
        "$BENCH_DIR/steerd-ns.sh" "$BENCH_CG" "$STEERD" --config "$conf" --runtime-dir "$rt/run" \
                --state-dir "$rt/lib" --foreground > >(python3 -u "$BENCH_DIR/tstamp.py" >"$log") 2>&1 &
        STEERD_PID=$!
        local i
        for i in $(seq 100); do
                grep -q ' started: ' "$log" 2>/dev/null && return 0
                kill -0 "$STEERD_PID" 2>/dev/null || break
                sleep 0.05
        done
        say "warning: steerd did not report its start (see $log)"
        kill -0 "$STEERD_PID" 2>/dev/null
}

# CPU time of steerd so far, in ns (all its threads; /proc/PID/task/*/schedstat).
steerd_cpu_ns() {
        [ -n "$STEERD_PID" ] || { echo 0; return; }
        cat /proc/"$STEERD_PID"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}

# steerd_stop: SIGTERM (it gives every mask back), wait; its exit code lands
# in STEERD_RC. Not in a subshell: only this shell can wait for steerd.
STEERD_RC=0
steerd_stop() {
        STEERD_RC=0
        [ -n "$STEERD_PID" ] || return 0
        kill -TERM "$STEERD_PID" 2>/dev/null || true
        wait "$STEERD_PID" || STEERD_RC=$?
        STEERD_PID=
        sleep 0.2 # the time stamper drains the log
}
