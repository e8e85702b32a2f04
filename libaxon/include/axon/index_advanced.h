/* Advanced indexing kernels: x[i0, i1, ...] (PyTorch's index), its in-place write x[i0, ...] = v with or without
 * accumulation (index_put_), and the mask compactions whose output size depends on the data: nonzero,
 * masked_select and masked_scatter.
 *
 * Layout of index and index_put (the one ATen's CPU and CUDA kernels use): the caller broadcasts the index tensors
 * together and describes every operand over one "iteration shape", the result's shape. `src` (index) or `dst`
 * (index_put) is the indexed tensor restrided to that shape: its dimensions that the indices replace have stride 0,
 * and each index tensor k, broadcast to the same shape (0 strides), adds index[k][p] * strides[k] elements to the
 * address, where sizes[k] and strides[k] are the size and stride of the dimension it indexes. A negative index
 * counts from the end (i + size), so the valid range is [-size, size). Indices are read when the command runs:
 * every index is checked before anything is written, and a bad one fails the command with INVALID_ARG and
 * "index(): index 7 is out of bounds for dimension 0 with size 5" (dimension = position k in the index list),
 * reported at the stream's next synchronization (stream.h), with nothing written.
 *
 * Determinism: index_put gives every destination element to one thread (positions that differ in a dimension where
 * dst has a nonzero stride never meet), which applies the updates in the iteration shape's row-major order, the
 * order PyTorch's CPU kernel uses. Accumulation is therefore bitwise equal to PyTorch's CPU result for any thread
 * count, and a plain put with repeated indices keeps the last value in that order.
 *
 * Compactions (nonzero, masked_select, masked_scatter) number the selected elements in the row-major order of the
 * input's shape. Their result size depends on the data, so they come in two launches: a count into a device int64,
 * which the caller reads back (a synchronization, as on CUDA) to size the output, then the fill, which checks that
 * the count still holds and fails rather than write past the output.
 *
 * Dtypes: index, plain index_put, nonzero, masked_select and masked_scatter only move elements and take every dtype.
 * Accumulating index_put adds in double (floating), int64 with wrap-around (integers; bool is "or") or complex128,
 * then rounds once per update: the result of adding two float32/float16/bfloat16 values in double and rounding is
 * the correctly rounded sum, as PyTorch's per-update add gives. */
#ifndef AXON_INDEX_ADVANCED_H
#define AXON_INDEX_ADVANCED_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Most index tensors one launch takes: one per dimension of the indexed tensor. */
#define AXON_INDEX_MAX_INDICES AXON_MAX_DIMS

/* out[p] = src[p + sum_k wrap(indices[k][p]) * strides[k]] for every position p of the iteration shape (out's).
 * src, indices[0..n) (int32 or int64) have out's ndim and sizes; src has out's dtype. n in [1,
 * AXON_INDEX_MAX_INDICES]; sizes[k] >= 1 unless out is empty. INVALID_ARG for bad descriptors, shapes or dtypes. */
AXON_API axon_status_t axon_kernel_index(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *src,
                                         const axon_tensor_t *indices, int n, const int64_t *sizes,
                                         const int64_t *strides);

/* In place: dst[p + sum_k wrap(indices[k][p]) * strides[k]] = values[p] (or += with accumulate) for every position
 * p, in the order the header describes. dst is the restrided destination (0 strides where the indices replace its
 * dimensions; the underlying tensor must not overlap itself), values has dst's sizes and dtype (0 strides
 * broadcast). Other arguments and errors as axon_kernel_index. */
AXON_API axon_status_t axon_kernel_index_put(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *values,
                                             const axon_tensor_t *indices, int n, const int64_t *sizes,
                                             const int64_t *strides, int accumulate);

/* count (a 0-d or 1-element int64 on the device) = the number of nonzero elements of in (any dtype; a complex value
 * is nonzero if either part is; NaN is nonzero; -0.0 is zero). INVALID_ARG for bad descriptors. */
AXON_API axon_status_t axon_kernel_count_nonzero(axon_stream_t s, const axon_tensor_t *count,
                                                 const axon_tensor_t *in);

/* out[j, :] = the coordinates (int64) of in's j-th nonzero element in row-major order. in has ndim >= 1 (the caller
 * handles a 0-d in, whose result has no columns); out is [rows, in.ndim] int64. If in holds more nonzeros than rows
 * the command fails (INVALID_ARG, "nonzero(): ...") with out untouched; rows past the count are left as they are
 * (nonzero_static pads them itself). */
AXON_API axon_status_t axon_kernel_nonzero(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in);

/* nonzero_static: out [rows, in.ndim] int64 gets the coordinates of in's first `rows` nonzero elements (row-major
 * order) and fill_value in every column of the rows past the count; a count above rows is cut, never an error, so
 * the result needs no read-back of the count. in has ndim >= 1 (a 0-d in's result has no columns). */
AXON_API axon_status_t axon_kernel_nonzero_static(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                                  int64_t fill_value);

/* out[j] = in[p_j] for the j-th p with mask[p] != 0, row-major over in's shape. mask (bool or uint8) has in's sizes
 * (0 strides broadcast); out is 1-d of in's dtype with exactly the number of set mask elements (counted with
 * axon_kernel_count_nonzero), else the command fails as nonzero does. */
AXON_API axon_status_t axon_kernel_masked_select(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                                 const axon_tensor_t *mask);

/* In place: dst[p_j] = source[j] for the j-th p with mask[p] != 0, row-major over dst's shape. source is any shape of
 * dst's dtype, read in its row-major order; it must hold at least as many elements as mask has set ones, else the
 * command fails with "masked_scatter_(): Number of elements of source < number of ones in mask" and writes nothing. */
AXON_API axon_status_t axon_kernel_masked_scatter(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *mask,
                                                  const axon_tensor_t *source);

AXON_EXTERN_C_END

#endif
