/* Events: a captured point (stream, sequence number) in a stream's work.
 *
 * Capturing needs no command: the event is complete once the stream's `completed` count reaches the captured number.
 * Only timing events enqueue a marker, which stamps the time when the stream reaches it; the marker holds a reference
 * so the event may be destroyed while a record is still queued. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

#define EVENT_MAGIC 0x4556454eu /* "EVEN" */

struct axon_event {
    unsigned magic;
    axon_runtime_t rt;
    unsigned flags;
    atomic_int refs;
    pthread_mutex_t lock;           /* guards the fields below */
    axon_stream_t stream;           /* where it was last recorded; NULL if never */
    uint64_t seq;                   /* the work captured: complete when stream's completed >= seq */
    uint64_t generation;            /* counts records, so a stale marker cannot stamp a newer record */
    uint64_t stamped_generation;
    uint64_t time_ns;
};

static void event_unref(axon_event_t e) {
    if (atomic_fetch_sub(&e->refs, 1) != 1) return;
    pthread_mutex_destroy(&e->lock);
    e->magic = 0;
    free(e);
}

static axon_status_t check_event(axon_event_t e, const char *fn) {
    if (e == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: event is NULL", fn);
    if (e->magic != EVENT_MAGIC) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %p is not an axon event", fn, (void *)e);
    return AXON_OK;
}

axon_status_t axon_event_create(axon_runtime_t rt, unsigned flags, axon_event_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_event_create: out is NULL");
    *out = NULL;
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_event_create: runtime is NULL");
    if (flags & ~(unsigned)(AXON_EVENT_TIMING | AXON_EVENT_BLOCKING_SYNC))
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_event_create: unknown flags 0x%x", flags);
    axon_event_t e = calloc(1, sizeof *e);
    if (e == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_event_create: no host memory");
    e->magic = EVENT_MAGIC;
    e->rt = rt;
    e->flags = flags;
    atomic_init(&e->refs, 1);
    pthread_mutex_init(&e->lock, NULL);
    *out = e;
    return AXON_OK;
}

void axon_event_destroy(axon_event_t e) {
    if (e == NULL || e->magic != EVENT_MAGIC) return;
    event_unref(e);
}

struct mark_args {
    axon_event_t event;
    uint64_t generation;
};

static axon_status_t stamp_event(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct mark_args *a = args;
    uint64_t now = axon_clock_ns();
    pthread_mutex_lock(&a->event->lock);
    if (a->event->generation == a->generation) {
        a->event->time_ns = now;
        a->event->stamped_generation = a->generation;
    }
    pthread_mutex_unlock(&a->event->lock);
    event_unref(a->event);
    return AXON_OK;
}

axon_status_t axon_event_record(axon_event_t e, axon_stream_t s) {
    axon_status_t st = check_event(e, "axon_event_record");
    if (st == AXON_OK) st = axon_stream_check(s, "axon_event_record");
    if (st != AXON_OK) return st;
    if (axon_device_runtime(axon_stream_device(s)) != e->rt)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_event_record: the event and the stream belong to different runtimes");
    pthread_mutex_lock(&e->lock);
    uint64_t generation = ++e->generation;
    uint64_t seq = axon_stream_enqueued(s);
    if (e->flags & AXON_EVENT_TIMING) {
        /* The event lock is held while enqueueing so that records on several threads keep their order. */
        atomic_fetch_add(&e->refs, 1);
        struct mark_args a = {e, generation};
        axon_launch_t l = {stamp_event, &a, sizeof a, "event_record", 0};
        st = axon_stream_submit(s, &l, AXON_ROUTE_RUNTIME, &seq);
        if (st != AXON_OK) atomic_fetch_sub(&e->refs, 1);
    }
    if (st == AXON_OK) {
        e->stream = s;
        e->seq = seq;
    }
    pthread_mutex_unlock(&e->lock);
    return st;
}

/* The captured point, read consistently. */
static void captured(axon_event_t e, axon_stream_t *s, uint64_t *seq) {
    pthread_mutex_lock(&e->lock);
    *s = e->stream;
    *seq = e->seq;
    pthread_mutex_unlock(&e->lock);
}

axon_status_t axon_event_query(axon_event_t e) {
    axon_status_t st = check_event(e, "axon_event_query");
    if (st != AXON_OK) return st;
    axon_stream_t s;
    uint64_t seq;
    captured(e, &s, &seq);
    if (s == NULL || axon_stream_completed(s) >= seq) return AXON_OK;
    return AXON_ERROR_NOT_READY;
}

axon_status_t axon_event_sync(axon_event_t e) {
    axon_status_t st = check_event(e, "axon_event_sync");
    if (st != AXON_OK) return st;
    axon_stream_t s;
    uint64_t seq;
    captured(e, &s, &seq);
    if (s == NULL) return AXON_OK;
    axon_stream_wait_completed(s, seq, (e->flags & AXON_EVENT_BLOCKING_SYNC) != 0);
    return axon_stream_take_error(s);
}

struct wait_args {
    axon_stream_t other;
    uint64_t seq;
};

static axon_status_t wait_other_stream(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct wait_args *a = args;
    axon_stream_wait_completed(a->other, a->seq, 0);
    return AXON_OK;
}

axon_status_t axon_stream_wait_event(axon_stream_t s, axon_event_t e) {
    axon_status_t st = axon_stream_check(s, "axon_stream_wait_event");
    if (st == AXON_OK) st = check_event(e, "axon_stream_wait_event");
    if (st != AXON_OK) return st;
    axon_stream_t other;
    uint64_t seq;
    captured(e, &other, &seq);
    /* Nothing to wait for: never recorded, already done, or recorded on s itself (FIFO order covers it). */
    if (other == NULL || other == s || axon_stream_completed(other) >= seq) return AXON_OK;
    struct wait_args a = {other, seq};
    axon_launch_t l = {wait_other_stream, &a, sizeof a, "stream_wait_event", 0};
    return axon_stream_submit(s, &l, AXON_ROUTE_RUNTIME, NULL);
}

axon_status_t axon_event_elapsed_ms(axon_event_t start, axon_event_t end, float *ms) {
    axon_status_t st = check_event(start, "axon_event_elapsed_ms");
    if (st == AXON_OK) st = check_event(end, "axon_event_elapsed_ms");
    if (st != AXON_OK) return st;
    if (ms == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_event_elapsed_ms: ms is NULL");
    if (!(start->flags & AXON_EVENT_TIMING) || !(end->flags & AXON_EVENT_TIMING))
        return axon_fail(AXON_ERROR_MISUSE, "axon_event_elapsed_ms: both events need AXON_EVENT_TIMING");
    uint64_t t[2];
    axon_event_t both[2] = {start, end};
    for (int i = 0; i < 2; i++) {
        axon_event_t e = both[i];
        pthread_mutex_lock(&e->lock);
        int recorded = e->stream != NULL;
        int stamped = recorded && e->stamped_generation == e->generation;
        t[i] = e->time_ns;
        pthread_mutex_unlock(&e->lock);
        if (!recorded)
            return axon_fail(AXON_ERROR_MISUSE, "axon_event_elapsed_ms: the %s event was never recorded",
                             i == 0 ? "start" : "end");
        if (!stamped) return axon_fail(AXON_ERROR_NOT_READY, "axon_event_elapsed_ms: the %s event has not completed",
                                       i == 0 ? "start" : "end");
    }
    *ms = (float)((double)((int64_t)(t[1] - t[0])) / 1e6);
    return AXON_OK;
}

axon_device_t axon_event_device(axon_event_t e) {
    if (e == NULL || e->magic != EVENT_MAGIC) return NULL;
    axon_stream_t s;
    uint64_t seq;
    captured(e, &s, &seq);
    return s ? axon_stream_device(s) : NULL;
}
