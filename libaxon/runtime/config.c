/* The runtime's configuration: defaults from the machine, overridden by AXON_* environment variables.
 * Defaults aim at "one process uses the whole machine"; under torchrun (LOCAL_WORLD_SIZE set) each local rank sees
 * enough devices for the local world and takes its share of the cores and memory. */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

axon_status_t axon_parse_size(const char *name, const char *text, size_t *out) {
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    if (!isdigit((unsigned char)*p)) goto bad;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno != 0) goto bad;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift != 0 && toupper((unsigned char)*end) == 'I') end++;
    if (toupper((unsigned char)*end) == 'B') end++;
    while (isspace((unsigned char)*end)) end++;
    if (*end != '\0') goto bad;
    if (shift != 0 && v > (~0ull >> shift)) goto bad;
    *out = (size_t)(v << shift);
    return AXON_OK;
bad:
    return axon_fail(AXON_ERROR_CONFIG, "%s='%s': expected a byte count such as 1073741824, 512M or 8G", name, text);
}

/* Parse a decimal integer in [lo, hi]. */
static axon_status_t parse_int(const char *name, const char *text, long lo, long hi, int *out) {
    errno = 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    while (end && isspace((unsigned char)*end)) end++;
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
        return axon_fail(AXON_ERROR_CONFIG, "%s='%s': expected an integer from %ld to %ld", name, text, lo, hi);
    *out = (int)v;
    return AXON_OK;
}

int axon_usable_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Physical memory, or the cgroup limit when a container sets a smaller one. */
static size_t usable_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t total = (pages > 0 && page > 0) ? (size_t)pages * (size_t)page : (size_t)8 << 30;
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (f) {
        unsigned long long limit = 0;
        if (fscanf(f, "%llu", &limit) == 1 && limit > 0 && limit < total) total = (size_t)limit;
        fclose(f);
    }
    return total;
}

/* An environment variable, or NULL when unset or empty. */
static const char *env(const char *name) {
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

axon_status_t axon_config_from_env(axon_config_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_config_from_env: out is NULL");
    memset(out, 0, sizeof *out);

    /* torchrun's variable, not ours: a bad value falls back to a single process rather than failing. */
    int local_world = 1;
    const char *v = env("LOCAL_WORLD_SIZE");
    if (v && parse_int("LOCAL_WORLD_SIZE", v, 1, 1 << 20, &local_world) != AXON_OK) {
        local_world = 1;
        axon_clear_error();
    }
    int cores = axon_usable_cores();
    out->device_count = local_world < AXON_MAX_DEVICES ? local_world : AXON_MAX_DEVICES;
    out->threads_per_device = cores / local_world > 0 ? cores / local_world : 1;
    /* Devices of one process share its memory; under torchrun each rank uses one device, so the split is by
     * processes on this host rather than by devices. */
    out->memory_capacity = usable_memory() / 4 * 3 / (size_t)local_world;

    axon_config_t cfg = *out; /* *out keeps the defaults if a variable is malformed */
    axon_status_t st = AXON_OK;
    if ((v = env("AXON_DEVICE_COUNT")) && st == AXON_OK)
        st = parse_int("AXON_DEVICE_COUNT", v, 1, AXON_MAX_DEVICES, &cfg.device_count);
    if ((v = env("AXON_THREADS")) && st == AXON_OK)
        st = parse_int("AXON_THREADS", v, 1, 4096, &cfg.threads_per_device);
    if ((v = env("AXON_STRICT")) && st == AXON_OK) st = parse_int("AXON_STRICT", v, 0, 1, &cfg.strict);
    if ((v = env("AXON_TRACE")) && st == AXON_OK) st = parse_int("AXON_TRACE", v, 0, 1, &cfg.trace);
    if ((v = env("AXON_HUGEPAGES")) && st == AXON_OK) st = parse_int("AXON_HUGEPAGES", v, 0, 1, &cfg.hugepages);
    if ((v = env("AXON_ALLOC_GUARD")) && st == AXON_OK)
        st = parse_int("AXON_ALLOC_GUARD", v, 0, 1, &cfg.alloc_guard);
    if (st == AXON_OK && local_world == 1 && cfg.device_count > 1) cfg.memory_capacity /= (size_t)cfg.device_count;
    if ((v = env("AXON_DEVICE_MEMORY")) && st == AXON_OK) {
        st = axon_parse_size("AXON_DEVICE_MEMORY", v, &cfg.memory_capacity);
        if (st == AXON_OK && cfg.memory_capacity == 0)
            st = axon_fail(AXON_ERROR_CONFIG, "AXON_DEVICE_MEMORY='%s': the capacity must be greater than zero", v);
    }
    if (st != AXON_OK) return st;
    *out = cfg;
    return AXON_OK;
}
