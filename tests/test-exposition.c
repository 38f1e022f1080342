/* SPDX-License-Identifier: MIT */
/* The appmetric stage: --metric specs, the Prometheus text exposition
 * parser, the deltas a trial compares, and the sources (a file; http on the
 * loopback address, served by a forked child here). The expected quantiles
 * are worked by hand from Prometheus' histogram_quantile() rules, written
 * next to them. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test-helpers.h"

#include "exposition.h"
#include "metric-source.h"

#define assert_close(a, b, tol)                                                                             \
        do {                                                                                                \
                double _a = (a), _b = (b);                                                                  \
                if (!(fabs(_a - _b) <= (tol)))                                                              \
                        fail_msg("%s = %.17g, expected %.17g (within %g)", #a, _a, _b, (double) (tol));     \
        } while (0)

static void spec_ok(const char *text, MetricSpec *ret) {
        _cleanup_(freep) char *err = NULL;
        int r = metric_spec_parse(text, ret, &err);
        if (r < 0)
                fail_msg("metric_spec_parse(%s) = %d: %s", text, r, err ? err : "(no message)");
}

static void spec_bad(const char *text, int error, const char *message) {
        _cleanup_(freep) char *err = NULL;
        MetricSpec spec = {.quantile = 42};

        assert_int_equal(metric_spec_parse(text, &spec, &err), error);
        assert_non_null(err);
        assert_true(spec.quantile == 42 && !spec.source && !spec.name);
        if (!strstr(err, message))
                fail_msg("metric_spec_parse(%s): '%s' does not say '%s'", text, err, message);
        assert_non_null(startswith_literal(err, "metric spec: "));
}

static void test_spec_good(void **state) {
        _cleanup_(metric_spec_done) MetricSpec s = {};

        spec_ok("/var/lib/node_exporter/textfile/app.prom#app_requests_total@rate", &s);
        assert_string_equal(s.source, "/var/lib/node_exporter/textfile/app.prom");
        assert_string_equal(s.name, "app_requests_total");
        assert_int_equal(s.n_labels, 0);
        assert_int_equal(s.agg, METRIC_AGG_RATE);
        metric_spec_done(&s);

        spec_ok("http://127.0.0.1:9100/metrics#http_request_duration_seconds{handler=\"/api\", "
                "code = \"2#x@y\\\"\\\\\\n\",}@p99",
                &s);
        assert_string_equal(s.source, "http://127.0.0.1:9100/metrics");
        assert_string_equal(s.name, "http_request_duration_seconds");
        assert_int_equal(s.n_labels, 2);
        assert_string_equal(s.labels[0].name, "handler");
        assert_string_equal(s.labels[0].value, "/api");
        assert_string_equal(s.labels[1].name, "code");
        assert_string_equal(s.labels[1].value, "2#x@y\"\\\n");
        assert_int_equal(s.agg, METRIC_AGG_QUANTILE);
        assert_close(s.quantile, 0.99, 1e-15);
        metric_spec_done(&s);

        spec_ok("http://localhost/metrics#queue:depth@mean", &s);
        assert_string_equal(s.name, "queue:depth");
        assert_int_equal(s.agg, METRIC_AGG_MEAN);
        metric_spec_done(&s);

        spec_ok("http://[::1]:8080#x{}", &s);
        assert_int_equal(s.agg, METRIC_AGG_AUTO);
        assert_int_equal(s.n_labels, 0);
        metric_spec_done(&s);

        spec_ok("/f#lat@q0.95", &s);
        assert_close(s.quantile, 0.95, 1e-15);
        metric_spec_done(&s);
        spec_ok("/f#lat@p99.9", &s);
        assert_close(s.quantile, 0.999, 1e-15);
        metric_spec_done(&s);
        spec_ok("/f#lat@p100", &s);
        assert_close(s.quantile, 1, 0);
        metric_spec_done(&s);
        metric_spec_done(&s); /* twice is fine */
}

static void test_spec_bad(void **state) {
        spec_bad("/f/app.prom", -EINVAL, "no '#' between the source and the series");
        spec_bad("#x", -EINVAL, "no source before '#'");
        spec_bad("/f#", -EINVAL, "no series name after '#'");
        spec_bad("/f#9x", -EINVAL, "invalid series name");
        spec_bad("/f#x{a=\"1\",a=\"2\"}", -EINVAL, "the label 'a' is given twice");
        spec_bad("/f#x{a=\"1\"", -EINVAL, "in the selector");
        spec_bad("/f#x{a=1}", -EINVAL, "expected '\"' to open a label value in the selector");
        spec_bad("/f#x{a=\"\\t\"}", -EINVAL, "invalid escape sequence");
        spec_bad("/f#x{a=\"1\" b=\"2\"}", -EINVAL, "expected ',' or '}'");
        spec_bad("/f#x{=\"1\"}", -EINVAL, "invalid label name");
        spec_bad("/f#x@", -EINVAL, "no aggregation after '@'");
        spec_bad("/f#x@max", -EINVAL, "unknown aggregation 'max'");
        spec_bad("/f#x@p", -EINVAL, "unknown aggregation 'p'");
        spec_bad("/f#x@p-1", -EINVAL, "unknown aggregation");
        spec_bad("/f#x@q1e-1", -EINVAL, "unknown aggregation");
        spec_bad("/f#x@pinf", -EINVAL, "unknown aggregation");
        spec_bad("/f#x@p0", -EINVAL, "the quantile 'p0' is not in (0, 1]");
        spec_bad("/f#x@q1.5", -EINVAL, "not in (0, 1]");
        spec_bad("/f#x@p101", -EINVAL, "not in (0, 1]");
        spec_bad("/f#x y", -EINVAL, "unexpected ' y' after the series name");
        spec_bad("/f#x@rate ", -EINVAL, "unknown aggregation");
        spec_bad("app.prom#x", -EINVAL, "is not an http:// URL");
        spec_bad("https://127.0.0.1/metrics#x", -EPERM, "only http:// on the loopback address is allowed");
        spec_bad("file:///etc/passwd#x", -EPERM, "only http:// on the loopback address");
        spec_bad("http://example.com/metrics#x", -EPERM, "only the loopback address");
        spec_bad("http://10.0.0.1/#x", -EPERM, "not 10.0.0.1");
        spec_bad("http://evil@127.0.0.1/#x", -EPERM, "user information");
        spec_bad("http://127.0.0.1:0/#x", -EINVAL, "bad port");
        spec_bad("http://127.0.0.1:/#x", -EINVAL, "bad port");
        spec_bad("http://127.0.0.1:65536/#x", -EINVAL, "bad port");

        /* No message asked for: the error still. */
        MetricSpec s = {};
        assert_int_equal(metric_spec_parse("/f", &s, NULL), -EINVAL);
        assert_int_equal(metric_spec_parse(NULL, &s, NULL), -EINVAL);
}

