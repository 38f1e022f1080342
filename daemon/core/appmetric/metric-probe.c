/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "metric-probe.h"
#include "metric-source.h"

struct MetricProbe {
        MetricSpec spec;
        MetricType type;
        MetricAgg agg; /* resolved for type */
        MetricReading first;
        bool has_first;
        uint64_t first_us;
        int first_error; /* the block's first reading failed: why, for its end */
        char *first_message;
        double gauge_sum; /* readings of a gauge in this block */
        unsigned gauge_n;
        uint64_t gauge_at_us;
};

MetricProbe *metric_probe_free(MetricProbe *p) {
        if (!p)
                return NULL;
        metric_spec_done(&p->spec);
        metric_reading_done(&p->first);
        free(p->first_message);
        free(p);
        return NULL;
}

static bool is_gauge(const MetricProbe *p) {
        return p->agg == METRIC_AGG_MEAN && (p->type == METRIC_TYPE_GAUGE || p->type == METRIC_TYPE_UNTYPED);
}

static int read_now(const MetricProbe *p, MetricReading *ret, char **ret_error) {
        _cleanup_(freep) char *text = NULL;
        unsigned line = 0;
        int r;

        r = metric_source_fetch(p->spec.source, METRIC_PROBE_MAX_BYTES, &text, ret_error);
        if (r < 0)
                return r;
        r = exposition_read(text, &p->spec, ret, &line);
        if (r < 0 && ret_error) {
                const char *why = r == -EBADMSG       ? "is not the Prometheus text format"
                                  : r == -ENOENT      ? "has no such series"
                                  : r == -EMEDIUMTYPE ? "has it, of a type the aggregation does not fit"
                                                      : strerror(-r);
                if (r == -EBADMSG ? asprintf(ret_error, "metric source %s: line %u %s", p->spec.source, line,
                                             why) < 0
                                  : asprintf(ret_error, "metric source %s %s (%s)", p->spec.source, why,
                                             p->spec.name) < 0)
                        *ret_error = NULL;
        }
        return r;
}

int metric_probe_new(const char *spec, uint64_t now_us, MetricProbe **ret, char **ret_error) {
        _cleanup_(metric_probe_freep) MetricProbe *p = calloc(1, sizeof(MetricProbe));
        int r;

        if (!p)
                return -ENOMEM;
        r = metric_spec_parse(spec, &p->spec, ret_error);
        if (r < 0)
                return r;
        r = read_now(p, &p->first, ret_error);
        if (r < 0)
                return r;
        /* Kept: the type and the aggregation it resolved to; the reading
         * itself is not a block's start. */
        p->type = p->first.type;
        p->agg = p->first.agg;
        metric_reading_done(&p->first);
        (void) now_us;
        *ret = TAKE_PTR(p);
        return 0;
}

bool metric_probe_higher_is_better(const MetricProbe *p, bool *ret_known) {
        return metric_spec_higher_is_better_default(&p->spec, p->type, ret_known);
}

int metric_probe_block_start(MetricProbe *p, uint64_t now_us) {
        MetricReading r0 = {};
        int r;

        metric_reading_done(&p->first);
        p->has_first = false;
        p->gauge_sum = 0;
        p->gauge_n = 0;
        p->first_error = 0;
        free(p->first_message);
        p->first_message = NULL;
        r = read_now(p, &r0, &p->first_message);
        if (r < 0) {
                p->first_error = r;
                return r;
        }
        p->first = r0;
        p->has_first = true;
        p->first_us = now_us;
        if (is_gauge(p) && isfinite(r0.value)) {
                p->gauge_sum = r0.value;
                p->gauge_n = 1;
                p->gauge_at_us = now_us;
        }
        return 0;
}

int metric_probe_sample(MetricProbe *p, uint64_t now_us) {
        MetricReading r0 = {};
        int r;

        if (!p->has_first || !is_gauge(p) || now_us - p->gauge_at_us < METRIC_PROBE_GAUGE_USEC)
                return 0;
        p->gauge_at_us = now_us;
        r = read_now(p, &r0, NULL);
        if (r < 0)
                return r;
        if (isfinite(r0.value)) {
                p->gauge_sum += r0.value;
                p->gauge_n++;
        }
        metric_reading_done(&r0);
        return 0;
}

int metric_probe_block_end(MetricProbe *p, uint64_t now_us, double *ret, char **ret_error) {
        MetricReading last = {};
        int r;

        if (!p->has_first) {
                int first = p->first_error;
                if (first < 0 && ret_error)
                        *ret_error = TAKE_PTR(p->first_message);
                p->first_error = 0;
                return first < 0 ? first : -ENODATA;
        }
        r = read_now(p, &last, ret_error);
        if (r < 0)
                return r;
        double v;
        if (is_gauge(p)) {
                if (isfinite(last.value)) {
                        p->gauge_sum += last.value;
                        p->gauge_n++;
                }
                r = p->gauge_n > 0 ? 0 : -ENODATA;
                v = p->gauge_n > 0 ? p->gauge_sum / p->gauge_n : 0;
        } else
                r = metric_delta(&p->spec, &p->first, &last, (double) (now_us - p->first_us) / 1e6, &v);
        metric_reading_done(&last);
        if (r < 0) {
                if (r != -ENODATA && ret_error &&
                    asprintf(ret_error, "metric %s: %s", p->spec.name,
                             r == -ESTALE ? "the series was reset or changed shape during the block"
                                          : strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        *ret = v;
        return 0;
}
