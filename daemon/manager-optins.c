/* SPDX-License-Identifier: MIT */
#include <systemd/sd-daemon.h>

#include "cgroup-confine.h"
#include "log.h"
#include "manager-internal.h"

/* ---- what comes from outside: confined to the cgroup mounts ---- */

int manager_check_config_rules(const Manager *m, const Config *c, char **ret_error) {
        _cleanup_(freep) char *text = NULL;
        int r = 0;

        for (size_t i = 0; i < c->n_opt_ins; i++) {
                const OptInEntry *e = &c->opt_ins[i];
                char why[CGROUP_WHY_MAX] = "";
                int k = optin_rule_check(m->root, &m->mounts, e->cgroup, /* check_dir= */ true, why,
                                         sizeof(why));
                if (k == -ENOMEM)
                        return k;
                if (k >= 0)
                        continue;
                const char *where = e->origin ?: c->path ?: "config";
                log_error("%s: [OptIn] %s: refused: %s", where, e->cgroup, why);
                char *t = NULL;
                if (asprintf(&t, "%s%s%s: [OptIn] %s: refused: %s", text ?: "", text ? "; " : "", where,
                             e->cgroup, why) < 0)
                        return -ENOMEM;
                free(text);
                text = t;
                r = -EBADMSG;
        }
        if (r < 0 && ret_error)
                *ret_error = TAKE_PTR(text);
        return r;
}

static int check_runtime_rule(const char *rule, bool opt_in, void *userdata, char *why, size_t why_size) {
        const Manager *m = userdata;
        /* An opt-out gives back, it never acts on a directory: its text alone is checked. */
        return optin_rule_check(m->root, &m->mounts, rule, /* check_dir= */ opt_in, why, why_size);
}

int manager_load_runtime(Manager *m) {
        return runtime_state_load_checked(m->runtime_file, check_runtime_rule, m, &m->runtime);
}

/* ---- units and globs: the rescan ---- */

/* systemd's D-Bus interface of a unit type that has a cgroup ("nginx.service"
 * -> "org.freedesktop.systemd1.Service"). */
static int unit_interface(const char *unit, char *buf, size_t size) {
        static const char *const types[][2] = {
                {".service", "Service"}, {".scope", "Scope"}, {".slice", "Slice"},
                {".socket", "Socket"},   {".mount", "Mount"}, {".swap", "Swap"},
        };
        size_t n = strlen(unit);

        for (size_t i = 0; i < ELEMENTSOF(types); i++) {
                size_t l = strlen(types[i][0]);
                if (n > l && streq(unit + n - l, types[i][0])) {
                        snprintf(buf, size, "org.freedesktop.systemd1.%s", types[i][1]);
                        return 0;
                }
        }
        return -EINVAL;
}

/* A unit's cgroup as systemd has it (ControlGroup, "/system.slice/nginx.service"):
 * -ENOENT when systemd has no such unit loaded, or the unit has no cgroup
 * now (inactive). Two short calls per unit rule and rescan, as the systemd
 * backend makes. */
static int systemd_unit_cgroup(sd_bus *bus, const char *unit, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) char *cg = NULL;
        const char *path;
        char iface[64];
        int r;

        r = unit_interface(unit, iface, sizeof(iface));
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "GetUnit", &error, &reply, "s", unit);
        if (r < 0)
                return sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit") ? -ENOENT : r;
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path, iface, "ControlGroup", &error,
                                       &cg);
        if (r < 0)
                return r;
        if (!cg[0] || optin_entry_validate_cgroup(cg) < 0)
                return -ENOENT;
        *ret = TAKE_PTR(cg);
        return 0;
}

/* systemd knows the units' cgroups on the live host it runs; elsewhere (a
 * fixture root, no bus) the walk finds a unit's cgroup by its name. */
static bool systemd_resolves_units(const Manager *m) {
        return m->bus && sd_booted() > 0 && rootdir_is_host(m->root);
}

static int collect_rules(const Manager *m, OptInRuleKind kind, const char ***ret, size_t *ret_n) {
        const OptInEntry *lists[] = {m->runtime.opt_ins, m->config->opt_ins};
        const size_t ns[] = {m->runtime.n_opt_ins, m->config->n_opt_ins};
        const char **rules = calloc(ns[0] + ns[1] + 1, sizeof(char *));
        size_t n = 0;

        if (!rules)
                return -ENOMEM;
        for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                for (size_t i = 0; i < ns[l]; i++)
                        if (optin_rule_kind(lists[l][i].cgroup) == kind)
                                rules[n++] = lists[l][i].cgroup;
        *ret = rules;
        *ret_n = n;
        return 0;
}

/* One walk of the cgroup trees for xattrs, globs (and units, when systemd
 * cannot be asked), then systemd for the units. */
