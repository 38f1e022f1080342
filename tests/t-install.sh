#!/usr/bin/env bash
# Install and packaging: `cmake --install` puts binaries, unit, bus policy,
# polkit policy and config in FHS paths; `systemd-analyze verify` accepts the
# unit; CPack builds a .deb that installs and removes cleanly.
# $1 = build dir (only its source dir is used: this test configures its own
# tree with prefix /usr, as a package would).
set -uo pipefail
BUILD=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake -S "$SRC" -B "$TMP/build" -DCMAKE_INSTALL_PREFIX=/usr -DSTEERD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
        >/dev/null || fail "configure"
cmake --build "$TMP/build" -j"$(nproc)" >/dev/null || fail "build"
DESTDIR="$TMP/dest" cmake --install "$TMP/build" >/dev/null || fail "install"

for f in usr/sbin/steerd usr/bin/steerctl etc/steerd/steerd.conf lib/systemd/system/steerd.service \
        usr/share/dbus-1/system.d/org.steerd1.conf usr/share/dbus-1/system-services/org.steerd1.service \
        usr/share/polkit-1/actions/org.steerd1.policy usr/share/doc/steerd/README.md; do
        [ -e "$TMP/dest/$f" ] || fail "missing /$f after install"
done
[ -d "$TMP/dest/etc/steerd/steerd.conf.d" ] || fail "missing /etc/steerd/steerd.conf.d"
grep -q "^ExecStart=/usr/sbin/steerd" "$TMP/dest/lib/systemd/system/steerd.service" || fail "ExecStart is not /usr/sbin/steerd"
"$TMP/dest/usr/sbin/steerd" --version >/dev/null || fail "the installed steerd does not run"
# The shipped config is accepted by the installed binary.
"$TMP/dest/usr/sbin/steerd" --config "$TMP/dest/etc/steerd/steerd.conf" --replay /dev/null >/dev/null ||
        fail "the installed config is refused"

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

command -v dpkg-deb >/dev/null || { echo "no dpkg-deb: .deb not built"; exit 0; }
(cd "$TMP/build" && cpack -G DEB >/dev/null) || fail "cpack"
DEB=$(ls "$TMP"/build/steerd_*.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || fail "no .deb built"
dpkg-deb -c "$DEB" >"$TMP/contents" && dpkg-deb -I "$DEB" >"$TMP/info" || fail "dpkg-deb cannot read the .deb"
grep -q "\./usr/sbin/steerd$" "$TMP/contents" || fail ".deb lacks /usr/sbin/steerd"
grep -q "\./lib/systemd/system/steerd.service$" "$TMP/contents" || fail ".deb lacks the unit"
grep -q "Depends:.*libhwloc" "$TMP/info" || fail ".deb does not depend on its libraries"
echo "built $(basename "$DEB")"

# Install and remove it for real, only where that cannot clobber anything.
if [ "$(id -u)" -ne 0 ]; then
        echo "not root: the .deb is not installed"; exit 0
fi
if dpkg-query -W -f='${Status}' steerd 2>/dev/null | grep -q installed || [ -e /usr/sbin/steerd ]; then
        echo "steerd is already installed on this host: the .deb is not installed over it"; exit 0
fi
DEBIAN_FRONTEND=noninteractive dpkg -i "$DEB" >"$TMP/dpkg.log" 2>&1 || { cat "$TMP/dpkg.log"; fail "dpkg -i"; }
[ -x /usr/sbin/steerd ] && [ -e /etc/steerd/steerd.conf ] || { dpkg --purge steerd >/dev/null 2>&1; fail "files missing after dpkg -i"; }
/usr/bin/steerctl --version >/dev/null || { dpkg --purge steerd >/dev/null 2>&1; fail "installed steerctl does not run"; }
dpkg --purge steerd >"$TMP/dpkg.log" 2>&1 || { cat "$TMP/dpkg.log"; fail "dpkg --purge"; }
[ ! -e /usr/sbin/steerd ] && [ ! -e /etc/steerd/steerd.conf ] && [ ! -e /lib/systemd/system/steerd.service ] ||
        fail "files left after dpkg --purge"
echo "t-install: all checks passed"
