/* Unary pointwise loops: one function per (op, compute dtype), generated from one expression per op and dtype class,
 * and the table the executor looks them up in. An op is defined for a dtype exactly when its table entry is set.
 *
 * Expressions see x (the element as work type W), W itself, U (the unsigned arithmetic type) and the parameters
 * p0..p2. Float expressions are written once for float and double through <tgmath.h>; float16 and bfloat16 use the
 * float versions, so they compute in float32 and round once on store. Integer arithmetic goes through U so that it
 * wraps instead of being undefined. */
#include <string.h>
#include <tgmath.h>

#include "pointwise_impl.h"
#include "special_airy.h"
#include "special_bessel.h"
#include "special_erf.h"
#include "special_math.h"

/* The expressions are written once for signed and unsigned types, so `x < 0` is sometimes always false. */
#pragma GCC diagnostic ignored "-Wtype-limits"

#ifdef AXON_HAVE_LIBMVEC
/* glibc's libmvec (2.35 and later) has vector versions of these float functions (4, 8 and 16 lanes; each of the
 * AXON_CLONES builds of a loop calls its ISA's). Declaring them `simd` lets GCC vectorize the loops that call them,
 * which glibc's <math.h> does only under -ffast-math. Measured on this machine, per element: erf 9.2 -> 0.8 ns, tanh
 * 9.0 -> 1.1, tan 9.0 -> 1.0, atan 4.5 -> 0.9, sin and cos 2.9 -> 0.9, asinh 7.5 -> 3.4, all within 2.4 ulp and with
 * the same special values. The log and exp families, asin, acos, sinh, cosh, atanh, erfc and the activations built on
 * them (mish, softplus, log_sigmoid) were left scalar once (their 4-lane versions measured no faster); with the
 * wider versions the scalar loops were 4-14x torch CPU's time on 2^20 floats and now run at 0.3-1.0x of it
 * (docs/benchmarks.md). expf here is the raw exp those activations call, as PyTorch's do; the exp op and the
 * sigmoids keep PW_EXP (libaxon's own float exp; float64's is libmvec's now). Every loop that calls one of these runs
 * padded (PW_US here, PW_B2S in pointwise_binary.c, see below). CMake defines AXON_HAVE_LIBMVEC only when every symbol
 * is there, and links libmvec. */
float erff(float) PW_SIMD;
float tanhf(float) PW_SIMD;
float tanf(float) PW_SIMD;
float atanf(float) PW_SIMD;
float sinf(float) PW_SIMD;
float cosf(float) PW_SIMD;
float asinhf(float) PW_SIMD;
float logf(float) PW_SIMD;
float log2f(float) PW_SIMD;
float log10f(float) PW_SIMD;
float log1pf(float) PW_SIMD;
float expm1f(float) PW_SIMD;
float exp2f(float) PW_SIMD;
float asinf(float) PW_SIMD;
float acosf(float) PW_SIMD;
float sinhf(float) PW_SIMD;
float coshf(float) PW_SIMD;
float atanhf(float) PW_SIMD;
float erfcf(float) PW_SIMD;
float expf(float) PW_SIMD;
/* and their float64 versions, which PyTorch's CPU kernels vectorize too */
double (erf)(double) PW_SIMD;
double (tanh)(double) PW_SIMD;
double (tan)(double) PW_SIMD;
double (atan)(double) PW_SIMD;
double (sin)(double) PW_SIMD;
double (cos)(double) PW_SIMD;
double (asinh)(double) PW_SIMD;
double (log)(double) PW_SIMD;
double (log2)(double) PW_SIMD;
double (log10)(double) PW_SIMD;
double (log1p)(double) PW_SIMD;
double (expm1)(double) PW_SIMD;
double (exp2)(double) PW_SIMD;
double (asin)(double) PW_SIMD;
double (acos)(double) PW_SIMD;
double (sinh)(double) PW_SIMD;
double (cosh)(double) PW_SIMD;
double (atanh)(double) PW_SIMD;
double (erfc)(double) PW_SIMD;
double (exp)(double) PW_SIMD;

/* A vectorized loop calls the 4-lane function in its body but the scalar one for a short trip and for the last
 * n % 4 elements, and the two may differ by an ulp or two. Then an element's value would depend on where a chunk,
 * run or block boundary falls: on the thread count and the layout. So these loops run their body only on multiples
 * of PW_SIMD_PAD elements (no vector factor GCC uses, up to 32 two-byte lanes of an AVX-512 register, leaves a tail
 * then) and push the last few elements through a zero-padded block of that size. The body is not inlined, so both
 * calls run the same code. */
