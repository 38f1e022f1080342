/* SPDX-License-Identifier: MIT */
/* The sampler on a generated fixture root of a 192-CPU machine (EPYC 9654,
 * one socket: 12 LLCs x 16 CPUs, SMT2). Expected figures follow from the
 * generator's formulas (tests/gen-fixture-root.py). */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test-helpers.h"

#include "affinity.h"
#include "cpuset.h"
#include "sampler.h"
#include "topology.h"

#define N_CPUS 192
#define TOPOLOGY "pack:1 l3:12(size=32MiB) l2:8 core:1 pu:2"
#define FIRST_TID 1000
#define N_THREADS 64

static double util_pct(unsigned cpu) {
        return (cpu * 7) % 100;
}
static double wait_pct(unsigned cpu) {
        return (cpu * 3) % 50;
}
static double thread_util_pct(unsigned tid) {
        return (tid * 13) % 90;
}
static double thread_wait_pct(unsigned tid) {
        return (tid * 5) % 20;
}
static double cap(double pct) {
        return pct * SCHED_CAPACITY_SCALE / 100.0;
}

typedef struct Fixture {
        char *dir;
        RootDir *root;
        Topology *topo;
        Sampler *sampler;
        Settings settings;
        CgroupLocation loc;
        SamplerCgroup cg;
} Fixture;

static void gen(const Fixture *f, unsigned tick, const char *extra) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "python3 %s/gen-fixture-root.py %s --cpus %d --threads %d --first-tid %d --tick %u %s",
                 TEST_SOURCE_DIR, f->dir, N_CPUS, N_THREADS, FIRST_TID, tick, extra ? extra : "");
        assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
        if (system("python3 -c 'pass' 2>/dev/null") != 0)
                return -1;
        Fixture *f = calloc(1, sizeof(Fixture));
        assert_non_null(f);
        f->dir = test_mkdtemp();
        assert_int_equal(rootdir_open(f->dir, &f->root), 0);
        assert_int_equal(topology_load(f->root, TOPOLOGY, &f->topo), 0);
        settings_init_defaults(&f->settings);
        f->settings.smoothing_half_life_ms = 0; /* exact figures */
        f->loc = (CgroupLocation){.dir = strdup("/sys/fs/cgroup/cpuset/bench1"), .v2 = false};
        f->cg = (SamplerCgroup){.name = "/bench1", .loc = &f->loc, .policy = CGROUP_POLICY_LATENCY};
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        sampler_free(f->sampler);
        topology_free(f->topo);
        rootdir_free(f->root);
        cgroup_location_done(&f->loc);
        test_rm_rf(f->dir);
        free(f->dir);
        free(f);
        return 0;
}

/* Tick 0 primes, tick 1 one second later gives the snapshot. */
static Snapshot *two_ticks(Fixture *f, const char *extra0, const char *extra1) {
        Snapshot *s = NULL;
        gen(f, 0, extra0);
        assert_int_equal(sampler_new(f->root, f->topo, &f->settings, &f->sampler), 0);
        assert_int_equal(sampler_sample(f->sampler, 1000000, &f->cg, 1, &s), -EAGAIN);
        assert_null(s);
        gen(f, 1, extra1);
        assert_int_equal(sampler_sample(f->sampler, 2000000, &f->cg, 1, &s), 0);
        assert_non_null(s);
        return s;
}

static void check_llcs(const Snapshot *s) {
        for (size_t l = 0; l < s->n_llcs; l++) {
                const LlcSample *ls = &s->llcs[l];
                double sum = 0;
                unsigned n = 0;
                for (size_t i = 0; i < s->n_cpus; i++)
                        if (s->cpus[i].llc == (int) l && s->cpus[i].online) {
                                sum += s->cpus[i].util;
                                n++;
                        }
                assert_int_equal(ls->weight, n);
                assert_true(fabs(ls->util - sum / n) < 1e-6);
                assert_int_equal(ls->nr_idle_scan, sis_nr_idle_scan(ls->util, ls->weight, 117));
                assert_int_equal(ls->overloaded, ls->nr_idle_scan * 2 < ls->weight);
        }
}

static void test_schedstat_source(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat", "--schedstat");

        /* Every member every tick, as --once reads (not in turns:
         * test_turns). */
        sampler_set_full(f->sampler, true);
        assert_int_equal(s->source, RUNNABLE_SOURCE_SCHEDSTAT);
        assert_int_equal(s->n_cpus, N_CPUS);
        assert_int_equal(s->n_llcs, 12);
        assert_int_equal(s->period_us, 1000000);
        for (unsigned i = 0; i < N_CPUS; i++) {
                const CpuSample *c = &s->cpus[i];
                assert_int_equal(c->cpu, i);
                assert_true(c->online);
                assert_int_equal(c->llc, (int) (i / 16));
                assert_int_equal(c->core, (int) (i / 2));
                assert_true(fabs(c->util - cap(util_pct(i))) < 0.01);
                assert_true(fabs(c->runnable - (cap(util_pct(i)) + cap(wait_pct(i)))) < 0.01);
                assert_true(fabs(c->boosted - MIN(MAX(c->util, c->runnable), 1024.0)) < 1e-9);
        }
        check_llcs(s);
        assert_true(fabs(s->psi_some_avg10 - 12.5) < 1e-9);

        assert_int_equal(s->n_cgroups, 1);
        const CgroupSample *c = &s->cgroups[0];
        assert_string_equal(c->path, "/bench1");
        assert_int_equal(c->n_threads, N_THREADS);
        assert_int_equal(hwloc_bitmap_weight(c->allowed), N_CPUS);
        for (size_t j = 0; j < c->n_threads; j++) {
                const ThreadSample *t = &c->threads[j];
                unsigned tid = FIRST_TID + (unsigned) j;
                assert_int_equal(t->tid, tid);
                assert_int_equal(t->starttime, 10000 + tid);
                assert_int_equal(t->cpu, (int) (tid % N_CPUS));
                assert_true(fabs(t->util - cap(thread_util_pct(tid))) < 0.01);
                assert_true(fabs(t->wait - cap(thread_wait_pct(tid))) < 0.01);
                /* Read at the first sample (tick 0: no migrations yet), next at
                 * the SAMPLER_SCHED_FILE_EVERY-th. */
                assert_int_equal(t->nr_migrations, 0);
                assert_int_equal(hwloc_bitmap_weight(t->allowed), N_CPUS);
        }
        snapshot_free(s);

        /* Samples 2.. SAMPLER_SCHED_FILE_EVERY: the file is read again at the last. */
        for (unsigned k = 2; k <= SAMPLER_SCHED_FILE_EVERY; k++) {
                gen(f, k, "--schedstat");
                assert_int_equal(sampler_sample(f->sampler, (k + 1) * 1000000ULL, &f->cg, 1, &s), 0);
                unsigned tid = FIRST_TID + 4; /* tid % 3 == 2: a read shows */
                assert_int_equal(s->cgroups[0].threads[4].nr_migrations,
                                 k < SAMPLER_SCHED_FILE_EVERY ? 0 : k * (tid % 3));
                snapshot_free(s);
        }
}

static void test_threads_source(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, NULL, NULL);
        double expect_wait[N_CPUS] = {};

        /* No /proc/schedstat, no debugfs: the run delay of every thread in
         * /proc, charged to its last CPU. */
        assert_int_equal(s->source, RUNNABLE_SOURCE_THREADS);
        assert_false(s->threads_truncated);
        for (unsigned tid = FIRST_TID; tid < FIRST_TID + N_THREADS; tid++)
                expect_wait[tid % N_CPUS] += cap(thread_wait_pct(tid));
        for (unsigned i = 0; i < N_CPUS; i++) {
                const CpuSample *c = &s->cpus[i];
                assert_true(fabs(c->util - cap(util_pct(i))) < 0.01);
                assert_true(fabs(c->runnable - (c->util + expect_wait[i])) < 0.01);
        }
        check_llcs(s);
        snapshot_free(s);
}

static void test_threads_source_bounded(void **state) {
        Fixture *f = *state;
        f->settings.max_scan_threads = 10;
        Snapshot *s = two_ticks(f, NULL, NULL);
        assert_true(s->threads_truncated);
        /* The opted-in cgroup's threads are sampled in full all the same. */
        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
        snapshot_free(s);
}

