/* float16 and bfloat16 add, sub, mul and div, and the activations training steps run most (relu, leaky_relu,
 * hardswish and their backward forms), in one AVX2 pass: eight 16-bit values widened to float32 in a register, the op,
 * and the result rounded back to nearest even. float16 widens and rounds on the CPU's conversion instructions (F16C);
 * bfloat16 by a shift and axon_f32_to_bf16's integer rounding, eight lanes at a time. The generic 16-bit loops widen
 * and round element by element (float16 by bit arithmetic), and the float32 loop between two conversion passes
 * (pointwise.c's pw_f16_as_f32) costs three passes: x * 2.0 on a million halves took 1.5x torch CPU's time that way
 * on a Zen 3, and bfloat16's generic relu 3.4x this file's float16 relu.
 * The bits are those of the other paths: the op in float32 on exact widenings, rounded once; x + alpha * y as one
 * fused multiply-add, as pointwise_binary.c's alpha loops and PyTorch's vectorized loops compute it (with alpha 1,
 * x + y). A NaN comes back quiet with its sign and top payload bits, as from the conversion passes and axon_f32_to_bf16
 * (PyTorch's own vectorized bfloat16 rounding gives 0xFFFF for any NaN: a NaN either way). */
#include <math.h>

#include "pointwise_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define PF_ROUND (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define PF_TARGET __attribute__((target("avx2,fma,f16c")))

/* Values of type T (f16, bf16) widened to float32 lanes and rounded back: sixteen at p into two vectors and out of
 * them, eight, and one for the tails. bfloat16's sixteen are interleaved with zeros in each 128-bit half (values
 * 0-3 and 8-11 in lo, 4-7 and 12-15 in hi), which packing the two rounded halves undoes; element-wise ops do not
 * mind the order. */
#define PF_LD16_f16(p, lo, hi)                                                                                   \
    ((lo) = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p))),                              \
     (hi) = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)((p) + 8))))
#define PF_ST16_f16(p, lo, hi) (PF_ST8_f16(p, lo), PF_ST8_f16((p) + 8, hi))
#define PF_LD8_f16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define PF_ST8_f16(p, v) _mm_storeu_si128((__m128i *)(void *)(p), _mm256_cvtps_ph(v, PF_ROUND))
#define PF_LD16_bf16(p, lo, hi)                                                                                  \
    do {                                                                                                         \
        const __m256i w_ = _mm256_loadu_si256((const __m256i *)(const void *)(p));                               \
        (lo) = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), w_));                          \
        (hi) = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), w_));                          \
    } while (0)
#define PF_ST16_bf16(p, lo, hi)                                                                                  \
    _mm256_storeu_si256((__m256i *)(void *)(p), _mm256_packus_epi32(pf_round_bf16(lo), pf_round_bf16(hi)))
#define PF_LD8_bf16(p)                                                                                           \
    _mm256_castsi256_ps(                                                                                         \
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))
#define PF_ST8_bf16(p, v)                                                                                        \
    _mm_storeu_si128((__m128i *)(void *)(p),                                                                     \
                     _mm256_castsi256_si128(_mm256_permute4x64_epi64(                                            \
                         _mm256_packus_epi32(pf_round_bf16(v), pf_round_bf16(v)), 0x08))) /* r0-3 | r4-7 */
#define PF_LD1_f16(x) axon_f16_to_f32(x)
#define PF_ST1_f16(v) axon_f32_to_f16(v)
#define PF_LD1_bf16(x) axon_bf16_to_f32(x)
#define PF_ST1_bf16(v) axon_f32_to_bf16(v)

/* axon_f32_to_bf16 on eight lanes, each result in the low 16 bits of its 32: a NaN made quiet and not rounded, the
 * rest rounded to nearest even by adding just under half an ulp plus the kept LSB. */
PF_TARGET static inline __m256i pf_round_bf16(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
    const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
}

/* One loop per op and type: sm bit 0 when a is a number (a float in in[0]), bit 1 when b is (pw_loop_fn's
 * contract); in EXPR and PF_VEC_op, x and y are eight lanes (__m256; two vectors per sixteen values) or one float in
 * the tail, p0 the op's alpha. In-place ops (out the same as a or b) are safe: each vector is loaded before the
 * store of its own elements. */