static void test_url(void **state) {
        static const struct {
                const char *url;
                int r;
                const char *host;
                unsigned port;
                const char *path;
        } cases[] = {
                {"http://127.0.0.1:9100/metrics", 0, "127.0.0.1", 9100, "/metrics"},
                {"HTTP://127.1.2.3", 0, "127.1.2.3", 80, "/"},
                {"http://LocalHost:8080?x=1", 0, "localhost", 8080, "/?x=1"},
                {"http://[::1]/m", 0, "::1", 80, "/m"},
                {"http://[0:0:0:0:0:0:0:1]:1/m", 0, "::1", 1, "/m"},
                {"http://[::ffff:127.0.0.1]/", -EPERM, NULL, 0, NULL},
                {"http://[::2]/", -EPERM, NULL, 0, NULL},
                {"http://127.1/", -EPERM, NULL, 0, NULL}, /* not a dotted quad: not the loopback literal */
                {"http://0127.0.0.1/", -EPERM, NULL, 0, NULL}, /* octal-looking: refused */
                {"http://128.0.0.1/", -EPERM, NULL, 0, NULL},
                {"http://localhost.evil.com/", -EPERM, NULL, 0, NULL},
                {"http://127.0.0.1.nip.io/", -EPERM, NULL, 0, NULL},
                {"http://user:pw@localhost/", -EPERM, NULL, 0, NULL},
                {"http://127.0.0.1@evil.com/", -EPERM, NULL, 0, NULL},
                {"http://evil.com\\@127.0.0.1/", -EPERM, NULL, 0, NULL},
                {"https://localhost/", -EPERM, NULL, 0, NULL},
                {"ftp://localhost/", -EPERM, NULL, 0, NULL},
                {"gopher://127.0.0.1/", -EPERM, NULL, 0, NULL},
                {"http://", -EINVAL, NULL, 0, NULL},
                {"http://:80/", -EINVAL, NULL, 0, NULL},
                {"http://[::1/", -EINVAL, NULL, 0, NULL},
                {"http://[::1]x/", -EINVAL, NULL, 0, NULL},
                {"http://127.0.0.1:123456/", -EINVAL, NULL, 0, NULL},
                {"http://127.0.0.1:8o/", -EINVAL, NULL, 0, NULL},
                {"http://127.0.0.1/a b", -EINVAL, NULL, 0, NULL},
                {"http://127.0.0.1/a\r\nHost: x", -EINVAL, NULL, 0, NULL},
                {"localhost:80", -EINVAL, NULL, 0, NULL},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(metric_url_done) MetricUrl u = {};
                _cleanup_(freep) char *err = NULL;
                int r = metric_url_parse(cases[i].url, &u, &err);

                if (r != cases[i].r)
                        fail_msg("%s: %d, expected %d (%s)", cases[i].url, r, cases[i].r, err ? err : "");
                if (r < 0) {
                        assert_non_null(err);
                        assert_non_null(startswith_literal(err, "metric source: "));
                        assert_null(u.host);
                        continue;
                }
                assert_null(err);
                assert_string_equal(u.host, cases[i].host);
                assert_int_equal(u.port, cases[i].port);
                assert_string_equal(u.path, cases[i].path);
        }
}

/* What node_exporter's textfile collector reads, and what a /metrics page
 * looks like: HELP and TYPE, comments, blank lines, timestamps, escapes. */
static const char node_like[] =
        "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n"
        "# TYPE node_cpu_seconds_total counter\n"
        "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 12345.67\n"
        "node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 100.5\n"
        "node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 23456.78\n"
        "node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} 200.25\n"
        "\n"
        "# a comment, and one with words: # TYPE is not at the start\n"
        "#\n"
        "# HELP node_load1 1m load average.\\nSecond line \\\\ backslash.\n"
        "# TYPE node_load1 gauge\n"
        "node_load1 0.42\n"
        "   \t\n"
        "# TYPE app_requests_total counter\n"
        "app_requests_total{handler=\"/api\",code=\"200\"} 1027 1395066363000\n"
        "app_requests_total{handler=\"/api\",code=\"500\"} 3 1395066363000\n"
        "app_requests_total{handler=\"/x\",code=\"200\"} 1e3\n"
        "\t app_requests_total { handler = \"/\\\"quoted\\\\\\n\" , code=\"200\" , } +1.5e1  -5\n"
        "# TYPE weird gauge\n"
        "weird{kind=\"pos\"} +Inf\n"
        "weird{kind=\"neg\"} -Inf\n"
        "weird{kind=\"nan\"} NaN\n"
        "untyped_thing 7\n"
        "untyped_thing{x=\"y\"} 8\n"
        "# TYPE node_textfile_scrape_error gauge\n"
        "node_textfile_scrape_error 0\n";

