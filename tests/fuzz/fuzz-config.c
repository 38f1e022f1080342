/* SPDX-License-Identifier: MIT */
/* steerd.conf and its drop-ins: config_load_full(). The input is the main
 * file; each line "--8<--" in it starts the next file, a drop-in in
 * FILE.d/ (10-fuzz.conf, 11-fuzz.conf, ...), read after it in that order. */
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"

#define MARKER "--8<--"
#define MAX_DROPINS 4

static char *conf, *dropins;

static void setup(void) {
        const char *dir = fuzz_tmpdir();

        conf = fuzz_path(dir, "steerd.conf");
        dropins = fuzz_path(dir, "steerd.conf.d");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_(freep) char *error = NULL;
        const uint8_t *next;
        size_t len;
        int r;

        if (!conf)
                setup();
        fuzz_rm_rf(dropins);

        next = fuzz_split(data, size, MARKER, &len);
        fuzz_write_file(conf, data, len);
        for (unsigned i = 0; next && i < MAX_DROPINS; i++) {
                size_t left = size - (size_t) (next - data);
                const uint8_t *part = next;
                char name[32];

                next = fuzz_split(part, left, MARKER, &len);
                snprintf(name, sizeof(name), "%u-fuzz.conf", 10 + i);
                _cleanup_(freep) char *p = fuzz_path(dropins, name);
                fuzz_write_file(p, part, len);
        }

        r = config_load_full(conf, false, &c, &error);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -ENOMEM);
                FUZZ_CHECK(!c);
                /* config.h: a bus caller gets the first error as text. */
                FUZZ_CHECK(r != -EBADMSG || (error && *error));
                return 0;
        }
        FUZZ_CHECK(c && c->path && streq(c->path, conf));
        const Settings *s = &c->settings;
        FUZZ_CHECK(s->mode >= 0 && s->mode < _MODE_MAX);
        FUZZ_CHECK(s->sticky_scope >= 0 && s->sticky_scope < _STICKY_SCOPE_MAX);
        FUZZ_CHECK(s->sample_period_ms >= 10 && s->sample_period_ms <= 60000);
        FUZZ_CHECK(memchr(s->metrics_file, '\0', sizeof(s->metrics_file)));
        FUZZ_CHECK(!s->metrics_file[0] || s->metrics_file[0] == '/');
        for (size_t i = 0; i < c->n_opt_ins; i++) {
                FUZZ_CHECK(optin_rule_kind(c->opt_ins[i].cgroup) >= 0);
                FUZZ_CHECK(c->opt_ins[i].policy >= 0 && c->opt_ins[i].policy < _CGROUP_POLICY_MAX);
                for (size_t j = 0; j < i; j++) /* a drop-in overrides, never repeats */
                        FUZZ_CHECK(!streq(c->opt_ins[i].cgroup, c->opt_ins[j].cgroup));
        }
        return 0;
}
