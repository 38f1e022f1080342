/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <sys/random.h>

#include "actuator.h"
#include "cgroup-counters.h"
#include "log.h"
#include "manager-internal.h"
#include "manager-search.h"
#include "manager-trial.h"

/* The placement search (core/trial/search.h) per opted-in cgroup that asks
 * for it: created when a cgroup is opted in with it (or inherits
 * Search=yes), dropped when it no longer is or the mode stops applying;
 * paused while an operator's trial of the cgroup runs.
 *
 * A block of steerd's policy is an ordinary tick of the cgroup. A
 * hands-off block leaves it out of the tick, as a trial's does. A placed
 * block leaves it out of the policy's tick too (the engine forgets it), and
 * the search sets the cgroup's CPUs through the actuator, with its ledger
 * and give-back like any window: one action, policy "search". Every
 * change of block gives back what the block before held first. */

struct ManagerSearch {
        char *cgroup;
        Search s;
        CgroupCounters first;
        bool has_first;
        bool seen;               /* in this tick's sync */
        bool placed;             /* the actuator holds the search's placement */
        unsigned dropped_logged; /* candidates whose drop was logged, by index, in this search */
        /* Why this cgroup is not searched after all (a threads-backend
         * cgroup has no CPUs of its own to place; someone else took its
         * CPUs): NULL while it is. */
        char *stopped;
};

static void search_free(ManagerSearch *ms) {
        if (!ms)
                return;
        free(ms->cgroup);
        free(ms->stopped);
        search_done(&ms->s);
        cgroup_counters_done(&ms->first);
        free(ms);
}

void manager_searches_free(Manager *m) {
        for (size_t i = 0; i < m->n_searches; i++)
                search_free(m->searches[i]);
        free(m->searches);
        m->searches = NULL;
        m->n_searches = 0;
}

static ManagerSearch *find_search(const Manager *m, const char *cgroup) {
        for (size_t i = 0; i < m->n_searches; i++)
                if (streq(m->searches[i]->cgroup, cgroup))
                        return m->searches[i];
        return NULL;
}

bool manager_search_wanted(const Manager *m, const OptIn *o) {
        return o->search == OPTIN_SEARCH_YES ||
               (o->search == OPTIN_SEARCH_INHERIT && m->config->settings.search);
}

static bool active(const Manager *m, const ManagerSearch *ms) {
        return ms && !ms->stopped && !manager_trial_running_for(m, ms->cgroup);
}

bool manager_search_excluded(const Manager *m, const char *cgroup) {
        const ManagerSearch *ms = find_search(m, cgroup);
        return active(m, ms) && search_arm(&ms->s)->kind != SEARCH_KIND_POLICY;
}

bool manager_search_places(const Manager *m, const char *cgroup) {
        /* Every block of an active search: a placement comes right after a
         * hands-off block, and the actuator refuses a cgroup it does not
         * know. It acts on nothing it is not asked to. */
        return active(m, find_search(m, cgroup));
}

static void stop_search(ManagerSearch *ms, const char *why) {
        free(ms->stopped);
        ms->stopped = strdup(why);
        log_struct(LOG_NOTICE, STEERD_MESSAGE_TRIAL, "Cgroup %s: no placement search: %s", ms->cgroup, why);
}

static int add_search(Manager *m, const OptIn *o, uint64_t now_us) {
        const Settings *st = &m->config->settings;
        ManagerSearch **l = reallocarray(m->searches, m->n_searches + 1, sizeof(ManagerSearch *));
        if (!l)
                return -ENOMEM;
        m->searches = l;
        ManagerSearch *ms = calloc(1, sizeof(ManagerSearch));
        if (!ms)
                return -ENOMEM;
        ms->cgroup = strdup(o->name);
        uint64_t seed = now_us;
        (void) getrandom(&seed, sizeof(seed), GRND_NONBLOCK);
        int r = ms->cgroup ? search_init(&ms->s, st->search_block_ms * USEC_PER_MSEC, st->search_duty,
                                         st->harm_percent / 100, MIN(st->guard_percent / 100, 1.0), seed,
                                         now_us)
                           : -ENOMEM;
        if (r < 0) {
                search_free(ms);
                return r;
        }
        ms->seen = true;
        m->searches[m->n_searches++] = ms;
        ActuatorBackend backend;
        if (actuator_choose_backend(m->actuator, &o->loc, &backend) >= 0 &&
            backend == ACTUATOR_BACKEND_THREADS)
                stop_search(ms, "its CPUs cannot be set (no cpuset controller, no systemd unit): only its "
                                "threads' masks could, and a placement is the cgroup's");
        else
                log_struct(
                        LOG_INFO, STEERD_MESSAGE_TRIAL,
                        "Cgroup %s: placement search on (Search=yes): blocks of %.1f s, a winner re-checked "
                        "one pair in %u blocks, a candidate dropped when it loses by more than %.1f%%",
                        o->name, st->search_block_ms / 1e3, st->search_duty, st->harm_percent);
        return 0;
}

