/* Float math that vectorizes and gives the same bits in a vector body and a scalar tail: rounding (C's, inlined) and
 * an exp in plain arithmetic. Used by the pointwise kernels and, embedded as text, by tier 1's generated C
 * (libaxon/compiler/tier1_codegen.c), so that compiled code computes what the kernels compute. Self-contained apart
 * from dtype.h's bit casts: no libaxon types, no other includes. */
#ifndef AXON_KERNELS_POINTWISE_MATH_H
#define AXON_KERNELS_POINTWISE_MATH_H

#include <math.h>
#include <stdint.h>

#include "dtype.h"

/* ---- rounding ----
 * C's rint, floor, ceil and trunc: in the AVX2 and AVX-512 clones of the kernels (and tier 1's -march=native code)
 * GCC inlines them as one vector round instruction (SSE4.1's roundps, given -fno-math-errno and -fno-trapping-math,
 * which every kernel is built with). The baseline clone calls libm instead. libaxon rounded by adding and
 * subtracting 2^23 (2^52) before session 40, the same values in baseline code but some 20 instructions per vector:
 * floor and frac took 2-3x torch CPU's time. Exact operations, so every clone and scalar tail gives the same bits. */
static inline float pw_rint_f32(float x) { return __builtin_rintf(x); }
static inline double pw_rint_f64(double x) { return __builtin_rint(x); }
static inline float pw_floor_f32(float x) { return __builtin_floorf(x); }
static inline double pw_floor_f64(double x) { return __builtin_floor(x); }
static inline float pw_ceil_f32(float x) { return __builtin_ceilf(x); }
static inline double pw_ceil_f64(double x) { return __builtin_ceil(x); }
static inline float pw_trunc_f32(float x) { return __builtin_truncf(x); }
static inline double pw_trunc_f64(double x) { return __builtin_trunc(x); }

/* ---- exp for float, in plain arithmetic ----
 * glibc's expf is a scalar call (about 2 ns here) and libmvec's 4-lane one is no faster, so exp, sigmoid and silu
 * would not vectorize. This one does, and being IEEE arithmetic and fmaf (exact whether the CPU fuses it or libm
 * emulates it) it gives the same bits in a vector body, a scalar tail and every instruction-set clone. Cody-Waite
 * reduction x = n ln2 + r with ln2 split so that n * ln2_hi is exact, Cephes' degree-7 polynomial for exp(r) on
 * |r| <= ln2/2 in Horner's form to the end, and 2^n applied as two normal powers of two so that subnormal results
 * round once and large n overflows to infinity. Against double exp over every float: at most 0.894 ulp, and the same
 * infinities, zeros and NaNs (tests/test_expf_f32.c). The multiply-adds were separate multiplies and adds until
 * session 39 (0.98 ulp): fused, an exp-heavy loop runs about a third faster on an AVX2 core. */
/* The fmaf functions below are always inlined: an out-of-line copy is baseline code, where fmaf is a libm call, even
 * when every caller is an AVX2 clone (GCC made such copies of pw_expf and pw_erf_f32 for scalar tails). */
#define PW_MATH_INLINE static inline __attribute__((always_inline))
static inline float pw_pow2i_f32(int32_t k) { return axon_f32_from_bits((uint32_t)(k + 127) << 23); } /* |k| <= 126 */
/* The reduction and the polynomial on a clamped xc, for T float or a GCC vector of floats (attention's vector exp,
 * FMA its lane-wise fmaf and K its broadcast of a constant): declares n (round(xc / ln2), as T) and
 * p = exp(xc - n ln2). */
#define PW_EXPF_CORE(T, FMA, K, xc, n, p)                                                                         \
    const T n = FMA(xc, K(1.44269504088896341f), K(0x1.8p23f)) - K(0x1.8p23f); /* round to nearest integer */     \
    T p;                                                                                                           \
    {                                                                                                              \
        T r_ = FMA(n, K(-0.693359375f), xc); /* ln2_hi = 355/512: exact product */                                 \
        r_ = FMA(n, K(2.12194440e-4f), r_);  /* ln2_lo */                                                          \
        p = FMA(r_, K(1.9875691500e-4f), K(1.3981999507e-3f));                                                     \
        p = FMA(p, r_, K(8.3334519073e-3f));                                                                       \
        p = FMA(p, r_, K(4.1665795894e-2f));                                                                       \
        p = FMA(p, r_, K(1.6666665459e-1f));                                                                       \
        p = FMA(p, r_, K(5.0000001201e-1f));                                                                       \
        p = FMA(p, r_, K(1.0f));                                                                                   \
        p = FMA(p, r_, K(1.0f));                                                                                   \
    }
