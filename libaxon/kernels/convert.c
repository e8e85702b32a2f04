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

#define AXON_CONVERT_ENTRY(sn, DE, dn, DT) [DE] = axon_convert_##sn##_##dn,
#define AXON_CONVERT_ROW(SE, sn) [SE] = {AXON_DTYPE_LIST(AXON_CONVERT_ENTRY, sn)}

static const axon_convert_fn convert_table[AXON_DTYPE_COUNT][AXON_DTYPE_COUNT] = {
    AXON_CONVERT_ROW(AXON_FLOAT32, f32),   AXON_CONVERT_ROW(AXON_FLOAT64, f64), AXON_CONVERT_ROW(AXON_FLOAT16, f16),
    AXON_CONVERT_ROW(AXON_BFLOAT16, bf16), AXON_CONVERT_ROW(AXON_INT8, i8),     AXON_CONVERT_ROW(AXON_UINT8, u8),
    AXON_CONVERT_ROW(AXON_INT16, i16),     AXON_CONVERT_ROW(AXON_INT32, i32),   AXON_CONVERT_ROW(AXON_INT64, i64),
    AXON_CONVERT_ROW(AXON_BOOL, b8),       AXON_CONVERT_ROW(AXON_COMPLEX64, c64),
    AXON_CONVERT_ROW(AXON_COMPLEX128, c128),
};

/* Same-dtype copies move bytes: no rounding trip through float for halves, bool bytes kept as they are. */
typedef struct axon_bytes16 {
    uint64_t lo, hi;
} axon_bytes16_t;

#define AXON_COPY_RAW(T)                                                                                       \
    static void axon_copy_raw_##T(char *restrict dst, int64_t ds, const char *restrict src, int64_t ss,        \
                                  int64_t n) {                                                                 \
        T *restrict d = (T *)dst;                                                                              \
        const T *restrict s = (const T *)src;                                                                  \
        if (ds == 1 && ss == 1) {                                                                              \
            memcpy(d, s, (size_t)n * sizeof(T));                                                               \
        } else if (ss == 0) {                                                                                  \
            const T v = s[0];                                                                                  \
            for (int64_t i = 0; i < n; i++) d[i * ds] = v;                                                     \
        } else {                                                                                               \
            for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];                                             \
        }                                                                                                      \
    }

AXON_COPY_RAW(uint8_t)
AXON_COPY_RAW(uint16_t)
AXON_COPY_RAW(uint32_t)
AXON_COPY_RAW(uint64_t)
AXON_COPY_RAW(axon_bytes16_t)

axon_convert_fn axon_convert_get(axon_dtype_t src, axon_dtype_t dst) {
    AXON_ASSERT((unsigned)src < AXON_DTYPE_COUNT && (unsigned)dst < AXON_DTYPE_COUNT);
    if (src != dst) return convert_table[src][dst];
    switch (axon_dtype_size(src)) {
    case 1: return axon_copy_raw_uint8_t;
    case 2: return axon_copy_raw_uint16_t;
    case 4: return axon_copy_raw_uint32_t;
    case 8: return axon_copy_raw_uint64_t;
    default: return axon_copy_raw_axon_bytes16_t;
    }
}
