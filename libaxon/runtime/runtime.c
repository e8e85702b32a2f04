/* The runtime: creates and owns the devices, and the process-wide default runtime the PyTorch glue uses. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "internal.h"

const char *axon_version(void) {
#define AXON_STR2(x) #x
#define AXON_STR(x) AXON_STR2(x)
    return AXON_STR(AXON_VERSION_MAJOR) "." AXON_STR(AXON_VERSION_MINOR) "." AXON_STR(AXON_VERSION_PATCH);
}

static axon_status_t check_config(const axon_config_t *cfg, const axon_hw_ops_t *hw) {
    if (cfg->device_count < 1 || cfg->device_count > AXON_MAX_DEVICES)
        return axon_fail(AXON_ERROR_INVALID_ARG, "device_count %d is outside 1..%d", cfg->device_count,
                         AXON_MAX_DEVICES);
    if (cfg->memory_capacity == 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "memory_capacity is 0: a device needs some memory");
    if (cfg->threads_per_device < 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "threads_per_device %d: need at least 1", cfg->threads_per_device);
    if (hw->abi_version != AXON_HW_ABI_VERSION)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "port '%s' has hw ABI version %d, libaxon needs %d",
                         hw->name ? hw->name : "?", hw->abi_version, AXON_HW_ABI_VERSION);
    if (!hw->mem_map || !hw->mem_unmap || !hw->execute || !hw->copy || !hw->fill)
        return axon_fail(AXON_ERROR_INVALID_ARG, "port '%s' leaves a required slot NULL", hw->name ? hw->name : "?");
    return AXON_OK;
}

static void fill_props(axon_device_t d, const char *cpu_model, unsigned features) {
    axon_device_props_t *p = &d->props;
    memset(p, 0, sizeof *p);
    snprintf(p->port, sizeof p->port, "%s", d->hw->name ? d->hw->name : "?");
    snprintf(p->name, sizeof p->name, "axon:%d (%s)", d->index, p->port);
    snprintf(p->cpu_model, sizeof p->cpu_model, "%s", cpu_model);
    p->index = d->index;
    p->threads = d->rt->cfg.threads_per_device;
    p->strict = d->rt->cfg.strict != 0;
    p->cpu_features = features;
    p->total_memory = d->rt->cfg.memory_capacity;
    p->page_size = d->rt->page_size;
    p->major = AXON_VERSION_MAJOR;
    p->minor = AXON_HW_ABI_VERSION;
}

axon_status_t axon_runtime_create(const axon_config_t *cfg, axon_runtime_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_runtime_create: out is NULL");
    *out = NULL;
    if (cfg == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_runtime_create: cfg is NULL");
    const axon_hw_ops_t *hw = cfg->hw ? cfg->hw : axon_hw_cpu();
    axon_status_t st = check_config(cfg, hw);
    if (st != AXON_OK) return st;

    axon_runtime_t rt = calloc(1, sizeof *rt);
    if (rt == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_runtime_create: no host memory");
    rt->cfg = *cfg;
    rt->cfg.hw = hw;
    if (cfg->hw == NULL && cfg->hw_ctx == NULL) {
        rt->cpu_options.hugepages = cfg->hugepages != 0;
        rt->cfg.hw_ctx = &rt->cpu_options;
    }
    long page = sysconf(_SC_PAGESIZE);
    rt->page_size = page > 0 ? (size_t)page : 4096;

    if ((st = axon_trace_create(cfg->trace, &rt->trace)) != AXON_OK) goto fail;
    if (cfg->strict && (st = axon_strict_create(rt, &rt->strict)) != AXON_OK) goto fail;
    if ((st = axon_hostpool_create(rt, &rt->host)) != AXON_OK) goto fail;

    rt->devs = calloc((size_t)cfg->device_count, sizeof *rt->devs);
    if (rt->devs == NULL) {
        st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_runtime_create: no host memory for %d devices",
                       cfg->device_count);
        goto fail;
    }
    char cpu_model[128];
    axon_cpu_model(cpu_model, sizeof cpu_model);
    unsigned features = axon_cpu_features();
    for (int i = 0; i < cfg->device_count; i++) {
        axon_device_t d = &rt->devs[i];
        rt->ndev = i + 1; /* destroy walks only devices that were started */
        d->rt = rt;
        d->index = i;
        d->hw = hw;
        d->hw_ctx = rt->cfg.hw_ctx;
        fill_props(d, cpu_model, features);
        if ((st = axon_pool_create(cfg->threads_per_device, &d->pool)) != AXON_OK) goto fail;
        if ((st = axon_streams_init(d)) != AXON_OK) goto fail;
        if ((st = axon_mempool_create(d, &d->mem)) != AXON_OK) goto fail;
    }
    *out = rt;
    return AXON_OK;
fail:;
    /* Keep the failure's message: tearing down may overwrite this thread's error slot. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", axon_last_error());
    axon_runtime_destroy(rt);
    return axon_fail(st, "%s", msg);
}

void axon_runtime_destroy(axon_runtime_t rt) {
    if (rt == NULL) return;
    /* Streams first: queued commands may still use memory, the pool and the pinned buffers. */
    for (int i = 0; i < rt->ndev; i++) axon_streams_shutdown(&rt->devs[i]);
    for (int i = 0; i < rt->ndev; i++) {
        axon_mempool_destroy(rt->devs[i].mem);
        axon_pool_destroy(rt->devs[i].pool);
    }
    axon_hostpool_destroy(rt->host);
    axon_strict_destroy(rt->strict);
    axon_trace_destroy(rt->trace);
    free(rt->devs);
    free(rt);
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static axon_runtime_t default_runtime;
static axon_status_t default_status;
static char default_message[1024];

static void create_default(void) {
    axon_config_t cfg;
    default_status = axon_config_from_env(&cfg);
    if (default_status == AXON_OK) default_status = axon_runtime_create(&cfg, &default_runtime);
    if (default_status != AXON_OK) snprintf(default_message, sizeof default_message, "%s", axon_last_error());
}

axon_status_t axon_runtime_default(axon_runtime_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_runtime_default: out is NULL");
    pthread_once(&default_once, create_default);
    *out = default_runtime;
    if (default_status != AXON_OK) return axon_fail(default_status, "%s", default_message);
    return AXON_OK;
}

int axon_device_count(axon_runtime_t rt) { return rt ? rt->ndev : 0; }

axon_status_t axon_device_get(axon_runtime_t rt, int index, axon_device_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_device_get: out is NULL");
    *out = NULL;
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_device_get: runtime is NULL");
    if (index < 0 || index >= rt->ndev)
        return axon_fail(AXON_ERROR_INVALID_ARG, "invalid device index %d: this runtime has %d device%s (0..%d)",
                         index, rt->ndev, rt->ndev == 1 ? "" : "s", rt->ndev - 1);
    *out = &rt->devs[index];
    return AXON_OK;
}

int axon_device_index(axon_device_t d) { return d ? d->index : -1; }

axon_runtime_t axon_device_runtime(axon_device_t d) { return d ? d->rt : NULL; }

axon_status_t axon_device_properties(axon_device_t d, axon_device_props_t *out) {
    if (d == NULL || out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_device_properties: %s is NULL", d ? "out" : "device");
    *out = d->props;
    size_t free_bytes, total_bytes; /* the capacity can change after creation (axon_mem_set_capacity) */
    if (axon_mem_get_info(d, &free_bytes, &total_bytes) == AXON_OK) out->total_memory = total_bytes;
    return AXON_OK;
}
