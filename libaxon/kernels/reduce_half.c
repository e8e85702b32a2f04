/* float16 and bfloat16 sums folded from their own storage: the INNER and SPLIT paths' blocks of halves widened in
 * registers instead of converted into the walk's float buffer first and folded from there (two passes; a float16
 * sum(1) of [2048, 1024] took 1.4x torch CPU's time that way on a Zen 3).
 *
 * The bits are rd_lanes_f32's for RD_SUM on the widened block (reduce_ops.c): 64 lanes as eight 8-lane vectors,
 * element i + l added to lane l, the tail added to lane 0 in order, then vector k with vector k + w for w = 4, 2, 1
 * and the lanes of vector 0 in the same three steps. Widening is exact, so the sums are the same additions. */
#include "dtype.h"
#include "reduce_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define RH_TARGET __attribute__((target("avx2,f16c")))

RH_TARGET static inline __m256 rh_load_f16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

RH_TARGET static inline __m256 rh_load_bf16(const uint16_t *p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* lane 0 replaced by a (lane 0 with the tail added), the tree, lane 0 of the result */
RH_TARGET static inline float rh_finish(__m256 u[8], float a) {
    u[0] = _mm256_blend_ps(u[0], _mm256_set1_ps(a), 1);
    for (int w = 4; w >= 1; w /= 2)
        for (int q = 0; q < w; q++) u[q] = _mm256_add_ps(u[q], u[q + w]);
    __m256 t = u[0];
    t = _mm256_add_ps(t, _mm256_permutevar8x32_ps(t, _mm256_setr_epi32(4, 5, 6, 7, 4, 5, 6, 7)));
    t = _mm256_add_ps(t, _mm256_permutevar8x32_ps(t, _mm256_setr_epi32(2, 3, 2, 3, 2, 3, 2, 3)));
    t = _mm256_add_ps(t, _mm256_permutevar8x32_ps(t, _mm256_set1_epi32(1)));
    return _mm_cvtss_f32(_mm256_castps256_ps128(t));
}

#define RH_FOLD(NAME, LOAD, WIDEN)                                                                              \
    RH_TARGET static float NAME(const void *xv, int64_t n) {                                                    \
        const uint16_t *x = xv;                                                                                 \
        __m256 u[8];                                                                                            \
        for (int q = 0; q < 8; q++) u[q] = _mm256_setzero_ps();                                                 \
        int64_t i = 0;                                                                                          \
        for (; i + 64 <= n; i += 64)                                                                            \
            for (int q = 0; q < 8; q++) u[q] = _mm256_add_ps(u[q], LOAD(x + i + 8 * q));                       \
        float a = _mm_cvtss_f32(_mm256_castps256_ps128(u[0]));                                                  \
        for (; i < n; i++) a += WIDEN(x[i]);                                                                    \
        return rh_finish(u, a);                                                                                 \
    }
RH_FOLD(rh_fold_f16, rh_load_f16, axon_f16_to_f32)
RH_FOLD(rh_fold_bf16, rh_load_bf16, axon_bf16_to_f32)

rd_half_fold_fn axon_rd_half_fold(int half_sum) {
    if (!__builtin_cpu_supports("avx2")) return NULL;
    if (half_sum == RD_HALF_BF16) return rh_fold_bf16;
    if (half_sum == RD_HALF_F16 && __builtin_cpu_supports("f16c")) return rh_fold_f16;
    return NULL;
}
#else
rd_half_fold_fn axon_rd_half_fold(int half_sum) {
    (void)half_sum;
    return NULL;
}
#endif