static void test_cpu_goes_offline(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat", "--schedstat --offline 5,17");

        assert_int_equal(s->n_cpus, N_CPUS); /* the topology still has them */
        assert_false(s->cpus[5].online);
        assert_false(s->cpus[17].online);
        assert_true(s->cpus[4].online);
        assert_int_equal(s->llcs[0].weight, 15);
        assert_int_equal(s->llcs[1].weight, 15);
        assert_int_equal(hwloc_bitmap_weight(s->llcs[0].cpus), 16);
        check_llcs(s);
        /* Threads may not be offered an offline CPU. */
        assert_false(hwloc_bitmap_isset(s->cgroups[0].allowed, 5));
        snapshot_free(s);
}

static void test_counters_backwards(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat", "--schedstat"), *s2 = NULL;
        double before = s->cpus[3].util;

        /* Tick 0 again: every counter went backwards (as after hotplug). The
         * CPUs keep their last figures instead of showing garbage. */
        gen(f, 0, "--schedstat");
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s2), 0);
        assert_true(fabs(s2->cpus[3].util - before) < 1e-9);
        for (size_t i = 0; i < s2->n_cpus; i++) {
                assert_true(s2->cpus[i].util >= 0 && s2->cpus[i].util <= 1024);
                assert_true(s2->cpus[i].runnable >= 0);
        }
        snapshot_free(s2);
        snapshot_free(s);
}

static void test_malformed_stat(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat", "--schedstat"), *s2 = NULL;

        test_write_file(f->dir, "/proc/stat", "cpu  1 2 3 4\ncpu0 1 2 x 4\n");
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s2), -EBADMSG);
        assert_null(s2);
        /* Nothing changed: the next good sample is against tick 1's counters. */
        gen(f, 2, "--schedstat");
        assert_int_equal(sampler_sample(f->sampler, 4000000, &f->cg, 1, &s2), 0);
        assert_true(fabs(s2->cpus[3].util - cap(util_pct(3))) < 0.01);
        assert_int_equal(s2->period_us, 2000000);
        snapshot_free(s2);
        snapshot_free(s);
}

static void test_cgroup_and_thread_vanish(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat", "--schedstat"), *s2 = NULL;
        char path[512];

        /* One thread exits between the tasks read and its stat read. */
        gen(f, 2, "--schedstat");
        snprintf(path, sizeof(path), "%s/proc/%d", f->dir, FIRST_TID + 3);
        test_rm_rf(path);
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s2), 0);
        assert_int_equal(s2->cgroups[0].n_threads, N_THREADS - 1);
        snapshot_free(s2);

        /* The cgroup is removed: left out, the rest of the snapshot is there. */
        snprintf(path, sizeof(path), "%s/sys/fs/cgroup/cpuset/bench1", f->dir);
        test_rm_rf(path);
        assert_int_equal(sampler_sample(f->sampler, 4000000, &f->cg, 1, &s2), 0);
        assert_int_equal(s2->n_cgroups, 0);
        assert_int_equal(s2->n_cpus, N_CPUS);
        snapshot_free(s2);
        snapshot_free(s);
}

static void test_smoothing(void **state) {
        Fixture *f = *state;
        Snapshot *s = NULL;

        /* Half-life = sample period: each new sample moves the figure halfway.
         * cpu3 is fully busy for a second, then fully idle for a second. */
        f->settings.smoothing_half_life_ms = 1000;
        gen(f, 0, "--schedstat");
        test_write_file(f->dir, "/proc/stat", "cpu  0 0 0 0\ncpu3 100 0 0 100\n");
        assert_int_equal(sampler_new(f->root, f->topo, &f->settings, &f->sampler), 0);
        assert_int_equal(sampler_sample(f->sampler, 1000000, &f->cg, 1, &s), -EAGAIN);
        test_write_file(f->dir, "/proc/stat", "cpu  0 0 0 0\ncpu3 200 0 0 100\n");
        assert_int_equal(sampler_sample(f->sampler, 2000000, &f->cg, 1, &s), 0);
        assert_true(fabs(s->cpus[3].util - 1024) < 1e-9); /* the first figure is taken as it is */
        assert_false(s->cpus[4].online);
        snapshot_free(s);
        test_write_file(f->dir, "/proc/stat", "cpu  0 0 0 0\ncpu3 200 0 0 200\n");
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s), 0);
        assert_true(fabs(s->cpus[3].util - 512) < 1e-9);
        snapshot_free(s);
        test_write_file(f->dir, "/proc/stat", "cpu  0 0 0 0\ncpu3 200 0 0 300\n");
        assert_int_equal(sampler_sample(f->sampler, 4000000, &f->cg, 1, &s), 0);
        assert_true(fabs(s->cpus[3].util - 256) < 1e-9);
        snapshot_free(s);
}

/* A thread's first interval is its first figure as it is, smoothed only
 * from the second on: smoothed up from 0, a thread that starts busy showed
 * half its load after three periods and every decision waited for it. */
static void test_thread_first_interval(void **state) {
        Fixture *f = *state;
        Snapshot *s = NULL;

        f->settings.smoothing_half_life_ms = 1000; /* = the period: each sample moves halfway */
        s = two_ticks(f, "--schedstat", "--schedstat");
        for (size_t j = 0; j < s->cgroups[0].n_threads; j++) {
                const ThreadSample *t = &s->cgroups[0].threads[j];
                assert_true(fabs(t->util - cap(thread_util_pct((unsigned) t->tid))) < 0.01);
                assert_true(fabs(t->wait - cap(thread_wait_pct((unsigned) t->tid))) < 0.01);
        }
        snapshot_free(s);
        /* The same counters again: an idle interval, halfway down. */
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s), 0);
        for (size_t j = 0; j < s->cgroups[0].n_threads; j++) {
                const ThreadSample *t = &s->cgroups[0].threads[j];
                assert_true(fabs(t->util - cap(thread_util_pct((unsigned) t->tid)) / 2) < 0.01);
        }
        snapshot_free(s);
}

/* sched/debug for every CPU: root cfs_rq util_avg 100, runnable_avg
 * 100 + extra (no root cfs_rq for CPU decayed, as the kernel prints an idle
 * CPU); "garbage" for a malformed file. */
static void write_sched_debug(const Fixture *f, unsigned extra, int decayed, bool garbage) {
        size_t size = 200 * N_CPUS;
        _cleanup_(freep) char *text = malloc(size);
        size_t len = 0;

        assert_non_null(text);
        for (unsigned i = 0; i < N_CPUS && !garbage; i++) {
                len += (size_t) snprintf(text + len, size - len,
                                         "cpu#%u, 2300.000 MHz\n  .nr_running : 1\n\n", i);
                if ((int) i != decayed)
                        len += (size_t) snprintf(text + len, size - len,
                                                 "cfs_rq[%u]:/\n  .util_avg : 100\n  .runnable_avg : %u\n\n",
                                                 i, 100 + extra);
        }
        if (garbage)
                snprintf(text, size, "cpu#0, 2300.000 MHz\ncfs_rq[0]:/\n  .util_avg : lots\n");
        test_write_file(f->dir, "/sys/kernel/debug/sched/debug", text);
}

