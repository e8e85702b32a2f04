/* The per-device caching allocator: allocation, freeing and stream-aware reuse of device memory.
 *
 * Policy follows CUDA's caching allocator: requests are rounded to 512 bytes; up to 1 MiB they come from 2 MiB
 * segments (the small pool), larger ones from 20 MiB segments below 10 MiB and from segments rounded to 2 MiB above.
 * A block bigger than the request is split when the rest is worth keeping (small: any rest; large: over 1 MiB) and
 * free neighbours merge again. Unlike CUDA, a free block is not tied to its stream for ever: another stream may take
 * it once the work its stream had queued at the free has completed (stream sequence numbers make that a load and a
 * compare). Statistics and the pointer registry are in mempool_query.c. */
#include <stdlib.h>
#include <string.h>

#include "mempool_impl.h"

#define MP_SMALL_SEGMENT ((size_t)2 << 20)
#define MP_LARGE_SEGMENT ((size_t)20 << 20)
#define MP_MIN_LARGE_ALLOC ((size_t)10 << 20)
#define MP_ROUND_LARGE ((size_t)2 << 20)
#define MP_CHUNK_BLOCKS 128
#define MP_TABLE_MIN_BITS 10
/* Requests above this cannot be rounded to a segment size without overflow; they fail as out of memory. */
#define MP_MAX_REQUEST (SIZE_MAX - MP_LARGE_SEGMENT)

struct mp_chunk {
    struct mp_chunk *next;
    struct mp_block blocks[MP_CHUNK_BLOCKS];
};

static inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* Size class of s (a multiple of 512, at least 512): 4 classes per power of two, so a class holds sizes within 25%
 * of each other and its index is a few instructions. */
static inline unsigned mp_class(size_t s) {
    unsigned e = 63u - (unsigned)__builtin_clzll((unsigned long long)s);
    return (e - 9u) * 4u + (unsigned)((s >> (e - 2u)) & 3u);
}

static inline int pool_index(int pool) { return pool == AXON_POOL_SMALL ? 0 : 1; }

/* ---- statistics ---- */

static inline void stat_add(axon_stat_t *st, int64_t delta) {
    st->current += delta;
    if (delta >= 0) {
        st->allocated += delta;
        if (st->current > st->peak) st->peak = st->current;
    } else {
        st->freed -= delta;
    }
}

/* Count delta in the ALL entry and in the pool's own entry of one statistic. */
static inline void stat_pool(axon_stat_t *arr, int pool, int64_t delta) {
    stat_add(&arr[AXON_POOL_ALL], delta);
    stat_add(&arr[pool], delta);
}

/* A free block counts as inactive_split while its segment is cut into several blocks; the flag keeps the count exact
 * however the block later leaves the free state (taken, merged away, unmapped). */
static void split_enter(struct axon_mempool *m, struct mp_block *b) {
    if (b->prev == NULL && b->next == NULL) return;
    b->split_counted = 1;
    stat_pool(m->stats.inactive_split, b->seg->pool, 1);
    stat_pool(m->stats.inactive_split_bytes, b->seg->pool, (int64_t)b->size);
}

static void split_leave(struct axon_mempool *m, struct mp_block *b) {
    if (!b->split_counted) return;
    b->split_counted = 0;
    stat_pool(m->stats.inactive_split, b->seg->pool, -1);
    stat_pool(m->stats.inactive_split_bytes, b->seg->pool, -(int64_t)b->size);
}

/* ---- block structs: recycled through a spare list ---- */

static int spare_refill(struct axon_mempool *m) {
    struct mp_chunk *c = malloc(sizeof *c);
    if (c == NULL) return -1;
    c->next = m->chunks;
    m->chunks = c;
    for (int i = 0; i < MP_CHUNK_BLOCKS; i++) {
        c->blocks[i].link_next = m->spare;
        m->spare = &c->blocks[i];
    }
    m->nspare += MP_CHUNK_BLOCKS;
    return 0;
}

/* A cleared block struct from the spare list; the caller made sure one is there (mp_reserve). */
static struct mp_block *block_get(struct axon_mempool *m) {
    struct mp_block *b = m->spare;
    AXON_ASSERT(b != NULL);
    m->spare = b->link_next;
    m->nspare--;
    memset(b, 0, sizeof *b);
    b->uses = b->inline_uses;
    b->cap_uses = MP_INLINE_USES;
    return b;
}

