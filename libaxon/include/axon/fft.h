/* Discrete Fourier transforms: torch.fft's three primitives (ATen's _fft_c2c, _fft_r2c, _fft_c2r).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch.
 *
 * The transforms run on MKL's DFTI (sequential, one call per batch of 1-D transforms, the batches split over the
 * device's pool). A build without MKL has no FFT: axon_fft_available() returns 0 and a launch returns UNSUPPORTED,
 * so callers fall back to the host.
 *
 * A multi-dimensional transform is a sequence of 1-D transforms, one dimension after another, in the order of
 * `dims`: out[k] = scale * sum_j in[j] * exp(-+2 pi i j k / n) per dimension, the sign negative for forward.
 *   C2C  in and out complex of the same dtype and shape.
 *   R2C  in real (float32 -> complex64, float64 -> complex128), always forward. Along dims[ndims - 1] out has
 *        n / 2 + 1 elements (the one-sided half; the rest is its conjugate mirror) or n (the full spectrum); the
 *        other dimensions as in.
 *   C2R  in complex, out real of the matching precision, always backward (`forward` must be 0). Along
 *        dims[ndims - 1] out has n elements and in n / 2 + 1, the one-sided half of a Hermitian spectrum: the
 *        imaginary parts of its zero-frequency term (and of the Nyquist term, for even n) are ignored, as by
 *        PyTorch. The other dimensions are transformed first (complex, backward), then the last one.
 * `scale` multiplies every output element once (PyTorch's norm="ortho" is 1 / sqrt(n), "forward" or "backward"
 * 1 / n, n the product of the signal lengths).
 *
 * in and out: contiguous, not overlapping, the same rank; dims: ndims (1..AXON_MAX_DIMS) distinct dimensions, each
 * of at least one element. Errors at launch: INVALID_ARG for bad descriptors, dims, shapes or dtypes, UNSUPPORTED
 * without MKL. Errors while running: OUT_OF_MEMORY (scratch for C2R or a full R2C, or MKL's own), INTERNAL for any
 * other MKL failure, with its message. */
#ifndef AXON_FFT_H
#define AXON_FFT_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

typedef enum axon_fft_kind {
    AXON_FFT_C2C,
    AXON_FFT_R2C,
    AXON_FFT_C2R,
} axon_fft_kind_t;

/* 1 when this build of libaxon has the FFT (MKL's DFTI), else 0. */
AXON_API int axon_fft_available(void);

/* Enqueue out = scale * the transform `kind` of in over dims[0..ndims), forward (1) or backward (0). */
AXON_API axon_status_t axon_kernel_fft(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                       axon_fft_kind_t kind, const int *dims, int ndims, int forward, double scale);

AXON_EXTERN_C_END

#endif
