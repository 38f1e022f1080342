/* SPDX-License-Identifier: MIT */
/* Waiting before acting again, both kinds: a policy the guard reverted (or a
 * window that outgrew itself) backs off for its cgroup, and a balance move
 * back to the LLC a thread or cgroup just left waits longer each time it
 * bounces. */

#include "policy-internal.h"

/* The backoff after one more revert in a row. */
uint64_t policy_backoff_us(const Settings *st, const Backoff *b) {
        unsigned level = MIN(b->level + 1, 63u);
        uint64_t factor = MIN((uint64_t) 1 << level, (uint64_t) MAX(st->guard_backoff_max, 1u));

        return st->guard_window_ms * USEC_PER_MSEC * factor;
}

void policy_back_off(CgroupState *c, ActionPolicy p, uint64_t now_us, uint64_t off_us) {
        c->backoff[p].level = MIN(c->backoff[p].level + 1, 63u);
        c->backoff[p].until_us = now_us + off_us;
}

bool policy_backed_off(const CgroupState *c, ActionPolicy p, uint64_t now_us) {
        return c && p >= 0 && p < N_LAYER_POLICIES && now_us < c->backoff[p].until_us;
}

static uint64_t departure_window_us(const Departure *d, const Settings *settings) {
        uint64_t factor =
                MIN((uint64_t) 1 << MIN(d->bounces, 63u), (uint64_t) MAX(settings->guard_backoff_max, 1u));
        return policy_residency_us(settings) * factor;
}

bool policy_departure_blocks(const Departure *d, const Settings *settings, uint64_t now_us, int target) {
        return d->llc >= 0 && d->llc == target && now_us - d->at_us < departure_window_us(d, settings);
}

void policy_departure_record(Departure *d, const Settings *settings, uint64_t now_us, int from, int to) {
        /* A return counts as a bounce unless it comes after twice the longest
         * window: then the load has settled, and the count starts over. */
        uint64_t settled = 2 * policy_residency_us(settings) * MAX(settings->guard_backoff_max, 1u);

        if (d->llc >= 0 && d->llc == to && now_us - d->at_us < settled)
                d->bounces = MIN(d->bounces + 1, 63u);
        else
                d->bounces = 0;
        d->llc = from;
        d->at_us = now_us;
}
