/* Complex pointwise loops (complex64 and complex128) and their tables, which pointwise.c consults when the compute
 * dtype is complex.
 *
 * The work type is the storage pair itself (axon_c64_t, axon_c128_t), and every op is an inline function of pairs,
 * written once for both through _Generic (PC). The arithmetic is PyTorch's, not C's complex operators':
 *   - a product is the plain four-multiply formula (C's `*` recovers infinities through __mulsc3, PyTorch does not),
 *     and the build's -ffp-contract=off keeps it unfused, as PyTorch's vector kernels compute it;
 *   - a quotient first scales both operands by the divisor's larger part, as PyTorch's vectorized division does, so
 *     that squaring the divisor neither overflows nor underflows; over 0 each part is divided by +0, as there;
 *   - abs is the hypotenuse (complex64 squares in double, which cannot overflow, and rounds once);
 *   - sgn is each part over |z|, 0 at 0, as PyTorch's vector kernels (its scalar loop, which takes the tails of
 *     short runs and complex32, divides by |z| + 0i as a complex number: NaN in both parts for an infinite |z|);
 *   - reciprocal is the scaled quotient 1 / z (PyTorch's conj(z) / |z|^2 overflows for parts beyond 1e19 in
 *     complex64).
 * The transcendental functions are C99's <complex.h> ones: libstdc++'s std::exp, std::log, std::sin... for
 * std::complex call these very functions, so the branch cuts and special values are PyTorch CPU's. */
#include <complex.h>
#include <math.h>

#include "pointwise_impl.h"

typedef axon_c64_t c64;
typedef axon_c128_t c128;

/* The op helpers for one complex type: dn its short name, T the pair, R its real type, CT C's complex type and S the
 * suffix of C's function names for R (f for float, nothing for double). */
#define PC_HELPERS(dn, T, R, CT, MAKE, S)                                                                          \
    static inline T pc_make_##dn(R re, R im) {                                                                    \
        T r = {re, im};                                                                                           \
        return r;                                                                                                 \
    }                                                                                                             \
    static inline T pc_add_##dn(T x, T y) { return pc_make_##dn(x.re + y.re, x.im + y.im); }                     \
    static inline T pc_sub_##dn(T x, T y) { return pc_make_##dn(x.re - y.re, x.im - y.im); }                     \
    /* re is written as a sum with a negated factor, which rounds the same as the difference: GCC 12's vectorizer \
     * turns a (difference, sum) pair of products into fused multiply-adds even under -ffp-contract=off. */       \
    static inline T pc_mul_##dn(T x, T y) {                                                                       \
        return pc_make_##dn(x.re * y.re + (-x.im) * y.im, x.re * y.im + x.im * y.re);                             \
    }                                                                                                             \
    static inline T pc_div_##dn(T x, T y) {                                                                       \
        R sc = fmax##S(fabs##S(y.re), fabs##S(y.im));                                                             \
        R ar = x.re / sc, ai = x.im / sc, br = y.re / sc, bi = y.im / sc, den = br * br + bi * bi;               \
        /* a zero divisor gives each part over +0, as PyTorch's kernels do: inf, -inf or NaN */                  \
        if (sc == 0) return pc_make_##dn(x.re / sc, x.im / sc);                                                   \
        return pc_make_##dn((ar * br + ai * bi) / den, (ai * br + (-ar) * bi) / den);                             \
    }                                                                                                             \
    static inline T pc_neg_##dn(T x) { return pc_make_##dn(-x.re, -x.im); }                                       \
    static inline T pc_conj_##dn(T x) { return pc_make_##dn(x.re, -x.im); }                                       \
    static inline T pc_reciprocal_##dn(T x) { return pc_div_##dn(pc_make_##dn(1, 0), x); }                      \
    static inline T pc_sgn_##dn(T x) {                                                                            \
        R a = pc_abs_##dn(x);                                                                                     \
        return a == 0 ? pc_make_##dn(0, 0) : pc_make_##dn(x.re / a, x.im / a);                                   \
    }                                                                                                             \
    static inline T pc_div_real_##dn(T x, R s) { return pc_make_##dn(x.re / s, x.im / s); }                       \
    static inline int pc_nonzero_##dn(T x) { return x.re != 0 || x.im != 0; }                                     \
    static inline int pc_eq_##dn(T x, T y) { return x.re == y.re && x.im == y.im; }                               \
    static inline int pc_isnan_##dn(T x) { return x.re != x.re || x.im != x.im; }                                 \
    /* C's functions through C's complex type */                                                                  \
    static inline CT pc_to_c_##dn(T x) { return MAKE(x.re, x.im); }                                               \
    static inline T pc_of_c_##dn(CT z) { return pc_make_##dn(creal##S(z), cimag##S(z)); }

