/* Complex tensors built from two real ones: torch.complex (out = real + i imag) and torch.polar
 * (out = abs * cos(angle) + i abs * sin(angle)).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once.
 *
 * out is COMPLEX64 with a and b FLOAT32, or COMPLEX128 with a and b FLOAT64; a and b have out's ndim and sizes (0
 * strides broadcast them), any strides. polar's cos and sin are the unary kernels' (AXON_UNARY_COS and
 * AXON_UNARY_SIN: the values torch.cos and torch.sin give on this device), each multiplied by abs in the dtype, as
 * PyTorch's CPU kernel computes a * cos(b) and a * sin(b).
 *
 * Errors at launch: INVALID_ARG for bad descriptors or mismatched shapes, UNSUPPORTED for other dtypes. */
#ifndef AXON_COMPLEX_PARTS_H
#define AXON_COMPLEX_PARTS_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

typedef enum axon_complex_parts {
    AXON_PARTS_CARTESIAN,        /* a is the real part, b the imaginary part */
    AXON_PARTS_POLAR,            /* a is the modulus, b the angle */
} axon_complex_parts_t;

/* Enqueue out = the complex numbers of parts a and b. */
AXON_API axon_status_t axon_kernel_complex_parts(axon_stream_t s, axon_complex_parts_t parts, const axon_tensor_t *out,
                                                 const axon_tensor_t *a, const axon_tensor_t *b);

AXON_EXTERN_C_END

#endif
