#!/usr/bin/env bash
# Hostile input on the live host (docs/DECISIONS.md "Hostile input"): every
# path from a config line, a bus call, an xattr walk, runtime.json or the
# state file is confined to the cgroup mounts.
#   - a config [OptIn] line naming /proc/self/root/..., /proc/PID/cwd, a host
#     directory beside the mounts, or a cgroup with another file system
#     bind-mounted on it, is refused with file:line (at start and at reload);
#   - `steerctl opt-in` (and the bus's OptIn, OptOut, Explain) of such paths
#     exits 2 / InvalidArgument and changes nothing; a non-root caller is
#     refused first; the runtime opt-ins are capped (STEERD_RUNTIME_RULES_MAX);
#   - the xattr walk ignores a directory bind-mounted into the cgroup tree,
#     and what is below it (a symbolic link to an xattr'd directory);
#     cgroupfs itself refuses symlink(2), so a link can only come that way;
#   - a planted /run state file naming a directory outside the mounts (a
#     temporary directory with a cpuset.cpus of "0-1", the same through
#     /proc/self/root, the bind-mounted cgroup) is set aside as .bad, and
#     neither that file nor the good entry beside it is written;
#   - a planted runtime.json naming /proc/... is set aside as .bad.
# $1 = build dir. Needs root, a cgroup v1 cpuset hierarchy, mount(8),
# dbus-daemon, dbus-send, busctl, setpriv and python3; skips (77) otherwise.
set -uo pipefail
BUILD=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
STEERD=$BUILD/steerd
STEERCTL=$BUILD/steerctl

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for tool in dbus-daemon dbus-send busctl setpriv python3 mount umount; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -x "$STEERD" ] && [ -x "$STEERCTL" ] || { echo "SKIP: steerd or steerctl not built in $BUILD"; exit 77; }
CPUSET=$(awk '$3=="cgroup" && $4 ~ /(^|,)cpuset(,|$)/ {print $2; exit}' /proc/self/mounts)
[ -n "$CPUSET" ] || { echo "SKIP: no cgroup v1 cpuset hierarchy mounted"; exit 77; }
getent passwd nobody >/dev/null || { echo "SKIP: no user nobody"; exit 77; }
NOGROUP=$(id -gn nobody 2>/dev/null) || NOGROUP=nogroup

