/* Tracing: one record per executed command (name, device, stream, start, end, bytes), kept in the runtime while
 * tracing is on, and exported as Chrome trace JSON (chrome://tracing, Perfetto). The profiler reads these records.
 * Recording costs one clock read and one short locked append per command; when off it costs one load. At most
 * AXON_TRACE_CAPACITY records are kept; later ones are counted as dropped. */
#ifndef AXON_TRACE_H
#define AXON_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"

AXON_EXTERN_C_BEGIN

#define AXON_TRACE_CAPACITY (1u << 20)

typedef struct axon_trace_record {
    const char *name;            /* static string from the command */
    int device;
    uint64_t stream;             /* axon_stream_id */
    uint64_t start_ns;           /* CLOCK_MONOTONIC, as axon_clock_ns */
    uint64_t end_ns;
    uint64_t bytes;
} axon_trace_record_t;

/* Monotonic clock in nanoseconds, the clock of every timestamp libaxon reports. */
AXON_API uint64_t axon_clock_ns(void);

/* Turn recording on (nonzero) or off for rt. Records already kept stay. */
AXON_API axon_status_t axon_trace_enable(axon_runtime_t rt, int on);
AXON_API int axon_trace_enabled(axon_runtime_t rt);

/* Drop every record kept so far and zero the dropped count. */
AXON_API axon_status_t axon_trace_clear(axon_runtime_t rt);

/* Number of records kept, and of records dropped because the buffer was full. */
AXON_API size_t axon_trace_count(axon_runtime_t rt);
AXON_API size_t axon_trace_dropped(axon_runtime_t rt);

/* Copy up to n records starting at `first` into out; *got says how many. */
AXON_API axon_status_t axon_trace_read(axon_runtime_t rt, size_t first, size_t n, axon_trace_record_t *out,
                                       size_t *got);

/* Write the kept records to path as Chrome trace JSON ("traceEvents", one "X" event per command, pid = device,
 * tid = stream). Fails with AXON_ERROR_INVALID_ARG naming the path if it cannot be written. */
AXON_API axon_status_t axon_trace_export_chrome(axon_runtime_t rt, const char *path);

AXON_EXTERN_C_END

#endif
