#!/usr/bin/env bash
# steerctl <-> steerd over a private system-like bus: every verb, human and
# --json; `busctl introspect` shows exactly the API of include/steerd-bus.h;
# a non-root caller is refused for changes and served for reading; bad
# arguments get named errors and change nothing; a bad config on reload is
# refused and the daemon keeps running.
# $1 = build dir, $2 = shared dir. Needs root, dbus-daemon, dbus-send, dbus-monitor, busctl,
# setpriv and python3; skips (77) otherwise.
set -uo pipefail
BUILD=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
STEERD=$BUILD/steerd
STEERCTL=$BUILD/steerctl

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for tool in dbus-daemon dbus-send dbus-monitor busctl setpriv python3; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
getent passwd nobody >/dev/null || { echo "SKIP: no user nobody"; exit 77; }
NOGROUP=$(id -gn nobody 2>/dev/null) || NOGROUP=nogroup
if [ ! -x "$STEERD" ] || [ ! -x "$STEERCTL" ]; then
        echo "SKIP: steerd or steerctl not built in $BUILD"
        exit 77
fi

TMP=$(mktemp -d)
chmod 755 "$TMP" # nobody must reach the bus socket and the copy of steerctl
BUS_PID=
DAEMON=
BG_PIDS=()
CGROUPS=()
cleanup() {
        for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
        [ -n "$DAEMON" ] && { kill -TERM "$DAEMON" 2>/dev/null; sleep 0.5; kill -9 "$DAEMON" 2>/dev/null; }
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        wait 2>/dev/null
        for d in "${CGROUPS[@]}"; do rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
        echo "FAIL: $*" >&2
        echo "--- steerd log:" >&2
        tail -30 "$TMP/steerd.log" >&2 2>/dev/null
        exit 1
}

# ---- a private bus, configured like Debian's system bus ----
. "$SRC/tests/tools/private-bus.sh"
# The policy steerd ships: only root owns org.steerd1, everyone may call it.
POLICY=$( [ -f "$SRC/units/org.steerd1.conf" ] && echo "$SRC/units/org.steerd1.conf")
echo "bus policy: ${POLICY:-generated (units/org.steerd1.conf not found)}"
start_private_bus "$TMP" "$POLICY" || { cat "$TMP/bus.log" >&2; fail "dbus-daemon did not start"; }

# ---- a real cgroup to opt in (cpuset v1 where there is one, else cgroup2) ----
CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
CG2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/self/mounts)
NAME=steerd-tbus-$$
if [ -n "$CPUSET" ]; then
        CGROOT=$CPUSET
elif [ -n "$CG2" ]; then
        CGROOT=$CG2
else
        echo "SKIP: no cgroup hierarchy mounted"
        exit 77
fi
for g in "$NAME" "$NAME-b"; do
        mkdir "$CGROOT/$g" || fail "cannot create cgroup $CGROOT/$g"
        CGROUPS+=("$CGROOT/$g")
        if [ "$CGROOT" = "$CPUSET" ]; then
                cat "$CPUSET/cpuset.mems" >"$CPUSET/$g/cpuset.mems"
                cat "$CPUSET/cpuset.cpus" >"$CPUSET/$g/cpuset.cpus"
        fi
done

# ---- steerd in observe mode ----
cat >"$TMP/steerd.conf" <<EOF
[Manager]
Mode=observe
SamplePeriodMs=100
RescanIntervalMs=300ms
EOF
cp "$TMP/steerd.conf" "$TMP/good.conf"
DAEMON_ARGS=(--config "$TMP/steerd.conf" --state-dir "$TMP/state" --foreground)
"$STEERD" --help 2>/dev/null | grep -q -- --runtime-dir && DAEMON_ARGS+=(--runtime-dir "$TMP/run")
STEERD_LOG_STDERR=1 "$STEERD" "${DAEMON_ARGS[@]}" >"$TMP/steerd.log" 2>&1 &
DAEMON=$!
up=
for _ in $(seq 100); do
        "$STEERCTL" status >/dev/null 2>&1 && { up=1; break; }
        kill -0 "$DAEMON" 2>/dev/null || fail "steerd exited at start"
        sleep 0.1
done
[ -n "$up" ] || fail "steerctl status did not work within 10 s: $("$STEERCTL" status 2>&1)"