#define PW_UNARY_SIMD_FN(op, EXPR, DE, dn, T, WT, UT)                                                             \
    __attribute__((noinline)) PW_UNARY_FN(op##_body, EXPR, T, PW_ST_##dn, DE, dn, T, WT, UT)                    \
    static int pw_unary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n, const pw_ctx_t *ctx) { \
        const int64_t bulk = n & ~(int64_t)(PW_SIMD_PAD - 1);                                                   \
        if (bulk > 0) pw_unary_##op##_body_##dn(o, in, sm, bulk, ctx);                                          \
        if (n > bulk) {                                                                                         \
            T pad_in[PW_SIMD_PAD], pad_out[PW_SIMD_PAD];                                                        \
            memset(pad_in, 0, sizeof pad_in);                                                                   \
            memcpy(pad_in, in[0] + bulk * (int64_t)sizeof(T), (size_t)(n - bulk) * sizeof(T));                  \
            const char *pin[1] = {(const char *)pad_in};                                                        \
            pw_unary_##op##_body_##dn((char *)pad_out, pin, sm, PW_SIMD_PAD, ctx);                              \
            memcpy(o + bulk * (int64_t)sizeof(T), pad_out, (size_t)(n - bulk) * sizeof(T));                     \
        }                                                                                                       \
        return 0;                                                                                               \
    }
#define PW_US(op, EXPR, DE, dn, T, WT, UT) PW_UNARY_SIMD_FN(op, EXPR, DE, dn, T, WT, UT)
#else
#define PW_US(op, EXPR, DE, dn, T, WT, UT) PW_U(op, EXPR, DE, dn, T, WT, UT)
#endif

/* out[i] = ST(EXPR(x = LD(a[i]))). RT/RST: result storage type and store, for the ops with a bool result. */
#define PW_UNARY_FN(op, EXPR, RT, RST, DE, dn, T, WT, UT)                                                         \
    AXON_CLONES                                                                                                    \
    static int pw_unary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n, const pw_ctx_t *ctx) { \
        typedef WT W;                                                                                           \
        typedef UT U;                                                                                           \
        PW_PARAMS(ctx);                                                                                         \
        (void)sm;                                                                                               \
        RT *restrict out = (RT *)o;                                                                             \
        const T *restrict a = (const T *)in[0];                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                                       \
            const W x = PW_LD_##dn(a[i]);                                                                       \
            (void)x;                                                                                            \
            out[i] = RST(EXPR);                                                                                 \
        }                                                                                                       \
        return 0;                                                                                               \
    }

/* Result in the compute dtype, or bool. The dtype traits come last, from PW_FLOATS / PW_INTS / PW_BOOLS. */
#define PW_U(op, EXPR, DE, dn, T, WT, UT) PW_UNARY_FN(op, EXPR, T, PW_ST_##dn, DE, dn, T, WT, UT)
#define PW_UB(op, EXPR, DE, dn, T, WT, UT) PW_UNARY_FN(op, EXPR, uint8_t, PW_ST_BOOL, DE, dn, T, WT, UT)
#define PW_ENTRY(op, DE, dn, T, WT, UT) [DE] = pw_unary_##op##_##dn,

/* ---- floats ---- */

PW_DOUBLES(PW_U, neg, (-x))
PW_DOUBLES(PW_U, abs, (fabs(x)))
/* neg and abs of float16 and bfloat16 flip or clear the sign bit where it lies, as PyTorch's do: exact, and without
 * the trip through float (2x torch CPU's time for a million halves). pointwise.c keeps them off the float32 loops. */
#define PW_HALF_SIGN_FN(op, dn, EXPR)                                                                           \
    AXON_CLONES static int pw_unary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n,         \
                                                const pw_ctx_t *ctx) {                                          \
        (void)sm, (void)ctx;                                                                                    \
        uint16_t *restrict out = (uint16_t *)o;                                                                 \
        const uint16_t *restrict a = (const uint16_t *)in[0];                                                   \
        for (int64_t i = 0; i < n; i++) out[i] = (uint16_t)(EXPR);                                              \
        return 0;                                                                                               \
    }
