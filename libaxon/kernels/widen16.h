/* Loading bfloat16 and float16 as float32 in AVX-512 kernels (gemm_avx512.c's packing, gemm_skinny.c's dot form),
 * which multiply 16-bit operands on float32 FMAs: widening is exact, so the products are those of the 16-bit values.
 * The callers take the kind as a compile-time constant (inlined once per kind). Include only from code compiled for
 * x86-64 by GCC, inside functions whose target has avx512f, avx512bw and avx512vl (the masked 16-bit loads). */
#ifndef AXON_WIDEN16_H
#define AXON_WIDEN16_H

#include <immintrin.h>

#include "axon/tensor.h"

enum { AXON_W_F32, AXON_W_BF16, AXON_W_F16 };

static inline int axon_widen_kind(axon_dtype_t dt) {
    return dt == AXON_BFLOAT16 ? AXON_W_BF16 : dt == AXON_FLOAT16 ? AXON_W_F16 : AXON_W_F32;
}

static inline int axon_widen_size(int kind) { return kind == AXON_W_F32 ? 4 : 2; }

/* Calls fn(kind, ...) with the kind of dtype dt as a constant, so that fn, inlined, is compiled once per kind. */
#define AXON_WIDEN_BY_KIND(dt, fn, ...)                                                                            \
    do {                                                                                                           \
        switch (axon_widen_kind(dt)) {                                                                             \
        case AXON_W_BF16: fn(AXON_W_BF16, __VA_ARGS__); break;                                                     \
        case AXON_W_F16: fn(AXON_W_F16, __VA_ARGS__); break;                                                       \
        default: fn(AXON_W_F32, __VA_ARGS__); break;                                                               \
        }                                                                                                          \
    } while (0)

/* The elements p[0 .. 16) of the kind selected by m, as float32 (the others zero, and not read). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __attribute__((always_inline)) __m512
axon_widen_load(const int kind, const void *p, __mmask16 m) {
    if (kind == AXON_W_F32) return _mm512_maskz_loadu_ps(m, p);
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (kind == AXON_W_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

#endif
