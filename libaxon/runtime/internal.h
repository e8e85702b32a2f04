/* Struct layouts and functions shared inside libaxon; never installed, never included by the glue.
 *
 * Ownership: a runtime owns its devices (an array), the pinned host pool, the trace buffer and the strict-mode
 * registry. A device owns its worker pool, its caching allocator and its streams. Each of these lives in its own
 * .c file, which alone knows its struct's fields; this header shows only the runtime and device structs that all of
 * them navigate. */
#ifndef AXON_INTERNAL_H
#define AXON_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "axon/axon.h"

/* ---- errors (error.c) ---- */

/* Set this thread's error to s with a printf-style message and return s, so callers write
 * `return axon_fail(AXON_ERROR_INVALID_ARG, "stream is NULL");`. The public axon_set_error under its internal name. */
#define axon_fail axon_set_error
axon_status_t axon_vfail(axon_status_t s, const char *fmt, va_list ap);

/* Checks our own invariants, in release builds too; user input is checked with statuses, never asserts. */
#define AXON_ASSERT(cond) \
    ((cond) ? (void)0 : axon_assert_fail(#cond, __FILE__, __LINE__))
__attribute__((noreturn)) void axon_assert_fail(const char *expr, const char *file, int line);

/* memcpy of n bytes between non-overlapping ranges, avoiding a slow case of glibc's on AMD Zen 3 (move_bytes.c):
 * for moves of tensor data (copies, cat, raw device copies). */
void axon_move_bytes(void *dst, const void *src, size_t n);

/* ---- the runtime and its devices (runtime.c) ---- */

struct axon_device {
    axon_runtime_t rt;
    int index;
    axon_device_props_t props;
    const axon_hw_ops_t *hw;
    void *hw_ctx;
    axon_pool_t pool;               /* the device's worker threads */
    struct axon_mempool *mem;       /* mempool.c */
    struct axon_stream_set *streams;/* stream.c */
};

struct axon_runtime {
    axon_config_t cfg;
    int ndev;
    struct axon_device *devs;       /* ndev devices */
    size_t page_size;
    struct axon_hostpool *host;     /* hostpool.c */
    struct axon_trace *trace;       /* trace.c */
    struct axon_strict *strict;     /* strict.c; NULL unless cfg.strict */
    axon_hw_cpu_options_t cpu_options; /* the CPU port's hw_ctx when cfg.hw is NULL */
};

/* CPUs this process may run on (its affinity mask, else the online count). */
int axon_usable_cores(void);

/* Parse a byte size: digits with an optional K/M/G/T suffix (powers of 1024, optional trailing B/iB). */
axon_status_t axon_parse_size(const char *name, const char *text, size_t *out);

/* ---- caching allocator (mempool.c) ---- */

axon_status_t axon_mempool_create(axon_device_t d, struct axon_mempool **out);
/* Unmaps every segment, live allocations included. NULL is a no-op. */
void axon_mempool_destroy(struct axon_mempool *m);

/* ---- pinned host allocator (hostpool.c) ---- */

axon_status_t axon_hostpool_create(axon_runtime_t rt, struct axon_hostpool **out);
void axon_hostpool_destroy(struct axon_hostpool *h);

/* ---- strict mode (strict.c) ----
 * Device memory is kept inaccessible to the host; the runtime opens it while one of its own commands or copies runs
 * (enter/leave nest and count across threads) and closes it when none does. All are no-ops when rt->strict is NULL. */

axon_status_t axon_strict_create(axon_runtime_t rt, struct axon_strict **out);
void axon_strict_destroy(struct axon_strict *s);
/* A segment was mapped / is about to be unmapped. */
axon_status_t axon_strict_add(axon_runtime_t rt, void *p, size_t n);
void axon_strict_remove(axon_runtime_t rt, void *p, size_t n);
void axon_strict_enter(axon_runtime_t rt);
void axon_strict_leave(axon_runtime_t rt);

/* ---- streams (stream.c) ---- */

/* Create d's stream set and its default stream / stop every stream's worker after draining it and free them all. */
axon_status_t axon_streams_init(axon_device_t d);
void axon_streams_shutdown(axon_device_t d);

/* How a command is executed: through the port (kernels), or by calling its fn directly (runtime commands: event
 * marks and waits, callbacks, copies, which call the port themselves). */
enum axon_cmd_route { AXON_ROUTE_PORT = 0, AXON_ROUTE_RUNTIME = 1 };

/* Enqueue a command on s; l is validated by the caller. *seq (if not NULL) gets the command's sequence number. */
axon_status_t axon_stream_submit(axon_stream_t s, const axon_launch_t *l, enum axon_cmd_route route, uint64_t *seq);
/* AXON_OK if s looks like a live stream handle, else AXON_ERROR_INVALID_ARG / MISUSE naming `fn`. */
axon_status_t axon_stream_check(axon_stream_t s, const char *fn);

/* Sequence numbers: each command gets the next number at enqueue; completed only grows. Lock-free reads. */
uint64_t axon_stream_enqueued(axon_stream_t s);
uint64_t axon_stream_completed(axon_stream_t s);
/* Block the calling thread until s has completed command `seq`. Spins briefly first unless `sleep_at_once`. */
void axon_stream_wait_completed(axon_stream_t s, uint64_t seq, int sleep_at_once);
/* If s has a pending error, set it as this thread's error, clear it on s and return it; else AXON_OK. */
axon_status_t axon_stream_take_error(axon_stream_t s);

/* ---- tracing (trace.c) ---- */

axon_status_t axon_trace_create(int on, struct axon_trace **out);
void axon_trace_destroy(struct axon_trace *t);
/* Cheap check made before each command. */
int axon_trace_is_on(const struct axon_trace *t);
void axon_trace_add(struct axon_trace *t, const axon_trace_record_t *r);

#endif
