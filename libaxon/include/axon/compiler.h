/* The Axon graph compiler: AXIR in, a program out; a program runs a whole graph with one call.
 *
 * axon_compile runs the passes (verify, canonicalize, dead-code elimination, constant folding, view propagation,
 * fusion, memory planning, scheduling) over the module's entry function and builds a tier-0 program: a list of steps,
 * each a libaxon kernel or a fused group, over one workspace arena whose layout the memory plan fixed (symbolic sizes
 * are evaluated per call, so one program serves every binding of its symbols). With opts->tier1, it also starts tier 1:
 * C generated for the fused groups, compiled in the background (AXON_COMPILE_SYNC=1: before axon_compile returns) or
 * loaded from the disk cache; each fused group switches from tier 0 to its tier-1 function once that is loaded.
 *
 * Calling protocol, per call of the compiled graph:
 *   1. axon_program_prepare(inputs) binds the symbols from the inputs' shapes, checks the inputs against the
 *      parameter types (dtype, rank, static sizes, consistent symbols), and reports the outputs' shapes and the
 *      workspace size;
 *   2. the caller allocates the outputs (contiguous) and the workspace, both device memory (or host memory for a
 *      program run on the host);
 *   3. axon_program_run enqueues the steps on a stream.
 * Inputs may have any strides. A program is immutable after compile: prepare and run may be called from several
 * threads at once. */
#ifndef AXON_COMPILER_H
#define AXON_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#include "axon/axir.h"
#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

typedef struct axon_program axon_program_t;

/* Called after each pass with the pass's name and the module's text when print_after_all is set. */
typedef void (*axon_compile_print_fn)(void *user, const char *pass, const char *text);

typedef struct axon_compile_options {
    const char *entry;                   /* the function to compile; NULL = "main" */
    int fuse;                            /* 1: fuse elementwise/reduction chains and GEMM epilogues (default) */
    int print_after_all;                 /* 1: call print after every pass */
    axon_compile_print_fn print;
    void *print_user;
    int tier1;                           /* 1: also compile fused groups to C (tier 1, in the background; default) */
} axon_compile_options_t;

static inline axon_compile_options_t axon_compile_options_default(void) {
    axon_compile_options_t o = {NULL, 1, 0, NULL, NULL, 1};
    return o;
}

/* Compiles m (consumed: the program owns it from now on, also on failure, when it is destroyed). On failure returns
 * AXON_ERROR_INVALID_ARG (malformed module, located in diag) or AXON_ERROR_UNSUPPORTED (an op or dtype tier 0 cannot
 * run, named in diag) and *out is NULL. */
AXON_API axon_status_t axon_compile(axon_axir_module_t *m, const axon_compile_options_t *opts, axon_program_t **out,
                                    axon_axir_diag_t *diag);

/* 1 if tier 0 runs op with dtype: the result's dtype, or the operands' for comparisons, isnan, logical_not and
 * where's branches, the weight's for embedding. Lets a front end send only what compiles. Cannot fail. */
AXON_API int axon_compile_supports(axon_axir_op_t op, axon_dtype_t dtype);

/* axon_axir_parse then axon_compile. */
AXON_API axon_status_t axon_compile_text(const char *text, size_t len, const axon_compile_options_t *opts,
                                         axon_program_t **out, axon_axir_diag_t *diag);

/* Releases p. NULL is a no-op. Runs still queued on a stream keep it alive until they have executed. */
AXON_API void axon_program_destroy(axon_program_t *p);

AXON_API int axon_program_num_inputs(const axon_program_t *p);
AXON_API int axon_program_num_outputs(const axon_program_t *p);
/* The compiled module after all passes (owned by p). */
AXON_API const axon_axir_module_t *axon_program_module(const axon_program_t *p);

