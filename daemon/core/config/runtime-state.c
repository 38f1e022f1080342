/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>

#include "log.h"
#include "runtime-state.h"
#include "snapshot-json.h"
#include "steerd-bus.h"

void runtime_state_done(RuntimeState *s) {
        optin_entries_free(s->opt_ins, s->n_opt_ins);
        for (size_t i = 0; i < s->n_opt_outs; i++)
                free(s->opt_outs[i]);
        free(s->opt_outs);
        *s = (RuntimeState){};
}

static int remove_opt_in(RuntimeState *s, const char *cgroup) {
        for (size_t i = 0; i < s->n_opt_ins; i++)
                if (streq(s->opt_ins[i].cgroup, cgroup)) {
                        free(s->opt_ins[i].cgroup);
                        memmove(&s->opt_ins[i], &s->opt_ins[i + 1],
                                (s->n_opt_ins - i - 1) * sizeof(OptInEntry));
                        s->n_opt_ins--;
                        return 1;
                }
        return 0;
}

static int remove_opt_out(RuntimeState *s, const char *cgroup) {
        for (size_t i = 0; i < s->n_opt_outs; i++)
                if (streq(s->opt_outs[i], cgroup)) {
                        free(s->opt_outs[i]);
                        memmove(&s->opt_outs[i], &s->opt_outs[i + 1],
                                (s->n_opt_outs - i - 1) * sizeof(char *));
                        s->n_opt_outs--;
                        return 1;
                }
        return 0;
}

int runtime_state_opt_in(RuntimeState *s, const char *cgroup, CgroupPolicy p) {
        return runtime_state_opt_in_full(s, cgroup, p, OPTIN_EVALUATE_INHERIT, OPTIN_SEARCH_INHERIT);
}

int runtime_state_opt_in_full(RuntimeState *s, const char *cgroup, CgroupPolicy p, OptInEvaluate ev,
                              OptInSearch search) {
        if (ev < 0 || ev >= _OPTIN_EVALUATE_MAX || search < 0 || search >= _OPTIN_SEARCH_MAX)
                return -EINVAL;
        for (size_t i = 0; i < s->n_opt_ins; i++)
                if (streq(s->opt_ins[i].cgroup, cgroup)) {
                        s->opt_ins[i].policy = p;
                        s->opt_ins[i].evaluate = ev;
                        s->opt_ins[i].search = search;
                        remove_opt_out(s, cgroup);
                        return 0;
                }
        if (s->n_opt_ins >= STEERD_RUNTIME_RULES_MAX)
                return -E2BIG;
        remove_opt_out(s, cgroup);
        OptInEntry *n = realloc(s->opt_ins, (s->n_opt_ins + 1) * sizeof(OptInEntry));
        if (!n)
                return -ENOMEM;
        s->opt_ins = n;
        char *d = strdup(cgroup);
        if (!d)
                return -ENOMEM;
        s->opt_ins[s->n_opt_ins++] =
                (OptInEntry){.cgroup = d, .policy = p, .evaluate = ev, .search = search};
        return 0;
}

int runtime_state_opt_out(RuntimeState *s, const char *cgroup) {
        if (!runtime_state_opted_out(s, cgroup) && s->n_opt_outs >= STEERD_RUNTIME_RULES_MAX)
                return -E2BIG;
        remove_opt_in(s, cgroup);
        if (runtime_state_opted_out(s, cgroup))
                return 0;
        char **n = realloc(s->opt_outs, (s->n_opt_outs + 1) * sizeof(char *));
        if (!n)
                return -ENOMEM;
        s->opt_outs = n;
        if (!(s->opt_outs[s->n_opt_outs] = strdup(cgroup)))
                return -ENOMEM;
        s->n_opt_outs++;
        return 0;
}

bool runtime_state_opted_out(const RuntimeState *s, const char *cgroup) {
        for (size_t i = 0; i < s->n_opt_outs; i++)
                if (streq(s->opt_outs[i], cgroup))
                        return true;
        return false;
}

