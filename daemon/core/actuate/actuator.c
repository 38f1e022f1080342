/* SPDX-License-Identifier: MIT */
/* The dispatch: plans applied action by action to the backend that owns
 * each, the ownership check, the give-back (release, retry) and the take-over
 * of a predecessor's state. The actuator's files, in layers; a file calls
 * only the ones below it:
 *
 *   actuator.c          the dispatch (this file)
 *   actuator-cpuset.c   the cgroup-wide backends: cpuset.cpus, systemd's AllowedCPUs
 *   actuator-threads.c  sched_setaffinity(): thread actions, the threads backend
 *   actuator-cgroup.c   a cgroup's files: backend choice, cpuset.cpus, the first record
 *   actuator-ctx.c      one apply/check/release: online CPUs, report, let-go, identity
 *   actuator-state.c    the state file: the ledger as JSON
 *   actuator-ledger.c   the records: threads, cgroups, hands-off marks, retry list
 *   actuator-mask.c     mask helpers: compose, dup, equal on the online CPUs
 *   actuator-systemd.c  systemd's D-Bus API and its encodings (knows no ledger)
 *   affinity-table.c    a simulated host's sched_{get,set}affinity (tests/sim) */

#include "actuator-cgroup.h"
#include "actuator-cpuset.h"
#include "actuator-ctx.h"
#include "actuator-mask.h"
#include "actuator-state.h"
#include "actuator-threads.h"
#include "affinity.h"
#include "log.h"

/* ---- life cycle ---- */

int actuator_new(const RootDir *root, const char *state_path, sd_bus *bus, Actuator **ret) {
        _cleanup_(actuator_freep) Actuator *a = NULL;

        if (!root || !ret)
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->root = root;
        a->live = rootdir_is_host(root);
        /* Without the mounts nothing is confined: no cgroup file is written,
         * no state file entry of a cgroup taken. */
        if (cgroup_mounts_read(root, &a->mounts) < 0)
                log_debug("Cannot read the cgroup mounts below %s: no cgroup file will be written",
                          root->path);
        if (state_path && !(a->state_path = strdup(state_path)))
                return -ENOMEM;
        a->bus = bus ? sd_bus_ref(bus) : NULL;
        if (affinity_probe_bytes(&a->affinity_bytes) < 0)
                a->affinity_bytes = CPU_SETSIZE / 8;

        *ret = TAKE_PTR(a);
        return 0;
}

Actuator *actuator_free(Actuator *a) {
        if (!a)
                return NULL;
        act_ledger_done(a);
        cgroup_mounts_done(&a->mounts);
        free(a->state_path);
        sd_bus_unref(a->bus);
        free(a);
        return NULL;
}

int actuator_set_cgroups(Actuator *a, const char *const *names, const CgroupLocation *locs, size_t n) {
        if (!a || (n > 0 && (!names || !locs)))
                return -EINVAL;
        return act_opted_in_set(a, names, locs, n);
}

int actuator_choose_backend(const Actuator *a, const CgroupLocation *loc, ActuatorBackend *ret) {
        if (!a || !loc || !loc->dir || !ret)
                return -EINVAL;
        return act_cgroup_choose_backend(a->root, a->live, a->bus, loc->dir, loc->v2, ret);
}

void actuator_set_affinity_table(Actuator *a, AffinityTable *t) {
        if (a)
                a->affinity = t;
}

void actuator_set_bus(Actuator *a, sd_bus *bus) {
        if (!a)
                return;
        sd_bus_unref(a->bus);
        a->bus = bus ? sd_bus_ref(bus) : NULL;
}

void actuator_set_write_hook(Actuator *a, ActuatorWriteHook hook, void *userdata) {
        if (!a)
                return;
        a->write_hook = hook;
        a->write_hook_userdata = userdata;
}

/* ---- apply ---- */

