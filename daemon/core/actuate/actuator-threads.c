/* SPDX-License-Identifier: MIT */
#include "actuator-cgroup.h"
#include "actuator-mask.h"
#include "actuator-threads.h"
#include "affinity.h"
#include "log.h"

/* ---- the syscalls, or a simulated host's table ---- */

/* Thread masks may be changed: on the host, or through a simulated host's
 * affinity table. */
bool act_threads_writable(const Actuator *a) {
        return a->live || a->affinity;
}

int act_aff_get(const Actuator *a, pid_t tid, CpuSet *ret) {
        return a->affinity ? affinity_table_get(a->affinity, tid, ret) : thread_get_affinity(tid, ret);
}

int act_aff_set(const Actuator *a, pid_t tid, hwloc_const_bitmap_t set) {
        return a->affinity ? affinity_table_set(a->affinity, tid, set) : thread_set_affinity(tid, set);
}

int act_aff_set_all(const Actuator *a, pid_t tid) {
        return a->affinity ? affinity_table_set(a->affinity, tid, NULL)
                           : thread_set_affinity_all(tid, a->affinity_bytes);
}

/* ---- a thread's mask ---- */

static bool emulates_window(const ActCgroup *crec) {
        return crec && crec->backend == ACTUATOR_BACKEND_THREADS && crec->window;
}

/* The mask a thread gets from its own base (request, else original) within
 * cg_now, or within the threads backend's window. */
static int thread_predict(const ActThread *t, const ActCgroup *crec, hwloc_const_bitmap_t request,
                          hwloc_const_bitmap_t cg_now, CpuSet *ret) {
        hwloc_const_bitmap_t base = request ?: (t->original_full ? NULL : t->original);

        if (emulates_window(crec))
                return act_compose(base, crec->window, ret);
        if (cg_now)
                return act_compose(base, cg_now, ret);
        return act_dup_set(base ?: t->original, ret);
}

/* Write-ahead: the mask the thread is about to get goes into the record (and,
 * with the next state file, to a successor) before it is set. */
static int thread_intend(Actuator *a, ActThread *t, const ActCgroup *crec, hwloc_const_bitmap_t request,
                         hwloc_const_bitmap_t cg_now) {
        CpuSet p = NULL;
        int r = thread_predict(t, crec, request, cg_now, &p);
        if (r < 0)
                return r;
        hwloc_bitmap_free(t->pending);
        t->pending = p;
        a->dirty = true;
        return 0;
}

/* Set a thread's mask: its own request (or its original), within the
 * threads backend's window when there is one; the cpuset backends leave the
 * composition to the kernel. Reads back what the thread got. */
static int thread_apply_mask(Actuator *a, ActThread *t, const ActCgroup *crec,
                             hwloc_const_bitmap_t request) {
        _cleanup_cpuset_ CpuSet req = NULL, got = NULL;
        hwloc_const_bitmap_t base;
        int r;

        r = act_dup_set(request, &req);
        if (r < 0)
                return r;
        base = req ?: (t->original_full ? NULL : t->original);

        if (emulates_window(crec)) {
                _cleanup_cpuset_ CpuSet m = NULL;
                /* A request outside the window fails as sched_setaffinity()
                 * fails for one outside the cpuset. */
                if (req && !hwloc_bitmap_intersects(req, crec->window))
                        return -EINVAL;
                r = act_compose(base, crec->window, &m);
                if (r < 0)
                        return r;
                r = act_aff_set(a, t->tid, m);
        } else if (base) {
                r = act_aff_set(a, t->tid, base);
                if (r == -EINVAL && !req)
                        /* The original lies outside what the cgroup allows
                         * now: let the kernel give it the cgroup's CPUs. */
                        r = act_aff_set_all(a, t->tid);
        } else
                r = act_aff_set_all(a, t->tid);
        if (r >= 0)
                r = act_aff_get(a, t->tid, &got);
        if (r < 0) {
                hwloc_bitmap_free(t->pending);
                t->pending = NULL;
                return r;
        }
        hwloc_bitmap_free(t->last_set);
        t->last_set = TAKE_PTR(got);
        hwloc_bitmap_free(t->request);
        t->request = TAKE_PTR(req);
        hwloc_bitmap_free(t->pending);
        t->pending = NULL;
        t->unapplied = false;
        a->dirty = true;
        return 0;
}

