/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "evaluate.h"
#include "random.h"

static void start_cycle(Evaluation *e, uint64_t now_us) {
        e->pos = 0;
        /* The fast start: cycles of two blocks (one of each, in a random
         * order) until the fewest pairs for a verdict are in, so that harm
         * shows within minutes of an opt-in, not an hour; bounded, so that
         * a cgroup whose blocks cannot be measured does not stay half
         * hands-off for good. */
        if (e->fast_left > 0 && e->n_logs < EVALUATE_MIN_PAIRS) {
                e->fast_left--;
                e->cycle = 2;
                e->off_pos = (unsigned) (splitmix64(&e->rng) & 1);
                e->pair_pos = 1 - e->off_pos;
        } else {
                e->fast_left = 0;
                e->cycle = e->duty;
                e->off_pos = 1 + (unsigned) (splitmix64(&e->rng) % (e->duty - 1));
                if (e->off_pos + 1 >= e->duty || (splitmix64(&e->rng) & 1))
                        e->pair_pos = e->off_pos - 1;
                else
                        e->pair_pos = e->off_pos + 1;
        }
        e->block_start_us = now_us;
        e->measuring = false;
        for (int a = 0; a < _TRIAL_ARM_MAX; a++)
                e->has[a] = e->has_slices[a] = false;
}

int evaluate_init(Evaluation *e, unsigned duty, uint64_t block_us, double harm, uint64_t retry_us,
                  uint64_t seed, uint64_t now_us) {
        if (duty < 2 || block_us == 0 || !(harm > 0 && harm < 1))
                return -EINVAL;
        *e = (Evaluation){
                .duty = duty,
                .block_us = block_us,
                .retry_us = retry_us,
                .harm = harm,
                .rng = seed,
                .fast_left = EVALUATE_FAST_CYCLES,
        };
        start_cycle(e, now_us);
        return 0;
}

bool evaluate_hands_off(const Evaluation *e) {
        return e->off || e->pos == e->off_pos;
}

bool evaluate_measured(const Evaluation *e) {
        return !e->off && (e->pos == e->off_pos || e->pos == e->pair_pos);
}

EvaluateStep evaluate_tick(Evaluation *e, uint64_t now_us) {
        if (e->off) {
                if (now_us < e->retry_at_us)
                        return EVALUATE_STEP_NONE;
                /* Steering again, and judged afresh: the load may have changed. */
                e->off = false;
                e->n_logs = e->next_log = 0;
                e->n_slice_logs = e->next_slice_log = 0;
                e->has_estimate = false;
                e->fast_left = EVALUATE_FAST_CYCLES;
                start_cycle(e, now_us);
                return EVALUATE_STEP_RETRY;
        }
        uint64_t in = usec_since(now_us, e->block_start_us);
        if (evaluate_measured(e) && !e->measuring && in >= e->block_us / 2) {
                e->measuring = true;
                return EVALUATE_STEP_MEASURE;
        }
        return in >= e->block_us ? EVALUATE_STEP_END : EVALUATE_STEP_NONE;
}

static bool figure(const TrialValues *v, TrialSignal s) {
        return v && v->has[s] && isfinite(v->v[s]) && v->v[s] > 0;
}

/* Slices a second say steering helps (beyond harm, with confidence). */
static bool slices_better(const Evaluation *e) {
        RatioEstimate est;
        StatsVerdict v;

        return e->n_slice_logs >= 2 && stats_log_ratios(e->slice_logs, e->n_slice_logs, &est) >= 0 &&
               stats_verdict(&est, true, e->harm, &v) >= 0 && v == STATS_VERDICT_BETTER;
}

int evaluate_end_block(Evaluation *e, uint64_t now_us, const TrialValues *v, bool *ret_turned_off) {
        bool turned_off = false;

        if (e->off)
                return -ESTALE;
        if (evaluate_measured(e) && e->measuring) {
                TrialArm a = e->pos == e->off_pos ? TRIAL_ARM_HANDS_OFF : TRIAL_ARM_STEERED;
                if (figure(v, TRIAL_SIGNAL_LATENCY)) {
                        e->has[a] = true;
                        e->value[a] = v->v[TRIAL_SIGNAL_LATENCY];
                }
                if (figure(v, TRIAL_SIGNAL_SLICES)) {
                        e->has_slices[a] = true;
                        e->slices[a] = v->v[TRIAL_SIGNAL_SLICES];
                }
        }
        e->measuring = false;
        if (++e->pos < e->cycle) {
                e->block_start_us = now_us;
                *ret_turned_off = false;
                return 0;
        }
        /* The cycle is over: its pair, if both were measured. */
        if (e->has_slices[TRIAL_ARM_STEERED] && e->has_slices[TRIAL_ARM_HANDS_OFF] &&
            e->has[TRIAL_ARM_STEERED] && e->has[TRIAL_ARM_HANDS_OFF]) {
                e->slice_logs[e->next_slice_log] =
                        log(e->slices[TRIAL_ARM_STEERED]) - log(e->slices[TRIAL_ARM_HANDS_OFF]);
                e->next_slice_log = (e->next_slice_log + 1) % EVALUATE_WINDOW_PAIRS;
                e->n_slice_logs = MIN(e->n_slice_logs + 1, (size_t) EVALUATE_WINDOW_PAIRS);
        }
        if (e->has[TRIAL_ARM_STEERED] && e->has[TRIAL_ARM_HANDS_OFF]) {
                e->logs[e->next_log] = log(e->value[TRIAL_ARM_STEERED]) - log(e->value[TRIAL_ARM_HANDS_OFF]);
                e->next_log = (e->next_log + 1) % EVALUATE_WINDOW_PAIRS;
                e->n_logs = MIN(e->n_logs + 1, (size_t) EVALUATE_WINDOW_PAIRS);
                e->pairs_total++;
                RatioEstimate est;
                StatsVerdict verdict;
                if (e->n_logs >= 2 && stats_log_ratios(e->logs, e->n_logs, &est) >= 0) {
                        e->estimate = est;
                        e->has_estimate = true;
                        if (e->n_logs >= EVALUATE_MIN_PAIRS &&
                            stats_verdict(&est, false, e->harm, &verdict) >= 0 &&
                            verdict == STATS_VERDICT_WORSE && !slices_better(e)) {
                                turned_off = true;
                                e->off = true;
                                e->off_since_us = now_us;
                                e->retry_at_us = now_us + e->retry_us;
                                e->times_off++;
                        }
                }
        }
        start_cycle(e, now_us);
        *ret_turned_off = turned_off;
        return 0;
}
