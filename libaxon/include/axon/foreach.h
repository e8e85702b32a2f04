/* Multi-tensor ("foreach") kernels: one element-wise op applied to every tensor of a list, in one command.
 *
 * A list is an array of n descriptors (axon_tensor_t[n]). An op over lists takes its operand lists index by index:
 * out[i] = op(a[i], b[i], ...), where every a[i], b[i], ... has out[i]'s sizes (no broadcasting). Tensors of one
 * list share one dtype, float32, float64, float16 or bfloat16; lists of one call may differ (out may be float16
 * when a is float32: values are converted on load and rounded once on store). Every tensor must be contiguous:
 * callers describe a dense tensor of another layout as its flat memory when every list shares that layout. out may
 * be the very same memory as an input (the in-place forms); partial overlaps are not detected.
 *
 * Arithmetic is done in float for float32, float16 and bfloat16 outputs and in double for float64 ones (PyTorch's
 * "opmath" types), with the operand numbers rounded to that type first, as PyTorch's CPU kernels do.
 *
 * Like every kernel (kernels.h), a call checks all its descriptors on the calling thread, then enqueues its commands
 * on stream s and returns at once; nothing is enqueued on a failed check or when there is nothing to compute. The
 * descriptors (and any per-tensor numbers) are copied at launch. A list longer than one command's argument block
 * holds (AXON_LAUNCH_MAX_ARGS, about 60 to 120 tensors depending on the op) is split into consecutive commands of
 * as many tensors as fit: one command per chunk of the list, never one per tensor. Inside a command the elements
 * of all its tensors are split over the device's pool as one range.
 *
 * Errors at launch: INVALID_ARG for n < 0, a NULL list, bad descriptors, non-contiguous tensors, a tensor whose
 * sizes differ from out's (the message names the op, the list and the index), or mixed dtypes in one list;
 * UNSUPPORTED for a dtype other than the four float types. */
#ifndef AXON_FOREACH_H
#define AXON_FOREACH_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Element-wise ops. Append only; AXON_FOREACH_OP_COUNT is checked against the name table. */
typedef enum axon_foreach_op {
    /* unary: out = f(a) */
    AXON_FOREACH_NEG = 0,
    AXON_FOREACH_SQRT,
    AXON_FOREACH_ABS,
    AXON_FOREACH_EXP,
    AXON_FOREACH_SIGN,        /* -1, 0 or 1; NaN gives 0 (PyTorch's (0 < a) - (a < 0)) */
    AXON_FOREACH_RECIPROCAL,
    AXON_FOREACH_COPY,        /* a converted to out's dtype */
    /* binary: out = a op b, b a list or a number */
    AXON_FOREACH_ADD,         /* a + alpha * b (sub is add with -alpha) */
    AXON_FOREACH_MUL,
    AXON_FOREACH_DIV,
    AXON_FOREACH_MAXIMUM,     /* NaN in either operand propagates (maximum and clamp_min) */
    AXON_FOREACH_MINIMUM,     /* NaN in either operand propagates (minimum and clamp_max) */
    AXON_FOREACH_POW,         /* a ** b */
    /* ternary: out = a op (b, c) with a weight w, a list or a number */
    AXON_FOREACH_ADDCMUL,     /* a + w * b * c */
    AXON_FOREACH_ADDCDIV,     /* a + w * b / c */
    AXON_FOREACH_LERP,        /* a + w * (b - a), c unused; PyTorch's two-sided formula for |w| >= 0.5 */
    AXON_FOREACH_OP_COUNT
} axon_foreach_op_t;

/* Static name of op ("addcdiv"); "invalid" outside the enum. Never NULL. */
AXON_API const char *axon_foreach_op_name(axon_foreach_op_t op);

/* The second operand of a binary op, or the weight of a ternary one. At most one of tensors, values and number is
 * set; with none, every tensor uses `value`. */
typedef struct axon_foreach_arg {
    const axon_tensor_t *tensors;    /* a list: n tensors, tensors[i] shaped like out[i] */
    const double *values;            /* one number per tensor: n values (a "scalar list") */
    const axon_tensor_t *number;     /* one element of any float dtype, read when the command runs (a 0-dim device
                                      * tensor such as clip_grad_norm_'s coefficient: no host synchronization) */
    double value;                    /* the number for every tensor */
} axon_foreach_arg_t;

/* Enqueue out[i] = op(a[i]) for a unary op, i in [0, n). */
AXON_API axon_status_t axon_foreach_unary(axon_stream_t s, axon_foreach_op_t op, int64_t n, const axon_tensor_t *out,
                                          const axon_tensor_t *a);

/* Enqueue out[i] = a[i] op b (b as its list entry or number for tensor i) for a binary op. alpha scales b for
 * AXON_FOREACH_ADD and must be 1 for the other ops. b must not be NULL. */
AXON_API axon_status_t axon_foreach_binary(axon_stream_t s, axon_foreach_op_t op, int64_t n,
                                           const axon_tensor_t *out, const axon_tensor_t *a,
                                           const axon_foreach_arg_t *b, double alpha);

/* Enqueue out[i] = op(a[i], b[i], c[i]) with weight w for a ternary op. c must be NULL for AXON_FOREACH_LERP and a
 * list otherwise. w must not be NULL. */
AXON_API axon_status_t axon_foreach_ternary(axon_stream_t s, axon_foreach_op_t op, int64_t n,
                                            const axon_tensor_t *out, const axon_tensor_t *a, const axon_tensor_t *b,
                                            const axon_tensor_t *c, const axon_foreach_arg_t *w);

/* Enqueue out[i] = value (every element; zero_ is value 0). */
AXON_API axon_status_t axon_foreach_fill(axon_stream_t s, int64_t n, const axon_tensor_t *out, double value);

/* Enqueue out[i] = the ord-norm of all of a[i]'s elements, ord 1 (sum of |x|), 2 (Euclidean) or INFINITY (max |x|,
 * NaN if any element is NaN). out[i] has one element, of any float dtype (PyTorch's dtype argument). Summed in
 * double, each tensor by one thread in element order, so results do not depend on the thread count; an empty a[i]
 * gives 0. Another ord is UNSUPPORTED. */
AXON_API axon_status_t axon_foreach_norm(axon_stream_t s, int64_t n, const axon_tensor_t *out,
                                         const axon_tensor_t *a, double ord);

AXON_EXTERN_C_END

#endif
