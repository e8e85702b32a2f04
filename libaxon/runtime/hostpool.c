/* The pinned host allocator of a runtime: page-aligned host buffers cached by power-of-two size class, as CUDA's
 * caching host allocator does, so that repeated pin_memory() calls of similar sizes cost no system call.
 *
 * A buffer is in one of three states: live (handed out), pending (freed, but streams recorded on it may still read
 * or write it) and cached (free for reuse). Pending buffers keep, per recorded stream, the stream's enqueued count at
 * the time of the free; once each stream's completed count has reached it the buffer becomes cached. Pending buffers
 * are checked lazily, on the next allocation or empty_cache, so no stream callback is needed.
 *
 * Every buffer, whatever its state, is in one array sorted by address so that interior pointers are found by binary
 * search. One mutex guards everything: these calls are rare compared with device allocations and copies. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define AXON_HOST_MIN_SIZE ((size_t)4096)
#define AXON_HOST_CLASSES 64 /* class c holds buffers of 2^c bytes */

enum axon_host_state { AXON_HOST_LIVE, AXON_HOST_PENDING, AXON_HOST_CACHED };

struct axon_host_use {
    axon_stream_t stream;
    uint64_t seq;                /* the stream's enqueued count when the buffer was freed */
};

struct axon_host_block {
    void *base;
    size_t size;                 /* mapped bytes: the size class */
    size_t requested;            /* what the live allocation asked for */
    enum axon_host_state state;
    struct axon_host_use *uses;  /* streams recorded while live; seq filled in at free */
    int nuses, cap_uses;
    struct axon_host_block *next;/* in a class's cached list or the pending list */
};

struct axon_hostpool {
    axon_runtime_t rt;
    pthread_mutex_t mu;
    struct axon_host_block **blocks; /* every mapped buffer, sorted by base */
    size_t nblocks, cap_blocks;
    struct axon_host_block *cached[AXON_HOST_CLASSES];
    struct axon_host_block *pending;
    size_t min_size;             /* smallest class: max(4 KiB, page size) */
    axon_host_stats_t stats;
};

static void axon_host_stat_add(axon_stat_t *s, int64_t delta) {
    s->current += delta;
    if (delta > 0) {
        s->allocated += delta;
        if (s->current > s->peak) s->peak = s->current;
    } else {
        s->freed -= delta;
    }
}

/* Index of the first block whose base is above p (so blocks[i - 1] is the last one at or below p). */
static size_t axon_host_upper_bound(const struct axon_hostpool *h, const void *p) {
    size_t lo = 0, hi = h->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)h->blocks[mid]->base <= (uintptr_t)p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The mapped block containing p (any state), or NULL. Caller holds mu. */
static struct axon_host_block *axon_host_find(const struct axon_hostpool *h, const void *p) {
    size_t i = axon_host_upper_bound(h, p);
    if (i == 0) return NULL;
    struct axon_host_block *b = h->blocks[i - 1];
    return (uintptr_t)p - (uintptr_t)b->base < b->size ? b : NULL;
}

/* The live allocation containing p within its requested size, or NULL. Caller holds mu. */
static struct axon_host_block *axon_host_find_live(const struct axon_hostpool *h, const void *p) {
    struct axon_host_block *b = axon_host_find(h, p);
    if (b == NULL || b->state != AXON_HOST_LIVE || (uintptr_t)p - (uintptr_t)b->base >= b->requested) return NULL;
    return b;
}

static int axon_host_class(size_t size) {
    return 63 - __builtin_clzll((unsigned long long)size);
}

/* Unmap b and forget it. b must be cached (in no list the caller still walks) or the pool is being destroyed. */
static void axon_host_release(struct axon_hostpool *h, struct axon_host_block *b, size_t index) {
    AXON_ASSERT(h->blocks[index] == b);
    memmove(&h->blocks[index], &h->blocks[index + 1], (h->nblocks - index - 1) * sizeof *h->blocks);
    h->nblocks--;
    munmap(b->base, b->size);
    axon_host_stat_add(&h->stats.segment, -1);
    axon_host_stat_add(&h->stats.reserved_bytes, -(int64_t)b->size);
    h->stats.num_host_free++;
    free(b->uses);
    free(b);
}

