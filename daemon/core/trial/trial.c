/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdarg.h>
#include <time.h>

#include "random.h"
#include "trial.h"

static const char *const trial_arm_table[_TRIAL_ARM_MAX] = {
        [TRIAL_ARM_STEERED] = "steered",
        [TRIAL_ARM_HANDS_OFF] = "hands-off",
};
DEFINE_STRING_TABLE_LOOKUP(trial_arm, TrialArm, _TRIAL_ARM_MAX);

static const char *const trial_signal_table[_TRIAL_SIGNAL_MAX] = {
        [TRIAL_SIGNAL_LATENCY] = "latency",
        [TRIAL_SIGNAL_SLICES] = "slices",
        [TRIAL_SIGNAL_PRESSURE] = "pressure",
        [TRIAL_SIGNAL_METRIC] = "metric",
};
DEFINE_STRING_TABLE_LOOKUP(trial_signal, TrialSignal, _TRIAL_SIGNAL_MAX);

static const char *const trial_state_table[_TRIAL_STATE_MAX] = {
        [TRIAL_STATE_RUNNING] = "running", [TRIAL_STATE_DONE] = "done",
        [TRIAL_STATE_STOPPED] = "stopped", [TRIAL_STATE_INTERRUPTED] = "interrupted",
        [TRIAL_STATE_FAILED] = "failed",
};
DEFINE_STRING_TABLE_LOOKUP(trial_state, TrialState, _TRIAL_STATE_MAX);

bool trial_signal_higher_is_better(TrialSignal s) {
        return s == TRIAL_SIGNAL_SLICES;
}

void trial_spec_done(TrialSpec *s) {
        free(s->cgroup);
        free(s->metric);
        *s = (TrialSpec){};
}

Trial *trial_free(Trial *t) {
        if (!t)
                return NULL;
        free(t->id);
        trial_spec_done(&t->spec);
        free(t->end_reason);
        free(t->note);
        free(t->blocks);
        free(t);
        return NULL;
}

size_t trial_pairs_for(uint64_t duration_us, uint64_t block_us) {
        if (block_us == 0 || duration_us / block_us < TRIAL_READINESS_BLOCKS)
                return 0;
        return (duration_us / block_us - TRIAL_READINESS_BLOCKS) / 2;
}

static int set_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int set_error(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (!ret_error)
                return -EINVAL;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return -EINVAL;
}

/* What a block starting now discards: the same for both blocks of a pair. */
static uint64_t discard_for(const Trial *t, size_t i) {
        uint64_t half = t->spec.block_us / 2;

        if (i < TRIAL_READINESS_BLOCKS || !t->steered_seen)
                return half;
        if ((i - TRIAL_READINESS_BLOCKS) % 2 == 1)
                return t->blocks[i - 1].discard_us;
        return MIN(t->settle_seen_us, half);
}

static void start_block(Trial *t, size_t i, uint64_t now_us) {
        TrialBlock *b = &t->blocks[i];
        b->started = true;
        b->start_us = now_us;
        b->discard_us = discard_for(t, i);
        t->quiet_ticks = 0;
}

