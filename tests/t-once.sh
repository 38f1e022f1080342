#!/usr/bin/env bash
# steerd --once end to end: this host, a foreign topology, a fixture root, and
# malformed inputs. $1 = build dir, $2 = shared/ dir.
set -euo pipefail
BUILD=$1
SHARED=$2
STEERD=$BUILD/steerd
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ -n "${STRESS:-}" ] && kill "$STRESS" 2>/dev/null; true' EXIT

command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); $2"; }

# 1. This host: every online CPU once, each in an LLC, the schema of DESIGN.md 6.
"$STEERD" --once --json --interval 200 --config /dev/null >"$TMP/live.json"
online=$(python3 -c "
s=open('/sys/devices/system/cpu/online').read().strip(); n=0
for part in s.split(','):
    a,_,b=part.partition('-'); n+=int(b or a)-int(a)+1
print(n)")
json "$TMP/live.json" "
cpus=[c for c in d['cpus'] if c['online']]
assert len(cpus)==$online, (len(cpus), $online)
for k in ('time_us','period_us','source','cpus','llcs','psi','cgroups'): assert k in d, k
assert d['source']['runnable'] in ('schedstat','debugfs','threads')
for c in cpus:
    assert c['llc']>=0 and 0<=c['util']<=1024 and c['runnable']>=0 and 0<=c['boosted']<=1024, c
for l in d['llcs']:
    for k in ('id','cpus','weight','util','boosted','nr_idle_scan','overloaded'): assert k in l, k
    assert 0<=l['nr_idle_scan']<=l['weight']
print('live: %d CPUs in %d LLC(s), runnable from %s' % (len(cpus), len(d['llcs']), d['source']['runnable']))
"
# The human table names the same things.
"$STEERD" --once --interval 100 --config /dev/null >"$TMP/live.txt"
grep -q '^LLC ' "$TMP/live.txt" && grep -q '^CPU ' "$TMP/live.txt" || fail "no tables in the text output"

# 2. Every CPU busy: util near 1024 everywhere.
if command -v stress-ng >/dev/null; then
        stress-ng --cpu "$online" --timeout 30s >/dev/null 2>&1 &
        STRESS=$!
        sleep 2
        "$STEERD" --once --json --interval 1000 --config /dev/null >"$TMP/busy.json"
        kill "$STRESS"; wait "$STRESS" 2>/dev/null || true; STRESS=
        json "$TMP/busy.json" "
u=[c['util'] for c in d['cpus'] if c['online']]
print('under stress-ng: util', u)
assert min(u) >= 900, u
"
else
        echo "stress-ng not installed: the busy check is skipped"
fi

# 3. A foreign topology: 2x EPYC 7763 has 16 L3s of 8 CPUs.
"$STEERD" --once --json --interval 50 --config /dev/null \
        --topology "$SHARED/topologies/hwloc-AMD-19h-Zen3-2xEpyc-7763.xml" >"$TMP/zen3.json"
json "$TMP/zen3.json" "
assert len(d['llcs'])==16, len(d['llcs'])
def n(s):
    t=0
    for p in s.split(','):
        a,_,b=p.partition('-'); t+=int(b or a)-int(a)+1
    return t
assert all(n(l['cpus'])==8 for l in d['llcs']), [l['cpus'] for l in d['llcs']]
assert len(d['cpus'])==128
"

# 4. A generated 192-CPU root: 12 LLCs of 16, the cgroup's threads sampled.
#    (The figures of two ticks are checked exactly, without a race against
#    the interval, in test-sampler.)
python3 "$HERE/gen-fixture-root.py" "$TMP/root" --cpus 192 --threads 32 --schedstat --tick 0
cat >"$TMP/optin.conf" <<EOC
[OptIn]
/bench1=latency
EOC
"$STEERD" --once --json --interval 100 --config "$TMP/optin.conf" --root "$TMP/root" \
        --topology "pack:1 l3:12 l2:8 core:1 pu:2" >"$TMP/fixture.json"
json "$TMP/fixture.json" "
assert len(d['llcs'])==12 and all(l['weight']==16 for l in d['llcs'])
assert len(d['cpus'])==192 and all(c['online'] for c in d['cpus'])
assert d['source']['runnable']=='schedstat'
assert len(d['cgroups'])==1 and d['cgroups'][0]['path']=='/bench1' and len(d['cgroups'][0]['threads'])==32
assert d['cgroups'][0]['allowed']=='0-191'
"

# 5. A malformed /proc/stat: the error names the file and the line; non-zero exit.
printf 'cpu  1 2 3 4\ncpu0 1 2 3 4\ncpu1 5 6 seven 8\n' >"$TMP/root/proc/stat"
if "$STEERD" --once --interval 50 --config /dev/null --root "$TMP/root" \
        --topology "pack:1 l3:12 l2:8 core:1 pu:2" >/dev/null 2>"$TMP/err"; then
        fail "a malformed /proc/stat was accepted"
fi
grep -q "$TMP/root/proc/stat:3:" "$TMP/err" || fail "no file:line in: $(cat "$TMP/err")"

# 6. A bad config: refused with file:line.
printf '[Manager]\nMode=latency\nSamplePeriodMs=fast\n' >"$TMP/bad.conf"
if "$STEERD" --once --config "$TMP/bad.conf" >/dev/null 2>"$TMP/err"; then
        fail "a bad config was accepted"
fi
grep -q "$TMP/bad.conf:3:" "$TMP/err" || fail "no file:line in: $(cat "$TMP/err")"

# 7. Bad arguments.
"$STEERD" --once --interval abc 2>/dev/null && fail "--interval abc accepted"
"$STEERD" --once --topology "nonsense:3" --config /dev/null 2>/dev/null && fail "a bad topology was accepted"
"$STEERD" --once --root /nonexistent --config /dev/null 2>/dev/null && fail "a missing root was accepted"
echo "t-once: all checks passed"
