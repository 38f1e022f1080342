/* SPDX-License-Identifier: MIT */
#pragma once

/* The sampler reads the OS through the root directory and builds one
 * immutable Snapshot per tick. It keeps only the previous raw counters and
 * the smoothed values; it makes no decisions. */

#include "cgroup-path.h"
#include "rootdir.h"
#include "settings.h"
#include "snapshot.h"
#include "topology.h"

typedef struct Sampler Sampler;

/* /proc/<tid>/sched is the largest per-thread file and only feeds the
 * reported nr_migrations: it is read every this many samples. */
#define SAMPLER_SCHED_FILE_EVERY 10

/* A thread that used less than this share of a CPU (run time and wait)
 * since its last read is read half as often, down to once every
 * SAMPLER_IDLE_MAX_TICKS ticks: most threads of a big host sleep. */
#define SAMPLER_IDLE_PERCENT 1
#define SAMPLER_IDLE_MAX_TICKS 8u

/* At most this many /proc descriptors kept open (two per thread). */
#define SAMPLER_MAX_KEPT_FDS ((size_t) 65536)

/* Malformed sched/debug reads in a row before the sampler stops using it. */
#define SAMPLER_DEBUGFS_MAX_FAILURES 3

/* An opted-in cgroup, as the sampler needs it. */
typedef struct SamplerCgroup {
        const char *name;          /* as the operator named it */
        const CgroupLocation *loc; /* where it lives */
        CgroupPolicy policy;
        /* The CPUs it had before steerd first changed it, NULL if unchanged:
         * what it "allows" is what the operator gave it, not what we left. */
        hwloc_const_bitmap_t original_cpus;
} SamplerCgroup;

/* root and topo must outlive the sampler. */
int sampler_new(const RootDir *root, const Topology *topo, const Settings *settings, Sampler **ret);
Sampler *sampler_free(Sampler *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sampler *, sampler_free);

/* Settings may change on reload; only the sampling ones matter here. */
void sampler_set_settings(Sampler *s, const Settings *settings);

/* Take a sample at now_us (CLOCK_MONOTONIC). The first call only primes the
 * counters and returns -EAGAIN; later calls return a snapshot of the deltas.
 * A malformed file fails the sample with -EBADMSG (the file and line are
 * logged) and leaves the previous counters as they were. A cgroup that
 * vanishes is left out of the snapshot, not an error. */
int sampler_sample(Sampler *s, uint64_t now_us, const SamplerCgroup *cgroups, size_t n_cgroups,
                   Snapshot **ret);

/* Read every thread in full at the next sample. An idle thread's mask is
 * held between its reads like the rest of its figures: after steerd
 * changed masks, a held one would look like someone else's change. */
void sampler_reread_threads(Sampler *s);

/* Runnable feeds only contention-aware balancing (and the operator's view
 * in observe mode): without it, sched/debug and the threads scan are not
 * read and snapshots say RUNNABLE_SOURCE_NONE. Default: needed. */
void sampler_set_runnable_needed(Sampler *s, bool needed);
RunnableSource sampler_source(const Sampler *s);
