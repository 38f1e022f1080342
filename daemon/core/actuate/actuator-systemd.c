/* SPDX-License-Identifier: MIT */
#include <systemd/sd-daemon.h>

#include "actuator-systemd.h"
#include "log.h"

/* systemd owns the cgroups of its units: a write to their cpuset.cpus would
 * be undone at the next daemon-reload or unit restart, and is invisible to
 * `systemctl show`. For those, steerd asks systemd, as an operator would with
 * `systemctl set-property --runtime UNIT AllowedCPUs=`. */

static const char *const unit_suffixes[][2] = {
        {".service", "org.freedesktop.systemd1.Service"},
        {".scope", "org.freedesktop.systemd1.Scope"},
        {".slice", "org.freedesktop.systemd1.Slice"},
};

static const char *unit_interface(const char *unit) {
        size_t n = strlen(unit);
        for (size_t i = 0; i < ELEMENTSOF(unit_suffixes); i++) {
                size_t k = strlen(unit_suffixes[i][0]);
                if (n > k && streq(unit + n - k, unit_suffixes[i][0]))
                        return unit_suffixes[i][1];
        }
        return NULL;
}

int systemd_unit_from_cgroup(const char *path, char **ret) {
        const char *base;
        char *u;

        if (!path || !ret)
                return -EINVAL;
        base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (!*base || strlen(base) > 255 || !unit_interface(base))
                return -EINVAL;
        /* The characters systemd allows in unit names (unit_name_is_valid()). */
        for (const char *p = base; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@", *p))
                        return -EINVAL;
        /* "@.service" is a template, not a unit with a cgroup. */
        const char *at = strchr(base, '@');
        if (base[0] == '.' || base[0] == '@' || (at && at[1] == '.'))
                return -EINVAL;
        u = strdup(base);
        if (!u)
                return -ENOMEM;
        *ret = u;
        return 0;
}

int cpuset_to_unit_bitmask(hwloc_const_bitmap_t set, uint8_t **ret, size_t *ret_size) {
        uint8_t *b = NULL;
        size_t n = 0;
        int last, cpu;

        if (!set || !ret || !ret_size)
                return -EINVAL;
        last = hwloc_bitmap_last(set);
        if (hwloc_bitmap_iszero(set))
                last = -1;
        else if (last < 0)
                return -EINVAL; /* infinite */
        n = (size_t) (last + 1 + 7) / 8;
        /* One byte even for the empty set, so that the pointer is valid; the
         * size (0) is what goes on the bus. */
        b = calloc(MAX(n, (size_t) 1), 1);
        if (!b)
                return -ENOMEM;
        hwloc_bitmap_foreach_begin(cpu, set) {
                b[cpu / 8] |= (uint8_t) (1U << (cpu % 8));
        }
        hwloc_bitmap_foreach_end();
        *ret = b;
        *ret_size = n;
        return 0;
}

int cpuset_from_unit_bitmask(const uint8_t *bytes, size_t size, CpuSet *ret) {
        _cleanup_cpuset_ CpuSet set = hwloc_bitmap_alloc();

        if (!set)
                return -ENOMEM;
        if (size > 0 && !bytes)
                return -EINVAL;
        for (size_t i = 0; i < size; i++)
                for (unsigned j = 0; j < 8; j++)
                        if (bytes[i] & (1U << j))
                                hwloc_bitmap_set(set, (unsigned) (i * 8 + j));
        *ret = TAKE_PTR(set);
        return 0;
}

bool systemd_backend_eligible(bool live, sd_bus *bus, const char *dir, bool v2) {
        _cleanup_(freep) char *unit = NULL;

        /* A fixture root must never reach the host's systemd. */
        if (!live || !bus || !v2)
                return false;
        if (systemd_unit_from_cgroup(dir, &unit) < 0)
                return false;
        return sd_booted() > 0;
}

/* A watch-bind connection that is not up (yet, or again) would make a call
 * wait for it, for up to the call's timeout: a tick must not. The caller
 * keeps what it could not do and tries again. */
static int systemd_bus_usable(sd_bus *bus) {
        if (!bus)
                return -ENOTCONN;
        int r = sd_bus_is_ready(bus);
        if (r < 0)
                return r;
        return r > 0 ? 0 : -ENOTCONN;
}

int systemd_get_allowed_cpus(sd_bus *bus, const char *unit, CpuSet *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *prop = NULL;
        const char *path, *iface = unit_interface(unit);
        const void *bytes = NULL;
        size_t size = 0;
        int r;

        if (!iface)
                return -EINVAL;
        r = systemd_bus_usable(bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "GetUnit", &error, &reply, "s", unit);
        if (r < 0)
                return log_warning_errno(r, "systemd: GetUnit(%s) failed: %s", unit,
                                         error.message ?: "no message");
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property(bus, "org.freedesktop.systemd1", path, iface, "AllowedCPUs", &error, &prop,
                                "ay");
        if (r < 0)
                return log_warning_errno(r, "systemd: reading %s AllowedCPUs failed: %s", unit,
                                         error.message ?: "no message");
        r = sd_bus_message_read_array(prop, 'y', &bytes, &size);
        if (r < 0)
                return r;
        return cpuset_from_unit_bitmask(bytes, size, ret);
}

int systemd_set_allowed_cpus(sd_bus *bus, const char *unit, hwloc_const_bitmap_t set) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(freep) uint8_t *bytes = NULL;
        size_t size;
        int r;

        r = systemd_bus_usable(bus);
        if (r < 0)
                return r;
        r = cpuset_to_unit_bitmask(set, &bytes, &size);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
        if (r < 0)
                return r;
        /* runtime=true: the change lives in /run and is gone at reboot, like
         * everything else steerd does. */
        if ((r = sd_bus_message_append(m, "sb", unit, 1)) < 0 ||
            (r = sd_bus_message_open_container(m, 'a', "(sv)")) < 0 ||
            (r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
            (r = sd_bus_message_append(m, "s", "AllowedCPUs")) < 0 ||
            (r = sd_bus_message_open_container(m, 'v', "ay")) < 0 ||
            (r = sd_bus_message_append_array(m, 'y', bytes, size)) < 0 ||
            (r = sd_bus_message_close_container(m)) < 0 || (r = sd_bus_message_close_container(m)) < 0 ||
            (r = sd_bus_message_close_container(m)) < 0)
                return r;
        r = sd_bus_call(bus, m, 0, &error, NULL);
        if (r < 0)
                return log_warning_errno(r, "systemd: SetUnitProperties(%s, AllowedCPUs) failed: %s", unit,
                                         error.message ?: "no message");
        return 0;
}