static void test_debugfs_source(void **state) {
        Fixture *f = *state;
        Snapshot *s = NULL;
        uint64_t t = 1000000;

        write_sched_debug(f, 50, -1, false);
        s = two_ticks(f, NULL, NULL);
        assert_int_equal(s->source, RUNNABLE_SOURCE_DEBUGFS);
        for (unsigned i = 0; i < N_CPUS; i++)
                assert_true(fabs(s->cpus[i].runnable - (s->cpus[i].util + 50)) < 0.01);
        snapshot_free(s);
        t = 2000000;

        /* An idle CPU without a root cfs_rq has no contention. */
        write_sched_debug(f, 80, 7, false);
        gen(f, 2, NULL);
        t += 1000000;
        assert_int_equal(sampler_sample(f->sampler, t, &f->cg, 1, &s), 0);
        assert_int_equal(s->source, RUNNABLE_SOURCE_DEBUGFS);
        assert_true(fabs(s->cpus[7].runnable - s->cpus[7].util) < 0.01);
        assert_true(fabs(s->cpus[8].runnable - (s->cpus[8].util + 80)) < 0.01);
        snapshot_free(s);

        /* A malformed read holds the last figures and keeps the source ... */
        write_sched_debug(f, 0, -1, true);
        for (unsigned k = 1; k < SAMPLER_DEBUGFS_MAX_FAILURES; k++) {
                gen(f, 2 + k, NULL);
                t += 1000000;
                assert_int_equal(sampler_sample(f->sampler, t, &f->cg, 1, &s), 0);
                assert_int_equal(s->source, RUNNABLE_SOURCE_DEBUGFS);
                assert_true(fabs(s->cpus[8].runnable - (s->cpus[8].util + 80)) < 0.01);
                snapshot_free(s);
        }
        /* ... until it fails that many times in a row. */
        gen(f, 2 + SAMPLER_DEBUGFS_MAX_FAILURES, NULL);
        t += 1000000;
        assert_int_equal(sampler_sample(f->sampler, t, &f->cg, 1, &s), 0);
        assert_int_equal(s->source, RUNNABLE_SOURCE_THREADS);
        snapshot_free(s);
}

/* Not needed: sched/debug is not read (a malformed one goes unnoticed) and
 * runnable is util; needed again: read at once. */
static void test_runnable_not_needed(void **state) {
        Fixture *f = *state;
        Snapshot *s = NULL;

        write_sched_debug(f, 50, -1, false);
        s = two_ticks(f, NULL, NULL);
        assert_int_equal(s->source, RUNNABLE_SOURCE_DEBUGFS);
        snapshot_free(s);

        sampler_set_runnable_needed(f->sampler, false);
        write_sched_debug(f, 0, -1, true);
        for (unsigned k = 0; k < SAMPLER_DEBUGFS_MAX_FAILURES + 1; k++) {
                gen(f, 2 + k, NULL);
                assert_int_equal(sampler_sample(f->sampler, (3 + k) * 1000000ULL, &f->cg, 1, &s), 0);
                assert_int_equal(s->source, RUNNABLE_SOURCE_NONE);
                for (unsigned i = 0; i < N_CPUS; i++)
                        assert_true(fabs(s->cpus[i].runnable - s->cpus[i].util) < 0.01);
                snapshot_free(s);
        }

        sampler_set_runnable_needed(f->sampler, true);
        write_sched_debug(f, 30, -1, false);
        gen(f, 10, NULL);
        assert_int_equal(sampler_sample(f->sampler, 20000000, &f->cg, 1, &s), 0);
        assert_int_equal(s->source, RUNNABLE_SOURCE_DEBUGFS);
        assert_true(fabs(s->cpus[9].runnable - (s->cpus[9].util + 30)) < 0.01);
        snapshot_free(s);
}

/* A thread that used nothing since its last read is read less often; its
 * figures are held in between and catch up with the whole interval. */
static void test_idle_backoff(void **state) {
        Fixture *f = *state;
        /* A cgroup whose CPUs steerd holds is never quiet: every member is
         * read, through the back-off (test_layers_* for the layers). */
        _cleanup_cpuset_ CpuSet held = hwloc_bitmap_dup(f->topo->online);
        f->cg.original_cpus = held;
        Snapshot *s = two_ticks(f, "--schedstat", "--schedstat");
        const unsigned tid = FIRST_TID + 5;
        size_t k;

        sampler_set_full(f->sampler, true); /* the back-off alone, not turns (test_turns) */
        snapshot_free(s);
        /* Tick 1 again: no thread ran or waited for a second. */
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s), 0);
        for (k = 0; k < s->cgroups[0].n_threads && s->cgroups[0].threads[k].tid != (pid_t) tid; k++)
                ;
        assert_true(k < s->cgroups[0].n_threads);
        assert_true(s->cgroups[0].threads[k].util < 0.01);
        snapshot_free(s);

        /* Two seconds' worth in one: the idle thread is not read at 4 s ... */
        gen(f, 3, "--schedstat");
        assert_int_equal(sampler_sample(f->sampler, 4000000, &f->cg, 1, &s), 0);
        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
        assert_true(s->cgroups[0].threads[k].util < 0.01);
        assert_int_equal(s->cgroups[0].threads[k].cpu, (int) (tid % N_CPUS));
        assert_non_null(s->cgroups[0].threads[k].allowed);
        assert_int_equal(hwloc_bitmap_weight(s->cgroups[0].threads[k].allowed), N_CPUS);
        snapshot_free(s);

        /* ... and at 5 s it is, over the two seconds since its last read. */
        assert_int_equal(sampler_sample(f->sampler, 5000000, &f->cg, 1, &s), 0);
        assert_true(fabs(s->cgroups[0].threads[k].util - cap(thread_util_pct(tid))) < 0.01);
        assert_true(fabs(s->cgroups[0].threads[k].wait - cap(thread_wait_pct(tid))) < 0.01);
        snapshot_free(s);

        /* Busy again: read every tick from then on. */
        gen(f, 4, "--schedstat");
        assert_int_equal(sampler_sample(f->sampler, 6000000, &f->cg, 1, &s), 0);
        assert_true(fabs(s->cgroups[0].threads[k].util - cap(thread_util_pct(tid))) < 0.01);
        snapshot_free(s);
}

/* A cgroup whose window went back stops keeping its parent's CPUs file
 * open, and closes it once: the descriptor's number, reused since by
 * another file, was closed again at every tick (on the simulated host,
 * other cgroups' and threads' kept files read each other's text). */
static void test_kept_parent_closed_once(void **state) {
        Fixture *f = *state;
        _cleanup_cpuset_ CpuSet held = hwloc_bitmap_dup(f->topo->online);
        int sentinels[64];
        Snapshot *s = NULL;

        gen(f, 0, NULL);
        assert_int_equal(sampler_new(f->root, f->topo, &f->settings, &f->sampler), 0);
        sampler_keep_open(f->sampler);
        f->cg.original_cpus = held; /* a window held: the parent's CPUs are read, kept */
        assert_int_equal(sampler_sample(f->sampler, 1000000, &f->cg, 1, &s), -EAGAIN);
        gen(f, 1, NULL);
        assert_int_equal(sampler_sample(f->sampler, 2000000, &f->cg, 1, &s), 0);
        snapshot_free(s);
        f->cg.original_cpus = NULL; /* the window went back */
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s), 0);
        snapshot_free(s);
        /* The lowest free numbers, the parent's among them. */
        for (size_t i = 0; i < ELEMENTSOF(sentinels); i++)
                assert_true((sentinels[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
        for (uint64_t t = 4; t <= 6; t++) {
                assert_int_equal(sampler_sample(f->sampler, t * 1000000, &f->cg, 1, &s), 0);
                snapshot_free(s);
        }
        for (size_t i = 0; i < ELEMENTSOF(sentinels); i++) {
                assert_true(fcntl(sentinels[i], F_GETFD) >= 0);
                close(sentinels[i]);
        }
}

/* The task list: empty lines are skipped, a line that is not a thread id
 * is logged and skipped, the last line needs no newline. */
static void test_task_list_lines(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat", "--schedstat");
        const pid_t expect[] = {FIRST_TID, FIRST_TID + 2, FIRST_TID + 3, FIRST_TID + 5};
        char text[256];

        snapshot_free(s);
        snprintf(text, sizeof(text), "\n%d\n\nabc\n%d \n%d\n0\n-4\n99999999999\n\n%d\n%dx\n%d", FIRST_TID,
                 FIRST_TID + 1, FIRST_TID + 2, FIRST_TID + 3, FIRST_TID + 4, FIRST_TID + 5);
        gen(f, 2, "--schedstat");
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/tasks", text);
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s), 0);
        assert_int_equal(s->n_cgroups, 1);
        assert_int_equal(s->cgroups[0].n_threads, ELEMENTSOF(expect));
        for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
                assert_int_equal(s->cgroups[0].threads[i].tid, expect[i]);
                assert_true(fabs(s->cgroups[0].threads[i].util -
                                 cap(thread_util_pct((unsigned) expect[i]))) < 0.01);
        }
        snapshot_free(s);
}

/* ---- the layers: which files each one reads ---- */

typedef struct Trace {
        char **paths;
        size_t n;
} Trace;