int trial_new(const char *id, const TrialSpec *spec, uint64_t min_block_us, uint64_t now_us,
              uint64_t realtime_us, Trial **ret, char **ret_error) {
        _cleanup_(trial_freep) Trial *t = NULL;

        if (!id || !trial_id_valid(id) || !spec || !spec->cgroup || spec->primary < 0 ||
            spec->primary >= _TRIAL_SIGNAL_MAX)
                return -EINVAL;
        if (spec->block_us < min_block_us || spec->block_us == 0)
                return set_error(ret_error,
                                 "blocks of %.3g s are too short: at least %.3g s (3 sample periods)",
                                 spec->block_us / 1e6, min_block_us / 1e6);
        size_t pairs = trial_pairs_for(spec->duration_us, spec->block_us);
        if (pairs < TRIAL_MIN_PAIRS)
                return set_error(
                        ret_error,
                        "%.3g s hold no %d readiness blocks and %d pairs of %.3g s blocks: at least "
                        "%.3g s",
                        spec->duration_us / 1e6, TRIAL_READINESS_BLOCKS, TRIAL_MIN_PAIRS,
                        spec->block_us / 1e6,
                        (double) spec->block_us * (TRIAL_READINESS_BLOCKS + 2 * TRIAL_MIN_PAIRS) / 1e6);
        if (TRIAL_READINESS_BLOCKS + 2 * pairs > TRIAL_MAX_BLOCKS)
                return set_error(ret_error,
                                 "%zu blocks are too many: at most %d (longer blocks, or a shorter trial)",
                                 TRIAL_READINESS_BLOCKS + 2 * pairs, TRIAL_MAX_BLOCKS);
        if (!isfinite(spec->margin) || spec->margin < 0 || spec->margin >= 1)
                return set_error(ret_error, "the margin %g is not in [0, 1)", spec->margin);

        t = calloc(1, sizeof(Trial));
        if (!t)
                return -ENOMEM;
        t->id = strdup(id);
        t->spec = *spec;
        t->spec.cgroup = strdup(spec->cgroup);
        t->spec.metric = spec->metric ? strdup(spec->metric) : NULL;
        t->n_blocks = TRIAL_READINESS_BLOCKS + 2 * pairs;
        t->blocks = calloc(t->n_blocks, sizeof(TrialBlock));
        if (!t->id || !t->spec.cgroup || (spec->metric && !t->spec.metric) || !t->blocks)
                return -ENOMEM;

        uint64_t state = spec->seed;
        for (size_t i = 0; i < t->n_blocks; i++) {
                if (i < TRIAL_READINESS_BLOCKS) {
                        t->blocks[i] = (TrialBlock){.arm = TRIAL_ARM_HANDS_OFF, .readiness = true};
                        continue;
                }
                if ((i - TRIAL_READINESS_BLOCKS) % 2 == 0) {
                        bool steered_first = splitmix64(&state) & 1;
                        t->blocks[i].arm = steered_first ? TRIAL_ARM_STEERED : TRIAL_ARM_HANDS_OFF;
                } else
                        t->blocks[i].arm = t->blocks[i - 1].arm == TRIAL_ARM_STEERED ? TRIAL_ARM_HANDS_OFF
                                                                                     : TRIAL_ARM_STEERED;
        }
        t->state = TRIAL_STATE_RUNNING;
        t->started_us = now_us;
        t->started_realtime_us = realtime_us;
        start_block(t, 0, now_us);
        *ret = TAKE_PTR(t);
        return 0;
}

TrialArm trial_arm(const Trial *t) {
        size_t i = MIN(t->current, t->n_blocks - 1);
        return t->blocks[i].arm;
}

TrialStep trial_tick(Trial *t, uint64_t now_us, bool acted) {
        if (t->state != TRIAL_STATE_RUNNING || t->current >= t->n_blocks)
                return TRIAL_STEP_NONE;
        TrialBlock *b = &t->blocks[t->current];
        uint64_t in = usec_since(now_us, b->start_us);

        if (acted) {
                b->acted = true;
                b->last_action_us = now_us;
                b->quiet = false;
                t->quiet_ticks = 0;
                if (b->measuring)
                        b->settled = false;
        } else if (++t->quiet_ticks >= TRIAL_QUIET_TICKS && !b->quiet) {
                b->quiet = true;
                b->quiet_us = now_us;
        }
        if (!b->measuring) {
                if (in < b->discard_us)
                        return TRIAL_STEP_NONE;
                b->measuring = true;
                b->settled = b->quiet;
                b->measure_us = now_us;
                return TRIAL_STEP_MEASURE;
        }
        return in >= t->spec.block_us ? TRIAL_STEP_END : TRIAL_STEP_NONE;
}

