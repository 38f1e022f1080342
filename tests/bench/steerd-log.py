#!/usr/bin/env python3
"""Summarise a time-stamped steerd log (tstamp.py) of one benchmark run.

    steerd-log.py LOG T0 PERIOD_MS [PHASES]

Prints "metric value" lines: actions by policy (act_window, act_sticky,
act_balance: set_* actions; act_guard: the guard's reverts; act_restore:
other restores while running, e.g. widen back or sticky release; the plan
lines of observe mode count the same way), warnings, let-go events, and
reaction_ms / reaction_periods: from T0 (the workload's start) to the first
action. The give-back at SIGTERM is not counted. With PHASES (lines "K T0
BUSY" of the phases workload): phase_reaction_periods, the median over the
phases with an action of the time from the phase's start to its first
action, and phases_acted, how many phases had one.
"""
import statistics
import re
import sys

ACT = re.compile(r'\b(window|sticky|balance|guard) (set_cgroup_cpus|set_thread_cpus|restore)\b')
# Stickiness is logged as one sum per cgroup and tick (each thread at debug
# level): "sticky pinned N threads ..., gave M back" (observe: "would pin N
# threads, give M back").
STICKY = re.compile(r'\bsticky (?:pinned|would pin) (\d+) threads?\b.*\b(?:gave|give) (\d+) back')


def main():
    log, t0, period = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    n = {'act_window': 0, 'act_sticky': 0, 'act_balance': 0, 'act_guard': 0, 'act_restore': 0,
         'log_warnings': 0, 'log_let_go': 0}
    first = None
    acts = []  # times of every action
    try:
        lines = open(log, errors='replace').read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        ts, _, msg = line.partition(' ')
        if 'Received SIG' in msg:
            break
        if 'let go' in msg or 'refusing' in msg:
            n['log_let_go'] += 1
        if re.search(r'\b(warning|failed|cannot|error)\b', msg, re.I):
            n['log_warnings'] += 1
        ms = STICKY.search(msg)
        if ms:
            pinned, released = int(ms.group(1)), int(ms.group(2))
            n['act_sticky'] += pinned
            n['act_restore'] += released
            try:
                t = float(ts)
            except ValueError:
                continue
            if pinned > 0:
                acts.append(t)
            if first is None and pinned > 0:
                first = t
            continue
        mm = ACT.search(msg)
        if not mm:
            continue
        pol, kind = mm.groups()
        if pol == 'sticky':
            continue  # a per-thread line at debug level, already in the sum
        if pol == 'guard':
            n['act_guard'] += 1
        elif kind == 'restore':
            n['act_restore'] += 1
        else:
            n['act_' + pol] += 1
        try:
            t = float(ts)
        except ValueError:
            continue
        acts.append(t)
        if first is None and kind != 'restore':
            first = t
    for k, v in n.items():
        print(k, v)
    if first is not None:
        print('reaction_ms', round(1000 * (first - t0)))
        print('reaction_periods', round((first - t0) * 1000 / period, 2))
    if len(sys.argv) > 4:
        phase_reactions(sys.argv[4], acts, period)


def phase_reactions(path, acts, period):
    try:
        starts = [float(line.split()[1]) for line in open(path) if line.strip()]
    except (OSError, ValueError, IndexError):
        return
    ends = starts[1:] + [float('inf')]
    got = []
    for a, b in zip(starts, ends):
        first = min((t for t in acts if a <= t < b), default=None)
        if first is not None:
            got.append((first - a) * 1000 / period)
    print('phases_acted', len(got))
    if got:
        print('phase_reaction_periods', round(statistics.median(got), 2))


if __name__ == '__main__':
    main()