static void block_put(struct axon_mempool *m, struct mp_block *b) {
    if (b->uses != b->inline_uses) free(b->uses);
    b->uses = NULL;
    b->link_next = m->spare;
    m->spare = b;
    m->nspare++;
}

/* ---- live-block table: address -> block ---- */

static inline size_t table_home(const struct axon_mempool *m, const void *p) {
    /* Addresses are multiples of 512: drop those bits, then Fibonacci hashing spreads the rest. */
    uint64_t h = ((uint64_t)(uintptr_t)p >> 9) * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> m->table_shift);
}

static struct mp_block *table_find(const struct axon_mempool *m, const void *p) {
    for (size_t i = table_home(m, p);; i = (i + 1) & m->table_mask) {
        struct mp_block *b = m->table[i];
        if (b == NULL || b->ptr == p) return b;
    }
}

static void table_put(struct axon_mempool *m, struct mp_block *b) {
    size_t i = table_home(m, b->ptr);
    while (m->table[i] != NULL) i = (i + 1) & m->table_mask;
    m->table[i] = b;
    m->table_len++;
}

static int table_init(struct axon_mempool *m, unsigned bits) {
    struct mp_block **t = calloc((size_t)1 << bits, sizeof *t);
    if (t == NULL) return -1;
    m->table = t;
    m->table_mask = ((size_t)1 << bits) - 1;
    m->table_shift = 64u - bits;
    m->table_len = 0;
    return 0;
}

static int table_grow(struct axon_mempool *m) {
    struct mp_block **old = m->table;
    size_t old_n = m->table_mask + 1;
    /* On failure table_init changes nothing, so the old table stays in use. */
    if (table_init(m, 64u - m->table_shift + 1u) != 0) return -1;
    for (size_t i = 0; i < old_n; i++)
        if (old[i] != NULL) table_put(m, old[i]);
    free(old);
    return 0;
}

/* Remove b with backward-shift deletion, so lookups never need tombstones. */
static void table_remove(struct axon_mempool *m, const struct mp_block *b) {
    size_t i = table_home(m, b->ptr);
    while (m->table[i] != b) {
        AXON_ASSERT(m->table[i] != NULL);
        i = (i + 1) & m->table_mask;
    }
    for (size_t j = (i + 1) & m->table_mask; m->table[j] != NULL; j = (j + 1) & m->table_mask) {
        size_t home = table_home(m, m->table[j]->ptr);
        /* The entry at j may fill the hole at i if i lies on its probe path from home to j. */
        if (((j - home) & m->table_mask) >= ((j - i) & m->table_mask)) {
            m->table[i] = m->table[j];
            i = j;
        }
    }
    m->table[i] = NULL;
    m->table_len--;
}

/* Make sure one allocation can complete without malloc: two block structs (a new segment's block and a split's
 * rest) and room in the table below half load. */
static axon_status_t mp_reserve(struct axon_mempool *m) {
    if (m->nspare < 2 && spare_refill(m) != 0)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d allocator: no host memory for block records",
                         m->dev->index);
    if ((m->table_len + 1) * 2 > m->table_mask + 1 && table_grow(m) != 0)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d allocator: no host memory for the block table",
                         m->dev->index);
    return AXON_OK;
}

/* ---- bins ---- */

static void bin_insert(struct axon_mempool *m, struct mp_block *b) {
    struct mp_bins *bn = &m->bins[pool_index(b->seg->pool)];
    unsigned c = mp_class(b->size);
    /* At the head: the block just freed is the first found, which is what makes same-size reuse hit at once. */
    b->link_prev = NULL;
    b->link_next = bn->head[c];
    if (b->link_next != NULL) b->link_next->link_prev = b;
    bn->head[c] = b;
    bn->nonempty[c >> 6] |= UINT64_C(1) << (c & 63);
}

static void bin_remove(struct axon_mempool *m, struct mp_block *b) {
    struct mp_bins *bn = &m->bins[pool_index(b->seg->pool)];
    unsigned c = mp_class(b->size);
    if (b->link_prev != NULL) b->link_prev->link_next = b->link_next;
    else bn->head[c] = b->link_next;
    if (b->link_next != NULL) b->link_next->link_prev = b->link_prev;
    if (bn->head[c] == NULL) bn->nonempty[c >> 6] &= ~(UINT64_C(1) << (c & 63));
    b->link_prev = b->link_next = NULL;
}

/* The work b's stream had queued when b was freed has completed: any stream may use b. */
static inline int block_settled(const struct mp_block *b) {
    return axon_stream_completed(b->stream) >= b->free_seq;
}

