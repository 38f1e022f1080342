#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Nothing flaps (issue 30, item 2): over a snapshot stream and the plans
steerd made of it (`steerd --replay STREAM --json`), no thread and no cgroup
has its mask changed more than LIMIT times within any WINDOW seconds of the
stream's own clock (time_us of each tick).

A change is any action on it: set_thread_cpus / restore_thread for a thread
(cgroup, tid), set_cgroup_cpus / restore_cgroup for a cgroup. A pin given
and taken back on alternating ticks is four changes in four ticks; a window
set and reverted once by the guard is two.

Flapping is changing while nothing changed: changes in such a run count
only while the thing's demand (the thread's util, or the sum of its
cgroup's threads' util, at each change's tick) stays within --steady (1.5x)
of itself. A workload that goes busy, idle and busy again within 10 s (the
phases stream: a phase lasts about 1.5 s there) is followed, not flapped.

    flap-check.py STREAM.jsonl PLAN.json [--limit 2] [--window 10]

Prints one line per offender (its changes with their ticks and policies) and
exits 1 when there is one, else prints a summary and exits 0.
"""
import argparse
import collections
import gzip
import json
import sys


def opener(path):
    return gzip.open(path, 'rt') if path.endswith('.gz') else open(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('stream')
    ap.add_argument('plan')
    ap.add_argument('--limit', type=int, default=2)
    ap.add_argument('--window', type=float, default=10.0)
    ap.add_argument('--steady', type=float, default=1.5)
    ap.add_argument('--floor', type=float, default=50.0, help='demand below this counts as this (idle)')
    a = ap.parse_args()

    times = []
    demand = []  # per tick: {key: util}
    with opener(a.stream) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            snap = json.loads(line)
            times.append(snap['time_us'] / 1e6)
            d = {}
            for cg in snap.get('cgroups', []):
                total = 0.0
                for t in cg.get('threads', []):
                    u = max(t.get('util', 0.0) or 0.0, 0.0)
                    d[f"{cg['path']} tid {t['tid']}"] = u
                    total += u
                d[cg['path']] = total
            demand.append(d)
    changes = collections.defaultdict(list)  # key -> [(t, tick, policy, kind, cpus)]
    n_ticks = n_actions = 0
    with opener(a.plan) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            p = json.loads(line)
            tick = p['tick']
            n_ticks += 1
            if tick >= len(times):
                print(f'flap-check: plan tick {tick} beyond the stream ({len(times)} ticks)', file=sys.stderr)
                return 2
            for act in p['actions']:
                n_actions += 1
                if 'tid' in act:
                    key = f"{act['cgroup']} tid {act['tid']}"
                else:
                    key = act['cgroup']
                changes[key].append((times[tick], tick, act.get('policy', '?'), act['kind'], act.get('cpus', ''),
                                     max(demand[tick].get(key, 0.0), a.floor)))
    bad = 0
    for key, ch in sorted(changes.items()):
        j = 0
        for i in range(len(ch)):
            while ch[i][0] - ch[j][0] > a.window:
                j += 1
            run = ch[j:i + 1]
            ds = [c[5] for c in run]
            if len(run) > a.limit and max(ds) <= a.steady * min(ds):
                print(f'FLAP {key}: {len(run)} changes within {run[-1][0] - run[0][0]:.1f} s, demand '
                      f'{min(ds):.0f}..{max(ds):.0f}: ' +
                      ', '.join(f'tick {t} {pol} {kind} {cpus}' for _, t, pol, kind, cpus, _ in run))
                bad += 1
                break
    if bad:
        return 1
    print(f'flap-check: {n_ticks} ticks, {n_actions} actions on {len(changes)} threads/cgroups: '
          f'none changed more than {a.limit} times in {a.window:g} s at a steady demand')
    return 0


if __name__ == '__main__':
    sys.exit(main())
