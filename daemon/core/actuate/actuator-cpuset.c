/* SPDX-License-Identifier: MIT */
#include "actuator-cgroup.h"
#include "actuator-cpuset.h"
#include "actuator-mask.h"
#include "actuator-systemd.h"
#include "actuator-threads.h"
#include "affinity.h"
#include "log.h"

/* systemd writes the cgroup's cpuset.cpus after SetUnitProperties() has
 * returned, when it realizes the unit's cgroup. Until it has, the threads'
 * masks are not what they will be (kernels before 6.2 reset them at the
 * write), so steerd waits for it, briefly: its tick is a tenth of a second.
 * AllowedCPUs= emptied cannot be realized on a populated cgroup (the kernel
 * refuses "" with ENOSPC, and systemd only logs it): the cgroup keeps
 * steerd's window. What "" would give, the parent's effective CPUs, is
 * written directly then, as the cpuset backend does. */
#define REALIZE_WAIT_USEC (1000 * USEC_PER_MSEC)
#define REALIZE_EMPTY_WAIT_USEC (300 * USEC_PER_MSEC)
#define REALIZE_POLL_USEC (10 * USEC_PER_MSEC)

static int systemd_await_realized(ActCtx *c, const ActCgroup *crec, hwloc_const_bitmap_t want) {
        Actuator *a = c->a;
        bool empty = hwloc_bitmap_iszero(want);
        uint64_t waited = 0, limit = empty ? REALIZE_EMPTY_WAIT_USEC : REALIZE_WAIT_USEC;
        _cleanup_(freep) char *text = NULL;
        int r;

        if (!a->live)
                return 0;
        for (;; waited += REALIZE_POLL_USEC) {
                _cleanup_cpuset_ CpuSet cur = NULL;
                free(text);
                text = NULL;
                r = act_cgroup_read_cpus_text(a->root, crec->dir, &text);
                if (r == -ENOENT && empty)
                        return 0; /* no cpuset controller here (any more): nothing to wait for */
                if (r >= 0 &&
                    (empty ? !*text : cpuset_parse(text, &cur) >= 0 && hwloc_bitmap_isequal(cur, want)))
                        return 0;
                if (waited >= limit)
                        break;
                (void) usleep(REALIZE_POLL_USEC);
        }
        if (!empty) {
                log_notice("cgroup %s: systemd has not written AllowedCPUs to cpuset.cpus within %llu ms "
                           "(it is '%s')",
                           crec->name, (unsigned long long) (limit / USEC_PER_MSEC), text ?: "unreadable");
                return 0;
        }

        _cleanup_cpuset_ CpuSet parent = NULL;
        _cleanup_(freep) char *t2 = NULL;
        r = act_cgroup_parent_effective(a->root, crec->dir, crec->v2, &parent);
        if (r < 0)
                return log_warning_errno(r, "cgroup %s: cannot read its parent's CPUs", crec->name);
        r = cpuset_format(parent, &t2);
        if (r < 0)
                return r;
        log_notice("cgroup %s: AllowedCPUs of %s emptied, but the kernel does not let a populated cgroup's "
                   "cpuset.cpus go back to '' (inherit); writing its parent's CPUs %s instead",
                   crec->name, crec->unit, t2);
        return act_cgroup_write_cpus(a, crec->dir, t2);
}

