/* SPDX-License-Identifier: MIT */
#include "log.h"
#include "steerd.h"

int run_record(const Args *args, const Config *config) {
        return log_error("--record: not built yet"), -EOPNOTSUPP;
}
