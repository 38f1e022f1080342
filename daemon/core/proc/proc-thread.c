/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <ctype.h>
#include <limits.h>

#include "lines.h"
#include "proc-stat.h"
#include "proc-thread.h"

static const char *next_u64_reason(int r) {
        return r == -ENODATA ? "truncated" : r == -ERANGE ? "value out of range" : "not a number";
}

int thread_stat_parse(const char *contents, const char *fname, ThreadStat *ret, unsigned *reterr_line) {
        ThreadStat st = {};
        const char *p = contents;
        uint64_t tid, v;
        int r;

        assert(contents);
        assert(fname);
        assert(ret);

        if (!*contents)
                return proc_parse_error(reterr_line, fname, 0, "empty file");

        r = proc_parse_u64(&p, &tid);
        if (r < 0 || tid == 0 || tid > INT_MAX)
                return proc_parse_error(reterr_line, fname, 1, "bad tid");
        if (p[0] != ' ' || p[1] != '(')
                return proc_parse_error(reterr_line, fname, 1, "expected \" (\" after the tid");
        /* Only comm can hold a ')': the fields after it are numbers and one
         * state letter. */
        p = strrchr(p + 2, ')');
        if (!p)
                return proc_parse_error(reterr_line, fname, 1, "no ')' after comm");
        p++;
        if (p[0] != ' ' || !isgraph((unsigned char) p[1]) || !(proc_is_blank(p[2]) || proc_is_eol(p[2])))
                return proc_parse_error(reterr_line, fname, 1, "bad state field");
        st.tid = (pid_t) tid;
        st.state = p[1];
        p += 2;

        for (unsigned field = 4; field <= 39; field++) {
                switch (field) {
                case 14:
                case 15:
                case 22:
                case 39:
                        r = proc_next_u64(&p, &v);
                        if (r < 0)
                                return proc_parse_error(reterr_line, fname, 1, "field %u: %s", field,
                                                        next_u64_reason(r));
                        if (field == 14)
                                st.utime = v;
                        else if (field == 15)
                                st.stime = v;
                        else if (field == 22)
                                st.starttime = v;
                        else if (v > INT_MAX)
                                return proc_parse_error(reterr_line, fname, 1, "field 39: CPU out of range");
                        else
                                st.processor = (int) v;
                        break;
                default:
                        /* Skipped fields are not checked: some are signed, some
                         * are addresses, none matters here. */
                        p = proc_skip_blanks(p);
                        if (proc_is_eol(*p))
                                return proc_parse_error(reterr_line, fname, 1, "field %u: truncated", field);
                        while (!proc_is_blank(*p) && !proc_is_eol(*p))
                                p++;
                }
        }

        *ret = st;
        return 0;
}

int thread_schedstat_parse(const char *contents, const char *fname, ThreadSchedstat *ret,
                           unsigned *reterr_line) {
        const char *p = contents;
        uint64_t v[3];
        int r;

        assert(contents);
        assert(fname);
        assert(ret);

        if (!*contents)
                return proc_parse_error(reterr_line, fname, 0, "empty file");

        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                r = proc_next_u64(&p, &v[i]);
                if (r < 0)
                        return proc_parse_error(reterr_line, fname, 1, "field %zu: %s", i + 1,
                                                next_u64_reason(r));
        }
        if (!proc_is_eol(*proc_skip_blanks(p)))
                return proc_parse_error(reterr_line, fname, 1, "more than 3 fields");

        *ret = (ThreadSchedstat){
                .sum_exec_runtime_ns = v[0],
                .run_delay_ns = v[1],
                .pcount = v[2],
        };
        return 0;
}

/* After KEY at the start of a line: blanks, ':', then the value. NULL if the
 * line's key is only longer than KEY ("se.nr_migrations_cold"). */
static const char *after_key(const char *p, const char *key) {
        size_t len = strlen(key);

        if (strncmp(p, key, len) != 0)
                return NULL;
        p = proc_skip_blanks(p + len);
        return *p == ':' ? p + 1 : NULL;
}