static int cgroup_write(ActCtx *c, const ActCgroup *crec, const char *text) {
        int r;

        if (crec->backend == ACTUATOR_BACKEND_SYSTEMD) {
                _cleanup_cpuset_ CpuSet s = NULL;
                r = cpuset_parse(text, &s);
                if (r < 0)
                        return r;
                r = systemd_set_allowed_cpus(c->a->bus, crec->unit, s);
                if (r < 0)
                        return r;
                return systemd_await_realized(c, crec, s);
        }
        r = act_cgroup_write_cpus(c->a, crec->dir, text);
        if (r == -ENOSPC && !*text) {
                /* cgroup v2 refuses to empty the cpuset.cpus of a populated
                 * cgroup (validate_change(): ENOSPC), so "" (inherit) cannot be
                 * written back while it has tasks: the parent's effective CPUs
                 * are what inherit gives today. */
                _cleanup_cpuset_ CpuSet parent = NULL;
                _cleanup_(freep) char *t2 = NULL;
                if (act_cgroup_parent_effective(c->a->root, crec->dir, crec->v2, &parent) >= 0 &&
                    cpuset_format(parent, &t2) >= 0) {
                        log_notice("cgroup %s: the kernel does not let a populated cgroup's cpuset.cpus go "
                                   "back to '' (inherit); giving back its parent's CPUs %s instead",
                                   crec->name, t2);
                        r = act_cgroup_write_cpus(c->a, crec->dir, t2);
                }
        }
        return r;
}

/* Write-ahead for the cgroup's threads: what the kernel will make of each
 * once the cgroup has new_cpus. */
static int cgroup_intend_threads(Actuator *a, const char *cgroup, hwloc_const_bitmap_t new_cpus) {
        for (size_t i = 0; i < a->n_threads; i++) {
                ActThread *t = &a->threads[i];
                CpuSet p = NULL;
                if (!streq(t->cgroup, cgroup))
                        continue;
                int r = act_compose(t->request ?: (t->original_full ? NULL : t->original), new_cpus, &p);
                if (r < 0)
                        return r;
                hwloc_bitmap_free(t->pending);
                t->pending = p;
                a->dirty = true;
        }
        return 0;
}

static void cgroup_drop_intent(Actuator *a, const char *cgroup) {
        ActCgroup *crec = actuator_find_owned(a, cgroup);
        if (crec) {
                hwloc_bitmap_free(crec->pending);
                crec->pending = NULL;
        }
        for (size_t i = 0; i < a->n_threads; i++)
                if (streq(a->threads[i].cgroup, cgroup) && a->threads[i].pending) {
                        hwloc_bitmap_free(a->threads[i].pending);
                        a->threads[i].pending = NULL;
                }
        a->dirty = true;
}

