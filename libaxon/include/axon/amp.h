/* Gradient scaling for mixed-precision training: the two steps of a GradScaler iteration.
 *
 * Each iteration first unscales the gradients and checks them (axon_amp_non_finite_check_and_unscale), then, once
 * the optimizer step has run or been skipped, updates the scale (axon_amp_update_scale). Both read and write their
 * numbers (inv_scale, found_inf, scale, growth_tracker) as one-element device tensors when the command runs, so a
 * training loop never waits for the device between the two.
 *
 * Like every kernel (kernels.h), a call checks its descriptors on the calling thread, enqueues its commands on
 * stream s and returns at once; nothing is enqueued on a failed check. Errors at launch: INVALID_ARG for n < 0, a
 * NULL list or number, bad descriptors, non-contiguous gradients, mixed gradient dtypes, a number that does not
 * hold one element or has the wrong dtype (found_inf, inv_scale and scale are float32, growth_tracker int32);
 * UNSUPPORTED for gradients other than float32, float64, float16 or bfloat16. */
#ifndef AXON_AMP_H
#define AXON_AMP_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue, for every element x of grads[0..n): found_inf = 1.0 if x is inf or NaN, then x = x * inv_scale (x left
 * as is when inv_scale is 1.0), computed in float (double for float64 gradients) and rounded once, as PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_. found_inf is only ever written to set it to 1.0, so it accumulates
 * over calls; grads are unscaled even when found_inf is set. One command per list (per chunk of ~250 tensors of a
 * longer one). grads share one dtype and are contiguous. */
AXON_API axon_status_t axon_amp_non_finite_check_and_unscale(axon_stream_t s, int64_t n, const axon_tensor_t *grads,
                                                             const axon_tensor_t *found_inf,
                                                             const axon_tensor_t *inv_scale);

/* Enqueue PyTorch's _amp_update_scale_: if found_inf is nonzero, scale *= backoff_factor and growth_tracker = 0;
 * else growth_tracker += 1 and, when it reaches growth_interval, scale *= growth_factor (kept only if the product
 * is finite) and growth_tracker = 0. Products are taken in double and rounded to float32. One command. */
AXON_API axon_status_t axon_amp_update_scale(axon_stream_t s, const axon_tensor_t *scale,
                                             const axon_tensor_t *growth_tracker, const axon_tensor_t *found_inf,
                                             double growth_factor, double backoff_factor, int64_t growth_interval);

AXON_EXTERN_C_END

#endif
