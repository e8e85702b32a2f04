/* Convolution over 1, 2 or 3 spatial dimensions, plain or transposed, with its backward.
 *
 * Life cycle: fill an axon_conv_params_t from axon_conv_params_default(nspatial), set what differs, then launch.
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors and params are copied at launch; nothing is enqueued on error or when
 * there is nothing to compute. Layouts: the images (in, out, grad_out, grad_in) are all contiguous or all
 * channels-last (axon_tensor_is_channels_last: PyTorch's channels_last and channels_last_3d), and so, separately,
 * are weight and grad_weight; bias and grad_bias are contiguous. oneDNN reads and writes channels-last tensors as
 * they are (no copies, as torch CPU); the column path works on channels-first copies in host scratch.
 *
 * Shapes, with S = nspatial (1..3), G = groups:
 *   plain:      in [N, C, I...], weight [O, C/G, K...], out [N, O, Y...],
 *               Y = (I + 2 * padding - dilation * (K - 1) - 1) / stride + 1 (rounded down, >= 1)
 *   transposed: in [N, C, I...], weight [C, O/G, K...], out [N, O, Y...],
 *               Y = (I - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1 (>= 1)
 * bias, if given, has O elements. C and O must both be multiples of G.
 *
 * Algorithm: float32 convolutions and bfloat16 forwards run on oneDNN's direct convolution kernels when libaxon is
 * built with oneDNN, the images split over the pool, or the written tensor's channels when there are fewer images
 * than threads (excepted: 1x1 convolutions of stride 1, input gradients with fewer than 16 input channels per group,
 * and grouped convolutions with fewer images than threads; 1x1 convolutions of channels-last images do run there;
 * AXON_CONV=im2col turns it off). Everything else is im2col
 * + GEMM: for each (batch element, group, block of output positions) the kernel gathers the input patches into a
 * malloc'ed host column buffer (C/G * prod(K) rows, at most a few MB: never device memory, never the whole batch)
 * and multiplies it with the group's weight matrix on one pool participant with the build's single-threaded GEMM
 * (axon/gemm.h). A transposed convolution is the adjoint of a plain one, so it runs the plain convolution's
 * grad_input path and vice versa.
 *
 * Dtypes: in, weight, bias, out (and the gradients) are float32, float64, float16 or bfloat16, all of one dtype,
 * or int64 for the forward (plain and transposed; no gradient, UNSUPPORTED), which wraps on overflow as PyTorch's
 * integer convolutions do, exact in any order. float64 computes in float64; the other three accumulate in float32
 * and round once on store. A bfloat16/float16
 * forward multiplies through oneDNN when libaxon has it (as libaxon's GEMM does); everything else converts half
 * types to float32 scratch. Sums may be ordered differently for another thread count: results for 1 and 4 threads
 * agree within rounding, not bit for bit.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, tensors in neither layout or images (or weights) in two, mixed
 * dtypes, a shape that does not
 * match the formulas above (the message shows the shapes and the expected one), channels not divisible by groups,
 * stride, dilation or groups < 1, negative padding, output_padding not below stride or dilation (or set on a plain
 * convolution); UNSUPPORTED for other dtypes or a GEMM dimension above 2^31 - 1. Errors while running:
 * OUT_OF_MEMORY if the host scratch cannot be allocated (outputs then hold unspecified values). */
#ifndef AXON_CONV_H
#define AXON_CONV_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

#define AXON_CONV_MAX_SPATIAL 3

typedef struct axon_conv_params {
    int nspatial;                                  /* spatial dimensions, 1..AXON_CONV_MAX_SPATIAL */
    int64_t stride[AXON_CONV_MAX_SPATIAL];         /* >= 1; entries past nspatial are ignored */
    int64_t padding[AXON_CONV_MAX_SPATIAL];        /* >= 0, on both sides */
    int64_t dilation[AXON_CONV_MAX_SPATIAL];       /* >= 1 */
    int64_t output_padding[AXON_CONV_MAX_SPATIAL]; /* transposed only: extra size on the high side, 0 otherwise */
    int64_t groups;                                /* >= 1 */
    int transposed;                                /* nonzero: transposed convolution ("deconvolution") */
} axon_conv_params_t;

/* Stride 1, padding 0, dilation 1, output_padding 0, groups 1, plain, over nspatial dimensions. Cannot fail. */
static inline axon_conv_params_t axon_conv_params_default(int nspatial) {
    axon_conv_params_t p;
    p.nspatial = nspatial;
    for (int i = 0; i < AXON_CONV_MAX_SPATIAL; i++) {
        p.stride[i] = 1;
        p.padding[i] = 0;
        p.dilation[i] = 1;
        p.output_padding[i] = 0;
    }
    p.groups = 1;
    p.transposed = 0;
    return p;
}

/* Enqueue out = conv(in, weight) + bias (bias may be NULL), plain or transposed per p. See above for shapes. */
AXON_API axon_status_t axon_kernel_conv(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                        const axon_tensor_t *weight, const axon_tensor_t *bias,
                                        const axon_conv_params_t *p);

/* Enqueue the backward of axon_kernel_conv with the same p, from the forward's in and weight and the gradient of
 * its out: grad_in (in's shape), grad_weight (weight's shape) and grad_bias (O elements); each may be NULL and is
 * then not computed (all NULL enqueues nothing). Each computed gradient is overwritten, not accumulated into. */
AXON_API axon_status_t axon_kernel_conv_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                 const axon_tensor_t *grad_weight, const axon_tensor_t *grad_bias,
                                                 const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                                 const axon_tensor_t *weight, const axon_conv_params_t *p);

AXON_EXTERN_C_END

#endif
