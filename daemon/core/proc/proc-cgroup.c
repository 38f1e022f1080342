/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "log.h"
#include "proc-cgroup.h"

static int parse_u64(const char *p, const char *eol, uint64_t *ret) {
        char *end;

        if (p == eol || *p < '0' || *p > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || end != eol)
                return -EINVAL;
        *ret = v;
        return 0;
}

int cgroup_cpu_stat_parse(const char *contents, const char *fname, uint64_t *ret_usage_ns) {
        static const char key[] = "usage_usec ";
        unsigned lineno = 0;

        FOREACH_LINE(p, eol, contents) {
                uint64_t usec;

                lineno++;
                if (strncmp(p, key, strlen(key)) != 0)
                        continue;
                if (parse_u64(p + strlen(key), eol, &usec) < 0 || usec > UINT64_MAX / 1000)
                        return log_parse_error(fname, lineno, "usage_usec: '%.*s' is not a number",
                                               (int) (eol - p), p);
                *ret_usage_ns = usec * 1000;
                return 0;
        }
        return log_parse_error(fname, lineno, "no usage_usec line");
}

int cpuacct_usage_parse(const char *contents, const char *fname, uint64_t *ret_usage_ns) {
        const char *eol = strchrnul(contents, '\n');
        uint64_t ns;

        if (parse_u64(contents, eol, &ns) < 0)
                return log_parse_error(fname, 1, "'%.*s' is not a number", (int) (eol - contents), contents);
        *ret_usage_ns = ns;
        return 0;
}
