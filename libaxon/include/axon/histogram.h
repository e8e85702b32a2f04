/* Histograms: torch.histc, counts of values in equal-width bins.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch. The caller resolves the range first (PyTorch's
 * histc takes min == max to mean the data's own range): this kernel takes a finite lo < hi.
 *
 * Binning, as PyTorch: values outside [lo, hi] (and NaN) are not counted; hi itself goes into the last bin.
 *   - floating inputs follow PyTorch's CPU histc: bin edges are linspace(lo, hi, bins + 1) rounded to the input's
 *     dtype, a first guess (x - lo) * bins / (hi - lo) is corrected by a search among its neighbouring edges, so a
 *     value exactly on an edge lands in the bin that edge opens. Edges that are not exact in the dtype may round
 *     differently from PyTorch's (its linspace is vectorized), so a value within one rounding of such an edge may
 *     land in the neighbouring bin. PyTorch CPU counts half-type inputs in the half type (exact only up to 256 per
 *     bin for bfloat16); these counts are exact.
 *   - integer inputs follow PyTorch's CUDA histc (CPU has none): bin = (x - lo) * bins / (hi - lo) in integer
 *     arithmetic, lo and hi truncated to integers. Mixture-of-experts routers count expert ids this way.
 * Counts are exact (int64) and stored into out's dtype with the copy rules; the work is split in chunks counted
 * separately and summed, so the result is the same for any thread count.
 *
 * in: any real dtype (not bool or complex), contiguous. out: contiguous, 1-D of `bins` elements, any real dtype.
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors, out's shape, bins < 1, or a range that
 * is not finite with lo < hi; UNSUPPORTED for bool or complex. Errors while running: OUT_OF_MEMORY if the per-chunk
 * counters cannot be allocated (out unchanged). */
#ifndef AXON_HISTOGRAM_H
#define AXON_HISTOGRAM_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue out[b] = the number of elements of in falling in bin b of [lo, hi] split in `bins` equal bins. */
AXON_API axon_status_t axon_kernel_histc(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                         int64_t bins, double lo, double hi);

AXON_EXTERN_C_END

#endif
