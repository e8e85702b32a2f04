/* Normalization kernels: softmax and log-softmax along one dimension, layer norm and RMS norm over trailing
 * elements, each with its backward.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Every tensor must be contiguous (row-major, axon_tensor_is_contiguous): callers make a
 * contiguous copy of a strided view first. Softmax over a dimension other than the last is still supported: rows
 * along dim are then strided, and up to 64 neighbouring rows are processed lane by lane, so each load reads a
 * contiguous piece of memory.
 *
 * Dtypes: inputs and outputs are float32, float64, float16 or bfloat16 (tensors of one call may mix them; values
 * are converted on load and rounded once on store). Everything is computed in float64, whatever the dtypes: one
 * code path, rounded once on store. The one exception is the softmax forward's exp, taken in float32 when no tensor
 * is float64 (several times faster, and within what a float32 or half result holds).
 * Statistics (mean, rstd) are float32 for float32/float16/bfloat16 inputs and float64 for float64, as PyTorch's
 * native_layer_norm returns them; the kernels accept either.
 *
 * Work split: rows in parallel over the device's pool; each row (and each column sum of the weight and bias
 * gradients) is one thread's sequential loop in a fixed order, so results are bitwise identical for any thread
 * count.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors, mismatched shapes (the message shows
 * them), a dim out of range, normalized < 1 or not dividing in's element count; UNSUPPORTED for other dtypes. */
#ifndef AXON_NORM_H
#define AXON_NORM_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue out = softmax(in) along dim (negative counts from the end), or log_softmax if is_log; out has in's shape.
 * Max-subtracted, so no overflow. A row of all -inf gives NaN (as PyTorch); a +inf entry gives NaN too. */
AXON_API axon_status_t axon_kernel_softmax(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                           int dim, int is_log);

/* Enqueue out = softmax(in) along dim with rows of all -inf giving 0 instead of NaN (PyTorch's _safe_softmax: an
 * attention row masked out entirely attends to nothing). A row with a NaN still gives NaN. */
AXON_API axon_status_t axon_kernel_safe_softmax(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                                int dim);

/* Enqueue the softmax gradient along dim from the forward's output y and grad_out g:
 * grad_in = y * (g - sum(g * y)), or with is_log (y = log_softmax) grad_in = g - exp(y) * sum(g). Same shapes. */
AXON_API axon_status_t axon_kernel_softmax_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                    const axon_tensor_t *grad_out, const axon_tensor_t *out,
                                                    int dim, int is_log);

/* Enqueue layer norm over the trailing `normalized` elements of in (rows of M = numel / normalized):
 * out = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps) with the biased variance (two passes).
 * out has in's shape; weight and bias (each may be NULL) have `normalized` elements; mean and rstd (each may be
 * NULL) have M elements, any shape. eps is used as given: PyTorch accepts a negative one (rows whose variance is
 * below -eps then give NaN). */
AXON_API axon_status_t axon_kernel_layer_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mean,
                                              const axon_tensor_t *rstd, const axon_tensor_t *in,
                                              const axon_tensor_t *weight, const axon_tensor_t *bias,
                                              int64_t normalized, double eps);

/* Enqueue layer norm's backward from the forward's in, mean and rstd: any of grad_in (in's shape), grad_weight and
 * grad_bias (`normalized` elements) may be NULL, and are then not computed. weight may be NULL (all ones). */
AXON_API axon_status_t axon_kernel_layer_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                       const axon_tensor_t *grad_weight,
                                                       const axon_tensor_t *grad_bias, const axon_tensor_t *grad_out,
                                                       const axon_tensor_t *in, const axon_tensor_t *mean,
                                                       const axon_tensor_t *rstd, const axon_tensor_t *weight,
                                                       int64_t normalized);

/* Enqueue RMS norm over the trailing `normalized` elements: out = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) +
 * eps). weight and rstd (M elements) may be NULL. eps is used as given, as for layer norm. */
AXON_API axon_status_t axon_kernel_rms_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *rstd,
                                            const axon_tensor_t *in, const axon_tensor_t *weight, int64_t normalized,
                                            double eps);

/* Enqueue RMS norm's backward from the forward's in and rstd: grad_in and grad_weight may each be NULL. */
AXON_API axon_status_t axon_kernel_rms_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                     const axon_tensor_t *grad_weight, const axon_tensor_t *grad_out,
                                                     const axon_tensor_t *in, const axon_tensor_t *rstd,
                                                     const axon_tensor_t *weight, int64_t normalized);

AXON_EXTERN_C_END

#endif
