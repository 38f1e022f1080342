/* SPDX-License-Identifier: MIT */
/* /proc/schedstat: proc_schedstat_parse(), the runnable source "schedstat". */
#include <limits.h>

#include "fuzz.h"
#include "proc-schedstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        ProcSchedstat s = {.n_cpus = 4242}; /* untouched on failure */
        unsigned line = UINT_MAX;
        int r;

        r = proc_schedstat_parse(text, "/proc/schedstat", &s, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -EPROTONOSUPPORT || r == -ENOMEM);
                FUZZ_CHECK(s.cpus == NULL && s.n_cpus == 4242);
                FUZZ_CHECK(r != -EBADMSG || line <= fuzz_count_lines(text));
                FUZZ_CHECK(r != -EPROTONOSUPPORT || line == 1);
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        FUZZ_CHECK(s.version >= PROC_SCHEDSTAT_VERSION_MIN && s.version <= PROC_SCHEDSTAT_VERSION_MAX);
        FUZZ_CHECK(s.n_cpus > 0 && s.cpus);
        for (size_t i = 0; i < s.n_cpus; i++) {
                FUZZ_CHECK(i == 0 || s.cpus[i].cpu > s.cpus[i - 1].cpu);
                FUZZ_CHECK(proc_schedstat_find(&s, s.cpus[i].cpu) == &s.cpus[i]);
        }
        proc_schedstat_done(&s);
        return 0;
}
