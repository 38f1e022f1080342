/* SPDX-License-Identifier: MIT */
#pragma once

/* Parser of /sys/kernel/debug/sched/debug (/proc/sched_debug before 5.13):
 * the kernel's own PELT figures of each CPU's root cfs_rq. Errors are
 * reported as described in proc-stat.h: -EBADMSG, logged as
 * "fname:line: reason", line through reterr_line. The sampler treats any
 * error as "this source is unavailable" and falls back. */

#include <stdint.h>

#include "steerd-macros.h"

typedef struct SchedDebugCpu {
        unsigned cpu;
        uint64_t util_avg;     /* root cfs_rq .util_avg; may exceed 1024 for a while after migrations */
        uint64_t runnable_avg; /* root cfs_rq .runnable_avg (5.7+) */
        unsigned nr_running;   /* the CPU's .nr_running: tasks of every class on its run queue */
} SchedDebugCpu;

typedef struct SchedDebug {
        SchedDebugCpu *cpus; /* online CPUs, ascending; ids may be sparse */
        size_t n_cpus;
} SchedDebug;

/* A CPU's section starts at "cpu#N, F MHz" (or bare "cpu#N" where the arch
 * has no clock figure) and holds ".nr_running", then sub-sections; of those
 * only the root "cfs_rq[N]:/" is read (not "cfs_rq[N]:/autogroup-1", not
 * "cfs_rq[N]:/system.slice/..."). Each CPU needs .nr_running, exactly one
 * root cfs_rq with its N equal to the CPU's, and .util_avg and .runnable_avg
 * there (so kernels before 5.7, which have .runnable_load_avg, fail). The
 * "runnable tasks:" tables are skipped whole up to the next cpu# line: they
 * print raw task names, which may hold newlines, so any line there could
 * have been written by an unprivileged thread, and none may set a figure.
 * Only a well-formed "cpu#N" line ends a table (a malformed one is a name's
 * tail there, unless it follows a blank line as real headers do), so such a
 * thread can still forge one; that makes the parse fail (a CPU without its
 * figures, ids out of order) or at worst adds a CPU id above the last real
 * one, and never alters a real CPU's figures. Repeated keys or sections and
 * CPU ids out of ascending order are malformed for the same reason. */
int sched_debug_parse(const char *contents, const char *fname, SchedDebug *ret, unsigned *reterr_line);
void sched_debug_done(SchedDebug *d);
const SchedDebugCpu *sched_debug_find(const SchedDebug *d, unsigned cpu) _pure_;
