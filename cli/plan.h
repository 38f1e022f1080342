/* SPDX-License-Identifier: MIT */
#pragma once

/* Plans as the daemon describes them (DESIGN.md 6: actions with kind,
 * cgroup, tid, cpus, policy, reason), formatted for top and monitor. */

#include <stdio.h>

#include "output.h"

/* The action array of a plan: the plan itself when it is an array, its
 * "actions" member when it is an object ({"tick": …, "actions": […]}), NULL
 * otherwise. */
json_object *plan_actions(json_object *plan);

/* One action on one line without newline, e.g.
 * "window set_cgroup_cpus /bench1 -> 0-3 (llc 0 nr_idle_scan 0 < 2)". */
void plan_format_action(FILE *f, json_object *action, bool reason);
