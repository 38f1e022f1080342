/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <strings.h>

#include "exposition.h"
#include "lines.h"

/* More labels than this on a selected sample is malformed: the duplicate
 * check is quadratic, and no real series comes near. */
#define SELECTED_LABELS_MAX 256U

static const char *const metric_type_table[_METRIC_TYPE_MAX] = {
        [METRIC_TYPE_UNTYPED] = "untyped", [METRIC_TYPE_COUNTER] = "counter",
        [METRIC_TYPE_GAUGE] = "gauge",     [METRIC_TYPE_HISTOGRAM] = "histogram",
        [METRIC_TYPE_SUMMARY] = "summary",
};
DEFINE_STRING_TABLE_LOOKUP(metric_type, MetricType, _METRIC_TYPE_MAX)

static const char *const metric_agg_table[_METRIC_AGG_MAX] = {
        [METRIC_AGG_AUTO] = "auto",
        [METRIC_AGG_RATE] = "rate",
        [METRIC_AGG_MEAN] = "mean",
        [METRIC_AGG_QUANTILE] = "quantile",
};
DEFINE_STRING_TABLE_LOOKUP(metric_agg, MetricAgg, _METRIC_AGG_MAX)

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

static bool is_eol(char c) {
        return c == '\n' || c == '\0';
}

static const char *skip_blanks(const char *p, const char *end) {
        while (p < end && is_blank(*p))
                p++;
        return p;
}