#define PF_LOOP_T(T, op, EXPR)                                                                                   \
    PF_TARGET static int pw_##T##_##op(char *o, const char *const *in, unsigned sm, int64_t n,                  \
                                       const pw_ctx_t *ctx) {                                                   \
        uint16_t *restrict out = (uint16_t *)(void *)o;                                                          \
        const uint16_t *restrict a = (const uint16_t *)(const void *)in[0];                                      \
        const uint16_t *restrict b = (const uint16_t *)(const void *)in[1];                                      \
        const float p0 = ctx->pf[0];                                                                             \
        const float xs = sm & 1 ? *(const float *)(const void *)in[0] : 0.0f;                                    \
        const float ys = sm & 2 ? *(const float *)(const void *)in[1] : 0.0f;                                    \
        const __m256 xv = _mm256_set1_ps(xs), yv = _mm256_set1_ps(ys), pv = _mm256_set1_ps(p0);                  \
        (void)pv;                                                                                                \
        int64_t i = 0;                                                                                           \
        for (; i + 16 <= n; i += 16) {                                                                           \
            __m256 x0 = xv, x1 = xv, y0 = yv, y1 = yv;                                                           \
            if (!(sm & 1)) PF_LD16_##T(a + i, x0, x1);                                                           \
            if (!(sm & 2)) PF_LD16_##T(b + i, y0, y1);                                                           \
            PF_ST16_##T(out + i, PF_VEC_##op(x0, y0, pv), PF_VEC_##op(x1, y1, pv));                              \
        }                                                                                                        \
        if (i + 8 <= n) {                                                                                        \
            const __m256 x = sm & 1 ? xv : PF_LD8_##T(a + i);                                                    \
            const __m256 y = sm & 2 ? yv : PF_LD8_##T(b + i);                                                    \
            PF_ST8_##T(out + i, PF_VEC_##op(x, y, pv));                                                          \
            i += 8;                                                                                              \
        }                                                                                                        \
        for (; i < n; i++) {                                                                                     \
            const float x = sm & 1 ? xs : PF_LD1_##T(a[i]), y = sm & 2 ? ys : PF_LD1_##T(b[i]);                  \
            out[i] = PF_ST1_##T(EXPR);                                                                           \
        }                                                                                                        \
        return 0;                                                                                                \
    }
#define PF_LOOP(op, EXPR) PF_LOOP_T(f16, op, EXPR) PF_LOOP_T(bf16, op, EXPR)

#define PF_VEC_add(x, y, p) _mm256_fmadd_ps(p, y, x)
#define PF_VEC_sub(x, y, p) _mm256_fnmadd_ps(p, y, x)
#define PF_VEC_mul(x, y, p) _mm256_mul_ps(x, y)
#define PF_VEC_div(x, y, p) _mm256_div_ps(x, y)
/* The same expressions as pointwise_binary.c's float loops; add and sub with alpha rounded once, as PyTorch's CPU
 * loops (and pointwise_binary.c's alpha loops) compute them: with alpha 1 that is x + y. */
PF_LOOP(add, fmaf(p0, y, x))
PF_LOOP(sub, fmaf(-p0, y, x))
PF_LOOP(mul, x * y)
PF_LOOP(div, x / y)

/* The backward forms, with pointwise_binary.c's float expressions (x the gradient, y the input, p0 the op's
 * parameter) as ordered compares and blends: a NaN y takes the branch its scalar expression's false compare takes. */
#define PF_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define PF_LE(a, b) _mm256_cmp_ps(a, b, _CMP_LE_OQ)
#define PF_GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define PF_GE(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define PF_K(c) _mm256_set1_ps(c)
#define PF_VEC_threshold_backward(x, y, p) _mm256_blendv_ps(x, _mm256_setzero_ps(), PF_LE(y, p))
#define PF_VEC_leaky_relu_backward(x, y, p) _mm256_blendv_ps(_mm256_mul_ps(x, p), x, PF_GT(y, _mm256_setzero_ps()))
#define PF_VEC_hardswish_backward(x, y, p)                                                                      \
    _mm256_blendv_ps(                                                                                          \
        _mm256_blendv_ps(_mm256_mul_ps(x, _mm256_add_ps(_mm256_div_ps(y, PF_K(3.0f)), PF_K(0.5f))), x,        \
                         PF_GE(y, PF_K(3.0f))),                                                                \
        _mm256_setzero_ps(), PF_LE(y, PF_K(-3.0f)))
