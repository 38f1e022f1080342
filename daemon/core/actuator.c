/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>

#include "actuator-internal.h"

/* How the kernel composes masks (verified on 6.18, see the comment at
 * cgroup_fixup_threads()): a thread's affinity is what it asked for with
 * sched_setaffinity() intersected with its cpuset, or the cpuset's CPUs when
 * that intersection is empty. The threads backend emulates exactly that for
 * its "window", so that the backends behave alike. */

static const char *const backend_table[_ACTUATOR_BACKEND_MAX] = {
        [ACTUATOR_BACKEND_THREADS] = "threads",
        [ACTUATOR_BACKEND_CPUSET] = "cpuset",
        [ACTUATOR_BACKEND_SYSTEMD] = "systemd",
};

const char *actuator_backend_to_string(ActuatorBackend b) {
        if (b < 0 || b >= _ACTUATOR_BACKEND_MAX)
                return NULL;
        return backend_table[b];
}

void actuator_report_done(ActuatorReport *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_let_go; i++)
                free(r->let_go[i].cgroup);
        free(r->let_go);
        *r = (ActuatorReport){};
}

static int report_let_go(ActuatorReport *r, const char *cgroup, pid_t tid, uint64_t starttime) {
        LetGo *l = reallocarray(r->let_go, r->n_let_go + 1, sizeof(LetGo));
        if (!l)
                return -ENOMEM;
        r->let_go = l;
        char *c = strdup(cgroup);
        if (!c)
                return -ENOMEM;
        r->let_go[r->n_let_go++] = (LetGo){.cgroup = c, .tid = tid, .starttime = starttime};
        return 0;
}

bool act_cpuset_equal_on(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b, hwloc_const_bitmap_t online) {
        if (!a || !b)
                return a == b;
        if (hwloc_bitmap_isequal(a, b))
                return true;
        if (!online)
                return false;
        /* Offline CPUs do not count: the kernel reports them in some masks
         * and not in others, and a hotplug is nobody's change of a mask. */
        _cleanup_cpuset_ CpuSet x = hwloc_bitmap_alloc(), y = hwloc_bitmap_alloc();
        if (!x || !y)
                return false;
        hwloc_bitmap_and(x, a, online);
        hwloc_bitmap_and(y, b, online);
        return hwloc_bitmap_isequal(x, y);
}

