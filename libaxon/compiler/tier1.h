/* Tier 1: C generated for a module's fused kernel functions, compiled by the system C compiler, cached on disk.
 *
 * codegen (tier1_codegen.c) turns each `kernel` function made only of elementwise ops into one C function with the
 * signature of axon_tier1_fn; the whole module becomes one translation unit. tier1.c finds a C compiler at run time
 * ($AXON_CC, else cc, gcc, clang on PATH), keys the result by the SHA-256 of the source, the compiler's identity, the
 * flags, the CPU and AXIR's version, reuses a verified disk-cache entry (disk_cache.h) or compiles one (in a
 * background thread, or before returning when AXON_COMPILE_SYNC=1), and publishes each function pointer atomically
 * once loaded. Until then, and forever when there is no compiler or the compile fails, tier 0 keeps running the
 * kernel: tier 1 is only ever a faster copy of the same arithmetic.
 *
 * The generated arithmetic follows tier 0 term by term (the formulas of libaxon/kernels/pointwise_unary.c), computes
 * float16/bfloat16 in float32 and rounds every float16/bfloat16 value to its dtype, as eager mode does, and is
 * compiled with -ffp-contract=off, so tier 0 and tier 1 agree. */
#ifndef AXON_TIER1_H
#define AXON_TIER1_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"

#include "axon/axir.h"
#include "axon/gemm.h"
#include "axon/stream.h"
#include "axir_impl.h"

/* One fused kernel over a row-major iteration space of `rank` dims `sizes` (the kernel's result shape). Operand k is
 * the kernel's parameter k for k < num_params, then its results; ptrs[k] points at its element 0 and
 * strides[k * AXON_MAX_DIMS + d] is its element stride along iteration dim d (0 where it is broadcast). Computes the
 * flat iteration indices [begin, end). */
typedef void (*axon_tier1_fn)(char *const *ptrs, const int64_t *strides, const int64_t *sizes, int rank,
                              int64_t begin, int64_t end);

/* Parameters plus results of one kernel function that tier 1 compiles; larger ones stay on tier 0. */
#define AXON_TIER1_MAX_OPERANDS 32

/* ---- codegen ---- */

/* 1 if codegen can compile kernel function k (every op elementwise or const, dtypes it knows, every result of the
 * iteration shape), else 0 with the reason in why (n bytes). */
AXON_API int axon_tier1_can_generate(const axon_axir_func_t *k, char *why, size_t n);

/* Appends to out the C source of kernel k as the function `symbol`. AXON_ERROR_UNSUPPORTED if
 * axon_tier1_can_generate says no (out unchanged). */
AXON_API axon_status_t axon_tier1_generate(const axon_axir_func_t *k, const char *symbol, axir_buf_t *out);

/* Appends the common prelude of every generated translation unit: includes and kernels/dtype.h's conversions. */
AXON_API void axon_tier1_prelude(axir_buf_t *out);

/* ---- the compiled module ---- */

typedef struct axon_tier1 axon_tier1_t;

/* Generates the module's tier-1 source and starts making it available (cache hit, or a compile in the background;
 * synchronously when sync is 1 or AXON_COMPILE_SYNC=1). Never fails for want of a compiler: *out is always set
 * (NULL only on AXON_ERROR_OUT_OF_MEMORY) and functions simply never become ready. */
AXON_API axon_status_t axon_tier1_start(const axon_axir_module_t *m, int sync, axon_tier1_t **out);

/* The compiled version of the module's kernel function called name, or NULL while it is not (yet) available. */
AXON_API axon_tier1_fn axon_tier1_lookup(const axon_tier1_t *t, const char *kernel_name);

/* Waits for a background compile to finish (for tests and axon-cc). Returns AXON_OK if the module was compiled or
 * loaded from the cache, else the reason (no compiler, compile error: the message names the log file). */
AXON_API axon_status_t axon_tier1_wait(axon_tier1_t *t);

/* The cache key (64 hex digits) and the source of the module; "" / NULL when nothing could be generated. */
AXON_API const char *axon_tier1_key(const axon_tier1_t *t);
AXON_API const char *axon_tier1_source(const axon_tier1_t *t);
/* The shared object's path once available, else NULL. */
AXON_API const char *axon_tier1_library(const axon_tier1_t *t);

/* Joins the background compile, unloads the library. NULL is a no-op. */
AXON_API void axon_tier1_destroy(axon_tier1_t *t);

/* Runs fn over the iteration space of iter (a descriptor giving only the shape) with operands ops[0..nops) (params
 * then results, each in its own shape, broadcast to iter's as NumPy does), parallel over s's device pool. */
AXON_API axon_status_t axon_tier1_launch(axon_stream_t s, axon_tier1_fn fn, int nops, const axon_tensor_t *ops,
                                const axon_tensor_t *iter);

/* fn over iter as the epilogue of a matrix product whose result it reads (axon/gemm.h): fills ctx (at least
 * AXON_GEMM_EPILOGUE_MAX bytes, 16-byte aligned) and *epi; nothing runs until the product is launched with it. */
AXON_API axon_status_t axon_tier1_epilogue(axon_tier1_fn fn, int nops, const axon_tensor_t *ops,
                                           const axon_tensor_t *iter, void *ctx, axon_gemm_epilogue_t *epi);

#endif
