/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "log.h"
#include "snapshot-json.h"

static json_object *cpu_to_json(const CpuSample *c) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        if (!o || json_add(o, "cpu", json_object_new_int64(c->cpu)) < 0 ||
            json_add(o, "llc", json_object_new_int(c->llc)) < 0 ||
            json_add(o, "core", json_object_new_int(c->core)) < 0 ||
            json_add(o, "online", json_object_new_boolean(c->online)) < 0 ||
            json_add(o, "util", json_double_1(c->util)) < 0 ||
            json_add(o, "runnable", json_double_1(c->runnable)) < 0 ||
            json_add(o, "boosted", json_double_1(c->boosted)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static json_object *llc_to_json(const LlcSample *l) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        if (!o || json_add(o, "id", json_object_new_int64(l->id)) < 0 ||
            json_add(o, "cpus", json_cpuset(l->cpus)) < 0 ||
            json_add(o, "weight", json_object_new_int64(l->weight)) < 0 ||
            json_add(o, "util", json_double_1(l->util)) < 0 ||
            json_add(o, "boosted", json_double_1(l->boosted)) < 0 ||
            json_add(o, "nr_idle_scan", json_object_new_int64(l->nr_idle_scan)) < 0 ||
            json_add(o, "overloaded", json_object_new_boolean(l->overloaded)) < 0 ||
            (l->package >= 0 && json_add(o, "package", json_object_new_int(l->package)) < 0))
                return NULL;
        return TAKE_PTR(o);
}

static json_object *partners_to_json(const ThreadSample *t) {
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();
        for (unsigned i = 0; a && i < t->n_partners; i++) {
                _cleanup_(json_object_putp) json_object *p = json_object_new_object();
                if (!p || json_add(p, "tid", json_object_new_int64(t->partners[i].tid)) < 0 ||
                    json_add(p, "rate", json_double_1(t->partners[i].rate)) < 0 ||
                    json_object_array_add(a, p) < 0)
                        return NULL;
                TAKE_PTR(p);
        }
        return TAKE_PTR(a);
}

static json_object *thread_to_json(const ThreadSample *t) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        if (!o || json_add(o, "tid", json_object_new_int64(t->tid)) < 0 ||
            json_add(o, "starttime", json_object_new_uint64(t->starttime)) < 0 ||
            json_add(o, "cpu", json_object_new_int(t->cpu)) < 0 ||
            json_add(o, "allowed", json_cpuset(t->allowed)) < 0 ||
            json_add(o, "util", json_double_1(t->util)) < 0 ||
            json_add(o, "wait", json_double_1(t->wait)) < 0 ||
            json_add(o, "run_delay_ns", json_object_new_uint64(t->run_delay_ns)) < 0 ||
            json_add(o, "nr_migrations", json_object_new_uint64(t->nr_migrations)) < 0 ||
            (t->wakeups >= 0 && json_add(o, "wakeups", json_double_1(t->wakeups)) < 0) ||
            (t->tgid > 0 && json_add(o, "tgid", json_object_new_int64(t->tgid)) < 0) ||
            (t->n_partners > 0 && json_add(o, "partners", partners_to_json(t)) < 0) ||
            (t->wake_unknown && json_add(o, "wake_unknown", json_object_new_boolean(true)) < 0))
                return NULL;
        return TAKE_PTR(o);
}