/* Record a thread before steerd's first change, as unapplied. cg_now: the
 * CPUs its cgroup gives it now; inherited: a threads-backend window the
 * thread's creator may have passed on, with cg_original, the cgroup's CPUs
 * before it (NULL: none). */
static int thread_record(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime,
                         hwloc_const_bitmap_t cg_now, hwloc_const_bitmap_t inherited,
                         hwloc_const_bitmap_t cg_original, ActThread **ret) {
        _cleanup_cpuset_ CpuSet cur = NULL, orig = NULL;
        bool full;
        int r;

        r = act_aff_get(a, tid, &cur);
        if (r < 0)
                return r;
        if (inherited && cg_original && hwloc_bitmap_isincluded(cur, inherited)) {
                /* A thread born inside steerd's window inherited the window
                 * from its creator: what it would have had is the cgroup's. */
                r = act_dup_set(cg_original, &orig);
                full = true;
        } else {
                r = act_dup_set(cur, &orig);
                full = cg_now && hwloc_bitmap_isincluded(cg_now, cur);
        }
        if (r < 0)
                return r;

        ActThread t = {
                .tid = tid,
                .starttime = starttime,
                .cgroup = strdup(cgroup),
                .original = TAKE_PTR(orig),
                .original_full = full,
                .last_set = TAKE_PTR(cur),
                .unapplied = true,
        };
        if (!t.cgroup) {
                act_thread_done(&t);
                return -ENOMEM;
        }
        r = actuator_add_thread(a, &t);
        if (r < 0) {
                act_thread_done(&t);
                return r;
        }
        *ret = actuator_find_thread(a, tid);
        return 0;
}

int act_record_own_mask(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime,
                        hwloc_const_bitmap_t cg_cpus) {
        ActThread *t = NULL;
        int r;

        if (!act_threads_writable(a) || actuator_find_thread(a, tid))
                return 0;
        r = act_thread_check_identity(a, tid, starttime);
        if (r < 0)
                return r == -ESRCH ? 0 : r;
        r = thread_record(a, cgroup, tid, starttime, cg_cpus, NULL, NULL, &t);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        if (t->original_full) {
                /* Its mask covers the cgroup after all: nothing of its own. */
                actuator_forget_thread(a, tid);
                return 0;
        }
        t->unapplied = false;
        a->dirty = true;
        return 1;
}

static bool thread_restore_is_full(const ActThread *t, hwloc_const_bitmap_t cpus,
                                   hwloc_const_bitmap_t cg_now, hwloc_const_bitmap_t online) {
        _cleanup_cpuset_ CpuSet want = NULL;

        /* The engine restores to what the thread had before steerd, within
         * what its cgroup allows now: anything at least that wide means "no
         * mask of steerd's own", and the exact original is what goes back. */
        if (act_compose(t->original_full ? NULL : t->original, cg_now, &want) < 0)
                return false;
        if (online)
                hwloc_bitmap_and(want, want, online);
        return hwloc_bitmap_isincluded(want, cpus);
}

static bool thread_layer_held(const ActThread *t, const ActCgroup *crec) {
        return t->request || emulates_window(crec);
}

static void thread_vanished(ActCtx *c, const char *cgroup, pid_t tid) {
        log_debug("cgroup %s tid %d: the thread is gone; dropped", cgroup, (int) tid);
        actuator_forget_thread(c->a, tid);
        c->rep.vanished++;
}

/* ---- thread actions ---- */

void act_prepared_done(ActPrepared *p) {
        hwloc_bitmap_free(p->cg_now);
        hwloc_bitmap_free(p->before);
        *p = (ActPrepared){};
}

/* The action's thread, if steerd may change it now: the root is the host's,
 * the thread is in the cgroup's snapshot, not hands-off, and still the same
 * thread. 1 with its sample, 0 when the action ends here (counted). */
