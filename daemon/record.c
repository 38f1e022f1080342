/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <time.h>

#include "log.h"
#include "sampling.h"
#include "snapshot-json.h"
#include "steerd.h"

/* Sleep until `deadline_us` unless SIGINT/SIGTERM arrives: returns 1 if one did. */
static int wait_until(uint64_t deadline_us, const sigset_t *mask) {
        uint64_t now = now_monotonic_us();
        if (now >= deadline_us)
                return 0;
        uint64_t d = deadline_us - now;
        struct timespec ts = {.tv_sec = (time_t) (d / USEC_PER_SEC),
                              .tv_nsec = (long) (d % USEC_PER_SEC) * 1000};
        int sig = sigtimedwait(mask, NULL, &ts);
        if (sig > 0)
                return 1;
        return 0;
}

int run_record(const Args *args, const Config *config) {
        _cleanup_(sampling_setup_done) SamplingSetup setup = {};
        _cleanup_(fclosep) FILE *owned = NULL;
        uint64_t period_us = config->settings.sample_period_ms * USEC_PER_MSEC;
        FILE *out = stdout;
        sigset_t mask;
        int r;

        if (!streq(args->record, "-")) {
                owned = fopen(args->record, "we");
                if (!owned)
                        return log_error_errno(errno, "Cannot open %s for writing", args->record);
                out = owned;
        }
        r = sampling_setup(args->root, args->topology, config, &setup);
        if (r < 0)
                return r;

        /* Stop cleanly between two lines, never in the middle of one. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        uint64_t next = now_monotonic_us(), written = 0;
        for (;;) {
                _cleanup_(snapshot_freep) Snapshot *snap = NULL;
                r = sample_snapshot(setup.sampler, now_monotonic_us(), setup.cgroups.items, setup.cgroups.n,
                                    &snap);
                if (r >= 0) {
                        _cleanup_(freep) char *line = NULL;
                        r = snapshot_to_json_string(snap, &line);
                        if (r < 0)
                                return log_error_errno(r, "Cannot format a snapshot");
                        if (fprintf(out, "%s\n", line) < 0 || fflush(out) != 0)
                                return log_error_errno(errno, "Cannot write %s", args->record);
                        written++;
                        if (args->ticks > 0 && written >= args->ticks)
                                break;
                } else if (r != -EAGAIN)
                        log_warning_errno(r, "Sample failed; trying again next period");
                /* Keep the cadence, but after a stall start afresh rather than
                 * firing the missed ticks back to back. */
                next += period_us;
                uint64_t now = now_monotonic_us();
                if (next <= now)
                        next = now + period_us;
                if (wait_until(next, &mask) > 0)
                        break;
        }
        log_info("Recorded %llu snapshots to %s", (unsigned long long) written, args->record);
        return 0;
}