static json_object *cgroup_to_json(const CgroupSample *c, bool processes) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(),
                                                *threads = json_object_new_array();
        if (!o || !threads || json_add(o, "path", json_object_new_string(c->path)) < 0 ||
            json_add(o, "policy", json_object_new_string(cgroup_policy_to_string(c->policy))) < 0 ||
            json_add(o, "allowed", json_cpuset(c->allowed)) < 0 ||
            json_add(o, "cpus", json_cpuset(c->cpus)) < 0 ||
            json_add(o, "pressure_some_avg10", json_double_1(c->pressure_some_avg10)) < 0 ||
            (c->usage >= 0 && json_add(o, "usage", json_double_1(c->usage)) < 0) ||
            json_add(o, "members", json_object_new_uint64(c->n_members)) < 0 ||
            (processes && json_add(o, "processes", json_object_new_uint64(c->n_processes)) < 0) ||
            json_add(o, "threads_partial", json_object_new_boolean(c->threads_partial)) < 0)
                return NULL;
        for (size_t i = 0; i < c->n_threads; i++)
                if (json_append(threads, thread_to_json(&c->threads[i])) < 0)
                        return NULL;
        if (json_add(o, "threads", TAKE_PTR(threads)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

int snapshot_to_json(const Snapshot *s, json_object **ret) {
        _cleanup_(json_object_putp)
                json_object *o = json_object_new_object(),
                            *source = json_object_new_object(), *cpus = json_object_new_array(),
                            *llcs = json_object_new_array(), *psi = json_object_new_object(),
                            *cgroups = json_object_new_array();

        if (!o || !source || !cpus || !llcs || !psi || !cgroups)
                return -ENOMEM;
        if (json_add(o, "time_us", json_object_new_uint64(s->time_us)) < 0 ||
            json_add(o, "period_us", json_object_new_uint64(s->period_us)) < 0 ||
            json_add(source, "runnable", json_object_new_string(runnable_source_to_string(s->source))) < 0 ||
            json_add(source, "threads_truncated", json_object_new_boolean(s->threads_truncated)) < 0 ||
            json_add(o, "source", TAKE_PTR(source)) < 0)
                return -ENOMEM;
        /* Only where it is on, with each cgroup's processes: what the policy
         * reads of it, so that a recording replays; older ones have neither. */
        if (s->kernel_cache_aware && json_add(o, "kernel_cache_aware", json_object_new_boolean(true)) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_cpus; i++)
                if (json_append(cpus, cpu_to_json(&s->cpus[i])) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < s->n_llcs; i++)
                if (json_append(llcs, llc_to_json(&s->llcs[i])) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < s->n_cgroups; i++)
                if (json_append(cgroups, cgroup_to_json(&s->cgroups[i], s->kernel_cache_aware)) < 0)
                        return -ENOMEM;
        if (json_add(psi, "some_avg10", json_double_1(s->psi_some_avg10)) < 0 ||
            json_add(psi, "full_avg10", json_double_1(s->psi_full_avg10)) < 0 ||
            json_add(o, "cpus", TAKE_PTR(cpus)) < 0 || json_add(o, "llcs", TAKE_PTR(llcs)) < 0 ||
            json_add(o, "psi", TAKE_PTR(psi)) < 0 || json_add(o, "cgroups", TAKE_PTR(cgroups)) < 0)
                return -ENOMEM;

        *ret = TAKE_PTR(o);
        return 0;
}

int snapshot_to_json_string(const Snapshot *s, char **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        int r = snapshot_to_json(s, &o);
        if (r < 0)
                return r;
        const char *t =
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!t)
                return -ENOMEM;
        char *d = strdup(t);
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

/* ---- reading back: strict, every field checked, errors name the field ---- */

typedef struct Ctx {
        const char *file;
        unsigned line;
} Ctx;

static int field(const Ctx *x, json_object *o, const char *key, json_type type, json_object **ret) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v))
                return log_parse_error(x->file, x->line, "missing field \"%s\"", key);
        /* Integers are acceptable where doubles are due. */
        json_type t = json_object_get_type(v);
        if (t != type && !(type == json_type_double && t == json_type_int))
                return log_parse_error(x->file, x->line, "field \"%s\" has the wrong type", key);
        *ret = v;
        return 0;
}

static int get_u64(const Ctx *x, json_object *o, const char *key, uint64_t *ret) {
        json_object *v = NULL;
        int r = field(x, o, key, json_type_int, &v);
        if (r < 0)
                return r;
        if (json_object_get_int64(v) < 0)
                return log_parse_error(x->file, x->line, "field \"%s\" is negative", key);
        *ret = json_object_get_uint64(v);
        return 0;
}

static int get_int(const Ctx *x, json_object *o, const char *key, int lo, int hi, int *ret) {
        json_object *v = NULL;
        int r = field(x, o, key, json_type_int, &v);
        if (r < 0)
                return r;
        int64_t i = json_object_get_int64(v);
        if (i < lo || i > hi)
                return log_parse_error(x->file, x->line, "field \"%s\" is out of range", key);
        *ret = (int) i;
        return 0;
}