static int thread_action_sample(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, const Action *act,
                                const ThreadSample **ret) {
        Actuator *a = c->a;
        const ThreadSample *ts;
        HandsOff *h;
        int r;

        if (!act_threads_writable(a)) {
                if (!a->fixture_threads_logged)
                        log_notice("cgroup %s tid %d: the root %s is not the host's: thread masks are not "
                                   "changed",
                                   act->cgroup, (int) act->tid, a->root->path);
                a->fixture_threads_logged = true;
                c->rep.failed++;
                return 0;
        }

        ts = act_cgroup_thread(cs, act->tid);
        if (!ts || (act->starttime != 0 && ts->starttime != act->starttime)) {
                log_debug("cgroup %s tid %d: not in the cgroup's snapshot; %s %s dropped", act->cgroup,
                          (int) act->tid, action_policy_to_string(act->policy),
                          action_kind_to_string(act->kind));
                c->rep.vanished++;
                return 0;
        }
        h = act_hands_off_find(a, cg->name, ts->tid, ts->starttime);
        if (h) {
                act_log_refused(h, act);
                c->rep.failed++;
                return 0;
        }
        r = act_thread_check_identity(a, ts->tid, ts->starttime);
        if (r == -ESRCH) {
                thread_vanished(c, cg->name, ts->tid);
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "cgroup %s tid %d: cannot read the thread's identity", cg->name,
                                  (int) ts->tid);
                c->rep.failed++;
                return 0;
        }
        *ret = ts;
        return 1;
}

/* The thread's record, made now unless steerd holds it already. 1 with it,
 * 0 when the action ends here (counted). */
static int thread_action_record(ActCtx *c, const OptedIn *cg, const ThreadSample *ts, const Action *act,
                                hwloc_const_bitmap_t cg_now, ActThread **ret) {
        Actuator *a = c->a;
        ActThread *t;
        int r;

        t = actuator_find_thread(a, ts->tid);
        if (t && t->starttime != ts->starttime) {
                actuator_forget_thread(a, ts->tid); /* a reused tid: that record was another thread */
                t = NULL;
        }
        if (!t) {
                if (act->kind == ACTION_RESTORE) {
                        /* Nothing of steerd's to give back (let go, or never set). */
                        log_debug("cgroup %s tid %d: restore of a mask steerd does not hold; nothing to do",
                                  cg->name, (int) ts->tid);
                        c->rep.applied++;
                        return 0;
                }
                r = thread_record(a, cg->name, ts->tid, ts->starttime, cg_now, NULL, NULL, &t);
                if (r == -ESRCH) {
                        thread_vanished(c, cg->name, ts->tid);
                        return 0;
                }
                if (r < 0)
                        return r;
        }
        *ret = t;
        return 1;
}

int act_prepare_thread_action(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, const Action *act,
                              ActPrepared *ret) {
        _cleanup_cpuset_ CpuSet cg_now = NULL, before = NULL;
        const ThreadSample *ts = NULL;
        hwloc_const_bitmap_t request;
        ActThread *t = NULL;
        ActCgroup *crec;
        int r;

        *ret = (ActPrepared){};

        r = thread_action_sample(c, cg, cs, act, &ts);
        if (r <= 0)
                return r;
        crec = actuator_find_owned(c->a, cg->name);
        r = act_cgroup_cpus_now(c, cg->dir, cg->v2, cs, crec, &cg_now);
        if (r < 0)
                return r;
        r = thread_action_record(c, cg, ts, act, cg_now, &t);
        if (r <= 0)
                return r;
        r = act_dup_set(t->last_set, &before);
        if (r < 0)
                return r;

        request = act->kind == ACTION_RESTORE && thread_restore_is_full(t, act->cpus, cg_now, c->online)
                          ? NULL
                          : act->cpus;
        r = thread_intend(c->a, t, crec, request, cg_now);
        if (r < 0)
                return r;
        *ret = (ActPrepared){
                .go = true,
                .tid = ts->tid,
                .starttime = ts->starttime,
                .cg_now = TAKE_PTR(cg_now),
                .before = TAKE_PTR(before),
                .full_restore = !request,
        };
        return 0;
}

/* The mask is no longer valid (hotplug, a cpuset that shrank): what is left
 * of it within the cgroup, to be tried once. 0 (logged) when nothing is
 * left, or nothing other than what failed. */
