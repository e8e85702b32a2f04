/* Streams, commands, events and copies.
 *
 * A stream is an asynchronous FIFO command queue of one device. The host enqueues (launch, callback, copy, event
 * record or wait) and returns at once; a worker executes the commands in order. Different streams run concurrently.
 * Each device has a default stream (never destroyed) and any number of created ones. Priorities follow CUDA: a lower
 * number is a higher priority; AXON_STREAM_PRIORITY_HIGHEST..AXON_STREAM_PRIORITY_LOWEST. Priorities are kept and
 * reported (frameworks ask for them); the CPU port runs all streams' commands fairly.
 *
 * Errors: a command that fails records its status and message on its stream; the next synchronization point of that
 * stream (axon_stream_sync, axon_stream_query, axon_event_sync of an event recorded on it, axon_device_synchronize)
 * returns the error once and clears it. Other streams are not affected; later commands on the stream still run.
 *
 * Events mark a point in a stream: record, query, synchronize, make another stream wait for it, and, when created
 * with AXON_EVENT_TIMING, measure the time between two of them. An event never recorded counts as complete. */
#ifndef AXON_STREAM_H
#define AXON_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"
#include "axon/pool.h"
#include "axon/runtime.h"
#include "axon/status.h"

AXON_EXTERN_C_BEGIN

#define AXON_STREAM_PRIORITY_LOWEST 0
#define AXON_STREAM_PRIORITY_HIGHEST (-2)

/* What a kernel sees while it runs on a worker. */
typedef struct axon_exec {
    axon_device_t device;
    axon_stream_t stream;
    axon_pool_t pool;            /* the device's workers, for axon_parallel_for */
} axon_exec_t;

/* A kernel: reads its argument block (copied at launch) and returns a status. On failure it leaves a message with
 * axon's per-thread error (internal kernels use axon_fail); the stream reports it prefixed with the kernel's name. */
typedef axon_status_t (*axon_kernel_fn)(const void *args, const axon_exec_t *ex);

#define AXON_LAUNCH_MAX_ARGS 4096    /* argument blocks are copied into the queue; larger ones are INVALID_ARG */

typedef struct axon_launch {
    axon_kernel_fn fn;
    const void *args;            /* copied at launch: the caller may reuse its buffer at once */
    size_t args_size;            /* 0..AXON_LAUNCH_MAX_ARGS; copies keep 16-byte alignment */
    const char *name;            /* static string: the kernel's name for traces and errors; NULL = "kernel" */
    uint64_t bytes;              /* bytes the command moves, for traces and the inline rule below; 0 if unknown */
} axon_launch_t;

/* A host function run in stream order on the stream's worker. */
typedef void (*axon_host_fn)(void *user);

/* Create a stream on d. Priorities outside [HIGHEST, LOWEST] are clamped, as CUDA does. */
AXON_API axon_status_t axon_stream_create(axon_device_t d, int priority, axon_stream_t *out);

/* Wait for s's queued work, then retire it (the handle may be recycled by a later create). NULL is a no-op;
 * the default stream cannot be destroyed (AXON_ERROR_MISUSE). Returns any error s still had pending. */
AXON_API axon_status_t axon_stream_destroy(axon_stream_t s);

/* d's default stream. */
AXON_API axon_status_t axon_stream_default(axon_device_t d, axon_stream_t *out);

AXON_API axon_device_t axon_stream_device(axon_stream_t s);
AXON_API int axon_stream_priority(axon_stream_t s);
/* Identifier unique within the device; the default stream is 0. */
AXON_API uint64_t axon_stream_id(axon_stream_t s);
/* Look up a live stream of d by its identifier (AXON_ERROR_INVALID_ARG if none). */
AXON_API axon_status_t axon_stream_from_id(axon_device_t d, uint64_t id, axon_stream_t *out);

