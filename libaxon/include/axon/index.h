/* Indexing kernels: index_select, gather, scatter (plain and reducing), index_add, index_copy, index_fill, embedding
 * backward, masked_fill and cat.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors and scalars are copied at launch; nothing is enqueued on error or when
 * there is nothing to do. Shapes are the caller's business in PyTorch's sense (it resizes outputs first); libaxon
 * checks that they agree and says which do not.
 *
 * Indices: int32 or int64, any strides, in [0, size) as PyTorch's index_select, gather, scatter, index_add,
 * index_copy and embedding require. With AXON_INDEX_WRAP in `flags`, a negative index i counts from the end
 * (i + size), as PyTorch's advanced indexing (x[idx]) does, and the valid range is [-size, size). Indices are read
 * only when the command runs, so an index out of range is found there: the command then fails with INVALID_ARG and
 * the message "<op>(): index 7 is out of bounds for dimension 0 with size 5" (reported at the stream's next
 * synchronization, stream.h). The ops that update a tensor in place (scatter, index_add, index_copy, embedding
 * backward) check every index before writing anything and leave it untouched; index_select and gather, whose out
 * only receives, check as they copy (one pass over the index, not two) and leave out's contents unspecified, as
 * PyTorch's CPU kernels do. No out-of-bounds access happens.
 *
 * Determinism: ops that may write one output element several times (scatter, index_add, index_copy, embedding
 * backward) give every output element to one thread, which applies the updates in index order. Results are bitwise
 * identical for any thread count; a plain scatter or index_copy with repeated indices keeps the last update, in
 * index order.
 *
 * Dtypes: ops that only move elements (index_select, gather, plain scatter, index_copy, masked_fill, cat of one
 * dtype) take every dtype, complex included. Reductions (scatter SUM/PROD/AMAX/AMIN, index_add, embedding backward)
 * take real dtypes and bool (sum = or, prod = and) and compute in out's dtype, rounding once per update as
 * PyTorch's CPU kernels do (float16/bfloat16 in float32); sums (scatter SUM, index_add) take complex too, the other
 * reductions are UNSUPPORTED for complex. Integer arithmetic wraps. */
#ifndef AXON_INDEX_H
#define AXON_INDEX_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* How scatter combines an update with the element already in out. Append only. */
typedef enum axon_scatter_reduce {
    AXON_SCATTER_NONE = 0,       /* out = src */
    AXON_SCATTER_SUM,            /* out += src */
    AXON_SCATTER_PROD,           /* out *= src */
    AXON_SCATTER_AMAX,           /* out = max(out, src); a NaN on either side wins */
    AXON_SCATTER_AMIN,
    AXON_SCATTER_MEAN,           /* the sum of the updates (and out's element, with include_self) over their count;
                                    floor division for integers; not for bool or complex */
    AXON_SCATTER_REDUCE_COUNT
} axon_scatter_reduce_t;

/* Flags of the indexing launches. */
enum axon_index_flags {
    AXON_INDEX_DEFAULT = 0,
    AXON_INDEX_WRAP = 1u << 0,   /* negative indices count from the end */
};

/* Static lower-case name ("sum", "amax"); "invalid" outside the enum. Never NULL. */
AXON_API const char *axon_scatter_reduce_name(axon_scatter_reduce_t r);

/* out = in.index_select(dim, index): index is 0-d or 1-d; in has ndim >= 1; out has in's shape with
 * index's numel at dim and in's dtype. INVALID_ARG for bad descriptors, a bad dim, shapes or dtypes. */
AXON_API axon_status_t axon_kernel_index_select(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                                int dim, const axon_tensor_t *index, unsigned flags);

/* out[p] = in[p with coordinate dim replaced by index[p]] for every position p of index: out has index's shape and
 * in's dtype; index has in's ndim (>= 1) and index.size(d) <= in.size(d) for d != dim. INVALID_ARG otherwise. */
AXON_API axon_status_t axon_kernel_gather(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in, int dim,
                                          const axon_tensor_t *index, unsigned flags);

/* In place: for every position p of index, out[p with coordinate dim replaced by index[p]] op= src[p] (or the
 * scalar value when src is NULL, converted to out's dtype with the copy rules). index has out's ndim (>= 1) and
 * index.size(d) <= out.size(d) for d != dim; src (out's dtype) is at least index's size in every dim.
 * INVALID_ARG for bad descriptors, dims, shapes or dtypes; UNSUPPORTED for a reduction on complex out. */
AXON_API axon_status_t axon_kernel_scatter(axon_stream_t s, axon_scatter_reduce_t reduce, const axon_tensor_t *out,
                                           int dim, const axon_tensor_t *index, const axon_tensor_t *src,
                                           axon_scalar_t value, unsigned flags);