static int thread_mask_left(const ActCtx *c, const OptedIn *cg, const Action *act, const ActThread *t,
                            hwloc_const_bitmap_t request, hwloc_const_bitmap_t cg_now, CpuSet *ret) {
        _cleanup_cpuset_ CpuSet again = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];

        again = hwloc_bitmap_dup(request);
        if (!again)
                return -ENOMEM;
        hwloc_bitmap_and(again, again, cg_now);
        act_and_online(c, again);
        if (hwloc_bitmap_iszero(again) || hwloc_bitmap_isequal(again, request)) {
                log_warning("cgroup %s tid %d: CPUs %s are not valid for the thread and nothing of "
                            "them is left within %s; %s %s dropped",
                            cg->name, (int) t->tid, cpuset_to_string(request, b1, sizeof(b1)),
                            cpuset_to_string(cg_now, b2, sizeof(b2)), action_policy_to_string(act->policy),
                            action_kind_to_string(act->kind));
                return 0;
        }
        *ret = TAKE_PTR(again);
        return 1;
}

/* The mask could not be set (r): dropped, let go of when not permitted. */
static int thread_action_failed(ActCtx *c, const OptedIn *cg, const Action *act, const ActPrepared *p,
                                const ActThread *t, int r) {
        char b1[CPUSET_STRLEN];

        if (r == -ESRCH) {
                thread_vanished(c, cg->name, p->tid);
                return 0;
        }
        if (act_is_eperm(r)) {
                actuator_forget_thread(c->a, p->tid);
                c->rep.failed++;
                return act_mark_unmanaged(c, cg->name, p->tid, p->starttime, r);
        }
        if (!act_is_einval(r))
                log_warning_errno(r, "cgroup %s tid %d: setting CPUs %s failed", cg->name, (int) p->tid,
                                  cpuset_to_string(act->cpus, b1, sizeof(b1)));
        if (t->unapplied)
                actuator_forget_thread(c->a, p->tid);
        c->rep.failed++;
        return 0;
}

void act_cancel_thread_action(ActCtx *c, const ActPrepared *p) {
        ActThread *t = actuator_find_thread(c->a, p->tid);

        if (t && t->unapplied)
                actuator_forget_thread(c->a, p->tid);
        else if (t && t->pending) {
                hwloc_bitmap_free(t->pending);
                t->pending = NULL;
        }
        c->rep.failed++;
}

/* The mask is set: counted, logged, and the record forgotten when nothing
 * of steerd's is left on the thread. */
static void thread_action_applied(ActCtx *c, const OptedIn *cg, const Action *act, const ActPrepared *p,
                                  const ActThread *t, const ActCgroup *crec) {
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];

        c->rep.applied++;
        /* Stickiness acts on hundreds of threads in a tick: one line per
         * cgroup and tick sums them up (apply_thread_run()), each one is
         * at debug level. */
        int level = act->policy == ACTION_POLICY_STICKY ? LOG_DEBUG : LOG_INFO;
        if (!thread_layer_held(t, crec)) {
                log_struct(level, STEERD_MESSAGE_RESTORE,
                           "cgroup %s tid %d: CPUs %s -> %s, given back (%s %s: %s)", cg->name, (int) t->tid,
                           cpuset_to_string(p->before, b1, sizeof(b1)),
                           cpuset_to_string(t->last_set, b2, sizeof(b2)),
                           action_policy_to_string(act->policy), action_kind_to_string(act->kind),
                           act->reason ?: "");
                /* A mask of its own inside the cgroup's window stays recorded
                 * until the window goes: a pre-6.2 kernel resets every
                 * thread's mask when the cpuset widens, and only a record
                 * sets it back (the guest check saw the operator's 0-3
                 * become 0-7 after a pin given back within the window). */
                if (crec && crec->window && !t->original_full)
                        return;
                actuator_forget_thread(c->a, p->tid);
                return;
        }
        log_struct(level, STEERD_MESSAGE_ACTION, "cgroup %s tid %d: CPUs %s -> %s (%s %s: %s)", cg->name,
                   (int) t->tid, cpuset_to_string(p->before, b1, sizeof(b1)),
                   cpuset_to_string(t->last_set, b2, sizeof(b2)), action_policy_to_string(act->policy),
                   action_kind_to_string(act->kind), act->reason ?: "");
}

