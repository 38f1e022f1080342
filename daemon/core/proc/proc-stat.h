/* SPDX-License-Identifier: MIT */
#pragma once

/* Parser of /proc/stat's per-CPU lines, and the util figure derived from two
 * samples of them.
 *
 * Error reporting, shared by all the /proc and debugfs text parsers
 * (proc-stat, proc-schedstat, proc-pressure, proc-thread, sched-debug):
 * every parser takes the buffer, the file name to use in messages, its
 * result, and an optional `unsigned *reterr_line`. A malformed input is
 * logged once as "fname:line: reason" (log_parse_error()) and the parser
 * returns -EBADMSG, leaves the result untouched and, if reterr_line is not
 * NULL, stores the 1-based line at fault there, or 0 when the fault is the
 * file as a whole (empty, a required line absent). reterr_line is not
 * touched on success or on other errors (-ENOMEM), so callers that want it
 * initialise it. */

#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "steerd-macros.h"

typedef struct CpuTimes {
        unsigned cpu;
        /* USER_HZ ticks, cumulative since boot; 0 where the kernel has no such column yet */
        uint64_t user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice;
} CpuTimes;

typedef struct ProcStat {
        CpuTimes *cpus; /* online CPUs only, ascending by cpu; ids may be sparse */
        size_t n_cpus;
} ProcStat;

/* Parses the "cpuN ..." lines; the aggregate "cpu " line and the other lines
 * (intr, ctxt, btime, ...) are skipped. A cpuN line needs at least 4 numbers
 * (2.4-era kernels); columns a kernel lacks are 0, columns beyond guest_nice
 * are checked to be numbers and ignored. -EBADMSG also for: a value above
 * UINT64_MAX, CPU ids out of ascending order or repeated, and a file without
 * any cpuN line (every running system has at least one online CPU, so that
 * is a broken read, not an idle machine). */
int proc_stat_parse(const char *contents, const char *fname, ProcStat *ret, unsigned *reterr_line);
void proc_stat_done(ProcStat *s);
/* The entry for cpu, or NULL if it is absent (offline) from this sample. */
const CpuTimes *proc_stat_find(const ProcStat *s, unsigned cpu) _pure_;

/* user+nice+system+irq+softirq (+steal). guest/guest_nice are already part
 * of user/nice. Saturates instead of wrapping. */
uint64_t cpu_times_busy(const CpuTimes *t, bool count_steal) _pure_;
/* Everything but guest/guest_nice; steal is always in, since it is wall time
 * the CPU was not ours. Saturates instead of wrapping. */
uint64_t cpu_times_total(const CpuTimes *t) _pure_;
/* Δbusy/Δtotal between two samples of the same CPU, on the 0..1024 scale.
 * -ERANGE if busy or total went backwards (the CPU was hot-unplugged and
 * replugged in between, or a counter wrapped): start afresh from cur.
 * Individual columns may dip (iowait does on NO_HZ kernels) without that
 * being an error as long as the sums grow. -EAGAIN if no time passed.
 * -EINVAL if prev and cur are different CPUs. */
int cpu_times_delta_util(const CpuTimes *prev, const CpuTimes *cur, bool count_steal, double *ret_util);

/* Token helpers shared by the /proc text parsers. Lines are not copied or
 * NUL-terminated: a line ends at '\n' or at the buffer's NUL. */
static inline bool proc_is_blank(char c) {
        return c == ' ' || c == '\t';
}
static inline bool proc_is_eol(char c) {
        return c == '\n' || c == '\0';
}
static inline const char *proc_skip_blanks(const char *p) {
        while (proc_is_blank(*p))
                p++;
        return p;
}
/* Decimal digits at *p, advancing *p past them. Unlike strtoull() it takes no
 * sign (strtoull() turns "-1" into UINT64_MAX) and skips no whitespace (which
 * would run on into the next line). -EINVAL if *p is not a digit, -ERANGE
 * above UINT64_MAX. */
int proc_parse_u64(const char **p, uint64_t *ret);
/* The next blank-separated unsigned field of the line: blanks, digits, then a
 * blank or the end of the line. -ENODATA if the line ended first. */
int proc_next_u64(const char **p, uint64_t *ret);
/* As proc_next_u64(), with digits[.digits] (PSI averages, debugfs clocks).
 * Locale-independent, unlike strtod(). */
int proc_next_decimal(const char **p, double *ret);

/* log_parse_error() that also reports the line through reterr_line. */
#define proc_parse_error(reterr_line, fname, line, ...)                                                     \
        __extension__({                                                                                     \
                unsigned *_rl = (reterr_line);                                                              \
                unsigned _l = (line);                                                                       \
                if (_rl)                                                                                    \
                        *_rl = _l;                                                                          \
                log_parse_error((fname), _l, __VA_ARGS__);                                                  \
        })