static bool is_alpha_(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* The escapes of a label value: \\ \" \n. */
static bool is_escape(char c) {
        return c == '\\' || c == '"' || c == 'n';
}

/* The types read as one number per sample (the others from _sum, _count, _bucket). */
static bool type_is_scalar(MetricType t) {
        return t == METRIC_TYPE_COUNTER || t == METRIC_TYPE_GAUGE || t == METRIC_TYPE_UNTYPED;
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* (metric) or [a-zA-Z_][a-zA-Z0-9_]* (label): the
 * end of the name that starts at p (p itself when there is none). */
static const char *scan_name(const char *p, const char *end, bool colon) {
        const char *s = p;

        while (s < end && (is_alpha_(*s) || (colon && *s == ':') || (s > p && is_digit(*s))))
                s++;
        return s;
}

static bool span_eq(const char *s, size_t n, const char *str) {
        return strlen(str) == n && memcmp(s, str, n) == 0;
}

/* One label of a label block, as written (value still escaped). */
typedef struct LabelTok {
        const char *name;
        size_t name_len;
        const char *raw;
        size_t raw_len;
} LabelTok;

/* The quoted value at *pp (just after its opening '"'): *pp moves past the
 * closing '"'. Escapes \\ \" \n only. */
static int scan_quoted(const char **pp, const char *end, const char **ret_raw, size_t *ret_len,
                       const char **reason) {
        const char *p = *pp;

        for (const char *s = p; s < end; s++) {
                if (*s == '"') {
                        *ret_raw = p;
                        *ret_len = s - p;
                        *pp = s + 1;
                        return 0;
                }
                if (*s == '\\') {
                        if (s + 1 >= end || !is_escape(s[1])) {
                                *reason = "invalid escape sequence in a label value";
                                return -EINVAL;
                        }
                        s++;
                }
        }
        *reason = "unterminated label value";
        return -EINVAL;
}

/* Unescape a raw label value into a new string. */
static char *unescape(const char *raw, size_t n) {
        char *s = malloc(n + 1), *d = s;

        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char c = raw[i];
                if (c == '\\' && i + 1 < n) {
                        i++;
                        c = raw[i] == 'n' ? '\n' : raw[i];
                }
                *d++ = c;
        }
        *d = '\0';
        return s;
}

/* Whether a raw (escaped, well-formed) value is want, unescaped. */
static bool raw_equal(const char *raw, size_t n, const char *want) {
        for (size_t i = 0; i < n; i++, want++) {
                char c = raw[i];
                if (c == '\\' && i + 1 < n) {
                        i++;
                        c = raw[i] == 'n' ? '\n' : raw[i];
                }
                if (*want != c)
                        return false;
        }
        return *want == '\0';
}

/* A label block, *pp just after its '{': *pp moves past the '}'. Each
 * label is appended to *toks (grown as needed, at most max) when toks is
 * not NULL, else only checked. */
static int scan_labels(const char **pp, const char *end, LabelTok **toks, size_t *n_toks, size_t *cap_toks,
                       size_t max, const char **reason) {
        const char *p = *pp;
        int r;

        for (;;) {
                LabelTok t;

                p = skip_blanks(p, end);
                if (p < end && *p == '}')
                        break;
                t.name = p;
                p = scan_name(p, end, /* colon= */ false);
                t.name_len = p - t.name;
                if (t.name_len == 0) {
                        *reason = p < end ? "invalid label name" : "unterminated label set";
                        return -EINVAL;
                }
                p = skip_blanks(p, end);
                if (p >= end || *p != '=') {
                        *reason = "expected '=' after a label name";
                        return -EINVAL;
                }
                p = skip_blanks(p + 1, end);
                if (p >= end || *p != '"') {
                        *reason = "expected '\"' to open a label value";
                        return -EINVAL;
                }
                p++;
                r = scan_quoted(&p, end, &t.raw, &t.raw_len, reason);
                if (r < 0)
                        return r;
                if (toks) {
                        if (*n_toks >= max) {
                                *reason = "too many labels";
                                return -EINVAL;
                        }
                        if (*n_toks >= *cap_toks) {
                                size_t c = MAX(*cap_toks * 2, (size_t) 8);
                                LabelTok *n = reallocarray(*toks, c, sizeof(LabelTok));
                                if (!n)
                                        return -ENOMEM;
                                *toks = n;
                                *cap_toks = c;
                        }
                        (*toks)[(*n_toks)++] = t;
                }
                p = skip_blanks(p, end);
                if (p < end && *p == ',') {
                        p++;
                        continue;
                }
                if (p < end && *p == '}')
                        break;
                *reason = "expected ',' or '}' after a label value";
                return -EINVAL;
        }
        *pp = p + 1;
        return 0;
}

/* A float as Go's strconv.ParseFloat takes it (via strtod): the whole span,
 * +Inf, -Inf and NaN included. */
static int parse_float(const char *s, size_t n, double *ret) {
        char buf[64];
        _cleanup_(freep) char *heap = NULL;
        const char *str = buf;
        char *e;
        double v;

        if (n == 0)
                return -EINVAL;
        if (n < sizeof(buf)) {
                memcpy(buf, s, n);
                buf[n] = '\0';
        } else {
                heap = strndup(s, n);
                if (!heap)
                        return -ENOMEM;
                str = heap;
        }
        if (is_blank(*str) || strlen(str) != n)
                return -EINVAL;
        v = strtod(str, &e);
        if (e != str + n)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_timestamp(const char *s, size_t n) {
        char buf[32];
        char *e;

        if (n == 0 || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (!is_digit(buf[0]) && !((buf[0] == '-' || buf[0] == '+') && is_digit(buf[1])))
                return -EINVAL;
        errno = 0;
        (void) strtoll(buf, &e, 10);
        if (errno != 0 || *e != '\0')
                return -EINVAL;
        return 0;
}

typedef enum SampleKind {
        KIND_NONE,
        KIND_SCALAR, /* NAME */
        KIND_BUCKET, /* NAME_bucket */
        KIND_SUM,    /* NAME_sum */
        KIND_COUNT,  /* NAME_count */
} SampleKind;

typedef struct Reader {
        const MetricSpec *spec;
        size_t name_len;
        bool has_type;
        MetricType type;
        double value, sum, count;
        size_t n_value, n_sum, n_count;
        double *le, *buckets;
        size_t n_buckets, cap_buckets;
        LabelTok *toks;
        size_t n_toks, cap_toks;
} Reader;

static void reader_done(Reader *rd) {
        free(rd->le);
        free(rd->buckets);
        free(rd->toks);
}

static SampleKind sample_kind(const Reader *rd, const char *name, size_t len) {
        static const struct {
                const char *suffix;
                SampleKind kind;
        } suffixes[] = {
                {"_bucket", KIND_BUCKET},
                {"_sum", KIND_SUM},
                {"_count", KIND_COUNT},
        };

        if (len < rd->name_len || memcmp(name, rd->spec->name, rd->name_len) != 0)
                return KIND_NONE;
        if (len == rd->name_len)
                return KIND_SCALAR;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                if (span_eq(name + rd->name_len, len - rd->name_len, suffixes[i].suffix))
                        return suffixes[i].kind;
        return KIND_NONE;
}

static int add_bucket(Reader *rd, double le, double v) {
        size_t lo = 0, hi = rd->n_buckets;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (rd->le[mid] < le)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo < rd->n_buckets && rd->le[lo] == le) {
                rd->buckets[lo] += v;
                return 0;
        }
        if (rd->n_buckets >= rd->cap_buckets) {
                size_t c = MAX(rd->cap_buckets * 2, (size_t) 16);
                double *a = reallocarray(rd->le, c, sizeof(double));
                if (!a)
                        return -ENOMEM;
                rd->le = a;
                a = reallocarray(rd->buckets, c, sizeof(double));
                if (!a)
                        return -ENOMEM;
                rd->buckets = a;
                rd->cap_buckets = c;
        }
        memmove(rd->le + lo + 1, rd->le + lo, (rd->n_buckets - lo) * sizeof(double));
        memmove(rd->buckets + lo + 1, rd->buckets + lo, (rd->n_buckets - lo) * sizeof(double));
        rd->le[lo] = le;
        rd->buckets[lo] = v;
        rd->n_buckets++;
        return 0;
}

/* "# ..." from just after the '#'. */
static int read_comment(Reader *rd, const char *p, const char *eol, const char **reason) {
        const char *w, *name, *s;
        bool help;

        p = skip_blanks(p, eol);
        w = p;
        while (p < eol && !is_blank(*p))
                p++;
        if (span_eq(w, p - w, "HELP"))
                help = true;
        else if (span_eq(w, p - w, "TYPE"))
                help = false;
        else
                return 0; /* a comment */

        p = skip_blanks(p, eol);
        if (p >= eol)
                return 0; /* "# HELP" alone: not an error in 0.0.4 either */
        name = p;
        p = scan_name(p, eol, /* colon= */ true);
        if (p == name || (p < eol && !is_blank(*p))) {
                *reason = help ? "invalid metric name in # HELP" : "invalid metric name in # TYPE";
                return -EINVAL;
        }
        s = skip_blanks(p, eol);
        if (s >= eol)
                return 0; /* "# TYPE NAME" alone */

        if (help) {
                for (; s < eol; s++)
                        if (*s == '\\') {
                                if (s + 1 >= eol || (s[1] != '\\' && s[1] != 'n')) {
                                        *reason = "invalid escape sequence in # HELP";
                                        return -EINVAL;
                                }
                                s++;
                        }
                return 0;
        }

        const char *t = s, *te = eol;
        MetricType type = _METRIC_TYPE_INVALID;
        while (te > t && is_blank(te[-1]))
                te--;
        for (int i = 0; i < _METRIC_TYPE_MAX; i++)
                if ((size_t) (te - t) == strlen(metric_type_table[i]) &&
                    strncasecmp(t, metric_type_table[i], te - t) == 0)
                        type = (MetricType) i;
        if (type < 0) {
                *reason = "unknown type in # TYPE";
                return -EINVAL;
        }
        if (!span_eq(name, p - name, rd->spec->name))
                return 0;
        if (rd->has_type) {
                *reason = "second # TYPE line for the metric";
                return -EINVAL;
        }
        rd->has_type = true;
        rd->type = type;
        return 0;
}

/* Whether the sample's labels (rd->toks) include every label of the
 * selector; a bucket's le is not one of them. */
static bool labels_match(const Reader *rd, SampleKind kind) {
        for (size_t i = 0; i < rd->spec->n_labels; i++) {
                const MetricLabel *l = &rd->spec->labels[i];
                bool found = false;

                for (size_t j = 0; j < rd->n_toks && !found; j++) {
                        const LabelTok *t = &rd->toks[j];
                        if (kind == KIND_BUCKET && span_eq(t->name, t->name_len, "le"))
                                continue;
                        found = span_eq(t->name, t->name_len, l->name) &&
                                raw_equal(t->raw, t->raw_len, l->value);
                }
                if (!found)
                        return false;
        }
        return true;
}

/* The value and the optional timestamp after a sample's name and labels. */
static int scan_value(const char *p, const char *eol, double *ret, const char **reason) {
        const char *v = p;
        double value;
        int r;

        while (p < eol && !is_blank(*p))
                p++;
        r = parse_float(v, p - v, &value);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *reason = p == v ? "expected a value" : "invalid value";
                return -EINVAL;
        }
        p = skip_blanks(p, eol);
        if (p < eol) {
                const char *ts = p;
                while (p < eol && !is_blank(*p))
                        p++;
                if (parse_timestamp(ts, p - ts) < 0) {
                        *reason = "invalid timestamp";
                        return -EINVAL;
                }
                p = skip_blanks(p, eol);
                if (p < eol) {
                        *reason = "trailing data after the timestamp";
                        return -EINVAL;
                }
        }
        *ret = value;
        return 0;
}

/* A selected bucket's le label, a number (not NaN). */
static int bucket_le(const Reader *rd, double *ret, const char **reason) {
        const LabelTok *t = NULL;
        double le;
        int r;

        for (size_t i = 0; i < rd->n_toks && !t; i++)
                if (span_eq(rd->toks[i].name, rd->toks[i].name_len, "le"))
                        t = &rd->toks[i];
        if (!t) {
                *reason = "bucket without le label";
                return -EINVAL;
        }
        _cleanup_(freep) char *s = unescape(t->raw, t->raw_len);
        if (!s)
                return -ENOMEM;
        r = parse_float(s, strlen(s), &le);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || isnan(le)) {
                *reason = "invalid le label";
                return -EINVAL;
        }
        *ret = le;
        return 0;
}

