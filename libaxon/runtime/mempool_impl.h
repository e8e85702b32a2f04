/* The device caching allocator's structures, shared by mempool.c (allocation, freeing, segments) and
 * mempool_query.c (statistics, the pointer registry, capacity). Nothing outside these two files reads them.
 *
 * Shape: a device's memory is a set of segments (each one mem_map call), sorted by address. A segment is cut into
 * blocks, linked in address order. A block is live (handed out; in the hash table under its address), held back
 * (freed, but a recorded stream may still use it; on the held list) or free (in a size-class bin of its pool). One
 * mutex guards all of it. */
#ifndef AXON_MEMPOOL_IMPL_H
#define AXON_MEMPOOL_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Bins: four sub-classes per power of two from 512 bytes up to 2^63 (see mp_class in mempool.c). */
#define MP_NBINS ((64 - 9) * 4)
#define MP_BIN_WORDS ((MP_NBINS + 63) / 64)
#define MP_INLINE_USES 2

enum mp_state { MP_FREE = 0, MP_LIVE = 1, MP_HELD = 2 };

/* A stream that used a block, and the stream's enqueue count when the block was freed. */
struct mp_use {
    axon_stream_t stream;
    uint64_t seq;
};

struct mp_segment;

struct mp_block {
    char *ptr;
    size_t size;                        /* rounded; a multiple of AXON_MEM_ALIGNMENT */
    size_t requested;                   /* what the caller asked for (live and held blocks) */
    struct mp_segment *seg;
    struct mp_block *prev, *next;       /* neighbours in the segment, by address */
    struct mp_block *link_prev, *link_next; /* bin list (free), held list (held) or spare list */
    /* Live: the allocation stream. Free: the stream whose work queued before free_seq may still touch the block;
     * any other stream may take the block only once that stream has completed free_seq. */
    axon_stream_t stream;
    uint64_t free_seq;
    unsigned char state;                /* enum mp_state */
    unsigned char split_counted;        /* counted in inactive_split (a free block of a split segment) */
    uint32_t nuses, cap_uses;           /* recorded streams other than `stream` */
    struct mp_use *uses;                /* inline_uses or a heap array when more streams were recorded */
    struct mp_use inline_uses[MP_INLINE_USES];
};

struct mp_segment {
    char *base;
    size_t size;
    /* AXON_ALLOC_GUARD: the mapping is [base - lead, base + size + guard): unused bytes before the one block, which
     * ends where `guard` inaccessible bytes begin. Both 0 otherwise. */
    size_t lead, guard;
    int pool;                           /* AXON_POOL_SMALL or AXON_POOL_LARGE */
    struct mp_block *first;
};

struct mp_bins {
    struct mp_block *head[MP_NBINS];
    uint64_t nonempty[MP_BIN_WORDS];    /* bit i: head[i] != NULL, so the upward search skips empty classes */
};

struct mp_chunk;

struct axon_mempool {
    pthread_mutex_t mu;
    axon_device_t dev;
    axon_stream_t default_stream;       /* cached: alloc(NULL stream) is on the fast path */
    size_t capacity;
    int guard;                          /* AXON_ALLOC_GUARD: a mapping per allocation, nothing reused */
    size_t guard_freed;                 /* ... and blocks freed since the last unmapping of idle segments */
    struct mp_quarantine *quarantine;   /* ... and the inaccessible mappings of freed segments, oldest unmapped first */
    struct mp_bins bins[2];             /* [0] small pool, [1] large pool */
    struct mp_block *held;              /* held-back blocks, unordered */

    struct mp_block **table;            /* live blocks by address: open addressing, linear probing */
    size_t table_mask, table_len;
    unsigned table_shift;

    struct mp_segment **segs;           /* sorted by base, for binary search */
    size_t nsegs, segs_cap;

    struct mp_block *spare;             /* unused block structs, so the cached path never calls malloc */
    size_t nspare;
    struct mp_chunk *chunks;            /* every block struct lives in one of these */

    axon_mem_stats_t stats;             /* capacity is filled in at snapshot time */
};

/* The segment containing p, or NULL. Binary search; m->mu held. */
struct mp_segment *axon_mempool_segment_find(const struct axon_mempool *m, const void *p);

/* The block of seg containing p (p must lie in seg). Walks the segment; m->mu held. */
struct mp_block *axon_mempool_block_find(const struct mp_segment *seg, const void *p);

/* Bring reserved memory down: reclaim finished held-back blocks, wait (lock dropped meanwhile) for streams still
 * using free blocks of otherwise idle segments, then unmap every segment with nothing live or held in it.
 * m->mu held on entry and on return. */
void axon_mempool_release_cached(struct axon_mempool *m);

/* Write n as "1.50 GiB" (or "512 bytes") into buf; returns buf. */
const char *axon_mempool_format_bytes(char *buf, size_t cap, uint64_t n);

#endif
