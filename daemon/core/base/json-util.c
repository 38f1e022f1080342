/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "json-util.h"

int json_add_full(json_object *o, const char *key, json_object *v, bool nullable) {
        if (!v && !nullable)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_append(json_object *a, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

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