/* Labels on a histogram, two series of it (instance differs). */
static const char histogram_a[] =
        "# HELP http_request_duration_seconds A histogram of the request duration.\n"
        "# TYPE http_request_duration_seconds histogram\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"0.1\"} 1\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"0.25\"} 2\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"0.5\"} 3\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"1\"} 4\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"+Inf\"} 5\n"
        "http_request_duration_seconds_sum{handler=\"/api\",instance=\"a\"} 2.5\n"
        "http_request_duration_seconds_count{handler=\"/api\",instance=\"a\"} 5\n"
        "http_request_duration_seconds_bucket{le=\"+Inf\",instance=\"b\",handler=\"/api\"} 5\n"
        "http_request_duration_seconds_bucket{le=\"1.0\",instance=\"b\",handler=\"/api\"} 4\n"
        "http_request_duration_seconds_bucket{le=\"0.5\",instance=\"b\",handler=\"/api\"} 3\n"
        "http_request_duration_seconds_bucket{le=\"0.25\",instance=\"b\",handler=\"/api\"} 2\n"
        "http_request_duration_seconds_bucket{le=\"0.1\",instance=\"b\",handler=\"/api\"} 1\n"
        "http_request_duration_seconds_sum{instance=\"b\",handler=\"/api\"} 2.5\n"
        "http_request_duration_seconds_count{instance=\"b\",handler=\"/api\"} 5\n"
        "http_request_duration_seconds_bucket{handler=\"/other\",le=\"+Inf\"} 1000\n"
        "http_request_duration_seconds_sum{handler=\"/other\"} 1000\n"
        "http_request_duration_seconds_count{handler=\"/other\"} 1000\n";

/* 100 more requests on /api, split over a and b: Δ cumulative buckets
 * 10, 30, 80, 95, 100 (le 0.1, 0.25, 0.5, 1, +Inf), Δsum 30. */
static const char histogram_b[] =
        "# TYPE http_request_duration_seconds histogram\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"0.1\"} 6\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"0.25\"} 17\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"0.5\"} 43\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"1\"} 51\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"a\",le=\"+Inf\"} 55\n"
        "http_request_duration_seconds_sum{handler=\"/api\",instance=\"a\"} 17.5\n"
        "http_request_duration_seconds_count{handler=\"/api\",instance=\"a\"} 55\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"b\",le=\"0.1\"} 6\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"b\",le=\"0.25\"} 17\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"b\",le=\"0.5\"} 43\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"b\",le=\"1\"} 52\n"
        "http_request_duration_seconds_bucket{handler=\"/api\",instance=\"b\",le=\"+Inf\"} 55\n"
        "http_request_duration_seconds_sum{handler=\"/api\",instance=\"b\"} 17.5\n"
        "http_request_duration_seconds_count{handler=\"/api\",instance=\"b\"} 55\n";

static void read_ok(const char *text, const char *spec_text, MetricReading *ret) {
        _cleanup_(metric_spec_done) MetricSpec spec = {};
        unsigned line = 4242;
        int r;

        spec_ok(spec_text, &spec);
        r = exposition_read(text, &spec, ret, &line);
        if (r < 0)
                fail_msg("exposition_read(%s) = %d (line %u)", spec_text, r, line);
        assert_int_equal(line, 4242);
}

static void test_read_node_like(void **state) {
        _cleanup_(metric_reading_done) MetricReading m = {};

        /* Every series of the name: summed. */
        read_ok(node_like, "/f#node_cpu_seconds_total", &m);
        assert_int_equal(m.type, METRIC_TYPE_COUNTER);
        assert_int_equal(m.agg, METRIC_AGG_RATE);
        assert_int_equal(m.n_matched, 4);
        assert_close(m.value, 12345.67 + 100.5 + 23456.78 + 200.25, 1e-9);
        assert_int_equal(m.n_buckets, 0);
        assert_null(m.le);
        metric_reading_done(&m);

        read_ok(node_like, "/f#node_cpu_seconds_total{mode=\"idle\"}@rate", &m);
        assert_int_equal(m.n_matched, 2);
        assert_close(m.value, 12345.67 + 23456.78, 1e-9);
        metric_reading_done(&m);

        read_ok(node_like, "/f#node_cpu_seconds_total{mode=\"user\",cpu=\"1\"}", &m);
        assert_int_equal(m.n_matched, 1);
        assert_close(m.value, 200.25, 0);
        metric_reading_done(&m);

        read_ok(node_like, "/f#node_load1", &m);
        assert_int_equal(m.type, METRIC_TYPE_GAUGE);
        assert_int_equal(m.agg, METRIC_AGG_MEAN);
        assert_close(m.value, 0.42, 0);
        metric_reading_done(&m);

        /* Timestamps, blanks everywhere, a trailing comma, escapes. */
        read_ok(node_like, "/f#app_requests_total{code=\"200\"}", &m);
        assert_int_equal(m.n_matched, 3);
        assert_close(m.value, 1027 + 1000 + 15, 0);
        metric_reading_done(&m);
        read_ok(node_like, "/f#app_requests_total{handler=\"/\\\"quoted\\\\\\n\"}", &m);
        assert_int_equal(m.n_matched, 1);
        assert_close(m.value, 15, 0);
        metric_reading_done(&m);

        /* +Inf, -Inf, NaN. */
        read_ok(node_like, "/f#weird{kind=\"pos\"}", &m);
        assert_true(isinf(m.value) && m.value > 0);
        metric_reading_done(&m);
        read_ok(node_like, "/f#weird{kind=\"neg\"}", &m);
        assert_true(isinf(m.value) && m.value < 0);
        metric_reading_done(&m);
        read_ok(node_like, "/f#weird{kind=\"nan\"}", &m);
        assert_true(isnan(m.value));
        metric_reading_done(&m);

        /* No # TYPE: untyped, mean by default, rate allowed. */
        read_ok(node_like, "/f#untyped_thing", &m);
        assert_int_equal(m.type, METRIC_TYPE_UNTYPED);
        assert_int_equal(m.agg, METRIC_AGG_MEAN);
        assert_close(m.value, 15, 0);
        metric_reading_done(&m);
        read_ok(node_like, "/f#untyped_thing{x=\"y\"}@rate", &m);
        assert_int_equal(m.agg, METRIC_AGG_RATE);
        assert_close(m.value, 8, 0);
        metric_reading_done(&m);

        /* A histogram's NAME_count alone is an untyped series. */
        read_ok(histogram_a, "/f#http_request_duration_seconds_count{handler=\"/api\"}@rate", &m);
        assert_int_equal(m.type, METRIC_TYPE_UNTYPED);
        assert_close(m.value, 10, 0);
}