PW_HALF_SIGN_FN(neg, f16, a[i] ^ 0x8000u)
PW_HALF_SIGN_FN(neg, bf16, a[i] ^ 0x8000u)
PW_HALF_SIGN_FN(abs, f16, a[i] & 0x7FFFu)
PW_HALF_SIGN_FN(abs, bf16, a[i] & 0x7FFFu)
PW_FLOATS(PW_U, sign, ((W)((x > 0) - (x < 0)))) /* NaN gives 0, as in PyTorch */
PW_FLOATS(PW_U, reciprocal, ((W)1 / x))
PW_FLOATS(PW_U, sqrt, (sqrt(x)))
PW_FLOATS(PW_U, rsqrt, ((W)1 / sqrt(x)))
PW_FLOATS(PW_US, exp, (PW_EXP(x)))
PW_FLOATS(PW_US, exp2, (exp2(x)))
PW_FLOATS(PW_US, expm1, (expm1(x)))
PW_FLOATS(PW_US, log, (log(x)))
PW_FLOATS(PW_US, log2, (log2(x)))
PW_FLOATS(PW_US, log10, (log10(x)))
PW_FLOATS(PW_US, log1p, (log1p(x)))
PW_FLOATS(PW_US, sin, (sin(x)))
PW_FLOATS(PW_US, cos, (cos(x)))
PW_FLOATS(PW_US, tan, (tan(x)))
PW_FLOATS(PW_US, asin, (asin(x)))
PW_FLOATS(PW_US, acos, (acos(x)))
PW_FLOATS(PW_US, atan, (atan(x)))
PW_FLOATS(PW_US, sinh, (sinh(x)))
PW_FLOATS(PW_US, cosh, (cosh(x)))
PW_FLOATS(PW_US, tanh, (tanh(x)))
PW_FLOATS(PW_US, asinh, (asinh(x)))
PW_FLOATS(PW_U, acosh, (acosh(x)))
PW_FLOATS(PW_US, atanh, (atanh(x)))
PW_FLOATS(PW_US, erf, (erf(x)))
PW_FLOATS(PW_US, erfc, (erfc(x)))
PW_FLOATS(PW_US, sigmoid, ((W)1 / ((W)1 + PW_EXP(-x))))
PW_FLOATS(PW_U, relu, (x < 0 ? (W)0 : x)) /* not x > 0 ? x : 0, which would turn NaN into 0 */
/* The activations follow PyTorch's CPU formulas term by term, so float32 results round the same way. */
PW_FLOATS(PW_US, gelu, (x * (W)0.5 * ((W)1 + PW_ERF_GELU(x * (W)0.70710678118654752440))))
PW_FLOATS(PW_US, gelu_tanh,
          ((W)0.5 * x * ((W)1 + tanh((W)0.79788456080286535588 * (x + (W)0.044715 * (x * x * x))))))
PW_FLOATS(PW_US, silu, (x / ((W)1 + PW_EXP(-x))))
PW_FLOATS(PW_US, mish, (x * tanh(log1p(exp(x)))))
PW_FLOATS(PW_US, softplus, (x * p0 > p1 ? x : log1p(exp(x * p0)) / p0)) /* p0 beta, p1 threshold */
PW_FLOATS(PW_U, hardsigmoid, (PW_MIN_STD(PW_MAX_STD(x + (W)3, (W)0), (W)6) / (W)6))
PW_FLOATS(PW_U, hardswish, (x * PW_MIN_STD(PW_MAX_STD(x + (W)3, (W)0), (W)6) / (W)6))
PW_FLOATS(PW_U, hardtanh, (PW_MIN_STD(PW_MAX_STD(x, p0), p1))) /* p0 min_val, p1 max_val */
PW_FLOATS(PW_U, leaky_relu, (x > 0 ? x : x * p0))
PW_FLOATS(PW_US, elu, (x <= 0 ? expm1(x * p2) * p0 : x * p1)) /* p0 alpha*scale, p1 scale, p2 input_scale */
PW_FLOATS(PW_U, floor, (PW_FLOOR(x)))
PW_FLOATS(PW_U, ceil, (PW_CEIL(x)))
PW_FLOATS(PW_U, round, (PW_RINT(x)))
PW_FLOATS(PW_U, trunc, (PW_TRUNC(x)))
PW_FLOATS(PW_U, frac, (x - PW_TRUNC(x)))
PW_FLOATS(PW_UB, logical_not, (x == 0))
PW_FLOATS(PW_UB, isnan, (x != x))
PW_FLOATS(PW_UB, isinf, (fabs(x) == (W)INFINITY))
PW_FLOATS(PW_UB, isfinite, (fabs(x) < (W)INFINITY))
PW_FLOATS(PW_U, square, (x * x))
PW_FLOATS(PW_U, cube, (x * x * x))
PW_FLOATS(PW_U, rsquare, ((W)1 / (x * x)))
PW_FLOATS(PW_US, log_sigmoid, (PW_MIN_STD(x, (W)0) - log1p(PW_EXP(-fabs(x)))))
/* p0 eps; the clamp keeps NaN (x < lo and x > hi are both false). */
PW_FLOATS(PW_US, logit, (log((p0 < 0 ? x : x < p0 ? p0 : x > (W)1 - p0 ? (W)1 - p0 : x) /
                            ((W)1 - (p0 < 0 ? x : x < p0 ? p0 : x > (W)1 - p0 ? (W)1 - p0 : x)))))
