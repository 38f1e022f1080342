/* SPDX-License-Identifier: MIT */
#include <curl/curl.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "exposition.h"
#include "metric-source.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(CURL *, curl_easy_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct curl_slist *, curl_slist_free_all)

_printf_(4, 5) static int source_error(char **ret_error, int r, const char *source, const char *fmt, ...) {
        _cleanup_(freep) char *m = NULL;
        va_list ap;
        int k;

        if (!ret_error)
                return r;
        va_start(ap, fmt);
        k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0 || asprintf(ret_error, "metric source %s: %s", source, m) < 0)
                return -ENOMEM;
        return r;
}

static int check_text(const char *source, const char *data, size_t n, char **ret_error) {
        if (memchr(data, '\0', n))
                return source_error(ret_error, -EBADMSG, source, "the text holds a NUL byte");
        return 0;
}

static int fetch_file(const char *path, size_t max_bytes, char **ret_text, char **ret_error) {
        _cleanup_(closep) int fd = -EBADF;
        _cleanup_(freep) char *buf = NULL;
        size_t n = 0, cap;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = negative_errno();
                return source_error(ret_error, r, path, "cannot open: %s", strerror(-r));
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                return source_error(ret_error, r, path, "cannot stat: %s", strerror(-r));
        }
        if (!S_ISREG(st.st_mode))
                return source_error(ret_error, -EINVAL, path, "not a regular file");
        if ((uint64_t) st.st_size > max_bytes)
                return source_error(ret_error, -EFBIG, path, "larger than %zu bytes", max_bytes);

        /* The size may change under us: read up to one byte beyond the bound. */
        cap = MIN((size_t) st.st_size, max_bytes) + 1;
        buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k;

                if (n == cap) {
                        if (n > max_bytes)
                                return source_error(ret_error, -EFBIG, path, "larger than %zu bytes",
                                                    max_bytes);
                        size_t c = MIN(cap * 2, max_bytes + 1);
                        char *b = realloc(buf, c + 1);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        cap = c;
                }
                k = read(fd, buf + n, cap - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = negative_errno();
                        return source_error(ret_error, r, path, "cannot read: %s", strerror(-r));
                }
                if (k == 0)
                        break;
                n += k;
        }
        if (n > max_bytes)
                return source_error(ret_error, -EFBIG, path, "larger than %zu bytes", max_bytes);
        buf[n] = '\0';
        r = check_text(path, buf, n, ret_error);
        if (r < 0)
                return r;
        *ret_text = TAKE_PTR(buf);
        return 0;
}

typedef struct Body {
        char *data;
        size_t n, max;
        bool too_big, oom;
} Body;

static size_t body_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Body *b = userdata;
        size_t len = size * nmemb;
        char *d;

        if (len > b->max - b->n) {
                b->too_big = true;
                return 0; /* ends the transfer: CURLE_WRITE_ERROR */
        }
        d = realloc(b->data, b->n + len + 1);
        if (!d) {
                b->oom = true;
                return 0;
        }
        memcpy(d + b->n, ptr, len);
        b->n += len;
        d[b->n] = '\0';
        b->data = d;
        return len;
}

/* A transfer that failed, as an errno and a message. */
static int transfer_error(CURLcode cc, const Body *body, const char *errbuf, const char *source,
                          size_t max_bytes, char **ret_error) {
        switch (cc) {
        case CURLE_FILESIZE_EXCEEDED:
                return source_error(ret_error, -EFBIG, source, "larger than %zu bytes", max_bytes);
        case CURLE_WRITE_ERROR:
                if (body->oom)
                        return -ENOMEM;
                if (body->too_big)
                        return source_error(ret_error, -EFBIG, source, "larger than %zu bytes", max_bytes);
                return source_error(ret_error, -EIO, source, "%s",
                                    *errbuf ? errbuf : curl_easy_strerror(cc));
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLE_OPERATION_TIMEDOUT:
                return source_error(ret_error, -ETIMEDOUT, source, "no answer within %u ms",
                                    METRIC_SOURCE_TIMEOUT_MSEC);
        case CURLE_COULDNT_CONNECT:
                return source_error(ret_error, -ECONNREFUSED, source, "cannot connect: %s",
                                    *errbuf ? errbuf : curl_easy_strerror(cc));
        default:
                return source_error(ret_error, -EIO, source, "%s",
                                    *errbuf ? errbuf : curl_easy_strerror(cc));
        }
}

static int fetch_http(const char *source, size_t max_bytes, char **ret_text, char **ret_error) {
        _cleanup_(metric_url_done) MetricUrl url = {};
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_(curl_slist_free_allp) struct curl_slist *resolve = NULL;
        _cleanup_(freep) char *u = NULL, *pin = NULL, *err = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        Body body = {.max = max_bytes};
        CURLcode cc;
        long status = 0;
        int r;

        r = metric_url_parse(source, &url, &err);
        if (r < 0) {
                const char *m = err ? err : "refused";
                if (strncmp(m, "metric source: ", 15) == 0)
                        m += 15;
                return source_error(ret_error, r, source, "%s", m);
        }

        /* The URL curl sees is rebuilt from what was checked, so that curl's
         * own URL parser cannot read another host out of the operator's. */
        if (asprintf(&u, "http://%s%s%s:%u%s", url.ipv6 ? "[" : "", url.host, url.ipv6 ? "]" : "", url.port,
                     url.path) < 0)
                return -ENOMEM;
        if (streq(url.host, "localhost")) {
                if (asprintf(&pin, "localhost:%u:127.0.0.1", url.port) < 0)
                        return -ENOMEM;
                resolve = curl_slist_append(NULL, pin);
                if (!resolve)
                        return -ENOMEM;
        }

        c = curl_easy_init(); /* runs curl_global_init() the first time: steerd is single-threaded */
        if (!c)
                return -ENOMEM;
        if (curl_easy_setopt(c, CURLOPT_URL, u) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK ||
            /* curl refuses an empty list; redirects are not followed anyway. */
            curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) METRIC_SOURCE_TIMEOUT_MSEC) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long) METRIC_SOURCE_TIMEOUT_MSEC) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) max_bytes) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &body) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_USERAGENT, "steerd/" STEERD_VERSION) != CURLE_OK ||
            (resolve && curl_easy_setopt(c, CURLOPT_RESOLVE, resolve) != CURLE_OK))
                return source_error(ret_error, -EIO, source, "cannot set up the transfer");

        cc = curl_easy_perform(c);
        if (cc == CURLE_OK) {
                (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
                if (status < 200 || status > 299) {
                        free(body.data);
                        return source_error(ret_error, -EREMOTEIO, source, "HTTP status %ld", status);
                }
        } else
                free(body.data);

        if (cc != CURLE_OK)
                return transfer_error(cc, &body, errbuf, source, max_bytes, ret_error);

        _cleanup_(freep) char *text = body.data ? body.data : strdup("");
        if (!text)
                return -ENOMEM;
        r = check_text(source, text, body.n, ret_error);
        if (r < 0)
                return r;
        *ret_text = TAKE_PTR(text);
        return 0;
}

int metric_source_fetch(const char *source, size_t max_bytes, char **ret_text, char **ret_error) {
        if (!source || !ret_text)
                return -EINVAL;
        if (source[0] == '/')
                return fetch_file(source, max_bytes, ret_text, ret_error);
        if (strstr(source, "://"))
                return fetch_http(source, max_bytes, ret_text, ret_error);
        return source_error(ret_error, -EINVAL, source, "neither an absolute file path nor an http:// URL");
}
