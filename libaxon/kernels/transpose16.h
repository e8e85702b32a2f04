/* A 16 x 16 transpose of float32 (or 16-bit values widened to it) in AVX-512 registers, for the GEMM kernels'
 * packing (gemm_avx512.c, gemm_avx512_bt.c). Include only from code compiled for x86-64 by GCC, inside functions whose
 * target has avx512f, avx512bw and avx512vl. */
#ifndef AXON_TRANSPOSE16_H
#define AXON_TRANSPOSE16_H

#include <immintrin.h>
#include <stdint.h>

#include "widen16.h"

#define AXON_TRANSPOSE16_INLINE \
    __attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __attribute__((always_inline))

/* 16 x 16 transpose of rows [0, nr) x columns [0, nc) at src (row stride rs elements of the kind; the rest zero,
 * nothing past it read): on return lane r of out[c] holds src[r * rs + c] as float32. */
AXON_TRANSPOSE16_INLINE void axon_transpose16(const int kind, const char *src, int64_t rs, int64_t nr, int64_t nc,
                                              __m512 out[16]) {
    const __mmask16 m = nc >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nc) - 1);
    const int64_t es = axon_widen_size(kind);
    __m512 r[16], t[16];
#pragma GCC unroll 16
    for (int q = 0; q < 16; q++) r[q] = q < nr ? axon_widen_load(kind, src + q * rs * es, m) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    /* r[4i + c], 128-bit lane L: column 4L + c of rows 4i .. 4i + 3 */
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        const __m512 v1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88), v2 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        const __m512 w1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        const __m512 w2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
        out[c] = _mm512_shuffle_f32x4(v1, w1, 0x88);
        out[4 + c] = _mm512_shuffle_f32x4(v2, w2, 0x88);
        out[8 + c] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
        out[12 + c] = _mm512_shuffle_f32x4(v2, w2, 0xDD);
    }
}

#endif
