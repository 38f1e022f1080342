/* SPDX-License-Identifier: MIT */
#include "test-helpers.h"

#include <fcntl.h>
#include <limits.h>

#include "proc-pressure.h"
#include "proc-schedstat.h"
#include "proc-stat.h"
#include "proc-thread.h"
#include "sched-debug.h"

/* Every parser reports a parse error's line through reterr_line; this value
 * tells "not touched" apart from any line the parser could report. */
#define LINE_UNSET 9999U

static char *fixture(const char *name) {
        char *path, *buf;
        size_t size;
        int fd;

        assert_true(asprintf(&path, "%s/%s", TEST_FIXTURES_DIR, name) > 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                fail_msg("cannot open %s", path);
        assert_int_equal(read_full_fd(fd, &buf, &size), 0);
        close(fd);
        free(path);
        return buf;
}

/* s with the first occurrence of from replaced; from must occur. */
static char *replace(const char *s, const char *from, const char *to) {
        const char *at = strstr(s, from);
        char *r = NULL;

        if (!at)
                fail_msg("\"%s\" not in the input", from);
        /* An offset, not a pointer: GCC 12 sees cmocka's longjmp as a dangling use. */
        size_t off = at ? (size_t) (at - s) : 0;
        if (asprintf(&r, "%.*s%s%s", (int) off, s, to, s + off + strlen(from)) < 0)
                fail_msg("out of memory");
        return r;
}

/* 1-based line of the first occurrence of needle. */
static unsigned line_of(const char *s, const char *needle) {
        const char *at = strstr(s, needle);
        unsigned line = 1;

        if (!at)
                fail_msg("\"%s\" not in the input", needle);
        size_t off = at ? (size_t) (at - s) : 0;
        for (size_t i = 0; i < off; i++)
                if (s[i] == '\n')
                        line++;
        return line;
}

/* ---- /proc/stat ---- */

static void test_proc_stat_real(void **state) {
        _cleanup_(freep) char *s = fixture("proc-stat-6.18.txt");
        unsigned el = LINE_UNSET;
        ProcStat ps = {};

        assert_int_equal(proc_stat_parse(s, "proc-stat-6.18.txt", &ps, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_int_equal(ps.n_cpus, 2);
        /* cpu0 843 0 573 30783 7 0 2 3 0 0 */
        assert_int_equal(ps.cpus[0].cpu, 0);
        assert_int_equal(ps.cpus[0].user, 843);
        assert_int_equal(ps.cpus[0].nice, 0);
        assert_int_equal(ps.cpus[0].system, 573);
        assert_int_equal(ps.cpus[0].idle, 30783);
        assert_int_equal(ps.cpus[0].iowait, 7);
        assert_int_equal(ps.cpus[0].irq, 0);
        assert_int_equal(ps.cpus[0].softirq, 2);
        assert_int_equal(ps.cpus[0].steal, 3);
        assert_int_equal(ps.cpus[0].guest, 0);
        assert_int_equal(ps.cpus[0].guest_nice, 0);
        /* cpu1 1477 0 975 29381 298 0 23 8 0 0 */
        assert_int_equal(ps.cpus[1].cpu, 1);
        assert_int_equal(ps.cpus[1].user, 1477);
        assert_int_equal(ps.cpus[1].steal, 8);
        assert_int_equal(cpu_times_busy(&ps.cpus[1], false), 1477 + 975 + 23);
        assert_int_equal(cpu_times_busy(&ps.cpus[1], true), 1477 + 975 + 23 + 8);
        assert_int_equal(cpu_times_total(&ps.cpus[1]), 1477 + 975 + 29381 + 298 + 23 + 8);
        assert_ptr_equal(proc_stat_find(&ps, 1), &ps.cpus[1]);
        assert_null(proc_stat_find(&ps, 2));

        proc_stat_done(&ps);
        assert_null(ps.cpus);
        assert_int_equal(ps.n_cpus, 0);
        proc_stat_done(&ps); /* idempotent */
}

static void test_proc_stat_old_kernels(void **state) {
        _cleanup_(freep) char *s24 = fixture("proc-stat-2.4.txt");
        _cleanup_(freep) char *s269 = fixture("proc-stat-2.6.9.txt");
        ProcStat ps = {};

        /* 4 columns: everything after idle is 0 */
        assert_int_equal(proc_stat_parse(s24, "proc-stat-2.4.txt", &ps, NULL), 0);
        assert_int_equal(ps.n_cpus, 2);
        assert_int_equal(ps.cpus[1].user, 3213);
        assert_int_equal(ps.cpus[1].idle, 1005632);
        assert_int_equal(ps.cpus[1].iowait, 0);
        assert_int_equal(ps.cpus[1].steal, 0);
        assert_int_equal(ps.cpus[1].guest_nice, 0);
        proc_stat_done(&ps);

        /* 7 columns: no steal/guest yet */
        assert_int_equal(proc_stat_parse(s269, "proc-stat-2.6.9.txt", &ps, NULL), 0);
        assert_int_equal(ps.n_cpus, 2);
        assert_int_equal(ps.cpus[0].softirq, 706);
        assert_int_equal(ps.cpus[0].irq, 109);
        assert_int_equal(ps.cpus[0].steal, 0);
        proc_stat_done(&ps);

        /* columns a future kernel adds are accepted and ignored */
        assert_int_equal(proc_stat_parse("cpu0 1 2 3 4 5 6 7 8 9 10 11 12\n", "future", &ps, NULL), 0);
        assert_int_equal(ps.cpus[0].guest_nice, 10);
        proc_stat_done(&ps);

        /* no final newline */
        assert_int_equal(proc_stat_parse("cpu  1 2 3 4\ncpu0 1 2 3 4", "nonl", &ps, NULL), 0);
        assert_int_equal(ps.n_cpus, 1);
        assert_int_equal(ps.cpus[0].idle, 4);
        proc_stat_done(&ps);
}

static void test_proc_stat_sparse_and_hotplug(void **state) {
        _cleanup_(freep) char *a = fixture("proc-stat-sparse.txt");
        _cleanup_(freep) char *b = NULL;
        ProcStat pa = {}, pb = {};
        double u;

        assert_int_equal(proc_stat_parse(a, "proc-stat-sparse.txt", &pa, NULL), 0);
        assert_int_equal(pa.n_cpus, 3);
        assert_int_equal(pa.cpus[0].cpu, 0);
        assert_int_equal(pa.cpus[1].cpu, 2);
        assert_int_equal(pa.cpus[2].cpu, 5);
        assert_null(proc_stat_find(&pa, 1));
        assert_int_equal(proc_stat_find(&pa, 5)->softirq, 2009);

        /* Next tick: cpu2 went offline, cpu0 was busy 100 ticks of 200. */
        {
                _cleanup_(freep) char *t =
                        replace(a, "cpu2 497511 804 171000 32773000 12101 0 3010 0 0 0\n", "");
                b = replace(t, "cpu0 512203 801 170011 32770001", "cpu0 512303 801 170011 32770101");
        }
        assert_int_equal(proc_stat_parse(b, "proc-stat-sparse-next.txt", &pb, NULL), 0);
        assert_int_equal(pb.n_cpus, 2);
        assert_int_equal(pb.cpus[0].cpu, 0);
        assert_int_equal(pb.cpus[1].cpu, 5);
        assert_null(proc_stat_find(&pb, 2));
        assert_int_equal(cpu_times_delta_util(proc_stat_find(&pa, 0), proc_stat_find(&pb, 0), true, &u), 0);
        assert_float_equal(u, 512.0, 1e-9);
        /* cpu5 did nothing at all */
        assert_int_equal(cpu_times_delta_util(proc_stat_find(&pa, 5), proc_stat_find(&pb, 5), true, &u),
                         -EAGAIN);

        proc_stat_done(&pa);
        proc_stat_done(&pb);
}

static void check_proc_stat_bad(const char *input, unsigned expected_line) {
        CpuTimes sentinel_cpus[1] = {{.cpu = 77}};
        ProcStat ps = {.cpus = sentinel_cpus, .n_cpus = 42};
        unsigned el = LINE_UNSET;

        if (proc_stat_parse(input, "bad-stat", &ps, &el) != -EBADMSG)
                fail_msg("accepted: \"%s\"", input);
        if (el != expected_line)
                fail_msg("line %u instead of %u for \"%s\"", el, expected_line, input);
        /* result untouched */
        assert_ptr_equal(ps.cpus, sentinel_cpus);
        assert_int_equal(ps.n_cpus, 42);
        /* and reterr_line is optional */
        assert_int_equal(proc_stat_parse(input, "bad-stat", &ps, NULL), -EBADMSG);
}

static void test_proc_stat_malformed(void **state) {
        _cleanup_(freep) char *real = fixture("proc-stat-6.18.txt");
        _cleanup_(freep) char *truncated =
                replace(real, "cpu1 1477 0 975 29381 298 0 23 8 0 0", "cpu1 1477 0 9");
        _cleanup_(freep) char *garbage =
                replace(real, "cpu1 1477 0 975 29381 298", "cpu1 1477 0 975 29381 2g8");

        check_proc_stat_bad("cpu  1 2 3 4\ncpu0 1 2 x 4\n", 2);
        check_proc_stat_bad("cpu0 1 2 3\n", 1); /* fewer than 4 */
        check_proc_stat_bad("cpu0\n", 1);
        check_proc_stat_bad("cpu0 1 2 3 4 5 6 7 8 9 10 1x\n", 1); /* bad extra column */
        check_proc_stat_bad("cpu0 1 2 3 4q\n", 1);
        check_proc_stat_bad("cpu0 1.5 2 3 4\n", 1);
        check_proc_stat_bad("cpu0 -1 2 3 4\n", 1); /* strtoull() would wrap it */
        check_proc_stat_bad("cpu0 +1 2 3 4\n", 1);
        check_proc_stat_bad("cpu0 18446744073709551616 2 3 4\n", 1); /* UINT64_MAX + 1 */
        check_proc_stat_bad("cpu0 99999999999999999999999 2 3 4\n", 1);
        check_proc_stat_bad("cpux 1 2 3 4\n", 1);
        check_proc_stat_bad("cpu-1 1 2 3 4\n", 1);
        check_proc_stat_bad("cpu4294967296 1 2 3 4\n", 1);
        check_proc_stat_bad("cpu0 1 2 3 4\ncpu0 1 2 3 4\n", 2);               /* repeated */
        check_proc_stat_bad("cpu  1 2 3 4\ncpu1 1 2 3 4\ncpu0 1 2 3 4\n", 3); /* out of order */
        check_proc_stat_bad("", 0);
        check_proc_stat_bad("\n\n", 0);
        check_proc_stat_bad("cpu  1 2 3 4\nintr 1 2\nctxt 5\n", 0); /* no per-CPU line */
        check_proc_stat_bad(truncated, line_of(truncated, "cpu1 "));
        check_proc_stat_bad(garbage, 3);
}

static void test_proc_stat_huge(void **state) {
        ProcStat ps = {};
        double u;

        assert_int_equal(proc_stat_parse("cpu0 18446744073709551615 1 0 5\n", "max", &ps, NULL), 0);
        assert_true(ps.cpus[0].user == UINT64_MAX);
        /* sums saturate rather than wrap */
        assert_true(cpu_times_busy(&ps.cpus[0], true) == UINT64_MAX);
        assert_true(cpu_times_total(&ps.cpus[0]) == UINT64_MAX);
        /* and a saturated pair is "no time passed", not a made-up figure */
        assert_int_equal(cpu_times_delta_util(&ps.cpus[0], &ps.cpus[0], true, &u), -EAGAIN);
        proc_stat_done(&ps);
}

static void test_cpu_times_delta_util(void **state) {
        CpuTimes prev = {.cpu = 3, .user = 100, .system = 50, .idle = 1000, .iowait = 10, .steal = 5};
        CpuTimes cur = prev;
        double u = -1;

        /* 30 busy of 100 */
        cur.user += 20;
        cur.system += 10;
        cur.idle += 70;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, false, &u), 0);
        assert_float_equal(u, 30.0 * 1024 / 100, 1e-9);

        /* steal counts as busy only when asked; it is always in the total */
        cur.steal += 100;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, false, &u), 0);
        assert_float_equal(u, 30.0 * 1024 / 200, 1e-9);
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), 0);
        assert_float_equal(u, 130.0 * 1024 / 200, 1e-9);

        /* guest time is inside user already: not counted twice */
        cur = prev;
        cur.user += 50;
        cur.guest += 50;
        cur.idle += 50;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), 0);
        assert_float_equal(u, 512.0, 1e-9);

        /* fully busy, irq and softirq included */
        cur = prev;
        cur.irq += 10;
        cur.softirq += 10;
        cur.nice += 80;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), 0);
        assert_float_equal(u, 1024.0, 1e-9);

        /* iowait dipping (NO_HZ accounting) while the sums grow is not a reset */
        cur = prev;
        cur.iowait -= 5;
        cur.idle += 55;
        cur.user += 50;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), 0);
        assert_float_equal(u, 512.0, 1e-9);

        /* idle dipping more than busy grew: clamped, never above 1024 */
        cur = prev;
        cur.idle -= 50;
        cur.user += 60;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), 0);
        assert_float_equal(u, 1024.0, 1e-9);

        /* counters reset (hotplug): -ERANGE, result untouched */
        u = -7;
        cur = (CpuTimes){.cpu = 3, .user = 5, .system = 1, .idle = 20};
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), -ERANGE);
        assert_float_equal(u, -7, 0);
        /* busy backwards alone is enough */
        cur = prev;
        cur.user -= 1;
        cur.idle += 100;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), -ERANGE);
        /* total backwards alone is enough */
        cur = prev;
        cur.idle -= 100;
        cur.user += 1;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), -ERANGE);
        assert_float_equal(u, -7, 0);

        /* nothing changed */
        assert_int_equal(cpu_times_delta_util(&prev, &prev, true, &u), -EAGAIN);
        /* only steal moved and it is not counted as busy: idle, not "no time passed" */
        cur = prev;
        cur.steal += 10;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, false, &u), 0);
        assert_float_equal(u, 0.0, 1e-9);

        /* two different CPUs */
        cur = prev;
        cur.cpu = 4;
        cur.idle += 10;
        assert_int_equal(cpu_times_delta_util(&prev, &cur, true, &u), -EINVAL);
        assert_float_equal(u, 0.0, 1e-9);
}

