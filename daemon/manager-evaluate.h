/* SPDX-License-Identifier: MIT */
#pragma once

/* Evaluate=auto as the manager runs it (core/trial/evaluate.h). */

#include <stdbool.h>
#include <stdint.h>

#include "evaluate.h"
#include "optin.h"

typedef struct Manager Manager;
typedef struct ManagerEval ManagerEval;

/* The opt-in asks for it, or inherits the global Evaluate=auto. */
bool manager_evaluate_wanted(const Manager *m, const OptIn *o);
/* The cgroup is left out of the tick: a hands-off block, or steering off. */
bool manager_evaluation_hands_off(const Manager *m, const char *cgroup);
bool manager_evaluation_steering_off(const Manager *m, const char *cgroup);
/* After each tick: follow the opted-in set, run the blocks. */
void manager_evaluations_tick(Manager *m, uint64_t now_us);
/* One line for steerctl explain; -ENOENT when the cgroup is not evaluated. */
int manager_evaluation_explain(const Manager *m, const char *cgroup, uint64_t now_us, char **ret);
void manager_evaluations_free(Manager *m);
