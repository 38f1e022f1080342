/* SPDX-License-Identifier: MIT */
/* Who wakes whom: the sched_waking format parser, the fallbacks without
 * tracefs, and (as root, with tracefs) the real events on two ping-pong
 * pairs of this process's threads. */
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-helpers.h"

#include "wake-events.h"

/* This kernel's (6.18) format, as tracefs shows it. */
static const char format_618[] =
        "name: sched_waking\n"
        "ID: 375\n"
        "format:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
        "\n"
        "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
        "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
        "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
        "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
        "\n"
        "print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, "
        "REC->target_cpu\n";

static void test_parse_format(void **state) {
        (void) state;
        unsigned off = 0;

        assert_int_equal(wake_events_parse_format(format_618, &off), 0);
        assert_int_equal(off, 24);
        /* common_pid is not the wakee's pid */
        assert_int_equal(wake_events_parse_format("\tfield:int common_pid;\toffset:4;\tsize:4;\n", &off),
                         -EBADMSG);
        assert_int_equal(wake_events_parse_format("\tfield:pid_t pid;\toffset:x;\n", &off), -EBADMSG);
        assert_int_equal(wake_events_parse_format("\tfield:pid_t pid;\n\toffset:24;\n", &off), -EBADMSG);
        assert_int_equal(wake_events_parse_format("", &off), -EBADMSG);
        assert_int_equal(off, 24); /* untouched on failure */
        /* The record's flags (interrupt context), not common_preempt_count */
        assert_int_equal(wake_events_parse_field(format_618, "common_flags", &off), 0);
        assert_int_equal(off, 2);
        assert_int_equal(wake_events_parse_field(format_618, "target_cpu", &off), 0);
        assert_int_equal(off, 32);
        assert_int_equal(wake_events_parse_field(format_618, "flags", &off), -EBADMSG);
}

static void test_no_tracefs(void **state) {
        (void) state;
        _cleanup_(freep) char *dir = test_mkdtemp();
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        _cleanup_cpuset_ CpuSet cpus = hwloc_bitmap_alloc();
        WakeEvents *w = NULL;
        char why[256] = "";

        hwloc_bitmap_set(cpus, 0);
        assert_int_equal(rootdir_open(dir, &root), 0);
        assert_int_equal(wake_events_open(root, cpus, 1, &w, why, sizeof(why)), -ENOENT);
        assert_null(w);
        assert_non_null(strstr(why, "no tracefs"));

        /* A tracefs in a fixture tree is not this host's to open events on. */
        test_write_file(dir, "/sys/kernel/tracing/events/sched/sched_waking/id", "375\n");
        test_write_file(dir, "/sys/kernel/tracing/events/sched/sched_waking/format", format_618);
        assert_int_equal(wake_events_open(root, cpus, 1, &w, why, sizeof(why)), -EOPNOTSUPP);
        assert_null(w);
        assert_non_null(strstr(why, "not this host's"));

        /* A format without the wakee's pid */
        test_write_file(dir, "/sys/kernel/tracing/events/sched/sched_waking/format",
                        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n");
        assert_int_equal(wake_events_open(root, cpus, 1, &w, why, sizeof(why)), -EBADMSG);
        assert_non_null(strstr(why, "no pid field"));
        test_rm_rf(dir);
}

typedef struct PingPong {
        int to_b[2], to_a[2];
        pthread_t a, b;
        _Atomic pid_t tid_a, tid_b;
        atomic_bool stop;
} PingPong;

static void *end_a(void *arg) {
        PingPong *p = arg;
        char c = 'x';
        p->tid_a = gettid();
        while (!p->stop && write(p->to_b[1], &c, 1) == 1 && read(p->to_a[0], &c, 1) == 1)
                ;
        close(p->to_b[1]);
        return NULL;
}

static void *end_b(void *arg) {
        PingPong *p = arg;
        char c;
        p->tid_b = gettid();
        while (read(p->to_b[0], &c, 1) == 1 && write(p->to_a[1], &c, 1) == 1)
                ;
        close(p->to_a[1]);
        return NULL;
}

typedef struct Counts {
        const PingPong *p;
        size_t within[2], across, other;
} Counts;

static int which(const PingPong *p, pid_t tid) {
        for (int i = 0; i < 2; i++)
                if (tid == p[i].tid_a || tid == p[i].tid_b)
                        return i;
        return -1;
}

static void ignore(pid_t waker, pid_t wakee, void *userdata) {
        (void) waker, (void) wakee, (void) userdata;
}

static void count(pid_t waker, pid_t wakee, void *userdata) {
        Counts *c = userdata;
        int x = which(c->p, waker), y = which(c->p, wakee);
        if (x < 0 || y < 0)
                c->other++;
        else if (x == y)
                c->within[x]++;
        else
                c->across++;
}

/* tracefs where the daemon looks for it: mounted at /sys/kernel/tracing
 * if neither place has it (root may). */
static bool have_tracefs(void) {
        if (access("/sys/kernel/tracing/events/sched/sched_waking/id", R_OK) == 0 ||
            access("/sys/kernel/debug/tracing/events/sched/sched_waking/id", R_OK) == 0)
                return true;
        return mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
               access("/sys/kernel/tracing/events/sched/sched_waking/id", R_OK) == 0;
}

static void test_live_pairs(void **state) {
        (void) state;
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        _cleanup_(wake_events_closep) WakeEvents *w = NULL;
        _cleanup_cpuset_ CpuSet cpus = hwloc_bitmap_alloc();
        PingPong p[2] = {};
        Counts c = {.p = p};
        char why[256] = "";
        int r;

        if (geteuid() != 0 || !have_tracefs()) {
                print_message("skipped: needs root and tracefs (sched:sched_waking)\n");
                skip();
        }
        assert_int_equal(rootdir_open("/", &root), 0);
        hwloc_bitmap_set_range(cpus, 0, (int) sysconf(_SC_NPROCESSORS_CONF) - 1);
        r = wake_events_open(root, cpus, 1, &w, why, sizeof(why));
        if (r == -EPERM || r == -EACCES || r == -ENOSYS) {
                print_message("skipped: %s\n", why);
                skip();
        }
        assert_int_equal(r, 0);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(pipe(p[i].to_b), 0);
                assert_int_equal(pipe(p[i].to_a), 0);
                assert_int_equal(pthread_create(&p[i].b, NULL, end_b, &p[i]), 0);
                assert_int_equal(pthread_create(&p[i].a, NULL, end_a, &p[i]), 0);
        }
        /* Counted once all four run: creating a thread takes the process's
         * mmap lock, whose hand-offs wake whoever waits on it. */
        while (!p[0].tid_a || !p[0].tid_b || !p[1].tid_a || !p[1].tid_b)
                usleep(1000);
        usleep(20000);
        assert_int_equal(wake_events_drain(w, ignore, NULL, NULL), 0);
        for (int k = 0; k < 20; k++) {
                usleep(20000);
                assert_int_equal(wake_events_drain(w, count, &c, NULL), 0);
        }
        for (int i = 0; i < 2; i++) {
                p[i].stop = true;
                pthread_join(p[i].a, NULL);
                pthread_join(p[i].b, NULL);
                close(p[i].to_b[0]);
                close(p[i].to_a[0]);
        }
        assert_int_equal(wake_events_drain(w, count, &c, NULL), 0);
        print_message("within pair 0: %zu, pair 1: %zu, across: %zu, others: %zu\n", c.within[0],
                      c.within[1], c.across, c.other);
        /* Every hand-over of a pair wakes its other end: hundreds in 0.4 s
         * even on a loaded machine. Across the pairs the kernel's own
         * hand-offs (a lock's releaser waking its next waiter) may show on a
         * busy host, a few in 40,000 (3 seen once): an edge the clustering
         * weighs as nothing, far below one in a thousand. */
        assert_true(c.within[0] >= 100);
        assert_true(c.within[1] >= 100);
        assert_true(c.across * 1000 <= c.within[0] + c.within[1]);
}

