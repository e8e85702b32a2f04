/* Binary pointwise loops and their table: one function per (op, compute dtype), each with four versions of its loop
 * (both operands arrays, a a number, b a number, both numbers), so `x * 2` and `x + bias_row` run the same
 * vectorized body with one operand held in a register instead of re-read from a broadcast buffer.
 *
 * Expressions see x and y (work type W), W, U, p0..p2 and `bad`, which the integer division family sets when a
 * divisor is 0; their helpers divide by 1 instead, so nothing traps, and the executor turns `bad` into
 * ZeroDivisionError. */
#include <string.h>
#include <tgmath.h>

#include "pointwise_impl.h"
#include "special_math.h"
#include "special_poly.h"

/* The expressions are written once for signed and unsigned types, so `y < 0` is sometimes always false. */
#pragma GCC diagnostic ignored "-Wtype-limits"

#ifdef AXON_HAVE_LIBMVEC
/* As in pointwise_unary.c: libmvec's vector versions, so that the loops that call them vectorize (with glibc's scalar
 * erff a float32 gelu_backward ran at 10x torch CPU's time; pow, atan2, hypot, xlogy and mish_backward at 2-15x), and
 * the same padding of the last elements so that an element's value does not depend on where a chunk ends. */
float erff(float) PW_SIMD;
float tanhf(float) PW_SIMD;
float expf(float) PW_SIMD;
float logf(float) PW_SIMD;
float log1pf(float) PW_SIMD;
float powf(float, float) PW_SIMD;
float atan2f(float, float) PW_SIMD;
float hypotf(float, float) PW_SIMD;
double (erf)(double) PW_SIMD;
double (tanh)(double) PW_SIMD;
double (exp)(double) PW_SIMD;
double (log)(double) PW_SIMD;
double (log1p)(double) PW_SIMD;
double (pow)(double, double) PW_SIMD;
double (atan2)(double, double) PW_SIMD;
double (hypot)(double, double) PW_SIMD;
#endif

#define PW_BINARY_FN(op, EXPR, RT, RST, DE, dn, T, WT, UT)                                                          \
    AXON_CLONES                                                                                                     \
    static int pw_binary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n, const pw_ctx_t *ctx) { \
        typedef WT W;                                                                                            \
        typedef UT U;                                                                                            \
        PW_PARAMS(ctx);                                                                                          \
        int bad = 0;                                                                                             \
        RT *restrict out = (RT *)o;                                                                              \
        const T *restrict a = (const T *)in[0], *restrict b = (const T *)in[1];                                  \
        if (sm == 0) {                                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const W x = PW_LD_##dn(a[i]), y = PW_LD_##dn(b[i]);                                              \
                out[i] = RST(EXPR);                                                                              \
            }                                                                                                    \
        } else if (sm == 1) {                                                                                    \
            const W x = *(const W *)in[0];                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const W y = PW_LD_##dn(b[i]);                                                                    \
                out[i] = RST(EXPR);                                                                              \
            }                                                                                                    \
        } else if (sm == 2) {                                                                                    \
            const W y = *(const W *)in[1];                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const W x = PW_LD_##dn(a[i]);                                                                    \
                out[i] = RST(EXPR);                                                                              \
            }                                                                                                    \
        } else {                                                                                                 \
            const W x = *(const W *)in[0], y = *(const W *)in[1];                                                \
            const RT v = RST(EXPR);                                                                              \
            for (int64_t i = 0; i < n; i++) out[i] = v;                                                          \
        }                                                                                                        \
        return bad;                                                                                              \
    }

#define PW_B2(op, EXPR, DE, dn, T, WT, UT) PW_BINARY_FN(op, EXPR, T, PW_ST_##dn, DE, dn, T, WT, UT)

/* The row form (pw_row_loop_fn) of a loop that PW_B2 defines with the same EXPR. Rows of 32 and 64 elements get
 * bodies of their own, a few straight vector operations per row (the general loop: 1.4x the time in rows of 32
 * floats). Rows of 8 and 16 float32 or float64 elements are written as GCC vectors of 32 bytes, the row's value a
 * scalar operand of each vector operation: left to the vectorizer, constant rows that short were vectorized across
 * rows, with permutes, at 2.5x the general loop's time. V names the row's value, E the element read. */
#define PW_ROWS_LOOP(LEN, V, E, dn, EXPR)                                                                        \
    for (int64_t r = 0; r < g; r++) {                                                                            \
        const W V = v[r * vstep];                                                                                \
        const ST *restrict er = e + r * estep;                                                                    \
        ST *restrict orow = out + r * ostep;                                                                      \
        for (int64_t i = 0; i < (LEN); i++) {                                                                    \
            const W E = PW_LD_##dn(er[i]);                                                                       \
            orow[i] = PW_ST_##dn(EXPR);                                                                          \
        }                                                                                                        \
    }