static inline float pc_abs_c64(c64 x) { return (float)sqrt((double)x.re * x.re + (double)x.im * x.im); }
static inline double pc_abs_c128(c128 x) { return hypot(x.re, x.im); }

PC_HELPERS(c64, c64, float, float complex, CMPLXF, f)
PC_HELPERS(c128, c128, double, double complex, CMPLX, )

/* C's complex function c<fn> (csqrt, cexp...) on a pair. */
#define PC_LIBM(fn)                                                                                               \
    static inline c64 pc_##fn##_c64(c64 x) { return pc_of_c_c64(c##fn##f(pc_to_c_c64(x))); }                     \
    static inline c128 pc_##fn##_c128(c128 x) { return pc_of_c_c128(c##fn(pc_to_c_c128(x))); }
PC_LIBM(exp)
PC_LIBM(log)
PC_LIBM(sqrt)
PC_LIBM(sin)
PC_LIBM(cos)
PC_LIBM(tan)
PC_LIBM(sinh)
PC_LIBM(cosh)
PC_LIBM(tanh)
PC_LIBM(asin)
PC_LIBM(acos)
PC_LIBM(atan)
PC_LIBM(asinh)
PC_LIBM(acosh)
PC_LIBM(atanh)

/* pow as PyTorch CPU's: its complex kernels call std::pow on std::complex, which libstdc++ hands to C's cpow. */
static inline c64 pc_pow_c64(c64 x, c64 y) { return pc_of_c_c64(cpowf(pc_to_c_c64(x), pc_to_c_c64(y))); }
static inline c128 pc_pow_c128(c128 x, c128 y) { return pc_of_c_c128(cpow(pc_to_c_c128(x), pc_to_c_c128(y))); }

/* The argument (angle) of z, as std::arg: atan2(im, re). */
static inline float pc_arg_c64(c64 x) { return atan2f(x.im, x.re); }
static inline double pc_arg_c128(c128 x) { return atan2(x.im, x.re); }

/* expm1 and log1p as c10's complex forms compute them, accurate near 0 where exp(z) - 1 and log(1 + z) cancel:
 * expm1(x + iy) = (expm1(x) cos y - 2 sin^2(y / 2)) + i e^x sin y;
 * log1p(z) = log|1 + z| + i atan2(y, 1 + x), where for |z| < 0.5 log|1 + z| = log1p(x (2 + x) + y^2) / 2 (and x
 * itself when that sum underflows to 0), else the log of hypot(1 + x, y). */
#define PC_EXPM1_LOG1P(dn, T, R, S)                                                                                \
    static inline T pc_expm1_##dn(T z) {                                                                         \
        const R a = sin##S(z.im / 2);                                                                            \
        return pc_make_##dn(expm1##S(z.re) * cos##S(z.im) - (R)2 * a * a, exp##S(z.re) * sin##S(z.im));          \
    }                                                                                                             \
    static inline T pc_log1p_##dn(T z) {                                                                         \
        const R x = z.re, y = z.im, theta = atan2##S(y, x + (R)1);                                               \
        if (pc_abs_##dn(z) < (R)0.5) {                                                                           \
            const R r = x * ((R)2 + x) + y * y;                                                                  \
            return pc_make_##dn(r == 0 ? x : (R)0.5 * log1p##S(r), theta);                                       \
        }                                                                                                         \
        return pc_make_##dn(log##S(hypot##S(x + (R)1, y)), theta);                                                \
    }
PC_EXPM1_LOG1P(c64, c64, float, f)
PC_EXPM1_LOG1P(c128, c128, double, )

