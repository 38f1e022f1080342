/* SPDX-License-Identifier: MIT */
#pragma once

/* Evaluate=auto: a light trial that runs for good on an opted-in cgroup,
 * and turns steering off where it hurts.
 *
 * Blocks follow each other in cycles of `duty` blocks: one of them, at a
 * random place (never the first, so that it follows a steered block), is
 * hands-off; one steered block next to it (before or after, at random) is
 * its pair. A fast start comes first (and after each back-off): cycles of
 * two blocks, one of each in a random order, until EVALUATE_MIN_PAIRS
 * pairs are in (at most EVALUATE_FAST_CYCLES), so that a harmful opt-in is
 * found in 4 x 2 blocks (4 min at 30 s), not 4 x duty (16 min at 8).
 * Only those two are measured, both on their second half (the first is
 * settling; equal halves compare fairly), by the cgroup's run-queue delay
 * per time slice (lower is better). Each cycle gives one log-ratio; the
 * last EVALUATE_WINDOW_PAIRS make the estimate (stats.h). When its
 * interval lies above 1 + harm (stats_verdict() WORSE), steering is turned
 * off: the cgroup is hands-off until retry_us later, when steering and the
 * evaluation start afresh.
 *
 * What it costs: one block in `duty` forgoes whatever steering gains; that
 * and the two reads of a measured block are all. Pure: the manager reads the
 * counters and gives the figures in, with the time. */

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"
#include "trial.h"

#define EVALUATE_WINDOW_PAIRS 16
/* Fewest pairs before a verdict can turn steering off. */
#define EVALUATE_MIN_PAIRS 4
/* The fast start's most cycles of two blocks (start_cycle()). */
#define EVALUATE_FAST_CYCLES (2 * EVALUATE_MIN_PAIRS)

typedef enum EvaluateStep {
        EVALUATE_STEP_NONE,
        EVALUATE_STEP_MEASURE, /* a measured block's second half starts: read the counters */
        EVALUATE_STEP_END,     /* the block ended: evaluate_end_block() (measured: with its figure) */
        EVALUATE_STEP_RETRY,   /* the back-off is over: steering is on again */
} EvaluateStep;

typedef struct Evaluation {
        unsigned duty;
        uint64_t block_us, retry_us;
        double harm; /* 0.02 = 2% */
        uint64_t rng;

        unsigned cycle;     /* blocks in this cycle: 2 in the fast start, else duty */
        unsigned fast_left; /* cycles the fast start may still take */
        unsigned pos;       /* the block in force, within the cycle */
        unsigned off_pos;   /* the cycle's hands-off block */
        unsigned pair_pos;  /* its steered pair */
        uint64_t block_start_us;
        bool measuring;
        bool has[_TRIAL_ARM_MAX];
        double value[_TRIAL_ARM_MAX];
        bool has_slices[_TRIAL_ARM_MAX];
        double slices[_TRIAL_ARM_MAX];

        double logs[EVALUATE_WINDOW_PAIRS]; /* ln(steered / hands-off) of latency, a ring */
        size_t n_logs, next_log;
        /* The same of slices a second, where both blocks had them: the
         * progress that keeps a pin whose latency rises by design. */
        double slice_logs[EVALUATE_WINDOW_PAIRS];
        size_t n_slice_logs, next_slice_log;
        uint64_t pairs_total;
        bool has_estimate;
        RatioEstimate estimate;

        bool off; /* steering turned off for harm */
        uint64_t off_since_us, retry_at_us;
        unsigned times_off;
} Evaluation;

/* -EINVAL for duty < 2, a block of 0, harm not in (0, 1). */
int evaluate_init(Evaluation *e, unsigned duty, uint64_t block_us, double harm, uint64_t retry_us,
                  uint64_t seed, uint64_t now_us);
/* Hands-off now: the cycle's hands-off block, or steering is off. */
bool evaluate_hands_off(const Evaluation *e) _pure_;
/* The block in force is measured. */
bool evaluate_measured(const Evaluation *e) _pure_;
EvaluateStep evaluate_tick(Evaluation *e, uint64_t now_us);
/* The block in force ended; v: its figures when measured (NULL: none).
 * Sets *ret_turned_off when this block's pair made the estimate say harm:
 * latency (run-queue delay per slice) worse beyond harm, and slices a
 * second not better beyond it. A pair pinned together waits for its
 * partner's hand-over by design: its latency per slice doubled while pipe
 * ran a third more slices a second (trials.sh's power row), and latency
 * alone would turn off the pin that helps most. */
int evaluate_end_block(Evaluation *e, uint64_t now_us, const TrialValues *v, bool *ret_turned_off);