TMP=$(mktemp -d)
chmod 755 "$TMP"
NAME=steerd-thostile-$$
BUS_PID=
DAEMON=
CGROUPS=()
MOUNTED=
cleanup() {
        [ -n "$DAEMON" ] && { kill -TERM "$DAEMON" 2>/dev/null; sleep 0.5; kill -9 "$DAEMON" 2>/dev/null; }
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        wait 2>/dev/null
        [ -n "$MOUNTED" ] && umount -l "$MOUNTED" 2>/dev/null
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
setxattr() { # PATH VALUE
        python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.steerd.policy", sys.argv[2].encode())' "$1" "$2"
}

# ---- a private bus like Debian's system bus, with the policy steerd ships ----
. "$SRC/tests/tools/private-bus.sh"
start_private_bus "$TMP" "$SRC/units/org.steerd1.conf" || fail "dbus-daemon did not start: $(cat "$TMP/bus.log")"

# ---- cgroups: a good one, an xattr'd one (the walk works), one with a bind mount on it ----
for g in "$NAME" "$NAME-x" "$NAME-bind"; do
        mkdir "$CPUSET/$g" || fail "cannot create $CPUSET/$g"
        CGROUPS+=("$CPUSET/$g")
        cat "$CPUSET/cpuset.mems" >"$CPUSET/$g/cpuset.mems"
        cat "$CPUSET/cpuset.cpus" >"$CPUSET/$g/cpuset.cpus"
done
ALL_CPUS=$(cat "$CPUSET/$NAME/cpuset.cpus")
setxattr "$CPUSET/$NAME-x" latency || fail "cannot set user.steerd.policy on $CPUSET/$NAME-x"
# What the bind mount brings into the tree: a directory with the xattr, a
# child with it, and a symbolic link to another directory with it.
mkdir -p "$TMP/evil/sub" "$TMP/evil-target"
printf '0-1\n' >"$TMP/evil/cpuset.cpus"
ln -s "$TMP/evil-target" "$TMP/evil/link"
for d in "$TMP/evil" "$TMP/evil/sub" "$TMP/evil-target"; do
        setxattr "$d" latency || { echo "SKIP: no user xattrs on $TMP's file system"; exit 77; }
done
mount --bind "$TMP/evil" "$CPUSET/$NAME-bind" || { echo "SKIP: cannot bind-mount into $CPUSET"; exit 77; }
MOUNTED=$CPUSET/$NAME-bind
# The victim of a planted state file: a directory outside the mounts that looks like a cgroup.
mkdir -p "$TMP/victim"
printf '0-1\n' >"$TMP/victim/cpuset.cpus"

DAEMON_ARGS=(--state-dir "$TMP/state" --runtime-dir "$TMP/run" --foreground)
start_daemon() { # CONFIG
        STEERD_LOG_STDERR=1 "$STEERD" --config "$1" "${DAEMON_ARGS[@]}" >>"$TMP/steerd.log" 2>&1 &
        DAEMON=$!
        for _ in $(seq 100); do
                "$STEERCTL" status >/dev/null 2>&1 && return 0
                kill -0 "$DAEMON" 2>/dev/null || fail "steerd exited at start"
                sleep 0.1
        done
        fail "steerd did not come up within 10 s"
}
stop_daemon() {
        kill -TERM "$DAEMON"
        wait "$DAEMON"
        local rc=$?
        DAEMON=
        [ $rc = 0 ] || fail "steerd exited $rc on SIGTERM"
}
GOOD_CONF="[Manager]
Mode=observe
SamplePeriodMs=100
RescanIntervalMs=300ms
PersistRuntime=yes"
printf '%s\n' "$GOOD_CONF" >"$TMP/good.conf"

# ---- 1. config [OptIn] lines: refused with file:line ----
# conf_refused RULE WHAT: a config whose line 7 is RULE=latency does not start steerd.
conf_refused() {
        printf '%s\n[OptIn]\n%s=latency\n' "$GOOD_CONF" "$1" >"$TMP/bad.conf"
        timeout 20 env STEERD_LOG_STDERR=1 "$STEERD" --config "$TMP/bad.conf" "${DAEMON_ARGS[@]}" \
                >"$TMP/start.log" 2>&1
        local rc=$?
        [ $rc != 0 ] && [ $rc != 124 ] || fail "config [OptIn] $1 ($2): steerd exited $rc: $(cat "$TMP/start.log")"
        grep -qF "$TMP/bad.conf:7:" "$TMP/start.log" ||
                fail "config [OptIn] $1 ($2): no file:line in: $(cat "$TMP/start.log")"
        grep -q "$3" "$TMP/start.log" || fail "config [OptIn] $1 ($2): no '$3' in: $(cat "$TMP/start.log")"
        [ -e "$TMP/run/state.json" ] && fail "config [OptIn] $1: a refused start wrote a state file"
        echo "  config $1 ($2): refused: $(grep -F "$TMP/bad.conf:7:" "$TMP/start.log" | head -1)"
}
echo "config [OptIn] lines:"
conf_refused "/$NAME/../$NAME-x" ".." "not a cgroup path"
conf_refused "/$NAME/./x" "." "not a cgroup path"
conf_refused "//$NAME" "//" "not a cgroup path"
conf_refused "/proc/self/root$CPUSET/$NAME" "/proc/self/root" "outside the cgroup mounts"
conf_refused "/proc/1/cwd" "/proc/PID/cwd" "outside the cgroup mounts"
conf_refused "/proc/self/fd/3" "/proc/self/fd" "outside the cgroup mounts"
conf_refused "/sys/fs/cgroup/cpu/$NAME" "another hierarchy" "outside the cgroup mounts"
conf_refused "/proc/*/root/**" "a glob into /proc" "outside the cgroup mounts"
conf_refused "$CPUSET/$NAME-bind" "a bind mount, by directory" "another file system"
conf_refused "/$NAME-bind" "a bind mount, by name" "another file system"
conf_refused "$CPUSET/$NAME-bind/link" "a symlink below a bind mount" "another file system"

# ---- 2. the daemon, and the same paths over the bus ----
start_daemon "$TMP/good.conf"
# The xattr'd cgroup shows the walk is working before anything is judged.
for _ in $(seq 50); do
        "$STEERCTL" list --json 2>/dev/null | grep -q "\"/$NAME-x\"" && break
        sleep 0.1
done
"$STEERCTL" list --json | grep -q "\"/$NAME-x\"" || fail "the xattr on $CPUSET/$NAME-x was not seen"
sleep 1 # three more rescans
mine() { # the opt-ins of this test's cgroups and of anything the bind mount brought
        "$STEERCTL" list --json 2>/dev/null | python3 -c '
import json, sys
print(json.dumps(sorted((c["name"], c["source"], c["directory"]) for c in json.load(sys.stdin)
                        if sys.argv[1] in c["name"] or sys.argv[1] in c["directory"] or "evil" in c["directory"])))' "$NAME"
}
LIST=$(mine)
grep -q "bind" <<<"$LIST" && fail "the xattr walk took in the bind-mounted directory: $LIST"
grep -q "link\|evil" <<<"$LIST" && fail "the xattr walk followed the link below the bind mount: $LIST"
echo "xattr walk: $CPUSET/$NAME-x taken in; $NAME-bind (bind mount), its child and the link below it ignored: ok"

sctl() { # RC ARGS...
        local want=$1
        shift
        "$STEERCTL" "$@" >"$TMP/out" 2>"$TMP/err"
        local rc=$?
        [ "$rc" = "$want" ] || fail "'steerctl $*' exited $rc, expected $want: $(cat "$TMP/out" "$TMP/err")"
}
echo "steerctl opt-in (exit 2, nothing changes):"
for p in "/proc/self/root$CPUSET/$NAME" "/proc/$$/cwd" "/proc/self/fd/0" "/sys/fs/cgroup/cpu/$NAME" \
        "/sys/fs/cgroup" "/dev/shm" "$CPUSET/$NAME-bind" "/$NAME-bind" "$CPUSET/$NAME-bind/sub" \
        "/$NAME//x" "/$NAME/" "/$NAME/../$NAME-x"; do
        sctl 2 opt-in "$p"
        echo "  opt-in $p: exit 2: $(head -1 "$TMP/err")"
        [ "$(mine)" = "$LIST" ] || fail "opt-in $p changed the opt-ins: $(mine) vs $LIST"
done
sctl 2 opt-out "/proc/self/root$CPUSET/$NAME-x"
sctl 2 explain "/proc/1/cwd"
# The daemon refuses on its own, without steerctl's checks in front.
for p in "/proc/self/root$CPUSET/$NAME" "/$NAME-bind" "/$NAME/../$NAME-x" "/$NAME//x"; do
        dbus-send --system --print-reply --dest=org.steerd1 /org/steerd1 org.steerd1.Manager.OptIn \
                "string:$p" string:latency >/dev/null 2>"$TMP/err" && fail "OptIn $p over the bus succeeded"
        grep -q org.steerd1.Error.InvalidArgument "$TMP/err" || fail "OptIn $p: $(cat "$TMP/err")"
done
for m in OptOut Explain; do
        dbus-send --system --print-reply --dest=org.steerd1 /org/steerd1 "org.steerd1.Manager.$m" \
                "string:/proc/self/root$CPUSET/$NAME" >/dev/null 2>"$TMP/err" && fail "$m of /proc/self/root/... succeeded"
        grep -q org.steerd1.Error.InvalidArgument "$TMP/err" || fail "$m /proc/self/root/...: $(cat "$TMP/err")"
done
[ "$(mine)" = "$LIST" ] || fail "the bus calls changed the opt-ins: $(mine) vs $LIST"
# A caller who is not root is refused before its argument is looked at.
cp "$STEERCTL" "$TMP/steerctl"
chmod 755 "$TMP/steerctl"
setpriv --reuid=nobody --regid="$NOGROUP" --clear-groups "$TMP/steerctl" opt-in "/$NAME" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 1 ] && grep -qi 'root\|polkit' "$TMP/err" || fail "opt-in as nobody exited $rc: $(cat "$TMP/err")"
setpriv --reuid=nobody --regid="$NOGROUP" --clear-groups "$TMP/steerctl" opt-in "/proc/1/cwd" >"$TMP/out" 2>"$TMP/err"
[ $? = 1 ] || fail "a hostile opt-in as nobody was not refused as non-root: $(cat "$TMP/err")"
[ "$(mine)" = "$LIST" ] || fail "a non-root caller changed the opt-ins"
echo "bus: OptIn, OptOut, Explain of hostile paths are InvalidArgument; nobody is refused first: ok"