typedef float pw_f32x8 __attribute__((vector_size(32)));
typedef double pw_f64x4 __attribute__((vector_size(32)));
#define PW_ROWS_VECTORS(VT, LEN, V, E, EXPR)                                                                     \
    for (int64_t r = 0; r < g; r++) {                                                                            \
        const W V = v[r * vstep];                                                                                \
        for (int q = 0; q < (LEN) / (int)(sizeof(VT) / sizeof(ST)); q++) {                                        \
            VT E;                                                                                                \
            memcpy(&E, e + r * estep + q * (int64_t)(sizeof(VT) / sizeof(ST)), sizeof E);                         \
            const VT res = (EXPR);                                                                               \
            memcpy(out + r * ostep + q * (int64_t)(sizeof(VT) / sizeof(ST)), &res, sizeof res);                   \
        }                                                                                                        \
    }
#define PW_ROWS_FIXED_f32(V, E, dn, EXPR)                                                                        \
    case 8: PW_ROWS_VECTORS(pw_f32x8, 8, V, E, EXPR) break;                                                      \
    case 16: PW_ROWS_VECTORS(pw_f32x8, 16, V, E, EXPR) break;                                                    \
    case 32: PW_ROWS_VECTORS(pw_f32x8, 32, V, E, EXPR) break;                                                    \
    case 64: PW_ROWS_VECTORS(pw_f32x8, 64, V, E, EXPR) break;
#define PW_ROWS_FIXED_f64(V, E, dn, EXPR)                                                                        \
    case 8: PW_ROWS_VECTORS(pw_f64x4, 8, V, E, EXPR) break;                                                      \
    case 16: PW_ROWS_VECTORS(pw_f64x4, 16, V, E, EXPR) break;                                                    \
    case 32: PW_ROWS_VECTORS(pw_f64x4, 32, V, E, EXPR) break;                                                    \
    case 64: PW_ROWS_VECTORS(pw_f64x4, 64, V, E, EXPR) break;
#define PW_ROWS_FIXED_HALF(V, E, dn, EXPR)                                                                       \
    case 32: PW_ROWS_LOOP(32, V, E, dn, EXPR) break;                                                             \
    case 64: PW_ROWS_LOOP(64, V, E, dn, EXPR) break;
#define PW_ROWS_FIXED_f16 PW_ROWS_FIXED_HALF
#define PW_ROWS_FIXED_bf16 PW_ROWS_FIXED_HALF
#define PW_ROWS_LENGTHS(V, E, dn, EXPR)                                                                          \
    switch (R) {                                                                                                 \
    PW_ROWS_FIXED_##dn(V, E, dn, EXPR)                                                                           \
    default: PW_ROWS_LOOP(R, V, E, dn, EXPR) break;                                                              \
    }
#define PW_BINARY_ROW_FN(op, EXPR, DE, dn, T, WT, UT)                                                             \
    AXON_CLONES                                                                                                  \
    static int pw_binary_rows_##op##_##dn(const pw_rows_t *rows, const pw_ctx_t *ctx) {                          \
        typedef WT W;                                                                                            \
        typedef UT U;                                                                                            \
        typedef T ST; /* the rows' storage type, for the bodies above */                                         \
        PW_PARAMS(ctx);                                                                                          \
        T *out = (T *)rows->out;                                                                                 \
        const W *v = (const W *)rows->v;                                                                         \
        const T *e = (const T *)rows->e;                                                                         \
        const int64_t g = rows->g, R = rows->R, ostep = rows->ostep, vstep = rows->vstep, estep = rows->estep;   \
        if (rows->which == 1) {                                                                                  \
            PW_ROWS_LENGTHS(y, x, dn, EXPR)                                                                      \
        } else {                                                                                                 \
            PW_ROWS_LENGTHS(x, y, dn, EXPR)                                                                      \
        }                                                                                                        \
        return 0;                                                                                                \
    }
/* A loop and its row form. */
#define PW_B2R(op, EXPR, DE, dn, T, WT, UT)                                                                      \
    PW_B2(op, EXPR, DE, dn, T, WT, UT) PW_BINARY_ROW_FN(op, EXPR, DE, dn, T, WT, UT)

#ifdef AXON_HAVE_LIBMVEC
/* The body on multiples of PW_SIMD_PAD elements, the rest through zero-padded blocks of that size (an operand that is
 * a number, sm bit 0 for a and bit 1 for b, stays one). */
#define PW_BINARY_SIMD_FN(op, EXPR, DE, dn, T, WT, UT)                                                            \
    __attribute__((noinline)) PW_BINARY_FN(op##_body, EXPR, T, PW_ST_##dn, DE, dn, T, WT, UT)                   \
    static int pw_binary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n, const pw_ctx_t *ctx) { \
        const int64_t bulk = n & ~(int64_t)(PW_SIMD_PAD - 1);                                                   \
        int bad = bulk > 0 ? pw_binary_##op##_body_##dn(o, in, sm, bulk, ctx) : 0;                              \
        if (n > bulk) {                                                                                         \
            T pad[2][PW_SIMD_PAD], pad_out[PW_SIMD_PAD];                                                        \
            const char *pin[2] = {in[0], in[1]};                                                                \
            for (int k = 0; k < 2; k++) {                                                                       \
                if (sm & (1u << k)) continue;                                                                   \
                memset(pad[k], 0, sizeof pad[k]);                                                               \
                memcpy(pad[k], in[k] + bulk * (int64_t)sizeof(T), (size_t)(n - bulk) * sizeof(T));              \
                pin[k] = (const char *)pad[k];                                                                  \
            }                                                                                                   \
            bad |= pw_binary_##op##_body_##dn((char *)pad_out, pin, sm, PW_SIMD_PAD, ctx);                      \
            memcpy(o + bulk * (int64_t)sizeof(T), pad_out, (size_t)(n - bulk) * sizeof(T));                     \
        }                                                                                                       \
        return bad;                                                                                             \
    }
