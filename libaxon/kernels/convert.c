/* The conversion loops: one function per (src, dst) dtype pair, generated from AXON_DTYPE_LIST, plus raw copies by
 * element size for src == dst. Each has a contiguous branch (a plain typed loop the compiler vectorizes; restrict
 * tells it the two sides do not alias), a broadcast branch (convert once, then store) and a strided branch. */
#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"

#define AXON_CONVERT_PAIR(sn, ST, DE, dn, DT)                                                                  \
    AXON_CLONES                                                                                                \
    static void axon_convert_##sn##_##dn(char *restrict dst, int64_t ds, const char *restrict src, int64_t ss, \
                                         int64_t n) {                                                          \
        DT *restrict d = (DT *)dst;                                                                            \
        const ST *restrict s = (const ST *)src;                                                                \
        if (ds == 1 && ss == 1) {                                                                              \
            for (int64_t i = 0; i < n; i++) d[i] = AXON_TO(dn, AXON_LOAD_##sn(s[i]));                          \
        } else if (ss == 0) {                                                                                  \
            const DT v = AXON_TO(dn, AXON_LOAD_##sn(s[0]));                                                    \
            for (int64_t i = 0; i < n; i++) d[i * ds] = v;                                                     \
        } else {                                                                                               \
            for (int64_t i = 0; i < n; i++) d[i * ds] = AXON_TO(dn, AXON_LOAD_##sn(s[i * ss]));                \
        }                                                                                                      \
    }

/* All pairs with source sn: expands AXON_CONVERT_PAIR over every destination. */
#define AXON_CONVERT_FROM(unused, SE, sn, ST) AXON_DTYPE_LIST(AXON_CONVERT_PAIR_FOR, sn, ST)
#define AXON_CONVERT_PAIR_FOR(sn, ST, DE, dn, DT) AXON_CONVERT_PAIR(sn, ST, DE, dn, DT)

/* The preprocessor will not expand AXON_DTYPE_LIST inside its own expansion, so the outer loop is written out. */
AXON_CONVERT_FROM(_, AXON_FLOAT32, f32, float)
AXON_CONVERT_FROM(_, AXON_FLOAT64, f64, double)
AXON_CONVERT_FROM(_, AXON_FLOAT16, f16, uint16_t)
AXON_CONVERT_FROM(_, AXON_BFLOAT16, bf16, uint16_t)
AXON_CONVERT_FROM(_, AXON_INT8, i8, int8_t)
AXON_CONVERT_FROM(_, AXON_UINT8, u8, uint8_t)
AXON_CONVERT_FROM(_, AXON_INT16, i16, int16_t)
AXON_CONVERT_FROM(_, AXON_INT32, i32, int32_t)
AXON_CONVERT_FROM(_, AXON_INT64, i64, int64_t)
AXON_CONVERT_FROM(_, AXON_BOOL, b8, uint8_t)
AXON_CONVERT_FROM(_, AXON_COMPLEX64, c64, axon_c64_t)
AXON_CONVERT_FROM(_, AXON_COMPLEX128, c128, axon_c128_t)
AXON_CONVERT_FROM(_, AXON_UINT16, u16, uint16_t)
AXON_CONVERT_FROM(_, AXON_UINT32, u32, uint32_t)
AXON_CONVERT_FROM(_, AXON_UINT64, u64, uint64_t)
AXON_CONVERT_FROM(_, AXON_COMPLEX32, c32, axon_c32_t)

/* float32 (and float64) -> float16 with the conversion instruction (F16C, AVX-512F) where the CPU has it: the same
 * bits as axon_f32_to_f16 (round to nearest even, NaNs quieted keeping their top payload bits), and 3x faster than
 * that function's vectorized bit arithmetic. Contiguous runs only; the rest takes the generated loop. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdatomic.h>

#define AXON_F16_ROUND (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

__attribute__((target("avx512f"))) static void f32_to_f16_avx512(uint16_t *restrict d, const float *restrict s,
                                                                  int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm512_cvtps_ph(_mm512_loadu_ps(s + i), AXON_F16_ROUND));
    for (; i < n; i++) d[i] = axon_f32_to_f16(s[i]);
}

__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(uint16_t *restrict d, const float *restrict s,
                                                                 int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), AXON_F16_ROUND));
    for (; i < n; i++) d[i] = axon_f32_to_f16(s[i]);
}

/* float64 -> float16 through float32, as PyTorch and axon_f64_to_f16 round (cvtpd2ps rounds to nearest and quiets
 * NaNs as C's cast does), then F16C. */
__attribute__((target("avx,f16c"))) static void f64_to_f16_f16c(uint16_t *restrict d, const double *restrict s,
                                                                 int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128 lo = _mm256_cvtpd_ps(_mm256_loadu_pd(s + i)), hi = _mm256_cvtpd_ps(_mm256_loadu_pd(s + i + 4));
        const __m256 f = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm256_cvtps_ph(f, AXON_F16_ROUND));
    }
    for (; i < n; i++) d[i] = axon_f64_to_f16(s[i]);
}

/* float16 -> float32 (exact) with the instruction likewise: the generated loop's vectorized bit arithmetic took 3x
 * torch CPU's time for a million halves on a Zen 3. A signaling NaN comes back quiet, as from PyTorch's own
 * vectorized conversion. */
__attribute__((target("avx512f"))) static void f16_to_f32_avx512(float *restrict d, const uint16_t *restrict s,
                                                                  int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(s + i))));
    for (; i < n; i++) d[i] = axon_f16_to_f32(s[i]);
}