PF_LOOP(threshold_backward, y <= p0 ? 0.0f : x)
PF_LOOP(leaky_relu_backward, y > 0 ? x : x * p0)
PF_LOOP(hardswish_backward, y <= -3.0f ? 0.0f : y >= 3.0f ? x : x * (y / 3.0f + 0.5f))

/* Unary loops (no number form: pointwise_exec.c gives a unary op its input as memory): pointwise_unary.c's float
 * expressions, x the input, p0 the op's parameter. */
#define PF_UNARY_T(T, op, EXPR)                                                                                  \
    PF_TARGET static int pw_##T##_##op(char *o, const char *const *in, unsigned sm, int64_t n,                  \
                                       const pw_ctx_t *ctx) {                                                   \
        (void)sm;                                                                                                \
        uint16_t *restrict out = (uint16_t *)(void *)o;                                                          \
        const uint16_t *restrict a = (const uint16_t *)(const void *)in[0];                                      \
        const float p0 = ctx->pf[0];                                                                             \
        const __m256 pv = _mm256_set1_ps(p0);                                                                    \
        (void)pv;                                                                                                \
        int64_t i = 0;                                                                                           \
        for (; i + 16 <= n; i += 16) {                                                                           \
            __m256 x0, x1;                                                                                       \
            PF_LD16_##T(a + i, x0, x1);                                                                          \
            PF_ST16_##T(out + i, PF_UVEC_##op(x0, pv), PF_UVEC_##op(x1, pv));                                    \
        }                                                                                                        \
        if (i + 8 <= n) PF_ST8_##T(out + i, PF_UVEC_##op(PF_LD8_##T(a + i), pv)), i += 8;                        \
        for (; i < n; i++) {                                                                                     \
            const float x = PF_LD1_##T(a[i]);                                                                    \
            out[i] = PF_ST1_##T(EXPR);                                                                           \
        }                                                                                                        \
        return 0;                                                                                                \
    }
#define PF_UNARY(op, EXPR) PF_UNARY_T(f16, op, EXPR) PF_UNARY_T(bf16, op, EXPR)
#define PF_UVEC_relu(x, p) _mm256_blendv_ps(x, _mm256_setzero_ps(), PF_LT(x, _mm256_setzero_ps()))
#define PF_UVEC_leaky_relu(x, p) _mm256_blendv_ps(_mm256_mul_ps(x, p), x, PF_GT(x, _mm256_setzero_ps()))
/* min(max(x + 3, 0), 6) as PW_MAX_STD and PW_MIN_STD pick (a NaN stays), times x, over 6 */
PF_TARGET static inline __m256 pf_hardswish8(__m256 x) {
    const __m256 t = _mm256_add_ps(x, PF_K(3.0f));
    const __m256 m = _mm256_blendv_ps(t, _mm256_setzero_ps(), PF_LT(t, _mm256_setzero_ps()));
    const __m256 c = _mm256_blendv_ps(m, PF_K(6.0f), PF_LT(PF_K(6.0f), m));
    return _mm256_div_ps(_mm256_mul_ps(x, c), PF_K(6.0f));
}
#define PF_UVEC_hardswish(x, p) pf_hardswish8(x)
static inline float pf_hardswish(float x) {
    const float t = x + 3.0f, m = t < 0.0f ? 0.0f : t, c = 6.0f < m ? 6.0f : m;
    return x * c / 6.0f;
}
PF_UNARY(relu, x < 0 ? 0.0f : x)
PF_UNARY(leaky_relu, x > 0 ? x : x * p0)
PF_UNARY(hardswish, pf_hardswish(x))

