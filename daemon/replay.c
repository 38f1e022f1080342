/* SPDX-License-Identifier: MIT */
#include "log.h"
#include "plan.h"
#include "policy.h"
#include "snapshot-json.h"
#include "steerd.h"

/* The policy engine over a recorded stream. The engine is pure and takes
 * the snapshot's own time as `now`, so the same input gives byte-identical
 * output on any host. */
int run_replay(const Args *args, const Config *config) {
        _cleanup_(fclosep) FILE *owned = NULL;
        _cleanup_(policy_state_freep) PolicyState *state = NULL;
        _cleanup_(freep) char *line = NULL;
        size_t alloc = 0;
        unsigned lineno = 0, tick = 0;
        FILE *in = stdin;
        int r;

        if (!streq(args->replay, "-")) {
                owned = fopen(args->replay, "re");
                if (!owned)
                        return log_error_errno(errno, "Cannot open %s", args->replay);
                in = owned;
        }
        r = policy_state_new(&state);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the policy engine");

        Settings settings = config->settings;
        /* A recording is replayed to see what the engine would do: observe
         * (the config's default) decides like latency. */
        if (settings.mode == MODE_OFF)
                log_warning("Mode=off in the config: every tick restores, nothing is decided.");

        for (;;) {
                errno = 0;
                ssize_t n = getline(&line, &alloc, in);
                if (n < 0) {
                        if (errno != 0)
                                return log_error_errno(errno, "Cannot read %s", args->replay);
                        break;
                }
                lineno++;
                if (n == 0 || line[0] == '\n')
                        continue;

                _cleanup_(snapshot_freep) Snapshot *snap = NULL;
                _cleanup_(plan_freep) Plan *plan = NULL;
                r = snapshot_from_json_string(line, args->replay, lineno, &snap);
                if (r < 0)
                        return r;
                /* A recording's flags are the rule of its day: today's rule decides. */
                policy_mark_overloaded(snap);
                r = policy_decide(snap, &settings, state, snap->time_us, &plan);
                if (r < 0)
                        return log_error_errno(r, "%s:%u: the policy engine failed", args->replay, lineno);
                if (args->json) {
                        _cleanup_(freep) char *text = NULL;
                        r = plan_to_json(plan, tick, &text);
                        if (r < 0)
                                return log_error_errno(r, "Cannot format a plan");
                        puts(text);
                } else {
                        r = plan_format_text(plan, tick, stdout);
                        if (r < 0)
                                return r;
                }
                tick++;
        }

        if (!args->json) {
                PolicyCounters c;
                policy_state_counters(state, &c);
                printf("\n%u ticks: %llu actions applied, %llu kept, %llu reverted by the guard, %llu "
                       "restored\n",
                       tick, (unsigned long long) c.applied, (unsigned long long) c.kept,
                       (unsigned long long) c.reverted, (unsigned long long) c.restored);
        }
        return fflush(stdout) == 0 ? 0 : -errno;
}
