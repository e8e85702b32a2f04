/* Batch norm: per-channel statistics over (batch, spatial) of a [N, C, *] tensor, contiguous or channels-last,
 * forward (training and inference) and backward.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. in (and out, grad_out, grad_in, which have in's shape) have ndim >= 2 and are all contiguous
 * or all channels-last (axon_tensor_is_channels_last): N = sizes[0], C = sizes[1], S = the product of the rest. Per-channel tensors (weight, bias, running_mean,
 * running_var, save_mean, save_invstd, grad_weight, grad_bias) have C elements, any shape, contiguous.
 *
 * Dtypes: every tensor is float32, float64, float16 or bfloat16, and one call may mix them (PyTorch keeps float32
 * statistics and parameters for half inputs). Everything is computed in float64 and rounded once on store.
 *
 * Work split: contiguous, channels in parallel over the device's pool, each channel's sums one thread's loop over
 * (n, s) in memory order; channels-last, fixed blocks of positions in parallel, their per-channel partial sums added
 * in block order. Either way results are bitwise identical for any thread count (not between the two layouts). The variance is two-pass (mean first, then
 * squared deviations), which does not cancel for channels with a large mean.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, tensors in neither layout or in two, ndim < 2, mismatched shapes or element
 * counts (the message names the role and shows both), a missing required tensor; UNSUPPORTED for other dtypes. */
#ifndef AXON_BATCHNORM_H
#define AXON_BATCHNORM_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue out = (x - mean) * invstd * weight + bias per channel, invstd = 1 / sqrt(var + eps).
 * training != 0: mean and the biased var are the batch's; save_mean and save_invstd (each may be NULL) receive
 * them; running_mean and running_var (each may be NULL) are updated in place as r = momentum * batch + (1 -
 * momentum) * r, with the unbiased variance var * M / (M - 1), M = N * S (NaN when M == 1, as PyTorch).
 * training == 0: mean and var are running_mean and running_var (both required, left unchanged); save_* must be NULL.
 * weight and bias may be NULL (ones, zeros). */
AXON_API axon_status_t axon_kernel_batch_norm(axon_stream_t s, const axon_tensor_t *out,
                                              const axon_tensor_t *save_mean, const axon_tensor_t *save_invstd,
                                              const axon_tensor_t *running_mean, const axon_tensor_t *running_var,
                                              const axon_tensor_t *in, const axon_tensor_t *weight,
                                              const axon_tensor_t *bias, int training, double momentum, double eps);

/* Enqueue batch norm's backward. training != 0: mean and invstd are the forward's save_mean and save_invstd, and
 * grad_in = (g - sum(g) / M - (x - mean) invstd^2 sum(g (x - mean)) / M) invstd weight. training == 0: mean is
 * running_mean and invstd is running_var (invstd = 1 / sqrt(running_var + eps) is taken here), grad_in = g invstd
 * weight. Both: grad_weight = sum(g (x - mean)) invstd, grad_bias = sum(g), sums over (n, s). Any of grad_in,
 * grad_weight, grad_bias may be NULL (not computed); weight may be NULL (ones). */
AXON_API axon_status_t axon_kernel_batch_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                       const axon_tensor_t *grad_weight,
                                                       const axon_tensor_t *grad_bias, const axon_tensor_t *grad_out,
                                                       const axon_tensor_t *in, const axon_tensor_t *weight,
                                                       const axon_tensor_t *mean, const axon_tensor_t *invstd,
                                                       int training, double eps);

AXON_EXTERN_C_END

#endif