typedef struct Checker {
        RuntimeRuleCheck check;
        void *userdata;
        char why[RUNTIME_WHY_MAX]; /* why the file is refused, if it is */
} Checker;

/* One rule of the file: a rule, and one the reader's check takes. */
static int check_rule(Checker *k, bool opt_in, size_t i, const char *rule) {
        const char *list = opt_in ? "opt_ins" : "opt_outs";
        char why[RUNTIME_WHY_MAX] = "";

        if (!rule || optin_rule_kind(rule) < 0) {
                snprintf(k->why, sizeof(k->why), "%s[%zu]: '%.256s' is not a cgroup rule", list, i,
                         rule ?: "");
                return -EBADMSG;
        }
        if (k->check && k->check(rule, opt_in, k->userdata, why, sizeof(why)) < 0) {
                /* The check's message may be as long as k->why: it is cut. */
                (void) !snprintf(k->why, sizeof(k->why), "%s[%zu]: %.*s", list, i,
                                 (int) (sizeof(k->why) - 32), why);
                return -EBADMSG;
        }
        return 0;
}

static int too_many(Checker *k, const char *list, size_t n) {
        snprintf(k->why, sizeof(k->why), "%s: %zu rules, at most %d are taken", list, n,
                 STEERD_RUNTIME_RULES_MAX);
        return -EBADMSG;
}

static int parse_mode(json_object *o, RuntimeState *s) {
        json_object *v;

        if (!json_object_object_get_ex(o, "mode", &v) || !json_object_is_type(v, json_type_string))
                return 0;
        Mode m = mode_from_string(json_object_get_string(v));
        if (m < 0)
                return -EBADMSG;
        s->has_mode = true;
        s->mode = m;
        json_object *t;
        if (json_object_object_get_ex(o, "mode_set_usec", &t) && json_object_is_type(t, json_type_int))
                s->mode_set_usec = json_object_get_uint64(t);
        return 0;
}

