/* fmod, remainder (Python's %) and div_floor (//) for float32, float16 and bfloat16: the remainder in double
 * arithmetic that vectorizes, where glibc's fmodf is a scalar call (the three ops took 7-10x torch CPU's time).
 *
 * For float operands, q = trunc(a / b) computed in double is the exact integer quotient while |a / b| < 2^29: for
 * |a| >= |b| the exact quotient is an integer or more than 2^-24 from one (a - n b is a multiple of b's ulp, which
 * exceeds 2^-24 |b|, subnormals included), and the division errs by at most |a / b| 2^-53 < 2^-24. Then a - q b is
 * one fma and exact (q b has at most 53 significant bits and the remainder is a float). The result takes a's sign, as
 * C's fmod does (-0.0 included). Larger quotients, b = 0 or infinite, and the infinities and NaN in a block send
 * those elements to fmodf; both are exact, so they give the same bits and no result depends on its neighbours.
 * remainder and div_floor then apply PyTorch's formulas (c10's, in float) to that remainder. float64 keeps glibc's
 * fmod (pointwise_binary.c). */
#include <math.h>
#include <string.h>

#include "pointwise_impl.h"

#define FM_BLOCK 64
#define FM_QUOTIENT_MAX 0x1p29

/* The exact remainder where fm_fast_ok, else anything. */
static inline __attribute__((always_inline)) float fm_fmod_fast(float a, float b) {
    const double ad = a, bd = b, q = __builtin_trunc(ad / bd);
    return (float)copysign(fma(-q, bd, ad), ad);
}
static inline __attribute__((always_inline)) int fm_fast_ok(float a, float b) {
    const double q = (double)a / (double)b;
    return fabs(q) < FM_QUOTIENT_MAX && fabsf(b) < INFINITY;
}

/* What each op makes of a, b and mod = fmod(a, b) (pointwise_binary.c's float helpers, with mod given). */
static inline __attribute__((always_inline)) float fm_fmod(float a, float b, float mod) {
    (void)a, (void)b;
    return mod;
}
static inline __attribute__((always_inline)) float fm_remainder(float a, float b, float mod) {
    (void)a;
    return mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;
}
/* div_floor_floating: the quotient of the exact remainder, corrected to the floor; x/0 is IEEE's answer. */
static inline __attribute__((always_inline)) float fm_div_floor(float a, float b, float mod) {
    float div = (a - mod) / b;
    div = mod != 0 && (b < 0) != (mod < 0) ? div - 1 : div;
    const float fl = __builtin_floorf(div), rounded = div - fl > 0.5f ? fl + 1 : fl;
    return b == 0 ? a / b : div == 0 ? copysignf(0.0f, a / b) : rounded;
}

/* The loop of one (op, dtype): blocks of FM_BLOCK loaded as float (an operand that is one number, scalar bit 0 for a
 * and bit 1 for b, repeated), their remainders in one vector pass, fmodf where a block needs it, then the op. */
#define FM_LOOP_FN(op, DE, dn, T, WT, UT)                                                                      \
    AXON_CLONES int axon_pw_fmod_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n,          \
                                             const pw_ctx_t *ctx) {                                             \
        (void)ctx;                                                                                             \
        const T *a = (const T *)in[0], *b = (const T *)in[1];                                                  \
        T *out = (T *)o;                                                                                       \
        const float xs = sm & 1 ? *(const float *)in[0] : 0, ys = sm & 2 ? *(const float *)in[1] : 1;         \
        float x[FM_BLOCK], y[FM_BLOCK], mod[FM_BLOCK];                                                         \
        for (int64_t i0 = 0; i0 < n; i0 += FM_BLOCK) {                                                         \
            const int m = n - i0 < FM_BLOCK ? (int)(n - i0) : FM_BLOCK;                                        \
            for (int i = m; i < FM_BLOCK; i++) x[i] = 0, y[i] = 1; /* padding: a fast, harmless pair */        \
            for (int i = 0; i < m; i++) {                                                                      \
                x[i] = sm & 1 ? xs : PW_LD_##dn(a[i0 + i]);                                                    \
                y[i] = sm & 2 ? ys : PW_LD_##dn(b[i0 + i]);                                                    \
            }                                                                                                  \
            int slow = 0;                                                                                      \
            for (int i = 0; i < FM_BLOCK; i++) {                                                               \
                mod[i] = fm_fmod_fast(x[i], y[i]);                                                             \
                slow |= !fm_fast_ok(x[i], y[i]);                                                               \
            }                                                                                                  \
            if (slow)                                                                                          \
                for (int i = 0; i < m; i++)                                                                    \
                    if (!fm_fast_ok(x[i], y[i])) mod[i] = fmodf(x[i], y[i]);                                   \
            for (int i = 0; i < m; i++) out[i0 + i] = PW_ST_##dn(fm_##op(x[i], y[i], mod[i]));                 \
        }                                                                                                      \
        return 0;                                                                                              \
    }

#define FM_HALVES_AND_FLOAT(X, op)                                      \
    X(op, AXON_FLOAT32, f32, float, float, uint32_t)                    \
    X(op, AXON_FLOAT16, f16, uint16_t, float, uint32_t)                 \
    X(op, AXON_BFLOAT16, bf16, uint16_t, float, uint32_t)
FM_HALVES_AND_FLOAT(FM_LOOP_FN, fmod)
FM_HALVES_AND_FLOAT(FM_LOOP_FN, remainder)
FM_HALVES_AND_FLOAT(FM_LOOP_FN, div_floor)
