/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <limits.h>

#include "lines.h"
#include "proc-stat.h"
#include "sched-debug.h"

typedef enum Section {
        SECTION_OTHER,    /* the header, and sub-sections we do not read */
        SECTION_CPU,      /* between cpu#N and its first sub-section */
        SECTION_ROOT_CFS, /* cfs_rq[N]:/ */
        SECTION_TASKS,    /* runnable tasks: up to the next cpu#N */
} Section;

typedef struct CpuState {
        SchedDebugCpu c;
        unsigned header_line, root_line;
        bool has_nr_running, has_root, has_util, has_runnable;
} CpuState;

/* "cpu#N" or "cpu#N, F MHz", nothing else; p is after "cpu#". */
static int parse_cpu_header(const char *p, unsigned *ret) {
        uint64_t id;
        double mhz;

        if (proc_parse_u64(&p, &id) < 0 || id > INT_MAX)
                return -EINVAL;
        if (*p == ',') {
                p++;
                if (!proc_is_blank(*p) || proc_next_decimal(&p, &mhz) < 0)
                        return -EINVAL;
                p = proc_skip_blanks(p);
                if (strncmp(p, "MHz", 3) != 0)
                        return -EINVAL;
                p += 3;
        }
        if (!proc_is_eol(*proc_skip_blanks(p)))
                return -EINVAL;

        *ret = (unsigned) id;
        return 0;
}

/* "cfs_rq[N]:PATH"; p is after "cfs_rq[". */
static int parse_cfs_rq_header(const char *p, unsigned *ret_cpu, bool *ret_root) {
        uint64_t id;

        if (proc_parse_u64(&p, &id) < 0 || id > INT_MAX || p[0] != ']' || p[1] != ':')
                return -EINVAL;
        p += 2;

        *ret_cpu = (unsigned) id;
        *ret_root = p[0] == '/' && proc_is_eol(p[1]);
        return 0;
}

/* "  .KEY   : N" -> N. 0 if the line's key is not KEY, 1 with *ret set, or
 * -errno if it is KEY with a bad value. */
static int indented_key(const char *p, const char *key, uint64_t *ret) {
        size_t len = strlen(key);
        int r;

        p = proc_skip_blanks(p);
        if (*p != '.' || strncmp(p + 1, key, len) != 0)
                return 0;
        p = proc_skip_blanks(p + 1 + len);
        if (*p != ':')
                return 0;
        p++;
        r = proc_next_u64(&p, ret);
        if (r >= 0 && !proc_is_eol(*proc_skip_blanks(p)))
                r = -EINVAL;
        return r < 0 ? r : 1;
}

static int finish_cpu(const CpuState *s, const char *fname, unsigned *reterr_line) {
        if (!s->has_nr_running)
                return proc_parse_error(reterr_line, fname, s->header_line, "cpu#%u: no .nr_running",
                                        s->c.cpu);
        /* The kernel prints the cfs_rqs on a CPU's leaf list, and takes a fully
         * decayed one off it, the root's included: a CPU idle for a while
         * has no root cfs_rq in the file, and its averages are 0. */
        if (!s->has_root)
                return 0;
        if (!s->has_util)
                return proc_parse_error(reterr_line, fname, s->root_line, "cfs_rq[%u]:/ has no .util_avg",
                                        s->c.cpu);
        if (!s->has_runnable)
                return proc_parse_error(reterr_line, fname, s->root_line,
                                        "cfs_rq[%u]:/ has no .runnable_avg (kernel older than 5.7?)",
                                        s->c.cpu);
        return 0;
}

/* 0 not this key, 1 stored, <0 logged parse error. */
static int take_key(const char *p, const char *key, uint64_t *dst, bool *seen, const char *fname,
                    unsigned line, unsigned *reterr_line) {
        uint64_t v;
        int r;

        r = indented_key(p, key, &v);
        if (r == 0)
                return 0;
        if (r < 0)
                return proc_parse_error(reterr_line, fname, line, ".%s: %s", key,
                                        r == -ERANGE ? "value out of range" : "not an unsigned number");
        if (*seen)
                return proc_parse_error(reterr_line, fname, line, ".%s repeated", key);
        *dst = v;
        *seen = true;
        return 1;
}