static void test_read_histogram(void **state) {
        _cleanup_(metric_reading_done) MetricReading m = {};
        static const double le[] = {0.1, 0.25, 0.5, 1, INFINITY};
        static const double cum[] = {2, 4, 6, 8, 10};

        read_ok(histogram_a, "/f#http_request_duration_seconds{handler=\"/api\"}", &m);
        assert_int_equal(m.type, METRIC_TYPE_HISTOGRAM);
        assert_int_equal(m.agg, METRIC_AGG_MEAN);
        assert_int_equal(m.n_matched, 2);
        assert_close(m.sum, 5, 0);
        assert_close(m.count, 10, 0);
        /* "1" and "1.0" are the same bound. */
        assert_int_equal(m.n_buckets, 5);
        for (size_t i = 0; i < 5; i++) {
                assert_true(m.le[i] == le[i]);
                assert_true(m.buckets[i] == cum[i]);
        }
        metric_reading_done(&m);

        read_ok(histogram_a, "/f#http_request_duration_seconds{instance=\"b\"}@p50", &m);
        assert_int_equal(m.agg, METRIC_AGG_QUANTILE);
        assert_int_equal(m.n_matched, 1);
        assert_close(m.count, 5, 0);
        assert_int_equal(m.n_buckets, 5);
        metric_reading_done(&m);

        /* All three series: /other has only the +Inf bucket. */
        read_ok(histogram_a, "/f#http_request_duration_seconds", &m);
        assert_int_equal(m.n_matched, 3);
        assert_close(m.count, 1010, 0);
        assert_int_equal(m.n_buckets, 5);
        assert_true(m.buckets[4] == 1010);
        assert_true(m.buckets[3] == 8);
}

static void read_fails(const char *text, const char *spec_text, int error, unsigned expected_line) {
        _cleanup_(metric_spec_done) MetricSpec spec = {};
        MetricReading m = {.value = 4242};
        unsigned line = 4242;
        int r;

        spec_ok(spec_text, &spec);
        r = exposition_read(text, &spec, &m, &line);
        if (r != error)
                fail_msg("exposition_read(%s) on '%s' = %d, expected %d", spec_text, text, r, error);
        assert_true(m.value == 4242 && !m.le);
        assert_int_equal(line, expected_line);
}

