/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/task/<tid>/sched: thread_sched_parse(). Its header line
 * names the thread (the thread's choice). */
#include <limits.h>

#include "fuzz.h"
#include "proc-thread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        ThreadSched s = {.nr_migrations = 4242}; /* untouched on failure */
        unsigned line = UINT_MAX;
        int r;

        r = thread_sched_parse(text, "/proc/1/task/1/sched", &s, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG);
                FUZZ_CHECK(s.nr_migrations == 4242);
                FUZZ_CHECK(line <= fuzz_count_lines(text));
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        return 0;
}