# Helpers.
# sctl RC ARGS...: run steerctl as root, expect exit status RC; output in $OUT, $ERR.
sctl() {
        local want=$1
        shift
        "$STEERCTL" "$@" >"$TMP/out" 2>"$TMP/err"
        local rc=$?
        OUT=$(cat "$TMP/out")
        ERR=$(cat "$TMP/err")
        [ "$rc" = "$want" ] || fail "'steerctl $*' exited $rc, expected $want; stdout: $OUT; stderr: $ERR"
}
# json_check PYTHON-EXPRESSION: $OUT parses as JSON (bound to j) and the expression holds.
json_check() {
        python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
ok = eval(sys.argv[1])
sys.exit(0 if ok else 1)' "$1" <<<"$OUT" || fail "JSON check '$1' failed on: $OUT"
}
mode_now() { "$STEERCTL" mode 2>/dev/null; }
# The opt-ins this test controls: runtime and config. Cgroups that carry the
# user.steerd.policy xattr belong to the host (another test may add one any
# time), and their CPUs and thread counts move with the load.
list_now() {
        "$STEERCTL" list --json 2>/dev/null | python3 -c '
import json, sys
print(json.dumps(sorted((c["name"], c["policy"], c["source"], c["directory"])
                        for c in json.load(sys.stdin) if c["source"] != "xattr")))'
}

VERSION=$("$STEERD" --version | awk '{print $2}')

# ---- status ----
sctl 0 status
grep -Eq 'Mode: observe' <<<"$OUT" || fail "status: no 'Mode: observe': $OUT"
grep -q "$VERSION" <<<"$OUT" || fail "status: no version $VERSION: $OUT"
grep -q 'Sample period: 100ms' <<<"$OUT" || fail "status: no sample period: $OUT"
grep -q 'Counters:.*ticks' <<<"$OUT" || fail "status: no counters: $OUT"
# Nothing opted in needs who wakes whom: idle (or off by the config).
grep -Eq 'Wake sampling: (idle|off)$' <<<"$OUT" || fail "status: no 'Wake sampling: idle': $OUT"
sctl 0 status --json
json_check 'j["mode"] == "observe" and j["version"] == "'"$VERSION"'" and j["sample_period_usec"] == 100000 and j["wake_sampling"] in ("idle", "off")'
json_check 'set(j["counters"]) >= {"ticks", "applied", "kept", "reverted", "restored", "failed", "adopted", "dropped"} and j["counters"]["dropped"] == 0'
json_check 'isinstance(j["cgroups"], list) and all(set(c) == {"name", "policy", "source", "rule", "directory", "cpus", "threads"} for c in j["cgroups"])'
sctl 0 status --json=pretty
json_check 'j["mode"] == "observe"'
[ "$(wc -l <"$TMP/out")" -gt 3 ] || fail "--json=pretty is not indented"
sctl 0 # no verb = status
grep -q 'Mode: observe' <<<"$OUT" || fail "steerctl without a verb is not status: $OUT"

# ---- mode, with monitor (human and --json) watching ----
sctl 0 mode
[ "$OUT" = observe ] || fail "mode prints '$OUT'"
sctl 0 mode --json
json_check 'j == {"mode": "observe"}'

"$STEERCTL" monitor >"$TMP/monitor.txt" 2>"$TMP/monitor.err" &
MON_HUMAN=$!
BG_PIDS+=("$MON_HUMAN")
"$STEERCTL" monitor --json >"$TMP/monitor.json" 2>"$TMP/monitor-json.err" &
MON_JSON=$!
BG_PIDS+=("$MON_JSON")
dbus-monitor --system "type='signal',sender='org.steerd1',interface='org.freedesktop.DBus.Properties'" \
        >"$TMP/props.txt" 2>&1 &
BG_PIDS+=("$!")
# Wait until both monitors are on the bus; their AddMatch is synchronous
# right after connecting, so a moment later they are subscribed.
for _ in $(seq 100); do
        busctl list --no-legend --unique 2>/dev/null | awk '{print $2}' >"$TMP/pids"
        grep -qx "$MON_HUMAN" "$TMP/pids" && grep -qx "$MON_JSON" "$TMP/pids" && break
        sleep 0.1
done
sleep 0.5

sctl 0 mode latency
[ -z "$OUT" ] || fail "mode latency printed '$OUT'"
[ "$(mode_now)" = latency ] || fail "mode is '$(mode_now)' after mode latency"
sctl 0 status --json
json_check 'j["mode"] == "latency"'
sctl 0 mode balanced
sctl 0 mode observe
[ "$(mode_now)" = observe ] || fail "mode is '$(mode_now)' after mode observe"

for _ in $(seq 50); do
        [ "$(grep -c ModeChanged "$TMP/monitor.txt")" -ge 3 ] && [ "$(wc -l <"$TMP/monitor.json")" -ge 3 ] && break
        sleep 0.1
