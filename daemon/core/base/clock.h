/* SPDX-License-Identifier: MIT */
#pragma once

/* The wall clock, for what a person or another host reads (records, files,
 * the bus). The engines take their time as a parameter; this is for the
 * daemon's edges only. */

#include <stdint.h>
#include <time.h>

#include "steerd-macros.h"

static inline uint64_t now_realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}
