#!/usr/bin/env bash
# Kill in the middle of a give-back (issue 15, item 2: "kill at any point"
# includes the stop and the take-over). In each round a steering steerd
# holds windows on cgroups with threads of their own masks (an operator's
# taskset, recorded by steerd to keep them across its windows), then:
#   odd rounds:  SIGTERM, and SIGKILL right after its give-back's first
#                write of a cgroup's cpuset.cpus (the stop cut short);
#   even rounds: SIGKILL; a restart is SIGKILLed right after its take-over's
#                first cpuset.cpus write (the take-over cut short).
# Then a restart (Mode=observe, done at its "started" line, see t-kill.sh)
# gives back the rest, and every thread and cpuset of the test must be as it
# was, the operator's masks included (in /a one thread is pinned to each end
# of the CPUs, so that every window on /a leaves one of them no room). $1 = build dir. Needs root, a cgroup v1
# cpuset hierarchy, 2+ CPUs, python3. STEERD_GIVEBACK_ROUNDS (default 10).
set -uo pipefail
BUILD=$1
NAME=steerd-giveback
source "$(dirname "$(readlink -f "$0")")/tools/lib-steerd-test.sh"
ROUNDS=${STEERD_GIVEBACK_ROUNDS:-10}

cat >"$TMP/latency.conf" <<EOC
[Manager]
Mode=latency
SamplePeriodMs=100
PersistRuntime=no
[Policy]
StickyTicks=1
GuardPercent=1000
[OptIn]
/a=latency
/b=latency
/c=latency
EOC
sed 's/^Mode=latency/Mode=observe/' "$TMP/latency.conf" >"$TMP/observe.conf"
for g in a b c; do mkgroup $g; done
{
        start_load a 3 100; operator_pin "$LAST_PID" "$LAST" 1; operator_pin "$LAST_PID" "$FIRST" 2
        start_load b 3 100; operator_pin "$LAST_PID" "$FIRST"
        start_load c 2 100
} 2>/dev/null
sleep 0.3
"$PY" -S "$HELPER" snapshot "$TMP/base.json" "$CPUSET" || fail "snapshot"
WATCH=()
for g in a b c; do WATCH+=(--watch "$TOP/$g/cpuset.cpus"); done
t0=$(date +%s%N)
cut=0 checked=0 bad=0
for round in $(seq "$ROUNDS"); do
        : >"$TMP/last-steer.log"
        start_daemon "$TMP/latency.conf" "$TMP/last-steer.log"
        wait_started "$TMP/last-steer.log"
        # Until a window is held over a thread whose own mask steerd recorded.
        held=
        end=$(( $(now_ms) + 30000 ))
        while [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.2
                st=$("$PY" -S "$HELPER" state "$RUN" 2>/dev/null) || continue
                held=$(echo "$st" | awk '$1=="cgroup" && $4!="None" {w[$2]=$4}
                        $1=="thread" && $0 !~ /\(full\)/ && ($2 in w) {print $2 " window " w[$2] ", tid " $3 " own mask " $5; exit}')
                [ -n "$held" ] && break
        done
        [ -n "$held" ] || fail "round $round: no window over a thread with a mask of its own within 30 s"
        records=$(echo "$st" | wc -l)
        if [ $((round % 2)) = 1 ]; then
                how="SIGTERM, SIGKILL at its first give-back write"
                res=$("$PY" -S "$HELPER" interrupt --pid "$DAEMON" --signal TERM "${WATCH[@]}" --timeout 3000)
                wait "$DAEMON" 2>/dev/null; DAEMON=
        else
                how="SIGKILL, the restart SIGKILLed at its first take-over write"
                kill -9 "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
                : >"$TMP/last-restart-killed.log"
                res=$("$PY" -S "$HELPER" victim --dir "$RUN" --map "$CPUSET=$TOP" --log "$TMP/last-restart-killed.log" \
                        --mode cgwrite --n 1 --timeout 3000 "${WATCH[@]}" -- "${ISO[@]}" --config "$TMP/observe.conf")
        fi
        case " $res " in *" trigger=write "* | *" trigger=cgwrite "*) cut=$((cut + 1)) ;; esac
        start_daemon "$TMP/observe.conf" "$TMP/last-restart.log"
        wait_started "$TMP/last-restart.log"
        out=$("$PY" -S "$HELPER" check "$TMP/base.json" "$CPUSET" --prefix "$NAME")
        rc=$?
        stop_daemon || fail "round $round: the restart exited non-zero"
        [[ $out =~ threads\ compared\ ([0-9]+) ]] && checked=$((checked + BASH_REMATCH[1]))
        echo "round $round: $held ($records records); $how: ${res%% *}; after the restart: ${out##*$'\n'}"
        if [ $rc != 0 ]; then
                bad=$((bad + 1))
                echo "$out" | grep MISMATCH | sed 's/^ */    /'
                sed 's/^/    steerd: /' "$TMP/last-steer.log" | grep -v "opted in\|started:\|window set_cgroup\|sticky" | tail -6
                [ -s "$TMP/last-restart-killed.log" ] && sed 's/^/    killed restart: /' "$TMP/last-restart-killed.log" | grep -v "opted in\|started:"
                sed 's/^/    restart: /' "$TMP/last-restart.log" | grep -v "opted in\|started:\|SIGTERM"
                # Put the operator's masks back for the next round.
                "$PY" -S - "$TMP/base.json" <<'EOP'
import json, os, sys
base = json.load(open(sys.argv[1]))
for tid, t in base["threads"].items():
    try:
        cur = os.sched_getaffinity(int(tid))
    except OSError:
        continue
    want = set()
    for part in t["cpus"].split(","):
        a, _, b = part.partition("-")
        want.update(range(int(a), int(b or a) + 1))
    if cur != want and "steerd-giveback" in t["cg"]:
        os.sched_setaffinity(int(tid), want)
EOP
        fi
        : >"$TMP/last-restart-killed.log"
done
[ "$cut" -gt 0 ] || fail "no give-back was cut short (no cpuset.cpus write seen): nothing tested"
[ "$bad" = 0 ] || fail "$bad of $ROUNDS rounds left masks not as they were after a give-back cut short by SIGKILL"
echo "t-kill-giveback: all checks passed: $ROUNDS rounds, $cut give-backs cut short, $checked thread masks compared, mismatches 0 ($(( ($(date +%s%N) - t0) / 1000000000 )) s)"
