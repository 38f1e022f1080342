/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdio.h>

#include "snapshot.h"

/* Human tables: one per LLC, one per CPU, then PSI and the opted-in
 * cgroups. Figures are on the capacity scale (1024 = one busy CPU) and as
 * percent of one CPU, which is what operators read first. */
int snapshot_format_text(const Snapshot *s, const char *topology_source, FILE *f);
