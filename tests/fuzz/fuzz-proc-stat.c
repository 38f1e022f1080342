/* SPDX-License-Identifier: MIT */
/* /proc/stat: proc_stat_parse(), every tick of the sampler. */
#include <limits.h>

#include "fuzz.h"
#include "proc-stat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        ProcStat st = {.n_cpus = 4242}; /* proc-stat.h: untouched on failure */
        unsigned line = UINT_MAX;
        int r;

        r = proc_stat_parse(text, "/proc/stat", &st, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -ENOMEM);
                FUZZ_CHECK(st.cpus == NULL && st.n_cpus == 4242);
                FUZZ_CHECK(r != -EBADMSG || line <= fuzz_count_lines(text));
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        FUZZ_CHECK(st.n_cpus > 0 && st.cpus);
        for (size_t i = 0; i < st.n_cpus; i++) {
                FUZZ_CHECK(st.cpus[i].cpu <= INT_MAX);
                FUZZ_CHECK(i == 0 || st.cpus[i].cpu > st.cpus[i - 1].cpu);
                FUZZ_CHECK(proc_stat_find(&st, st.cpus[i].cpu) == &st.cpus[i]);
                /* The derived figures the sampler takes from two samples. */
                double u;
                r = cpu_times_delta_util(&st.cpus[0], &st.cpus[i], true, &u);
                FUZZ_CHECK(i == 0 ? r == -EAGAIN : r == -EINVAL);
                r = cpu_times_delta_util(&(CpuTimes){.cpu = st.cpus[i].cpu}, &st.cpus[i], false, &u);
                FUZZ_CHECK(r == -EAGAIN || (r == 0 && u >= 0 && u <= SCHED_CAPACITY_SCALE));
        }
        proc_stat_done(&st);
        return 0;
}
