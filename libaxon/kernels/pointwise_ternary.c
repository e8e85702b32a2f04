/* Ternary pointwise loops and their table: WHERE, LERP, ADDCMUL, ADDCDIV, CLAMP, ADDR and two backward ops.
 *
 * Each loop has an all-arrays version, versions for the common numbers (b and c, c, or b: clamp(x, lo, hi), lerp(x,
 * y, 0.3)) and a general one in which any operand may be a number, whose loop-invariant "is a number" tests GCC's
 * -O3 loop unswitching takes out where the body is small: the bfloat16 bodies were too large for it, and
 * clamp(x, -1, 1) in bfloat16 ran unvectorized at 16x torch CPU's time. WHERE's first operand is the condition, read
 * as bool whatever the compute dtype, so the generator takes the first operand's storage type and load separately. */
#include <tgmath.h>

#include "pointwise_impl.h"

/* The expressions are written once for signed and unsigned types, so `x < 0` is sometimes always false. */
#pragma GCC diagnostic ignored "-Wtype-limits"

/* Operand k as the work value: the number, or element i of its array. The array is not read for a number. */
#define PW_OPERAND(k, TK, WK, LDK, arr) ((sm >> (k)) & 1u ? *(const WK *)in[k] : (WK)LDK(((const TK *)(arr))[i]))

#define PW_TERNARY_FN(op, EXPR, TA, WA, LDA, DE, dn, T, WT, UT)                                                     \
    AXON_CLONES                                                                                                   \
    static int pw_ternary_##op##_##dn(char *o, const char *const *in, unsigned sm, int64_t n,                     \
                                      const pw_ctx_t *ctx) {                                                      \
        typedef WT W;                                                                                            \
        typedef UT U;                                                                                            \
        PW_PARAMS(ctx);                                                                                          \
        T *restrict out = (T *)o;                                                                                \
        const TA *restrict a = (const TA *)in[0];                                                                \
        const T *restrict b = (const T *)in[1], *restrict c = (const T *)in[2];                                  \
        if (sm == 0) {                                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const WA x = (WA)LDA(a[i]);                                                                      \
                const W y = PW_LD_##dn(b[i]), z = PW_LD_##dn(c[i]);                                              \
                out[i] = PW_ST_##dn(EXPR);                                                                       \
            }                                                                                                    \
        } else if (sm == 6) { /* clamp(x, lo, hi), where(c, x, 0.0) with two numbers */                       \
            const W y = *(const W *)in[1], z = *(const W *)in[2];                                                \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const WA x = (WA)LDA(a[i]);                                                                      \
                out[i] = PW_ST_##dn(EXPR);                                                                       \
            }                                                                                                    \
        } else if (sm == 4) { /* lerp(x, y, 0.3) */                                                              \
            const W z = *(const W *)in[2];                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const WA x = (WA)LDA(a[i]);                                                                      \
                const W y = PW_LD_##dn(b[i]);                                                                    \
                out[i] = PW_ST_##dn(EXPR);                                                                       \
            }                                                                                                    \
        } else if (sm == 2) {                                                                                    \
            const W y = *(const W *)in[1];                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const WA x = (WA)LDA(a[i]);                                                                      \
                const W z = PW_LD_##dn(c[i]);                                                                    \
                out[i] = PW_ST_##dn(EXPR);                                                                       \
            }                                                                                                    \
        } else {                                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                const WA x = PW_OPERAND(0, TA, WA, LDA, a);                                                      \
                const W y = PW_OPERAND(1, T, W, PW_LD_##dn, b), z = PW_OPERAND(2, T, W, PW_LD_##dn, c);          \
                out[i] = PW_ST_##dn(EXPR);                                                                       \
            }                                                                                                    \
        }                                                                                                        \
        return 0;                                                                                                \
    }

/* All three operands in the compute dtype. */
#define PW_T3(op, EXPR, DE, dn, T, WT, UT) PW_TERNARY_FN(op, EXPR, T, WT, PW_LD_##dn, DE, dn, T, WT, UT)
/* WHERE: the condition is bool storage, 0 or 1 after the load. */
#define PW_T3W(op, EXPR, DE, dn, T, WT, UT) PW_TERNARY_FN(op, EXPR, uint8_t, uint8_t, PW_LD_b8, DE, dn, T, WT, UT)
#define PW_ENTRY(op, DE, dn, T, WT, UT) [DE] = pw_ternary_##op##_##dn,

/* WHERE: a select, so the compiler blends vectors instead of branching. */
PW_FLOATS(PW_T3W, where, (x ? y : z))
PW_INTS(PW_T3W, where, (x ? y : z))
PW_BOOLS(PW_T3W, where, (x ? y : z))

/* PyTorch's lerp: from the nearer end, so that weight 1 gives exactly `end`. */
PW_FLOATS(PW_T3, lerp, (fabs(z) < (W)0.5 ? x + z * (y - x) : y - (y - x) * ((W)1 - z)))

PW_FLOATS(PW_T3, addcmul, (x + p0 * y * z)) /* p0: value */
PW_INTS(PW_T3, addcmul, ((W)((U)x + (U)p0 * (U)y * (U)z)))
PW_FLOATS(PW_T3, addcdiv, (x + p0 * y / z))
/* addr: p0 alpha, p1 beta; beta 0 drops x (its NaN and inf too), as PyTorch's addr kernel does */
PW_FLOATS(PW_T3, addr, (p1 == 0 ? p0 * y * z : p1 * x + p0 * y * z))
PW_INTS(PW_T3, addr, ((W)((U)p1 * (U)x + (U)p0 * (U)y * (U)z)))

/* clamp(x, lo, hi) = min(max(x, lo), hi) with std::max/min, which passes a NaN x through; a NaN bound gives NaN. */
/* x the gradient; glu: y the first half, z the second; prelu: y the input, z the weight. */
PW_FLOATS(PW_T3, glu_backward, (x * y * ((W)1 / ((W)1 + PW_EXP(-z))) * ((W)1 - (W)1 / ((W)1 + PW_EXP(-z)))))
PW_FLOATS(PW_T3, prelu_backward, (y > 0 ? x : z * x))
PW_FLOATS(PW_T3, clamp, (y != y || z != z ? (W)NAN : PW_MIN_STD(PW_MAX_STD(x, y), z)))
PW_INTS(PW_T3, clamp, (PW_MIN_STD(PW_MAX_STD(x, y), z)))

#define PW_F(op) PW_FLOATS(PW_ENTRY, op)
#define PW_I(op) PW_INTS(PW_ENTRY, op)
#define PW_B(op) PW_BOOLS(PW_ENTRY, op)

const pw_loop_fn axon_pw_ternary_loops[AXON_TERNARY_COUNT][AXON_DTYPE_COUNT] = {
    [AXON_TERNARY_WHERE] = {PW_F(where) PW_I(where) PW_B(where)},
    [AXON_TERNARY_LERP] = {PW_F(lerp)},
    [AXON_TERNARY_ADDCMUL] = {PW_F(addcmul) PW_I(addcmul)},
    [AXON_TERNARY_ADDCDIV] = {PW_F(addcdiv)},
    [AXON_TERNARY_CLAMP] = {PW_F(clamp) PW_I(clamp)},
    [AXON_TERNARY_GLU_BACKWARD] = {PW_F(glu_backward)},
    [AXON_TERNARY_PRELU_BACKWARD] = {PW_F(prelu_backward)},
    [AXON_TERNARY_ADDR] = {PW_F(addr) PW_I(addr)},
};