/* Step 1 of a call. inputs: num_inputs descriptors (data may be NULL here). Fills outputs[0..num_outputs) with
 * dtype, ndim, sizes and contiguous strides (data NULL) and *workspace_bytes. AXON_ERROR_INVALID_ARG, with a message
 * naming the input and dimension, if the inputs do not match the parameters or a symbol gets two values. */
AXON_API axon_status_t axon_program_prepare(const axon_program_t *p, int num_inputs, const axon_tensor_t *inputs,
                                            int num_outputs, axon_tensor_t *outputs, size_t *workspace_bytes);

/* Step 3: enqueues the program's steps on s. outputs as prepare described them, with data set; workspace at least
 * the prepared size, 64-byte aligned. Returns at once; errors during execution surface at the stream's next
 * synchronization point, as for any kernel. */
AXON_API axon_status_t axon_program_run(const axon_program_t *p, axon_stream_t s, int num_inputs,
                                        const axon_tensor_t *inputs, int num_outputs, const axon_tensor_t *outputs,
                                        void *workspace, size_t workspace_bytes);

/* Random numbers. A program with `dropout` nodes draws from a Philox stream: draw k (the node's `draw` attribute) takes
 * the blocks that an eager dropout kernel would after draws 0..k-1, so a caller that advances its generator by
 * axon_program_philox_blocks and passes the offset it had gets eager mode's masks. */
AXON_API int axon_program_num_draws(const axon_program_t *p);
/* The Philox blocks one call with these inputs draws in all (0 without draws). Errors as prepare. */
AXON_API axon_status_t axon_program_philox_blocks(const axon_program_t *p, int num_inputs,
                                                  const axon_tensor_t *inputs, uint64_t *blocks);
/* axon_program_run for any program: draw 0 starts at Philox block `offset` of `seed`. (axon_program_run refuses a
 * program with draws: INVALID_ARG.) */
AXON_API axon_status_t axon_program_run_philox(const axon_program_t *p, axon_stream_t s, int num_inputs,
                                               const axon_tensor_t *inputs, int num_outputs,
                                               const axon_tensor_t *outputs, void *workspace, size_t workspace_bytes,
                                               uint64_t seed, uint64_t offset);

/* How many of p's fused groups run as tier-1 C now (0 until the background compile is done, and without one). */
AXON_API int axon_program_tier1_ready(const axon_program_t *p);
/* Waits for p's tier-1 compile. AXON_OK once loaded; otherwise why not (no fused group, no C compiler, the compile
 * failed: the message names its log). Never needed for correctness: tier 0 runs meanwhile. */
AXON_API axon_status_t axon_program_wait_tier1(const axon_program_t *p);

/* ---- tier 1, offline ---------------------------------------------------------------------------------------- */

/* What axon_compile_offline made. Free with axon_offline_result_free. */
typedef struct axon_offline_result {
    int num_kernels;                     /* kernel functions after the passes */
    int num_compiled;                    /* of those, how many tier 1 compiled (the rest run on tier 0) */
    char key[65];                        /* the cache key, "" if nothing was generated */
    char *library;                       /* the cache entry's path (malloc'd), NULL if nothing was compiled */
    char *source;                        /* the generated C (malloc'd), NULL if nothing was generated */
    char *module_text;                   /* the AXIR after all passes (malloc'd) */
} axon_offline_result_t;

/* Parses and compiles AXIR text as axon_compile does, then compiles its tier 1 now, into the disk cache that a later
 * process running the same program will hit (axon-cc; no device needed). AXON_ERROR_INVALID_ARG for malformed text
 * (located in diag), AXON_ERROR_CONFIG / AXON_ERROR_UNSUPPORTED when no compiler or the compile fails (message
 * says why; result still holds the module text and source). */
AXON_API axon_status_t axon_compile_offline(const char *text, size_t len, const axon_compile_options_t *opts,
                                            axon_offline_result_t *result, axon_axir_diag_t *diag);
AXON_API void axon_offline_result_free(axon_offline_result_t *result);

AXON_EXTERN_C_END

#endif
