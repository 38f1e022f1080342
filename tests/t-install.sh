#!/usr/bin/env bash
# Install and packaging: `cmake --install` puts binaries, unit, bus policy,
# polkit policy, config, manual pages and shell completion in FHS paths; the
# manual pages render and name every option, verb and setting (with the
# shipped defaults); the bash completion completes verbs, modes, policies,
# options and the daemon's opted-in cgroups; `systemd-analyze verify` accepts
# the unit; CPack builds a .deb that installs and removes cleanly, and after
# dpkg -i `man steerd` works.
# $1 = build dir (only its source dir is used: this test configures its own
# tree with prefix /usr, as a package would).
# A part that needs a missing tool (man and groff, to render the manual pages)
# is skipped with its reason and the test exits 77 after the rest passed.
set -uo pipefail
BUILD=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
SKIPPED=()
skip_part() { echo "SKIP (part): $*"; SKIPPED+=("$*"); }
finish() {
        if [ ${#SKIPPED[@]} -gt 0 ]; then
                printf 'SKIP: t-install passed what it could check; not checked: %s\n' "${SKIPPED[@]}"
                exit 77
        fi
        echo "t-install: all checks passed"
        exit 0
}
command -v scdoc >/dev/null || { echo "SKIP: scdoc not installed (the manual pages are built with it; apt-get install scdoc)"; exit 77; }

cmake -S "$SRC" -B "$TMP/build" -DCMAKE_INSTALL_PREFIX=/usr -DSTEERD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
        >/dev/null || fail "configure"
cmake --build "$TMP/build" -j"$(nproc)" >/dev/null || fail "build"
DESTDIR="$TMP/dest" cmake --install "$TMP/build" >/dev/null || fail "install"

for f in usr/sbin/steerd usr/bin/steerctl etc/steerd/steerd.conf lib/systemd/system/steerd.service \
        usr/share/dbus-1/system.d/org.steerd1.conf usr/share/dbus-1/system-services/org.steerd1.service \
        usr/share/polkit-1/actions/org.steerd1.policy usr/share/doc/steerd/README.md \
        usr/share/doc/steerd/copyright usr/share/doc/steerd/changelog.gz \
        usr/share/man/man8/steerd.8.gz usr/share/man/man1/steerctl.1.gz usr/share/man/man5/steerd.conf.5.gz \
        usr/share/bash-completion/completions/steerctl usr/share/zsh/vendor-completions/_steerctl \
        usr/share/doc/steerd/docs/DESIGN.md usr/share/doc/steerd/docs/METRICS.md \
        usr/share/steerd/prometheus/steerd-rules.yml usr/share/steerd/grafana/steerd-dashboard.json; do
        [ -e "$TMP/dest/$f" ] || fail "missing /$f after install"
done
[ -d "$TMP/dest/etc/steerd/steerd.conf.d" ] || fail "missing /etc/steerd/steerd.conf.d"
grep -q "^ExecStart=/usr/sbin/steerd" "$TMP/dest/lib/systemd/system/steerd.service" || fail "ExecStart is not /usr/sbin/steerd"
"$TMP/dest/usr/sbin/steerd" --version >/dev/null || fail "the installed steerd does not run"
# The shipped config is accepted by the installed binary.
"$TMP/dest/usr/sbin/steerd" --config "$TMP/dest/etc/steerd/steerd.conf" --replay /dev/null >/dev/null ||
        fail "the installed config is refused"

# ---- manual pages: render without warnings, NAME first, and they name
# every option and verb of --help and every key of the shipped config with
# its default ----
MAN_DIR=$TMP/dest/usr/share/man
# render PAGE.gz -> $TMP/page.txt, one line per paragraph (no wrapping)
render() {
        if command -v man >/dev/null; then
                MANWIDTH=1000 LC_ALL=C.UTF-8 man --warnings -l "$1" >"$TMP/page.txt" 2>"$TMP/page.err" ||
                        fail "man -l $1: $(cat "$TMP/page.err")"
        else
                zcat "$1" | groff -t -man -Tutf8 -ww -rLL=1000n -P-cbou >"$TMP/page.txt" 2>"$TMP/page.err" ||
                        fail "groff $1: $(cat "$TMP/page.err")"
        fi
        [ -s "$TMP/page.err" ] && fail "$(basename "$1") renders with warnings: $(head -c 600 "$TMP/page.err")"
        return 0
}
if command -v man >/dev/null || command -v groff >/dev/null; then
        for page in man8/steerd.8 man1/steerctl.1 man5/steerd.conf.5; do
                name=$(basename "$page" | sed 's/\.[0-9]$//')
                render "$MAN_DIR/$page.gz"
                grep -q "^NAME" "$TMP/page.txt" || fail "$page has no NAME section"
                grep -q "^ *$name - " "$TMP/page.txt" || fail "$page: NAME is not '$name - ...'"
                for sect in SYNOPSIS DESCRIPTION "SEE ALSO"; do
                        grep -q "^$sect" "$TMP/page.txt" || fail "$page has no $sect section"
                done
                cp "$TMP/page.txt" "$TMP/$name.txt"
        done
        # Every long option of --help, in the page of its program.
        for prog in usr/sbin/steerd:steerd usr/bin/steerctl:steerctl; do
                bin=$TMP/dest/${prog%%:*}
                opts=$(NO_COLOR=1 "$bin" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
                [ -n "$opts" ] || fail "${prog##*:} --help names no option"
                for o in $opts; do
                        grep -q -- "$o" "$TMP/${prog##*:}.txt" || fail "${prog##*:}(8/1) does not document $o"
                done
        done
        # Every verb of steerctl --help: a paragraph of its own in COMMANDS.
        verbs=$(NO_COLOR=1 "$TMP/dest/usr/bin/steerctl" --help |
                awk '/^Commands:/ {on = 1; next} on && /^$/ {exit} on && /^  [a-z]/ {print $1}')
        [ "$(echo "$verbs" | wc -w)" -ge 8 ] || fail "steerctl --help lists too few verbs: $verbs"
        for v in $verbs off observe latency balanced; do
                grep -q "^       $v\b" "$TMP/steerctl.txt" || fail "steerctl(1) has no entry for $v"
        done
        for name in steerctl steerd; do
                grep -q "^EXIT STATUS" "$TMP/$name.txt" || fail "$name's page has no EXIT STATUS"
        done
        # Every key of the shipped config, with the shipped value as its default.
        n=0
        while IFS='=' read -r key value; do
                n=$((n + 1))
                want=${value:-empty}
                got=$(awk -v k="$key=" '$1 == k && NF == 1 {on = 1; next} on && NF {print; exit}' "$TMP/steerd.conf.txt")
                [ -n "$got" ] || fail "steerd.conf(5) does not document $key="
                case $got in
                *"Default: $want."* | *"Default: $want "*) ;;
                *) fail "steerd.conf(5): $key= default is not the shipped '$want': $got" ;;
                esac
        done < <(grep -E '^[A-Z][A-Za-z]*=' "$TMP/dest/etc/steerd/steerd.conf")
        [ "$n" -ge 20 ] || fail "only $n keys found in the shipped config"
        for f in /etc/steerd/steerd.conf /etc/steerd/steerd.conf.d /run/steerd/state.json /var/lib/steerd/runtime.json \
                org.steerd1.Manager /org/steerd1 org.steerd1.Error.NoSuchCgroup ListCgroups Describe; do
                grep -q -- "$f" "$TMP/steerd.txt" || fail "steerd(8) does not mention $f"
        done
        echo "manual pages: render, and name every option, verb and setting ($n keys)"
else
        skip_part "rendering the manual pages (neither man nor groff is installed)"
fi

# ---- bash completion ----
COMPLETION=$TMP/dest/usr/share/bash-completion/completions/steerctl
BASH_COMPLETION=/usr/share/bash-completion/bash_completion
mkdir -p "$TMP/fakebin"
# A steerctl whose daemon has opted in two cgroups (the shape of
# `steerctl list --no-legend`), and a bus on which steerd owns its name.
cat >"$TMP/fakebin/steerctl" <<'FAKE'
#!/bin/sh
[ "$1" = list ] || exit 1
echo "/bench1                   latency  runtime 0-1  3 /sys/fs/cgroup/cpuset/bench1"
echo "/system.slice/app.service balanced config  -    - (not present)"
FAKE
printf '#!/bin/sh\necho "b true"\n' >"$TMP/fakebin/busctl"
chmod +x "$TMP/fakebin/steerctl" "$TMP/fakebin/busctl"

# complete HELPERS WORD... : the words of the line, the last one being
# completed; prints COMPREPLY one per line. `=` is a word of its own, as bash
# splits it.
complete_words() {
        local helpers=$1
        shift
        bash --norc --noprofile -c '
                helpers=$1 completion=$2
                shift 2
                [ "$helpers" = 1 ] && . /usr/share/bash-completion/bash_completion
                . "$completion" || exit 3
                fn=$(complete -p steerctl 2>/dev/null | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
                [ -n "$fn" ] || { echo "steerctl has no completion function" >&2; exit 3; }
                COMP_WORDS=("$@")
                COMP_CWORD=$(($# - 1))
                COMP_LINE=
                for w in "$@"; do
                        case $w in =) COMP_LINE+="=" ;; *) [[ $COMP_LINE == *= || -z $COMP_LINE ]] && COMP_LINE+=$w || COMP_LINE+=" $w" ;; esac
                done
                COMP_POINT=${#COMP_LINE}
                "$fn" steerctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                printf "%s\n" "${COMPREPLY[@]}"
        ' bash "$helpers" "$COMPLETION" "$@"
}
# expect_completion HELPERS "WANTED WORDS" WORD... : COMPREPLY is exactly WANTED
expect_completion() {
        local helpers=$1 want got
        local -a wanted
        read -ra wanted <<<"$2"
        want=$( ((${#wanted[@]})) && printf '%s\n' "${wanted[@]}" | LC_ALL=C sort)
        shift 2
        got=$(complete_words "$helpers" "$@" 2>"$TMP/comp.err" | LC_ALL=C sort) ||
                fail "completion of '$*' failed: $(cat "$TMP/comp.err")"
        [ -s "$TMP/comp.err" ] && fail "completion of '$*' wrote to stderr: $(head -c 400 "$TMP/comp.err")"
        [ "$got" = "$want" ] || fail "completion of '$*' (helpers $helpers): got '${got//$'\n'/ }', want '${want//$'\n'/ }'"
        return 0
}
HELPER_MODES=0
if [ -r "$BASH_COMPLETION" ]; then
        HELPER_MODES="0 1"
else
        echo "bash-completion not installed: the completion is checked without its helpers only"
fi
for h in $HELPER_MODES; do
        expect_completion "$h" "mode monitor" steerctl mo
        expect_completion "$h" "off observe latency balanced" steerctl mode ""
        expect_completion "$h" "status mode opt-in opt-out list top monitor reload explain trial trials" steerctl ""
        expect_completion "$h" "--reset" steerctl mode --re
        expect_completion "$h" "latency balanced" steerctl opt-in --policy ""
        expect_completion "$h" "balanced" steerctl opt-in -p b
        expect_completion "$h" "short pretty off" steerctl --json =
        expect_completion "$h" "pretty" steerctl list --json = p
        expect_completion "$h" "--once" steerctl top --on
        expect_completion "$h" "--no-legend --no-pager" steerctl list --no-
        expect_completion "$h" "" steerctl mode latency ""
        # The opted-in cgroups, from the (fake) daemon.
        PATH=$TMP/fakebin:$PATH expect_completion "$h" "/bench1 /system.slice/app.service" \
                "$TMP/fakebin/steerctl" opt-out ""
        PATH=$TMP/fakebin:$PATH expect_completion "$h" "/system.slice/app.service" \
                "$TMP/fakebin/steerctl" opt-out /sys
        PATH=$TMP/fakebin:$PATH expect_completion "$h" "/bench1 /system.slice/app.service" \
                "$TMP/fakebin/steerctl" explain ""
        # No daemon, no bus: nothing, quietly (expect_completion fails on stderr), and at once.
        t0=$(date +%s)
        DBUS_SYSTEM_BUS_ADDRESS=unix:path=$TMP/no-such-bus expect_completion "$h" "" \
                "$TMP/dest/usr/bin/steerctl" opt-out ""
        [ $(($(date +%s) - t0)) -le 3 ] || fail "completion without a daemon took more than 3 s"
done
echo "bash completion: verbs, modes, policies, options, opted-in cgroups (helpers: $HELPER_MODES)"
if command -v zsh >/dev/null; then
        zsh -n "$TMP/dest/usr/share/zsh/vendor-completions/_steerctl" || fail "the zsh completion does not parse"
        zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -d "$2/zcompdump"; [[ ${_comps[steerctl]} == _steerctl ]]' \
                zsh "$TMP/dest/usr/share/zsh/vendor-completions" "$TMP" || fail "zsh's compinit does not pick up _steerctl"
        echo "zsh completion: parses, compinit binds it to steerctl"
else
        echo "zsh not installed: the zsh completion is not checked"
fi

if command -v systemd-analyze >/dev/null; then
        # verify checks that ExecStart exists: point it at the staged binary.
        sed "s|/usr/sbin/steerd|$TMP/dest/usr/sbin/steerd|" "$TMP/dest/lib/systemd/system/steerd.service" \
                >"$TMP/steerd.service"
        out=$(systemd-analyze verify "$TMP/steerd.service" 2>&1) || fail "systemd-analyze verify: $out"
        [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
else
        echo "systemd-analyze not installed: the unit is not verified"
fi
if command -v xmllint >/dev/null; then
        xmllint --noout "$TMP/dest/usr/share/dbus-1/system.d/org.steerd1.conf" \
                "$TMP/dest/usr/share/polkit-1/actions/org.steerd1.policy" || fail "bus or polkit policy is not XML"
fi

command -v dpkg-deb >/dev/null || { echo "no dpkg-deb: .deb not built"; finish; }
(cd "$TMP/build" && cpack -G DEB >/dev/null) || fail "cpack"
DEB=$(ls "$TMP"/build/steerd_*.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || fail "no .deb built"
dpkg-deb -c "$DEB" >"$TMP/contents" && dpkg-deb -I "$DEB" >"$TMP/info" || fail "dpkg-deb cannot read the .deb"
grep -q "\./usr/sbin/steerd$" "$TMP/contents" || fail ".deb lacks /usr/sbin/steerd"
grep -q "\./lib/systemd/system/steerd.service$" "$TMP/contents" || fail ".deb lacks the unit"
grep -q "Depends:.*libhwloc" "$TMP/info" || fail ".deb does not depend on its libraries"
for f in usr/share/man/man8/steerd.8.gz usr/share/man/man1/steerctl.1.gz usr/share/man/man5/steerd.conf.5.gz \
        usr/share/bash-completion/completions/steerctl usr/share/zsh/vendor-completions/_steerctl \
        usr/share/doc/steerd/copyright usr/share/doc/steerd/changelog.gz; do
        grep -q "\./$f$" "$TMP/contents" || fail ".deb lacks /$f"
done
echo "built $(basename "$DEB")"
# A tree configured for another prefix is refused: its unit names that prefix.
cmake -S "$SRC" -B "$TMP/build-local" -DCMAKE_INSTALL_PREFIX=/usr/local -DSTEERD_TESTS=OFF >/dev/null ||
        fail "configure with prefix /usr/local"
(cd "$TMP/build-local" && cpack -G DEB >"$TMP/cpack-local.log" 2>&1) &&
        fail "cpack built a .deb from a tree with prefix /usr/local"
grep -q "CMAKE_INSTALL_PREFIX=/usr," "$TMP/cpack-local.log" || fail "cpack's refusal does not say why: $(cat "$TMP/cpack-local.log")"
if command -v lintian >/dev/null; then
        # Errors fail the test; warnings are listed (docs/OPERATIONS.md: what remains and why).
        lintian --no-tag-display-limit "$DEB" >"$TMP/lintian" 2>&1
        grep "^W: " "$TMP/lintian" | sed 's/^/lintian: /'
        ! grep -q "^E: " "$TMP/lintian" || fail "lintian reports errors: $(grep '^E: ' "$TMP/lintian")"
else
        echo "lintian not installed: the .deb is not linted"
fi

# Install and remove it for real, only where that cannot clobber anything.
if [ "$(id -u)" -ne 0 ]; then
        echo "not root: the .deb is not installed"; finish
fi
if dpkg-query -W -f='${Status}' steerd 2>/dev/null | grep -q installed || [ -e /usr/sbin/steerd ]; then
        echo "steerd is already installed on this host: the .deb is not installed over it"; finish
fi
DEBIAN_FRONTEND=noninteractive dpkg -i "$DEB" >"$TMP/dpkg.log" 2>&1 || { cat "$TMP/dpkg.log"; fail "dpkg -i"; }
[ -x /usr/sbin/steerd ] && [ -e /etc/steerd/steerd.conf ] || { dpkg --purge steerd >/dev/null 2>&1; fail "files missing after dpkg -i"; }
/usr/bin/steerctl --version >/dev/null || { dpkg --purge steerd >/dev/null 2>&1; fail "installed steerctl does not run"; }
# man finds the pages on its own path; bash-completion loads the completion on demand.
if command -v man >/dev/null; then
        for page in 8:steerd 1:steerctl 5:steerd.conf; do
                if ! out=$(MANWIDTH=80 man "${page%%:*}" "${page#*:}" 2>&1) || ! grep -q "^NAME" <<<"$out"; then
                        dpkg --purge steerd >/dev/null 2>&1
                        fail "'man ${page%%:*} ${page#*:}' after dpkg -i: $(head -3 <<<"$out")"
                fi
        done
        echo "after dpkg -i: man steerd, man steerctl, man steerd.conf work"
fi
if [ -r "$BASH_COMPLETION" ]; then
        got=$(bash --norc --noprofile -c '. /usr/share/bash-completion/bash_completion
                __load_completion steerctl && complete -p steerctl' 2>&1)
        [[ $got == *"-F "*" steerctl" ]] || {
                dpkg --purge steerd >/dev/null 2>&1; fail "bash-completion does not load the installed completion: $got"; }
        echo "after dpkg -i: bash-completion loads the steerctl completion"
fi
dpkg --purge steerd >"$TMP/dpkg.log" 2>&1 || { cat "$TMP/dpkg.log"; fail "dpkg --purge"; }
[ ! -e /usr/sbin/steerd ] && [ ! -e /etc/steerd/steerd.conf ] && [ ! -e /lib/systemd/system/steerd.service ] ||
        fail "files left after dpkg --purge"
for f in /usr/share/man/man8/steerd.8.gz /usr/share/bash-completion/completions/steerctl; do
        [ ! -e "$f" ] || fail "$f left after dpkg --purge"
done
finish
