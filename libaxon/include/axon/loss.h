/* Loss kernels: the negative log-likelihood loss (nll_loss, the second half of cross_entropy), the element-wise
 * losses (mse, smooth L1, Huber, binary cross-entropy), the CTC loss and the margin losses, each with its backward.
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
 * Element-wise losses take in, target (and weight) of one shape, contiguous; the caller broadcasts first.
 *
 * Determinism: sums run over fixed blocks of positions whose boundaries depend only on N * K, added in block order,
 * (or numel), so results are bitwise identical for any thread count. */
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

/* Enqueue the backward of nll_loss(log_softmax(x)) with respect to x, in one pass, given out = log_softmax(x) along C
 * (the saved forward result): grad_in[n, c, k] = g * weight[t] * (exp(out[n, c, k]) - [c == t]) with t and g as for
 * axon_kernel_nll_loss_backward, and 0 in a slab whose target is ignore_index. This is nll_loss_backward followed by
 * _log_softmax_backward_data, which a compiled cross-entropy backward would otherwise run as two passes over [N, C]
 * plus a zero-fill. grad_in and out have one float dtype; errors as nll_loss_backward. */
AXON_API axon_status_t axon_kernel_nll_loss_log_softmax_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                                 const axon_tensor_t *grad_out,
                                                                 const axon_tensor_t *out,
                                                                 const axon_tensor_t *target,
                                                                 const axon_tensor_t *weight,
                                                                 const axon_tensor_t *total_weight,
                                                                 axon_loss_reduction_t reduction,
                                                                 int64_t ignore_index);

/* Element-wise losses, d = in - target, with PyTorch's formulas (aten/src/ATen/native/Loss.cpp, BinaryOps.cpp). */
typedef enum axon_ploss {
    AXON_PLOSS_MSE = 0,          /* d^2 */
    AXON_PLOSS_SMOOTH_L1,        /* |d| < param ? 0.5 d^2 / param : |d| - 0.5 param (param = beta >= 0) */
    AXON_PLOSS_HUBER,            /* |d| < param ? 0.5 d^2 : param (|d| - 0.5 param) (param = delta > 0) */
    AXON_PLOSS_BCE,              /* -weight (t log(x) + (1 - t) log(1 - x)), each log clamped at -100; x in [0, 1] */
    AXON_PLOSS_COUNT
} axon_ploss_t;

/* Static lower-case name ("mse_loss", "binary_cross_entropy"); "invalid" outside the enum. Never NULL. */
AXON_API const char *axon_ploss_name(axon_ploss_t op);

/* Enqueue an element-wise loss: out has in's shape for AXON_LOSS_NONE, else one element (the sum, or the mean over
 * numel: NaN for no elements). weight (BCE only; may be NULL) has in's shape. For BCE an input outside [0, 1] (or
 * NaN) fails the command before any write with "binary_cross_entropy(): all elements of input should be between 0
 * and 1" (reported at the next synchronization). INVALID_ARG for bad descriptors, shapes, op, reduction or param;
 * UNSUPPORTED for dtypes (float32/64/16 and bfloat16 only, which may mix). */
AXON_API axon_status_t axon_kernel_pointwise_loss(axon_stream_t s, axon_ploss_t op, const axon_tensor_t *out,
                                                  const axon_tensor_t *in, const axon_tensor_t *target,
                                                  const axon_tensor_t *weight, axon_loss_reduction_t reduction,
                                                  double param);

/* Enqueue its backward: grad_in (in's shape) = dloss/din * g, g = grad_out[i] (NONE, grad_out in's shape), or the one
 * element of grad_out (SUM) divided by numel (MEAN). Derivatives as PyTorch's CPU kernels: smooth L1 and Huber take
 * the -param branch at d <= -param and the +param one at d >= param (so smooth L1 with beta 0 is sign with
 * sign(0) = -1), BCE divides by max(x (1 - x), 1e-12f) and, as PyTorch, does not check x. Errors otherwise as the
 * forward. */
AXON_API axon_status_t axon_kernel_pointwise_loss_backward(axon_stream_t s, axon_ploss_t op,
                                                           const axon_tensor_t *grad_in,
                                                           const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                                           const axon_tensor_t *target, const axon_tensor_t *weight,
                                                           axon_loss_reduction_t reduction, double param);

