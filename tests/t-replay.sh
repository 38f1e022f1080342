#!/usr/bin/env bash
# Record a snapshot stream on this machine (with a busy opted-in cgroup when
# we are root), then replay it: readable plans, JSON plan lines of DESIGN.md 6,
# and the same input replays byte-identically. $1 = build dir.
set -uo pipefail
BUILD=$1
STEERD=$BUILD/steerd
LOAD=$BUILD/steerd-test-load
TMP=$(mktemp -d)
G=
PIDS=()
cleanup() {
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        [ -n "$G" ] && rmdir "$G" 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 needed"; exit 77; }

: >"$TMP/steerd.conf"
CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
if [ "$(id -u)" -eq 0 ] && [ -n "$CPUSET" ]; then
        G=$CPUSET/steerd-replay$$
        mkdir "$G"
        cat "$CPUSET/cpuset.mems" >"$G/cpuset.mems"
        cat "$CPUSET/cpuset.cpus" >"$G/cpuset.cpus"
        for i in 1 2; do
                coproc L { "$LOAD" --threads 2 --duty 90 --seconds 30; }
                read -r line <&"${L[0]}"
                echo "${line#ready }" >"$G/cgroup.procs"
                echo go >&"${L[1]}"
                PIDS+=("${line#ready }")
        done
        printf '[Manager]\nMode=latency\nSamplePeriodMs=100\n[OptIn]\n/%s=latency\n' "${G##*/}" >"$TMP/steerd.conf"
else
        echo "not root or no cpuset hierarchy: recording without an opted-in cgroup"
fi

"$STEERD" --record "$TMP/stream.jsonl" --ticks 30 --config "$TMP/steerd.conf" || fail "--record failed"
[ "$(wc -l <"$TMP/stream.jsonl")" -eq 30 ] || fail "expected 30 snapshot lines, got $(wc -l <"$TMP/stream.jsonl")"
python3 - "$TMP/stream.jsonl" "${G:+1}" <<'EOP' || fail "the recorded stream is not as DESIGN.md 6 says"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
for d in lines:
    for k in ('time_us', 'period_us', 'source', 'cpus', 'llcs', 'psi', 'cgroups'):
        assert k in d, k
    assert d['period_us'] > 0
# Never faster than SamplePeriodMs on the whole (no bursts after a stall).
# Slower is the machine's business: timing belongs to tests/bench.
periods = sorted(d['period_us'] for d in lines)
assert periods[len(periods) // 2] >= 80000, periods
if sys.argv[2] == '1':
    c = lines[-1]['cgroups']
    assert len(c) == 1 and len(c[0]['threads']) >= 4, c
    for t in c[0]['threads']:
        for k in ('tid', 'starttime', 'cpu', 'allowed', 'util', 'wait'):
            assert k in t, k
    print('recorded: %d ticks, %d threads in the cgroup' % (len(lines), len(c[0]['threads'])))
EOP

"$STEERD" --replay "$TMP/stream.jsonl" --json --config "$TMP/steerd.conf" >"$TMP/a.json" || fail "--replay failed"
"$STEERD" --replay "$TMP/stream.jsonl" --json --config "$TMP/steerd.conf" >"$TMP/b.json" || fail "--replay failed"
cmp -s "$TMP/a.json" "$TMP/b.json" || fail "two replays of the same stream differ"
[ "$(wc -l <"$TMP/a.json")" -eq 30 ] || fail "expected one plan line per tick"
python3 - "$TMP/a.json" <<'EOP' || fail "plan lines are not as DESIGN.md 6 says"
import json, sys
n = 0
for i, l in enumerate(open(sys.argv[1])):
    d = json.loads(l)
    assert d['tick'] == i and isinstance(d['actions'], list)
    for a in d['actions']:
        assert a['kind'] in ('set_cgroup_cpus', 'set_thread_cpus', 'restore'), a
        assert a['policy'] in ('window', 'sticky', 'balance', 'guard'), a
        assert a['reason'] and 'cgroup' in a and 'cpus' in a, a
        n += 1
print('replayed: %d actions' % n)
EOP
"$STEERD" --replay "$TMP/stream.jsonl" --config "$TMP/steerd.conf" >"$TMP/plan.txt" || fail "readable replay failed"
grep -q "^tick 0" "$TMP/plan.txt" || fail "no readable plan: $(head -3 "$TMP/plan.txt")"

# A damaged line: an error that names the file and line, non-zero exit.
sed '5s/"cpus"/"cpuz"/' "$TMP/stream.jsonl" >"$TMP/bad.jsonl"
if "$STEERD" --replay "$TMP/bad.jsonl" --config "$TMP/steerd.conf" >/dev/null 2>"$TMP/err"; then
        fail "a damaged stream was accepted"
fi
grep -q "bad.jsonl:5:" "$TMP/err" || fail "no file:line in: $(cat "$TMP/err")"
echo "t-replay: all checks passed"