__attribute__((target("avx,f16c"))) static void f16_to_f32_f16c(float *restrict d, const uint16_t *restrict s,
                                                                 int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + i))));
    for (; i < n; i++) d[i] = axon_f16_to_f32(s[i]);
}

/* float16 -> float64 through the exact float32: the kernels that load halves into float64 chunks (losses,
 * reductions) spent most of their time in the generated loop's bit arithmetic. */
__attribute__((target("avx,f16c"))) static void f16_to_f64_f16c(double *restrict d, const uint16_t *restrict s,
                                                                 int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        _mm256_storeu_pd(d + i, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
        _mm256_storeu_pd(d + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
    }
    for (; i < n; i++) d[i] = (double)axon_f16_to_f32(s[i]);
}

/* 2: AVX-512F, 1: F16C, 0: neither (first callers may all store it). */
int axon_convert_f16_level(void) {
    static _Atomic int known = -1;
    int level = atomic_load_explicit(&known, memory_order_relaxed);
    if (level < 0) {
        level = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("f16c") ? 1 : 0;
        atomic_store_explicit(&known, level, memory_order_relaxed);
    }
    return level;
}

static void axon_convert_f64_f16_fast(char *restrict dst, int64_t ds, const char *restrict src, int64_t ss,
                                      int64_t n) {
    if (ds != 1 || ss != 1 || axon_convert_f16_level() == 0)
        axon_convert_f64_f16(dst, ds, src, ss, n);
    else
        f64_to_f16_f16c((uint16_t *)(void *)dst, (const double *)(const void *)src, n);
}
#define AXON_CONVERT_F64_F16 axon_convert_f64_f16_fast

static void axon_convert_f32_f16_fast(char *restrict dst, int64_t ds, const char *restrict src, int64_t ss,
                                      int64_t n) {
    const int level = axon_convert_f16_level();
    if (ds != 1 || ss != 1 || level == 0) {
        axon_convert_f32_f16(dst, ds, src, ss, n);
    } else if (level == 2) {
        f32_to_f16_avx512((uint16_t *)(void *)dst, (const float *)(const void *)src, n);
    } else {
        f32_to_f16_f16c((uint16_t *)(void *)dst, (const float *)(const void *)src, n);
    }
}
#define AXON_CONVERT_F32_F16 axon_convert_f32_f16_fast

static void axon_convert_f16_f32_fast(char *restrict dst, int64_t ds, const char *restrict src, int64_t ss,
                                      int64_t n) {
    const int level = axon_convert_f16_level();
    if (ds != 1 || ss != 1 || level == 0) {
        axon_convert_f16_f32(dst, ds, src, ss, n);
    } else if (level == 2) {
        f16_to_f32_avx512((float *)(void *)dst, (const uint16_t *)(const void *)src, n);
    } else {
        f16_to_f32_f16c((float *)(void *)dst, (const uint16_t *)(const void *)src, n);
    }
}
#define AXON_CONVERT_F16_F32 axon_convert_f16_f32_fast

static void axon_convert_f16_f64_fast(char *restrict dst, int64_t ds, const char *restrict src, int64_t ss,
                                      int64_t n) {
    if (ds != 1 || ss != 1 || axon_convert_f16_level() == 0)
        axon_convert_f16_f64(dst, ds, src, ss, n);
    else
        f16_to_f64_f16c((double *)(void *)dst, (const uint16_t *)(const void *)src, n);
}
#define AXON_CONVERT_F16_F64 axon_convert_f16_f64_fast
#else
int axon_convert_f16_level(void) { return 0; }
#define AXON_CONVERT_F16_F32 axon_convert_f16_f32
#define AXON_CONVERT_F32_F16 axon_convert_f32_f16
#define AXON_CONVERT_F64_F16 axon_convert_f64_f16
#define AXON_CONVERT_F16_F64 axon_convert_f16_f64
#endif

#define AXON_CONVERT_ENTRY(sn, DE, dn, DT) [DE] = axon_convert_##sn##_##dn,
#define AXON_CONVERT_ROW(SE, sn) [SE] = {AXON_DTYPE_LIST(AXON_CONVERT_ENTRY, sn)}

static const axon_convert_fn convert_table[AXON_DTYPE_COUNT][AXON_DTYPE_COUNT] = {
    AXON_CONVERT_ROW(AXON_FLOAT32, f32),   AXON_CONVERT_ROW(AXON_FLOAT64, f64), AXON_CONVERT_ROW(AXON_FLOAT16, f16),
    AXON_CONVERT_ROW(AXON_BFLOAT16, bf16), AXON_CONVERT_ROW(AXON_INT8, i8),     AXON_CONVERT_ROW(AXON_UINT8, u8),
    AXON_CONVERT_ROW(AXON_INT16, i16),     AXON_CONVERT_ROW(AXON_INT32, i32),   AXON_CONVERT_ROW(AXON_INT64, i64),
    AXON_CONVERT_ROW(AXON_BOOL, b8),       AXON_CONVERT_ROW(AXON_COMPLEX64, c64),
    AXON_CONVERT_ROW(AXON_COMPLEX128, c128), AXON_CONVERT_ROW(AXON_UINT16, u16),  AXON_CONVERT_ROW(AXON_UINT32, u32),
    AXON_CONVERT_ROW(AXON_UINT64, u64),    AXON_CONVERT_ROW(AXON_COMPLEX32, c32),
};

/* Same-dtype copies move bytes: no rounding trip through float for halves, bool bytes kept as they are. */
typedef struct axon_bytes16 {
    uint64_t lo, hi;
} axon_bytes16_t;

/* Same-dtype moves. A broadcast into a contiguous run (fill) is memset when the value's bytes are all equal (zero,
 * the common case: libc's memset is tuned per CPU) and a loop of the widest stores otherwise. */
#define AXON_COPY_RAW(T)                                                                                       \
    AXON_CLONES static void axon_copy_raw_##T(char *restrict dst, int64_t ds, const char *restrict src,       \
                                              int64_t ss, int64_t n) {                                         \
        T *restrict d = (T *)dst;                                                                              \
        const T *restrict s = (const T *)src;                                                                  \
        if (ds == 1 && ss == 1) {                                                                              \
            axon_move_bytes(d, s, (size_t)n * sizeof(T));                                                      \
        } else if (ss == 0 && ds == 1) {                                                                       \
            const T v = s[0];                                                                                  \
            if (copy_bytes_uniform(src, sizeof(T))) {                                                          \
                memset(d, src[0], (size_t)n * sizeof(T));                                                      \
            } else {                                                                                           \
                for (int64_t i = 0; i < n; i++) d[i] = v;                                                      \
            }                                                                                                  \
        } else if (ss == 0) {                                                                                  \
            const T v = s[0];                                                                                  \
            for (int64_t i = 0; i < n; i++) d[i * ds] = v;                                                     \
        } else if (ds == 1 && ss == 2) { /* one part of complex values: a constant stride vectorizes */         \
            for (int64_t i = 0; i < n; i++) d[i] = s[2 * i];                                                   \
        } else if (ds == 1 && ss == -1) { /* a flip of the last dim: reversed vectors, not one element a time */ \
            for (int64_t i = 0; i < n; i++) d[i] = s[-i];                                                      \
        } else {                                                                                               \
            for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];                                             \
        }                                                                                                      \
    }

