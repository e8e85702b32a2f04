/* Pairwise distances: torch.cdist and torch.nn.functional.pdist (PyTorch's _cdist_forward, _cdist_backward,
 * _pdist_forward and _pdist_backward).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute.
 *
 * The distance of two rows a and b of M coordinates, with d_k = a_k - b_k and p >= 0, is PyTorch's p-norm of d:
 *   p = 0    the number of d_k that are not 0
 *   p = 1    sum |d_k|;  p = 2  sqrt(sum d_k^2);  p = inf  max |d_k|
 *   else     (sum |d_k|^p)^(1/p)
 * computed in float64 and rounded once to the dtype. Gradients with respect to a, for an incoming g and the forward
 * distance D, follow PyTorch's CPU kernels term by term (0 wherever D is 0, except p = 1 and inf):
 *   p = 1    g sign(d_k);  p < 2  sign(d_k) |d_k|^(p-1) g / D^(p-1);  p = 2  g d_k / D
 *   p = inf  g sign(d_k) where |d_k| == D, else 0;  p > 2  d_k |d_k|^(p-2) g / D^(p-1);  p = 0  0
 * As PyTorch CPU's scalar cdist loop, cdist's p = inf skips NaN coordinates (max(a, b) keeps a unless a < b); pdist's
 * vector loop propagates them. Neither kernel uses the matrix-product form of p = 2 (PyTorch's _euclidean_dist):
 * callers choose it.
 *
 * Dtypes: float32 or float64, every operand of a call the same. Tensors are contiguous. Errors at launch:
 * INVALID_ARG for bad descriptors, shapes that do not match the ones below, non-contiguous tensors or p < 0 (or
 * NaN); UNSUPPORTED for other dtypes. Each output element is computed by one thread in a fixed order, so results do
 * not depend on the thread count. */
#ifndef AXON_DISTANCE_H
#define AXON_DISTANCE_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue out[b, i, j] = dist(x1[b, i, :], x2[b, j, :]): x1 [B, P, M], x2 [B, R, M], out [B, P, R]. M = 0 gives 0. */
AXON_API axon_status_t axon_kernel_cdist(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *x1,
                                         const axon_tensor_t *x2, double p);

/* Enqueue grad_x1[b, i, k] = the sum over j of the gradient term above for d = x1[b, i, :] - x2[b, j, :],
 * g = grad[b, i, j] and D = dist[b, i, j]: grad_x1 [B, P, M], grad and dist [B, P, R]. (The gradient of x2 is this
 * with the roles swapped and grad, dist transposed.) */
AXON_API axon_status_t axon_kernel_cdist_backward(axon_stream_t s, const axon_tensor_t *grad_x1,
                                                  const axon_tensor_t *grad, const axon_tensor_t *x1,
                                                  const axon_tensor_t *x2, const axon_tensor_t *dist, double p);

/* Enqueue out[k] = dist(x[i, :], x[j, :]) for every pair i < j of x's N rows, in row-major order of the pairs
 * (k = i N - i (i + 1) / 2 + j - i - 1): x [N, M], out [N (N - 1) / 2]. */
AXON_API axon_status_t axon_kernel_pdist(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *x, double p);

/* Enqueue grad_x[i, :] = the sum over pairs (i, j) and (j, i) of the gradient term for d = x[i, :] - x[j, :], g and D
 * the pair's entries of grad and dist: grad_x and x [N, M], grad and dist [N (N - 1) / 2]. */
AXON_API axon_status_t axon_kernel_pdist_backward(axon_stream_t s, const axon_tensor_t *grad_x,
                                                  const axon_tensor_t *grad, const axon_tensor_t *x,
                                                  const axon_tensor_t *dist, double p);

AXON_EXTERN_C_END

#endif
