/* The caching allocator seen from outside: statistics, capacity, cache release and the pointer registry (which
 * device allocation holds a pointer). The allocator itself is in mempool.c. */
#include <stdio.h>

#include "mempool_impl.h"

const char *axon_mempool_format_bytes(char *buf, size_t cap, uint64_t n) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
        return buf;
    }
    double v = (double)n;
    int u = -1;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

/* ---- statistics ---- */

/* Every per-pool statistic of s, so resets need not name each field twice. */
#define MP_STAT_ARRAYS(s)                                                                                \
    { (s)->allocation, (s)->segment, (s)->active, (s)->inactive_split, (s)->allocated_bytes,         \
      (s)->reserved_bytes, (s)->active_bytes, (s)->inactive_split_bytes, (s)->requested_bytes }

axon_status_t axon_mem_stats(axon_device_t d, axon_mem_stats_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_stats: out is NULL");
    if (d == NULL || d->mem == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_stats: device is NULL");
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    *out = m->stats;
    out->capacity = m->capacity;
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

axon_status_t axon_mem_reset_peak(axon_device_t d) {
    if (d == NULL || d->mem == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_reset_peak: device is NULL");
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    axon_stat_t *arrays[] = MP_STAT_ARRAYS(&m->stats);
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        for (int p = 0; p < AXON_POOL_COUNT; p++) arrays[i][p].peak = arrays[i][p].current;
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

axon_status_t axon_mem_reset_accumulated(axon_device_t d) {
    if (d == NULL || d->mem == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_reset_accumulated: device is NULL");
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    axon_mem_stats_t *s = &m->stats;
    axon_stat_t *arrays[] = MP_STAT_ARRAYS(s);
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        for (int p = 0; p < AXON_POOL_COUNT; p++) arrays[i][p].allocated = arrays[i][p].freed = 0;
    /* As CUDA's resetAccumulatedStats: the segment map/unmap counts are accumulated totals too. */
    s->num_alloc_retries = s->num_ooms = s->num_sync_all_streams = 0;
    s->num_device_alloc = s->num_device_free = 0;
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

/* ---- capacity and cache ---- */

axon_status_t axon_mem_empty_cache(axon_device_t d) {
    if (d == NULL || d->mem == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_empty_cache: device is NULL");
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    axon_mempool_release_cached(m);
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

axon_status_t axon_mem_get_info(axon_device_t d, size_t *free_bytes, size_t *total_bytes) {
    if (free_bytes == NULL || total_bytes == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_get_info: an out pointer is NULL");
    if (d == NULL || d->mem == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_get_info: device is NULL");
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    size_t reserved = (size_t)m->stats.reserved_bytes[AXON_POOL_ALL].current;
    *total_bytes = m->capacity;
    *free_bytes = m->capacity > reserved ? m->capacity - reserved : 0;
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

axon_status_t axon_mem_set_capacity(axon_device_t d, size_t bytes) {
    if (d == NULL || d->mem == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_set_capacity: device is NULL");
    if (bytes == 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_set_capacity: capacity 0 for axon:%d", d->index);
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    m->capacity = bytes;
    if ((size_t)m->stats.reserved_bytes[AXON_POOL_ALL].current > bytes) axon_mempool_release_cached(m);
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

/* ---- pointer registry ---- */

axon_status_t axon_mem_lookup(axon_runtime_t rt, const void *p, axon_mem_info_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_lookup: out is NULL");
    out->device = NULL;
    out->base = NULL;
    out->size = 0;
    out->live = 0;
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_lookup: runtime is NULL");
    for (int i = 0; i < rt->ndev; i++) {
        struct axon_mempool *m = rt->devs[i].mem;
        if (m == NULL) continue;
        pthread_mutex_lock(&m->mu);
        struct mp_segment *seg = axon_mempool_segment_find(m, p);
        if (seg != NULL) {
            struct mp_block *b = axon_mempool_block_find(seg, p);
            out->device = &rt->devs[i];
            out->base = b->ptr;
            out->live = b->state == MP_LIVE;
            out->size = b->state == MP_FREE ? b->size : b->requested;
            pthread_mutex_unlock(&m->mu);
            return AXON_OK;
        }
        pthread_mutex_unlock(&m->mu);
    }
    return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_lookup: %p is not device memory of this runtime", p);
}

int axon_mem_contains(axon_device_t d, const void *p, size_t n) {
    if (d == NULL || d->mem == NULL || p == NULL) return 0;
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    const struct mp_segment *seg = axon_mempool_segment_find(m, p);
    int in = seg != NULL && n <= seg->size - (size_t)((const char *)p - seg->base);
    pthread_mutex_unlock(&m->mu);
    return in;
}