/* Move every pending buffer whose streams have caught up to its class's cached list. Caller holds mu. */
static void axon_host_reclaim(struct axon_hostpool *h) {
    struct axon_host_block **link = &h->pending;
    while (*link != NULL) {
        struct axon_host_block *b = *link;
        int busy = 0;
        for (int i = 0; i < b->nuses && !busy; i++)
            busy = axon_stream_completed(b->uses[i].stream) < b->uses[i].seq;
        if (busy) {
            link = &b->next;
            continue;
        }
        *link = b->next;
        b->nuses = 0;
        b->state = AXON_HOST_CACHED;
        int c = axon_host_class(b->size);
        b->next = h->cached[c];
        h->cached[c] = b;
    }
}

/* Unmap every cached buffer. Caller holds mu. */
static void axon_host_release_cached(struct axon_hostpool *h) {
    for (int c = 0; c < AXON_HOST_CLASSES; c++) h->cached[c] = NULL;
    for (size_t i = h->nblocks; i-- > 0;)
        if (h->blocks[i]->state == AXON_HOST_CACHED) axon_host_release(h, h->blocks[i], i);
}

/* Map a new buffer of `size` bytes and enter it in the sorted array. Caller holds mu. */
static axon_status_t axon_host_map(struct axon_hostpool *h, size_t size, struct axon_host_block **out) {
    *out = NULL;
    if (h->nblocks == h->cap_blocks) {
        size_t cap = h->cap_blocks ? h->cap_blocks * 2 : 64;
        struct axon_host_block **nb = realloc(h->blocks, cap * sizeof *nb);
        if (nb == NULL) return AXON_ERROR_OUT_OF_MEMORY;
        h->blocks = nb;
        h->cap_blocks = cap;
    }
    struct axon_host_block *b = calloc(1, sizeof *b);
    if (b == NULL) return AXON_ERROR_OUT_OF_MEMORY;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        free(b);
        return AXON_ERROR_OUT_OF_MEMORY;
    }
    b->base = p;
    b->size = size;
    size_t i = axon_host_upper_bound(h, p);
    memmove(&h->blocks[i + 1], &h->blocks[i], (h->nblocks - i) * sizeof *h->blocks);
    h->blocks[i] = b;
    h->nblocks++;
    axon_host_stat_add(&h->stats.segment, 1);
    axon_host_stat_add(&h->stats.reserved_bytes, (int64_t)size);
    h->stats.num_host_alloc++;
    *out = b;
    return AXON_OK;
}

axon_status_t axon_hostpool_create(axon_runtime_t rt, struct axon_hostpool **out) {
    *out = NULL;
    struct axon_hostpool *h = calloc(1, sizeof *h);
    if (h == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "pinned host pool: no host memory");
    if (pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h);
        return axon_fail(AXON_ERROR_INTERNAL, "pinned host pool: cannot create its mutex");
    }
    h->rt = rt;
    h->min_size = rt->page_size > AXON_HOST_MIN_SIZE ? rt->page_size : AXON_HOST_MIN_SIZE;
    *out = h;
    return AXON_OK;
}

