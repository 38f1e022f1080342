/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "json-util.h"

json_object *json_double_1(double d) {
        char buf[64];
        if (!isfinite(d))
                d = 0;
        snprintf(buf, sizeof(buf), "%.1f", d);
        return json_object_new_double_s(strtod(buf, NULL), buf);
}

json_object *json_cpuset(hwloc_const_bitmap_t set) {
        _cleanup_(freep) char *s = NULL;
        if (!set || cpuset_format(set, &s) < 0)
                return NULL;
        return json_object_new_string(s);
}
