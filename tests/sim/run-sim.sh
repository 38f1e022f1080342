#!/usr/bin/env bash
# One run of steerd on the simulated host (tests/sim/simhost.c), for
# tests/t-sim.sh and tests/bench/scale.sh:
#
#   run-sim.sh BUILD OUT CPUS LLC_CPUS CGROUPS THREADS SECONDS
#
# simhost writes a fixture root (on /dev/shm when there is one) and moves
# it every 100 ms; steerd (Mode=latency, SamplePeriodMs=100,
# PersistRuntime=no, every /sim* cgroup opted in) runs on it with
# --affinity-table and --tick-stats for SECONDS, then is stopped with
# SIGTERM; the simulation takes the last give-backs in and stops. Leaves in
# OUT: ticks.txt (a line per tick), summary.json (the simulation's counts),
# steerd.log, sim.log, rc (steerd's exit status), and gone.txt (the live
# cgroups and threads still narrowed after the stop, one per line; empty
# when everything was given back). SIM_SEED (7), SIM_PHASE_S (4),
# SIM_CHURN_S (10), SIM_BUSY_PCT (12); KEEP=1 keeps the root in OUT/root;
# SIM_STEERD_WRAP runs steerd under a tool (valgrind --tool=massif ...);
# steerd keeps the root's files open and re-reads them, as it does /proc
# on a live host (--keep-open; simhost rewrites them in place), unless
# SIM_KEEP_OPEN=0 (each file opened afresh each time, as on other fixtures);
# SIM_MANAGER_EXTRA adds lines to the config's [Manager] (MetricsFile=...).
set -uo pipefail
BUILD=$1 OUT=$2 CPUS=$3 LLC=$4 CGS=$5 THREADS=$6 RUN_S=$7
STEERD=$BUILD/steerd
SIM=$BUILD/steerd-simhost
mkdir -p "$OUT"
BASE=/dev/shm
[ -d "$BASE" ] && [ -w "$BASE" ] || BASE=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$BASE/steerd-sim.XXXXXX")
ROOT=$WORK/root
SIMPID= DPID= MOUNTED=
# /proc keeps no access times; a tmpfs updates one at every read (4% of a
# tick on the simulated host, in touch_atime): the root gets a tmpfs of
# its own mounted noatime where this runs as root, as the host's /proc.
if [ "$(id -u)" = 0 ] && mkdir -p "$ROOT" && mount -t tmpfs -o noatime,mode=0755 steerd-sim "$ROOT" 2>/dev/null; then
        MOUNTED=1