int thread_sched_parse(const char *contents, const char *fname, ThreadSched *ret, unsigned *reterr_line) {
        static const char *const keys[] = {
                "se.nr_migrations",
                "nr_voluntary_switches",
                "nr_involuntary_switches",
        };
        ThreadSched s = {};
        uint64_t *const dest[] = {&s.nr_migrations, &s.nr_voluntary_switches, &s.nr_involuntary_switches};
        unsigned line = 0, seen = 0;
        bool in_body = false;

        assert(contents);
        assert(fname);
        assert(ret);

        FOREACH_LINE(p, eol, contents) {
                line++;

                /* The header names the thread, and a thread names itself: skip
                 * everything up to the dashes so no comm is taken for a key. */
                if (!in_body) {
                        in_body = line > 1 && strncmp(p, "---", 3) == 0;
                        continue;
                }

                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                        const char *q = after_key(p, keys[i]);
                        uint64_t v;
                        int r;

                        if (!q)
                                continue;
                        if (seen & (1U << i))
                                return proc_parse_error(reterr_line, fname, line, "%s repeated", keys[i]);
                        r = proc_next_u64(&q, &v);
                        if (r >= 0 && !proc_is_eol(*proc_skip_blanks(q)))
                                r = -EINVAL;
                        if (r < 0)
                                return proc_parse_error(reterr_line, fname, line, "%s: %s", keys[i],
                                                        r == -ENODATA ? "no value" : next_u64_reason(r));
                        *dest[i] = v;
                        seen |= 1U << i;
                        break;
                }
        }

        if (!in_body)
                return proc_parse_error(reterr_line, fname, 0, "no header line of dashes");

        *ret = s;
        return 0;
}

int thread_status_parse_cpus_allowed(const char *contents, const char *fname, CpuSet *ret,
                                     unsigned *reterr_line) {
        unsigned line = 0;

        assert(contents);
        assert(fname);
        assert(ret);

        FOREACH_LINE(p, eol, contents) {
                _cleanup_(freep) char *heap = NULL;
                _cleanup_cpuset_ CpuSet set = NULL;
                char stack[256], *buf = stack;
                const char *q;
                size_t len;
                int r;

                line++;

                q = startswith_literal(p, "Cpus_allowed_list:");
                if (!q)
                        continue;

                q = proc_skip_blanks(q);
                len = (size_t) (eol - q);
                while (len > 0 && proc_is_blank(q[len - 1]))
                        len--;
                if (len == 0)
                        return proc_parse_error(reterr_line, fname, line, "empty Cpus_allowed_list");

                /* cpuset_parse() wants a C string; lists longer than the stack
                 * buffer exist only on very large, fragmented machines. */
                if (len >= sizeof(stack)) {
                        buf = heap = malloc(len + 1);
                        if (!heap)
                                return -ENOMEM;
                }
                memcpy(buf, q, len);
                buf[len] = '\0';

                r = cpuset_parse(buf, &set);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return proc_parse_error(reterr_line, fname, line, "bad Cpus_allowed_list \"%s\"",
                                                buf);
                /* cpuset_parse() trims every isspace() ("\v", "\r"), the check
                 * above only blanks: a list of such is as empty as "". */
                if (hwloc_bitmap_iszero(set))
                        return proc_parse_error(reterr_line, fname, line, "empty Cpus_allowed_list");

                *ret = TAKE_PTR(set);
                return 0;
        }

        return proc_parse_error(reterr_line, fname, 0, "no Cpus_allowed_list line");
}

int thread_status_parse_tgid(const char *contents, const char *fname, pid_t *ret, unsigned *reterr_line) {
        unsigned line = 0;

        assert(contents);
        assert(fname);
        assert(ret);

        FOREACH_LINE(p, eol, contents) {
                uint64_t v;

                line++;
                const char *q = startswith_literal(p, "Tgid:");
                if (!q)
                        continue;
                if (proc_next_u64(&q, &v) < 0 || v == 0 || v > INT32_MAX ||
                    !proc_is_eol(*proc_skip_blanks(q)))
                        return proc_parse_error(reterr_line, fname, line, "bad Tgid");
                *ret = (pid_t) v;
                return 0;
        }
        return proc_parse_error(reterr_line, fname, 0, "no Tgid line");
}
