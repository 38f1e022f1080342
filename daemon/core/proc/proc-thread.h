/* SPDX-License-Identifier: MIT */
#pragma once

/* Parsers of the per-thread files under /proc/<pid>/task/<tid>/. Errors are
 * reported as described in proc-stat.h: -EBADMSG, logged as
 * "fname:line: reason", line through reterr_line (stat and schedstat are one
 * record, so always line 1 there, 0 for an empty file). */

#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"
#include "steerd-macros.h"

typedef struct ThreadStat {
        pid_t tid;          /* field 1 */
        char state;         /* field 3: R, S, D, ... */
        uint64_t utime;     /* field 14, clock ticks */
        uint64_t stime;     /* field 15, clock ticks */
        uint64_t starttime; /* field 22, clock ticks since boot; (tid, starttime) identifies the thread */
        int processor;      /* field 39: the CPU it last ran on */
} ThreadStat;

/* stat: "tid (comm) state f4 ... f52". comm may hold blanks, ')' and even
 * newlines, so the fields start after the last ')'. A record that ends
 * before field 39 is malformed; fields after 39 are not read. */
int thread_stat_parse(const char *contents, const char *fname, ThreadStat *ret, unsigned *reterr_line);

typedef struct ThreadSchedstat {
        uint64_t sum_exec_runtime_ns; /* time on a CPU */
        uint64_t run_delay_ns;        /* time runnable but waiting on a run queue */
        uint64_t pcount;              /* times it was scheduled in */
} ThreadSchedstat;

/* schedstat: exactly three numbers. */
int thread_schedstat_parse(const char *contents, const char *fname, ThreadSchedstat *ret,
                           unsigned *reterr_line);

typedef struct ThreadSched {
        uint64_t nr_migrations; /* se.nr_migrations */
        uint64_t nr_voluntary_switches;
        uint64_t nr_involuntary_switches;
} ThreadSched;

/* sched (CONFIG_SCHED_DEBUG): "KEY   :   VALUE" lines after a
 * "comm (pid, #threads: N)" line and a line of dashes. Only the three keys
 * above are read; one absent is 0 (the set varies by kernel and config), one
 * present with a value that is not an unsigned number, or present twice, is
 * malformed, as is a file without the dashes. */
int thread_sched_parse(const char *contents, const char *fname, ThreadSched *ret, unsigned *reterr_line);

/* status: the "Cpus_allowed_list:" line, in cpulist syntax. Missing, not a
 * cpulist, or empty (no thread can have an empty affinity) is -EBADMSG.
 * The caller owns the set. */
int thread_status_parse_cpus_allowed(const char *contents, const char *fname, CpuSet *ret,
                                     unsigned *reterr_line);

/* status: the "Tgid:" line, the thread's process. Missing, not a number, or
 * 0 is -EBADMSG. */
int thread_status_parse_tgid(const char *contents, const char *fname, pid_t *ret, unsigned *reterr_line);
