/* SPDX-License-Identifier: MIT */
/* The appmetric parsers: metric_spec_parse() (the operator's --metric) and
 * exposition_read() (an application's /metrics page or textfile, anyone's
 * text), then metric_delta() on what was read.
 *
 * The input's first line is a SPEC, the rest the exposition text. The text
 * is read with that spec when it parses, and with a few fixed ones
 * (a counter, a gauge, a histogram's mean and quantile) either way. */
#include <limits.h>
#include <math.h>

#include "exposition.h"
#include "fuzz.h"

static const char *const fixed_specs[] = {
        "/f#x",
        "/f#x@rate",
        "/f#x{a=\"1\"}@mean",
        "/f#x@p99",
        "/f#x@q0.5",
        "/f#http_request_duration_seconds{handler=\"/api\"}@p50",
        "http://127.0.0.1:9100/metrics#node_cpu_seconds_total{mode=\"idle\"}",
};

static void check_spec(const char *line) {
        _cleanup_(freep) char *err = NULL;
        MetricSpec spec = {.quantile = 4242};
        int r;

        r = metric_spec_parse(line, &spec, &err);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -EPERM);
                FUZZ_CHECK(err && startswith_literal(err, "metric spec: "));
                FUZZ_CHECK(spec.quantile == 4242 && !spec.source && !spec.name && !spec.labels);
                return;
        }
        FUZZ_CHECK(!err);
        FUZZ_CHECK(spec.source && *spec.source && !strchr(spec.source, '#'));
        FUZZ_CHECK(spec.name && *spec.name);
        FUZZ_CHECK(spec.n_labels == 0 || spec.labels);
        for (size_t i = 0; i < spec.n_labels; i++) {
                FUZZ_CHECK(spec.labels[i].name && *spec.labels[i].name && spec.labels[i].value);
                for (size_t j = 0; j < i; j++)
                        FUZZ_CHECK(!streq(spec.labels[i].name, spec.labels[j].name));
        }
        FUZZ_CHECK(spec.agg >= 0 && spec.agg < _METRIC_AGG_MAX);
        if (spec.agg == METRIC_AGG_QUANTILE)
                FUZZ_CHECK(spec.quantile > 0 && spec.quantile <= 1);
        else
                FUZZ_CHECK(spec.quantile == 0);
        if (spec.source[0] != '/') {
                _cleanup_(metric_url_done) MetricUrl url = {};
                FUZZ_CHECK(metric_url_parse(spec.source, &url, NULL) == 0);
                FUZZ_CHECK(streq(url.host, "localhost") || streq(url.host, "::1") ||
                           startswith_literal(url.host, "127."));
                FUZZ_CHECK(url.port >= 1 && url.port <= 65535 && url.path[0] == '/');
        }
        metric_spec_done(&spec);
}

static void check_read(const char *text, const MetricSpec *spec) {
        MetricReading m = {.value = 4242};
        unsigned line = UINT_MAX;
        MetricAgg agg;
        double v = 4242;
        int r;

        r = exposition_read(text, spec, &m, &line);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -ENOENT || r == -EMEDIUMTYPE);
                FUZZ_CHECK(m.value == 4242 && !m.le && !m.buckets && m.n_matched == 0);
                if (r == -EBADMSG)
                        FUZZ_CHECK(line >= 1 && line <= fuzz_count_lines(text));
                else
                        FUZZ_CHECK(line == UINT_MAX);
                return;
        }
        FUZZ_CHECK(line == UINT_MAX);
        FUZZ_CHECK(m.type >= 0 && m.type < _METRIC_TYPE_MAX);
        FUZZ_CHECK(metric_agg_resolve(spec->agg, m.type, &agg) == 0 && agg == m.agg);
        FUZZ_CHECK(m.agg != METRIC_AGG_AUTO);
        FUZZ_CHECK(m.n_matched >= 1);
        FUZZ_CHECK((m.n_buckets == 0) == !m.le && (m.n_buckets == 0) == !m.buckets);
        if (m.type != METRIC_TYPE_HISTOGRAM)
                FUZZ_CHECK(m.n_buckets == 0);
        for (size_t i = 0; i < m.n_buckets; i++) {
                FUZZ_CHECK(!isnan(m.le[i]));
                FUZZ_CHECK(i == 0 || m.le[i - 1] < m.le[i]);
        }
        if (m.agg == METRIC_AGG_QUANTILE)
                FUZZ_CHECK(m.n_buckets >= 1 && isinf(m.le[m.n_buckets - 1]) && m.le[m.n_buckets - 1] > 0);

        /* A reading against itself: nothing happened. */
        r = metric_delta(spec, &m, &m, 1.0, &v);
        switch (m.agg) {
        case METRIC_AGG_RATE:
                FUZZ_CHECK(r == 0 ? v == 0 : (r == -EDOM && !isfinite(m.value)));
                break;
        case METRIC_AGG_MEAN:
                if (m.type == METRIC_TYPE_HISTOGRAM || m.type == METRIC_TYPE_SUMMARY)
                        FUZZ_CHECK(r == -ENODATA || (r == -EDOM && isnan(m.count)));
                else
                        FUZZ_CHECK(r == -EOPNOTSUPP);
                break;
        case METRIC_AGG_QUANTILE:
                FUZZ_CHECK(r == -ENODATA); /* all Δ buckets 0 (or NaN) */
                break;
        default:
                FUZZ_CHECK(false);
        }
        if (r < 0)
                FUZZ_CHECK(v == 4242);
        metric_reading_done(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *input = fuzz_string(data, size);
        char *nl = strchr(input, '\n');
        const char *text = nl ? nl + 1 : "";
        _cleanup_(metric_spec_done) MetricSpec spec = {};

        if (nl)
                *nl = '\0';
        check_spec(input);
        if (metric_spec_parse(input, &spec, NULL) >= 0)
                check_read(text, &spec);
        for (size_t i = 0; i < ELEMENTSOF(fixed_specs); i++) {
                _cleanup_(metric_spec_done) MetricSpec s = {};
                FUZZ_CHECK(metric_spec_parse(fixed_specs[i], &s, NULL) == 0);
                check_read(text, &s);
        }
        return 0;
}