static inline int block_usable_by(const struct mp_block *b, axon_stream_t s) {
    return b->stream == s || block_settled(b);
}

/* A free block of the pool with at least `size` bytes that stream s may use, or NULL. First fit within the
 * request's own class (its blocks may be smaller), then the first usable block of the next non-empty class up. */
static struct mp_block *bins_find(struct axon_mempool *m, int pool, size_t size, axon_stream_t s) {
    struct mp_bins *bn = &m->bins[pool_index(pool)];
    unsigned c = mp_class(size);
    for (struct mp_block *b = bn->head[c]; b != NULL; b = b->link_next)
        if (b->size >= size && block_usable_by(b, s)) return b;
    unsigned from = c + 1;
    for (unsigned w = from >> 6; w < MP_BIN_WORDS; w++) {
        uint64_t bits = bn->nonempty[w];
        if (w == from >> 6) bits &= ~UINT64_C(0) << (from & 63);
        while (bits != 0) {
            unsigned i = w * 64u + (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            for (struct mp_block *b = bn->head[i]; b != NULL; b = b->link_next)
                if (block_usable_by(b, s)) return b;
        }
    }
    return NULL;
}

/* ---- segments ---- */

struct mp_segment *axon_mempool_segment_find(const struct axon_mempool *m, const void *p) {
    uintptr_t a = (uintptr_t)p;
    size_t lo = 0, hi = m->nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)m->segs[mid]->base <= a) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    struct mp_segment *seg = m->segs[lo - 1];
    return a - (uintptr_t)seg->base < seg->size ? seg : NULL;
}

struct mp_block *axon_mempool_block_find(const struct mp_segment *seg, const void *p) {
    uintptr_t a = (uintptr_t)p;
    for (struct mp_block *b = seg->first; b != NULL; b = b->next)
        if (a - (uintptr_t)b->ptr < b->size) return b;
    AXON_ASSERT(!"segment blocks do not cover the segment");
    return NULL;
}

/* Size of the segment to map for a rounded request, given `room` bytes left under the capacity. Small requests
 * share 2 MiB segments; large ones below 10 MiB share 20 MiB segments; larger ones get their size rounded to 2 MiB.
 * When that does not fit any more, a segment just big enough for the request does: the capacity is the limit, not
 * the segment policy. */
static size_t segment_size(const struct axon_mempool *m, int pool, size_t size, size_t room) {
    size_t page = m->dev->rt->page_size > 1 ? m->dev->rt->page_size : 1;
    size_t want;
    if (pool == AXON_POOL_SMALL) want = MP_SMALL_SEGMENT;
    else if (size < MP_MIN_LARGE_ALLOC) want = MP_LARGE_SEGMENT;
    else want = round_up(size, MP_ROUND_LARGE);
    want = round_up(want, page);
    return want <= room ? want : round_up(size, page);
}

static size_t reserved_now(const struct axon_mempool *m) {
    return (size_t)m->stats.reserved_bytes[AXON_POOL_ALL].current;
}

/* AXON_ALLOC_GUARD keeps freed mappings inaccessible for a while instead of unmapping them at once: the system would
 * hand the same addresses to the next mapping, and a late access to freed memory would land in a live allocation. */
#define MP_QUARANTINE_ENTRIES 1024
#define MP_QUARANTINE_BYTES ((size_t)256 << 20)

struct mp_quarantine {
    struct {
        char *p;
        size_t n;
    } ring[MP_QUARANTINE_ENTRIES];
    size_t head, len, bytes;
};

static void quarantine_pop(struct axon_mempool *m) {
    struct mp_quarantine *q = m->quarantine;
    m->dev->hw->mem_unmap(m->dev->hw_ctx, m->dev->index, q->ring[q->head].p, q->ring[q->head].n);
    q->bytes -= q->ring[q->head].n;
    q->head = (q->head + 1) % MP_QUARANTINE_ENTRIES;
    q->len--;
}

