/* Unique elements of a 1-d tensor whose equal elements sit next to each other: torch.unique after a sort, and
 * torch.unique_consecutive as it is.
 *
 * Two launches, because the result's length is data-dependent: axon_kernel_unique_count counts the runs of equal
 * elements, the caller reads that count back (one sync, as CUDA's unique does) and allocates, then
 * axon_kernel_unique_fill writes one value per run, each element's run number (the inverse) and each run's length.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error. Every tensor must
 * be contiguous. Equality is numeric, as PyTorch's: -0.0 equals 0.0, and a NaN equals nothing, so every NaN is a
 * run of its own. Both passes are sequential on one thread, so results never depend on the thread count.
 *
 * Dtypes: in is any real dtype or bool; values have in's dtype and receive the first element of each run bit for
 * bit; count, inverse and counts are int64. Complex in is UNSUPPORTED; other mistakes INVALID_ARG. */
#ifndef AXON_UNIQUE_H
#define AXON_UNIQUE_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue count[0] = the number of runs of equal neighbours in the 1-d tensor in (0 when in is empty). count is an
 * int64 tensor of one element (any shape). */
AXON_API axon_status_t axon_kernel_unique_count(axon_stream_t s, const axon_tensor_t *count, const axon_tensor_t *in);

/* Enqueue the runs of the 1-d tensor in [n] into values [K] (K: what unique_count gave), and optionally inverse
 * ([n] int64: inverse[perm[i]] = the run of in[i], or inverse[i] without perm) and counts ([K] int64: each run's
 * length). perm (NULL or [n] int64, e.g. sort's indices) must be a permutation of [0, n). A run count other than K,
 * or a perm entry outside [0, n), fails the command without writing out of bounds. */
AXON_API axon_status_t axon_kernel_unique_fill(axon_stream_t s, const axon_tensor_t *values,
                                               const axon_tensor_t *inverse, const axon_tensor_t *counts,
                                               const axon_tensor_t *in, const axon_tensor_t *perm);

AXON_EXTERN_C_END

#endif
