#!/usr/bin/env bash
# steerctl without a daemon: --help names every verb, option and mode,
# --version, usage errors exit 2 before any bus call, and a missing system
# bus is exit 1 with a clear message. $1 = build dir, $2 = shared dir.
set -uo pipefail
BUILD=$1
STEERCTL=$BUILD/steerctl

[ -x "$STEERCTL" ] || { echo "SKIP: $STEERCTL not built"; exit 77; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }

# A bus address nobody listens on: any verb that got past argument checking
# would fail with 1, so exit 2 proves the check happened client-side.
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$TMP/no-such-socket

# expect RC DESCRIPTION -- steerctl arguments...; output in $TMP/out, $TMP/err
expect() {
        local want=$1 what=$2
        shift 3
        "$STEERCTL" "$@" >"$TMP/out" 2>"$TMP/err"
        local rc=$?
        if [ "$rc" != "$want" ]; then
                fail "$what: 'steerctl $*' exited $rc, expected $want; stderr: $(head -c 400 "$TMP/err")"
                return 1
        fi
        return 0
}

# --help: every verb, option, mode and policy, and the exit codes.
expect 0 "--help" -- --help
for word in status mode opt-in opt-out list top monitor reload \
        --json --no-legend --no-pager --policy --once --iterations --version \
        off observe latency balanced org.steerd1.manage "Exit status" "Examples"; do
        grep -q -- "$word" "$TMP/out" || fail "--help does not mention '$word'"
done
[ -s "$TMP/err" ] && fail "--help wrote to stderr: $(cat "$TMP/err")"
expect 0 "-h" -- -h
grep -q "opt-in" "$TMP/out" || fail "-h prints no help"

# --version
expect 0 "--version" -- --version
grep -Eq '^steerctl [0-9]+\.[0-9]+' "$TMP/out" || fail "--version prints '$(cat "$TMP/out")'"

# Usage errors: exit 2, a message on stderr, nothing on stdout.
usage_error() {
        local what=$1
        shift
        expect 2 "$what" -- "$@" || return
        [ -s "$TMP/err" ] || fail "$what: no message on stderr"
        [ -s "$TMP/out" ] && fail "$what: wrote to stdout: $(cat "$TMP/out")"
        grep -qi "system bus" "$TMP/err" && fail "$what: tried the bus before checking the arguments"
        return 0
}
usage_error "unknown verb" frobnicate
grep -q "frobnicate" "$TMP/err" || fail "unknown verb: the message does not name it"
usage_error "unknown option" --frobnicate status
usage_error "unknown mode" mode turbo
grep -q "turbo" "$TMP/err" || fail "unknown mode: the message does not name it"
usage_error "mode with two arguments" mode latency balanced
usage_error "opt-in without cgroup" opt-in
usage_error "opt-out without cgroup" opt-out
usage_error "opt-in with two cgroups" opt-in /a /b
usage_error "unknown policy" opt-in /bench1 --policy turbo
usage_error "relative cgroup" opt-in bench1
usage_error "cgroup with .." opt-in /a/../b
usage_error "cgroup with ." opt-out /a/./b
usage_error "10 KB cgroup" opt-in "/$(head -c 10240 /dev/zero | tr '\0' x)"
usage_error "status with an argument" status extra
usage_error "--policy with another verb" list --policy latency
usage_error "--once with another verb" status --once
usage_error "--iterations 0" top --iterations 0
usage_error "--iterations not a number" top --iterations many
usage_error "--delay not a number" top --delay soon
usage_error "--json=unknown" status --json=yaml

# No bus: exit 1 and a clear message, for read and write verbs alike.
for verb in status "mode" list "top --once" "mode latency" "opt-in /bench1" "opt-out /bench1" reload; do
        # shellcheck disable=SC2086
        expect 1 "no bus ($verb)" -- $verb || continue
        grep -q "Failed to connect to the system bus" "$TMP/err" ||
                fail "no bus ($verb): unclear message: $(cat "$TMP/err")"
done

# A bus address that is not even an address.
DBUS_SYSTEM_BUS_ADDRESS=garbage expect 1 "garbage bus address" -- status &&
        { grep -q "Failed to connect to the system bus" "$TMP/err" || fail "garbage address: $(cat "$TMP/err")"; }

[ $FAILED = 0 ] || exit 1
echo "t-steerctl-usage: all checks passed"