int trial_end_block(Trial *t, uint64_t now_us, const TrialValues *values, int *ret_next) {
        if (t->state != TRIAL_STATE_RUNNING || t->current >= t->n_blocks)
                return -ESTALE;
        TrialBlock *b = &t->blocks[t->current];
        if (!b->measuring)
                return -EBUSY;
        b->ended = true;
        b->end_us = now_us;
        for (int s = 0; s < _TRIAL_SIGNAL_MAX; s++) {
                /* Only finite, positive figures can be compared as ratios. */
                bool ok = values && values->has[s] && isfinite(values->v[s]) && values->v[s] > 0;
                b->values.has[s] = ok;
                b->values.v[s] = ok ? values->v[s] : 0;
        }
        /* Its settling time: until it was quiet for good (never: the whole block). */
        uint64_t settle = b->quiet ? usec_since(b->quiet_us, b->start_us) : usec_since(now_us, b->start_us);
        t->settle_seen_us = MAX(t->settle_seen_us, settle);
        if (b->arm == TRIAL_ARM_STEERED)
                t->steered_seen = true;
        t->current++;
        if (t->current >= t->n_blocks) {
                t->state = TRIAL_STATE_DONE;
                *ret_next = -1;
                return 0;
        }
        start_block(t, t->current, now_us);
        *ret_next = t->blocks[t->current].arm;
        return 0;
}

static int set_string(char **p, const char *s) {
        char *d = s ? strdup(s) : NULL;
        if (s && !d)
                return -ENOMEM;
        free(*p);
        *p = d;
        return 0;
}

int trial_finish(Trial *t, TrialState state, const char *reason) {
        if (state != TRIAL_STATE_STOPPED && state != TRIAL_STATE_INTERRUPTED && state != TRIAL_STATE_FAILED)
                return -EINVAL;
        if (t->state != TRIAL_STATE_RUNNING)
                return -ESTALE;
        int r = set_string(&t->end_reason, reason);
        if (r < 0)
                return r;
        t->state = state;
        return 0;
}

double trial_progress(const Trial *t, uint64_t now_us) {
        if (t->state == TRIAL_STATE_DONE)
                return 1;
        double planned = (double) t->n_blocks * t->spec.block_us;
        if (planned <= 0 || now_us <= t->started_us)
                return 0;
        return CLAMP((now_us - t->started_us) / planned, 0.0, 1.0);
}

/* The pairs' log-ratios ln(steered / hands-off) of a signal, in order. */
static size_t pair_logs(const Trial *t, TrialSignal s, double *logs) {
        size_t n = 0;

        for (size_t i = TRIAL_READINESS_BLOCKS; i + 1 < t->n_blocks; i += 2) {
                const TrialBlock *a = &t->blocks[i], *b = &t->blocks[i + 1];
                if (!a->ended || !b->ended || !a->values.has[s] || !b->values.has[s])
                        continue;
                const TrialBlock *st = a->arm == TRIAL_ARM_STEERED ? a : b, *ho = st == a ? b : a;
                logs[n++] = log(st->values.v[s]) - log(ho->values.v[s]);
        }
        return n;
}

/* ln(second / first) of the two readiness blocks (both hands-off). */
static int readiness_log(const Trial *t, TrialSignal s, double *ret) {
        if (t->n_blocks < TRIAL_READINESS_BLOCKS)
                return -ENODATA;
        const TrialBlock *a = &t->blocks[0], *b = &t->blocks[1];
        if (!a->ended || !b->ended || !a->values.has[s] || !b->values.has[s])
                return -ENODATA;
        *ret = log(b->values.v[s]) - log(a->values.v[s]);
        return isfinite(*ret) ? 0 : -ERANGE;
}

int trial_estimate(const Trial *t, TrialSignal s, RatioEstimate *ret, size_t *ret_pairs) {
        _cleanup_(freep) double *logs = NULL;
        double d;

        if (s < 0 || s >= _TRIAL_SIGNAL_MAX)
                return -EINVAL;
        logs = calloc(MAX(t->n_blocks / 2, (size_t) 1), sizeof(double));
        if (!logs)
                return -ENOMEM;
        size_t n = pair_logs(t, s, logs);
        if (ret_pairs)
                *ret_pairs = n;
        if (n < 2)
                return -ENODATA;
        /* The readiness blocks' difference is one draw of a pair's noise
         * with no effect in it (each pair's log-ratio and it are both the
         * difference of two blocks): pooled in, it keeps a few pairs that
         * happen to agree from claiming a precision the host does not
         * have. */
        if (readiness_log(t, s, &d) >= 0)
                return stats_log_ratios_pooled(logs, n, d * d, 1, ret);
        return stats_log_ratios(logs, n, ret);
}

int trial_readiness_noise(const Trial *t, double *ret) {
        double d;
        int r = readiness_log(t, t->spec.primary, &d);
        if (r < 0)
                return r;
        *ret = fabs(d);
        return 0;
}