# ---- 3. reload with a hostile line: refused with file:line, the running config stays ----
cp "$TMP/good.conf" "$TMP/steerd.conf"
stop_daemon
start_daemon "$TMP/steerd.conf"
printf '%s\n[OptIn]\n/%s=latency\n/proc/self/root%s/%s=latency\n' "$GOOD_CONF" "$NAME" "$CPUSET" "$NAME" >"$TMP/steerd.conf"
sctl 1 reload
grep -qF "$TMP/steerd.conf:8: [OptIn] /proc/self/root$CPUSET/$NAME: refused" "$TMP/err" ||
        fail "reload: no file:line for the hostile line: $(cat "$TMP/err")"
"$STEERCTL" list --json | grep -q "\"/$NAME\"" && fail "a refused reload took its good line in"
echo "reload: $(head -1 "$TMP/err")"

# ---- 4. caps: STEERD_RUNTIME_RULES_MAX runtime opt-ins ----
CAP=$(awk '$1 == "#define" && $2 == "STEERD_RUNTIME_RULES_MAX" {print $3}' "$SRC/include/steerd-bus.h")
[ -n "$CAP" ] || fail "no STEERD_RUNTIME_RULES_MAX in include/steerd-bus.h"
t0=$(date +%s)
for i in $(seq 1 "$CAP"); do
        busctl call org.steerd1 /org/steerd1 org.steerd1.Manager OptIn ss "/$NAME-cap-$i-*" balanced \
                >/dev/null 2>"$TMP/err" || fail "opt-in $i of $CAP refused: $(cat "$TMP/err")"