PW_FLOATS(PW_U, softshrink, (x > p0 ? x - p0 : x < -p0 ? x + p0 : x * (W)0)) /* p0 lambd */
PW_FLOATS(PW_U, hardshrink, (x >= -p0 && x <= p0 ? (W)0 : x))
PW_FLOATS(PW_U, threshold, (x <= p0 ? p1 : x)) /* p0 threshold, p1 value */
PW_INTS(PW_U, threshold, (x <= p0 ? p1 : x))
PW_FLOATS(PW_UB, isposinf, (x == (W)INFINITY))
PW_FLOATS(PW_UB, isneginf, (x == -(W)INFINITY))
PW_FLOATS(PW_UB, signbit, (copysign((W)1, x) < 0)) /* the sign bit, NaN and -0.0 included */

/* ---- integers ---- */

PW_INTS(PW_U, neg, ((W)(0u - (U)x)))
PW_INTS(PW_U, abs, (x < 0 ? (W)(0u - (U)x) : x)) /* abs(INT_MIN) wraps to INT_MIN */
PW_INTS(PW_U, sign, ((W)((x > 0) - (x < 0))))
PW_INTS(PW_U, relu, (x < 0 ? (W)0 : x))
PW_INTS(PW_U, hardtanh, (PW_MIN_STD(PW_MAX_STD(x, p0), p1)))
PW_INTS(PW_U, identity, (x)) /* floor, ceil, round and trunc of an integer */
PW_INTS(PW_UB, logical_not, (x == 0))
PW_INTS(PW_U, bitwise_not, ((W)~x))
PW_INTS(PW_UB, never, (0)) /* isnan, isinf */
PW_INTS(PW_UB, always, (1)) /* isfinite */
PW_INTS(PW_UB, negative, (x < 0)) /* signbit */
PW_INTS(PW_U, square, ((W)((U)x * (U)x)))

/* ---- bool ---- */

PW_BOOLS(PW_U, sign, (x))
PW_BOOLS(PW_UB, logical_not, (!x))
PW_BOOLS(PW_U, bitwise_not, (!x))
PW_BOOLS(PW_UB, never, (0))
PW_BOOLS(PW_UB, always, (1))

/* Special functions in float64, rounded once; lgamma_r is glibc's lgamma without the global sign it writes. */
static inline double pw_lgamma(double x) {
    int sign;
    return lgamma_r(x, &sign);
}

/* Lanczos' coefficients for g = 7, n = 9 (Gamma within about 1e-15 in float64 for arguments >= 0.5). */
static const double PW_LANCZOS[9] = {0.99999999999980993, 676.5203681218851, -1259.1392167224028,
                                     771.32342877765313, -176.61502916214059, 12.507343278686905,
                                     -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};

/* lgamma of a float32 (or half) argument in float64 arithmetic without branches, so that its loop vectorizes with
 * libmvec's log and sin: glibc's scalar lgamma_r took 30-40 ns an element, 6x torch CPU's time (which runs Sleef's
 * vector lgammaf). y >= 0.5 by Lanczos' formula, whose sum c0 + sum ck / (z + k) is taken as one fraction (prefix
 * and suffix products of the positive factors z + k, one division); below 0.5 by reflection, lgamma(x) =
 * log(pi / |sin(pi x)|) - lgamma(1 - x), with sin(pi x) reduced exactly to |x - rint(x)| <= 1/2 first. Poles and
 * +-inf give inf, 1 and 2 exactly 0. Within one rounding (0.5 ulp of float32 after the float64 result's own) of
 * glibc's float64 lgamma over every float32 where |lgamma| > 1e-3, within 6e-11 absolute nearer its zeros. */