#define PW_B2S(op, EXPR, DE, dn, T, WT, UT) PW_BINARY_SIMD_FN(op, EXPR, DE, dn, T, WT, UT)
#else
#define PW_B2S(op, EXPR, DE, dn, T, WT, UT) PW_B2(op, EXPR, DE, dn, T, WT, UT)
#endif
#define PW_B2B(op, EXPR, DE, dn, T, WT, UT) PW_BINARY_FN(op, EXPR, uint8_t, PW_ST_BOOL, DE, dn, T, WT, UT)
#define PW_ENTRY(op, DE, dn, T, WT, UT) [DE] = pw_binary_##op##_##dn,

/* ---- float helpers (PyTorch's c10 formulas, so results match bit for bit) ---- */

#define PW_FLOAT_HELPERS(sn, T)                                                                                   \
    static inline T pw_xlogy_##sn(T x, T y) { return y != y ? (T)NAN : x == 0 ? (T)0 : x * log(y); }

PW_FLOAT_HELPERS(f32, float)
PW_FLOAT_HELPERS(f64, double)
#define PW_FGEN(f, x) _Generic((x), float: f##_f32, double: f##_f64)

/* ---- integer helpers: divide by 1 where the divisor is 0, and handle -1 apart (INT_MIN / -1 traps on x86) ---- */

#define PW_INT_HELPERS(unused, DE, dn, T, WT, UT)                                                                 \
    static inline T pw_div_trunc_##dn(T a, T b) { return b == -1 ? (T)(0u - (UT)a) : (T)(a / (b == 0 ? 1 : b)); } \
    static inline T pw_div_floor_##dn(T a, T b) {                                                                 \
        if (b == -1) return (T)(0u - (UT)a);                                                                      \
        T d = b == 0 ? 1 : b, q = (T)(a / d), r = (T)(a % d);                                                     \
        return (T)(q - (r != 0 && (r < 0) != (d < 0)));                                                          \
    }                                                                                                             \
    static inline T pw_remainder_##dn(T a, T b) {                                                                 \
        if (b == -1) return 0;                                                                                    \
        T d = b == 0 ? 1 : b, r = (T)(a % d);                                                                     \
        return (T)(r != 0 && (r < 0) != (d < 0) ? r + d : r);                                                     \
    }                                                                                                             \
    static inline T pw_fmod_##dn(T a, T b) { return b == -1 ? 0 : (T)(a % (b == 0 ? 1 : b)); }                      \
    /* PyTorch's powi: negative exponents give 0 except for bases 1 and -1; otherwise square-and-multiply, which   \
     * wraps like repeated multiplication. */                                                                     \
    static inline T pw_pow_##dn(T a, T b) {                                                                       \
        if (b < 0) return a == 1 ? (T)1 : a == -1 ? (T)((b & 1) ? -1 : 1) : (T)0;                                  \
        UT r = 1, base = (UT)a;                                                                                   \
        for (UT e = (UT)b; e != 0; e >>= 1) {                                                                     \
            if (e & 1) r *= base;                                                                                 \
            base *= base;                                                                                         \
        }                                                                                                         \
        return (T)r;                                                                                              \
    }                                                                                                             \
    /* PyTorch's shifts: out-of-range left shifts give 0; right shifts fill with the sign (0 when unsigned). */    \
    static inline T pw_shift_left_##dn(T a, T b) {                                                                \
        return b < 0 || b >= (T)(8 * sizeof(T)) ? (T)0 : (T)((UT)a << b);                                         \
    }                                                                                                             \
    static inline T pw_shift_right_##dn(T a, T b) {                                                               \
        const int top = (int)(8 * sizeof(T)) - ((T)-1 < 0);                                                       \
        return b < 0 || b >= top ? (T)(a >> top) : (T)(a >> b);                                                   \
    }

