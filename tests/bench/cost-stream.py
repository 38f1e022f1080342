#!/usr/bin/env python3
"""A busy snapshot stream for the policy's cost (steerd --replay):

    cost-stream.py TEMPLATE.jsonl TICKS > busy.jsonl

TEMPLATE is one line of `steerd --record` on a fixture root (its CPUs, LLCs
and the opted-in cgroup /bench1 with its threads; the fixture's counters do
not move, so every figure in it is 0). Every tick written here has the even
LLCs overloaded (util 950, runnable 1300) and the odd ones almost idle (util
60), the threads in busy LLCs running 300 and waiting 150, those in idle
LLCs running 50: windows open, threads are balanced over, stickiness pins,
and the guard judges. The same snapshot repeats every period.
"""
import json
import sys


def nr_idle_scan(x, weight, p=117):
    y = 1024 - min(1024, x * x * p * p // (10000 * 1024))
    return weight * y // 1024


def main():
    tmpl = json.loads(open(sys.argv[1]).readline())
    ticks = int(sys.argv[2])
    busy_llc = {l['id']: l['id'] % 2 == 0 for l in tmpl['llcs']}
    if len(busy_llc) == 1:          # one LLC: make it overloaded
        busy_llc = {k: True for k in busy_llc}
    llc_of = {}
    for c in tmpl['cpus']:
        b = busy_llc[c['llc']]
        c['util'], c['runnable'] = (950.0, 1300.0) if b else (60.0, 60.0)
        c['boosted'] = min(max(c['util'], c['runnable']), 1024.0)
        llc_of[c['cpu']] = c['llc']
    for l in tmpl['llcs']:
        cs = [c for c in tmpl['cpus'] if c['llc'] == l['id'] and c['online']]
        l['util'] = sum(c['util'] for c in cs) / len(cs)
        l['boosted'] = sum(c['boosted'] for c in cs) / len(cs)
        l['nr_idle_scan'] = nr_idle_scan(int(l['util']), l['weight'])
        l['overloaded'] = l['nr_idle_scan'] * 2 < l['weight']
    tmpl['psi'] = {'some_avg10': 20.0, 'full_avg10': 0.0}
    for cg in tmpl.get('cgroups', []):
        cg['pressure_some_avg10'] = 5.0
        for t in cg['threads']:
            b = busy_llc[llc_of[t['cpu']]]
            t['util'], t['wait'] = (300.0, 150.0) if b else (50.0, 2.0)
    t0, period = tmpl['time_us'], tmpl['period_us']
    out = sys.stdout
    for k in range(ticks):
        tmpl['time_us'] = t0 + k * period
        out.write(json.dumps(tmpl, separators=(',', ':')) + '\n')


if __name__ == '__main__':
    main()
