/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <math.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "output.h"

bool on_tty(void) {
        return isatty(STDOUT_FILENO) > 0;
}

bool colors_enabled(void) {
        const char *term;

        if (!on_tty())
                return false;
        if (getenv("NO_COLOR"))
                return false;
        term = getenv("TERM");
        return !term || !streq(term, "dumb");
}

const char *ansi(const char *code) {
        return colors_enabled() ? code : "";
}

unsigned terminal_rows(void) {
        struct winsize ws = {};

        if (!on_tty() || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
                return 0;
        return ws.ws_row;
}

int log_error_errno(int error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return error == 0 ? -EIO : -abs(error);
}

int json_print(json_object *o, JsonMode mode) {
        int flags = JSON_C_TO_STRING_NOSLASHESCAPE;
        const char *s;

        flags |= mode == JSON_PRETTY ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                     : JSON_C_TO_STRING_PLAIN;
        s = json_object_to_json_string_ext(o, flags);
        if (!s)
                return log_oom();
        if (puts(s) < 0 || fflush(stdout) != 0)
                return log_error_errno(EIO, "Failed to write to standard output: %s",
                                       strerror(errno ?: EIO));
        return 0;
}

json_object *json_get(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!o || !json_object_is_type(o, json_type_object))
                return NULL;
        if (!json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

const char *json_get_string(json_object *o, const char *key, const char *fallback) {
        json_object *v = json_get(o, key);

        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : fallback;
}

static bool json_is_number(json_object *v) {
        return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

double json_get_double(json_object *o, const char *key, double fallback) {
        json_object *v = json_get(o, key);

        return json_is_number(v) ? json_object_get_double(v) : fallback;
}

int64_t json_get_int(json_object *o, const char *key, int64_t fallback) {
        json_object *v = json_get(o, key);

        return json_is_number(v) ? json_object_get_int64(v) : fallback;
}

bool json_get_bool(json_object *o, const char *key, bool fallback) {
        json_object *v = json_get(o, key);

        return v && json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : fallback;
}

char *format_timespan(char *buf, size_t size, uint64_t usec) {
        if (usec == 0)
                snprintf(buf, size, "0");
        else if (usec < USEC_PER_MSEC)
                snprintf(buf, size, "%" PRIu64 "us", usec);
        else if (usec < USEC_PER_SEC)
                snprintf(buf, size, "%" PRIu64 "ms", (uint64_t) (usec / USEC_PER_MSEC));
        else if (usec < 60 * USEC_PER_SEC) {
                if (usec % USEC_PER_SEC == 0)
                        snprintf(buf, size, "%" PRIu64 "s", (uint64_t) (usec / USEC_PER_SEC));
                else
                        snprintf(buf, size, "%.3gs", (double) usec / USEC_PER_SEC);
        } else {
                uint64_t s = usec / USEC_PER_SEC;

                if (s % 60 == 0)
                        snprintf(buf, size, "%" PRIu64 "min", s / 60);
                else
                        snprintf(buf, size, "%" PRIu64 "min %" PRIu64 "s", s / 60, s % 60);
        }
        return buf;
}

char *format_capacity(char *buf, size_t size, double value) {
        if (!isfinite(value))
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%4.0f %3.0f%%", value, value * 100.0 / SCHED_CAPACITY_SCALE);
        return buf;
}
