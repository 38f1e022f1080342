#!/usr/bin/env python3
"""Figures of one simulated-host run (tests/bench/scale.sh): steerd's
--tick-stats lines and the simulator's summary -> JSON on stdout.

  scale-report.py TICKS SUMMARY [--warmup-s 30] [--period-ms 100]

Per tick CPU time: median, p99 and worst, each with a 95% bootstrap
interval (2,000 resamples of the ticks after the warm-up), and the ratios
p99/median and worst/median with theirs; wall time alike; RSS and
descriptors at the end of the warm-up and at the end, and the RSS slope per
minute (least squares over the ticks after the warm-up); actions by kind
and by policy; the checker's drops; the simulation's own counts.
"""
import argparse
import json
import random


def quantile(xs, q):
    s = sorted(xs)
    if not s:
        return float('nan')
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def boot(xs, stat, n=2000, seed=1):
    rng = random.Random(seed)
    vals = []
    for _ in range(n):
        sample = [xs[rng.randrange(len(xs))] for _ in range(len(xs))]
        vals.append(stat(sample))
    return [quantile(vals, 0.025), quantile(vals, 0.975)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('ticks')
    ap.add_argument('summary')
    ap.add_argument('--warmup-s', type=float, default=30)
    ap.add_argument('--period-ms', type=float, default=100)
    ap.add_argument('--resamples', type=int, default=2000)
    a = ap.parse_args()

    rows = []
    with open(a.ticks) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            v = line.split()
            rows.append({'tick': int(v[0]), 'mono_us': int(v[1]), 'wall_us': int(v[2]), 'cpu_us': int(v[3]),
                         'set_cgroup_cpus': int(v[4]), 'set_thread_cpus': int(v[5]), 'restore': int(v[6]),
                         'window': int(v[7]), 'sticky': int(v[8]), 'balance': int(v[9]), 'guard': int(v[10]),
                         'failed': int(v[11]), 'dropped': int(v[12]), 'rss_kb': int(v[13]), 'fds': int(v[14])})
    if not rows:
        raise SystemExit('no ticks in ' + a.ticks)
    t0 = rows[0]['mono_us']
    steady = [r for r in rows if r['mono_us'] - t0 >= a.warmup_s * 1e6] or rows
    cpu = [r['cpu_us'] / 1000.0 for r in steady]
    wall = [r['wall_us'] / 1000.0 for r in steady]
    n = a.resamples

    def med(x):
        return quantile(x, 0.5)

    def p99(x):
        return quantile(x, 0.99)

    out = {'ticks': len(rows), 'steady_ticks': len(steady),
           'minutes': (rows[-1]['mono_us'] - t0) / 60e6}
    for name, xs in (('cpu_ms', cpu), ('wall_ms', wall)):
        out[name] = {
            'median': med(xs), 'median_ci': boot(xs, med, n),
            'p99': p99(xs), 'p99_ci': boot(xs, p99, n),
            'max': max(xs),
            'p99_over_median': p99(xs) / med(xs), 'p99_over_median_ci': boot(xs, lambda s: p99(s) / med(s), n),
            'max_over_median': max(xs) / med(xs),
            'max_over_median_ci': boot(xs, lambda s: max(s) / med(s), n),
        }
    # CPU share of one CPU over the steady part
    span_us = steady[-1]['mono_us'] - steady[0]['mono_us']
    out['cpu_share_pct'] = 100.0 * sum(r['cpu_us'] for r in steady[1:]) / span_us if span_us > 0 else None
    xs = [(r['mono_us'] - t0) / 60e6 for r in steady]
    ys = [r['rss_kb'] / 1024.0 for r in steady]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    out['rss_mb'] = {'after_warmup': ys[0], 'end': ys[-1], 'max': max(ys),
                     'slope_mb_per_min': (sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx) if sxx else 0.0}
    out['fds'] = {'after_warmup': steady[0]['fds'], 'end': steady[-1]['fds'], 'max': max(r['fds'] for r in steady)}
    out['actions'] = {k: sum(r[k] for r in rows) for k in
                      ('set_cgroup_cpus', 'set_thread_cpus', 'restore', 'window', 'sticky', 'balance', 'guard')}
    out['failed'] = rows[-1]['failed']
    out['dropped'] = rows[-1]['dropped']
    out['series'] = [[round((r['mono_us'] - t0) / 1e6, 2), r['cpu_us']] for r in rows]
    with open(a.summary) as f:
        out['simulation'] = json.load(f)
    print(json.dumps(out))


if __name__ == '__main__':
    main()