static void test_read_errors(void **state) {
        static const struct {
                const char *text;
                unsigned line;
        } malformed[] = {
                {"x 1\n9bad 2\n", 2},
                {"x{a=\"1\" 1\n", 1},
                {"x{a=\"1\"} \n", 1},
                {"x{a=1} 1\n", 1},
                {"x{a=\"\\t\"} 1\n", 1},
                {"x{a=\"1\" b=\"2\"} 1\n", 1},
                {"x{,} 1\n", 1},
                {"x{a=\"1\",,} 1\n", 1},
                {"x one\n", 1},
                {"x 1 2 3\n", 1},
                {"x 1 1.5\n", 1},
                {"x 1 12x\n", 1},
                {"x-y 1\n", 1},
                {"x\n", 1},
                {"x 1\r\n", 1},
                {"\n\n# TYPE x counter\n# TYPE x gauge\nx 1\n", 4},
                {"# TYPE x countr\n", 1},
                {"# TYPE 9x counter\n", 1},
                {"# HELP x bad \\t escape\n", 1},
                {"# HELP x- help\n", 1},
                {"x{a=\"1\",a=\"2\"} 1\n", 1},
                {"# TYPE x histogram\nx_bucket{le=\"0.1\"} 1\nx_bucket 2\n", 3},
                {"# TYPE x histogram\nx_bucket{le=\"fast\"} 1\n", 2},
                {"# TYPE x histogram\nx_bucket{le=\"NaN\"} 1\n", 2},
                {"other{a=\"unterminated} 1\nx 1\n", 1},
        };

        for (size_t i = 0; i < ELEMENTSOF(malformed); i++)
                read_fails(malformed[i].text, "/f#x", -EBADMSG, malformed[i].line);

        /* A repeated label or a TYPE twice on another series is not looked at. */
        static const char other_lenient[] = "y{a=\"1\",a=\"2\"} 1\n# TYPE y gauge\n# TYPE y counter\nx 3\n";
        _cleanup_(metric_reading_done) MetricReading m = {};
        read_ok(other_lenient, "/f#x", &m);
        assert_close(m.value, 3, 0);
        /* ... and # HELP / # TYPE without the rest are not errors. */
        metric_reading_done(&m);
        read_ok("# HELP\n# TYPE x\n# HELP x\n#TYPE x counter\nx 3\n", "/f#x", &m);
        assert_int_equal(m.type, METRIC_TYPE_COUNTER);
        metric_reading_done(&m);
        /* The # TYPE may come after the samples; case does not matter. */
        read_ok("x 3\n# TYPE x GAUGE\n", "/f#x", &m);
        assert_int_equal(m.type, METRIC_TYPE_GAUGE);

        /* Nothing matches. */
        read_fails("", "/f#x", -ENOENT, 4242);
        read_fails("xy 1\nx_total 2\n", "/f#x", -ENOENT, 4242);
        read_fails("x{a=\"1\"} 1\n", "/f#x{a=\"2\"}", -ENOENT, 4242);
        read_fails("x{a=\"1\"} 1\n", "/f#x{b=\"1\"}", -ENOENT, 4242);
        read_fails("# TYPE x histogram\nx_bucket{le=\"+Inf\"} 1\nx_sum 1\n", "/f#x", -ENOENT, 4242);
        read_fails("# TYPE x histogram\nx_bucket{le=\"+Inf\"} 1\nx_count 1\n", "/f#x", -ENOENT, 4242);
        read_fails("# TYPE x histogram\nx_bucket{le=\"1\"} 1\nx_sum 1\nx_count 1\n", "/f#x@p99", -ENOENT,
                   4242);
        read_fails("# TYPE x histogram\nx_sum 1\nx_count 1\n", "/f#x@p99", -ENOENT, 4242);
        /* A bucket's le is not a label to select by. */
        read_fails("# TYPE x histogram\nx_bucket{le=\"+Inf\"} 1\nx_sum 1\nx_count 1\n", "/f#x{le=\"+Inf\"}",
                   -ENOENT, 4242);

        /* The aggregation does not fit the type. */
        read_fails("# TYPE x gauge\nx 1\n", "/f#x@rate", -EMEDIUMTYPE, 4242);
        read_fails("# TYPE x gauge\nx 1\n", "/f#x@p99", -EMEDIUMTYPE, 4242);
        read_fails("# TYPE x counter\nx 1\n", "/f#x@mean", -EMEDIUMTYPE, 4242);
        read_fails("# TYPE x counter\nx 1\n", "/f#x@q0.5", -EMEDIUMTYPE, 4242);
        read_fails("x 1\n", "/f#x@p50", -EMEDIUMTYPE, 4242);
        read_fails("# TYPE x histogram\n", "/f#x@rate", -EMEDIUMTYPE, 4242);
        read_fails("# TYPE x summary\nx_sum 1\nx_count 1\n", "/f#x@p99", -EMEDIUMTYPE, 4242);
        /* Malformed wins over the rest. */
        read_fails("# TYPE x gauge\nx 1\nbad line\n", "/f#x@rate", -EBADMSG, 3);
}

static void test_delta_rate(void **state) {
        _cleanup_(metric_spec_done) MetricSpec spec = {};
        _cleanup_(metric_reading_done) MetricReading a = {}, b = {}, c = {}, d = {};
        double v = 4242;

        spec_ok("/f#req_total", &spec);
        read_ok("# TYPE req_total counter\nreq_total{a=\"1\"} 100\nreq_total{a=\"2\"} 50\n", "/f#req_total",
                &a);
        read_ok("# TYPE req_total counter\nreq_total{a=\"1\"} 130\nreq_total{a=\"2\"} 80\n", "/f#req_total",
                &b);
        assert_int_equal(metric_delta(&spec, &a, &b, 2.0, &v), 0);
        assert_close(v, 30, 1e-12); /* (210 - 150) / 2 */
        assert_int_equal(metric_delta(&spec, &a, &a, 2.0, &v), 0);
        assert_close(v, 0, 0);

        v = 4242;
        /* A reset: the counter went down. */
        assert_int_equal(metric_delta(&spec, &b, &a, 2.0, &v), -ESTALE);
        /* A series vanished (the sum went down) or appeared. */
        read_ok("# TYPE req_total counter\nreq_total{a=\"1\"} 300\n", "/f#req_total", &c);
        assert_int_equal(metric_delta(&spec, &a, &c, 2.0, &v), -ESTALE);
        assert_int_equal(metric_delta(&spec, &c, &b, 2.0, &v), -ESTALE);
        /* dt. */
        assert_int_equal(metric_delta(&spec, &a, &b, 0, &v), -EINVAL);
        assert_int_equal(metric_delta(&spec, &a, &b, -1, &v), -EINVAL);
        assert_int_equal(metric_delta(&spec, &a, &b, NAN, &v), -EINVAL);
        /* NaN. */
        read_ok("# TYPE req_total counter\nreq_total{a=\"1\"} 300\nreq_total{a=\"2\"} +Inf\n",
                "/f#req_total", &d);
        assert_int_equal(metric_delta(&spec, &a, &d, 1, &v), -EDOM);
        assert_true(v == 4242);

        /* A gauge: the caller averages. */
        metric_reading_done(&a);
        metric_reading_done(&b);
        metric_spec_done(&spec);
        spec_ok("/f#g", &spec);
        read_ok("# TYPE g gauge\ng 1\n", "/f#g", &a);
        read_ok("# TYPE g gauge\ng 3\n", "/f#g", &b);
        assert_int_equal(metric_delta(&spec, &a, &b, 1, &v), -EOPNOTSUPP);
        /* Readings of different kinds. */
        assert_int_equal(metric_delta(&spec, &a, &c, 1, &v), -ESTALE);
        assert_true(v == 4242);
}