static int get_double(const Ctx *x, json_object *o, const char *key, double *ret) {
        json_object *v = NULL;
        int r = field(x, o, key, json_type_double, &v);
        if (r < 0)
                return r;
        double d = json_object_get_double(v);
        if (!isfinite(d) || d < 0)
                return log_parse_error(x->file, x->line, "field \"%s\" is not a figure >= 0", key);
        *ret = d;
        return 0;
}

static int get_bool(const Ctx *x, json_object *o, const char *key, bool *ret) {
        json_object *v = NULL;
        int r = field(x, o, key, json_type_boolean, &v);
        if (r < 0)
                return r;
        *ret = json_object_get_boolean(v);
        return 0;
}

static int get_cpuset(const Ctx *x, json_object *o, const char *key, CpuSet *ret) {
        json_object *v = NULL;
        int r = field(x, o, key, json_type_string, &v);
        if (r < 0)
                return r;
        if (cpuset_parse(json_object_get_string(v), ret) < 0)
                return log_parse_error(x->file, x->line, "field \"%s\": '%s' is not a CPU list", key,
                                       json_object_get_string(v));
        return 0;
}

static int array(const Ctx *x, json_object *o, const char *key, json_object **ret, size_t *ret_n) {
        int r = field(x, o, key, json_type_array, ret);
        if (r < 0)
                return r;
        *ret_n = json_object_array_length(*ret);
        return 0;
}

/* Optional: recordings from before who wakes whom was sampled lack it. */
static int parse_partners(const Ctx *x, json_object *o, ThreadSample *t) {
        json_object *a = NULL;
        size_t n;

        if (!json_object_object_get_ex(o, "partners", NULL))
                return 0;
        if (array(x, o, "partners", &a, &n) < 0)
                return -EBADMSG;
        if (n > SNAPSHOT_MAX_PARTNERS)
                return log_parse_error(x->file, x->line, "field \"partners\" has more than %d entries",
                                       SNAPSHOT_MAX_PARTNERS);
        for (size_t i = 0; i < n; i++) {
                json_object *p = json_object_array_get_idx(a, i);
                int tid = 0;
                if (!json_object_is_type(p, json_type_object))
                        return log_parse_error(x->file, x->line, "field \"partners\" holds a non-object");
                if (get_int(x, p, "tid", 1, INT32_MAX, &tid) < 0 ||
                    get_double(x, p, "rate", &t->partners[i].rate) < 0)
                        return -EBADMSG;
                t->partners[i].tid = tid;
        }
        t->n_partners = (unsigned) n;
        return 0;
}

static int parse_thread(const Ctx *x, json_object *o, ThreadSample *t) {
        int tid = 0;
        if (get_int(x, o, "tid", 1, INT32_MAX, &tid) < 0 || get_u64(x, o, "starttime", &t->starttime) < 0 ||
            get_int(x, o, "cpu", -1, INT32_MAX, &t->cpu) < 0 ||
            get_cpuset(x, o, "allowed", &t->allowed) < 0 || get_double(x, o, "util", &t->util) < 0 ||
            get_double(x, o, "wait", &t->wait) < 0)
                return -EBADMSG;
        t->tid = tid;
        /* Optional: older recordings lack them. */
        json_object *v = NULL;
        if (json_object_object_get_ex(o, "run_delay_ns", &v))
                t->run_delay_ns = json_object_get_uint64(v);
        if (json_object_object_get_ex(o, "nr_migrations", &v))
                t->nr_migrations = json_object_get_uint64(v);
        t->wakeups = -1;
        if (json_object_object_get_ex(o, "wakeups", &v) && get_double(x, o, "wakeups", &t->wakeups) < 0)
                return -EBADMSG;
        int tgid = 0;
        if (json_object_object_get_ex(o, "tgid", &v) && get_int(x, o, "tgid", 1, INT32_MAX, &tgid) < 0)
                return -EBADMSG;
        t->tgid = tgid;
        if (json_object_object_get_ex(o, "wake_unknown", &v))
                t->wake_unknown = json_object_get_boolean(v);
        return parse_partners(x, o, t);
}

