/* Streams: FIFO command queues, each drained in order by its own executor thread.
 *
 * The queue is a byte ring. Producers (any host thread) serialize on push_lock, copy the command and its argument
 * block into the ring and publish it by advancing `head`; the executor runs the entry in place and then advances
 * `tail`. Every command gets a sequence number at enqueue (`enqueued`), and `completed` counts the commands done, so
 * "has the work queued up to here finished?" is one comparison: events, the allocator's stream-aware reuse and
 * synchronization are all built on that.
 *
 * Why a thread per stream rather than streams multiplexed over the device's workers: a stream waiting on an event
 * then simply blocks its own thread, which can never starve another stream of a worker, and FIFO order needs no
 * bookkeeping. The kernels' parallelism comes from the device's pool, which the executor joins when it runs a kernel.
 *
 * Latency: executors and waiting hosts spin for a short while before they sleep, so back-to-back commands and short
 * round trips never pay a wake-up; a producer makes a wake syscall only when the executor is actually asleep. The
 * exception is a host waiting on a device whose pool already has a thread per usable core: its spin would take a core
 * from the kernel it waits for (the executor and the pool's helpers run it), so it sleeps at once. Measured on 2
 * cores with 2 device threads, an op and a synchronize per call: matmul 256^3 206 -> 134 us, add of 2^18 floats 115
 * -> 33 us, 2^20 337 -> 263 us (pipelined, no synchronize: 130, 43 and 256 us, unchanged). A sleeping host is woken
 * once, when the point it waits for is reached, not after every command (wake_completed, wake_tail).
 *
 * Small kernels on an idle stream run inline: when a kernel moves at most INLINE_BYTES and every command enqueued
 * before it has completed, the producer runs it itself, under push_lock, instead of queueing it. Handing a tiny op to
 * the executor costs more than the op (copying the command, waking or racing the executor, which then spins on a
 * core the host needs, and the round trip of the next synchronize). Stream order still holds: nothing is pending, and
 * no other producer can enqueue until the command has completed. The command still takes a sequence number, so
 * events, queries and the allocator's stream-aware reuse see it like any other, and a failure is recorded on the
 * stream and reported at its next synchronization point, as from the executor. Kernels that state no size (bytes 0)
 * are always queued: they may be long, or wait for the host (events and host callbacks state none). Small copies and
 * fills run inline too: a clone of a tiny tensor queued to the executor woke it for every call, and its spin then took
 * the second core of a 2-core host for 50 us each time. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STREAM_MAGIC 0x5354524du /* "STRM": catches stale or garbage handles */
#define RING_BYTES ((size_t)1 << 18)
#define ENTRY_ALIGN 64              /* entries and the ring end are multiples: a skip header always fits */
#define SPIN_NS 50000               /* how long an idle executor or a waiting host spins before sleeping */
/* Kernels moving up to this many bytes may run inline (see above). Inline execution also gives up overlap: a host
 * that launches back to back waits for each kernel instead of preparing the next one meanwhile, so this stays where
 * the work is well below the cost of queueing (a 64x64 float matmul, 48 KiB, ran at half speed inline). */
#define INLINE_BYTES ((uint64_t)16 << 10)

enum entry_kind { ENTRY_COMMAND = 0, ENTRY_SKIP = 1 };

/* One queued command; its argument block follows, 16-byte aligned. */
struct entry {
    uint32_t size;                  /* bytes of this entry including the arguments, a multiple of ENTRY_ALIGN */
    uint8_t kind;
    uint8_t route;
    axon_kernel_fn fn;
    const char *name;
    uint64_t bytes;
    size_t args_size;
};
#define ENTRY_HEADER (((sizeof(struct entry) + 15) / 16) * 16)
_Static_assert(ENTRY_HEADER <= ENTRY_ALIGN, "a skip entry must fit in the smallest gap");

struct axon_stream {
    unsigned magic;
    axon_device_t dev;
    uint64_t id;
    int priority;
    atomic_int retired;             /* destroyed by the user; kept for recycling so stale references stay valid */

    pthread_mutex_t push_lock;      /* serializes producers */
    unsigned char *ring;
    _Atomic uint64_t head;          /* bytes published (monotonic) */
    _Atomic uint64_t tail;          /* bytes retired by the executor (monotonic) */
    _Atomic uint64_t enqueued;      /* sequence number of the last command enqueued */
    _Atomic uint64_t completed;     /* sequence number of the last command finished */

