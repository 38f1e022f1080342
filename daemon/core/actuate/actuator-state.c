/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <sys/stat.h>

#include "actuator-state.h"
#include "cgroup-confine.h"
#include "json-util.h"
#include "log.h"
#include "optin-entry.h"

/* The state file: what steerd owns, so that a successor can give it back
 * after a crash (DESIGN.md 5.2). Keyed by (tid, starttime): a reused tid is
 * never touched. Hands-off marks are not kept: what was let go is not
 * steerd's, so there is nothing of it to give back.
 *
 * {"version": 1,
 *  "threads": [{"tid": 1234, "starttime": 5678, "cgroup": "/bench1",
 *               "original": "0-1", "original_full": true,
 *               "request": "1" | null, "last_set": "1", "pending": null}],
 *  "cgroups": [{"name": "/bench1", "dir": "/sys/fs/cgroup/cpuset/bench1",
 *               "v2": false, "backend": "cpuset", "unit": null,
 *               "original_text": "0-1", "original": "0-1", "window": "0",
 *               "pending": null}]}
 *
 * "pending" is a change about to be made (write-ahead): a successor gives
 * back what has its last-set or its pending mask. original_full, request and
 * pending may be left out (false, null, null). */

#define STATE_VERSION 1

static int thread_to_json(const ActThread *t, json_object *o) {
        int r;

        if ((r = json_add_full(o, "tid", json_object_new_int64(t->tid), false)) < 0 ||
            (r = json_add_full(o, "starttime", json_object_new_uint64(t->starttime), false)) < 0 ||
            (r = json_add_full(o, "cgroup", json_object_new_string(t->cgroup), false)) < 0 ||
            (r = json_add_full(o, "original", json_cpuset(t->original), false)) < 0 ||
            (r = json_add_full(o, "original_full", json_object_new_boolean(t->original_full), false)) < 0 ||
            (r = json_add_full(o, "request", json_cpuset(t->request), !t->request)) < 0 ||
            (r = json_add_full(o, "last_set", json_cpuset(t->last_set), false)) < 0 ||
            (r = json_add_full(o, "pending", json_cpuset(t->pending), !t->pending)) < 0)
                return r;
        return 0;
}

static int cgroup_to_json(const ActCgroup *c, json_object *o) {
        int r;

        if ((r = json_add_full(o, "name", json_object_new_string(c->name), false)) < 0 ||
            (r = json_add_full(o, "dir", json_object_new_string(c->dir), false)) < 0 ||
            (r = json_add_full(o, "v2", json_object_new_boolean(c->v2), false)) < 0 ||
            (r = json_add_full(o, "backend", json_object_new_string(actuator_backend_to_string(c->backend)),
                               false)) < 0 ||
            (r = json_add_full(o, "unit", c->unit ? json_object_new_string(c->unit) : NULL, !c->unit)) < 0 ||
            (r = json_add_full(o, "original_text",
                               c->original_text ? json_object_new_string(c->original_text) : NULL,
                               !c->original_text)) < 0 ||
            (r = json_add_full(o, "original", json_cpuset(c->original), !c->original)) < 0 ||
            (r = json_add_full(o, "window", json_cpuset(c->window), !c->window)) < 0 ||
            (r = json_add_full(o, "pending", json_cpuset(c->pending), !c->pending)) < 0)
                return r;
        return 0;
}