/* Write the cgroup's CPUs with the intent recorded first. */
static int cgroup_write_ahead(ActCtx *c, ActCgroup *crec, const char *text, hwloc_const_bitmap_t new_cpus,
                              bool give_back) {
        CpuSet p = NULL;
        int r;

        /* Giving back needs no intent: the original is what a successor
         * would write anyway. */
        if (!give_back) {
                r = act_dup_set(new_cpus, &p);
                if (r < 0)
                        return r;
                hwloc_bitmap_free(crec->pending);
                crec->pending = p;
        }
        r = cgroup_intend_threads(c->a, crec->name, new_cpus);
        if (r < 0)
                return r;
        /* A change a successor could not give back is not made. */
        r = act_save_state(c->a);
        if (r < 0 && !give_back)
                return r;
        return cgroup_write(c, crec, text);
}

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
static int cgroup_fixup_threads(ActCtx *c, const char *cgroup, hwloc_const_bitmap_t cg_cpus) {
        Actuator *a = c->a;
        char b1[CPUSET_STRLEN];
        int r;

        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                _cleanup_cpuset_ CpuSet cur = NULL, want = NULL;
                hwloc_const_bitmap_t base;

                if (!streq(t->cgroup, cgroup))
                        continue;
                hwloc_bitmap_free(t->pending);
                t->pending = NULL;
                a->dirty = true;
                if (!act_threads_writable(a))
                        continue;
                r = act_aff_get(a, t->tid, &cur);
                if (r == -ESRCH) {
                        actuator_forget_thread(a, t->tid);
                        continue;
                }
                if (r < 0)
                        return r;
                base = t->request ?: (t->original_full ? NULL : t->original);
                if (base && cg_cpus && hwloc_bitmap_intersects(base, cg_cpus)) {
                        r = act_compose(base, cg_cpus, &want);
                        if (r < 0)
                                return r;
                        if (!act_cpuset_equal_on(cur, want, c->online)) {
                                log_debug("cgroup %s tid %d: the kernel reset the thread's mask to %s; "
                                          "setting it again",
                                          cgroup, (int) t->tid, cpuset_to_string(cur, b1, sizeof(b1)));
                                r = act_aff_set(a, t->tid, base);
                                if (r >= 0) {
                                        hwloc_bitmap_free(cur);
                                        cur = NULL;
                                        r = act_aff_get(a, t->tid, &cur);
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
        }
        return 0;
}

void act_cgroup_gone(ActCtx *c, const char *cgroup, const char *dir) {
        Actuator *a = c->a;

        log_notice("cgroup %s (%s) is gone; what steerd held there is dropped", cgroup, dir);
        actuator_forget_owned(a, cgroup);
        /* Its threads live on elsewhere (moved out before it was removed):
         * what is still steerd's is given back. */
        for (size_t i = a->n_threads; i > 0; i--) {
                ActThread *t = &a->threads[i - 1];
                if (!streq(t->cgroup, cgroup))
                        continue;
                pid_t tid = t->tid;
                (void) act_release_thread(c, t);
                actuator_forget_thread(a, tid);
        }
}

/* The threads of the cgroup whose masks are their own (act_record_own_mask()). */
static int record_own_masks(ActCtx *c, const char *cgroup, const CgroupSample *cs,
                            hwloc_const_bitmap_t cg_cpus) {
        _cleanup_cpuset_ CpuSet cg_on = NULL;
        unsigned n = 0;
        int r;

        if (!act_threads_writable(c->a) || !cs)
                return 0;
        cg_on = hwloc_bitmap_dup(cg_cpus);
        if (!cg_on)
                return -ENOMEM;
        act_and_online(c, cg_on);
        for (size_t i = 0; i < cs->n_threads; i++) {
                const ThreadSample *ts = &cs->threads[i];
                /* A held mask may be stale: the thread's own is read live
                 * (act_record_own_mask() forgets it when it covers the cgroup). */
                if (!ts->allowed || (!ts->allowed_held && hwloc_bitmap_isincluded(cg_on, ts->allowed)))
                        continue;
                r = act_record_own_mask(c->a, cgroup, ts->tid, ts->starttime, cg_cpus);
                if (r < 0)
                        return r;
                n += r;
        }
        if (n > 0)
                log_debug("cgroup %s: %u thread%s with masks of their own recorded, to keep them across the "
                          "cgroup's changes",
                          cgroup, n, n == 1 ? "" : "s");
        return 0;
}

/* After a give-back of the cgroup's CPUs, the own-mask records (no request
 * of steerd's) have done their job. */
static void forget_own_masks(Actuator *a, const char *cgroup) {
        for (size_t i = a->n_threads; i > 0; i--) {
                const ActThread *t = &a->threads[i - 1];
                if (streq(t->cgroup, cgroup) && !t->request)
                        actuator_forget_thread(a, t->tid);
        }
}

/* The cgroup's record before steerd's first write to it. 1 with the
 * record, 0 when the action ends here (counted). */
static int file_record_first(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActuatorBackend backend,
                             ActCgroup **ret) {
        ActCgroup fresh = {};
        ActCgroup *crec;
        int r;

        r = act_cgroup_record(c, cg, cs, backend, &fresh);
        if (r == -ENOENT) {
                act_cgroup_gone(c, cg->name, cg->dir);
                c->rep.vanished++;
                return 0;
        }
        if (act_is_eperm(r)) {
                c->rep.failed++;
                r = act_mark_unmanaged(c, cg->name, 0, 0, r);
                return r < 0 ? r : 0;
        }
        if (r < 0) {
                log_warning_errno(r, "cgroup %s: cannot read its CPUs before changing them", cg->name);
                c->rep.failed++;
                return 0;
        }
        /* Recorded (window NULL) before the first write: write-ahead. */
        r = actuator_add_owned(c->a, &fresh);
        if (r < 0) {
                act_cgroup_done(&fresh);
                return r;
        }
        crec = actuator_find_owned(c->a, cg->name);
        r = record_own_masks(c, cg->name, cs, crec->original);
        if (r < 0)
                return r;
        *ret = crec;
        return 1;
}

/* cpus within the parent's effective CPUs (NULL: unknown) and, with online,
 * within the online CPUs. */
static int clip_to_parent(const ActCtx *c, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t parent,
                          bool online, CpuSet *ret) {
        CpuSet m = hwloc_bitmap_dup(cpus);

        if (!m)
                return -ENOMEM;
        if (parent)
                hwloc_bitmap_and(m, m, parent);
        if (online)
                act_and_online(c, m);
        *ret = m;
        return 0;
}

/* Write act's CPUs as the cgroup's window, never more than the parent
 * gives: the kernel refuses it on v1 and ignores it on v2. < 0: steerd's own
 * failure; else *ret_r is the write's result, and 1 says nothing was
 * written because the parent's CPUs could not be read (logged). */
static int write_window(ActCtx *c, ActCgroup *crec, const Action *act, CpuSet *ret_mask, char **ret_text,
                        int *ret_r) {
        _cleanup_cpuset_ CpuSet parent = NULL, mask = NULL;
        _cleanup_(freep) char *text = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r, w = -EINVAL;

        r = act_cgroup_parent_effective(c->a->root, crec->dir, crec->v2, &parent);
        if (r < 0 && r != -ENOENT) {
                log_warning_errno(r, "cgroup %s: cannot read its parent's effective CPUs", crec->name);
                return 1;
        }
        r = clip_to_parent(c, act->cpus, parent, false, &mask);
        if (r < 0)
                return r;
        if (!hwloc_bitmap_iszero(mask)) {
                r = cpuset_format(mask, &text);
                if (r < 0)
                        return r;
                w = cgroup_write_ahead(c, crec, text, mask, false);
        }
        if (act_is_einval(w)) {
                /* Once more, with what is left of it within the parent (read
                 * afresh) and the online CPUs. */
                _cleanup_cpuset_ CpuSet prev = TAKE_PTR(mask);
                hwloc_bitmap_free(parent);
                parent = NULL;
                (void) act_cgroup_parent_effective(c->a->root, crec->dir, crec->v2, &parent);
                r = clip_to_parent(c, act->cpus, parent, true, &mask);
                if (r < 0)
                        return r;
                free(text);
                text = NULL;
                if (hwloc_bitmap_iszero(mask) || hwloc_bitmap_isequal(mask, prev))
                        log_warning("cgroup %s: nothing of CPUs %s is left within its parent's %s; %s %s "
                                    "dropped",
                                    crec->name, cpuset_to_string(act->cpus, b1, sizeof(b1)),
                                    cpuset_to_string(parent, b2, sizeof(b2)),
                                    action_policy_to_string(act->policy), action_kind_to_string(act->kind));
                else {
                        r = cpuset_format(mask, &text);
                        if (r < 0)
                                return r;
                        w = cgroup_write_ahead(c, crec, text, mask, false);
                }
        }
        *ret_mask = TAKE_PTR(mask);
        *ret_text = TAKE_PTR(text);
        *ret_r = w;
        return 0;
}

/* A write that did not happen: no intent stays, and a record made for it
 * goes. */
static void file_write_failed(ActCtx *c, const char *cgroup, const ActCgroup *crec) {
        cgroup_drop_intent(c->a, cgroup);
        if (!crec->window)
                actuator_forget_owned(c->a, cgroup); /* the first write never happened */
        c->rep.failed++;
}

static int file_given_back(ActCtx *c, const OptedIn *cg, const ActCgroup *crec, const Action *act) {
        char b1[CPUSET_STRLEN];
        int r, k;

        log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE,
                   "cgroup %s: CPUs %s -> '%s', given back (%s backend; %s %s: %s)", cg->name,
                   cpuset_to_string(crec->window, b1, sizeof(b1)), crec->original_text,
                   actuator_backend_to_string(crec->backend), action_policy_to_string(act->policy),
                   action_kind_to_string(act->kind), act->reason ?: "");
        _cleanup_cpuset_ CpuSet now = hwloc_bitmap_dup(crec->original);
        if (!now)
                return -ENOMEM;
        actuator_forget_owned(c->a, cg->name);
        r = cgroup_fixup_threads(c, cg->name, now);
        forget_own_masks(c->a, cg->name);
        /* Noted after the records are settled: a failure here leaves them
         * consistent with what was written. */
        k = act_note_given_back(c, cg->name, now);
        return r < 0 ? r : k;
}

static int file_window_set(ActCtx *c, const OptedIn *cg, ActCgroup *crec, const Action *act, CpuSet *mask) {
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];

        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION, "cgroup %s: CPUs %s -> %s (%s backend; %s %s: %s)",
                   cg->name, cpuset_to_string(crec->window ?: crec->original, b1, sizeof(b1)),
                   cpuset_to_string(*mask, b2, sizeof(b2)), actuator_backend_to_string(crec->backend),
                   action_policy_to_string(act->policy), action_kind_to_string(act->kind),
                   act->reason ?: "");
        hwloc_bitmap_free(crec->window);
        crec->window = TAKE_PTR(*mask);
        hwloc_bitmap_free(crec->pending);
        crec->pending = NULL;
        return cgroup_fixup_threads(c, cg->name, crec->window);
}

