/* SPDX-License-Identifier: MIT */
#include <time.h>

#include "log.h"
#include "sampling.h"
#include "snapshot-format.h"
#include "snapshot-json.h"
#include "steerd.h"
#include "topology.h"

static void sleep_us(uint64_t us) {
        struct timespec ts = {.tv_sec = (time_t) (us / USEC_PER_SEC),
                              .tv_nsec = (long) (us % USEC_PER_SEC) * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int run_once(const Args *args, const Config *config) {
        _cleanup_(sampling_setup_done) SamplingSetup setup = {};
        _cleanup_(snapshot_freep) Snapshot *snap = NULL;
        uint64_t interval_us = (args->interval_ms ?: 1000) * USEC_PER_MSEC;
        int r;

        r = sampling_setup(args->root, args->topology, config, &setup);
        if (r < 0)
                return r;

        uint64_t t0 = now_monotonic_us();
        sampler_set_full(setup.sampler, true);
        r = sample_snapshot(setup.sampler, t0, setup.cgroups.items, setup.cgroups.n, &snap);
        if (r != -EAGAIN)
                return r < 0 ? r : -EINVAL;
        sleep_us(interval_us);
        r = sample_snapshot(setup.sampler, now_monotonic_us(), setup.cgroups.items, setup.cgroups.n, &snap);
        if (r < 0)
                return r;

        if (args->json) {
                _cleanup_(freep) char *text = NULL;
                r = snapshot_to_json_string(snap, &text);
                if (r < 0)
                        return log_error_errno(r, "Cannot format the snapshot");
                puts(text);
        } else {
                r = snapshot_format_text(snap, setup.topo->source, stdout);
                if (r < 0)
                        return r;
        }
        return fflush(stdout) == 0 ? 0 : -errno;
}
