/* SPDX-License-Identifier: MIT */
#include <assert.h>

#include "lines.h"
#include "proc-pressure.h"
#include "proc-stat.h"

/* " KEY=" then a field */
static const char *expect_key(const char *p, const char *key) {
        size_t l = strlen(key);

        if (!proc_is_blank(*p))
                return NULL;
        p = proc_skip_blanks(p);
        if (strncmp(p, key, l) != 0 || p[l] != '=')
                return NULL;
        return p + l + 1;
}

static int parse_psi_line(const char *p, double avg[static 3], uint64_t *total, const char **ret_reason) {
        static const char *const keys[] = {"avg10", "avg60", "avg300"};
        int r;

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                p = expect_key(p, keys[i]);
                /* No blanks between '=' and the value. */
                if (!p || proc_is_blank(*p)) {
                        *ret_reason = i == 0   ? "expected avg10="
                                      : i == 1 ? "expected avg60="
                                               : "expected avg300=";
                        return -EINVAL;
                }
                r = proc_next_decimal(&p, &avg[i]);
                if (r < 0) {
                        *ret_reason = "bad average";
                        return r;
                }
        }
        p = expect_key(p, "total");
        if (!p || proc_is_blank(*p)) {
                *ret_reason = "expected total=";
                return -EINVAL;
        }
        r = proc_next_u64(&p, total);
        if (r < 0) {
                *ret_reason = r == -ERANGE ? "total out of range" : "bad total";
                return r;
        }
        if (!proc_is_eol(*proc_skip_blanks(p))) {
                *ret_reason = "trailing data";
                return -EINVAL;
        }
        return 0;
}

int psi_parse(const char *contents, const char *fname, Psi *ret, unsigned *reterr_line) {
        Psi psi = {};
        bool has_some = false;
        unsigned line = 0;

        assert(contents);
        assert(fname);
        assert(ret);

        FOREACH_LINE(p, eol, contents) {
                const char *q, *reason;
                double avg[3];
                uint64_t total;
                bool full;

                line++;

                /* By first word: "someday" is some other line, "some" alone is a bad one. */
                if ((q = startswith_literal(p, "some")) && (proc_is_blank(*q) || proc_is_eol(*q)))
                        full = false;
                else if ((q = startswith_literal(p, "full")) && (proc_is_blank(*q) || proc_is_eol(*q)))
                        full = true;
                else
                        continue;

                if (full ? psi.has_full : has_some)
                        return proc_parse_error(reterr_line, fname, line, "second \"%s\" line",
                                                full ? "full" : "some");
                if (parse_psi_line(q, avg, &total, &reason) < 0)
                        return proc_parse_error(reterr_line, fname, line, "%s", reason);

                if (full) {
                        psi.full_avg10 = avg[0];
                        psi.full_avg60 = avg[1];
                        psi.full_avg300 = avg[2];
                        psi.full_total = total;
                        psi.has_full = true;
                } else {
                        psi.some_avg10 = avg[0];
                        psi.some_avg60 = avg[1];
                        psi.some_avg300 = avg[2];
                        psi.some_total = total;
                        has_some = true;
                }
        }

        if (!has_some)
                return proc_parse_error(reterr_line, fname, 0, "no \"some\" line");

        *ret = psi;
        return 0;
}
