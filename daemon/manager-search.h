/* SPDX-License-Identifier: MIT */
#pragma once

/* The placement search as the manager runs it (core/trial/search.h). */

#include <stdbool.h>
#include <stdint.h>

#include "optin.h"
#include "search.h"
#include "snapshot.h"

typedef struct Manager Manager;
typedef struct ManagerSearch ManagerSearch;

/* The opt-in asks for it, or inherits the global Search=yes. */
bool manager_search_wanted(const Manager *m, const OptIn *o);
/* The cgroup is left out of the policy's tick: a hands-off or a placed
 * block of its search. */
bool manager_search_excluded(const Manager *m, const char *cgroup);
/* A placed block: out of the policy's tick, yet the actuator's (it holds
 * the placement). */
bool manager_search_places(const Manager *m, const char *cgroup);
/* After each tick: follow the opted-in set, run the blocks, place. */
void manager_searches_tick(Manager *m, uint64_t now_us, const Snapshot *snap);
/* One line for steerctl explain; -ENOENT when the cgroup is not searched. */
int manager_search_explain(const Manager *m, const char *cgroup, uint64_t now_us, char **ret);
void manager_searches_free(Manager *m);
