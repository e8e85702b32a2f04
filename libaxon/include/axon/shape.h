/* Shape kernels that move elements by position: triangles (tril/triu), the index-computed pads (reflect,
 * replicate, circular) with their backward, and unfold's backward.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to do.
 *
 * Dtypes: triangles and pad forward only move elements and take every dtype (the zero a triangle writes is all-zero
 * bytes, which is 0, false or 0+0i in every dtype). Pad backward adds in double and rounds once per update (so
 * float32/float16/bfloat16 sums are correctly rounded), for the floating dtypes only (UNSUPPORTED otherwise).
 * Backward gives each plane (one position of the leading, unpadded dimensions) to one thread, which adds in the
 * row-major order of grad_output, as PyTorch's CPU kernels do: results are bitwise equal to them for any thread
 * count. */
#ifndef AXON_SHAPE_H
#define AXON_SHAPE_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* out = tril(in, diagonal) (upper = 0: keep in[..., i, j] where j - i <= diagonal) or triu (upper = 1: where
 * j - i >= diagonal), zero elsewhere, over the last two dimensions. out and in have the same dtype and sizes and
 * ndim >= 2; out may be in itself (the very same view: in place), but must not partially overlap it. INVALID_ARG
 * for bad descriptors, shapes or dtypes. */
AXON_API axon_status_t axon_kernel_triangle(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                            int64_t diagonal, int upper);

/* The number of (row, column) positions of a rows x cols matrix with column - row <= offset (upper = 0: tril_indices)
 * or >= offset (upper = 1: triu_indices); 0 when rows or cols is not positive. A host function: enqueues nothing. */
AXON_API int64_t axon_triangle_indices_count(int64_t rows, int64_t cols, int64_t offset, int upper);

/* Enqueue those positions in row-major order into out, a [2, count] int32 or int64 tensor of any strides: out[0] the
 * rows, out[1] the columns (torch.tril_indices and triu_indices). INVALID_ARG for bad descriptors, negative sizes or
 * another shape (the message gives the expected one); UNSUPPORTED for other dtypes. */
AXON_API axon_status_t axon_kernel_triangle_indices(axon_stream_t s, const axon_tensor_t *out, int64_t rows,
                                                    int64_t cols, int64_t offset, int upper);

/* How a pad finds the input element of an output position x - before (x the output coordinate) outside [0, n). */
typedef enum axon_pad_mode {
    AXON_PAD_REFLECT = 0,        /* mirror without repeating the edge: -1 -> 1, n -> n - 2 */
    AXON_PAD_REPLICATE,          /* clamp to the edge */
    AXON_PAD_CIRCULAR,           /* wrap around: -1 -> n - 1 */
    AXON_PAD_MODE_COUNT
} axon_pad_mode_t;

/* Static lower-case name ("reflect"); "invalid" outside the enum. Never NULL. */
AXON_API const char *axon_pad_mode_name(axon_pad_mode_t m);

/* Pad the last nspatial (1..3) dimensions: out[..., x] = in[..., source(x - before)] per padded dimension, with
 * out.size = in.size + before + after there (after may be negative: a crop) and equal sizes elsewhere; same dtype.
 * Every output position must map into in: reflect needs before, after <= n - 1, circular before, after <= n,
 * replicate n >= 1 (INVALID_ARG otherwise, naming the dimension, pads and size, as for bad descriptors). */
AXON_API axon_status_t axon_kernel_pad(axon_stream_t s, axon_pad_mode_t mode, const axon_tensor_t *out,
                                       const axon_tensor_t *in, int nspatial, const int64_t *before);

/* grad_in = 0, then grad_in[..., source(x - before)] += grad_out[..., x] for every x: the backward of
 * axon_kernel_pad with the same mode, shapes (grad_in in's, grad_out out's) and pads. grad_in must not overlap
 * grad_out. Errors as axon_kernel_pad; UNSUPPORTED for non-floating dtypes. */
AXON_API axon_status_t axon_kernel_pad_backward(axon_stream_t s, axon_pad_mode_t mode, const axon_tensor_t *grad_in,
                                                const axon_tensor_t *grad_out, int nspatial, const int64_t *before);

/* grad_input = the backward of Tensor.unfold(dim, size, step): grad_input [outer, len, inner] (len along dim),
 * grad [outer, windows, inner, size] with windows = (len - size) / step + 1 (0 when len < size), both contiguous and
 * of one float dtype (float32/64, float16, bfloat16). Each element of grad_input is the sum, in double rounded once,
 * of the window elements it appeared in (0 when in none), in increasing window order; grad_input is fully written.
 * size and step >= 1. INVALID_ARG for other shapes; UNSUPPORTED for other dtypes. */
AXON_API axon_status_t axon_kernel_unfold_backward(axon_stream_t s, const axon_tensor_t *grad_input,
                                                   const axon_tensor_t *grad, int64_t size, int64_t step);

AXON_EXTERN_C_END

#endif