done
grep -q 'ModeChanged: mode latency' "$TMP/monitor.txt" || fail "monitor: no ModeChanged latency line: $(cat "$TMP/monitor.txt" "$TMP/monitor.err")"
grep -q 'ModeChanged: mode balanced' "$TMP/monitor.txt" || fail "monitor: no ModeChanged balanced line"
python3 - "$TMP/monitor.json" <<'EOF' || fail "monitor --json: $(cat "$TMP/monitor.json" "$TMP/monitor-json.err")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
modes = [l["mode"] for l in lines if l.get("signal") == "ModeChanged"]
assert modes[-3:] == ["latency", "balanced", "observe"], modes
for l in lines:
    assert isinstance(l.get("time_usec"), int) and l["signal"] in ("ModeChanged", "LLCOverload", "ActionsApplied"), l
    if l["signal"] == "LLCOverload":
        assert isinstance(l["llc"], int) and isinstance(l["overloaded"], bool) and isinstance(l["util"], (int, float)), l
    if l["signal"] == "ActionsApplied":
        assert isinstance(l["count"], int) and "plan" in l, l
EOF
kill -INT "$MON_HUMAN" "$MON_JSON"
for p in "$MON_HUMAN" "$MON_JSON"; do
        wait "$p"
        rc=$?
        [ $rc = 0 ] || fail "monitor exited $rc on SIGINT"
done
BG_PIDS=("${BG_PIDS[@]:2}")
if ! grep -q 'PropertiesChanged' "$TMP/props.txt" || ! grep -q '"Mode"' "$TMP/props.txt"; then
        fail "no PropertiesChanged for Mode: $(head -20 "$TMP/props.txt")"
fi
echo "status, mode, monitor: ok"

# ---- opt-in, list, opt-out ----
LIST_BEFORE=$(list_now)
sctl 0 opt-in "/$NAME"
[ -z "$OUT" ] || fail "opt-in printed '$OUT'"
sctl 0 opt-in "/$NAME-b" --policy balanced
sctl 0 list
grep -Eq '^CGROUP +POLICY +SOURCE +RULE +CPUS +THREADS +DIRECTORY' <<<"$OUT" || fail "list: no header: $OUT"
grep -Eq "^/$NAME +latency +runtime +/$NAME .* $CGROOT/$NAME\$" <<<"$OUT" || fail "list: /$NAME missing: $OUT"
grep -Eq "^/$NAME-b +balanced +runtime " <<<"$OUT" || fail "list: /$NAME-b missing: $OUT"
N=$(sed -n '2,/^$/p' <<<"$OUT" | grep -c '^/')
grep -Eq "^$N cgroups? listed\.\$" <<<"$OUT" || fail "list: no legend '$N cgroups listed.': $OUT"
sctl 0 list --no-legend
grep -q 'CGROUP' <<<"$OUT" && fail "list --no-legend printed the header"
grep -q 'listed' <<<"$OUT" && fail "list --no-legend printed the legend"
[ "$(grep -c "^/$NAME" <<<"$OUT")" = 2 ] || fail "list --no-legend: $OUT"
sctl 0 list --no-pager
sctl 0 list --json
json_check '[c for c in j if c["name"] == "/'"$NAME"'"] == [c for c in j if c["name"] == "/'"$NAME"'" and c["policy"] == "latency" and c["source"] == "runtime" and c["directory"] == "'"$CGROOT/$NAME"'" and isinstance(c["threads"], int)] != []'
json_check 'any(c["name"] == "/'"$NAME"'-b" and c["policy"] == "balanced" for c in j)'
sctl 0 status
grep -q "/$NAME: latency (runtime)" <<<"$OUT" || fail "status does not show the opted-in cgroup: $OUT"
sctl 0 status --json
json_check 'any(c["name"] == "/'"$NAME"'" and c["policy"] == "latency" for c in j["cgroups"])'

sctl 4 opt-in "/$NAME-does-not-exist"
grep -q "Failed to opt in /$NAME-does-not-exist: " <<<"$ERR" || fail "opt-in of a missing cgroup: $ERR"
sctl 0 opt-out "/$NAME-b"
sctl 0 opt-out "/$NAME"
sctl 4 opt-out "/$NAME"
grep -q "Failed to opt out /$NAME: " <<<"$ERR" || fail "second opt-out: $ERR"
[ "$(list_now)" = "$LIST_BEFORE" ] || fail "list after opt-out differs: $(list_now) vs $LIST_BEFORE"
sctl 0 opt-in "/$NAME" # kept for the checks below
LIST=$(list_now)
echo "opt-in, opt-out, list: ok"

# ---- explain: the last decision for a cgroup, in words ----
sctl 0 explain "/$NAME"
grep -q "^/$NAME: policy latency, mode observe" <<<"$OUT" || fail "explain: no cgroup line: $OUT"
grep -Eq '^  window +(no window|not decided|may get|window )' <<<"$OUT" || fail "explain: no window line: $OUT"
grep -Eq '^  balance +' <<<"$OUT" || fail "explain: no balance line: $OUT"
grep -Eq '^  sticky +[0-9]+ of [0-9]+ threads pinned' <<<"$OUT" || fail "explain: no sticky line: $OUT"
grep -Eq '^  plan +' <<<"$OUT" || fail "explain: no plan line: $OUT"
sctl 0 explain "$CGROOT/$NAME" # its directory names it too
grep -q "^/$NAME: policy latency" <<<"$OUT" || fail "explain by directory: $OUT"
sctl 0 explain "/$NAME" --json
json_check 'j["cgroup"] == "/'"$NAME"'" and {"cgroup", "window", "balance", "sticky", "plan"} <= {l["topic"] for l in j["lines"]} and all(l["text"] for l in j["lines"])'
sctl 4 explain "/$NAME-b"
grep -q "not opted in" <<<"$ERR" || fail "explain of a cgroup not opted in: $ERR"
sctl 2 explain "relative"
sctl 2 explain
echo "explain: ok"