static int parse_cgroup(const Ctx *x, json_object *o, CgroupSample *c) {
        json_object *v = NULL, *threads = NULL;
        size_t n;

        if (field(x, o, "path", json_type_string, &v) < 0)
                return -EBADMSG;
        c->path = strdup(json_object_get_string(v));
        if (!c->path)
                return -ENOMEM;
        if (field(x, o, "policy", json_type_string, &v) < 0)
                return -EBADMSG;
        c->policy = cgroup_policy_from_string(json_object_get_string(v));
        if (c->policy < 0)
                return log_parse_error(x->file, x->line, "cgroup %s: unknown policy '%s'", c->path,
                                       json_object_get_string(v));
        if (get_cpuset(x, o, "allowed", &c->allowed) < 0 || get_cpuset(x, o, "cpus", &c->cpus) < 0 ||
            get_double(x, o, "pressure_some_avg10", &c->pressure_some_avg10) < 0 ||
            array(x, o, "threads", &threads, &n) < 0)
                return -EBADMSG;
        /* The layers' fields are optional: older recordings lack them (every
         * member listed, usage unknown). */
        c->usage = -1;
        c->n_members = n;
        if (json_object_object_get_ex(o, "usage", &v) && get_double(x, o, "usage", &c->usage) < 0)
                return -EBADMSG;
        if (json_object_object_get_ex(o, "members", &v))
                c->n_members = json_object_get_uint64(v);
        if (json_object_object_get_ex(o, "processes", &v))
                c->n_processes = json_object_get_uint64(v);
        if (json_object_object_get_ex(o, "threads_partial", &v))
                c->threads_partial = json_object_get_boolean(v);
        c->threads = calloc(MAX(n, (size_t) 1), sizeof(ThreadSample));
        if (!c->threads)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int r = parse_thread(x, json_object_array_get_idx(threads, i), &c->threads[i]);
                c->n_threads = i + 1; /* so that snapshot_free frees what was parsed */
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_source(const Ctx *x, json_object *o, Snapshot *s) {
        json_object *source = NULL, *v = NULL;

        if (field(x, o, "source", json_type_object, &source) < 0 ||
            field(x, source, "runnable", json_type_string, &v) < 0)
                return -EBADMSG;
        s->source = runnable_source_from_string(json_object_get_string(v));
        if (s->source < 0)
                return log_parse_error(x->file, x->line, "unknown runnable source '%s'",
                                       json_object_get_string(v));
        if (json_object_object_get_ex(source, "threads_truncated", &v))
                s->threads_truncated = json_object_get_boolean(v);
        if (json_object_object_get_ex(o, "kernel_cache_aware", &v))
                s->kernel_cache_aware = json_object_get_boolean(v);
        return 0;
}

static int parse_llcs(const Ctx *x, json_object *o, Snapshot *s) {
        json_object *llcs = NULL;
        size_t n;

        if (array(x, o, "llcs", &llcs, &n) < 0)
                return -EBADMSG;
        s->llcs = calloc(MAX(n, (size_t) 1), sizeof(LlcSample));
        if (!s->llcs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *l = json_object_array_get_idx(llcs, i);
                LlcSample *ls = &s->llcs[i];
                int id = 0, weight = 0, nr = 0;
                s->n_llcs = i + 1;
                if (get_int(x, l, "id", 0, INT32_MAX, &id) < 0 || get_cpuset(x, l, "cpus", &ls->cpus) < 0 ||
                    get_int(x, l, "weight", 0, INT32_MAX, &weight) < 0 ||
                    get_double(x, l, "util", &ls->util) < 0 ||
                    get_double(x, l, "boosted", &ls->boosted) < 0 ||
                    get_int(x, l, "nr_idle_scan", 0, INT32_MAX, &nr) < 0 ||
                    get_bool(x, l, "overloaded", &ls->overloaded) < 0)
                        return -EBADMSG;
                if ((size_t) id != i)
                        return log_parse_error(x->file, x->line,
                                               "llcs[%zu] has id %d: ids must be 0..n-1 in order", i, id);
                /* Optional: recordings from before it have none. */
                ls->package = -1;
                if (json_object_object_get_ex(l, "package", NULL) &&
                    get_int(x, l, "package", -1, INT32_MAX, &ls->package) < 0)
                        return -EBADMSG;
                ls->id = (unsigned) id;
                ls->weight = (unsigned) weight;
                ls->nr_idle_scan = (unsigned) nr;
        }
        return 0;
}

/* After the LLCs: a CPU's llc is an index into them. */
static int parse_cpus(const Ctx *x, json_object *o, Snapshot *s) {
        json_object *cpus = NULL;
        size_t n;

        if (array(x, o, "cpus", &cpus, &n) < 0)
                return -EBADMSG;
        s->cpus = calloc(MAX(n, (size_t) 1), sizeof(CpuSample));
        if (!s->cpus)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *c = json_object_array_get_idx(cpus, i);
                CpuSample *cs = &s->cpus[i];
                int cpu = 0;
                if (get_int(x, c, "cpu", 0, INT32_MAX, &cpu) < 0 ||
                    get_int(x, c, "llc", -1, (int) s->n_llcs - 1, &cs->llc) < 0 ||
                    get_int(x, c, "core", -1, INT32_MAX, &cs->core) < 0 ||
                    get_bool(x, c, "online", &cs->online) < 0 || get_double(x, c, "util", &cs->util) < 0 ||
                    get_double(x, c, "runnable", &cs->runnable) < 0 ||
                    get_double(x, c, "boosted", &cs->boosted) < 0)
                        return -EBADMSG;
                cs->cpu = (unsigned) cpu;
                if (i > 0 && cs->cpu <= s->cpus[i - 1].cpu)
                        return log_parse_error(x->file, x->line,
                                               "cpus must be sorted by cpu without duplicates (cpu %d)",
                                               cpu);
                s->n_cpus = i + 1;
        }
        return 0;
}

