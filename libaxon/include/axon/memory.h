/* Device memory: a caching allocator per device, a pointer registry, and a pinned host allocator per runtime.
 *
 * Device allocations come from segments the port maps (2 MiB segments for requests up to 1 MiB: the small pool;
 * larger segments for the rest: the large pool). Blocks are split to fit a request and merged with free neighbours
 * when freed; freed blocks stay cached for reuse until axon_mem_empty_cache. Alignment is at least AXON_MEM_ALIGNMENT.
 *
 * Streams: an allocation belongs to the stream it was made on. Freeing it makes it reusable at once for work on that
 * stream (stream order protects it). If other streams used it (axon_mem_record_stream), the block is held back until
 * the work those streams had queued at the time of the free has completed: freeing while in use elsewhere is safe.
 *
 * Capacity: reserved bytes never exceed the device's capacity. When a request does not fit, the allocator waits for
 * held-back blocks, releases cached segments and retries; only then does it fail with AXON_ERROR_OUT_OF_MEMORY and a
 * message with the requested, capacity, allocated and reserved bytes. The allocator works normally afterwards.
 *
 * Statistics follow CUDA's caching allocator: for each pool (all, small, large) current, peak, total allocated and
 * total freed of allocation/segment/active counts and bytes. */
#ifndef AXON_MEMORY_H
#define AXON_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"

AXON_EXTERN_C_BEGIN

#define AXON_MEM_ALIGNMENT 512        /* every device allocation's address and size are multiples of this */
#define AXON_MEM_SMALL_SIZE (1u << 20) /* requests up to this size come from the small pool */

/* Allocate n bytes on d for use on stream s (NULL = d's default stream). n == 0 gives *out == NULL and AXON_OK.
 * On failure *out is NULL, nothing changes but the OOM statistics. Thread-safe; never blocks on the GIL. */
AXON_API axon_status_t axon_mem_alloc(axon_device_t d, size_t n, axon_stream_t s, void **out);

/* Free p, allocated on d. NULL is a no-op. A pointer that is not the start of a live allocation of d (foreign,
 * interior, already freed) fails with AXON_ERROR_INVALID_ARG or AXON_ERROR_MISUSE and changes nothing. */
AXON_API axon_status_t axon_mem_free(axon_device_t d, void *p);

/* Note that stream s uses allocation p: when p is freed it is not reused before s's work queued up to then is done.
 * s must belong to the same device as p. */
AXON_API axon_status_t axon_mem_record_stream(axon_device_t d, void *p, axon_stream_t s);

typedef struct axon_mem_info {
    axon_device_t device;
    void *base;                  /* start of the allocation that contains the pointer */
    size_t size;                 /* its size as requested */
    int live;                    /* 1 if allocated, 0 if the pointer lies in cached (free) device memory */
} axon_mem_info_t;

/* Find the device allocation containing p (any interior pointer). AXON_ERROR_INVALID_ARG if p is not device memory
 * of rt. Cannot block on queued work. */
AXON_API axon_status_t axon_mem_lookup(axon_runtime_t rt, const void *p, axon_mem_info_t *out);

/* 1 if [p, p+n) lies inside device memory of d (mapped segments, allocated or cached), else 0. Cheap. */
AXON_API int axon_mem_contains(axon_device_t d, const void *p, size_t n);

typedef struct axon_stat {
    int64_t current;
    int64_t peak;
    int64_t allocated;           /* total increments since the last reset of accumulated statistics */
    int64_t freed;               /* total decrements since then */
} axon_stat_t;

enum axon_mem_pool { AXON_POOL_ALL = 0, AXON_POOL_SMALL = 1, AXON_POOL_LARGE = 2, AXON_POOL_COUNT = 3 };