static int read_sample(Reader *rd, const char *p, const char *eol, const char **reason) {
        const char *name = p;
        SampleKind kind;
        double value;
        int r;

        p = scan_name(p, eol, /* colon= */ true);
        if (p == name || (p < eol && !is_blank(*p) && *p != '{')) {
                *reason = "invalid metric name";
                return -EINVAL;
        }
        kind = sample_kind(rd, name, p - name);
        rd->n_toks = 0;
        p = skip_blanks(p, eol);
        if (p < eol && *p == '{') {
                p++;
                r = scan_labels(&p, eol, kind != KIND_NONE ? &rd->toks : NULL, &rd->n_toks, &rd->cap_toks,
                                SELECTED_LABELS_MAX, reason);
                if (r < 0)
                        return r;
                p = skip_blanks(p, eol);
        }

        r = scan_value(p, eol, &value, reason);
        if (r < 0)
                return r;

        if (kind == KIND_NONE)
                return 0;
        for (size_t i = 0; i < rd->n_toks; i++)
                for (size_t j = 0; j < i; j++)
                        if (rd->toks[i].name_len == rd->toks[j].name_len &&
                            memcmp(rd->toks[i].name, rd->toks[j].name, rd->toks[i].name_len) == 0) {
                                *reason = "label name repeated";
                                return -EINVAL;
                        }

        double le = 0;
        if (kind == KIND_BUCKET) {
                r = bucket_le(rd, &le, reason);
                if (r < 0)
                        return r;
        }

        if (!labels_match(rd, kind))
                return 0;
        switch (kind) {
        case KIND_SCALAR:
                rd->value += value;
                rd->n_value++;
                return 0;
        case KIND_BUCKET:
                return add_bucket(rd, le, value);
        case KIND_SUM:
                rd->sum += value;
                rd->n_sum++;
                return 0;
        case KIND_COUNT:
                rd->count += value;
                rd->n_count++;
                return 0;
        default:
                abort();
        }
}