PW_INTS(PW_INT_HELPERS, _)
#define PW_IGEN(f, x) \
    _Generic((x), int8_t: f##_i8, uint8_t: f##_u8, int16_t: f##_i16, int32_t: f##_i32, int64_t: f##_i64)

/* ---- floats ---- */

PW_FLOATS(PW_B2R, add, (x + p0 * y)) /* p0 alpha */
PW_FLOATS(PW_B2R, sub, (x - p0 * y))
/* add and sub with an alpha other than 1: PyTorch's CPU loops compute x + alpha * y with one rounding (vec::fmadd,
 * in float for the half types), and a quarter of the results were one unit off; with alpha 1 both forms are x + y. */
PW_FLOATS(PW_B2, add_alpha, (fma(p0, y, x)))
PW_FLOATS(PW_B2, sub_alpha, (fma(-p0, y, x)))
PW_FLOATS(PW_B2R, mul, (x * y))
PW_FLOATS(PW_B2R, div, (x / y))
/* div_floor, remainder and fmod of the float dtypes: pointwise_fmod.c */
PW_FLOATS(PW_B2, div_trunc, (PW_TRUNC(x / y)))
PW_FLOATS(PW_B2S, pow, (pow(x, y)))
PW_FLOATS(PW_B2S, atan2, (atan2(x, y)))
PW_FLOATS(PW_B2, maximum, (x != x || y != y ? (W)NAN : PW_MAX_STD(x, y)))
PW_FLOATS(PW_B2, minimum, (x != x || y != y ? (W)NAN : PW_MIN_STD(x, y)))
PW_FLOATS(PW_B2, fmax, (x != x ? y : y != y ? x : PW_MAX_STD(x, y)))
PW_FLOATS(PW_B2, fmin, (x != x ? y : y != y ? x : PW_MIN_STD(x, y)))
PW_FLOATS(PW_B2S, hypot, (hypot(x, y)))
PW_FLOATS(PW_B2, copysign, (copysign(x, y)))
PW_FLOATS(PW_B2S, xlogy, (PW_FGEN(pw_xlogy, x)(x, y)))

/* ---- activation backward (x the gradient, y the forward's input or output) ----
 * Written term by term as PyTorch's CPU kernels write them, so the roundings, NaNs and infinities match; the
 * constants are theirs too (M_2_SQRTPI M_SQRT1_2 / 2 = 1/sqrt(2 pi), M_SQRT2 M_2_SQRTPI / 2 = sqrt(2/pi)). The
 * float forms of exp go through PW_EXP, as the forward SILU and SIGMOID do, so forward and backward agree. */

#define PW_BACKWARD_HELPERS(sn, T)                                                                                \
    static inline T pw_sigmoid_##sn(T y) { return (T)1 / ((T)1 + PW_EXP(-y)); }                                    \
    static inline T pw_gelu_tanh_bw_##sn(T g, T y) {                                                              \
        const T k_beta = (T)0.79788456080286535588, k_kappa = (T)0.044715;                                        \
        const T y_sq = y * y, y_cube = y_sq * y, inner = k_beta * (y + k_kappa * y_cube), t = tanh(inner);      \
        const T left = (T)0.5 * y, right = (T)1 + t, left_d = (T)0.5 * right;                                     \
        const T tanh_d = (T)1 - t * t, inner_d = k_beta * ((T)1 + (T)3 * k_kappa * y_sq);                         \
        return g * (left_d + left * tanh_d * inner_d);                                                            \
    }                                                                                                             \
    static inline T pw_silu_bw_##sn(T g, T y) {                                                                   \
        const T s = pw_sigmoid_##sn(y);                                                                           \
        return g * s * ((T)1 + y * ((T)1 - s));                                                                   \
    }                                                                                                             \
    static inline T pw_mish_bw_##sn(T g, T y) {                                                                   \
        const T s = pw_sigmoid_##sn(y), t = tanh(log1p(exp(y)));                                                  \
        return g * (t + y * s * ((T)1 - t * t));                                                                  \
    }                                                                                                             \
    static inline T pw_softplus_bw_##sn(T g, T y, T beta, T threshold) {                                          \
        const T z = PW_EXP(y * beta);                                                                             \
        return y * beta > threshold ? g : g * z / (z + (T)1);                                                     \
    }

PW_BACKWARD_HELPERS(f32, float)
PW_BACKWARD_HELPERS(f64, double)

PW_FLOATS(PW_B2S, gelu_backward,
          (x * ((W)0.5 * ((W)1 + PW_ERF_GELU(y * (W)0.70710678118654752440)) +
                y * ((W)0.39894228040143267794 * PW_GAUSS(y)))))
PW_FLOATS(PW_B2S, gelu_tanh_backward, (PW_FGEN(pw_gelu_tanh_bw, x)(x, y)))
PW_FLOATS(PW_B2S, silu_backward, (PW_FGEN(pw_silu_bw, x)(x, y)))
PW_FLOATS(PW_B2S, mish_backward, (PW_FGEN(pw_mish_bw, x)(x, y)))
PW_FLOATS(PW_B2, sigmoid_backward, (x * ((W)1 - y) * y))
PW_FLOATS(PW_B2, tanh_backward, (x * ((W)1 - y * y)))
PW_FLOATS(PW_B2, threshold_backward, (y <= p0 ? (W)0 : x)) /* p0 threshold */
/* hardtanh, elu and hardswish are written as PyTorch's vectorized CPU loops test (its scalar tail loops differ for
 * NaN): a NaN input gives 0 for hardtanh and NaN for elu and hardswish, whatever its position in the tensor. */
PW_FLOATS(PW_B2, hardtanh_backward, (y > p0 && y < p1 ? x : (W)0)) /* p0 min_val, p1 max_val */
PW_FLOATS(PW_B2, leaky_relu_backward, (y > 0 ? x : x * p0))          /* p0 negative_slope */
/* p0 alpha*scale, p1 scale, p2 input_scale; ctx->pi[0] says whether y is the output (loop-invariant). */
PW_FLOATS(PW_B2S, elu_backward,
          (ctx->pi[0] ? (y > 0 ? x * p1 : x * p2 * (y + p0)) : (y > 0 ? x * p1 : x * p2 * p0 * PW_EXP(y * p2))))