# ---- rules: a glob and a unit name take in cgroups that appear later ----
# rule_has RULE CGROUPS: within 3 s (RescanIntervalMs=300ms), list --json
# shows exactly CGROUPS brought in by RULE ("": RULE matches nothing).
rule_has() {
        local got
        for _ in $(seq 30); do
                got=$("$STEERCTL" list --json 2>/dev/null | python3 -c '
import json, sys
print(" ".join(sorted(c["name"] for c in json.load(sys.stdin) if c["rule"] == sys.argv[1])))' "$1")
                [ "$got" = "$2" ] && return 0
                sleep 0.1
        done
        fail "rule $1: list shows '$got', expected '$2'"
}
sctl 0 opt-in "/$NAME-g*" --policy balanced
rule_has "/$NAME-g*" ""
for g in g1 g2; do
        mkdir "$CGROOT/$NAME-$g" || fail "cannot create $CGROOT/$NAME-$g"
        CGROUPS+=("$CGROOT/$NAME-$g")
        if [ "$CGROOT" = "$CPUSET" ]; then
                cat "$CPUSET/cpuset.mems" >"$CGROOT/$NAME-$g/cpuset.mems"
                cat "$CPUSET/cpuset.cpus" >"$CGROOT/$NAME-$g/cpuset.cpus"
        fi
done
rule_has "/$NAME-g*" "/$NAME-g1 /$NAME-g2"
sctl 0 list
grep -Eq "^/$NAME-g1 +balanced +runtime +/$NAME-g\* " <<<"$OUT" || fail "list does not name the glob: $OUT"
grep -qF "Cgroup /$NAME-g1 ($CGROOT/$NAME-g1): opted in with policy balanced (runtime, rule /$NAME-g*)" "$TMP/steerd.log" ||
        fail "the journal does not say which rule took /$NAME-g1 in"
rmdir "$CGROOT/$NAME-g1"
rule_has "/$NAME-g*" "/$NAME-g2"
grep -qF "Cgroup /$NAME-g1: gone, or no longer matched by its rule; forgotten" "$TMP/steerd.log" ||
        fail "no line for the vanished match"
sctl 0 opt-out "/$NAME-g*"
rule_has "/$NAME-g*" ""
sctl 4 opt-out "/$NAME-g*"
if [ -n "$CG2" ]; then
        # No systemd here: a unit is found by its cgroup's name on cgroup2.
        UNIT="steerd-t$$.service"
        sctl 0 opt-in "$UNIT"
        rule_has "$UNIT" ""
        mkdir "$CG2/$UNIT" || fail "cannot create $CG2/$UNIT"
        CGROUPS+=("$CG2/$UNIT")
        rule_has "$UNIT" "/$UNIT"
        sctl 0 opt-out "$UNIT"
        rule_has "$UNIT" ""
fi
sctl 2 opt-in "nginx"
sctl 2 opt-in "getty@.service"
sctl 2 opt-in "/$NAME/../*"
[ "$(list_now)" = "$LIST" ] || fail "the rule checks changed the opt-ins: $(list_now) vs $LIST"
echo "rules: a glob and a unit take in what appears, forget what goes, name themselves in list: ok"


# ---- top ----
for _ in $(seq 50); do
        "$STEERCTL" top --once --json 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["snapshot"] else 1)' && break
        sleep 0.1
done
sctl 0 top --once --json
json_check 'j["mode"] == "observe" and {"snapshot", "plan", "counters"} <= set(j) and j["snapshot"]["llcs"] and j["snapshot"]["cpus"]'
sctl 0 top --once
grep -Eq '^steerd mode observe' <<<"$OUT" || fail "top: no header line: $OUT"
grep -Eq '^LLC +CPUS +WEIGHT +UTIL +BOOSTED +IDLE-SCAN +OVERLOADED' <<<"$OUT" || fail "top: no LLC table: $OUT"
grep -Eq '^CPU +LLC +CORE +UTIL +RUNNABLE +BOOSTED' <<<"$OUT" || fail "top: no CPU table: $OUT"
grep -q 'Last plan' <<<"$OUT" || fail "top: no plan: $OUT"
grep -q $'\e' <<<"$OUT" && fail "top wrote ANSI codes to a pipe"
sctl 0 top --iterations 2 --delay 0.2 --json
[ "$(wc -l <"$TMP/out")" = 2 ] || fail "top --iterations 2 --json printed $(wc -l <"$TMP/out") lines"
while read -r line; do OUT=$line json_check '"snapshot" in j'; done <"$TMP/out"
sctl 0 top -n 2 -d 0.2
[ "$(grep -c '^steerd mode' "$TMP/out")" = 2 ] || fail "top -n 2 did not print two frames: $OUT"
"$STEERCTL" top >/dev/null 2>&1 &
TOP=$!
sleep 1.5
kill -INT "$TOP"
wait "$TOP"
rc=$?
[ $rc = 0 ] || fail "top exited $rc on SIGINT"
echo "top: ok"