/* The segment's mapping back to the port (and out of strict mode's ranges), or into the quarantine. */
static void segment_release_mapping(struct axon_mempool *m, struct mp_segment *seg) {
    axon_device_t d = m->dev;
    axon_strict_remove(d->rt, seg->base, seg->size);
    char *map = seg->base - seg->lead;
    size_t n = seg->lead + seg->size + seg->guard;
    struct mp_quarantine *q = m->quarantine;
    if (q == NULL || d->hw->mem_protect == NULL || n > MP_QUARANTINE_BYTES ||
        d->hw->mem_protect(d->hw_ctx, map, n, 0) != AXON_OK) {
        d->hw->mem_unmap(d->hw_ctx, d->index, map, n);
        return;
    }
    while (q->len == MP_QUARANTINE_ENTRIES || q->bytes + n > MP_QUARANTINE_BYTES) quarantine_pop(m);
    size_t at = (q->head + q->len) % MP_QUARANTINE_ENTRIES;
    q->ring[at].p = map;
    q->ring[at].n = n;
    q->bytes += n;
    q->len++;
}

/* Map a new segment for a request and return its single free block in *out (NULL when the capacity or the port
 * refuses: the caller may release cache and retry). Other failures (strict mode, host memory) return their status.
 * Under AXON_ALLOC_GUARD the segment is the request alone, placed so that it ends where an inaccessible page starts
 * (when the port can protect memory). */
static axon_status_t segment_map(struct axon_mempool *m, int pool, size_t size, axon_stream_t s,
                                 struct mp_block **out) {
    *out = NULL;
    axon_device_t d = m->dev;
    size_t reserved = reserved_now(m);
    size_t room = m->capacity > reserved ? m->capacity - reserved : 0;
    size_t page = d->rt->page_size > 1 ? d->rt->page_size : 1;
    size_t n = m->guard ? size : segment_size(m, pool, size, room);
    if (n > room) return AXON_OK;
    size_t map_size = m->guard ? round_up(size, page) + (d->hw->mem_protect ? page : 0) : n;
    if (m->nsegs == m->segs_cap) {
        size_t cap = m->segs_cap ? m->segs_cap * 2 : 16;
        struct mp_segment **segs = realloc(m->segs, cap * sizeof *segs);
        if (segs == NULL)
            return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d allocator: no host memory for segment records",
                             d->index);
        m->segs = segs;
        m->segs_cap = cap;
    }
    struct mp_segment *seg = malloc(sizeof *seg);
    if (seg == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d allocator: no host memory for a segment record",
                         d->index);
    void *map = NULL;
    if (d->hw->mem_map(d->hw_ctx, d->index, map_size, &map) != AXON_OK || map == NULL) {
        free(seg);
        return AXON_OK; /* the system refused: same as a full device */
    }
    seg->lead = m->guard ? round_up(size, page) - size : 0;
    seg->guard = map_size - seg->lead - n;
    char *p = (char *)map + seg->lead;
    if (seg->guard != 0 && d->hw->mem_protect(d->hw_ctx, p + n, seg->guard, 0) != AXON_OK) {
        d->hw->mem_unmap(d->hw_ctx, d->index, map, map_size);
        free(seg);
        return axon_fail(AXON_ERROR_INTERNAL, "axon:%d allocator (AXON_ALLOC_GUARD): cannot protect the guard page",
                         d->index);
    }
    axon_status_t st = axon_strict_add(d->rt, p, n);
    if (st != AXON_OK) {
        d->hw->mem_unmap(d->hw_ctx, d->index, map, map_size);
        free(seg);
        return st;
    }
    seg->base = p;
    seg->size = n;
    seg->pool = pool;
    size_t at = 0;
    while (at < m->nsegs && (uintptr_t)m->segs[at]->base < (uintptr_t)p) at++;
    memmove(&m->segs[at + 1], &m->segs[at], (m->nsegs - at) * sizeof *m->segs);
    m->segs[at] = seg;
    m->nsegs++;

    struct mp_block *b = block_get(m);
    b->ptr = p;
    b->size = n;
    b->seg = seg;
    b->stream = s;
    b->free_seq = 0;
    b->state = MP_FREE;
    seg->first = b;
    stat_pool(m->stats.segment, pool, 1);
    stat_pool(m->stats.reserved_bytes, pool, (int64_t)n);
    m->stats.num_device_alloc++;
    *out = b;
    return AXON_OK;
}

/* Nothing in seg is live or held, and no stream may still touch its free blocks. */
static int segment_idle(const struct mp_segment *seg) {
    for (const struct mp_block *b = seg->first; b != NULL; b = b->next)
        if (b->state != MP_FREE || !block_settled(b)) return 0;
    return 1;
}