/* The helper `f` for x's type. */
#define PC(f, x) _Generic((x), c64: pc_##f##_c64, c128: pc_##f##_c128)
/* The real number v in x's type: 1 as a complex64 is {1, 0}. */
#define PC_REAL(x, v) _Generic((x), c64: pc_make_c64, c128: pc_make_c128)(v, 0)
/* x times the real number v, part by part (PyTorch's real * complex). */
#define PC_SCALE(x, v) _Generic((x), c64: pc_make_c64, c128: pc_make_c128)((v) * (x).re, (v) * (x).im)

/* log2 and log10 as PyTorch's: the natural log divided by ln 2 or ln 10 (rounded to the real type), part by part. */
#define PC_LOG_BASE(x, LN) PC(div_real, x)(PC(log, x)(x), LN)

/* ---- loop generators: one function per (op, type), named pc_<arity>_<op>_<dn> ----
 * An expression sees x, y, z (the operands as pairs) and alpha (params slot 0 as a pair). RT is what the loop stores:
 * the pair, its real type, or bool (uint8_t). */

#define PC_ALPHA_c64(ctx) ((ctx)->pc64)
#define PC_ALPHA_c128(ctx) ((ctx)->pc128)
/* Operand k as a pair: the number, or element i of its array (not read for a number). */
#define PC_OPERAND(k, TK, arr) ((sm >> (k)) & 1u ? *(const TK *)in[k] : ((const TK *)(arr))[i])

#define PC_UNARY_FN(op, RT, EXPR, dn, T)                                                                          \
    AXON_CLONES                                                                                                   \
    static int pc_unary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n, const pw_ctx_t *ctx) { \
        (void)sm, (void)ctx;                                                                                      \
        RT *restrict out = (RT *)o;                                                                               \
        const T *restrict a = (const T *)in[0];                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            const T x = a[i];                                                                                     \
            out[i] = (EXPR);                                                                                  \
        }                                                                                                         \
        return 0;                                                                                                 \
    }

/* Two operands: an all-arrays loop, and a general one whose loop-invariant "is a number" tests GCC unswitches. */
#define PC_BINARY_FN(op, RT, EXPR, dn, T)                                                                         \
    AXON_CLONES                                                                                                   \
    static int pc_binary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n, const pw_ctx_t *ctx) { \
        const T alpha = PC_ALPHA_##dn(ctx);                                                                       \
        (void)alpha;                                                                                              \
        RT *restrict out = (RT *)o;                                                                               \
        const T *restrict a = (const T *)in[0], *restrict b = (const T *)in[1];                                   \
        if (sm == 0) {                                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                                     \
                const T x = a[i], y = b[i];                                                                       \
                out[i] = (EXPR);                                                                              \
            }                                                                                                     \
        } else {                                                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                                     \
                const T x = PC_OPERAND(0, T, a), y = PC_OPERAND(1, T, b);                                         \
                out[i] = (EXPR);                                                                              \
            }                                                                                                     \
        }                                                                                                         \
        return 0;                                                                                                 \
    }

/* Three operands; TA and the name's tag for the first (bool for WHERE's condition). */
#define PC_TERNARY_FN(op, TA, EXPR, dn, T)                                                                        \
    AXON_CLONES                                                                                                   \
    static int pc_ternary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n,                     \
                                      const pw_ctx_t *ctx) {                                                      \
        const T alpha = PC_ALPHA_##dn(ctx);                                                                       \
        (void)alpha;                                                                                              \
        T *restrict out = (T *)o;                                                                                 \
        const TA *restrict a = (const TA *)in[0];                                                                 \
        const T *restrict b = (const T *)in[1], *restrict c = (const T *)in[2];                                   \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            const TA x = PC_OPERAND(0, TA, a);                                                                    \
            const T y = PC_OPERAND(1, T, b), z = PC_OPERAND(2, T, c);                                             \
            out[i] = (EXPR);                                                                                      \
        }                                                                                                         \
        return 0;                                                                                                 \
    }