static int dup_set(hwloc_const_bitmap_t s, CpuSet *ret) {
        CpuSet d = s ? hwloc_bitmap_dup(s) : NULL;
        if (s && !d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

/* ---- bookkeeping ---- */

void act_thread_done(ActThread *t) {
        free(t->cgroup);
        hwloc_bitmap_free(t->original);
        hwloc_bitmap_free(t->request);
        hwloc_bitmap_free(t->last_set);
        *t = (ActThread){};
}

void act_cgroup_done(ActCgroup *c) {
        free(c->name);
        free(c->dir);
        free(c->unit);
        free(c->original_text);
        hwloc_bitmap_free(c->original);
        hwloc_bitmap_free(c->window);
        *c = (ActCgroup){};
}

static size_t thread_index(const Actuator *a, pid_t tid, bool *found) {
        size_t lo = 0, hi = a->n_threads;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (a->threads[mid].tid == tid) {
                        *found = true;
                        return mid;
                }
                if (a->threads[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = false;
        return lo;
}

ActThread *actuator_find_thread(const Actuator *a, pid_t tid) {
        bool found;
        size_t i = thread_index(a, tid, &found);
        return found ? &a->threads[i] : NULL;
}

int actuator_add_thread(Actuator *a, const ActThread *t) {
        bool found;
        size_t i = thread_index(a, t->tid, &found);

        if (found) {
                act_thread_done(&a->threads[i]);
                a->threads[i] = *t;
        } else {
                ActThread *n = reallocarray(a->threads, a->n_threads + 1, sizeof(ActThread));
                if (!n)
                        return -ENOMEM;
                a->threads = n;
                memmove(&a->threads[i + 1], &a->threads[i], (a->n_threads - i) * sizeof(ActThread));
                a->threads[i] = *t;
                a->n_threads++;
        }
        a->dirty = true;
        return 0;
}

void actuator_forget_thread(Actuator *a, pid_t tid) {
        bool found;
        size_t i = thread_index(a, tid, &found);

        if (!found)
                return;
        act_thread_done(&a->threads[i]);
        memmove(&a->threads[i], &a->threads[i + 1], (a->n_threads - i - 1) * sizeof(ActThread));
        a->n_threads--;
        a->dirty = true;
}

ActCgroup *actuator_find_owned(const Actuator *a, const char *name) {
        for (size_t i = 0; i < a->n_owned; i++)
                if (streq(a->owned[i].name, name))
                        return &a->owned[i];
        return NULL;
}

int actuator_add_owned(Actuator *a, const ActCgroup *c) {
        ActCgroup *n = reallocarray(a->owned, a->n_owned + 1, sizeof(ActCgroup));
        if (!n)
                return -ENOMEM;
        a->owned = n;
        a->owned[a->n_owned++] = *c;
        a->dirty = true;
        return 0;
}

void actuator_forget_owned(Actuator *a, const char *name) {
        for (size_t i = 0; i < a->n_owned; i++)
                if (streq(a->owned[i].name, name)) {
                        act_cgroup_done(&a->owned[i]);
                        memmove(&a->owned[i], &a->owned[i + 1], (a->n_owned - i - 1) * sizeof(ActCgroup));
                        a->n_owned--;
                        a->dirty = true;
                        return;
                }
}

static HandsOff *hands_off_find(const Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime) {
        for (size_t i = 0; i < a->n_hands_off; i++) {
                HandsOff *h = &a->hands_off[i];
                if (h->tid == tid && streq(h->cgroup, cgroup) && (tid == 0 || h->starttime == starttime))
                        return h;
        }
        return NULL;
}

static int hands_off_add(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime) {
        if (hands_off_find(a, cgroup, tid, starttime))
                return 0;
        HandsOff *n = reallocarray(a->hands_off, a->n_hands_off + 1, sizeof(HandsOff));
        if (!n)
                return -ENOMEM;
        a->hands_off = n;
        char *c = strdup(cgroup);
        if (!c)
                return -ENOMEM;
        a->hands_off[a->n_hands_off++] = (HandsOff){.cgroup = c, .tid = tid, .starttime = starttime};
        return 0;
}

static void hands_off_remove_at(Actuator *a, size_t i) {
        free(a->hands_off[i].cgroup);
        memmove(&a->hands_off[i], &a->hands_off[i + 1], (a->n_hands_off - i - 1) * sizeof(HandsOff));
        a->n_hands_off--;
}

static void hands_off_clear_cgroup(Actuator *a, const char *cgroup) {
        for (size_t i = a->n_hands_off; i > 0; i--)
                if (streq(a->hands_off[i - 1].cgroup, cgroup))
                        hands_off_remove_at(a, i - 1);
}

static const OptedIn *opted_in_find(const Actuator *a, const char *name) {
        for (size_t i = 0; i < a->n_cgroups; i++)
                if (streq(a->cgroups[i].name, name))
                        return &a->cgroups[i];
        return NULL;
}

static const CgroupSample *snap_cgroup(const Snapshot *snap, const char *name) {
        if (!snap)
                return NULL;
        for (size_t i = 0; i < snap->n_cgroups; i++)
                if (snap->cgroups[i].path && streq(snap->cgroups[i].path, name))
                        return &snap->cgroups[i];
        return NULL;
}

static const ThreadSample *cgroup_thread(const CgroupSample *cs, pid_t tid) {
        if (!cs)
                return NULL;
        for (size_t i = 0; i < cs->n_threads; i++)
                if (cs->threads[i].tid == tid)
                        return &cs->threads[i];
        return NULL;
}

/* ---- life cycle ---- */

static bool root_is_host(const RootDir *root) {
        struct stat a, b;
        if (fstat(root->fd, &a) < 0 || stat("/", &b) < 0)
                return false;
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int actuator_new(const RootDir *root, const char *state_path, sd_bus *bus, Actuator **ret) {
        _cleanup_(actuator_freep) Actuator *a = NULL;

        if (!root || !ret)
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->root = root;
        a->live = root_is_host(root);
        if (state_path && !(a->state_path = strdup(state_path)))
                return -ENOMEM;
        a->bus = bus ? sd_bus_ref(bus) : NULL;
        if (act_affinity_probe_bytes(&a->affinity_bytes) < 0)
                a->affinity_bytes = CPU_SETSIZE / 8;

        *ret = TAKE_PTR(a);
        return 0;
}

Actuator *actuator_free(Actuator *a) {
        if (!a)
                return NULL;
        for (size_t i = 0; i < a->n_cgroups; i++) {
                free(a->cgroups[i].name);
                free(a->cgroups[i].dir);
        }
        free(a->cgroups);
        for (size_t i = 0; i < a->n_threads; i++)
                act_thread_done(&a->threads[i]);
        free(a->threads);
        for (size_t i = 0; i < a->n_owned; i++)
                act_cgroup_done(&a->owned[i]);
        free(a->owned);
        for (size_t i = 0; i < a->n_hands_off; i++)
                free(a->hands_off[i].cgroup);
        free(a->hands_off);
        free(a->state_path);
        sd_bus_unref(a->bus);
        free(a);
        return NULL;
}

int actuator_set_cgroups(Actuator *a, const char *const *names, const CgroupLocation *locs, size_t n) {
        OptedIn *list = NULL;
        size_t k = 0;
        int r = 0;

        if (!a || (n > 0 && (!names || !locs)))
                return -EINVAL;
        list = calloc(n + 1, sizeof(OptedIn));
        if (!list)
                return -ENOMEM;
        for (; k < n; k++) {
                if (!names[k] || !locs[k].dir) {
                        r = -EINVAL;
                        break;
                }
                list[k] = (OptedIn){.name = strdup(names[k]), .dir = strdup(locs[k].dir), .v2 = locs[k].v2};
                if (!list[k].name || !list[k].dir) {
                        k++;
                        r = -ENOMEM;
                        break;
                }
        }
        if (r < 0) {
                for (size_t i = 0; i < k; i++) {
                        free(list[i].name);
                        free(list[i].dir);
                }
                free(list);
                return r;
        }
        for (size_t i = 0; i < a->n_cgroups; i++) {
                free(a->cgroups[i].name);
                free(a->cgroups[i].dir);
        }
        free(a->cgroups);
        a->cgroups = list;
        a->n_cgroups = n;
        return 0;
}

void actuator_counts(const Actuator *a, size_t *ret_threads, size_t *ret_cgroups) {
        if (ret_threads)
                *ret_threads = a ? a->n_threads : 0;
        if (ret_cgroups)
                *ret_cgroups = a ? a->n_owned : 0;
}

hwloc_const_bitmap_t actuator_cgroup_original(const Actuator *a, const char *cgroup) {
        const ActCgroup *c;

        if (!a || !cgroup)
                return NULL;
        c = actuator_find_owned(a, cgroup);
        /* The threads backend leaves the cgroup's own CPUs alone: what the
         * sampler reads there is still the original. */
        if (!c || c->backend == ACTUATOR_BACKEND_THREADS)
                return NULL;
        return c->original;
}

int actuator_choose_backend(const Actuator *a, const CgroupLocation *loc, ActuatorBackend *ret) {
        if (!a || !loc || !loc->dir || !ret)
                return -EINVAL;
        return act_cgroup_choose_backend(a->root, a->live, a->bus, loc->dir, loc->v2, ret);
}

/* ---- one apply / check ---- */

typedef struct Ctx {
        Actuator *a;
        const Snapshot *snap;
        CpuSet online; /* NULL: unknown; masks are then compared as they are */
        ActuatorReport rep;
} Ctx;

static void ctx_done(Ctx *c) {
        hwloc_bitmap_free(c->online);
        actuator_report_done(&c->rep);
}

static int ctx_init(Ctx *c, Actuator *a, const Snapshot *snap) {
        *c = (Ctx){.a = a, .snap = snap};
        if (snap && snap->n_cpus > 0) {
                int r = snapshot_online_cpus(snap, &c->online);
                if (r < 0)
                        return r;
                if (hwloc_bitmap_iszero(c->online)) {
                        hwloc_bitmap_free(c->online);
                        c->online = NULL;
                }
        }
        if (!c->online)
                (void) act_read_online_cpus(a->root, &c->online);
        return 0;
}

static void and_online(const Ctx *c, CpuSet s) {
        if (c->online)
                hwloc_bitmap_and(s, s, c->online);
}

/* The kernel's composition: base ∩ cgroup, or the cgroup's CPUs when that is
 * empty. base NULL = every CPU. */
static int compose(hwloc_const_bitmap_t base, hwloc_const_bitmap_t cg, CpuSet *ret) {
        CpuSet s = hwloc_bitmap_dup(cg);
        if (!s)
                return -ENOMEM;
        if (base) {
                hwloc_bitmap_and(s, s, base);
                if (hwloc_bitmap_iszero(s))
                        hwloc_bitmap_copy(s, cg);
        }
        *ret = s;
        return 0;
}

/* The CPUs a thread of the cgroup may have right now, as far as steerd knows. */
static int cgroup_cpus_now(const Ctx *c, const char *dir, bool v2, const CgroupSample *cs,
                           const ActCgroup *crec, CpuSet *ret) {
        CpuSet s = NULL;
        int r;

        if (crec && crec->window)
                s = hwloc_bitmap_dup(crec->window);
        else if (cs && cs->cpus)
                s = hwloc_bitmap_dup(cs->cpus);
        else {
                r = dir ? act_cgroup_effective(c->a->root, dir, v2, &s) : -ENOENT;
                if (r < 0) {
                        /* v2 without the cpuset controller: every online CPU. */
                        if (!c->online)
                                return r;
                        s = hwloc_bitmap_dup(c->online);
                }
        }
        if (!s)
                return -ENOMEM;
        and_online(c, s);
        *ret = s;
        return 0;
}

static void log_refused(Actuator *a, HandsOff *h, const Action *act) {
        if (h->logged)
                return;
        h->logged = true;
        if (h->tid == 0)
                log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                           "cgroup %s: refusing %s %s: steerd let go of its CPUs; it is not touched again "
                           "until it is opted in afresh",
                           act->cgroup, action_policy_to_string(act->policy),
                           action_kind_to_string(act->kind));
        else
                log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                           "cgroup %s tid %d: refusing %s %s: steerd let go of this thread; it is not "
                           "touched again until its cgroup is opted in afresh",
                           act->cgroup, (int) act->tid, action_policy_to_string(act->policy),
                           action_kind_to_string(act->kind));
}

/* EPERM/EACCES: the kernel (or systemd) will not let steerd do it. Logged
 * once (the mark keeps steerd from trying again), reported as let go. */
static int mark_unmanaged(Ctx *c, const char *cgroup, pid_t tid, uint64_t starttime, int error) {
        int r;

        if (tid > 0)
                log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                           "cgroup %s tid %d: not permitted to change its CPUs (%s); leaving it unmanaged",
                           cgroup, (int) tid, strerror(-error));
        else
                log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                           "cgroup %s: not permitted to change its CPUs (%s); leaving it unmanaged", cgroup,
                           strerror(-error));
        r = hands_off_add(c->a, cgroup, tid, starttime);
        if (r < 0)
                return r;
        return report_let_go(&c->rep, cgroup, tid, starttime);
}

static bool is_einval(int r) {
        /* ERANGE: a CPU id beyond what the kernel knows (cpuset.cpus). */
        return r == -EINVAL || r == -ERANGE;
}

static bool is_eperm(int r) {
        return r == -EPERM || r == -EACCES;
}

/* ---- threads ---- */

/* Set a thread's mask: its own request (or its original), within the
 * threads backend's window when there is one; the cpuset backends leave the
 * composition to the kernel. Reads back what the thread got. */
static int thread_apply_mask(Actuator *a, ActThread *t, const ActCgroup *crec,
                             hwloc_const_bitmap_t request) {
        _cleanup_cpuset_ CpuSet req = NULL, got = NULL;
        hwloc_const_bitmap_t base;
        int r;

        r = dup_set(request, &req);
        if (r < 0)
                return r;
        base = req ?: (t->original_full ? NULL : t->original);

        if (crec && crec->backend == ACTUATOR_BACKEND_THREADS && crec->window) {
                _cleanup_cpuset_ CpuSet m = NULL;
                /* A request outside the window fails as sched_setaffinity()
                 * fails for one outside the cpuset. */
                if (req && !hwloc_bitmap_intersects(req, crec->window))
                        return -EINVAL;
                r = compose(base, crec->window, &m);
                if (r < 0)
                        return r;
                r = act_thread_set_affinity(t->tid, m);
        } else if (base) {
                r = act_thread_set_affinity(t->tid, base);
                if (r == -EINVAL && !req)
                        /* The original lies outside what the cgroup allows
                         * now: let the kernel give it the cgroup's CPUs. */
                        r = act_thread_set_affinity_all(t->tid, a->affinity_bytes);
        } else
                r = act_thread_set_affinity_all(t->tid, a->affinity_bytes);
        if (r < 0)
                return r;

        r = act_thread_get_affinity(t->tid, &got);
        if (r < 0)
                return r;
        hwloc_bitmap_free(t->last_set);
        t->last_set = TAKE_PTR(got);
        hwloc_bitmap_free(t->request);
        t->request = TAKE_PTR(req);
        a->dirty = true;
        return 0;
}

/* Record a thread before steerd's first change. cg_now: the CPUs its cgroup
 * gives it now; inherited: a threads-backend window the thread's creator may
 * have passed on, with cg_original, the cgroup's CPUs before it (NULL:
 * none). */
static int thread_record(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime,
                         hwloc_const_bitmap_t cg_now, hwloc_const_bitmap_t inherited,
                         hwloc_const_bitmap_t cg_original, ActThread *ret) {
        _cleanup_cpuset_ CpuSet cur = NULL, orig = NULL;
        bool full;
        int r;

        r = act_thread_get_affinity(tid, &cur);
        if (r < 0)
                return r;
        if (inherited && cg_original && hwloc_bitmap_isincluded(cur, inherited)) {
                /* A thread born inside steerd's window inherited the window
                 * from its creator: what it would have had is the cgroup's. */
                r = dup_set(cg_original, &orig);
                full = true;
        } else {
                r = dup_set(cur, &orig);
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
        };
        if (!t.cgroup) {
                act_thread_done(&t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

/* Live identity: the tid still names the thread that was sampled. */
static int thread_check_identity(const Actuator *a, pid_t tid, uint64_t starttime) {
        uint64_t now;
        int r = act_thread_read_starttime(a->root, tid, &now);
        if (r < 0)
                return r;
        return now == starttime ? 0 : -ESRCH;
}

static bool thread_restore_is_full(const ActThread *t, hwloc_const_bitmap_t cpus,
                                   hwloc_const_bitmap_t cg_now, hwloc_const_bitmap_t online) {
        _cleanup_cpuset_ CpuSet want = NULL;

        /* The engine restores to what the thread had before steerd, within
         * what its cgroup allows now: anything at least that wide means "no
         * mask of steerd's own", and the exact original is what goes back. */
        if (compose(t->original_full ? NULL : t->original, cg_now, &want) < 0)
                return false;
        if (online)
                hwloc_bitmap_and(want, want, online);
        return hwloc_bitmap_isincluded(want, cpus);
}

static void thread_vanished(Ctx *c, const char *cgroup, pid_t tid) {
        log_debug("cgroup %s tid %d: the thread is gone; dropped", cgroup, (int) tid);
        actuator_forget_thread(c->a, tid);
        c->rep.vanished++;
}

static bool thread_layer_held(const ActThread *t, const ActCgroup *crec) {
        return t->request || (crec && crec->backend == ACTUATOR_BACKEND_THREADS && crec->window);
}

static int apply_thread_action(Ctx *c, const OptedIn *cg, const CgroupSample *cs, const Action *act) {
        Actuator *a = c->a;
        _cleanup_cpuset_ CpuSet cg_now = NULL, before = NULL;
        hwloc_const_bitmap_t request;
        const ThreadSample *ts;
        ActThread fresh = {}, *t;
        ActCgroup *crec;
        bool is_fresh = false;
        HandsOff *h;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        if (!a->live) {
                if (!a->fixture_threads_logged)
                        log_notice("cgroup %s tid %d: the root %s is not the host's: thread masks are not "
                                   "changed",
                                   act->cgroup, (int) act->tid, a->root->path);
                a->fixture_threads_logged = true;
                c->rep.failed++;
                return 0;
        }

        ts = cgroup_thread(cs, act->tid);
        if (!ts || (act->starttime != 0 && ts->starttime != act->starttime)) {
                log_debug("cgroup %s tid %d: not in the cgroup's snapshot; %s %s dropped", act->cgroup,
                          (int) act->tid, action_policy_to_string(act->policy),
                          action_kind_to_string(act->kind));
                c->rep.vanished++;
                return 0;
        }
        h = hands_off_find(a, cg->name, ts->tid, ts->starttime);
        if (h) {
                log_refused(a, h, act);
                c->rep.failed++;
                return 0;
        }
        r = thread_check_identity(a, ts->tid, ts->starttime);
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

        crec = actuator_find_owned(a, cg->name);
        r = cgroup_cpus_now(c, cg->dir, cg->v2, cs, crec, &cg_now);
        if (r < 0)
                return r;

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
                r = thread_record(a, cg->name, ts->tid, ts->starttime, cg_now, NULL, NULL, &fresh);
                if (r == -ESRCH) {
                        thread_vanished(c, cg->name, ts->tid);
                        return 0;
                }
                if (r < 0)
                        return r;
                t = &fresh;
                is_fresh = true;
        }
        r = dup_set(t->last_set, &before);
        if (r < 0)
                goto finish;

        request = act->kind == ACTION_RESTORE && thread_restore_is_full(t, act->cpus, cg_now, c->online)
                          ? NULL
                          : act->cpus;
        r = thread_apply_mask(a, t, crec, request);
        if (is_einval(r) && request) {
                /* The mask is no longer valid (hotplug, a cpuset that shrank):
                 * what is left of it within the cgroup, once. */
                _cleanup_cpuset_ CpuSet again = hwloc_bitmap_dup(request);
                if (!again) {
                        r = -ENOMEM;
                        goto finish;
                }
                hwloc_bitmap_and(again, again, cg_now);
                and_online(c, again);
                if (hwloc_bitmap_iszero(again) || hwloc_bitmap_isequal(again, request))
                        log_warning("cgroup %s tid %d: CPUs %s are not valid for the thread and nothing of "
                                    "them is left within %s; %s %s dropped",
                                    cg->name, (int) t->tid, cpuset_to_string(request, b1, sizeof(b1)),
                                    cpuset_to_string(cg_now, b2, sizeof(b2)),
                                    action_policy_to_string(act->policy), action_kind_to_string(act->kind));
                else
                        r = thread_apply_mask(a, t, crec, again);
        }

        if (r == -ESRCH) {
                if (is_fresh)
                        act_thread_done(&fresh);
                thread_vanished(c, cg->name, ts->tid);
                return 0;
        }
        if (is_eperm(r)) {
                if (is_fresh)
                        act_thread_done(&fresh);
                else
                        actuator_forget_thread(a, ts->tid);
                c->rep.failed++;
                return mark_unmanaged(c, cg->name, ts->tid, ts->starttime, r);
        }
        if (r < 0) {
                if (!is_einval(r))
                        log_warning_errno(r, "cgroup %s tid %d: setting CPUs %s failed", cg->name,
                                          (int) ts->tid, cpuset_to_string(act->cpus, b1, sizeof(b1)));
                c->rep.failed++;
                r = 0;
                goto finish;
        }

        c->rep.applied++;
        if (!thread_layer_held(t, crec)) {
                log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE,
                           "cgroup %s tid %d: CPUs %s -> %s, given back (%s %s: %s)", cg->name, (int) t->tid,
                           cpuset_to_string(before, b1, sizeof(b1)),
                           cpuset_to_string(t->last_set, b2, sizeof(b2)),
                           action_policy_to_string(act->policy), action_kind_to_string(act->kind),
                           act->reason ?: "");
                if (is_fresh)
                        act_thread_done(&fresh);
                else
                        actuator_forget_thread(a, t->tid);
                return 0;
        }
        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION, "cgroup %s tid %d: CPUs %s -> %s (%s %s: %s)", cg->name,
                   (int) t->tid, cpuset_to_string(before, b1, sizeof(b1)),
                   cpuset_to_string(t->last_set, b2, sizeof(b2)), action_policy_to_string(act->policy),
                   action_kind_to_string(act->kind), act->reason ?: "");
        if (is_fresh) {
                r = actuator_add_thread(a, &fresh);
                if (r < 0)
                        act_thread_done(&fresh);
                return r;
        }
        return 0;

finish:
        if (is_fresh)
                act_thread_done(&fresh);
        return r;
}

/* Adopt a thread of a threads-backend cgroup into its window. inherited: the
 * window its creator may have passed on to it (NULL: none). starttime 0: read
 * it. 1 if its mask was changed, 0 if there was nothing to do. */
static int adopt_thread(Actuator *a, const ActCgroup *crec, hwloc_const_bitmap_t inherited, pid_t tid,
                        uint64_t starttime, ActuatorReport *rep) {
        ActThread t = {};
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        if (starttime == 0) {
                r = act_thread_read_starttime(a->root, tid, &starttime);
                if (r < 0)
                        return r == -ESRCH ? 0 : r;
        } else {
                r = thread_check_identity(a, tid, starttime);
                if (r < 0)
                        return r == -ESRCH ? 0 : r;
        }
        if (hands_off_find(a, crec->name, tid, starttime))
                return 0;
        ActThread *old = actuator_find_thread(a, tid);
        if (old) {
                if (old->starttime == starttime)
                        return 0;
                actuator_forget_thread(a, tid);
        }

        r = thread_record(a, crec->name, tid, starttime, crec->original, inherited, crec->original, &t);
        if (r < 0)
                return r == -ESRCH ? 0 : r;
        r = thread_apply_mask(a, &t, crec, NULL);
        if (r < 0) {
                act_thread_done(&t);
                if (r == -ESRCH)
                        return 0;
                if (is_eperm(r)) {
                        log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                                   "cgroup %s tid %d: not permitted to change its CPUs (%s); leaving it "
                                   "unmanaged",
                                   crec->name, (int) tid, strerror(-r));
                        r = hands_off_add(a, crec->name, tid, starttime);
                        if (r < 0 || !rep)
                                return r;
                        return report_let_go(rep, crec->name, tid, starttime);
                }
                return log_warning_errno(
                        r, "cgroup %s tid %d: cannot apply the cgroup's CPUs %s to the new thread",
                        crec->name, (int) tid, cpuset_to_string(crec->window, b1, sizeof(b1)));
        }
        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION,
                   "cgroup %s tid %d: CPUs %s -> %s, joins the cgroup's window", crec->name, (int) tid,
                   cpuset_to_string(t.original, b1, sizeof(b1)),
                   cpuset_to_string(t.last_set, b2, sizeof(b2)));
        r = actuator_add_thread(a, &t);
        if (r < 0) {
                act_thread_done(&t);
                return r;
        }
        return 1;
}

