/* SPDX-License-Identifier: MIT */
/* Who wakes whom: the sched_waking format parser, the fallbacks without
 * tracefs, and (as root, with tracefs) the real events on two ping-pong
 * pairs of this process's threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/stat.h>
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
         * even on a loaded machine; never one of the other pair. */
        assert_true(c.within[0] >= 100);
        assert_true(c.within[1] >= 100);
        assert_int_equal(c.across, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_format),
                cmocka_unit_test(test_no_tracefs),
                cmocka_unit_test(test_live_pairs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