/* ---- /proc/schedstat ---- */

static void test_proc_schedstat_versions(void **state) {
        _cleanup_(freep) char *v15 = fixture("proc-schedstat-v15.txt");
        _cleanup_(freep) char *v16 = fixture("proc-schedstat-v16.txt");
        _cleanup_(freep) char *v17 = fixture("proc-schedstat-v17.txt");
        ProcSchedstat s = {};
        unsigned el = LINE_UNSET;

        assert_int_equal(proc_schedstat_parse(v15, "v15", &s, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_int_equal(s.version, 15);
        assert_true(s.timestamp == 4376412529ULL);
        assert_int_equal(s.n_cpus, 3);
        assert_int_equal(s.cpus[0].cpu, 0);
        assert_true(s.cpus[0].run_ns == 11785843117346ULL);
        assert_true(s.cpus[0].wait_ns == 1493357081752ULL);
        /* sparse: cpu2 offline */
        assert_int_equal(s.cpus[2].cpu, 3);
        assert_true(s.cpus[2].wait_ns == 1450817432877ULL);
        assert_null(proc_schedstat_find(&s, 2));
        assert_ptr_equal(proc_schedstat_find(&s, 3), &s.cpus[2]);
        proc_schedstat_done(&s);
        assert_null(s.cpus);

        assert_int_equal(proc_schedstat_parse(v16, "v16", &s, NULL), 0);
        assert_int_equal(s.version, 16);
        assert_int_equal(s.n_cpus, 2);
        assert_true(s.cpus[1].run_ns == 117300112948ULL);
        assert_true(s.cpus[1].wait_ns == 17119320488ULL);
        proc_schedstat_done(&s);

        /* v17 domain lines carry a name: ignored all the same */
        assert_int_equal(proc_schedstat_parse(v17, "v17", &s, NULL), 0);
        assert_int_equal(s.version, 17);
        assert_int_equal(s.n_cpus, 2);
        assert_true(s.cpus[0].run_ns == 301119822711ULL);
        assert_true(s.cpus[0].wait_ns == 40219312771ULL);
        proc_schedstat_done(&s);
}

static void check_schedstat_bad(const char *input, int expected_r, unsigned expected_line) {
        CpuSchedstat sentinel[1] = {};
        ProcSchedstat s = {.version = 99, .cpus = sentinel, .n_cpus = 42};
        unsigned el = LINE_UNSET;
        int r;

        r = proc_schedstat_parse(input, "bad-schedstat", &s, &el);
        if (r != expected_r)
                fail_msg("returned %d instead of %d for \"%s\"", r, expected_r, input);
        if (el != expected_line)
                fail_msg("line %u instead of %u for \"%s\"", el, expected_line, input);
        assert_int_equal(s.version, 99);
        assert_ptr_equal(s.cpus, sentinel);
        assert_int_equal(s.n_cpus, 42);
}

static void test_proc_schedstat_malformed(void **state) {
        _cleanup_(freep) char *v15 = fixture("proc-schedstat-v15.txt");
        _cleanup_(freep) char *v18 = replace(v15, "version 15", "version 18");
        _cleanup_(freep) char *v14 = replace(v15, "version 15", "version 14");
        _cleanup_(freep) char *short_cpu = replace(v15, " 1471922591409 46831713", " 1471922591409");
        _cleanup_(freep) char *bad_num = replace(v15, "11634096006785", "11634096OO6785");

        check_schedstat_bad(v18, -EPROTONOSUPPORT, 1);
        check_schedstat_bad(v14, -EPROTONOSUPPORT, 1);
        check_schedstat_bad(short_cpu, -EBADMSG, line_of(short_cpu, "cpu1 "));
        check_schedstat_bad(bad_num, -EBADMSG, line_of(bad_num, "cpu1 "));
        check_schedstat_bad("version 15\ntimestamp 1\ncpu0 0 0 1 2 3 4 5 6 7 8\n", -EBADMSG,
                            3);                                                              /* 10 fields */
        check_schedstat_bad("version 15\ntimestamp 1\ncpu0 0 0 1 2 3 4 5 6\n", -EBADMSG, 3); /* 8 */
        check_schedstat_bad("version 15\ntimestamp 1\ncpu0 0 0 1 2 3 4 5 -6 7\n", -EBADMSG, 3);
        check_schedstat_bad("version 15\ntimestamp 1\ncpu0 0 0 1 2 3 4 18446744073709551616 6 7\n", -EBADMSG,
                            3);
        check_schedstat_bad("version 15\ntimestamp x\ncpu0 0 0 1 2 3 4 5 6 7\n", -EBADMSG, 2);
        check_schedstat_bad("version 15\ncpu1 0 0 1 2 3 4 5 6 7\ncpu0 0 0 1 2 3 4 5 6 7\n", -EBADMSG, 3);
        check_schedstat_bad("timestamp 1\nversion 15\ncpu0 0 0 1 2 3 4 5 6 7\n", -EBADMSG, 1);
        check_schedstat_bad("version\n", -EBADMSG, 1);
        check_schedstat_bad("version 15 16\n", -EBADMSG, 1);
        check_schedstat_bad("version 15\ntimestamp 1\n", -EBADMSG, 0); /* no CPU */
        check_schedstat_bad("", -EBADMSG, 0);
}

/* ---- PSI ---- */

static void test_psi_real(void **state) {
        _cleanup_(freep) char *sys = fixture("proc-pressure-cpu-6.18.txt");
        _cleanup_(freep) char *old = fixture("proc-pressure-cpu-5.4.txt");
        _cleanup_(freep) char *busy = fixture("cgroup-cpu-pressure-busy.txt");
        _cleanup_(freep) char *cg = fixture("cgroup-cpu-pressure-6.18.txt");
        unsigned el = LINE_UNSET;
        Psi p;

        /* some avg10=0.00 avg60=0.13 avg300=0.47 total=4315792, full all zero */
        assert_int_equal(psi_parse(sys, "proc-pressure-cpu-6.18.txt", &p, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_float_equal(p.some_avg10, 0.0, 1e-9);
        assert_float_equal(p.some_avg60, 0.13, 1e-9);
        assert_float_equal(p.some_avg300, 0.47, 1e-9);
        assert_true(p.some_total == 4315792);
        assert_true(p.has_full);
        assert_float_equal(p.full_avg10, 0.0, 0);
        assert_true(p.full_total == 0);

        assert_int_equal(psi_parse(cg, "cgroup-cpu-pressure-6.18.txt", &p, NULL), 0);
        assert_true(p.has_full);
        assert_true(p.some_total == 4351272);

        assert_int_equal(psi_parse(busy, "busy", &p, NULL), 0);
        assert_float_equal(p.some_avg10, 61.23, 1e-9);
        assert_float_equal(p.some_avg60, 45.02, 1e-9);
        assert_float_equal(p.some_avg300, 20.75, 1e-9);
        assert_true(p.some_total == 987654321);
        assert_float_equal(p.full_avg10, 12.5, 1e-9);
        assert_float_equal(p.full_avg60, 8.04, 1e-9);
        assert_float_equal(p.full_avg300, 3.1, 1e-9);
        assert_true(p.full_total == 123456789);

        /* no "full" line: zeros, has_full false, even if the struct held something */
        assert_int_equal(psi_parse(old, "proc-pressure-cpu-5.4.txt", &p, NULL), 0);
        assert_float_equal(p.some_avg10, 4.88, 1e-9);
        assert_float_equal(p.some_avg60, 3.35, 1e-9);
        assert_float_equal(p.some_avg300, 1.0, 1e-9);
        assert_true(p.some_total == 3586565);
        assert_false(p.has_full);
        assert_float_equal(p.full_avg10, 0.0, 0);
        assert_true(p.full_total == 0);

        /* "full" first, unknown kinds ignored, no final newline */
        assert_int_equal(psi_parse("full avg10=1.00 avg60=2.00 avg300=3.00 total=4\n"
                                   "stall avg10=x\n"
                                   "some avg10=5.00 avg60=6.00 avg300=7.00 total=18446744073709551615",
                                   "order", &p, NULL),
                         0);
        assert_float_equal(p.full_avg300, 3.0, 1e-9);
        assert_true(p.some_total == UINT64_MAX);
}

static void check_psi_bad(const char *input, unsigned expected_line) {
        Psi p = {.some_avg10 = 42.0, .has_full = true};
        unsigned el = LINE_UNSET;

        if (psi_parse(input, "bad-psi", &p, &el) != -EBADMSG)
                fail_msg("accepted: \"%s\"", input);
        if (el != expected_line)
                fail_msg("line %u instead of %u for \"%s\"", el, expected_line, input);
        assert_float_equal(p.some_avg10, 42.0, 0);
        assert_true(p.has_full);
}

static void test_psi_malformed(void **state) {
        check_psi_bad("some avg10=abc avg60=3.35 avg300=1.00 total=3586565\n", 1);
        check_psi_bad("some avg10=4.88 avg60=3.35 avg300=1.00\n", 1); /* truncated */
        check_psi_bad("some avg10=4.88 avg60=3.35\n", 1);
        check_psi_bad("some\n", 1);
        check_psi_bad("some avg10=4.8.8 avg60=3.35 avg300=1.00 total=3586565\n", 1);
        check_psi_bad("some avg10=4. avg60=3.35 avg300=1.00 total=3586565\n", 1);
        check_psi_bad("some avg10=-4.88 avg60=3.35 avg300=1.00 total=3586565\n", 1);
        check_psi_bad("some avg10= 4.88 avg60=3.35 avg300=1.00 total=3586565\n", 1);
        check_psi_bad("some avg60=3.35 avg10=4.88 avg300=1.00 total=3586565\n", 1); /* order */
        check_psi_bad("some avg10=4.88 avg60=3.35 avg300=1.00 total=35x\n", 1);
        check_psi_bad("some avg10=4.88 avg60=3.35 avg300=1.00 total=18446744073709551616\n", 1);
        check_psi_bad("some avg10=4.88 avg60=3.35 avg300=1.00 total=1 extra=2\n", 1);
        check_psi_bad("some avg10=4.88 avg60=3.35 avg300=1.00 total=1\n"
                      "full avg10=0.00 avg60=0.00 avg300=0.00 total=x\n",
                      2);
        check_psi_bad("some avg10=4.88 avg60=3.35 avg300=1.00 total=1\n"
                      "some avg10=4.88 avg60=3.35 avg300=1.00 total=2\n",
                      2);
        check_psi_bad("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 0); /* no some */
        check_psi_bad("", 0);
}

/* ---- per-thread files ---- */

static void test_thread_stat(void **state) {
        _cleanup_(freep) char *real = fixture("thread-stat-6.18.txt");
        _cleanup_(freep) char *paren = fixture("thread-stat-comm-paren.txt");
        _cleanup_(freep) char *newline = replace(real, "(python3)", "(x\ny) 1 2 3 4 5 6 7 8 (z)");
        _cleanup_(freep) char *rt = replace(real, " 20 0 2 0 32743", " -51 0 2 0 32743");
        ThreadStat st = {};
        unsigned el = LINE_UNSET;

        /* 4644 (python3) S ... utime 150 stime 0 ... starttime 32743 ... processor 1 */
        assert_int_equal(thread_stat_parse(real, "thread-stat-6.18.txt", &st, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_int_equal(st.tid, 4644);
        assert_int_equal(st.state, 'S');
        assert_int_equal(st.utime, 150);
        assert_int_equal(st.stime, 0);
        assert_int_equal(st.starttime, 32743);
        assert_int_equal(st.processor, 1);

        /* comm "a) (b) c": the fields start after the last ')' */
        st = (ThreadStat){};
        assert_int_equal(thread_stat_parse(paren, "thread-stat-comm-paren.txt", &st, NULL), 0);
        assert_int_equal(st.tid, 4644);
        assert_int_equal(st.state, 'S');
        assert_int_equal(st.utime, 150);
        assert_int_equal(st.starttime, 32743);
        assert_int_equal(st.processor, 1);

        /* a comm with a newline and numbers in it */
        st = (ThreadStat){};
        assert_int_equal(thread_stat_parse(newline, "newline", &st, NULL), 0);
        assert_int_equal(st.utime, 150);
        assert_int_equal(st.starttime, 32743);
        assert_int_equal(st.processor, 1);

        /* negative priority of a real-time thread in a skipped field */
        assert_int_equal(thread_stat_parse(rt, "rt", &st, NULL), 0);
        assert_int_equal(st.starttime, 32743);

        /* a stat that ends right after field 39 (older kernels) */
        assert_int_equal(thread_stat_parse("7 (k) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 "
                                           "22 23 24 25 26 27 28 29 30 31 32 33 34 35 36\n",
                                           "short", &st, NULL),
                         0);
        assert_int_equal(st.tid, 7);
        assert_int_equal(st.state, 'R');
        assert_int_equal(st.utime, 11);
        assert_int_equal(st.stime, 12);
        assert_int_equal(st.starttime, 19);
        assert_int_equal(st.processor, 36);
}

static void check_thread_stat_bad(const char *input, unsigned expected_line) {
        ThreadStat st = {.tid = 42, .processor = 7};
        unsigned el = LINE_UNSET;

        if (thread_stat_parse(input, "bad-stat", &st, &el) != -EBADMSG)
                fail_msg("accepted: \"%s\"", input);
        if (el != expected_line)
                fail_msg("line %u instead of %u for \"%s\"", el, expected_line, input);
        assert_int_equal(st.tid, 42);
        assert_int_equal(st.processor, 7);
}

static void test_thread_stat_malformed(void **state) {
        _cleanup_(freep) char *real = fixture("thread-stat-6.18.txt");
        /* up to field 38 (exit_signal 17... here "-1"): everything before " 1 0 0 0 0 0 9412..." */
        _cleanup_(freep) char *trunc38 = strndup(real, strstr(real, " 0 -1 1 0 0") - real + strlen(" 0 -1"));
        _cleanup_(freep) char *trunc_mid = strndup(real, strstr(real, " 32743") - real);
        _cleanup_(freep) char *huge = replace(real, " 150 0 0 0 20", " 18446744073709551616 0 0 0 20");
        _cleanup_(freep) char *neg = replace(real, " 150 0 0 0 20", " -150 0 0 0 20");
        _cleanup_(freep) char *bad_cpu = replace(real, " 0 -1 1 0 0", " 0 -1 x 0 0");
        _cleanup_(freep) char *big_cpu = replace(real, " 0 -1 1 0 0", " 0 -1 4294967296 0 0");
        _cleanup_(freep) char *no_paren = replace(real, "(python3)", "(python3");
        _cleanup_(freep) char *no_state = replace(real, ") S ", ")  ");
        _cleanup_(freep) char *long_state = replace(real, ") S ", ") SS ");
        _cleanup_(freep) char *bad_tid = replace(real, "4644 (", "46x4 (");

        assert_non_null(trunc38);
        check_thread_stat_bad(trunc38, 1);
        check_thread_stat_bad(trunc_mid, 1);
        check_thread_stat_bad(huge, 1);
        check_thread_stat_bad(neg, 1);
        check_thread_stat_bad(bad_cpu, 1);
        check_thread_stat_bad(big_cpu, 1);
        check_thread_stat_bad(no_paren, 1);
        check_thread_stat_bad(no_state, 1);
        check_thread_stat_bad(long_state, 1);
        check_thread_stat_bad(bad_tid, 1);
        check_thread_stat_bad("0 (x) S 1\n", 1);
        check_thread_stat_bad("4644 (x) S\n", 1);
        check_thread_stat_bad("4644\n", 1);
        check_thread_stat_bad("", 0);
}

static void test_thread_schedstat(void **state) {
        _cleanup_(freep) char *real = fixture("thread-schedstat-6.18.txt");
        ThreadSchedstat s = {}, sentinel = {.pcount = 42};
        unsigned el = LINE_UNSET;

        /* 1500050911 83332 7 */
        assert_int_equal(thread_schedstat_parse(real, "thread-schedstat-6.18.txt", &s, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_true(s.sum_exec_runtime_ns == 1500050911);
        assert_true(s.run_delay_ns == 83332);
        assert_true(s.pcount == 7);
        assert_int_equal(thread_schedstat_parse("0 0 0", "nonl", &s, NULL), 0);
        assert_true(s.pcount == 0);

        static const struct {
                const char *in;
                unsigned line;
        } bad[] = {
                {"1 2\n", 1},
                {"1 2 x\n", 1},
                {"1 2 3 4\n", 1},
                {"1 -2 3\n", 1},
                {"18446744073709551616 2 3\n", 1},
                {"\n", 1},
                {"", 0},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                s = sentinel;
                el = LINE_UNSET;
                assert_int_equal(thread_schedstat_parse(bad[i].in, "bad", &s, &el), -EBADMSG);
                assert_int_equal(el, bad[i].line);
                assert_true(s.pcount == 42);
        }
}

static void test_thread_sched(void **state) {
        _cleanup_(freep) char *real = fixture("thread-sched-6.18.txt");
        _cleanup_(freep) char *no_migr = NULL, *bad = NULL, *neg = NULL, *rep = NULL, *nodash = NULL,
                              *evil = NULL, *empty_value = NULL;
        ThreadSched s = {};
        unsigned el = LINE_UNSET;
        const char *migr = "se.nr_migrations                             :                    0\n";

        assert_int_equal(thread_sched_parse(real, "thread-sched-6.18.txt", &s, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_true(s.nr_migrations == 0);
        assert_true(s.nr_voluntary_switches == 3);
        assert_true(s.nr_involuntary_switches == 4);

        assert_int_equal(
                thread_sched_parse("bash (2685, #threads: 1)\n"
                                   "-------------------------------------------------------------------\n"
                                   "se.nr_migrations                             :                  123\n"
                                   "se.nr_migrations_cold                        :                    x\n"
                                   "nr_involuntary_switches                      :                   16\n",
                                   "hand", &s, NULL),
                0);
        assert_true(s.nr_migrations == 123);
        assert_true(s.nr_voluntary_switches == 0); /* absent */
        assert_true(s.nr_involuntary_switches == 16);

        /* absent -> 0, not an error */
        no_migr = replace(real, migr, "");
        s.nr_migrations = 99;
        assert_int_equal(thread_sched_parse(no_migr, "no-migr", &s, NULL), 0);
        assert_true(s.nr_migrations == 0);
        assert_true(s.nr_voluntary_switches == 3);

        /* a thread naming itself like a key does not inject a value */
        evil = replace(real, "python3 (4644", "se.nr_migrations : 7 (4644");
        assert_int_equal(thread_sched_parse(evil, "evil", &s, NULL), 0);
        assert_true(s.nr_migrations == 0);

        /* present but not a number */
        ThreadSched sentinel = {.nr_migrations = 42};
        bad = replace(real, migr, "se.nr_migrations                             :                  abc\n");
        neg = replace(real, migr, "se.nr_migrations                             :                   -1\n");
        empty_value = replace(real, migr, "se.nr_migrations                             :\n");
        rep = replace(real, "nr_switches ", "nr_voluntary_switches ");
        nodash = replace(real, "-------------------------------------------------------------------\n", "");
        const struct {
                const char *in;
                unsigned line;
        } cases[] = {
                {bad, line_of(bad, "se.nr_migrations ")},
                {neg, line_of(neg, "se.nr_migrations ")},
                {empty_value, line_of(empty_value, "se.nr_migrations ")},
                {rep, line_of(rep, "nr_voluntary_switches  ") + 1},
                {nodash, 0},
                {"", 0},
                {"x (1, #threads: 1)\n---\nnr_voluntary_switches : 18446744073709551616\n", 3},
                {"x (1, #threads: 1)\n---\nnr_voluntary_switches : 12 34\n", 3},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                s = sentinel;
                el = LINE_UNSET;
                if (thread_sched_parse(cases[i].in, "bad-sched", &s, &el) != -EBADMSG)
                        fail_msg("case %zu accepted", i);
                if (el != cases[i].line)
                        fail_msg("case %zu: line %u instead of %u", i, el, cases[i].line);
                assert_true(s.nr_migrations == 42);
        }
}

static void test_thread_status_tgid(void **state) {
        _cleanup_(freep) char *real = fixture("thread-status-6.18.txt");
        _cleanup_(freep) char *missing = replace(real, "Tgid:", "Tgix:");
        _cleanup_(freep) char *zero = replace(real, "Tgid:\t4642", "Tgid:\t0");
        _cleanup_(freep) char *junk = replace(real, "Tgid:\t4642", "Tgid:\t4642x");
        _cleanup_(freep) char *huge = replace(real, "Tgid:\t4642", "Tgid:\t99999999999");
        unsigned el = LINE_UNSET;
        pid_t tgid = 0;

        assert_int_equal(thread_status_parse_tgid(real, "thread-status-6.18.txt", &tgid, &el), 0);
        assert_int_equal(tgid, 4642);
        assert_int_equal(el, LINE_UNSET);
        assert_int_equal(thread_status_parse_tgid(missing, "status", &tgid, &el), -EBADMSG);
        assert_int_equal(el, 0);
        const char *bad[] = {zero, junk, huge};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                tgid = 7;
                el = LINE_UNSET;
                assert_int_equal(thread_status_parse_tgid(bad[i], "status", &tgid, &el), -EBADMSG);
                assert_int_equal(el, 4);
                assert_int_equal(tgid, 7); /* untouched on failure */
        }
}

static void test_thread_status(void **state) {
        _cleanup_(freep) char *real = fixture("thread-status-6.18.txt");
        _cleanup_(freep) char *missing = replace(real, "Cpus_allowed_list:", "Cpus_allowed_lisp:");
        _cleanup_(freep) char *bad = replace(real, "Cpus_allowed_list:\t0-1", "Cpus_allowed_list:\t0-");
        _cleanup_(freep) char *empty = replace(real, "Cpus_allowed_list:\t0-1", "Cpus_allowed_list:\t");
        _cleanup_(freep) char *big = NULL, *long_list = NULL;
        _cleanup_cpuset_ CpuSet set = NULL;
        char buf[CPUSET_STRLEN];
        unsigned el = LINE_UNSET;

        assert_int_equal(thread_status_parse_cpus_allowed(real, "thread-status-6.18.txt", &set, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_string_equal(cpuset_to_string(set, buf, sizeof(buf)), "0-1");
        hwloc_bitmap_free(TAKE_PTR(set));

        /* a list longer than the parser's stack buffer: every even CPU of 1024 */
        {
                size_t n = 0, cap = 8192;
                long_list = malloc(cap);
                assert_non_null(long_list);
                for (unsigned c = 0; c < 1024; c += 2)
                        n += (size_t) snprintf(long_list + n, cap - n, "%s%u", c ? "," : "", c);
                assert_true(n > 256);
                big = replace(real, "Cpus_allowed_list:\t0-1", "");
                char *t = NULL;
                assert_true(asprintf(&t, "Cpus_allowed_list:\t%s\n%s", long_list, big) > 0);
                free(big);
                big = t;
        }
        assert_int_equal(thread_status_parse_cpus_allowed(big, "big", &set, NULL), 0);
        assert_int_equal(hwloc_bitmap_weight(set), 512);
        assert_true(hwloc_bitmap_isset(set, 1022));
        assert_false(hwloc_bitmap_isset(set, 1023));
        hwloc_bitmap_free(TAKE_PTR(set));

        const struct {
                const char *in;
                unsigned line;
        } cases[] = {
                {missing, 0},
                {bad, line_of(bad, "Cpus_allowed_list:")},
                {empty, line_of(empty, "Cpus_allowed_list:")},
                {"Name:\tx\nCpus_allowed_list:\t0-3,x\n", 2},
                /* blank to cpuset_parse(), not to the blank check (found by fuzz-thread-status) */
                {"Name:\tx\nCpus_allowed_list:\v\n", 2},
                {"Cpus_allowed_list:\t\r\n", 1},
                {"", 0},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                el = LINE_UNSET;
                if (thread_status_parse_cpus_allowed(cases[i].in, "bad-status", &set, &el) != -EBADMSG)
                        fail_msg("case %zu accepted", i);
                assert_null(set);
                if (el != cases[i].line)
                        fail_msg("case %zu: line %u instead of %u", i, el, cases[i].line);
        }
}

/* ---- sched/debug ---- */

static void test_sched_debug_real(void **state) {
        _cleanup_(freep) char *s = fixture("sched-debug-6.18.txt");
        SchedDebug d = {};
        unsigned el = LINE_UNSET;

        assert_int_equal(sched_debug_parse(s, "sched-debug-6.18.txt", &d, &el), 0);
        assert_int_equal(el, LINE_UNSET);
        assert_int_equal(d.n_cpus, 2);
        /* the root cfs_rq's figures, not the autogroups' (921/927 on cpu0) */
        assert_int_equal(d.cpus[0].cpu, 0);
        assert_int_equal(d.cpus[0].util_avg, 1303);
        assert_int_equal(d.cpus[0].runnable_avg, 1330);
        assert_int_equal(d.cpus[0].nr_running, 0);
        assert_int_equal(d.cpus[1].cpu, 1);
        assert_int_equal(d.cpus[1].util_avg, 716);
        assert_int_equal(d.cpus[1].runnable_avg, 693);
        assert_int_equal(d.cpus[1].nr_running, 1);
        assert_ptr_equal(sched_debug_find(&d, 1), &d.cpus[1]);
        assert_null(sched_debug_find(&d, 2));
        sched_debug_done(&d);
        assert_null(d.cpus);
}

static void test_sched_debug_old(void **state) {
        _cleanup_(freep) char *s = fixture("sched-debug-5.10.txt");
        _cleanup_(freep) char *bare = NULL;
        SchedDebug d = {};

        assert_int_equal(sched_debug_parse(s, "sched-debug-5.10.txt", &d, NULL), 0);
        assert_int_equal(d.n_cpus, 2);
        assert_int_equal(d.cpus[0].cpu, 0);
        assert_int_equal(d.cpus[0].util_avg, 721);
        assert_int_equal(d.cpus[0].runnable_avg, 812);
        /* the CPU's nr_running, not its root cfs_rq's (1) */
        assert_int_equal(d.cpus[0].nr_running, 2);
        assert_int_equal(d.cpus[1].cpu, 2);
        assert_int_equal(d.cpus[1].util_avg, 14);
        assert_int_equal(d.cpus[1].runnable_avg, 15);
        assert_int_equal(d.cpus[1].nr_running, 0);
        sched_debug_done(&d);

        /* arches without a clock figure print a bare "cpu#N" */
        bare = replace(s, "cpu#0, 2300.000 MHz", "cpu#0");
        {
                char *t = replace(bare, "cpu#2, 2300.000 MHz", "cpu#2");
                free(bare);
                bare = t;
        }
        assert_int_equal(sched_debug_parse(bare, "bare", &d, NULL), 0);
        assert_int_equal(d.n_cpus, 2);
        assert_int_equal(d.cpus[1].util_avg, 14);
        sched_debug_done(&d);
}

static void test_sched_debug_ignores_noise(void **state) {
        _cleanup_(freep) char *s = fixture("sched-debug-6.18.txt");
        /* a bad value outside the root cfs_rq is none of our business */
        _cleanup_(freep) char *autogroup_bad = replace(s, "  .util_avg                      : 921",
                                                       "  .util_avg                      : n/a");
        /* task names with newlines in the tasks table cannot inject sections or
         * values; a "cpu#" line that is no header there is a name's tail (this
         * one is a real thread's name, "x) (y\ncpu#9 z)", as the kernel prints it) */
        _cleanup_(freep) char *injected =
                replace(s, " S         spawner    60",
                        " S     x\ncfs_rq[1]:/\n  .util_avg : 9999\n  .runnable_avg : 1\n\n    60\n"
                        " S           x) (y\ncpu#9 z) 11552     10683.903272   E       10684.763028         "
                        "  1.400000"
                        "        56.529682        10     120         0.000000         0.000000         "
                        "0.000000   0      0"
                        "        /autogroup-8");
        SchedDebug d = {};

        assert_int_equal(sched_debug_parse(autogroup_bad, "autogroup-bad", &d, NULL), 0);
        assert_int_equal(d.cpus[0].util_avg, 1303);
        sched_debug_done(&d);

        assert_int_equal(sched_debug_parse(injected, "injected", &d, NULL), 0);
        assert_int_equal(d.n_cpus, 2);
        assert_int_equal(d.cpus[1].util_avg, 716);
        assert_int_equal(d.cpus[1].runnable_avg, 693);
        sched_debug_done(&d);
}

/* An idle CPU's root cfs_rq decays and leaves the leaf list the kernel
 * prints: that CPU is there, with averages of 0, not a malformed file. */
static void test_sched_debug_decayed_root(void **state) {
        _cleanup_(freep) char *s = fixture("sched-debug-6.18.txt");
        _cleanup_(freep) char *no_root = replace(s, "cfs_rq[1]:/\n", "cfs_rq[1]:/system.slice\n");
        SchedDebug d = {};

        assert_int_equal(sched_debug_parse(no_root, "no-root", &d, NULL), 0);
        assert_int_equal(d.n_cpus, 2);
        assert_int_equal(d.cpus[0].util_avg, 1303);
        assert_int_equal(d.cpus[1].cpu, 1);
        assert_int_equal(d.cpus[1].util_avg, 0);
        assert_int_equal(d.cpus[1].runnable_avg, 0);
        sched_debug_done(&d);
}

static void check_sched_debug_bad(const char *input, unsigned expected_line) {
        SchedDebugCpu sentinel[1] = {};
        SchedDebug d = {.cpus = sentinel, .n_cpus = 42};
        unsigned el = LINE_UNSET;

        if (sched_debug_parse(input, "bad-sched-debug", &d, &el) != -EBADMSG)
                fail_msg("accepted input with expected line %u", expected_line);
        if (el != expected_line)
                fail_msg("line %u instead of %u", el, expected_line);
        assert_ptr_equal(d.cpus, sentinel);
        assert_int_equal(d.n_cpus, 42);
}

static void test_sched_debug_malformed(void **state) {
        _cleanup_(freep) char *s = fixture("sched-debug-6.18.txt");
        _cleanup_(freep) char *old = fixture("sched-debug-5.10.txt");
        const char *root_util = "  .util_avg                      : 1303";
        _cleanup_(freep) char *bad_util = replace(s, root_util, "  .util_avg                      : 13o3");
        _cleanup_(freep) char *neg_util = replace(s, root_util, "  .util_avg                      : -1");
        _cleanup_(freep) char *huge_util =
                replace(s, root_util, "  .util_avg                      : 18446744073709551616");
        _cleanup_(freep) char *rep_util = replace(s, root_util, "  .util_avg : 1\n  .util_avg : 2");
        _cleanup_(freep) char *wrong_cpu = replace(s, "cfs_rq[0]:/\n", "cfs_rq[1]:/\n");
        _cleanup_(freep) char *two_roots = replace(s, "cfs_rq[0]:/autogroup-8\n", "cfs_rq[0]:/\n");
        _cleanup_(freep) char *bad_nr =
                replace(s, "  .nr_running                    : 1", "  .nr_running                    : one");
        _cleanup_(freep) char *no_nr = replace(s, "  .nr_running                    : 1\n", "");
        _cleanup_(freep) char *pre57 = replace(old, "  .runnable_avg                  : 15\n",
                                               "  .runnable_load_avg             : 15\n");
        _cleanup_(freep) char *order = replace(old, "cpu#2, 2300.000 MHz", "cpu#0, 2300.000 MHz");
        _cleanup_(freep) char *bad_header = replace(s, "cpu#1, 2300.000 MHz", "cpu#1, fast");
        _cleanup_(freep) char *bad_cfs = replace(s, "cfs_rq[1]:/\n", "cfs_rq[x]:/\n");
        /* a well-formed cpu# line forged by a task name: the forged CPU has no figures */
        _cleanup_(freep) char *forged = replace(s, " S         spawner    60", " S     x\n\ncpu#7\n    60");
        /* after a blank line, a malformed cpu# line is taken for a broken header */
        _cleanup_(freep) char *forged_blank =
                replace(s, " S         spawner    60", " S     x\n\ncpu#7 y\n    60");
        _cleanup_(freep) char *truncated =
                strndup(s, strstr(s, "cfs_rq[1]:/\n") - s + strlen("cfs_rq[1]:/\n"));

        check_sched_debug_bad(bad_util, line_of(bad_util, "13o3"));
        check_sched_debug_bad(neg_util, line_of(neg_util, ": -1"));
        check_sched_debug_bad(huge_util, line_of(huge_util, "18446744073709551616"));
        check_sched_debug_bad(rep_util, line_of(rep_util, ".util_avg : 2"));
        check_sched_debug_bad(wrong_cpu, line_of(wrong_cpu, "cfs_rq[1]:/\n"));
        check_sched_debug_bad(two_roots, line_of(s, "cfs_rq[0]:/\n"));
        check_sched_debug_bad(bad_nr, line_of(bad_nr, ": one"));
        check_sched_debug_bad(no_nr, line_of(no_nr, "cpu#1"));
        check_sched_debug_bad(pre57, line_of(pre57, "cfs_rq[2]:/"));
        check_sched_debug_bad(order,
                              line_of(order, "cpu#0, 2300.000 MHz\n  .nr_running                    : 0"));
        check_sched_debug_bad(bad_header, line_of(bad_header, "cpu#1"));
        check_sched_debug_bad(bad_cfs, line_of(bad_cfs, "cfs_rq[x]"));
        check_sched_debug_bad(forged, line_of(forged, "cpu#7"));
        check_sched_debug_bad(forged_blank, line_of(forged_blank, "cpu#7"));
        check_sched_debug_bad(truncated, line_of(truncated, "cfs_rq[1]:/\n"));
        check_sched_debug_bad("cfs_rq[0]:/\n  .util_avg : 1\n", 1);
        check_sched_debug_bad("Sched Debug Version: v0.11, 6.18.44\n", 0);
        check_sched_debug_bad("", 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_proc_stat_real),
                cmocka_unit_test(test_proc_stat_old_kernels),
                cmocka_unit_test(test_proc_stat_sparse_and_hotplug),
                cmocka_unit_test(test_proc_stat_malformed),
                cmocka_unit_test(test_proc_stat_huge),
                cmocka_unit_test(test_cpu_times_delta_util),
                cmocka_unit_test(test_proc_schedstat_versions),
                cmocka_unit_test(test_proc_schedstat_malformed),
                cmocka_unit_test(test_psi_real),
                cmocka_unit_test(test_psi_malformed),
                cmocka_unit_test(test_thread_stat),
                cmocka_unit_test(test_thread_stat_malformed),
                cmocka_unit_test(test_thread_schedstat),
                cmocka_unit_test(test_thread_sched),
                cmocka_unit_test(test_thread_status),
                cmocka_unit_test(test_thread_status_tgid),
                cmocka_unit_test(test_sched_debug_real),
                cmocka_unit_test(test_sched_debug_old),
                cmocka_unit_test(test_sched_debug_ignores_noise),
                cmocka_unit_test(test_sched_debug_malformed),
                cmocka_unit_test(test_sched_debug_decayed_root),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