/* ---- cgroups ---- */

/* After a cgroup's CPUs changed under steerd's threads, bring their records
 * in line with what the kernel made of them.
 *
 * Verified on this project's host (kernel 6.18, cgroup v1 cpuset): writing
 * cpuset.cpus does NOT reset every task to the new set. Since Linux 6.2
 * ("sched: Always preserve the user requested cpumask") the kernel keeps what
 * a thread asked for with sched_setaffinity() and gives it that ∩ the new
 * CPUs, or the new CPUs when the intersection is empty; when the set widens
 * again the thread gets its own mask back. Measured: pin {1}, write "1",
 * write "0-1" -> {1}; pin {0}, write "1" -> {1}, write "0-1" -> {0} again.
 * Attaching a pinned thread to a cgroup keeps its pin too. Older kernels
 * reset every task to the cpuset's CPUs; for them the thread's own mask is
 * set again when it still fits. A mask that no longer fits at all is kept in
 * the record, not dropped: the kernel remembers it and brings it back when
 * the cgroup widens, and the record is what gives the original back. */
static int cgroup_fixup_threads(Ctx *c, const char *cgroup, hwloc_const_bitmap_t cg_cpus) {
        Actuator *a = c->a;
        const ActCgroup *crec = actuator_find_owned(a, cgroup);
        char b1[CPUSET_STRLEN];
        int r;

        if (!a->live)
                return 0;
        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                _cleanup_cpuset_ CpuSet cur = NULL, want = NULL;
                hwloc_const_bitmap_t base;

                if (!streq(t->cgroup, cgroup))
                        continue;
                r = act_thread_get_affinity(t->tid, &cur);
                if (r == -ESRCH) {
                        actuator_forget_thread(a, t->tid);
                        continue;
                }
                if (r < 0)
                        return r;
                if (crec && crec->backend == ACTUATOR_BACKEND_THREADS) {
                        hwloc_bitmap_free(t->last_set);
                        t->last_set = TAKE_PTR(cur);
                        continue;
                }
                base = t->request ?: (t->original_full ? NULL : t->original);
                if (base && cg_cpus && hwloc_bitmap_intersects(base, cg_cpus)) {
                        r = compose(base, cg_cpus, &want);
                        if (r < 0)
                                return r;
                        if (!act_cpuset_equal_on(cur, want, c->online)) {
                                log_debug("cgroup %s tid %d: the kernel reset the thread's mask to %s; "
                                          "setting it again",
                                          cgroup, (int) t->tid, cpuset_to_string(cur, b1, sizeof(b1)));
                                r = act_thread_set_affinity(t->tid, base);
                                if (r >= 0) {
                                        hwloc_bitmap_free(cur);
                                        cur = NULL;
                                        r = act_thread_get_affinity(t->tid, &cur);
                                }
                                if (r == -ESRCH) {
                                        actuator_forget_thread(a, t->tid);
                                        continue;
                                }
                                if (r < 0 || !cur)
                                        log_warning_errno(
                                                r, "cgroup %s tid %d: cannot set the thread's mask again",
                                                cgroup, (int) t->tid);
                        }
                }
                if (cur) {
                        hwloc_bitmap_free(t->last_set);
                        t->last_set = TAKE_PTR(cur);
                }
                a->dirty = true;
        }
        return 0;
}