int metric_agg_resolve(MetricAgg agg, MetricType t, MetricAgg *ret) {
        MetricAgg def;
        bool fits;

        if (agg < 0 || agg >= _METRIC_AGG_MAX)
                return -EINVAL;
        switch (t) {
        case METRIC_TYPE_COUNTER:
                def = METRIC_AGG_RATE;
                fits = agg == METRIC_AGG_RATE;
                break;
        case METRIC_TYPE_GAUGE:
                def = METRIC_AGG_MEAN;
                fits = agg == METRIC_AGG_MEAN;
                break;
        case METRIC_TYPE_UNTYPED:
                def = METRIC_AGG_MEAN;
                fits = agg == METRIC_AGG_MEAN || agg == METRIC_AGG_RATE;
                break;
        case METRIC_TYPE_HISTOGRAM:
                def = METRIC_AGG_MEAN;
                fits = agg == METRIC_AGG_MEAN || agg == METRIC_AGG_QUANTILE;
                break;
        case METRIC_TYPE_SUMMARY:
                def = METRIC_AGG_MEAN;
                fits = agg == METRIC_AGG_MEAN;
                break;
        default:
                return -EINVAL;
        }
        if (agg == METRIC_AGG_AUTO) {
                *ret = def;
                return 0;
        }
        if (!fits)
                return -EMEDIUMTYPE;
        *ret = agg;
        return 0;
}

