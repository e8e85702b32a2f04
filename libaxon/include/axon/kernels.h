/* Tensor kernels: element-wise copy with dtype conversion, fill, arange, and counter-based random numbers.
 *
 * Every function checks its descriptors on the calling thread, then enqueues one kernel on stream s and returns at
 * once; the data is touched only when the command runs, in stream order. A bad descriptor fails the call with a
 * status and a message (nothing is enqueued); a tensor with no elements returns AXON_OK and enqueues nothing.
 * Kernels never allocate memory, and copy the descriptors at launch: the caller may reuse them at once, but must keep
 * the memory they point at alive until the command has run. Data may be device memory of s's device or host memory,
 * and must be aligned for its dtype (a complex type like its parts), else INVALID_ARG.
 *
 * Conversions (copy, fill, and every kernel storing into a dtype) follow PyTorch's CPU casts on x86-64, with the
 * cases C leaves undefined pinned down:
 *   - floating -> integer truncates toward zero. Out of range or NaN gives what x86 gives: int32/int64 get their
 *     minimum; int8/int16/uint16 take the low bits of the int32 result; uint8 the low bits of the int64 result
 *     (PyTorch goes through int64 for uint8). uint32 and uint64 (w bits) take values at or above 2^(w-1) as the
 *     signed rule of x - 2^(w-1) with the top bit set again, the rest by the signed rule (negative values wrap), as
 *     PyTorch's vectorized casts do. Integer -> narrower integer keeps the low bits; uint64 -> floating rounds once.
 *   - anything -> bool is "!= 0" (NaN is true; a complex value is true if either part is nonzero).
 *   - -> float16 / bfloat16 round to nearest even through float32, as PyTorch does (a float64 rounds twice, so
 *     results match PyTorch's casts bit for bit); overflow gives infinity, NaN stays NaN.
 *   - complex -> real takes the real part; real -> complex sets the imaginary part to 0.
 * src and dst must not overlap, unless they are the very same view.
 *
 * Random numbers: counter-based Philox4x32-10 (Salmon et al., SC'11), so the numbers depend only on (seed, offset)
 * and each element's position, never on the thread count or dst's strides. One Philox block is
 * philox(key = {lo32(seed), hi32(seed)}, counter = {lo32(offset + b), hi32(offset + b), 0, 0}) -> 4 lanes of 32 bits.
 * Elements are numbered i = 0.. in the logical row-major order of dst's shape. For 8-byte dtypes (float64, int64)
 * each element uses 64 bits: element i reads block b = i / 2, lanes 2*(i%2) (low word) and 2*(i%2)+1 (high word).
 * For every other dtype each element uses 32 bits: block b = i / 4, lane i % 4. A call consumes
 * axon_philox_blocks(dtype, numel) blocks: the caller advances its offset by that much before the next call. */
#ifndef AXON_KERNELS_H
#define AXON_KERNELS_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* dst = src element-wise, converting dtypes. Same ndim and sizes required (no shape broadcasting; src strides of 0
 * broadcast within that shape). dst must not have a stride of 0 on a dimension of size > 1. Errors: INVALID_ARG for
 * bad descriptors, mismatched shapes (the message shows both) or overlapping dst. */
AXON_API axon_status_t axon_kernel_copy(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *src);

/* Set every element of dst to value, converted to dst's dtype with the copy rules. INVALID_ARG for a bad dst or a
 * value whose dtype is not FLOAT64, INT64, BOOL or COMPLEX128. */
AXON_API axon_status_t axon_kernel_fill(axon_stream_t s, const axon_tensor_t *dst, axon_scalar_t value);

/* 1-d dst[i] = start + i * step. Floating dtypes compute in double (not by accumulation), then round once; integer
 * dtypes compute in int64 (scalars converted with the copy rules) and keep the low bits. UNSUPPORTED for bool and
 * complex dst; INVALID_ARG if dst is not 1-d. */
AXON_API axon_status_t axon_kernel_arange(axon_stream_t s, const axon_tensor_t *dst, axon_scalar_t start,
                                          axon_scalar_t step);

/* Philox blocks a random kernel consumes for numel elements of dtype: ceil(numel / 2) for float64 and int64,
 * ceil(numel / 4) otherwise; 0 for numel <= 0. Cannot fail. */
AXON_API uint64_t axon_philox_blocks(axon_dtype_t dtype, int64_t numel);

/* Uniform reals in [from, to) for float32/64/16 and bfloat16 dst. u = (x >> 8) * 2^-24 from one 32-bit lane, or
 * u = (x >> 11) * 2^-53 from 64 bits for float64; value = from + u * (to - from) in double, then rounded to the
 * dtype; a value that rounds up to `to` is replaced by the largest value of the dtype below `to`.
 * UNSUPPORTED for other dtypes; INVALID_ARG unless from <= to and to - from is finite. */