static void trace_cb(const char *path, void *userdata) {
        Trace *t = userdata;
        t->paths = reallocarray(t->paths, t->n + 1, sizeof(char *));
        assert_non_null(t->paths);
        t->paths[t->n] = strdup(path);
        assert_non_null(t->paths[t->n]);
        t->n++;
}

static void trace_reset(Trace *t) {
        for (size_t i = 0; i < t->n; i++)
                free(t->paths[i]);
        free(t->paths);
        *t = (Trace){};
}

/* How many traced paths end with suffix (and, if prefix, start with it). */
static size_t traced(const Trace *t, const char *prefix, const char *suffix) {
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++) {
                size_t l = strlen(t->paths[i]), ls = strlen(suffix);
                if (l >= ls && streq(t->paths[i] + l - ls, suffix) &&
                    (!prefix || strncmp(t->paths[i], prefix, strlen(prefix)) == 0))
                        n++;
        }
        return n;
}

/* One sample at now_us with the trace on; the snapshot's only cgroup. */
static Snapshot *traced_sample(Fixture *f, Trace *t, uint64_t now_us) {
        Snapshot *s = NULL;
        trace_reset(t);
        f->root->trace = trace_cb;
        f->root->trace_userdata = t;
        assert_int_equal(sampler_sample(f->sampler, now_us, &f->cg, 1, &s), 0);
        f->root->trace = NULL;
        assert_int_equal(s->n_cgroups, 1);
        return s;
}

/* A quiet cgroup (cpuacct.usage did not move): the cgroup layer and the
 * task list are read, no thread's file; its threads are not listed. Busy
 * again: every member is read. */
static void test_layers_quiet(void **state) {
        Fixture *f = *state;
        Trace t = {};
        Snapshot *s = two_ticks(f, "--schedstat --cpuacct", "--schedstat --cpuacct");

        /* The first figure of the cgroup layer only primes: all threads read. */
        assert_false(s->cgroups[0].threads_partial);
        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
        snapshot_free(s);

        /* Tick 1 again: usage 0, quiet. */
        s = traced_sample(f, &t, 3000000);
        const CgroupSample *c = &s->cgroups[0];
        assert_true(c->threads_partial);
        assert_int_equal(c->n_threads, 0);
        assert_int_equal(c->n_members, N_THREADS);
        assert_true(c->usage >= 0 && c->usage < 0.01);
        assert_int_equal(traced(&t, NULL, "/bench1/cpuacct.usage"), 1);
        assert_int_equal(traced(&t, NULL, "/bench1/tasks"), 1); /* no membership events */
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), 0);
        assert_int_equal(traced(&t, "/proc/1", "/stat"), 0);
        assert_int_equal(traced(&t, "/proc/1", "/status"), 0);
        snapshot_free(s);

        /* Busy at 4 s, but a quiet cgroup's use is read every 2, 4, 8
         * ticks: not yet ... */
        gen(f, 2, "--schedstat --cpuacct");
        s = traced_sample(f, &t, 4000000);
        assert_true(s->cgroups[0].threads_partial);
        assert_int_equal(traced(&t, NULL, "/bench1/cpuacct.usage"), 0);
        snapshot_free(s);
        /* ... at 5 s: the use of the last two seconds (one second's work),
         * every member read again, over the three seconds since its last
         * read. */
        s = traced_sample(f, &t, 5000000);
        c = &s->cgroups[0];
        assert_false(c->threads_partial);
        assert_int_equal(c->n_threads, N_THREADS);
        double sum = 0;
        for (unsigned i = 0; i < N_THREADS; i++)
                sum += cap(thread_util_pct(FIRST_TID + i));
        assert_true(fabs(c->usage - sum / 2) < 0.5);
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), N_THREADS);
        unsigned tid = FIRST_TID + 7;
        assert_int_equal(c->threads[7].tid, (pid_t) tid);
        assert_true(fabs(c->threads[7].util - cap(thread_util_pct(tid)) / 3) < 0.01);
        /* Scheduled in once per tick of the generator: once in three seconds. */
        assert_true(fabs(c->threads[7].wakeups - 1.0 / 3) < 0.01);
        snapshot_free(s);
        trace_reset(&t);
}

/* A snapshot given back to the sampler lends its threads' masks to the
 * next samples: each thread's mask is its own again, whether read or held
 * (ASan sees a mask used after it went back). */
static void test_snapshot_recycle(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat --cpuacct --masks", "--schedstat --cpuacct --masks");
        char want[N_THREADS][64];

        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
        for (size_t i = 0; i < N_THREADS; i++)
                cpuset_to_string(s->cgroups[0].threads[i].allowed, want[i], sizeof(want[i]));
        for (unsigned k = 2; k < 6; k++) {
                Snapshot *next = NULL;
                gen(f, k, "--schedstat --cpuacct --masks");
                assert_int_equal(sampler_sample(f->sampler, (k + 1) * 1000000ull, &f->cg, 1, &next), 0);
                sampler_snapshot_recycle(f->sampler, s);
                s = next;
                assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
                for (size_t i = 0; i < N_THREADS; i++) {
                        char got[64];
                        cpuset_to_string(s->cgroups[0].threads[i].allowed, got, sizeof(got));
                        assert_string_equal(got, want[i]);
                }
        }
        sampler_snapshot_recycle(f->sampler, s);
}

/* A phase that ends: the cgroup's use stops at once, its smoothed use takes
 * seconds to decay. Two reads whose own intervals were under the quiet
 * limit make it quiet while the smoothed use is still far above it; work
 * again ends the quiet at the next read of its use. */
static void test_layers_quiet_raw(void **state) {
        Fixture *f = *state;
        Trace t = {};
        Snapshot *s;

        f->settings.smoothing_half_life_ms = 2000;
        s = two_ticks(f, "--schedstat --cpuacct", "--schedstat --cpuacct");
        snapshot_free(s);
        gen(f, 2, "--schedstat --cpuacct");
        s = traced_sample(f, &t, 3000000);
        assert_false(s->cgroups[0].threads_partial);
        double busy = s->cgroups[0].usage;
        double limit = SCHED_CAPACITY_SCALE *
                       (SAMPLER_QUIET_PERCENT + SAMPLER_QUIET_THREAD_PERCENT * N_THREADS) / 100.0;
        print_message("busy use %.1f, quiet limit %.1f\n", busy, limit);
        assert_true(busy > 20 * limit);
        snapshot_free(s);

        /* Nothing moves from now on: one read under the limit is not enough ... */
        s = traced_sample(f, &t, 3100000);
        assert_false(s->cgroups[0].threads_partial);
        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
        snapshot_free(s);
        /* ... the second makes it quiet: no thread read, the smoothed use
         * still over ten times the limit. */
        s = traced_sample(f, &t, 3200000);
        const CgroupSample *c = &s->cgroups[0];
        assert_true(c->threads_partial);
        assert_int_equal(c->n_threads, 0);
        assert_true(c->usage > 10 * limit);
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), 0);
        snapshot_free(s);

        /* Work again: seen at the next tick (its use is read every tick
         * while only its last reads were quiet), every member read at once. */
        gen(f, 3, "--schedstat --cpuacct");
        unsigned k;
        for (k = 1; k <= SAMPLER_IDLE_MAX_TICKS; k++) {
                s = traced_sample(f, &t, 3200000 + k * 100000);
                bool partial = s->cgroups[0].threads_partial;
                size_t n = s->cgroups[0].n_threads;
                snapshot_free(s);
                if (!partial) {
                        assert_int_equal(n, N_THREADS);
                        break;
                }
        }
        print_message("busy again seen at the %u. read\n", k);
        assert_int_equal(k, 1);
        trace_reset(&t);
}

/* The host layer: quiet once the cgroup's members have settled; while the
 * host is idle its use is read at every sample (not every 2, 4, 8), and
 * use that jumps ends the quiet at once. */
