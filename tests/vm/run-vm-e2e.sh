#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End-to-end test of steerd in a qemu VM: the two code paths this project's
# hosts cannot exercise, the systemd backend (SetUnitProperties AllowedCPUs=
# over D-Bus, with systemd as PID 1) and the cgroup v2 cpuset backend.
#
#   sudo tests/vm/run-vm-e2e.sh [--rebuild-image] [--image-only] [--keep]
#
# 1. builds (once; cached under /var/cache/steerd-vm, never in the repo) a
#    Debian 12 rootfs with debootstrap (minbase + systemd, dbus, the libraries
#    steerd links, Debian's kernel) as a raw ext4 image, plus the kernel and
#    initrd taken out of it;
# 2. builds steerd from this tree (-DCMAKE_INSTALL_PREFIX=/usr
#    -DSTEERD_TESTS=OFF) and `cmake --install`s it with DESTDIR into a tree
#    that the guest copies over its / at the start of the test (unit, bus
#    policy, config and all), as a package would;
# 3. boots the image under TCG (-smp 8,sockets=2,cores=4: two L3 domains;
#    systemd as PID 1, cgroup v2) with a throw-away qcow2 overlay and a 9p
#    share; tests/vm/vm-test.sh runs at boot as a oneshot unit, writes one
#    "PASS|FAIL|INFO|SKIP name: detail" line per check into the share, and
#    powers the VM off;
# 4. prints the summary and the times; exit 0 = every check passed, 1 = a
#    check failed, a check has no result, a check was skipped for lack of
#    time, or the VM gave no result within STEERD_VM_TIMEOUT (1800 s);
#    77 = skipped (no root, no mirror, qemu or debootstrap cannot be
#    installed or run). A guest SKIP counts as skipped only when the guest
#    says it is "not possible in this guest"; any other SKIP is a failure.
#
# --image-only stops after step 1: scripts/test.sh runs it in the background
# while it builds and runs ctest, so that a fresh host's debootstrap does not
# add its minutes to CI (the run after it waits on the cache's lock).
#
# Not a t-*.sh on purpose: ctest must not run it (it takes minutes and
# downloads packages); scripts/test.sh runs it after ctest. Environment:
# STEERD_VM_CACHE (/var/cache/steerd-vm), STEERD_VM_TIMEOUT (1800),
# STEERD_VM_MIRROR (else the host's apt sources; none: exit 77),
# STEERD_VM_OUT (where the run's files go; default a new directory under
# $STEERD_VM_CACHE/runs, the last 5 runs are kept). The build is in
# $STEERD_VM_CACHE/build-<hash of this source tree's path>, one per checkout.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
CACHE=${STEERD_VM_CACHE:-/var/cache/steerd-vm}
# 1800: the VM took 1127 s on this 2-core host with the pods and writer
# checks (1320 left the guest ~145 s before its last sections would be
# skipped for time, which fails CI on a host a little slower than this one).
TIMEOUT=${STEERD_VM_TIMEOUT:-1800}
REBUILD=0
KEEP=0
IMAGE_ONLY=0

for arg in "$@"; do
        case $arg in
        --rebuild-image) REBUILD=1 ;;
        --keep) KEEP=1 ;;
        --image-only) IMAGE_ONLY=1 ;;
        -h | --help)
                sed -n '3,/^$/p' "$0" | sed 's/^# \{0,1\}//'
                exit 0
                ;;
        *)
                echo "run-vm-e2e: unknown argument $arg" >&2
                exit 2
                ;;
        esac
done

T_START=$(date +%s)
say() { printf 'run-vm-e2e: %s\n' "$*" >&2; }
skip() {
        say "SKIP: $*"
        exit 77
}
fail() {
        say "FAIL: $*"
        exit 1
}

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, qemu with a 9p share)"
[ "$(uname -m)" = x86_64 ] || skip "needs an x86_64 host (qemu-system-x86_64 boots Debian's amd64 kernel)"

# ---- host packages ----

HOST_PACKAGES=(qemu-system-x86 qemu-utils debootstrap e2fsprogs)
BUILD_PACKAGES=(build-essential cmake pkg-config libsystemd-dev libhwloc-dev libnl-3-dev libnl-genl-3-dev
        libcgroup-dev libinih-dev libjson-c-dev)

missing_packages() {
        local p
        for p in "$@"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
        done
}