/* "12%", "0.4%": an effect for people. */
static const char *percent(double f, char *buf, size_t size) {
        double p = f * 100;
        snprintf(buf, size, fabs(p) < 10 ? "%.1f%%" : "%.0f%%", p);
        return buf;
}

int trial_verdict(const Trial *t, TrialVerdict *ret) {
        TrialVerdict v = {.verdict = STATS_VERDICT_CANT_TELL};
        bool hib = t->spec.higher_is_better;
        char a[32], b[32], c[32];
        int r;

        r = trial_estimate(t, t->spec.primary, &v.e, &v.pairs);
        if (r == -ENODATA) {
                snprintf(v.text, sizeof(v.text), "can't tell yet: %zu pair%s of blocks measured, 2 needed",
                         v.pairs, v.pairs == 1 ? "" : "s");
                *ret = v;
                return 0;
        }
        if (r < 0)
                return r;
        v.has_estimate = true;
        r = stats_verdict(&v.e, hib, t->spec.margin, &v.verdict);
        if (r < 0)
                return r;
        /* The effect as "better by": lower is better reads 1 - ratio,
         * higher is better ratio - 1; its interval follows. */
        double eff = hib ? v.e.ratio - 1 : 1 - v.e.ratio;
        double lo = hib ? v.e.ci_low - 1 : 1 - v.e.ci_high;
        double hi = hib ? v.e.ci_high - 1 : 1 - v.e.ci_low;
        switch (v.verdict) {
        case STATS_VERDICT_BETTER:
                snprintf(v.text, sizeof(v.text), "helps by %s [%s, %s]", percent(eff, a, sizeof(a)),
                         percent(lo, b, sizeof(b)), percent(hi, c, sizeof(c)));
                break;
        case STATS_VERDICT_WORSE:
                snprintf(v.text, sizeof(v.text), "hurts by %s [%s, %s]", percent(-eff, a, sizeof(a)),
                         percent(-hi, b, sizeof(b)), percent(-lo, c, sizeof(c)));
                break;
        case STATS_VERDICT_SAME:
                snprintf(v.text, sizeof(v.text),
                         "no difference beyond %s: steered/hands-off %.3f [%.3f, %.3f]",
                         percent(t->spec.margin, a, sizeof(a)), v.e.ratio, v.e.ci_low, v.e.ci_high);
                break;
        default: {
                double need;
                size_t more = 0;
                if (stats_verdict_effect_log(&v.e, hib, t->spec.margin, &need) >= 0 &&
                    stats_more_pairs(&v.e, need, &more) >= 0 && more > 0 && more < STATS_MORE_PAIRS_MAX)
                        v.more_blocks = 2 * more;
                double spread = expm1(v.e.sd_log);
                if (v.more_blocks > 0)
                        snprintf(v.text, sizeof(v.text),
                                 "can't tell: the blocks vary by +-%s; about %zu more blocks would tell "
                                 "(steered/hands-off %.3f [%.3f, %.3f])",
                                 percent(spread, a, sizeof(a)), v.more_blocks, v.e.ratio, v.e.ci_low,
                                 v.e.ci_high);
                else
                        snprintf(v.text, sizeof(v.text),
                                 "can't tell: the blocks vary by +-%s, and the effect sits on the %s margin "
                                 "(steered/hands-off %.3f [%.3f, %.3f])",
                                 percent(spread, a, sizeof(a)), percent(t->spec.margin, b, sizeof(b)),
                                 v.e.ratio, v.e.ci_low, v.e.ci_high);
                break;
        }
        }
        *ret = v;
        return 0;
}

bool trial_id_valid(const char *id) {
        size_t n = id ? strlen(id) : 0;

        if (n == 0 || n > 64 || id[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = id[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.'))
                        return false;
        }
        return true;
}

int trial_make_id(uint64_t realtime_us, unsigned seq, char *buf, size_t size) {
        time_t s = (time_t) (realtime_us / USEC_PER_SEC);
        struct tm tm;
        char when[32];

        if (!gmtime_r(&s, &tm) || strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm) == 0)
                return -EINVAL;
        int n = snprintf(buf, size, "%s-%u", when, seq);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : 0;
}