static void segment_unmap(struct axon_mempool *m, size_t at) {
    struct mp_segment *seg = m->segs[at];
    for (struct mp_block *b = seg->first, *next; b != NULL; b = next) {
        next = b->next;
        if (b->state == MP_FREE) {
            bin_remove(m, b);
            split_leave(m, b);
        }
        block_put(m, b);
    }
    stat_pool(m->stats.segment, seg->pool, -1);
    stat_pool(m->stats.reserved_bytes, seg->pool, -(int64_t)seg->size);
    m->stats.num_device_free++;
    segment_release_mapping(m, seg);
    memmove(&m->segs[at], &m->segs[at + 1], (m->nsegs - at - 1) * sizeof *m->segs);
    m->nsegs--;
    free(seg);
}

static void segments_release_idle(struct axon_mempool *m) {
    for (size_t i = m->nsegs; i-- > 0;)
        if (segment_idle(m->segs[i])) segment_unmap(m, i);
}

/* ---- taking and returning blocks ---- */

/* Hand out free block b (already out of its bin) for a request of `size` rounded bytes, splitting off the rest. */
static void block_take(struct axon_mempool *m, struct mp_block *b, size_t size, size_t requested, axon_stream_t s) {
    int pool = b->seg->pool;
    split_leave(m, b);
    size_t rest = b->size - size;
    int split = pool == AXON_POOL_SMALL ? rest >= AXON_MEM_ALIGNMENT : rest > AXON_MEM_SMALL_SIZE;
    if (split) {
        struct mp_block *r = block_get(m);
        r->ptr = b->ptr + size;
        r->size = rest;
        r->seg = b->seg;
        r->prev = b;
        r->next = b->next;
        if (b->next != NULL) b->next->prev = r;
        b->next = r;
        /* The rest inherits what protected the whole block. */
        r->stream = b->stream;
        r->free_seq = b->free_seq;
        r->state = MP_FREE;
        b->size = size;
        split_enter(m, r);
        bin_insert(m, r);
    }
    b->state = MP_LIVE;
    b->stream = s;
    b->requested = requested;
    b->nuses = 0;
    table_put(m, b);
    stat_pool(m->stats.allocation, pool, 1);
    stat_pool(m->stats.allocated_bytes, pool, (int64_t)b->size);
    stat_pool(m->stats.active, pool, 1);
    stat_pool(m->stats.active_bytes, pool, (int64_t)b->size);
    stat_pool(m->stats.requested_bytes, pool, (int64_t)requested);
}

/* Can free blocks b and its free neighbour n become one block? Yes when one stream guards both, or when one of
 * them is already safe for everyone (then the other's guard covers the whole). b takes the combined guard. */
static int merge_guard(struct mp_block *b, const struct mp_block *n) {
    if (b->stream == n->stream) {
        if (n->free_seq > b->free_seq) b->free_seq = n->free_seq;
        return 1;
    }
    if (block_settled(n)) return 1;
    if (block_settled(b)) {
        b->stream = n->stream;
        b->free_seq = n->free_seq;
        return 1;
    }
    return 0;
}

static void block_merge(struct axon_mempool *m, struct mp_block *b, struct mp_block *n) {
    if (n == NULL || n->state != MP_FREE || !merge_guard(b, n)) return;
    bin_remove(m, n);
    split_leave(m, n);
    if (n == b->prev) {
        b->ptr = n->ptr;
        b->prev = n->prev;
        if (n->prev != NULL) n->prev->next = b;
        else b->seg->first = b;
    } else {
        b->next = n->next;
        if (n->next != NULL) n->next->prev = b;
    }
    b->size += n->size;
    block_put(m, n);
}

/* b's memory is no longer in use by anyone but b->stream (up to b->free_seq): return it to the bins. */
static void block_release(struct axon_mempool *m, struct mp_block *b) {
    int pool = b->seg->pool;
    stat_pool(m->stats.active, pool, -1);
    stat_pool(m->stats.active_bytes, pool, -(int64_t)b->size);
    stat_pool(m->stats.requested_bytes, pool, -(int64_t)b->requested);
    b->state = MP_FREE;
    b->nuses = 0;
    b->requested = 0;
    block_merge(m, b, b->prev);
    block_merge(m, b, b->next);
    split_enter(m, b);
    bin_insert(m, b);
}

static int uses_done(const struct mp_block *b) {
    for (uint32_t i = 0; i < b->nuses; i++)
        if (axon_stream_completed(b->uses[i].stream) < b->uses[i].seq) return 0;
    return 1;
}