static int release_thread(Ctx *c, ActThread *t);

/* The threads of a cgroup that is gone live on elsewhere (moved out before
 * it was removed): what is still steerd's is given back. */
static void release_cgroup_threads(Ctx *c, const char *cgroup) {
        Actuator *a = c->a;
        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                if (!streq(t->cgroup, cgroup))
                        continue;
                pid_t tid = t->tid;
                (void) release_thread(c, t);
                actuator_forget_thread(a, tid);
        }
}

static int cgroup_record(Ctx *c, const OptedIn *cg, const CgroupSample *cs, ActuatorBackend backend,
                         ActCgroup *ret) {
        Actuator *a = c->a;
        ActCgroup n = {.backend = backend, .v2 = cg->v2};
        int r;

        n.name = strdup(cg->name);
        n.dir = strdup(cg->dir);
        if (!n.name || !n.dir) {
                r = -ENOMEM;
                goto fail;
        }
        switch (backend) {
        case ACTUATOR_BACKEND_CPUSET:
                r = act_cgroup_read_cpus_text(a->root, cg->dir, &n.original_text);
                if (r < 0)
                        goto fail;
                break;
        case ACTUATOR_BACKEND_SYSTEMD: {
                _cleanup_cpuset_ CpuSet allowed = NULL;
                r = systemd_unit_from_cgroup(cg->dir, &n.unit);
                if (r < 0)
                        goto fail;
                r = systemd_get_allowed_cpus(a->bus, n.unit, &allowed);
                if (r < 0)
                        goto fail;
                r = cpuset_format(allowed, &n.original_text);
                if (r < 0)
                        goto fail;
                break;
        }
        default:
                break;
        }
        /* What the cgroup had: what the sampler reports as its "allowed"
         * while steerd holds it. */
        r = backend == ACTUATOR_BACKEND_THREADS
                    ? -ENOENT
                    : act_cgroup_effective(a->root, cg->dir, cg->v2, &n.original);
        if (r < 0) {
                if (cs && cs->cpus)
                        n.original = hwloc_bitmap_dup(cs->cpus);
                else if (c->online)
                        n.original = hwloc_bitmap_dup(c->online);
        }
        if (!n.original) {
                r = -ENOMEM;
                goto fail;
        }
        *ret = n;
        return 0;
fail:
        act_cgroup_done(&n);
        return r;
}

