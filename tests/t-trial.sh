#!/usr/bin/env bash
# Trials live on this host, over a private bus: steerctl trial runs to a
# verdict and keeps a record (blocks, settling, the estimate); hands-off
# blocks hold nothing of the cgroup; bad arguments get clear errors and
# start nothing; one trial per cgroup; --stop, a mode change, an opt-out and
# a vanished cgroup end a trial, each saying why; a kill -9 mid-trial reads
# "interrupted" after the restart; an application metric read from a
# textfile and over http://127.0.0.1 decides a trial.
# $1 = build dir. Needs root, dbus-daemon, python3 and a cgroup hierarchy.
set -uo pipefail
NAME=steerd-ttrial-$$
. "$(dirname "$0")/tools/live-host.sh" "$1"
mkcg "$NAME"
mkcg "$NAME-b"

cat >"$TMP/steerd.conf" <<EOF
[Manager]
Mode=latency
SamplePeriodMs=100
RescanIntervalMs=300ms
PersistRuntime=no
EOF
start_steerd() {
        STEERD_LOG_STDERR=1 "$STEERD" --config "$TMP/steerd.conf" --state-dir "$TMP/state" --runtime-dir "$TMP/run" \
                --foreground >>"$TMP/steerd.log" 2>&1 &
        DAEMON=$!
        for _ in $(seq 100); do
                "$STEERCTL" status >/dev/null 2>&1 && return 0
                kill -0 "$DAEMON" 2>/dev/null || fail "steerd exited at start"
                sleep 0.1
        done
        fail "steerd did not answer within 10 s"
}
start_steerd

sctl() {
        local want=$1
        shift
        "$STEERCTL" "$@" >"$TMP/out" 2>"$TMP/err"
        local rc=$?
        OUT=$(cat "$TMP/out")
        ERR=$(cat "$TMP/err")
        [ "$rc" = "$want" ] || fail "'steerctl $*' exited $rc, expected $want; stdout: $OUT; stderr: $ERR"
}
# record ID: the trial's record as steerd returns it, in $TMP/rec.json.
record() { "$STEERCTL" trial --show "$1" --json >"$TMP/rec.json" 2>"$TMP/err" || fail "trial --show $1: $(cat "$TMP/err")"; }
# check ID 'python expression over j (the record)'
check() {
        record "$1"
        python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$TMP/rec.json" "$2" || fail "record $1: '$2' does not hold: $(head -c 1500 "$TMP/rec.json")"
}
# wait_state ID STATE SECONDS
wait_state() {
        for _ in $(seq $(($3 * 10))); do
                "$STEERCTL" trials --json 2>/dev/null | python3 -c '
import json, sys
sys.exit(0 if any(t["id"] == sys.argv[1] and t["state"] == sys.argv[2] for t in json.load(sys.stdin)) else 1)' "$1" "$2" &&
                        return 0
                sleep 0.1
        done
        fail "trial $1 not $2 within $3 s: $("$STEERCTL" trials 2>&1)"
}
start_trial() {
        sctl 0 trial --no-wait --json "$@"
        ID=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$OUT")
}

load "$NAME" --threads 4 --duty 60 --seconds 600
load "$NAME-b" --threads 2 --duty 30 --seconds 600
sctl 0 opt-in "/$NAME"
sctl 0 opt-in "/$NAME-b"

# ---- bad arguments: clear errors, nothing starts ----
sctl 4 trial --no-wait /steerd-no-such-cgroup-$$
sctl 2 trial --no-wait --duration 3s --block 1s "/$NAME"
grep -q "at least 6 s" <<<"$ERR" || fail "a too short trial: unclear message: $ERR"
sctl 2 trial --no-wait --block 10ms "/$NAME"
grep -q "too short" <<<"$ERR" || fail "too short blocks: unclear message: $ERR"
sctl 2 trial --no-wait --metric "http://10.1.2.3:9100/metrics#x" "/$NAME"
grep -qi "loopback" <<<"$ERR" || fail "a remote metric: unclear message: $ERR"
sctl 2 trial --no-wait --metric "$TMP/none.prom#x" "/$NAME"
grep -q "none.prom" <<<"$ERR" || fail "a missing metric file: unclear message: $ERR"
sctl 2 trial --no-wait --metric "no-hash" "/$NAME"
sctl 2 trial --duration soon "/$NAME"
sctl 2 trials --duration 1s
sctl 2 trial --stop --duration 5s "/$NAME"
sctl 0 trials --json
[ "$OUT" = "[]" ] || fail "a refused trial left a record: $OUT"
echo "bad arguments: ok"