fi
cleanup() {
        [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
        [ -n "$SIMPID" ] && kill -9 "$SIMPID" 2>/dev/null
        wait 2>/dev/null
        if [ -n "${KEEP:-}" ]; then
                mkdir -p "$OUT/root" && cp -a "$ROOT/." "$OUT/root/" 2>/dev/null
        fi
        [ -n "$MOUNTED" ] && umount "$ROOT"
        rm -rf "$WORK"
}
trap cleanup EXIT
die() { echo "run-sim: $*" >&2; exit 1; }

# 2 packages, LLCs of LLC CPUs (cores of 2 threads): CPU ids in LLC order,
# as simhost numbers them.
[ $((CPUS % (2 * LLC))) = 0 ] && [ $((LLC % 2)) = 0 ] || die "CPUS must be a multiple of 2 x LLC_CPUS, LLC_CPUS even"
TOPO="pack:2 l3:$((CPUS / LLC / 2)) l2:$((LLC / 2)) core:1 pu:2"
echo "$TOPO" >"$OUT/topology.txt"
"$SIM" "$ROOT" --cpus "$CPUS" --llc-cpus "$LLC" --cgroups "$CGS" --threads "$THREADS" \
        --seconds $((RUN_S + 120)) --phase-s "${SIM_PHASE_S:-4}" --churn-s "${SIM_CHURN_S:-10}" \
        --busy-pct "${SIM_BUSY_PCT:-12}" --seed "${SIM_SEED:-7}" \
        --requests "$WORK/requests.log" --summary "$OUT/summary.json" --follow "$OUT/ticks.txt" >"$OUT/sim.log" 2>&1 &
SIMPID=$!
for _ in $(seq 1200); do
        [ -e "$ROOT/.ready" ] && break
        kill -0 "$SIMPID" 2>/dev/null || die "simhost ended before the root was ready: $(tail -3 "$OUT/sim.log")"
        sleep 0.1
done
[ -e "$ROOT/.ready" ] || die "the simulated root was not ready after 120 s"

printf '[Manager]\nMode=latency\nSamplePeriodMs=100\nPersistRuntime=no\n%s\n[OptIn]\n/sim*=latency\n' \
        "${SIM_MANAGER_EXTRA:-}" >"$WORK/steerd.conf"
mkdir -p "$WORK/run" "$WORK/lib"
rm -f "$OUT/ticks.txt"
# SIM_STEERD_WRAP: a command to run steerd under (valgrind --tool=massif ...).
KEEP_OPEN=--keep-open
[ "${SIM_KEEP_OPEN:-1}" = 0 ] && KEEP_OPEN=
# The descriptors a service gets on a production host: systemd's default
# hard limit (DefaultLimitNOFILE=524288 since v240; steerd raises its soft
# limit to it and keeps a quarter for thread files, daemon/daemon.c). This
# machine's shell has 20,000, which kept 5,000 thread files open and had the
# rest opened afresh every read. SIM_NOFILE changes it; where it cannot be
# raised (no CAP_SYS_RESOURCE, as on that machine) the host's stays, and
# limits.txt says which it was.
ulimit -Hn "${SIM_NOFILE:-524288}" 2>/dev/null && ulimit -Sn "${SIM_NOFILE:-524288}" 2>/dev/null
echo "nofile $(ulimit -Sn) $(ulimit -Hn)" >"$OUT/limits.txt"
# shellcheck disable=SC2086
DBUS_SYSTEM_BUS_ADDRESS=unix:path=$WORK/no-bus ${SIM_STEERD_WRAP:-} "$STEERD" --foreground --root "$ROOT" --topology "$TOPO" \
        --config "$WORK/steerd.conf" --runtime-dir "$WORK/run" --state-dir "$WORK/lib" \
        --affinity-table "$WORK/requests.log" --tick-stats "$OUT/ticks.txt" $KEEP_OPEN >"$OUT/steerd.log" 2>&1 &
DPID=$!
sleep "$RUN_S"
kill -0 "$DPID" 2>/dev/null || die "steerd ended during the run: $(tail -5 "$OUT/steerd.log")"
kill -TERM "$DPID"
rc=0
wait "$DPID" || rc=$?
DPID=
echo "$rc" >"$OUT/rc"
sleep 0.5 # the simulation takes the last give-backs in
kill -TERM "$SIMPID"
wait "$SIMPID"
SIMPID=

# What is still narrowed: every live cgroup's CPUs and every live thread's
# mask must be all CPUs again.
all=$(cat "$ROOT/sys/devices/system/cpu/online")
{
        for d in "$ROOT"/sys/fs/cgroup/cpuset/sim*/; do
                [ -e "$d/tasks" ] || continue
                c=$(cat "$d/cpuset.cpus")
                [ "$c" = "$all" ] || echo "cgroup $(basename "$d"): cpuset.cpus $c"
        done
        # find batches the paths: 50,000 threads' are too many for one grep.
        find "$ROOT/proc" -mindepth 4 -maxdepth 4 -path "$ROOT/proc/[0-9]*/task/*/status" \
                -exec grep -H "^Cpus_allowed_list:" {} + | grep -v -P "\t$all\$" |
                sed -E "s|^$ROOT/proc/([0-9]+)/.*:\t|thread \1: |"
} >"$OUT/gone.txt"
exit 0
