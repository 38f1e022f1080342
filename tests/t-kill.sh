#!/usr/bin/env bash
# Kill at any point, 100 times (issue 15, item 2). A steering steerd (Mode=
# latency, sticky pins at once, windows, balancing, the guard undoing some)
# is SIGKILLed at random moments of its life: after a random delay (5 ms ..
# 1.5 s after its start), right after the Nth temporary .state.json.* is
# created (the kill lands while the state file is written), right after the
# Nth rename onto state.json (the intents are recorded, the run of masks is
# being set) or right after the Nth write of an opted-in cgroup's cpuset.cpus
# (between a window and the bookkeeping after it). Each kill is followed by a
# restart that gives back what the killed one left. (A give-back cut short
# by a kill is t-kill-giveback.sh; here STEERD_KILL_RESTARTS=PCT kills that
# many percent of the restarts at their first give-back write too.)
#
# "The restart's give-back is done": the restart runs in Mode=observe and is
# done when it logs "steerd ... started: ". actuator_take_over(), which gives
# back everything the state file names (or keeps and logs what it cannot),
# runs synchronously in manager_start(), before manager_run() prints that
# line and before the first tick; in observe mode no tick changes anything,
# so what is checked then is the take-over's result and nothing else's. It
# must have left no state.json (nothing kept) and no .state.json.*.
#
# Then: every thread of the test's cgroups has its original CPUs (per tid and
# starttime), every test cgroup its original cpuset.cpus. The cgroups: four
# opted in with latency (two with a thread an operator pinned with taskset),
# one balanced, one NOT opted in (never changed), and one that an operator
# changes by hand while steerd holds a window on it, half-way through:
# steerd lets go and never writes it back. At the end a last steerd steers
# and is stopped with SIGTERM, and every thread of the machine and every
# cpuset is compared with the snapshot taken before the first start:
# identical, except threads that exited (and the operator's cgroup).
#
# steerd runs in a cgroup namespace rooted at the test's parent cgroup
# (tools/in-cgroup-ns.sh): it sees the test's cgroups only, not those other
# tests on the machine opt in by xattr.
#
# $1 = build dir. Needs root, a cgroup v1 cpuset hierarchy, 2+ CPUs, python3.
# STEERD_KILLS (default 100) and STEERD_KILL_SEED (default: random, printed)
# reproduce a run; STEERD_KILL_RESTARTS (default 20) is above. KEEP=1 keeps
# the logs (kills.log has a line per kill).
set -uo pipefail
BUILD=$1
NAME=steerd-kill
source "$(dirname "$(readlink -f "$0")")/tools/lib-steerd-test.sh"
KILLS=${STEERD_KILLS:-100}
RESTART_KILLS=${STEERD_KILL_RESTARTS:-20}
SEED=${STEERD_KILL_SEED:-$(( $(date +%s%N) % 32768 ))}
RANDOM=$SEED
FAIL_HINT="seed $SEED: STEERD_KILL_SEED=$SEED STEERD_KILLS=$KILLS STEERD_KILL_RESTARTS=$RESTART_KILLS repeats the sequence"

PULSER=
CLEANUP_HOOKS+=('[ -n "$PULSER" ] && kill "$PULSER" 2>/dev/null')

for g in a b c d e n; do mkgroup $g; done
{
        start_load a 2 80; operator_pin "$LAST_PID" "$LAST"; LOAD_A=$LAST_PID
        start_load b 2 40; operator_pin "$LAST_PID" "$FIRST"
        start_load c 3 15
        start_load d 2 50
        start_load e 2 20
        start_load n 2 20; operator_pin "$LAST_PID" "$FIRST"
} 2>/dev/null
sleep 0.3
for p in "${PIDS[@]}"; do kill -0 "$p" || fail "a load did not start"; done

cat >"$TMP/latency.conf" <<EOC
[Manager]
Mode=latency
SamplePeriodMs=100
PersistRuntime=no
[Policy]
StickyTicks=1
MinResidencyMs=100
GuardWindowMs=300
[OptIn]
/a=latency
/b=latency
/c=latency
/d=latency
/e=balanced
EOC
sed 's/^Mode=latency/Mode=observe/' "$TMP/latency.conf" >"$TMP/observe.conf"
WATCH=()
for g in a b c d e; do WATCH+=(--watch "$TOP/$g/cpuset.cpus"); done
VICTIM=("$PY" -S "$HELPER" victim --dir "$RUN" --map "$CPUSET=$TOP")

"$PY" -S "$HELPER" snapshot "$TMP/base.json" "$CPUSET" || fail "snapshot"
n_threads=$("$PY" -S -c "import json; print(len(json.load(open('$TMP/base.json'))['threads']))")
echo "t-kill: seed $SEED, $KILLS kills; baseline: $n_threads threads on the machine, 6 test cgroups under $TOP (CPUs $ALL)"