static void held_unlink(struct axon_mempool *m, struct mp_block *b) {
    if (b->link_prev != NULL) b->link_prev->link_next = b->link_next;
    else m->held = b->link_next;
    if (b->link_next != NULL) b->link_next->link_prev = b->link_prev;
    b->link_prev = b->link_next = NULL;
}

/* Move held-back blocks whose recorded streams have caught up into the bins. */
static void held_reclaim(struct axon_mempool *m) {
    for (struct mp_block *b = m->held, *next; b != NULL; b = next) {
        next = b->link_next;
        if (uses_done(b)) {
            held_unlink(m, b);
            block_release(m, b);
        }
    }
}

/* ---- waiting for streams ---- */

struct mp_waits {
    struct mp_use *v;
    size_t n, cap;
};

/* Remember that (s, seq) must complete; one entry per stream, with the highest sequence number. */
static void waits_add(struct mp_waits *w, axon_stream_t s, uint64_t seq) {
    if (axon_stream_completed(s) >= seq) return;
    for (size_t i = 0; i < w->n; i++)
        if (w->v[i].stream == s) {
            if (seq > w->v[i].seq) w->v[i].seq = seq;
            return;
        }
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 8;
        struct mp_use *v = realloc(w->v, cap * sizeof *v);
        if (v == NULL) return; /* best effort: the caller only waits to find more memory */
        w->v = v;
        w->cap = cap;
    }
    w->v[w->n].stream = s;
    w->v[w->n].seq = seq;
    w->n++;
}

/* Wait for the stream work that keeps memory from reuse: held-back blocks' recorded streams and free blocks still
 * guarded by a stream. With only_idle, just the free blocks of segments that hold nothing live or held (what
 * releasing the cache needs). The lock is dropped while waiting, so a stream's own callback may allocate meanwhile.
 * Returns 1 if anything was waited for. m->mu held on entry and return. */
static int streams_wait(struct axon_mempool *m, int only_idle) {
    struct mp_waits w = {0};
    if (!only_idle)
        for (struct mp_block *b = m->held; b != NULL; b = b->link_next) {
            for (uint32_t i = 0; i < b->nuses; i++) waits_add(&w, b->uses[i].stream, b->uses[i].seq);
            waits_add(&w, b->stream, b->free_seq);
        }
    for (size_t i = 0; i < m->nsegs; i++) {
        const struct mp_segment *seg = m->segs[i];
        int idle = 1;
        if (only_idle)
            for (const struct mp_block *b = seg->first; b != NULL && idle; b = b->next) idle = b->state == MP_FREE;
        if (!idle) continue;
        for (const struct mp_block *b = seg->first; b != NULL; b = b->next)
            if (b->state == MP_FREE) waits_add(&w, b->stream, b->free_seq);
    }
    if (w.n == 0) {
        free(w.v);
        return 0;
    }
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < w.n; i++) axon_stream_wait_completed(w.v[i].stream, w.v[i].seq, 0);
    pthread_mutex_lock(&m->mu);
    free(w.v);
    return 1;
}

void axon_mempool_release_cached(struct axon_mempool *m) {
    if (m->held != NULL) held_reclaim(m);
    streams_wait(m, 1);
    if (m->held != NULL) held_reclaim(m);
    segments_release_idle(m);
}

/* ---- allocation ---- */

/* One attempt: a cached block, else a new segment. *out is NULL when neither is possible right now. */
static axon_status_t alloc_try(struct axon_mempool *m, int pool, size_t size, axon_stream_t s,
                               struct mp_block **out) {
    *out = NULL;
    axon_status_t st = mp_reserve(m);
    if (st != AXON_OK) return st;
    if (m->held != NULL) held_reclaim(m);
    if (m->guard && m->guard_freed != 0) {
        /* Nothing is reused: freed memory goes back to the system once no stream can touch it, so that a late
         * access faults. */
        m->guard_freed = 0;
        segments_release_idle(m);
        for (size_t i = 0; i < m->nsegs; i++) m->guard_freed += m->segs[i]->first->state != MP_LIVE; /* in use */
    }
    struct mp_block *b = m->guard ? NULL : bins_find(m, pool, size, s);
    if (b != NULL) bin_remove(m, b);
    else if ((st = segment_map(m, pool, size, s, &b)) != AXON_OK) return st;
    *out = b;
    return AXON_OK;
}