static void test_denied_hint(void **state) {
        (void) state;
        char hint[320];

        /* Debian's level 3: CAP_PERFMON is not enough, and the remedy is said. */
        wake_events_denied_hint(3, hint, sizeof(hint));
        assert_non_null(strstr(hint, "perf_event_paranoid is 3"));
        assert_non_null(strstr(hint, "CAP_SYS_ADMIN"));
        assert_non_null(strstr(hint, "kernel.perf_event_paranoid=2"));
        assert_non_null(strstr(hint, "reload"));
        /* Mainline's levels: the capability is what is missing. */
        wake_events_denied_hint(2, hint, sizeof(hint));
        assert_non_null(strstr(hint, "CAP_PERFMON"));
        assert_null(strstr(hint, "sysctl"));
        /* A small buffer is cut, never overrun. */
        char small[8];
        wake_events_denied_hint(4, small, sizeof(small));
        assert_int_equal(strlen(small), sizeof(small) - 1);
}

/* Drops CAP_SYS_ADMIN and CAP_PERFMON from this process's effective set. */
static int drop_perf_caps(void) {
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[2] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
        d[CAP_PERFMON / 32].effective &= ~(1u << (CAP_PERFMON % 32));
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/* Without the capabilities (as steerd's unit runs on a Debian kernel at
 * level 3, or anywhere without CAP_PERFMON) the open is refused, nothing
 * stays open, and why says what to do for this host's level. */
static void test_live_denied(void **state) {
        (void) state;
        _cleanup_(rootdir_freep) RootDir *host = NULL;
        _cleanup_(freep) char *text = NULL;

        if (geteuid() != 0 || !have_tracefs()) {
                print_message("skipped: needs root and tracefs (sched:sched_waking)\n");
                skip();
        }
        assert_int_equal(rootdir_open("/", &host), 0);
        assert_int_equal(rootdir_read_file(host, "/proc/sys/kernel/perf_event_paranoid", &text, NULL), 0);
        int paranoid = atoi(text);
        if (paranoid < 1) {
                /* Levels below 1 let anyone open per-CPU events. */
                print_message("skipped: kernel.perf_event_paranoid is %d: nothing is refused\n", paranoid);
                skip();
        }
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                _cleanup_(rootdir_freep) RootDir *root = NULL;
                _cleanup_cpuset_ CpuSet cpus = hwloc_bitmap_alloc();
                WakeEvents *w = NULL;
                char why[512] = "", hint[320];

                hwloc_bitmap_set(cpus, 0);
                if (drop_perf_caps() < 0 || rootdir_open("/", &root) < 0)
                        _exit(2);
                int r = wake_events_open(root, cpus, 1, &w, why, sizeof(why));
                wake_events_denied_hint(paranoid, hint, sizeof(hint));
                fprintf(stderr, "without CAP_SYS_ADMIN and CAP_PERFMON: %d, %s\n", r, why);
                _exit(r == -EACCES && !w && strstr(why, "cpu 0): Permission denied") && strstr(why, hint)
                              ? 0
                              : 1);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_format), cmocka_unit_test(test_no_tracefs),
                cmocka_unit_test(test_live_pairs),   cmocka_unit_test(test_denied_hint),
                cmocka_unit_test(test_live_denied),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
