#!/usr/bin/env python3
"""Turn a results folder of tests/bench/run.sh into REPORT.md and PNG plots.

    analyze.py [--ratio-ci PATH] OUTDIR

Reads OUTDIR/meta.txt, raw.csv (rep,order,workload,config,metric,value) and
cost.csv (kind,cpus,threads,metric,value); writes OUTDIR/REPORT.md,
OUTDIR/summary.csv and OUTDIR/*.png (gnuplot). Every figure in the report
comes from those files.

Every ratio is shown as `median [95% interval]`: the median of the paired
ratios (configuration / kernel default of the same round) and the interval
steerd-ratio-ci computes from the same pairs (a t interval on the log
ratios: daemon/core/base/stats.h). Every target is met / missed / can't tell
by that interval. The tool is --ratio-ci PATH, else $STEERD_RATIO_CI, else
build-bench/steerd-ratio-ci, else build/steerd-ratio-ci of this tree; without
it the report says so and analyze.py exits 1 (there is no other formula).
"""
import csv
import json
import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict

CONFIG_ORDER = ['default', 'observe', 'latency', 'balanced', 'static']
AA = 'default-aa'       # the kernel default a second time: the A/A pair
TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
NAMES = {
    'hb4cg': 'hackbench, 4 cgroups',
    'hb1p': 'hackbench -g 4, 1 process',
    'msg': 'perf bench messaging',
    'pipe': 'perf bench pipe',
    'ring': 'a token ring of four threads',
    'cyc': 'cyclictest + noise',
    'tbench': 'tbench loopback',
    'phases': 'the load moves between four cgroups',
}
FIGURE = {
    'hb4cg': 'wall time', 'hb1p': 'time', 'msg': 'total time', 'pipe': 'usecs/op',
    'ring': 'time', 'cyc': 'p99 wakeup latency', 'tbench': 'throughput', 'phases': 'wall time',
}
HARM = 0.02     # "no workload more than 2% slower"


class NoTool(Exception):
    pass


def find_ratio_ci(arg=None):
    """the steerd-ratio-ci binary: the argument, $STEERD_RATIO_CI, build-bench/, build/"""
    if arg:
        cands = [arg]
    elif os.environ.get('STEERD_RATIO_CI'):
        cands = [os.environ['STEERD_RATIO_CI']]
    else:
        cands = [os.path.join(TOP, 'build-bench', 'steerd-ratio-ci'), os.path.join(TOP, 'build', 'steerd-ratio-ci')]
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c, cands
    return None, cands


class RatioCI:
    """steerd-ratio-ci on lists of pairs (A, B); one call per distinct question, cached."""

    def __init__(self, path):
        self.path = path
        self.cache = {}

    def __call__(self, pairs, higher=False, target_max=None, target_min=None):
        pairs = tuple((a, b) for a, b in pairs if a is not None and b is not None and a > 0 and b > 0)
        args = ['--higher-is-better' if higher else '--lower-is-better']
        if target_max is not None:
            args += ['--target-max', repr(float(target_max))]
        if target_min is not None:
            args += ['--target-min', repr(float(target_min))]
        key = (pairs, tuple(args))
        if key not in self.cache:
            inp = ''.join(f'{a!r} {b!r}\n' for a, b in pairs)
            r = subprocess.run([self.path] + args, input=inp, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f'{self.path} {" ".join(args)} failed (exit {r.returncode}): {r.stderr.strip()}')
            self.cache[key] = json.loads(r.stdout)
        return self.cache[key]


def ci_str(e, nd=3):
    """[low, high] of a tool answer, or why there is none"""
    if e is None or e.get('ci_low') is None:
        n = 0 if e is None else e.get('n', 0)
        return f'[no interval: {n} round{"" if n == 1 else "s"}]'
    return f'[{e["ci_low"]:.{nd}f}, {e["ci_high"]:.{nd}f}]'


def excludes_one(e):
    return e is not None and e.get('ci_low') is not None and (e['ci_low'] > 1 or e['ci_high'] < 1)


def combine(results):
    """several targets as one: missed if any is, met if all are, else can't tell"""
    if not results:
        return "can't tell"
    if 'missed' in results:
        return 'missed'
    return 'met' if all(r == 'met' for r in results) else "can't tell"


def verdict_md(v):
    """met / missed in bold, a note after them ("met (one measurement, no interval)") kept"""
    v = v or "can't tell"
    for k in ('met', 'missed'):
        if v == k or v.startswith(k + ' '):
            return f'**{k}**' + v[len(k):]
    return v


def read_meta(out):
    meta = {}
    p = os.path.join(out, 'meta.txt')
    if os.path.exists(p):
        for line in open(p):
            k, _, v = line.rstrip('\n').partition('=')
            meta[k] = v
    return meta


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def read_raw(out):
    """data[workload][config][rep][metric] = value"""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    p = os.path.join(out, 'raw.csv')
    if not os.path.exists(p):
        return data
    for r in csv.DictReader(open(p)):
        v = fnum(r['value'])
        if v is not None:
            data[r['workload']][r['config']][int(r['rep'])][r['metric']] = v
    return data


def read_cost(out):
    """cost[kind][(cpus, threads)][metric] = value (strings kept for topology).
    Repeated measurements (metric@round) become lists under the plain metric name."""
    cost = defaultdict(lambda: defaultdict(dict))
    p = os.path.join(out, 'cost.csv')
    if not os.path.exists(p):
        return cost
    for r in csv.DictReader(open(p)):
        v = fnum(r['value'])
        d = cost[r['kind']][(int(r['cpus']), int(r['threads']))]
        name, at, _ = r['metric'].partition('@')
        if at:
            d.setdefault(name, []).append(v)
        else:
            d[name] = v if v is not None else r['value']
    return cost


def one(x):
    """a repeated figure (list) -> its median; a single one as it is"""
    return med(x) if isinstance(x, list) else x


def spread(x, nd=3):
    """min / **median** / max of a repeated figure, or the figure"""
    if isinstance(x, list):
        t = mmm(x)
        if t[1] is None:
            return 'n/a'
        return f'{fmt(t[0], nd)} / **{fmt(t[1], nd)}** / {fmt(t[2], nd)}' if len(x) > 1 else fmt(t[1], nd)
    return fmt(x, nd)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def mmm(xs):
    xs = [x for x in xs if x is not None]
    return (min(xs), statistics.median(xs), max(xs)) if xs else (None, None, None)


def fmt(x, nd=3):
    if x is None:
        return 'n/a'
    if isinstance(x, str):
        return x
    if abs(x) >= 1e6:
        return f'{x:,.0f}'
    if abs(x) >= 100:
        return f'{x:,.0f}'
    if abs(x) >= 10:
        return f'{x:.1f}'
    return f'{x:.{nd}g}' if nd else f'{x:g}'


def fr(t):
    """min/median/max triple of ratios"""
    if t[1] is None:
        return 'n/a'
    return f'{t[0]:.3f} / **{t[1]:.3f}** / {t[2]:.3f}'


def pct_change(r, better):
    """ratio -> 'x% faster/slower' wording from the workload's direction"""
    if r is None:
        return 'n/a'
    if better == 'lower':
        d = (1 - r) * 100
        return f'{abs(d):.1f}% {"better" if d >= 0 else "worse"}'
    d = (r - 1) * 100
    return f'{abs(d):.1f}% {"better" if d >= 0 else "worse"}'