static int cgroup_write(Ctx *c, const ActCgroup *crec, const char *text) {
        if (crec->backend == ACTUATOR_BACKEND_SYSTEMD) {
                _cleanup_cpuset_ CpuSet s = NULL;
                int r = cpuset_parse(text, &s);
                if (r < 0)
                        return r;
                return systemd_set_allowed_cpus(c->a->bus, crec->unit, s);
        }
        return act_cgroup_write_cpus(c->a, crec->dir, text);
}

/* cgroup must not point into the record that is dropped. */
static void cgroup_gone(Ctx *c, const char *cgroup, const char *dir) {
        log_notice("cgroup %s (%s) is gone; what steerd held there is dropped", cgroup, dir);
        actuator_forget_owned(c->a, cgroup);
        release_cgroup_threads(c, cgroup);
}

/* cpuset and systemd backends: the cgroup's own CPUs. */
static int apply_cgroup_file(Ctx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                             ActuatorBackend backend, const Action *act) {
        Actuator *a = c->a;
        _cleanup_(act_cgroup_done) ActCgroup fresh = {};
        _cleanup_cpuset_ CpuSet parent = NULL, mask = NULL, orig_on = NULL;
        _cleanup_(freep) char *text = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        bool full;
        int r;

        if (!crec) {
                r = cgroup_record(c, cg, cs, backend, &fresh);
                if (r == -ENOENT) {
                        cgroup_gone(c, cg->name, cg->dir);
                        c->rep.vanished++;
                        return 0;
                }
                if (is_eperm(r)) {
                        c->rep.failed++;
                        return mark_unmanaged(c, cg->name, 0, 0, r);
                }
                if (r < 0) {
                        log_warning_errno(r, "cgroup %s: cannot read its CPUs before changing them",
                                          cg->name);
                        c->rep.failed++;
                        return 0;
                }
                crec = &fresh;
        }

        orig_on = hwloc_bitmap_dup(crec->original);
        if (!orig_on)
                return -ENOMEM;
        and_online(c, orig_on);
        full = act->kind == ACTION_RESTORE && hwloc_bitmap_isincluded(orig_on, act->cpus);

        if (full) {
                text = strdup(crec->original_text);
                if (!text)
                        return -ENOMEM;
                r = cgroup_write(c, crec, text);
        } else {
                /* Never more than the parent gives: the kernel refuses it on
                 * v1 and ignores it on v2. */
                r = act_cgroup_parent_effective(a->root, crec->dir, crec->v2, &parent);
                if (r < 0 && r != -ENOENT) {
                        log_warning_errno(r, "cgroup %s: cannot read its parent's effective CPUs", cg->name);
                        c->rep.failed++;
                        return 0;
                }
                mask = hwloc_bitmap_dup(act->cpus);
                if (!mask)
                        return -ENOMEM;
                if (parent)
                        hwloc_bitmap_and(mask, mask, parent);
                if (hwloc_bitmap_iszero(mask))
                        r = -EINVAL;
                else {
                        r = cpuset_format(mask, &text);
                        if (r < 0)
                                return r;
                        r = cgroup_write(c, crec, text);
                }
                if (is_einval(r)) {
                        /* Once more, with what is left of it within the
                         * parent (read afresh) and the online CPUs. */
                        _cleanup_cpuset_ CpuSet prev = mask;
                        hwloc_bitmap_free(parent);
                        parent = NULL;
                        (void) act_cgroup_parent_effective(a->root, crec->dir, crec->v2, &parent);
                        mask = hwloc_bitmap_dup(act->cpus);
                        if (!mask)
                                return -ENOMEM;
                        if (parent)
                                hwloc_bitmap_and(mask, mask, parent);
                        and_online(c, mask);
                        free(text);
                        text = NULL;
                        if (hwloc_bitmap_iszero(mask) || hwloc_bitmap_isequal(mask, prev))
                                log_warning("cgroup %s: nothing of CPUs %s is left within its parent's %s; "
                                            "%s %s dropped",
                                            cg->name, cpuset_to_string(act->cpus, b1, sizeof(b1)),
                                            cpuset_to_string(parent, b2, sizeof(b2)),
                                            action_policy_to_string(act->policy),
                                            action_kind_to_string(act->kind));
                        else {
                                r = cpuset_format(mask, &text);
                                if (r < 0)
                                        return r;
                                r = cgroup_write(c, crec, text);
                        }
                }
        }

        if (r == -ENOENT) {
                if (crec != &fresh)
                        cgroup_gone(c, cg->name, cg->dir);
                c->rep.vanished++;
                return 0;
        }
        if (is_eperm(r)) {
                if (crec != &fresh)
                        actuator_forget_owned(a, cg->name);
                c->rep.failed++;
                return mark_unmanaged(c, cg->name, 0, 0, r);
        }
        if (r < 0) {
                if (!is_einval(r))
                        log_warning_errno(r, "cgroup %s: writing CPUs '%s' (%s backend) failed", cg->name,
                                          text ?: "", actuator_backend_to_string(crec->backend));
                c->rep.failed++;
                return 0;
        }

        c->rep.applied++;
        a->dirty = true;
        if (full) {
                log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE,
                           "cgroup %s: CPUs %s -> '%s', given back (%s backend; %s %s: %s)", cg->name,
                           cpuset_to_string(crec->window, b1, sizeof(b1)), crec->original_text,
                           actuator_backend_to_string(crec->backend), action_policy_to_string(act->policy),
                           action_kind_to_string(act->kind), act->reason ?: "");
                _cleanup_cpuset_ CpuSet now = hwloc_bitmap_dup(crec->original);
                if (!now)
                        return -ENOMEM;
                if (crec != &fresh)
                        actuator_forget_owned(a, cg->name);
                return cgroup_fixup_threads(c, cg->name, now);
        }

        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION, "cgroup %s: CPUs %s -> %s (%s backend; %s %s: %s)",
                   cg->name, cpuset_to_string(crec->window ?: crec->original, b1, sizeof(b1)),
                   cpuset_to_string(mask, b2, sizeof(b2)), actuator_backend_to_string(crec->backend),
                   action_policy_to_string(act->policy), action_kind_to_string(act->kind),
                   act->reason ?: "");
        hwloc_bitmap_free(crec->window);
        crec->window = TAKE_PTR(mask);
        if (crec == &fresh) {
                r = actuator_add_owned(a, &fresh);
                if (r < 0)
                        return r;
                fresh = (ActCgroup){};
                crec = actuator_find_owned(a, cg->name);
        }
        return cgroup_fixup_threads(c, cg->name, crec->window);
}

