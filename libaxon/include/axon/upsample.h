/* Upsampling (resizing) kernels over 1 to 3 trailing spatial dimensions: nearest, nearest-exact, linear
 * (linear / bilinear / trilinear) and cubic (bicubic) interpolation, each with its backward.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Tensors are contiguous [leading..., (D,) (H,) W]: the leading dimensions (batch, channels) are
 * flattened into planes and must match between the two tensors of a call. The caller picks the output sizes; each
 * output coordinate maps to input coordinates as PyTorch's CPU kernels map them (ATen's UpSample.h), including the
 * float32 index arithmetic PyTorch uses for every dtype but float64 (and for "nearest" always), so the source
 * elements chosen are PyTorch's. Sources are clamped to the input: no size pair reads outside it.
 *
 * Along one dimension of input size I and output size O, with scale factor f (scales[k] > 0) or none (0):
 *   ratio r = 1 / f if given, else I / O; with align_corners (linear, cubic) r = (I - 1) / (O - 1) (0 if O == 1);
 *   nearest:       src = min(floor(o * r), I - 1), except o for O == I and o / 2 for O == 2 I (PyTorch's);
 *   nearest-exact: src = min(floor((o + 0.5) * r), I - 1);
 *   linear:        x = r * o (align_corners) or max(r * (o + 0.5) - 0.5, 0); taps floor(x) and the next one,
 *                  weights 1 - t and t; O == I copies;
 *   cubic:         x as linear without the max; 4 taps floor(x) - 1 .. + 2 clamped to [0, I - 1], Keys' cubic
 *                  convolution weights with A = -0.75.
 * A multi-dimensional mode is the product of the 1-d weights (bilinear, trilinear, bicubic).
 *
 * Dtypes: float32, float64, float16, bfloat16 (one call may mix them); sums in float64, rounded once on store,
 * except a float32 bilinear forward (in and out float32, 2 spatial dims), which blends each row's two columns and
 * then the two rows in float32, as PyTorch's CPU kernel does.
 * Nearest and nearest-exact forward also take an integer in and out of one dtype (int8, int16, int32, int64, uint8),
 * whose elements they copy.
 * Work split: the forward splits output rows over the device's pool; the backward zeroes grad_in and scatters
 * grad_out times the weights into it, a plane per step in output order, so results are the same for any thread
 * count. A half-type grad_in accumulates in that type (pass a float32 grad_in for float32 accumulation).
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors, mismatched ranks or leading sizes,
 * nspatial outside 1..3, an unknown mode, a negative or non-finite scale, an input with an empty spatial dimension
 * and an output with elements; UNSUPPORTED for other dtypes. */
#ifndef AXON_UPSAMPLE_H
#define AXON_UPSAMPLE_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Append only; the count is checked against the name table. */
typedef enum axon_upsample_mode {
    AXON_UPSAMPLE_NEAREST = 0,
    AXON_UPSAMPLE_NEAREST_EXACT = 1,
    AXON_UPSAMPLE_LINEAR = 2,
    AXON_UPSAMPLE_CUBIC = 3,
    AXON_UPSAMPLE_MODE_COUNT
} axon_upsample_mode_t;

typedef struct axon_upsample_params {
    int nspatial;                /* 1, 2 or 3 */
    axon_upsample_mode_t mode;
    int align_corners;           /* linear and cubic only; ignored by the nearest modes */
    double scales[3];            /* per spatial dim in order (W last): output / input scale factor, 0 = none */
} axon_upsample_params_t;

/* Enqueue out = in resized to out's spatial sizes. */
AXON_API axon_status_t axon_kernel_upsample(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                            const axon_upsample_params_t *p);

/* Enqueue the backward: grad_in = 0, then each grad_out element times its weights added to its source elements.
 * grad_in has the forward input's shape, grad_out the output's. */
AXON_API axon_status_t axon_kernel_upsample_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                     const axon_tensor_t *grad_out, const axon_upsample_params_t *p);

AXON_EXTERN_C_END

#endif
