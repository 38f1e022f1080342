/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <math.h>

#include "steerd-json.h"
#include "trial.h"

/* A trial's record. Times inside are offsets from its start (a record read
 * back after a restart has no CLOCK_MONOTONIC to refer to); the verdict is
 * written for readers (steerctl, jq) and recomputed, not read, on load. */

static const char *const value_keys[_TRIAL_SIGNAL_MAX] = {
        [TRIAL_SIGNAL_LATENCY] = "latency_us",
        [TRIAL_SIGNAL_SLICES] = "slices_per_s",
        [TRIAL_SIGNAL_PRESSURE] = "pressure_pct",
        [TRIAL_SIGNAL_METRIC] = "metric",
};

static json_object *estimate_json(const RatioEstimate *e, size_t pairs) {
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        if (json_add(o, "pairs", json_object_new_uint64(pairs)) < 0 ||
            json_add(o, "ratio", json_object_new_double(e->ratio)) < 0 ||
            json_add(o, "ci_low", json_object_new_double(e->ci_low)) < 0 ||
            json_add(o, "ci_high", json_object_new_double(e->ci_high)) < 0 ||
            json_add(o, "sd_log", json_object_new_double(e->sd_log)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *block_json(const Trial *t, const TrialBlock *b) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        uint64_t base = t->started_us;

        if (!o)
                return NULL;
        if (json_add(o, "arm", json_object_new_string(trial_arm_to_string(b->arm))) < 0 ||
            json_add(o, "readiness", json_object_new_boolean(b->readiness)) < 0 ||
            json_add(o, "started", json_object_new_boolean(b->started)) < 0 ||
            json_add(o, "measuring", json_object_new_boolean(b->measuring)) < 0 ||
            json_add(o, "ended", json_object_new_boolean(b->ended)) < 0 ||
            json_add(o, "settled", json_object_new_boolean(b->settled)) < 0)
                return NULL;
        const struct {
                const char *key;
                bool have;
                uint64_t at;
        } times[] = {
                {"start_usec", b->started, b->start_us}, {"measure_usec", b->measuring, b->measure_us},
                {"end_usec", b->ended, b->end_us},       {"last_action_usec", b->acted, b->last_action_us},
                {"quiet_usec", b->quiet, b->quiet_us},
        };
        for (size_t i = 0; i < ELEMENTSOF(times); i++)
                if (times[i].have &&
                    json_add(o, times[i].key,
                             json_object_new_uint64(times[i].at >= base ? times[i].at - base : 0)) < 0)
                        return NULL;
        if (b->started && json_add(o, "discard_usec", json_object_new_uint64(b->discard_us)) < 0)
                return NULL;
        for (int s = 0; s < _TRIAL_SIGNAL_MAX; s++)
                if (b->values.has[s] &&
                    json_add(o, value_keys[s], json_object_new_double(b->values.v[s])) < 0)
                        return NULL;
        return TAKE_PTR(o);
}

int trial_to_json(const Trial *t, char **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(),
                                                *blocks = json_object_new_array(),
                                                *signals = json_object_new_object();
        TrialVerdict v;
        int r;

        if (!o || !blocks || !signals)
                return -ENOMEM;
        r = trial_verdict(t, &v);
        if (r < 0)
                return r;
        char seed[24];
        snprintf(seed, sizeof(seed), "%" PRIu64, t->spec.seed);
        if (json_add(o, "id", json_object_new_string(t->id)) < 0 ||
            json_add(o, "cgroup", json_object_new_string(t->spec.cgroup)) < 0 ||
            json_add(o, "state", json_object_new_string(trial_state_to_string(t->state))) < 0 ||
            json_add_full(o, "end_reason", t->end_reason ? json_object_new_string(t->end_reason) : NULL,
                          true) < 0 ||
            json_add_full(o, "note", t->note ? json_object_new_string(t->note) : NULL, true) < 0 ||
            json_add(o, "started_realtime_usec", json_object_new_uint64(t->started_realtime_us)) < 0 ||
            json_add(o, "duration_usec", json_object_new_uint64(t->spec.duration_us)) < 0 ||
            json_add(o, "block_usec", json_object_new_uint64(t->spec.block_us)) < 0 ||
            json_add_full(o, "metric", t->spec.metric ? json_object_new_string(t->spec.metric) : NULL,
                          true) < 0 ||
            json_add(o, "primary", json_object_new_string(trial_signal_to_string(t->spec.primary))) < 0 ||
            json_add(o, "higher_is_better", json_object_new_boolean(t->spec.higher_is_better)) < 0 ||
            json_add(o, "margin", json_object_new_double(t->spec.margin)) < 0 ||
            json_add(o, "seed", json_object_new_string(seed)) < 0 ||
            json_add(o, "current", json_object_new_uint64(t->current)) < 0 ||
            json_add(o, "verdict", json_object_new_string(stats_verdict_to_string(v.verdict))) < 0 ||
            json_add(o, "verdict_text", json_object_new_string(v.text)) < 0)
                return -ENOMEM;
        if (json_add_full(o, "estimate", v.has_estimate ? estimate_json(&v.e, v.pairs) : NULL,
                          !v.has_estimate) < 0)
                return -ENOMEM;
        double noise;
        if (json_add_full(o, "readiness_noise",
                          trial_readiness_noise(t, &noise) >= 0 ? json_object_new_double(expm1(noise))
                                                                : NULL,
                          true) < 0)
                return -ENOMEM;
        for (int s = 0; s < _TRIAL_SIGNAL_MAX; s++) {
                RatioEstimate e;
                size_t pairs;
                if (trial_estimate(t, s, &e, &pairs) < 0)
                        continue;
                if (json_add(signals, trial_signal_to_string(s), estimate_json(&e, pairs)) < 0)
                        return -ENOMEM;
        }
        if (json_add(o, "signals", TAKE_PTR(signals)) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_blocks; i++)
                if (json_append(blocks, block_json(t, &t->blocks[i])) < 0)
                        return -ENOMEM;
        if (json_add(o, "blocks", TAKE_PTR(blocks)) < 0)
                return -ENOMEM;

        const char *text =
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        char *d = text ? strdup(text) : NULL;
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

/* ---- reading ---- */

static json_object *get(json_object *o, const char *key, json_type type) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static int get_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v = get(o, key, json_type_int);
        if (!v)
                return -EBADMSG;
        errno = 0;
        uint64_t x = json_object_get_uint64(v);
        if (errno != 0 || json_object_get_int64(v) < 0)
                return -EBADMSG;
        *ret = x;
        return 0;
}

static int get_double(json_object *o, const char *key, double *ret) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) ||
            !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
                return -EBADMSG;
        double d = json_object_get_double(v);
        if (!isfinite(d))
                return -EBADMSG;
        *ret = d;
        return 0;
}

