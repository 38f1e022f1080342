#!/usr/bin/env python3
"""The layout rules of docs/ARCHITECTURE.md, checked on the source tree and
the built objects:

  1. no function in daemon/core longer than MAX_LINES lines;
  2. no cycle between the files of daemon/core: file A calls file B (an
     undefined symbol of A.o defined in B.o) and B calls A, directly or
     through others;
  3. the policy calls nothing that reaches the OS: the undefined symbols of
     the policy's objects are its own, base's, model's, or on an allowlist
     of pure libc/libm/hwloc-bitmap functions;
  4. a policy file that includes an I/O header does not compile (tried with
     the policy's own compile command from compile_commands.json).

usage: layout-check.py SOURCE_DIR BUILD_DIR [--max-lines N]
"""
import json, os, re, subprocess, sys, tempfile

def functions(path):
    """(name, first line, length) of each function definition: clang-format's
    shape, a line at column 0 that opens a body with '{' at its end."""
    lines = open(path).read().split('\n')
    i = 0
    while i < len(lines):
        m = re.match(r'^(static\s+)?(inline\s+)?[A-Za-z_][A-Za-z_0-9 \*]*?\b([A-Za-z_0-9]+)\(', lines[i])
        if m and not lines[i].rstrip().endswith(';') and not lines[i].startswith(('typedef', 'DEFINE_')):
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(('{', ';')):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith('{'):
                k = j + 1
                while k < len(lines) and not lines[k].startswith('}'):
                    k += 1
                yield m.group(3), i + 1, k - i + 1
                i = k
        i += 1

def nm(obj):
    out = subprocess.run(['nm', obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for l in out.splitlines():
        f = l.split()
        if len(f) == 3 and f[1] in 'TDBR':
            defined.add(f[2])
        elif len(f) == 2 and f[0] == 'U':
            undefined.add(f[1])
    return defined, undefined

# What a pure policy may call besides its own, base's and model's functions.
POLICY_ALLOWED = re.compile(r'^(hwloc_bitmap_\w+|mem(cpy|set|cmp|move)|str(cmp|ncmp|len|dup|ndup|chr|rchr|str|chrnul)|'
                            r'(c|m|re)alloc|reallocarray|free|qsort|bsearch|snprintf|vsnprintf|v?asprintf|__\w+|'
                            r'sqrt|exp2?|log2?|pow|fabs|floor|ceil|round|lround|fmin|fmax|abort|'
                            r'log_internal|log_debug_enabled|_GLOBAL_OFFSET_TABLE_)$')

def main():
    src, build = sys.argv[1], sys.argv[2]
    max_lines = int(sys.argv[sys.argv.index('--max-lines') + 1]) if '--max-lines' in sys.argv else 80
    core = os.path.join(src, 'daemon', 'core')
    bad = 0

    for d, _, files in os.walk(core):
        for f in sorted(files):
            if f.endswith('.c'):
                for name, line, n in functions(os.path.join(d, f)):
                    if n > max_lines:
                        print(f'FAIL: {os.path.relpath(os.path.join(d, f), src)}:{line}: {name}() is {n} lines (at most {max_lines})')
                        bad += 1

    objs = {}
    for d, _, files in os.walk(build):
        if '/CMakeFiles/steerd-' not in d + '/':
            continue
        for f in files:
            m = re.search(r'CMakeFiles/steerd-(\w+)\.dir/(daemon/core/.*)', d + '/')
            # Objects of files that are gone (an older layout in a reused build dir) do not count.
            if f.endswith('.c.o') and m and os.path.exists(os.path.join(src, m.group(2), f[:-2])):
                objs[f[:-4]] = (m.group(1), os.path.join(d, f))
    if len(objs) < 20:
        print(f'FAIL: found only {len(objs)} core objects under {build}: build first')
        return 1
    syms = {name: nm(path) for name, (stage, path) in objs.items()}
    owner = {}
    for name, (defined, _) in syms.items():
        for s in defined:
            owner[s] = name
    calls = {name: {owner[s] for s in und if s in owner and owner[s] != name} for name, (_, und) in syms.items()}

    # Cycles: Tarjan's strongly connected components.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in calls[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(calls):
        if v not in index:
            visit(v)
    for c in comps:
        print('FAIL: files that call each other (a cycle): ' + ', '.join(c))
        bad += 1

    allowed_stages = {'policy', 'base', 'model'}
    for name, (stage, _) in objs.items():
        if stage != 'policy':
            continue
        for s in sorted(syms[name][1]):
            if s in owner:
                if objs[owner[s]][0] not in allowed_stages:
                    print(f'FAIL: policy file {name} calls {s} of {objs[owner[s]][0]}/{owner[s]}')
                    bad += 1
            elif not POLICY_ALLOWED.match(s):
                print(f'FAIL: policy file {name} calls {s}, which is not known to be pure')
                bad += 1

    cc = json.load(open(os.path.join(build, 'compile_commands.json')))
    pol = next((e for e in cc if '/daemon/core/policy/' in e['file']), None)
    if not pol:
        print('FAIL: no policy file in compile_commands.json')
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for header in ('rootdir.h', 'sampler.h', 'actuator.h', 'config.h', 'proc-stat.h'):
            t = os.path.join(tmp, 'probe.c')
            open(t, 'w').write(f'#include "{header}"\nint probe(void);\nint probe(void) {{ return 0; }}\n')
            cmd = pol['command'].replace(pol['file'], t)
            cmd = re.sub(r' -o \S+', ' -o ' + os.path.join(tmp, 'probe.o'), cmd)
            r = subprocess.run(cmd, shell=True, cwd=pol['directory'], capture_output=True, text=True)
            if r.returncode == 0:
                print(f'FAIL: a policy file that includes "{header}" compiles: the stage boundary is open')
                bad += 1
        t = os.path.join(tmp, 'probe.c')
        open(t, 'w').write('#include "policy-internal.h"\nint probe(void);\nint probe(void) { return 0; }\n')
        cmd = re.sub(r' -o \S+', ' -o ' + os.path.join(tmp, 'probe.o'), pol['command'].replace(pol['file'], t))
        r = subprocess.run(cmd, shell=True, cwd=pol['directory'], capture_output=True, text=True)
        if r.returncode != 0:
            print('FAIL: the probe does not compile even with a policy header: the check is broken\n' + r.stderr)
            bad += 1

    print(f'layout: {len(objs)} core objects, {sum(len(v) for v in calls.values())} file-to-file call edges, '
          f'{len(comps)} cycles, {bad} problems')
    return 1 if bad else 0

sys.exit(main())