/* Both types of one op; the result kinds: the pair (T), its real type (R, abs) or bool (B). */
#define PC_BOTH(GEN, op, KIND, EXPR) GEN(op, PC_##KIND##_c64, EXPR, c64, c64) GEN(op, PC_##KIND##_c128, EXPR, c128, c128)
#define PC_T_c64 c64
#define PC_T_c128 c128
#define PC_R_c64 float
#define PC_R_c128 double
#define PC_B_c64 uint8_t
#define PC_B_c128 uint8_t
#define PC_WHERE_c64 uint8_t
#define PC_WHERE_c128 uint8_t

PC_BOTH(PC_UNARY_FN, neg, T, PC(neg, x)(x))
PC_BOTH(PC_UNARY_FN, conj, T, PC(conj, x)(x))
PC_BOTH(PC_UNARY_FN, abs, R, PC(abs, x)(x))
PC_BOTH(PC_UNARY_FN, sgn, T, PC(sgn, x)(x))
PC_BOTH(PC_UNARY_FN, reciprocal, T, PC(reciprocal, x)(x))
PC_BOTH(PC_UNARY_FN, square, T, PC(mul, x)(x, x))
/* x^3 and x^-2 as PyTorch's pow computes those exponents: (x x) x and 1 / (x x) */
PC_BOTH(PC_UNARY_FN, cube, T, PC(mul, x)(PC(mul, x)(x, x), x))
PC_BOTH(PC_UNARY_FN, rsquare, T, PC(reciprocal, x)(PC(mul, x)(x, x)))
PC_BOTH(PC_UNARY_FN, sqrt, T, PC(sqrt, x)(x))
PC_BOTH(PC_UNARY_FN, rsqrt, T, PC(reciprocal, x)(PC(sqrt, x)(x)))
PC_BOTH(PC_UNARY_FN, exp, T, PC(exp, x)(x))
PC_BOTH(PC_UNARY_FN, log, T, PC(log, x)(x))
PC_BOTH(PC_UNARY_FN, log2, T, PC_LOG_BASE(x, 0.693147180559945309417232121458176568))
PC_BOTH(PC_UNARY_FN, log10, T, PC_LOG_BASE(x, 2.30258509299404568401799145468436421))
PC_BOTH(PC_UNARY_FN, sin, T, PC(sin, x)(x))
PC_BOTH(PC_UNARY_FN, cos, T, PC(cos, x)(x))
PC_BOTH(PC_UNARY_FN, tan, T, PC(tan, x)(x))
PC_BOTH(PC_UNARY_FN, asin, T, PC(asin, x)(x))
PC_BOTH(PC_UNARY_FN, acos, T, PC(acos, x)(x))
PC_BOTH(PC_UNARY_FN, atan, T, PC(atan, x)(x))
PC_BOTH(PC_UNARY_FN, sinh, T, PC(sinh, x)(x))
PC_BOTH(PC_UNARY_FN, cosh, T, PC(cosh, x)(x))
PC_BOTH(PC_UNARY_FN, tanh, T, PC(tanh, x)(x))
PC_BOTH(PC_UNARY_FN, asinh, T, PC(asinh, x)(x))
PC_BOTH(PC_UNARY_FN, acosh, T, PC(acosh, x)(x))
PC_BOTH(PC_UNARY_FN, atanh, T, PC(atanh, x)(x))
/* sigmoid as PyTorch's complex kernel: 1 / (1 + exp(-z)) */
PC_BOTH(PC_UNARY_FN, sigmoid, T, PC(div, x)(PC_REAL(x, 1), PC(add, x)(PC_REAL(x, 1), PC(exp, x)(PC(neg, x)(x)))))
PC_BOTH(PC_UNARY_FN, isnan, B, PC(isnan, x)(x))
PC_BOTH(PC_UNARY_FN, angle, R, PC(arg, x)(x))
/* 2^z as PyTorch's exp2 of a complex: exp(ln 2 z) */
PC_BOTH(PC_UNARY_FN, exp2, T, PC(exp, x)(PC_SCALE(x, 0.693147180559945309417232121458176568)))
PC_BOTH(PC_UNARY_FN, expm1, T, PC(expm1, x)(x))
PC_BOTH(PC_UNARY_FN, log1p, T, PC(log1p, x)(x))
/* sinc as PyTorch's kernel: 1 at 0, else sin(pi z) / (pi z) */
PC_BOTH(PC_UNARY_FN, sinc, T,
        PC(nonzero, x)(x) ? PC(div, x)(PC(sin, x)(PC_SCALE(x, 3.14159265358979323846264338327950288)),
                                       PC_SCALE(x, 3.14159265358979323846264338327950288))
                          : PC_REAL(x, 1))
