/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>

#include "log.h"
#include "runtime-state.h"
#include "snapshot-json.h"

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
        remove_opt_out(s, cgroup);
        for (size_t i = 0; i < s->n_opt_ins; i++)
                if (streq(s->opt_ins[i].cgroup, cgroup)) {
                        s->opt_ins[i].policy = p;
                        return 0;
                }
        OptInEntry *n = realloc(s->opt_ins, (s->n_opt_ins + 1) * sizeof(OptInEntry));
        if (!n)
                return -ENOMEM;
        s->opt_ins = n;
        char *d = strdup(cgroup);
        if (!d)
                return -ENOMEM;
        s->opt_ins[s->n_opt_ins++] = (OptInEntry){.cgroup = d, .policy = p};
        return 0;
}

int runtime_state_opt_out(RuntimeState *s, const char *cgroup) {
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

static int parse(json_object *o, RuntimeState *s) {
        json_object *v;

        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;
        if (json_object_object_get_ex(o, "mode", &v) && json_object_is_type(v, json_type_string)) {
                Mode m = mode_from_string(json_object_get_string(v));
                if (m < 0)
                        return -EBADMSG;
                s->has_mode = true;
                s->mode = m;
                json_object *t;
                if (json_object_object_get_ex(o, "mode_set_usec", &t) &&
                    json_object_is_type(t, json_type_int))
                        s->mode_set_usec = json_object_get_uint64(t);
        }
        if (json_object_object_get_ex(o, "opt_ins", &v)) {
                if (!json_object_is_type(v, json_type_array))
                        return -EBADMSG;
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        json_object *e = json_object_array_get_idx(v, i), *c, *p;
                        if (!json_object_object_get_ex(e, "cgroup", &c) ||
                            !json_object_object_get_ex(e, "policy", &p))
                                return -EBADMSG;
                        const char *cg = json_object_get_string(c);
                        CgroupPolicy pol = cgroup_policy_from_string(json_object_get_string(p));
                        if (!cg || optin_rule_kind(cg) < 0 || pol < 0)
                                return -EBADMSG;
                        int r = runtime_state_opt_in(s, cg, pol);
                        if (r < 0)
                                return r;
                }
        }
        if (json_object_object_get_ex(o, "opt_outs", &v)) {
                if (!json_object_is_type(v, json_type_array))
                        return -EBADMSG;
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        const char *cg = json_object_get_string(json_object_array_get_idx(v, i));
                        if (!cg || optin_rule_kind(cg) < 0)
                                return -EBADMSG;
                        int r = runtime_state_opt_out(s, cg);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int runtime_state_load(const char *path, RuntimeState *ret) {
        RuntimeState s = {};
        _cleanup_(json_object_putp) json_object *o = NULL;

        if (access(path, F_OK) < 0) {
                *ret = s;
                return 0;
        }
        o = json_object_from_file(path);
        int r = o ? parse(o, &s) : -EBADMSG;
        if (r < 0) {
                runtime_state_done(&s);
                _cleanup_(freep) char *bad = NULL;
                if (asprintf(&bad, "%s.bad", path) >= 0)
                        (void) rename(path, bad);
                log_error("%s: malformed; moved aside to %s.bad, starting without runtime changes", path,
                          path);
                *ret = (RuntimeState){};
                return 0;
        }
        *ret = s;
        return 0;
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