static int copy_bytes_uniform(const char *p, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (p[i] != p[0]) return 0;
    return 1;
}

AXON_COPY_RAW(uint8_t)
AXON_COPY_RAW(uint16_t)
AXON_COPY_RAW(uint32_t)
AXON_COPY_RAW(uint64_t)
AXON_COPY_RAW(axon_bytes16_t)

axon_convert_fn axon_convert_get(axon_dtype_t src, axon_dtype_t dst) {
    AXON_ASSERT((unsigned)src < AXON_DTYPE_COUNT && (unsigned)dst < AXON_DTYPE_COUNT);
    if (src == AXON_FLOAT32 && dst == AXON_FLOAT16) return AXON_CONVERT_F32_F16;
    if (src == AXON_FLOAT64 && dst == AXON_FLOAT16) return AXON_CONVERT_F64_F16;
    if (src == AXON_FLOAT16 && dst == AXON_FLOAT32) return AXON_CONVERT_F16_F32;
    if (src == AXON_FLOAT16 && dst == AXON_FLOAT64) return AXON_CONVERT_F16_F64;
    if (src != dst) return convert_table[src][dst];
    switch (axon_dtype_size(src)) {
    case 1: return axon_copy_raw_uint8_t;
    case 2: return axon_copy_raw_uint16_t;
    case 4: return axon_copy_raw_uint32_t;
    case 8: return axon_copy_raw_uint64_t;
    default: return axon_copy_raw_axon_bytes16_t;
    }
}