static int rescan(Manager *m, uint64_t now_us) {
        _cleanup_(freep) const char **globs = NULL, **units = NULL;
        size_t n_globs = 0, n_units = 0;
        bool ask_systemd = systemd_resolves_units(m);
        OptInScan scan = {};
        int r;

        m->xattr_scanned_us = now_us;
        if ((r = collect_rules(m, OPTIN_RULE_GLOB, &globs, &n_globs)) < 0 ||
            (r = collect_rules(m, OPTIN_RULE_UNIT, &units, &n_units)) < 0)
                return r;
        if (!ask_systemd)
                for (size_t i = 0; i < n_units; i++)
                        globs[n_globs++] = units[i]; /* room: both lists come from the same entries */
        r = optin_scan(m->root, &m->mounts, 16, globs, n_globs, &scan);
        if (r < 0)
                return log_warning_errno(r, "Cannot scan the cgroup trees for %s and the opt-in rules",
                                         STEERD_XATTR);
        for (size_t i = 0; ask_systemd && i < n_units; i++) {
                _cleanup_(freep) char *cg = NULL;
                r = systemd_unit_cgroup(m->bus, units[i], &cg);
                if (r == -ENOENT)
                        continue;
                if (r < 0) {
                        log_debug("Cannot ask systemd for the cgroup of %s: %s", units[i], strerror(-r));
                        continue;
                }
                r = optin_scan_add_match(&scan, units[i], cg);
                if (r < 0) {
                        optin_scan_done(&scan);
                        return r;
                }
        }
        optin_scan_done(&m->scan);
        m->scan = scan;
        return 0;
}

/* ---- the set ---- */

static int build_set(const Manager *m, OptInSet *ret) {
        _cleanup_(freep) OptInCandidate *c = NULL;
        OptInSet next = {};
        size_t n = 0;
        int r;

        r = optin_candidates(&m->scan, m->runtime.opt_ins, m->runtime.n_opt_ins, m->config->opt_ins,
                             m->config->n_opt_ins, &c, &n);
        if (r < 0)
                return r;
        r = optin_set_build(m->root, &m->mounts, c, n, &next);
        if (r < 0)
                return r;
        /* steerctl opt-out of a cgroup, or of a rule, wins over what the
         * config or an xattr says. */
        for (size_t i = 0; i < next.n;) {
                OptIn *o = &next.items[i];
                if (!runtime_state_opted_out(&m->runtime, o->name) &&
                    !runtime_state_opted_out(&m->runtime, o->rule)) {
                        i++;
                        continue;
                }
                free(o->name);
                free(o->rule);
                free(o->refused);
                cgroup_location_done(&o->loc);
                memmove(o, o + 1, (next.n - i - 1) * sizeof(OptIn));
                next.n--;
        }
        *ret = next;
        return 0;
}

static void log_changes(Manager *m, const OptInSet *next) {
        /* Give back what left the set, or whose policy or place changed. */
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *old = &m->optins.items[i], *new = optin_set_find(next, old->name);
                if (new &&new->policy == old->policy && !!new->loc.dir == !!old->loc.dir &&
                    (!new->loc.dir || streq(new->loc.dir, old->loc.dir)))
                        continue;
                if (m->actuator)
                        (void) actuator_release_cgroup(m->actuator, old->name);
                log_info("Cgroup %s: %s", old->name,
                         new ? "changed; its CPUs were given back"
                         : optin_rule_kind(old->rule) == OPTIN_RULE_PATH || streq(old->rule, STEERD_XATTR)
                                 ? "opted out; its CPUs were given back"
                                 : "gone, or no longer matched by its rule; forgotten");
        }
        for (size_t i = 0; i < next->n; i++) {
                const OptIn *n = &next->items[i], *old = optin_set_find(&m->optins, n->name);
                if (old && !!old->loc.dir == !!n->loc.dir && !!old->refused == !!n->refused)
                        continue;
                /* Name the rule where it is not the cgroup itself. */
                bool by_rule = !streq(n->rule, n->name) && !streq(n->rule, STEERD_XATTR);
                if (n->loc.dir)
                        log_info("Cgroup %s (%s): opted in with policy %s (%s%s%s)", n->name, n->loc.dir,
                                 cgroup_policy_to_string(n->policy), optin_source_to_string(n->source),
                                 by_rule ? ", rule " : "", by_rule ? n->rule : "");
                else if (n->refused) {
                        if (!old || !old->refused || !streq(old->refused, n->refused))
                                log_warning("Cgroup %s (%s%s%s): refused, not steered: %s", n->name,
                                            optin_source_to_string(n->source), by_rule ? ", rule " : "",
                                            by_rule ? n->rule : "", n->refused);
                } else
                        log_warning("Cgroup %s: opted in (%s) but it does not exist; it is steered once it "
                                    "appears",
                                    n->name, optin_source_to_string(n->source));
        }
}

int manager_refresh_optins(Manager *m, uint64_t now_us, bool rescan_trees) {
        OptInSet next = {};
        int r;

        if (rescan_trees)
                (void) rescan(m, now_us);
        r = build_set(m, &next);
        if (r < 0)
                return log_error_errno(r, "Cannot resolve the opted-in cgroups");
        log_changes(m, &next);
        optin_set_done(&m->optins);
        m->optins = next;
        manager_sample_soon(m);
        return 0;
}