static void test_delta_histogram(void **state) {
        _cleanup_(metric_spec_done) MetricSpec mean = {}, q = {};
        _cleanup_(metric_reading_done) MetricReading a = {}, b = {}, qa = {}, qb = {};
        double v = 4242;

        spec_ok("/f#http_request_duration_seconds{handler=\"/api\"}", &mean);
        read_ok(histogram_a, "/f#http_request_duration_seconds{handler=\"/api\"}", &a);
        read_ok(histogram_b, "/f#http_request_duration_seconds{handler=\"/api\"}", &b);
        assert_int_equal(metric_delta(&mean, &a, &b, 10, &v), 0);
        assert_close(v, 0.3, 1e-12); /* Δsum 30 / Δcount 100 */
        assert_int_equal(metric_delta(&mean, &a, &a, 10, &v), -ENODATA);
        assert_int_equal(metric_delta(&mean, &b, &a, 10, &v), -ESTALE);

        /* Δ cumulative 10, 30, 80, 95, 100 at 0.1, 0.25, 0.5, 1, +Inf. */
        static const struct {
                const char *agg;
                double expected;
        } quantiles[] = {
                /* rank 5: in the first bucket, from 0: 0 + 0.1 * 5/10 */
                {"p5", 0.05},
                /* rank 10: exactly the first bucket's count: its bound */
                {"q0.1", 0.1},
                /* rank 50: bucket (0.25, 0.5] holds 50, 20 into it: 0.25 + 0.25 * 20/50 */
                {"p50", 0.35},
                /* rank 90: bucket (0.5, 1] holds 15, 10 into it: 0.5 + 0.5 * 10/15 */
                {"p90", 0.5 + 0.5 * 10.0 / 15.0},
                /* rank 95: the bound 1 */
                {"q0.95", 1},
                /* rank 99: in the +Inf bucket: the largest finite bound */
                {"p99", 1},
                {"p100", 1},
        };
        for (size_t i = 0; i < ELEMENTSOF(quantiles); i++) {
                _cleanup_(freep) char *s = NULL;
                assert_true(asprintf(&s, "/f#http_request_duration_seconds{handler=\"/api\"}@%s",
                                     quantiles[i].agg) > 0);
                metric_spec_done(&q);
                metric_reading_done(&qa);
                metric_reading_done(&qb);
                spec_ok(s, &q);
                read_ok(histogram_a, s, &qa);
                read_ok(histogram_b, s, &qb);
                assert_int_equal(metric_delta(&q, &qa, &qb, 10, &v), 0);
                assert_close(v, quantiles[i].expected, 1e-12);
        }
        v = 4242;
        assert_int_equal(metric_delta(&q, &qa, &qa, 10, &v), -ENODATA);
        assert_int_equal(metric_delta(&q, &qb, &qa, 10, &v), -ESTALE);
        /* The mean's readings against the quantile's: another aggregation. */
        assert_int_equal(metric_delta(&q, &a, &qb, 10, &v), -ESTALE);

        /* Other bucket bounds in b: a layout change. */
        _cleanup_(metric_reading_done) MetricReading other = {};
        read_ok("# TYPE http_request_duration_seconds histogram\n"
                "http_request_duration_seconds_bucket{le=\"0.2\"} 50\n"
                "http_request_duration_seconds_bucket{le=\"+Inf\"} 100\n"
                "http_request_duration_seconds_sum 1\nhttp_request_duration_seconds_count 100\n",
                "/f#http_request_duration_seconds@p100", &other);
        assert_int_equal(metric_delta(&q, &qa, &other, 10, &v), -ESTALE);
        assert_true(v == 4242);

        /* A first bucket with a negative bound: its bound, no interpolation from 0. */
        _cleanup_(metric_reading_done) MetricReading n0 = {}, n1 = {};
        static const char neg0[] = "# TYPE t histogram\nt_bucket{le=\"-1\"} 0\nt_bucket{le=\"1\"} 0\n"
                                   "t_bucket{le=\"+Inf\"} 0\nt_sum 0\nt_count 0\n";
        static const char neg1[] = "# TYPE t histogram\nt_bucket{le=\"-1\"} 4\nt_bucket{le=\"1\"} 8\n"
                                   "t_bucket{le=\"+Inf\"} 8\nt_sum 0\nt_count 8\n";
        metric_spec_done(&q);
        spec_ok("/f#t@p25", &q);
        read_ok(neg0, "/f#t@p25", &n0);
        read_ok(neg1, "/f#t@p25", &n1);
        assert_int_equal(metric_delta(&q, &n0, &n1, 1, &v), 0);
        assert_close(v, -1, 0);
        /* p75: rank 6, bucket (-1, 1] holds 4, 2 into it: -1 + 2 * 2/4 */
        q.quantile = 0.75;
        assert_int_equal(metric_delta(&q, &n0, &n1, 1, &v), 0);
        assert_close(v, 0, 1e-12);

        /* Only a +Inf bucket: no finite bound. */
        _cleanup_(metric_reading_done) MetricReading i0 = {}, i1 = {};
        read_ok("# TYPE t histogram\nt_bucket{le=\"+Inf\"} 0\nt_sum 0\nt_count 0\n", "/f#t@p25", &i0);
        read_ok("# TYPE t histogram\nt_bucket{le=\"+Inf\"} 5\nt_sum 1\nt_count 5\n", "/f#t@p25", &i1);
        assert_int_equal(metric_delta(&q, &i0, &i1, 1, &v), -ENODATA);

        /* A summary: sum / count. */
        _cleanup_(metric_spec_done) MetricSpec sm = {};
        _cleanup_(metric_reading_done) MetricReading s0 = {}, s1 = {};
        spec_ok("/f#rpc", &sm);
        read_ok("# TYPE rpc summary\nrpc{quantile=\"0.5\"} 0.2\nrpc_sum 10\nrpc_count 4\n", "/f#rpc", &s0);
        read_ok("# TYPE rpc summary\nrpc{quantile=\"0.5\"} 0.3\nrpc_sum 16\nrpc_count 7\n", "/f#rpc", &s1);
        assert_int_equal(s0.type, METRIC_TYPE_SUMMARY);
        assert_int_equal(metric_delta(&sm, &s0, &s1, 1, &v), 0);
        assert_close(v, 2, 1e-12);
}

