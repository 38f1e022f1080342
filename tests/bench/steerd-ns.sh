#!/bin/sh
# steerd-ns.sh CGROUP_DIR STEERD [ARGS...]
#
# Runs steerd in its own cgroup and mount namespaces, rooted at the cpuset v1
# cgroup CGROUP_DIR (the parent of the benchmark's cgroups): steerd then sees
# only the benchmark's cgroups. Without this, steerd would also pick up the
# cgroups that other people's tests on this machine opt in through the
# user.steerd.policy extended attribute, and steer them under their feet.
# The process execs all the way down: its PID is steerd's.
#
# STEERD_NS_NO_DEBUGFS=1: unmount debugfs in steerd's mount namespace (only
# there), so that steerd cannot use /sys/kernel/debug/sched/debug and falls
# back to another runnable source.
set -e
if [ "$1" = --inside ]; then
        shift
        umount -R /sys/fs/cgroup 2>/dev/null || umount -l /sys/fs/cgroup 2>/dev/null || true
        mount -t tmpfs steerd-bench /sys/fs/cgroup
        mkdir /sys/fs/cgroup/cpuset
        mount -t cgroup -o cpuset cgroup /sys/fs/cgroup/cpuset
        if [ "${STEERD_NS_NO_DEBUGFS:-0}" = 1 ]; then
                umount -R /sys/kernel/debug 2>/dev/null || umount -l /sys/kernel/debug 2>/dev/null || true
        fi
        exec "$@"
fi
cg=$1
shift
echo $$ >"$cg/cgroup.procs"
exec unshare --mount --cgroup --propagation private "$0" --inside "$@"