PW_FLOATS(PW_B2S, softplus_backward, (PW_FGEN(pw_softplus_bw, x)(x, y, p0, p1))) /* p0 beta, p1 threshold */
PW_FLOATS(PW_B2, hardswish_backward, (y <= (W)-3 ? (W)0 : y >= (W)3 ? x : x * (y / (W)3 + (W)0.5))) /* NaN: NaN */
/* 1/6 rounded to float even for float64: PyTorch's CPU kernel writes it as 1.0f / 6.0f. */
PW_FLOATS(PW_B2, hardsigmoid_backward, (y > (W)-3 && y < (W)3 ? x * (W)(1.0f / 6.0f) : (W)0))
/* x the gradient, y the input. */
PW_FLOATS(PW_B2S, log_sigmoid_backward,
          (x * ((y < 0 ? (W)1 : (W)0) - (y < 0 ? (W)1 : (W)-1) * (PW_EXP(-fabs(y)) / ((W)1 + PW_EXP(-fabs(y)))))))
PW_FLOATS(PW_B2, logit_backward, /* p0 eps */
          (p0 < 0 ? (y < 0 || y > 1 ? (W)NAN : x / (y * ((W)1 - y)))
                  : (y < p0 || y > (W)1 - p0 ? (W)0 : x / (y * ((W)1 - y)))))
PW_FLOATS(PW_B2, shrink_backward, (y >= -p0 && y <= p0 ? (W)0 : x)) /* p0 lambd */
PW_FLOATS(PW_B2S, glu, (x * ((W)1 / ((W)1 + PW_EXP(-y)))))
PW_FLOATS(PW_B2, prelu, (x > 0 ? x : y * x))
PW_FLOATS(PW_B2, prelu_backward_weight, (y > 0 ? (W)0 : y * x))
PW_FLOATS(PW_B2, zeta, ((W)axon_zeta((double)x, (double)y))) /* in float64, rounded once */
PW_FLOATS(PW_B2, igamma, ((W)axon_igamma((double)x, (double)y, 0)))
PW_FLOATS(PW_B2, igammac, ((W)axon_igamma((double)x, (double)y, 1)))
/* The orthogonal polynomials, in float64 and rounded once; y the degree. */
#define PW_POLY(name) PW_DOUBLES(PW_B2, name, ((W)axon_##name((double)x, axon_poly_degree((double)y))))
PW_POLY(chebyshev_t)
PW_POLY(chebyshev_u)
PW_POLY(chebyshev_v)
PW_POLY(chebyshev_w)
PW_POLY(shifted_chebyshev_t)
PW_POLY(shifted_chebyshev_u)
PW_POLY(shifted_chebyshev_v)
PW_POLY(shifted_chebyshev_w)
PW_POLY(hermite_h)
PW_POLY(hermite_he)
PW_POLY(laguerre_l)
PW_POLY(legendre_p)
static inline double pw_xlog1py(double x, double y) { return y != y ? y : x == 0 ? 0.0 : x * log1p(y); }
/* PyTorch's: equal infinities are their own answer (inf - inf would be NaN) */
static inline double pw_logaddexp(double x, double y) {
    if (isinf(x) && x == y) return x;
    const double m = x > y ? x : y;   /* NaN: m + NaN below */
    return m + log1p(exp(-fabs(x - y)));
}
static inline double pw_logaddexp2(double x, double y) {
    if (isinf(x) && x == y) return x;
    const double m = x > y ? x : y;
    return m + log1p(exp2(-fabs(x - y))) / M_LN2;
}
PW_FLOATS(PW_B2, xlog1py, ((W)pw_xlog1py((double)x, (double)y)))
PW_FLOATS(PW_B2, logaddexp, ((W)pw_logaddexp((double)x, (double)y)))
PW_FLOATS(PW_B2, logaddexp2, ((W)pw_logaddexp2((double)x, (double)y)))

/* ---- integers ---- */

PW_INTS(PW_B2, add, ((W)((U)x + (U)p0 * (U)y)))
PW_INTS(PW_B2, sub, ((W)((U)x - (U)p0 * (U)y)))
PW_INTS(PW_B2, mul, ((W)((U)x * (U)y)))
PW_INTS(PW_B2, div_floor, (bad |= y == 0, PW_IGEN(pw_div_floor, x)(x, y)))
PW_INTS(PW_B2, div_trunc, (bad |= y == 0, PW_IGEN(pw_div_trunc, x)(x, y)))
PW_INTS(PW_B2, remainder, (bad |= y == 0, PW_IGEN(pw_remainder, x)(x, y)))
PW_INTS(PW_B2, fmod, (bad |= y == 0, PW_IGEN(pw_fmod, x)(x, y)))
PW_INTS(PW_B2, pow, (PW_IGEN(pw_pow, x)(x, y)))
PW_INTS(PW_B2, maximum, (PW_MAX_STD(x, y)))
PW_INTS(PW_B2, minimum, (PW_MIN_STD(x, y)))
PW_INTS(PW_B2, bitwise_and, ((W)(x & y)))
PW_INTS(PW_B2, bitwise_or, ((W)(x | y)))
PW_INTS(PW_B2, bitwise_xor, ((W)(x ^ y)))
PW_INTS(PW_B2, shift_left, (PW_IGEN(pw_shift_left, x)(x, y)))
PW_INTS(PW_B2, shift_right, (PW_IGEN(pw_shift_right, x)(x, y)))