AXON_API axon_status_t axon_kernel_uniform(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                           double from, double to);

/* Normal reals mean + std * z for float dst (Box-Muller). Elements 2k and 2k+1 share one pair of uniforms (u1, u2):
 * u1 in (0, 1] (never 0, so log is finite), z = sqrt(-2 ln u1) * cos(2 pi u2) for the even element and * sin for
 * the odd one, computed in double. 32-bit dtypes take x1, x2 from lanes (0, 1) or (2, 3) of block i / 4, with
 * u1 = (x1 + 1) * 2^-32 and u2 = x2 * 2^-32; float64 takes 64-bit x1 from lanes (0, 1) and x2 from lanes (2, 3) of
 * block i / 2, with u1 = ((x1 >> 11) + 1) * 2^-53 and u2 = (x2 >> 11) * 2^-53. UNSUPPORTED for non-float dtypes;
 * INVALID_ARG if std < 0 or either parameter is not finite. */
AXON_API axon_status_t axon_kernel_normal(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                          double mean, double std);

/* Exponential reals -ln(u) / lambda for float dst, with u in (0, 1) (never 0 or 1, so every value is finite and
 * positive in float32 and float64, as multinomial's division by them needs; float16 and bfloat16 round the smallest
 * to 0): u = (x + 0.5) * 2^-32 from one 32-bit lane, or ((x >> 11) + 0.5) * 2^-53 from 64 bits for float64, computed
 * in double, then rounded to the dtype.
 * UNSUPPORTED for non-float dtypes; INVALID_ARG unless lambda is finite and > 0. */
AXON_API axon_status_t axon_kernel_exponential(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed,
                                               uint64_t offset, double lambda);

/* Cauchy reals median + sigma tan(pi (u - 1/2)) for float dst, u drawn as axon_kernel_exponential draws it (so never
 * 0 or 1), computed in double. UNSUPPORTED for non-float dtypes; INVALID_ARG unless median is finite and sigma is
 * finite and > 0. */
AXON_API axon_status_t axon_kernel_cauchy(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                          double median, double sigma);

/* Log-normal reals exp(mean + std z) for float dst, z the normal axon_kernel_normal(mean 0, std 1) would give that
 * element. UNSUPPORTED for non-float dtypes; INVALID_ARG unless mean is finite and std is finite and > 0. */
AXON_API axon_status_t axon_kernel_log_normal(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed,
                                              uint64_t offset, double mean, double std);

/* Geometric counts ceil(ln u / ln(1 - p)) >= 1 (trials up to the first success), u drawn as axon_kernel_exponential
 * draws it, stored with the copy rules in any float or integer dst. UNSUPPORTED for bool and complex dst;
 * INVALID_ARG unless 0 < p < 1. */
AXON_API axon_status_t axon_kernel_geometric(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed,
                                             uint64_t offset, double p);

/* A random permutation of 0..n-1 into dst (contiguous 1-d int64, n = its size) by Fisher-Yates: for i from n - 1
 * down to 1, swap elements i and x_i % (i + 1), x_i being the 64 bits random_int would give element i of an int64
 * dst (blocks: axon_philox_blocks(AXON_INT64, n)). One thread. INVALID_ARG for another dst. */
AXON_API axon_status_t axon_kernel_randperm(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed,
                                            uint64_t offset);

/* Uniform integers in [from, from + range), stored with the copy rules (floating and bool dst too). Each element
 * is from + x % range (wrapping in int64), x being its 32 or 64 random bits; like PyTorch, this keeps the small
 * modulo bias. range 0 means 2^64 (from + x). Ranges above 2^32, and 0, need an 8-byte dtype, else INVALID_ARG.
 * UNSUPPORTED for complex dst. */
AXON_API axon_status_t axon_kernel_random_int(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed,
                                              uint64_t offset, int64_t from, uint64_t range);

/* 1 with probability p, else 0, in dst's dtype: u < p with u = x * 2^-32 (32-bit dtypes) or (x >> 11) * 2^-53
 * (8-byte dtypes). INVALID_ARG unless 0 <= p <= 1; UNSUPPORTED for complex dst. */
AXON_API axon_status_t axon_kernel_bernoulli(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed,
                                             uint64_t offset, double p);

/* Bernoulli with a probability per element: element i is 1 when u_i < p[i], u_i drawn exactly as
 * axon_kernel_bernoulli draws it (so a p filled with one value gives that kernel's result). p: dst's shape (broadcast
 * with 0 strides), float32/64/16 or bfloat16, read when the command runs: a p outside [0, 1] or NaN fails the command
 * with INVALID_ARG "bernoulli: p=... is not in [0, 1]" (at the next synchronization); that element is then 0. */
AXON_API axon_status_t axon_kernel_bernoulli_tensor(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *p,
                                                    uint64_t seed, uint64_t offset);

AXON_EXTERN_C_END

#endif