static int parse_cgroups(const Ctx *x, json_object *o, Snapshot *s) {
        json_object *cgroups = NULL;
        size_t n;
        int r;

        /* Optional in --once output of older versions; always in --record. */
        if (!json_object_object_get_ex(o, "cgroups", &cgroups))
                return 0;
        if (array(x, o, "cgroups", &cgroups, &n) < 0)
                return -EBADMSG;
        s->cgroups = calloc(MAX(n, (size_t) 1), sizeof(CgroupSample));
        if (!s->cgroups)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                s->n_cgroups = i + 1;
                r = parse_cgroup(x, json_object_array_get_idx(cgroups, i), &s->cgroups[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int snapshot_from_json_string(const char *text, const char *file, unsigned line, Snapshot **ret) {
        _cleanup_(snapshot_freep) Snapshot *s = calloc(1, sizeof(Snapshot));
        _cleanup_(json_object_putp) json_object *o = NULL;
        json_object *psi = NULL;
        enum json_tokener_error jerr;
        Ctx x = {file, line};
        int r;

        if (!s)
                return -ENOMEM;
        o = json_tokener_parse_verbose(text, &jerr);
        if (!o)
                return log_parse_error(file, line, "not JSON: %s", json_tokener_error_desc(jerr));
        if (!json_object_is_type(o, json_type_object))
                return log_parse_error(file, line, "not a JSON object");

        if (get_u64(&x, o, "time_us", &s->time_us) < 0 || get_u64(&x, o, "period_us", &s->period_us) < 0)
                return -EBADMSG;
        r = parse_source(&x, o, s);
        if (r < 0)
                return r;
        r = parse_llcs(&x, o, s);
        if (r < 0)
                return r;
        r = parse_cpus(&x, o, s);
        if (r < 0)
                return r;
        if (field(&x, o, "psi", json_type_object, &psi) < 0 ||
            get_double(&x, psi, "some_avg10", &s->psi_some_avg10) < 0 ||
            get_double(&x, psi, "full_avg10", &s->psi_full_avg10) < 0)
                return -EBADMSG;
        r = parse_cgroups(&x, o, s);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}