static int apply_cgroup_action(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, const Action *act) {
        Actuator *a = c->a;
        ActuatorBackend backend;
        ActCgroup *crec;
        HandsOff *h;
        int r;

        h = act_hands_off_find(a, cg->name, 0, 0);
        if (h) {
                act_log_refused(h, act);
                c->rep.failed++;
                return 0;
        }
        crec = actuator_find_owned(a, cg->name);
        if (!crec && act->kind == ACTION_RESTORE) {
                log_debug("cgroup %s: restore of CPUs steerd does not hold; nothing to do", cg->name);
                c->rep.applied++;
                return 0;
        }
        if (crec)
                backend = crec->backend;
        else {
                r = act_cgroup_choose_backend(a->root, a->live, a->bus, cg->dir, cg->v2, &backend);
                if (r == -ENOENT) {
                        log_notice("cgroup %s (%s) is gone; %s %s dropped", cg->name, cg->dir,
                                   action_policy_to_string(act->policy), action_kind_to_string(act->kind));
                        c->rep.vanished++;
                        return 0;
                }
                if (r == -EPERM) {
                        log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                                   "cgroup %s is a cpuset partition root: its CPUs are its operator's; "
                                   "leaving it unmanaged",
                                   cg->name);
                        c->rep.failed++;
                        return act_let_go(c, cg->name, 0, 0);
                }
                if (r < 0)
                        return r;
        }
        if (backend == ACTUATOR_BACKEND_THREADS)
                return act_apply_cgroup_threads(c, cg, cs, crec, act);
        return act_apply_cgroup_file(c, cg, cs, crec, backend, act);
}

/* The plan's action i, checked: its opted-in cgroup and snapshot, or NULL
 * (logged and counted) when it cannot be applied. */
static const OptedIn *action_target(ActCtx *c, const Action *act, const CgroupSample **ret_cs) {
        const OptedIn *cg;

        if (!act->cgroup || !act->cpus || hwloc_bitmap_iszero(act->cpus)) {
                log_warning("cgroup %s%s%.0d: %s action without CPUs; dropped", act->cgroup ?: "(none)",
                            act->tid ? " tid " : "", (int) act->tid,
                            action_kind_to_string(act->kind) ?: "invalid");
                c->rep.failed++;
                return NULL;
        }
        /* DESIGN.md 5.1: nothing outside the opted-in cgroups. */
        cg = act_opted_in_find(c->a, act->cgroup);
        if (!cg) {
                log_warning("cgroup %s%s%.0d: not opted in; %s %s refused", act->cgroup,
                            act->tid ? " tid " : "", (int) act->tid, action_policy_to_string(act->policy),
                            action_kind_to_string(act->kind));
                c->rep.failed++;
                return NULL;
        }
        *ret_cs = act_snap_cgroup(c->snap, act->cgroup);
        return cg;
}

static bool is_thread_action(const Action *act) {
        return act->tid > 0 && (act->kind == ACTION_SET_THREAD_CPUS || act->kind == ACTION_RESTORE);
}

/* A run of thread actions (the sticky policy can pin hundreds in a tick):
 * every intent first, one save of the state file, then every mask. Saving
 * the whole state before each of them made a tick quadratic. */
