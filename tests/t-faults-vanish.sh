#!/usr/bin/env bash
# Faults while running (issue 15, item 3a): a managed cgroup is removed while
# steerd holds a window on it. Its load is moved out to the parent cgroup
# first (its threads live on, one with an operator's taskset mask), then the
# cgroup is removed. steerd logs it ("is gone"), keeps running (and keeps
# steering the other cgroup), forgets it (no record of it left in the state
# file, nothing of it tried at the stop), gives back what it held of the
# moved threads, and at SIGTERM gives back everything else; no errors logged
# but the ones about the cgroup being gone. Run three times over (windows
# held at different moments). $1 = build dir. Needs root, a cgroup v1 cpuset
# hierarchy, 2+ CPUs, python3.
set -uo pipefail
BUILD=$1
NAME=steerd-vanish
source "$(dirname "$(readlink -f "$0")")/tools/lib-steerd-test.sh"
ROUNDS=${STEERD_VANISH_ROUNDS:-3}

cat >"$TMP/steerd.conf" <<EOC
[Manager]
Mode=latency
SamplePeriodMs=100
PersistRuntime=no
RescanIntervalMs=500
[Policy]
StickyTicks=1
GuardPercent=1000
WindowHeadroom=0
[OptIn]
/k=latency
/v=latency
EOC

mkgroup k
# Each cgroup's load is 3 threads at 25%: 0.75 of a CPU, so that each fits a
# one-CPU window (WindowHeadroom=0) whatever the other's window does, while
# the two together keep the LLC overloaded. (With 3 busy threads each, a
# window on /k a tick before /v's turn left /v a demand of more than a CPU
# once its threads' util had ramped up: no window on /v for 30 s, seen once
# under ASan.)
start_load k 3 25 2>/dev/null
K_PID=$LAST_PID
t0=$(date +%s%N)
checked=0
for round in $(seq "$ROUNDS"); do
        mkgroup v
        start_load v 3 25 2>/dev/null
        V_PID=$LAST_PID
        operator_pin "$V_PID" "$LAST"
        sleep 0.2
        "$PY" -S "$HELPER" snapshot "$TMP/base.json" "$CPUSET" || fail "snapshot"

        log=$TMP/last-steerd-$round.log
        start_daemon "$TMP/steerd.conf" "$log"
        wait_started "$log"
        held=
        end=$(( $(now_ms) + 30000 ))
        while [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.1
                held=$("$PY" -S "$HELPER" state "$RUN" 2>/dev/null | awk '$1=="cgroup" && $2=="/v" && $4!="None" {print $4}')
                [ -n "$held" ] && break
        done
        [ -n "$held" ] || fail "round $round: steerd held no window on /v within 30 s"
        records=$("$PY" -S "$HELPER" state "$RUN" | grep -c " /v ")
        fds_before=$(ls /proc/"$DAEMON"/fd | wc -l)

        # The load leaves (its threads live on in the parent), the cgroup goes,
        # both between two of steerd's ticks (it is stopped meanwhile): a
        # tick that saw /v empty would give its window back as idle, and
        # the cgroup would go with nothing of it held.
        kill -STOP "$DAEMON"
        echo "$V_PID" >"$TOP/cgroup.procs" || { kill -CONT "$DAEMON"; fail "cannot move the load out of /v"; }
        rmdir "$TOP/v" || { kill -CONT "$DAEMON"; fail "cannot remove $TOP/v"; }
        kill -CONT "$DAEMON"
        gone=
        for i in $(seq 100); do
                sleep 0.1
                grep -q "cgroup /v (.*) is gone" "$log" && { gone=1; break; }
        done
        [ -n "$gone" ] || fail "round $round: the removal of /v was not logged within 10 s"
        sleep 1
        kill -0 "$DAEMON" 2>/dev/null || fail "round $round: steerd died when /v was removed"
        if "$PY" -S "$HELPER" state "$RUN" 2>/dev/null | grep -q " /v "; then
                fail "round $round: /v is still in the state file: $("$PY" -S "$HELPER" state "$RUN")"
        fi
        # The moved threads: what steerd held of them is given back (the
        # operator's pin is theirs). The cpuset check skips /v (gone).
        out=$("$PY" -S "$HELPER" check "$TMP/base.json" "$CPUSET" --prefix "$NAME/v") ||
                fail "round $round: after /v was removed, its threads: $out"
        # Still running and holding what it holds of /k.
        krec=$("$PY" -S "$HELPER" state "$RUN" 2>/dev/null | grep -c " /k ")
        fds_after=$(ls /proc/"$DAEMON"/fd | wc -l)
        stop_daemon || fail "round $round: steerd exited non-zero on SIGTERM"
        [ -e "$RUN/state.json" ] && fail "round $round: state.json left after SIGTERM"
        # After "is gone": its moved threads given back once each, the opt-in
        # rescan's notes, and nothing else about /v.
        after_gone=$(sed -n '/cgroup \/v (.*) is gone/,$p' "$log" | grep " /v" |
                grep -v "is gone\|Cgroup /v: changed\|Cgroup /v: opted in (config) but it does not exist")
        given=$(echo "$after_gone" | grep -cE "^cgroup /v tid [0-9]+: CPUs .* given back$")
        twice=$(echo "$after_gone" | grep -oE "^cgroup /v tid [0-9]+" | sort | uniq -d)
        other=$(echo "$after_gone" | grep -vE "^cgroup /v tid [0-9]+: CPUs .* given back$" | grep .)
        [ -z "$other$twice" ] || fail "round $round: /v was not forgotten: $other$twice"
        errors=$(grep -iE "error|failed|cannot|could not" "$log" | grep -vE "^cgroup /v \(.*\) is gone|No such file|vanished")
        [ -z "$errors" ] || fail "round $round: unexpected errors: $(echo "$errors" | head -5)"
        out=$("$PY" -S "$HELPER" check "$TMP/base.json" "$CPUSET" --prefix "$NAME") ||
                fail "round $round: after SIGTERM: $out"
        [[ $out =~ threads\ compared\ ([0-9]+).*cpusets\ compared\ ([0-9]+).*mismatches\ ([0-9]+) ]]
        checked=$((checked + BASH_REMATCH[1]))
        echo "round $round: window $held on /v ($records records of it), /v removed with its load moved out: logged, $given moved threads given back, steerd alive, /v forgotten ($krec records of /k kept); fds $fds_before -> $fds_after; after SIGTERM: ${BASH_REMATCH[1]} threads, ${BASH_REMATCH[2]} cpusets compared, mismatches ${BASH_REMATCH[3]}"
        kill "$V_PID"; wait "$V_PID" 2>/dev/null
done
echo "t-faults-vanish: all checks passed: $ROUNDS removals, $checked thread masks compared, mismatches 0 ($(( ($(date +%s%N) - t0) / 1000000000 )) s)"