static inline __attribute__((always_inline)) double pw_lgamma_single(double x) {
    const double y = x < 0.5 ? 1.0 - x : x, z = y - 1.0;
    double pre[10], suf[10];
    pre[1] = 1.0;
    for (int k = 1; k < 9; k++) pre[k + 1] = pre[k] * (z + k);
    suf[8] = 1.0;
    for (int k = 8; k > 1; k--) suf[k - 1] = suf[k] * (z + k);
    double p = PW_LANCZOS[0] * pre[9];
    for (int k = 1; k < 9; k++) p += PW_LANCZOS[k] * (pre[k] * suf[k]);
    const double a = z > 1e20 ? PW_LANCZOS[0] : p / pre[9]; /* past 1e20 the sum is c0 to float64 precision */
    const double t = z + 7.5;
    const double l = 0.91893853320467274 + (z + 0.5) * log(t) - t + log(a);
    const double r = x - rint(x);
    const double refl = log(3.14159265358979324 / fabs(sin(3.14159265358979324 * r))) - l;
    const double v = x < 0.5 ? refl : l;
    return x == 1.0 || x == 2.0 ? 0.0 : fabs(x) == INFINITY ? INFINITY : v;
}
PW_US(lgamma, ((W)pw_lgamma_single((double)x)), AXON_FLOAT32, f32, float, float, uint32_t)
PW_US(lgamma, ((W)pw_lgamma_single((double)x)), AXON_FLOAT16, f16, uint16_t, float, uint32_t)
PW_US(lgamma, ((W)pw_lgamma_single((double)x)), AXON_BFLOAT16, bf16, uint16_t, float, uint32_t)
PW_U(lgamma, ((W)pw_lgamma(x)), AXON_FLOAT64, f64, double, double, uint64_t)
PW_FLOATS(PW_U, digamma, ((W)axon_digamma((double)x)))
PW_FLOATS(PW_U, polygamma, ((W)axon_polygamma(ctx->pi[0], (double)x))) /* pi[0] the order */

/* torch.special's Bessel and normal-distribution functions, in float64 and rounded once. */
PW_DOUBLES(PW_U, spherical_bessel_j0, ((W)axon_spherical_bessel_j0((double)x)))
PW_DOUBLES(PW_U, airy_ai, ((W)axon_airy_ai((double)x)))
PW_DOUBLES(PW_U, erfcx, ((W)axon_erfcx((double)x)))
PW_DOUBLES(PW_U, log_ndtr, ((W)axon_log_ndtr((double)x)))
static inline double pw_entr(double x) { return x != x ? x : x > 0 ? -x * log(x) : x == 0 ? 0.0 : -INFINITY; }
static inline double pw_sinc(double x) { return x == 0 ? 1.0 : sin(AXON_PI * x) / (AXON_PI * x); }
PW_FLOATS(PW_U, entr, ((W)pw_entr((double)x)))
PW_FLOATS(PW_U, sinc, ((W)pw_sinc((double)x)))
/* nan_to_num: p0, p1, p2 replace NaN, +inf and -inf */
PW_FLOATS(PW_U, nan_to_num, (x != x ? p0 : x == (W)INFINITY ? p1 : x == -(W)INFINITY ? p2 : x))
/* round(x, decimals): p0 = 10^|decimals|, p1 = 1 for decimals < 0 */
PW_FLOATS(PW_U, round_decimals, (p1 != 0 ? PW_RINT(x / p0) * p0 : PW_RINT(x * p0) / p0))
PW_FLOATS(PW_U, angle, (x != x ? x : x < 0 ? (W)3.14159265358979323846 : (W)0))
/* frexp in double, exact for float too: a float's mantissa and exponent are those of the same double (a subnormal
 * float is a normal double). Through the bits, which vectorizes (glibc's frexp is a call): a subnormal double is
 * scaled by 2^54 first; the mantissa keeps x's sign and fraction with the exponent of [1/2, 1), the exponent is the
 * biased one less 1022. 0, inf and NaN pass through with exponent 0, as glibc's and CPU's. */