static void test_higher_is_better(void **state) {
        static const struct {
                const char *spec;
                MetricType type;
                bool known, higher;
        } cases[] = {
                {"/f#x", METRIC_TYPE_COUNTER, true, true},
                {"/f#x@rate", METRIC_TYPE_UNTYPED, true, true},
                {"/f#x", METRIC_TYPE_HISTOGRAM, true, false},
                {"/f#x@p99", METRIC_TYPE_HISTOGRAM, true, false},
                {"/f#x", METRIC_TYPE_SUMMARY, true, false},
                {"/f#x", METRIC_TYPE_GAUGE, false, false},
                {"/f#x", METRIC_TYPE_UNTYPED, false, false},
                {"/f#x@rate", METRIC_TYPE_GAUGE, false, false},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(metric_spec_done) MetricSpec s = {};
                bool known = !cases[i].known;

                spec_ok(cases[i].spec, &s);
                assert_int_equal(metric_spec_higher_is_better_default(&s, cases[i].type, &known),
                                 cases[i].higher);
                assert_int_equal(known, cases[i].known);
        }
}

static void test_file_source(void **state) {
        _cleanup_(freep) char *dir = test_mkdtemp(), *path = NULL, *text = NULL, *err = NULL;

        test_write_file(dir, "app.prom", node_like);
        assert_true(asprintf(&path, "%s/app.prom", dir) > 0);
        assert_int_equal(metric_source_fetch(path, 1 << 20, &text, &err), 0);
        assert_null(err);
        assert_string_equal(text, node_like);
        free(text);
        text = NULL;

        /* Exactly the bound, and one byte beyond it. */
        assert_int_equal(metric_source_fetch(path, strlen(node_like), &text, &err), 0);
        free(text);
        text = NULL;
        assert_int_equal(metric_source_fetch(path, strlen(node_like) - 1, &text, &err), -EFBIG);
        assert_null(text);
        assert_non_null(strstr(err, "larger than"));
        assert_non_null(strstr(err, path));
        free(err);
        err = NULL;

        test_write_file(dir, "empty.prom", "");
        free(path);
        assert_true(asprintf(&path, "%s/empty.prom", dir) > 0);
        assert_int_equal(metric_source_fetch(path, 10, &text, &err), 0);
        assert_string_equal(text, "");
        free(text);
        text = NULL;

        free(path);
        assert_true(asprintf(&path, "%s/missing.prom", dir) > 0);
        assert_int_equal(metric_source_fetch(path, 10, &text, &err), -ENOENT);
        assert_non_null(strstr(err, "cannot open"));
        free(err);
        err = NULL;

        /* A directory, a FIFO: not regular files (and the FIFO does not block). */
        assert_int_equal(metric_source_fetch(dir, 10, &text, &err), -EINVAL);
        free(err);
        err = NULL;
        free(path);
        assert_true(asprintf(&path, "%s/fifo", dir) > 0);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(metric_source_fetch(path, 10, &text, &err), -EINVAL);
        assert_non_null(strstr(err, "not a regular file"));
        free(err);
        err = NULL;

        /* A NUL in the text. */
        free(path);
        assert_true(asprintf(&path, "%s/nul.prom", dir) > 0);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite("x 1\n\0y 2\n", 1, 9, f), 9);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(metric_source_fetch(path, 100, &text, &err), -EBADMSG);
        free(err);
        err = NULL;

        assert_int_equal(metric_source_fetch("relative/app.prom", 10, &text, &err), -EINVAL);
        assert_null(text);
        test_rm_rf(dir);
}

