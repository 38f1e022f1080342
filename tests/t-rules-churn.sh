#!/usr/bin/env bash
# Opt-in rules under churn: a glob with ** over nested cgroups that are
# created and removed at about 100 per second for 5 s. steerd takes in a
# match within one rescan period (RescanIntervalMs=1s, plus a period of
# slack), forgets every match that went away (each "opted in" line has its
# "forgotten" line by the end), stays up, keeps its descriptors, and logs
# no error. $1 = build dir. Needs root and a cgroup v1 cpuset hierarchy.
set -uo pipefail
BUILD=$1
STEERD=$BUILD/steerd

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
[ -n "$CPUSET" ] || { echo "SKIP: no cgroup v1 cpuset hierarchy on this host"; exit 77; }
TMP=$(mktemp -d)
NAME=steerd-rc$$
P=$CPUSET/$NAME
DAEMON= CHURN=
cleanup() {
        [ -n "$CHURN" ] && kill "$CHURN" 2>/dev/null
        [ -n "$DAEMON" ] && kill -9 "$DAEMON" 2>/dev/null
        wait 2>/dev/null
        [ -d "$P" ] && find "$P" -depth -mindepth 1 -type d -exec rmdir {} + 2>/dev/null
        rmdir "$P" 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -20 "$TMP/steerd.log" >&2; exit 1; }
now_ms() { date +%s%3N; }
# wait_log PATTERN SECONDS: the log has a line with PATTERN (fixed string) within SECONDS.
wait_log() {
        local end=$(($(now_ms) + $2 * 1000))
        while [ "$(now_ms)" -lt "$end" ]; do
                grep -qF -- "$1" "$TMP/steerd.log" && return 0
                sleep 0.05
        done
        return 1
}

mkdir "$P" || fail "cannot create $P"
cat >"$TMP/steerd.conf" <<EOC
[Manager]
Mode=observe
SamplePeriodMs=100
RescanIntervalMs=1s
PersistRuntime=no
[OptIn]
/$NAME/**/leaf-*=latency
EOC
"$STEERD" --config "$TMP/steerd.conf" --runtime-dir "$TMP/run" --state-dir "$TMP/lib" --foreground \
        >"$TMP/steerd.log" 2>&1 &
DAEMON=$!
sleep 1
kill -0 "$DAEMON" 2>/dev/null || fail "steerd did not start"
fds_before=$(ls /proc/$DAEMON/fd | wc -l)

# 100 mkdir and 100 rmdir per second for 5 s, nested two levels, each
# cgroup living 0.2 s.
python3 - "$P" <<'EOP' &
import os, sys, time
p, made, t0 = sys.argv[1], [], time.monotonic()
for i in range(500):
    d = f"{p}/a{i % 10}/b{i % 3}/leaf-c{i}"
    os.makedirs(d)
    made.append(d)
    if len(made) > 20:
        os.rmdir(made.pop(0))
    time.sleep(max(0.0, t0 + (i + 1) / 100 - time.monotonic()))
for d in made:
    os.rmdir(d)
EOP
CHURN=$!
churn_t0=$(now_ms)

# A long-lived match born in the middle of the churn.
sleep 1.5
mkdir -p "$P/x/y/leaf-long"
t0=$(now_ms)
wait_log "Cgroup /$NAME/x/y/leaf-long ($P/x/y/leaf-long): opted in with policy latency (config, rule /$NAME/**/leaf-*)" 3 ||
        fail "the long-lived match was not taken in within 3 s"
taken=$(($(now_ms) - t0))
wait "$CHURN"
CHURN=
churn_ms=$(($(now_ms) - churn_t0))
rmdir "$P/x/y/leaf-long"
t0=$(now_ms)
wait_log "Cgroup /$NAME/x/y/leaf-long: gone, or no longer matched by its rule; forgotten" 3 ||
        fail "the removed match was not forgotten within 3 s"
forgot=$(($(now_ms) - t0))
sleep 2.5 # two more rescans: every churned match that was seen is forgotten

kill -0 "$DAEMON" 2>/dev/null || fail "steerd died under churn"
fds_after=$(ls /proc/$DAEMON/fd | wc -l)
rss_kb=$(awk '/^VmRSS/ {print $2}' /proc/$DAEMON/status)
kill -TERM "$DAEMON"
wait "$DAEMON"
rc=$?
DAEMON=
[ $rc -eq 0 ] || fail "steerd exited $rc (a sanitizer report?)"

taken_in=$(grep -c "): opted in with policy latency (config, rule /$NAME/\*\*/leaf-\*)" "$TMP/steerd.log")
forgotten=$(grep -c ": gone, or no longer matched by its rule; forgotten" "$TMP/steerd.log")
errors=$(grep -iE "error|failed|cannot|sanitizer|runtime error" "$TMP/steerd.log" | grep -v "^steerd .* started")
[ -z "$errors" ] || fail "errors in the log: $errors"
[ "$taken_in" -ge 5 ] || fail "only $taken_in matches were taken in: the churn was not seen"
[ "$taken_in" -eq "$forgotten" ] || fail "$taken_in matches taken in, $forgotten forgotten: state left behind"
[ "$fds_after" -le $((fds_before + 2)) ] || fail "descriptors grew: $fds_before -> $fds_after"
echo "rules under churn: 500 nested cgroups created and removed in $churn_ms ms ($((500000 / churn_ms)) per second each way); $taken_in matches taken in and $forgotten forgotten;" \
        "a new match taken in after ${taken} ms and a removed one forgotten after ${forgot} ms (RescanIntervalMs=1s);" \
        "fds $fds_before -> $fds_after; RSS ${rss_kb} kB: ok"
