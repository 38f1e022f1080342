#!/usr/bin/env bash
# Nothing flaps (issue 30, item 2): over every snapshot stream of
# tests/fixtures/streams, the plans steerd makes change no thread and no
# cgroup more than twice within 10 s of the stream's clock while its demand
# holds steady (tests/tools/flap-check.py says what counts). A control plan
# that pins and gives back one thread by turns at a steady demand must be
# caught, so that the check cannot pass by seeing nothing.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$HERE/fixtures/streams
CHECK=$HERE/tools/flap-check.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0 bad=0
for gz in "$DIR"/*.jsonl.gz; do
        s=$(basename "$gz" .jsonl.gz)
        gzip -dc "$gz" >"$TMP/$s.jsonl"
        "$BUILD/steerd" --replay "$TMP/$s.jsonl" --json --config "$DIR/$s.conf" >"$TMP/$s.plan.json" ||
                { echo "FAIL: $s: --replay failed" >&2; exit 1; }
        if out=$(python3 "$CHECK" "$TMP/$s.jsonl" "$TMP/$s.plan.json"); then
                echo "$s: $out"
        else
                echo "FAIL: $s: $out" >&2
                bad=$((bad + 1))
        fi
        n=$((n + 1))
done
[ "$n" -ge 4 ] || { echo "FAIL: expected at least 4 streams in $DIR, found $n" >&2; exit 1; }

# The control: hb4cg's first busy thread pinned and given back every other
# tick from tick 10 on, its util as recorded.
s=hb4cg-2cpu
python3 - "$TMP/$s.jsonl" >"$TMP/control.plan.json" <<'PY'
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cg = next(c for c in snaps[10]['cgroups'] if c['threads'])
tid = max(cg['threads'], key=lambda t: t.get('util', 0))['tid']
for i in range(len(snaps)):
    acts = []
    if 10 <= i < 20:
        kind = 'set_thread_cpus' if i % 2 == 0 else 'restore'
        acts.append({'kind': kind, 'cgroup': cg['path'], 'tid': tid, 'cpus': '0' if i % 2 == 0 else '0-1',
                     'policy': 'sticky', 'reason': 'control'})
    print(json.dumps({'tick': i, 'actions': acts}))
PY
if out=$(python3 "$CHECK" "$TMP/$s.jsonl" "$TMP/control.plan.json"); then
        echo "FAIL: the control plan (a pin given and taken back every other tick) was not caught: $out" >&2
        bad=$((bad + 1))
else
        echo "control caught: $out"
fi
[ "$bad" -eq 0 ] || exit 1
echo "PASS: $n streams: nothing flaps"