# ---- a whole trial: 2 readiness blocks + 3 pairs of 1 s ----
start_trial --duration 8s --block 1s "/$NAME"
T1=$ID
sctl 2 trial --no-wait --duration 8s --block 1s "/$NAME"
grep -q "runs already" <<<"$ERR" || fail "a second trial of one cgroup: $ERR"
# While it runs: a hands-off block holds nothing of the cgroup.
seen_off=0
for _ in $(seq 80); do
        # Two hands-off readings around the state's read are one block only
        # when they lie less than a block (1 s) apart: on a loaded host the
        # three reads can take longer, and a whole steered block (its window
        # set, then given back) can fit between them.
        t0=$(date +%s%N)
        arm=$(busctl get-property org.steerd1 /org/steerd1 org.steerd1.Manager Trials 2>/dev/null | grep -o '"hands-off"\|"steered"' | head -1)
        if [ "$arm" = '"hands-off"' ] && [ -f "$TMP/run/state.json" ]; then
                held=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(sum(1 for k in ("cgroups", "threads") for e in s.get(k, []) if (e.get("cgroup") or e.get("name")) == sys.argv[2]))' "$TMP/run/state.json" "/$NAME" 2>/dev/null)
                arm2=$(busctl get-property org.steerd1 /org/steerd1 org.steerd1.Manager Trials 2>/dev/null | grep -o '"hands-off"\|"steered"' | head -1)
                if [ "$arm2" = '"hands-off"' ] && [ $(($(date +%s%N) - t0)) -lt 900000000 ]; then
                        seen_off=$((seen_off + 1))
                        [ "${held:-0}" = 0 ] || fail "a hands-off block holds $held masks of /$NAME: $(cat "$TMP/run/state.json")"
                fi
        fi
        sleep 0.1
done
[ $seen_off -gt 0 ] || echo "note: no hands-off block was seen by the sampling loop"
wait_state "$T1" done 30
check "$T1" 'len(j["blocks"]) == 8 and all(b["ended"] and b["measuring"] for b in j["blocks"])'
check "$T1" 'j["blocks"][0]["readiness"] and j["blocks"][1]["readiness"] and j["primary"] == "latency"'
check "$T1" 'all({b["arm"] for b in j["blocks"][i:i+2]} == {"steered", "hands-off"} for i in range(2, 8, 2))'
check "$T1" 'all(b["measure_usec"] - b["start_usec"] >= 200000 for b in j["blocks"])'
check "$T1" 'all("slices_per_s" in b for b in j["blocks"]) and j["verdict"] in ("better", "worse", "same", "can'"'"'t tell")'
check "$T1" 'j["estimate"] is None or j["estimate"]["pairs"] >= 2'
[ -f "$TMP/state/trials/$T1.json" ] || fail "no record file $TMP/state/trials/$T1.json"
sctl 0 trial --show "$T1"
grep -q "Verdict:" <<<"$OUT" || fail "trial --show: no verdict: $OUT"
grep -q "readiness" <<<"$OUT" || fail "trial --show: no blocks: $OUT"
sctl 0 trials
grep -q "$T1" <<<"$OUT" || fail "trials does not list $T1: $OUT"
grep -q "1 trial kept" <<<"$OUT" || fail "trials: no legend: $OUT"
echo "a whole trial: ok ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict_text"])' "$TMP/rec.json"))"

# ---- what ends a trial ----
start_trial --duration 60s --block 1s "/$NAME"
sctl 0 trial --stop "/$NAME"
grep -q "$ID" <<<"$OUT" || fail "trial --stop does not name the trial: $OUT"
check "$ID" 'j["state"] == "stopped" and "--stop" in j["end_reason"]'
sctl 1 trial --stop "/$NAME"

start_trial --duration 60s --block 1s "/$NAME"
sleep 0.5
sctl 0 mode observe
wait_state "$ID" interrupted 5
check "$ID" '"mode changed to observe" in j["end_reason"]'
sctl 2 trial --no-wait --duration 60s --block 1s "/$NAME"
grep -q "steers nothing" <<<"$ERR" || fail "a trial in observe: $ERR"
sctl 0 mode latency

start_trial --duration 60s --block 1s "/$NAME-b"
sleep 0.5
sctl 0 opt-out "/$NAME-b"
wait_state "$ID" interrupted 5
check "$ID" '"opted out" in j["end_reason"]'
echo "stop, mode, opt-out: ok"