/* threads backend: every thread of the cgroup, composed with its own mask. */
static int apply_cgroup_threads(Ctx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                                const Action *act) {
        Actuator *a = c->a;
        _cleanup_(act_cgroup_done) ActCgroup fresh = {};
        _cleanup_cpuset_ CpuSet old_window = NULL, orig_on = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        size_t n_set = 0, n_failed = 0;
        bool full;
        int r;

        if (!a->live) {
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
                r = cgroup_record(c, cg, cs, ACTUATOR_BACKEND_THREADS, &fresh);
                if (r < 0)
                        return r;
                r = actuator_add_owned(a, &fresh);
                if (r < 0)
                        return r;
                fresh = (ActCgroup){};
                crec = actuator_find_owned(a, cg->name);
        }

        orig_on = hwloc_bitmap_dup(crec->original);
        if (!orig_on)
                return -ENOMEM;
        and_online(c, orig_on);
        full = act->kind == ACTION_RESTORE && hwloc_bitmap_isincluded(orig_on, act->cpus);

        old_window = crec->window;
        crec->window = NULL;
        if (!full) {
                crec->window = hwloc_bitmap_dup(act->cpus);
                if (!crec->window) {
                        crec->window = TAKE_PTR(old_window);
                        return -ENOMEM;
                }
        }
        a->dirty = true;

        for (size_t i = 0; i < cs->n_threads; i++) {
                const ThreadSample *ts = &cs->threads[i];
                ActThread *t;

                if (hands_off_find(a, cg->name, ts->tid, ts->starttime))
                        continue;
                t = actuator_find_thread(a, ts->tid);
                if (t && t->starttime != ts->starttime) {
                        actuator_forget_thread(a, ts->tid);
                        t = NULL;
                }
                if (!t) {
                        if (full)
                                continue; /* not steerd's */
                        r = adopt_thread(a, crec, old_window, ts->tid, ts->starttime, &c->rep);
                        if (r < 0)
                                n_failed++;
                        else if (r > 0)
                                n_set++;
                        continue;
                }
                r = thread_apply_mask(a, t, crec, t->request);
                if (r == -EINVAL && t->request)
                        /* Its own mask lies outside the new window: the
                         * window wins, as a cpuset would. */
                        r = thread_apply_mask(a, t, crec, NULL);
                if (r == -ESRCH) {
                        actuator_forget_thread(a, ts->tid);
                        continue;
                }
                if (is_eperm(r)) {
                        actuator_forget_thread(a, ts->tid);
                        r = mark_unmanaged(c, cg->name, ts->tid, ts->starttime, r);
                        if (r < 0)
                                return r;
                        n_failed++;
                        continue;
                }
                if (r < 0) {
                        log_warning_errno(r, "cgroup %s tid %d: cannot apply the cgroup's CPUs", cg->name,
                                          (int) ts->tid);
                        n_failed++;
                        continue;
                }
                n_set++;
                if (full && !t->request)
                        actuator_forget_thread(a, ts->tid);
        }

        c->rep.applied++;
        if (full) {
                log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE,
                           "cgroup %s: window %s lifted from %zu threads, given back (threads backend; %s "
                           "%s: %s)",
                           cg->name, cpuset_to_string(old_window, b1, sizeof(b1)), n_set,
                           action_policy_to_string(act->policy), action_kind_to_string(act->kind),
                           act->reason ?: "");
                /* Threads that left the snapshot keep their records until released. */
                actuator_forget_owned(a, cg->name);
                return 0;
        }
        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION,
                   "cgroup %s: CPUs %s -> %s on %zu threads%s (threads backend; %s %s: %s)", cg->name,
                   cpuset_to_string(old_window ?: crec->original, b1, sizeof(b1)),
                   cpuset_to_string(crec->window, b2, sizeof(b2)), n_set,
                   n_failed > 0 ? ", some failed" : "", action_policy_to_string(act->policy),
                   action_kind_to_string(act->kind), act->reason ?: "");
        return 0;
}

static int apply_cgroup_action(Ctx *c, const OptedIn *cg, const CgroupSample *cs, const Action *act) {
        Actuator *a = c->a;
        ActuatorBackend backend;
        ActCgroup *crec;
        HandsOff *h;
        int r;

        h = hands_off_find(a, cg->name, 0, 0);
        if (h) {
                log_refused(a, h, act);
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
                        r = hands_off_add(a, cg->name, 0, 0);
                        if (r < 0)
                                return r;
                        return report_let_go(&c->rep, cg->name, 0, 0);
                }
                if (r < 0)
                        return r;
        }
        if (backend == ACTUATOR_BACKEND_THREADS)
                return apply_cgroup_threads(c, cg, cs, crec, act);
        return apply_cgroup_file(c, cg, cs, crec, backend, act);
}

/* New threads of a threads-backend window that the proc connector did not
 * report (or that came before it): the next tick picks them up. */
static int adopt_new_threads(Ctx *c) {
        Actuator *a = c->a;
        int r;

        if (!a->live)
                return 0;
        for (size_t i = 0; i < a->n_owned; i++) {
                const ActCgroup *crec = &a->owned[i];
                const CgroupSample *cs;

                if (crec->backend != ACTUATOR_BACKEND_THREADS || !crec->window)
                        continue;
                cs = snap_cgroup(c->snap, crec->name);
                if (!cs)
                        continue;
                for (size_t k = 0; k < cs->n_threads; k++) {
                        const ThreadSample *ts = &cs->threads[k];
                        const ActThread *t = actuator_find_thread(a, ts->tid);
                        if (t && t->starttime == ts->starttime)
                                continue;
                        /* adopt_thread() may grow a->threads, never a->owned. */
                        r = adopt_thread(a, crec, crec->window, ts->tid, ts->starttime, &c->rep);
                        if (r == -ENOMEM)
                                return r;
                }
        }
        return 0;
}

