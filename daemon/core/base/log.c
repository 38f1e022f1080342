/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <systemd/sd-journal.h>

#include "log.h"

typedef struct LogTarget {
        bool ready;
        bool journal; /* structured entries instead of lines on stderr */
        bool debug;
} LogTarget;

/* Written once (first message or log_setup()), read on every message. */
static LogTarget log_target;

void log_setup(void) {
        const char *e = getenv("STEERD_DEBUG");

        /* systemd sets JOURNAL_STREAM when stderr is connected to the journal;
         * then structured entries are better than parsed lines. */
        log_target = (LogTarget){
                .ready = true,
                .journal = getenv("JOURNAL_STREAM") && !getenv("STEERD_LOG_STDERR"),
                .debug = e && *e && !streq(e, "0"),
        };
}

static const LogTarget *target(void) {
        if (!log_target.ready)
                log_setup();
        return &log_target;
}

bool log_debug_enabled(void) {
        return target()->debug;
}

static int vlog(int level, int error, const char *message_id, const char *fmt, va_list ap) {
        char buf[2048];
        int saved = errno;

        if (level >= LOG_DEBUG && !target()->debug)
                goto out;

        int n = vsnprintf(buf, sizeof(buf), fmt, ap);
        /* The reason belongs in the message, in the journal as on a terminal. */
        if (error != 0 && n >= 0 && (size_t) n < sizeof(buf))
                snprintf(buf + n, sizeof(buf) - (size_t) n, ": %s", strerror(error < 0 ? -error : error));

        if (target()->journal) {
                char prio[16], mid[64], err[32];
                snprintf(prio, sizeof(prio), "PRIORITY=%d", level);
                snprintf(mid, sizeof(mid), "MESSAGE_ID=%s", message_id ? message_id : "");
                snprintf(err, sizeof(err), "ERRNO=%d", error < 0 ? -error : error);
                sd_journal_send("MESSAGE=%s", buf, prio, "SYSLOG_IDENTIFIER=steerd",
                                message_id ? mid : "STEERD_NO_ID=1", error ? err : "STEERD_NO_ERRNO=1",
                                NULL);
        } else
                fprintf(stderr, "%s\n", buf);
out:
        errno = saved;
        return error > 0 ? -error : error;
}

int log_internal(int level, int error, const char *message_id, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = vlog(level, error, message_id, fmt, ap);
        va_end(ap);
        return r;
}

int log_parse_error(const char *file, unsigned line, const char *fmt, ...) {
        char reason[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        if (line > 0)
                log_struct(LOG_ERR, STEERD_MESSAGE_PARSE_ERROR, "%s:%u: %s", file, line, reason);
        else
                log_struct(LOG_ERR, STEERD_MESSAGE_PARSE_ERROR, "%s: %s", file, reason);
        return -EBADMSG;
}
