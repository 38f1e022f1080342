#!/usr/bin/env bash
# The placement search live on this host, over a private bus: a cgroup
# opted in with search=yes gets its candidates, a placement set through the
# actuator, a winner (or steerd's policy kept) that steerctl explain shows
# with its candidates and the time on losing ones; an opt-out gives its CPUs
# back as they were; a bad search= value is refused at start.
# $1 = build dir. Needs root, dbus-daemon, python3 and a cgroup hierarchy.
set -uo pipefail
NAME=steerd-tsearch-$$
. "$(dirname "$0")/tools/live-host.sh" "$1"
mkcg "$NAME"

# A bad search= is refused with a clear error, and nothing starts.
cat >"$TMP/bad.conf" <<EOF
[Manager]
Mode=latency
PersistRuntime=no
[OptIn]
/$NAME=latency search=maybe
EOF
"$STEERD" --config "$TMP/bad.conf" --state-dir "$TMP/state" --runtime-dir "$TMP/run" --foreground \
        >"$TMP/bad.log" 2>&1 &
BADPID=$!
for _ in $(seq 50); do kill -0 $BADPID 2>/dev/null || break; sleep 0.1; done
if kill -0 $BADPID 2>/dev/null; then
        kill -9 $BADPID
        fail "steerd ran with search=maybe"
fi
grep -q "unknown option 'search=maybe'" "$TMP/bad.log" || fail "no clear error for search=maybe: $(cat "$TMP/bad.log")"

cat >"$TMP/steerd.conf" <<EOF
[Manager]
Mode=latency
SamplePeriodMs=100
RescanIntervalMs=300ms
PersistRuntime=no
SearchBlockMs=1s
SearchDuty=2
[OptIn]
/$NAME=latency search=yes
EOF
ORIG=$(cat "$CGROOT/$NAME/cpuset.cpus" 2>/dev/null)
load "$NAME" --threads 3 --duty 70 --seconds 600
STEERD_LOG_STDERR=1 "$STEERD" --config "$TMP/steerd.conf" --state-dir "$TMP/state" --runtime-dir "$TMP/run" \
        --foreground >>"$TMP/steerd.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do
        "$STEERCTL" status >/dev/null 2>&1 && break
        kill -0 "$DAEMON" 2>/dev/null || fail "steerd exited at start"
        sleep 0.1
done
wait_log() { # PATTERN SECONDS
        for _ in $(seq $(($2 * 10))); do
                grep -q "$1" "$TMP/steerd.log" && return 0
                kill -0 "$DAEMON" 2>/dev/null || fail "steerd died"
                sleep 0.1
        done
        return 1
}
wait_log "Cgroup /$NAME: placement search on (Search=yes)" 5 || fail "the search did not start for /$NAME"

# The search starts with its candidates, and places one of them: the
# cgroup's CPUs narrowed by a "search" action.
wait_log "Cgroup /$NAME: placement search 1 started against steerd's policy: the kernel default (hands-off)" 15 ||
        fail "no search started with its candidates"
echo "started: $(grep -m1 "placement search 1 started" "$TMP/steerd.log")"
wait_log "cgroup /$NAME: CPUs .* (cpuset backend; search set_cgroup_cpus: placement search: " 30 || fail "no placement was set within 30 s"
echo "placed: $(grep -m1 "cgroup /$NAME: CPUs .*placement search: " "$TMP/steerd.log")"

# explain lists the candidates with their pairs.
"$STEERCTL" explain "/$NAME" >"$TMP/explain" 2>&1 || fail "explain failed: $(cat "$TMP/explain")"
grep -q "placement search 1" "$TMP/explain" || fail "explain says nothing of the search: $(cat "$TMP/explain")"
grep -q "pair" "$TMP/explain" || fail "explain lists no candidate: $(cat "$TMP/explain")"

# The search ends: a winner, or steerd's policy kept.
wait_log "Cgroup /$NAME: search 1 \(found\|keeps steerd's policy\)" 90 || fail "the search did not end within 90 s"
echo "ended: $(grep -m1 "Cgroup /$NAME: search 1 \(found\|keeps\)" "$TMP/steerd.log")"
"$STEERCTL" explain "/$NAME" >"$TMP/explain" 2>&1
grep -q "winner" "$TMP/explain" || fail "explain names no winner: $(cat "$TMP/explain")"
grep -q "on losing candidates" "$TMP/explain" || fail "explain gives no time on losing candidates: $(cat "$TMP/explain")"
echo "explain: $(grep -o 'placement search.*' "$TMP/explain" | head -1)"

# Opted out: everything given back, the CPUs as before.
"$STEERCTL" opt-out "/$NAME" >/dev/null 2>&1 || fail "opt-out failed"
held() {
        python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(sum(1 for k in ("cgroups", "threads") for e in s.get(k, []) if (e.get("cgroup") or e.get("name")) == sys.argv[2]))' \
                "$TMP/run/state.json" "/$NAME" 2>/dev/null || echo 0
}
back=
for _ in $(seq 50); do
        now=$(cat "$CGROOT/$NAME/cpuset.cpus" 2>/dev/null)
        if [ "$now" = "$ORIG" ] && [ "$(held)" = 0 ]; then
                back=1
                break
        fi
        sleep 0.1
done
[ -n "$back" ] || fail "after the opt-out /$NAME has CPUs '$now' (was '$ORIG'), records: $(cat "$TMP/run/state.json")"
grep -q "Cgroup /$NAME: placement search 2 started" "$TMP/steerd.log" && echo "note: a second search started (a phase change)"

# Opted in by steerctl with --search (the config's Search= is no): its
# search is on too; --search=no takes it off again.
mkcg "$NAME-rt"
"$STEERCTL" opt-in "/$NAME-rt" --search >"$TMP/out" 2>&1 || fail "opt-in --search failed: $(cat "$TMP/out")"
wait_log "Cgroup /$NAME-rt: placement search on (Search=yes)" 5 || fail "no search for /$NAME-rt opted in with --search"
"$STEERCTL" opt-in "/$NAME-rt" --search=no >"$TMP/out" 2>&1 || fail "opt-in --search=no failed: $(cat "$TMP/out")"
sleep 1.5 # a few ticks (quiet ticks are up to 8 periods apart): the search ends at one
"$STEERCTL" opt-in "/$NAME-rt" --search >"$TMP/out" 2>&1 || fail "opt-in --search again failed: $(cat "$TMP/out")"
for _ in $(seq 50); do
        [ "$(grep -c "Cgroup /$NAME-rt: placement search on" "$TMP/steerd.log")" -ge 2 ] && break
        sleep 0.1
done
[ "$(grep -c "Cgroup /$NAME-rt: placement search on" "$TMP/steerd.log")" = 2 ] ||
        fail "--search=no then --search did not end and start the search again"
"$STEERCTL" opt-out "/$NAME-rt" >/dev/null 2>&1 || fail "opt-out of /$NAME-rt failed"
echo "steerctl opt-in --search: the search on, off with --search=no, on again"
kill -0 "$DAEMON" 2>/dev/null || fail "steerd died"
echo "ok: search started, placed, ended, given back"