/* A new object appended to array, for the caller to fill. */
static json_object *array_add_object(json_object *array) {
        json_object *o = json_object_new_object();
        if (!o || json_object_array_add(array, o) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static int state_to_json(const Actuator *a, json_object **ret) {
        _cleanup_(json_object_putp) json_object *root = json_object_new_object();
        json_object *threads = json_object_new_array(), *cgroups = json_object_new_array();
        int r;

        if (!root || !threads || !cgroups) {
                json_object_put(threads);
                json_object_put(cgroups);
                return -ENOMEM;
        }
        if ((r = json_add_full(root, "version", json_object_new_int(STATE_VERSION), false)) < 0 ||
            (r = json_add_full(root, "threads", threads, false)) < 0) {
                json_object_put(cgroups);
                return r;
        }
        r = json_add_full(root, "cgroups", cgroups, false);
        if (r < 0)
                return r;

        for (size_t i = 0; i < a->n_threads; i++) {
                json_object *o = array_add_object(threads);
                if (!o)
                        return -ENOMEM;
                r = thread_to_json(&a->threads[i], o);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < a->n_owned; i++) {
                json_object *o = array_add_object(cgroups);
                if (!o)
                        return -ENOMEM;
                r = cgroup_to_json(&a->owned[i], o);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(root);
        return 0;
}

static int write_atomic(const char *path, const char *text) {
        _cleanup_(freep) char *tmp = NULL, *copy = strdup(path);
        _cleanup_(closep) int fd = -EBADF;
        size_t n = strlen(text), done = 0;
        int r;

        if (!copy)
                return -ENOMEM;
        const char *slash = strrchr(path, '/');
        if (asprintf(&tmp, "%s/.%s.XXXXXX", dirname(copy), slash ? slash + 1 : path) < 0)
                return -ENOMEM;
        /* mkostemp() creates 0600; a reader never sees half a file. */
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fchmod(fd, 0600) < 0)
                goto fail;
        while (done < n) {
                ssize_t k = write(fd, text + done, n - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        goto fail;
                }
                done += (size_t) k;
        }
        /* No fsync(): what the file describes (masks, cpusets) does not
         * outlive the boot, and the rename alone is atomic against steerd's
         * own crash, the one case the file is for. fsync() cost a disk
         * flush per tick that acted. */
        if (close(TAKE_FD(fd)) < 0)
                goto fail;
        if (rename(tmp, path) < 0)
                goto fail;
        return 0;
fail:
        r = negative_errno();
        (void) unlink(tmp);
        return r;
}

int actuator_state_save(Actuator *a) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        const char *text;
        int r;

        if (!a->state_path || !a->dirty)
                return 0;
        if (a->n_threads == 0 && a->n_owned == 0) {
                if (unlink(a->state_path) < 0 && errno != ENOENT)
                        return negative_errno();
                a->dirty = false;
                return 0;
        }
        r = state_to_json(a, &j);
        if (r < 0)
                return r;
        text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return -ENOMEM;
        r = write_atomic(a->state_path, text);
        if (r < 0)
                return r;
        a->dirty = false;
        return 0;
}

int actuator_state_probe(const Actuator *a) {
        _cleanup_(freep) char *tmp = NULL, *copy = NULL;

        if (!a->state_path)
                return 0;
        copy = strdup(a->state_path);
        if (!copy)
                return -ENOMEM;
        const char *slash = strrchr(a->state_path, '/');
        /* The name of write_atomic()'s temporaries: one a kill leaves behind
         * is removed at the next start like theirs. */
        if (asprintf(&tmp, "%s/.%s.XXXXXX", dirname(copy), slash ? slash + 1 : a->state_path) < 0)
                return -ENOMEM;
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        close(fd);
        (void) unlink(tmp);
        return 0;
}

/* ---- loading ---- */

/* nullable: null or absent is NULL; else the key must be there. */
static json_object *get(json_object *o, const char *key, json_type type, bool nullable, bool *ok) {
        json_object *v = NULL;
        bool present = json_object_object_get_ex(o, key, &v);
        if ((!present && !nullable) || (!v && !nullable) || (v && !json_object_is_type(v, type)))
                *ok = false;
        return v;
}

static int get_cpuset(json_object *o, const char *key, bool nullable, bool nonempty, CpuSet *ret, bool *ok) {
        json_object *v = get(o, key, json_type_string, nullable, ok);
        *ret = NULL;
        if (!*ok || !v)
                return 0;
        int r = cpuset_parse(json_object_get_string(v), ret);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || (nonempty && hwloc_bitmap_iszero(*ret)))
                *ok = false;
        return 0;
}