int act_finish_thread_action(ActCtx *c, const OptedIn *cg, const Action *act, ActPrepared *p) {
        Actuator *a = c->a;
        _cleanup_cpuset_ CpuSet again = NULL;
        hwloc_const_bitmap_t request = p->full_restore ? NULL : act->cpus;
        ActCgroup *crec = actuator_find_owned(a, cg->name);
        ActThread *t;
        int r, k;

        if (!p->go)
                return 0;
        /* Looked up again: recording other threads may have moved it. */
        t = actuator_find_thread(a, p->tid);
        if (!t)
                return 0;
        r = thread_apply_mask(a, t, crec, request);
        if (act_is_einval(r) && request) {
                k = thread_mask_left(c, cg, act, t, request, p->cg_now, &again);
                if (k < 0)
                        return k;
                if (k > 0) {
                        k = thread_intend(a, t, crec, again, p->cg_now);
                        if (k < 0)
                                return k;
                        r = act_save_state(a);
                        if (r >= 0)
                                r = thread_apply_mask(a, t, crec, again);
                }
        }
        if (r < 0)
                return thread_action_failed(c, cg, act, p, t, r);
        thread_action_applied(c, cg, act, p, t, crec);
        return 0;
}

/* ---- the threads backend: a window applied thread by thread ---- */

typedef struct WindowRun {
        hwloc_const_bitmap_t inherited; /* the window before, which threads born in it carry */
        hwloc_const_bitmap_t cg_now;    /* the cgroup's own CPUs */
        bool lifting;                   /* the window goes: give back */
        bool adopt_only;                /* only threads steerd does not hold yet */
        size_t n_set, n_failed;
} WindowRun;

static bool window_candidate(Actuator *a, const ActCgroup *crec, const ThreadSample *ts) {
        return !act_hands_off_find(a, crec->name, ts->tid, ts->starttime);
}

/* The first pass: every thread of cs recorded with its intent. 1 if there
 * is anything to set. */
static int window_intend(ActCtx *c, ActCgroup *crec, const CgroupSample *cs, const WindowRun *w) {
        Actuator *a = c->a;
        bool any = false;
        int r;

        for (size_t i = 0; i < cs->n_threads; i++) {
                const ThreadSample *ts = &cs->threads[i];
                ActThread *t;

                if (!window_candidate(a, crec, ts))
                        continue;
                t = actuator_find_thread(a, ts->tid);
                if (t && t->starttime != ts->starttime) {
                        actuator_forget_thread(a, ts->tid);
                        t = NULL;
                }
                if (t && w->adopt_only)
                        continue;
                if (!t) {
                        if (w->lifting)
                                continue; /* not steerd's */
                        if (act_thread_check_identity(a, ts->tid, ts->starttime) < 0)
                                continue;
                        r = thread_record(a, crec->name, ts->tid, ts->starttime, w->cg_now, w->inherited,
                                          crec->original, &t);
                        if (r == -ESRCH)
                                continue;
                        if (r < 0)
                                return r;
                }
                r = thread_intend(a, t, crec, t->request, w->cg_now);
                if (r < 0)
                        return r;
                any = true;
        }
        return any;
}

/* The second pass, for one thread: its mask within the window. */
static int window_set_thread(ActCtx *c, ActCgroup *crec, const ThreadSample *ts, WindowRun *w) {
        Actuator *a = c->a;
        ActThread *t = actuator_find_thread(a, ts->tid);
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        bool fresh;
        int r;

        if (!t || t->starttime != ts->starttime || !t->pending)
                return 0;
        fresh = t->unapplied;
        _cleanup_cpuset_ CpuSet before = hwloc_bitmap_dup(t->last_set);
        r = thread_apply_mask(a, t, crec, t->request);
        if (r == -EINVAL && t->request)
                /* Its own mask lies outside the new window: the
                 * window wins, as a cpuset would. */
                r = thread_apply_mask(a, t, crec, NULL);
        if (r == -ESRCH) {
                actuator_forget_thread(a, ts->tid);
                return 0;
        }
        if (act_is_eperm(r)) {
                actuator_forget_thread(a, ts->tid);
                r = act_mark_unmanaged(c, crec->name, ts->tid, ts->starttime, r);
                if (r < 0)
                        return r;
                w->n_failed++;
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "cgroup %s tid %d: cannot apply the cgroup's CPUs", crec->name,
                                  (int) ts->tid);
                if (t->unapplied)
                        actuator_forget_thread(a, ts->tid);
                w->n_failed++;
                return 0;
        }
        w->n_set++;
        if (fresh && w->adopt_only)
                log_struct(LOG_INFO, STEERD_MESSAGE_ACTION,
                           "cgroup %s tid %d: CPUs %s -> %s, a new thread joins the cgroup's window",
                           crec->name, (int) ts->tid, cpuset_to_string(before, b1, sizeof(b1)),
                           cpuset_to_string(t->last_set, b2, sizeof(b2)));
        if (w->lifting && !t->request)
                actuator_forget_thread(a, ts->tid); /* given back */
        return 0;
}