static int apply_thread_run(ActCtx *c, const Plan *plan, size_t from, size_t to) {
        ActPrepared *prep = calloc(MAX(to - from, (size_t) 1), sizeof(ActPrepared));
        int r = 0;

        if (!prep)
                return -ENOMEM;
        for (size_t i = from; i < to && r >= 0; i++) {
                const CgroupSample *cs = NULL;
                const OptedIn *cg = action_target(c, &plan->actions[i], &cs);
                if (cg)
                        r = act_prepare_thread_action(c, cg, cs, &plan->actions[i], &prep[i - from]);
        }
        /* One write-ahead for the run; without it only give-backs are made. */
        bool recorded = act_save_state(c->a) >= 0;
        unsigned pinned = 0, released = 0;
        for (size_t i = from; i < to && r >= 0; i++) {
                const Action *act = &plan->actions[i];
                unsigned applied = c->rep.applied;
                if (prep[i - from].go && !recorded && !prep[i - from].full_restore)
                        act_cancel_thread_action(c, &prep[i - from]);
                else if (prep[i - from].go)
                        r = act_finish_thread_action(c, act_opted_in_find(c->a, act->cgroup), act,
                                                     &prep[i - from]);
                if (act->policy == ACTION_POLICY_STICKY && c->rep.applied > applied) {
                        if (act->kind == ACTION_RESTORE)
                                released++;
                        else
                                pinned++;
                }
                /* Stickiness summed per cgroup, once its actions end. */
                bool last = i + 1 == to || !streq(plan->actions[i + 1].cgroup, act->cgroup);
                if (last && pinned + released > 0) {
                        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION,
                                   "cgroup %s: sticky pinned %u thread%s where %s last ran, gave %u back "
                                   "(each thread at debug level)",
                                   act->cgroup, pinned, pinned == 1 ? "" : "s", pinned == 1 ? "it" : "they",
                                   released);
                        pinned = released = 0;
                }
        }
        for (size_t i = from; i < to; i++)
                act_prepared_done(&prep[i - from]);
        free(prep);
        return r;
}

int actuator_apply(Actuator *a, const Snapshot *snap, const Plan *plan, ActuatorReport *ret) {
        _cleanup_(act_ctx_done) ActCtx c = {};
        int r;

        if (!a || !snap || !plan || !ret)
                return -EINVAL;
        r = act_ctx_init(&c, a, snap);
        if (r < 0)
                return r;

        /* While the state file cannot be written, nothing is changed that a
         * successor could not give back: only give-backs are made. */
        bool writable = act_state_writable(a);
        if (writable) {
                r = act_adopt_new_threads(&c);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < plan->n_actions;) {
                const Action *act = &plan->actions[i];
                const CgroupSample *cs = NULL;
                const OptedIn *cg;

                if (!writable && act->kind != ACTION_RESTORE) {
                        c.rep.failed++;
                        i++;
                        continue;
                }

                if (is_thread_action(act)) {
                        size_t to = i + 1;
                        while (to < plan->n_actions && is_thread_action(&plan->actions[to]))
                                to++;
                        r = apply_thread_run(&c, plan, i, to);
                        if (r < 0)
                                return r;
                        i = to;
                        continue;
                }
                i++;
                cg = action_target(&c, act, &cs);
                if (!cg)
                        continue;
                if (act->tid == 0 && (act->kind == ACTION_SET_CGROUP_CPUS || act->kind == ACTION_RESTORE))
                        r = apply_cgroup_action(&c, cg, cs, act);
                else {
                        log_warning("cgroup %s%s%.0d: malformed %s action; dropped", act->cgroup,
                                    act->tid ? " tid " : "", (int) act->tid,
                                    action_kind_to_string(act->kind) ?: "invalid");
                        c.rep.failed++;
                        continue;
                }
                if (r < 0)
                        return r;
        }

        act_save_state(a);
        *ret = c.rep;
        c.rep = (ActuatorReport){};
        return 0;
}

int actuator_adopt_thread(Actuator *a, const char *cgroup, pid_t tid) {
        const ActCgroup *crec;
        int r;

        if (!a || !cgroup || tid <= 0)
                return -EINVAL;
        crec = actuator_find_owned(a, cgroup);
        if (!act_threads_writable(a) || !crec || crec->backend != ACTUATOR_BACKEND_THREADS || !crec->window)
                return 0; /* the kernel applies a cpuset to new threads itself */
        r = act_adopt_thread(a, crec, tid);
        act_save_state(a);
        return r;
}

/* ---- ownership ---- */