int actuator_apply(Actuator *a, const Snapshot *snap, const Plan *plan, ActuatorReport *ret) {
        _cleanup_(ctx_done) Ctx c = {};
        int r;

        if (!a || !snap || !plan || !ret)
                return -EINVAL;
        r = ctx_init(&c, a, snap);
        if (r < 0)
                return r;

        r = adopt_new_threads(&c);
        if (r < 0)
                return r;

        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *act = &plan->actions[i];
                const OptedIn *cg;
                const CgroupSample *cs;

                if (!act->cgroup || !act->cpus || hwloc_bitmap_iszero(act->cpus)) {
                        log_warning("cgroup %s%s%.0d: %s action without CPUs; dropped",
                                    act->cgroup ?: "(none)", act->tid ? " tid " : "", (int) act->tid,
                                    action_kind_to_string(act->kind) ?: "invalid");
                        c.rep.failed++;
                        continue;
                }
                /* DESIGN.md 5.1: nothing outside the opted-in cgroups. */
                cg = opted_in_find(a, act->cgroup);
                if (!cg) {
                        log_warning("cgroup %s%s%.0d: not opted in; %s %s refused", act->cgroup,
                                    act->tid ? " tid " : "", (int) act->tid,
                                    action_policy_to_string(act->policy), action_kind_to_string(act->kind));
                        c.rep.failed++;
                        continue;
                }
                cs = snap_cgroup(snap, act->cgroup);

                if (act->tid > 0 && (act->kind == ACTION_SET_THREAD_CPUS || act->kind == ACTION_RESTORE))
                        r = apply_thread_action(&c, cg, cs, act);
                else if (act->tid == 0 &&
                         (act->kind == ACTION_SET_CGROUP_CPUS || act->kind == ACTION_RESTORE))
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

        r = actuator_state_save(a);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot write the state file %s; a successor may not be able to restore",
                                  a->state_path);
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
        if (!a->live || !crec || crec->backend != ACTUATOR_BACKEND_THREADS || !crec->window)
                return 0; /* the kernel applies a cpuset to new threads itself */
        r = adopt_thread(a, crec, crec->window, tid, 0, NULL);
        if (r > 0)
                (void) actuator_state_save(a);
        return r;
}

/* ---- ownership ---- */

static int let_go(Ctx *c, const char *cgroup, pid_t tid, uint64_t starttime) {
        int r = hands_off_add(c->a, cgroup, tid, starttime);
        if (r < 0)
                return r;
        return report_let_go(&c->rep, cgroup, tid, starttime);
}

static int check_cgroups(Ctx *c) {
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
                                cgroup_gone(c, name, crec->dir);
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
                r = let_go(c, name, 0, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_threads(Ctx *c) {
        Actuator *a = c->a;
        _cleanup_(freep) const ThreadSample **match = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        /* One pass over the snapshot, a lookup per thread: a churning cgroup
         * has thousands of them. */
        match = calloc(a->n_threads + 1, sizeof(*match));
        if (!match)
                return -ENOMEM;
        for (size_t k = 0; k < c->snap->n_cgroups; k++) {
                const CgroupSample *cs = &c->snap->cgroups[k];
                for (size_t j = 0; cs->path && j < cs->n_threads; j++) {
                        bool found;
                        size_t idx = thread_index(a, cs->threads[j].tid, &found);
                        if (found && streq(a->threads[idx].cgroup, cs->path))
                                match[idx] = &cs->threads[j];
                }
        }

        /* Backwards: forgetting index i - 1 moves only what was checked. */
        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                const ThreadSample *ts = match[i - 1];

                if (!ts && !snap_cgroup(c->snap, t->cgroup))
                        continue; /* not sampled this tick */
                if (!ts) {
                        /* Exited, or moved out of the cgroup: a moved thread
                         * stays owned and is given back on release. */
                        if (a->live && thread_check_identity(a, t->tid, t->starttime) == -ESRCH) {
                                log_debug("cgroup %s tid %d: the thread is gone; dropped", t->cgroup,
                                          (int) t->tid);
                                actuator_forget_thread(a, t->tid);
                        }
                        continue;
                }
                if (ts->starttime != t->starttime) {
                        log_debug("cgroup %s tid %d: the tid now names another thread; dropped", t->cgroup,
                                  (int) t->tid);
                        actuator_forget_thread(a, t->tid);
                        continue;
                }
                if (!ts->allowed || act_cpuset_equal_on(ts->allowed, t->last_set, c->online))
                        continue;

                /* systemd realizes AllowedCPUs= after its method call returns:
                 * the kernel's composition with the window is not a change by
                 * someone else. */
                const ActCgroup *crec = actuator_find_owned(a, t->cgroup);
                if (crec && crec->backend != ACTUATOR_BACKEND_THREADS && crec->window) {
                        _cleanup_cpuset_ CpuSet want = NULL;
                        r = compose(t->request ?: (t->original_full ? NULL : t->original), crec->window,
                                    &want);
                        if (r < 0)
                                return r;
                        if (act_cpuset_equal_on(ts->allowed, want, c->online)) {
                                hwloc_bitmap_copy(t->last_set, ts->allowed);
                                a->dirty = true;
                                continue;
                        }
                }

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
                r = let_go(c, name, tid, st);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Hands-off marks of threads that exited would pile up: prune them. */
static void prune_hands_off(Ctx *c) {
        Actuator *a = c->a;

        for (size_t i = a->n_hands_off; i > 0; i--) {
                const HandsOff *h = &a->hands_off[i - 1];
                const CgroupSample *cs;
                const ThreadSample *ts;

                if (h->tid == 0)
                        continue;
                cs = snap_cgroup(c->snap, h->cgroup);
                if (!cs)
                        continue;
                ts = cgroup_thread(cs, h->tid);
                if (ts && ts->starttime == h->starttime)
                        continue;
                if (a->live ? thread_check_identity(a, h->tid, h->starttime) == -ESRCH : !ts)
                        hands_off_remove_at(a, i - 1);
        }
}

int actuator_check_ownership(Actuator *a, const Snapshot *snap, ActuatorReport *ret) {
        _cleanup_(ctx_done) Ctx c = {};
        int r;

        if (!a || !snap || !ret)
                return -EINVAL;
        r = ctx_init(&c, a, snap);
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

        r = actuator_state_save(a);
        if (r < 0)
                log_warning_errno(r, "Cannot write the state file %s", a->state_path);
        *ret = c.rep;
        c.rep = (ActuatorReport){};
        return 0;
}

/* ---- release ---- */

typedef struct Restored {
        pid_t tid;
        CpuSet original;
} Restored;

/* 1 if the thread got its exact (not "every CPU") original back. The caller
 * forgets the record. */
static int release_thread(Ctx *c, ActThread *t) {
        Actuator *a = c->a;
        _cleanup_cpuset_ CpuSet cur = NULL, got = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        pid_t tid = t->tid;
        bool exact = !t->original_full;
        int r;

        if (!a->live) {
                log_notice(
                        "cgroup %s tid %d: the root %s is not the host's: the thread's mask is not restored",
                        t->cgroup, (int) tid, a->root->path);
                actuator_forget_thread(a, tid);
                return 0;
        }
        r = thread_check_identity(a, tid, t->starttime);
        if (r == 0)
                r = act_thread_get_affinity(tid, &cur);
        if (r == -ESRCH) {
                log_debug(
                        "cgroup %s tid %d: the thread is gone (or the tid was reused); nothing to give back",
                        t->cgroup, (int) tid);
                actuator_forget_thread(a, tid);
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "cgroup %s tid %d: cannot read the thread's mask; not restored",
                                  t->cgroup, (int) tid);
                actuator_forget_thread(a, tid);
                return 0;
        }
        if (!act_cpuset_equal_on(cur, t->last_set, c->online)) {
                log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                           "cgroup %s tid %d: CPUs are %s, steerd had set %s: someone else changed them; "
                           "left as they are",
                           t->cgroup, (int) tid, cpuset_to_string(cur, b1, sizeof(b1)),
                           cpuset_to_string(t->last_set, b2, sizeof(b2)));
                actuator_forget_thread(a, tid);
                return 0;
        }

        if (exact) {
                r = act_thread_set_affinity(tid, t->original);
                if (r == -EINVAL) {
                        /* Nothing of the original is left in the cgroup. */
                        exact = false;
                        r = act_thread_set_affinity_all(tid, a->affinity_bytes);
                }
        } else
                r = act_thread_set_affinity_all(tid, a->affinity_bytes);
        if (r >= 0)
                r = act_thread_get_affinity(tid, &got);
        if (r < 0) {
                if (r != -ESRCH)
                        log_warning_errno(r, "cgroup %s tid %d: giving back CPUs %s failed", t->cgroup,
                                          (int) tid, cpuset_to_string(t->original, b1, sizeof(b1)));
                actuator_forget_thread(a, tid);
                return 0;
        }
        log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE, "cgroup %s tid %d: CPUs %s -> %s, given back",
                   t->cgroup, (int) tid, cpuset_to_string(cur, b1, sizeof(b1)),
                   cpuset_to_string(got, b2, sizeof(b2)));
        return exact ? 1 : 0;
}

