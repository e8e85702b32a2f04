/* Loss kernels: the negative log-likelihood loss (nll_loss, the second half of cross_entropy) and its backward.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Every tensor must be contiguous (the caller makes a contiguous copy of a strided view first).
 *
 * Layout: the input (log-probabilities) is [N, C, K]: N samples, C classes, K positions per sample (K = 1 for
 * PyTorch's [N, C] nll_loss, the product of d1... for nll_loss2d and N-d inputs). target is int64 [N, K], weight
 * (optional) [C]. Callers view their tensors in these shapes.
 *
 * Targets: every target that is not ignore_index must lie in [0, C). Targets are read only when the command runs, so
 * a bad one is found there: all targets are checked before anything is written, and the command then fails with
 * INVALID_ARG and "nll_loss(): target 7 is out of bounds for 5 classes" (reported at the stream's next
 * synchronization, stream.h), leaving every output untouched. No out-of-bounds access happens.
 *
 * Dtypes: input, output, gradients, weight and total_weight are float32, float64, float16 or bfloat16 (they may
 * mix: values are converted on load, computed in float64 and rounded once on store). Else UNSUPPORTED.
 *
 * Determinism: sums run over fixed blocks of positions whose boundaries depend only on N * K, added in block order,
 * so results are bitwise identical for any thread count. */
#ifndef AXON_LOSS_H
#define AXON_LOSS_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* How per-element losses are combined; the values are PyTorch's at::Reduction. Append only. */
typedef enum axon_loss_reduction {
    AXON_LOSS_NONE = 0,          /* one loss per position: out is [N, K] */
    AXON_LOSS_MEAN = 1,          /* sum / total_weight (0 / 0 = NaN when every target is ignored, as PyTorch) */
    AXON_LOSS_SUM = 2,
    AXON_LOSS_REDUCTION_COUNT
} axon_loss_reduction_t;

/* Enqueue nll_loss: loss[n, k] = -weight[t] * in[n, t, k] with t = target[n, k], and 0 where t == ignore_index.
 * out is [N, K] for AXON_LOSS_NONE and has one element otherwise. total_weight (one element; may be NULL) receives
 * the sum of weight[t] over targets not ignored (1 per target without weight). weight may be NULL (all ones).
 * INVALID_ARG for bad descriptors, shapes or reduction; UNSUPPORTED for dtypes (see above). */
AXON_API axon_status_t axon_kernel_nll_loss(axon_stream_t s, const axon_tensor_t *out,
                                            const axon_tensor_t *total_weight, const axon_tensor_t *in,
                                            const axon_tensor_t *target, const axon_tensor_t *weight,
                                            axon_loss_reduction_t reduction, int64_t ignore_index);

/* Enqueue nll_loss's backward: grad_in ([N, C, K], fully written) is 0 except grad_in[n, t, k] = -weight[t] * g,
 * where g is grad_out[n, k] (AXON_LOSS_NONE, grad_out [N, K]), grad_out (SUM, one element) or
 * grad_out / total_weight (MEAN; both one element, read when the command runs). Errors as nll_loss. */
AXON_API axon_status_t axon_kernel_nll_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                     const axon_tensor_t *grad_out, const axon_tensor_t *target,
                                                     const axon_tensor_t *weight, const axon_tensor_t *total_weight,
                                                     axon_loss_reduction_t reduction, int64_t ignore_index);

AXON_EXTERN_C_END

#endif
