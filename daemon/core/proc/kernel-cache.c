/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel-cache.h"
#include "steerd-macros.h"

#define KNOBS_DIR "/sys/kernel/debug/sched/llc_balancing"
#define KNOB_V2 "/sys/kernel/debug/sched/llc_enabled"

/* A knob's value, or -1 where it cannot be read as a number. */
static long knob(const RootDir *root, const char *path) {
        _cleanup_(freep) char *text = NULL;
        char *end;

        if (rootdir_read_file(root, path, &text, NULL) < 0)
                return -1;
        long v = strtol(text, &end, 10);
        return end != text ? v : -1;
}

/* "CONFIG_SCHED_CACHE=y" in the running kernel's config: 1 built in, 0 not
 * set, -1 no config file to tell. */
static int built_in(const RootDir *root, char *release, size_t size) {
        _cleanup_(freep) char *rel = NULL, *config = NULL, *path = NULL;

        if (rootdir_read_file(root, "/proc/sys/kernel/osrelease", &rel, NULL) < 0)
                return -1;
        rel[strcspn(rel, "\n")] = 0;
        snprintf(release, size, "%s", rel);
        if (asprintf(&path, "/boot/config-%s", rel) < 0)
                return -1;
        if (rootdir_read_file(root, path, &config, NULL) < 0)
                return -1;
        for (char *line = config; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                if (streq(line, "CONFIG_SCHED_CACHE=y"))
                        return 1;
                line = nl ? nl + 1 : NULL;
        }
        return 0;
}

void kernel_cache_aware_probe(const RootDir *root, KernelCacheAware *ret) {
        KernelCacheAware k = {};
        char release[128] = "";

        if (rootdir_access(root, KNOBS_DIR, F_OK) >= 0) {
                /* v3 on: aggr_tolerance 0 turns the aggregation off. */
                long tol = knob(root, KNOBS_DIR "/aggr_tolerance");
                long on = knob(root, KNOBS_DIR "/enabled");
                k.present = true;
                k.enabled = tol != 0 && on != 0;
                if (on >= 0)
                        snprintf(k.how, sizeof(k.how), "debugfs sched/llc_balancing: enabled %ld", on);
                else if (tol >= 0)
                        snprintf(k.how, sizeof(k.how), "debugfs sched/llc_balancing: aggr_tolerance %ld",
                                 tol);
                else
                        snprintf(k.how, sizeof(k.how),
                                 "debugfs sched/llc_balancing (no knob readable: taken as on)");
        } else if (rootdir_access(root, KNOB_V2, F_OK) >= 0) {
                long on = knob(root, KNOB_V2);
                k.present = true;
                k.enabled = on != 0;
                snprintf(k.how, sizeof(k.how), "debugfs sched/llc_enabled %ld", on);
        } else {
                int b = built_in(root, release, sizeof(release));
                /* Built in, its knobs out of sight (debugfs not mounted): its
                 * default is on. */
                k.present = k.enabled = b > 0;
                if (b > 0)
                        snprintf(
                                k.how, sizeof(k.how),
                                "CONFIG_SCHED_CACHE=y in /boot/config-%s (debugfs not mounted: taken as on)",
                                release);
                else if (b == 0)
                        snprintf(k.how, sizeof(k.how), "not built (/boot/config-%s)", release);
                else
                        snprintf(k.how, sizeof(k.how),
                                 "not found (no sched/llc_balancing in debugfs, no /boot/config-%s)",
                                 release[0] ? release : "RELEASE");
        }
        *ret = k;
}