static int get_bool(json_object *o, const char *key, bool *ret) {
        json_object *v = get(o, key, json_type_boolean);
        if (!v)
                return -EBADMSG;
        *ret = json_object_get_boolean(v);
        return 0;
}

/* A string, or null / absent (ret NULL) where nullable. */
static int get_string_dup(json_object *o, const char *key, bool nullable, char **ret) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !v) {
                if (!nullable)
                        return -EBADMSG;
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return -EBADMSG;
        char *d = strdup(json_object_get_string(v));
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

static int block_from_json(json_object *o, TrialBlock *ret) {
        TrialBlock b = {};
        json_object *arm = get(o, "arm", json_type_string);
        int r = 0;

        if (!json_object_is_type(o, json_type_object) || !arm)
                return -EBADMSG;
        b.arm = trial_arm_from_string(json_object_get_string(arm));
        if (b.arm < 0)
                return -EBADMSG;
        if (get_bool(o, "readiness", &b.readiness) < 0 || get_bool(o, "started", &b.started) < 0 ||
            get_bool(o, "measuring", &b.measuring) < 0 || get_bool(o, "ended", &b.ended) < 0 ||
            get_bool(o, "settled", &b.settled) < 0)
                return -EBADMSG;
        if ((b.measuring && !b.started) || (b.ended && !b.measuring))
                return -EBADMSG;
        if (b.started)
                r = get_u64(o, "start_usec", &b.start_us);
        if (r >= 0 && b.measuring)
                r = get_u64(o, "measure_usec", &b.measure_us);
        if (r >= 0 && b.ended)
                r = get_u64(o, "end_usec", &b.end_us);
        b.acted = json_object_object_get_ex(o, "last_action_usec", NULL);
        if (r >= 0 && b.acted)
                r = get_u64(o, "last_action_usec", &b.last_action_us);
        b.quiet = json_object_object_get_ex(o, "quiet_usec", NULL);
        if (r >= 0 && b.quiet)
                r = get_u64(o, "quiet_usec", &b.quiet_us);
        if (r >= 0 && b.started)
                r = get_u64(o, "discard_usec", &b.discard_us);
        if (r < 0)
                return r;
        for (int s = 0; s < _TRIAL_SIGNAL_MAX; s++) {
                json_object *v;
                if (!json_object_object_get_ex(o, value_keys[s], &v))
                        continue;
                if (get_double(o, value_keys[s], &b.values.v[s]) < 0 || b.values.v[s] <= 0 || !b.ended)
                        return -EBADMSG;
                b.values.has[s] = true;
        }
        *ret = b;
        return 0;
}

int trial_from_json(const char *text, Trial **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_(trial_freep) Trial *t = NULL;
        json_object *v, *blocks;
        int r;

        o = json_tokener_parse(text);
        if (!o || !json_object_is_type(o, json_type_object))
                return -EBADMSG;
        t = calloc(1, sizeof(Trial));
        if (!t)
                return -ENOMEM;
        if ((r = get_string_dup(o, "id", false, &t->id)) < 0 ||
            (r = get_string_dup(o, "cgroup", false, &t->spec.cgroup)) < 0 ||
            (r = get_string_dup(o, "end_reason", true, &t->end_reason)) < 0 ||
            (r = get_string_dup(o, "note", true, &t->note)) < 0 ||
            (r = get_string_dup(o, "metric", true, &t->spec.metric)) < 0)
                return r;
        if (!trial_id_valid(t->id) || !t->spec.cgroup[0])
                return -EBADMSG;
        if (!(v = get(o, "state", json_type_string)) ||
            (t->state = trial_state_from_string(json_object_get_string(v))) < 0)
                return -EBADMSG;
        if (!(v = get(o, "primary", json_type_string)) ||
            (t->spec.primary = trial_signal_from_string(json_object_get_string(v))) < 0)
                return -EBADMSG;
        if (get_u64(o, "started_realtime_usec", &t->started_realtime_us) < 0 ||
            get_u64(o, "duration_usec", &t->spec.duration_us) < 0 ||
            get_u64(o, "block_usec", &t->spec.block_us) < 0 || t->spec.block_us == 0 ||
            get_bool(o, "higher_is_better", &t->spec.higher_is_better) < 0 ||
            get_double(o, "margin", &t->spec.margin) < 0 || t->spec.margin < 0 || t->spec.margin >= 1)
                return -EBADMSG;
        uint64_t cur;
        if (get_u64(o, "current", &cur) < 0)
                return -EBADMSG;
        if (!(v = get(o, "seed", json_type_string)))
                return -EBADMSG;
        char *end;
        errno = 0;
        unsigned long long seed = strtoull(json_object_get_string(v), &end, 10);
        if (errno != 0 || *end || end == json_object_get_string(v))
                return -EBADMSG;
        t->spec.seed = seed;

        if (!(blocks = get(o, "blocks", json_type_array)))
                return -EBADMSG;
        size_t n = json_object_array_length(blocks);
        if (n < TRIAL_READINESS_BLOCKS + 2 * TRIAL_MIN_PAIRS || n > TRIAL_MAX_BLOCKS ||
            (n - TRIAL_READINESS_BLOCKS) % 2 != 0 || cur > n)
                return -EBADMSG;
        t->blocks = calloc(n, sizeof(TrialBlock));
        if (!t->blocks)
                return -ENOMEM;
        t->n_blocks = n;
        t->current = cur;
        for (size_t i = 0; i < n; i++) {
                r = block_from_json(json_object_array_get_idx(blocks, i), &t->blocks[i]);
                if (r < 0)
                        return r;
                /* The schedule's shape: readiness first, then pairs of both arms. */
                bool readiness = i < TRIAL_READINESS_BLOCKS;
                if (t->blocks[i].readiness != readiness ||
                    (readiness && t->blocks[i].arm != TRIAL_ARM_HANDS_OFF))
                        return -EBADMSG;
                if (!readiness && (i - TRIAL_READINESS_BLOCKS) % 2 == 1 &&
                    t->blocks[i].arm == t->blocks[i - 1].arm)
                        return -EBADMSG;
                /* Blocks before the current one ended; none after it started. */
                if ((i < cur && !t->blocks[i].ended) || (i > cur && t->blocks[i].started))
                        return -EBADMSG;
        }
        *ret = TAKE_PTR(t);
        return 0;
}