/* ---- bool (x, y are 0 or 1) ---- */

PW_BOOLS(PW_B2, add, (x | (p0 & y))) /* p0: alpha != 0 */
PW_BOOLS(PW_B2, mul, (x & y))
PW_BOOLS(PW_B2, maximum, (x | y))
PW_BOOLS(PW_B2, minimum, (x & y))
PW_BOOLS(PW_B2, bitwise_and, (x & y))
PW_BOOLS(PW_B2, bitwise_or, (x | y))
PW_BOOLS(PW_B2, bitwise_xor, (x ^ y))

/* ---- bool results, every real dtype; `&` and `!=` rather than && and ||, which would branch ---- */

#define PW_B2B_ALL(op, EXPR) PW_FLOATS(PW_B2B, op, EXPR) PW_INTS(PW_B2B, op, EXPR) PW_BOOLS(PW_B2B, op, EXPR)
PW_B2B_ALL(eq, (x == y))
PW_B2B_ALL(ne, (x != y))
PW_B2B_ALL(lt, (x < y))
PW_B2B_ALL(le, (x <= y))
PW_B2B_ALL(gt, (x > y))
PW_B2B_ALL(ge, (x >= y))
PW_B2B_ALL(logical_and, ((x != 0) & (y != 0)))
PW_B2B_ALL(logical_or, ((x != 0) | (y != 0)))
PW_B2B_ALL(logical_xor, ((x != 0) != (y != 0)))
/* heaviside: the value where a is 0, else whether a > 0 (in a's own dtype) */
PW_FLOATS(PW_B2, heaviside, (x == 0 ? y : (W)(x > 0)))
PW_INTS(PW_B2, heaviside, (x == 0 ? y : (W)(x > 0)))
PW_BOOLS(PW_B2, heaviside, (x == 0 ? y : (W)(x > 0)))

/* gcd and lcm on magnitudes in uint64_t, so that |INT64_MIN| is not undefined. lcm's |a / g * b| wraps where
 * PyTorch's int arithmetic does in practice: at 32 bits for the types C promotes to int, at 64 for int64, before
 * the magnitude is taken. */
static inline uint64_t pw_uabs(int64_t v) { return v < 0 ? 0 - (uint64_t)v : (uint64_t)v; }
static inline uint64_t pw_gcd(int64_t a, int64_t b) {
    uint64_t x = pw_uabs(a), y = pw_uabs(b);
    while (x != 0) {
        const uint64_t c = x;
        x = y % x;
        y = c;
    }
    return y;
}
static inline int64_t pw_lcm(int64_t a, int64_t b, int wide) {
    const uint64_t g = pw_gcd(a, b);
    if (g == 0) return 0;
    const uint64_t prod = (uint64_t)(a / (int64_t)g) * (uint64_t)b;
    if (wide) return (int64_t)pw_uabs((int64_t)prod);
    const int32_t p32 = (int32_t)(uint32_t)prod;
    return (int64_t)(p32 < 0 ? 0 - (uint32_t)p32 : (uint32_t)p32);
}
PW_INTS(PW_B2, gcd, ((W)pw_gcd(x, y)))
PW_INTS(PW_B2, lcm, ((W)pw_lcm(x, y, sizeof(W) == 8)))
/* nextafter of float and double, C's (one step of the bit pattern toward y; y itself when x == y, so +0 toward -0 is
 * -0; from a zero, the smallest subnormal with y's sign; NaN in, NaN out) in integer arithmetic that vectorizes where
 * glibc's nextafterf is a scalar call (5x torch CPU's time on a million floats). */
#define PW_NEXTAFTER(sn, F, U, SIGN)                                                                              \
    static inline F pw_nextafter_##sn(F x, F y) {                                                                 \
        const U ux = axon_##sn##_bits(x), uy = axon_##sn##_bits(y), ax = ux & ~SIGN, ay = uy & ~SIGN;            \
        /* | rather than ||: no short-circuit branches, which would keep the loop from vectorizing */             \
        const int toward_zero = (ax > ay) | (((ux ^ uy) & SIGN) != 0), nan = (x != x) | (y != y);              \
        const U step = toward_zero ? ux - 1 : ux + 1;                                                             \
        const U from_zero = (uy & SIGN) | 1u;                                                                     \
        const U r = x == y ? uy : ax == 0 ? from_zero : step;                                                     \
        return nan ? x + y : axon_##sn##_from_bits(r);                                                            \
    }
PW_NEXTAFTER(f32, float, uint32_t, 0x80000000u)
PW_NEXTAFTER(f64, double, uint64_t, 0x8000000000000000u)
PW_DOUBLES(PW_B2, nextafter, (PW_FGEN(pw_nextafter, x)(x, y)))
/* nextafter of the half types steps their 16-bit patterns, as c10's does (after musl's nextafter): NaN in, NaN out;
 * equal patterns give x; from a zero, the smallest subnormal with y's sign; else one step toward y. x and y arrive
 * as float values of the dtype (a number operand rounded to it first) and the result is one, so its store is exact. */