# Load that comes and goes: windows open and close, pins are made and given back.
( while :; do kill -STOP "$LOAD_A"; sleep 0.35; kill -CONT "$LOAD_A"; sleep 0.45; done ) 2>/dev/null &
PULSER=$!

EXPECT=()
OPERATOR_AT=$(( (KILLS + 1) / 2 ))
declare -A TRIG=()
t_victim=0 t_restart=0 t_check=0 t_stop=0 res2= opcg= opval= left_temp=0 left_state=0 mid_run=0 open_intents=0 succ_killed=0 succ_mid=0 took_over=0
checks=0 thr_cmp=0 cg_cmp=0
t0=$(date +%s%N)
for i in $(seq "$KILLS"); do
        r=$((RANDOM % 100))
        n=$((1 + RANDOM % 4))
        args=(--mode delay --delay $((5 + RANDOM % 1500)))
        if [ "$i" -eq "$OPERATOR_AT" ]; then
                args=(--mode delay --timeout 3000 --operator-after $((RANDOM % 400)))
                for g in d c b a; do args+=(--operator "$TOP/$g"); done
        elif [ $r -ge 80 ]; then args=(--mode cgwrite --n $n --timeout 1500 "${WATCH[@]}")
        elif [ $r -ge 55 ]; then args=(--mode rename --n $n --timeout 1500)
        elif [ $r -ge 30 ]; then args=(--mode create --n $n --timeout 1500)
        fi
        : >"$TMP/last-victim.log"
        p0=$(now_ms)
        res=$("${VICTIM[@]}" --log "$TMP/last-victim.log" "${args[@]}" -- "${ISO[@]}" --config "$TMP/latency.conf") ||
                fail "the kill helper failed"
        echo "kill $i: ${args[*]:0:4} -> $res" >>"$TMP/kills.log"
        unset R
        declare -A R=()
        for kv in $res; do R[${kv%%=*}]=${kv#*=}; done
        [ "${R[rc]}" = -9 ] || fail "kill $i: steerd was not killed but exited ${R[rc]}: $(tail -3 "$TMP/last-victim.log")"
        TRIG[${R[trigger]}]=$(( ${TRIG[${R[trigger]}]:-0} + 1 ))
        [ "${R[state]}" = malformed ] && fail "kill $i left a malformed state.json (the rename is not atomic?)"
        [ "${R[temp]}" -gt 0 ] && left_temp=$((left_temp + 1))
        [ "${R[state]}" = 1 ] && left_state=$((left_state + 1))
        [ "${R[open]}" -gt 0 ] && open_intents=$((open_intents + 1))
        [ "${R[open]}" -gt 0 ] && [ "${R[applied]}" -gt 0 ] && mid_run=$((mid_run + 1))
        cat "$TMP/last-victim.log" >>"$TMP/all.log"
        if [ "$i" -eq "$OPERATOR_AT" ]; then
                if [ "${R[operator]}" = none ]; then
                        # No window held this time: again at the next kill.
                        OPERATOR_AT=$((i + 1))
                        [ "$OPERATOR_AT" -le "$KILLS" ] ||
                                fail "steerd never held a window on an opted-in cgroup: no operator change made"
                else
                        opval=${R[operator]} opcg=${R[operator_cgroup]}
                        EXPECT=(--expect "/$NAME/$opcg=$opval")
                        echo "  kill $i: an operator wrote $opval into /$opcg's cpuset.cpus (steerd's window), ${R[operator_ms]} ms before the kill"
                fi
        fi

        # Some restarts are killed at their first give-back write, then
        # restarted once more.
        if [ "${R[state]}" = 1 ] && [ $((RANDOM % 100)) -lt "$RESTART_KILLS" ]; then
                : >"$TMP/last-restart-killed.log"
                res2=$("${VICTIM[@]}" --log "$TMP/last-restart-killed.log" --mode cgwrite --n 1 --timeout 300 \
                        "${WATCH[@]}" -- "${ISO[@]}" --config "$TMP/observe.conf") || fail "the kill helper failed"
                echo "  restart killed: $res2" >>"$TMP/kills.log"
                succ_killed=$((succ_killed + 1))
                case " $res2 " in *" trigger=cgwrite "*" state=1 "*) succ_mid=$((succ_mid + 1)) ;; esac
                cat "$TMP/last-restart-killed.log" >>"$TMP/all.log"
        fi

        p1=$(now_ms)
        start_daemon "$TMP/observe.conf" "$TMP/last-restart.log"
        wait_started "$TMP/last-restart.log"
        p2=$(now_ms)
        grep -q "a previous steerd left" "$TMP/last-restart.log" && took_over=$((took_over + 1))
        [ -e "$RUN/state.json" ] &&
                fail "kill $i: the restart kept state.json: $(grep -i "could not\|cannot\|kept" "$TMP/last-restart.log" | head -3)"
        ls -A "$RUN" | grep -q '^\.state\.json\.' && fail "kill $i: a temporary state file is left after the restart: $(ls -A "$RUN")"
        out=$("$PY" -S "$HELPER" check "$TMP/base.json" "$CPUSET" --prefix "$NAME" "${EXPECT[@]}") ||
                fail "kill $i (${args[*]:0:4}: $res${res2:+; the restart killed: $res2}): after the restart, masks not given back:
$out"
        res2=
        p3=$(now_ms)
        [[ $out =~ threads\ compared\ ([0-9]+).*cpusets\ compared\ ([0-9]+) ]] || fail "check said: $out"
        thr_cmp=$((thr_cmp + BASH_REMATCH[1])) cg_cmp=$((cg_cmp + BASH_REMATCH[2])) checks=$((checks + 1))
        stop_daemon || fail "kill $i: the observe steerd exited non-zero"
        cat "$TMP/last-restart.log" >>"$TMP/all.log"
        p4=$(now_ms)
        t_victim=$((t_victim + p1 - p0)) t_restart=$((t_restart + p2 - p1)) t_check=$((t_check + p3 - p2)) t_stop=$((t_stop + p4 - p3))
        if [ -n "$opval" ]; then
                v=$(cat "$TOP/$opcg/cpuset.cpus")
                [ "$v" = "$opval" ] || fail "kill $i: /$opcg has $v, the operator wrote $opval: steerd wrote it back"
        fi
        [ $((i % 20)) = 0 ] && echo "  $i kills, $(( ($(date +%s%N) - t0) / 1000000000 )) s"
done
t_loop=$(( ($(date +%s%N) - t0) / 1000000 ))

grep -q "cgroup /$opcg: CPUs are .*someone else changed them" "$TMP/all.log" ||
        fail "the operator's change of /$opcg was never noticed (no let-go logged)"

# The last steerd steers, then SIGTERM: everything back.
kill "$PULSER"; wait "$PULSER" 2>/dev/null; PULSER=
kill -CONT "$LOAD_A"
start_daemon "$TMP/latency.conf" "$TMP/last-final.log"
for k in $(seq 100); do
        sleep 0.1
        [ -s "$RUN/state.json" ] && break
done
[ -s "$RUN/state.json" ] || { diagnose "$TMP/last-final.log"; fail "the last steerd did not steer within 10 s"; }
sleep 1
stop_daemon || fail "the last steerd exited non-zero on SIGTERM"
cat "$TMP/last-final.log" >>"$TMP/all.log"
[ -e "$RUN/state.json" ] && fail "state.json left after the last SIGTERM"
ls -A "$RUN" | grep -q '^\.state\.json\.' && fail "a temporary state file is left after the last stop: $(ls -A "$RUN")"

# Nothing else on the machine was touched.
final=$("$PY" -S "$HELPER" check "$TMP/base.json" "$CPUSET" --all --prefix "$NAME" "${EXPECT[@]}")
rc=$?
echo "$final" | sed 's/^/  /'
[ $rc = 0 ] || fail "the machine is not as it was before the first start"
others=$(grep -io "cgroup /[^ :]*" "$TMP/all.log" | sort -u | grep -vi "cgroup /[a-e]$")
[ -z "$others" ] || fail "steerd named cgroups that are not opted in: $others"
grep -q "AddressSanitizer\|LeakSanitizer\|runtime error" "$TMP/all.log" && fail "sanitizer report"

trig=$(for k in "${!TRIG[@]}"; do echo -n "$k ${TRIG[$k]}, "; done)
echo "t-kill: $KILLS kills (${trig%, }) in $((t_loop / 1000)).$(( (t_loop % 1000) / 100 )) s: steering until the kill $((t_victim / 1000)) s, restarts until started $((t_restart / 1000)) s, checks $((t_check / 1000)) s, stops $((t_stop / 1000)) s"
echo "  $left_state left a state file, $left_temp a half-written temporary, $open_intents write-ahead intents not yet applied ($mid_run in the middle of a run: some applied, some not)"
echo "  $succ_killed restarts killed at their first give-back write ($succ_mid with the state file still to do); $took_over restarts took over a predecessor's state"
echo "  after each of $checks restarts: $thr_cmp thread masks and $cg_cmp cpusets compared in all, mismatches 0; no state.json or .state.json.* left"
echo "  the operator's change of /$opcg to $opval: let go, never written back; /n (not opted in): never changed, never named"
echo "t-kill: all checks passed ($(( ($(date +%s%N) - t0) / 1000000000 )) s)"