static void test_host_idle(void **state) {
        Fixture *f = *state;
        Trace t = {};
        Snapshot *s = two_ticks(f, "--schedstat --cpuacct", "--schedstat --cpuacct");
        unsigned k, first_quiet = 0;

        /* Just read: its process list is fresh, so the host is not idle. */
        assert_false(sampler_all_quiet(f->sampler));
        snapshot_free(s);
        for (k = 0; k < SAMPLER_MEMBERS_FRESH + 3 && !first_quiet; k++) {
                s = traced_sample(f, &t, (3 + k) * 1000000ULL);
                if (sampler_all_quiet(f->sampler))
                        first_quiet = k + 1;
                snapshot_free(s);
        }
        print_message("quiet with settled members after %u samples\n", first_quiet);
        assert_true(first_quiet >= SAMPLER_MEMBERS_FRESH - 2);
        sampler_set_host_idle(f->sampler, true);
        for (unsigned i = 0; i < 3; i++, k++) {
                s = traced_sample(f, &t, (3 + k) * 1000000ULL);
                assert_int_equal(traced(&t, NULL, "/bench1/cpuacct.usage"), 1);
                assert_true(sampler_all_quiet(f->sampler));
                snapshot_free(s);
        }
        /* The use jumps: not quiet at this very sample. */
        _cleanup_(freep) char *text = NULL;
        char usage[64];
        assert_int_equal(
                rootdir_read_file(f->root, "/sys/fs/cgroup/cpuset/bench1/cpuacct.usage", &text, NULL), 0);
        snprintf(usage, sizeof(usage), "%llu\n", strtoull(text, NULL, 10) + 30ULL * NSEC_PER_SEC);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/cpuacct.usage", usage);
        s = traced_sample(f, &t, (3 + k) * 1000000ULL);
        assert_false(sampler_all_quiet(f->sampler));
        assert_false(s->cgroups[0].threads_partial);
        snapshot_free(s);
        sampler_set_host_idle(f->sampler, false);
        trace_reset(&t);
}

/* A busy cgroup of 64 threads is read in turns: 16 threads a tick, each
 * every 4th tick, their figures held in between; steerd's held threads
 * every tick; every member at once when the cgroup's use jumps. */
/* How many ticks apart a thread of a cgroup of N_THREADS is read. */
#define TURNS MIN((N_THREADS + SAMPLER_TURN_THREADS - 1) / SAMPLER_TURN_THREADS, SAMPLER_TURN_MAX)

static void test_turns(void **state) {
        Fixture *f = *state;
        const pid_t held[] = {FIRST_TID + 1, FIRST_TID + 2};
        unsigned reads[N_THREADS] = {};
        Trace t = {};
        Snapshot *s = two_ticks(f, "--schedstat --cpuacct", "--schedstat --cpuacct");

        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
        snapshot_free(s);
        /* steerd holds a mask on two of them (a pin: the actuator's
         * sampler_reread() reads them at once). */
        f->cg.held = held;
        f->cg.n_held = ELEMENTSOF(held);
        /* The tick after the first figure of the cgroup's use: all read. */
        gen(f, 2, "--schedstat --cpuacct");
        s = traced_sample(f, &t, 3000000);
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), N_THREADS);
        snapshot_free(s);

        for (unsigned k = 3; k < 11; k++) {
                gen(f, k, "--schedstat --cpuacct");
                s = traced_sample(f, &t, (k + 1) * 1000000ULL);
                const CgroupSample *c = &s->cgroups[0];
                /* Every member is listed, read or held. */
                assert_false(c->threads_partial);
                assert_int_equal(c->n_threads, N_THREADS);
                size_t n = traced(&t, "/proc/1", "/schedstat");
                unsigned others = 0;
                for (unsigned i = 0; i < N_THREADS; i++) {
                        char suffix[64];
                        snprintf(suffix, sizeof(suffix), "/%u/schedstat", FIRST_TID + i);
                        size_t got = traced(&t, "/proc/", suffix);
                        reads[i] += (unsigned) got;
                        bool is_held =
                                FIRST_TID + i == (unsigned) held[0] || FIRST_TID + i == (unsigned) held[1];
                        if (is_held)
                                assert_int_equal(got, 1);
                        else
                                others += (unsigned) got;
                        /* A thread read in turns shows its figure over the
                         * ticks since its last read (the same rates here). */
                        assert_true(fabs(c->threads[i].util - cap(thread_util_pct(FIRST_TID + i))) < 0.01);
                }
                print_message("tick %u: %zu of %d threads read\n", k, n, N_THREADS);
                /* A TURNS-th of the others (their turn), and the held ones. */
                assert_true(others >= N_THREADS / TURNS - 2 && others <= N_THREADS / TURNS);
                assert_int_equal(n, others + 2);
                snapshot_free(s);
        }
        /* Eight ticks: every thread read 8 / TURNS times, the held ones eight. */
        assert_int_equal(8 % TURNS, 0); /* the loop covers whole rounds of turns */
        for (unsigned i = 0; i < N_THREADS; i++)
                assert_int_equal(reads[i], i == 1 || i == 2 ? 8 : 8 / TURNS);

        /* The use jumps (a phase starts): every member read at once. */
        char usage[64];
        gen(f, 11, "--schedstat --cpuacct");
        _cleanup_(freep) char *text = NULL;
        assert_int_equal(
                rootdir_read_file(f->root, "/sys/fs/cgroup/cpuset/bench1/cpuacct.usage", &text, NULL), 0);
        snprintf(usage, sizeof(usage), "%llu\n", strtoull(text, NULL, 10) + 30ULL * NSEC_PER_SEC);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/cpuacct.usage", usage);
        s = traced_sample(f, &t, 12000000);
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), N_THREADS);
        snapshot_free(s);
        f->cg.held = NULL;
        f->cg.n_held = 0;
        trace_reset(&t);
}

/* Of a quiet cgroup the threads steerd holds are read, and only those. */
static void test_layers_held(void **state) {
        Fixture *f = *state;
        const pid_t held[] = {FIRST_TID + 3, FIRST_TID + 9, 99999 /* not a member */};
        Trace t = {};
        Snapshot *s = two_ticks(f, "--schedstat --cpuacct", "--schedstat --cpuacct");

        snapshot_free(s);
        f->cg.held = held;
        f->cg.n_held = ELEMENTSOF(held);
        s = traced_sample(f, &t, 3000000);
        const CgroupSample *c = &s->cgroups[0];
        assert_true(c->threads_partial);
        assert_int_equal(c->n_threads, 2);
        assert_int_equal(c->threads[0].tid, held[0]);
        assert_int_equal(c->threads[1].tid, held[1]);
        assert_non_null(c->threads[0].allowed);
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), 2);
        assert_int_equal(traced(&t, "/proc/1003/", "/schedstat"), 1);
        assert_int_equal(traced(&t, "/proc/1009/", "/schedstat"), 1);
        snapshot_free(s);
        trace_reset(&t);
}

/* A cgroup with one process: every thread is its, talking or not, known
 * without a read; and each thread's files are opened under it,
 * /proc/TGID/task/TID, not under /proc/TID (a wrapped host's stale
 * dentries). */
static void test_thread_process_one(void **state) {
        Fixture *f = *state;
        Trace t = {};
        Snapshot *s = two_ticks(f, "--schedstat --procs 1", "--schedstat --procs 1");
        const CgroupSample *c = &s->cgroups[0];

        assert_int_equal(c->n_threads, N_THREADS);
        for (size_t i = 0; i < c->n_threads; i++) {
                assert_true(c->threads[i].wakeups < f->settings.sticky_pair_wakeups);
                assert_int_equal(c->threads[i].tgid, FIRST_TID);
        }
        snapshot_free(s);

        gen(f, 2, "--schedstat --procs 1");
        s = traced_sample(f, &t, 3000000);
        size_t under_tgid = traced(&t, "/proc/1000/task/", "/schedstat");
        assert_true(under_tgid > 0);
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), under_tgid);
        snapshot_free(s);
        trace_reset(&t);
}

/* A process list that missed a process (its events lost): the threads of
 * the missing one are still read, under their own /proc/TID, and are not
 * taken for the listed process's. Once they talk, their status says. */
