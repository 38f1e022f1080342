/* SPDX-License-Identifier: MIT */
#pragma once

/* Parser of /proc/schedstat (CONFIG_SCHEDSTATS), the per-CPU run and
 * run-queue wait time. Errors are reported as described in proc-stat.h:
 * -EBADMSG, logged as "fname:line: reason", line through reterr_line. */

#include <stdint.h>

#include "steerd-macros.h"

/* The versions whose cpuN lines we know (4.x..6.x); they differ only in the
 * domain lines, which are not read. */
#define PROC_SCHEDSTAT_VERSION_MIN 15
#define PROC_SCHEDSTAT_VERSION_MAX 17

typedef struct CpuSchedstat {
        unsigned cpu;
        uint64_t run_ns;  /* field 7: time tasks ran on this CPU */
        uint64_t wait_ns; /* field 8: run_delay, time tasks waited on its run queue */
} CpuSchedstat;

typedef struct ProcSchedstat {
        unsigned version;
        uint64_t timestamp; /* jiffies */
        CpuSchedstat *cpus; /* online CPUs, ascending; ids may be sparse */
        size_t n_cpus;
} ProcSchedstat;

/* The first line must be "version N"; "timestamp N" and the cpuN lines (exactly
 * 9 numbers) follow; domainN and unknown lines are ignored.
 * -EPROTONOSUPPORT (logged, reterr_line set to 1) for a version outside
 * PROC_SCHEDSTAT_VERSION_MIN..MAX, whose cpuN fields may mean something else.
 * -EBADMSG for malformed lines, CPU ids out of ascending order or repeated,
 * an empty file, or no cpuN line at all. */
int proc_schedstat_parse(const char *contents, const char *fname, ProcSchedstat *ret, unsigned *reterr_line);
void proc_schedstat_done(ProcSchedstat *s);
const CpuSchedstat *proc_schedstat_find(const ProcSchedstat *s, unsigned cpu) _pure_;