static int dup_string(json_object *v, char **ret) {
        *ret = NULL;
        if (!v)
                return 0;
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

/* A cgroup entry is taken only if steerd could have written it: its
 * directory confined to the cgroup mounts (a directory gone since is fine:
 * giving back drops it), in the hierarchy the entry says, and a systemd
 * unit that is the directory's own. Else why says why. */
static bool cgroup_entry_confined(const Actuator *a, const char *dir, bool v2, const char *unit, char *why,
                                  size_t why_size) {
        bool in_v2 = false;
        int r = cgroup_dir_confined(a->root, &a->mounts, dir, &in_v2, NULL, why, why_size);
        if (r == -ENOENT)
                r = cgroup_path_confined(&a->mounts, dir, &in_v2, why, why_size);
        if (r < 0) {
                if (r != CGROUP_NOT_CONFINED)
                        snprintf(why, why_size, "%.256s: %s", dir, strerror(-r));
                return false;
        }
        if (in_v2 != v2) {
                snprintf(why, why_size, "%.256s is not in the %s hierarchy", dir,
                         v2 ? "cgroup2" : "cpuset v1");
                return false;
        }
        const char *base = strrchr(dir, '/') + 1;
        if (unit && !streq(unit, base)) {
                snprintf(why, why_size, "unit %.64s is not the unit of %.256s", unit, dir);
                return false;
        }
        return true;
}

static int load_thread(json_object *o, ActThread *ret, bool *ok) {
        ActThread t = {};
        json_object *tid = get(o, "tid", json_type_int, false, ok),
                    *st = get(o, "starttime", json_type_int, false, ok),
                    *cg = get(o, "cgroup", json_type_string, false, ok),
                    *full = get(o, "original_full", json_type_boolean, true, ok);
        int r;

        if (!*ok)
                return 0;
        int64_t tid_v = json_object_get_int64(tid);
        if (tid_v <= 0 || tid_v > INT32_MAX || json_object_get_int64(st) < 0) {
                *ok = false;
                return 0;
        }
        t.tid = (pid_t) tid_v;
        t.starttime = json_object_get_uint64(st);
        t.original_full = full && json_object_get_boolean(full);
        if (optin_entry_validate_cgroup(json_object_get_string(cg)) < 0) {
                *ok = false;
                return 0;
        }
        if ((r = dup_string(cg, &t.cgroup)) < 0 ||
            (r = get_cpuset(o, "original", false, true, &t.original, ok)) < 0 ||
            (r = get_cpuset(o, "request", true, true, &t.request, ok)) < 0 ||
            (r = get_cpuset(o, "last_set", false, true, &t.last_set, ok)) < 0 ||
            (r = get_cpuset(o, "pending", true, true, &t.pending, ok)) < 0) {
                act_thread_done(&t);
                return r;
        }
        if (!*ok) {
                act_thread_done(&t);
                return 0;
        }
        *ret = t;
        return 0;
}

static int load_cgroup(const Actuator *a, json_object *o, ActCgroup *ret, bool *ok, char *why,
                       size_t why_size) {
        ActCgroup c = {};
        _cleanup_cpuset_ CpuSet check = NULL;
        json_object *name = get(o, "name", json_type_string, false, ok),
                    *dir = get(o, "dir", json_type_string, false, ok),
                    *v2 = get(o, "v2", json_type_boolean, false, ok),
                    *backend = get(o, "backend", json_type_string, false, ok),
                    *unit = get(o, "unit", json_type_string, true, ok),
                    *text = get(o, "original_text", json_type_string, true, ok);
        int r;

        if (!*ok)
                return 0;
        c.backend = actuator_backend_from_string(json_object_get_string(backend));
        c.v2 = json_object_get_boolean(v2);
        if (optin_entry_validate_cgroup(json_object_get_string(name)) < 0 ||
            !cgroup_entry_confined(a, json_object_get_string(dir), c.v2,
                                   unit ? json_object_get_string(unit) : NULL, why, why_size)) {
                *ok = false;
                return 0;
        }
        if (c.backend < 0 || (c.backend != ACTUATOR_BACKEND_THREADS && !text) ||
            (c.backend == ACTUATOR_BACKEND_SYSTEMD && !unit) ||
            (text && cpuset_parse(json_object_get_string(text), &check) < 0)) {
                *ok = false;
                return 0;
        }
        if ((r = dup_string(name, &c.name)) < 0 || (r = dup_string(dir, &c.dir)) < 0 ||
            (r = dup_string(unit, &c.unit)) < 0 || (r = dup_string(text, &c.original_text)) < 0 ||
            (r = get_cpuset(o, "original", false, false, &c.original, ok)) < 0 ||
            (r = get_cpuset(o, "window", true, true, &c.window, ok)) < 0 ||
            (r = get_cpuset(o, "pending", true, true, &c.pending, ok)) < 0) {
                act_cgroup_done(&c);
                return r;
        }
        if (!*ok) {
                act_cgroup_done(&c);
                return 0;
        }
        *ret = c;
        return 0;
}

/* All or nothing: a state file half understood is not acted on. */
static int load_threads(Actuator *a, const char *path, json_object *threads) {
        bool ok = true;
        int r;

        for (size_t i = 0, n = json_object_array_length(threads); i < n; i++) {
                ActThread t = {};
                r = load_thread(json_object_array_get_idx(threads, i), &t, &ok);
                if (r < 0)
                        return r;
                if (!ok)
                        return log_parse_error(path, 0, "threads[%zu]: missing or invalid field", i);
                if (actuator_find_thread(a, t.tid)) {
                        act_thread_done(&t);
                        return log_parse_error(path, 0, "threads[%zu]: tid %d twice", i, (int) t.tid);
                }
                r = actuator_add_thread(a, &t);
                if (r < 0) {
                        act_thread_done(&t);
                        return r;
                }
        }
        return 0;
}

static int load_cgroups(Actuator *a, const char *path, json_object *cgroups) {
        bool ok = true;
        int r;

        for (size_t i = 0, n = json_object_array_length(cgroups); i < n; i++) {
                ActCgroup c = {};
                char why[CGROUP_WHY_MAX] = "";
                r = load_cgroup(a, json_object_array_get_idx(cgroups, i), &c, &ok, why, sizeof(why));
                if (r < 0)
                        return r;
                if (!ok && why[0])
                        return log_parse_error(path, 0, "cgroups[%zu]: refused, not acted on: %s", i, why);
                if (!ok)
                        return log_parse_error(path, 0, "cgroups[%zu]: missing or invalid field", i);
                if (actuator_find_owned(a, c.name)) {
                        act_cgroup_done(&c);
                        return log_parse_error(path, 0, "cgroups[%zu]: %s twice", i, c.name);
                }
                r = actuator_add_owned(a, &c);
                if (r < 0) {
                        act_cgroup_done(&c);
                        return r;
                }
        }
        return 0;
}

int actuator_state_load(Actuator *a, const char *path) {
        _cleanup_(json_object_putp) json_object *root = NULL;
        _cleanup_(freep) char *text = NULL;
        _cleanup_(closep) int fd = -EBADF;
        enum json_tokener_error jerr;
        json_object *threads, *cgroups, *version;
        bool ok = true;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        r = read_full_fd(fd, &text, NULL);
        if (r < 0)
                return r;
        root = json_tokener_parse_verbose(text, &jerr);
        if (!root)
                return log_parse_error(path, 0, "not JSON: %s", json_tokener_error_desc(jerr));
        if (!json_object_is_type(root, json_type_object))
                return log_parse_error(path, 0, "not a JSON object");
        version = get(root, "version", json_type_int, false, &ok);
        threads = get(root, "threads", json_type_array, false, &ok);
        cgroups = get(root, "cgroups", json_type_array, false, &ok);
        if (!ok)
                return log_parse_error(path, 0, "\"version\", \"threads\" and \"cgroups\" are required");
        if (json_object_get_int(version) != STATE_VERSION)
                return log_parse_error(path, 0, "version %d, expected %d", json_object_get_int(version),
                                       STATE_VERSION);

        r = load_threads(a, path, threads);
        if (r < 0)
                return r;
        r = load_cgroups(a, path, cgroups);
        if (r < 0)
                return r;
        a->dirty = false;
        return 0;
}

void act_state_remove_stale_temporaries(const char *state_path) {
        _cleanup_(freep) char *copy = strdup(state_path), *prefix = NULL;
        const char *slash = strrchr(state_path, '/');

        if (!copy || asprintf(&prefix, ".%s.", slash ? slash + 1 : state_path) < 0)
                return;
        const char *dir = dirname(copy);
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return;
        size_t n = strlen(prefix);
        for (struct dirent *de; (de = readdir(d));) {
                if (strncmp(de->d_name, prefix, n) != 0 || strlen(de->d_name) != n + 6)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        log_debug("Removed %s/%s, a state file a killed steerd never finished", dir,
                                  de->d_name);
        }
}
