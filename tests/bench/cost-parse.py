#!/usr/bin/env python3
"""Parsers for cost.sh; each prints "metric value" lines.

  cost-parse.py dumps BASE SKIP      per-tick Ir from callgrind --dump-after=manager_on_tick
                                     files BASE.1, BASE.2, ...: skips the first
                                     SKIP dumps (start-up, first samples); prints
                                     ir_tick (median), ir_tick_min, ir_tick_max,
                                     ticks, and the inclusive Ir of the tick's
                                     parts in the last dump
  cost-parse.py inclusive FILE FN..  inclusive Ir of functions in one callgrind file
  cost-parse.py ticks PERF_SCRIPT    tick durations from perf script output of
                                     the uprobes sbench:tick_in / sbench:tick_out*
"""
import glob
import re
import statistics
import subprocess
import sys

PARTS = ['manager_on_tick', 'sampler_sample', 'sample_thread', 'policy_decide', 'actuator_check_ownership', 'actuator_apply',
         'bus_emit_tick', 'manager_refresh_optins', 'on_proc_event', 'snprintf']


def total(path):
    with open(path) as f:
        for line in f:
            if line.startswith('totals:') or line.startswith('summary:'):
                return int(line.split()[1])
    return None


def inclusive(path, fns):
    """Inclusive Ir per function name (callgrind_annotate --inclusive=yes)."""
    out = subprocess.run(['callgrind_annotate', '--inclusive=yes', '--threshold=100', path],
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\S*?:?([\w.]+)(?:\'\d+)?\s', line + ' ')
        if not m:
            continue
        name = m.group(2).split('.')[0]
        if name in fns and name not in res:
            res[name] = int(m.group(1).replace(',', ''))
    return res


def dumps(base, skip):
    files = sorted(glob.glob(base + '.*'), key=lambda p: int(p.rsplit('.', 1)[1]) if p.rsplit('.', 1)[1].isdigit() else -1)
    files = [p for p in files if p.rsplit('.', 1)[1].isdigit()]
    steady = files[skip:]
    irs = [total(p) for p in steady]
    irs = [x for x in irs if x]
    print('ticks', len(irs))
    if not irs:
        return
    print('ir_tick', int(statistics.median(irs)))
    print('ir_tick_min', min(irs))
    print('ir_tick_max', max(irs))
    # The parts, from the dump closest to the median.
    med = statistics.median(irs)
    best = min(steady, key=lambda p: abs((total(p) or 0) - med))
    for fn, v in inclusive(best, PARTS).items():
        print('ir_' + fn, v)
    # The worst tick, when it stands out: where its instructions went.
    worst = max(steady, key=lambda p: total(p) or 0)
    if (total(worst) or 0) > 5 * med:
        for i, (fn, v) in enumerate(top_functions(worst, 8)):
            print(f'worst_fn{i + 1}_{fn}', v)


def top_functions(path, n):
    """steerd's own functions by inclusive Ir, below the tick"""
    out = subprocess.run(['callgrind_annotate', '--inclusive=yes', '--threshold=99', path],
                         capture_output=True, text=True).stdout
    skip = {'main', 'manager_run', 'run_daemon', 'manager_on_tick', 'on_tick', 'tick', '(below main)'}
    res = []
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\?\?\?:([\w.]+)\S*\s+\[.*/steerd\]', line)
        if not m:
            continue
        name = m.group(2).split('.')[0]
        if name in skip or name in [r[0] for r in res]:
            continue
        res.append((name, int(m.group(1).replace(',', ''))))
        if len(res) >= n:
            break
    return res


def ticks(path):
    ins, durs = {}, []
    for line in open(path):
        f = line.split()
        if len(f) < 4:
            continue
        try:
            pid, t = f[1], float(f[2].rstrip(':'))
        except ValueError:
            continue
        ev = f[3]
        if 'tick_in' in ev:
            ins[pid] = t
        elif 'tick_out' in ev and pid in ins:
            durs.append(t - ins.pop(pid))
    print('plain_ticks', len(durs))
    if durs:
        durs.sort()
        print('wall_us_tick', round(1e6 * statistics.median(durs)))
        print('wall_us_tick_min', round(1e6 * durs[0]))
        print('wall_us_tick_p90', round(1e6 * durs[min(len(durs) - 1, int(0.9 * len(durs)))]))
        print('wall_us_tick_max', round(1e6 * durs[-1]))


def main():
    cmd = sys.argv[1]
    if cmd == 'dumps':
        dumps(sys.argv[2], int(sys.argv[3]))
    elif cmd == 'inclusive':
        for fn, v in inclusive(sys.argv[2], sys.argv[3:]).items():
            print('ir_' + fn, v)
    elif cmd == 'ticks':
        ticks(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
