/* Matrix multiplication: out = alpha * (a @ b) + beta * out + bias_scale * bias, for mm, bmm, addmm and linear.
 *
 * Life cycle: fill an axon_gemm_params_t from axon_gemm_params_default() (NULL params means the defaults), then
 * launch. Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command
 * on stream s and returns at once; descriptors (bias included) are copied at launch, the memory they point at must
 * stay alive until the command has run.
 *
 * Shapes: 2-D a (m, k), b (k, n), out (m, n); or 3-D a (bsz, m, k), b (bsz, k, n), out (bsz, m, n). Strides may be
 * anything, 0 included for a and b (a batch stride of 0 broadcasts one matrix over the batch). A row-major or
 * column-major matrix (one stride 1, the other at least the row length; a transposed view is one) goes to the
 * library as it is, with a transpose flag; any other layout is first copied into a contiguous host scratch buffer
 * that the command mallocs on the stream's worker and frees before it ends (never device memory). out must not have
 * a stride of 0 on a dimension of size > 1, and must not overlap a, b or bias. bias, if given, is 1-D of size n (any
 * stride) and is added to every row of every batch.
 *
 * Semantics: beta == 0 means out is not read (NaN or garbage in out is ignored, as in BLAS). k == 0 gives
 * out = beta * out + bias_scale * bias. An out with no elements enqueues nothing.
 *
 * Dtypes: a, b, out and bias share one dtype.
 *   - Small floating products first, whatever the dtype: a whole product of at most 512 multiply-adds (2048 for
 *     bfloat16 and float16) over its batch, and each matrix of at most 512 of a larger float32 or float64 batch,
 *     run as plain loops (each element's products summed in order of k; 16-bit in float32, rounded once), where a
 *     library call's own set-up costs more than the product. Not when out shares memory with a or b.
 *   - float32 and float64: the BLAS library libaxon was built with (MKL, AXON_HAVE_MKL, else OpenBLAS,
 *     AXON_HAVE_OPENBLAS), called single-threaded from each participant of the device's worker pool on its own
 *     block of out; without either a portable blocked C GEMM. float32 exceptions, chosen by measurement
 *     (gemm_backend.c, gemm.c): products of up to 16 rows (or columns) outside the library's fast small-matrix path
 *     run libaxon's few-row kernel (gemm_skinny.c: B read once as stored, AVX-512 or vectorized C chosen at run
 *     time); mid-size products go to libaxon's AVX-512 kernel (gemm_avx512.c; with MKL only single matrices with B
 *     stored transposed, a Linear's weight, from 2^25 multiply-adds) or to oneDNN's float32 brgemm kernels (as
 *     bfloat16 below; with MKL only with B stored transposed, up to 2^27). Sums may be ordered differently for
 *     another thread count, so results with 1 and 2 threads agree within rounding, not bit for bit.
 *   - bfloat16 single matrices (no batch) on a CPU with AMX-BF16 whose kernel grants the tile state: libaxon's own
 *     AMX kernels (gemm_amx.c) for 32 or more rows, columns and depth past 128^3 multiply-adds (but not those with
 *     more rows than columns from 256^3 to 2^27), and for 2 to 64 rows times B stored (n, k), a Linear's weight,
 *     with k a multiple of 32 and n of 16; float32 accumulation, alpha, beta and bias applied in float32, rounded
 *     once on store; the same bits for any thread count.
 *   - bfloat16 and float16 with oneDNN (AXON_HAVE_ONEDNN; Debian's libdnnl-dev): oneDNN's matmul primitive on the
 *     operands as they are (bf16 dot or AMX instructions), float32 accumulation, alpha, beta and bias applied in
 *     float32, rounded once on store. Each pool participant makes single-threaded calls on its own block of out, so
 *     results are the same run after run for a given thread count. Only oneDNN's brgemm kernels are taken (its
 *     reference kernels are slow, and its gemm-based ones fail inside a PyTorch process; gemm_onednn.c says why).
 *     oneDNN 2.6 has no float16 CPU matmul, and its brgemm kernels want out row-major and dense; what they do not
 *     take (float16, a padded or column-major out, some small or odd layouts), k == 0, and every bf16/f16 product
 *     in a build without oneDNN take the next path.
 *   - bfloat16 and float16 otherwise: converted to float32 scratch, multiplied in float32 as above, rounded once on
 *     store (PyTorch also accumulates these in float32).
 *   - int8, uint8, int16, int32, int64: a plain loop accumulating in int64 and wrapping to out's dtype, as PyTorch's
 *     CPU mm does; alpha, beta and bias_scale must then be whole numbers.
 *   - complex64 and complex128: the library's cgemm and zgemm (a plain loop without one); alpha, beta and
 *     bias_scale are real.
 *   - bool: UNSUPPORTED.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, a mismatched shape (the message names every shape), mixed
 * dtypes, a bias of the wrong shape, non-integral scalars for an integer dtype; UNSUPPORTED for bool, or a
 * dimension above 2^31 - 1. Errors while running: OUT_OF_MEMORY if the host scratch cannot be allocated (out is
 * then unchanged), or if a oneDNN call fails (out may then be partly written; that shape is not sent to oneDNN
 * again). */
#ifndef AXON_GEMM_H
#define AXON_GEMM_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* An epilogue: work the command does on out's elements once they are final, while they are still in cache (a
 * compiled program's elementwise group that reads the product). fn(ctx, begin, end) covers elements [begin, end) of
 * out in row-major order over its (batch, m, n) shape; ranges are whole rows and never overlap, and may run on any of
 * the device's threads in any order, each range once, only after the product succeeded. ctx is ctx_size bytes
 * (at most AXON_GEMM_EPILOGUE_MAX), copied at launch. */
#define AXON_GEMM_EPILOGUE_MAX 8192
typedef void (*axon_gemm_epilogue_fn)(const void *ctx, int64_t begin, int64_t end);
typedef struct axon_gemm_epilogue {
    axon_gemm_epilogue_fn fn;
    const void *ctx;
    size_t ctx_size;
} axon_gemm_epilogue_t;

typedef struct axon_gemm_params {
    double alpha;                /* scales a @ b; default 1 */
    double beta;                 /* scales out; default 0, and 0 means out is not read */
    const axon_tensor_t *bias;   /* NULL = no bias; else 1-D of size n, copied at launch */
    double bias_scale;           /* scales bias; default 1 (addmm's beta when its input is a broadcast vector) */
    const axon_gemm_epilogue_t *epilogue;   /* NULL = none */
} axon_gemm_params_t;

/* alpha 1, beta 0, no bias, bias_scale 1, no epilogue. Cannot fail. */
static inline axon_gemm_params_t axon_gemm_params_default(void) {
    axon_gemm_params_t p = {1.0, 0.0, NULL, 1.0, NULL};
    return p;
}

/* out = alpha * (a @ b) + beta * out + bias_scale * bias on stream s; p NULL = the defaults. Enqueues one command
 * and returns; see above for shapes, dtypes and errors. Nothing is enqueued when it fails. */
AXON_API axon_status_t axon_kernel_matmul(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *a,
                                          const axon_tensor_t *b, const axon_gemm_params_t *p);

AXON_EXTERN_C_END

#endif
