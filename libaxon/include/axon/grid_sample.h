/* Grid sampling (torch.nn.functional.grid_sample): each output point reads the input at a location given by a grid
 * of normalized coordinates, with bilinear (trilinear in 3d), nearest or bicubic (2d only) interpolation and zeros,
 * border or reflection padding; forward and backward (grad_input and grad_grid).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Tensors are contiguous:
 *   in   [N, C, (D,) H, W]        out, grad_out  [N, C, (Do,) Ho, Wo]
 *   grid [N, (Do,) Ho, Wo, ns]    grid[..., 0] is x (along W), [..., 1] y (H), [..., 2] z (D), in [-1, 1].
 * A coordinate maps to the input as PyTorch's CPU kernels map it (ATen's GridSamplerKernel.cpp): unnormalized to
 * (g + 1) * (size - 1) / 2 with align_corners, else (g + 1) * size / 2 - 0.5; then border padding clips it to
 * [0, size - 1] and reflection padding reflects it about the borders (the pixel centres with align_corners, else
 * their edges) and clips it. Bilinear reads the 2^ns neighbours with weights from the fractions, nearest the
 * neighbour at the coordinate rounded half to even, bicubic the 4 x 4 neighbours with Keys' weights (A = -0.75),
 * each neighbour's coordinate padded on its own. A neighbour outside the input reads 0. A coordinate that is NaN
 * or infinite under zeros padding gives NaN (bilinear, bicubic) or 0 (nearest), as on PyTorch CPU.
 *
 * Arithmetic is in float64 when any tensor of the call is float64, else in float32 (PyTorch's float32 kernel's
 * operations in its order for bilinear and nearest; the half types widen to float32 and round once on store).
 * Dtypes: float32, float64, float16, bfloat16; one call may mix them (a half-type grad_in is accumulated in that
 * type: pass a float32 one for float32 accumulation).
 * Work split: the forward and grad_grid split output points over the device's pool; grad_in splits (n, c) planes,
 * each zeroed and then scattered in output order, so every result is the same for any thread count.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors, shapes that do not fit the layouts
 * above, ns other than 2 or 3, an unknown mode, bicubic in 3d, an empty input spatial dimension; UNSUPPORTED for
 * other dtypes. */
#ifndef AXON_GRID_SAMPLE_H
#define AXON_GRID_SAMPLE_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* PyTorch's GridSamplerInterpolation and GridSamplerPadding numbering. */
typedef enum axon_grid_interp {
    AXON_GRID_BILINEAR = 0,
    AXON_GRID_NEAREST = 1,
    AXON_GRID_BICUBIC = 2,
    AXON_GRID_INTERP_COUNT
} axon_grid_interp_t;

typedef enum axon_grid_padding {
    AXON_GRID_PAD_ZEROS = 0,
    AXON_GRID_PAD_BORDER = 1,
    AXON_GRID_PAD_REFLECTION = 2,
    AXON_GRID_PADDING_COUNT
} axon_grid_padding_t;

typedef struct axon_grid_sample_params {
    int nspatial;                /* 2 or 3 */
    axon_grid_interp_t interp;
    axon_grid_padding_t padding;
    int align_corners;
} axon_grid_sample_params_t;

/* Enqueue out = in sampled at grid. */
AXON_API axon_status_t axon_kernel_grid_sample(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                               const axon_tensor_t *grid, const axon_grid_sample_params_t *p);

/* Enqueue the backward of out = grid_sample(in, grid): grad_in (in's shape; NULL to skip) gets each grad_out
 * element times its neighbours' weights, grad_grid (grid's shape; NULL to skip) the derivative of the sampled values
 * along each coordinate, summed over channels (0 for nearest). At least one of the two must be given. */
AXON_API axon_status_t axon_kernel_grid_sample_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                        const axon_tensor_t *grad_grid, const axon_tensor_t *grad_out,
                                                        const axon_tensor_t *in, const axon_tensor_t *grid,
                                                        const axon_grid_sample_params_t *p);

AXON_EXTERN_C_END

#endif
