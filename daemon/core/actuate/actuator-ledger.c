/* SPDX-License-Identifier: MIT */
#include "actuator-ledger.h"
#include "tids.h"

static const char *const actuator_backend_table[_ACTUATOR_BACKEND_MAX] = {
        [ACTUATOR_BACKEND_THREADS] = "threads",
        [ACTUATOR_BACKEND_CPUSET] = "cpuset",
        [ACTUATOR_BACKEND_SYSTEMD] = "systemd",
};

DEFINE_STRING_TABLE_LOOKUP(actuator_backend, ActuatorBackend, _ACTUATOR_BACKEND_MAX);

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

static void opted_in_free(OptedIn *list, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(list[i].name);
                free(list[i].dir);
        }
        free(list);
}

void act_ledger_done(Actuator *a) {
        opted_in_free(a->cgroups, a->n_cgroups);
        a->cgroups = NULL;
        a->n_cgroups = 0;
        for (size_t i = 0; i < a->n_threads; i++)
                act_thread_done(&a->threads[i]);
        free(a->threads);
        a->threads = NULL;
        a->n_threads = 0;
        for (size_t i = 0; i < a->n_owned; i++)
                act_cgroup_done(&a->owned[i]);
        free(a->owned);
        a->owned = NULL;
        a->n_owned = 0;
        for (size_t i = 0; i < a->n_hands_off; i++)
                free(a->hands_off[i].cgroup);
        free(a->hands_off);
        a->hands_off = NULL;
        a->n_hands_off = 0;
        for (size_t i = 0; i < a->n_retry; i++)
                free(a->retry[i]);
        free(a->retry);
        a->retry = NULL;
        a->n_retry = 0;
}

/* ---- threads ---- */

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

/* ---- cgroups ---- */

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

/* ---- hands off ---- */

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

void act_hands_off_remove_at(Actuator *a, size_t i) {
        free(a->hands_off[i].cgroup);
        memmove(&a->hands_off[i], &a->hands_off[i + 1], (a->n_hands_off - i - 1) * sizeof(HandsOff));
        a->n_hands_off--;
}

void act_hands_off_clear_cgroup(Actuator *a, const char *cgroup) {
        for (size_t i = a->n_hands_off; i > 0; i--)
                if (streq(a->hands_off[i - 1].cgroup, cgroup))
                        act_hands_off_remove_at(a, i - 1);
}

/* ---- retry list ---- */

void act_retry_mark(Actuator *a, const char *cgroup, bool failed) {
        if (failed)
                a->givebacks_failed++;
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

bool act_retry_wanted(const Actuator *a, const char *cgroup) {
        for (size_t i = 0; i < a->n_retry; i++)
                if (streq(a->retry[i], cgroup))
                        return true;
        return false;
}

/* ---- opted in ---- */

int act_opted_in_set(Actuator *a, const char *const *names, const CgroupLocation *locs, size_t n) {
        OptedIn *list = NULL;
        size_t k = 0;
        int r = 0;

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
                opted_in_free(list, k);
                return r;
        }
        opted_in_free(a->cgroups, a->n_cgroups);
        a->cgroups = list;
        a->n_cgroups = n;
        return 0;
}

const OptedIn *act_opted_in_find(const Actuator *a, const char *name) {
        for (size_t i = 0; i < a->n_cgroups; i++)
                if (streq(a->cgroups[i].name, name))
                        return &a->cgroups[i];
        return NULL;
}

/* ---- queries ---- */

int act_owned_cgroup_names(const Actuator *a, char ***ret, size_t *ret_n) {
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

void actuator_counts(const Actuator *a, size_t *ret_threads, size_t *ret_cgroups) {
        if (ret_threads)
                *ret_threads = a ? a->n_threads : 0;
        if (ret_cgroups)
                *ret_cgroups = a ? a->n_owned : 0;
}

int actuator_owned_tids(const Actuator *a, const char *cgroup, pid_t **tids, size_t *n, size_t *alloc) {
        for (size_t i = 0; a && i < a->n_threads; i++) {
                if (!streq(a->threads[i].cgroup, cgroup))
                        continue;
                int r = tids_append(tids, n, alloc, a->threads[i].tid);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int cmp_owned(const void *x, const void *y) {
        const ActOwned *a = x, *b = y;
        int c = strcmp(a->cgroup, b->cgroup);
        return c != 0 ? c : (a->tid > b->tid) - (a->tid < b->tid);
}

int actuator_owned_by_cgroup(const Actuator *a, ActOwned **ret, size_t *ret_n) {
        size_t n = a ? a->n_threads : 0;
        ActOwned *v = calloc(MAX(n, (size_t) 1), sizeof(ActOwned));

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = (ActOwned){.cgroup = a->threads[i].cgroup, .tid = a->threads[i].tid};
        if (n > 1)
                qsort(v, n, sizeof(ActOwned), cmp_owned);
        *ret = v;
        *ret_n = n;
        return 0;
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

size_t actuator_kept_description(const Actuator *a, char *buf, size_t size) {
        _cleanup_(freep) char **names = NULL;
        size_t n = 0, len = 0;

        if (!buf || size == 0)
                return 0;
        buf[0] = '\0';
        if (!a || act_owned_cgroup_names(a, &names, &n) < 0)
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