void axon_hostpool_destroy(struct axon_hostpool *h) {
    if (h == NULL) return;
    /* The runtime has stopped its streams: pending and live buffers go too, without asking any stream. */
    while (h->nblocks > 0) axon_host_release(h, h->blocks[h->nblocks - 1], h->nblocks - 1);
    free(h->blocks);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

axon_status_t axon_host_alloc(axon_runtime_t rt, size_t n, void **out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_alloc: out is NULL");
    *out = NULL;
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_alloc: runtime is NULL");
    if (n == 0) return AXON_OK;
    struct axon_hostpool *h = rt->host;
    if (n > ((size_t)1 << 62))
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_host_alloc: %zu bytes is more than any host has", n);
    size_t size = h->min_size;
    while (size < n) size <<= 1;
    int c = axon_host_class(size);

    pthread_mutex_lock(&h->mu);
    axon_host_reclaim(h);
    struct axon_host_block *b = h->cached[c];
    if (b != NULL) {
        h->cached[c] = b->next;
    } else if (axon_host_map(h, size, &b) != AXON_OK) {
        /* The system refused: give back what the cache holds and try once more. */
        axon_host_release_cached(h);
        if (axon_host_map(h, size, &b) != AXON_OK) {
            axon_host_stats_t st = h->stats;
            pthread_mutex_unlock(&h->mu);
            return axon_fail(AXON_ERROR_OUT_OF_MEMORY,
                             "axon_host_alloc: cannot map %zu bytes (%zu requested); %lld bytes pinned in %lld live "
                             "buffers, %lld reserved",
                             size, n, (long long)st.allocated_bytes.current, (long long)st.allocation.current,
                             (long long)st.reserved_bytes.current);
        }
    }
    b->next = NULL;
    b->state = AXON_HOST_LIVE;
    b->requested = n;
    b->nuses = 0;
    axon_host_stat_add(&h->stats.allocation, 1);
    axon_host_stat_add(&h->stats.allocated_bytes, (int64_t)b->size);
    *out = b->base;
    pthread_mutex_unlock(&h->mu);
    return AXON_OK;
}

axon_status_t axon_host_free(axon_runtime_t rt, void *p) {
    if (p == NULL) return AXON_OK;
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_free: runtime is NULL");
    struct axon_hostpool *h = rt->host;
    pthread_mutex_lock(&h->mu);
    struct axon_host_block *b = axon_host_find(h, p);
    if (b == NULL || b->base != p) {
        pthread_mutex_unlock(&h->mu);
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_free: %p is not the start of a pinned buffer%s", p,
                         b ? " (it points inside one)" : " of this runtime");
    }
    if (b->state != AXON_HOST_LIVE) {
        pthread_mutex_unlock(&h->mu);
        return axon_fail(AXON_ERROR_MISUSE, "axon_host_free: pinned buffer %p (%zu bytes) was already freed", p,
                         b->size);
    }
    axon_host_stat_add(&h->stats.allocation, -1);
    axon_host_stat_add(&h->stats.allocated_bytes, -(int64_t)b->size);
    /* Capture what each recorded stream has queued so far; streams already past it need no waiting. */
    int kept = 0;
    for (int i = 0; i < b->nuses; i++) {
        uint64_t seq = axon_stream_enqueued(b->uses[i].stream);
        if (axon_stream_completed(b->uses[i].stream) >= seq) continue;
        b->uses[kept].stream = b->uses[i].stream;
        b->uses[kept].seq = seq;
        kept++;
    }
    b->nuses = kept;
    int c = axon_host_class(b->size);
    if (kept > 0) {
        b->state = AXON_HOST_PENDING;
        b->next = h->pending;
        h->pending = b;
    } else {
        b->state = AXON_HOST_CACHED;
        b->next = h->cached[c];
        h->cached[c] = b;
    }
    pthread_mutex_unlock(&h->mu);
    return AXON_OK;
}

