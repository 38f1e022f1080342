/* SPDX-License-Identifier: MIT */
#pragma once

/* One immutable snapshot per tick: everything the policy engine may look at.
 * It is self-contained (CPU -> core -> LLC mapping included) so that a
 * recorded stream replays on any host. All util-like figures are on the
 * kernel's capacity scale, 1024 = one CPU fully busy. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"

typedef enum RunnableSource {
        RUNNABLE_SOURCE_SCHEDSTAT, /* /proc/schedstat per-CPU run + wait time */
        RUNNABLE_SOURCE_DEBUGFS,   /* sched/debug root cfs_rq runnable_avg */
        RUNNABLE_SOURCE_THREADS,   /* Σ Δrun_delay of threads, charged to their last CPU */
        RUNNABLE_SOURCE_NONE,      /* not sampled (no policy needs it): runnable = util */
        _RUNNABLE_SOURCE_MAX,
        _RUNNABLE_SOURCE_INVALID = -EINVAL,
} RunnableSource;

const char *runnable_source_to_string(RunnableSource s);
RunnableSource runnable_source_from_string(const char *s);

/* What an opted-in cgroup asked for. A cgroup's policy narrows the mode. */
typedef enum CgroupPolicy {
        CGROUP_POLICY_LATENCY,  /* window + sticky + balance */
        CGROUP_POLICY_BALANCED, /* balance only */
        _CGROUP_POLICY_MAX,
        _CGROUP_POLICY_INVALID = -EINVAL,
} CgroupPolicy;

const char *cgroup_policy_to_string(CgroupPolicy p);
CgroupPolicy cgroup_policy_from_string(const char *s);

typedef struct CpuSample {
        unsigned cpu; /* OS index */
        int llc;      /* index into Snapshot.llcs, -1 if unknown (offline, not in topology) */
        int core;     /* index of the core (global, dense), -1 if unknown */
        bool online;
        double util;     /* 0..1024, smoothed */
        double runnable; /* 0.., smoothed; running + waiting, may exceed 1024 */
        double boosted;  /* min(max(util, runnable), 1024) */
} CpuSample;

typedef struct LlcSample {
        unsigned id;           /* dense, 0..n_llcs-1 */
        CpuSet cpus;           /* all CPUs of the domain, online or not */
        unsigned weight;       /* online CPUs in the domain */
        double util;           /* mean per online CPU, 0..1024 */
        double boosted;        /* mean per online CPU, 0..1024 */
        unsigned nr_idle_scan; /* SIS_UTIL, 0..weight */
        bool overloaded;       /* output only: policy_mark_overloaded() sets it, the policy never reads it */
        int package;           /* the package that holds it (hwloc logical index), -1 if unknown */
} LlcSample;

/* Who a thread talks to (sampled sched_waking, both directions counted):
 * its busiest partners, most first. */
#define SNAPSHOT_MAX_PARTNERS 4
/* A thread woken fewer times a second takes no part in a group (the
 * sampler observes nothing for it, the policy groups nothing with it). */
#define GROUP_MIN_WAKEUPS 20.0
/* A member of a group woken fewer times a second stopped talking. */
#define GROUP_STOP_WAKEUPS 5.0
typedef struct WakePartner {
        pid_t tid;
        double rate; /* wakeups per second between the two, estimated from the samples */
} WakePartner;

typedef struct ThreadSample {
        pid_t tid;
        pid_t tgid;         /* its process; 0: unknown (read only for threads that talk) */
        uint64_t starttime; /* field 22 of stat, clock ticks since boot: (tid, starttime) is the identity */
        int cpu;            /* last CPU, field 39 of stat */
        CpuSet allowed;     /* the thread's current affinity */
        /* allowed is the one read at an earlier tick, held with the rest of
         * an idle thread's figures (or a busy one's off turn): it may
         * predate a change steerd made since, so it proves no change by
         * someone else. Not recorded: the policy does not read it. */
        bool allowed_held;
        double util;            /* CPU time it got, 0..1024 per interval, smoothed */
        double wait;            /* run-queue wait, 0..1024 per interval, smoothed */
        uint64_t run_delay_ns;  /* raw cumulative, for the record */
        uint64_t nr_migrations; /* from /proc/<pid>/task/<tid>/sched; 0 if absent */
        double wakeups;         /* times scheduled in per second (schedstat pcount), smoothed; < 0:
                                 * unknown (recordings from before it was sampled) */
        WakePartner partners[SNAPSHOT_MAX_PARTNERS]; /* from the last observation of who wakes whom */
        unsigned n_partners;
        /* Its cgroup wakes often enough to be observed and who wakes whom
         * can observe, but no finished observation covered the thread yet:
         * whether it talks in a group is not known (no partners proves
         * nothing). */
        bool wake_unknown;
} ThreadSample;

typedef struct CgroupSample {
        char *path; /* as named by the operator: "/bench1" or "/system.slice/app.service" */
        CgroupPolicy policy;
        CpuSet allowed;             /* what the cgroup may use: its parent's effective CPUs ∩ online */
        CpuSet cpus;                /* its current effective CPUs */
        double pressure_some_avg10; /* cgroup v2 cpu.pressure; 0 where there is none */
        /* The cgroup layer, read every tick: its CPU use on the capacity
         * scale, smoothed (v2 cpu.stat, v1 cpuacct.usage, else its
         * processes' stat), < 0 where unknown; and its threads. */
        double usage;
        size_t n_members;
        size_t n_processes; /* lines of its cgroup.procs; 0: unknown */
        /* The thread layer: threads[] holds every member (false), or only
         * the threads steerd holds a mask on (true: the cgroup was quiet,
         * the other members were not read this tick and keep their state). */
        bool threads_partial;
        ThreadSample *threads;
        size_t n_threads;
} CgroupSample;

typedef struct Snapshot {
        uint64_t time_us;   /* CLOCK_MONOTONIC */
        uint64_t period_us; /* time since the previous sample */
        RunnableSource source;
        CpuSample *cpus; /* sorted by OS index, every CPU the topology knows */
        size_t n_cpus;
        LlcSample *llcs;
        size_t n_llcs;
        double psi_some_avg10, psi_full_avg10;
        CgroupSample *cgroups;
        size_t n_cgroups;
        bool threads_truncated; /* the THREADS source hit its scan bound */
        /* The kernel's cache-aware scheduling is on (kernel-cache.h): it
         * keeps a process's threads in one LLC itself. */
        bool kernel_cache_aware;
} Snapshot;

Snapshot *snapshot_free(Snapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Snapshot *, snapshot_free);

/* Lookup by OS index; NULL if the snapshot has no such CPU. */
const CpuSample *snapshot_cpu(const Snapshot *s, unsigned cpu);
/* The online CPUs of a core (a core index of CpuSample.core), freshly allocated. */
int snapshot_core_cpus(const Snapshot *s, int core, CpuSet *ret);
/* All online CPUs. */
int snapshot_online_cpus(const Snapshot *s, CpuSet *ret);

/* SIS_UTIL: nr_idle_scan from the mean per-CPU util x (0..1024) of an LLC of
 * weight w and the LLC domain's imbalance_pct p (117 in the kernel). */
unsigned sis_nr_idle_scan(double x, unsigned w, unsigned p);
#define SIS_IMBALANCE_PCT 117