int exposition_read(const char *text, const MetricSpec *spec, MetricReading *ret, unsigned *ret_line) {
        _cleanup_(reader_done) Reader rd = {.spec = spec};
        unsigned line = 0;
        MetricAgg agg;
        int r;

        if (!text || !spec || !spec->name || !ret)
                return -EINVAL;
        rd.name_len = strlen(spec->name);

        FOREACH_LINE(p, eol, text) {
                const char *reason = NULL, *s;

                line++;
                s = skip_blanks(p, eol);
                if (is_eol(*s))
                        continue;
                if (*s == '#')
                        r = read_comment(&rd, s + 1, eol, &reason);
                else
                        r = read_sample(&rd, s, eol, &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (ret_line)
                                *ret_line = line;
                        return -EBADMSG;
                }
        }

        MetricType type = rd.has_type ? rd.type : METRIC_TYPE_UNTYPED;
        r = metric_agg_resolve(spec->agg, type, &agg);
        if (r < 0)
                return r;

        MetricReading reading = {.type = type, .agg = agg};
        if (type_is_scalar(type)) {
                if (rd.n_value == 0)
                        return -ENOENT;
                reading.value = rd.value;
                reading.n_matched = rd.n_value;
        } else {
                if (rd.n_count == 0 || rd.n_sum == 0)
                        return -ENOENT;
                if (agg == METRIC_AGG_QUANTILE &&
                    (rd.n_buckets == 0 || !isinf(rd.le[rd.n_buckets - 1]) || rd.le[rd.n_buckets - 1] < 0))
                        return -ENOENT;
                reading.sum = rd.sum;
                reading.count = rd.count;
                reading.n_matched = rd.n_count;
                if (type == METRIC_TYPE_HISTOGRAM && rd.n_buckets > 0) {
                        reading.le = TAKE_PTR(rd.le);
                        reading.buckets = TAKE_PTR(rd.buckets);
                        reading.n_buckets = rd.n_buckets;
                }
        }
        *ret = reading;
        return 0;
}

void metric_reading_done(MetricReading *r) {
        if (!r)
                return;
        free(r->le);
        free(r->buckets);
        *r = (MetricReading){};
}

/* Prometheus' bucketQuantile() (promql/quantile.go) on cumulative counts,
 * the last bound +Inf. */
static int bucket_quantile(double q, const double *le, const double *cum, size_t n, double *ret) {
        _cleanup_(freep) double *c = NULL;
        double observations, rank, start, end, count;
        size_t b;

        if (n < 2)
                return -ENODATA;
        c = malloc(n * sizeof(double));
        if (!c)
                return -ENOMEM;
        /* ensureMonotonic(): a bucket below the one before it is raised. */
        for (size_t i = 0; i < n; i++)
                c[i] = i > 0 && cum[i] < c[i - 1] ? c[i - 1] : cum[i];
        observations = c[n - 1];
        if (!(observations > 0))
                return -ENODATA;
        rank = q * observations;
        for (b = 0; b < n - 1 && !(c[b] >= rank); b++)
                ;
        if (b == n - 1) {
                *ret = le[n - 2];
                return 0;
        }
        if (b == 0 && le[0] <= 0) {
                *ret = le[0];
                return 0;
        }
        start = 0;
        end = le[b];
        count = c[b];
        if (b > 0) {
                start = le[b - 1];
                count -= c[b - 1];
                rank -= c[b - 1];
        }
        *ret = start + (end - start) * (rank / count);
        return 0;
}