# kill -9 mid-trial: the record says interrupted after the restart.
start_trial --duration 60s --block 1s "/$NAME"
sleep 2.5 # the first block's record is written
kill -9 "$DAEMON"
wait "$DAEMON" 2>/dev/null
DAEMON=
start_steerd
check "$ID" 'j["state"] == "interrupted" and "did not stop cleanly" in j["end_reason"]'
sctl 0 opt-in "/$NAME"
echo "kill and restart: ok"

# ---- an application metric: a textfile counter and the same over http ----
cat >"$TMP/app.sh" <<'EOS'
n=0
while :; do
        n=$((n + 100))
        printf '# HELP app_requests_total Requests served.\n# TYPE app_requests_total counter\napp_requests_total{code="200"} %d\n' "$n" >"$1.tmp"
        mv "$1.tmp" "$1"
        sleep 0.1
done
EOS
mkdir -p "$TMP/www"
bash "$TMP/app.sh" "$TMP/www/app.prom" &
BG_PIDS+=($!)
sleep 0.3
start_trial --duration 6s --block 1s --metric "$TMP/www/app.prom#app_requests_total{code=\"200\"}" "/$NAME"
wait_state "$ID" done 30
check "$ID" 'j["primary"] == "metric" and j["higher_is_better"] and all(b.get("metric", 0) > 0 for b in j["blocks"])'
check "$ID" 'j["note"] is None'

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$TMP/www" && exec python3 -m http.server --bind 127.0.0.1 "$PORT" >/dev/null 2>&1) &
HTTP=$!
BG_PIDS+=($HTTP)
for _ in $(seq 50); do
        python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$PORT" 2>/dev/null && break
        sleep 0.1
done
start_trial --duration 6s --block 1s --metric "http://127.0.0.1:$PORT/app.prom#app_requests_total" "/$NAME"
sleep 1.5
# The endpoint goes away mid-trial: the trial goes on by latency, and says so.
kill "$HTTP"
wait_state "$ID" done 30
check "$ID" 'j["primary"] == "latency" and "could not be read" in j["note"]'
echo "application metric: ok"

# A service under a steady load on 127.0.0.1, in the opted-in cgroup,
# exporting its request latency as a histogram: a trial by its p99.
PORT2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sh -c 'echo $$ >"$1/'$TASKS'"; shift; exec "$@"' sh "$CGROOT/$NAME" python3 "$SRC/tests/tools/latency-service.py" \
        "$PORT2" --workers 4 --rate 300 --work-us 1000 >"$TMP/service.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 50); do grep -q ready "$TMP/service.log" && break; sleep 0.1; done
grep -q ready "$TMP/service.log" || fail "the latency service did not start: $(cat "$TMP/service.log")"
start_trial --duration 6s --block 1s --metric "http://localhost:$PORT2/metrics#app_request_duration_seconds@p99" "/$NAME"
wait_state "$ID" done 30
check "$ID" 'j["primary"] == "metric" and not j["higher_is_better"] and j["note"] is None'
check "$ID" 'all(0 < b["metric"] <= 1.0 for b in j["blocks"])'
echo "application metric, a histogram's p99: ok ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict_text"])' "$TMP/rec.json"))"

# ---- a cgroup that vanishes ends its trial ----
mkcg "$NAME-c"
sctl 0 opt-in "/$NAME-c"
load "$NAME-c" --threads 1 --duty 20 --seconds 3
start_trial --duration 60s --block 1s "/$NAME-c"
wait "${BG_PIDS[-1]}" 2>/dev/null
rmdir "$CGROOT/$NAME-c" || fail "cannot remove $CGROOT/$NAME-c"
wait_state "$ID" interrupted 10
check "$ID" '"gone" in j["end_reason"]'
echo "vanished cgroup: ok"

sctl 0 trials --json
python3 -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if len(j) == 9 else 1)" "$OUT" ||
        fail "trials: expected 9 records: $OUT"