install_packages() {
        local missing
        mapfile -t missing < <(missing_packages "$@")
        [ ${#missing[@]} -eq 0 ] && return 0
        say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >&2
}

command -v apt-get >/dev/null || skip "no apt-get: this script expects a Debian host"
install_packages "${HOST_PACKAGES[@]}" || skip "cannot install ${HOST_PACKAGES[*]}"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not found after installing qemu-system-x86"
command -v debootstrap >/dev/null || skip "debootstrap not found"
install_packages "${BUILD_PACKAGES[@]}" || fail "cannot install the build dependencies ${BUILD_PACKAGES[*]}"

# ---- the image ----

# What goes into the image. Changing this list or build_image() rebuilds it.
IMAGE_PACKAGES=(systemd systemd-sysv dbus udev libsystemd0 libhwloc15 libnl-3-200 libnl-genl-3-200 libcgroup2
        libinih1 libjson-c5 libcurl4 procps util-linux rt-tests jq kmod linux-image-amd64 initramfs-tools hwloc-nox)

# Every enabled "deb" source of the host's apt configuration as "URI SUITE"
# lines: deb822 (/etc/apt/sources.list.d/*.sources), then the one-line
# format (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list).
apt_sources() {
        local f deb822=() oneline=()
        for f in /etc/apt/sources.list.d/*.sources; do [ -f "$f" ] && deb822+=("$f"); done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do [ -f "$f" ] && oneline+=("$f"); done
        if [ ${#deb822[@]} -gt 0 ]; then
                awk '
                        function flush(  n, m, i, j, u, s) {
                                if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled !~ /^[ \t]*(no|false|0)[ \t]*$/) {
                                        n = split(uris, u, /[ \t]+/); m = split(suites, s, /[ \t]+/)
                                        for (i = 1; i <= n; i++) for (j = 1; j <= m; j++)
                                                if (u[i] != "" && s[j] != "") print u[i], s[j]
                                }
                                types = uris = suites = enabled = key = ""
                        }
                        FNR == 1 { flush() }
                        /^[ \t]*#/ { next }
                        /^[ \t]*$/ { flush(); next }
                        /^[ \t]/ { if (key == "uris") uris = uris " " $0; else if (key == "suites") suites = suites " " $0; next }
                        match($0, /^[A-Za-z0-9-]+:/) {
                                key = tolower(substr($0, 1, RLENGTH - 1)); v = substr($0, RLENGTH + 1)
                                if (key == "types") types = v; else if (key == "uris") uris = v
                                else if (key == "suites") suites = v; else if (key == "enabled") enabled = tolower(v)
                        }
                        END { flush() }' "${deb822[@]}"
        fi
        if [ ${#oneline[@]} -gt 0 ]; then
                awk '/^[ \t]*#/ || NF == 0 { next }
                        $1 == "deb" {
                                l = $0; sub(/^[ \t]*deb[ \t]+/, "", l)
                                if (l ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "", l)
                                n = split(l, f, /[ \t]+/); if (n >= 2) print f[1], f[2]
                        }' "${oneline[@]}"
        fi
}

# The Debian mirror for debootstrap: STEERD_VM_MIRROR, else the host's apt
# configuration (a source of bookworm, else of Debian's main archive: a URI
# ending in /debian with a plain suite). No guessing: none found, none used.
apt_mirror() {
        local sources m
        if [ -n "${STEERD_VM_MIRROR:-}" ]; then
                echo "$STEERD_VM_MIRROR"
                return 0
        fi
        sources=$(apt_sources | awk '$1 ~ /^(https?|ftp|file):/')
        m=$(awk '$2 == "bookworm" { print $1; exit }' <<<"$sources")
        [ -n "$m" ] || m=$(awk '$1 ~ /\/debian\/?$/ && $2 !~ /[-\/]/ { print $1; exit }' <<<"$sources")
        [ -n "$m" ] || return 1
        echo "$m"
}

# The guest's unit that runs the test from the share, then powers off.
guest_test_unit() {
        cat <<'EOF'
[Unit]
Description=steerd VM end-to-end test (/mnt/share/vm-test.sh)
After=multi-user.target dbus.service mnt-share.mount
Requires=mnt-share.mount
ConditionPathExists=/mnt/share/vm-test.sh

[Service]
Type=oneshot
ExecStart=/bin/bash /mnt/share/vm-test.sh
ExecStopPost=/bin/systemctl poweroff --no-block
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
}

build_image() {
        local root=$CACHE/rootfs.build mirror kver
        mirror=$(apt_mirror)
        rm -rf "$root"
        mkdir -p "$root"
        say "debootstrap bookworm from $mirror into $root (log: $CACHE/debootstrap.log)"
        if ! debootstrap --variant=minbase --include="$(
                IFS=,
                echo "${IMAGE_PACKAGES[*]}"
        )" bookworm "$root" "$mirror" >"$CACHE/debootstrap.log" 2>&1; then
                tail -20 "$CACHE/debootstrap.log" >&2
                rm -rf "$root"
                return 1
        fi

        echo steerd-vm >"$root/etc/hostname"
        printf '127.0.1.1 steerd-vm\n' >>"$root/etc/hosts"
        mkdir -p "$root/mnt/share"
        cat >"$root/etc/fstab" <<'EOF'
/dev/vda / ext4 rw,errors=remount-ro 0 1
share /mnt/share 9p trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.device-timeout=20s 0 0
EOF
        printf '9p\n9pnet_virtio\n' >"$root/etc/modules-load.d/9p.conf"
        chroot "$root" passwd -d root >/dev/null
        # Nobody logs in; the console is for the test's output.
        ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
        ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
        guest_test_unit >"$root/etc/systemd/system/steerd-vm-test.service"
        mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
        ln -sf ../steerd-vm-test.service "$root/etc/systemd/system/multi-user.target.wants/steerd-vm-test.service"
        # A journal that survives the test's poweroff, for post-mortems.
        mkdir -p "$root/var/log/journal"
        # A fixed machine id: no first boot (systemd-firstboot would prompt).
        echo 5eed0000000000000000000000e2e001 >"$root/etc/machine-id"

        kver=$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | tail -1)
        [ -n "$kver" ] && [ -f "$root/boot/initrd.img-$kver" ] || {
                say "no kernel or initrd in the rootfs"
                return 1
        }
        cp "$root/boot/vmlinuz-$kver" "$CACHE/vmlinuz.new"
        cp "$root/boot/initrd.img-$kver" "$CACHE/initrd.img.new"
        rm -rf "$root/var/cache/apt/archives"/*.deb

        rm -f "$CACHE/rootfs.img.new"
        mkfs.ext4 -q -F -L steerd-vm -d "$root" "$CACHE/rootfs.img.new" 3G
        mv "$CACHE/vmlinuz.new" "$CACHE/vmlinuz"
        mv "$CACHE/initrd.img.new" "$CACHE/initrd.img"
        mv "$CACHE/rootfs.img.new" "$CACHE/rootfs.img"
        echo "$kver" >"$CACHE/kernel-version"
        rm -rf "$root"
}

image_stamp() {
        {
                echo "${IMAGE_PACKAGES[*]}"
                declare -f build_image guest_test_unit
        } | sha256sum | cut -d' ' -f1
}

mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock -w 3600 9 || fail "another run holds $CACHE/lock"

STAMP=$(image_stamp)
if [ "$REBUILD" = 1 ] || [ ! -f "$CACHE/rootfs.img" ] || [ ! -f "$CACHE/vmlinuz" ] ||
        [ "$(cat "$CACHE/stamp" 2>/dev/null)" != "$STAMP" ]; then
        apt_mirror >/dev/null ||
                skip "no Debian mirror for debootstrap: the host's apt configuration (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list and *.sources) names none; set STEERD_VM_MIRROR=http://<mirror>/debian"
        rm -f "$CACHE/stamp"
        t0=$(date +%s)
        build_image || skip "cannot build the Debian 12 image with debootstrap (see $CACHE/debootstrap.log)"
        echo "$STAMP" >"$CACHE/stamp"
        T_IMAGE="image built in $(($(date +%s) - t0)) s"
        say "$T_IMAGE: $CACHE/rootfs.img, kernel $(cat "$CACHE/kernel-version")"
else
        T_IMAGE="image reused (built $(date -r "$CACHE/rootfs.img" '+%F %T'))"
        say "reusing $CACHE/rootfs.img (kernel $(cat "$CACHE/kernel-version" 2>/dev/null))"
fi

if [ "$IMAGE_ONLY" = 1 ]; then
        say "image ready: $T_IMAGE"
        exit 0
fi

# ---- the build ----

if [ -n "${STEERD_VM_OUT:-}" ]; then
        OUT=$STEERD_VM_OUT
        rm -rf "$OUT"
        mkdir -p "$OUT"
else
        mkdir -p "$CACHE/runs"
        OUT=$(mktemp -d "$CACHE/runs/$(date +%Y%m%d-%H%M%S)-XXXX")
        # Keep the last 5 runs.
        find "$CACHE/runs" -mindepth 1 -maxdepth 1 -type d | sort | head -n -5 | xargs -r rm -rf
fi
SHARE=$OUT/share
DESTDIR_TREE=$SHARE/destdir
mkdir -p "$SHARE/artifacts" "$DESTDIR_TREE"

# One build folder per source tree (CMake refuses a folder configured for
# another source). Folders of trees that are gone are removed, and so is the
# one folder shared by every tree that older versions of this script used.
BUILD=$CACHE/build-$(printf '%s' "$TOP" | sha256sum | cut -c1-16)
rm -rf "$CACHE/build"
for d in "$CACHE"/build-*; do
        [ -d "$d" ] && [ "$d" != "$BUILD" ] || continue
        src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$d/CMakeCache.txt" 2>/dev/null)
        if [ -z "$src" ] || [ ! -f "$src/CMakeLists.txt" ]; then
                say "removing $d (its source tree ${src:-?} is gone)"
                rm -rf "$d"
        fi
done
say "building steerd from $TOP in $BUILD"
t0=$(date +%s)
{
        cmake -S "$TOP" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
                -DSTEERD_TESTS=OFF -DSTEERD_MAN=OFF &&
                cmake --build "$BUILD" -j"$(nproc)" &&
                DESTDIR=$DESTDIR_TREE cmake --install "$BUILD"
} >"$OUT/build.log" 2>&1 || {
        tail -30 "$OUT/build.log" >&2
        fail "building or installing steerd failed (log: $OUT/build.log)"
}
# The test's load: tests/tools/load.c (not built with STEERD_TESTS=OFF).
mkdir -p "$DESTDIR_TREE/usr/local/bin"
cc -O2 -Wall -pthread -o "$DESTDIR_TREE/usr/local/bin/steerd-test-load" "$TOP/tests/tools/load.c" ||
        fail "cannot build tests/tools/load.c"
T_BUILD="built in $(($(date +%s) - t0)) s"
say "$T_BUILD, installed into $DESTDIR_TREE"
(cd "$DESTDIR_TREE" && find . -type f -o -type l | sort) >"$OUT/installed-files.txt"
git -C "$TOP" log --oneline -1 >"$SHARE/commit.txt" 2>/dev/null || echo unknown >"$SHARE/commit.txt"
cp "$HERE/vm-test.sh" "$SHARE/vm-test.sh"

# ---- the VM ----

qemu-img create -q -f qcow2 -b "$CACHE/rootfs.img" -F raw "$OUT/overlay.qcow2"
CONSOLE=$OUT/console.log
RESULTS=$SHARE/results.txt
say "booting the VM (TCG, 8 CPUs in 2 sockets; timeout ${TIMEOUT} s; console: $CONSOLE)"
t0=$(date +%s)
# The guest's own deadline, with time to write its results and power off.
echo $((t0 + TIMEOUT - 60)) >"$SHARE/deadline"
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
        -machine pc -accel tcg,thread=multi -cpu max \
        -smp 8,sockets=2,cores=4,threads=1 -m 2G \
        -nographic -no-reboot \
        -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.img" \
        -append "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 panic=-1 loglevel=4" \
        -drive "file=$OUT/overlay.qcow2,if=virtio,format=qcow2,cache=unsafe" \
        -virtfs "local,path=$SHARE,mount_tag=share,security_model=none,id=share" \
        -nic none </dev/null >"$CONSOLE" 2>&1 &
QEMU=$!

# Show the results as they come. A guest whose console stays silent for
# FREEZE_S after its first heartbeat (one a minute, vm-test.sh) has frozen:
# killed at once rather than at the timeout, and said so (exit 75).
FREEZE_S=${STEERD_VM_FREEZE_S:-180}
FROZE=0 hb_seen=0 con_size=0 con_changed=$(date +%s)
shown=0
while kill -0 "$QEMU" 2>/dev/null; do
        sleep 2
        now=$(date +%s)
        size=$(stat -c %s "$CONSOLE" 2>/dev/null || echo 0)
        if [ "$size" != "$con_size" ]; then
                con_size=$size con_changed=$now
        fi
        [ "$hb_seen" = 1 ] || ! grep -aq 'steerd-vm: heartbeat' "$CONSOLE" || hb_seen=1
        if [ "$hb_seen" = 1 ] && [ $((now - con_changed)) -ge "$FREEZE_S" ]; then
                FROZE=1
                say "the guest froze: no console output for $((now - con_changed)) s, its heartbeat included; killing it"
                kill "$QEMU" 2>/dev/null
                break
        fi
        if [ -f "$RESULTS" ]; then
                n=$(wc -l <"$RESULTS")
                if [ "$n" -gt "$shown" ]; then
                        sed -n "$((shown + 1)),${n}p" "$RESULTS" | sed 's/^/  [vm] /' >&2
                        shown=$n
                fi
        fi
done
rc=0
wait "$QEMU" || rc=$?
ELAPSED=$(($(date +%s) - t0))
say "VM finished after ${ELAPSED} s (qemu exit $rc)"
[ -f "$RESULTS" ] && [ "$(wc -l <"$RESULTS")" -gt "$shown" ] &&
        sed -n "$((shown + 1)),\$p" "$RESULTS" | sed 's/^/  [vm] /' >&2

# A guest that did not finish keeps its disk: its journal
# (/var/log/journal, persistent) has what the console's info level left out.
if [ "$KEEP" = 1 ] || ! grep -q '^DONE' "$RESULTS" 2>/dev/null; then
        say "kept $OUT/overlay.qcow2 (on $CACHE/rootfs.img): qemu-img convert -O raw it, then debugfs -R 'rdump /var/log/journal DIR' and journalctl -D DIR"
else
        rm -f "$OUT/overlay.qcow2"
fi
# The guest forwards its journal to the console: steerd's lines, even when
# the VM had to be killed.
grep -a 'steerd\[' "$CONSOLE" | tr -d '\r' >"$OUT/steerd-console.log" || true

# qemu that cannot run at all (no TCG, a broken install) is a skip, not a failure.
if [ ! -s "$RESULTS" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$ELAPSED" -lt 15 ]; then
        skip "qemu-system-x86_64 did not run (exit $rc): $(tail -3 "$CONSOLE" | tr '\n' ' ')"
fi

# ---- the summary ----

# The times: the image, the build, the VM, all of this script.
times() {
        echo "Times: $T_IMAGE; steerd $T_BUILD; VM boot to poweroff ${ELAPSED} s (timeout ${TIMEOUT} s); total $(($(date +%s) - T_START)) s"
}
echo
echo "==== steerd VM end-to-end: $(cat "$SHARE/commit.txt") ===="
if [ ! -s "$RESULTS" ]; then
        echo "FAIL vm: no results (qemu exit $rc after ${ELAPSED} s); the console's last lines:"
        tail -40 "$CONSOLE" | sed 's/^/    /'
        times
        echo "0 passed, 1 failed"
        exit 1
fi
grep -E '^(PASS|FAIL|INFO|SKIP) ' "$RESULTS" || true
npass=$(grep -c '^PASS ' "$RESULTS" || true)
nfail=$(grep -c '^FAIL ' "$RESULTS" || true)
# A SKIP is a skip only for a capability the guest lacks ("not possible in
# this guest"); any other (out of time above all) did not check what it
# should have: a failure.
ncap=$(grep -c '^SKIP [^:]*: not possible in this guest' "$RESULTS" || true)
nskipfail=$(grep '^SKIP ' "$RESULTS" | grep -vc '^SKIP [^:]*: not possible in this guest' || true)
if ! grep -q '^DONE' "$RESULTS"; then
        if [ "$FROZE" = 1 ]; then
                echo "FAIL vm: the guest froze after ${ELAPSED} s (no console output for ${FREEZE_S} s, its heartbeat included); its last lines:"
                tail -5 "$CONSOLE" | tr -d '\r' | cut -c1-200 | sed 's/^/    /'
        else
                echo "FAIL vm: the test did not finish (qemu exit $rc after ${ELAPSED} s; timeout ${TIMEOUT} s)"
        fi
        nfail=$((nfail + 1))
fi
echo
if [ "$nfail" -gt 0 ]; then
        echo "Failed:"
        grep '^FAIL ' "$RESULTS" | cut -d: -f1 | sed 's/^FAIL /    /'
fi
if [ "$nskipfail" -gt 0 ]; then
        echo "!!!! $nskipfail check(s) SKIPPED for lack of time or another reason: counted as FAILED !!!!"
        grep '^SKIP ' "$RESULTS" | grep -v '^SKIP [^:]*: not possible in this guest' | sed 's/^/    /'
fi
if [ "$ncap" -gt 0 ]; then
        echo "!!!! $ncap check(s) SKIPPED: not possible in this guest !!!!"
        grep '^SKIP [^:]*: not possible in this guest' "$RESULTS" | sed 's/^/    /'
fi
echo "Files: $OUT (console.log, steerd-console.log, share/results.txt, share/artifacts/)"
times
echo "$npass passed, $((nfail + nskipfail)) failed (of which $nskipfail skipped without cause), $ncap skipped (not possible in this guest)"
[ "$FROZE" = 1 ] && exit 75
[ $((nfail + nskipfail)) -eq 0 ] || exit 1
exit 0
