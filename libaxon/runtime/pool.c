/* The worker pool: axon_parallel_for over n participants (n - 1 helper threads plus the calling thread).
 *
 * Jobs live in a fixed table of slots inside the pool, not on the callers' stacks, so a helper may touch any slot at
 * any time without a lock; a per-slot reference count tells the poster when no helper still looks at its slot.
 * A bit mask says which slots hold open jobs: idle helpers spin on that one word, so posting a job costs a few atomic
 * operations and, only when some helper has gone to sleep, one wake-up syscall.
 *
 * Several callers may post at once (one per stream worker); helpers join the open job posted first (lowest ticket),
 * and each caller works on its own job, so every call finishes even when all helpers are busy elsewhere. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define AXON_POOL_MAX_JOBS 64              /* slots; one bit each in the open mask */
/* Idle time a helper or waiting caller spins before it sleeps. A helper asleep when the next job comes costs that
 * job a wake-up, 30-50 us on this project's 2-core VM: with 50 us, an eager Llama decode step (small ops a few tens
 * of microseconds of host dispatch apart) woke the helper for most of its parallel ops and took 2.4-3.4 ms; with
 * 100-500 us it took 1.6-1.9 ms, a synchronized loop of 512 x 384 x 384 products 540-570 us against 580-610, and
 * tiny_ops.py's 49 cases (inline, no pool) kept their median (1.08x CPU either way). 2026-12-06, alternating
 * processes with the value from the environment (benchmarks/compile.py's models, eager). */
#define AXON_POOL_SPIN_NS 200000
#define AXON_POOL_CHUNKS_PER_THREAD 4
#define AXON_CACHE_LINE 64

struct axon_pool_slot {
    _Alignas(AXON_CACHE_LINE) atomic_int busy;   /* owned by a caller (0/1); claimed by CAS */
    atomic_int open;                             /* helpers may join (0/1) */
    atomic_int refs;                             /* helpers currently looking at this slot */
    atomic_int waiting;                          /* the caller sleeps on `finished` */
    atomic_uint_fast64_t ticket;                 /* posting order; helpers prefer lower tickets */
    axon_range_fn fn;                            /* job description: written before `open`, read after it */
    void *ctx;
    int64_t begin, nchunks;
    uint64_t range, chunk;                       /* unsigned: end - begin may exceed INT64_MAX */
    _Alignas(AXON_CACHE_LINE) atomic_int_fast64_t next;  /* next chunk to claim */
    _Alignas(AXON_CACHE_LINE) atomic_int_fast64_t done;  /* chunks finished */
    pthread_cond_t finished;                     /* with pool->mu: done reached nchunks */
};

struct axon_pool {
    struct axon_pool_slot slots[AXON_POOL_MAX_JOBS];
    _Alignas(AXON_CACHE_LINE) atomic_uint_fast64_t open_mask;   /* bit i: slot i has an open job */
    _Alignas(AXON_CACHE_LINE) atomic_int sleepers;               /* helpers blocked (or about to block) on wake */
    atomic_int stop;
    atomic_uint_fast64_t next_ticket;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int size;                                   /* participants */
    int nstarted;                               /* helper threads actually running */
    int slot_conds;                             /* slots whose `finished` was initialized */
    int sync_init;                              /* mu and wake initialized */
    pthread_t *threads;
};

struct axon_pool_helper_arg {
    axon_pool_t pool;
    int slot;                                    /* the helper's participant number, 1..size-1 */
};

/* What this thread is running inside fn, so a nested call runs inline with the same participant number. */
static _Thread_local axon_pool_t axon_pool_tls_pool;
static _Thread_local int axon_pool_tls_slot;
static _Thread_local int axon_pool_tls_depth;

static inline void axon_pool_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t axon_pool_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One step of a bounded spin: pause, and every so often yield (pause alone starves a preempted partner when
 * threads outnumber cores). Returns nonzero once AXON_POOL_SPIN_NS have passed since *start (0 = not started). */
static int axon_pool_spin_step(unsigned *iter, uint64_t *start) {
    axon_pool_pause();
    if ((++*iter & 63u) != 0) return 0;
#if !defined(__x86_64__) && !defined(__i386__) && !defined(__aarch64__)
    sched_yield();
#endif
    uint64_t now = axon_pool_now_ns();
    if (*start == 0) {
        *start = now;
        return 0;
    }
    if ((*iter & 4095u) == 0) sched_yield();
    return now - *start >= AXON_POOL_SPIN_NS;
}

