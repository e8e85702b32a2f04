/* Reference helpers for the pointwise tests: exact element decoding and rounding to every real dtype, shared by
 * test_kernels_pointwise.c and test_kernels_pointwise_layout.c. Floats decode to long double and round with
 * nearbyintl; integers decode to int64 and wrap with unsigned arithmetic. Nothing here uses the library's own
 * conversion code, so a bug there cannot hide in the reference. */
#ifndef AXON_POINTWISE_REF_H
#define AXON_POINTWISE_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "axon/tensor.h"

static inline int ref_is_float(axon_dtype_t d) {
    return d == AXON_FLOAT32 || d == AXON_FLOAT64 || d == AXON_FLOAT16 || d == AXON_BFLOAT16;
}

static inline int ref_is_half(axon_dtype_t d) { return d == AXON_FLOAT16 || d == AXON_BFLOAT16; }

/* Mantissa bits and exponent bias of a half format: float16 (10, 15), bfloat16 (7, 127). */
static inline void ref_half_format(axon_dtype_t d, int *mb, int *bias) {
    *mb = d == AXON_FLOAT16 ? 10 : 7;
    *bias = d == AXON_FLOAT16 ? 15 : 127;
}

static inline long double ref_half_decode(uint16_t h, int mb, int bias) {
    int e = (h & 0x7FFF) >> mb, m = h & ((1 << mb) - 1), emax = (1 << (15 - mb)) - 1;
    long double sign = (h & 0x8000) ? -1.0L : 1.0L;
    if (e == emax) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * ldexpl((long double)m, 1 - bias - mb);
    return sign * ldexpl((long double)(m + (1 << mb)), e - bias - mb);
}

/* Round x to nearest even in the half format; returns its bits. */
static inline uint16_t ref_half_encode(long double x, int mb, int bias) {
    uint16_t emax = (uint16_t)((1 << (15 - mb)) - 1), sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return (uint16_t)(sign | (emax << mb) | (1 << (mb - 1)));
    long double a = fabsl(x);
    if (a == 0) return sign;
    if (isinf(a)) return (uint16_t)(sign | (emax << mb)); /* frexpl leaves the exponent unspecified */
    int k = 0;
    frexpl(a, &k);
    int e = k - 1 < 1 - bias ? 1 - bias : k - 1;
    long double ulp = ldexpl(1.0L, e - mb), r = nearbyintl(a / ulp) * ulp;
    if (r >= ldexpl(1.0L, emax - bias)) return (uint16_t)(sign | (emax << mb));
    if (r < ldexpl(1.0L, 1 - bias)) return (uint16_t)(sign | (uint16_t)(r / ldexpl(1.0L, 1 - bias - mb)));
    frexpl(r, &k);
    return (uint16_t)(sign | ((k - 1 + bias) << mb) | (uint16_t)(r / ldexpl(1.0L, k - 1 - mb) - (1 << mb)));
}

/* A floating element as an exact long double. */
static inline long double ref_load_f(axon_dtype_t d, const void *p) {
    int mb, bias;
    switch (d) {
    case AXON_FLOAT32: return *(const float *)p;
    case AXON_FLOAT64: return *(const double *)p;
    default: ref_half_format(d, &mb, &bias); return ref_half_decode(*(const uint16_t *)p, mb, bias);
    }
}

/* Store v rounded to nearest even in floating dtype d. */
static inline void ref_store_f(axon_dtype_t d, void *p, long double v) {
    int mb, bias;
    switch (d) {
    case AXON_FLOAT32: *(float *)p = (float)v; break;
    case AXON_FLOAT64: *(double *)p = (double)v; break;
    default: ref_half_format(d, &mb, &bias); *(uint16_t *)p = ref_half_encode(v, mb, bias); break;
    }
}

/* v rounded to floating dtype d. */
static inline long double ref_round(axon_dtype_t d, long double v) {
    unsigned char b[8];
    ref_store_f(d, b, v);
    return ref_load_f(d, b);
}

/* An integer or bool element as int64 (bool: any nonzero byte is 1). */
static inline int64_t ref_load_i(axon_dtype_t d, const void *p) {
    switch (d) {
    case AXON_INT8: return *(const int8_t *)p;
    case AXON_UINT8: return *(const uint8_t *)p;
    case AXON_INT16: return *(const int16_t *)p;
    case AXON_INT32: return *(const int32_t *)p;
    case AXON_INT64: return *(const int64_t *)p;
    default: return *(const uint8_t *)p != 0;
    }
}

/* Store the low bits of v (two's complement) in integer dtype d; bool stores v != 0. */
static inline void ref_store_i(axon_dtype_t d, void *p, int64_t v) {
    uint64_t u = (uint64_t)v;
    switch (d) {
    case AXON_INT8: *(int8_t *)p = (int8_t)(uint8_t)u; break;
    case AXON_UINT8: *(uint8_t *)p = (uint8_t)u; break;
    case AXON_INT16: *(int16_t *)p = (int16_t)(uint16_t)u; break;
    case AXON_INT32: *(int32_t *)p = (int32_t)(uint32_t)u; break;
    case AXON_INT64: *(int64_t *)p = v; break;
    default: *(uint8_t *)p = v != 0; break;
    }
}

/* v wrapped to integer dtype d's range. */
static inline int64_t ref_wrap(axon_dtype_t d, int64_t v) {
    unsigned char b[8];
    ref_store_i(d, b, v);
    return ref_load_i(d, b);
}

static inline int ref_bits(axon_dtype_t d) { return (int)axon_dtype_size(d) * 8; }

/* The spacing of floating dtype d at v: one unit in the last place. */
static inline long double ref_ulp(axon_dtype_t d, long double v) {
    int mant = d == AXON_FLOAT32 ? 23 : d == AXON_FLOAT64 ? 52 : d == AXON_FLOAT16 ? 10 : 7;
    int emin = d == AXON_FLOAT32 ? -126 : d == AXON_FLOAT64 ? -1022 : d == AXON_FLOAT16 ? -14 : -126;
    int k;
    frexpl(fabsl(v), &k);
    int e = v == 0 || k - 1 < emin ? emin : k - 1;
    return ldexpl(1.0L, e - mant);
}

#endif
