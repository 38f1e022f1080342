/* SPDX-License-Identifier: MIT */
#pragma once

/* systemd's D-Bus API and its encodings: knows nothing of the ledger. */

#include <systemd/sd-bus.h>

#include "cpuset.h"

/* "/system.slice/app.service" -> "app.service"; -EINVAL unless the last
 * component is a .service, .scope or .slice unit name. */
int systemd_unit_from_cgroup(const char *path, char **ret);
/* AllowedCPUs= as D-Bus "ay": byte i bit j = CPU 8i+j; the empty set is the
 * empty array (unset). */
int cpuset_to_unit_bitmask(hwloc_const_bitmap_t set, uint8_t **ret, size_t *ret_size);
int cpuset_from_unit_bitmask(const uint8_t *bytes, size_t size, CpuSet *ret);
bool systemd_backend_eligible(bool live, sd_bus *bus, const char *dir, bool v2);
int systemd_get_allowed_cpus(sd_bus *bus, const char *unit, CpuSet *ret);
int systemd_set_allowed_cpus(sd_bus *bus, const char *unit, hwloc_const_bitmap_t set);
