/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>

#include "actuator-internal.h"

/* How the kernel composes masks (verified on 6.18; see the comment at
 * cgroup_fixup_threads() in actuator-cpuset.c): a thread's affinity is what
 * it asked for with sched_setaffinity() intersected with its cpuset, or the
 * cpuset's CPUs when that intersection is empty. The threads backend
 * emulates exactly that for its "window", so that the backends behave
 * alike. */

static const char *const actuator_backend_table[_ACTUATOR_BACKEND_MAX] = {
        [ACTUATOR_BACKEND_THREADS] = "threads",
        [ACTUATOR_BACKEND_CPUSET] = "cpuset",
        [ACTUATOR_BACKEND_SYSTEMD] = "systemd",
};

DEFINE_STRING_TABLE_LOOKUP(actuator_backend, ActuatorBackend, _ACTUATOR_BACKEND_MAX);

void actuator_report_done(ActuatorReport *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_let_go; i++)
                free(r->let_go[i].cgroup);
        free(r->let_go);
        *r = (ActuatorReport){};
}

int act_report_let_go(ActuatorReport *r, const char *cgroup, pid_t tid, uint64_t starttime) {
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

/* ---- masks ---- */

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

int act_dup_set(hwloc_const_bitmap_t s, CpuSet *ret) {
        CpuSet d = s ? hwloc_bitmap_dup(s) : NULL;
        if (s && !d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

int act_compose(hwloc_const_bitmap_t base, hwloc_const_bitmap_t cg, CpuSet *ret) {
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

bool act_is_einval(int r) {
        /* ERANGE: a CPU id beyond what the kernel knows (cpuset.cpus). */
        return r == -EINVAL || r == -ERANGE;
}

bool act_is_eperm(int r) {
        return r == -EPERM || r == -EACCES;
}

/* ---- bookkeeping ---- */

void act_thread_done(ActThread *t) {
        free(t->cgroup);
        hwloc_bitmap_free(t->original);
        hwloc_bitmap_free(t->request);
        hwloc_bitmap_free(t->last_set);
        hwloc_bitmap_free(t->pending);
        *t = (ActThread){};
}

void act_cgroup_done(ActCgroup *c) {
        free(c->name);
        free(c->dir);
        free(c->unit);
        free(c->original_text);
        hwloc_bitmap_free(c->original);
        hwloc_bitmap_free(c->window);
        hwloc_bitmap_free(c->pending);
        *c = (ActCgroup){};
}

size_t act_thread_index(const Actuator *a, pid_t tid, bool *found) {
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
        size_t i = act_thread_index(a, tid, &found);
        return found ? &a->threads[i] : NULL;
}

int actuator_add_thread(Actuator *a, const ActThread *t) {
        bool found;
        size_t i = act_thread_index(a, t->tid, &found);

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
        size_t i = act_thread_index(a, tid, &found);

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

HandsOff *act_hands_off_find(const Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime) {
        for (size_t i = 0; i < a->n_hands_off; i++) {
                HandsOff *h = &a->hands_off[i];
                if (h->tid == tid && streq(h->cgroup, cgroup) && (tid == 0 || h->starttime == starttime))
                        return h;
        }
        return NULL;
}

int act_hands_off_add(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime) {
        if (act_hands_off_find(a, cgroup, tid, starttime))
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

void act_log_refused(HandsOff *h, const Action *act) {
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

int act_mark_unmanaged(ActCtx *c, const char *cgroup, pid_t tid, uint64_t starttime, int error) {
        int r;

        if (tid > 0)
                log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                           "cgroup %s tid %d: not permitted to change its CPUs (%s); leaving it unmanaged",
                           cgroup, (int) tid, strerror(-error));
        else
                log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                           "cgroup %s: not permitted to change its CPUs (%s); leaving it unmanaged", cgroup,
                           strerror(-error));
        r = act_hands_off_add(c->a, cgroup, tid, starttime);
        if (r < 0)
                return r;
        return act_report_let_go(&c->rep, cgroup, tid, starttime);
}

static const OptedIn *opted_in_find(const Actuator *a, const char *name) {
        for (size_t i = 0; i < a->n_cgroups; i++)
                if (streq(a->cgroups[i].name, name))
                        return &a->cgroups[i];
        return NULL;
}

const CgroupSample *act_snap_cgroup(const Snapshot *snap, const char *name) {
        if (!snap)
                return NULL;
        for (size_t i = 0; i < snap->n_cgroups; i++)
                if (snap->cgroups[i].path && streq(snap->cgroups[i].path, name))
                        return &snap->cgroups[i];
        return NULL;
}

const ThreadSample *act_cgroup_thread(const CgroupSample *cs, pid_t tid) {
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
        if (affinity_probe_bytes(&a->affinity_bytes) < 0)
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
        for (size_t i = 0; i < a->n_retry; i++)
                free(a->retry[i]);
        free(a->retry);
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

/* ---- one apply / check / release ---- */

void act_ctx_done(ActCtx *c) {
        hwloc_bitmap_free(c->online);
        actuator_report_done(&c->rep);
}

int act_ctx_init(ActCtx *c, Actuator *a, const Snapshot *snap) {
        *c = (ActCtx){.a = a, .snap = snap};
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

void act_and_online(const ActCtx *c, CpuSet s) {
        if (c->online)
                hwloc_bitmap_and(s, s, c->online);
}

int act_cgroup_cpus_now(const ActCtx *c, const char *dir, bool v2, const CgroupSample *cs,
                        const ActCgroup *crec, CpuSet *ret) {
        CpuSet s = NULL;
        int r;

        if (crec && crec->window)
                s = hwloc_bitmap_dup(crec->window);
        else if (cs && cs->cpus)
                s = hwloc_bitmap_dup(cs->cpus);
        else {
                r = dir ? cgroup_effective_cpus(c->a->root, dir, v2, &s) : -ENOENT;
                if (r < 0) {
                        /* v2 without the cpuset controller: every online CPU. */
                        if (!c->online)
                                return r;
                        s = hwloc_bitmap_dup(c->online);
                }
        }
        if (!s)
                return -ENOMEM;
        act_and_online(c, s);
        *ret = s;
        return 0;
}

void act_save_state(Actuator *a) {
        int r = actuator_state_save(a);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot write the state file %s; a successor may not be able to restore",
                                  a->state_path);
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
                        r = act_hands_off_add(a, cg->name, 0, 0);
                        if (r < 0)
                                return r;
                        return act_report_let_go(&c->rep, cg->name, 0, 0);
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
        cg = opted_in_find(c->a, act->cgroup);
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
        act_save_state(c->a);
        unsigned pinned = 0, released = 0;
        for (size_t i = from; i < to && r >= 0; i++) {
                const Action *act = &plan->actions[i];
                unsigned applied = c->rep.applied;
                if (prep[i - from].go)
                        r = act_finish_thread_action(c, opted_in_find(c->a, act->cgroup), act,
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

        r = act_adopt_new_threads(&c);
        if (r < 0)
                return r;

        for (size_t i = 0; i < plan->n_actions;) {
                const Action *act = &plan->actions[i];
                const CgroupSample *cs = NULL;
                const OptedIn *cg;

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
        if (!a->live || !crec || crec->backend != ACTUATOR_BACKEND_THREADS || !crec->window)
                return 0; /* the kernel applies a cpuset to new threads itself */
        r = act_adopt_thread(a, crec, tid);
        act_save_state(a);
        return r;
}

/* ---- ownership ---- */

static int let_go(ActCtx *c, const char *cgroup, pid_t tid, uint64_t starttime) {
        int r = act_hands_off_add(c->a, cgroup, tid, starttime);
        if (r < 0)
                return r;
        return act_report_let_go(&c->rep, cgroup, tid, starttime);
}

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
                r = let_go(c, name, 0, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_threads(ActCtx *c) {
        Actuator *a = c->a;
        _cleanup_(freep) const ThreadSample **match = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        /* One pass over the snapshot, a lookup per thread: a churning cgroup
         * has thousands of them. */
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

        /* Backwards: forgetting index i - 1 moves only what was checked. */
        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                const ThreadSample *ts = match[i - 1];

                if (!ts && !act_snap_cgroup(c->snap, t->cgroup))
                        continue; /* not sampled this tick */
                if (!ts) {
                        /* Exited, or moved out of the cgroup: a moved thread
                         * stays owned and is given back on release. */
                        if (a->live && act_thread_check_identity(a, t->tid, t->starttime) == -ESRCH) {
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
                        r = act_compose(t->request ?: (t->original_full ? NULL : t->original), crec->window,
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
                if (a->live ? act_thread_check_identity(a, h->tid, h->starttime) == -ESRCH : !ts)
                        hands_off_remove_at(a, i - 1);
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

static void retry_mark(Actuator *a, const char *cgroup, bool failed) {
        for (size_t i = 0; i < a->n_retry; i++)
                if (streq(a->retry[i], cgroup)) {
                        if (!failed) {
                                free(a->retry[i]);
                                a->retry[i] = a->retry[--a->n_retry];
                        }
                        return;
                }
        if (!failed)
                return;
        char **n = reallocarray(a->retry, a->n_retry + 1, sizeof(char *));
        if (!n)
                return; /* still recorded; tried again at the stop */
        a->retry = n;
        if ((a->retry[a->n_retry] = strdup(cgroup)))
                a->n_retry++;
}

static bool retry_wanted(const Actuator *a, const char *cgroup) {
        for (size_t i = 0; i < a->n_retry; i++)
                if (streq(a->retry[i], cgroup))
                        return true;
        return false;
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
                r = act_release_cgroup_record(&c, crec);
                bool written = r > 0;
                if (r < 0) {
                        if (ret == 0)
                                ret = r;
                } else
                        actuator_forget_owned(a, cgroup);

                /* Kernels before 6.2 reset every task of a cpuset whose CPUs
                 * are written: give the exact originals back once more. */
                for (size_t i = 0; written && a->live && i < n_exact; i++) {
                        _cleanup_cpuset_ CpuSet cur = NULL;
                        if (thread_get_affinity(exact[i].tid, &cur) < 0 ||
                            act_cpuset_equal_on(cur, exact[i].original, c.online))
                                continue;
                        log_debug(
                                "cgroup %s tid %d: the kernel reset the restored mask; giving it back again",
                                cgroup, (int) exact[i].tid);
                        (void) thread_set_affinity(exact[i].tid, exact[i].original);
                }
        }
        for (size_t i = 0; i < n_exact; i++)
                hwloc_bitmap_free(exact[i].original);
        free(exact);

        if (ret == 0)
                hands_off_clear_cgroup(a, cgroup);
        retry_mark(a, cgroup, ret < 0);
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

/* The distinct cgroups of every record, each once: a record whose
 * give-back fails stays, so the list is taken before releasing. */
static int owned_cgroup_names(const Actuator *a, char ***ret, size_t *ret_n) {
        _cleanup_(freep) char **names = NULL;
        size_t n = 0, cap = a->n_threads + a->n_owned + a->n_hands_off;

        names = calloc(cap + 1, sizeof(char *));
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < cap; i++) {
                const char *name = i < a->n_threads ? a->threads[i].cgroup
                                   : i < a->n_threads + a->n_owned
                                           ? a->owned[i - a->n_threads].name
                                           : a->hands_off[i - a->n_threads - a->n_owned].cgroup;
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = streq(names[k], name);
                if (!seen)
                        names[n++] = (char *) name;
        }
        *ret = TAKE_PTR(names);
        *ret_n = n;
        return 0;
}

static bool cgroup_listed(const Actuator *a, const char *name) {
        for (size_t i = 0; i < a->n_cgroups; i++)
                if (streq(a->cgroups[i].name, name))
                        return true;
        return false;
}

/* only_unlisted: only the cgroups not in actuator_set_cgroups()'s list. */
static int release_many(Actuator *a, bool only_unlisted) {
        _cleanup_(freep) char **borrowed = NULL;
        size_t n = 0;
        int r;

        r = owned_cgroup_names(a, &borrowed, &n);
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
                if (only_unlisted && cgroup_listed(a, names[i]) && !retry_wanted(a, names[i]))
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

int actuator_retry(Actuator *a, bool all) {
        if (!a)
                return -EINVAL;
        if (a->n_threads == 0 && a->n_owned == 0)
                return 0;
        return release_many(a, !all);
}

void actuator_set_bus(Actuator *a, sd_bus *bus) {
        if (!a)
                return;
        sd_bus_unref(a->bus);
        a->bus = bus ? sd_bus_ref(bus) : NULL;
}

size_t actuator_kept_description(const Actuator *a, char *buf, size_t size) {
        _cleanup_(freep) char **names = NULL;
        size_t n = 0, len = 0;

        if (!buf || size == 0)
                return 0;
        buf[0] = '\0';
        if (!a || owned_cgroup_names(a, &names, &n) < 0)
                return 0;
        for (size_t i = 0; i < n && len + 1 < size; i++) {
                size_t nt = 0;
                for (size_t k = 0; k < a->n_threads; k++)
                        nt += streq(a->threads[k].cgroup, names[i]);
                int w = snprintf(buf + len, size - len, "%s%s (%s%zu thread%s)", i ? ", " : "", names[i],
                                 actuator_find_owned(a, names[i]) ? "its CPUs, " : "", nt,
                                 nt == 1 ? "" : "s");
                if (w < 0)
                        break;
                len = MIN(len + (size_t) w, size - 1);
        }
        return n;
}