axon_status_t axon_host_record_stream(axon_runtime_t rt, void *p, axon_stream_t s) {
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_record_stream: runtime is NULL");
    axon_status_t st = axon_stream_check(s, "axon_host_record_stream");
    if (st != AXON_OK) return st;
    if (axon_device_runtime(axon_stream_device(s)) != rt)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_record_stream: the stream belongs to another runtime");
    struct axon_hostpool *h = rt->host;
    pthread_mutex_lock(&h->mu);
    struct axon_host_block *b = axon_host_find(h, p);
    if (b == NULL || (b->state == AXON_HOST_LIVE && (uintptr_t)p - (uintptr_t)b->base >= b->requested)) {
        st = axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_record_stream: %p is not in a pinned buffer of this runtime",
                       p);
        goto out;
    }
    if (b->state != AXON_HOST_LIVE) {
        st = axon_fail(AXON_ERROR_MISUSE, "axon_host_record_stream: pinned buffer %p was freed", b->base);
        goto out;
    }
    for (int i = 0; i < b->nuses; i++)
        if (b->uses[i].stream == s) goto out;
    if (b->nuses == b->cap_uses) {
        int cap = b->cap_uses ? b->cap_uses * 2 : 4;
        struct axon_host_use *nu = realloc(b->uses, (size_t)cap * sizeof *nu);
        if (nu == NULL) {
            st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_host_record_stream: no host memory for %d streams", cap);
            goto out;
        }
        b->uses = nu;
        b->cap_uses = cap;
    }
    b->uses[b->nuses].stream = s;
    b->uses[b->nuses].seq = 0;
    b->nuses++;
out:
    pthread_mutex_unlock(&h->mu);
    return st;
}

int axon_host_is_pinned(axon_runtime_t rt, const void *p) {
    if (rt == NULL || p == NULL) return 0;
    struct axon_hostpool *h = rt->host;
    pthread_mutex_lock(&h->mu);
    int pinned = axon_host_find_live(h, p) != NULL;
    pthread_mutex_unlock(&h->mu);
    return pinned;
}

axon_status_t axon_host_lookup(axon_runtime_t rt, const void *p, void **base, size_t *size) {
    if (base != NULL) *base = NULL;
    if (size != NULL) *size = 0;
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_lookup: runtime is NULL");
    struct axon_hostpool *h = rt->host;
    pthread_mutex_lock(&h->mu);
    struct axon_host_block *b = axon_host_find_live(h, p);
    if (b != NULL) {
        if (base != NULL) *base = b->base;
        if (size != NULL) *size = b->requested;
    }
    pthread_mutex_unlock(&h->mu);
    if (b == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_lookup: %p is not in a live pinned buffer", p);
    return AXON_OK;
}

axon_status_t axon_host_stats(axon_runtime_t rt, axon_host_stats_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_stats: out is NULL");
    memset(out, 0, sizeof *out);
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_stats: runtime is NULL");
    pthread_mutex_lock(&rt->host->mu);
    *out = rt->host->stats;
    pthread_mutex_unlock(&rt->host->mu);
    return AXON_OK;
}

axon_status_t axon_host_reset_peak(axon_runtime_t rt) {
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_reset_peak: runtime is NULL");
    axon_host_stats_t *s = &rt->host->stats;
    pthread_mutex_lock(&rt->host->mu);
    axon_stat_t *all[] = {&s->allocation, &s->segment, &s->allocated_bytes, &s->reserved_bytes};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) all[i]->peak = all[i]->current;
    pthread_mutex_unlock(&rt->host->mu);
    return AXON_OK;
}

axon_status_t axon_host_reset_accumulated(axon_runtime_t rt) {
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_reset_accumulated: runtime is NULL");
    axon_host_stats_t *s = &rt->host->stats;
    pthread_mutex_lock(&rt->host->mu);
    axon_stat_t *all[] = {&s->allocation, &s->segment, &s->allocated_bytes, &s->reserved_bytes};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) all[i]->allocated = all[i]->freed = 0;
    s->num_host_alloc = 0;
    s->num_host_free = 0;
    pthread_mutex_unlock(&rt->host->mu);
    return AXON_OK;
}

axon_status_t axon_host_empty_cache(axon_runtime_t rt) {
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_host_empty_cache: runtime is NULL");
    pthread_mutex_lock(&rt->host->mu);
    axon_host_reclaim(rt->host);
    axon_host_release_cached(rt->host);
    pthread_mutex_unlock(&rt->host->mu);
    return AXON_OK;
}