/* silu as PyTorch's complex kernel: z / (1 + exp(-z)) */
PC_BOTH(PC_UNARY_FN, silu, T, PC(div, x)(x, PC(add, x)(PC_REAL(x, 1), PC(exp, x)(PC(neg, x)(x)))))
PC_BOTH(PC_UNARY_FN, logical_not, B, !PC(nonzero, x)(x))

PC_BOTH(PC_BINARY_FN, add, T, PC(add, x)(x, PC(mul, x)(alpha, y))) /* alpha: PyTorch's x + alpha * y */
/* PyTorch's sub is add with -alpha: x - alpha y would differ in the sign of a zero (-0 - (1 * -0) is -0; CPU's
 * -0 + (-1 * -0) is +0) */
PC_BOTH(PC_BINARY_FN, sub, T, PC(add, x)(x, PC(mul, x)(PC(neg, x)(alpha), y)))
PC_BOTH(PC_BINARY_FN, mul, T, PC(mul, x)(x, y))
PC_BOTH(PC_BINARY_FN, div, T, PC(div, x)(x, y))
PC_BOTH(PC_BINARY_FN, pow, T, PC(pow, x)(x, y))
PC_BOTH(PC_BINARY_FN, eq, B, PC(eq, x)(x, y))
PC_BOTH(PC_BINARY_FN, ne, B, !PC(eq, x)(x, y))
PC_BOTH(PC_BINARY_FN, logical_and, B, PC(nonzero, x)(x) && PC(nonzero, x)(y))
PC_BOTH(PC_BINARY_FN, logical_or, B, PC(nonzero, x)(x) || PC(nonzero, x)(y))
PC_BOTH(PC_BINARY_FN, logical_xor, B, PC(nonzero, x)(x) != PC(nonzero, x)(y))
/* the backward of sigmoid and tanh from their output y, as PyTorch's complex kernels: g conj((1 - y) y) and
 * g conj(1 - y y) */
PC_BOTH(PC_BINARY_FN, sigmoid_backward, T, PC(mul, x)(x, PC(conj, y)(PC(mul, y)(PC(sub, y)(PC_REAL(y, 1), y), y))))
PC_BOTH(PC_BINARY_FN, tanh_backward, T, PC(mul, x)(x, PC(conj, y)(PC(sub, y)(PC_REAL(y, 1), PC(mul, y)(y, y)))))

PC_BOTH(PC_TERNARY_FN, where, WHERE, x ? y : z)
/* addcmul and addcdiv: x + (alpha * y) * z and x + (alpha * y) / z, in PyTorch's order */
PC_BOTH(PC_TERNARY_FN, addcmul, T, PC(add, y)(x, PC(mul, y)(PC(mul, y)(alpha, y), z)))
PC_BOTH(PC_TERNARY_FN, addcdiv, T, PC(add, y)(x, PC(div, y)(PC(mul, y)(alpha, y), z)))
/* lerp from the nearer end, as for the real types: |weight| < 0.5 ? x + w (y - x) : y - (y - x)(1 - w) */
PC_BOTH(PC_TERNARY_FN, lerp, T,
        PC(abs, z)(z) < 0.5 ? PC(add, y)(x, PC(mul, y)(z, PC(sub, y)(y, x)))
                            : PC(sub, y)(y, PC(mul, y)(PC(sub, y)(y, x), PC(sub, y)(PC_REAL(z, 1), z))))

#define PC_ROW(arity, op) {pc_##arity##_##op##_c64, pc_##arity##_##op##_c128}

