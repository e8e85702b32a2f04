/* torch.linspace's values: n = dst's length evenly spaced values from start to end, both ends exact.
 *
 * Like every kernel (kernels.h), a launch checks its descriptor on the calling thread, enqueues one command on stream
 * s and returns at once; nothing is enqueued on error or when dst is empty. dst is 1-d, any stride (negative too).
 *
 * PyTorch's symmetric formula, in double: step = (end - start) / (n - 1); element i < n / 2 is start + i * step, the
 * others end - (n - 1 - i) * step (n = 1: start), each a fused multiply-add as PyTorch's AVX2 and AVX-512 CPU kernels
 * compute it, so float64 and integer results have its bits. Integer dtypes convert with the copy rules (toward zero),
 * as PyTorch does after converting start and end to the integer dtype (the caller's part: pass them converted).
 * float32 and the half types round the double once (PyTorch computes those in their own precision: within an ulp).
 *
 * Errors at launch: INVALID_ARG for a bad descriptor or one that is not 1-d; UNSUPPORTED for bool and complex dst. */
#ifndef AXON_LINSPACE_H
#define AXON_LINSPACE_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

AXON_API axon_status_t axon_kernel_linspace(axon_stream_t s, const axon_tensor_t *dst, double start, double end);

AXON_EXTERN_C_END

#endif
