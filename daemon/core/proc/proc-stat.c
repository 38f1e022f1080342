/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <limits.h>

#include "lines.h"
#include "proc-stat.h"

int proc_parse_u64(const char **p, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++)
                if (__builtin_mul_overflow(v, 10, &v) ||
                    __builtin_add_overflow(v, (uint64_t) (*s - '0'), &v))
                        return -ERANGE;

        *p = s;
        *ret = v;
        return 0;
}

int proc_next_u64(const char **p, uint64_t *ret) {
        const char *s = proc_skip_blanks(*p);
        uint64_t v;
        int r;

        if (proc_is_eol(*s))
                return -ENODATA;
        r = proc_parse_u64(&s, &v);
        if (r < 0)
                return r;
        /* "12abc" is not 12 */
        if (!proc_is_blank(*s) && !proc_is_eol(*s))
                return -EINVAL;

        *p = s;
        *ret = v;
        return 0;
}

int proc_next_decimal(const char **p, double *ret) {
        const char *s = proc_skip_blanks(*p);
        uint64_t ip, fp = 0;
        double scale = 1.0;
        int r;

        if (proc_is_eol(*s))
                return -ENODATA;
        r = proc_parse_u64(&s, &ip);
        if (r < 0)
                return r;
        if (*s == '.') {
                s++;
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                for (; *s >= '0' && *s <= '9'; s++) {
                        /* Digits past 10^-18 cannot change a double of a sane
                         * figure; refusing them keeps fp from overflowing. */
                        if (scale >= 1e18)
                                return -EINVAL;
                        fp = fp * 10 + (uint64_t) (*s - '0');
                        scale *= 10.0;
                }
        }
        if (!proc_is_blank(*s) && !proc_is_eol(*s))
                return -EINVAL;

        *p = s;
        *ret = (double) ip + (double) fp / scale;
        return 0;
}

/* On failure *ret_column is the 1-based time column at fault, 0 for the id. */
static int parse_cpu_line(const char *p, CpuTimes *ret, const char **ret_reason, size_t *ret_column) {
        uint64_t id, v[10] = {};
        size_t i = 0;
        int r;

        *ret_column = 0;
        r = proc_parse_u64(&p, &id);
        if (r < 0 || !(proc_is_blank(*p) || proc_is_eol(*p))) {
                *ret_reason = "bad CPU id";
                return -EINVAL;
        }
        if (id > INT_MAX) {
                *ret_reason = "CPU id out of range";
                return -ERANGE;
        }

        for (;; i++) {
                uint64_t extra;

                r = proc_next_u64(&p, i < ELEMENTSOF(v) ? &v[i] : &extra);
                if (r == -ENODATA)
                        break;
                if (r < 0) {
                        *ret_column = i + 1;
                        *ret_reason = r == -ERANGE ? "value out of range" : "not a number";
                        return r;
                }
        }
        if (i < 4) {
                *ret_reason = "fewer than 4 time columns";
                return -EINVAL;
        }

        *ret = (CpuTimes){
                .cpu = (unsigned) id,
                .user = v[0],
                .nice = v[1],
                .system = v[2],
                .idle = v[3],
                .iowait = v[4],
                .irq = v[5],
                .softirq = v[6],
                .steal = v[7],
                .guest = v[8],
                .guest_nice = v[9],
        };
        return 0;
}

int proc_stat_parse(const char *contents, const char *fname, ProcStat *ret, unsigned *reterr_line) {
        _cleanup_(freep) CpuTimes *cpus = NULL;
        size_t n = 0, n_alloc;
        unsigned line = 0;

        assert(contents);
        assert(fname);
        assert(ret);

        /* One allocation per sample rather than one per line: this runs
         * every tick. */
        n_alloc = lines_count_prefix(contents, "cpu");
        if (n_alloc > 0) {
                cpus = calloc(n_alloc, sizeof(CpuTimes));
                if (!cpus)
                        return -ENOMEM;
        }

        FOREACH_LINE(p, eol, contents) {
                const char *reason, *q;
                size_t column;
                CpuTimes t;

                line++;

                q = startswith_literal(p, "cpu");
                if (!q || proc_is_blank(*q))
                        continue;
                if (parse_cpu_line(q, &t, &reason, &column) < 0) {
                        if (column > 0)
                                return proc_parse_error(reterr_line, fname, line, "column %zu: %s", column,
                                                        reason);
                        return proc_parse_error(reterr_line, fname, line, "%s", reason);
                }
                /* The kernel prints online CPUs in ascending order; anything
                 * else means the buffer is not what we think it is. */
                if (n > 0 && t.cpu <= cpus[n - 1].cpu)
                        return proc_parse_error(reterr_line, fname, line, "cpu%u after cpu%u", t.cpu,
                                                cpus[n - 1].cpu);
                assert(n < n_alloc);
                cpus[n++] = t;
        }

        if (n == 0)
                return proc_parse_error(reterr_line, fname, 0, "no per-CPU lines");

        *ret = (ProcStat){
                .cpus = TAKE_PTR(cpus),
                .n_cpus = n,
        };
        return 0;
}

void proc_stat_done(ProcStat *s) {
        if (!s)
                return;
        free(s->cpus);
        *s = (ProcStat){};
}

static int cpu_times_cmp(const void *a, const void *b) {
        unsigned x = ((const CpuTimes *) a)->cpu, y = ((const CpuTimes *) b)->cpu;
        return x < y ? -1 : x > y;
}

const CpuTimes *proc_stat_find(const ProcStat *s, unsigned cpu) {
        CpuTimes key = {.cpu = cpu};

        if (!s || s->n_cpus == 0)
                return NULL;
        return bsearch(&key, s->cpus, s->n_cpus, sizeof(CpuTimes), cpu_times_cmp);
}

static uint64_t add_sat(uint64_t a, uint64_t b) {
        uint64_t s;
        return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

uint64_t cpu_times_busy(const CpuTimes *t, bool count_steal) {
        uint64_t b;

        assert(t);
        b = add_sat(add_sat(add_sat(add_sat(t->user, t->nice), t->system), t->irq), t->softirq);
        return count_steal ? add_sat(b, t->steal) : b;
}

uint64_t cpu_times_total(const CpuTimes *t) {
        assert(t);
        return add_sat(add_sat(cpu_times_busy(t, true), t->idle), t->iowait);
}

int cpu_times_delta_util(const CpuTimes *prev, const CpuTimes *cur, bool count_steal, double *ret_util) {
        uint64_t pb, cb, pt, ct;
        double u;

        assert(prev);
        assert(cur);
        assert(ret_util);

        if (prev->cpu != cur->cpu)
                return -EINVAL;

        pb = cpu_times_busy(prev, count_steal);
        cb = cpu_times_busy(cur, count_steal);
        pt = cpu_times_total(prev);
        ct = cpu_times_total(cur);
        if (cb < pb || ct < pt)
                return -ERANGE;
        if (ct == pt)
                return -EAGAIN;

        /* Δbusy can exceed Δtotal when idle or iowait dip, hence the clamp. */
        u = (double) (cb - pb) * SCHED_CAPACITY_SCALE / (double) (ct - pt);
        *ret_util = u > SCHED_CAPACITY_SCALE ? SCHED_CAPACITY_SCALE : u;
        return 0;
}