/* Connectionist temporal classification (Graves et al. 2006; PyTorch's _ctc_loss and _ctc_loss_backward).
 * log_probs [T, N, C] and every floating tensor of a call have one dtype, float32 or float64; targets are int32 or
 * int64, [N, S] (row b's first target_lengths[b] labels) or 1-D (the labels of every element concatenated);
 * input_lengths and target_lengths are int64 [N]; all contiguous. neg_log_likelihood is [N] and log_alpha
 * [N, T, L] with L >= 2 max(target_lengths) + 1: the forward variables, log_alpha[b, t, s] for t < input_lengths[b]
 * and s <= 2 target_lengths[b] (the rest is -inf), which the backward reads again. An element with input length 0 has
 * loss 0 for an empty target and inf otherwise. Lengths or labels out of range (input length above T, a target
 * longer than its row or than L allows, a label outside [0, C)) make the command fail with INVALID_ARG naming the
 * element, at the stream's next synchronization. */
AXON_API axon_status_t axon_kernel_ctc_loss(axon_stream_t s, const axon_tensor_t *neg_log_likelihood,
                                           const axon_tensor_t *log_alpha, const axon_tensor_t *log_probs,
                                           const axon_tensor_t *targets, const axon_tensor_t *input_lengths,
                                           const axon_tensor_t *target_lengths, int64_t blank);

/* Its backward: grad_in [T, N, C] = (exp(lp) - exp(log(sum of alpha beta over the positions labelled c) + nll - lp))
 * * grad_out[b] for t < input_lengths[b], 0 after (and everywhere for an element of infinite loss when
 * zero_infinity). log_beta is scratch of log_alpha's shape, written. */
AXON_API axon_status_t axon_kernel_ctc_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                    const axon_tensor_t *log_beta, const axon_tensor_t *grad_out,
                                                    const axon_tensor_t *log_probs, const axon_tensor_t *targets,
                                                    const axon_tensor_t *input_lengths,
                                                    const axon_tensor_t *target_lengths,
                                                    const axon_tensor_t *neg_log_likelihood,
                                                    const axon_tensor_t *log_alpha, int64_t blank, int zero_infinity);

/* Margin losses for classification, PyTorch's multi_margin_loss and multilabel_margin_loss. in is [N, C] (callers view
 * a [C] input as [1, C]), float32 or float64; out, grad_in, grad_out, weight and is_target have in's dtype; targets
 * are int64; all contiguous. out is [N] for AXON_LOSS_NONE, else one element: the sum over rows, or that / N (MEAN).
 * Sums run in float64 in a fixed order, rounded once. A target out of range fails the command before anything is
 * written, with a message naming the op, the row and the value (reported at the stream's next synchronization).
 *
 * multi_margin: y = target[n] in [0, C); loss[n] = sum over c != y of weight[y] max(0, margin - in[n, y] +
 * in[n, c])^p / C, with p 1 or 2 and weight [C] optional (NULL: all ones). */
AXON_API axon_status_t axon_kernel_multi_margin_loss(axon_stream_t s, const axon_tensor_t *out,
                                                     const axon_tensor_t *in, const axon_tensor_t *target,
                                                     const axon_tensor_t *weight, int p, double margin,
                                                     axon_loss_reduction_t reduction);

/* Its backward: grad_in [N, C] = dloss/din times grad_out[n] (NONE, grad_out [N]) or grad_out's one element (SUM),
 * divided by N as well for MEAN; the target's column gets minus the sum of its row's other terms. */
AXON_API axon_status_t axon_kernel_multi_margin_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                              const axon_tensor_t *grad_out,
                                                              const axon_tensor_t *in, const axon_tensor_t *target,
                                                              const axon_tensor_t *weight, int p, double margin,
                                                              axon_loss_reduction_t reduction);

/* multilabel_margin: target [N, C] holds row n's labels up to its first negative entry (every entry must lie in
 * [-1, C), as PyTorch checks, those after the end too). is_target [N, C] is written: 1 at each label of the row, else
 * 0. loss[n] = sum over the labels j (repeats counted again) and the columns c that are not labels of
 * max(0, 1 - in[n, j] + in[n, c]), divided by C. */
AXON_API axon_status_t axon_kernel_multilabel_margin_loss(axon_stream_t s, const axon_tensor_t *out,
                                                          const axon_tensor_t *is_target, const axon_tensor_t *in,
                                                          const axon_tensor_t *target,
                                                          axon_loss_reduction_t reduction);

/* Its backward, from the forward's is_target (nonzero marks a label): for every term with a positive margin, grad_in
 * gets -g at column j and +g at column c, g = grad_out / C (and / N for MEAN), grad_out as for multi_margin. */
AXON_API axon_status_t axon_kernel_multilabel_margin_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                                   const axon_tensor_t *grad_out,
                                                                   const axon_tensor_t *in,
                                                                   const axon_tensor_t *target,
                                                                   const axon_tensor_t *is_target,
                                                                   axon_loss_reduction_t reduction);

AXON_EXTERN_C_END

#endif