/* Call fn as participant `slot` of pool p, marking this thread as inside a parallel body so nested calls run
 * inline (with the same slot, which stays unique among the outer job's participants). */
static void axon_pool_call(axon_pool_t p, int slot, axon_range_fn fn, void *ctx, int64_t b, int64_t e) {
    axon_pool_t saved_pool = axon_pool_tls_pool;
    int saved_slot = axon_pool_tls_slot;
    axon_pool_tls_pool = p;
    axon_pool_tls_slot = slot;
    axon_pool_tls_depth++;
    fn(ctx, b, e, slot);
    axon_pool_tls_depth--;
    axon_pool_tls_pool = saved_pool;
    axon_pool_tls_slot = saved_slot;
}

static void axon_pool_run_chunk(axon_pool_t p, struct axon_pool_slot *s, int64_t c, int slot) {
    uint64_t off = (uint64_t)c * s->chunk;
    uint64_t len = s->range - off < s->chunk ? s->range - off : s->chunk;
    uint64_t b = (uint64_t)s->begin + off;
    axon_pool_call(p, slot, s->fn, s->ctx, (int64_t)b, (int64_t)(b + len));
}

/* Claim and run chunks of s until none is left. The caller must own s or hold a reference to it. */
static void axon_pool_work(axon_pool_t p, struct axon_pool_slot *s, int slot, int is_owner) {
    int64_t n = s->nchunks;
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
        if (c >= n) break;
        axon_pool_run_chunk(p, s, c, slot);
        /* Release: the chunk's writes happen before the caller sees done == nchunks and returns. */
        int64_t d = atomic_fetch_add_explicit(&s->done, 1, memory_order_acq_rel) + 1;
        /* Pairs with the caller's store of `waiting` then load of `done` (both seq_cst): either the caller sees
         * done == nchunks before it sleeps, or we see waiting == 1 here and signal under the mutex, which the
         * caller holds from its re-check until cond_wait releases it, so the signal cannot fall in between. */
        if (d == n && !is_owner && atomic_load(&s->waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&s->finished);
            pthread_mutex_unlock(&p->mu);
        }
    }
    /* Every chunk is claimed: stop other helpers from joining just to find nothing. */
    size_t i = (size_t)(s - p->slots);
    atomic_fetch_and(&p->open_mask, ~((uint_fast64_t)1 << i));
}

/* Join the open job with the lowest ticket among `mask` and work on it. Returns 0 if no job could be joined. */
static int axon_pool_help(axon_pool_t p, uint_fast64_t mask, int slot) {
    while (mask != 0) {
        int best = -1;
        uint_fast64_t best_ticket = UINT64_MAX;
        for (uint_fast64_t m = mask; m != 0; m &= m - 1) {
            int i = __builtin_ctzll((unsigned long long)m);
            uint_fast64_t t = atomic_load_explicit(&p->slots[i].ticket, memory_order_relaxed);
            if (best < 0 || t < best_ticket) {
                best = i;
                best_ticket = t;
            }
        }
        struct axon_pool_slot *s = &p->slots[best];
        /* Dekker pair with axon_parallel_for's close (open = 0, then wait for refs == 0), both seq_cst: either the
         * owner sees our reference and waits for us, or we see the slot closed. While we hold the reference the
         * slot cannot be reused, so the job fields we read below stay those of the job we saw open. */
        atomic_fetch_add(&s->refs, 1);
        if (atomic_load(&s->open)) {
            axon_pool_work(p, s, slot, 0);
            atomic_fetch_sub_explicit(&s->refs, 1, memory_order_release);
            return 1;
        }
        atomic_fetch_sub_explicit(&s->refs, 1, memory_order_release);
        mask &= ~((uint_fast64_t)1 << best);
    }
    return 0;
}

