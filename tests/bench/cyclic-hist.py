#!/usr/bin/env python3
"""Wakeup latency percentiles from a cyclictest --histfile (1 us bins, one
column per thread; overflows are counted at the recorded maximum).
Prints "lat_p50_us V", "lat_p99_us V", "lat_max_us V", "lat_samples N"."""
import sys

counts = {}
maxes = []
overflows = 0
for line in open(sys.argv[1]):
    if line.startswith('# Max Latencies:'):
        maxes = [int(x) for x in line.split(':', 1)[1].split()]
    elif line.startswith('# Histogram Overflows:'):
        overflows = sum(int(x) for x in line.split(':', 1)[1].split())
    elif line[:1].isdigit():
        f = line.split()
        n = sum(int(x) for x in f[1:])
        if n:
            counts[int(f[0])] = counts.get(int(f[0]), 0) + n
mx = max(maxes) if maxes else max(counts, default=0)
if overflows:
    counts[mx] = counts.get(mx, 0) + overflows
total = sum(counts.values())


def pct(p):
    need = p * total / 100.0
    acc = 0
    for us in sorted(counts):
        acc += counts[us]
        if acc >= need:
            return us
    return mx


if total:
    print(f'lat_p50_us {pct(50)}')
    print(f'primary {pct(99)}')
    print(f'lat_p99_us {pct(99)}')
    print(f'lat_max_us {mx}')
print(f'lat_samples {total}')