static int check_cgroups(ActCtx *c) {
        Actuator *a = c->a;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        for (size_t i = a->n_owned; i > 0; i--) {
                ActCgroup *crec = &a->owned[i - 1];
                _cleanup_(freep) char *text = NULL, *name = NULL;
                _cleanup_cpuset_ CpuSet cur = NULL;

                if (crec->backend == ACTUATOR_BACKEND_THREADS || !crec->window)
                        continue;
                r = act_cgroup_read_cpus_text(a->root, crec->dir, &text);
                if (r == -ENOENT) {
                        if (rootdir_access(a->root, crec->dir, F_OK) < 0) {
                                name = strdup(crec->name);
                                if (!name)
                                        return -ENOMEM;
                                act_cgroup_gone(c, name, crec->dir);
                        }
                        continue; /* a systemd cgroup without cpuset files: nothing to compare */
                }
                if (r < 0 || cpuset_parse(text, &cur) < 0) {
                        log_debug("cgroup %s: cannot read its CPUs for the ownership check", crec->name);
                        continue;
                }
                if (act_cpuset_equal_on(cur, crec->window, c->online))
                        continue;
                log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                           "cgroup %s: CPUs are now %s, steerd had set %s: someone else changed them; "
                           "letting go without restoring",
                           crec->name, cpuset_to_string(cur, b1, sizeof(b1)),
                           cpuset_to_string(crec->window, b2, sizeof(b2)));
                name = strdup(crec->name);
                if (!name)
                        return -ENOMEM;
                actuator_forget_owned(a, name);
                r = act_let_go(c, name, 0, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Each record's thread in the snapshot, by record index: one pass over the
 * snapshot, a lookup per thread (a churning cgroup has thousands of them). */
static int match_threads(const ActCtx *c, const ThreadSample ***ret) {
        const Actuator *a = c->a;
        const ThreadSample **match;

        match = calloc(a->n_threads + 1, sizeof(const ThreadSample *));
        if (!match)
                return -ENOMEM;
        for (size_t k = 0; k < c->snap->n_cgroups; k++) {
                const CgroupSample *cs = &c->snap->cgroups[k];
                for (size_t j = 0; cs->path && j < cs->n_threads; j++) {
                        bool found;
                        size_t idx = act_thread_index(a, cs->threads[j].tid, &found);
                        if (found && streq(a->threads[idx].cgroup, cs->path))
                                match[idx] = &cs->threads[j];
                }
        }
        *ret = match;
        return 0;
}

/* systemd realizes AllowedCPUs= after its method call returns: the
 * kernel's composition with the window is not a change by someone else.
 * 1 if the sampled mask is that composition (then recorded as last set). */
static int thread_recomposed(ActCtx *c, ActThread *t, const ThreadSample *ts) {
        const ActCgroup *crec = actuator_find_owned(c->a, t->cgroup);
        _cleanup_cpuset_ CpuSet want = NULL;
        int r;

        if (!crec || crec->backend == ACTUATOR_BACKEND_THREADS || !crec->window)
                return 0;
        r = act_compose(t->request ?: (t->original_full ? NULL : t->original), crec->window, &want);
        if (r < 0)
                return r;
        if (!act_cpuset_equal_on(ts->allowed, want, c->online))
                return 0;
        hwloc_bitmap_copy(t->last_set, ts->allowed);
        c->a->dirty = true;
        return 1;
}

/* One thread record against its sample (NULL: not in its cgroup's). */
static int check_thread(ActCtx *c, ActThread *t, const ThreadSample *ts) {
        Actuator *a = c->a;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        if (!ts && !act_snap_cgroup(c->snap, t->cgroup))
                return 0; /* not sampled this tick */
        if (!ts) {
                /* Exited, or moved out of the cgroup: a moved thread
                 * stays owned and is given back on release. */
                if (act_threads_writable(a) && act_thread_check_identity(a, t->tid, t->starttime) == -ESRCH) {
                        log_debug("cgroup %s tid %d: the thread is gone; dropped", t->cgroup, (int) t->tid);
                        actuator_forget_thread(a, t->tid);
                }
                return 0;
        }
        if (ts->starttime != t->starttime) {
                log_debug("cgroup %s tid %d: the tid now names another thread; dropped", t->cgroup,
                          (int) t->tid);
                actuator_forget_thread(a, t->tid);
                return 0;
        }
        /* A mask held from an earlier tick may predate steerd's own last
         * change: it proves nothing (the guest check lost an operator's
         * taskset mask to such a let-go, given back later as the cgroup's). */
        if (!ts->allowed || ts->allowed_held || act_cpuset_equal_on(ts->allowed, t->last_set, c->online))
                return 0;
        r = thread_recomposed(c, t, ts);
        if (r != 0)
                return r < 0 ? r : 0;

        log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                   "cgroup %s tid %d: CPUs are now %s, steerd had set %s: someone else changed "
                   "them; letting go without restoring",
                   t->cgroup, (int) t->tid, cpuset_to_string(ts->allowed, b1, sizeof(b1)),
                   cpuset_to_string(t->last_set, b2, sizeof(b2)));
        _cleanup_(freep) char *name = strdup(t->cgroup);
        pid_t tid = t->tid;
        uint64_t st = t->starttime;
        if (!name)
                return -ENOMEM;
        actuator_forget_thread(a, tid);
        return act_let_go(c, name, tid, st);
}

static int check_threads(ActCtx *c) {
        _cleanup_(freep) const ThreadSample **match = NULL;
        int r;

        r = match_threads(c, &match);
        if (r < 0)
                return r;
        /* Backwards: forgetting index i - 1 moves only what was checked. */
        for (size_t i = c->a->n_threads; i > 0; i--) {
                r = check_thread(c, &c->a->threads[i - 1], match[i - 1]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Hands-off marks of threads that exited would pile up: prune them. */
static void prune_hands_off(ActCtx *c) {
        Actuator *a = c->a;

        for (size_t i = a->n_hands_off; i > 0; i--) {
                const HandsOff *h = &a->hands_off[i - 1];
                const CgroupSample *cs;
                const ThreadSample *ts;

                if (h->tid == 0)
                        continue;
                cs = act_snap_cgroup(c->snap, h->cgroup);
                if (!cs)
                        continue;
                ts = act_cgroup_thread(cs, h->tid);
                if (ts && ts->starttime == h->starttime)
                        continue;
                if (act_threads_writable(a) ? act_thread_check_identity(a, h->tid, h->starttime) == -ESRCH : !ts)
                        act_hands_off_remove_at(a, i - 1);
        }
}

int actuator_check_ownership(Actuator *a, const Snapshot *snap, ActuatorReport *ret) {
        _cleanup_(act_ctx_done) ActCtx c = {};
        int r;

        if (!a || !snap || !ret)
                return -EINVAL;
        r = act_ctx_init(&c, a, snap);
        if (r < 0)
                return r;

        /* Cgroups first: a third party's write to a cgroup also recomposes
         * its threads, which are then judged against the old window. */
        r = check_cgroups(&c);
        if (r < 0)
                return r;
        r = check_threads(&c);
        if (r < 0)
                return r;
        prune_hands_off(&c);

        act_save_state(a);
        *ret = c.rep;
        c.rep = (ActuatorReport){};
        return 0;
}

/* ---- release ---- */

typedef struct Restored {
        pid_t tid;
        CpuSet original;
} Restored;

/* Kernels before 6.2 reset every task of a cpuset whose CPUs are written,
 * and a mask of its own that the window left no room for could not be set
 * (EINVAL): give the exact originals back once more, then forget them. */
static void restore_exact_again(const ActCtx *c, const char *cgroup, const Restored *exact, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_cpuset_ CpuSet cur = NULL;
                if (act_aff_get(c->a, exact[i].tid, &cur) >= 0 &&
                    !act_cpuset_equal_on(cur, exact[i].original, c->online)) {
                        log_debug(
                                "cgroup %s tid %d: the kernel reset the restored mask; giving it back again",
                                cgroup, (int) exact[i].tid);
                        (void) act_aff_set(c->a, exact[i].tid, exact[i].original);
                }
                actuator_forget_thread(c->a, exact[i].tid);
        }
}

/* A thread to set once more after its cgroup's CPUs are given back stays
 * recorded until then, with what the cgroup's give-back will make of it as
 * its intent: a kill in between leaves a successor a thread it still owns
 * (measured: without it, 8 of 10 kills in that gap left an operator's
 * taskset mask widened to the cgroup's CPUs, let go as someone else's).
 * What the thread's give-back just set is steerd's last change: when its
 * own mask had no room in the window, that is the window (a kill before
 * the cgroup write leaves it so; t-kill seed 11277 let it go as someone
 * else's while it was recorded as the mask before the window). */
static void keep_for_exact(Actuator *a, pid_t tid, const ActCgroup *crec) {
        _cleanup_cpuset_ CpuSet cur = NULL;
        ActThread *t = actuator_find_thread(a, tid);
        if (!t)
                return;
        hwloc_bitmap_free(t->pending);
        t->pending = hwloc_bitmap_dup(crec->original);
        if (act_aff_get(a, tid, &cur) >= 0) {
                hwloc_bitmap_free(t->last_set);
                t->last_set = TAKE_PTR(cur);
        }
        a->dirty = true;
}

/* A give-back that failed for a reason other than the thing being gone
 * (the bus is down, the kernel refused) keeps its record: it stays in the
 * state file for a successor, and steerd tries again (actuator_retry()). */
static int release_one(Actuator *a, const char *cgroup) {
        _cleanup_(act_ctx_done) ActCtx c = {};
        Restored *exact = NULL;
        size_t n_exact = 0;
        int r, ret = 0;

        r = act_ctx_init(&c, a, NULL);
        if (r < 0)
                return r;

        ActCgroup *crec = actuator_find_owned(a, cgroup);
        bool exact_later = crec && act_threads_writable(a);
        /* Threads first: they are compared with what steerd set while the
         * cgroup's window still holds, then the window goes. */
        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                if (!streq(t->cgroup, cgroup))
                        continue;
                CpuSet orig = hwloc_bitmap_dup(t->original);
                pid_t tid = t->tid;
                r = act_release_thread(&c, t);
                if (r < 0) {
                        if (ret == 0)
                                ret = r;
                        hwloc_bitmap_free(orig);
                        continue; /* kept: given back later, or by a successor */
                }
                Restored *n = r > 0 && orig && exact_later
                                      ? reallocarray(exact, n_exact + 1, sizeof(Restored))
                                      : NULL;
                if (n) {
                        exact = n;
                        exact[n_exact++] = (Restored){.tid = tid, .original = TAKE_PTR(orig)};
                        keep_for_exact(a, tid, crec);
                } else
                        actuator_forget_thread(a, tid);
                hwloc_bitmap_free(orig);
        }

        if (crec) {
                if (n_exact > 0)
                        (void) act_save_state(a); /* the kept threads' intent, before the write */
                r = act_release_cgroup_record(&c, crec);
                if (r < 0) {
                        if (ret == 0)
                                ret = r;
                } else
                        actuator_forget_owned(a, cgroup);
                if (r > 0)
                        restore_exact_again(&c, cgroup, exact, n_exact);
                else if (r == 0) /* not written (gone, or someone else's): nothing to set again */
                        for (size_t i = 0; i < n_exact; i++)
                                actuator_forget_thread(a, exact[i].tid);
        }
        for (size_t i = 0; i < n_exact; i++)
                hwloc_bitmap_free(exact[i].original);
        free(exact);

        if (ret == 0)
                act_hands_off_clear_cgroup(a, cgroup);
        act_retry_mark(a, cgroup, ret < 0);
        a->dirty = true;
        return ret;
}

int actuator_release_cgroup(Actuator *a, const char *cgroup) {
        int r;

        if (!a || !cgroup)
                return -EINVAL;
        r = release_one(a, cgroup);
        act_save_state(a);
        return r;
}

/* only_unlisted: only the cgroups not in actuator_set_cgroups()'s list. */
static int release_many(Actuator *a, bool only_unlisted) {
        _cleanup_(freep) char **borrowed = NULL;
        size_t n = 0;
        int r;

        /* Taken before releasing: a record whose give-back fails stays. */
        r = act_owned_cgroup_names(a, &borrowed, &n);
        if (r < 0)
                return r;
        /* The names point into records that release_one() frees. */
        _cleanup_strv_free_ char **names = calloc(n + 1, sizeof(char *));
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(names[i] = strdup(borrowed[i])))
                        return -ENOMEM;

        r = 0;
        for (size_t i = 0; i < n; i++) {
                if (only_unlisted && act_opted_in_find(a, names[i]) && !act_retry_wanted(a, names[i]))
                        continue;
                int k = release_one(a, names[i]);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && r == 0)
                        r = k;
        }
        act_save_state(a);
        return r;
}