static void *axon_pool_helper_main(void *argp) {
    struct axon_pool_helper_arg arg = *(struct axon_pool_helper_arg *)argp;
    free(argp);
    axon_pool_t p = arg.pool;
    unsigned iter = 0;
    uint64_t idle_since = 0;
    while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
        uint_fast64_t mask = atomic_load_explicit(&p->open_mask, memory_order_acquire);
        if (mask != 0 && axon_pool_help(p, mask, arg.slot)) {
            iter = 0;
            idle_since = 0;
            continue;
        }
        if (!axon_pool_spin_step(&iter, &idle_since)) continue;
        /* Sleep. Lost wake-up argument: we increment `sleepers` and then re-read the mask; a poster sets its mask
         * bit and then reads `sleepers` (all seq_cst). Sequential consistency forbids both reads missing the other
         * side's write, so either we see the job and skip the sleep, or the poster sees us and broadcasts. The
         * broadcast is made under mu, which we hold from the increment until cond_wait releases it, so it cannot
         * land between our re-check and our wait. */
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->sleepers, 1);
        while (atomic_load(&p->open_mask) == 0 && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->mu);
        atomic_fetch_sub(&p->sleepers, 1);
        pthread_mutex_unlock(&p->mu);
        iter = 0;
        idle_since = 0;
    }
    return NULL;
}

axon_status_t axon_pool_create(int nthreads, axon_pool_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "pool: out is NULL");
    *out = NULL;
    if (nthreads < 1) return axon_fail(AXON_ERROR_INVALID_ARG, "pool: nthreads is %d, must be >= 1", nthreads);
    if (nthreads > 4096) return axon_fail(AXON_ERROR_INVALID_ARG, "pool: nthreads is %d, at most 4096", nthreads);

    size_t bytes = (sizeof(struct axon_pool) + AXON_CACHE_LINE - 1) / AXON_CACHE_LINE * AXON_CACHE_LINE;
    axon_pool_t p = aligned_alloc(AXON_CACHE_LINE, bytes);
    if (p == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "pool: %zu bytes for %d threads", bytes, nthreads);
    memset(p, 0, sizeof *p);
    p->size = nthreads;
    for (int i = 0; i < AXON_POOL_MAX_JOBS; i++) {
        struct axon_pool_slot *s = &p->slots[i];
        atomic_init(&s->busy, 0);
        atomic_init(&s->open, 0);
        atomic_init(&s->refs, 0);
        atomic_init(&s->waiting, 0);
        atomic_init(&s->ticket, 0);
        atomic_init(&s->next, 0);
        atomic_init(&s->done, 0);
    }
    atomic_init(&p->open_mask, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->next_ticket, 0);

    axon_status_t st = AXON_ERROR_INTERNAL;
    int err = 0;
    if ((err = pthread_mutex_init(&p->mu, NULL)) != 0) goto fail;
    if ((err = pthread_cond_init(&p->wake, NULL)) != 0) {
        pthread_mutex_destroy(&p->mu);
        goto fail;
    }
    p->sync_init = 1;
    for (; p->slot_conds < AXON_POOL_MAX_JOBS; p->slot_conds++)
        if ((err = pthread_cond_init(&p->slots[p->slot_conds].finished, NULL)) != 0) goto fail;
    if (nthreads > 1) {
        p->threads = calloc((size_t)nthreads - 1, sizeof *p->threads);
        if (p->threads == NULL) {
            st = AXON_ERROR_OUT_OF_MEMORY;
            err = ENOMEM;
            goto fail;
        }
    }
    for (; p->nstarted < nthreads - 1; p->nstarted++) {
        struct axon_pool_helper_arg *a = malloc(sizeof *a);
        if (a == NULL) {
            st = AXON_ERROR_OUT_OF_MEMORY;
            err = ENOMEM;
            goto fail;
        }
        a->pool = p;
        a->slot = p->nstarted + 1;
        if ((err = pthread_create(&p->threads[p->nstarted], NULL, axon_pool_helper_main, a)) != 0) {
            free(a);
            if (err == EAGAIN) st = AXON_ERROR_OUT_OF_MEMORY;
            goto fail;
        }
    }
    *out = p;
    return AXON_OK;

fail:
    axon_pool_destroy(p); /* safe on a half-built pool: joins the helpers started so far */
    return axon_fail(st, "pool: cannot start %d threads: %s", nthreads, strerror(err));
}

void axon_pool_destroy(axon_pool_t p) {
    if (p == NULL) return;
    if (p->sync_init) {
        atomic_store(&p->stop, 1);
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    for (int i = 0; i < p->nstarted; i++) pthread_join(p->threads[i], NULL);
    for (int i = 0; i < p->slot_conds; i++) pthread_cond_destroy(&p->slots[i].finished);
    if (p->sync_init) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
    }
    free(p->threads);
    free(p);
}

