# shellcheck shell=bash
# Shared by scripts/run.sh and scripts/test.sh: install what is missing, build.

STEERD_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

STEERD_BUILD_PACKAGES=(build-essential cmake pkg-config libsystemd-dev libhwloc-dev hwloc
        libnl-3-dev libnl-genl-3-dev libcgroup-dev libcmocka-dev libinih-dev libjson-c-dev libcurl4-openssl-dev scdoc)
# The fuzz targets of scripts/test.sh (tests/fuzz/README.md): clang and its
# libFuzzer and sanitizer runtimes, llvm-symbolizer for readable crash reports.
STEERD_FUZZ_PACKAGES=(clang-14 libclang-rt-14-dev llvm-14)

steerd_install_packages() {
        local missing=() p
        for p in "$@"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        if [ "$(id -u)" -ne 0 ]; then
                echo "steerd: missing packages: ${missing[*]} (run as root to install them)" >&2
                return 1
        fi
        echo "steerd: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# steerd_install_packages_nostart PKG...: steerd_install_packages, with the
# packages' services kept from starting. The tests want only promtool from
# Debian's prometheus, whose postinst would start a Prometheus server on a
# host with an init system: while a policy-rc.d that exits 101 exists,
# invoke-rc.d and deb-systemd-invoke start nothing. One already there (a
# container's) is left alone; ours is removed after the install.
steerd_install_packages_nostart() {
        local guard=/usr/sbin/policy-rc.d rc=0
        if [ "$(id -u)" -ne 0 ] || [ -e "$guard" ]; then
                steerd_install_packages "$@"
                return
        fi
        printf '#!/bin/sh\n# steerd scripts/lib.sh: no service starts while test tools install\nexit 101\n' >"$guard"
        chmod 755 "$guard"
        steerd_install_packages "$@" || rc=$?
        rm -f "$guard"
        return $rc
}

# steerd_build DIR [cmake args...]
steerd_build() {
        local dir=$1
        shift
        cmake -S "$STEERD_TOP" -B "$dir" "$@" >/dev/null && cmake --build "$dir" -j"$(nproc)"
}
