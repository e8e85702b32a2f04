/* Dropout on the Philox stream (kernels.h): a keep-mask drawn per element and the scaled product, forward and
 * backward, each in one pass.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; nothing is enqueued on error or for an empty tensor. All tensors are contiguous and
 * of one shape; in, out and grad tensors are float32, float64, float16 or bfloat16 (out of in's dtype), mask is bool.
 *
 * Random numbers: element i (row-major) takes the 32-bit lane i % 4 of Philox block i / 4 of (seed, offset) for
 * every dtype, so a call consumes axon_philox_blocks(AXON_FLOAT32, numel) blocks, and the mask equals
 * axon_kernel_bernoulli(mask, seed, offset, 1 - p) on the same bool tensor: keep = x * 2^-32 < 1 - p.
 *
 * Rounding follows PyTorch's `in * mask * scale`: the product with the 0/1 mask is exact, then the multiply by scale
 * is rounded as the dtype's opmath does it (float for float32, float16 and bfloat16 with scale rounded to float,
 * double for float64), then to the dtype. A NaN or infinite input whose mask is 0 gives NaN, as in PyTorch. */
#ifndef AXON_DROPOUT_H
#define AXON_DROPOUT_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue mask = keep (as above) and out = in * mask * scale, scale = 1 / (1 - p), or 0 when p == 1 (every element
 * dropped). INVALID_ARG unless 0 <= p <= 1; UNSUPPORTED for other dtypes. out may be the very same view as in. */
AXON_API axon_status_t axon_kernel_dropout(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mask,
                                           const axon_tensor_t *in, double p, uint64_t seed, uint64_t offset);

/* Enqueue grad_in = grad_out * mask * scale (mask read as bool: nonzero keeps), rounded as the forward. */
AXON_API axon_status_t axon_kernel_dropout_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                    const axon_tensor_t *grad_out, const axon_tensor_t *mask,
                                                    double scale);

AXON_EXTERN_C_END

#endif
