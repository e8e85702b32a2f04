/* float16 add, sub, mul and div, and the activations training steps run most (relu, leaky_relu, hardswish and their
 * backward forms), on the CPU's conversion instructions (F16C): eight halves widened to float32 in a register, the
 * op, and the result rounded back to float16 (to nearest even), one pass over the data. The generic
 * float16 loops widen and round by bit arithmetic, and the float32 loop between two conversion passes (pointwise.c's
 * pw_f16_as_f32) costs three passes: x * 2.0 on a million halves took 1.5x torch CPU's time that way on a Zen 3.
 * The bits are those of the other paths: the op in float32 on exact widenings, rounded once to float16; x + alpha * y
 * as one fused multiply-add, as pointwise_binary.c's alpha loops and PyTorch's vectorized loops compute it (with
 * alpha 1, x + y). A signaling NaN comes back quiet, as from the conversion passes and from PyTorch's loops. */
#include <math.h>

#include "pointwise_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define PF_ROUND (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* One loop per op: sm bit 0 when a is a number (a float in in[0]), bit 1 when b is (pw_loop_fn's contract); x and y
 * are eight lanes (__m256) or one float in the tail, p0 the op's alpha. */
#define PF_LOOP(op, EXPR)                                                                                        \
    __attribute__((target("avx2,fma,f16c"))) static int pw_f16c_##op(char *o, const char *const *in, unsigned sm,   \
                                                                       int64_t n, const pw_ctx_t *ctx) {        \
        uint16_t *restrict out = (uint16_t *)(void *)o;                                                          \
        const uint16_t *restrict a = (const uint16_t *)(const void *)in[0];                                      \
        const uint16_t *restrict b = (const uint16_t *)(const void *)in[1];                                      \
        const float p0 = ctx->pf[0];                                                                             \
        const float xs = sm & 1 ? *(const float *)(const void *)in[0] : 0.0f;                                    \
        const float ys = sm & 2 ? *(const float *)(const void *)in[1] : 0.0f;                                    \
        const __m256 xv = _mm256_set1_ps(xs), yv = _mm256_set1_ps(ys), pv = _mm256_set1_ps(p0);                  \
        (void)pv;                                                                                                \
        int64_t i = 0;                                                                                           \
        for (; i + 8 <= n; i += 8) {                                                                             \
            const __m256 x = sm & 1 ? xv : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(a + i))); \
            const __m256 y = sm & 2 ? yv : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(b + i))); \
            _mm_storeu_si128((__m128i *)(void *)(out + i), _mm256_cvtps_ph(PF_VEC_##op(x, y, pv), PF_ROUND));   \
        }                                                                                                        \
        for (; i < n; i++) {                                                                                     \
            const float x = sm & 1 ? xs : axon_f16_to_f32(a[i]), y = sm & 2 ? ys : axon_f16_to_f32(b[i]);        \
            out[i] = axon_f32_to_f16(EXPR);                                                                      \
        }                                                                                                        \
        return 0;                                                                                                \
    }

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
#define PF_UNARY(op, EXPR)                                                                                      \
    __attribute__((target("avx2,fma,f16c"))) static int pw_f16c_##op(char *o, const char *const *in, unsigned sm,   \
                                                                       int64_t n, const pw_ctx_t *ctx) {        \
        (void)sm;                                                                                                \
        uint16_t *restrict out = (uint16_t *)(void *)o;                                                          \
        const uint16_t *restrict a = (const uint16_t *)(const void *)in[0];                                      \
        const float p0 = ctx->pf[0];                                                                             \
        const __m256 pv = _mm256_set1_ps(p0);                                                                    \
        (void)pv;                                                                                                \
        int64_t i = 0;                                                                                           \
        for (; i + 8 <= n; i += 8) {                                                                             \
            const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(a + i)));            \
            _mm_storeu_si128((__m128i *)(void *)(out + i), _mm256_cvtps_ph(PF_UVEC_##op(x, pv), PF_ROUND));     \
        }                                                                                                        \
        for (; i < n; i++) {                                                                                     \
            const float x = axon_f16_to_f32(a[i]);                                                               \
            out[i] = axon_f32_to_f16(EXPR);                                                                      \
        }                                                                                                        \
        return 0;                                                                                                \
    }