static void test_thread_process_stale(void **state) {
        Fixture *f = *state;
        const pid_t second = FIRST_TID + N_THREADS / 2;
        const char *ticks[] = {"--schedstat --procs 2", "--schedstat --procs 2",
                               "--schedstat --procs 2 --wakeups 5000"};
        char path[PATH_MAX];
        Snapshot *s = NULL;

        snprintf(path, sizeof(path), "%s/sys/fs/cgroup/cpuset/bench1/cgroup.procs", f->dir);
        for (unsigned k = 0; k < ELEMENTSOF(ticks); k++) {
                gen(f, k, ticks[k]);
                _cleanup_(fclosep) FILE *procs = fopen(path, "we");
                assert_non_null(procs);
                fprintf(procs, "%d\n", FIRST_TID); /* the second process is missing */
                fclose(TAKE_PTR(procs));
                if (k == 0) {
                        assert_int_equal(sampler_new(f->root, f->topo, &f->settings, &f->sampler), 0);
                        assert_int_equal(sampler_sample(f->sampler, 1000000, &f->cg, 1, &s), -EAGAIN);
                        continue;
                }
                assert_int_equal(sampler_sample(f->sampler, (k + 1) * 1000000, &f->cg, 1, &s), 0);
                const CgroupSample *c = &s->cgroups[0];
                assert_int_equal(c->n_threads, N_THREADS);
                for (size_t i = 0; i < c->n_threads; i++) {
                        pid_t tid = c->threads[i].tid;
                        pid_t want = tid < second ? FIRST_TID : k == 2 ? second : 0;
                        assert_int_equal(c->threads[i].tgid, want);
                }
                snapshot_free(s);
                s = NULL;
        }
}

/* Who wakes whom is observed where three or more threads of a latency
 * cgroup talk; on a fixture root (no tracefs, and not this host's) it is
 * unavailable: the sampler says why, once, and goes on without partners. */
static void test_wake_unavailable(void **state) {
        Fixture *f = *state;
        Snapshot *s = two_ticks(f, "--schedstat --procs 2", "--schedstat --procs 2");

        assert_string_equal(sampler_wake_status(f->sampler), "idle"); /* nobody talks: not tried */
        snapshot_free(s);
        for (unsigned k = 2; k < 4; k++) {
                gen(f, k, "--schedstat --procs 2 --wakeups 5000");
                assert_int_equal(sampler_sample(f->sampler, (k + 1) * 1000000, &f->cg, 1, &s), 0);
                const CgroupSample *c = &s->cgroups[0];
                assert_int_equal(c->n_threads, N_THREADS);
                for (size_t i = 0; i < c->n_threads; i++)
                        assert_int_equal(c->threads[i].n_partners, 0);
                assert_non_null(strstr(sampler_wake_status(f->sampler), "unavailable: no tracefs"));
                snapshot_free(s);
        }
        /* Off, it is not even tried */
        sampler_set_settings(f->sampler, &f->settings);
        sampler_set_wake_wanted(f->sampler, false);
        gen(f, 4, "--schedstat --procs 2 --wakeups 5000");
        assert_int_equal(sampler_sample(f->sampler, 5000000, &f->cg, 1, &s), 0);
        assert_string_equal(sampler_wake_status(f->sampler), "idle");
        snapshot_free(s);
}

/* Each thread's process, for pairs within a process: a leader's from the
 * cgroup's process list, any other thread's from its status, and that only
 * once it talks (scheduled in at least StickyPairWakeups times a second). */
static void test_thread_process(void **state) {
        Fixture *f = *state;
        const pid_t second = FIRST_TID + N_THREADS / 2; /* the leader of the second process */
        Snapshot *s = two_ticks(f, "--schedstat --procs 2", "--schedstat --procs 2");
        const CgroupSample *c = &s->cgroups[0];

        assert_int_equal(c->n_threads, N_THREADS);
        for (size_t i = 0; i < c->n_threads; i++) {
                pid_t tid = c->threads[i].tid;
                bool leader = tid == FIRST_TID || tid == second;
                assert_int_equal(c->threads[i].tgid, leader ? tid : 0);
        }
        snapshot_free(s);

        gen(f, 2, "--schedstat --procs 2 --wakeups 5000");
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s), 0);
        c = &s->cgroups[0];
        assert_int_equal(c->n_threads, N_THREADS);
        for (size_t i = 0; i < c->n_threads; i++) {
                pid_t tid = c->threads[i].tid;
                assert_true(c->threads[i].wakeups >= f->settings.sticky_pair_wakeups);
                assert_int_equal(c->threads[i].tgid, tid < second ? FIRST_TID : second);
        }
        snapshot_free(s);
}

/* A v1 cpuset without cpuacct: the cgroup layer is its processes' stat
 * (one file per process, not per thread). */
static void test_layers_procs(void **state) {
        Fixture *f = *state;
        Trace t = {};
        Snapshot *s = two_ticks(f, "--schedstat --procs 2", "--schedstat --procs 2");

        snapshot_free(s);
        s = traced_sample(f, &t, 3000000);
        assert_true(s->cgroups[0].threads_partial);
        assert_int_equal(traced(&t, NULL, "/bench1/cgroup.procs"), 1);
        assert_int_equal(traced(&t, "/proc/1", "/stat"), 2); /* /proc/1000/stat, /proc/1032/stat */
        assert_int_equal(traced(&t, "/proc/1000/stat", ""), 1);
        assert_int_equal(traced(&t, "/proc/1", "/schedstat"), 0);
        snapshot_free(s);

        gen(f, 2, "--schedstat --procs 2");
        snapshot_free(traced_sample(f, &t, 4000000)); /* the use's back-off */
        s = traced_sample(f, &t, 4500000);
        assert_false(s->cgroups[0].threads_partial);
        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
        assert_true(s->cgroups[0].usage > 1000);
        snapshot_free(s);

        /* No process to read (all gone): the use is unknown, never quiet. */
        char path[PATH_MAX];
        for (unsigned p = 0; p < 2; p++) {
                snprintf(path, sizeof(path), "%s/proc/%u/stat", f->dir, FIRST_TID + p * N_THREADS / 2);
                assert_int_equal(unlink(path), 0);
        }
        s = traced_sample(f, &t, 5000000);
        assert_false(s->cgroups[0].threads_partial);
        assert_true(s->cgroups[0].usage < 0);
        snapshot_free(s);
        trace_reset(&t);
}

/* The processes whose /proc/TGID/stat the trace read (not a thread's
 * /proc/TGID/task/TID/stat), marked in seen[tgid - FIRST_TID]; how many. */
static size_t traced_procs(const Trace *t, bool *seen, size_t n_seen) {
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++) {
                unsigned tgid;
                char tail[8];
                if (sscanf(t->paths[i], "/proc/%u/%7s", &tgid, tail) != 2 || !streq(tail, "stat"))
                        continue;
                n++;
                if (tgid >= FIRST_TID && tgid - FIRST_TID < n_seen)
                        seen[tgid - FIRST_TID] = true;
        }
        return n;
}

/* A quiet cgroup of many processes without cpuacct: its processes are
 * read in slices, a few every tick, round all of them every
 * SAMPLER_IDLE_MAX_TICKS ticks (not all of them every 8 ticks: no burst);
 * a slice that moves ends the quiet at once. */
static void test_layers_procs_sliced(void **state) {
        Fixture *f = *state;
        enum { N = 160, SLICE = (N + SAMPLER_IDLE_MAX_TICKS - 1) / SAMPLER_IDLE_MAX_TICKS };
        const char *args = "--schedstat --threads 160"; /* a process per thread */
        bool seen[N] = {};
        Trace t = {};
        Snapshot *s = two_ticks(f, args, args);
        uint64_t now = 3000000;

        assert_true(N > SAMPLER_USAGE_SLICE_MIN);
        assert_true(s->cgroups[0].usage > 100);
        snapshot_free(s);

        /* Tick 1 again: every process read, none moved: quiet. */
        s = traced_sample(f, &t, now);
        assert_int_equal(traced_procs(&t, seen, N), N);
        assert_true(s->cgroups[0].usage >= 0 && s->cgroups[0].usage < 1);
        snapshot_free(s);

        /* Quiet: SLICE processes a tick, each once in 8 ticks. */
        memset(seen, 0, sizeof(seen));
        for (unsigned k = 0; k < SAMPLER_IDLE_MAX_TICKS; k++) {
                now += 100000;
                s = traced_sample(f, &t, now);
                assert_true(s->cgroups[0].threads_partial);
                assert_int_equal(traced_procs(&t, seen, N), SLICE);
                assert_true(s->cgroups[0].usage >= 0 && s->cgroups[0].usage < 1);
                snapshot_free(s);
        }
        for (unsigned i = 0; i < N; i++)
                assert_true(seen[i]);

        /* Busy: the next slice sees it and every member is read at once;
         * the tick after, every process. */
        gen(f, 2, args);
        now += 100000;
        s = traced_sample(f, &t, now);
        assert_int_equal(traced_procs(&t, NULL, 0), SLICE);
        assert_false(s->cgroups[0].threads_partial);
        assert_int_equal(s->cgroups[0].n_threads, N);
        assert_true(s->cgroups[0].usage > 100);
        snapshot_free(s);
        now += 100000;
        s = traced_sample(f, &t, now);
        assert_int_equal(traced_procs(&t, NULL, 0), N);
        snapshot_free(s);
        trace_reset(&t);
}

