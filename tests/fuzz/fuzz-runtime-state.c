/* SPDX-License-Identifier: MIT */
/* steerctl's runtime state (/var/lib/steerd/runtime.json):
 * runtime_state_load() of the input as the file. What it accepts must save
 * and load back to the same state. */
#include <unistd.h>

#include "fuzz.h"
#include "runtime-state.h"

static char *path, *bad, *saved;

static void setup(void) {
        const char *dir = fuzz_tmpdir();

        path = fuzz_path(dir, "runtime.json");
        bad = fuzz_path(dir, "runtime.json.bad");
        saved = fuzz_path(dir, "saved.json");
}

static void check_valid(const RuntimeState *s) {
        FUZZ_CHECK(!s->has_mode || (s->mode >= 0 && s->mode < _MODE_MAX));
        for (size_t i = 0; i < s->n_opt_ins; i++) {
                FUZZ_CHECK(optin_rule_kind(s->opt_ins[i].cgroup) >= 0);
                FUZZ_CHECK(s->opt_ins[i].policy >= 0 && s->opt_ins[i].policy < _CGROUP_POLICY_MAX);
                /* runtime-state.h: opt_ins and opt_outs exclusive */
                FUZZ_CHECK(!runtime_state_opted_out(s, s->opt_ins[i].cgroup));
                for (size_t j = 0; j < i; j++)
                        FUZZ_CHECK(!streq(s->opt_ins[i].cgroup, s->opt_ins[j].cgroup));
        }
        for (size_t i = 0; i < s->n_opt_outs; i++) {
                FUZZ_CHECK(optin_rule_kind(s->opt_outs[i]) >= 0);
                for (size_t j = 0; j < i; j++)
                        FUZZ_CHECK(!streq(s->opt_outs[i], s->opt_outs[j]));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RuntimeState s = {}, back = {};
        int r;

        if (!path)
                setup();
        (void) unlink(bad);
        fuzz_write_file(path, data, size);

        r = runtime_state_load(path, &s);
        FUZZ_CHECK(r == 0); /* malformed is an empty state, not an error */
        check_valid(&s);
        if (access(bad, F_OK) == 0) /* moved aside: nothing of it kept */
                FUZZ_CHECK(!s.has_mode && s.n_opt_ins == 0 && s.n_opt_outs == 0);

        FUZZ_CHECK(runtime_state_save(&s, saved) == 0);
        FUZZ_CHECK(runtime_state_load(saved, &back) == 0);
        FUZZ_CHECK(access(saved, F_OK) == 0); /* what steerd wrote, it reads */
        FUZZ_CHECK(back.has_mode == s.has_mode && (!s.has_mode || back.mode == s.mode));
        FUZZ_CHECK(back.mode_set_usec == (s.has_mode ? s.mode_set_usec : 0));
        FUZZ_CHECK(back.n_opt_ins == s.n_opt_ins && back.n_opt_outs == s.n_opt_outs);
        for (size_t i = 0; i < s.n_opt_ins; i++)
                FUZZ_CHECK(streq(back.opt_ins[i].cgroup, s.opt_ins[i].cgroup) &&
                           back.opt_ins[i].policy == s.opt_ins[i].policy);
        for (size_t i = 0; i < s.n_opt_outs; i++)
                FUZZ_CHECK(streq(back.opt_outs[i], s.opt_outs[i]));

        runtime_state_done(&s);
        runtime_state_done(&back);
        return 0;
}