/* scatter_reduce: scatter with a reduction (SUM, PROD, AMAX, AMIN, MEAN) where include_self == 0 leaves out's own
 * value at each element that receives updates out of the reduction (those elements start from the reduction's
 * identity), as torch.scatter_reduce(include_self=False). Elements without updates keep their value. Errors as
 * scatter; UNSUPPORTED for MEAN on bool. */
AXON_API axon_status_t axon_kernel_scatter_reduce(axon_stream_t s, axon_scatter_reduce_t reduce,
                                                  const axon_tensor_t *out, int dim, const axon_tensor_t *index,
                                                  const axon_tensor_t *src, int include_self, unsigned flags);

/* index_reduce: out[..., index[i], ...] op= src[..., i, ...] along dim (index and src as for index_add), with the
 * reductions and include_self of axon_kernel_scatter_reduce. */
AXON_API axon_status_t axon_kernel_index_reduce(axon_stream_t s, axon_scatter_reduce_t reduce,
                                                const axon_tensor_t *out, int dim, const axon_tensor_t *index,
                                                const axon_tensor_t *src, int include_self, unsigned flags);

/* In place: out[..., index[i], ...] += alpha * src[..., i, ...] along dim. index is 0-d or 1-d with src.size(dim)
 * elements; src has out's dtype and ndim and out's sizes except at dim. alpha is converted to out's compute type
 * (float for float32/16/bf16, double, int64; for bool, alpha != 0). Errors as scatter. */
AXON_API axon_status_t axon_kernel_index_add(axon_stream_t s, const axon_tensor_t *out, int dim,
                                             const axon_tensor_t *index, const axon_tensor_t *src,
                                             axon_scalar_t alpha, unsigned flags);

/* In place: out[..., index[i], ...] = src[..., i, ...] along dim, with index and src as for index_add; every dtype.
 * Repeated indices: the last in index order wins. Errors as scatter. */
AXON_API axon_status_t axon_kernel_index_copy(axon_stream_t s, const axon_tensor_t *out, int dim,
                                              const axon_tensor_t *index, const axon_tensor_t *src, unsigned flags);

/* In place: out[..., index[k], ...] = value along dim for every k; index is 0-d or 1-d (int32 or int64); value is
 * converted to out's dtype with the copy rules; every dtype. Indices are checked before anything is written. */
AXON_API axon_status_t axon_kernel_index_fill(axon_stream_t s, const axon_tensor_t *out, int dim,
                                              const axon_tensor_t *index, axon_scalar_t value, unsigned flags);

/* grad_weight = 0, then grad_weight[indices[k], :] += grad[k, :] for every k with indices[k] != padding_idx
 * (padding_idx < 0: none); indices in [0, V). grad_weight is [V, D], grad [N, D] of the same
 * dtype, indices [N]. One thread owns each element and adds in k order: deterministic. Errors as scatter. */
AXON_API axon_status_t axon_kernel_embedding_backward(axon_stream_t s, const axon_tensor_t *grad_weight,
                                                      const axon_tensor_t *grad, const axon_tensor_t *indices,
                                                      int64_t padding_idx);

/* In place: out[p] = value wherever mask[p] != 0. mask (bool or uint8, any byte nonzero is true) has out's ndim and
 * sizes; the caller broadcasts it with 0 strides. value is converted with the copy rules. */
AXON_API axon_status_t axon_kernel_masked_fill(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mask,
                                               axon_scalar_t value);

/* Most inputs one cat launch takes: the descriptors travel in the launch's argument block (AXON_LAUNCH_MAX_ARGS).
 * Callers with more inputs launch once per group, each into the slice of out along dim that the group fills. */
#define AXON_CAT_MAX_INPUTS 24

/* out = cat(inputs[0..n), dim): every input has out's ndim and sizes except at dim, where the sizes add up to out's.
 * Inputs may have any strides and dtypes (converted with the copy rules) and no elements; they must not overlap out.
 * n in [1, AXON_CAT_MAX_INPUTS], else INVALID_ARG (as are bad descriptors, dims and shapes). */
AXON_API axon_status_t axon_kernel_cat(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *inputs, int n,
                                       int dim);

/* out = the indices 0 .. n-1 of repeats, index i repeats[i] times, in order (repeat_interleave of a repeats
 * vector). repeats is 1-d int32 or int64 [n]; out is 1-d of the same dtype whose length must be the repeats' sum.
 * The command fails with INVALID_ARG, out untouched, if a repeat is negative or the sum is not out's length. */
AXON_API axon_status_t axon_kernel_repeat_interleave(axon_stream_t s, const axon_tensor_t *out,
                                                     const axon_tensor_t *repeats);

AXON_EXTERN_C_END

#endif