/* The request does not fit: wait for streams holding memory back, then release the cache, retrying after each. */
static axon_status_t alloc_slow(struct axon_mempool *m, int pool, size_t size, axon_stream_t s,
                                struct mp_block **out) {
    axon_status_t st;
    if (streams_wait(m, 0)) {
        m->stats.num_sync_all_streams++;
        if ((st = alloc_try(m, pool, size, s, out)) != AXON_OK || *out != NULL) return st;
    }
    m->stats.num_alloc_retries++;
    axon_mempool_release_cached(m);
    return alloc_try(m, pool, size, s, out);
}

/* Count an OOM and report it with the numbers a user needs to act on it. Unlocks m->mu. */
static axon_status_t alloc_oom(struct axon_mempool *m, size_t n) {
    m->stats.num_ooms++;
    size_t cap = m->capacity, reserved = reserved_now(m);
    size_t allocated = (size_t)m->stats.allocated_bytes[AXON_POOL_ALL].current;
    pthread_mutex_unlock(&m->mu);
    char a[32], b[32], c[32], e[32], f[32];
    return axon_fail(AXON_ERROR_OUT_OF_MEMORY,
                     "axon:%d out of memory: tried to allocate %s; capacity %s, %s allocated, %s reserved, %s free",
                     m->dev->index, axon_mempool_format_bytes(a, sizeof a, n),
                     axon_mempool_format_bytes(b, sizeof b, cap), axon_mempool_format_bytes(c, sizeof c, allocated),
                     axon_mempool_format_bytes(e, sizeof e, reserved),
                     axon_mempool_format_bytes(f, sizeof f, cap > reserved ? cap - reserved : 0));
}

axon_status_t axon_mem_alloc(axon_device_t d, size_t n, axon_stream_t s, void **out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_alloc: out is NULL");
    *out = NULL;
    if (d == NULL || d->mem == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_alloc: device is NULL");
    if (n == 0) return AXON_OK;
    struct axon_mempool *m = d->mem;
    if (s == NULL) {
        s = m->default_stream;
    } else {
        axon_status_t st = axon_stream_check(s, "axon_mem_alloc");
        if (st != AXON_OK) return st;
        if (axon_stream_device(s) != d)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "axon_mem_alloc on axon:%d: the stream belongs to axon:%d", d->index,
                             axon_device_index(axon_stream_device(s)));
    }
    pthread_mutex_lock(&m->mu);
    if (n > MP_MAX_REQUEST || n > m->capacity) return alloc_oom(m, n);
    size_t size = n < AXON_MEM_ALIGNMENT ? AXON_MEM_ALIGNMENT : round_up(n, AXON_MEM_ALIGNMENT);
    int pool = size <= AXON_MEM_SMALL_SIZE ? AXON_POOL_SMALL : AXON_POOL_LARGE;
    struct mp_block *b;
    axon_status_t st = alloc_try(m, pool, size, s, &b);
    if (st == AXON_OK && b == NULL) {
        /* No retry can help a request whose smallest segment exceeds the capacity. */
        if (segment_size(m, pool, size, 0) > m->capacity) return alloc_oom(m, n);
        st = alloc_slow(m, pool, size, s, &b);
    }
    if (st != AXON_OK) {
        pthread_mutex_unlock(&m->mu);
        return st;
    }
    if (b == NULL) return alloc_oom(m, n);
    block_take(m, b, size, n, s);
    *out = b->ptr;
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

/* Why p is not a live allocation of m: foreign, interior or already freed. Unlocks m->mu. */
static axon_status_t not_live(struct axon_mempool *m, const void *p, const char *what) {
    int idx = m->dev->index;
    struct mp_segment *seg = axon_mempool_segment_find(m, p);
    if (seg == NULL) {
        pthread_mutex_unlock(&m->mu);
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s of %p: not allocated by axon:%d", what, p, idx);
    }
    struct mp_block *b = axon_mempool_block_find(seg, p);
    int live = b->state == MP_LIVE;
    size_t off = (size_t)((const char *)p - b->ptr), size = b->requested;
    void *base = b->ptr;
    pthread_mutex_unlock(&m->mu);
    if (live)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s of %p on axon:%d: interior pointer, %zu bytes into the allocation at %p (%zu bytes)",
                         what, p, idx, off, base, size);
    if (strcmp(what, "axon_mem_free") == 0)
        return axon_fail(AXON_ERROR_MISUSE, "axon_mem_free of %p on axon:%d: double free (not allocated now)", p,
                         idx);
    return axon_fail(AXON_ERROR_MISUSE, "%s of %p on axon:%d: the memory was freed", what, p, idx);
}