static inline double pw_frexp_mantissa(double x) {
    const int sub = fabs(x) < 0x1p-1022, plain = x != 0 && fabs(x) < INFINITY;
    const uint64_t u = axon_f64_bits(sub ? x * 0x1p54 : x);
    const double m = axon_f64_from_bits((u & 0x800fffffffffffffu) | 0x3fe0000000000000u);
    return plain ? m : x;
}
static inline double pw_frexp_exponent(double x) {
    const int sub = fabs(x) < 0x1p-1022, plain = x != 0 && fabs(x) < INFINITY;
    const uint64_t u = axon_f64_bits(sub ? x * 0x1p54 : x);
    const int32_t e = (int32_t)((u >> 52) & 0x7ff) - 1022 - (sub ? 54 : 0);
    return plain ? (double)e : 0.0;
}
PW_FLOATS(PW_U, frexp_mantissa, ((W)pw_frexp_mantissa((double)x)))
PW_FLOATS(PW_U, frexp_exponent, ((W)pw_frexp_exponent((double)x)))
/* PyTorch's renorm_scale_factor: maxnorm and eps in the work type */
PW_FLOATS(PW_U, renorm_factor, (x > p0 ? p0 / (x + (W)1e-7) : (W)1))
/* erfinv in float (float32 and the half types): M. Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems, 2011), one log and a degree-8 polynomial in w = -log((1 - x)(1 + x)) or in
 * sqrt(w), within about 4 ulp of float32's; both branches are computed and one selected, so the loop vectorizes
 * with libmvec's logf. float64 goes through ndtri's series (special_ndtri.c). */
static inline float pw_erfinvf(float x) {
    const float w = -logf((1.0f - x) * (1.0f + x)), c = w - 2.5f, t = sqrtf(w) - 3.0f;
    float p = 2.81022636e-08f, q = -0.000200214257f;
    p = 3.43273939e-07f + p * c, q = 0.000100950558f + q * t;
    p = -3.5233877e-06f + p * c, q = 0.00134934322f + q * t;
    p = -4.39150654e-06f + p * c, q = -0.00367342844f + q * t;
    p = 0.00021858087f + p * c, q = 0.00573950773f + q * t;
    p = -0.00125372503f + p * c, q = -0.0076224613f + q * t;
    p = -0.00417768164f + p * c, q = 0.00943887047f + q * t;
    p = 0.246640727f + p * c, q = 1.00167406f + q * t;
    p = 1.50140941f + p * c, q = 2.83297682f + q * t;
    const float r = (w < 5.0f ? p : q) * x;
    return fabsf(x) == 1.0f ? copysignf(INFINITY, x) : r;
}
PW_US(erfinv, ((W)pw_erfinvf((float)x)), AXON_FLOAT32, f32, float, float, uint32_t)
PW_US(erfinv, ((W)pw_erfinvf((float)x)), AXON_FLOAT16, f16, uint16_t, float, uint32_t)
PW_US(erfinv, ((W)pw_erfinvf((float)x)), AXON_BFLOAT16, bf16, uint16_t, float, uint32_t)

/* conj_physical of a real tensor is a copy (the complex loops are in pointwise_complex.c); ints have one above. */
PW_FLOATS(PW_U, identity, (x))
PW_BOOLS(PW_U, identity, (x))

/* ---- the table ---- */

#define PW_F(op) PW_FLOATS(PW_ENTRY, op)
#define PW_FD(op) PW_DOUBLES(PW_ENTRY, op)
#define PW_BESSEL_ENTRY(fn, DE, dn, T, WT, UT) [DE] = axon_pw_bessel_##fn##_##dn,
#define PW_I(op) PW_INTS(PW_ENTRY, op)
#define PW_B(op) PW_BOOLS(PW_ENTRY, op)