# ---- reload, good and bad config ----
sctl 0 reload
printf '[Manager]\nMode=observe\nSamplePeriodMs=100\nNoSuchKey=1\n[Policy\n' >"$TMP/steerd.conf"
sctl 1 reload
grep -q "Failed to reload" <<<"$ERR" || fail "reload with a bad config: $ERR"
# steerd-bus.h: "a bad config keeps the running one and fails with InvalidArgument naming file:line"
grep -Eq "steerd\.conf:[0-9]+" <<<"$ERR" || fail "the reload error does not name file:line: $ERR"
kill -0 "$DAEMON" 2>/dev/null || fail "steerd died on a bad config"
[ "$(mode_now)" = observe ] || fail "a bad reload changed the mode"
[ "$(list_now)" = "$LIST" ] || fail "a bad reload changed the opt-ins"
sctl 0 status
cp "$TMP/good.conf" "$TMP/steerd.conf"
sctl 0 reload
echo "reload: ok"

# ---- the bus API is exactly include/steerd-bus.h ----
busctl introspect org.steerd1 /org/steerd1 org.steerd1.Manager >"$TMP/introspect.txt" 2>&1 ||
        fail "busctl introspect failed: $(cat "$TMP/introspect.txt")"
cat "$TMP/introspect.txt"
busctl introspect --xml-interface org.steerd1 /org/steerd1 >"$TMP/introspect.xml" 2>&1 ||
        fail "busctl introspect --xml-interface failed"
python3 - "$TMP/introspect.xml" <<'EOF' || fail "the bus API differs from include/steerd-bus.h"
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
interfaces = {i.get("name"): i for i in root.findall("interface")}
standard = {"org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties"}
extra = set(interfaces) - standard - {"org.steerd1.Manager"}
assert not extra, f"unexpected interfaces {extra}"
iface = interfaces["org.steerd1.Manager"]

def args(e, direction=None):
    return tuple(a.get("type") for a in e.findall("arg")
                 if direction is None or (a.get("direction") or "in") == direction)

methods = {m.get("name"): (args(m, "in"), args(m, "out")) for m in iface.findall("method")}
signals = {s.get("name"): args(s) for s in iface.findall("signal")}
props = {p.get("name"): (p.get("type"), p.get("access")) for p in iface.findall("property")}
want_methods = {
    "SetMode": (("s",), ()),
    "ResetMode": ((), ("b",)),
    "OptIn": (("s", "s"), ()),
    "OptInEx": (("s", "s", "s"), ()),
    "OptInWithOptions": (("s", "s", "a{ss}"), ()),
    "OptOut": (("s",), ()),
    "ListCgroups": ((), ("a(sssssu)",)),
    "ListCgroupsEx": ((), ("a(sssssus)",)),
    "Describe": ((), ("s",)),
    "Explain": (("s",), ("a(ss)",)),
    "Reload": ((), ()),
    "StartTrial": (("s", "t", "t", "s", "s"), ("s",)),
    "StopTrial": (("s",), ("s",)),
    "ListTrials": ((), ("a(sssssddddss)",)),
    "GetTrial": (("s",), ("s",)),
}
want_signals = {"ModeChanged": ("s",), "LLCOverload": ("u", "b", "d"), "ActionsApplied": ("u", "s"),
                "TrialProgress": ("(sssssddddss)",), "SteeringEvaluated": ("s", "b", "s")}
want_props = {"Mode": ("s", "read"), "ModeSource": ("s", "read"), "ModeSetUSec": ("t", "read"),
              "ConfigMode": ("s", "read"), "SamplePeriodUSec": ("t", "read"), "Version": ("s", "read"),
              "Counters": ("a{st}", "read"), "WakeSampling": ("s", "read"),
              "KernelCacheAware": ("s", "read"), "Trials": ("a(sssssddddss)", "read")}
ok = True
for kind, got, want in (("methods", methods, want_methods), ("signals", signals, want_signals),
                        ("properties", props, want_props)):
    if got != want:
        print(f"{kind}: got {got}\n  want {want}", file=sys.stderr)
        ok = False