#define PW_SCALAR(c) (c)
PW_MATH_INLINE float pw_expf(float x) {
    float xc = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x; /* beyond: 0 and inf; a NaN passes through */
    PW_EXPF_CORE(float, fmaf, PW_SCALAR, xc, n, p)
    int32_t k = (int32_t)n, k1 = k >> 1, k2 = k - k1; /* n in [-150, 128]: both halves in [-75, 64] */
    float y = p * pw_pow2i_f32(k1) * pw_pow2i_f32(k2);
    return x != x ? x : y;
}
static inline double pw_exp_f64(double x) { return exp(x); }

/* ---- erf for float, in plain arithmetic ----
 * gelu's erf. x P(x^2) / Q(x^2) with P and Q of degree 5, fitted for this project to erf's relative error on
 * [0, 3.85] (0.24 ulp in exact arithmetic; beyond 3.85 erf rounds to 1 in float): all coefficients positive, so
 * Horner's steps do not cancel. Eleven fused multiply-adds and one divide, no exp: 0.54 ns per element on an AVX2
 * core against 0.75 for libmvec's 8-lane erff (docs/benchmarks.md). At most 6.0 ulp from erf over every float
 * (libaxon/tests/test_erf_f32.c checks 6.5), and exactly +-1 past 3.85, +-0 at +-0, NaN at NaN. fmaf is explicit
 * because -ffp-contract=off everywhere else: on a CPU without FMA it is a libm call, slower but the same bits. */
PW_MATH_INLINE float pw_erf_f32(float x) {
    /* No clamp to [-3.85, 3.85]: past it the quotient may be anything (inf / inf is NaN), but the last line replaces
     * it, and the two compares and blends of a clamp were a fifth of gelu_backward's loop on AVX2. */
    const float a = x, t = a * a;
    float p = 2.108907817988115e-06f, q = 3.873612147623634e-05f;
    p = fmaf(p, t, 2.8563071975920215e-04f);
    p = fmaf(p, t, 3.6714037810992787e-03f);
    p = fmaf(p, t, 5.247190177706559e-02f);
    p = fmaf(p, t, 1.8783715088646327e-01f);
    p = fmaf(p, t, 1.128379151644517f);
    q = fmaf(q, t, 1.144912979254586e-03f);
    q = fmaf(q, t, 1.4779804065374446e-02f);
    q = fmaf(q, t, 1.1310412122846247e-01f);
    q = fmaf(q, t, 4.997992250527621e-01f);
    q = fmaf(q, t, 1.0f);
    const float r = a * p / q;
    return fabsf(x) > 3.85f ? copysignf(1.0f, x) : r;
}

/* ---- exp(-y^2 / 2) for float, gelu_backward's Gaussian ----
 * pw_expf on an argument that is never positive: no upper clamp, and a NaN y needs no select (it reaches the
 * polynomial and comes out NaN). With the clamps gone from pw_erf_f32 too, a cache-resident gelu_backward loop on a
 * Zen 3 core went from 1.60 to 1.06 ns per element. pw_expf's bits for every y (test_expf_f32.c). */
PW_MATH_INLINE float pw_gauss_f32(float y) {
    float z = y * y * -0.5f;
    z = z < -104.0f ? -104.0f : z; /* below, exp is 0 in float; the clamp keeps n's conversion in range */
    PW_EXPF_CORE(float, fmaf, PW_SCALAR, z, n, p)
    const int32_t k = (int32_t)n, k1 = k >> 1, k2 = k - k1; /* n in [-150, 0] */
    return p * pw_pow2i_f32(k1) * pw_pow2i_f32(k2);
}
static inline double pw_gauss_f64(double y) { return exp(y * y * -0.5); }

#endif
