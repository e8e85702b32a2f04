/* Sorting and selection along one dimension: sort (stable), topk, the k-th smallest value (kthvalue, median,
 * nanmedian) and the most frequent one (mode).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Every tensor must be contiguous (callers copy strided views first). A tensor is seen as
 * [outer, len, inner] around dim; each of the outer * inner rows along dim is one thread's work, in parallel over the
 * device's pool, so results are identical for any thread count.
 *
 * Kernels never allocate, so sorting needs a workspace from the caller: device (or host) memory of at least
 * axon_sort_workspace_size(numel of in) bytes, 16-byte aligned, passed as a 1-d uint8 tensor. Its contents are
 * scratch: undefined before and after.
 *
 * Order: values compare as numbers (-0.0 equals 0.0), and NaN is larger than everything, +inf included, as in
 * PyTorch: an ascending sort puts NaNs last, a descending one first, and topk(largest) picks NaNs first. Among equal
 * values the lower index comes first (in both directions), so every result is fully determined: sort is stable, and
 * topk and kthvalue pick the lowest index among ties.
 *
 * Dtypes: in is any real dtype or bool (float32/64/16, bfloat16, int8/16/32/64, uint8); values have in's dtype and
 * get its elements bit for bit; indices are int64. Complex in is UNSUPPORTED; other mistakes INVALID_ARG. */
#ifndef AXON_SORT_H
#define AXON_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Bytes of workspace a sort, topk or kthvalue of a tensor with numel elements needs (32 per element, at least 16).
 * Cannot fail; saturates at SIZE_MAX for absurd sizes. */
AXON_API size_t axon_sort_workspace_size(int64_t numel);

/* Enqueue a stable sort of in along dim (negative counts from the end): values (in's dtype and shape) and indices
 * (int64, in's shape) receive the sorted elements and their positions along dim. descending != 0 sorts from the
 * largest. */
AXON_API axon_status_t axon_kernel_sort(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                                        const axon_tensor_t *in, int dim, int descending,
                                        const axon_tensor_t *workspace);

/* Enqueue topk: the k largest (largest != 0) or smallest elements of each row along dim, in sorted order (largest
 * first, or smallest first), with their indices. values and indices have in's shape with k at dim; k in [0, len]. */
AXON_API axon_status_t axon_kernel_topk(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                                        const axon_tensor_t *in, int dim, int64_t k, int largest,
                                        const axon_tensor_t *workspace);

/* Enqueue the k-th smallest element (k counts from 1, in [1, len]) of each row along dim, and its index: values and
 * indices have in's shape with 1 at dim. With nan_wins (median), a row holding a NaN gives that NaN and the index of
 * its first NaN instead, as PyTorch's median does. */
AXON_API axon_status_t axon_kernel_kthvalue(axon_stream_t s, const axon_tensor_t *values,
                                            const axon_tensor_t *indices, const axon_tensor_t *in, int dim, int64_t k,
                                            int nan_wins, const axon_tensor_t *workspace);

/* Enqueue nanmedian along dim: each row's lower median of its non-NaN elements (the ((valid - 1) / 2 + 1)-th
 * smallest) and its index, or, for a row of NaNs only, its first NaN; the lowest index among ties, as for kthvalue.
 * values and indices as for axon_kernel_kthvalue; rows along dim must not be empty (INVALID_ARG). */
AXON_API axon_status_t axon_kernel_nanmedian(axon_stream_t s, const axon_tensor_t *values,
                                             const axon_tensor_t *indices, const axon_tensor_t *in, int dim,
                                             const axon_tensor_t *workspace);

/* Enqueue the mode of each row along dim: the value that occurs most often, and the position of its last
 * occurrence; among values that occur equally often, the smallest. A NaN equals nothing (PyTorch's rule: each NaN
 * is a value of its own). values and indices as for axon_kernel_kthvalue; rows along dim must not be empty when there
 * are any (INVALID_ARG). */
AXON_API axon_status_t axon_kernel_mode(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                                        const axon_tensor_t *in, int dim, const axon_tensor_t *workspace);

AXON_EXTERN_C_END

#endif
