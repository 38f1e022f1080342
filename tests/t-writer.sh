#!/usr/bin/env bash
# Another cpuset writer (issue 34, item 4): kubelet's static CPU manager,
# the NRI resource policies and container runtimes write a container's
# cpuset and re-apply it on a loop (kubelet: every 10 s). Here a writer
# re-applies its own cpuset.cpus every WRITER_PERIOD (1 s, to keep the test
# short; the period does not matter to steerd) on a cgroup steerd steers.
# steerd must let go at the first overwrite, say so once, and make no
# further write to that cgroup while the writer goes on (its log and the
# file's content are counted over 8 writer periods); the other opted-in
# cgroup is still steered. When the writer stops for good, steerd still
# leaves the cgroup alone (docs/OPERATIONS.md, "Another cpuset writer"):
# what was let go is its owner's until the cgroup is opted in afresh. $1 =
# build dir. Needs root, a cgroup v1 cpuset hierarchy, 2+ CPUs, python3.
set -uo pipefail
BUILD=$1
NAME=steerd-writer
source "$(dirname "$(readlink -f "$0")")/tools/lib-steerd-test.sh"
PERIOD=${WRITER_PERIOD:-1}

cat >"$TMP/steerd.conf" <<EOC
[Manager]
Mode=latency
SamplePeriodMs=100
PersistRuntime=no
[Policy]
GuardPercent=1000
WindowHeadroom=0
[OptIn]
/w=latency
/k=latency
EOC

mkgroup w
mkgroup k
# 0.75 of a CPU each, both together over an overloaded LLC (as t-faults-vanish).
start_load w 3 25 2>/dev/null
start_load k 3 25 2>/dev/null

log=$TMP/last-steerd.log
start_daemon "$TMP/steerd.conf" "$log"
wait_started "$log"
held=
end=$(( $(now_ms) + 30000 ))
while [ "$(now_ms)" -lt "$end" ]; do
        sleep 0.1
        [ "$(cat "$TOP/w/cpuset.cpus")" != "$ALL" ] && { held=1; break; }
done
[ -n "$held" ] || fail "steerd set no window on /w within 30 s"
echo "steerd's window on /w: $(cat "$TOP/w/cpuset.cpus")"

# The writer: its own cpuset (every CPU), re-applied every PERIOD seconds.
writer() {
        while :; do
                echo "$ALL" >"$TOP/w/cpuset.cpus" 2>/dev/null
                sleep "$PERIOD"
        done
}
writer &
WRITER=$!
CLEANUP_HOOKS+=("kill $WRITER 2>/dev/null")
t_writer=$(now_ms)

# Let go within two writer periods, said once.
end=$(( t_writer + 2000 * PERIOD + 2000 ))
while [ "$(now_ms)" -lt "$end" ]; do
        grep -q "cgroup /w: CPUs are now .*someone else changed them; letting go" "$log" && break
        sleep 0.1
done
grep -q "cgroup /w: CPUs are now .*someone else changed them; letting go" "$log" ||
        fail "steerd did not let go of /w within $((2 * PERIOD + 2)) s of the writer's first write"
mark=$(wc -l <"$log")

# Eight writer periods: no write by steerd to /w (no action line for it,
# and the file never anything but the writer's), /k still steered.
samples=0 other=""
end=$(( $(now_ms) + 8000 * PERIOD ))
while [ "$(now_ms)" -lt "$end" ]; do
        v=$(cat "$TOP/w/cpuset.cpus")
        [ "$v" != "$ALL" ] && other+=" $v"
        samples=$((samples + 1))
        sleep 0.05
done
kill "$WRITER" 2>/dev/null
wait "$WRITER" 2>/dev/null
writes=$(tail -n +"$((mark + 1))" "$log" | grep -c "cgroup /w: CPUs .* -> ")
letgo=$(grep -c "cgroup /w: .*letting go" "$log")
refused=$(grep -c "cgroup /w: refusing" "$log")
echo "writer active $((8 * PERIOD)) s after the let-go: steerd's writes to /w: $writes; /w read $samples times, other values:${other:- none}; let-go said $letgo time(s), refusals said $refused time(s)"
[ "$writes" -eq 0 ] || fail "steerd wrote /w $writes times while the writer was active: $(tail -n +"$((mark + 1))" "$log" | grep "cgroup /w: CPUs" | head -3)"
[ -z "$other" ] || fail "/w held something other than the writer's CPUs:$other"
[ "$letgo" -eq 1 ] || fail "the let-go was said $letgo times"
[ "$refused" -le 1 ] || fail "steerd said it refuses /w $refused times"
[ "$(cat "$TOP/k/cpuset.cpus")" != "$ALL" ] || grep -q "cgroup /k: CPUs" "$log" ||
        fail "/k was not steered meanwhile"

# The writer stopped for good: /w stays as its owner left it.
sleep 3
after=$(tail -n +"$((mark + 1))" "$log" | grep -c "cgroup /w: CPUs .* -> ")
[ "$after" -eq 0 ] && [ "$(cat "$TOP/w/cpuset.cpus")" = "$ALL" ] ||
        fail "after the writer stopped steerd touched /w ($after writes, cpuset $(cat "$TOP/w/cpuset.cpus"))"
echo "writer stopped: /w left as its owner set it ($ALL) for 3 s"

stop_daemon || fail "steerd exited with an error: $(tail -3 "$log")"
[ "$(cat "$TOP/w/cpuset.cpus")" = "$ALL" ] || fail "the stop wrote /w"
echo "PASS: a competing writer: let go once, no write to its cgroup in $((8 * PERIOD)) s of rewrites, left alone after"