/* Bring the threads of cs in line with crec->window (NULL: none). Two passes
 * so that one state file write covers the intent for all of them. */
static int window_apply(ActCtx *c, ActCgroup *crec, const CgroupSample *cs, WindowRun *w) {
        int r;

        r = window_intend(c, crec, cs, w);
        if (r <= 0)
                return r;
        r = act_save_state(c->a);
        if (r < 0)
                return r;

        for (size_t i = 0; i < cs->n_threads; i++) {
                r = window_set_thread(c, crec, &cs->threads[i], w);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The cgroup's record at the threads backend's first change. */
static int threads_record_cgroup(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup **ret) {
        ActCgroup fresh = {};
        int r;

        r = act_cgroup_record(c, cg, cs, ACTUATOR_BACKEND_THREADS, &fresh);
        if (r < 0)
                return r;
        r = actuator_add_owned(c->a, &fresh);
        if (r < 0) {
                act_cgroup_done(&fresh);
                return r;
        }
        *ret = actuator_find_owned(c->a, cg->name);
        return 0;
}

/* The window was applied (or lifted): logged; a lifted window's record goes. */
static void threads_window_done(ActCtx *c, const OptedIn *cg, const ActCgroup *crec, const Action *act,
                                hwloc_const_bitmap_t old_window, const WindowRun *w) {
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];

        if (w->lifting) {
                log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE,
                           "cgroup %s: window %s lifted from %zu threads, given back (threads backend; %s "
                           "%s: %s)",
                           cg->name, cpuset_to_string(old_window, b1, sizeof(b1)), w->n_set,
                           action_policy_to_string(act->policy), action_kind_to_string(act->kind),
                           act->reason ?: "");
                /* Threads that left the snapshot keep their records until released. */
                actuator_forget_owned(c->a, cg->name);
                return;
        }
        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION,
                   "cgroup %s: CPUs %s -> %s on %zu threads%s (threads backend; %s %s: %s)", cg->name,
                   cpuset_to_string(old_window ?: crec->original, b1, sizeof(b1)),
                   cpuset_to_string(crec->window, b2, sizeof(b2)), w->n_set,
                   w->n_failed > 0 ? ", some failed" : "", action_policy_to_string(act->policy),
                   action_kind_to_string(act->kind), act->reason ?: "");
}

int act_apply_cgroup_threads(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                             const Action *act) {
        Actuator *a = c->a;
        _cleanup_cpuset_ CpuSet old_window = NULL, cg_now = NULL;
        bool full;
        int r;

        if (!act_threads_writable(a)) {
                if (!a->fixture_threads_logged)
                        log_notice("cgroup %s: the root %s is not the host's: thread masks are not changed",
                                   cg->name, a->root->path);
                a->fixture_threads_logged = true;
                c->rep.failed++;
                return 0;
        }
        if (!cs) {
                log_debug("cgroup %s: not in the snapshot; %s %s dropped", cg->name,
                          action_policy_to_string(act->policy), action_kind_to_string(act->kind));
                c->rep.vanished++;
                return 0;
        }
        if (!crec) {
                r = threads_record_cgroup(c, cg, cs, &crec);
                if (r < 0)
                        return r;
        }

        r = act_restore_is_full(c, act, crec->original, &full);
        if (r < 0)
                return r;
        cg_now = hwloc_bitmap_dup(cs->cpus ?: crec->original);
        if (!cg_now)
                return -ENOMEM;
        act_and_online(c, cg_now);

        old_window = TAKE_PTR(crec->window);
        if (!full) {
                crec->window = hwloc_bitmap_dup(act->cpus);
                if (!crec->window) {
                        crec->window = TAKE_PTR(old_window);
                        return -ENOMEM;
                }
        }
        a->dirty = true;

        WindowRun w = {.inherited = old_window, .cg_now = cg_now, .lifting = full};
        r = window_apply(c, crec, cs, &w);
        if (r < 0)
                return r;
        c->rep.applied++;
        threads_window_done(c, cg, crec, act, old_window, &w);
        return 0;
}