/* 1 if the cgroup's CPUs were written back. */
static int release_cgroup_record(Ctx *c, ActCgroup *crec) {
        Actuator *a = c->a;
        _cleanup_(freep) char *text = NULL;
        _cleanup_cpuset_ CpuSet cur = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        if (crec->backend == ACTUATOR_BACKEND_THREADS || !crec->window)
                return 0;
        if (crec->backend == ACTUATOR_BACKEND_SYSTEMD &&
            !systemd_backend_eligible(a->live, a->bus, crec->dir, true)) {
                log_warning("cgroup %s: AllowedCPUs of %s cannot be given back without systemd on the bus",
                            crec->name, crec->unit);
                return 0;
        }

        r = act_cgroup_read_cpus_text(a->root, crec->dir, &text);
        if (r == -ENOENT && rootdir_access(a->root, crec->dir, F_OK) < 0) {
                log_notice("cgroup %s (%s) is gone: nothing to give back", crec->name, crec->dir);
                return 0;
        }
        if (r >= 0) {
                r = cpuset_parse(text, &cur);
                if (r >= 0 && !act_cpuset_equal_on(cur, crec->window, c->online)) {
                        log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                                   "cgroup %s: CPUs are %s, steerd had set %s: someone else changed them; "
                                   "left as they are",
                                   crec->name, cpuset_to_string(cur, b1, sizeof(b1)),
                                   cpuset_to_string(crec->window, b2, sizeof(b2)));
                        return 0;
                }
        } else if (crec->backend == ACTUATOR_BACKEND_CPUSET) {
                log_warning_errno(r, "cgroup %s: cannot read its CPUs; not given back", crec->name);
                return 0;
        }

        r = cgroup_write(c, crec, crec->original_text);
        if (is_einval(r)) {
                /* The parent shrank since: as much of the original as it allows. */
                _cleanup_cpuset_ CpuSet parent = NULL, m = NULL;
                _cleanup_(freep) char *t2 = NULL;
                if (act_cgroup_parent_effective(a->root, crec->dir, crec->v2, &parent) >= 0 &&
                    cpuset_parse(crec->original_text, &m) >= 0) {
                        hwloc_bitmap_and(m, m, parent);
                        if (hwloc_bitmap_iszero(m))
                                hwloc_bitmap_copy(m, parent);
                        if (cpuset_format(m, &t2) >= 0) {
                                log_notice("cgroup %s: its original CPUs '%s' are no longer valid; giving "
                                           "back %s",
                                           crec->name, crec->original_text, t2);
                                r = cgroup_write(c, crec, t2);
                        }
                }
        }
        if (r == -ENOENT) {
                log_notice("cgroup %s (%s) is gone: nothing to give back", crec->name, crec->dir);
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "cgroup %s: giving back CPUs '%s' failed", crec->name,
                                  crec->original_text);
                return r;
        }
        log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE, "cgroup %s: CPUs %s -> '%s', given back (%s backend)",
                   crec->name, cpuset_to_string(crec->window, b1, sizeof(b1)), crec->original_text,
                   actuator_backend_to_string(crec->backend));
        return 1;
}

static int release_one(Actuator *a, const char *cgroup) {
        _cleanup_(ctx_done) Ctx c = {};
        Restored *exact = NULL;
        size_t n_exact = 0;
        int r, ret = 0;

        r = ctx_init(&c, a, NULL);
        if (r < 0)
                return r;

        /* Threads first: they are compared with what steerd set while the
         * cgroup's window still holds, then the window goes. */
        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                if (!streq(t->cgroup, cgroup))
                        continue;
                CpuSet orig = hwloc_bitmap_dup(t->original);
                pid_t tid = t->tid;
                r = release_thread(&c, t);
                actuator_forget_thread(a, tid);
                if (r > 0 && orig) {
                        Restored *n = reallocarray(exact, n_exact + 1, sizeof(Restored));
                        if (n) {
                                exact = n;
                                exact[n_exact++] = (Restored){.tid = tid, .original = TAKE_PTR(orig)};
                        }
                }
                hwloc_bitmap_free(orig);
        }

        ActCgroup *crec = actuator_find_owned(a, cgroup);
        if (crec) {
                r = release_cgroup_record(&c, crec);
                if (r < 0)
                        ret = r;
                bool written = r > 0;
                actuator_forget_owned(a, cgroup);

                /* Kernels before 6.2 reset every task of a cpuset whose CPUs
                 * are written: give the exact originals back once more. */
                for (size_t i = 0; written && a->live && i < n_exact; i++) {
                        _cleanup_cpuset_ CpuSet cur = NULL;
                        if (act_thread_get_affinity(exact[i].tid, &cur) < 0 ||
                            act_cpuset_equal_on(cur, exact[i].original, c.online))
                                continue;
                        log_debug(
                                "cgroup %s tid %d: the kernel reset the restored mask; giving it back again",
                                cgroup, (int) exact[i].tid);
                        (void) act_thread_set_affinity(exact[i].tid, exact[i].original);
                }
        }
        for (size_t i = 0; i < n_exact; i++)
                hwloc_bitmap_free(exact[i].original);
        free(exact);

        hands_off_clear_cgroup(a, cgroup);
        a->dirty = true;
        return ret;
}

int actuator_release_cgroup(Actuator *a, const char *cgroup) {
        int r, k;

        if (!a || !cgroup)
                return -EINVAL;
        r = release_one(a, cgroup);
        k = actuator_state_save(a);
        if (k < 0)
                log_warning_errno(k, "Cannot write the state file %s", a->state_path);
        return r;
}

int actuator_release_all(Actuator *a) {
        int r = 0;

        if (!a)
                return -EINVAL;
        for (;;) {
                _cleanup_(freep) char *name = NULL;
                if (a->n_threads > 0)
                        name = strdup(a->threads[0].cgroup);
                else if (a->n_owned > 0)
                        name = strdup(a->owned[0].name);
                else if (a->n_hands_off > 0)
                        name = strdup(a->hands_off[0].cgroup);
                else
                        break;
                if (!name)
                        return -ENOMEM;
                int k = release_one(a, name);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && r == 0)
                        r = k;
        }
        int k = actuator_state_save(a);
        if (k < 0)
                log_warning_errno(k, "Cannot write the state file %s", a->state_path);
        return r;
}