/* With membership events the task lists are read every
 * SAMPLER_MEMBERS_EVERY samples; a join is seen at once. */
static void test_layers_membership(void **state) {
        Fixture *f = *state;
        Trace t = {};
        Snapshot *s = two_ticks(f, "--schedstat --cpuacct", "--schedstat --cpuacct");
        uint64_t now = 2000000;

        snapshot_free(s);
        sampler_set_membership_events(f->sampler, true);
        /* A thread that is in no task list yet (the fixture has its files). */
        gen(f, 1, "--schedstat --cpuacct --threads 65");
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/tasks", "1000\n");
        sampler_member_joined(f->sampler, "/sys/fs/cgroup/cpuset/bench1", FIRST_TID + 64, FIRST_TID + 64);
        size_t reads = 0;
        for (unsigned k = 1; k < SAMPLER_MEMBERS_EVERY; k++) {
                s = traced_sample(f, &t, now += 100000);
                reads += traced(&t, NULL, "/bench1/tasks");
                assert_int_equal(s->cgroups[0].n_members, N_THREADS + 1);
                snapshot_free(s);
        }
        assert_int_equal(reads, 0);
        /* The heal: the list as the file says. */
        s = traced_sample(f, &t, now += 100000);
        assert_int_equal(traced(&t, NULL, "/bench1/tasks"), 1);
        assert_int_equal(s->cgroups[0].n_members, 1);
        snapshot_free(s);
        trace_reset(&t);
}

/* A small cgroup between heals: its process list each sample, its thread
 * list only when a process came or went (a task moved in raises no event). */
static void test_layers_small_moved_in(void **state) {
        Fixture *f = *state;
        Trace t = {};
        char tasks[256] = "";
        Snapshot *s = two_ticks(f, "--schedstat --cpuacct --threads 8 --procs 2",
                                "--schedstat --cpuacct --threads 8 --procs 2");
        uint64_t now = 2000000;

        snapshot_free(s);
        sampler_set_membership_events(f->sampler, true);
        /* Thread 1008's files exist; the lists say the cgroup is as before. */
        gen(f, 2, "--schedstat --cpuacct --threads 9 --procs 2");
        for (unsigned i = 0; i < 8; i++)
                snprintf(tasks + strlen(tasks), sizeof(tasks) - strlen(tasks), "%u\n", FIRST_TID + i);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/tasks", tasks);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/cgroup.procs", "1000\n1004\n");
        s = traced_sample(f, &t, now += 100000);
        assert_int_equal(traced(&t, NULL, "/bench1/cgroup.procs"), 1);
        assert_int_equal(traced(&t, NULL, "/bench1/tasks"), 0);
        assert_int_equal(s->cgroups[0].n_members, 8);
        snapshot_free(s);

        /* A process moved in: seen at this sample. */
        snprintf(tasks + strlen(tasks), sizeof(tasks) - strlen(tasks), "%u\n", FIRST_TID + 8);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/tasks", tasks);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/cgroup.procs", "1000\n1004\n1008\n");
        s = traced_sample(f, &t, now += 100000);
        assert_int_equal(traced(&t, NULL, "/bench1/tasks"), 1);
        assert_int_equal(s->cgroups[0].n_members, 9);
        snapshot_free(s);

        /* And it left: the lists are read again. */
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/cgroup.procs", "1000\n1004\n");
        tasks[strlen(tasks) - 5] = '\0';
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/tasks", tasks);
        s = traced_sample(f, &t, now += 100000);
        assert_int_equal(traced(&t, NULL, "/bench1/tasks"), 1);
        assert_int_equal(s->cgroups[0].n_members, 8);
        snapshot_free(s);

        /* Settled (no process came or went for SAMPLER_MEMBERS_FRESH
         * samples): the process list only every SAMPLER_MEMBERS_SMALL_EVERY
         * samples, and a process moved in is seen within that many. */
        for (unsigned i = 0; i < SAMPLER_MEMBERS_FRESH; i++)
                snapshot_free(traced_sample(f, &t, now += 100000));
        trace_reset(&t);
        unsigned reads = 0;
        for (unsigned i = 0; i < SAMPLER_MEMBERS_SMALL_EVERY; i++) {
                snapshot_free(traced_sample(f, &t, now += 100000));
                reads += traced(&t, NULL, "/bench1/cgroup.procs");
                trace_reset(&t);
        }
        assert_int_equal(reads, 1);
        snprintf(tasks + strlen(tasks), sizeof(tasks) - strlen(tasks), "%u\n", FIRST_TID + 8);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/tasks", tasks);
        test_write_file(f->dir, "/sys/fs/cgroup/cpuset/bench1/cgroup.procs", "1000\n1004\n1008\n");
        unsigned seen_after = 0;
        for (unsigned i = 1; i <= SAMPLER_MEMBERS_SMALL_EVERY && !seen_after; i++) {
                s = traced_sample(f, &t, now += 100000);
                if (s->cgroups[0].n_members == 9)
                        seen_after = i;
                snapshot_free(s);
        }
        assert_true(seen_after >= 1 && seen_after <= SAMPLER_MEMBERS_SMALL_EVERY);
        trace_reset(&t);
}

/* ---- live: the descriptors kept open for real threads ---- */

#define V1 "/sys/fs/cgroup/cpuset"

typedef struct LiveThread {
        pthread_t thread;
        _Atomic pid_t tid;
        atomic_bool stop;
        bool busy;
} LiveThread;

static void *live_thread(void *arg) {
        LiveThread *t = arg;
        t->tid = gettid();
        while (!t->stop)
                if (!t->busy) {
                        struct timespec ts = {.tv_nsec = 5000000};
                        nanosleep(&ts, NULL);
                }
        return NULL;
}