int metric_delta(const MetricSpec *spec, const MetricReading *a, const MetricReading *b, double dt_sec,
                 double *ret) {
        double v;
        int r;

        if (!spec || !a || !b || !ret)
                return -EINVAL;
        if (a->type != b->type || a->agg != b->agg)
                return -ESTALE;

        switch (a->agg) {
        case METRIC_AGG_RATE:
                if (!(dt_sec > 0) || !isfinite(dt_sec))
                        return -EINVAL;
                if (a->n_matched != b->n_matched || b->value < a->value)
                        return -ESTALE;
                v = (b->value - a->value) / dt_sec;
                break;
        case METRIC_AGG_MEAN:
                if (type_is_scalar(a->type))
                        return -EOPNOTSUPP;
                if (b->count < a->count)
                        return -ESTALE;
                if (b->count == a->count)
                        return -ENODATA;
                v = (b->sum - a->sum) / (b->count - a->count);
                break;
        case METRIC_AGG_QUANTILE: {
                _cleanup_(freep) double *d = NULL;

                if (a->n_buckets != b->n_buckets)
                        return -ESTALE;
                if (a->n_buckets == 0)
                        return -ENODATA;
                if (memcmp(a->le, b->le, a->n_buckets * sizeof(double)) != 0)
                        return -ESTALE;
                d = malloc(a->n_buckets * sizeof(double));
                if (!d)
                        return -ENOMEM;
                for (size_t i = 0; i < a->n_buckets; i++) {
                        if (b->buckets[i] < a->buckets[i])
                                return -ESTALE;
                        d[i] = b->buckets[i] - a->buckets[i];
                }
                r = bucket_quantile(spec->quantile, a->le, d, a->n_buckets, &v);
                if (r < 0)
                        return r;
                break;
        }
        default:
                return -EINVAL;
        }
        if (!isfinite(v))
                return -EDOM;
        *ret = v;
        return 0;
}

bool metric_spec_higher_is_better_default(const MetricSpec *spec, MetricType t, bool *ret_known) {
        MetricAgg agg;
        bool known = false, higher = false;

        if (spec && metric_agg_resolve(spec->agg, t, &agg) >= 0) {
                if (agg == METRIC_AGG_RATE)
                        known = higher = true;
                else if (t == METRIC_TYPE_HISTOGRAM || t == METRIC_TYPE_SUMMARY)
                        known = true;
        }
        if (ret_known)
                *ret_known = known;
        return higher;
}

/* ---- the spec and the URL ---- */

_printf_(3, 4) static int set_error(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;
        char *s;

        if (!ret_error)
                return r;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                return -ENOMEM;
        *ret_error = s;
        return r;
}

void metric_url_done(MetricUrl *url) {
        if (!url)
                return;
        free(url->host);
        free(url->path);
        *url = (MetricUrl){};
}

/* The host of an http:// source, a loopback address only, made canonical
 * in place: "::1", "localhost", or the dotted quad. */
static int loopback_host(char **host, bool ipv6, const char *prefix, char **ret_error) {
        char *canonical;

        if (ipv6) {
                struct in6_addr a6;
                if (inet_pton(AF_INET6, *host, &a6) != 1 || !IN6_IS_ADDR_LOOPBACK(&a6))
                        return set_error(
                                ret_error, -EPERM,
                                "%sonly the loopback address (127.0.0.0/8, [::1], localhost) is allowed, "
                                "not [%s]",
                                prefix, *host);
                canonical = strdup("::1");
        } else if (strcasecmp(*host, "localhost") == 0)
                canonical = strdup("localhost");
        else {
                struct in_addr a4;
                char buf[INET_ADDRSTRLEN];
                if (inet_pton(AF_INET, *host, &a4) != 1 || (ntohl(a4.s_addr) >> 24) != 127)
                        return set_error(
                                ret_error, -EPERM,
                                "%sonly the loopback address (127.0.0.0/8, [::1], localhost) is allowed, "
                                "not %s",
                                prefix, *host);
                if (!inet_ntop(AF_INET, &a4, buf, sizeof(buf)))
                        return -EINVAL;
                canonical = strdup(buf);
        }
        if (!canonical)
                return -ENOMEM;
        free(*host);
        *host = canonical;
        return 0;
}