int act_apply_cgroup_file(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                          ActuatorBackend backend, const Action *act) {
        _cleanup_cpuset_ CpuSet mask = NULL;
        _cleanup_(freep) char *text = NULL;
        bool full;
        int r, w;

        if (!crec) {
                r = file_record_first(c, cg, cs, backend, &crec);
                if (r <= 0)
                        return r;
        }
        r = act_restore_is_full(c, act, crec->original, &full);
        if (r < 0)
                return r;
        if (full)
                w = cgroup_write_ahead(c, crec, crec->original_text, crec->original, true);
        else {
                r = write_window(c, crec, act, &mask, &text, &w);
                if (r < 0)
                        return r;
                if (r > 0) {
                        file_write_failed(c, cg->name, crec);
                        return 0;
                }
        }

        if (w == -ENOENT) {
                act_cgroup_gone(c, cg->name, cg->dir);
                c->rep.vanished++;
                return 0;
        }
        if (act_is_eperm(w)) {
                file_write_failed(c, cg->name, crec);
                return act_mark_unmanaged(c, cg->name, 0, 0, w);
        }
        if (w < 0) {
                if (!act_is_einval(w))
                        log_warning_errno(w, "cgroup %s: writing CPUs '%s' (%s backend) failed", cg->name,
                                          text ?: "", actuator_backend_to_string(crec->backend));
                file_write_failed(c, cg->name, crec);
                return 0;
        }

        c->rep.applied++;
        c->a->dirty = true;
        if (full)
                return file_given_back(c, cg, crec, act);
        return file_window_set(c, cg, crec, act, &mask);
}

