/* SPDX-License-Identifier: MIT */
#pragma once

/* A trial's built-in signals: what a cgroup's threads waited and ran, read
 * at the start and the end of a block's measured part, without any help
 * from the application (per-thread schedstat, and cpu.pressure where cgroup
 * v2 has it). Two reads a block, whatever the block's length: the cost of a
 * trial is a few hundred file reads a minute for a cgroup of a hundred
 * threads. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup-path.h"
#include "rootdir.h"
#include "trial.h"

typedef struct ThreadCounter {
        pid_t tid;
        uint64_t run_ns, run_delay_ns, pcount;
} ThreadCounter;

typedef struct CgroupCounters {
        uint64_t at_us;         /* CLOCK_MONOTONIC of the read */
        ThreadCounter *threads; /* sorted by tid */
        size_t n;
        bool has_pressure;
        uint64_t pressure_some_us; /* cumulative "some" stall of cpu.pressure */
} CgroupCounters;

void cgroup_counters_done(CgroupCounters *c);

/* Reads the cgroup's thread list (cgroup.threads or v1 tasks) and each
 * thread's schedstat; a thread that exits meanwhile is skipped. -ENOENT when
 * the cgroup is gone. */
int cgroup_counters_read(const RootDir *root, const CgroupLocation *loc, uint64_t now_us,
                         CgroupCounters *ret);

/* The block's figures from its first and last read: latency (µs of run-queue
 * delay per time slice), slices per second, and pressure (% of the time some
 * thread stalled) where both reads have it. A thread in both reads counts
 * its difference; one only in the last (born or moved in during the block)
 * counts what it has; one that left takes its share with it, on both arms
 * alike. A signal without a figure (nothing ran) has has[] false. */
int cgroup_counters_values(const CgroupCounters *a, const CgroupCounters *b, TrialValues *ret);

/* The load between two reads, whatever the placement: the demand (CPU time
 * run plus run-queue time waited, in CPUs; a group squeezed onto one core
 * runs less and waits more, the sum stays) and the busy threads (those that
 * ran at least 1% of the time). The placement search's phase (search.h). */
int cgroup_counters_load(const CgroupCounters *a, const CgroupCounters *b, double *ret_demand,
                         unsigned *ret_busy);
