/* SPDX-License-Identifier: MIT */
#include "actuator-ctx.h"
#include "actuator-state.h"
#include "log.h"
#include "proc-thread.h"

void act_ctx_done(ActCtx *c) {
        for (size_t i = 0; i < c->n_given_back; i++) {
                free(c->given_back[i].cgroup);
                hwloc_bitmap_free(c->given_back[i].cpus);
        }
        free(c->given_back);
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

int act_restore_is_full(const ActCtx *c, const Action *act, hwloc_const_bitmap_t original, bool *ret) {
        _cleanup_cpuset_ CpuSet on = hwloc_bitmap_dup(original);

        if (!on)
                return -ENOMEM;
        act_and_online(c, on);
        *ret = act->kind == ACTION_RESTORE && hwloc_bitmap_isincluded(on, act->cpus);
        return 0;
}

int act_note_given_back(ActCtx *c, const char *cgroup, hwloc_const_bitmap_t cpus) {
        _cleanup_(freep) char *name = strdup(cgroup);
        CpuSet s = hwloc_bitmap_dup(cpus);
        ActGivenBack *g;

        if (!name || !s) {
                hwloc_bitmap_free(s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_given_back; i++)
                if (streq(c->given_back[i].cgroup, cgroup)) {
                        hwloc_bitmap_free(c->given_back[i].cpus);
                        c->given_back[i].cpus = s;
                        return 0;
                }
        g = reallocarray(c->given_back, c->n_given_back + 1, sizeof(ActGivenBack));
        if (!g) {
                hwloc_bitmap_free(s);
                return -ENOMEM;
        }
        c->given_back = g;
        c->given_back[c->n_given_back++] = (ActGivenBack){.cgroup = TAKE_PTR(name), .cpus = s};
        return 0;
}

static hwloc_const_bitmap_t given_back_cpus(const ActCtx *c, const CgroupSample *cs) {
        if (!cs || !cs->path)
                return NULL;
        for (size_t i = 0; i < c->n_given_back; i++)
                if (streq(c->given_back[i].cgroup, cs->path))
                        return c->given_back[i].cpus;
        return NULL;
}

int act_cgroup_cpus_now(const ActCtx *c, const char *dir, bool v2, const CgroupSample *cs,
                        const ActCgroup *crec, CpuSet *ret) {
        hwloc_const_bitmap_t back = given_back_cpus(c, cs);
        CpuSet s = NULL;
        int r;

        if (crec && crec->window)
                s = hwloc_bitmap_dup(crec->window);
        else if (back)
                /* The snapshot still shows the window given back: a thread
                 * recorded now would judge its own mask against it. */
                s = hwloc_bitmap_dup(back);
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

/* ---- the report, letting go ---- */

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

int act_let_go(ActCtx *c, const char *cgroup, pid_t tid, uint64_t starttime) {
        int r = act_hands_off_add(c->a, cgroup, tid, starttime);
        if (r < 0)
                return r;
        return act_report_let_go(&c->rep, cgroup, tid, starttime);
}

int act_mark_unmanaged(ActCtx *c, const char *cgroup, pid_t tid, uint64_t starttime, int error) {
        if (tid > 0)
                log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                           "cgroup %s tid %d: not permitted to change its CPUs (%s); leaving it unmanaged",
                           cgroup, (int) tid, strerror(-error));
        else
                log_struct(LOG_WARNING, STEERD_MESSAGE_LET_GO,
                           "cgroup %s: not permitted to change its CPUs (%s); leaving it unmanaged", cgroup,
                           strerror(-error));
        return act_let_go(c, cgroup, tid, starttime);
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

/* ---- the snapshot ---- */

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

/* ---- the host ---- */

int act_thread_read_starttime(const RootDir *root, pid_t tid, uint64_t *ret) {
        _cleanup_(freep) char *text = NULL;
        char path[80];
        ThreadStat st;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int) tid, (int) tid);
        r = rootdir_read_file(root, path, &text, NULL);
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        r = thread_stat_parse(text, path, &st, NULL);
        if (r < 0)
                return r;
        *ret = st.starttime;
        return 0;
}

int act_thread_check_identity(const Actuator *a, pid_t tid, uint64_t starttime) {
        uint64_t now;
        int r = act_thread_read_starttime(a->root, tid, &now);
        if (r < 0)
                return r;
        return now == starttime ? 0 : -ESRCH;
}

int act_read_online_cpus(const RootDir *root, CpuSet *ret) {
        _cleanup_(freep) char *text = NULL;
        int r;

        r = rootdir_read_file(root, "/sys/devices/system/cpu/online", &text, NULL);
        if (r < 0)
                return r;
        return cpuset_parse(text, ret);
}

/* Said once when the state file stops being writable, once when it is
 * again: a read-only /run would otherwise log every tick. */
static void note_save(Actuator *a, int r) {
        if (r < 0 && !a->save_failing)
                log_struct_errno(LOG_ERR, r, STEERD_MESSAGE_RESTORE,
                                 "Cannot write the state file %s: steerd changes no CPUs it could not give "
                                 "back after a crash, until it can write it again (give-backs go on)",
                                 a->state_path);
        else if (r >= 0 && a->save_failing)
                log_struct(LOG_NOTICE, STEERD_MESSAGE_RESTORE, "The state file %s can be written again",
                           a->state_path);
        a->save_failing = r < 0;
}

int act_save_state(Actuator *a) {
        int r = actuator_state_save(a);
        note_save(a, r);
        return r;
}

bool act_state_writable(Actuator *a) {
        if (a->save_failing)
                note_save(a, actuator_state_probe(a));
        return !a->save_failing;
}