/* 1..65535, at most 5 digits. */
static int parse_port(const char *s, size_t n, unsigned long *ret, const char *prefix, char **ret_error) {
        unsigned long port = 0;

        for (size_t i = 0; i < n; i++) {
                if (!is_digit(s[i]) || i >= 5) {
                        port = 0;
                        break;
                }
                port = port * 10 + (unsigned long) (s[i] - '0');
        }
        if (port == 0 || port > 65535)
                return set_error(ret_error, -EINVAL, "%sbad port '%.*s' in the URL", prefix,
                                 (int) MIN(n, (size_t) 32), s);
        *ret = port;
        return 0;
}

/* Errors start with prefix ("metric source: " or "metric spec: "). */
static int url_parse(const char *url, const char *prefix, MetricUrl *ret, char **ret_error) {
        _cleanup_(freep) char *host = NULL, *path = NULL;
        const char *auth, *auth_end, *h, *h_end, *port_s = NULL;
        unsigned long port = 80;
        bool ipv6 = false;

        if (strncasecmp(url, "http://", 7) != 0) {
                const char *sep = strstr(url, "://");
                if (sep)
                        return set_error(ret_error, -EPERM,
                                         "%sonly http:// on the loopback address is allowed, not %.*s://",
                                         prefix, (int) MIN(sep - url, 32), url);
                return set_error(ret_error, -EINVAL, "%s'%s' is not an http:// URL", prefix, url);
        }
        for (const char *s = url; *s; s++)
                if ((unsigned char) *s <= ' ' || *s == 0x7f)
                        return set_error(ret_error, -EINVAL, "%sa blank or control character in the URL",
                                         prefix);
        auth = url + 7;
        auth_end = auth + strcspn(auth, "/?#");
        if (memchr(auth, '@', auth_end - auth))
                return set_error(
                        ret_error, -EPERM,
                        "%suser information ('user@') in a URL is refused: only the loopback address "
                        "(127.0.0.0/8, [::1], localhost) is allowed",
                        prefix);

        if (auth < auth_end && *auth == '[') {
                h = auth + 1;
                h_end = memchr(h, ']', auth_end - h);
                if (!h_end)
                        return set_error(ret_error, -EINVAL, "%sunterminated '[' in the URL's host", prefix);
                if (h_end + 1 < auth_end) {
                        if (h_end[1] != ':')
                                return set_error(ret_error, -EINVAL, "%sunexpected characters after ']'",
                                                 prefix);
                        port_s = h_end + 2;
                }
                ipv6 = true;
        } else {
                h = auth;
                h_end = memchr(auth, ':', auth_end - auth);
                if (h_end)
                        port_s = h_end + 1;
                else
                        h_end = auth_end;
        }
        host = strndup(h, h_end - h);
        if (!host)
                return -ENOMEM;
        if (!*host)
                return set_error(ret_error, -EINVAL, "%sno host in the URL", prefix);

        int r = loopback_host(&host, ipv6, prefix, ret_error);
        if (r < 0)
                return r;
        if (port_s) {
                r = parse_port(port_s, auth_end - port_s, &port, prefix, ret_error);
                if (r < 0)
                        return r;
        }

        if (*auth_end == '/')
                path = strdup(auth_end);
        else if (asprintf(&path, "/%s", auth_end) < 0)
                path = NULL;
        if (!path)
                return -ENOMEM;

        *ret = (MetricUrl){
                .host = TAKE_PTR(host),
                .port = (unsigned) port,
                .path = TAKE_PTR(path),
                .ipv6 = ipv6,
        };
        return 0;
}

int metric_url_parse(const char *url, MetricUrl *ret, char **ret_error) {
        if (!url || !ret)
                return -EINVAL;
        return url_parse(url, "metric source: ", ret, ret_error);
}

void metric_spec_done(MetricSpec *spec) {
        if (!spec)
                return;
        free(spec->source);
        free(spec->name);
        for (size_t i = 0; i < spec->n_labels; i++) {
                free(spec->labels[i].name);
                free(spec->labels[i].value);
        }
        free(spec->labels);
        *spec = (MetricSpec){};
}

