#!/usr/bin/env bash
# The demo of docs/OPERATIONS.md: four `hackbench -g 1 --threads --pipe` processes,
# each in its own cpuset cgroup opted in with the latency policy; steerd
# steers them for a while (its log says what and why), then stops and gives
# every mask back. Run as root after scripts/run.sh has built steerd.
#   scripts/demo.sh [SECONDS]     (default 15)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SECONDS_TO_RUN=${1:-15}
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root" >&2; exit 1; }
steerd_install_packages "${STEERD_BUILD_PACKAGES[@]}" rt-tests
cd "$STEERD_TOP"
[ -x build/steerd ] || steerd_build build

# The cpuset hierarchy: v1 where it is mounted (hybrid hosts), else cgroup2
# with the cpuset controller enabled for our groups.
CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
if [ -n "$CPUSET" ]; then
        ALL=$(cat "$CPUSET/cpuset.cpus"); MEMS=$(cat "$CPUSET/cpuset.mems"); V2=
else
        CPUSET=$(awk '$3=="cgroup2" {print $2; exit}' /proc/self/mounts)
        echo +cpuset >"$CPUSET/cgroup.subtree_control"
        ALL=$(cat "$CPUSET/cpuset.cpus.effective"); V2=1
fi
TMP=$(mktemp -d)
PIDS=()
cleanup() {
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        for i in 1 2 3 4; do rmdir "$CPUSET/steerd-demo$i" 2>/dev/null || true; done
        rm -rf "$TMP"
}
trap cleanup EXIT

printf '[Manager]\nMode=latency\nSamplePeriodMs=100\n[OptIn]\n' >"$TMP/steerd.conf"
for i in 1 2 3 4; do
        G=$CPUSET/steerd-demo$i
        mkdir -p "$G"
        if [ -z "$V2" ]; then echo "$MEMS" >"$G/cpuset.mems"; echo "$ALL" >"$G/cpuset.cpus"; fi
        echo "/steerd-demo$i=latency" >>"$TMP/steerd.conf"
        sh -c "echo \$\$ > $G/cgroup.procs; exec hackbench -g 1 -f 20 --threads --pipe -s 100 -l 1000000" >/dev/null &
        PIDS+=($!)
done
sleep 1
show() {
        for i in 1 2 3 4; do
                printf '  steerd-demo%d: cpuset.cpus=%-6s threads on CPUs: %s\n' "$i" \
                        "$(cat "$CPUSET/steerd-demo$i/cpuset.cpus" 2>/dev/null || echo -)" \
                        "$(awk '/Cpus_allowed_list/ {print $2}' /proc/"${PIDS[$((i - 1))]}"/task/*/status 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
        done
}
echo "Before steerd:"; show
build/steerd --config "$TMP/steerd.conf" --runtime-dir "$TMP/run" --state-dir "$TMP/lib" --foreground &
STEERD=$!
sleep "$SECONDS_TO_RUN"
echo "While steerd steers:"; show
kill -TERM "$STEERD"; wait "$STEERD"
echo "After steerd stopped:"; show