/* Whether the cgroup's CPUs are still what steerd set. 1 if so, with what
 * they are (NULL when they could not be read or parsed: systemd is asked
 * anyway); 0 when there is nothing to give back (gone, never changed,
 * someone else's: logged); < 0 when they cannot be read (kept). */
static int cgroup_still_steerds(ActCtx *c, const ActCgroup *crec, CpuSet *ret_cur) {
        Actuator *a = c->a;
        _cleanup_(freep) char *text = NULL;
        _cleanup_cpuset_ CpuSet cur = NULL;
        char b1[CPUSET_STRLEN], b2[CPUSET_STRLEN];
        int r;

        r = act_cgroup_read_cpus_text(a->root, crec->dir, &text);
        if (r == -ENOENT && rootdir_access(a->root, crec->dir, F_OK) < 0) {
                log_notice("cgroup %s (%s) is gone: nothing to give back", crec->name, crec->dir);
                return 0;
        }
        if (r >= 0) {
                r = cpuset_parse(text, &cur);
                if (r >= 0 && streq(text, crec->original_text))
                        return 0; /* as it was: the change never happened */
                /* Steerd's: what it set last, or what it was about to set
                 * when a predecessor died. */
                if (r >= 0 && !act_cpuset_equal_on(cur, crec->window, c->online) &&
                    !(crec->pending && act_cpuset_equal_on(cur, crec->pending, c->online))) {
                        log_struct(LOG_NOTICE, STEERD_MESSAGE_LET_GO,
                                   "cgroup %s: CPUs are %s, steerd had set %s: someone else changed them; "
                                   "left as they are",
                                   crec->name, cpuset_to_string(cur, b1, sizeof(b1)),
                                   cpuset_to_string(crec->window ?: crec->pending, b2, sizeof(b2)));
                        return 0;
                }
        } else if (crec->backend == ACTUATOR_BACKEND_CPUSET)
                return log_warning_errno(r, "cgroup %s: cannot read its CPUs; kept to be given back later",
                                         crec->name);
        *ret_cur = TAKE_PTR(cur);
        return 1;
}