/* "99", "99.9", "0.95": digits with at most one '.', nothing else. */
static int parse_quantile_number(const char *s, double *ret) {
        bool dot = false, digit = false;
        char *e;

        for (const char *p = s; *p; p++) {
                if (*p == '.' && !dot)
                        dot = true;
                else if (is_digit(*p))
                        digit = true;
                else
                        return -EINVAL;
        }
        if (!digit)
                return -EINVAL;
        *ret = strtod(s, &e);
        return 0;
}

static int parse_agg(const char *s, MetricSpec *spec, char **ret_error) {
        double q;

        if (streq(s, "rate")) {
                spec->agg = METRIC_AGG_RATE;
                return 0;
        }
        if (streq(s, "mean")) {
                spec->agg = METRIC_AGG_MEAN;
                return 0;
        }
        if ((s[0] == 'p' || s[0] == 'q') && parse_quantile_number(s + 1, &q) >= 0) {
                if (s[0] == 'p')
                        q /= 100;
                if (!(q > 0 && q <= 1))
                        return set_error(ret_error, -EINVAL,
                                         "metric spec: the quantile '%s' is not in (0, 1]", s);
                spec->agg = METRIC_AGG_QUANTILE;
                spec->quantile = q;
                return 0;
        }
        return set_error(ret_error, -EINVAL,
                         "metric spec: unknown aggregation '%s' (rate, mean, pNN as p99, qF as q0.95)", s);
}

int metric_spec_parse(const char *text, MetricSpec *ret, char **ret_error) {
        _cleanup_(metric_spec_done) MetricSpec spec = {};
        _cleanup_(freep) LabelTok *toks = NULL;
        size_t n_toks = 0, cap_toks = 0;
        const char *hash, *p, *end, *name, *reason = NULL;
        int r;

        if (!text || !ret)
                return -EINVAL;
        hash = strchr(text, '#');
        if (!hash)
                return set_error(ret_error, -EINVAL,
                                 "metric spec: no '#' between the source and the series");
        if (hash == text)
                return set_error(ret_error, -EINVAL, "metric spec: no source before '#'");
        spec.source = strndup(text, hash - text);
        if (!spec.source)
                return -ENOMEM;
        if (spec.source[0] != '/') {
                _cleanup_(metric_url_done) MetricUrl url = {};

                r = url_parse(spec.source, "metric spec: ", &url, ret_error);
                if (r < 0)
                        return r;
        }

        p = hash + 1;
        end = p + strlen(p);
        name = p;
        p = scan_name(p, end, /* colon= */ true);
        if (p == name)
                return set_error(ret_error, -EINVAL,
                                 *name ? "metric spec: invalid series name after '#'"
                                       : "metric spec: no series name after '#'");
        spec.name = strndup(name, p - name);
        if (!spec.name)
                return -ENOMEM;

        if (*p == '{') {
                p++;
                r = scan_labels(&p, end, &toks, &n_toks, &cap_toks, SELECTED_LABELS_MAX, &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return set_error(ret_error, -EINVAL, "metric spec: %s in the selector", reason);
                spec.labels = calloc(MAX(n_toks, (size_t) 1), sizeof(MetricLabel));
                if (!spec.labels)
                        return -ENOMEM;
                for (size_t i = 0; i < n_toks; i++) {
                        for (size_t j = 0; j < i; j++)
                                if (toks[i].name_len == toks[j].name_len &&
                                    memcmp(toks[i].name, toks[j].name, toks[i].name_len) == 0)
                                        return set_error(ret_error, -EINVAL,
                                                         "metric spec: the label '%.*s' is given twice",
                                                         (int) toks[i].name_len, toks[i].name);
                        spec.labels[i].name = strndup(toks[i].name, toks[i].name_len);
                        spec.labels[i].value = unescape(toks[i].raw, toks[i].raw_len);
                        spec.n_labels++;
                        if (!spec.labels[i].name || !spec.labels[i].value)
                                return -ENOMEM;
                }
        }

        if (*p == '@') {
                if (!p[1])
                        return set_error(ret_error, -EINVAL,
                                         "metric spec: no aggregation after '@' (rate, mean, p99, q0.95)");
                r = parse_agg(p + 1, &spec, ret_error);
                if (r < 0)
                        return r;
        } else if (*p)
                return set_error(ret_error, -EINVAL, "metric spec: unexpected '%s' after the series name",
                                 p);

        *ret = spec;
        spec = (MetricSpec){};
        return 0;
}