static void test_http_refused(void **state) {
        static const struct {
                const char *url;
                int r;
                const char *message;
        } cases[] = {
                {"http://example.com/metrics", -EPERM, "only the loopback address"},
                {"http://192.168.1.1:9100/metrics", -EPERM, "only the loopback address"},
                {"https://127.0.0.1/metrics", -EPERM, "only http:// on the loopback address"},
                {"ftp://127.0.0.1/metrics", -EPERM, "only http://"},
                {"http://evil@127.0.0.1/metrics", -EPERM, "user information"},
                {"http://127.0.0.1:99999/", -EINVAL, "bad port"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(freep) char *text = NULL, *err = NULL;

                assert_int_equal(metric_source_fetch(cases[i].url, 100, &text, &err), cases[i].r);
                assert_null(text);
                assert_non_null(err);
                if (!strstr(err, cases[i].message) || !strstr(err, cases[i].url))
                        fail_msg("%s: '%s'", cases[i].url, err);
        }
}

/* A child that answers n requests on 127.0.0.1 with response (after
 * reading the request's head), then exits. -1 when no socket can be had. */
static pid_t serve(const char *response, size_t response_len, unsigned n, bool answer, unsigned *ret_port) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof(sa);
        int fd;
        pid_t pid;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 4) < 0 ||
            getsockname(fd, (struct sockaddr *) &sa, &l) < 0) {
                close(fd);
                return -1;
        }
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                alarm(10);
                for (unsigned i = 0; i < n; i++) {
                        char buf[4096];
                        size_t got = 0;
                        int c = accept(fd, NULL, NULL);
                        if (c < 0)
                                _exit(1);
                        while (got < sizeof(buf) - 1) {
                                ssize_t k = read(c, buf + got, sizeof(buf) - 1 - got);
                                if (k <= 0)
                                        break;
                                got += k;
                                buf[got] = '\0';
                                if (strstr(buf, "\r\n\r\n"))
                                        break;
                        }
                        if (!answer) {
                                sleep(5);
                                _exit(0);
                        }
                        for (size_t off = 0; off < response_len;) {
                                ssize_t k = write(c, response + off, response_len - off);
                                if (k <= 0)
                                        break;
                                off += k;
                        }
                        close(c);
                }
                _exit(0);
        }
        close(fd);
        *ret_port = ntohs(sa.sin_port);
        return pid;
}

static void reap(pid_t pid) {
        int status;
        (void) kill(pid, SIGTERM);
        assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void test_http_fetch(void **state) {
        _cleanup_(freep) char *ok = NULL, *big = NULL, *url = NULL, *text = NULL, *err = NULL;
        const char *body = "# TYPE x counter\nx 42\n";
        unsigned port;
        pid_t pid;

        assert_true(asprintf(&ok,
                             "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                             strlen(body), body) > 0);
        /* The address and localhost (pinned to 127.0.0.1). */
        pid = serve(ok, strlen(ok), 2, true, &port);
        if (pid < 0)
                skip();
        assert_true(asprintf(&url, "http://127.0.0.1:%u/metrics", port) > 0);
        assert_int_equal(metric_source_fetch(url, 1000, &text, &err), 0);
        assert_string_equal(text, body);
        free(text);
        free(url);
        text = NULL;
        assert_true(asprintf(&url, "http://localhost:%u/metrics", port) > 0);
        assert_int_equal(metric_source_fetch(url, 1000, &text, &err), 0);
        assert_string_equal(text, body);
        assert_null(err);
        reap(pid);
        free(text);
        text = NULL;

        /* Bigger than the bound: with a Content-Length ... */
        pid = serve(ok, strlen(ok), 1, true, &port);
        free(url);
        assert_true(asprintf(&url, "http://127.0.0.1:%u/", port) > 0);
        assert_int_equal(metric_source_fetch(url, 10, &text, &err), -EFBIG);
        assert_null(text);
        assert_non_null(strstr(err, "larger than 10 bytes"));
        free(err);
        err = NULL;
        reap(pid);

        /* ... and without. */
        assert_true(asprintf(&big, "HTTP/1.0 200 OK\r\n\r\n%s", body) > 0);
        pid = serve(big, strlen(big), 1, true, &port);
        free(url);
        assert_true(asprintf(&url, "http://127.0.0.1:%u/", port) > 0);
        assert_int_equal(metric_source_fetch(url, 10, &text, &err), -EFBIG);
        free(err);
        err = NULL;
        reap(pid);

        /* A 404, and a redirect (not followed). */
        static const char not_found[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
        pid = serve(not_found, strlen(not_found), 1, true, &port);
        free(url);
        assert_true(asprintf(&url, "http://127.0.0.1:%u/metrics", port) > 0);
        assert_int_equal(metric_source_fetch(url, 1000, &text, &err), -EREMOTEIO);
        assert_null(text);
        assert_non_null(strstr(err, "HTTP status 404"));
        assert_non_null(strstr(err, url));
        free(err);
        err = NULL;
        reap(pid);

        static const char redirect[] = "HTTP/1.1 302 Found\r\nLocation: http://example.com/\r\n"
                                       "Content-Length: 0\r\n\r\n";
        pid = serve(redirect, strlen(redirect), 1, true, &port);
        free(url);
        assert_true(asprintf(&url, "http://localhost:%u/metrics", port) > 0);
        assert_int_equal(metric_source_fetch(url, 1000, &text, &err), -EREMOTEIO);
        assert_non_null(strstr(err, "HTTP status 302"));
        free(err);
        err = NULL;
        reap(pid);

        /* Nothing answers within the timeout. */
        pid = serve(NULL, 0, 1, false, &port);
        free(url);
        assert_true(asprintf(&url, "http://127.0.0.1:%u/metrics", port) > 0);
        assert_int_equal(metric_source_fetch(url, 1000, &text, &err), -ETIMEDOUT);
        free(err);
        err = NULL;
        reap(pid);

        /* Nothing listens (the port the child had, now closed). */
        assert_int_equal(metric_source_fetch(url, 1000, &text, &err), -ECONNREFUSED);
        assert_null(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spec_good),
                cmocka_unit_test(test_spec_bad),
                cmocka_unit_test(test_url),
                cmocka_unit_test(test_read_node_like),
                cmocka_unit_test(test_read_histogram),
                cmocka_unit_test(test_read_errors),
                cmocka_unit_test(test_delta_rate),
                cmocka_unit_test(test_delta_histogram),
                cmocka_unit_test(test_higher_is_better),
                cmocka_unit_test(test_file_source),
                cmocka_unit_test(test_http_refused),
                cmocka_unit_test(test_http_fetch),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