static inline float pw_nextafter_half(float x, float y, int bf16) {
    if (x != x || y != y) return x + y;
    const uint16_t fx = bf16 ? axon_f32_to_bf16(x) : axon_f32_to_f16(x);
    const uint16_t fy = bf16 ? axon_f32_to_bf16(y) : axon_f32_to_f16(y);
    if (fx == fy) return bf16 ? axon_bf16_to_f32(fx) : axon_f16_to_f32(fx);
    const uint16_t sign = 0x8000u, ax = fx & (uint16_t)~sign, ay = fy & (uint16_t)~sign;
    uint16_t r;
    if (ax == 0) r = ay == 0 ? fy : (uint16_t)((fy & sign) | 1u);
    else if (ax > ay || ((fx ^ fy) & sign)) r = (uint16_t)(fx - 1u);
    else r = (uint16_t)(fx + 1u);
    return bf16 ? axon_bf16_to_f32(r) : axon_f16_to_f32(r);
}
PW_B2(nextafter, (pw_nextafter_half(x, y, 0)), AXON_FLOAT16, f16, uint16_t, float, uint32_t)
PW_B2(nextafter, (pw_nextafter_half(x, y, 1)), AXON_BFLOAT16, bf16, uint16_t, float, uint32_t)

/* ---- the table ---- */

#define PW_F(op) PW_FLOATS(PW_ENTRY, op)
#define PW_I(op) PW_INTS(PW_ENTRY, op)
#define PW_B(op) PW_BOOLS(PW_ENTRY, op)
#define PW_ALL(op) PW_F(op) PW_I(op) PW_B(op)
#define PW_FD(op) PW_DOUBLES(PW_ENTRY, op)
#define PW_FMOD_ENTRY(op, DE, dn, T, WT, UT) [DE] = axon_pw_fmod_##op##_##dn,
#define PW_FMOD_ENTRIES(op) PW_FLOATS(PW_FMOD_ENTRY, op)

const pw_loop_fn axon_pw_binary_alpha_loops[2][AXON_DTYPE_COUNT] = {{PW_F(add_alpha)}, {PW_F(sub_alpha)}};