const pw_loop_fn axon_pw_unary_complex_loops[AXON_UNARY_COUNT][2] = {
    [AXON_UNARY_NEG] = PC_ROW(unary, neg),
    [AXON_UNARY_CONJ] = PC_ROW(unary, conj),
    [AXON_UNARY_ABS] = PC_ROW(unary, abs),
    [AXON_UNARY_SIGN] = PC_ROW(unary, sgn), /* PyTorch's sgn; its sign refuses complex before any kernel runs */
    [AXON_UNARY_RECIPROCAL] = PC_ROW(unary, reciprocal),
    [AXON_UNARY_SQUARE] = PC_ROW(unary, square),
    [AXON_UNARY_CUBE] = PC_ROW(unary, cube),
    [AXON_UNARY_RSQUARE] = PC_ROW(unary, rsquare),
    [AXON_UNARY_SQRT] = PC_ROW(unary, sqrt),
    [AXON_UNARY_RSQRT] = PC_ROW(unary, rsqrt),
    [AXON_UNARY_EXP] = PC_ROW(unary, exp),
    [AXON_UNARY_LOG] = PC_ROW(unary, log),
    [AXON_UNARY_LOG2] = PC_ROW(unary, log2),
    [AXON_UNARY_LOG10] = PC_ROW(unary, log10),
    [AXON_UNARY_SIN] = PC_ROW(unary, sin),
    [AXON_UNARY_COS] = PC_ROW(unary, cos),
    [AXON_UNARY_TAN] = PC_ROW(unary, tan),
    [AXON_UNARY_ASIN] = PC_ROW(unary, asin),
    [AXON_UNARY_ACOS] = PC_ROW(unary, acos),
    [AXON_UNARY_ATAN] = PC_ROW(unary, atan),
    [AXON_UNARY_SINH] = PC_ROW(unary, sinh),
    [AXON_UNARY_COSH] = PC_ROW(unary, cosh),
    [AXON_UNARY_TANH] = PC_ROW(unary, tanh),
    [AXON_UNARY_ASINH] = PC_ROW(unary, asinh),
    [AXON_UNARY_ACOSH] = PC_ROW(unary, acosh),
    [AXON_UNARY_ATANH] = PC_ROW(unary, atanh),
    [AXON_UNARY_SIGMOID] = PC_ROW(unary, sigmoid),
    [AXON_UNARY_ISNAN] = PC_ROW(unary, isnan),
    [AXON_UNARY_LOGICAL_NOT] = PC_ROW(unary, logical_not),
    [AXON_UNARY_ANGLE] = PC_ROW(unary, angle),
    [AXON_UNARY_EXP2] = PC_ROW(unary, exp2),
    [AXON_UNARY_EXPM1] = PC_ROW(unary, expm1),
    [AXON_UNARY_LOG1P] = PC_ROW(unary, log1p),
    [AXON_UNARY_SINC] = PC_ROW(unary, sinc),
    [AXON_UNARY_SILU] = PC_ROW(unary, silu),
};

const pw_loop_fn axon_pw_binary_complex_loops[AXON_BINARY_COUNT][2] = {
    [AXON_BINARY_ADD] = PC_ROW(binary, add),
    [AXON_BINARY_SUB] = PC_ROW(binary, sub),
    [AXON_BINARY_MUL] = PC_ROW(binary, mul),
    [AXON_BINARY_DIV] = PC_ROW(binary, div),
    [AXON_BINARY_POW] = PC_ROW(binary, pow),
    [AXON_BINARY_EQ] = PC_ROW(binary, eq),
    [AXON_BINARY_NE] = PC_ROW(binary, ne),
    [AXON_BINARY_LOGICAL_AND] = PC_ROW(binary, logical_and),
    [AXON_BINARY_LOGICAL_OR] = PC_ROW(binary, logical_or),
    [AXON_BINARY_LOGICAL_XOR] = PC_ROW(binary, logical_xor),
    [AXON_BINARY_SIGMOID_BACKWARD] = PC_ROW(binary, sigmoid_backward),
    [AXON_BINARY_TANH_BACKWARD] = PC_ROW(binary, tanh_backward),
};

const pw_loop_fn axon_pw_ternary_complex_loops[AXON_TERNARY_COUNT][2] = {
    [AXON_TERNARY_WHERE] = PC_ROW(ternary, where),
    [AXON_TERNARY_ADDCMUL] = PC_ROW(ternary, addcmul),
    [AXON_TERNARY_ADDCDIV] = PC_ROW(ternary, addcdiv),
    [AXON_TERNARY_LERP] = PC_ROW(ternary, lerp),
};