static size_t count_fds(void) {
        _cleanup_(closedirp) DIR *d = opendir("/proc/self/fd");
        size_t n = 0;
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                n += de->d_name[0] != '.';
        return n;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* Descriptors scarce (a quarter of a low open-file limit): a cgroup that
 * turns quiet gives its threads' kept files up, for the busy threads of
 * other cgroups; its figures stay, and it opens them again when it wakes. */
static void test_quiet_gives_fds_up(void **state) {
        Fixture *f = *state;
        struct rlimit old, low;
        Snapshot *s = NULL;

        assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
        low = old;
        low.rlim_cur = 400; /* 100 kept: fewer than 64 threads' 192 */
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        gen(f, 0, "--schedstat --cpuacct");
        size_t base = count_fds();
        assert_int_equal(sampler_new(f->root, f->topo, &f->settings, &f->sampler), 0);
        sampler_keep_open(f->sampler);
        assert_int_equal(sampler_sample(f->sampler, 1000000, &f->cg, 1, &s), -EAGAIN);
        gen(f, 1, "--schedstat --cpuacct");
        assert_int_equal(sampler_sample(f->sampler, 2000000, &f->cg, 1, &s), 0);
        assert_false(s->cgroups[0].threads_partial);
        snapshot_free(s);
        size_t busy = count_fds();
        print_message("descriptors: %zu before, %zu busy\n", base, busy);
        assert_true(busy >= base + 90);

        /* Quiet (its use did not move): the threads' files are closed. */
        assert_int_equal(sampler_sample(f->sampler, 3000000, &f->cg, 1, &s), 0);
        assert_true(s->cgroups[0].threads_partial);
        snapshot_free(s);
        size_t quiet = count_fds();
        print_message("descriptors quiet: %zu\n", quiet);
        assert_true(quiet + 90 <= busy);

        /* Busy again: every member read, with the figures it had. */
        gen(f, 3, "--schedstat --cpuacct");
        for (uint64_t t = 4000000; t <= 12000000; t += 1000000) {
                assert_int_equal(sampler_sample(f->sampler, t, &f->cg, 1, &s), 0);
                bool partial = s->cgroups[0].threads_partial;
                if (!partial)
                        assert_int_equal(s->cgroups[0].n_threads, N_THREADS);
                snapshot_free(s);
                if (!partial)
                        break;
        }
        assert_true(count_fds() >= base + 90);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void cg_put(const char *dir, const char *file, const char *text) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        test_write_file("/", path, text);
}

static Snapshot *live_tick(Sampler *sp, const SamplerCgroup *cg) {
        Snapshot *s = NULL;
        usleep(100000);
        assert_int_equal(sampler_sample(sp, now_usec(), cg, 1, &s), 0);
        assert_int_equal(s->n_cgroups, 1);
        return s;
}

static void test_live_kept_fds(void **state) {
        (void) state;
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        _cleanup_(topology_freep) Topology *topo = NULL;
        Sampler *sp = NULL;
        Snapshot *s = NULL;
        Settings st;
        LiveThread t[2] = {{.busy = true}, {.busy = false}};
        char dir[128], buf[32];
        size_t base;

        if (geteuid() != 0 || access(V1 "/cpuset.cpus", F_OK) < 0) {
                print_message("skipped: needs root and the cgroup v1 cpuset hierarchy\n");
                skip();
        }
        snprintf(dir, sizeof(dir), V1 "/steerd-test-sampler-%d", (int) getpid());
        assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
        _cleanup_(freep) char *cpus = NULL, *mems = NULL;
        assert_int_equal(rootdir_open("/", &root), 0);
        assert_int_equal(rootdir_read_file(root, V1 "/cpuset.effective_cpus", &cpus, NULL), 0);
        assert_int_equal(rootdir_read_file(root, V1 "/cpuset.effective_mems", &mems, NULL), 0);
        cg_put(dir, "cpuset.cpus", cpus);
        cg_put(dir, "cpuset.mems", mems);
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(pthread_create(&t[i].thread, NULL, live_thread, &t[i]), 0);
                while (!t[i].tid)
                        usleep(1000);
                snprintf(buf, sizeof(buf), "%d\n", (int) t[i].tid);
                cg_put(dir, "tasks", buf);
        }

        assert_int_equal(topology_load(root, NULL, &topo), 0);
        settings_init_defaults(&st);
        CgroupLocation loc = {.dir = dir, .v2 = false};
        SamplerCgroup cg = {.name = "/steerd-test-sampler", .loc = &loc, .policy = CGROUP_POLICY_LATENCY};
        base = count_fds();
        assert_int_equal(sampler_new(root, topo, &st, &sp), 0);
        /* What the daemon does where balancing has no use for runnable (one
         * LLC): whatever this host's runnable source is (without debugfs it
         * is every thread of the host), only the cgroup's threads are read. */
        sampler_set_runnable_needed(sp, false);
        assert_int_equal(sampler_sample(sp, now_usec(), &cg, 1, &s), -EAGAIN);
        /* stat and schedstat of both threads stay open (two per thread), and
         * the files read every tick: /proc/stat, /proc/pressure/cpu (where
         * PSI is on), the cgroup's cpuset.effective_cpus and, the cpuset
         * having no cpuacct, this process's stat. */
        size_t none = base;
        assert_true(count_fds() >= base + 4 + 3 && count_fds() <= base + 4 + 4);
        base = count_fds() - 4;

        for (int i = 0; i < 12; i++) {
                s = live_tick(sp, &cg);
                assert_int_equal(s->cgroups[0].n_threads, 2);
                if (i < 11)
                        snapshot_free(s);
        }
        for (size_t i = 0; i < 2; i++) {
                const ThreadSample *ts = &s->cgroups[0].threads[i];
                bool busy = ts->tid == t[0].tid;
                print_message("tid %d (%s): util %.0f wait %.0f cpu %d\n", (int) ts->tid,
                              busy ? "busy" : "sleeping", ts->util, ts->wait, ts->cpu);
                assert_true(ts->cpu >= 0);
                assert_non_null(ts->allowed);
                /* on a loaded 2-CPU machine the spinner still gets a good share */
                if (busy)
                        assert_true(ts->util + ts->wait > 300);
                else
                        assert_true(ts->util < 50);
        }
        snapshot_free(s);
        assert_int_equal(count_fds(), base + 4);

        /* steerd changed the idle thread's mask: after sampler_reread_threads()
         * the next snapshot has it, not the mask held from before. */
        _cleanup_cpuset_ CpuSet one = NULL, all = NULL;
        assert_int_equal(thread_get_affinity(t[1].tid, &all), 0);
        if (hwloc_bitmap_weight(all) >= 2) {
                one = hwloc_bitmap_alloc();
                hwloc_bitmap_only(one, (unsigned) hwloc_bitmap_first(all));
                assert_int_equal(thread_set_affinity(t[1].tid, one), 0);
                sampler_reread_threads(sp);
                s = live_tick(sp, &cg);
                for (size_t i = 0; i < s->cgroups[0].n_threads; i++)
                        if (s->cgroups[0].threads[i].tid == t[1].tid)
                                assert_true(hwloc_bitmap_isequal(s->cgroups[0].threads[i].allowed, one));
                snapshot_free(s);
                assert_int_equal(thread_set_affinity(t[1].tid, all), 0);
        }

        /* The busy one exits: its descriptors are closed at the next tick. */
        t[0].stop = true;
        pthread_join(t[0].thread, NULL);
        test_wait_thread_gone(t[0].tid);
        s = live_tick(sp, &cg);
        assert_int_equal(s->cgroups[0].n_threads, 1);
        assert_int_equal(s->cgroups[0].threads[0].tid, t[1].tid);
        snapshot_free(s);
        assert_int_equal(count_fds(), base + 2);

        t[1].stop = true;
        pthread_join(t[1].thread, NULL);
        test_wait_thread_gone(t[1].tid);
        s = live_tick(sp, &cg);
        assert_int_equal(s->cgroups[0].n_threads, 0);
        snapshot_free(s);
        /* No thread of this process is in the cgroup now: its stat goes too. */
        assert_int_equal(count_fds(), base - 1);
        sampler_free(sp);
        assert_int_equal(count_fds(), none);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        if (system("python3 -c pass 2>/dev/null") != 0) {
                fprintf(stderr, "python3 is missing: the fixture generator needs it\n");
                return TEST_SKIP;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_schedstat_source, setup, teardown),
                cmocka_unit_test_setup_teardown(test_threads_source, setup, teardown),
                cmocka_unit_test_setup_teardown(test_threads_source_bounded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_debugfs_source, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cpu_goes_offline, setup, teardown),
                cmocka_unit_test_setup_teardown(test_counters_backwards, setup, teardown),
                cmocka_unit_test_setup_teardown(test_malformed_stat, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_and_thread_vanish, setup, teardown),
                cmocka_unit_test_setup_teardown(test_smoothing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_first_interval, setup, teardown),
                cmocka_unit_test_setup_teardown(test_idle_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kept_parent_closed_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runnable_not_needed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_task_list_lines, setup, teardown),
                cmocka_unit_test_setup_teardown(test_layers_quiet, setup, teardown),
                cmocka_unit_test_setup_teardown(test_layers_quiet_raw, setup, teardown),
                cmocka_unit_test_setup_teardown(test_snapshot_recycle, setup, teardown),
                cmocka_unit_test_setup_teardown(test_quiet_gives_fds_up, setup, teardown),
                cmocka_unit_test_setup_teardown(test_host_idle, setup, teardown),
                cmocka_unit_test_setup_teardown(test_turns, setup, teardown),
                cmocka_unit_test_setup_teardown(test_layers_held, setup, teardown),
                cmocka_unit_test_setup_teardown(test_layers_procs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_layers_procs_sliced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_process, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_process_one, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wake_unavailable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_process_stale, setup, teardown),
                cmocka_unit_test_setup_teardown(test_layers_small_moved_in, setup, teardown),
                cmocka_unit_test_setup_teardown(test_layers_membership, setup, teardown),
                cmocka_unit_test(test_live_kept_fds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
