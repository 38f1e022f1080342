/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wake-events.h"

/* Data pages per CPU (a power of two): 64 KiB holds a 100 ms tick of
 * some 11,000 samples a second on one CPU (records of about 56 bytes);
 * the sampler aims at 4,000 a second in all. A full buffer loses samples,
 * not correctness. */
#define WAKE_DATA_PAGES 16u

/* common_flags bits of a trace record (the kernel's enum trace_flag_type,
 * unchanged since 2.6.x). */
#define TRACE_FLAG_HARDIRQ 0x08u
#define TRACE_FLAG_NMI 0x40u

static const char *const tracefs_dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

typedef struct WakeBuffer {
        int fd;
        void *base;
        size_t len;
} WakeBuffer;

struct WakeEvents {
        WakeBuffer *bufs;
        size_t n_bufs;
        unsigned pid_offset;
        unsigned flags_offset; /* UINT_MAX: the format has no common_flags */
        unsigned period;
        size_t page_size;
        char *rec; /* one record, copied out where it wraps */
        size_t rec_size;
};

/* The offset of the field called name ("pid", "common_flags") in a
 * tracepoint format file; a line reads
 * "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;". */
int wake_events_parse_field(const char *text, const char *name, unsigned *ret_offset) {
        size_t n = strlen(name);

        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                const char *f = strstr(p, "field:"), *end = strchr(p, '\n');
                if (!f || (end && f > end))
                        continue;
                const char *semi = strchr(f, ';');
                if (!semi || (end && semi > end) || (size_t) (semi - f) < n + 7 ||
                    memcmp(semi - n, name, n) != 0 || (semi[-n - 1] != ' ' && semi[-n - 1] != '*'))
                        continue;
                const char *o = strstr(semi, "offset:");
                if (!o || (end && o > end))
                        return -EBADMSG;
                char *e;
                errno = 0;
                unsigned long v = strtoul(o + 7, &e, 10);
                if (errno != 0 || e == o + 7 || *e != ';' || v > 4096)
                        return -EBADMSG;
                *ret_offset = (unsigned) v;
                return 0;
        }
        return -EBADMSG;
}

int wake_events_parse_format(const char *text, unsigned *ret_offset) {
        return wake_events_parse_field(text, "pid", ret_offset);
}

static int tracepoint_lookup(const RootDir *root, uint64_t *ret_id, unsigned *ret_offset,
                             unsigned *ret_flags_offset, char *why, size_t why_size) {
        char path[128];
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(tracefs_dirs); i++) {
                _cleanup_(freep) char *id = NULL, *format = NULL;
                char *e;

                snprintf(path, sizeof(path), "%s/events/sched/sched_waking/id", tracefs_dirs[i]);
                r = rootdir_read_file(root, path, &id, NULL);
                if (r < 0)
                        continue;
                errno = 0;
                unsigned long long v = strtoull(id, &e, 10);
                if (errno != 0 || e == id || (*e != '\n' && *e != '\0')) {
                        snprintf(why, why_size, "%s is malformed", path);
                        return -EBADMSG;
                }
                snprintf(path, sizeof(path), "%s/events/sched/sched_waking/format", tracefs_dirs[i]);
                r = rootdir_read_file(root, path, &format, NULL);
                if (r >= 0)
                        r = wake_events_parse_format(format, ret_offset);
                if (r < 0) {
                        snprintf(why, why_size, "%s: %s", path,
                                 r == -EBADMSG ? "no pid field" : strerror(-r));
                        return r;
                }
                if (wake_events_parse_field(format, "common_flags", ret_flags_offset) < 0)
                        *ret_flags_offset = UINT_MAX;
                *ret_id = v;
                return 0;
        }
        snprintf(why, why_size, "no tracefs with sched:sched_waking (%s, %s: %s)", tracefs_dirs[0],
                 tracefs_dirs[1], strerror(-r));
        return r;
}

static int open_cpu(WakeEvents *w, uint64_t id, int cpu, WakeBuffer *b) {
        struct perf_event_attr a = {
                .type = PERF_TYPE_TRACEPOINT,
                .size = sizeof(a),
                .config = id,
                .sample_period = w->period,
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_RAW,
                /* Drained every tick: nobody waits for a wakeup. */
                .watermark = 1,
                .wakeup_watermark = (uint32_t) (WAKE_DATA_PAGES * w->page_size),
        };
        int fd = (int) syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t len = (1 + WAKE_DATA_PAGES) * w->page_size;
        void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
                int r = -errno;
                close(fd);
                return r;
        }
        *b = (WakeBuffer){.fd = fd, .base = base, .len = len};
        return 0;
}

void wake_events_denied_hint(int paranoid, char *buf, size_t size) {
        if (paranoid > 2)
                snprintf(buf, size,
                         "kernel.perf_event_paranoid is %d: Debian's and Ubuntu's kernels then open events "
                         "only for CAP_SYS_ADMIN, which steerd's unit does not give it; "
                         "`sysctl kernel.perf_event_paranoid=2` lets its CAP_PERFMON do, then "
                         "`systemctl reload steerd`",
                         paranoid);
        else
                snprintf(buf, size, "steerd needs CAP_PERFMON (or CAP_SYS_ADMIN) to open it");
}

/* Appends to why the remedy for a refused open. */
static void denied_why(const RootDir *root, int cpu, int r, char *why, size_t why_size) {
        _cleanup_(freep) char *text = NULL;
        char hint[320];
        int paranoid = 2;

        if (rootdir_read_file(root, "/proc/sys/kernel/perf_event_paranoid", &text, NULL) >= 0)
                paranoid = atoi(text);
        wake_events_denied_hint(paranoid, hint, sizeof(hint));
        snprintf(why, why_size, "perf_event_open(sched:sched_waking, cpu %d): %s (%s)", cpu, strerror(-r),
                 hint);
}