/* The original back; when the parent shrank since, as much of it as the
 * parent allows. */
static int cgroup_write_original(ActCtx *c, const ActCgroup *crec) {
        int r;

        r = cgroup_write(c, crec, crec->original_text);
        if (act_is_einval(r)) {
                _cleanup_cpuset_ CpuSet parent = NULL, orig = NULL;
                _cleanup_(freep) char *t2 = NULL;
                if (act_cgroup_parent_effective(c->a->root, crec->dir, crec->v2, &parent) >= 0 &&
                    cpuset_parse(crec->original_text, &orig) >= 0) {
                        hwloc_bitmap_and(orig, orig, parent);
                        if (hwloc_bitmap_iszero(orig))
                                hwloc_bitmap_copy(orig, parent);
                        if (cpuset_format(orig, &t2) >= 0) {
                                log_notice("cgroup %s: its original CPUs '%s' are no longer valid; giving "
                                           "back %s",
                                           crec->name, crec->original_text, t2);
                                r = cgroup_write(c, crec, t2);
                        }
                }
        }
        return r;
}

int act_release_cgroup_record(ActCtx *c, ActCgroup *crec) {
        Actuator *a = c->a;
        _cleanup_cpuset_ CpuSet cur = NULL;
        char b1[CPUSET_STRLEN];
        int r;

        if (crec->backend == ACTUATOR_BACKEND_THREADS || (!crec->window && !crec->pending))
                return 0;
        if (crec->backend == ACTUATOR_BACKEND_SYSTEMD &&
            !systemd_backend_eligible(a->live, a->bus, crec->dir, true)) {
                log_struct_errno(LOG_WARNING, -ENOTCONN, STEERD_MESSAGE_RESTORE,
                                 "cgroup %s: AllowedCPUs of %s cannot be given back without systemd on the "
                                 "bus; kept to be given back later",
                                 crec->name, crec->unit);
                return -ENOTCONN;
        }

        r = cgroup_still_steerds(c, crec, &cur);
        if (r <= 0)
                return r;
        r = cgroup_write_original(c, crec);
        if (r == -ENOENT) {
                log_notice("cgroup %s (%s) is gone: nothing to give back", crec->name, crec->dir);
                return 0;
        }
        if (r < 0)
                return log_struct_errno(LOG_WARNING, r, STEERD_MESSAGE_RESTORE,
                                        "cgroup %s: giving back CPUs '%s' (%s backend) failed; kept to be "
                                        "given back later",
                                        crec->name, crec->original_text,
                                        actuator_backend_to_string(crec->backend));
        log_struct(LOG_INFO, STEERD_MESSAGE_RESTORE, "cgroup %s: CPUs %s -> '%s', given back (%s backend)",
                   crec->name, cpuset_to_string(cur ?: crec->window, b1, sizeof(b1)), crec->original_text,
                   actuator_backend_to_string(crec->backend));
        return 1;
}