static void give_back(Manager *m, ManagerSearch *ms, const char *why) {
        int r = actuator_release_cgroup(m->actuator, ms->cgroup);
        if (r < 0)
                log_warning_errno(r, "Cgroup %s: %s: could not give everything back", ms->cgroup, why);
        ms->placed = false;
}

/* The searches follow the opted-in set and the mode. */
static void sync_searches(Manager *m, uint64_t now_us) {
        for (size_t i = 0; i < m->n_searches; i++)
                m->searches[i]->seen = false;
        for (size_t i = 0; mode_applies(m->mode) && i < m->optins.n; i++) {
                const OptIn *o = &m->optins.items[i];
                if (!o->loc.dir || !manager_search_wanted(m, o))
                        continue;
                ManagerSearch *ms = find_search(m, o->name);
                if (ms)
                        ms->seen = true;
                else
                        (void) add_search(m, o, now_us);
        }
        for (size_t i = 0; i < m->n_searches;) {
                ManagerSearch *ms = m->searches[i];
                if (ms->seen) {
                        i++;
                        continue;
                }
                /* An opt-out gave everything back already; a Search=no or a
                 * mode change may not have. */
                if (ms->placed && actuator_cgroup_original(m->actuator, ms->cgroup))
                        give_back(m, ms, "the search ended");
                search_free(ms);
                m->searches[i] = m->searches[--m->n_searches];
        }
}

static const OptIn *find_optin_loc(const Manager *m, const char *cgroup) {
        const OptIn *o = optin_set_find(&m->optins, cgroup);
        return o && o->loc.dir ? o : NULL;
}

static bool same_arm(const SearchCandidate *a, SearchKind kind, hwloc_const_bitmap_t cpus) {
        if (a->kind != kind)
                return false;
        return !a->cpus || (cpus && hwloc_bitmap_isequal(a->cpus, cpus));
}

static bool is_placement(const SearchCandidate *c) {
        return (c->kind == SEARCH_KIND_CORES || c->kind == SEARCH_KIND_LLC) && c->cpus;
}

static void place(Manager *m, ManagerSearch *ms, const Snapshot *snap, const SearchCandidate *c) {
        _cleanup_plan_ Plan *p = NULL;
        _cleanup_(actuator_report_done) ActuatorReport rep = {};
        char reason[200];

        snprintf(reason, sizeof(reason), "placement search: %s, a %s block", c->label,
                 ms->s.state == SEARCH_STATE_HOLDING && !ms->s.in_pair ? "winner's" : "candidate's");
        int r = plan_new(&p);
        if (r >= 0)
                r = plan_add(p, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_SEARCH, ms->cgroup, 0, 0, c->cpus,
                             reason);
        if (r >= 0)
                r = actuator_apply(m->actuator, snap, p, &rep);
        if (r < 0) {
                log_warning_errno(r, "Cgroup %s: placing %s failed", ms->cgroup, c->label);
                return;
        }
        m->actions_failed += rep.failed;
        ms->placed = rep.applied > 0;
        if (!ms->placed)
                stop_search(ms, "the actuator refused its placement (see the line before)");
}