int wake_events_open(const RootDir *root, hwloc_const_bitmap_t cpus, unsigned period, WakeEvents **ret,
                     char *why, size_t why_size) {
        _cleanup_(wake_events_closep) WakeEvents *w = NULL;
        uint64_t id;
        unsigned offset, flags_offset;
        int r, cpu;

        r = tracepoint_lookup(root, &id, &offset, &flags_offset, why, why_size);
        if (r < 0)
                return r;
        if (!rootdir_is_host(root)) {
                snprintf(why, why_size, "the root %s is not this host's", root->path);
                return -EOPNOTSUPP;
        }
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->period = MAX(period, 1u);
        w->pid_offset = offset;
        w->flags_offset = flags_offset;
        w->page_size = (size_t) sysconf(_SC_PAGESIZE);
        int n = hwloc_bitmap_weight(cpus);
        w->bufs = calloc(MAX(n, 1), sizeof(WakeBuffer));
        if (!w->bufs)
                return -ENOMEM;
        hwloc_bitmap_foreach_begin(cpu, cpus) {
                r = open_cpu(w, id, cpu, &w->bufs[w->n_bufs]);
                if (r == -EACCES || r == -EPERM) {
                        denied_why(root, cpu, r, why, why_size);
                        return r;
                }
                if (r < 0) {
                        snprintf(why, why_size, "perf_event_open(sched:sched_waking, cpu %d): %s", cpu,
                                 strerror(-r));
                        return r;
                }
                w->n_bufs++;
        }
        hwloc_bitmap_foreach_end();
        *ret = TAKE_PTR(w);
        return 0;
}

WakeEvents *wake_events_close(WakeEvents *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_bufs; i++) {
                munmap(w->bufs[i].base, w->bufs[i].len);
                close(w->bufs[i].fd);
        }
        free(w->bufs);
        free(w->rec);
        free(w);
        return NULL;
}

unsigned wake_events_period(const WakeEvents *w) {
        return w->period;
}

/* Copies n bytes at ring offset pos (wrapping) into dst. */
static void ring_copy(const char *data, uint64_t size, uint64_t pos, void *dst, size_t n) {
        size_t off = (size_t) (pos % size), first = MIN(n, (size_t) (size - off));
        memcpy(dst, data + off, first);
        memcpy((char *) dst + first, data, n - first);
}

/* A PERF_RECORD_SAMPLE of sample_type TID | RAW: u32 pid, tid; u32 size;
 * raw bytes (the tracepoint's record). */
static void parse_sample(const WakeEvents *w, const char *rec, size_t len, wake_event_cb cb,
                         void *userdata) {
        uint32_t ids[2], raw_size;
        int32_t wakee;
        size_t at = sizeof(struct perf_event_header);

        if (len < at + sizeof(ids) + sizeof(raw_size))
                return;
        memcpy(ids, rec + at, sizeof(ids));
        memcpy(&raw_size, rec + at + sizeof(ids), sizeof(raw_size));
        at += sizeof(ids) + sizeof(raw_size);
        if (raw_size > len - at || w->pid_offset + sizeof(wakee) > raw_size)
                return;
        memcpy(&wakee, rec + at + w->pid_offset, sizeof(wakee));
        /* A wakeup in a hard interrupt or an NMI (a timer, a device) is not
         * the doing of the task it interrupted, whose tid the sample carries. */
        if (w->flags_offset < raw_size &&
            ((unsigned char) rec[at + w->flags_offset] & (TRACE_FLAG_HARDIRQ | TRACE_FLAG_NMI)))
                return;
        if (ids[1] > 0 && wakee > 0)
                cb((pid_t) ids[1], (pid_t) wakee, userdata);
}

static int drain_one(WakeEvents *w, WakeBuffer *b, wake_event_cb cb, void *userdata, uint64_t *lost) {
        struct perf_event_mmap_page *pg = b->base;
        const char *data = (const char *) b->base + (pg->data_offset ? pg->data_offset : w->page_size);
        uint64_t size = pg->data_size ? pg->data_size : WAKE_DATA_PAGES * w->page_size;
        uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;

        while (head - tail >= sizeof(struct perf_event_header)) {
                struct perf_event_header h;
                ring_copy(data, size, tail, &h, sizeof(h));
                if (h.size < sizeof(h) || h.size > head - tail)
                        break; /* not a record: skip what is left */
                if (h.size > w->rec_size) {
                        char *p = realloc(w->rec, h.size);
                        if (!p)
                                return -ENOMEM;
                        w->rec = p;
                        w->rec_size = h.size;
                }
                ring_copy(data, size, tail, w->rec, h.size);
                if (h.type == PERF_RECORD_SAMPLE)
                        parse_sample(w, w->rec, h.size, cb, userdata);
                else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 2 * sizeof(uint64_t)) {
                        uint64_t n;
                        memcpy(&n, w->rec + sizeof(h) + sizeof(uint64_t), sizeof(n));
                        *lost += n;
                }
                tail += h.size;
        }
        __atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
        return 0;
}

int wake_events_drain(WakeEvents *w, wake_event_cb cb, void *userdata, uint64_t *ret_lost) {
        uint64_t lost = 0;
        int r;

        for (size_t i = 0; i < w->n_bufs; i++) {
                r = drain_one(w, &w->bufs[i], cb, userdata, &lost);
                if (r < 0)
                        return r;
        }
        if (ret_lost)
                *ret_lost = lost;
        return 0;
}
