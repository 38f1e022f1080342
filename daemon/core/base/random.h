/* SPDX-License-Identifier: MIT */
#pragma once

/* splitmix64: a reproducible sequence from a seed a record keeps (a trial's
 * block order, Evaluate=auto's hands-off position), so that a run can be
 * replayed and explained. Not for anything an adversary may guess. */

#include <stdint.h>

static inline uint64_t splitmix64(uint64_t *state) {
        uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        return z ^ (z >> 31);
}