static void log_event(ManagerSearch *ms, SearchEvent ev) {
        const Search *s = &ms->s;
        const SearchCandidate *w = &s->c[s->winner];

        switch (ev) {
        case SEARCH_EVENT_NONE:
                return;
        case SEARCH_EVENT_DROPPED:
                for (size_t i = 1; i < s->n; i++) {
                        const SearchCandidate *c = &s->c[i];
                        if (!c->dropped || (ms->dropped_logged & (1u << i)) || !c->has_estimate)
                                continue;
                        ms->dropped_logged |= 1u << i;
                        log_struct(LOG_INFO, STEERD_MESSAGE_TRIAL,
                                   "Cgroup %s: search %u dropped %s after %zu pair%s: slices a second x%.3f "
                                   "[%.3f, %.3f] of steerd's policy, a loss beyond HarmPercent=%.1f%%",
                                   ms->cgroup, s->searches, c->label, c->n_logs, c->n_logs == 1 ? "" : "s",
                                   c->estimate.ratio, c->estimate.ci_low, c->estimate.ci_high,
                                   s->harm * 100);
                }
                return;
        case SEARCH_EVENT_WON:
                if (s->winner == 0)
                        log_struct(LOG_NOTICE, STEERD_MESSAGE_TRIAL,
                                   "Cgroup %s: search %u keeps steerd's policy: no candidate made more "
                                   "progress with confidence (%.0f s searched, %.0f s on losing candidates)",
                                   ms->cgroup, s->searches, s->searching_us / 1e6, s->losing_us / 1e6);
                else
                        log_struct(LOG_NOTICE, STEERD_MESSAGE_TRIAL,
                                   "Cgroup %s: search %u found %s: slices a second x%.3f [%.3f, %.3f] of "
                                   "steerd's policy over %zu pairs; held, re-checked one pair in %u blocks",
                                   ms->cgroup, s->searches, w->label, w->estimate.ratio, w->estimate.ci_low,
                                   w->estimate.ci_high, w->n_logs, s->duty);
                return;
        case SEARCH_EVENT_LOST_CLAIM:
                log_struct(LOG_NOTICE, STEERD_MESSAGE_TRIAL,
                           "Cgroup %s: the placement held no longer wins at its re-check; searching again",
                           ms->cgroup);
                return;
        case SEARCH_EVENT_PHASE:
                log_struct(LOG_INFO, STEERD_MESSAGE_TRIAL,
                           "Cgroup %s: its load changed (demand %.2f CPUs, %u busy threads where it is "
                           "placed): a new phase, looked up after one block of steerd's policy",
                           ms->cgroup, s->phase_demand, s->phase_busy);
                return;
        case SEARCH_EVENT_FROM_MEMORY:
                log_struct(LOG_INFO, STEERD_MESSAGE_TRIAL,
                           "Cgroup %s: its load (demand %.2f CPUs, %u busy threads) is a phase seen before: "
                           "%s placed from memory, re-checked",
                           ms->cgroup, s->phase_demand, s->phase_busy, w->label);
                return;
        }
}

static void end_block(Manager *m, ManagerSearch *ms, const OptIn *o, uint64_t now_us) {
        SearchBlock b = {};
        CgroupCounters last = {};

        if (ms->has_first && cgroup_counters_read(m->root, &o->loc, now_us, &last) >= 0) {
                TrialValues v;
                if (cgroup_counters_values(&ms->first, &last, &v) >= 0 && v.has[TRIAL_SIGNAL_SLICES]) {
                        b.has_progress = true;
                        b.progress = v.v[TRIAL_SIGNAL_SLICES];
                }
                b.has_load = cgroup_counters_load(&ms->first, &last, &b.demand, &b.busy) >= 0;
        }
        cgroup_counters_done(&last);
        ms->has_first = false;
        SearchEvent ev = SEARCH_EVENT_NONE;
        if (search_end_block(&ms->s, now_us, &b, &ev) >= 0)
                log_event(ms, ev);
}

