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

/* The parser's state between lines. */
typedef struct Parser {
        const char *fname;
        unsigned *reterr_line;
        unsigned line;
        Section section;
        CpuState cur;
        bool in_cpu;
        SchedDebugCpu *cpus; /* n_alloc, one per cpu# line */
        size_t n, n_alloc;
} Parser;

/* The CPU being read is complete: into the table. */
static int end_cpu(Parser *x) {
        int r = finish_cpu(&x->cur, x->fname, x->reterr_line);
        if (r < 0)
                return r;
        assert(x->n < x->n_alloc);
        x->cpus[x->n++] = x->cur.c;
        return 0;
}

/* A line that starts with "cpu#"; q is after it. */
static int cpu_line(Parser *x, const char *q, bool blank_before) {
        unsigned id;
        int r;

        if (parse_cpu_header(q, &id) < 0) {
                /* Inside a tasks table, that is the tail of a task name with
                 * a newline; a real header follows the blank line that ends
                 * the table, and skipping one would lose a CPU. */
                if (x->section == SECTION_TASKS && !blank_before)
                        return 0;
                return proc_parse_error(x->reterr_line, x->fname, x->line, "bad cpu# line");
        }
        if (x->in_cpu) {
                r = end_cpu(x);
                if (r < 0)
                        return r;
        }
        if (x->n > 0 && id <= x->cpus[x->n - 1].cpu)
                return proc_parse_error(x->reterr_line, x->fname, x->line, "cpu#%u after cpu#%u", id,
                                        x->cpus[x->n - 1].cpu);
        x->cur = (CpuState){.c.cpu = id, .header_line = x->line};
        x->in_cpu = true;
        x->section = SECTION_CPU;
        return 0;
}

/* Any other line at column 0 opens a section. */
static int section_line(Parser *x, const char *p) {
        const char *q = startswith_literal(p, "cfs_rq[");
        unsigned id;
        bool root;

        if (!q) {
                if (startswith_literal(p, "runnable tasks:"))
                        x->section = SECTION_TASKS;
                else
                        x->section = SECTION_OTHER;
                return 0;
        }
        if (parse_cfs_rq_header(q, &id, &root) < 0)
                return proc_parse_error(x->reterr_line, x->fname, x->line, "bad cfs_rq line");
        if (!x->in_cpu)
                return proc_parse_error(x->reterr_line, x->fname, x->line, "cfs_rq before any cpu#");
        if (id != x->cur.c.cpu)
                return proc_parse_error(x->reterr_line, x->fname, x->line,
                                        "cfs_rq[%u] in the section of cpu#%u", id, x->cur.c.cpu);
        if (root && x->cur.has_root)
                return proc_parse_error(x->reterr_line, x->fname, x->line, "second root cfs_rq[%u]:/", id);
        if (root) {
                x->cur.has_root = true;
                x->cur.root_line = x->line;
        }
        x->section = root ? SECTION_ROOT_CFS : SECTION_OTHER;
        return 0;
}

/* An indented line: a key of the section being read, if it is one we read. */
static int key_line(Parser *x, const char *p) {
        CpuState *c = &x->cur;
        uint64_t v;
        int r;

        if (x->section == SECTION_CPU) {
                r = take_key(p, "nr_running", &v, &c->has_nr_running, x->fname, x->line, x->reterr_line);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (v > UINT_MAX)
                                return proc_parse_error(x->reterr_line, x->fname, x->line,
                                                        ".nr_running: value out of range");
                        c->c.nr_running = (unsigned) v;
                }
        } else if (x->section == SECTION_ROOT_CFS) {
                r = take_key(p, "util_avg", &c->c.util_avg, &c->has_util, x->fname, x->line, x->reterr_line);
                if (r == 0)
                        r = take_key(p, "runnable_avg", &c->c.runnable_avg, &c->has_runnable, x->fname,
                                     x->line, x->reterr_line);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_line(Parser *x, const char *p, bool blank_before) {
        const char *q = startswith_literal(p, "cpu#");

        if (q)
                return cpu_line(x, q, blank_before);
        if (x->section == SECTION_TASKS || proc_is_eol(*p))
                return 0;
        if (!proc_is_blank(*p))
                return section_line(x, p);
        return key_line(x, p);
}

int sched_debug_parse(const char *contents, const char *fname, SchedDebug *ret, unsigned *reterr_line) {
        _cleanup_(freep) SchedDebugCpu *cpus = NULL;
        Parser x = {.fname = fname, .reterr_line = reterr_line, .section = SECTION_OTHER};
        bool prev_blank = false;
        int r;

        assert(contents);
        assert(fname);
        assert(ret);

        x.n_alloc = lines_count_prefix(contents, "cpu#");
        if (x.n_alloc > 0) {
                cpus = calloc(x.n_alloc, sizeof(SchedDebugCpu));
                if (!cpus)
                        return -ENOMEM;
        }
        x.cpus = cpus;

        FOREACH_LINE(p, eol, contents) {
                bool blank_before = prev_blank;

                x.line++;
                prev_blank = p == eol;
                r = parse_line(&x, p, blank_before);
                if (r < 0)
                        return r;
        }
        if (x.in_cpu) {
                r = end_cpu(&x);
                if (r < 0)
                        return r;
        }
        if (x.n == 0)
                return proc_parse_error(reterr_line, fname, 0, "no cpu# sections");

        *ret = (SchedDebug){
                .cpus = TAKE_PTR(cpus),
                .n_cpus = x.n,
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
        return bsearch(&key, d->cpus, d->n_cpus, sizeof(SchedDebugCpu), sched_debug_cpu_cmp);
}
