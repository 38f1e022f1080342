/* SPDX-License-Identifier: MIT */
#pragma once

/* A trial: does steering help this cgroup, on this host, under its own load?
 * steerd alternates the cgroup between steered (its policy, as always) and
 * hands-off (everything it holds there given back, as an opt-out does, the
 * cgroup staying opted in) in blocks of equal length, and compares the
 * cgroup's figures block against block.
 *
 * The schedule: two hands-off readiness blocks first (the noise between two
 * blocks of the same arm, measured before anything is claimed), then pairs
 * of blocks, each pair steered + hands-off in an order drawn at random from
 * the trial's seed, so that a drift or a periodic load falls on both arms
 * alike. Each block starts with a settling part that is not measured. Its
 * length is measured, not guessed: a block's settling time is how long
 * steerd kept acting on the cgroup (a give-back, a window, pins) until
 * TRIAL_QUIET_TICKS ticks in a row passed without an action. Both blocks of
 * a pair discard the same part, the longest settling time seen in the
 * blocks before the pair, at most half a block, so that the two measured
 * parts the pair compares are equally long (a counter read as a rate, or a
 * latency that drifts within a block, is not biased by unequal lengths).
 * The readiness blocks and the first pair, before any steered block was
 * seen, discard half a block. A block in which steerd still acted after its
 * measured part began is marked unsettled.
 *
 * The verdict: per pair, ln(steered / hands-off) of the primary signal;
 * their mean with a Student t interval (stats.h, the benchmark report's
 * statistics) mapped back to a ratio, and stats_verdict() on it.
 *
 * Everything here is pure: the manager reads the cgroup's counters and hands
 * the block's figures in; time is a parameter. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"
#include "steerd-macros.h"

typedef enum TrialArm {
        TRIAL_ARM_STEERED,
        TRIAL_ARM_HANDS_OFF,
        _TRIAL_ARM_MAX,
        _TRIAL_ARM_INVALID = -EINVAL,
} TrialArm;

const char *trial_arm_to_string(TrialArm a) _pure_;
TrialArm trial_arm_from_string(const char *s) _pure_;

/* What a block measures. The first three need nothing from the application. */
typedef enum TrialSignal {
        TRIAL_SIGNAL_LATENCY,  /* run-queue delay per time slice, µs (schedstat): lower is better */
        TRIAL_SIGNAL_SLICES,   /* time slices per second (schedstat pcount): higher is better */
        TRIAL_SIGNAL_PRESSURE, /* cgroup v2 cpu.pressure "some", % of the block: lower is better */
        TRIAL_SIGNAL_METRIC,   /* the operator's --metric: its direction is given */
        _TRIAL_SIGNAL_MAX,
        _TRIAL_SIGNAL_INVALID = -EINVAL,
} TrialSignal;

const char *trial_signal_to_string(TrialSignal s) _pure_;
TrialSignal trial_signal_from_string(const char *s) _pure_;
/* The direction of a built-in signal (TRIAL_SIGNAL_METRIC: false). */
bool trial_signal_higher_is_better(TrialSignal s) _pure_;

typedef enum TrialState {
        TRIAL_STATE_RUNNING,
        TRIAL_STATE_DONE,        /* every block ran */
        TRIAL_STATE_STOPPED,     /* steerctl trial --stop */
        TRIAL_STATE_INTERRUPTED, /* steerd stopped, the mode changed, the cgroup left or vanished */
        TRIAL_STATE_FAILED,      /* nothing to measure */
        _TRIAL_STATE_MAX,
        _TRIAL_STATE_INVALID = -EINVAL,
} TrialState;

const char *trial_state_to_string(TrialState s) _pure_;
TrialState trial_state_from_string(const char *s) _pure_;

/* Two hands-off blocks before the first steered one. */
#define TRIAL_READINESS_BLOCKS 2
/* Fewest pairs after them: one pair gives no interval. */
#define TRIAL_MIN_PAIRS 2
/* Most blocks of one trial (the record stays small). */
#define TRIAL_MAX_BLOCKS 1000
/* Ticks without an action on the cgroup after which a block is settled. */
#define TRIAL_QUIET_TICKS 3
/* The smallest difference that matters, unless the operator says otherwise. */
#define TRIAL_DEFAULT_MARGIN 0.02
#define TRIAL_DEFAULT_BLOCK_USEC (30 * USEC_PER_SEC)
#define TRIAL_DEFAULT_DURATION_USEC (20 * 60 * USEC_PER_SEC)

typedef struct TrialValues {
        bool has[_TRIAL_SIGNAL_MAX];
        double v[_TRIAL_SIGNAL_MAX];
} TrialValues;

typedef struct TrialBlock {
        TrialArm arm;
        bool readiness;
        bool started, measuring, ended;
        uint64_t start_us, measure_us, end_us; /* CLOCK_MONOTONIC (records: relative to the trial's start) */
        bool settled;                          /* false: steerd acted after the measured part began */
        bool acted; /* steerd acted on the cgroup in this block (last at last_action_us) */
        uint64_t last_action_us;
        bool quiet; /* TRIAL_QUIET_TICKS ticks without an action passed, at quiet_us */
        uint64_t quiet_us;
        uint64_t discard_us; /* the part not measured, from start_us */
        TrialValues values;
} TrialBlock;

