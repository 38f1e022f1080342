#!/usr/bin/env bash
# Faults while running (issue 15, item 3d): a CPU taken offline while steerd
# holds a window. steerd notices ("Topology changed"), gives back what it
# holds, decides afresh and never offers the offline CPU (no window, no pin
# in the state file names it); the CPU comes back, steerd notices again;
# SIGTERM gives everything back and exits 0.
#
# Skipped unless STEERD_TEST_HOTPLUG=1: on a cgroup v1 host, taking a CPU
# offline removes it for good from the cpuset.cpus of every cgroup of the
# machine (v1 does not put it back at online) and moves the tasks of cpusets
# left without CPUs to their parents. On a shared machine that breaks every
# other cgroup and test; run it on a machine (or VM) of your own. Also
# skipped when the kernel refuses the offline (the reason is printed).
# Without it, hotplug is covered by test-sampler (test_cpu_goes_offline: a
# fixture root whose CPUs go offline between ticks), test-topology (sparse
# offline CPUs) and the VM end-to-end test (tests/vm: CPU hotplug while a
# window is held). $1 = build dir. Needs root, a cgroup v1 cpuset hierarchy,
# 2+ CPUs, python3.
set -uo pipefail
BUILD=$1
if [ "${STEERD_TEST_HOTPLUG:-0}" != 1 ]; then
        echo "SKIP: STEERD_TEST_HOTPLUG=1 not set: offlining a CPU on a cgroup v1 host strips it from every cpuset of the machine for good (other tests' too); covered on fixture roots by test-sampler and test-topology, and by tests/vm"
        exit 77
fi
NAME=steerd-hotplug
LIVE_TOPOLOGY=1
source "$(dirname "$(readlink -f "$0")")/tools/lib-steerd-test.sh"
ONLINE=/sys/devices/system/cpu/cpu$LAST/online
[ -w "$ONLINE" ] || { echo "SKIP: CPU $LAST cannot be taken offline ($ONLINE missing)"; exit 77; }
OFFLINED=
CLEANUP_HOOKS+=('[ -n "$OFFLINED" ] && echo 1 >"$ONLINE"')

cat >"$TMP/steerd.conf" <<EOC
[Manager]
Mode=latency
SamplePeriodMs=100
PersistRuntime=no
[Policy]
StickyTicks=1
GuardPercent=1000
[OptIn]
/h=latency
/g=latency
EOC
mkgroup h
mkgroup g
{ start_load h 3 100; start_load g 3 100; } 2>/dev/null
start_daemon "$TMP/steerd.conf" "$TMP/last-steerd.log"
wait_started "$TMP/last-steerd.log"
end=$(( $(now_ms) + 30000 ))
while [ "$(now_ms)" -lt "$end" ]; do
        sleep 0.2
        "$PY" -S "$HELPER" state "$RUN" 2>/dev/null | grep -q "^cgroup .* window [0-9]" && break
done
"$PY" -S "$HELPER" state "$RUN" 2>/dev/null | grep -q "^cgroup .* window [0-9]" || fail "no window within 30 s"

if ! err=$(echo 0 2>&1 >"$ONLINE"); then
        echo "SKIP: the kernel refused to take CPU $LAST offline: $err"
        exit 77
fi
OFFLINED=1
seen=
end=$(( $(now_ms) + 10000 ))
while [ "$(now_ms)" -lt "$end" ]; do
        grep -q "Topology changed" "$TMP/last-steerd.log" && { seen=1; break; }
        sleep 0.1
done
[ -n "$seen" ] || fail "steerd did not notice CPU $LAST going offline within 10 s"
offered=0 samples=0
end=$(( $(now_ms) + 3000 ))
while [ "$(now_ms)" -lt "$end" ]; do
        s=$("$PY" -S "$HELPER" state "$RUN" 2>/dev/null)
        samples=$((samples + 1))
        echo "$s" | awk '$1=="cgroup" && $4!="None" {print $4} $1=="thread" {for (i = 1; i < NF; i++) if ($i=="last") print $(i+1)}' |
                while read -r m; do "$PY" -S "$HELPER" list "$m"; done | tr ' ' '\n' | grep -qx "$LAST" &&
                offered=$((offered + 1))
        sleep 0.2
done
[ "$offered" = 0 ] || fail "steerd offered the offline CPU $LAST ($offered of $samples samples)"
kill -0 "$DAEMON" || fail "steerd died when CPU $LAST went offline"
n_before=$(grep -c "Topology changed" "$TMP/last-steerd.log")
echo 1 >"$ONLINE" && OFFLINED=
end=$(( $(now_ms) + 10000 ))
while [ "$(now_ms)" -lt "$end" ]; do
        [ "$(grep -c "Topology changed" "$TMP/last-steerd.log")" -gt "$n_before" ] && break
        sleep 0.1
done
[ "$(grep -c "Topology changed" "$TMP/last-steerd.log")" -gt "$n_before" ] || fail "steerd did not notice CPU $LAST coming back"
stop_daemon || fail "steerd exited non-zero on SIGTERM"
[ -e "$RUN/state.json" ] && fail "state.json left after SIGTERM"
echo "t-faults-hotplug: CPU $LAST offline and back: noticed both times, never offered while offline ($samples samples), given back at SIGTERM"