class Analysis:
    def __init__(self, out, ci):
        self.out = out
        self.ci = ci
        self.meta = read_meta(out)
        self.data = read_raw(out)
        self.add_static_best()
        self.cost = read_cost(out)
        self.workloads = [w for w in self.meta.get('workloads', '').split() if w in self.data] or sorted(self.data)
        present = {c for w in self.workloads for c in self.data[w]}
        # variants (latency-noguard) right after their mode
        def order(c):
            base = c.split('-')[0]
            return (CONFIG_ORDER.index(base) if base in CONFIG_ORDER else len(CONFIG_ORDER), c != base, c)
        self.configs = sorted(present, key=order)
        # the configurations that run steerd (observe, latency, balanced and variants such as latency-nodbg)
        self.steerd_cfgs = [c for c in self.configs if not c.startswith('default') and not c.startswith('static')]
        self.lines = []

    def add_static_best(self):
        """A workload with static variants (static-a, static-b, ...) gets static-best: in each round
        the run of the variant with the best primary figure (a user who pins by hand and knows the
        best split)."""
        for w, by_cfg in self.data.items():
            variants = [c for c in by_cfg if c.startswith('static-') and c != 'static-best']
            if not variants:
                continue
            higher = self.meta.get('better_' + w, 'lower') == 'higher'
            for rep in sorted({r for c in variants for r in by_cfg[c]}):
                runs = [by_cfg[c][rep] for c in variants if by_cfg[c].get(rep, {}).get('primary') is not None]
                if runs:
                    pick = (max if higher else min)(runs, key=lambda m: m['primary'])
                    by_cfg['static-best'][rep] = dict(pick)

    # -- figures --
    def better(self, w):
        return self.meta.get('better_' + w, 'lower')

    def unit(self, w):
        return self.meta.get('unit_' + w, '')

    def values(self, w, c, metric):
        runs = self.data[w].get(c, {})
        return [runs[r].get(metric) for r in sorted(runs)]

    def ratios(self, w, c, metric='primary', base='default'):
        """paired ratios: config / base within the same repetition (the runs were adjacent)"""
        a, b = self.data[w].get(c, {}), self.data[w].get(base, {})
        out = []
        for r in sorted(a):
            x, y = a[r].get(metric), b.get(r, {}).get(metric)
            if x is not None and y:
                out.append(x / y)
        return out

    def harm(self, w, r):
        """True when ratio r is more than HARM worse than default"""
        if r is None:
            return False
        return r > 1 + HARM if self.better(w) == 'lower' else r < 1 - HARM

    # -- output helpers --
    def w(self, s=''):
        self.lines.append(s)

    def table(self, head, rows):
        self.w('| ' + ' | '.join(head) + ' |')
        self.w('|' + '|'.join('---' for _ in head) + '|')
        for r in rows:
            self.w('| ' + ' | '.join(str(x) for x in r) + ' |')
        self.w()

    # -- the report --
    def run(self):
        self.write_summary_csv()
        plots = self.plots()
        m = self.meta
        quick = m.get('quick') == '1'
        self.w('# ' + (m.get('title') or 'steerd benchmarks: report'))
        self.w()
        cmd = m.get('command') or 'tests/bench/run.sh' + (' --quick' if quick else '')
        self.w(f'Generated by `{cmd}` on {m.get("date", "?")}. Every figure below was measured in this run; '
               'the raw figures are [raw.csv](raw.csv) (one row per run and metric)'
               + (' and [cost.csv](cost.csv)' if os.path.exists(os.path.join(self.out, 'cost.csv')) else '') + '.')
        if quick:
            self.w()
            self.w(f'**This is a --quick run**: one workload ({", ".join(self.workloads)}) under '
                   f'{", ".join(self.configs)}, {m.get("reps", "?")} rounds, no cost measurements: an interval for '
                   'that workload, not the evidence for every target.')
        self.w()
        aa = self.aa_rows()
        if not aa:
            self.w(f'**No A/A row in this run** (no `{AA}` configuration): its noise floor is unknown; see '
                   '"The A/A row" below.')
            self.w()
        else:
            bad = [(w, e) for w, e in aa if excludes_one(e)]
            if bad:
                self.w('**This run is unreliable: the A/A interval (the kernel default against itself) excludes '
                       '1.00 for ' + ', '.join(f'{w} ({self.rc(w, AA)})' for w, _ in bad)
                       + '. The intervals of those workloads are narrower than the run\'s real noise.**')
            else:
                self.w(f'A/A check passed: the interval of {AA} / default contains 1.00 for every workload '
                       f'({len(aa)} of {len(aa)}).')
            self.w()
        self.machine()
        notes = os.path.join(self.out, 'notes.md')
        if os.path.exists(notes):
            self.w('## Notes on this run')
            self.w()
            self.w(open(notes).read().strip())
            self.w()
        self.targets()
        self.aa_section()
        self.per_workload(plots)
        self.behaviour()
        self.costs(plots)
        self.noise()
        self.method()
        with open(os.path.join(self.out, 'REPORT.md'), 'w') as f:
            f.write('\n'.join(self.lines).rstrip() + '\n')

    def machine(self):
        m = self.meta
        self.w('## The run')
        self.w()
        dirty = m.get('steerd_tree_dirty', '0')
        rows = [
            ('machine', f'{m.get("ncpu", "?")} CPUs ({m.get("cpu_model", "?")}), {m.get("virt", "?")} guest, '
                        f'kernel {m.get("host_kernel", "?")}'),
            ('steerd', f'{m.get("steerd_version", "?")}, commit {m.get("steerd_commit", "?")}'
                       + (f' plus {dirty} locally modified files' if dirty not in ('', '0') else '')
                       + f', Release build; runnable from {m.get("runnable_source", "?")}'),
            ('steerd settings', f'SamplePeriodMs={m.get("period_ms", "?")}, every other setting at its default'
                                + (f'; extra: {m["policy_extra"]}' if m.get('policy_extra') else '')),
            ('repetitions', f'{m.get("reps", "?")} rounds; in each round every workload runs under '
                            f'{", ".join(self.configs)} one after the other, '
                            + (f'in an order shuffled per round and workload (seed {m["seed"]}: '
                               f'`--seed {m["seed"]}` repeats it)' if m.get('seed') else
                               'always in that order (a run before the shuffled rounds)')),
            ('duration', f'{dur(m.get("total_seconds"))} in all: matrix {dur(m.get("matrix_seconds"))}, '
                         f'cost {dur(m.get("cost_seconds"))}'),
            ('load average', f'{m.get("loadavg_start", "?")} at the start, {m.get("loadavg_end", "?")} at the end'),
            ('perf', ('`perf bench` works' if m.get('perf_bench') == '1' else '`perf bench` does NOT work: skipped')
                     + '; hardware counters ' + ('available' if m.get('perf_hw_counters') == 'yes' else
                                                 'not supported (VM): `perf stat` counts software events only')),
        ]
        self.table(['', ''], rows)
        self.w('Workloads:')
        self.w()
        for w in self.workloads:
            self.w(f'- **{w}** ({NAMES.get(w, w)}): {m.get("what_" + w, "")}; {self.better(w)} is better.')
        self.w()

    # -- intervals (steerd-ratio-ci) --
    def higher(self, w, metric='primary'):
        """is a larger value of this metric better?"""
        if metric == 'primary':
            return self.better(w) == 'higher'
        return metric.startswith('noise_bogo_ops') or metric.endswith('_mbs')

    def pairs(self, w, c, metric='primary', base='default'):
        """(config, base) figures of the same round"""
        a, b = self.data[w].get(c, {}), self.data[w].get(base, {})
        return [(a[r].get(metric), b.get(r, {}).get(metric)) for r in sorted(a)
                if a[r].get(metric) is not None and b.get(r, {}).get(metric) is not None]

    def est(self, w, c, metric='primary', base='default', **target):
        return self.ci(self.pairs(w, c, metric, base), self.higher(w, metric), **target)

    def rc(self, w, c, metric='primary', base='default', mm=False):
        """'median [low, high]' of the paired ratios; with mm also (min..max)"""
        rs = self.ratios(w, c, metric, base)
        if not rs:
            return 'n/a'
        e = self.est(w, c, metric, base)
        s = f'{med(rs):.3f} {ci_str(e)}'
        if mm and len(rs) > 1:
            s += f' ({min(rs):.3f}..{max(rs):.3f})'
        return s

    def aa(self, w, metric='primary'):
        """the A/A estimate of workload w (default-aa / default), None without default-aa"""
        if AA not in self.data[w] or 'default' not in self.data[w]:
            return None
        return self.est(w, AA, metric)

    def aa_str(self, w):
        if self.aa(w) is None:
            return 'no A/A row in this run'
        return f'{w}: {self.rc(w, AA)}'

    def abs_target(self, values, limit, at_most=True):
        """a figure measured once per round (not a ratio) against a limit: the
        interval of its geometric mean over the rounds (pairs (x, 1))"""
        xs = [x for x in values if x is not None and x > 0]
        if len(xs) >= 2:
            e = self.ci([(x, 1.0) for x in xs], False,
                        **({'target_max': limit} if at_most else {'target_min': limit}))
            return e['target'], e
        if len(xs) == 1:
            ok = xs[0] <= limit if at_most else xs[0] >= limit
            return ('met' if ok else 'missed') + ' (one measurement, no interval)', None
        return "can't tell", None

    def ratio_row(self, target, w, c, limit, at_most=True, base='default', metric='primary', extra=''):
        """a target 'c / base at most (least) limit' of workload w: verdict from the interval"""
        e = self.est(w, c, metric, base, **({'target_max': limit} if at_most else {'target_min': limit}))
        if e['n'] == 0:
            return None
        rs = self.ratios(w, c, metric, base)
        m = med(rs)
        by = (f'interval {ci_str(e)} against {limit:.2f}; median {m / limit:.2f} x the limit'
              if m is not None else '')
        return [target, verdict_md(e.get('target', "can't tell")),
                f'{c}/{base} {self.rc(w, c, metric, base, mm=True)}' + (f'; {extra}' if extra else ''),
                self.aa_str(w), by]

    def target_rows(self):
        rows = []
        d = self.data
        # 1. latency on the four-cgroup hackbench vs static pinning
        if 'hb4cg' in d and 'latency' in d['hb4cg']:
            if 'static' in d['hb4cg']:
                r = self.ratio_row('latency mode on hackbench 4 cgroups at least as fast as static per-group pinning '
                                   '(latency/static at most 1.00)', 'hb4cg', 'latency', 1.0, base='static',
                                   extra=f'vs default: latency {self.rc("hb4cg", "latency")}, '
                                         f'static {self.rc("hb4cg", "static")}')
                if r:
                    rows.append(r)
            if self.ratios('hb4cg', 'latency', 'migrations'):
                r = self.ratio_row('hackbench 4 cgroups: cpu-migrations down at least 90% (latency; ratio at most 0.10)',
                                   'hb4cg', 'latency', 0.10, metric='migrations',
                                   extra=f'median {fmt(med(self.values("hb4cg", "latency", "migrations")))} vs '
                                         f'{fmt(med(self.values("hb4cg", "default", "migrations")))}')
                if r:
                    rows.append(r)
        if 'msg' in d and 'latency' in d['msg']:
            r = self.ratio_row('perf bench messaging at least 10% faster (latency; ratio at most 0.90)',
                               'msg', 'latency', 0.90)
            if r:
                rows.append(r)
        # 2. harm: every steerd mode on every workload at most 2% worse, by the interval
        items = []
        for w in self.workloads:
            for c in self.steerd_cfgs:
                if not self.ratios(w, c):
                    continue
                hi = self.higher(w)
                e = self.est(w, c, **({'target_min': 1 - HARM} if hi else {'target_max': 1 + HARM}))
                items.append((w, c, e))
        if items:
            res = [e.get('target', "can't tell") for _, _, e in items]
            bad = [(w, c, e) for w, c, e in items if e.get('target') == 'missed']
            open_ = [(w, c, e) for w, c, e in items if e.get('target') not in ('met', 'missed')]
            def lst(xs):
                return '; '.join(f'{w} {c} {self.rc(w, c)}' for w, c, _ in xs)
            rows.append(['no workload more than 2% worse than kernel default in any mode '
                         '(interval within 1.02, throughput 0.98)', verdict_md(combine(res)),
                         ('worse by more than 2%: ' + lst(bad) if bad else 'none worse by more than 2%')
                         + ('; undecided: ' + lst(open_) if open_ else ''),
                         'see the A/A table', f'{len(bad)} missed, {len(open_)} can\'t tell, '
                         f'{len(items) - len(bad) - len(open_)} met of {len(items)} workload x mode pairs'])
        if 'cyc' in d:
            nz = [c for c in self.steerd_cfgs if self.ratios('cyc', c, 'noise_bogo_ops_s')]
            if nz:
                res, parts = [], []
                for c in nz:
                    hi = self.est('cyc', c, 'noise_bogo_ops_s', target_max=1 + HARM).get('target')
                    lo = self.est('cyc', c, 'noise_bogo_ops_s', target_min=1 - HARM).get('target')
                    res.append(combine([hi, lo]))
                    parts.append(f'{c} {self.rc("cyc", c, "noise_bogo_ops_s")}')
                rows.append(['non-opted-in workload unchanged (stress-ng --cpu bogo ops/s next to cyclictest, '
                             'interval within 0.98..1.02)', verdict_md(combine(res)), '; '.join(parts),
                             self.aa_str('cyc'), ', '.join(f'{c}: {r}' for c, r in zip(nz, res))])
        # 3. cost
        real = self.cost.get('real', {})
        r1000 = [v for (n, t), v in real.items() if t == 1000]
        if r1000 and one(r1000[0].get('cpu_pct')) is not None:
            vals = r1000[0].get('cpu_pct')
            vals = vals if isinstance(vals, list) else [vals]
            v, e = self.abs_target(vals, 0.2)
            share = one(r1000[0].get('cpu_pct'))
            base = [v2 for (n, t), v2 in real.items() if t == 0]
            b = base[0].get('cpu_pct') if base else None
            nothing = [v2 for v2 in self.cost.get('realnone', {}).values()]
            b0 = nothing[0].get('cpu_pct') if nothing else None
            rows.append([f'steerd at most 0.2% of one CPU at {self.meta.get("period_ms", "100")} ms with 1,000 '
                         'opted-in threads (real run)', verdict_md(v),
                         f'{spread(r1000[0].get("cpu_pct"))}% of one CPU (min / median / max of the rounds); '
                         f'geometric mean {ci_str(e, 3)}%'
                         + (f'; with an empty opted-in cgroup: {spread(b)}%' if b is not None else '')
                         + (f'; with nothing opted in: {spread(b0)}%' if b0 is not None else ''), '-',
                         f'{share / 0.2:.2f} x the target (median)' if share else ''])
        big = self.cost.get('plain', {}).get((1024, 10000))
        if big and big.get('wall_us_tick') is not None:
            wall = big['wall_us_tick']
            cpu = big.get('cpu_us_tick')
            v, e = self.abs_target(wall if isinstance(wall, list) else [wall], 2000)
            wall = one(wall)
            rows.append(['a tick at most 2 ms at 1,024 CPUs x 10,000 threads (fixture root, plain run)',
                         verdict_md(v), f'median tick {fmt(wall / 1000)} ms wall, {fmt(one(cpu) / 1000 if cpu else None)} ms CPU',
                         '-', f'{wall / 2000:.0f}x the target' if wall > 2000 else 'within'])
        # 4. issue 13: the load that moves
        if 'phases' in d and 'latency' in d['phases'] and 'static-best' in d['phases']:
            lat, best = d['phases']['latency'], d['phases']['static-best']
            dfl = d['phases'].get('default', {})
            prs = []
            for r in sorted(lat):
                ref = [x for x in (dfl.get(r, {}).get('primary'), best.get(r, {}).get('primary')) if x]
                if lat[r].get('primary') is not None and ref:
                    prs.append((lat[r]['primary'], min(ref)))
            if prs:
                e = self.ci(prs, False, target_max=0.90)
                rat = [a / b for a, b in prs]
                rows.append(['phases: latency at most 0.90 x min(kernel default, static-best) of the same round',
                             verdict_md(e.get('target')),
                             f'latency / min(default, static-best) {med(rat):.3f} {ci_str(e)} '
                             f'({min(rat):.3f}..{max(rat):.3f}); vs default: latency {self.rc("phases", "latency")}, '
                             f'static-best {self.rc("phases", "static-best")}', self.aa_str('phases'),
                             f'median {med(rat) / 0.90:.2f} x the limit'])
            pr = [x for x in self.values('phases', 'latency', 'phase_reaction_periods') if x is not None]
            if pr:
                t = mmm(pr)
                v, e = self.abs_target(pr, 2)
                rows.append(['phases: phase change to the first action at most 2 sample periods (latency)',
                             verdict_md(v),
                             f'{t[0]:.1f} / **{t[1]:.1f}** / {t[2]:.1f} periods (min/median/max of the rounds\' medians; '
                             f'geometric mean {ci_str(e, 2)}; '
                             f'{fmt(med(self.values("phases", "latency", "phases_acted")), 0)} of 16 phases acted on)',
                             '-', ''])
        rows += self.target_rows_later()
        reac = []
        for w in self.workloads:
            reac += self.values(w, 'latency', 'reaction_periods')
        reac = [x for x in reac if x is not None]
        if reac:
            t = mmm(reac)
            v, e = self.abs_target(reac, 2)
            rows.append(['reaction within 2 sample periods (latency mode: workload start to the first action)',
                         verdict_md(v),
                         f'{t[0]:.1f} / **{t[1]:.1f}** / {t[2]:.1f} periods (min/median/max over '
                         f'{len(reac)} runs that acted); geometric mean {ci_str(e, 2)}',
                         '-', 'see the note below the table'])
        return rows

    def to_best(self, w, c):
        """per round: (c, the better of default and static pinning) as a time-like pair
        (static-best where the workload has several splits): ratio > 1 is worse, whichever
        way the workload's figure goes"""
        runs, out = self.data[w].get(c, {}), []
        st = 'static-best' if 'static-best' in self.data[w] else 'static'
        for r in sorted(runs):
            x = runs[r].get('primary')
            refs = [self.data[w].get(b, {}).get(r, {}).get('primary') for b in ('default', st)]
            refs = [v for v in refs if v]
            if not x or not refs:
                continue
            out.append((x, min(refs)) if self.better(w) == 'lower' else (max(refs), x))
        return out

    def target_rows_later(self):
        """the targets of issues 12 (cost), 13 (load that moves), 14 (co-location)"""
        rows, d = [], self.data
        real = self.cost.get('real', {})
        r10k = [v for (n, t), v in real.items() if t == 10000]
        if r10k and one(r10k[0].get('cpu_pct')) is not None:
            share = one(r10k[0]['cpu_pct'])
            vals = r10k[0]['cpu_pct'] if isinstance(r10k[0]['cpu_pct'], list) else [r10k[0]['cpu_pct']]
            v, e = self.abs_target(vals, 2)
            rows.append(['12: steerd at most 2% of one CPU with 10,000 sleeping opted-in threads (real run)',
                         verdict_md(v), f'{spread(r10k[0]["cpu_pct"])}% of one CPU; geometric mean {ci_str(e, 3)}%',
                         '-', f'{share / 2:.2f} x the target (median)'])
        if 'hb4cg' in d and 'latency' in d['hb4cg']:
            vals = [x for x in self.values('hb4cg', 'latency', 'steerd_cpu_pct') if x is not None]
            if vals:
                sc = mmm(vals)
                v, e = self.abs_target(vals, 0.5)
                rows.append(['12: steerd at most 0.5% of one CPU during hb4cg (latency)', verdict_md(v),
                             f'{sc[0]:.2f} / **{sc[1]:.2f}** / {sc[2]:.2f}% of one CPU (min/median/max of the rounds); '
                             f'geometric mean {ci_str(e, 2)}%', '-', f'{sc[1] / 0.5:.1f} x the target (median)'])
        big = self.cost.get('callgrind', {}).get((1024, 10000))
        if big and big.get('ir_tick') and big.get('ir_tick_max'):
            x = big['ir_tick_max'] / big['ir_tick']
            # The plain run has more ticks than callgrind's few dumps, where
            # one start-up tick (the cgroup turning quiet) can be the worst.
            pl = self.cost.get('plain', {}).get((1024, 10000), {})
            plain = ''
            if pl.get('wall_us_tick') and pl.get('wall_us_tick_max'):
                plain = (f'; plain run: worst {fmt(pl["wall_us_tick_max"])} us, median {fmt(pl["wall_us_tick"])} us wall '
                         f'({pl["wall_us_tick_max"] / pl["wall_us_tick"]:.2f} x, {fmt(pl.get("plain_ticks"), 0)} ticks)')
            v, _ = self.abs_target([x], 3)
            rows.append(['12: worst tick at most 3 x the median (fixture 1,024 CPUs x 10,000 threads, instructions)',
                         verdict_md(v),
                         f'worst {fmt(big["ir_tick_max"])} Ir, median {fmt(big["ir_tick"])} Ir over '
                         f'{fmt(big.get("ticks"), 0)} ticks{plain}', '-', f'{x:.2f} x the median'])
        if 'hb4cg' in d and 'latency' in d['hb4cg'] and 'static' in d['hb4cg']:
            r = self.ratio_row('13: hb4cg latency / static at most 1.02', 'hb4cg', 'latency', 1.02, base='static')
            if r:
                rows.append(r)
        if 'tbench' in d and 'latency' in d['tbench']:
            rs = self.ratios('tbench', 'latency')
            if rs:
                low = sum(1 for x in rs if x < 1.0)
                r = self.ratio_row('13: tbench latency at least 1.00 x the kernel default (throughput)', 'tbench',
                                   'latency', 1.00, at_most=False)
                if r:
                    r[4] = f'{low} of {len(rs)} rounds below 1.00; ' + r[4]
                    rows.append(r)
        for w, goal in (('pipe', 0.10), ('hb1p', 0.75), ('msg', 1.00)):
            if w in d and 'latency' in d[w] and self.ratios(w, 'latency'):
                r = self.ratio_row(f'14: {w} latency at most {goal:.2f} x the kernel default', w, 'latency', goal,
                                   extra=(f'static by hand {self.rc(w, "static")}' if 'static' in d[w] else ''))
                if r:
                    rows.append(r)
        tb = []
        for w in self.workloads:
            if 'latency' not in d[w]:
                continue
            prs = self.to_best(w, 'latency')
            if prs:
                tb.append((w, prs, self.ci(prs, False, target_max=1 + HARM)))
        if tb:
            res = [e.get('target', "can't tell") for _, _, e in tb]
            bad = [w for (w, _, _), r in zip(tb, res) if r == 'missed']
            open_ = [w for (w, _, _), r in zip(tb, res) if r not in ('met', 'missed')]
            rows.append(['14: every workload at most 1.02 x min(kernel default, static) in latency mode',
                         verdict_md(combine(res)),
                         '; '.join(f'{w} {med([a / b for a, b in p]):.3f} {ci_str(e)}' for w, p, e in tb),
                         'see the A/A table',
                         (f'missed: {", ".join(bad)}' if bad else 'none missed')
                         + (f'; can\'t tell: {", ".join(open_)}' if open_ else '')])
        return rows

    def aa_rows(self):
        """per workload: default-aa / default, its interval and whether it excludes 1.00"""
        rows = []
        for w in self.workloads:
            e = self.aa(w)
            if e is None:
                continue
            rows.append((w, e))
        return rows

    def aa_section(self):
        self.w('## The A/A row: the noise floor of this run')
        self.w()
        rows = self.aa_rows()
        if not rows:
            self.w(f'**No A/A row in this run**: it has no `{AA}` configuration (the kernel default a second time, '
                   'in the same rounds), so the noise floor of its intervals is unknown. Every interval below '
                   'still holds as a statement about these rounds, but nothing here checks that the method '
                   'itself finds no difference where there is none.')
            self.w()
            return
        self.table(['workload', f'{AA} / default: median [95% interval] (min..max)', 'excludes 1.00', 'sd of log ratio',
                    'rounds'],
                   [[w, self.rc(w, AA, mm=True), '**yes**' if excludes_one(e) else 'no',
                     f'{100 * e["sd_log"]:.1f}%' if e.get('sd_log') is not None else 'n/a', e['n']] for w, e in rows])
        self.w('The kernel default run twice in each round: its two runs differ only by chance and by their place '
               'in the round, so this interval should contain 1.00. Where it does not, the rounds carry a bias '
               'larger than the intervals admit (the order of the runs, a drift of the machine, other work), and '
               'the run is unreliable for that workload.')
        self.w()

    def targets(self):
        self.w('## Targets (issue 6; 12, 13, 14 as numbered)')
        self.w()
        rows = self.target_rows()
        if rows:
            self.table(['target', 'verdict', 'measured: median [95% interval] (min..max)', 'A/A of the workload',
                        'by how much'], rows)
        self.w('Ratios are paired: each configuration\'s figure divided by the kernel default\'s of the same '
               'round, shown as the median of the rounds and the 95% interval of the ratio '
               '(`steerd-ratio-ci`: a Student t interval on the log ratios of the rounds, see docs/BENCHMARKS.md '
               '"How to read an interval"). A target is **met** when the whole interval lies within its limit, '
               '**missed** when the whole interval lies beyond it, and can\'t tell otherwise: more rounds are '
               'needed. Figures measured once per round rather than as ratios (steerd\'s CPU share, reaction '
               'times) are judged by the interval of their geometric mean over the rounds. '
               'A time or latency ratio below 1 is better; a throughput ratio above 1 is better. '
               'The reaction time runs from the start of the workload, so it includes the time the '
               'smoothed signals (half-life 200 ms) need to cross the thresholds, not only steerd\'s '
               'response once they have.')
        self.w()

    def per_workload(self, plots):
        self.w('## Each workload, each configuration')
        self.w()
        if 'ratios' in plots:
            self.w('![ratio to kernel default per workload](ratios.png)')
            self.w()
        if 'counts' in plots:
            self.w('![cpu-migrations and context switches, ratio to kernel default](migrations.png)')
            self.w()
        for w in self.workloads:
            self.w(f'### {w}: {NAMES.get(w, w)}')
            self.w()
            self.w(self.meta.get('what_' + w, '') + f'. {FIGURE.get(w, "figure")} in {self.unit(w)}, '
                   f'{self.better(w)} is better.')
            self.w()
            rows = []
            for c in self.configs:
                if c not in self.data[w]:
                    continue
                prim = med(self.values(w, c, 'primary'))
                e = self.est(w, c) if c != 'default' else None
                mig = med(self.values(w, c, 'migrations'))
                mr = med(self.ratios(w, c, 'migrations')) if c != 'default' else 1
                cs = med(self.values(w, c, 'ctxsw'))
                cr = med(self.ratios(w, c, 'ctxsw')) if c != 'default' else 1
                sc = med(self.values(w, c, 'steerd_cpu_pct'))
                acts = '-'
                if c in self.steerd_cfgs:
                    a = {k: med(self.values(w, c, 'act_' + k)) for k in ['window', 'sticky', 'balance', 'restore', 'guard']}
                    acts = ' / '.join(fmt(a[k], 0) if a[k] is not None else '0' for k in a)
                rea = med(self.values(w, c, 'reaction_ms'))
                rows.append([c, fmt(prim), self.rc(w, c, mm=True) if c != 'default' else '1',
                             e['verdict'] if e else '-', f'{fmt(mig)} ({fmt(mr)})',
                             f'{fmt(cs)} ({fmt(cr)})', fmt(sc) if sc is not None else '-', acts,
                             fmt(rea, 0) if rea is not None else '-'])
            self.table(['config', f'median {FIGURE.get(w, "")} ({self.unit(w)})',
                        'ratio: median [95% interval] (min..max)', 'verdict (2% margin)',
                        'migrations (ratio)', 'context switches (ratio)', 'steerd CPU %',
                        'actions: window / sticky / balance / restore / guard revert', 'first action (ms)'],
                       rows)
            if w == 'cyc':
                rows = []
                for c in self.configs:
                    if c not in self.data[w]:
                        continue
                    rows.append([c] + [fmt(med(self.values(w, c, k))) for k in ['lat_p50_us', 'lat_p99_us', 'lat_max_us']]
                                + [self.rc(w, c, k) if c != 'default' else '1'
                                   for k in ['lat_p50_us', 'lat_max_us']]
                                + [fmt(med(self.values(w, c, 'noise_bogo_ops_s'))),
                                   self.rc(w, c, 'noise_bogo_ops_s') if c != 'default' else '1',
                                   self.rc(w, c, 'noise_bogo_ops_cpu_s') if c != 'default' else '1',
                                   fmt(med(self.values(w, c, 'foreign_cpu_pct')))])
                self.table(['config', 'p50 (us)', 'p99 (us)', 'max (us)', 'p50 ratio', 'max ratio',
                            'noise bogo ops/s (not opted in)', 'noise ratio', 'noise ops per CPU s, ratio',
                            'foreign load %'], rows)
                self.w('The noise (stress-ng, never opted in) is measured two ways: bogo ops per second of wall '
                       'time (its throughput: falls when it gets less CPU, e.g. because other work on the machine '
                       'or steerd itself took some) and per CPU second it got (its efficiency).')
                self.w()
            if w == 'phases' and 'static-best' in self.data[w]:
                for c in [x for x in self.steerd_cfgs if x in self.data[w]]:
                    self.w(f'{c} / static-best, paired: {self.rc(w, c, base="static-best", mm=True)}.')
                self.w()
                ph = sorted({k for c in self.data[w] for r in self.data[w][c].values() for k in r
                             if k.startswith('phase') and k.endswith('_s')}, key=lambda k: int(k[5:-2]))
                if ph:
                    cfgs = [c for c in self.configs if c in self.data[w]]
                    self.table(['phase'] + cfgs,
                               [[k[5:-2]] + [fmt(med(self.values(w, c, k))) for c in cfgs] for k in ph])
            if w == 'hb4cg' and 'static' in self.data[w] and 'latency' in self.data[w]:
                self.w(f'latency / static, paired: {self.rc(w, "latency", base="static", mm=True)}.')
                self.w()

    def behaviour(self):
        """What steerd did, and what looked wrong: guard reverts, actions that hurt."""
        self.w('## What steerd did')
        self.w()
        notes = []
        for w in self.workloads:
            for c in [x for x in self.steerd_cfgs if x != 'observe' and not x.startswith('observe')]:
                if c not in self.data[w]:
                    continue
                g = sum(x or 0 for x in self.values(w, c, 'act_guard'))
                a = sum((x or 0) for k in ['window', 'sticky', 'balance'] for x in self.values(w, c, 'act_' + k))
                rs = sum(x or 0 for x in self.values(w, c, 'act_restore'))
                runs = len(self.values(w, c, 'primary'))
                r = med(self.ratios(w, c))
                e = self.est(w, c)
                if a == 0:
                    notes.append(f'- {w}, {c}: no action in {runs} runs (ratio {self.rc(w, c)}).')
                    continue
                s = (f'- {w}, {c}: {a:.0f} actions in {runs} runs, {g:.0f} reverted by the guard, '
                     f'{rs:.0f} other restores; ratio {self.rc(w, c)} ({pct_change(r, self.better(w))} in the median)')
                if e.get('verdict') == 'worse':
                    s += ' **: the actions hurt** (the interval lies beyond 2% worse)'
                if g:
                    s += f'; the guard reverted {100 * g / a:.0f}% of them'
                notes.append(s + '.')
        fails = []
        for w in self.workloads:
            for c in self.steerd_cfgs:
                for k, bad in [('restored_ok', 0), ('steerd_rc', None)]:
                    for v in self.values(w, c, k):
                        if v is None:
                            continue
                        if (k == 'restored_ok' and v == 0) or (k == 'steerd_rc' and v != 0):
                            fails.append(f'{w}/{c}: {k}={v:g}')
        self.w('\n'.join(notes))
        self.w()
        ex = self.guard_examples()
        if ex:
            self.w('What the guard said when it reverted (first revert of each workload and mode, from the logs):')
            self.w()
            for w, c, line in ex:
                self.w(f'- {w}, {c}: `{line}`')
            self.w()
        self.w('Give-back at SIGTERM: ' + ('every cgroup had its CPUs back and steerd exited 0 in every run.'
                                          if not fails else 'PROBLEMS: ' + ', '.join(fails)))
        self.w()
        warn = sum(sum(x or 0 for x in self.values(w, c, 'log_warnings')) for w in self.workloads for c in self.steerd_cfgs)
        lg = sum(sum(x or 0 for x in self.values(w, c, 'log_let_go')) for w in self.workloads for c in self.steerd_cfgs)
        self.w(f'Log lines with a warning or failure while running: {warn:.0f}; let-go events: {lg:.0f} '
               '(the logs are in logs/, not committed).')
        self.w()

    def guard_examples(self):
        out = []
        logs = os.path.join(self.out, 'logs')
        if not os.path.isdir(logs):
            return out
        for w in self.workloads:
            for c in [x for x in self.steerd_cfgs if x != 'observe' and not x.startswith('observe')]:
                for rep in sorted(self.data[w].get(c, {})):
                    p = os.path.join(logs, f'r{rep}-{w}-{c}', 'steerd.log')
                    try:
                        lines = open(p, errors='replace').read().splitlines()
                    except OSError:
                        continue
                    hit = next((l.split(' ', 1)[1] for l in lines if 'guard restore' in l), None)
                    if hit:
                        out.append((w, c, hit[:400]))
                        break
        return out

    def costs(self, plots):
        cg, pl, rp, gen, real = (self.cost.get(k, {}) for k in ['callgrind', 'plain', 'replay', 'gen', 'real'])
        if not (cg or real):
            return
        self.w('## What steerd costs')
        self.w()
        self.w('Per daemon tick, on generated fixture roots (`tests/gen-fixture-root.py --schedstat`: a fake '
               '/proc and cpuset tree whose cgroup /bench1 holds the threads) with synthetic topologies of '
               '16-CPU LLCs, mode latency. **Instructions**: `valgrind --tool=callgrind --dump-after=on_tick` on '
               '`steerd --foreground --root`, median over the steady ticks; the fixture\'s counters do not move, '
               'so the engine finds nothing to do there. **Policy, busy**: `policy_decide` alone on a stream '
               'where half the LLCs are overloaded and every policy acts (`cost-stream.py`, `steerd --replay`). '
               '**Wall / CPU**: the same daemon without valgrind, on_tick timed with uprobes (`perf probe`), '
               'median tick; CPU = the daemon\'s CPU time over the window / ticks. Fixture reads hit the page cache '
               'of an ordinary file system, which is cheaper than /proc, where the kernel formats every file.')
        self.w()
        if 'cost' in plots:
            self.w('![cost per tick against CPUs and threads](cost.png)')
            self.w()
        keys = sorted(set(cg) | set(pl))
        rows = []
        for k in keys:
            c, p, r, g = cg.get(k, {}), pl.get(k, {}), rp.get(k, {}), gen.get(k, {})
            worst = c.get('ir_tick_max')
            if c.get('ir_tick_unfinished'):
                worst = f'> {fmt(c["ir_tick_unfinished"])} (unfinished after {fmt(c.get("timeout_s"), 0)} s)'
            rows.append([f'{k[0]:,}', f'{k[1]:,}', g.get('topology', ''), fmt(c.get('ir_tick')), fmt(worst),
                         fmt(c.get('ir_sampler_sample')), fmt(c.get('ir_policy_decide')),
                         fmt(r.get('ir_policy_decide_busy')), fmt(c.get('ir_snprintf')),
                         fmt(p.get('wall_us_tick')), fmt(p.get('wall_us_tick_max')), fmt(p.get('cpu_us_tick')),
                         f'{fmt(g.get("gen_seconds"))} s, {fmt(g.get("gen_mb"))} MB' if g.get('gen_seconds') is not None else ''])
        self.table(['CPUs', 'threads', 'topology', 'Ir / tick (median)', 'Ir, worst tick', 'sampler', 'policy (idle)',
                    'policy (busy)', 'of which snprintf', 'wall us / tick (median)', 'wall us, worst tick',
                    'CPU us / tick', 'fixture: generated in, size'], rows)
        spikes = [(k, v) for k, v in cg.items() if v.get('ir_tick') and v.get('ir_tick_max')
                  and v['ir_tick_max'] > 5 * v['ir_tick']]
        wspikes = [(k, v) for k, v in pl.items() if v.get('wall_us_tick') and v.get('wall_us_tick_max')
                   and v['wall_us_tick_max'] > 5 * v['wall_us_tick']]
        if spikes or wspikes:
            self.w('**Worst ticks** (one tick far above the median):')
            self.w()
            for k, v in sorted(spikes):
                fns = sorted(((int(m.split('_', 2)[1][2:]), m.split('_', 2)[2], x) for m, x in v.items()
                              if m.startswith('worst_fn')), key=lambda f: f[0])
                chain = ' > '.join(f'`{name}` {100 * x / v["ir_tick_max"]:.0f}%' for _, name, x in fns)
                self.w(f'- {k[0]:,} CPUs x {k[1]:,} threads: {fmt(v["ir_tick_max"])} Ir, '
                       f'{v["ir_tick_max"] / v["ir_tick"]:.0f}x the median tick'
                       + (f'; steerd\'s functions in it by inclusive cost: {chain}' if chain else ''))
            for k, v in sorted(wspikes):
                self.w(f'- plain run, {k[0]:,} CPUs x {k[1]:,} threads: worst tick {fmt(v["wall_us_tick_max"] / 1e6)} s '
                       f'wall, {v["wall_us_tick_max"] / v["wall_us_tick"]:.0f}x the median tick')
            self.w()
            ex = sorted((k[1], v['ir_tick_max'] - v['ir_tick']) for k, v in cg.items()
                        if k[0] == 1024 and v.get('ir_tick_max') and v.get('ir_tick') and v['ir_tick_max'] > 2 * v['ir_tick'])
            grow = ''
            if len(ex) >= 2 and ex[0][1] > 0:
                e = math.log(ex[-1][1] / ex[0][1]) / math.log(ex[-1][0] / ex[0][0])
                grow = (f' The excess of the worst tick over the median grows from {fmt(ex[0][1])} Ir at {ex[0][0]:,} '
                        f'threads to {fmt(ex[-1][1])} Ir at {ex[-1][0]:,} threads: exponent {e:.2f} (2 = quadratic).')
            self.w('On a fixture every thread is quiet, so after `StickyTicks` ticks stickiness pins every thread '
                   'in one tick.' + grow)
            self.w()
        # growth: per CPU and per thread
        sweep_c = sorted((k, v) for k, v in cg.items() if k[1] == self.threads_at() and v.get('ir_tick'))
        sweep_t = sorted((k, v) for k, v in cg.items() if k[0] == 1024 and v.get('ir_tick'))
        growth = []
        if len(sweep_c) >= 2:
            s, _ = slope([k[0] for k, _ in sweep_c], [v['ir_tick'] for _, v in sweep_c])
            sp, _ = slope([k[0] for k, _ in sweep_c], [rp.get(k, {}).get('ir_policy_decide_busy') for k, _ in sweep_c])
            wl = [(k[0], pl.get(k, {}).get('wall_us_tick')) for k, _ in sweep_c if pl.get(k, {}).get('wall_us_tick')]
            ws = slope([a for a, _ in wl], [b for _, b in wl])[0] if len(wl) >= 2 else None
            growth.append(f'- Against CPUs (at {self.threads_at():,} threads): **{fmt(s)} instructions per CPU** per tick '
                          f'(least squares over {sweep_c[0][0][0]}..{sweep_c[-1][0][0]} CPUs), '
                          f'{fmt(ws)} us wall per CPU; the busy policy adds {fmt(sp)} instructions per CPU.')
        if len(sweep_t) >= 2:
            s, _ = slope([k[1] for k, _ in sweep_t], [v['ir_tick'] for _, v in sweep_t])
            sp, _ = slope([k[1] for k, _ in sweep_t], [rp.get(k, {}).get('ir_policy_decide_busy') for k, _ in sweep_t])
            wl = [(k[1], pl.get(k, {}).get('wall_us_tick')) for k, _ in sweep_t if pl.get(k, {}).get('wall_us_tick')]
            ws = slope([a for a, _ in wl], [b for _, b in wl])[0] if len(wl) >= 2 else None
            growth.append(f'- Against opted-in threads (at 1,024 CPUs): **{fmt(s)} instructions per thread** per tick '
                          f'({sweep_t[0][0][1]:,}..{sweep_t[-1][0][1]:,} threads), {fmt(ws)} us wall per thread; '
                          f'the busy policy adds {fmt(sp)} instructions per thread.')
            ratio = [(k[1], v['ir_tick']) for k, v in sweep_t]
            if len(ratio) >= 2:
                (t0, i0), (t1, i1) = ratio[0], ratio[-1]
                e = math.log(i1 / i0) / math.log(t1 / t0) if i0 and t0 != t1 else None
                growth.append(f'- Growth exponent from {t0:,} to {t1:,} threads: {fmt(e)} (1 = linear).')
        if growth:
            self.w('Growth:')
            self.w()
            self.w('\n'.join(growth))
            self.w()
        big = pl.get((1024, 10000))
        if big:
            self.w(f'Largest case, 1,024 CPUs x 10,000 threads, plain: median tick {fmt(big.get("wall_us_tick"))} us wall '
                   f'(min {fmt(big.get("wall_us_tick_min"))}, p90 {fmt(big.get("wall_us_tick_p90"))}, over '
                   f'{fmt(big.get("plain_ticks"), 0)} ticks), {fmt(big.get("cpu_us_tick"))} us CPU per tick; at a 100 ms '
                   f'period that is {fmt(big.get("cpu_us_tick", 0) / 1000)}% of one CPU.')
            self.w()
        if real:
            rows = []
            extra = [(f'{t:,} (10 busy)' if k == 'realbusy' else 'nothing opted in', v)
                     for k in ('realbusy', 'realnone') for (n, t), v in sorted(self.cost.get(k, {}).items())]
            for what, v in [(f'{t:,}', v) for (n, t), v in sorted(real.items())] + extra:
                rounds = len(v['cpu_pct']) if isinstance(v.get('cpu_pct'), list) else 1
                rows.append([what, spread(v.get('cpu_pct')), spread(v.get('cpu_us_tick')), spread(v.get('wall_us_tick')),
                             fmt(one(v.get('wall_us_tick_p90'))), fmt(one(v.get('wall_us_tick_max'))),
                             fmt(one(v.get('plain_ticks')), 0), fmt(one(v.get('window_s'))), rounds])
            self.w(f'Real run on this host: N sleeping threads (`sleepers.c`, each wakes once a second; "10 busy": '
                   f'10 of them spin) in an opted-in cgroup, or nothing opted in at all, steerd mode latency, '
                   f'SamplePeriodMs={self.meta.get("period_ms", "100")}; CPU share = the '
                   'daemon\'s CPU time (all threads, /proc/PID/task/*/schedstat) / wall time over the window.')
            self.w()
            self.table(['opted-in threads', 'steerd CPU % of one CPU', 'CPU us / tick', 'median tick, wall (us)',
                        'p90 tick (us)', 'max tick (us)', 'ticks', 'window (s)', 'rounds'], rows)
            self.w('Ranges are min / **median** / max over the rounds (the thread counts alternate); p90, max, ticks '
                   'and window are medians. The wall time of a tick includes the time steerd waits for a CPU behind '
                   'other work on this busy 2-CPU machine.')
            self.w()
            pts = [(t, one(v.get('cpu_us_tick'))) for (n, t), v in sorted(real.items()) if one(v.get('cpu_us_tick')) is not None]
            if len(pts) >= 2:
                s, b = slope([a for a, _ in pts], [c for _, c in pts])
                self.w(f'Real /proc: {fmt(s)} us of CPU per opted-in thread per tick, {fmt(b)} us fixed (least squares).')
                self.w()
        mt = self.cost.get('meta', {}).get((0, 0), {})
        if mt.get('fixtures_seconds') is not None:
            self.w(f'The fixture measurements took {dur(mt["fixtures_seconds"])} including generating the fixtures.')
            self.w()

    def threads_at(self):
        cg = self.cost.get('callgrind', {})
        ts = [t for (n, t) in cg if n != 1024]
        return statistics.mode(ts) if ts else 1000

    def noise(self):
        self.w('## Noise')
        self.w()
        f = [x for w in self.workloads for c in self.configs for x in self.values(w, c, 'foreign_cpu_pct') if x is not None]
        st = [x for w in self.workloads for c in self.configs for x in self.values(w, c, 'steal_pct') if x is not None]
        if f:
            hi = sum(1 for x in f if x > 10)
            self.w(f'Other work on the machine during the runs (CPU time outside this benchmark\'s cpuacct cgroup, '
                   f'as % of all CPUs): median {fmt(med(f))}%, max {fmt(max(f))}%; {hi} of {len(f)} runs above 10%. '
                   f'Steal time (the hypervisor): median {fmt(med(st))}%, max {fmt(max(st) if st else None)}%.')
            self.w()
            rows = []
            for w in self.workloads:
                rows.append([w] + [fmt(med(self.values(w, c, 'foreign_cpu_pct'))) for c in self.configs])
            self.table(['workload'] + [f'{c}: median foreign %' for c in self.configs], rows)
        obs = [w for w in self.workloads if 'observe' in self.data[w] and self.ratios(w, 'observe')]
        if obs:
            self.w('steerd observe changes no mask, so it differs from the default by the noise plus what steerd\'s '
                   'own sampling costs the workload: '
                   + '; '.join(f'{w} {self.rc(w, "observe")}' for w in obs) + '. Where its interval lies above 1.00 '
                   '(below, for throughput) while the A/A interval of the same workload contains 1.00, it is '
                   'steerd\'s presence, not noise.')
            self.w()

    def method(self):
        self.w('## Method')
        self.w()
        self.w('- Configurations: **default** = steerd not running; **observe**, **latency**, **balanced** = '
               '`steerd --foreground --config` with that `Mode=` and the workload\'s cgroups in `[OptIn]` as '
               '`latency` (started before the workload, stopped with SIGTERM after it); **static** = per-group '
               'pinning by hand, no steerd: the workload\'s groups spread evenly over the CPUs (hackbench 4 cgroups: '
               'two cgroups per CPU via cpuset.cpus; hackbench -g 4: the threads of groups 1-2 on CPU 0 and 3-4 on '
               'CPU 1 with sched_setaffinity right after start; messaging, pipe and ring: their one group on one CPU; '
               'cyclictest: thread i on CPU i (`-a`); tbench: one server+client pair per CPU). '
               '**MODE-nocoloc** = that mode with issue 14\'s co-location off (`Consolidate=no`, '
               '`WakeGroups=no`, `StickyPairWakeups=0`), where the run has it.')
        self.w(f'- **{AA}** = the kernel default a second time in the same round (the A/A pair): its ratio to '
               '`default` should be 1.00 and measures the noise of the method itself. The configurations of a '
               'round run in an order shuffled per round and workload (`--seed`), so no configuration always '
               'follows the same one.')
        self.w('- Intervals: `steerd-ratio-ci` on the pairs (configuration, default) of the rounds: the mean of '
               'the log ratios with a Student t interval (95%), mapped back; the point shown is the median of '
               'the paired ratios (the interval is centred on their geometric mean). Verdicts: better = the '
               'interval lies below 1.00 (above, for throughput); worse = beyond 2% worse; same = within 2% '
               'either way; can\'t tell otherwise.')
        self.w('- Every workload runs in cpuset v1 cgroups created for the run (all CPUs unless static) and removed '
               'after it; the cyclictest noise runs in a cgroup that is never opted in.')
        self.w('- cpu-migrations and context-switches: `perf stat -a` (system wide, so they include other work on '
               'the machine) over the workload. steerd CPU %: its CPU time during the workload / wall time.')
        self.w('- After each steerd run the cgroups\' cpuset.cpus are compared with what they were before steerd '
               'started (the give-back check).')
        self.w('- Plots: gnuplot, from the same figures (`*.dat`, `*.gp` next to the PNGs are regenerated by '
               '`analyze.py`).')
        self.w()

    # -- CSV and plots --
    def write_summary_csv(self):
        with open(os.path.join(self.out, 'summary.csv'), 'w', newline='') as f:
            wr = csv.writer(f)
            wr.writerow(['workload', 'config', 'metric', 'median', 'ratio_min', 'ratio_median', 'ratio_max', 'runs',
                         'ratio_geomean', 'ci_low', 'ci_high', 'verdict'])
            for w in self.workloads:
                for c in self.configs:
                    if c not in self.data[w]:
                        continue
                    metrics = sorted({k for r in self.data[w][c].values() for k in r})
                    for k in metrics:
                        v = self.values(w, c, k)
                        t = mmm(self.ratios(w, c, k)) if c != 'default' else (None, None, None)
                        e = self.est(w, c, k) if c != 'default' and self.pairs(w, c, k) else {}
                        wr.writerow([w, c, k, med(v)] + [None if x is None else round(x, 4) for x in t]
                                    + [len([x for x in v if x is not None])]
                                    + [None if e.get(x) is None else round(e[x], 4) for x in ('ratio', 'ci_low', 'ci_high')]
                                    + [e.get('verdict')])

    def plots(self):
        done = set()
        out = self.out
        cfgs = [c for c in self.configs if c != 'default']
        ws = [w for w in self.workloads if any(self.ratios(w, c) for c in cfgs)]
        if ws:
            gp = ['set terminal pngcairo size 1500,900 font "sans,10" noenhanced', 'set output "ratios.png"',
                  f'set multiplot layout {2 if len(ws) > 3 else 1},{min(3, len(ws))} '
                  'title "steerd benchmarks: figure / kernel default, paired per round (bar from 1 to the median; whiskers: 95% interval; red: 2% worse)"',
                  'set style fill solid 0.5 border -1', 'set boxwidth 0.6', 'set grid ytics', 'set xrange [-0.6:%g]' % (len(cfgs) - 0.4),
                  'unset key']
            for w in ws:
                fn = f'ratio-{w}.dat'
                with open(os.path.join(out, fn), 'w') as f:
                    f.write('# config ci_low median ci_high min max\n')
                    for c in cfgs:
                        t = mmm(self.ratios(w, c))
                        e = self.est(w, c) if t[1] is not None else {}
                        lo, hi = e.get('ci_low'), e.get('ci_high')
                        if lo is None:      # one round: no interval, the bar alone
                            lo = hi = t[1]
                        row = [lo, t[1], hi, t[0], t[2]]
                        f.write(c + ' ' + ' '.join('NaN' if x is None else f'{x:.6g}' for x in row) + '\n')
                lim = 1 + HARM if self.better(w) == 'lower' else 1 - HARM
                vals = [x for c in cfgs for x in self.ratios(w, c)] + [1, lim]
                vals += [e[k] for c in cfgs if self.ratios(w, c) for e in [self.est(w, c)]
                         for k in ('ci_low', 'ci_high') if e.get(k) is not None]
                lo, hi = min(vals), max(vals)
                pad = (hi - lo) * 0.15 + 0.02
                gp += [f'set title "{NAMES.get(w, w)}\\n{FIGURE.get(w, "")} ratio, {self.better(w)} is better"',
                       f'set yrange [{max(0, lo - pad)}:{hi + pad}]',
                       'set ylabel "ratio to kernel default"',
                       f'plot "{fn}" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", '
                       f'"" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, '
                       f'1 with lines lc rgb "black" dt 1, {lim} with lines lc rgb "red" dt 2']
            gp.append('unset multiplot')
            if run_gnuplot(out, 'ratios.gp', gp):
                done.add('ratios')
        # migrations and context switches
        ws2 = [w for w in self.workloads if any(self.ratios(w, c, 'migrations') for c in cfgs)]
        if ws2:
            fn = 'counts.dat'
            with open(os.path.join(out, fn), 'w') as f:
                f.write('# workload ' + ' '.join(f'{c}_mig {c}_mig_lo {c}_mig_hi' for c in cfgs) + ' '
                        + ' '.join(f'{c}_cs {c}_cs_lo {c}_cs_hi' for c in cfgs) + '\n')
                for w in ws2:
                    row = [w]
                    for k in ['migrations', 'ctxsw']:
                        for c in cfgs:
                            t = mmm(self.ratios(w, c, k))
                            row += ['NaN' if x is None else f'{max(x, 1e-4):.5g}' for x in (t[1], t[0], t[2])]
                    f.write(' '.join(row) + '\n')
            n = len(cfgs)
            gp = ['set terminal pngcairo size 1500,600 font "sans,10" noenhanced', 'set output "migrations.png"',
                  'set multiplot layout 1,2 title "cpu-migrations and context switches (perf stat -a): ratio to kernel default, median with min..max"',
                  'set style data histogram', 'set style histogram errorbars gap 1 lw 1', 'set style fill solid 0.6 border -1',
                  'set logscale y', 'set grid ytics', 'set key top left', 'set xtics rotate by -20']
            for i, (k, title) in enumerate([('migrations', 'cpu-migrations'), ('ctxsw', 'context switches')]):
                base = 2 + i * 3 * n
                parts = []
                for j, c in enumerate(cfgs):
                    col = base + 3 * j
                    parts.append(f'"{fn}" using {col}:{col + 1}:{col + 2}' + (':xtic(1)' if j == 0 else '') + f' title "{c}"')
                gp += [f'set title "{title} ratio (log scale)"', 'set ylabel "ratio to kernel default"',
                       'plot ' + ', '.join(parts) + ', 1 with lines lc rgb "black" notitle']
            gp.append('unset multiplot')
            if run_gnuplot(out, 'migrations.gp', gp):
                done.add('counts')
        # cost
        cg, pl, rp = (self.cost.get(k, {}) for k in ['callgrind', 'plain', 'replay'])
        ta = self.threads_at()
        sc = sorted(k for k in cg if k[1] == ta)
        stt = sorted(k for k in set(cg) | set(pl) if k[0] == 1024)
        if len(sc) >= 2 or len(stt) >= 2:
            for name, keys, xi in [('cost-cpus.dat', sc, 0), ('cost-threads.dat', stt, 1)]:
                with open(os.path.join(out, name), 'w') as f:
                    f.write('# x ir_tick ir_sampler ir_policy_idle ir_policy_busy wall_us cpu_us\n')
                    for k in keys:
                        c, p, r = cg.get(k, {}), pl.get(k, {}), rp.get(k, {})
                        vals = [c.get('ir_tick'), c.get('ir_sampler_sample'), c.get('ir_policy_decide'),
                                r.get('ir_policy_decide_busy'), p.get('wall_us_tick'), p.get('cpu_us_tick')]
                        f.write(f'{k[xi]} ' + ' '.join('NaN' if v is None or v <= 0 else f'{v:g}' for v in vals) + '\n')
            gp = ['set terminal pngcairo size 1500,1000 font "sans,10" noenhanced', 'set output "cost.png"',
                  'set multiplot layout 2,2 title "steerd: cost per tick (fixture roots, 16-CPU LLCs, mode latency)"',
                  'set logscale xy', 'set grid', 'set key top left', 'set format y "%.0s%c"']
            for name, xl, keys, xi in [('cost-cpus.dat', f'CPUs (at {ta:,} opted-in threads)', sc, 0),
                                       ('cost-threads.dat', 'opted-in threads (at 1,024 CPUs)', stt, 1)]:
                xs = [k[xi] for k in keys] or [1, 10]
                gp += [f'set xrange [{min(xs) / 1.5:g}:{max(xs) * 1.5:g}]']
                gp += [f'set xlabel "{xl}"', 'set ylabel "instructions per tick (callgrind)"',
                       'set title "instructions"',
                       f'plot "{name}" using 1:2 with linespoints pt 7 lw 2 title "whole tick (daemon)", '
                       '"" using 1:3 with linespoints pt 5 title "sampler", '
                       '"" using 1:4 with linespoints pt 9 title "policy, idle fixture", '
                       '"" using 1:5 with linespoints pt 11 title "policy, busy stream (replay)"']
                gp += ['set ylabel "microseconds per tick"', 'set title "time (plain run, uprobes on on_tick)"',
                       f'plot "{name}" using 1:6 with linespoints pt 7 lw 2 title "wall, median tick", '
                       '"" using 1:7 with linespoints pt 5 title "CPU time / ticks", '
                       '2000 with lines dt 2 lc rgb "red" title "target: 2 ms"']
            gp.append('unset multiplot')
            if run_gnuplot(out, 'cost.gp', gp):
                done.add('cost')
        return done