typedef struct TrialSpec {
        char *cgroup;
        uint64_t duration_us, block_us;
        char *metric;        /* the operator's --metric text; NULL: none */
        TrialSignal primary; /* what the verdict is drawn from */
        bool higher_is_better;
        double margin; /* 0.02 = 2% */
        uint64_t seed; /* the block order */
} TrialSpec;

void trial_spec_done(TrialSpec *s);

typedef struct Trial {
        char *id;
        TrialSpec spec;
        TrialState state;
        char *end_reason; /* why it ended, for people; NULL while running or done */
        char *note;       /* what went wrong on the way (the metric could not be read ...) */
        uint64_t started_realtime_us;
        uint64_t started_us; /* CLOCK_MONOTONIC */
        TrialBlock *blocks;  /* the whole schedule, filled as it runs */
        size_t n_blocks;
        size_t current; /* the block in force; n_blocks when none is */
        unsigned quiet_ticks;
        uint64_t settle_seen_us; /* the longest settling time of the blocks ended so far */
        bool steered_seen;       /* a steered block ended */
} Trial;

Trial *trial_free(Trial *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Trial *, trial_free);

/* The number of pairs a duration holds after the readiness blocks. */
size_t trial_pairs_for(uint64_t duration_us, uint64_t block_us) _pure_;

/* A trial starting now, its first block (hands-off) started. Takes a copy of
 * spec. -EINVAL, with a message for people in ret_error (optional), when the
 * block is shorter than min_block_us, the duration does not hold the
 * readiness blocks and TRIAL_MIN_PAIRS pairs, or would need more than
 * TRIAL_MAX_BLOCKS blocks, or the margin is not in [0, 1). */
int trial_new(const char *id, const TrialSpec *spec, uint64_t min_block_us, uint64_t now_us,
              uint64_t realtime_us, Trial **ret, char **ret_error);

/* The arm in force (the last block's once it ended). */
TrialArm trial_arm(const Trial *t) _pure_;

typedef enum TrialStep {
        TRIAL_STEP_NONE,
        TRIAL_STEP_MEASURE, /* the block's measured part starts: read the counters now */
        TRIAL_STEP_END,     /* the block is over: read the counters, then trial_end_block() */
} TrialStep;

/* One tick of a running trial: acted says whether steerd changed anything of
 * the cgroup this tick (an action applied, a give-back). */
TrialStep trial_tick(Trial *t, uint64_t now_us, bool acted);

/* The block in force ended with these figures (a signal without a figure:
 * has false); the next one starts now. ret_next: its arm, or -1 when the
 * trial is over (state DONE). */
int trial_end_block(Trial *t, uint64_t now_us, const TrialValues *values, int *ret_next);

/* End a running trial (STOPPED, INTERRUPTED, FAILED) with a reason. */
int trial_finish(Trial *t, TrialState state, const char *reason);

/* Progress, 0..1, by time planned. */
double trial_progress(const Trial *t, uint64_t now_us) _pure_;

/* The estimate of steered / hands-off for a signal from the finished pairs.
 * -ENODATA when fewer than 2 pairs have the signal (ret_pairs says how many);
 * otherwise as stats_log_ratios(). */
int trial_estimate(const Trial *t, TrialSignal s, RatioEstimate *ret, size_t *ret_pairs);

/* How different the two readiness blocks were, |ln(b/a)| of the primary
 * signal: -ENODATA until both are measured. */
int trial_readiness_noise(const Trial *t, double *ret);

typedef struct TrialVerdict {
        StatsVerdict verdict; /* CANT_TELL too while there are fewer than 2 pairs */
        bool has_estimate;
        RatioEstimate e;
        size_t pairs;
        size_t more_blocks; /* CANT_TELL: about how many more blocks would tell (0: unknown) */
        char text[256];     /* "helps by 12% [8%, 16%]", "can't tell: ..." */
} TrialVerdict;

/* The verdict on the primary signal, and a sentence for people. */
int trial_verdict(const Trial *t, TrialVerdict *ret);

/* The record, as kept under /var/lib/steerd/trials and shown by steerctl:
 * a JSON object (docs/TRIALS.md lists its keys). */
int trial_to_json(const Trial *t, char **ret);
/* -EBADMSG for text that is not such a record. */
int trial_from_json(const char *text, Trial **ret);

/* A trial id is what steerd makes (trial_make_id()) and what a file name may
 * be: 1..64 of [A-Za-z0-9_.-], not starting with '.'. */
bool trial_id_valid(const char *id) _pure_;
/* "20261206T170512Z-<seq>": sortable by start. */
int trial_make_id(uint64_t realtime_us, unsigned seq, char *buf, size_t size);