int sched_debug_parse(const char *contents, const char *fname, SchedDebug *ret, unsigned *reterr_line) {
        _cleanup_(freep) SchedDebugCpu *cpus = NULL;
        Section section = SECTION_OTHER;
        CpuState cur = {};
        bool in_cpu = false, prev_blank = false;
        size_t n = 0, n_alloc;
        unsigned line = 0;
        int r;

        assert(contents);
        assert(fname);
        assert(ret);

        n_alloc = lines_count_prefix(contents, "cpu#");
        if (n_alloc > 0) {
                cpus = calloc(n_alloc, sizeof(SchedDebugCpu));
                if (!cpus)
                        return -ENOMEM;
        }

        FOREACH_LINE(p, eol, contents) {
                bool blank_before;
                const char *q;
                uint64_t v;

                line++;
                blank_before = prev_blank;
                prev_blank = p == eol;

                q = startswith_literal(p, "cpu#");
                if (q) {
                        unsigned id;

                        if (parse_cpu_header(q, &id) < 0) {
                                /* Inside a tasks table, that is the tail of a task
                                 * name with a newline; a real header follows the
                                 * blank line that ends the table, and skipping one
                                 * would lose a CPU. */
                                if (section == SECTION_TASKS && !blank_before)
                                        continue;
                                return proc_parse_error(reterr_line, fname, line, "bad cpu# line");
                        }
                        if (in_cpu) {
                                r = finish_cpu(&cur, fname, reterr_line);
                                if (r < 0)
                                        return r;
                                assert(n < n_alloc);
                                cpus[n++] = cur.c;
                        }
                        if (n > 0 && id <= cpus[n - 1].cpu)
                                return proc_parse_error(reterr_line, fname, line, "cpu#%u after cpu#%u", id,
                                                        cpus[n - 1].cpu);
                        cur = (CpuState){.c.cpu = id, .header_line = line};
                        in_cpu = true;
                        section = SECTION_CPU;
                        continue;
                }

                if (section == SECTION_TASKS || proc_is_eol(*p))
                        continue;

                if (!proc_is_blank(*p)) {
                        /* Any line at column 0 opens a section. */
                        q = startswith_literal(p, "cfs_rq[");
                        if (q) {
                                unsigned id;
                                bool root;

                                if (parse_cfs_rq_header(q, &id, &root) < 0)
                                        return proc_parse_error(reterr_line, fname, line, "bad cfs_rq line");
                                if (!in_cpu)
                                        return proc_parse_error(reterr_line, fname, line,
                                                                "cfs_rq before any cpu#");
                                if (id != cur.c.cpu)
                                        return proc_parse_error(reterr_line, fname, line,
                                                                "cfs_rq[%u] in the section of cpu#%u", id,
                                                                cur.c.cpu);
                                if (root && cur.has_root)
                                        return proc_parse_error(reterr_line, fname, line,
                                                                "second root cfs_rq[%u]:/", id);
                                if (root) {
                                        cur.has_root = true;
                                        cur.root_line = line;
                                }
                                section = root ? SECTION_ROOT_CFS : SECTION_OTHER;
                        } else if (startswith_literal(p, "runnable tasks:"))
                                section = SECTION_TASKS;
                        else
                                section = SECTION_OTHER;
                        continue;
                }

                if (section == SECTION_CPU) {
                        r = take_key(p, "nr_running", &v, &cur.has_nr_running, fname, line, reterr_line);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                if (v > UINT_MAX)
                                        return proc_parse_error(reterr_line, fname, line,
                                                                ".nr_running: value out of range");
                                cur.c.nr_running = (unsigned) v;
                        }
                } else if (section == SECTION_ROOT_CFS) {
                        r = take_key(p, "util_avg", &cur.c.util_avg, &cur.has_util, fname, line,
                                     reterr_line);
                        if (r == 0)
                                r = take_key(p, "runnable_avg", &cur.c.runnable_avg, &cur.has_runnable,
                                             fname, line, reterr_line);
                        if (r < 0)
                                return r;
                }
        }

        if (in_cpu) {
                r = finish_cpu(&cur, fname, reterr_line);
                if (r < 0)
                        return r;
                assert(n < n_alloc);
                cpus[n++] = cur.c;
        }
        if (n == 0)
                return proc_parse_error(reterr_line, fname, 0, "no cpu# sections");

        *ret = (SchedDebug){
                .cpus = TAKE_PTR(cpus),
                .n_cpus = n,
        };
        return 0;
}

void sched_debug_done(SchedDebug *d) {
        if (!d)
                return;
        free(d->cpus);
        *d = (SchedDebug){};
}

static int sched_debug_cpu_cmp(const void *a, const void *b) {
        unsigned x = ((const SchedDebugCpu *) a)->cpu, y = ((const SchedDebugCpu *) b)->cpu;
        return x < y ? -1 : x > y;
}

const SchedDebugCpu *sched_debug_find(const SchedDebug *d, unsigned cpu) {
        SchedDebugCpu key = {.cpu = cpu};

        if (!d || d->n_cpus == 0)
                return NULL;
        if (d->n_cpus == 0)
                return NULL;
        return bsearch(&key, d->cpus, d->n_cpus, sizeof(SchedDebugCpu), sched_debug_cpu_cmp);
}
