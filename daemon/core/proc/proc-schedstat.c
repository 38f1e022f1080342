/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <inttypes.h>
#include <limits.h>

#include "lines.h"
#include "proc-schedstat.h"
#include "proc-stat.h"

/* "cpuN f1 .. f9". On failure *ret_field is the 1-based field at fault, 0
 * when it is the id or the line as a whole. */
static int parse_cpu_line(const char *p, CpuSchedstat *ret, const char **ret_reason, size_t *ret_field) {
        uint64_t id, f[9];
        int r;

        *ret_field = 0;
        r = proc_parse_u64(&p, &id);
        if (r < 0 || !(proc_is_blank(*p) || proc_is_eol(*p))) {
                *ret_reason = "bad CPU id";
                return -EINVAL;
        }
        if (id > INT_MAX) {
                *ret_reason = "CPU id out of range";
                return -ERANGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(f); i++) {
                r = proc_next_u64(&p, &f[i]);
                if (r == -ENODATA) {
                        *ret_reason = "fewer than 9 fields";
                        return r;
                }
                if (r < 0) {
                        *ret_field = i + 1;
                        *ret_reason = r == -ERANGE ? "value out of range" : "not a number";
                        return r;
                }
        }
        if (!proc_is_eol(*proc_skip_blanks(p))) {
                *ret_reason = "more than 9 fields";
                return -EINVAL;
        }

        *ret = (CpuSchedstat){
                .cpu = (unsigned) id,
                .run_ns = f[6],
                .wait_ns = f[7],
        };
        return 0;
}

/* "KEY N" with nothing after N. */
static int parse_keyed_u64(const char *p, uint64_t *ret) {
        int r;

        if (!proc_is_blank(*p))
                return -EINVAL;
        r = proc_next_u64(&p, ret);
        if (r < 0)
                return r;
        return proc_is_eol(*proc_skip_blanks(p)) ? 0 : -EINVAL;
}

int proc_schedstat_parse(const char *contents, const char *fname, ProcSchedstat *ret,
                         unsigned *reterr_line) {
        _cleanup_(freep) CpuSchedstat *cpus = NULL;
        uint64_t version = 0, timestamp = 0;
        size_t n = 0, n_alloc;
        unsigned line = 0;

        assert(contents);
        assert(fname);
        assert(ret);

        if (!*contents)
                return proc_parse_error(reterr_line, fname, 0, "empty file");

        n_alloc = lines_count_prefix(contents, "cpu");
        if (n_alloc > 0) {
                cpus = calloc(n_alloc, sizeof(CpuSchedstat));
                if (!cpus)
                        return -ENOMEM;
        }

        FOREACH_LINE(p, eol, contents) {
                const char *q, *reason;
                CpuSchedstat c;
                size_t field;

                line++;

                if (line == 1) {
                        /* The meaning of every other line depends on it. */
                        q = startswith_literal(p, "version");
                        if (!q || parse_keyed_u64(q, &version) < 0)
                                return proc_parse_error(reterr_line, fname, line,
                                                        "expected \"version N\" as the first line");
                        if (version < PROC_SCHEDSTAT_VERSION_MIN || version > PROC_SCHEDSTAT_VERSION_MAX) {
                                if (reterr_line)
                                        *reterr_line = line;
                                (void) log_parse_error(fname, line, "unsupported schedstat version %" PRIu64,
                                                       version);
                                return -EPROTONOSUPPORT;
                        }
                        continue;
                }

                q = startswith_literal(p, "timestamp");
                if (q && proc_is_blank(*q)) {
                        if (parse_keyed_u64(q, &timestamp) < 0)
                                return proc_parse_error(reterr_line, fname, line, "bad timestamp");
                        continue;
                }

                q = startswith_literal(p, "cpu");
                if (!q)
                        continue;
                if (parse_cpu_line(q, &c, &reason, &field) < 0) {
                        if (field > 0)
                                return proc_parse_error(reterr_line, fname, line, "field %zu: %s", field,
                                                        reason);
                        return proc_parse_error(reterr_line, fname, line, "%s", reason);
                }
                if (n > 0 && c.cpu <= cpus[n - 1].cpu)
                        return proc_parse_error(reterr_line, fname, line, "cpu%u after cpu%u", c.cpu,
                                                cpus[n - 1].cpu);
                assert(n < n_alloc);
                cpus[n++] = c;
        }

        if (n == 0)
                return proc_parse_error(reterr_line, fname, 0, "no per-CPU lines");

        *ret = (ProcSchedstat){
                .version = (unsigned) version,
                .timestamp = timestamp,
                .cpus = TAKE_PTR(cpus),
                .n_cpus = n,
        };
        return 0;
}

void proc_schedstat_done(ProcSchedstat *s) {
        if (!s)
                return;
        free(s->cpus);
        *s = (ProcSchedstat){};
}

static int cpu_schedstat_cmp(const void *a, const void *b) {
        unsigned x = ((const CpuSchedstat *) a)->cpu, y = ((const CpuSchedstat *) b)->cpu;
        return x < y ? -1 : x > y;
}

const CpuSchedstat *proc_schedstat_find(const ProcSchedstat *s, unsigned cpu) {
        CpuSchedstat key = {.cpu = cpu};

        if (!s || s->n_cpus == 0)
                return NULL;
        return bsearch(&key, s->cpus, s->n_cpus, sizeof(CpuSchedstat), cpu_schedstat_cmp);
}
