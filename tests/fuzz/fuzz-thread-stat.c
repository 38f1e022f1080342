/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/task/<tid>/stat: thread_stat_parse(). Its comm is the
 * thread's own choice (blanks, ')' and newlines included). */
#include <limits.h>

#include "fuzz.h"
#include "proc-thread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        ThreadStat st = {.tid = 4242}; /* untouched on failure */
        unsigned line = UINT_MAX;
        int r;

        r = thread_stat_parse(text, "/proc/1/task/1/stat", &st, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG);
                FUZZ_CHECK(st.tid == 4242);
                FUZZ_CHECK(line == (*text ? 1U : 0U)); /* one record: line 1, 0 when empty */
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        FUZZ_CHECK(st.tid > 0 && st.processor >= 0);
        FUZZ_CHECK(st.state > ' ' && st.state < 0x7f);
        return 0;
}