#define PF_UVEC_relu(x, p) _mm256_blendv_ps(x, _mm256_setzero_ps(), PF_LT(x, _mm256_setzero_ps()))
#define PF_UVEC_leaky_relu(x, p) _mm256_blendv_ps(_mm256_mul_ps(x, p), x, PF_GT(x, _mm256_setzero_ps()))
/* min(max(x + 3, 0), 6) as PW_MAX_STD and PW_MIN_STD pick (a NaN stays), times x, over 6 */
#define PF_HS_CLAMP(t) _mm256_blendv_ps(t, PF_K(6.0f), PF_LT(PF_K(6.0f), t))
#define PF_UVEC_hardswish(x, p)                                                                                 \
    _mm256_div_ps(_mm256_mul_ps(x, PF_HS_CLAMP(_mm256_blendv_ps(_mm256_add_ps(x, PF_K(3.0f)), _mm256_setzero_ps(), \
                                                                 PF_LT(_mm256_add_ps(x, PF_K(3.0f)),          \
                                                                       _mm256_setzero_ps())))),               \
                  PF_K(6.0f))
static inline float pf_hardswish(float x) {
    const float t = x + 3.0f, m = t < 0.0f ? 0.0f : t, c = 6.0f < m ? 6.0f : m;
    return x * c / 6.0f;
}
PF_UNARY(relu, x < 0 ? 0.0f : x)
PF_UNARY(leaky_relu, x > 0 ? x : x * p0)
PF_UNARY(hardswish, pf_hardswish(x))

/* The row form (pw_row_loop_fn): g rows of R halves, one float value per row as operand `which`. */
#define PF_ROWS(op, EXPR)                                                                                        \
    __attribute__((target("avx2,fma,f16c"))) static int pw_f16c_rows_##op(const pw_rows_t *rows,                 \
                                                                            const pw_ctx_t *ctx) {               \
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
            for (; i + 8 <= R; i += 8) {                                                                         \
                const __m256 ev = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(e + i)));      \
                const __m256 res = rows->which ? PF_VEC_##op(ev, sv, pv) : PF_VEC_##op(sv, ev, pv);              \
                _mm_storeu_si128((__m128i *)(void *)(out + i), _mm256_cvtps_ph(res, PF_ROUND));                  \
            }                                                                                                    \
            for (; i < R; i++) {                                                                                 \
                const float ek = axon_f16_to_f32(e[i]), x = rows->which ? ek : s, y = rows->which ? s : ek;      \
                out[i] = axon_f32_to_f16(EXPR);                                                                  \
            }                                                                                                    \
        }                                                                                                        \
        return 0;                                                                                                \
    }
PF_ROWS(add, fmaf(p0, y, x))
PF_ROWS(sub, fmaf(-p0, y, x))
PF_ROWS(mul, x * y)
PF_ROWS(div, x / y)

/* The loops are built for AVX2 with FMA and F16C (AMD's Piledriver has the last two without AVX2). */
static int pf_supported(void) {
    return axon_convert_f16_level() > 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

pw_row_loop_fn axon_pw_f16c_binary_rows(int op) {
    if (!pf_supported()) return NULL;
    switch (op) {
    case AXON_BINARY_ADD: return pw_f16c_rows_add;
    case AXON_BINARY_SUB: return pw_f16c_rows_sub;
    case AXON_BINARY_MUL: return pw_f16c_rows_mul;
    case AXON_BINARY_DIV: return pw_f16c_rows_div;
    default: return NULL;
    }
}

pw_loop_fn axon_pw_f16c_binary(int op) {
    if (!pf_supported()) return NULL;
    switch (op) {
    case AXON_BINARY_ADD: return pw_f16c_add;
    case AXON_BINARY_SUB: return pw_f16c_sub;
    case AXON_BINARY_MUL: return pw_f16c_mul;
    case AXON_BINARY_DIV: return pw_f16c_div;
    case AXON_BINARY_THRESHOLD_BACKWARD: return pw_f16c_threshold_backward;
    case AXON_BINARY_LEAKY_RELU_BACKWARD: return pw_f16c_leaky_relu_backward;
    case AXON_BINARY_HARDSWISH_BACKWARD: return pw_f16c_hardswish_backward;
    default: return NULL;
    }
}

pw_loop_fn axon_pw_f16c_unary(int op) {
    if (!pf_supported()) return NULL;
    switch (op) {
    case AXON_UNARY_RELU: return pw_f16c_relu;
    case AXON_UNARY_LEAKY_RELU: return pw_f16c_leaky_relu;
    case AXON_UNARY_HARDSWISH: return pw_f16c_hardswish;
    default: return NULL;
    }
}
#else
pw_loop_fn axon_pw_f16c_unary(int op) {
    (void)op;
    return NULL;
}

pw_loop_fn axon_pw_f16c_binary(int op) {
    (void)op;
    return NULL;
}

pw_row_loop_fn axon_pw_f16c_binary_rows(int op) {
    (void)op;
    return NULL;
}
#endif