static void tick_one(Manager *m, ManagerSearch *ms, uint64_t now_us, const Snapshot *snap) {
        const OptIn *o = find_optin_loc(m, ms->cgroup);

        if (!o || ms->stopped)
                return;
        if (manager_trial_running_for(m, ms->cgroup)) {
                /* The operator's trial decides the arms meanwhile. */
                if (ms->placed)
                        give_back(m, ms, "a trial starts");
                return;
        }
        const SearchCandidate *arm = search_arm(&ms->s);
        SearchKind was_kind = arm->kind;
        _cleanup_cpuset_ CpuSet was_cpus = arm->cpus ? hwloc_bitmap_dup(arm->cpus) : NULL;

        if (ms->s.state == SEARCH_STATE_WANT && snap &&
            search_start(&ms->s, snap, ms->cgroup, now_us) >= 0) {
                char list[600] = "";
                size_t n = 0;
                for (size_t i = 1; i < ms->s.n && n < sizeof(list); i++)
                        n += (size_t) snprintf(list + n, sizeof(list) - n, "%s%s", i > 1 ? "; " : "",
                                               ms->s.c[i].label);
                ms->dropped_logged = 0;
                log_struct(LOG_INFO, STEERD_MESSAGE_TRIAL,
                           "Cgroup %s: placement search %u started against steerd's policy: %s", ms->cgroup,
                           ms->s.searches, list);
        }
        switch (search_tick(&ms->s, now_us)) {
        case SEARCH_STEP_NONE:
                break;
        case SEARCH_STEP_MEASURE:
                cgroup_counters_done(&ms->first);
                ms->has_first = cgroup_counters_read(m->root, &o->loc, now_us, &ms->first) >= 0;
                break;
        case SEARCH_STEP_END:
                end_block(m, ms, o, now_us);
                break;
        }

        arm = search_arm(&ms->s);
        bool changed = !same_arm(arm, was_kind, was_cpus);
        if (changed && (was_kind != SEARCH_KIND_HANDS_OFF || ms->placed))
                give_back(m, ms, "a block ends");
        /* Held no more, yet not given back here: a mode change gave it
         * back, or someone else changed its CPUs and the actuator let go
         * (it then refuses the placement, and the search stops). */
        if (ms->placed && !actuator_cgroup_original(m->actuator, ms->cgroup))
                ms->placed = false;
        if (is_placement(arm) && (changed || !ms->placed) && snap)
                place(m, ms, snap, arm);
        if (arm->kind == SEARCH_KIND_HANDS_OFF)
                manager_hands_off_hold_nothing(m, ms->cgroup);
        if (changed && arm->kind == SEARCH_KIND_POLICY)
                manager_sample_soon(m);
}

void manager_searches_tick(Manager *m, uint64_t now_us, const Snapshot *snap) {
        sync_searches(m, now_us);
        for (size_t i = 0; i < m->n_searches; i++)
                tick_one(m, m->searches[i], now_us, snap);
}

int manager_search_explain(const Manager *m, const char *cgroup, uint64_t now_us, char **ret) {
        const ManagerSearch *ms = find_search(m, cgroup);
        char buf[4096];
        size_t n = 0;

        if (!ms)
                return -ENOENT;
        const Search *s = &ms->s;
#define ADD(...)                                                                                            \
        do {                                                                                                \
                if (n < sizeof(buf))                                                                        \
                        n += (size_t) snprintf(buf + n, sizeof(buf) - n, __VA_ARGS__);                      \
        } while (0)
        if (ms->stopped)
                ADD("placement search: stopped: %s", ms->stopped);
        else if (manager_trial_running_for(m, cgroup))
                ADD("placement search: paused while a trial runs");
        else {
                ADD("placement search %u (%s): %s in force", s->searches, search_state_to_string(s->state),
                    search_arm(s)->label);
                if (s->n > 1)
                        ADD("; candidates against steerd's policy, slices a second:");
                for (size_t i = 1; i < s->n; i++) {
                        const SearchCandidate *c = &s->c[i];
                        ADD("%s%s", i > 1 ? "; " : " ", c->label);
                        if (c->has_estimate)
                                ADD(" x%.3f [%.3f, %.3f] %s", c->estimate.ratio, c->estimate.ci_low,
                                    c->estimate.ci_high, stats_verdict_to_string(c->verdict));
                        ADD(" (%zu pair%s%s)", c->n_logs, c->n_logs == 1 ? "" : "s",
                            c->dropped ? ", dropped" : "");
                }
                if (s->state == SEARCH_STATE_HOLDING)
                        ADD("; winner %s, chosen %.0f s ago%s", s->c[s->winner].label,
                            usec_since(now_us, s->winner_since_us) / 1e6,
                            s->from_memory ? " from memory" : "");
                ADD("; %.0f s searched, %.0f s on losing candidates; %u phase change%s",
                    s->searching_us / 1e6, s->losing_us / 1e6, s->phases, s->phases == 1 ? "" : "s");
        }
#undef ADD
        char *t = strdup(buf);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}