const pw_loop_fn axon_pw_binary_loops[AXON_BINARY_COUNT][AXON_DTYPE_COUNT] = {
    [AXON_BINARY_ADD] = {PW_ALL(add)},
    [AXON_BINARY_SUB] = {PW_F(sub) PW_I(sub)},
    [AXON_BINARY_MUL] = {PW_ALL(mul)},
    [AXON_BINARY_DIV] = {PW_F(div)},
    [AXON_BINARY_DIV_FLOOR] = {PW_FMOD_ENTRIES(div_floor) PW_I(div_floor)},
    [AXON_BINARY_DIV_TRUNC] = {PW_F(div_trunc) PW_I(div_trunc)},
    [AXON_BINARY_REMAINDER] = {PW_FMOD_ENTRIES(remainder) PW_I(remainder)},
    [AXON_BINARY_FMOD] = {PW_FMOD_ENTRIES(fmod) PW_I(fmod)},
    [AXON_BINARY_POW] = {PW_F(pow) PW_I(pow)},
    [AXON_BINARY_ATAN2] = {PW_F(atan2)},
    [AXON_BINARY_MAXIMUM] = {PW_ALL(maximum)},
    [AXON_BINARY_MINIMUM] = {PW_ALL(minimum)},
    /* On integers and bool nothing is NaN: fmax is maximum. */
    [AXON_BINARY_FMAX] = {PW_F(fmax) PW_I(maximum) PW_B(maximum)},
    [AXON_BINARY_FMIN] = {PW_F(fmin) PW_I(minimum) PW_B(minimum)},
    [AXON_BINARY_EQ] = {PW_ALL(eq)},
    [AXON_BINARY_NE] = {PW_ALL(ne)},
    [AXON_BINARY_LT] = {PW_ALL(lt)},
    [AXON_BINARY_LE] = {PW_ALL(le)},
    [AXON_BINARY_GT] = {PW_ALL(gt)},
    [AXON_BINARY_GE] = {PW_ALL(ge)},
    [AXON_BINARY_LOGICAL_AND] = {PW_ALL(logical_and)},
    [AXON_BINARY_LOGICAL_OR] = {PW_ALL(logical_or)},
    [AXON_BINARY_LOGICAL_XOR] = {PW_ALL(logical_xor)},
    [AXON_BINARY_BITWISE_AND] = {PW_I(bitwise_and) PW_B(bitwise_and)},
    [AXON_BINARY_BITWISE_OR] = {PW_I(bitwise_or) PW_B(bitwise_or)},
    [AXON_BINARY_BITWISE_XOR] = {PW_I(bitwise_xor) PW_B(bitwise_xor)},
    [AXON_BINARY_SHIFT_LEFT] = {PW_I(shift_left)},
    [AXON_BINARY_SHIFT_RIGHT] = {PW_I(shift_right)},
    [AXON_BINARY_HYPOT] = {PW_F(hypot)},
    [AXON_BINARY_COPYSIGN] = {PW_F(copysign)},
    [AXON_BINARY_XLOGY] = {PW_F(xlogy)},
    [AXON_BINARY_GELU_BACKWARD] = {PW_F(gelu_backward)},
    [AXON_BINARY_GELU_TANH_BACKWARD] = {PW_F(gelu_tanh_backward)},
    [AXON_BINARY_SILU_BACKWARD] = {PW_F(silu_backward)},
    [AXON_BINARY_MISH_BACKWARD] = {PW_F(mish_backward)},
    [AXON_BINARY_SIGMOID_BACKWARD] = {PW_F(sigmoid_backward)},
    [AXON_BINARY_TANH_BACKWARD] = {PW_F(tanh_backward)},
    [AXON_BINARY_THRESHOLD_BACKWARD] = {PW_F(threshold_backward)},
    [AXON_BINARY_HARDTANH_BACKWARD] = {PW_F(hardtanh_backward)},
    [AXON_BINARY_LEAKY_RELU_BACKWARD] = {PW_F(leaky_relu_backward)},
    [AXON_BINARY_ELU_BACKWARD] = {PW_F(elu_backward)},
    [AXON_BINARY_SOFTPLUS_BACKWARD] = {PW_F(softplus_backward)},
    [AXON_BINARY_HARDSWISH_BACKWARD] = {PW_F(hardswish_backward)},
    [AXON_BINARY_HARDSIGMOID_BACKWARD] = {PW_F(hardsigmoid_backward)},
    [AXON_BINARY_LOG_SIGMOID_BACKWARD] = {PW_F(log_sigmoid_backward)},
    [AXON_BINARY_LOGIT_BACKWARD] = {PW_F(logit_backward)},
    [AXON_BINARY_SHRINK_BACKWARD] = {PW_F(shrink_backward)},
    [AXON_BINARY_GLU] = {PW_F(glu)},
    [AXON_BINARY_PRELU] = {PW_F(prelu)},
    [AXON_BINARY_PRELU_BACKWARD_WEIGHT] = {PW_F(prelu_backward_weight)},
    [AXON_BINARY_ZETA] = {PW_F(zeta)},
    [AXON_BINARY_IGAMMA] = {PW_F(igamma)},
    [AXON_BINARY_IGAMMAC] = {PW_F(igammac)},
    [AXON_BINARY_CHEBYSHEV_T] = {PW_FD(chebyshev_t)},
    [AXON_BINARY_CHEBYSHEV_U] = {PW_FD(chebyshev_u)},
    [AXON_BINARY_CHEBYSHEV_V] = {PW_FD(chebyshev_v)},
    [AXON_BINARY_CHEBYSHEV_W] = {PW_FD(chebyshev_w)},
    [AXON_BINARY_SHIFTED_CHEBYSHEV_T] = {PW_FD(shifted_chebyshev_t)},
    [AXON_BINARY_SHIFTED_CHEBYSHEV_U] = {PW_FD(shifted_chebyshev_u)},
    [AXON_BINARY_SHIFTED_CHEBYSHEV_V] = {PW_FD(shifted_chebyshev_v)},
    [AXON_BINARY_SHIFTED_CHEBYSHEV_W] = {PW_FD(shifted_chebyshev_w)},
    [AXON_BINARY_HERMITE_H] = {PW_FD(hermite_h)},
    [AXON_BINARY_HERMITE_HE] = {PW_FD(hermite_he)},
    [AXON_BINARY_LAGUERRE_L] = {PW_FD(laguerre_l)},
    [AXON_BINARY_LEGENDRE_P] = {PW_FD(legendre_p)},
    [AXON_BINARY_XLOG1PY] = {PW_F(xlog1py)},
    [AXON_BINARY_LOGADDEXP] = {PW_F(logaddexp)},
    [AXON_BINARY_LOGADDEXP2] = {PW_F(logaddexp2)},
    [AXON_BINARY_HEAVISIDE] = {PW_ALL(heaviside)},
    [AXON_BINARY_NEXTAFTER] = {PW_FD(nextafter) PW_ENTRY(nextafter, AXON_FLOAT16, f16, uint16_t, float, uint32_t)
                                   PW_ENTRY(nextafter, AXON_BFLOAT16, bf16, uint16_t, float, uint32_t)},
    [AXON_BINARY_GCD] = {PW_I(gcd)},
    [AXON_BINARY_LCM] = {PW_I(lcm)},
};

#define PW_ROW_ENTRY(op, DE, dn, T, WT, UT) [DE] = pw_binary_rows_##op##_##dn,

const pw_row_loop_fn axon_pw_binary_row_loops[AXON_BINARY_COUNT][AXON_DTYPE_COUNT] = {
    [AXON_BINARY_ADD] = {PW_FLOATS(PW_ROW_ENTRY, add)},
    [AXON_BINARY_SUB] = {PW_FLOATS(PW_ROW_ENTRY, sub)},
    [AXON_BINARY_MUL] = {PW_FLOATS(PW_ROW_ENTRY, mul)},
    [AXON_BINARY_DIV] = {PW_FLOATS(PW_ROW_ENTRY, div)},
};