typedef struct axon_mem_stats {
    axon_stat_t allocation[AXON_POOL_COUNT];      /* number of live allocations */
    axon_stat_t segment[AXON_POOL_COUNT];         /* number of mapped segments */
    axon_stat_t active[AXON_POOL_COUNT];          /* live allocations plus freed blocks held back for streams */
    axon_stat_t inactive_split[AXON_POOL_COUNT];  /* free blocks that are parts of split segments */
    axon_stat_t allocated_bytes[AXON_POOL_COUNT]; /* bytes in live allocations (rounded sizes) */
    axon_stat_t reserved_bytes[AXON_POOL_COUNT];  /* bytes in mapped segments */
    axon_stat_t active_bytes[AXON_POOL_COUNT];
    axon_stat_t inactive_split_bytes[AXON_POOL_COUNT];
    axon_stat_t requested_bytes[AXON_POOL_COUNT]; /* bytes as the callers asked for them */
    int64_t num_alloc_retries;   /* allocations that had to release cache and retry */
    int64_t num_ooms;            /* allocations that failed with AXON_ERROR_OUT_OF_MEMORY */
    int64_t num_sync_all_streams;/* times the allocator waited for streams to reclaim held-back blocks */
    int64_t num_device_alloc;    /* segments mapped */
    int64_t num_device_free;     /* segments unmapped */
    size_t capacity;             /* the device's capacity in bytes */
} axon_mem_stats_t;

/* Snapshot of d's statistics. */
AXON_API axon_status_t axon_mem_stats(axon_device_t d, axon_mem_stats_t *out);

/* Set every peak to its current value. */
AXON_API axon_status_t axon_mem_reset_peak(axon_device_t d);

/* Zero the allocated/freed totals and the retry, OOM, sync and segment map/unmap counters (as CUDA does). */
AXON_API axon_status_t axon_mem_reset_accumulated(axon_device_t d);

/* Unmap every segment that holds no live or held-back block. */
AXON_API axon_status_t axon_mem_empty_cache(axon_device_t d);

/* Free and total bytes of d: total is the capacity, free is capacity minus reserved. */
AXON_API axon_status_t axon_mem_get_info(axon_device_t d, size_t *free_bytes, size_t *total_bytes);

/* Change d's capacity (like torch.cuda.set_per_process_memory_fraction). bytes == 0 is AXON_ERROR_INVALID_ARG.
 * Lowering it below what is reserved releases cache; it never frees live memory. */
AXON_API axon_status_t axon_mem_set_capacity(axon_device_t d, size_t bytes);

/* Pinned host memory: page-aligned host buffers that asynchronous copies may use without staging. Cached for reuse by
 * size class; a buffer used by a stream (axon_host_record_stream) is reused only once that stream's work queued at the
 * time of the free has completed. */
AXON_API axon_status_t axon_host_alloc(axon_runtime_t rt, size_t n, void **out);
AXON_API axon_status_t axon_host_free(axon_runtime_t rt, void *p);
AXON_API axon_status_t axon_host_record_stream(axon_runtime_t rt, void *p, axon_stream_t s);

/* 1 if p points into a live pinned host allocation of rt (interior pointers too), else 0. Cannot fail. */
AXON_API int axon_host_is_pinned(axon_runtime_t rt, const void *p);

/* Start and size of the live pinned allocation containing p, or AXON_ERROR_INVALID_ARG. */
AXON_API axon_status_t axon_host_lookup(axon_runtime_t rt, const void *p, void **base, size_t *size);

typedef struct axon_host_stats {
    axon_stat_t allocation;      /* live pinned allocations */
    axon_stat_t segment;         /* buffers obtained from the system (live or cached) */
    axon_stat_t allocated_bytes;
    axon_stat_t reserved_bytes;
    int64_t num_host_alloc;      /* buffers obtained from the system */
    int64_t num_host_free;       /* buffers returned to the system */
} axon_host_stats_t;

AXON_API axon_status_t axon_host_stats(axon_runtime_t rt, axon_host_stats_t *out);
AXON_API axon_status_t axon_host_reset_peak(axon_runtime_t rt);
AXON_API axon_status_t axon_host_reset_accumulated(axon_runtime_t rt);
/* Return every cached (free, no longer in use) pinned buffer to the system. */
AXON_API axon_status_t axon_host_empty_cache(axon_runtime_t rt);

AXON_EXTERN_C_END

#endif
