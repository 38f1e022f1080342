/* SPDX-License-Identifier: MIT */
/* PSI: psi_parse(), for /proc/pressure/cpu and every opted-in cgroup's
 * cpu.pressure (one parser, one corpus of both). */
#include <limits.h>
#include <math.h>

#include "fuzz.h"
#include "proc-pressure.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        Psi psi = {.some_total = 4242}; /* untouched on failure */
        unsigned line = UINT_MAX;
        int r;

        r = psi_parse(text, "/proc/pressure/cpu", &psi, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG);
                FUZZ_CHECK(psi.some_total == 4242);
                FUZZ_CHECK(line <= fuzz_count_lines(text));
                return 0;
        }
        FUZZ_CHECK(line == UINT_MAX);
        const double avgs[] = {psi.some_avg10, psi.some_avg60, psi.some_avg300,
                               psi.full_avg10, psi.full_avg60, psi.full_avg300};
        for (size_t i = 0; i < ELEMENTSOF(avgs); i++)
                FUZZ_CHECK(isfinite(avgs[i]) && avgs[i] >= 0);
        FUZZ_CHECK(psi.has_full || (psi.full_avg10 == 0 && psi.full_total == 0));
        return 0;
}
