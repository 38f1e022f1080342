/* SPDX-License-Identifier: MIT */
#include "log.h"
#include "manager-internal.h"

/* ---- opt-ins ---- */

int manager_refresh_optins(Manager *m, uint64_t now_us, bool rescan_xattrs) {
        OptInSet next = {};
        int r;

        if (rescan_xattrs) {
                OptInEntry *x = NULL;
                size_t n = 0;
                r = optin_scan_xattrs(m->root, &m->mounts, 16, &x, &n);
                if (r < 0)
                        log_warning_errno(r, "Cannot scan the cgroup trees for %s", STEERD_XATTR);
                else {
                        optin_entries_free(m->xattr_optins, m->n_xattr_optins);
                        m->xattr_optins = x;
                        m->n_xattr_optins = n;
                }
                m->xattr_scanned_us = now_us;
        }

        r = optin_set_build(m->root, &m->mounts, m->runtime.opt_ins, m->runtime.n_opt_ins,
                            m->config->opt_ins, m->config->n_opt_ins, m->xattr_optins, m->n_xattr_optins,
                            &next);
        if (r < 0)
                return log_error_errno(r, "Cannot resolve the opted-in cgroups");
        /* steerctl opt-out of a cgroup the config or an xattr names wins. */
        for (size_t i = 0; i < next.n;) {
                if (!runtime_state_opted_out(&m->runtime, next.items[i].name)) {
                        i++;
                        continue;
                }
                free(next.items[i].name);
                cgroup_location_done(&next.items[i].loc);
                memmove(&next.items[i], &next.items[i + 1], (next.n - i - 1) * sizeof(OptIn));
                next.n--;
        }

        /* Give back what left the set, or whose policy or place changed. */
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *old = &m->optins.items[i], *new = optin_set_find(&next, old->name);
                if (new &&new->policy == old->policy && !!new->loc.dir == !!old->loc.dir &&
                    (!new->loc.dir || streq(new->loc.dir, old->loc.dir)))
                        continue;
                if (m->actuator)
                        (void) actuator_release_cgroup(m->actuator, old->name);
                log_info("Cgroup %s: %s", old->name,
                         new ? "changed; its CPUs were given back" : "opted out; its CPUs were given back");
        }
        for (size_t i = 0; i < next.n; i++) {
                const OptIn *n = &next.items[i], *old = optin_set_find(&m->optins, n->name);
                if (!old || !!old->loc.dir != !!n->loc.dir) {
                        if (n->loc.dir)
                                log_info("Cgroup %s (%s): opted in with policy %s (%s)", n->name, n->loc.dir,
                                         cgroup_policy_to_string(n->policy),
                                         optin_source_to_string(n->source));
                        else
                                log_warning("Cgroup %s: opted in (%s) but it does not exist; it is steered "
                                            "once it appears",
                                            n->name, optin_source_to_string(n->source));
                }
        }
        optin_set_done(&m->optins);
        m->optins = next;
        return 0;
}