const pw_loop_fn axon_pw_unary_loops[AXON_UNARY_COUNT][AXON_DTYPE_COUNT] = {
    [AXON_UNARY_NEG] = {PW_F(neg) PW_I(neg)},
    [AXON_UNARY_ABS] = {PW_F(abs) PW_I(abs)},
    [AXON_UNARY_SIGN] = {PW_F(sign) PW_I(sign) PW_B(sign)},
    [AXON_UNARY_RECIPROCAL] = {PW_F(reciprocal)},
    [AXON_UNARY_SQRT] = {PW_F(sqrt)},
    [AXON_UNARY_RSQRT] = {PW_F(rsqrt)},
    [AXON_UNARY_EXP] = {PW_F(exp)},
    [AXON_UNARY_EXP2] = {PW_F(exp2)},
    [AXON_UNARY_EXPM1] = {PW_F(expm1)},
    [AXON_UNARY_LOG] = {PW_F(log)},
    [AXON_UNARY_LOG2] = {PW_F(log2)},
    [AXON_UNARY_LOG10] = {PW_F(log10)},
    [AXON_UNARY_LOG1P] = {PW_F(log1p)},
    [AXON_UNARY_SIN] = {PW_F(sin)},
    [AXON_UNARY_COS] = {PW_F(cos)},
    [AXON_UNARY_TAN] = {PW_F(tan)},
    [AXON_UNARY_ASIN] = {PW_F(asin)},
    [AXON_UNARY_ACOS] = {PW_F(acos)},
    [AXON_UNARY_ATAN] = {PW_F(atan)},
    [AXON_UNARY_SINH] = {PW_F(sinh)},
    [AXON_UNARY_COSH] = {PW_F(cosh)},
    [AXON_UNARY_TANH] = {PW_F(tanh)},
    [AXON_UNARY_ASINH] = {PW_F(asinh)},
    [AXON_UNARY_ACOSH] = {PW_F(acosh)},
    [AXON_UNARY_ATANH] = {PW_F(atanh)},
    [AXON_UNARY_ERF] = {PW_F(erf)},
    [AXON_UNARY_ERFC] = {PW_F(erfc)},
    [AXON_UNARY_SIGMOID] = {PW_F(sigmoid)},
    [AXON_UNARY_RELU] = {PW_F(relu) PW_I(relu)},
    [AXON_UNARY_GELU] = {PW_F(gelu)},
    [AXON_UNARY_GELU_TANH] = {PW_F(gelu_tanh)},
    [AXON_UNARY_SILU] = {PW_F(silu)},
    [AXON_UNARY_MISH] = {PW_F(mish)},
    [AXON_UNARY_SOFTPLUS] = {PW_F(softplus)},
    [AXON_UNARY_HARDSIGMOID] = {PW_F(hardsigmoid)},
    [AXON_UNARY_HARDSWISH] = {PW_F(hardswish)},
    [AXON_UNARY_HARDTANH] = {PW_F(hardtanh) PW_I(hardtanh)},
    [AXON_UNARY_LEAKY_RELU] = {PW_F(leaky_relu)},
    [AXON_UNARY_ELU] = {PW_F(elu)},
    [AXON_UNARY_FLOOR] = {PW_F(floor) PW_I(identity)},
    [AXON_UNARY_CEIL] = {PW_F(ceil) PW_I(identity)},
    [AXON_UNARY_ROUND] = {PW_F(round) PW_I(identity)},
    [AXON_UNARY_TRUNC] = {PW_F(trunc) PW_I(identity)},
    [AXON_UNARY_FRAC] = {PW_F(frac)},
    [AXON_UNARY_LOGICAL_NOT] = {PW_F(logical_not) PW_I(logical_not) PW_B(logical_not)},
    [AXON_UNARY_BITWISE_NOT] = {PW_I(bitwise_not) PW_B(bitwise_not)},
    [AXON_UNARY_ISNAN] = {PW_F(isnan) PW_I(never) PW_B(never)},
    [AXON_UNARY_ISINF] = {PW_F(isinf) PW_I(never) PW_B(never)},
    [AXON_UNARY_ISFINITE] = {PW_F(isfinite) PW_I(always) PW_B(always)},
    [AXON_UNARY_SQUARE] = {PW_F(square) PW_I(square)},
    [AXON_UNARY_LOG_SIGMOID] = {PW_F(log_sigmoid)},
    [AXON_UNARY_LOGIT] = {PW_F(logit)},
    [AXON_UNARY_SOFTSHRINK] = {PW_F(softshrink)},
    [AXON_UNARY_HARDSHRINK] = {PW_F(hardshrink)},
    [AXON_UNARY_THRESHOLD] = {PW_F(threshold) PW_I(threshold)},
    [AXON_UNARY_ISPOSINF] = {PW_F(isposinf) PW_I(never) PW_B(never)},
    [AXON_UNARY_ISNEGINF] = {PW_F(isneginf) PW_I(never) PW_B(never)},
    [AXON_UNARY_SIGNBIT] = {PW_F(signbit) PW_I(negative) PW_B(never)},
    [AXON_UNARY_CUBE] = {PW_F(cube)},
    [AXON_UNARY_RSQUARE] = {PW_F(rsquare)},
    [AXON_UNARY_CONJ] = {PW_F(identity) PW_I(identity) PW_B(identity)},
    [AXON_UNARY_LGAMMA] = {PW_F(lgamma)},
    [AXON_UNARY_DIGAMMA] = {PW_F(digamma)},
    [AXON_UNARY_POLYGAMMA] = {PW_F(polygamma)},
    [AXON_UNARY_BESSEL_J0] = {PW_DOUBLES(PW_BESSEL_ENTRY, j0)},
    [AXON_UNARY_BESSEL_J1] = {PW_DOUBLES(PW_BESSEL_ENTRY, j1)},
    [AXON_UNARY_BESSEL_Y0] = {PW_DOUBLES(PW_BESSEL_ENTRY, y0)},
    [AXON_UNARY_BESSEL_Y1] = {PW_DOUBLES(PW_BESSEL_ENTRY, y1)},
    [AXON_UNARY_MODIFIED_BESSEL_I0] = {PW_DOUBLES(PW_BESSEL_ENTRY, i0)},
    [AXON_UNARY_MODIFIED_BESSEL_I1] = {PW_DOUBLES(PW_BESSEL_ENTRY, i1)},
    [AXON_UNARY_MODIFIED_BESSEL_K0] = {PW_DOUBLES(PW_BESSEL_ENTRY, k0)},
    [AXON_UNARY_MODIFIED_BESSEL_K1] = {PW_DOUBLES(PW_BESSEL_ENTRY, k1)},
    [AXON_UNARY_SCALED_MODIFIED_BESSEL_K0] = {PW_DOUBLES(PW_BESSEL_ENTRY, k0e)},
    [AXON_UNARY_SCALED_MODIFIED_BESSEL_K1] = {PW_DOUBLES(PW_BESSEL_ENTRY, k1e)},
    [AXON_UNARY_I0] = {PW_FLOATS(PW_BESSEL_ENTRY, i0)},
    [AXON_UNARY_I0E] = {PW_FLOATS(PW_BESSEL_ENTRY, i0e)},
    [AXON_UNARY_I1] = {PW_FLOATS(PW_BESSEL_ENTRY, i1)},
    [AXON_UNARY_I1E] = {PW_FLOATS(PW_BESSEL_ENTRY, i1e)},
    [AXON_UNARY_SPHERICAL_BESSEL_J0] = {PW_FD(spherical_bessel_j0)},
    [AXON_UNARY_AIRY_AI] = {PW_FD(airy_ai)},
    [AXON_UNARY_ERFCX] = {PW_FD(erfcx)},
    [AXON_UNARY_LOG_NDTR] = {PW_FD(log_ndtr)},
    [AXON_UNARY_NDTRI] = {[AXON_FLOAT32] = axon_pw_ndtri_f32, [AXON_FLOAT64] = axon_pw_ndtri_f64},
    [AXON_UNARY_ENTR] = {PW_F(entr)},
    [AXON_UNARY_SINC] = {PW_F(sinc)},
    [AXON_UNARY_ERFINV] = {[AXON_FLOAT32] = pw_unary_erfinv_f32, [AXON_FLOAT16] = pw_unary_erfinv_f16,
                           [AXON_BFLOAT16] = pw_unary_erfinv_bf16, [AXON_FLOAT64] = axon_pw_erfinv_f64},
    [AXON_UNARY_NAN_TO_NUM] = {PW_F(nan_to_num) PW_I(identity) PW_B(identity)},
    [AXON_UNARY_ROUND_DECIMALS] = {PW_F(round_decimals)},
    [AXON_UNARY_ANGLE] = {PW_F(angle)},
    [AXON_UNARY_FREXP_MANTISSA] = {PW_F(frexp_mantissa)},
    [AXON_UNARY_FREXP_EXPONENT] = {PW_F(frexp_exponent)},
    [AXON_UNARY_RENORM_FACTOR] = {PW_F(renorm_factor)},
};