int axon_pool_size(axon_pool_t p) {
    return p == NULL ? 1 : p->size;
}

/* Claim a free job slot, or return NULL when all are taken (the caller then runs its range alone). */
static struct axon_pool_slot *axon_pool_claim_slot(axon_pool_t p) {
    for (int i = 0; i < AXON_POOL_MAX_JOBS; i++) {
        struct axon_pool_slot *s = &p->slots[i];
        int expected = 0;
        if (atomic_load_explicit(&s->busy, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&s->busy, &expected, 1, memory_order_acquire,
                                                    memory_order_relaxed))
            return s;
    }
    return NULL;
}

/* Wait until every chunk of the caller's own job s has finished: spin first, then sleep on s->finished. */
static void axon_pool_wait_done(axon_pool_t p, struct axon_pool_slot *s) {
    unsigned iter = 0;
    uint64_t start = 0;
    int64_t n = s->nchunks;
    while (atomic_load_explicit(&s->done, memory_order_acquire) < n) {
        if (!axon_pool_spin_step(&iter, &start)) continue;
        pthread_mutex_lock(&p->mu);
        atomic_store(&s->waiting, 1); /* see the pairing comment in axon_pool_work */
        while (atomic_load(&s->done) < n) pthread_cond_wait(&s->finished, &p->mu);
        atomic_store(&s->waiting, 0);
        pthread_mutex_unlock(&p->mu);
    }
}

void axon_parallel_for(axon_pool_t p, int64_t begin, int64_t end, int64_t grain, axon_range_fn fn, void *ctx) {
    if (end <= begin || fn == NULL) return;
    if (grain < 1) grain = 1;
    /* Range as unsigned: end - begin may exceed INT64_MAX. */
    uint64_t range = (uint64_t)end - (uint64_t)begin;
    if (p == NULL || p->size == 1 || range <= (uint64_t)grain || axon_pool_tls_depth > 0) {
        int slot = axon_pool_tls_depth > 0 && axon_pool_tls_pool == p ? axon_pool_tls_slot : 0;
        axon_pool_call(p, slot, fn, ctx, begin, end);
        return;
    }

    struct axon_pool_slot *s = axon_pool_claim_slot(p);
    if (s == NULL) {
        /* More concurrent callers than slots: correct, only slower. */
        axon_pool_call(p, 0, fn, ctx, begin, end);
        return;
    }

    uint64_t target = (uint64_t)p->size * AXON_POOL_CHUNKS_PER_THREAD;
    uint64_t chunk = range / target + (range % target != 0); /* ceil without overflowing near UINT64_MAX */
    if (chunk < (uint64_t)grain) chunk = (uint64_t)grain;
    s->fn = fn;
    s->ctx = ctx;
    s->begin = begin;
    s->range = range;
    s->chunk = chunk;
    s->nchunks = (int64_t)(range / chunk + (range % chunk != 0));
    atomic_store_explicit(&s->next, 0, memory_order_relaxed);
    atomic_store_explicit(&s->done, 0, memory_order_relaxed);
    atomic_store_explicit(&s->ticket, atomic_fetch_add_explicit(&p->next_ticket, 1, memory_order_relaxed),
                          memory_order_relaxed);
    /* Publishes the fields above to any helper that sees open == 1. */
    atomic_store(&s->open, 1);
    size_t idx = (size_t)(s - p->slots);
    atomic_fetch_or(&p->open_mask, (uint_fast64_t)1 << idx);
    /* Pairs with a helper's sleepers increment then mask re-check (see axon_pool_helper_main). */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }

    axon_pool_work(p, s, 0, 1);
    axon_pool_wait_done(p, s);

    /* Close: after this no helper joins; wait for those that hold a reference (they are only on their way out,
     * every chunk being done) before the slot may carry another job. */
    atomic_store(&s->open, 0);
    atomic_fetch_and(&p->open_mask, ~((uint_fast64_t)1 << idx));
    for (unsigned iter = 1; atomic_load(&s->refs) != 0; iter++) {
        axon_pool_pause();
        if ((iter & 1023u) == 0) sched_yield(); /* a helper holding a reference may have been preempted */
    }
    atomic_store_explicit(&s->busy, 0, memory_order_release);
}