mode = next(p for p in iface.findall("property") if p.get("name") == "Mode")
for a in mode.findall("annotation"):
    if a.get("name") == "org.freedesktop.DBus.Property.EmitsChangedSignal" and a.get("value") != "true":
        print(f"Mode does not emit PropertiesChanged ({a.get('value')})", file=sys.stderr)
        ok = False
sys.exit(0 if ok else 1)
EOF
echo "introspection: ok"

# ---- a non-root caller: served for reading, refused for changes ----
cp "$STEERCTL" "$TMP/steerctl"
chmod 755 "$TMP/steerctl"
asnobody() { setpriv --reuid=nobody --regid="$NOGROUP" --clear-groups "$@"; }
asnobody "$TMP/steerctl" status >"$TMP/out" 2>"$TMP/err" || fail "status as nobody failed: $(cat "$TMP/err")"
grep -q 'Mode: observe' "$TMP/out" || fail "status as nobody: $(cat "$TMP/out")"
asnobody "$TMP/steerctl" list --json >"$TMP/out" 2>"$TMP/err" || fail "list as nobody failed: $(cat "$TMP/err")"
asnobody "$TMP/steerctl" top --once --json >"$TMP/out" 2>"$TMP/err" || fail "top (Describe) as nobody failed: $(cat "$TMP/err")"
OUT=$(cat "$TMP/out") json_check '"snapshot" in j'
asnobody "$TMP/steerctl" trials --json >"$TMP/out" 2>"$TMP/err" || fail "trials as nobody failed: $(cat "$TMP/err")"
for cmd in "mode latency" "mode --reset" "opt-in /$NAME-b" "opt-out /$NAME" "reload" "trial --no-wait /$NAME" \
        "trial --stop /$NAME"; do
        # shellcheck disable=SC2086
        asnobody "$TMP/steerctl" $cmd >"$TMP/out" 2>"$TMP/err"
        rc=$?
        [ $rc = 1 ] || fail "'steerctl $cmd' as nobody exited $rc, expected 1: $(cat "$TMP/err")"
        grep -qi 'root\|access denied\|polkit' "$TMP/err" || fail "'steerctl $cmd' as nobody: unclear message: $(cat "$TMP/err")"
done
[ "$(mode_now)" = observe ] || fail "a non-root caller changed the mode"
[ "$(list_now)" = "$LIST" ] || fail "a non-root caller changed the opt-ins"
asnobody dbus-send --system --print-reply --dest=org.steerd1 /org/steerd1 org.steerd1.Manager.SetMode \
        string:latency >/dev/null 2>"$TMP/err" && fail "SetMode as nobody succeeded"
grep -q 'org.steerd1.Error.AccessDenied' "$TMP/err" || fail "SetMode as nobody: $(cat "$TMP/err")"
echo "non-root: ok"

# ---- bad arguments: named errors, nothing changes ----
# bad ERROR METHOD ARGS...: dbus-send and busctl both fail, dbus-send names ERROR.
bad() {
        local err=$1 method=$2
        shift 2
        local sig="" a dargs=() bargs=()
        for a in "$@"; do
                sig+=s
                dargs+=("string:$a")
                bargs+=("$a")
        done
        dbus-send --system --print-reply --dest=org.steerd1 /org/steerd1 "org.steerd1.Manager.$method" \
                "${dargs[@]}" >/dev/null 2>"$TMP/err" && fail "$method $(head -c 100 <<<"$*") succeeded"
        grep -q "$err" "$TMP/err" || fail "$method: expected $err, got: $(head -c 300 "$TMP/err")"
        # busctl prints only the message; its debug log has the error's name.
        SYSTEMD_LOG_LEVEL=debug busctl call org.steerd1 /org/steerd1 org.steerd1.Manager "$method" "$sig" \
                "${bargs[@]}" >/dev/null 2>"$TMP/err" && fail "busctl call $method succeeded"
        if grep -q 'error-name=' "$TMP/err"; then
                grep -q "error-name=$err" "$TMP/err" ||
                        fail "busctl call $method: expected $err, got: $(grep -o 'error-name=[^ ]*' "$TMP/err")"
        fi
        [ "$(mode_now)" = observe ] || fail "$method with bad arguments changed the mode"
        [ "$(list_now)" = "$LIST" ] || fail "$method with bad arguments changed the opt-ins"
}
LONG=/$(head -c 10240 /dev/zero | tr '\0' x)
bad org.steerd1.Error.InvalidArgument SetMode turbo
bad org.steerd1.Error.InvalidArgument SetMode ""
bad org.steerd1.Error.InvalidArgument OptIn "$NAME" latency
bad org.steerd1.Error.InvalidArgument OptIn "/$NAME/../$NAME-b" latency
bad org.steerd1.Error.InvalidArgument OptIn "/$NAME/." latency
bad org.steerd1.Error.InvalidArgument OptIn "$LONG" latency
bad org.steerd1.Error.InvalidArgument OptIn "/$NAME-b" turbo
bad org.steerd1.Error.NoSuchCgroup OptIn "/$NAME-does-not-exist" latency
bad org.steerd1.Error.InvalidArgument OptOut "$NAME"
bad org.steerd1.Error.InvalidArgument OptOut "/$NAME/.."
bad org.steerd1.Error.InvalidArgument OptOut "$LONG"
bad org.steerd1.Error.NoSuchCgroup OptOut "/$NAME-b"
# steerctl maps them: invalid arguments 2 (refused before the bus), no such cgroup 4.
sctl 2 opt-in "$NAME"
sctl 2 opt-in "$LONG"
sctl 2 mode turbo
sctl 2 mode --reset latency
sctl 2 status --reset
sctl 4 opt-out "/$NAME-b"
# OptInWithOptions: an unknown key (a typo must not opt in without what
# was asked) or value is refused by name, and nothing changes.
bad_options() { # ERROR KEY VALUE
        dbus-send --system --print-reply --dest=org.steerd1 /org/steerd1 org.steerd1.Manager.OptInWithOptions \
                string:"/$NAME-b" string:latency "dict:string:string:$2,$3" >/dev/null 2>"$TMP/err" &&
                fail "OptInWithOptions $2=$3 succeeded"
        grep -q "$1" "$TMP/err" || fail "OptInWithOptions $2=$3: expected $1, got: $(head -c 300 "$TMP/err")"
        [ "$(list_now)" = "$LIST" ] || fail "OptInWithOptions $2=$3 changed the opt-ins"
}
bad_options org.steerd1.Error.InvalidArgument serach yes
bad_options org.steerd1.Error.InvalidArgument search maybe
bad_options org.steerd1.Error.InvalidArgument evaluate sometimes
sctl 2 opt-in "/$NAME-b" --search=maybe
sctl 2 status --search
echo "bad arguments: ok"

