#!/usr/bin/env python3
"""Static per-group pinning of one `hackbench --threads` process, by hand:

    pin-hackbench.py CGROUP_DIR GROUPS THREADS_PER_GROUP CPULIST

(the hackbench process is the one in the cgroup, found through its cgroup.procs)

hackbench creates its threads group by group (receivers, then senders), so the
threads in creation order fall into GROUPS runs of THREADS_PER_GROUP. Waits
until they all exist, then pins the threads of group g to one CPU, the groups
spread evenly over CPULIST (two groups per CPU for 4 groups on 2 CPUs). The
main thread is left alone. Prints what it did.
"""
import os
import sys
import time


def cpulist(text):
    out = []
    for part in text.split(','):
        a, _, b = part.partition('-')
        out += range(int(a), int(b or a) + 1)
    return out


def threads(pid):
    tids = []
    for t in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{t}/stat') as f:
                start = int(f.read().rsplit(')', 1)[1].split()[19])
            tids.append((start, int(t)))
        except (OSError, ValueError, IndexError):
            pass
    return [t for _, t in sorted(tids) if t != pid]


def main():
    cg, groups, per, cpus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), cpulist(sys.argv[4])
    want = groups * per
    deadline = time.monotonic() + 10
    tids = []
    while time.monotonic() < deadline:
        pids = [int(p) for p in open(f'{cg}/cgroup.procs').read().split()]
        tids = []
        for pid in pids:
            try:
                if open(f'/proc/{pid}/comm').read().strip() != 'hackbench':
                    continue
                tids = threads(pid)
            except FileNotFoundError:
                continue
        if len(tids) >= want:
            break
        time.sleep(0.001)
    if len(tids) < want:
        print(f'only {len(tids)} of {want} hackbench threads seen; not pinned')
        return 1
    t0 = time.monotonic()
    pinned = 0
    for i, tid in enumerate(tids[:want]):
        g = i // per
        cpu = cpus[g * len(cpus) // groups]
        try:
            os.sched_setaffinity(tid, {cpu})
            pinned += 1
        except OSError:
            pass
    print(f'pinned {pinned} of {len(tids)} threads ({groups} groups of {per}) in {1000 * (time.monotonic() - t0):.1f} ms')
    return 0


if __name__ == '__main__':
    sys.exit(main())
