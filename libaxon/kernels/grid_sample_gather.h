/* Grid sampling's float32 and float64 channel loops with AVX-512 gathers, for the forward of bilinear and trilinear
 * blocks whose offsets are int32 (grid_sample_body.h). GCC 12 vectorizes that loop with emulated gathers (a scalar
 * load and an insert per lane), which were most of a small sample's time. Header-only: grid_sample.c and its test
 * include it. */
#ifndef AXON_GRID_SAMPLE_GATHER_H
#define AXON_GRID_SAMPLE_GATHER_H

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXON_NO_CLONES)
#include <immintrin.h>
#define AXON_GS_GATHER 1
#endif

/* 1 when this CPU runs axon_gs_taps_f32_avx512 and axon_gs_taps_f64_avx512 (AVX-512F), else 0. Cannot fail. */
static inline int axon_gs_gather_available(void) {
#ifdef AXON_GS_GATHER
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

#ifdef AXON_GS_GATHER
/* acc[j] = the sum over k < ntaps, in tap order from 0, of w[k][j] * s[off[k][j]], for j < m; a tap with a negative
 * offset reads nothing and adds w * 0 (skip = 0: NaN where w is, as the bilinear loop) or 0 (skip = 1, as the
 * trilinear one). off[k] and w[k] are rows `pitch` elements apart. Products and sums are rounded one by one, as in
 * the portable loop (no fused multiply-add), so both give the same bits. Only where axon_gs_gather_available(). */
__attribute__((target("avx512f"))) static void axon_gs_taps_f32_avx512(const float *s, const int32_t *off,
                                                                        const float *w, int64_t pitch, int ntaps,
                                                                        int skip, int64_t m, float *acc) {
    const __m512i zero_i = _mm512_setzero_si512();
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t j = 0; j < m; j += 16) {
        const __mmask16 lanes = m - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (m - j)) - 1);
        __m512 sum = zero;
        for (int k = 0; k < ntaps; k++) {
            const __m512i o = _mm512_maskz_loadu_epi32(lanes, off + k * pitch + j);
            const __mmask16 inside = _mm512_mask_cmpge_epi32_mask(lanes, o, zero_i);
            const __m512 v = _mm512_mask_i32gather_ps(zero, inside, o, s, 4);
            const __m512 wk = _mm512_maskz_loadu_ps(lanes, w + k * pitch + j);
            sum = _mm512_add_ps(sum, skip ? _mm512_maskz_mul_ps(inside, wk, v) : _mm512_mul_ps(wk, v));
        }
        _mm512_mask_storeu_ps(acc + j, lanes, sum);
    }
}

/* The same for float64: 8 lanes, their int32 offsets the low half of a 16-lane load. */
__attribute__((target("avx512f"))) static void axon_gs_taps_f64_avx512(const double *s, const int32_t *off,
                                                                        const double *w, int64_t pitch, int ntaps,
                                                                        int skip, int64_t m, double *acc) {
    const __m512i zero_i = _mm512_setzero_si512();
    const __m512d zero = _mm512_setzero_pd();
    for (int64_t j = 0; j < m; j += 8) {
        const __mmask8 lanes = m - j >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (m - j)) - 1);
        __m512d sum = zero;
        for (int k = 0; k < ntaps; k++) {
            const __m512i o = _mm512_maskz_loadu_epi32((__mmask16)lanes, off + k * pitch + j);
            const __mmask8 inside = (__mmask8)_mm512_mask_cmpge_epi32_mask((__mmask16)lanes, o, zero_i);
            const __m512d v = _mm512_mask_i32gather_pd(zero, inside, _mm512_castsi512_si256(o), s, 8);
            const __m512d wk = _mm512_maskz_loadu_pd(lanes, w + k * pitch + j);
            sum = _mm512_add_pd(sum, skip ? _mm512_maskz_mul_pd(inside, wk, v) : _mm512_mul_pd(wk, v));
        }
        _mm512_mask_storeu_pd(acc + j, lanes, sum);
    }
}
#endif

#endif