done
sctl 2 opt-in "/$NAME-cap-one-more-*"
grep -q "at most $CAP runtime opt-ins" "$TMP/err" || fail "the cap's message: $(cat "$TMP/err")"
CAP_ERR=$(head -1 "$TMP/err")
sctl 0 opt-in "/$NAME-cap-7-*" --policy latency # an existing rule may change
sctl 0 opt-out "/$NAME-cap-1-*"
sctl 0 opt-in "/$NAME-cap-one-more-*" # room again
echo "caps: $CAP runtime opt-ins taken in $(($(date +%s) - t0)) s, one more refused (exit 2: $CAP_ERR): ok"
stop_daemon

# ---- 5. a planted state file naming directories outside the mounts ----
mkdir -p "$TMP/run"
echo 1 >"$CPUSET/$NAME/cpuset.cpus" # as if a killed steerd had narrowed it
plant() { # DIR: a good entry for $NAME, then one for DIR
        cat >"$TMP/run/state.json" <<EOF
{"version": 1, "threads": [], "cgroups": [
 {"name": "/$NAME", "dir": "$CPUSET/$NAME", "v2": false, "backend": "cpuset",
  "original_text": "$ALL_CPUS", "original": "$ALL_CPUS", "window": "1"},
 {"name": "/victim", "dir": "$1", "v2": false, "backend": "cpuset",
  "original_text": "0", "original": "0", "window": "0-1"}]}
EOF
}
for d in "$TMP/victim" "/proc/self/root$TMP/victim" "$CPUSET/../../../..$TMP/victim" "$CPUSET/$NAME-bind" \
        "/etc"; do
        plant "$d"
        rm -f "$TMP/run/state.json.bad"
        : >"$TMP/steerd.log"
        start_daemon "$TMP/good.conf"
        grep -q "cgroups\[1\]: refused, not acted on" "$TMP/steerd.log" ||
                fail "state file naming $d: not refused: $(cat "$TMP/steerd.log")"
        [ -e "$TMP/run/state.json.bad" ] || fail "state file naming $d: not set aside as state.json.bad"
        [ "$(cat "$TMP/victim/cpuset.cpus")" = 0-1 ] || fail "state file naming $d: $TMP/victim/cpuset.cpus was written"
        [ "$(cat "$TMP/evil/cpuset.cpus")" = 0-1 ] || fail "state file naming $d: the bind-mounted file was written"
        [ "$(cat "$CPUSET/$NAME/cpuset.cpus")" = 1 ] || fail "state file naming $d: its good entry was acted on"
        echo "  state.json naming $d: $(grep -o 'cgroups\[1\]: refused, not acted on: .*' "$TMP/steerd.log" | head -1)"
        stop_daemon
        [ "$(cat "$CPUSET/$NAME/cpuset.cpus")" = 1 ] || fail "state file naming $d: its good entry was given back at the stop"
        [ "$(cat "$TMP/victim/cpuset.cpus")" = 0-1 ] || fail "state file naming $d: $TMP/victim/cpuset.cpus was written at the stop"
done
echo "$ALL_CPUS" >"$CPUSET/$NAME/cpuset.cpus"
echo "state file: every entry outside the mounts refused, set aside as .bad, nothing written: ok"

# ---- 6. a planted runtime.json naming /proc/...: set aside ----
mkdir -p "$TMP/state"
cat >"$TMP/state/runtime.json" <<EOF
{"version": 1, "mode": "latency", "opt_ins": [{"cgroup": "/$NAME", "policy": "latency"},
 {"cgroup": "/proc/self/root$CPUSET/$NAME", "policy": "latency"}], "opt_outs": []}
EOF
rm -f "$TMP/state/runtime.json.bad"
: >"$TMP/steerd.log"
start_daemon "$TMP/good.conf"
[ -e "$TMP/state/runtime.json.bad" ] || fail "a hostile runtime.json was not set aside"
grep -q "opt_ins\[1\]: .*outside the cgroup mounts" "$TMP/steerd.log" || fail "runtime.json: no reason: $(cat "$TMP/steerd.log")"
[ "$("$STEERCTL" mode)" = observe ] || fail "a hostile runtime.json's mode was taken"
"$STEERCTL" list --json | grep -q '"runtime"' && fail "a hostile runtime.json's opt-ins were taken"
echo "runtime.json: $(grep -o 'runtime.json: malformed.*' "$TMP/steerd.log" | head -1 | cut -c1-160)"
stop_daemon

echo "t-hostile: all checks passed"
