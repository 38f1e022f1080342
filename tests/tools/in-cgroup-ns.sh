#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# in-cgroup-ns.sh [--ro DIR] CGROUP_DIR MOUNTPOINT CMD [ARGS...]
#
# Runs CMD (exec'd: same PID) in a cgroup namespace rooted at CGROUP_DIR, a
# cgroup of the v1 hierarchy mounted at MOUNTPOINT, with a private mount
# namespace in which MOUNTPOINT shows only CGROUP_DIR's subtree. A steerd run
# this way sees the test's cgroups and nothing else on the machine: not the
# cgroups other tests opt in with the user.steerd.policy xattr, which every
# steerd on a host would otherwise pick up in its scans. Its cgroup names are
# relative to CGROUP_DIR ("/a" for CGROUP_DIR/a), in its log as in its state
# file (whose "dir"s are below MOUNTPOINT, valid in every such namespace).
# --ro DIR: DIR is read-only in that mount namespace (a read-only bind mount;
# root's CAP_DAC_OVERRIDE ignores a chmod).
set -eu
if [ "${1:-}" = --inner ]; then
        mnt=$2 ro=$3
        shift 3
        umount -l "$mnt"  # -l: other tests may have mounts below it
        mount -t cgroup -o cpuset cgroup "$mnt"
        if [ -n "$ro" ]; then
                mount --bind "$ro" "$ro"
                mount -o remount,bind,ro "$ro"
        fi
        exec "$@"
fi
ro=
if [ "${1:-}" = --ro ]; then
        ro=$2
        shift 2
fi
cg=$1 mnt=$2
shift 2
echo $$ >"$cg/cgroup.procs"
exec unshare --cgroup --mount --propagation private "$0" --inner "$mnt" "$ro" "$@"