/* Enqueue a kernel. Does not wait for it; may block only when the queue is full (backpressure). Exception: a small
 * kernel (bytes 1..16 KiB) on a stream with nothing pending runs on the calling thread before the call returns, in
 * stream order; its failure is still reported at the stream's next synchronization point. bytes 0: always queued. */
AXON_API axon_status_t axon_stream_launch(axon_stream_t s, const axon_launch_t *l);

/* Enqueue fn(user), run on the stream's worker after everything queued before it. */
AXON_API axon_status_t axon_stream_add_callback(axon_stream_t s, axon_host_fn fn, void *user);

/* Make s wait, without blocking the host, until the work e captured has completed. A never-recorded e is a no-op. */
AXON_API axon_status_t axon_stream_wait_event(axon_stream_t s, axon_event_t e);

/* AXON_OK if all queued work is done, AXON_ERROR_NOT_READY if not, or the pending error of a failed command. */
AXON_API axon_status_t axon_stream_query(axon_stream_t s);

/* Block until the work queued on s so far is done; returns (and clears) s's pending error, if any. */
AXON_API axon_status_t axon_stream_sync(axon_stream_t s);

enum axon_event_flags {
    AXON_EVENT_DEFAULT = 0,
    AXON_EVENT_TIMING = 1u << 0,         /* record timestamps for axon_event_elapsed_ms */
    AXON_EVENT_BLOCKING_SYNC = 1u << 1,  /* axon_event_sync sleeps at once instead of spinning first */
};

/* Create an event of runtime rt. It binds to a device on its first record. */
AXON_API axon_status_t axon_event_create(axon_runtime_t rt, unsigned flags, axon_event_t *out);

/* Release e. NULL is a no-op. Safe while a record of e is still queued. */
AXON_API void axon_event_destroy(axon_event_t e);

/* Capture the work queued on s so far; a new record replaces the previous one. */
AXON_API axon_status_t axon_event_record(axon_event_t e, axon_stream_t s);

/* AXON_OK if the captured work is done (or e was never recorded), AXON_ERROR_NOT_READY otherwise. */
AXON_API axon_status_t axon_event_query(axon_event_t e);

/* Block until the captured work is done. Reports (and clears) the recording stream's pending error. */
AXON_API axon_status_t axon_event_sync(axon_event_t e);

/* Milliseconds between two completed records of timing events. AXON_ERROR_NOT_READY if either has not completed,
 * AXON_ERROR_MISUSE if either lacks AXON_EVENT_TIMING or was never recorded. */
AXON_API axon_status_t axon_event_elapsed_ms(axon_event_t start, axon_event_t end, float *ms);

/* The device e was last recorded on, or NULL. */
AXON_API axon_device_t axon_event_device(axon_event_t e);

typedef enum axon_copy_kind {
    AXON_COPY_HOST_TO_DEVICE = 0,
    AXON_COPY_DEVICE_TO_HOST = 1,
    AXON_COPY_DEVICE_TO_DEVICE = 2,   /* also between two devices of the same runtime */
    AXON_COPY_KIND_COUNT
} axon_copy_kind_t;

/* Copy n contiguous bytes in the order of stream s. Device pointers must lie inside device memory (of s's device,
 * or for DEVICE_TO_DEVICE of any device of the runtime); host pointers must not. A pinned host buffer
 * (axon_host_alloc) is copied asynchronously; pageable host memory is copied before the call returns, after the
 * stream's earlier work, as CUDA does. */
AXON_API axon_status_t axon_memcpy_async(void *dst, const void *src, size_t n, axon_copy_kind_t kind,
                                         axon_stream_t s);

/* Copy and wait: axon_memcpy_async, then axon_stream_sync(s). */
AXON_API axon_status_t axon_memcpy(void *dst, const void *src, size_t n, axon_copy_kind_t kind, axon_stream_t s);

/* Fill n bytes of device memory with `value` in stream order. */
AXON_API axon_status_t axon_memset_async(void *dst, int value, size_t n, axon_stream_t s);

AXON_EXTERN_C_END

#endif