    pthread_t thread;
    int thread_started;
    pthread_mutex_t wake_lock;      /* executor sleep/wake */
    pthread_cond_t wake_cv;
    atomic_int sleeping;
    atomic_int stop;

    pthread_mutex_t done_lock;      /* hosts waiting for progress (completion or ring space) */
    pthread_cond_t done_cv;
    /* The smallest `completed` and `tail` a sleeping host waits for (UINT64_MAX: none). The executor wakes hosts only
     * when one is reached, not after every command: on 2 cores a host woken per command took a core from the kernels
     * it waited for, 15-30 us between every two commands of a compiled BERT (6% of its time). */
    _Atomic uint64_t wake_completed;
    _Atomic uint64_t wake_tail;
    int host_sleeps;                /* a waiting host sleeps at once: the pool has a thread per usable core */

    pthread_mutex_t err_lock;       /* first failure since the last synchronization point */
    atomic_int has_error;
    axon_status_t error;
    char error_message[768];
};

struct axon_stream_set {
    pthread_mutex_t lock;
    axon_stream_t default_stream;   /* also all[0]; read without the lock, so kept apart from `all` */
    axon_stream_t *all;             /* every stream ever created on the device, default first */
    int count, cap;
    uint64_t next_id;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- the executor ---- */

static void record_error(axon_stream_t s, const char *name, axon_status_t st, const char *msg) {
    pthread_mutex_lock(&s->err_lock);
    if (!atomic_load(&s->has_error)) {
        s->error = st;
        snprintf(s->error_message, sizeof s->error_message, "axon:%d stream %llu: %s failed: %s", s->dev->index,
                 (unsigned long long)s->id, name, msg && *msg ? msg : axon_status_name(st));
        atomic_store(&s->has_error, 1);
    }
    pthread_mutex_unlock(&s->err_lock);
}

/* Run one command on the calling thread (the executor, or a producer running a small kernel inline); a failure is
 * recorded on s. Leaves this thread's error cleared. */
static void run_command(axon_stream_t s, const axon_launch_t *l, enum axon_cmd_route route) {
    axon_device_t d = s->dev;
    axon_runtime_t rt = d->rt;
    const axon_exec_t ex = {d, s, d->pool};
    int tracing = axon_trace_is_on(rt->trace);
    uint64_t t0 = tracing ? axon_clock_ns() : 0;
    axon_clear_error();
    axon_strict_enter(rt);
    axon_status_t st = route == AXON_ROUTE_PORT ? d->hw->execute(d->hw_ctx, l, &ex) : l->fn(l->args, &ex);
    axon_strict_leave(rt);
    if (st != AXON_OK) {
        record_error(s, l->name, st, axon_last_error());
        axon_clear_error();
    }
    if (tracing) {
        axon_trace_record_t r = {l->name, d->index, s->id, t0, axon_clock_ns(), l->bytes};
        axon_trace_add(rt->trace, &r);
    }
}

static void run_entry(axon_stream_t s, const struct entry *e) {
    const axon_launch_t l = {e->fn, (const unsigned char *)e + ENTRY_HEADER, e->args_size, e->name, e->bytes};
    run_command(s, &l, (enum axon_cmd_route)e->route);
}

/* Called after `tail` or `completed` advanced: wakes the hosts if a target one of them sleeps on is reached. Every
 * waiter wakes and re-registers its target if it is not there yet, so a broadcast clears both targets. */
static void notify_progress(axon_stream_t s) {
    if (atomic_load(&s->completed) >= atomic_load(&s->wake_completed) ||
        atomic_load(&s->tail) >= atomic_load(&s->wake_tail)) {
        pthread_mutex_lock(&s->done_lock);
        atomic_store(&s->wake_completed, UINT64_MAX);
        atomic_store(&s->wake_tail, UINT64_MAX);
        pthread_cond_broadcast(&s->done_cv);
        pthread_mutex_unlock(&s->done_lock);
    }
}

/* Wait until a command is published after `tail` (returns 1) or the stream is stopping with nothing left (0). */
static int wait_for_work(axon_stream_t s, uint64_t tail) {
    uint64_t deadline = axon_clock_ns() + SPIN_NS;
    for (int i = 0;; i++) {
        if (atomic_load_explicit(&s->head, memory_order_acquire) != tail) return 1;
        if (atomic_load(&s->stop)) return 0;
        if ((i & 63) == 63) {
            if (axon_clock_ns() > deadline) break;
            /* The host this executor just woke (a synchronize) may have no core: the pool's helpers spin after a
             * kernel too, and on 2 cores the pair held both, so the host ran only when this spin ended (a
             * synchronize returned 48 us after the last kernel; with the yield, 9-15). */
            sched_yield();
        }
        cpu_relax();
    }
    /* Producers publish head and then read `sleeping`; we set `sleeping` and then read head (both seq_cst), so one
     * of us sees the other: either the producer signals or we see its command and do not sleep. */
    pthread_mutex_lock(&s->wake_lock);
    atomic_store(&s->sleeping, 1);
    while (atomic_load(&s->head) == tail && !atomic_load(&s->stop)) pthread_cond_wait(&s->wake_cv, &s->wake_lock);
    atomic_store(&s->sleeping, 0);
    pthread_mutex_unlock(&s->wake_lock);
    return atomic_load(&s->head) != tail || !atomic_load(&s->stop);
}


static void *executor_main(void *arg) {
    axon_stream_t s = arg;
    uint64_t tail = atomic_load(&s->tail);
    for (;;) {
        if (atomic_load_explicit(&s->head, memory_order_acquire) == tail) {
            if (!wait_for_work(s, tail)) break;
            continue;
        }
        const struct entry *e = (const struct entry *)(s->ring + tail % RING_BYTES);
        if (e->kind == ENTRY_COMMAND) run_entry(s, e);
        tail += e->size;
        atomic_store_explicit(&s->tail, tail, memory_order_release);
        if (e->kind == ENTRY_COMMAND) atomic_fetch_add(&s->completed, 1);
        notify_progress(s);
    }
    return NULL;
}

/* ---- waiting on the host ---- */

static void wait_until(axon_stream_t s, _Atomic uint64_t *counter, uint64_t target, int sleep_at_once) {
    if (atomic_load_explicit(counter, memory_order_acquire) >= target) return;
    if (!sleep_at_once && !s->host_sleeps) {
        uint64_t deadline = axon_clock_ns() + SPIN_NS;
        for (int i = 0;; i++) {
            if (atomic_load_explicit(counter, memory_order_acquire) >= target) return;
            if ((i & 63) == 63 && axon_clock_ns() > deadline) break;
            cpu_relax();
        }
    }
    /* Same handshake as the executor's: we lower the wake target before re-checking the counter; the executor
     * advances the counter before it reads the target (all seq_cst, so one of us sees the other's store), and
     * broadcasts under done_lock, which we hold from the check until cond_wait releases it. Targets are only written
     * under done_lock. */
    _Atomic uint64_t *wake = counter == &s->completed ? &s->wake_completed : &s->wake_tail;
    pthread_mutex_lock(&s->done_lock);
    for (;;) {
        if (target < atomic_load(wake)) atomic_store(wake, target);
        if (atomic_load(counter) >= target) break;
        pthread_cond_wait(&s->done_cv, &s->done_lock);
    }
    pthread_mutex_unlock(&s->done_lock);
}

uint64_t axon_stream_enqueued(axon_stream_t s) { return atomic_load_explicit(&s->enqueued, memory_order_acquire); }

uint64_t axon_stream_completed(axon_stream_t s) { return atomic_load_explicit(&s->completed, memory_order_acquire); }

void axon_stream_wait_completed(axon_stream_t s, uint64_t seq, int sleep_at_once) {
    wait_until(s, &s->completed, seq, sleep_at_once);
}

axon_status_t axon_stream_take_error(axon_stream_t s) {
    if (!atomic_load(&s->has_error)) return AXON_OK;
    pthread_mutex_lock(&s->err_lock);
    axon_status_t st = AXON_OK;
    if (atomic_load(&s->has_error)) {
        st = axon_fail(s->error, "%s", s->error_message);
        atomic_store(&s->has_error, 0);
    }
    pthread_mutex_unlock(&s->err_lock);
    return st;
}

/* ---- producers ---- */

static void write_skip(axon_stream_t s, uint64_t at, uint32_t size) {
    struct entry *e = (struct entry *)(s->ring + at % RING_BYTES);
    memset(e, 0, sizeof *e);
    e->size = size;
    e->kind = ENTRY_SKIP;
}

/* Run l inline if it is small and s is idle (see the top of this file); the caller holds push_lock. Returns 1 and
 * sets *seq if it ran, 0 if the command must be queued. */
static int try_run_inline(axon_stream_t s, const axon_launch_t *l, enum axon_cmd_route route, uint64_t *seq) {
    if (l->bytes == 0 || l->bytes > INLINE_BYTES) return 0;
    /* Acquire: every earlier command's writes are visible before we touch the memory they wrote. The executor bumps
     * `completed` last, after it retired the entry, so equality also means it is idle until the next push. */
    uint64_t done = atomic_load_explicit(&s->completed, memory_order_acquire);
    uint64_t my_seq = atomic_load_explicit(&s->enqueued, memory_order_relaxed) + 1;
    if (done + 1 != my_seq) return 0;
    /* Published first, so a query or an event from another thread sees the command as pending while it runs. */
    atomic_store_explicit(&s->enqueued, my_seq, memory_order_release);
    run_command(s, l, route);
    atomic_fetch_add(&s->completed, 1);
    *seq = my_seq;
    return 1;
}

axon_status_t axon_stream_submit(axon_stream_t s, const axon_launch_t *l, enum axon_cmd_route route,
                                 uint64_t *seq) {
    size_t size = (ENTRY_HEADER + l->args_size + ENTRY_ALIGN - 1) / ENTRY_ALIGN * ENTRY_ALIGN;
    pthread_mutex_lock(&s->push_lock);
    uint64_t inline_seq;
    if (try_run_inline(s, l, route, &inline_seq)) {
        pthread_mutex_unlock(&s->push_lock);
        notify_progress(s);
        if (seq) *seq = inline_seq;
        return AXON_OK;
    }
    uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
    size_t room_to_end = RING_BYTES - head % RING_BYTES;
    size_t skip = size > room_to_end ? room_to_end : 0; /* entries never wrap: pad to the ring's start */
    uint64_t need = head + skip + size;
    if (need - atomic_load_explicit(&s->tail, memory_order_acquire) > RING_BYTES)
        wait_until(s, &s->tail, need - RING_BYTES, 0); /* backpressure: the ring is full */
    if (skip) {
        write_skip(s, head, (uint32_t)skip);
        head += skip;
    }
    struct entry *e = (struct entry *)(s->ring + head % RING_BYTES);
    e->size = (uint32_t)size;
    e->kind = ENTRY_COMMAND;
    e->route = (uint8_t)route;
    e->fn = l->fn;
    e->name = l->name ? l->name : "kernel";
    e->bytes = l->bytes;
    e->args_size = l->args_size;
    if (l->args_size) memcpy((unsigned char *)e + ENTRY_HEADER, l->args, l->args_size);
    uint64_t my_seq = atomic_load_explicit(&s->enqueued, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->enqueued, my_seq, memory_order_release);
    atomic_store(&s->head, head + size);
    pthread_mutex_unlock(&s->push_lock);
    if (atomic_load(&s->sleeping)) {
        pthread_mutex_lock(&s->wake_lock);
        pthread_cond_signal(&s->wake_cv);
        pthread_mutex_unlock(&s->wake_lock);
    }
    if (seq) *seq = my_seq;
    return AXON_OK;
}

axon_status_t axon_stream_check(axon_stream_t s, const char *fn) {
    if (s == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: stream is NULL", fn);
    if (s->magic != STREAM_MAGIC) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %p is not an axon stream", fn, (void *)s);
    if (atomic_load_explicit(&s->retired, memory_order_relaxed))
        return axon_fail(AXON_ERROR_MISUSE, "%s: stream %llu of axon:%d was destroyed", fn,
                         (unsigned long long)s->id, s->dev->index);
    return AXON_OK;
}

axon_status_t axon_stream_launch(axon_stream_t s, const axon_launch_t *l) {
    axon_status_t st = axon_stream_check(s, "axon_stream_launch");
    if (st != AXON_OK) return st;
    if (l == NULL || l->fn == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_launch: %s is NULL", l ? "the kernel fn" : "launch");
    if (l->args_size > AXON_LAUNCH_MAX_ARGS || (l->args_size > 0 && l->args == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_launch(%s): argument block of %zu bytes %s",
                         l->name ? l->name : "kernel", l->args_size,
                         l->args ? "exceeds AXON_LAUNCH_MAX_ARGS (4096)" : "has a NULL pointer");
    return axon_stream_submit(s, l, AXON_ROUTE_PORT, NULL);
}

struct callback_args {
    axon_host_fn fn;
    void *user;
};

static axon_status_t run_callback(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct callback_args *a = args;
    a->fn(a->user);
    return AXON_OK;
}

axon_status_t axon_stream_add_callback(axon_stream_t s, axon_host_fn fn, void *user) {
    axon_status_t st = axon_stream_check(s, "axon_stream_add_callback");
    if (st != AXON_OK) return st;
    if (fn == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_add_callback: fn is NULL");
    struct callback_args a = {fn, user};
    axon_launch_t l = {run_callback, &a, sizeof a, "host_callback", 0};
    return axon_stream_submit(s, &l, AXON_ROUTE_RUNTIME, NULL);
}

axon_status_t axon_stream_query(axon_stream_t s) {
    axon_status_t st = axon_stream_check(s, "axon_stream_query");
    if (st != AXON_OK) return st;
    if ((st = axon_stream_take_error(s)) != AXON_OK) return st;
    return axon_stream_completed(s) >= axon_stream_enqueued(s) ? AXON_OK : AXON_ERROR_NOT_READY;
}

axon_status_t axon_stream_sync(axon_stream_t s) {
    axon_status_t st = axon_stream_check(s, "axon_stream_sync");
    if (st != AXON_OK) return st;
    axon_stream_wait_completed(s, axon_stream_enqueued(s), 0);
    return axon_stream_take_error(s);
}

/* ---- life cycle ---- */

static void stream_free(axon_stream_t s) {
    if (s == NULL) return;
    if (s->thread_started) {
        pthread_mutex_lock(&s->wake_lock);
        atomic_store(&s->stop, 1);
        pthread_cond_signal(&s->wake_cv);
        pthread_mutex_unlock(&s->wake_lock);
        pthread_join(s->thread, NULL);
    }
    pthread_mutex_destroy(&s->push_lock);
    pthread_mutex_destroy(&s->wake_lock);
    pthread_cond_destroy(&s->wake_cv);
    pthread_mutex_destroy(&s->done_lock);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->err_lock);
    s->magic = 0;
    free(s->ring);
    free(s);
}

static axon_status_t stream_new(axon_device_t d, uint64_t id, int priority, axon_stream_t *out) {
    *out = NULL;
    axon_stream_t s = calloc(1, sizeof *s);
    if (s == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d: no host memory for a stream", d->index);
    s->magic = STREAM_MAGIC;
    s->dev = d;
    s->id = id;
    s->priority = priority;
    s->host_sleeps = axon_pool_size(d->pool) >= axon_usable_cores();
    pthread_mutex_init(&s->push_lock, NULL);
    pthread_mutex_init(&s->wake_lock, NULL);
    pthread_cond_init(&s->wake_cv, NULL);
    pthread_mutex_init(&s->done_lock, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    atomic_store(&s->wake_completed, UINT64_MAX);
    atomic_store(&s->wake_tail, UINT64_MAX);
    pthread_mutex_init(&s->err_lock, NULL);
    s->ring = aligned_alloc(ENTRY_ALIGN, RING_BYTES);
    if (s->ring == NULL) {
        stream_free(s);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d: no host memory for a stream's queue", d->index);
    }
    if (pthread_create(&s->thread, NULL, executor_main, s) != 0) {
        stream_free(s);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d: cannot start a stream's executor thread", d->index);
    }
    s->thread_started = 1;
    *out = s;
    return AXON_OK;
}

static int clamp_priority(int priority) {
    if (priority < AXON_STREAM_PRIORITY_HIGHEST) return AXON_STREAM_PRIORITY_HIGHEST;
    if (priority > AXON_STREAM_PRIORITY_LOWEST) return AXON_STREAM_PRIORITY_LOWEST;
    return priority;
}

/* Append s to the set; the caller holds set->lock. */
static axon_status_t set_append(struct axon_stream_set *set, axon_stream_t s) {
    if (set->count == set->cap) {
        int cap = set->cap ? set->cap * 2 : 8;
        axon_stream_t *grown = realloc(set->all, (size_t)cap * sizeof *grown);
        if (grown == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "no host memory for the stream table");
        set->all = grown;
        set->cap = cap;
    }
    set->all[set->count++] = s;
    return AXON_OK;
}

axon_status_t axon_streams_init(axon_device_t d) {
    struct axon_stream_set *set = calloc(1, sizeof *set);
    if (set == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d: no host memory for streams", d->index);
    pthread_mutex_init(&set->lock, NULL);
    d->streams = set;
    axon_stream_t s;
    axon_status_t st = stream_new(d, 0, AXON_STREAM_PRIORITY_LOWEST, &s);
    if (st != AXON_OK) return st;
    if ((st = set_append(set, s)) != AXON_OK) {
        stream_free(s);
        return st;
    }
    set->default_stream = s;
    set->next_id = 1;
    return AXON_OK;
}

void axon_streams_shutdown(axon_device_t d) {
    struct axon_stream_set *set = d->streams;
    if (set == NULL) return;
    for (int i = 0; i < set->count; i++) stream_free(set->all[i]); /* each drains its queue, then stops */
    free(set->all);
    pthread_mutex_destroy(&set->lock);
    free(set);
    d->streams = NULL;
}

axon_status_t axon_stream_create(axon_device_t d, int priority, axon_stream_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_create: out is NULL");
    *out = NULL;
    if (d == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_create: device is NULL");
    struct axon_stream_set *set = d->streams;
    pthread_mutex_lock(&set->lock);
    uint64_t id = set->next_id++;
    axon_status_t st = AXON_OK;
    axon_stream_t s = NULL;
    for (int i = 1; i < set->count && s == NULL; i++) /* recycle a retired stream and its thread */
        if (atomic_load(&set->all[i]->retired)) s = set->all[i];
    if (s) {
        s->id = id;
        s->priority = clamp_priority(priority);
        atomic_store(&s->retired, 0);
    } else if ((st = stream_new(d, id, clamp_priority(priority), &s)) == AXON_OK &&
               (st = set_append(set, s)) != AXON_OK) {
        stream_free(s);
        s = NULL;
    }
    pthread_mutex_unlock(&set->lock);
    *out = s;
    return st;
}

axon_status_t axon_stream_destroy(axon_stream_t s) {
    if (s == NULL) return AXON_OK;
    axon_status_t st = axon_stream_check(s, "axon_stream_destroy");
    if (st != AXON_OK) return st;
    if (s->id == 0)
        return axon_fail(AXON_ERROR_MISUSE, "axon_stream_destroy: the default stream of axon:%d cannot be destroyed",
                         s->dev->index);
    axon_stream_wait_completed(s, axon_stream_enqueued(s), 0);
    st = axon_stream_take_error(s);
    pthread_mutex_lock(&s->dev->streams->lock);
    atomic_store(&s->retired, 1);
    pthread_mutex_unlock(&s->dev->streams->lock);
    return st;
}

axon_status_t axon_stream_default(axon_device_t d, axon_stream_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_default: out is NULL");
    if (d == NULL) {
        *out = NULL;
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_default: device is NULL");
    }
    *out = d->streams->default_stream;
    return AXON_OK;
}

axon_device_t axon_stream_device(axon_stream_t s) { return s ? s->dev : NULL; }

int axon_stream_priority(axon_stream_t s) { return s ? s->priority : 0; }

uint64_t axon_stream_id(axon_stream_t s) { return s ? s->id : 0; }

axon_status_t axon_stream_from_id(axon_device_t d, uint64_t id, axon_stream_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_from_id: out is NULL");
    *out = NULL;
    if (d == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_stream_from_id: device is NULL");
    pthread_mutex_lock(&d->streams->lock);
    for (int i = 0; i < d->streams->count; i++) {
        axon_stream_t s = d->streams->all[i];
        if (s->id == id && !atomic_load(&s->retired)) *out = s;
    }
    pthread_mutex_unlock(&d->streams->lock);
    if (*out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon:%d has no live stream with id %llu", d->index,
                         (unsigned long long)id);
    return AXON_OK;
}

axon_status_t axon_device_synchronize(axon_device_t d) {
    if (d == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_device_synchronize: device is NULL");
    struct axon_stream_set *set = d->streams;
    pthread_mutex_lock(&set->lock);
    int n = set->count; /* streams created meanwhile are not waited for, as with CUDA's device sync */
    pthread_mutex_unlock(&set->lock);
    axon_status_t first = AXON_OK;
    char msg[1024] = "";
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&set->lock);
        axon_stream_t s = set->all[i];
        pthread_mutex_unlock(&set->lock);
        axon_stream_wait_completed(s, axon_stream_enqueued(s), 0);
        axon_status_t st = axon_stream_take_error(s);
        if (st != AXON_OK && first == AXON_OK) {
            first = st;
            snprintf(msg, sizeof msg, "%s", axon_last_error());
        }
    }
    if (first != AXON_OK) return axon_fail(first, "%s", msg);
    return AXON_OK;
}
