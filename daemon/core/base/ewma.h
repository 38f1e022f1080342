/* SPDX-License-Identifier: MIT */
#pragma once

#include <math.h>
#include <stdint.h>

/* Exponential smoothing with a half-life rather than a bare alpha, so that the
 * smoothing means the same in wall time whatever the sample period is:
 * after one half-life an old value weighs half. half_life 0 = no smoothing. */
static inline double ewma_alpha(uint64_t dt_us, uint64_t half_life_us) {
        if (half_life_us == 0)
                return 1.0;
        return 1.0 - exp2(-(double) dt_us / (double) half_life_us);
}

static inline double ewma_update(double old, double sample, double alpha) {
        return old + alpha * (sample - old);
}
