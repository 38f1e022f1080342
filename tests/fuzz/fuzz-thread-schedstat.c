/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/task/<tid>/schedstat: thread_schedstat_parse(). */
#include <limits.h>

#include "fuzz.h"
#include "proc-thread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        ThreadSchedstat s = {.pcount = 4242}; /* untouched on failure */
        unsigned line = UINT_MAX;
        int r;

        r = thread_schedstat_parse(text, "/proc/1/task/1/schedstat", &s, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG);
                FUZZ_CHECK(s.pcount == 4242);
                FUZZ_CHECK(line == (*text ? 1U : 0U));
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        return 0;
}