# ---- Evaluate=auto ----
# Four busy threads on this host's two CPUs, windowed onto one now and then
# (the guard off): often enough harm for steering to be turned off, though
# not always (the window logic gives the CPU back itself when the demand
# needs both). The evaluation's pairs and its hands-off blocks are checked
# always, the harm's log line, explain and bus signal whenever it finds
# harm; test-trial proves the turning off on streams with a known effect.
# The other loads stopped; the opt-in's own --evaluate; blocks of 2 s, every
# other one hands-off.
for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
pkill -f "$LOAD" 2>/dev/null
BG_PIDS=()
cat >>"$TMP/steerd.conf" <<EOC
EvaluateDuty=2
EvaluateBlockMs=2s
EvaluateRetryMs=1min
[Policy]
GuardWindowMs=0
EOC
sctl 0 reload
mkcg "$NAME-e"
load "$NAME-e" --threads 4 --duty 100 --seconds 600
if command -v dbus-monitor >/dev/null; then
        dbus-monitor --system "type='signal',interface='org.steerd1.Manager',member='SteeringEvaluated'" >"$TMP/signals" 2>&1 &
        BG_PIDS+=($!)
fi
sctl 2 opt-in "/$NAME-e" --evaluate=sometimes
sctl 0 opt-in "/$NAME-e" --evaluate
for _ in $(seq 40); do
        grep -q "Evaluate=auto" <<<"$("$STEERCTL" explain "/$NAME-e" 2>/dev/null)" && break
        sleep 0.1
done
grep -q "Evaluate=auto: steering on" <<<"$("$STEERCTL" explain "/$NAME-e" 2>&1)" ||
        fail "explain does not show the evaluation: $("$STEERCTL" explain "/$NAME-e" 2>&1)"
# The evaluation runs: pairs add up, and whenever a block is hands-off (or
# steering is off) nothing of the cgroup is held.
pairs=0 off_samples=0 off=
for _ in $(seq 400); do
        ex=$("$STEERCTL" explain "/$NAME-e" 2>/dev/null | grep "Evaluate=auto")
        if grep -q "hands-off now\|steering is OFF" <<<"$ex"; then
                held=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(sum(1 for k in ("cgroups", "threads") for e in s.get(k, []) if (e.get("cgroup") or e.get("name")) == sys.argv[2]))' "$TMP/run/state.json" "/$NAME-e" 2>/dev/null)
                ex2=$("$STEERCTL" explain "/$NAME-e" 2>/dev/null | grep "Evaluate=auto")
                if grep -q "hands-off now\|steering is OFF" <<<"$ex2"; then
                        off_samples=$((off_samples + 1))
                        [ "${held:-0}" = 0 ] || fail "Evaluate=auto: hands-off, yet $held masks of /$NAME-e are held: $(cat "$TMP/run/state.json")"
                fi
        fi
        pairs=$(sed -n 's/.*over the last \([0-9]*\) pairs.*/\1/p' <<<"$ex")
        grep -q "steering is OFF" <<<"$ex" && off=1
        [ "${pairs:-0}" -ge 4 ] && [ "$off_samples" -ge 3 ] && break
        [ -n "$off" ] && [ "$off_samples" -ge 3 ] && break
        sleep 0.1
done
[ -n "$off" ] || [ "${pairs:-0}" -ge 4 ] || fail "Evaluate=auto: fewer than 4 pairs within 40 s: $ex"
[ "$off_samples" -ge 3 ] || fail "Evaluate=auto: no hands-off block seen: $ex"
# Where it said harm, the journal, explain and the bus say so too.
if [ -n "$off" ] || grep -q "Cgroup /$NAME-e: steering turned off" "$TMP/steerd.log"; then
        sctl 0 explain "/$NAME-e"
        grep -q "steering is OFF: it hurt by more than HarmPercent=2.0%" <<<"$OUT" || fail "explain after the harm: $OUT"
        grep -q "Cgroup /$NAME-e: steering turned off: it hurts by more than" "$TMP/steerd.log" ||
                fail "no warning in the log for the harm"
        if [ -f "$TMP/signals" ]; then
                for _ in $(seq 20); do grep -q "SteeringEvaluated" "$TMP/signals" && break; sleep 0.1; done
                grep -A3 "SteeringEvaluated" "$TMP/signals" | grep -q "boolean false" ||
                        fail "no SteeringEvaluated(false) signal: $(head -20 "$TMP/signals")"
        fi
        echo "Evaluate=auto: ok, steering turned off ($(grep "steering turned off: " "$TMP/steerd.log" | head -1 | sed "s/.*(latency/(latency/"))"
else
        echo "Evaluate=auto: ok, still steering: $ex"
fi
kill -TERM "$DAEMON"
wait "$DAEMON"
rc=$?
DAEMON=
[ $rc = 0 ] || fail "steerd exited $rc at the stop"
echo "t-trial: all checks passed"
