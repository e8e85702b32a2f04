/* The hardware port: the one interface between libaxon and what executes.
 *
 * Everything above this table (allocator, streams, events, the PyTorch device) is port-independent. A port fills in
 * one axon_hw_ops_t and passes it in axon_config_t.hw with its own context in hw_ctx. Two ports ship: the CPU port
 * (the default: memory is mapped host RAM, commands run on the device's worker threads) and the null port (memory is
 * host RAM, kernels and copies are recorded but not run), which the scheduler and stream tests use.
 *
 * Slots marked optional may be NULL; the comment says what NULL means. Commands reach execute/copy/fill on a stream's
 * worker thread, one at a time per stream, possibly concurrently across streams. */
#ifndef AXON_HW_H
#define AXON_HW_H

#include <stddef.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/stream.h"

AXON_EXTERN_C_BEGIN

#define AXON_HW_ABI_VERSION 1

struct axon_hw_ops {
    int abi_version;             /* = AXON_HW_ABI_VERSION; a mismatch fails axon_runtime_create */
    const char *name;            /* short port name for properties and messages */

    /* Map n bytes of device memory (n is a multiple of the page size) for device `device`; the start is page-aligned.
     * Required. Returns AXON_ERROR_OUT_OF_MEMORY when the system refuses. */
    axon_status_t (*mem_map)(void *ctx, int device, size_t n, void **out);
    /* Unmap what mem_map returned. Required. */
    void (*mem_unmap)(void *ctx, int device, void *p, size_t n);
    /* Allow (1) or forbid (0) host access to [p, p+n). Optional: NULL = strict mode is unsupported by this port. */
    axon_status_t (*mem_protect)(void *ctx, void *p, size_t n, int host_access);

    /* Run one kernel launch. Required. */
    axon_status_t (*execute)(void *ctx, const axon_launch_t *l, const axon_exec_t *ex);
    /* Copy n bytes. Required. */
    axon_status_t (*copy)(void *ctx, void *dst, const void *src, size_t n, axon_copy_kind_t kind,
                          const axon_exec_t *ex);
    /* Fill n bytes of device memory. Required. */
    axon_status_t (*fill)(void *ctx, void *dst, int value, size_t n, const axon_exec_t *ex);
};

/* The CPU port. Its hw_ctx is NULL (the defaults) or an axon_hw_cpu_options_t; when both cfg.hw and cfg.hw_ctx are
 * NULL the runtime passes options made from axon_config_t (hugepages). */
AXON_API const axon_hw_ops_t *axon_hw_cpu(void);

typedef struct axon_hw_cpu_options {
    int hugepages; /* nonzero: madvise(MADV_HUGEPAGE) on segments of 2 MiB and more */
} axon_hw_cpu_options_t;

/* The null port: hw_ctx must be an axon_hw_null_t from axon_hw_null_create (or NULL to record nothing). */
AXON_API const axon_hw_ops_t *axon_hw_null(void);

typedef struct axon_hw_null *axon_hw_null_t;
AXON_API axon_status_t axon_hw_null_create(axon_hw_null_t *out);
AXON_API void axon_hw_null_destroy(axon_hw_null_t n);
/* Submissions recorded so far (kernels, copies and fills, in the order the workers saw them). */
AXON_API size_t axon_hw_null_count(axon_hw_null_t n);
/* Name of submission i ("copy", "fill", or the kernel's name), NULL past the end. */
AXON_API const char *axon_hw_null_name(axon_hw_null_t n, size_t i);

AXON_EXTERN_C_END

#endif