def run_gnuplot(out, name, lines):
    with open(os.path.join(out, name), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    try:
        r = subprocess.run(['gnuplot', name], cwd=out, capture_output=True, text=True)
    except FileNotFoundError:
        print('analyze: gnuplot not found; no plots', file=sys.stderr)
        return False
    if r.returncode != 0:
        print(f'analyze: gnuplot {name} failed:\n{r.stderr}', file=sys.stderr)
        return False
    return True


def slope(xs, ys):
    pts = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len(pts) < 2:
        return None, None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None, None
    s = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return s, my - s * mx


def dur(s):
    s = fnum(s)
    if s is None:
        return '?'
    s = int(s)
    return f'{s // 60} min {s % 60} s' if s >= 60 else f'{s} s'


def main():
    args = sys.argv[1:]
    tool_arg = None
    if len(args) >= 2 and args[0] == '--ratio-ci':
        tool_arg, args = args[1], args[2:]
    elif args and args[0].startswith('--ratio-ci='):
        tool_arg, args = args[0].split('=', 1)[1], args[1:]
    if len(args) != 1:
        print('usage: analyze.py [--ratio-ci PATH] OUTDIR', file=sys.stderr)
        sys.exit(2)
    out = args[0]
    tool, tried = find_ratio_ci(tool_arg)
    if tool is None:
        msg = ('steerd-ratio-ci not found (tried: ' + ', '.join(tried) + '). Every ratio and verdict of the report '
               'comes from it; build it with `cmake --build build-bench --target steerd-ratio-ci` (or build/), '
               'or name it with --ratio-ci PATH or STEERD_RATIO_CI=PATH, then rerun '
               f'`tests/bench/analyze.py {out}`.')
        with open(os.path.join(out, 'REPORT.md'), 'w') as f:
            f.write('# steerd benchmarks: no report\n\n**' + msg + '**\n\nThe raw figures are in raw.csv.\n')
        print('analyze: error: ' + msg, file=sys.stderr)
        sys.exit(1)
    Analysis(out, RatioCI(tool)).run()


if __name__ == '__main__':
    main()
