/* fmod, remainder (Python's %) and div_floor (//) for every float dtype: the exact remainder in arithmetic that
 * vectorizes, where glibc's fmodf and fmod are scalar calls (the three ops took 7-10x torch CPU's time in float32,
 * 2.6-3.9x in float64).
 *
 * For float operands (float32 and the half types, which compute in float), q = trunc(a / b) computed in double is the
 * exact integer quotient while |a / b| < 2^29: for |a| >= |b| the exact quotient is an integer or more than 2^-24 from
 * one (a - n b is a multiple of b's ulp, which exceeds 2^-24 |b|, subnormals included), and the division errs by at
 * most |a / b| 2^-53 < 2^-24. Then a - q b is one fma and exact (q b has at most 53 significant bits and the remainder
 * is a float). float64 works on magnitudes with one correction (fm_fmod_fast_f64). The result takes a's sign, as C's
 * fmod does (-0.0 included). Larger quotients, b = 0 or infinite, and the infinities and NaN send those elements to
 * glibc; both are exact, so they give the same bits and no result depends on its neighbours. remainder and div_floor
 * then apply PyTorch's formulas (c10's) to that remainder. */
#include <math.h>
#include <string.h>

#include "pointwise_impl.h"

#define FM_BLOCK 64
#define FM_QUOTIENT_MAX 0x1p29     /* float operands */
#define FM_QUOTIENT_MAX_F64 0x1p52 /* double operands */

/* The remainder, exact where *ok is set (the quotient below the bound, b finite), else anything; one division
 * serves both. float: in double, as above. */
static inline __attribute__((always_inline)) float fm_fmod_fast_f32(float a, float b, int *ok) {
    const double ad = a, bd = b, q = __builtin_trunc(ad / bd);
    *ok = fabs(q) < FM_QUOTIENT_MAX && fabsf(b) < INFINITY;
    return (float)copysign(fma(-q, bd, ad), ad);
}
/* double, on magnitudes: q = trunc(|a| / |b|) is the exact quotient n or n + 1 while it is below 2^52 (the division
 * rounds to nearest, and n itself is a double, so it never falls below n); r = |a| - q |b| is one fma and exact
 * either way (for |a| >= |b| both candidates are multiples of |b|'s ulp below |b| in magnitude), and adding |b| back
 * to a negative r is exact too. */
static inline __attribute__((always_inline)) double fm_fmod_fast_f64(double a, double b, int *ok) {
    const double A = fabs(a), B = fabs(b), q = __builtin_trunc(A / B), r = fma(-q, B, A);
    *ok = q < FM_QUOTIENT_MAX_F64 && B < INFINITY;
    return copysign(r < 0 ? r + B : r, a);
}
#define FM_FAST(x, y, ok) _Generic((x), float: fm_fmod_fast_f32, double: fm_fmod_fast_f64)(x, y, ok)
#define FM_SLOW(x, y) _Generic((x), float: fmodf, double: fmod)(x, y)

/* What each op makes of a, b and mod = fmod(a, b) (PyTorch's c10 formulas, with mod given), for W float or
 * double. */
#define FM_OPS(sn, W, FLOOR, COPYSIGN)                                                                            \
    static inline __attribute__((always_inline)) W fm_fmod_##sn(W a, W b, W mod) {                                \
        (void)a, (void)b;                                                                                         \
        return mod;                                                                                               \
    }                                                                                                             \
    static inline __attribute__((always_inline)) W fm_remainder_##sn(W a, W b, W mod) {                           \
        (void)a;                                                                                                  \
        return mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;                                                  \
    }                                                                                                             \
    /* div_floor_floating: the quotient of the exact remainder, corrected to the floor; x/0 is IEEE's answer. */  \
    static inline __attribute__((always_inline)) W fm_div_floor_##sn(W a, W b, W mod) {                           \
        W div = (a - mod) / b;                                                                                    \
        div = mod != 0 && (b < 0) != (mod < 0) ? div - 1 : div;                                                   \
        const W fl = FLOOR(div), rounded = div - fl > (W)0.5 ? fl + 1 : fl;                                       \
        return b == 0 ? a / b : div == 0 ? COPYSIGN((W)0, a / b) : rounded;                                       \
    }
FM_OPS(f32, float, __builtin_floorf, copysignf)
FM_OPS(f64, double, __builtin_floor, copysign)
#define FM_OP(op, x, y, m) _Generic((x), float: fm_##op##_f32, double: fm_##op##_f64)(x, y, m)

/* The loop of one (op, dtype): blocks of FM_BLOCK loaded as the work type (an operand that is one number, scalar bit
 * 0 for a and bit 1 for b, repeated), their remainders in one vector pass, fmod where a block needs it, then the op. */
#define FM_LOOP_FN(op, DE, dn, T, WT, UT)                                                                         \
    AXON_CLONES int axon_pw_fmod_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n,              \
                                             const pw_ctx_t *ctx) {                                               \
        (void)ctx;                                                                                                \
        const T *a = (const T *)in[0], *b = (const T *)in[1];                                                     \
        T *out = (T *)o;                                                                                          \
        const WT xs = sm & 1 ? *(const WT *)in[0] : 0, ys = sm & 2 ? *(const WT *)in[1] : 1;                      \
        WT x[FM_BLOCK], y[FM_BLOCK], mod[FM_BLOCK];                                                               \
        for (int64_t i0 = 0; i0 < n; i0 += FM_BLOCK) {                                                            \
            const int m = n - i0 < FM_BLOCK ? (int)(n - i0) : FM_BLOCK;                                           \
            for (int i = m; i < FM_BLOCK; i++) x[i] = 0, y[i] = 1; /* padding: a fast, harmless pair */           \
            for (int i = 0; i < m; i++) {                                                                         \
                x[i] = sm & 1 ? xs : PW_LD_##dn(a[i0 + i]);                                                       \
                y[i] = sm & 2 ? ys : PW_LD_##dn(b[i0 + i]);                                                       \
            }                                                                                                     \
            int slow = 0;                                                                                         \
            for (int i = 0; i < FM_BLOCK; i++) {                                                                  \
                int ok;                                                                                           \
                mod[i] = FM_FAST(x[i], y[i], &ok);                                                                \
                slow |= !ok;                                                                                      \
            }                                                                                                     \
            for (int i = 0; slow && i < m; i++) {                                                                 \
                int ok;                                                                                           \
                (void)FM_FAST(x[i], y[i], &ok);                                                                   \
                if (!ok) mod[i] = FM_SLOW(x[i], y[i]);                                                            \
            }                                                                                                     \
            for (int i = 0; i < m; i++) out[i0 + i] = PW_ST_##dn(FM_OP(op, x[i], y[i], mod[i]));                  \
        }                                                                                                         \
        return 0;                                                                                                 \
    }

PW_FLOATS(FM_LOOP_FN, fmod)
PW_FLOATS(FM_LOOP_FN, remainder)
PW_FLOATS(FM_LOOP_FN, div_floor)
