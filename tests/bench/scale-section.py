#!/usr/bin/env python3
"""The simulated host's section of the report (tests/bench/scale.sh):
scale-section.py DIR, DIR holding one folder per run with report.json
(scale-report.py). Markdown on stdout: the long runs against the targets
(met / missed / can't tell from the 95% intervals), the sweep, and a plot
of the long run's tick CPU time over the run (text, one row per 10 s)."""
import json
import os
import sys


def load(d, name):
    p = os.path.join(d, name, 'report.json')
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def verdict(lo, hi, limit):
    if hi <= limit:
        return 'met'
    if lo > limit:
        return 'missed'
    return "can't tell"


def fmt_ci(v, ci, unit=''):
    return f'{v:.3g}{unit} [{ci[0]:.3g}, {ci[1]:.3g}]'


def targets(r):
    c = r['cpu_ms']
    rows = [
        ('median tick CPU <= 1 ms', fmt_ci(c['median'], c['median_ci'], ' ms'), verdict(*c['median_ci'], 1.0)),
        ('p99 / median <= 2', fmt_ci(c['p99_over_median'], c['p99_over_median_ci']),
         verdict(*c['p99_over_median_ci'], 2.0)),
        ('worst / median <= 4', fmt_ci(c['max_over_median'], c['max_over_median_ci']),
         verdict(*c['max_over_median_ci'], 4.0)),
    ]
    m = r['rss_mb']
    rows.append(('RSS <= 32 MB', f"max {m['max']:.1f} MB", 'met' if m['max'] <= 32 else 'missed'))
    rows.append(('RSS flat', f"{m['after_warmup']:.1f} -> {m['end']:.1f} MB, slope {m['slope_mb_per_min']:+.3f} MB/min",
                 'met' if abs(m['end'] - m['after_warmup']) <= 1.0 else 'missed'))
    fd = r['fds']
    rows.append(('descriptors flat', f"{fd['after_warmup']} -> {fd['end']} (max {fd['max']})",
                 'met' if fd['end'] <= fd['after_warmup'] + 2 else 'missed'))
    rows.append(('nothing dropped', f"{r['dropped']} dropped, {r['failed']} failed",
                 'met' if r['dropped'] == 0 else 'missed'))
    a = r['actions']
    kinds = ('set_cgroup_cpus', 'set_thread_cpus', 'restore', 'window', 'sticky', 'balance', 'guard')
    rows.append(('every kind of action', ', '.join(f'{k} {a[k]}' for k in kinds),
                 'met' if all(a[k] > 0 for k in kinds) else 'missed: ' + ', '.join(k for k in kinds if a[k] == 0)))
    return rows


def plot(r, width=50):
    series = r['series']
    if not series:
        return ''
    buckets = {}
    for t, cpu in series:
        buckets.setdefault(int(t // 10), []).append(cpu / 1000.0)
    top = max(max(v) for v in buckets.values()) or 1
    lines = ['```', f'tick CPU time (ms) per 10 s of the run: median # and worst ., scale {top:.2f} ms']
    for b in sorted(buckets):
        v = sorted(buckets[b])
        med, worst = v[len(v) // 2], v[-1]
        m = int(round(med / top * width))
        w = int(round(worst / top * width))
        bar = '#' * m + '.' * max(w - m, 0)
        lines.append(f'{b * 10:4d}s |{bar:<{width}}| {med:.2f} / {worst:.2f}')
    lines.append('```')
    return '\n'.join(lines)


def main():
    d = sys.argv[1]
    out = ['## The simulated host (tests/bench/scale.sh)', '',
           'steerd end to end on a simulated host whose load moves (tests/sim/simhost.c; what it models: '
           'docs/BENCHMARKS.md). Figures are steerd\'s own per tick (--tick-stats: CPU time of the process, '
           'wall time), after a warm-up; intervals are 95% bootstrap intervals over the ticks. The simulation '
           'shares this 2-CPU machine with steerd, so wall times carry its contention; CPU times much less.', '']
    for name, title in (('long', '1,024 CPUs in 64 LLCs of 16'), ('llc8', '1,024 CPUs in 128 LLCs of 8')):
        r = load(d, name)
        if not r:
            continue
        s = r['simulation']
        out += [f'### {title}: {s["threads"]} threads created over the run, {r["minutes"]:.1f} min, '
                f'{r["ticks"]} ticks', '',
                f'steerd used {r["cpu_share_pct"]:.2f}% of one CPU. Wall time per tick: median '
                f'{fmt_ci(r["wall_ms"]["median"], r["wall_ms"]["median_ci"], " ms")}, p99 {r["wall_ms"]["p99"]:.2f} ms, '
                f'worst {r["wall_ms"]["max"]:.2f} ms. The simulation: {s["cpuset_changes"]} cgroup CPU changes '
                f'and {s["requests_read"]} thread masks of steerd\'s taken in, {s["migrations"]} migrations, '
                f'{s["over_llc_periods"]} LLC-periods over capacity, {s["cgroups_created"]} cgroups created, '
                f'{s["cgroups_removed"]} removed.', '',
                '| target | figure | verdict |', '|---|---|---|']
        out += [f'| {a} | {b} | {c} |' for a, b, c in targets(r)]
        out += ['']
        if name == 'long':
            out += [plot(r), '']
    rows = []
    for name, label in (('cpus64', '64 CPUs, 10k threads'), ('cpus256', '256 CPUs, 10k threads'),
                        ('cpus1024', '1,024 CPUs, 10k threads'), ('cpus4096', '4,096 CPUs, 10k threads'),
                        ('threads1000', '1,024 CPUs, 1k threads'), ('threads50000', '1,024 CPUs, 50k threads')):
        r = load(d, name)
        if r:
            c = r['cpu_ms']
            rows.append(f'| {label} | {fmt_ci(c["median"], c["median_ci"], " ms")} | {c["p99"]:.2f} ms | '
                        f'{c["max"]:.2f} ms | {r["rss_mb"]["max"]:.1f} MB | {r["steady_ticks"]} |')
    if rows:
        out += ['### Scaling: tick CPU time against CPUs and threads', '',
                '| host | median tick CPU [95% CI] | p99 | worst | RSS max | ticks |', '|---|---|---|---|---|---|']
        out += rows + ['']
    print('\n'.join(out))


if __name__ == '__main__':
    main()