# ---- restart: what steerctl changed persists (PersistRuntime=yes) ----
start_daemon() { # CONFIG
        STEERD_LOG_STDERR=1 "$STEERD" --config "$1" "${DAEMON_ARGS[@]:2}" >>"$TMP/steerd.log" 2>&1 &
        DAEMON=$!
        for _ in $(seq 100); do
                "$STEERCTL" status >/dev/null 2>&1 && return 0
                kill -0 "$DAEMON" 2>/dev/null || fail "steerd exited at restart"
                sleep 0.1
        done
        fail "steerd did not come back within 10 s"
}
stop_daemon() {
        kill -TERM "$DAEMON"
        wait "$DAEMON"
        local rc=$?
        DAEMON=
        [ $rc = 0 ] || fail "steerd exited $rc on SIGTERM"
}
sctl 0 mode balanced
sctl 0 opt-in "/$NAME-b" --search --evaluate=no
KEPT=$(list_now)
grep -q "\"runtime\"" <<<"$KEPT" || fail "no runtime opt-in to carry over: $KEPT"
stop_daemon
start_daemon "$TMP/steerd.conf"
[ "$(mode_now)" = balanced ] || fail "the mode set with steerctl did not survive a restart: $(mode_now)"
[ "$(list_now)" = "$KEPT" ] || fail "the runtime opt-ins did not survive a restart: $(list_now) vs $KEPT"
python3 -c '
import json, sys
e = [o for o in json.load(open(sys.argv[1]))["opt_ins"] if o["cgroup"] == sys.argv[2]]
sys.exit(0 if e and e[0].get("search") == "yes" and e[0].get("evaluate") == "no" else 1)' \
        "$TMP/state/runtime.json" "/$NAME-b" ||
        fail "opt-in --search --evaluate=no is not in runtime.json: $(cat "$TMP/state/runtime.json")"
# Where the mode comes from: the saved steerctl mode, not the config's Mode=observe.
grep -Eq 'started: mode balanced, set by steerctl at [0-9-]+ [0-9:]+ UTC \(.*runtime.json; the config .* says observe\)' "$TMP/steerd.log" ||
        fail "the start line does not say the mode came from steerctl: $(grep started: "$TMP/steerd.log" | tail -1)"
sctl 0 status
grep -Eq 'Mode: balanced \(set by steerctl at [0-9-]+ [0-9:]+ .*; the config says observe, `steerctl mode --reset` goes back to it\)' <<<"$OUT" ||
        fail "status does not say where the mode comes from: $OUT"
sctl 0 status --json
json_check 'j["mode_source"] == "runtime" and j["config_mode"] == "observe" and abs(j["mode_set_usec"] / 1e6 - __import__("time").time()) < 600'
sctl 0 mode --reset
[ "$OUT" = "Dropped the mode steerctl had set: mode observe, from the config" ] || fail "mode --reset printed '$OUT'"
[ "$(mode_now)" = observe ] || fail "mode --reset left mode $(mode_now)"
grep -q 'Saved mode dropped (steerctl mode --reset): the config.s Mode=observe applies' "$TMP/steerd.log" ||
        fail "no journal line for mode --reset"
