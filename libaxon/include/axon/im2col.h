/* Sliding-window patches of a batch of 2-d images (torch.nn.functional.unfold: im2col) and their adjoint
 * (torch.nn.functional.fold: col2im, which sums overlapping patches).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Tensors are contiguous:
 *   image [N, C, H, W]    columns [N, C * kh * kw, L],  L = oh * ow,
 *   oh = (H + 2 * ph - (dh * (kh - 1) + 1)) / sh + 1 (likewise ow),
 * and column row c * kh * kw + i * kw + j, position y * ow + x holds image[c, y * sh - ph + i * dh,
 * x * sw - pw + j * dw] (0 where that reads padding), as ATen's im2col.h lays it out.
 *
 * im2col copies elements of any dtype (both tensors of one dtype). col2im zeroes the image, then adds every
 * column element into its image element, a plane per step in row and position order (the same result for any
 * thread count); float32 and float64 only (a caller accumulates the half types in a float32 image).
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors, shapes that do not fit the layout
 * above, kernel, dilation or stride below 1, padding below 0; UNSUPPORTED for mismatched dtypes or, in col2im, a
 * dtype other than float32 and float64. */
#ifndef AXON_IM2COL_H
#define AXON_IM2COL_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

typedef struct axon_im2col_params {
    int64_t kernel[2], dilation[2], padding[2], stride[2];   /* (height, width) each */
} axon_im2col_params_t;

/* Enqueue columns = the patches of image. */
AXON_API axon_status_t axon_kernel_im2col(axon_stream_t s, const axon_tensor_t *columns, const axon_tensor_t *image,
                                          const axon_im2col_params_t *p);

/* Enqueue image = the sum of columns' patches at their places. */
AXON_API axon_status_t axon_kernel_col2im(axon_stream_t s, const axon_tensor_t *image, const axon_tensor_t *columns,
                                          const axon_im2col_params_t *p);

AXON_EXTERN_C_END

#endif
