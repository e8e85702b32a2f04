/* Reduction kernels: reductions over any set of dimensions, max/min with indices along one dimension, and cumulative
 * sums and products.
 *
 * Life cycle: fill an axon_reduce_params_t from axon_reduce_params_default() when the op takes parameters (NULL
 * params means the defaults), then launch. Like every kernel (kernels.h), a launch checks its descriptors on the
 * calling thread, enqueues one command on stream s and returns at once; descriptors and params are copied at launch;
 * nothing is enqueued on error, or when the output has no elements.
 *
 * Shapes (keepdim form): `out` has in's ndim; on each reduced dimension its size is 1, on each kept dimension it is
 * in's size. A dimension where in's size is 1 may be read either way. So torch's sum(x, dim=1) of a [4, 5, 6] tensor
 * passes out as [4, 1, 6]; the caller views the result without the reduced dimensions (keepdim=False) itself.
 * A full reduction to a scalar passes out with every size 1. An empty set of reduced dimensions is a reduction over
 * one element each (out[i] = op(in[i])).
 *
 * Compute dtype: inputs are converted on load to the accumulation type of OUT's dtype, as PyTorch's sum(x, dtype=D)
 * converts x to D first: float64 out -> float64; float32, float16 and bfloat16 out -> float32 (a float16/bfloat16
 * result is rounded once, on store); integer and bool out -> int64 (wrapping). So the caller picks out's dtype:
 * int32 summed into int64, bfloat16 mean into bfloat16, float32 into float64 for a float64 sum. Two exceptions read
 * the input's own values: ANY, ALL and COUNT_NONZERO test x != 0 in in's dtype (NaN is nonzero), whatever out is.
 * Integer reductions are exact modulo 2^64; the result is converted to out with the copy rules of kernels.h.
 *
 * Accuracy: floating sums are blocked (64 lanes) and then pairwise (a binary cascade over blocks of 2048), so the
 * error grows like log n, not n: a float32 sum of 1M values is within about 1e-6 relative of the exact sum.
 * Determinism: the split of the work depends only on the shapes, strides and dtypes, never on the thread count, so
 * every result is bitwise identical for any number of threads and from run to run.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, shapes that do not follow the keepdim form (the message shows
 * both), an out-of-range op or dimension, a reduction with no identity over zero elements (AMAX, AMIN, NORM with p =
 * +-inf, the arg reductions; the message names the op, as PyTorch's errors do); UNSUPPORTED for complex tensors
 * (except SUM and MEAN of a complex in into a complex out, which reduce the real and imaginary parts as two real
 * reductions; PROD and LOGSUMEXP into a complex out, in complex128 as c10::complex computes, LOGSUMEXP shifted by
 * the largest real part as PyTorch's composite is; and ANY, ALL and COUNT_NONZERO of a complex in, complex32
 * included, where x != 0 when either part is; complex32 in no other op) and for MEAN, NORM, VAR, STD and LOGSUMEXP
 * into a non-floating out, and for XOR with a complex in or a floating out. */
#ifndef AXON_REDUCE_H
#define AXON_REDUCE_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Reductions. Append only; the name table is checked against the count. */
typedef enum axon_reduce_op {
    AXON_REDUCE_SUM = 0,         /* empty: 0 */
    AXON_REDUCE_PROD,            /* empty: 1 */
    AXON_REDUCE_MEAN,            /* sum / n in the compute dtype; empty: NaN */
    AXON_REDUCE_AMAX,            /* a NaN anywhere gives NaN (torch.amax); empty: INVALID_ARG */
    AXON_REDUCE_AMIN,
    AXON_REDUCE_ANY,             /* 1 if any x != 0; empty: 0. Stored as 0/1 in out's dtype (normally bool) */
    AXON_REDUCE_ALL,             /* 1 if every x != 0; empty: 1 */
    AXON_REDUCE_NORM,            /* p-norm, p = params->p: 0 counts nonzeros, 1 sums |x|, 2 is sqrt(sum x^2),
                                    +inf max |x|, -inf min |x|, else (sum |x|^p)^(1/p); empty: 0 (INVALID_ARG for
                                    p = +-inf) */
    AXON_REDUCE_VAR,             /* sum (x - mean)^2 / max(0, n - correction); blocked two-pass with Chan's merge */
    AXON_REDUCE_STD,             /* sqrt of VAR */
    AXON_REDUCE_LOGSUMEXP,       /* log(sum exp x), shifted by block maxima so it never overflows; empty: -inf */
    AXON_REDUCE_COUNT_NONZERO,   /* number of x != 0, counted in int64 */
    AXON_REDUCE_XOR,             /* bitwise xor of the values as int64, a floating in's values as the bits of
                                    their float64 widening (torch.hash_tensor's); integer or bool out; empty: 0 */
    AXON_REDUCE_NANSUM,          /* SUM with NaN read as 0 (torch.nansum); integers sum as SUM; empty: 0 */
    AXON_REDUCE_OP_COUNT
} axon_reduce_op_t;

/* Parameters. Start from axon_reduce_params_default(). */
typedef struct axon_reduce_params {
    double p;                    /* NORM: the order; default 2 */
    double correction;           /* VAR, STD: Bessel's correction; default 1 (unbiased), 0 for the population */
} axon_reduce_params_t;

