/* SPDX-License-Identifier: MIT */
/* The kernel's cpulist syntax: cpuset_parse(), for every cpuset.cpus,
 * Cpus_allowed_list, /sys/devices/system/cpu/online and the CPU sets of
 * snapshots and state files. What it accepts must print back as a list that
 * parses to the same set (a state file written is read again). */
#include "cpuset.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size), *formatted = NULL;
        _cleanup_cpuset_ CpuSet set = NULL, again = NULL;
        char buf[CPUSET_STRLEN];
        int r;

        r = cpuset_parse(text, &set);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
                FUZZ_CHECK(set == NULL);
                return 0;
        }
        FUZZ_CHECK(set);
        FUZZ_CHECK(hwloc_bitmap_weight(set) >= 0); /* finite: no "0-" */
        FUZZ_CHECK(cpuset_format(set, &formatted) == 0);
        FUZZ_CHECK(cpuset_parse(formatted, &again) == 0);
        FUZZ_CHECK(hwloc_bitmap_isequal(set, again));
        /* The log form truncates, and must stay within its buffer. */
        FUZZ_CHECK(cpuset_to_string(set, buf, sizeof(buf)) == buf && strlen(buf) < sizeof(buf));
        return 0;
}
