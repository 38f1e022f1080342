/* SPDX-License-Identifier: MIT */
#pragma once

/* Parser of PSI files: /proc/pressure/cpu and a cgroup v2 cpu.pressure.
 * Errors are reported as described in proc-stat.h: -EBADMSG, logged as
 * "fname:line: reason", line through reterr_line. */

#include <stdbool.h>
#include <stdint.h>

#include "steerd-macros.h"

typedef struct Psi {
        double some_avg10, some_avg60, some_avg300; /* percent, 0..100 */
        uint64_t some_total;                        /* µs, cumulative */
        double full_avg10, full_avg60, full_avg300;
        uint64_t full_total;
        bool has_full; /* kernels before 5.13 have no "full" line for the system-wide cpu file */
} Psi;

/* Each line is "some|full avg10=X avg60=X avg300=X total=N", keys in that
 * order. "some" is required, "full" optional (all zero when absent); either
 * repeated is malformed. Lines starting with another word are ignored, so
 * that a kernel that adds a kind of stall does not break the daemon. */
int psi_parse(const char *contents, const char *fname, Psi *ret, unsigned *reterr_line);