static inline axon_reduce_params_t axon_reduce_params_default(void) {
    axon_reduce_params_t p;
    p.p = 2.0;
    p.correction = 1.0;
    return p;
}

/* Reductions along one dimension that also give the index. Append only. */
typedef enum axon_arg_reduce_op {
    AXON_ARG_REDUCE_MAX = 0,     /* values (optional) and indices; the first NaN wins, else the first maximum */
    AXON_ARG_REDUCE_MIN,
    AXON_ARG_REDUCE_ARGMAX,      /* indices only: out_values must be NULL */
    AXON_ARG_REDUCE_ARGMIN,
    AXON_ARG_REDUCE_OP_COUNT
} axon_arg_reduce_op_t;

/* Scans along one dimension. Append only. */
typedef enum axon_cumulative_op {
    AXON_CUMULATIVE_SUM = 0,
    AXON_CUMULATIVE_PROD,
    AXON_CUMULATIVE_LOGSUMEXP,   /* log(sum exp) of the prefix; floating or complex out, PyTorch's log-add-exp in
                                  * float64 or complex128 */
    AXON_CUMULATIVE_OP_COUNT
} axon_cumulative_op_t;

/* Static lower-case names ("logsumexp", "argmax", "cumsum"); "invalid" outside the enums. Never NULL. */
AXON_API const char *axon_reduce_op_name(axon_reduce_op_t op);
AXON_API const char *axon_arg_reduce_op_name(axon_arg_reduce_op_t op);
AXON_API const char *axon_cumulative_op_name(axon_cumulative_op_t op);

/* Enqueue out = op(in) over the dimensions where out's size is 1 (keepdim form, above). params may be NULL.
 * Errors are listed above; nothing is enqueued on error. */
AXON_API axon_status_t axon_kernel_reduce(axon_stream_t s, axon_reduce_op_t op, const axon_tensor_t *out,
                                          const axon_tensor_t *in, const axon_reduce_params_t *params);

/* Enqueue *same = whether a and b hold equal elements everywhere (torch.equal once shapes and dtypes agree): a and b
 * have one dtype (any libaxon dtype) and the same sizes, any strides. Floats compare as numbers (a NaN equals
 * nothing, -0 equals 0; float16 and bfloat16 widened), complex numbers part by part, bools as truth values. `same` is
 * host memory the command writes (the answer goes nowhere but to the host): read it after axon_stream_sync(s).
 * INVALID_ARG for mismatched shapes or dtypes, or a NULL `same`. */
AXON_API axon_status_t axon_kernel_equal(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *b,
                                         unsigned char *same);

/* Enqueue the max or min of in along dimension dim (negative counts from the end), in keepdim form: out_indices
 * (int64) and out_values (any real dtype, converted with the copy rules; may be NULL) have in's shape with size 1
 * at dim. Ties give the first index; a NaN beats every number and the first NaN wins, as in PyTorch. Values compare
 * in float32 (float16, bfloat16, float32), float64 or int64, which is exact. INVALID_ARG for a bad dim, wrong
 * shapes, non-int64 indices, out_values given for ARGMAX/ARGMIN, or size 0 at dim with outputs to fill. */
AXON_API axon_status_t axon_kernel_arg_reduce(axon_stream_t s, axon_arg_reduce_op_t op,
                                              const axon_tensor_t *out_values, const axon_tensor_t *out_indices,
                                              const axon_tensor_t *in, int dim);

/* Enqueue out[..., i, ...] = op(in[..., 0..i, ...]) along dim (negative counts from the end); out has in's shape.
 * Accumulates in float64 for floating out (as PyTorch's CPU kernels do: a sequential scan has no pairwise option,
 * and float64 keeps float32's error at one rounding per element), in complex128 for complex out (as c10::complex
 * computes: LOGSUMEXP with PyTorch's rules for NaN and infinite real parts) and in int64 for integer and bool out
 * (wrapping; LOGSUMEXP: UNSUPPORTED), converting on store. out may be the
 * very same view as in (in-place). INVALID_ARG for a bad dim or shapes, or a complex in with a real out. */
AXON_API axon_status_t axon_kernel_cumulative(axon_stream_t s, axon_cumulative_op_t op, const axon_tensor_t *out,
                                              const axon_tensor_t *in, int dim);

/* Enqueue the running max (op AXON_ARG_REDUCE_MAX, cummax) or min (AXON_ARG_REDUCE_MIN, cummin) along dim:
 * out_values[..., i, ...] = the extreme of in[..., 0..i, ...] and out_indices its position. As in PyTorch the running
 * extreme moves to each element that is NaN, or that is >= (<=) it while it is not NaN, so ties and NaNs give the
 * latest index. out_values has in's shape (any real dtype, converted with the copy rules); out_indices is int64 of
 * in's shape. Values compare in float64 or int64 (exact). INVALID_ARG for another op, a bad dim or shapes. */
AXON_API axon_status_t axon_kernel_cumulative_extreme(axon_stream_t s, axon_arg_reduce_op_t op,
                                                      const axon_tensor_t *out_values,
                                                      const axon_tensor_t *out_indices, const axon_tensor_t *in,
                                                      int dim);

AXON_EXTERN_C_END

#endif
