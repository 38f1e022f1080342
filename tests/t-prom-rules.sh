#!/usr/bin/env bash
# The Prometheus rules and the Grafana dashboard of conf/: promtool checks the
# rules and runs their unit tests (conf/prometheus/steerd-rules.test.yml), the
# dashboard is valid JSON, and every steerd_* metric either of them names is
# one a real steerd writes: a '# TYPE' line of the metrics file of the built
# daemon, run briefly in the foreground with no cgroup opted in (it then
# changes nothing on the host). $1 = build dir.
set -uo pipefail
BUILD=$1
STEERD=$BUILD/steerd
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
RULES=$TOP/conf/prometheus/steerd-rules.yml
RULES_TEST=$TOP/conf/prometheus/steerd-rules.test.yml
DASHBOARD=$TOP/conf/grafana/steerd-dashboard.json

command -v promtool >/dev/null || { echo "SKIP: promtool not installed (Debian package prometheus)" >&2; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the dashboard" >&2; exit 77; }
[ -x "$STEERD" ] || { echo "FAIL: no steerd binary at $STEERD" >&2; exit 1; }

TMP=$(mktemp -d)
DAEMON=
cleanup() {
        [ -n "$DAEMON" ] && kill -9 "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The rules: syntax, then their unit tests (promtool resolves rule_files
#    relative to the test file).
promtool check rules "$RULES" || fail "promtool check rules $RULES"
promtool test rules "$RULES_TEST" || fail "promtool test rules $RULES_TEST"

# 2. A real metrics file: steerd in the foreground, MetricsIntervalMs=100, its
#    runtime and state directories in $TMP; stopped once the file is there.
cat >"$TMP/steerd.conf" <<EOC
[Manager]
SamplePeriodMs=100
MetricsFile=$TMP/steerd.prom
MetricsIntervalMs=100
EOC
"$STEERD" --config "$TMP/steerd.conf" --runtime-dir "$TMP/run" --state-dir "$TMP/lib" --foreground \
        >"$TMP/steerd.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do
        [ -s "$TMP/steerd.prom" ] && grep -q '^steerd_last_write_timestamp_seconds ' "$TMP/steerd.prom" && break
        kill -0 "$DAEMON" 2>/dev/null || break
        sleep 0.1
done
if ! [ -s "$TMP/steerd.prom" ]; then
        [ "$(id -u)" -ne 0 ] && { echo "SKIP: steerd wrote no metrics file without root: $(tail -3 "$TMP/steerd.log")" >&2; exit 77; }
        fail "steerd wrote no metrics file within 10 s: $(tail -20 "$TMP/steerd.log")"
fi
cp "$TMP/steerd.prom" "$TMP/written.prom" # written whole by rename: no torn copy
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "steerd exited with $? on SIGTERM: $(tail -20 "$TMP/steerd.log")"
DAEMON=

# 3. The dashboard parses, has its variables, and it and the rules name only
#    metrics of that file. Recording rules' names (with ':') are not in the
#    file; names are taken from the dashboard's strings (queries, variables,
#    descriptions) and the rules file's whole text (annotations too).
python3 - "$DASHBOARD" "$RULES" "$TMP/written.prom" <<'EOF' || fail "the dashboard or the rules name metrics steerd does not write"
import json, re, sys

dash_path, rules_path, prom_path = sys.argv[1:]
try:
    dash = json.load(open(dash_path))
except ValueError as e:
    sys.exit("%s: not valid JSON: %s" % (dash_path, e))

types = {}
for line in open(prom_path):
    m = re.match(r"# TYPE (\S+) (\S+)$", line)
    if m:
        types[m.group(1)] = m.group(2)
print("metrics file of the built steerd: %d families" % len(types))

variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
for name, kind in (("datasource", "datasource"), ("instance", "query"), ("cgroup", "query")):
    if name not in variables or variables[name].get("type") != kind:
        sys.exit("%s: no %s variable '%s'" % (dash_path, kind, name))
if variables["datasource"].get("query") != "prometheus":
    sys.exit("%s: the datasource variable is not of type prometheus" % dash_path)

def strings(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)
    elif isinstance(node, str):
        yield node

# A metric name: [a-zA-Z_:][a-zA-Z0-9_:]*; the ones with ':' are recording rules'.
NAME = re.compile(r"(?<![A-Za-z0-9_:.$/-])steerd_[A-Za-z0-9_:]*")
def names(text):
    return {n for n in NAME.findall(text) if ":" not in n}

exprs = [s for s in strings(dash) if "steerd_" in s]
used = {"dashboard": set().union(*(names(s) for s in exprs)),
        "rules": names(open(rules_path).read())}
missing = []
for where, ns in used.items():
    for n in sorted(ns):
        if n not in types:
            missing.append("%s: %s" % (where, n))
    print("%s: %d metric names: %s" % (where, len(ns), " ".join(sorted(ns))))
if missing:
    print("not in the metrics file of the built steerd:\n  " + "\n  ".join(missing), file=sys.stderr)
    sys.exit(1)
print("every one of them has a '# TYPE' line in the metrics file")
targets = sum(len(p.get("targets", [])) for p in dash.get("panels", []))
print("dashboard: %d panels, %d queries, schemaVersion %s" % (len(dash["panels"]), targets, dash.get("schemaVersion")))
EOF
echo "t-prom-rules: all checks passed"
