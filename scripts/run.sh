#!/usr/bin/env bash
# Install what is missing, build, and run steerd on this host in the
# foreground with the shipped configuration (Mode=observe: it samples,
# decides and logs its plan, and changes nothing until you switch the mode
# with steerctl). Ctrl-C stops it and gives back every mask it changed.
#
# On a host without a running system bus (a container, a fresh VM without
# systemd) it starts one with steerd's bus policy, so steerctl works.
#
# Arguments replace the defaults and go to steerd, e.g.
#   scripts/run.sh --once --json
set -euo pipefail
. "$(dirname "$0")/lib.sh"

steerd_install_packages "${STEERD_BUILD_PACKAGES[@]}" dbus-daemon dbus-bin
cd "$STEERD_TOP"
steerd_build build

if [ $# -gt 0 ]; then
        exec build/steerd "$@"
fi

if [ "$(id -u)" -eq 0 ]; then
        # steerd may own org.steerd1 only where the bus policy says so.
        if ! cmp -s units/org.steerd1.conf /etc/dbus-1/system.d/org.steerd1.conf 2>/dev/null; then
                install -D -m 0644 units/org.steerd1.conf /etc/dbus-1/system.d/org.steerd1.conf
                dbus-send --system --type=method_call --dest=org.freedesktop.DBus / \
                        org.freedesktop.DBus.ReloadConfig >/dev/null 2>&1 || true
        fi
        if ! dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.GetId \
                >/dev/null 2>&1; then
                echo "steerd: no system bus running; starting one (dbus-daemon --system)" >&2
                mkdir -p /run/dbus
                rm -f /run/dbus/pid
                dbus-daemon --system --fork
        fi
fi

echo "steerd: running in the foreground with conf/steerd.conf; try 'build/steerctl status' in another terminal" >&2
exec build/steerd --config conf/steerd.conf --foreground
