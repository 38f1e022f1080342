/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "random.h"
#include "search.h"

static const char *const search_kind_table[_SEARCH_KIND_MAX] = {
        [SEARCH_KIND_POLICY] = "policy",
        [SEARCH_KIND_HANDS_OFF] = "hands-off",
        [SEARCH_KIND_CORES] = "cores",
        [SEARCH_KIND_LLC] = "llc",
};

DEFINE_STRING_TABLE_LOOKUP(search_kind, SearchKind, _SEARCH_KIND_MAX);

static const char *const search_state_table[_SEARCH_STATE_MAX] = {
        [SEARCH_STATE_WANT] = "waiting for candidates",
        [SEARCH_STATE_SEARCHING] = "searching",
        [SEARCH_STATE_HOLDING] = "holding",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(search_state, SearchState, _SEARCH_STATE_MAX);

static void candidate_clear(SearchCandidate *c) {
        hwloc_bitmap_free(c->cpus);
        *c = (SearchCandidate){};
}

static void candidates_clear(Search *s) {
        for (size_t i = 0; i < SEARCH_MAX_CANDIDATES; i++)
                candidate_clear(&s->c[i]);
        s->c[0] = (SearchCandidate){.kind = SEARCH_KIND_POLICY, .verdict = STATS_VERDICT_CANT_TELL};
        snprintf(s->c[0].label, sizeof(s->c[0].label), "steerd's policy");
        s->n = 1;
}

int search_init(Search *s, uint64_t block_us, unsigned duty, double harm, double phase_change, uint64_t seed,
                uint64_t now_us) {
        if (!s || block_us == 0 || duty < 2 || !(harm > 0 && harm <= 1) ||
            !(phase_change > 0 && phase_change <= 1))
                return -EINVAL;
        *s = (Search){
                .block_us = block_us,
                .duty = duty,
                .harm = harm,
                .phase_change = phase_change,
                .rng = seed,
                .state = SEARCH_STATE_WANT,
                .block_start_us = now_us,
                .winner_since_us = now_us,
        };
        candidates_clear(s);
        return 0;
}

void search_done(Search *s) {
        if (!s)
                return;
        for (size_t i = 0; i < SEARCH_MAX_CANDIDATES; i++)
                candidate_clear(&s->c[i]);
        for (size_t i = 0; i < SEARCH_MEMORY; i++)
                hwloc_bitmap_free(s->memory[i].cpus);
        *s = (Search){};
}

uint64_t search_phase_key(double demand, unsigned busy) {
        /* Steps of 1.5x in demand and of sqrt(2) in busy threads: a load that
         * moved by less than the phase threshold mostly keeps its key. */
        double d = isfinite(demand) && demand > 0 ? demand : 0;
        uint64_t dq = (uint64_t) lround(log(d + 0.25) / log(1.5) + 64);
        uint64_t bq = (uint64_t) lround(2 * log2((double) busy + 1));
        return dq << 32 | bq;
}

/* ---- candidates ---- */

static bool set_taken(const Search *s, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t allowed) {
        if (hwloc_bitmap_iszero(cpus) || hwloc_bitmap_isequal(cpus, allowed))
                return true;
        for (size_t i = 0; i < s->n; i++)
                if (s->c[i].cpus && hwloc_bitmap_isequal(s->c[i].cpus, cpus))
                        return true;
        return false;
}

static int add_placement(Search *s, SearchKind kind, CpuSet *cpus, hwloc_const_bitmap_t allowed,
                         const char *what) {
        char buf[CPUSET_STRLEN];

        if (s->n >= SEARCH_MAX_CANDIDATES || set_taken(s, *cpus, allowed))
                return 0;
        SearchCandidate *c = &s->c[s->n++];
        *c = (SearchCandidate){.kind = kind, .cpus = *cpus, .verdict = STATS_VERDICT_CANT_TELL};
        *cpus = NULL;
        snprintf(c->label, sizeof(c->label), "%s (CPUs %s)", what,
                 cpuset_to_string(c->cpus, buf, sizeof(buf)));
        return 1;
}

typedef struct CoreUse {
        int core;
        double use;
} CoreUse;

static int cmp_use(const void *a, const void *b) {
        const CoreUse *x = a, *y = b;
        if (x->use != y->use)
                return x->use > y->use ? -1 : 1;
        return x->core - y->core;
}

static const CgroupSample *find_cgroup(const Snapshot *snap, const char *path) {
        for (size_t i = 0; i < snap->n_cgroups; i++)
                if (snap->cgroups[i].path && streq(snap->cgroups[i].path, path))
                        return &snap->cgroups[i];
        return NULL;
}

/* The online CPUs of the `k` cores used most, within allowed. */
static int top_cores(const Snapshot *snap, const CoreUse *u, size_t k, hwloc_const_bitmap_t allowed,
                     CpuSet *ret) {
        _cleanup_cpuset_ CpuSet set = hwloc_bitmap_alloc();
        if (!set)
                return -ENOMEM;
        for (size_t i = 0; i < k; i++) {
                _cleanup_cpuset_ CpuSet core = NULL;
                int r = snapshot_core_cpus(snap, u[i].core, &core);
                if (r < 0)
                        return r;
                hwloc_bitmap_or(set, set, core);
        }
        hwloc_bitmap_and(set, set, allowed);
        *ret = TAKE_PTR(set);
        return 0;
}

static int cores_candidates(Search *s, const Snapshot *snap, const CgroupSample *cs, double use,
                            bool halvings) {
        int n_cores = 0;
        for (size_t i = 0; i < snap->n_cpus; i++)
                n_cores = MAX(n_cores, snap->cpus[i].core + 1);
        if (n_cores == 0)
                return 0;
        _cleanup_(freep) CoreUse *u = calloc((size_t) n_cores, sizeof(CoreUse));
        if (!u)
                return -ENOMEM;
        for (int i = 0; i < n_cores; i++)
                u[i].core = i;
        for (size_t i = 0; i < cs->n_threads; i++) {
                const ThreadSample *t = &cs->threads[i];
                const CpuSample *cpu = t->cpu >= 0 ? snapshot_cpu(snap, (unsigned) t->cpu) : NULL;
                if (cpu && cpu->core >= 0 && cpu->online && hwloc_bitmap_isset(cs->allowed, cpu->cpu))
                        u[cpu->core].use += t->util;
        }
        qsort(u, (size_t) n_cores, sizeof(CoreUse), cmp_use);
        /* The cores that held a share of it (a tenth), and its busiest one,
         * first; the LLC next (llc_candidate()); the halvings in between
         * last, while there is room. */
        size_t held = 0;
        while (held < (size_t) n_cores && u[held].use >= use / 10)
                held++;
        held = MAX(held, (size_t) 1);
        size_t ks[2 + 16], n_ks = 0;
        ks[n_ks++] = held;
        ks[n_ks++] = 1;
        if (!halvings)
                n_ks = 2;
        else {
                n_ks = 0;
                for (size_t k = held / 2; k > 1 && n_ks < 16; k /= 2)
                        ks[n_ks++] = k;
        }
        for (size_t i = 0; i < n_ks; i++) {
                _cleanup_cpuset_ CpuSet set = NULL;
                char what[48];
                int r = top_cores(snap, u, ks[i], cs->allowed, &set);
                if (r < 0)
                        return r;
                snprintf(what, sizeof(what), ks[i] == 1 ? "its busiest core" : "its %zu busiest cores",
                         ks[i]);
                r = add_placement(s, SEARCH_KIND_CORES, &set, cs->allowed, what);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int llc_candidate(Search *s, const Snapshot *snap, const CgroupSample *cs) {
        if (snap->n_llcs < 2)
                return 0;
        _cleanup_(freep) double *use = calloc(snap->n_llcs, sizeof(double));
        if (!use)
                return -ENOMEM;
        for (size_t i = 0; i < cs->n_threads; i++) {
                const ThreadSample *t = &cs->threads[i];
                const CpuSample *cpu = t->cpu >= 0 ? snapshot_cpu(snap, (unsigned) t->cpu) : NULL;
                if (cpu && cpu->llc >= 0 && (size_t) cpu->llc < snap->n_llcs)
                        use[cpu->llc] += t->util;
        }
        size_t best = 0;
        for (size_t i = 1; i < snap->n_llcs; i++)
                if (use[i] > use[best])
                        best = i;
        _cleanup_cpuset_ CpuSet set = hwloc_bitmap_dup(snap->llcs[best].cpus);
        _cleanup_cpuset_ CpuSet online = NULL;
        if (!set)
                return -ENOMEM;
        int r = snapshot_online_cpus(snap, &online);
        if (r < 0)
                return r;
        hwloc_bitmap_and(set, set, online);
        hwloc_bitmap_and(set, set, cs->allowed);
        char what[48];
        snprintf(what, sizeof(what), "the LLC that held most of it (%u)", snap->llcs[best].id);
        return add_placement(s, SEARCH_KIND_LLC, &set, cs->allowed, what);
}

static void start_pair(Search *s, size_t against) {
        s->against = against;
        s->pos = 0;
        s->policy_first = splitmix64(&s->rng) & 1;
        s->has_value[0] = s->has_value[1] = false;
}

/* The next candidate to pair: not done, fewest pairs first. */
static bool candidate_done(const SearchCandidate *c) {
        return c->dropped || c->n_logs >= SEARCH_MAX_PAIRS ||
               (c->n_logs >= 2 && c->has_estimate && c->verdict != STATS_VERDICT_CANT_TELL);
}

static size_t pick_next(const Search *s) {
        size_t best = 0;
        for (size_t i = 1; i < s->n; i++)
                if (!candidate_done(&s->c[i]) && (best == 0 || s->c[i].n_logs < s->c[best].n_logs))
                        best = i;
        return best;
}

int search_start(Search *s, const Snapshot *snap, const char *path, uint64_t now_us) {
        if (!s || !snap || !path)
                return -EINVAL;
        if (s->state != SEARCH_STATE_WANT)
                return -EBUSY;
        /* Half a block of steerd's policy first: the threads spread as the
         * policy and the kernel place them, and their figures are read
         * afresh after a placement that confined them (the candidates come
         * from where they ran). */
        if (s->lookup || usec_since(now_us, s->block_start_us) < s->block_us / 2)
                return -EAGAIN;
        const CgroupSample *cs = find_cgroup(snap, path);
        if (!cs || !cs->allowed || hwloc_bitmap_iszero(cs->allowed))
                return -ENOENT;
        double use = 0;
        for (size_t i = 0; i < cs->n_threads; i++)
                use += cs->threads[i].util;
        if (cs->threads_partial || use < SEARCH_MIN_USE)
                return -ENODATA;

        candidates_clear(s);
        s->c[s->n++] = (SearchCandidate){.kind = SEARCH_KIND_HANDS_OFF, .verdict = STATS_VERDICT_CANT_TELL};
        snprintf(s->c[1].label, sizeof(s->c[1].label), "the kernel default (hands-off)");
        int r = cores_candidates(s, snap, cs, use, false);
        if (r >= 0)
                r = llc_candidate(s, snap, cs);
        if (r >= 0)
                r = cores_candidates(s, snap, cs, use, true);
        if (r < 0) {
                candidates_clear(s);
                return r;
        }
        s->state = SEARCH_STATE_SEARCHING;
        s->searches++;
        s->winner = 0;
        s->from_memory = false;
        s->block_start_us = now_us;
        s->measuring = false;
        start_pair(s, pick_next(s));
        return 0;
}

/* ---- the schedule ---- */

static size_t arm_index(const Search *s) {
        bool pair = s->state == SEARCH_STATE_SEARCHING || (s->state == SEARCH_STATE_HOLDING && s->in_pair);
        if (!pair)
                return s->state == SEARCH_STATE_HOLDING ? s->winner : 0;
        bool policy_now = (s->pos == 0) == s->policy_first;
        return policy_now ? 0 : s->against;
}

const SearchCandidate *search_arm(const Search *s) {
        return &s->c[MIN(arm_index(s), s->n - 1)];
}

SearchStep search_tick(Search *s, uint64_t now_us) {
        uint64_t in = usec_since(now_us, s->block_start_us);
        if (!s->measuring && in >= s->block_us / 2) {
                s->measuring = true;
                return SEARCH_STEP_MEASURE;
        }
        return s->measuring && in >= s->block_us ? SEARCH_STEP_END : SEARCH_STEP_NONE;
}

/* ---- the estimates ---- */

static double candidate_ss(const SearchCandidate *c) {
        double mean = 0, ss = 0;
        for (size_t i = 0; i < c->n_logs; i++)
                mean += c->logs[i] / (double) c->n_logs;
        for (size_t i = 0; i < c->n_logs; i++)
                ss += (c->logs[i] - mean) * (c->logs[i] - mean);
        return ss;
}

/* Each candidate's estimate, its own pairs' noise pooled with every other
 * candidate's and with what earlier searches learned. */
static void update_estimates(Search *s) {
        double ss_all = s->noise_ss;
        unsigned df_all = s->noise_df;
        for (size_t i = 1; i < s->n; i++)
                if (s->c[i].n_logs >= 2) {
                        ss_all += candidate_ss(&s->c[i]);
                        df_all += (unsigned) s->c[i].n_logs - 1;
                }
        for (size_t i = 1; i < s->n; i++) {
                SearchCandidate *c = &s->c[i];
                double own = c->n_logs >= 2 ? candidate_ss(c) : 0;
                unsigned own_df = c->n_logs >= 2 ? (unsigned) c->n_logs - 1 : 0;
                RatioEstimate e;
                StatsVerdict v;
                c->has_estimate = false;
                c->verdict = STATS_VERDICT_CANT_TELL;
                if (c->n_logs == 0 ||
                    stats_log_ratios_pooled(c->logs, c->n_logs, ss_all - own, df_all - own_df, &e) < 0 ||
                    stats_verdict(&e, true, s->harm, &v) < 0)
                        continue;
                c->has_estimate = true;
                c->estimate = e;
                c->verdict = v;
        }
}

/* What this search's pairs taught about the noise, kept for the next. */
static void learn_noise(Search *s, const SearchCandidate *c) {
        if (c->n_logs < 2)
                return;
        s->noise_ss += candidate_ss(c);
        s->noise_df += (unsigned) c->n_logs - 1;
        if (s->noise_df > SEARCH_NOISE_DF) {
                s->noise_ss *= (double) SEARCH_NOISE_DF / s->noise_df;
                s->noise_df = SEARCH_NOISE_DF;
        }
}

static void remember(Search *s, uint64_t now_us) {
        if (!s->has_phase)
                return;
        uint64_t key = search_phase_key(s->phase_demand, s->phase_busy);
        /* The phase's own slot, else a free one, else the oldest. */
        SearchMemory *slot = NULL;
        for (size_t i = 0; i < SEARCH_MEMORY && !slot; i++)
                if (s->memory[i].used && s->memory[i].key == key)
                        slot = &s->memory[i];
        for (size_t i = 0; i < SEARCH_MEMORY && !slot; i++)
                if (!s->memory[i].used)
                        slot = &s->memory[i];
        if (!slot) {
                slot = &s->memory[0];
                for (size_t i = 1; i < SEARCH_MEMORY; i++)
                        if (s->memory[i].at_us < slot->at_us)
                                slot = &s->memory[i];
        }
        const SearchCandidate *w = &s->c[s->winner];
        CpuSet cpus = w->cpus ? hwloc_bitmap_dup(w->cpus) : NULL;
        if (w->cpus && !cpus)
                return; /* out of memory: forgetting is safe */
        hwloc_bitmap_free(slot->cpus);
        *slot = (SearchMemory){.used = true, .key = key, .kind = w->kind, .cpus = cpus, .at_us = now_us};
        snprintf(slot->label, sizeof(slot->label), "%s", w->label);
}

static void forget(Search *s, uint64_t key) {
        for (size_t i = 0; i < SEARCH_MEMORY; i++)
                if (s->memory[i].used && s->memory[i].key == key) {
                        hwloc_bitmap_free(s->memory[i].cpus);
                        s->memory[i] = (SearchMemory){};
                }
}

static void hold(Search *s, size_t winner, uint64_t now_us) {
        s->state = SEARCH_STATE_HOLDING;
        s->winner = winner;
        s->winner_since_us = now_us;
        s->in_pair = false;
        s->hold_left = s->duty;
        /* The phase's load is measured afresh under the placement held. */
        s->has_phase = false;
        s->phase_changed_blocks = 0;
}

static void finish_search(Search *s, uint64_t now_us) {
        size_t best = 0;
        for (size_t i = 1; i < s->n; i++) {
                const SearchCandidate *c = &s->c[i];
                learn_noise(s, c);
                if (!c->dropped && c->has_estimate && c->verdict == STATS_VERDICT_BETTER &&
                    (best == 0 || c->estimate.ci_low > s->c[best].estimate.ci_low))
                        best = i;
        }
        s->winner = best;
        remember(s, now_us);
        hold(s, best, now_us);
}

static bool load_differs(const Search *s, const SearchBlock *b) {
        double d = fabs(b->demand - s->phase_demand), bd = fabs((double) b->busy - s->phase_busy);
        return d > s->phase_change * MAX(s->phase_demand, 0.25) ||
               bd > s->phase_change * MAX((double) s->phase_busy, 1.0);
}

/* A new phase: steerd's policy in force for a block first, whose load is
 * the phase's key (memory keys are all measured under the policy: a
 * placement moves the load itself). */
static SearchEvent new_phase(Search *s, const SearchBlock *b) {
        s->phases++;
        /* What was seen, for the log, until the policy's block measures it. */
        s->phase_demand = b->demand;
        s->phase_busy = b->busy;
        candidates_clear(s);
        s->state = SEARCH_STATE_WANT;
        s->winner = 0;
        s->from_memory = false;
        s->has_phase = false;
        s->phase_changed_blocks = 0;
        s->lookup = true;
        return SEARCH_EVENT_PHASE;
}

/* The phase's first block of the policy: its winner from memory (held at
 * once), else the search starts once candidates are given. */
static SearchEvent look_up(Search *s, uint64_t now_us) {
        uint64_t key = search_phase_key(s->phase_demand, s->phase_busy);
        s->lookup = false;
        for (size_t i = 0; i < SEARCH_MEMORY; i++) {
                const SearchMemory *m = &s->memory[i];
                if (!m->used || m->key != key)
                        continue;
                CpuSet cpus = m->cpus ? hwloc_bitmap_dup(m->cpus) : NULL;
                if (m->cpus && !cpus)
                        break;
                candidates_clear(s);
                size_t w = 0;
                if (m->kind != SEARCH_KIND_POLICY) {
                        s->c[1] = (SearchCandidate){
                                .kind = m->kind, .cpus = cpus, .verdict = STATS_VERDICT_CANT_TELL};
                        snprintf(s->c[1].label, sizeof(s->c[1].label), "%s", m->label);
                        s->n = 2;
                        w = 1;
                }
                hold(s, w, now_us);
                s->from_memory = true;
                return SEARCH_EVENT_FROM_MEMORY;
        }
        return SEARCH_EVENT_NONE;
}

static SearchEvent end_pair(Search *s, uint64_t now_us) {
        SearchCandidate *c = &s->c[s->against];
        SearchEvent ev = SEARCH_EVENT_NONE;

        c->blocks++;
        if (s->has_value[0] && s->has_value[1]) {
                double l = log(s->value[1] / s->value[0]);
                c->logs[c->next_log] = l;
                c->next_log = (c->next_log + 1) % SEARCH_MAX_PAIRS;
                c->n_logs = MIN(c->n_logs + 1, (size_t) SEARCH_MAX_PAIRS);
                if (l < 0) {
                        c->losing_us += s->block_us;
                        s->losing_us += s->block_us;
                }
                update_estimates(s);
        }
        if (s->state == SEARCH_STATE_HOLDING) {
                if (c->has_estimate && c->verdict == STATS_VERDICT_WORSE) {
                        /* The winner loses now: its claim ends, and its memory. */
                        if (s->has_phase)
                                forget(s, search_phase_key(s->phase_demand, s->phase_busy));
                        candidates_clear(s);
                        s->state = SEARCH_STATE_WANT;
                        s->winner = 0;
                        s->has_phase = false; /* measured under the policy again */
                        return SEARCH_EVENT_LOST_CLAIM;
                }
                s->in_pair = false;
                s->hold_left = s->duty;
                return SEARCH_EVENT_NONE;
        }
        for (size_t i = 1; i < s->n; i++)
                if (!s->c[i].dropped && s->c[i].has_estimate && s->c[i].verdict == STATS_VERDICT_WORSE) {
                        s->c[i].dropped = true;
                        ev = SEARCH_EVENT_DROPPED;
                }
        size_t next = pick_next(s);
        if (next == 0) {
                finish_search(s, now_us);
                return SEARCH_EVENT_WON;
        }
        start_pair(s, next);
        return ev;
}

int search_end_block(Search *s, uint64_t now_us, const SearchBlock *b, SearchEvent *ret_event) {
        SearchEvent ev = SEARCH_EVENT_NONE;

        if (!s || !ret_event)
                return -EINVAL;
        bool pair = s->state == SEARCH_STATE_SEARCHING || (s->state == SEARCH_STATE_HOLDING && s->in_pair);
        if (!s->measuring)
                return -EBUSY;
        if (s->state == SEARCH_STATE_SEARCHING)
                s->searching_us += usec_since(now_us, s->block_start_us);
        s->block_start_us = now_us;
        s->measuring = false;

        /* The phase is read from the blocks of one placement only: the
         * policy's while searching (and waiting), the winner's while
         * holding. A placement moves the load itself (a ring on one core
         * runs each hop faster: its demand halved), and two blocks of a
         * candidate in a row, the end of one pair and the start of the
         * next, are no new phase. */
        size_t phase_arm = s->state == SEARCH_STATE_HOLDING ? s->winner : 0;
        if (arm_index(s) == phase_arm && b && b->has_load && isfinite(b->demand) && b->demand >= 0) {
                if (!s->has_phase) {
                        s->has_phase = true;
                        s->phase_demand = b->demand;
                        s->phase_busy = b->busy;
                        s->phase_changed_blocks = 0;
                        if (s->lookup && s->state == SEARCH_STATE_WANT) {
                                *ret_event = look_up(s, now_us);
                                return 0;
                        }
                } else if (!load_differs(s, b))
                        s->phase_changed_blocks = 0;
                else if (++s->phase_changed_blocks >= SEARCH_PHASE_BLOCKS) {
                        *ret_event = new_phase(s, b);
                        return 0;
                }
        }
        if (pair) {
                unsigned side = arm_index(s) == 0 ? 0 : 1;
                bool ok = b && b->has_progress && isfinite(b->progress) && b->progress > 0;
                s->has_value[side] = ok;
                s->value[side] = ok ? b->progress : 0;
                if (s->pos == 0)
                        s->pos = 1;
                else
                        ev = end_pair(s, now_us);
        } else if (s->state == SEARCH_STATE_HOLDING && s->winner > 0 && --s->hold_left == 0) {
                s->in_pair = true;
                start_pair(s, s->winner);
        }
        *ret_event = ev;
        return 0;
}