grep -q 'Mode balanced -> observe, set by config' "$TMP/steerd.log" || fail "the mode change does not name its source"
sctl 0 status --json
json_check 'j["mode_source"] == "config" and j["mode_set_usec"] == 0'
sctl 0 status
grep -q 'Mode: observe (from the config)' <<<"$OUT" || fail "status after --reset: $OUT"
sctl 0 mode --reset
[ "$OUT" = "No mode was set by steerctl: mode observe, from the config" ] || fail "a second mode --reset printed '$OUT'"
# The reset is saved too: the next start takes the config's mode.
stop_daemon
start_daemon "$TMP/steerd.conf"
[ "$(mode_now)" = observe ] || fail "mode --reset did not survive a restart: $(mode_now)"
grep -Eq 'started: mode observe, set by config ' "$TMP/steerd.log" || fail "the start line after --reset: $(grep started: "$TMP/steerd.log" | tail -1)"
sctl 0 mode balanced
echo "mode source: start line, status, --json, mode --reset: ok"
# PersistRuntime=no: every start begins from the file.
sed 's/^\[Manager\]$/[Manager]\nPersistRuntime=no/' "$TMP/steerd.conf" >"$TMP/nopersist.conf"
stop_daemon
start_daemon "$TMP/nopersist.conf"
[ "$(mode_now)" = observe ] || fail "PersistRuntime=no still took the saved mode: $(mode_now)"
grep -q "\"runtime\"" <<<"$(list_now)" && fail "PersistRuntime=no still took the saved opt-ins: $(list_now)"
echo "restart: runtime changes persist, and PersistRuntime=no ignores them: ok"

# ---- the bus restarted under steerd: it reconnects and owns its name again ----
start_bus() {
        dbus-daemon --config-file="$TMP/bus.conf" --nofork --nopidfile >>"$TMP/bus.log" 2>&1 &
        BUS_PID=$!
        for _ in $(seq 100); do [ -S "$SOCKET" ] && return 0; sleep 0.05; done
        fail "dbus-daemon did not start again"
}
restart_bus() { # SECONDS-DOWN
        kill "$BUS_PID"
        wait "$BUS_PID" 2>/dev/null
        rm -f "$SOCKET"
        sleep "$1"
        start_bus
}
back_on_bus() { # what must hold: steerctl answers, from the same steerd
        for _ in $(seq 150); do
                if "$STEERCTL" status >/dev/null 2>&1; then
                        owner=$(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" status org.steerd1 2>/dev/null | awk -F= '$1 == "PID" { print $2 }')
                        [ "$owner" = "$DAEMON" ] && return 0
                fi
                kill -0 "$DAEMON" 2>/dev/null || fail "steerd exited when the bus went away"
                sleep 0.1
        done
        fail "steerd was not back on the bus within 15 s of $1 (owner '${owner:-none}', steerd $DAEMON)"
}
t0=$(date +%s%N)
restart_bus 0.2
back_on_bus "a bus restart"
echo "bus restarted under steerd: back on the bus in $((($(date +%s%N) - t0) / 1000000)) ms, same PID: ok"
# Gone for longer (a bus that comes back later): still steering meanwhile, back after.
restart_bus 3
back_on_bus "a bus away for 3 s"
grep -q "The system bus connection was lost; reconnecting" "$TMP/steerd.log" || fail "steerd did not say it lost the bus"
sctl 0 mode latency
sctl 0 mode balanced
echo "bus away for 3 s: steerd reconnected and takes changes again: ok"
# A bus that starts after steerd: steerd waits for it (watch-bind) without blocking.
stop_daemon
kill "$BUS_PID"
wait "$BUS_PID" 2>/dev/null
rm -f "$SOCKET"
STEERD_LOG_STDERR=1 "$STEERD" --config "$TMP/steerd.conf" "${DAEMON_ARGS[@]:2}" >>"$TMP/steerd.log" 2>&1 &
DAEMON=$!
sleep 1
kill -0 "$DAEMON" 2>/dev/null || fail "steerd did not start without a bus"
start_bus
back_on_bus "a bus that started after steerd"
echo "bus started after steerd: steerd connected when it came: ok"

# ---- steerd gone: a clear message, exit 1 ----
kill -TERM "$DAEMON"
wait "$DAEMON"
rc=$?
DAEMON=
[ $rc = 0 ] || fail "steerd exited $rc on SIGTERM"
sctl 1 status
grep -q 'steerd is not running' <<<"$ERR" || fail "status without steerd: $ERR"
sctl 1 mode latency
echo "t-bus: all checks passed"
