#!/usr/bin/env python3
"""Prefix every line of stdin with the wall clock (seconds, 3 decimals)."""
import sys
import time

for line in sys.stdin:
    sys.stdout.write(f'{time.time():.3f} {line}')
    sys.stdout.flush()
