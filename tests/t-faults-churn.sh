#!/usr/bin/env bash
# Faults while running (issue 15, item 3c): 10,000 threads born and dying
# per second (asked of steerd-test-load --churn 10000; the rate it reaches is
# printed) for 10 s in an opted-in cgroup, beside busy threads, while steerd
# steers (windows, sticky pins whose threads may be gone by the time they are
# applied). steerd stays alive, its fd count does not grow, it logs no error
# other than vanished threads, and its CPU use (user + system, from
# /proc/PID/stat) is printed; at SIGTERM it gives everything back and exits 0
# (in the ASan build: no leak). $1 = build dir. Needs root, a cgroup v1
# cpuset hierarchy, 2+ CPUs, python3.
set -uo pipefail
BUILD=$1
NAME=steerd-churn10k
source "$(dirname "$(readlink -f "$0")")/tools/lib-steerd-test.sh"
RATE=${STEERD_CHURN_RATE:-10000}
SECONDS_=${STEERD_CHURN_SECONDS:-10}

cat >"$TMP/steerd.conf" <<EOC
[Manager]
Mode=latency
SamplePeriodMs=100
PersistRuntime=no
[Policy]
StickyTicks=1
GuardPercent=1000
[OptIn]
/c=latency
/s=latency
EOC
mkgroup c
mkgroup s
start_load s 2 50 2>/dev/null
operator_pin "$LAST_PID" "$LAST"
sleep 0.3
"$PY" -S "$HELPER" snapshot "$TMP/base.json" "$CPUSET" || fail "snapshot"
t0=$(date +%s%N)

start_daemon "$TMP/steerd.conf" "$TMP/last-steerd.log"
wait_started "$TMP/last-steerd.log"
sleep 1
fds_before=$(ls /proc/"$DAEMON"/fd | wc -l)
ticks() { awk '{print $14 + $15}' /proc/"$DAEMON"/stat; }
hz=$(getconf CLK_TCK)
cpu_before=$(ticks)

{ coproc CH { exec "$LOAD" --threads 1 --duty 50 --churn "$RATE" --seconds "$SECONDS_" 2>"$TMP/churn.err"; }; } 2>/dev/null
read -r line <&"${CH[0]}"
ch_pid=${line#ready }
PIDS+=("$ch_pid")
echo "$ch_pid" >"$TOP/c/cgroup.procs"
tc0=$(date +%s%N)
echo go >&"${CH[1]}"
fds_max=$fds_before
while kill -0 "$ch_pid" 2>/dev/null; do
        n=$(ls /proc/"$DAEMON"/fd 2>/dev/null | wc -l)
        [ "$n" -gt "$fds_max" ] && fds_max=$n
        kill -0 "$DAEMON" 2>/dev/null || fail "steerd died under churn"
        sleep 0.5
done
wait "$ch_pid" 2>/dev/null
churned=$(awk '/churned/ {print $2}' "$TMP/churn.err")
tc=$(( ($(date +%s%N) - tc0) / 1000000 ))
cpu_after=$(ticks)
sleep 1
fds_after=$(ls /proc/"$DAEMON"/fd | wc -l)
kill -0 "$DAEMON" || fail "steerd died under churn"
stop_daemon; rc=$?
[ $rc -eq 0 ] || fail "steerd exited $rc at SIGTERM (a sanitizer report?)"
grep -q "AddressSanitizer\|LeakSanitizer\|runtime error" "$TMP/last-steerd.log" && fail "sanitizer report"
errors=$(grep -iE "error|failed|cannot|could not" "$TMP/last-steerd.log" |
        grep -viE "no such process|vanished|gone|ESRCH|No such file|No system bus|No proc connector")
[ -z "$errors" ] || fail "unexpected errors: $(echo "$errors" | head -5)"
[ "$fds_after" -le $((fds_before + 2)) ] || fail "fd count grew from $fds_before to $fds_after"
[ -e "$RUN/state.json" ] && fail "state.json left after SIGTERM"
out=$("$PY" -S "$HELPER" check "$TMP/base.json" "$CPUSET" --prefix "$NAME") || fail "not given back: $out"
[ -n "$churned" ] || churned=0
cpu_ms=$(( (cpu_after - cpu_before) * 1000 / hz ))
echo "t-faults-churn: $churned threads born and gone in $tc ms ($(( churned * 1000 / (tc > 0 ? tc : 1) )) a second, $RATE asked) in an opted-in cgroup"
echo "  steerd: alive, fds $fds_before -> max $fds_max -> $fds_after, CPU $cpu_ms ms in $tc ms ($(( cpu_ms * 100 / (tc > 0 ? tc : 1) ))% of a CPU), $(grep -c . "$TMP/last-steerd.log") log lines, no errors but vanished threads"
echo "  $(grep -c "sticky pinned" "$TMP/last-steerd.log") sticky lines, $(grep -c "window set_cgroup_cpus" "$TMP/last-steerd.log") windows; after SIGTERM (exit 0): $out"
echo "t-faults-churn: all checks passed ($(( ($(date +%s%N) - t0) / 1000000000 )) s)"
