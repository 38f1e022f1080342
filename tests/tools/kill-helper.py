#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers of the kill and fault tests (tests/t-kill.sh, tests/t-faults.sh).

  snapshot OUT CPUSET
      Every thread of the machine (/proc/*/task/*: tid, starttime, effective
      CPUs, cpuset cgroup, comm) and every cpuset's cpuset.cpus, as JSON.

  list CPULIST
      The CPUs of a list ("0-2,5" -> "0 1 2 5").

  state RUNTIME_DIR
      The records of RUNTIME_DIR/state.json, a line each ("cgroup NAME window
      W ...", "thread CGROUP TID original O last L ..."); exit 1 without one.

  check BASE CPUSET [--prefix P] [--all] [--expect /CG=CPUS ...]
      A fresh snapshot against BASE. --prefix: only the threads that were in
      the cgroup /P or below and those cpusets; --all: everything. Threads are
      compared by (tid, starttime); a thread or cpuset present only once is
      counted as exited / born. --expect: the cgroup's CPUs are now CPUS
      (an operator's change) and its threads' CPUs are their own mask within
      CPUS, as the kernel composes them. With --all, a difference in a
      cgroup that is neither the root nor /P... is another test's (other
      engineers run tests on this machine): listed, not failed.
      Prints one summary line; exit 1 on any mismatch of ours.

  victim --dir RUNTIME --log LOG --mode delay|create|rename|cgwrite [--n N]
         [--delay MS] [--timeout MS] [--watch FILE ...]
         [--operator DIR ... --operator-after MS] [--map FROM=TO]
         -- STEERD ARGS...
      Starts steerd and SIGKILLs it: after MS (delay), right after the Nth
      creation of a temporary .state.json.* (create: the kill lands while
      the state file is written), the Nth rename onto state.json (rename:
      the intent is recorded and the masks are being set), or the Nth write
      to one of the --watch files (cgwrite: a cgroup's cpuset.cpus was just
      written). The kill is sent by a SCHED_FIFO process woken by inotify,
      so that it lands within tens of microseconds of the event. With
      --operator, once one DIR's cpuset.cpus differs from what it was
      (steerd holds a window on it), the other CPUs are written there by
      hand, and the kill comes --operator-after MS later (or at --timeout
      when no DIR was windowed: operator=none). Prints what the kill left:
      a temporary file, the state file's records, and of its write-ahead
      intents how many had been applied and how many were still open
      (--map: the state file's cgroup dirs start with FROM where this
      process sees TO, for a steerd in a cgroup namespace).

  interrupt --pid PID [--signal TERM] --watch FILE ... [--timeout MS]
      Sends the signal to a running steerd and SIGKILLs it right after the
      first write to one of the FILEs (a cgroup's cpuset.cpus): its stop is
      cut in the middle of its give-back. Prints trigger=write|exited|timeout.
"""

import ctypes
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time

IN_MODIFY = 0x002
IN_MOVED_TO = 0x080
IN_CREATE = 0x100

libc = ctypes.CDLL("libc.so.6", use_errno=True)


def parse_list(text):
    s = set()
    text = text.strip()
    if not text:
        return s
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            s.update(range(int(a), int(b) + 1))
        else:
            s.add(int(part))
    return s


def fmt_list(s):
    out, run = [], None
    for c in sorted(s):
        if run and c == run[1] + 1:
            run[1] = c
        else:
            if run:
                out.append(run)
            run = [c, c]
    if run:
        out.append(run)
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in out)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def thread_info(pid, tid):
    base = "/proc/%s/task/%s" % (pid, tid)
    stat, status, cg = read(base + "/stat"), read(base + "/status"), read(base + "/cgroup")
    if stat is None or status is None:
        return None
    rest = stat[stat.rfind(")") + 2:].split()
    comm = stat[stat.find("(") + 1:stat.rfind(")")]
    starttime = int(rest[19])  # field 22
    cpus = None
    for line in status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            cpus = line.split(":", 1)[1].strip()
    cgroup = "?"
    for line in (cg or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "cpuset" in parts[1].split(","):
            cgroup = parts[2]
    return {"st": starttime, "cpus": cpus, "cg": cgroup, "comm": comm, "pid": int(pid)}


def snapshot(cpuset):
    threads = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir("/proc/%s/task" % pid)
        except OSError:
            continue
        for tid in tids:
            info = thread_info(pid, tid)
            if info and info["cpus"] is not None:
                threads[tid] = info
    cpusets = {}
    for d, dirs, files in os.walk(cpuset):
        if "cpuset.cpus" in files:
            v = read(os.path.join(d, "cpuset.cpus"))
            if v is not None:
                rel = "/" + os.path.relpath(d, cpuset) if d != cpuset else "/"
                cpusets[rel] = v.strip()
    return {"threads": threads, "cpusets": cpusets}


def compose(own, cg):
    """The kernel's effective mask of a thread whose own mask is own in a
    cpuset of cg: the intersection, or the cpuset when that is empty."""
    i = own & cg
    return i if i else set(cg)


def cmd_check(argv):
    base_path, cpuset = argv[0], argv[1]
    prefix, everything, expect = None, False, {}
    i = 2
    while i < len(argv):
        if argv[i] == "--prefix":
            prefix = argv[i + 1]
            i += 2
        elif argv[i] == "--all":
            everything = True
            i += 1
        elif argv[i] == "--expect":
            k, v = argv[i + 1].split("=", 1)
            expect[k] = v
            i += 2
        else:
            sys.exit("check: unknown argument " + argv[i])
    with open(base_path) as f:
        base = json.load(f)
    mine = (lambda cg: prefix is not None and (cg == "/" + prefix or cg.startswith("/" + prefix + "/")))
    if everything:
        now = snapshot(cpuset)
    else:
        # Only what is in scope: the test's threads and cpusets.
        now = {"threads": {}, "cpusets": {}}
        for tid, b in base["threads"].items():
            if mine(b["cg"]):
                info = thread_info(b["pid"], tid)
                if info:
                    now["threads"][tid] = info
        for cg in base["cpusets"]:
            v = read(cpuset + cg + "/cpuset.cpus") if mine(cg) else None
            if v is not None:
                now["cpusets"][cg] = v.strip()

    def in_scope(cg):
        return everything or mine(cg)

    compared = exited = foreign = 0
    bad, foreign_lines = [], []
    for tid, b in base["threads"].items():
        if not in_scope(b["cg"]):
            continue
        n = now["threads"].get(tid)
        if not n or n["st"] != b["st"]:
            exited += 1
            continue
        compared += 1
        want = b["cpus"]
        if b["cg"] in expect:
            want = fmt_list(compose(parse_list(b["cpus"]), parse_list(expect[b["cg"]])))
        if parse_list(n["cpus"]) == parse_list(want):
            continue
        line = "thread %s (%s, pid %d, cgroup %s%s): CPUs %s, was %s" % (
            tid, b["comm"], b["pid"], b["cg"], "" if n["cg"] == b["cg"] else " now " + n["cg"],
            n["cpus"], want)
        if everything and not mine(b["cg"]) and not mine(n["cg"]) and (b["cg"] != "/" or n["cg"] != "/"):
            foreign += 1
            foreign_lines.append(line)
        else:
            bad.append(line)
    cg_compared = 0
    for cg, v in base["cpusets"].items():
        if not in_scope(cg):
            continue
        if cg not in now["cpusets"]:
            continue
        cg_compared += 1
        want = expect.get(cg, v)
        if parse_list(now["cpusets"][cg]) == parse_list(want):
            continue
        line = "cpuset %s: cpuset.cpus %s, was %s" % (cg, now["cpusets"][cg], want)
        if everything and not mine(cg) and cg != "/":
            foreign += 1
            foreign_lines.append(line)
        else:
            bad.append(line)
    for line in foreign_lines:
        print("  another test's cgroup (not steerd's of this test, not failed): " + line)
    for line in bad:
        print("  MISMATCH " + line)
    print("threads compared %d (exited %d), cpusets compared %d, mismatches %d%s" % (
        compared, exited, cg_compared, len(bad),
        ", other tests' cgroups changed %d" % foreign if everything else ""))
    return 1 if bad else 0


class Inotify:
    def __init__(self):
        self.fd = libc.inotify_init1(os.O_CLOEXEC | os.O_NONBLOCK)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.wds = {}

    def add(self, path, mask):
        wd = libc.inotify_add_watch(self.fd, path.encode(), mask)
        if wd < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch " + path)
        self.wds[wd] = path

    def events(self, timeout):
        r, _, _ = select.select([self.fd], [], [], max(timeout, 0))
        if not r:
            return []
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        out, off = [], 0
        while off < len(data):
            wd, mask, _cookie, length = struct.unpack_from("iIII", data, off)
            name = data[off + 16:off + 16 + length].rstrip(b"\0").decode()
            out.append((self.wds.get(wd), mask, name))
            off += 16 + length
        return out


def state_summary(rundir, mapping=None):
    """What a killed steerd left: temporaries, records, intents applied/open."""
    temps = [f for f in os.listdir(rundir) if f.startswith(".state.json.")]
    path = os.path.join(rundir, "state.json")
    text = read(path)
    res = {"temp": len(temps), "state": 0, "threads": 0, "cgroups": 0, "applied": 0, "open": 0}
    if text is None:
        return res
    res["state"] = 1
    try:
        st = json.loads(text)
    except ValueError:
        res["state"] = "malformed"
        return res
    res["threads"], res["cgroups"] = len(st["threads"]), len(st["cgroups"])
    for t in st["threads"]:
        if not t.get("pending") or t["pending"] == t["last_set"]:
            continue
        try:
            cur = os.sched_getaffinity(t["tid"])
        except OSError:
            continue
        if cur == parse_list(t["pending"]):
            res["applied"] += 1
        else:
            res["open"] += 1
    for c in st["cgroups"]:
        if not c.get("pending") or c["pending"] == c.get("window"):
            continue
        d = c["dir"]
        if mapping and (d == mapping[0] or d.startswith(mapping[0] + "/")):
            d = mapping[1] + d[len(mapping[0]):]
        cur = read(os.path.join(d, "cpuset.cpus"))
        if cur is None:
            continue
        if parse_list(cur) == parse_list(c["pending"]):
            res["applied"] += 1
        else:
            res["open"] += 1
    return res


def cmd_victim(argv):
    opts = {"mode": "delay", "n": 1, "delay": 500.0, "timeout": 3000.0, "watch": [],
            "operator": [], "operator_after": 0.0, "map": None}
    i = 0
    while argv[i] != "--":
        k = argv[i][2:].replace("-", "_")
        if k in ("watch", "operator"):
            opts[k].append(argv[i + 1])
        elif k in ("n",):
            opts[k] = int(argv[i + 1])
        elif k in ("delay", "timeout", "operator_after"):
            opts[k] = float(argv[i + 1])
        else:
            opts[k] = argv[i + 1]
        i += 2
    cmd = argv[i + 1:]
    rundir, mode = opts["dir"], opts["mode"]

    ino = Inotify()
    if mode in ("create", "rename"):
        ino.add(rundir, IN_CREATE | IN_MOVED_TO)
    elif mode == "cgwrite":
        for w in opts["watch"]:
            ino.add(w, IN_MODIFY)
    log = open(opts["log"], "ab")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except OSError:
        pass
    seen, trigger, op_done = 0, "timeout", None
    deadline = t0 + (opts["delay"] if mode == "delay" else opts["timeout"]) / 1000.0
    ops = opts["operator"]
    op_orig = {d: read(os.path.join(d, "cpuset.cpus")).strip() for d in ops}
    op, op_value = None, None
    while True:
        now = time.monotonic()
        if ops and op_value is None:
            for d in ops:
                cur = read(os.path.join(d, "cpuset.cpus")).strip()
                if cur == op_orig[d]:
                    continue
                allcpus = parse_list(read(os.path.join(os.path.dirname(d), "cpuset.effective_cpus")))
                op, op_value = d, fmt_list(allcpus - parse_list(cur)) or op_orig[d]
                with open(os.path.join(d, "cpuset.cpus"), "w") as f:
                    f.write(op_value)
                op_done = now
                deadline = now + opts["operator_after"] / 1000.0
                mode = "delay"
                break
            if op_value is None:
                if now - t0 > opts["timeout"] / 1000.0:
                    break
                time.sleep(0.005)
                continue
        if now >= deadline:
            if mode == "delay":
                trigger = "delay"
            break
        if p.poll() is not None:
            trigger = "exited"
            break
        if mode == "delay":
            time.sleep(min(deadline - now, 0.05))
            continue
        hit = False
        for path, mask, name in ino.events(min(deadline - now, 0.05)):
            if mode == "create" and mask & IN_CREATE and name.startswith(".state.json."):
                seen += 1
            elif mode == "rename" and mask & IN_MOVED_TO and name == "state.json":
                seen += 1
            elif mode == "cgwrite" and mask & IN_MODIFY:
                seen += 1
            if seen >= opts["n"]:
                hit = True
                break
        if hit:
            trigger = mode
            break
    if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
    elapsed = (time.monotonic() - t0) * 1000
    rc = p.wait()
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    res = state_summary(rundir, opts["map"].split("=", 1) if opts["map"] else None)
    fields = ["trigger=%s" % trigger, "events=%d" % seen, "ms=%.0f" % elapsed, "rc=%d" % rc]
    fields += ["%s=%s" % (k, v) for k, v in res.items()]
    if ops:
        fields.append("operator=%s" % (op_value if op_value is not None else "none"))
        fields.append("operator_cgroup=%s" % (os.path.basename(op) if op else "none"))
        if op_done is not None:
            fields.append("operator_ms=%.0f" % ((time.monotonic() - op_done) * 1000))
    print(" ".join(fields))
    return 0


def cmd_interrupt(argv):
    """Signal a running steerd (not our child) and SIGKILL it right after
    the first write to one of the watched files: a stop's give-back cut."""
    pid, sig, watch, timeout = None, signal.SIGTERM, [], 3000.0
    i = 0
    while i < len(argv):
        if argv[i] == "--pid":
            pid = int(argv[i + 1])
        elif argv[i] == "--signal":
            sig = getattr(signal, "SIG" + argv[i + 1])
        elif argv[i] == "--watch":
            watch.append(argv[i + 1])
        elif argv[i] == "--timeout":
            timeout = float(argv[i + 1])
        i += 2
    ino = Inotify()
    for w in watch:
        ino.add(w, IN_MODIFY)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except OSError:
        pass
    t0 = time.monotonic()
    os.kill(pid, sig)
    trigger = "timeout"
    while time.monotonic() - t0 < timeout / 1000.0:
        if not os.path.exists("/proc/%d" % pid) or \
                (read("/proc/%d/stat" % pid) or " ) Z").split(")")[-1].split()[0] == "Z":
            trigger = "exited"
            break
        if ino.events(0.05):
            trigger = "write"
            break
    if trigger != "exited":
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            trigger = "exited"
    print("trigger=%s ms=%.0f" % (trigger, (time.monotonic() - t0) * 1000))
    return 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    verb, argv = sys.argv[1], sys.argv[2:]
    if verb == "snapshot":
        with open(argv[0], "w") as f:
            json.dump(snapshot(argv[1]), f)
        return 0
    if verb == "check":
        return cmd_check(argv)
    if verb == "state":
        text = read(os.path.join(argv[0], "state.json"))
        if text is None:
            return 1
        st = json.loads(text)
        for c in st["cgroups"]:
            print("cgroup %s window %s pending %s original %s" % (
                c["name"], c.get("window"), c.get("pending"), c.get("original_text")))
        for t in st["threads"]:
            print("thread %s %d original %s%s last %s pending %s" % (
                t["cgroup"], t["tid"], t["original"], " (full)" if t.get("original_full") else "",
                t["last_set"], t.get("pending")))
        return 0
    if verb == "list":
        print(*sorted(parse_list(argv[0])))
        return 0
    if verb == "victim":
        return cmd_victim(argv)
    if verb == "interrupt":
        return cmd_interrupt(argv)
    sys.exit("unknown verb " + verb)


if __name__ == "__main__":
    sys.exit(main())
