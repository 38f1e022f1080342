#!/usr/bin/env python3
"""Generate a fake root directory (ROOT/proc, ROOT/sys/fs/cgroup) of a big
machine for the sampler's tests and the cost benchmarks (steerd --root).

The counters are a pure function of (cpu or tid, tick), so a test writes tick
0, samples, writes tick 1 over it, samples again, and knows the exact figures
the sampler must report:

  CPU i:    util   = util_pct(i) % of its time busy      (USER_HZ ticks)
            wait   = wait_pct(i) % of the interval waiting (/proc/schedstat)
  thread t: util   = thread_util_pct(t) % of one CPU     (schedstat ns)
            wait   = thread_wait_pct(t) % of the interval
            last CPU = t % cpus

One tick is TICK_SECONDS of wall time. Keep the formulas in sync with
tests/test-sampler.c.
"""
import argparse
import os

USER_HZ = 100
TICK_SECONDS = 1
NSEC = 1_000_000_000


def util_pct(cpu):
    return (cpu * 7) % 100


def wait_pct(cpu):
    return (cpu * 3) % 50


def thread_util_pct(tid):
    return (tid * 13) % 90


def thread_wait_pct(tid):
    return (tid * 5) % 20


def write(root, path, text):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('root')
    ap.add_argument('--cpus', type=int, default=192)
    ap.add_argument('--offline', default='', help='comma-separated CPUs absent from /proc/stat')
    ap.add_argument('--threads', type=int, default=64, help='threads in the cgroup /bench1')
    ap.add_argument('--first-tid', type=int, default=1000)
    ap.add_argument('--tick', type=int, default=0)
    ap.add_argument('--masks', action='store_true',
                    help="each thread's own mask: 1 to 5 CPUs from its own, not every CPU")
    ap.add_argument('--schedstat', action='store_true', help='write /proc/schedstat (CONFIG_SCHEDSTATS)')
    ap.add_argument('--cpuacct', action='store_true',
                    help='cpuacct mounted with cpuset: /bench1 has cpuacct.usage (the sum of its threads)')
    ap.add_argument('--wakeups', type=int, default=1,
                    help='times each thread is scheduled in per second (schedstat pcount)')
    ap.add_argument('--procs', type=int, default=0,
                    help='the threads in this many processes (default: each thread its own)')
    args = ap.parse_args()

    offline = {int(c) for c in args.offline.split(',') if c}
    k = args.tick
    per_tick = USER_HZ * TICK_SECONDS

    lines = ['cpu  0 0 0 0 0 0 0 0 0 0']
    for cpu in range(args.cpus):
        if cpu in offline:
            continue
        busy = util_pct(cpu) * per_tick // 100
        # A base so that counters are not zero, split over user and system.
        user = 1000 + k * (busy - busy // 4)
        system = 500 + k * (busy // 4)
        idle = 5000 + k * (per_tick - busy)
        lines.append(f'cpu{cpu} {user} 0 {system} {idle} 0 0 0 0 0 0')
    lines += ['intr 0', 'ctxt 0', 'btime 0', 'processes 0', 'procs_running 1', 'procs_blocked 0']
    write(args.root, '/proc/stat', '\n'.join(lines) + '\n')

    if args.schedstat:
        ss = ['version 15', f'timestamp {4294900000 + k * 250}']
        for cpu in range(args.cpus):
            if cpu in offline:
                continue
            run = k * util_pct(cpu) * NSEC * TICK_SECONDS // 100
            wait = k * wait_pct(cpu) * NSEC * TICK_SECONDS // 100
            ss.append(f'cpu{cpu} 0 0 0 0 0 0 {run} {wait} 0')
        write(args.root, '/proc/schedstat', '\n'.join(ss) + '\n')

    write(args.root, '/proc/pressure/cpu',
          'some avg10=12.50 avg60=3.00 avg300=1.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n')
    write(args.root, '/proc/self/mounts',
          'cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset%s 0 0\n'
          % (',cpuacct' if args.cpuacct else ''))

    online = [c for c in range(args.cpus) if c not in offline]
    allowed = cpulist(online)
    tids = list(range(args.first_tid, args.first_tid + args.threads))
    # Processes: consecutive runs of threads, the first one the leader.
    nprocs = min(args.procs or len(tids), len(tids)) or 1
    per_proc = -(-len(tids) // nprocs) if tids else 1
    leaders = {}
    total_ns = 0
    for tid in tids:
        d = f'/proc/{tid}/task/{tid}'
        cpu = online[tid % len(online)]
        fields = ['S'] + ['0'] * 50
        fields[22 - 3] = str(10000 + tid)  # starttime
        fields[39 - 3] = str(cpu)           # processor
        write(args.root, f'{d}/stat', f'{tid} (worker {tid}) ' + ' '.join(fields) + '\n')
        exec_ns = 1_000_000 + k * thread_util_pct(tid) * NSEC * TICK_SECONDS // 100
        delay_ns = 2_000_000 + k * thread_wait_pct(tid) * NSEC * TICK_SECONDS // 100
        pcount = 1 + k * args.wakeups * TICK_SECONDS
        write(args.root, f'{d}/schedstat', f'{exec_ns} {delay_ns} {pcount}\n')
        total_ns += exec_ns
        leader = tids[((tid - args.first_tid) // per_proc) * per_proc]
        leaders[leader] = leaders.get(leader, 0) + exec_ns
        mask = allowed
        if args.masks:
            start = online.index(cpu)
            mask = cpulist(sorted(online[(start + j) % len(online)] for j in range(1 + tid % 5)))
        write(args.root, f'{d}/status', f'Name:\tworker\nTgid:\t{leader}\nPid:\t{tid}\n'
              f'Cpus_allowed_list:\t{mask}\nMems_allowed_list:\t0\n')
        write(args.root, f'{d}/sched', f'worker ({tid}, #threads: 1)\n' + '-' * 67 + '\n'
              f'se.nr_migrations                             :                  {k * (tid % 3)}\n'
              'nr_voluntary_switches                        :                    1\n'
              'nr_involuntary_switches                      :                    0\n')
        if leader != tid:
            # As /proc has it: a thread also under its process, /proc/TGID/task/TID.
            link_dir = os.path.join(args.root, f'proc/{leader}/task/{tid}')
            os.makedirs(link_dir, exist_ok=True)
            for name in ('stat', 'schedstat', 'status', 'sched'):
                dst = os.path.join(link_dir, name)
                if not os.path.exists(dst):
                    os.link(os.path.join(args.root, d.lstrip('/'), name), dst)

    cg = '/sys/fs/cgroup/cpuset'
    write(args.root, f'{cg}/cpuset.cpus', allowed + '\n')
    write(args.root, f'{cg}/cpuset.effective_cpus', allowed + '\n')
    write(args.root, f'{cg}/tasks', '1\n')
    write(args.root, f'{cg}/bench1/cpuset.cpus', allowed + '\n')
    write(args.root, f'{cg}/bench1/cpuset.effective_cpus', allowed + '\n')
    write(args.root, f'{cg}/bench1/tasks', ''.join(f'{t}\n' for t in tids))
    write(args.root, f'{cg}/bench1/cgroup.procs', ''.join(f'{t}\n' for t in sorted(leaders)))
    # A process's stat sums its threads' CPU time (utime + stime, clock ticks).
    for leader, ns in leaders.items():
        fields = ['S'] + ['0'] * 50
        ticks = ns * USER_HZ // NSEC
        fields[14 - 3] = str(ticks - ticks // 4)  # utime
        fields[15 - 3] = str(ticks // 4)          # stime
        fields[22 - 3] = str(10000 + leader)
        write(args.root, f'/proc/{leader}/stat', f'{leader} (worker {leader}) ' + ' '.join(fields) + '\n')
    if args.cpuacct:
        write(args.root, f'{cg}/bench1/cpuacct.usage', f'{total_ns}\n')


def cpulist(cpus):
    out, start, prev = [], None, None
    for c in sorted(cpus):
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f'{start}-{prev}' if start != prev else f'{start}')
            start = prev = c
    if start is not None:
        out.append(f'{start}-{prev}' if start != prev else f'{start}')
    return ','.join(out)


if __name__ == '__main__':
    main()
