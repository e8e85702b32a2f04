/* Antialiased resizing of images ([..., H, W]): PyTorch's _upsample_bilinear2d_aa and _upsample_bicubic2d_aa
 * (F.interpolate(..., antialias=True), torchvision's Resize), forward and backward, float32 and float64.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Tensors are contiguous; their leading dimensions (batch, channels) are flattened into planes
 * and must match.
 *
 * Along one dimension of input size I and output size O (PyTorch's HelperInterpBase, in the tensor's dtype T):
 *   scale   = align_corners ? (O > 1 ? (I - 1) / (O - 1) : 0) : (a scale factor f > 0 ? 1 / f : I / O);
 *   support = (scale >= 1 ? scale : 1) * (1 for the triangle filter, 2 for the cubic one);
 *   output o covers inputs [xmin, xmin + xsize) around center = scale * (o + 0.5), with
 *   xmin = max(trunc(center - support + 0.5), 0), xsize = min(trunc(center + support + 0.5), I) - xmin;
 *   tap j weighs filter((xmin + j - center + 0.5) / max(scale, 1)), the weights normalized to sum 1.
 * Filters: triangle max(0, 1 - |x|) (bilinear) and Keys' cubic with a = -0.5 (bicubic, Pillow's choice; the
 * non-antialiased bicubic uses -0.75). The weights are computed with PyTorch's expressions and types, so they are
 * its weights bit for bit.
 *
 * The forward is separable, as PyTorch runs it: a pass over W, then a pass over H, each a weighted sum of its
 * window in T, taps in order (PyTorch's accumulation). Each pass is one call of axon_kernel_upsample_aa_pass, whose
 * tensors differ in at most one of H and W; a resize that changes both needs a [.., IH, OW] temporary between
 * the two passes. The backward is PyTorch's direct one: grad_in = 0, then for each output (oh, ow) in order, each
 * tap (y, x) of its window adds wx[x] * wy[y] * grad_out; work is split over planes, so the result does not depend
 * on the thread count.
 *
 * A window wider than AXON_UPSAMPLE_AA_MAX_TAPS taps (a downscale by more than about 1000) is UNSUPPORTED, as are
 * dtypes other than float32 and float64 and mixed dtypes. INVALID_ARG for bad descriptors, non-contiguous tensors,
 * ranks below 2, mismatched leading sizes, a pass whose tensors differ in both H and W, an unknown filter, a
 * negative or non-finite scale factor, and an input with an empty spatial dimension next to an output with
 * elements. */
#ifndef AXON_UPSAMPLE_AA_H
#define AXON_UPSAMPLE_AA_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

#define AXON_UPSAMPLE_AA_MAX_TAPS 2048

/* Append only; the count is checked against the name table. */
typedef enum axon_aa_filter {
    AXON_AA_TRIANGLE = 0,   /* bilinear */
    AXON_AA_CUBIC = 1,      /* bicubic */
    AXON_AA_FILTER_COUNT
} axon_aa_filter_t;

typedef struct axon_upsample_aa_params {
    axon_aa_filter_t filter;
    int align_corners;
    double scales[2];       /* H, W: output / input scale factor, 0 = none (use the size ratio) */
} axon_upsample_aa_params_t;

/* Enqueue one separable pass: out = in resized along the one of H and W whose size differs (a copy when neither
 * does). */
AXON_API axon_status_t axon_kernel_upsample_aa_pass(axon_stream_t s, const axon_tensor_t *out,
                                                    const axon_tensor_t *in, const axon_upsample_aa_params_t *p);

/* Enqueue the backward: grad_in (the forward input's shape) from grad_out (the output's). */
AXON_API axon_status_t axon_kernel_upsample_aa_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                        const axon_tensor_t *grad_out,
                                                        const axon_upsample_aa_params_t *p);

AXON_EXTERN_C_END

#endif