int act_adopt_new_threads(ActCtx *c) {
        Actuator *a = c->a;
        int r;

        if (!act_threads_writable(a))
                return 0;
        for (size_t i = 0; i < a->n_owned; i++) {
                ActCgroup *crec = &a->owned[i];
                const CgroupSample *cs;

                if (!emulates_window(crec))
                        continue;
                cs = act_snap_cgroup(c->snap, crec->name);
                if (!cs)
                        continue;
                WindowRun w = {.inherited = crec->window, .cg_now = crec->original, .adopt_only = true};
                r = window_apply(c, crec, cs, &w);
                if (r < 0)
                        return r;
        }
        return 0;
}

int act_adopt_thread(Actuator *a, const ActCgroup *crec, pid_t tid) {
        _cleanup_cpuset_ CpuSet before = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        uint64_t starttime;
        ActThread *t;
        int r;

        r = act_thread_read_starttime(a->root, tid, &starttime);
        if (r < 0)
                return r == -ESRCH ? 0 : r;
        if (act_hands_off_find(a, crec->name, tid, starttime))
                return 0;
        t = actuator_find_thread(a, tid);
        if (t) {
                if (t->starttime == starttime)
                        return 0;
                actuator_forget_thread(a, tid);
        }

        r = thread_record(a, crec->name, tid, starttime, crec->original, crec->window, crec->original, &t);
        if (r < 0)
                return r == -ESRCH ? 0 : r;
        before = hwloc_bitmap_dup(t->last_set);
        r = thread_intend(a, t, crec, NULL, NULL);
        if (r >= 0)
                r = act_save_state(a);
        if (r >= 0)
                r = thread_apply_mask(a, t, crec, NULL);
        if (r < 0) {
                actuator_forget_thread(a, tid);
                if (r == -ESRCH)
                        return 0;
                if (act_is_eperm(r)) {
                        log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                                   "cgroup %s tid %d: not permitted to change its CPUs (%s); leaving it "
                                   "unmanaged",
                                   crec->name, (int) tid, strerror(-r));
                        return act_hands_off_add(a, crec->name, tid, starttime);
                }
                return log_warning_errno(
                        r, "cgroup %s tid %d: cannot apply the cgroup's CPUs %s to the new thread",
                        crec->name, (int) tid, cpuset_to_string(crec->window, b1, sizeof(b1)));
        }
        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION,
                   "cgroup %s tid %d: CPUs %s -> %s, a new thread joins the cgroup's window", crec->name,
                   (int) tid, cpuset_to_string(before, b1, sizeof(b1)),
                   cpuset_to_string(t->last_set, b2, sizeof(b2)));
        return 1;
}

/* ---- give back ---- */

/* What the thread has now, if that is still steerd's: what it set last,
 * what it was about to set when a predecessor died, or (a change that never
 * happened) the original. 1 with it; 0 when there is nothing to give back
 * (gone, someone else's: logged); < 0 when it cannot be read (kept). */
static int thread_still_steerds(const ActCtx *c, const ActThread *t, CpuSet *ret_cur) {
        _cleanup_cpuset_ CpuSet cur = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        r = act_thread_check_identity(c->a, t->tid, t->starttime);
        if (r == 0)
                r = act_aff_get(c->a, t->tid, &cur);
        if (r == -ESRCH) {
                log_debug(
                        "cgroup %s tid %d: the thread is gone (or the tid was reused); nothing to give back",
                        t->cgroup, (int) t->tid);
                return 0;
        }
        if (r < 0)
                return log_warning_errno(r,
                                         "cgroup %s tid %d: cannot read the thread's mask; kept to be "
                                         "given back later",
                                         t->cgroup, (int) t->tid);
        if (!act_cpuset_equal_on(cur, t->last_set, c->online) &&
            !(t->pending && act_cpuset_equal_on(cur, t->pending, c->online)) &&
            !act_cpuset_equal_on(cur, t->original, c->online)) {
                log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                           "cgroup %s tid %d: CPUs are %s, steerd had set %s: someone else changed them; "
                           "left as they are",
                           t->cgroup, (int) t->tid, cpuset_to_string(cur, b1, sizeof(b1)),
                           cpuset_to_string(t->last_set, b2, sizeof(b2)));
                return 0;
        }
        *ret_cur = TAKE_PTR(cur);
        return 1;
}

