/* The runtime and its devices.
 *
 * A runtime owns a fixed set of logical devices. Each device has a memory capacity (a budget on host RAM, the way a
 * GPU has HBM), a caching allocator, a default stream plus any streams created on it, and a pool of worker threads
 * that executes its kernels. Life cycle: fill an axon_config_t (axon_config_from_env gives the defaults and reads
 * AXON_* variables), axon_runtime_create, use devices, axon_runtime_destroy. axon_runtime_default returns one
 * process-wide runtime built from the environment, created on first use and never destroyed; the PyTorch glue uses it.
 * Tests create their own runtimes with explicit configurations. */
#ifndef AXON_RUNTIME_H
#define AXON_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"
#include "axon/status.h"

AXON_EXTERN_C_BEGIN

typedef struct axon_runtime *axon_runtime_t;
typedef struct axon_device *axon_device_t;
typedef struct axon_stream *axon_stream_t;
typedef struct axon_event *axon_event_t;
typedef struct axon_hw_ops axon_hw_ops_t;

#define AXON_MAX_DEVICES 64

typedef struct axon_config {
    int device_count;            /* logical devices, 1..AXON_MAX_DEVICES */
    size_t memory_capacity;      /* bytes of device memory per device, > 0 */
    int threads_per_device;      /* worker threads per device, >= 1 */
    int strict;                  /* nonzero: device memory is protected against host access outside the runtime */
    int trace;                   /* nonzero: record every command from the start (see trace.h) */
    const axon_hw_ops_t *hw;     /* the port that executes; NULL = the CPU port (axon_hw_cpu) */
    void *hw_ctx;                /* passed to every hw call; the port's own state */
    int hugepages;               /* nonzero: the CPU port asks for transparent huge pages on big segments */
    int alloc_guard;             /* nonzero: every allocation its own mapping, ending at an inaccessible page */
} axon_config_t;

/* Fill *out with the defaults, then apply the environment:
 *   AXON_DEVICE_COUNT     logical devices (default 1, or LOCAL_WORLD_SIZE under torchrun)
 *   AXON_DEVICE_MEMORY    capacity per device: bytes or with a K/M/G/T suffix (default: 3/4 of physical memory,
 *                         shared among the devices)
 *   AXON_THREADS          worker threads per device (default: usable cores / LOCAL_WORLD_SIZE, at least 1)
 *   AXON_STRICT           1 = strict mode (default 0)
 *   AXON_TRACE            1 = trace from the start (default 0)
 *   AXON_HUGEPAGES        1 = advise transparent huge pages for device memory (default 0, as PyTorch's CPU
 *                         allocator: where the kernel compacts memory on such faults, first touches can stall)
 *   AXON_ALLOC_GUARD      1 = debugging allocator (default 0): each allocation gets its own mapping whose end (the
 *                         size rounded to AXON_MEM_ALIGNMENT) meets an inaccessible page, nothing is reused, and
 *                         freed memory is made inaccessible once no stream uses it (kept so for the last 1024
 *                         frees, up to 256 MiB, then unmapped), so a kernel writing or reading past a tensor's end,
 *                         or touching freed memory, faults at the instruction that does it. Slow.
 * A malformed value fails with AXON_ERROR_CONFIG naming the variable and the value; *out then holds the defaults. */
AXON_API axon_status_t axon_config_from_env(axon_config_t *out);

/* Create a runtime with cfg's devices and start their workers. On failure *out is NULL and nothing is left behind. */
AXON_API axon_status_t axon_runtime_create(const axon_config_t *cfg, axon_runtime_t *out);

/* Wait for all queued work, then release every device, stream, event pool and memory. NULL is a no-op. Memory still
 * allocated is released too; handles into this runtime are invalid afterwards. */
AXON_API void axon_runtime_destroy(axon_runtime_t rt);

/* The process-wide runtime, created from the environment on the first call (thread-safe). A failed creation is
 * remembered and reported, with the same status and message, by every later call. */
AXON_API axon_status_t axon_runtime_default(axon_runtime_t *out);

/* Number of devices of rt; 0 for NULL. Cannot fail. */
AXON_API int axon_device_count(axon_runtime_t rt);

/* Device `index` of rt. AXON_ERROR_INVALID_ARG names the valid range when index is out of it. */
AXON_API axon_status_t axon_device_get(axon_runtime_t rt, int index, axon_device_t *out);

/* Index of d within its runtime. */
AXON_API int axon_device_index(axon_device_t d);

/* The runtime that owns d. */
AXON_API axon_runtime_t axon_device_runtime(axon_device_t d);

/* CPU features a device's kernels may use, detected at run time. */
enum axon_cpu_feature {
    AXON_CPU_AVX2 = 1u << 0,
    AXON_CPU_FMA = 1u << 1,
    AXON_CPU_AVX512F = 1u << 2,
    AXON_CPU_AVX512BW = 1u << 3,
    AXON_CPU_AVX512VNNI = 1u << 4,
    AXON_CPU_AVX512BF16 = 1u << 5,
    AXON_CPU_AVX512FP16 = 1u << 6,
    AXON_CPU_AMX = 1u << 7,
    AXON_CPU_F16C = 1u << 8,
    AXON_CPU_AMX_INT8 = 1u << 9,   /* AMX tiles' int8 products (also what PyTorch checks before oneDNN's float8) */
    AXON_CPU_AMX_FP16 = 1u << 10,  /* and float16 products */
};

/* Name of one feature bit ("avx512_bf16"), NULL if bit is not exactly one known feature. */
AXON_API const char *axon_cpu_feature_name(unsigned bit);

typedef struct axon_device_props {
    char name[64];               /* "axon:0 (cpu)" */
    char cpu_model[128];         /* from /proc/cpuinfo, "" if unknown */
    char port[32];               /* the hw port's name: "cpu", "null", ... */
    int index;
    int threads;                 /* worker threads of this device */
    int strict;                  /* strict mode active */
    unsigned cpu_features;       /* enum axon_cpu_feature bits */
    size_t total_memory;         /* capacity in bytes */
    size_t page_size;
    int major, minor;            /* capability, like CUDA's compute capability: the runtime's ABI version */
} axon_device_props_t;

/* Properties of d. Cannot fail for a valid device. */
AXON_API axon_status_t axon_device_properties(axon_device_t d, axon_device_props_t *out);

/* Block until every stream of d has finished the work queued so far. Reports the first error a command on any of
 * d's streams raised since the last synchronization (and clears it). */
AXON_API axon_status_t axon_device_synchronize(axon_device_t d);

AXON_EXTERN_C_END

#endif
