/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/task/<tid>/status: thread_status_parse_cpus_allowed() and
 * thread_status_parse_tgid(). Its Name: line is the thread's choice. */
#include <limits.h>

#include "fuzz.h"
#include "proc-thread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        _cleanup_cpuset_ CpuSet set = NULL;
        unsigned line = UINT_MAX;
        pid_t tgid = -7;
        int r;

        r = thread_status_parse_tgid(text, "/proc/1/task/1/status", &tgid, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG);
                FUZZ_CHECK(tgid == -7);
                FUZZ_CHECK(line <= fuzz_count_lines(text));
        } else
                FUZZ_CHECK(tgid > 0 && line == UINT_MAX);
        line = UINT_MAX;

        r = thread_status_parse_cpus_allowed(text, "/proc/1/task/1/status", &set, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -ENOMEM);
                FUZZ_CHECK(set == NULL);
                FUZZ_CHECK(r != -EBADMSG || line <= fuzz_count_lines(text));
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        FUZZ_CHECK(set && !hwloc_bitmap_iszero(set)); /* no thread has an empty affinity */
        return 0;
}