int actuator_release_all(Actuator *a) {
        if (!a)
                return -EINVAL;
        return release_many(a, false);
}

void actuator_giveback_counts(const Actuator *a, uint64_t *ret_failed, size_t *ret_pending) {
        if (ret_failed)
                *ret_failed = a ? a->givebacks_failed : 0;
        if (ret_pending)
                *ret_pending = a ? a->n_retry : 0;
}

int actuator_retry(Actuator *a, bool all) {
        if (!a)
                return -EINVAL;
        if (a->n_threads == 0 && a->n_owned == 0)
                return 0;
        return release_many(a, !all);
}

/* ---- a predecessor's state ---- */

/* What a state file that is not acted on had loaded before it failed. */
static void forget_loaded(Actuator *a) {
        while (a->n_threads > 0)
                actuator_forget_thread(a, a->threads[0].tid);
        while (a->n_owned > 0)
                actuator_forget_owned(a, a->owned[0].name);
        a->dirty = false;
}

int actuator_take_over(Actuator *a) {
        _cleanup_(freep) char *bad = NULL;
        int r;

        if (!a || !a->state_path)
                return -EINVAL;
        if (a->n_threads > 0 || a->n_owned > 0)
                return -EBUSY;
        act_state_remove_stale_temporaries(a->state_path);
        r = actuator_state_load(a, a->state_path);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                forget_loaded(a); /* nothing of it is acted on, not even what came before the error */
        if (r == -EBADMSG) {
                if (asprintf(&bad, "%s.bad", a->state_path) < 0)
                        return -ENOMEM;
                if (rename(a->state_path, bad) < 0)
                        log_warning_errno(errno, "Cannot rename %s to %s", a->state_path, bad);
                log_struct(LOG_ERR, STEERD_MESSAGE_RESTORE,
                           "%s is malformed (see above): nothing of it was restored; kept as %s",
                           a->state_path, bad);
                return -EBADMSG;
        }
        if (r < 0) /* half loaded: forgotten above, nothing touched, the file kept */
                return log_error_errno(r, "Cannot read %s", a->state_path);

        log_struct(LOG_NOTICE, STEERD_MESSAGE_RESTORE,
                   "%s: a previous steerd left %zu threads and %zu cgroups changed; giving them back",
                   a->state_path, a->n_threads, a->n_owned);
        /* Everything loaded is written back as it is while giving back: the
         * file always holds what is still to do. */
        a->dirty = true;
        r = actuator_release_all(a);
        if (r < 0) {
                char what[512];
                (void) actuator_kept_description(a, what, sizeof(what));
                log_struct_errno(LOG_ERR, r, STEERD_MESSAGE_RESTORE,
                                 "Could not give back everything a previous steerd left (%s): kept in %s, "
                                 "tried again every few seconds and at the stop",
                                 what, a->state_path);
        }
        return r;
}

int actuator_restore_predecessor(const RootDir *root, const char *state_path, sd_bus *bus) {
        _cleanup_(actuator_freep) Actuator *a = NULL;
        int r;

        if (!root || !state_path)
                return -EINVAL;
        r = actuator_new(root, state_path, bus, &a);
        if (r < 0)
                return r;
        return actuator_take_over(a);
}