/* The row form (pw_row_loop_fn): g rows of R values, one float value per row as operand `which`. */
#define PF_ROWS_T(T, op, EXPR)                                                                                   \
    PF_TARGET static int pw_##T##_rows_##op(const pw_rows_t *rows, const pw_ctx_t *ctx) {                        \
        const float p0 = ctx->pf[0];                                                                             \
        const __m256 pv = _mm256_set1_ps(p0);                                                                    \
        (void)pv;                                                                                                \
        const float *v = (const float *)(const void *)rows->v;                                                   \
        const int64_t R = rows->R;                                                                               \
        for (int64_t r = 0; r < rows->g; r++) {                                                                  \
            const uint16_t *restrict e = (const uint16_t *)(const void *)rows->e + r * rows->estep;               \
            uint16_t *restrict out = (uint16_t *)(void *)rows->out + r * rows->ostep;                             \
            const float s = v[r * rows->vstep];                                                                  \
            const __m256 sv = _mm256_set1_ps(s);                                                                 \
            int64_t i = 0;                                                                                       \
            for (; i + 16 <= R; i += 16) {                                                                       \
                __m256 e0, e1;                                                                                   \
                PF_LD16_##T(e + i, e0, e1);                                                                      \
                if (rows->which) PF_ST16_##T(out + i, PF_VEC_##op(e0, sv, pv), PF_VEC_##op(e1, sv, pv));         \
                else PF_ST16_##T(out + i, PF_VEC_##op(sv, e0, pv), PF_VEC_##op(sv, e1, pv));                     \
            }                                                                                                    \
            if (i + 8 <= R) {                                                                                    \
                const __m256 ev = PF_LD8_##T(e + i);                                                             \
                PF_ST8_##T(out + i, rows->which ? PF_VEC_##op(ev, sv, pv) : PF_VEC_##op(sv, ev, pv));            \
                i += 8;                                                                                          \
            }                                                                                                    \
            for (; i < R; i++) {                                                                                 \
                const float ek = PF_LD1_##T(e[i]), x = rows->which ? ek : s, y = rows->which ? s : ek;           \
                out[i] = PF_ST1_##T(EXPR);                                                                       \
            }                                                                                                    \
        }                                                                                                        \
        return 0;                                                                                                \
    }
#define PF_ROWS(op, EXPR) PF_ROWS_T(f16, op, EXPR) PF_ROWS_T(bf16, op, EXPR)
PF_ROWS(add, fmaf(p0, y, x))
PF_ROWS(sub, fmaf(-p0, y, x))
PF_ROWS(mul, x * y)
PF_ROWS(div, x / y)

/* The loops are built for AVX2 with FMA and F16C (AMD's Piledriver has the last two without AVX2). */
static int pf_supported(void) {
    return axon_convert_f16_level() > 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

#define PF_PICK(T, name) ((T) == AXON_FLOAT16 ? pw_f16_##name : pw_bf16_##name)

pw_row_loop_fn axon_pw_half_binary_rows(int op, axon_dtype_t t) {
    if ((t != AXON_FLOAT16 && t != AXON_BFLOAT16) || !pf_supported()) return NULL;
    switch (op) {
    case AXON_BINARY_ADD: return PF_PICK(t, rows_add);
    case AXON_BINARY_SUB: return PF_PICK(t, rows_sub);
    case AXON_BINARY_MUL: return PF_PICK(t, rows_mul);
    case AXON_BINARY_DIV: return PF_PICK(t, rows_div);
    default: return NULL;
    }
}

pw_loop_fn axon_pw_half_binary(int op, axon_dtype_t t) {
    if ((t != AXON_FLOAT16 && t != AXON_BFLOAT16) || !pf_supported()) return NULL;
    switch (op) {
    case AXON_BINARY_ADD: return PF_PICK(t, add);
    case AXON_BINARY_SUB: return PF_PICK(t, sub);
    case AXON_BINARY_MUL: return PF_PICK(t, mul);
    case AXON_BINARY_DIV: return PF_PICK(t, div);
    case AXON_BINARY_THRESHOLD_BACKWARD: return PF_PICK(t, threshold_backward);
    case AXON_BINARY_LEAKY_RELU_BACKWARD: return PF_PICK(t, leaky_relu_backward);
    case AXON_BINARY_HARDSWISH_BACKWARD: return PF_PICK(t, hardswish_backward);
    default: return NULL;
    }
}

pw_loop_fn axon_pw_half_unary(int op, axon_dtype_t t) {
    if ((t != AXON_FLOAT16 && t != AXON_BFLOAT16) || !pf_supported()) return NULL;
    switch (op) {
    case AXON_UNARY_RELU: return PF_PICK(t, relu);
    case AXON_UNARY_LEAKY_RELU: return PF_PICK(t, leaky_relu);
    case AXON_UNARY_HARDSWISH: return PF_PICK(t, hardswish);
    default: return NULL;
    }
}
#else
pw_loop_fn axon_pw_half_unary(int op, axon_dtype_t t) {
    (void)op, (void)t;
    return NULL;
}

pw_loop_fn axon_pw_half_binary(int op, axon_dtype_t t) {
    (void)op, (void)t;
    return NULL;
}

pw_row_loop_fn axon_pw_half_binary_rows(int op, axon_dtype_t t) {
    (void)op, (void)t;
    return NULL;
}
#endif
