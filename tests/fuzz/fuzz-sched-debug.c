/* SPDX-License-Identifier: MIT */
/* /sys/kernel/debug/sched/debug: sched_debug_parse(). Its task tables
 * print raw thread names, so part of the file is written by whoever names a
 * thread: the parser must survive anything there. */
#include <limits.h>

#include "fuzz.h"
#include "sched-debug.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        SchedDebug d = {.n_cpus = 4242}; /* untouched on failure */
        unsigned line = UINT_MAX;
        int r;

        r = sched_debug_parse(text, "/sys/kernel/debug/sched/debug", &d, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -ENOMEM);
                FUZZ_CHECK(d.cpus == NULL && d.n_cpus == 4242);
                FUZZ_CHECK(r != -EBADMSG || line <= fuzz_count_lines(text));
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        FUZZ_CHECK(d.n_cpus > 0 && d.cpus);
        for (size_t i = 0; i < d.n_cpus; i++) {
                FUZZ_CHECK(d.cpus[i].cpu <= INT_MAX);
                FUZZ_CHECK(i == 0 || d.cpus[i].cpu > d.cpus[i - 1].cpu);
                FUZZ_CHECK(sched_debug_find(&d, d.cpus[i].cpu) == &d.cpus[i]);
        }
        sched_debug_done(&d);
        return 0;
}
