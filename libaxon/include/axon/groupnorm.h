/* Group norm: statistics per (batch index, group of channels) of a contiguous [N, C, *] tensor, forward and
 * backward, as PyTorch's native_group_norm.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. in, out, grad_out and grad_in are contiguous with ndim >= 2: N = sizes[0], C = sizes[1],
 * S = the product of the rest; `groups` divides C, and group g of sample n is the contiguous run of
 * (C / groups) * S elements starting at (n * groups + g) * (C / groups) * S. weight, bias, grad_weight and grad_bias
 * have C elements; mean and rstd have N * groups elements (any shape; PyTorch's is [N, groups]).
 *
 * Dtypes: float32, float64, float16 or bfloat16, mixed freely; computed in float64, rounded once on store.
 * Work split: (n, group) rows in parallel for the forward and grad_in, channels in parallel for grad_weight and
 * grad_bias; every sum is one thread's loop in memory order, so results do not depend on the thread count.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors, ndim < 2, groups < 1 or not dividing C,
 * mismatched shapes or element counts; UNSUPPORTED for other dtypes. */
#ifndef AXON_GROUPNORM_H
#define AXON_GROUPNORM_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue out = (x - mean) * rstd * weight[c] + bias[c], mean and biased variance over each (n, group), rstd =
 * 1 / sqrt(var + eps) (two passes). mean and rstd (each may be NULL) receive the statistics; weight and bias may be
 * NULL (ones, zeros). */
AXON_API axon_status_t axon_kernel_group_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mean,
                                              const axon_tensor_t *rstd, const axon_tensor_t *in,
                                              const axon_tensor_t *weight, const axon_tensor_t *bias, int64_t groups,
                                              double eps);

/* Enqueue group norm's backward from the forward's in, mean and rstd (both required):
 * grad_in = rstd (g w - mean(g w) - xhat mean(g w xhat)) over each (n, group), xhat = (x - mean) rstd;
 * grad_weight[c] = sum(g xhat), grad_bias[c] = sum(g) over (n, s). Any of grad_in, grad_weight, grad_bias may be
 * NULL (not computed); weight may be NULL (ones). */
AXON_API axon_status_t axon_kernel_group_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                       const axon_tensor_t *grad_weight,
                                                       const axon_tensor_t *grad_bias, const axon_tensor_t *grad_out,
                                                       const axon_tensor_t *in, const axon_tensor_t *mean,
                                                       const axon_tensor_t *rstd, const axon_tensor_t *weight,
                                                       int64_t groups);

AXON_EXTERN_C_END

#endif
