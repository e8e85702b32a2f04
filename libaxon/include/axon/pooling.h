/* Pooling kernels over 1 to 3 trailing spatial dimensions: max pooling (with argmax indices), average pooling,
 * adaptive average and adaptive max pooling, each with its backward. (The thread pool is axon/pool.h.)
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Tensors are contiguous [leading..., (D,) (H,) W]: the leading dimensions (batch, channels) are
 * flattened into planes and must be the same in every tensor of a call; there is at least one. Max pooling, its
 * backward and max_unpool also take float32 [N, C, spatial] tensors that are all channels-last
 * (axon_tensor_is_channels_last; indices int64 in the same layout), with the same results. The caller chooses
 * the output's spatial sizes (PyTorch's pooling_output_shape, ceil_mode included); the kernels never read outside
 * the input whatever they are, and a window that falls wholly outside the input gives -inf (max, with an index
 * that the backward refuses) or 0 (average).
 *
 * Dtypes: in, out, grad_in and grad_out are float32, float64, float16 or bfloat16 (one call may mix them); sums are
 * taken in float64 and rounded once on store. Max and average pooling forward with fixed windows also take an integer
 * in and out of one dtype (int8, int16, int32, int64, uint8): maxima compared exactly in int64, averages as an int64
 * sum (wrapping) divided with truncation toward zero, as PyTorch's integer average pooling computes them. Indices
 * are int64: the flat offset of the chosen element within its input plane (d * H * W + h * W + w), as PyTorch returns
 * them.
 *
 * Work split: forward passes split the output's rows over the device's pool; backward passes scatter into grad_in
 * plane by plane, each plane one thread's loop in output order, so results are the same for any thread count.
 * Backward passes zero grad_in first, then add; a grad_in in a half type accumulates in that type (callers that
 * want float32 accumulation pass a float32 grad_in and convert).
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors (channels-last ones mixed with others),
 * mismatched ranks or leading sizes (the message shows the shapes), nspatial outside 1..3, kernel or stride < 1,
 * padding < 0, dilation < 1, padding more than half the effective kernel, non-int64 indices; UNSUPPORTED for other
 * dtypes (channels-last: not float32). The max
 * backward fails when it runs if an index lies outside its plane (the stream reports it). */
#ifndef AXON_POOLING_H
#define AXON_POOLING_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Window geometry of max and average pooling. Entries [0, nspatial) of each array are the spatial dimensions in
 * tensor order, W last: (H, W) for 2d, (W) for 1d. */
typedef struct axon_pool_params {
    int nspatial;                /* 1, 2 or 3 */
    int64_t kernel[3];           /* >= 1 */
    int64_t stride[3];           /* >= 1 */
    int64_t padding[3];          /* >= 0, implicit -inf (max) or 0 (average) on both sides; at most kernel / 2 */
    int64_t dilation[3];         /* >= 1; max pooling only (average pooling ignores it) */
    int count_include_pad;       /* average: padded elements count in the divisor */
    int64_t divisor_override;    /* average: if not 0, the divisor of every window (may be < 0, as in PyTorch) */
} axon_pool_params_t;

/* Enqueue max pooling: out[o] = the largest element of o's window (a NaN wins, the last one if several), and
 * indices (may be NULL; else out's shape) its offset in the plane. Ties keep the first. */
AXON_API axon_status_t axon_kernel_max_pool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *indices,
                                            const axon_tensor_t *in, const axon_pool_params_t *p);

/* Enqueue fractional max pooling (Graham's, PyTorch's fractional_max_pool2d/3d): windows of kernel[0, nspatial)
 * elements whose starts along a dim of input size I, output size O and kernel k follow the plane's sample u in
 * [0, 1): start(i) = trunc((i + u) * a) - trunc(u * a) with a = (I - k) / (O - 1), in the dtype's arithmetic, and
 * start(O - 1) = I - k; out[o] = the window's maximum by the rule of axon_kernel_max_pool, indices (not NULL) its
 * offset. samples holds nspatial values per plane (in the plane order of in), of in's dtype, contiguous; 2d takes
 * (W, H) from them, 3d (D, H, W), as PyTorch does. in, out and samples of one floating dtype (float16 and bfloat16:
 * each step of the starts' arithmetic rounded to the dtype, as PyTorch CPU's Half and BFloat16); every window must fit
 * the input (O + k - 1 <= I) else INVALID_ARG. Its backward is axon_kernel_max_pool_backward. */
AXON_API axon_status_t axon_kernel_fractional_max_pool(axon_stream_t s, const axon_tensor_t *out,
                                                       const axon_tensor_t *indices, const axon_tensor_t *in,
                                                       const axon_tensor_t *samples, const int64_t *kernel,
                                                       int nspatial);

/* Enqueue the backward of max pooling and adaptive max pooling: grad_in = 0, then grad_in[plane][indices[o]] +=
 * grad_out[o] for every o in output order. grad_out and indices have the forward output's shape, grad_in the
 * input's; nspatial says how many trailing dims are spatial. An index outside [0, plane size) fails the command. */
AXON_API axon_status_t axon_kernel_max_pool_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                     const axon_tensor_t *grad_out, const axon_tensor_t *indices,
                                                     int nspatial);

/* Enqueue max_unpool: out = 0, then out[plane][indices[i]] = in[i] for every i in input order (a repeated index keeps
 * the last, as PyTorch's CPU loop does). in and indices have the pooled shape, out the unpooled one, in the float
 * dtypes; nspatial says how many trailing dims are spatial. An index outside [0, out's plane size) fails the command
 * with PyTorch's "Found an invalid max index" (out is then partly written). */
AXON_API axon_status_t axon_kernel_max_unpool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                              const axon_tensor_t *indices, int nspatial);

/* Enqueue average pooling: out[o] = sum of o's window within the input / divisor, where the divisor is
 * divisor_override if set, else the window's size clipped to input plus padding (count_include_pad) or to the
 * input alone. */
AXON_API axon_status_t axon_kernel_avg_pool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                            const axon_pool_params_t *p);

/* Enqueue average pooling's backward: grad_in = 0, then grad_out[o] / divisor added to every element of o's window
 * within the input. Shapes as axon_kernel_avg_pool's out (grad_out) and in (grad_in). */
AXON_API axon_status_t axon_kernel_avg_pool_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                     const axon_tensor_t *grad_out, const axon_pool_params_t *p);

/* Enqueue adaptive average pooling over nspatial dims: along each dim of input size I and output size O, output o
 * averages inputs [floor(o * I / O), ceil((o + 1) * I / O)). */
AXON_API axon_status_t axon_kernel_adaptive_avg_pool(axon_stream_t s, const axon_tensor_t *out,
                                                     const axon_tensor_t *in, int nspatial);

/* Enqueue adaptive average pooling's backward: grad_in = 0, then grad_out[o] / window size added over o's window. */
AXON_API axon_status_t axon_kernel_adaptive_avg_pool_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                              const axon_tensor_t *grad_out, int nspatial);

/* Enqueue adaptive max pooling: the windows of adaptive average pooling, the rule of axon_kernel_max_pool; indices
 * may be NULL. The backward is axon_kernel_max_pool_backward. */
AXON_API axon_status_t axon_kernel_adaptive_max_pool(axon_stream_t s, const axon_tensor_t *out,
                                                     const axon_tensor_t *indices, const axon_tensor_t *in,
                                                     int nspatial);

AXON_EXTERN_C_END

#endif