int act_release_thread(ActCtx *c, ActThread *t) {
        Actuator *a = c->a;
        _cleanup_cpuset_ CpuSet cur = NULL, got = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        pid_t tid = t->tid;
        int r;

        if (!act_threads_writable(a)) {
                log_notice(
                        "cgroup %s tid %d: the root %s is not the host's: the thread's mask is not restored",
                        t->cgroup, (int) tid, a->root->path);
                return 0;
        }
        r = thread_still_steerds(c, t, &cur);
        if (r <= 0)
                return r;

        if (!t->original_full) {
                r = act_aff_set(a, tid, t->original);
                if (r == -EINVAL)
                        /* Nothing of the original is left in the cgroup. */
                        r = act_aff_set_all(a, tid);
        } else
                r = act_aff_set_all(a, tid);
        if (r >= 0)
                r = act_aff_get(a, tid, &got);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return log_struct_errno(LOG_WARNING, r, STEERD_MESSAGE_RESTORE,
                                        "cgroup %s tid %d: giving back CPUs %s failed; kept to be given "
                                        "back later",
                                        t->cgroup, (int) tid, cpuset_to_string(t->original, b1, sizeof(b1)));
        log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE, "cgroup %s tid %d: CPUs %s -> %s, given back",
                   t->cgroup, (int) tid, cpuset_to_string(cur, b1, sizeof(b1)),
                   cpuset_to_string(got, b2, sizeof(b2)));
        /* A mask of its own that the window left no room for (EINVAL) is
         * set once the cgroup's CPUs are given back (release_one()). */
        return t->original_full ? 0 : 1;
}

int actuator_adopt_child(Actuator *a, const char *cgroup, pid_t child_tid) {
        _cleanup_cpuset_ CpuSet cur = NULL, orig = NULL, request = NULL;
        const ActThread *p = NULL;
        char b[CPUSET_STRLEN];
        uint64_t starttime;
        bool full;
        int r;

        if (!a || !cgroup || child_tid <= 0)
                return -EINVAL;
        if (!act_threads_writable(a) || actuator_find_thread(a, child_tid))
                return 0;
        r = act_thread_read_starttime(a->root, child_tid, &starttime);
        if (r >= 0)
                r = act_aff_get(a, child_tid, &cur);
        if (r < 0)
                return r == -ESRCH || r == -ENOENT ? 0 : r;
        /* The kernel does not say which thread created a thread (the proc
         * connector names the process's parent). A new thread whose mask is
         * exactly a pin steerd holds on a thread of the same cgroup inherited
         * it from that thread: threads of one group pinned alike had the same
         * mask before, so its original is the one to give back. */
        for (size_t i = 0; i < a->n_threads && !p; i++) {
                const ActThread *t = &a->threads[i];
                if (t->request && streq(t->cgroup, cgroup) && hwloc_bitmap_isequal(cur, t->last_set))
                        p = t;
        }
        if (!p)
                return 0; /* no pin of steerd's: the thread's mask is its own */
        if ((r = act_dup_set(p->original, &orig)) < 0 || (r = act_dup_set(p->request, &request)) < 0)
                return r;
        full = p->original_full;

        /* The child inherited steerd's pin from its creator: it is steerd's to
         * give back, to what the creator had before steerd. */
        ActThread t = {
                .tid = child_tid,
                .starttime = starttime,
                .cgroup = strdup(p->cgroup),
                .original = TAKE_PTR(orig),
                .original_full = full,
                .request = TAKE_PTR(request),
                .last_set = TAKE_PTR(cur),
        };
        if (!t.cgroup) {
                act_thread_done(&t);
                return -ENOMEM;
        }
        r = actuator_add_thread(a, &t);
        if (r < 0) {
                act_thread_done(&t);
                return r;
        }
        const ActThread *n = actuator_find_thread(a, child_tid);
        log_struct(LOG_DEBUG, STEERD_MESSAGE_ACTION,
                   "cgroup %s tid %d: born with steerd's pin %s; recorded to be given back", n->cgroup,
                   (int) child_tid, cpuset_to_string(n->last_set, b, sizeof(b)));
        act_save_state(a);
        return 1;
}
