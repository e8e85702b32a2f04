/* Histograms over bin edges: torch.histogram and torch.histogramdd (a D-dimensional histogram of N points), with
 * optional weights.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch (edges too), their data read when the command runs.
 *
 * in is [N, D] (one point per row), weight NULL or [N], edges[d] a 1-D tensor of hist->sizes[d] + 1 increasing bin
 * edges, hist a D-dimensional tensor of the bin sums; all contiguous and of one floating dtype (float32, float64,
 * float16, bfloat16). A point is counted when every coordinate x_d lies in [edges_d[0], edges_d[last]] (NaN never
 * does), into the bin of each coordinate, PyTorch's histogramdd bin:
 *   - linear (edges from linspace): PyTorch's guess trunc((x - lo) * nbins / (hi - lo)) in the dtype's arithmetic,
 *     then the last edge <= x among the edges around the guess (its local search);
 *   - otherwise: the last edge <= x (a binary search);
 * the last bin also takes its right edge. It adds its weight (1 without weights). Sums are kept in float64 per
 * chunk of points and rounded once into hist (PyTorch sums in the dtype per thread), so counts are exact and
 * weighted sums within one rounding; the result does not depend on the thread count.
 *
 * Errors at launch: INVALID_ARG for bad or non-contiguous descriptors, D outside 1..AXON_MAX_DIMS, mismatched
 * shapes; UNSUPPORTED for other or mixed dtypes. While running: OUT_OF_MEMORY if the per-chunk sums cannot be
 * allocated (hist unchanged). */
#ifndef AXON_HISTOGRAMDD_H
#define AXON_HISTOGRAMDD_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue hist = the (weighted) counts of in's points in the bins of edges[0 .. D), D = in->sizes[1]. */
AXON_API axon_status_t axon_kernel_histogramdd(axon_stream_t s, const axon_tensor_t *hist, const axon_tensor_t *in,
                                               const axon_tensor_t *weight, const axon_tensor_t *edges, int linear);

AXON_EXTERN_C_END

#endif