static int parse_opt_ins(json_object *v, RuntimeState *s, Checker *k) {
        if (!json_object_is_type(v, json_type_array))
                return -EBADMSG;
        size_t n = json_object_array_length(v);
        if (n > STEERD_RUNTIME_RULES_MAX)
                return too_many(k, "opt_ins", n);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i), *c, *p;
                if (!json_object_object_get_ex(e, "cgroup", &c) ||
                    !json_object_object_get_ex(e, "policy", &p))
                        return -EBADMSG;
                const char *cg = json_object_get_string(c);
                CgroupPolicy pol = cgroup_policy_from_string(json_object_get_string(p));
                OptInEvaluate ev = OPTIN_EVALUATE_INHERIT;
                json_object *x;
                if (json_object_object_get_ex(e, "evaluate", &x) &&
                    (!json_object_is_type(x, json_type_string) ||
                     (ev = optin_evaluate_from_string(json_object_get_string(x))) < 0))
                        return -EBADMSG;
                OptInSearch search = OPTIN_SEARCH_INHERIT;
                if (json_object_object_get_ex(e, "search", &x) &&
                    (!json_object_is_type(x, json_type_string) ||
                     (search = optin_search_from_string(json_object_get_string(x))) < 0))
                        return -EBADMSG;
                int r = check_rule(k, true, i, cg);
                if (r < 0 || pol < 0)
                        return -EBADMSG;
                r = runtime_state_opt_in_full(s, cg, pol, ev, search);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_opt_outs(json_object *v, RuntimeState *s, Checker *k) {
        if (!json_object_is_type(v, json_type_array))
                return -EBADMSG;
        size_t n = json_object_array_length(v);
        if (n > STEERD_RUNTIME_RULES_MAX)
                return too_many(k, "opt_outs", n);
        for (size_t i = 0; i < n; i++) {
                const char *cg = json_object_get_string(json_object_array_get_idx(v, i));
                int r = check_rule(k, false, i, cg);
                if (r < 0)
                        return r;
                r = runtime_state_opt_out(s, cg);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse(json_object *o, RuntimeState *s, Checker *k) {
        json_object *v;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;
        if ((r = parse_mode(o, s)) < 0)
                return r;
        if (json_object_object_get_ex(o, "opt_ins", &v) && (r = parse_opt_ins(v, s, k)) < 0)
                return r;
        if (json_object_object_get_ex(o, "opt_outs", &v) && (r = parse_opt_outs(v, s, k)) < 0)
                return r;
        return 0;
}

int runtime_state_load_checked(const char *path, RuntimeRuleCheck check, void *userdata, RuntimeState *ret) {
        RuntimeState s = {};
        Checker k = {.check = check, .userdata = userdata};
        _cleanup_(json_object_putp) json_object *o = NULL;

        if (access(path, F_OK) < 0) {
                *ret = s;
                return 0;
        }
        o = json_object_from_file(path);
        int r = o ? parse(o, &s, &k) : -EBADMSG;
        if (r == -ENOMEM) {
                runtime_state_done(&s);
                return r;
        }
        if (r < 0) {
                runtime_state_done(&s);
                _cleanup_(freep) char *bad = NULL;
                if (asprintf(&bad, "%s.bad", path) >= 0)
                        (void) rename(path, bad);
                log_error("%s: malformed%s%s; moved aside to %s.bad, starting without runtime changes", path,
                          k.why[0] ? ": " : "", k.why, path);
                *ret = (RuntimeState){};
                return 0;
        }
        *ret = s;
        return 0;
}

int runtime_state_load(const char *path, RuntimeState *ret) {
        return runtime_state_load_checked(path, NULL, NULL, ret);
}

int runtime_state_save(const RuntimeState *s, const char *path) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        json_object *ins = json_object_new_array(), *outs = json_object_new_array();
        _cleanup_(freep) char *tmp = NULL;
        int r;

        if (!o || !ins || !outs) {
                json_object_put(ins);
                json_object_put(outs);
                return -ENOMEM;
        }
        json_object_object_add(o, "version", json_object_new_int(1));
        if (s->has_mode) {
                json_object_object_add(o, "mode", json_object_new_string(mode_to_string(s->mode)));
                if (s->mode_set_usec > 0)
                        json_object_object_add(o, "mode_set_usec", json_object_new_uint64(s->mode_set_usec));
        }
        for (size_t i = 0; i < s->n_opt_ins; i++) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "cgroup", json_object_new_string(s->opt_ins[i].cgroup));
                json_object_object_add(
                        e, "policy", json_object_new_string(cgroup_policy_to_string(s->opt_ins[i].policy)));
                if (s->opt_ins[i].evaluate != OPTIN_EVALUATE_INHERIT)
                        json_object_object_add(
                                e, "evaluate",
                                json_object_new_string(optin_evaluate_to_string(s->opt_ins[i].evaluate)));
                if (s->opt_ins[i].search != OPTIN_SEARCH_INHERIT)
                        json_object_object_add(
                                e, "search",
                                json_object_new_string(optin_search_to_string(s->opt_ins[i].search)));
                json_object_array_add(ins, e);
        }
        for (size_t i = 0; i < s->n_opt_outs; i++)
                json_object_array_add(outs, json_object_new_string(s->opt_outs[i]));
        json_object_object_add(o, "opt_ins", ins);
        json_object_object_add(o, "opt_outs", outs);

        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY);
        _cleanup_(closep) int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return log_error_errno(errno, "Cannot write %s", tmp);
        size_t len = strlen(text);
        if (write(fd, text, len) != (ssize_t) len || write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return log_error_errno(r, "Cannot write %s", tmp);
        }
        if (rename(tmp, path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return log_error_errno(r, "Cannot replace %s", path);
        }
        return 0;
}