axon_status_t axon_mem_free(axon_device_t d, void *p) {
    if (d == NULL || d->mem == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_free: device is NULL");
    if (p == NULL) return AXON_OK;
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    struct mp_block *b = table_find(m, p);
    if (b == NULL) return not_live(m, p, "axon_mem_free");
    table_remove(m, b);
    int pool = b->seg->pool;
    stat_pool(m->stats.allocation, pool, -1);
    stat_pool(m->stats.allocated_bytes, pool, -(int64_t)b->size);
    b->free_seq = axon_stream_enqueued(b->stream);
    m->guard_freed += m->guard != 0;
    for (uint32_t i = 0; i < b->nuses; i++) b->uses[i].seq = axon_stream_enqueued(b->uses[i].stream);
    if (b->nuses != 0 && !uses_done(b)) {
        b->state = MP_HELD;
        b->link_prev = NULL;
        b->link_next = m->held;
        if (m->held != NULL) m->held->link_prev = b;
        m->held = b;
    } else {
        block_release(m, b);
    }
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

axon_status_t axon_mem_record_stream(axon_device_t d, void *p, axon_stream_t s) {
    if (d == NULL || d->mem == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_record_stream: device is NULL");
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_record_stream: pointer is NULL");
    axon_status_t st = axon_stream_check(s, "axon_mem_record_stream");
    if (st != AXON_OK) return st;
    if (axon_stream_device(s) != d)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_mem_record_stream on axon:%d: the stream belongs to axon:%d",
                         d->index, axon_device_index(axon_stream_device(s)));
    struct axon_mempool *m = d->mem;
    pthread_mutex_lock(&m->mu);
    struct mp_block *b = table_find(m, p);
    if (b == NULL) return not_live(m, p, "axon_mem_record_stream");
    if (s == b->stream) goto done;
    for (uint32_t i = 0; i < b->nuses; i++)
        if (b->uses[i].stream == s) goto done;
    if (b->nuses == b->cap_uses) {
        uint32_t cap = b->cap_uses * 2;
        struct mp_use *v = malloc(cap * sizeof *v);
        if (v == NULL) {
            pthread_mutex_unlock(&m->mu);
            return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_mem_record_stream: no host memory for %u streams",
                             cap);
        }
        memcpy(v, b->uses, b->nuses * sizeof *v);
        if (b->uses != b->inline_uses) free(b->uses);
        b->uses = v;
        b->cap_uses = cap;
    }
    b->uses[b->nuses].stream = s;
    b->uses[b->nuses].seq = 0;
    b->nuses++;
done:
    pthread_mutex_unlock(&m->mu);
    return AXON_OK;
}

/* ---- create / destroy ---- */

axon_status_t axon_mempool_create(axon_device_t d, struct axon_mempool **out) {
    *out = NULL;
    struct axon_mempool *m = calloc(1, sizeof *m);
    if (m == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d allocator: no host memory", d->index);
    axon_status_t st = axon_stream_default(d, &m->default_stream);
    if (st != AXON_OK) {
        free(m);
        return st;
    }
    if (table_init(m, MP_TABLE_MIN_BITS) != 0 || spare_refill(m) != 0) {
        axon_mempool_destroy(m);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d allocator: no host memory", d->index);
    }
    pthread_mutex_init(&m->mu, NULL);
    m->dev = d;
    m->capacity = d->rt->cfg.memory_capacity;
    m->guard = d->rt->cfg.alloc_guard != 0;
    if (m->guard && (m->quarantine = calloc(1, sizeof *m->quarantine)) == NULL) {
        axon_mempool_destroy(m);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d allocator: no host memory", d->index);
    }
    *out = m;
    return AXON_OK;
}

void axon_mempool_destroy(struct axon_mempool *m) {
    if (m == NULL) return;
    if (m->dev != NULL) {
        /* Live allocations included: the device is going away and nothing may use its memory any more. */
        for (size_t i = 0; i < m->nsegs; i++) {
            struct mp_segment *seg = m->segs[i];
            for (struct mp_block *b = seg->first; b != NULL; b = b->next)
                if (b->uses != b->inline_uses) free(b->uses);
            segment_release_mapping(m, seg);
            free(seg);
        }
        while (m->quarantine != NULL && m->quarantine->len > 0) quarantine_pop(m);
        pthread_mutex_destroy(&m->mu);
    }
    for (struct mp_chunk *c = m->chunks, *next; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    free(m->quarantine);
    free(m->segs);
    free(m->table);
    free(m);
}
