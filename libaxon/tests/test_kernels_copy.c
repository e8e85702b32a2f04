/* axon_kernel_copy: every dtype pair against an independent scalar reference, hand-checked rounding cases,
 * strided / broadcast / reversed layouts, bad descriptors, and large copies that must not depend on the thread
 * count. The reference below decodes each element to an exact long double (or an int64) and rounds with nearbyintl,
 * so it shares no code with the library's bit tricks. */
#include <float.h>
#include <inttypes.h>
#include <math.h>

#include "../kernels/dtype.h"
#include "kernels_check.h"

#define NDT AXON_DTYPE_COUNT

/* ---- the reference ---- */

/* An element's exact value: integers as int64 (a uint64 as its bits, with is_u64), everything else as long double
 * (real, imaginary). */
typedef struct ref_val {
    int is_int, is_u64;
    int64_t i;
    long double re, im;
} ref_val_t;

static int is_unsigned_storage(axon_dtype_t d) { return d == AXON_UINT16 || d == AXON_UINT32 || d == AXON_UINT64; }

static int is_int_dtype(axon_dtype_t d) { return axon_dtype_is_integer(d) || is_unsigned_storage(d); }

/* An integer's exact value (a uint64 above INT64_MAX included): long double has 64 mantissa bits. */
static long double ref_int_value(ref_val_t v) { return v.is_u64 ? (long double)(uint64_t)v.i : (long double)v.i; }

static long double ref_half_decode(uint16_t h, int mb, int bias) {
    int e = (h & 0x7FFF) >> mb;
    int m = h & ((1 << mb) - 1);
    int emax = (1 << (15 - mb)) - 1;
    long double sign = (h & 0x8000) ? -1.0L : 1.0L;
    if (e == emax) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * ldexpl((long double)m, 1 - bias - mb);
    return sign * ldexpl((long double)(m + (1 << mb)), e - bias - mb);
}

/* Round x to nearest even in a format with mb mantissa bits and exponent bias; returns its bits. */
static uint16_t ref_half_encode(long double x, int mb, int bias) {
    uint16_t emax = (uint16_t)((1 << (15 - mb)) - 1);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return (uint16_t)(sign | (emax << mb) | (1 << (mb - 1)));
    long double a = fabsl(x);
    if (a == 0) return sign;
    int k;
    frexpl(a, &k); /* a = f * 2^k, f in [0.5, 1): exponent k - 1 */
    int e = k - 1 < 1 - bias ? 1 - bias : k - 1;
    long double ulp = ldexpl(1.0L, e - mb);
    long double r = nearbyintl(a / ulp) * ulp;
    if (r >= ldexpl(1.0L, emax - bias)) return (uint16_t)(sign | (emax << mb));
    if (r < ldexpl(1.0L, 1 - bias)) return (uint16_t)(sign | (uint16_t)(r / ldexpl(1.0L, 1 - bias - mb)));
    frexpl(r, &k);
    int re = k - 1;
    uint16_t mant = (uint16_t)(r / ldexpl(1.0L, re - mb) - (1 << mb));
    return (uint16_t)(sign | ((re + bias) << mb) | mant);
}

static size_t dsz(axon_dtype_t d) { return axon_dtype_size(d); }

static ref_val_t ref_load(axon_dtype_t d, const void *p) {
    ref_val_t v = {0, 0, 0, 0, 0};
    switch (d) {
    case AXON_FLOAT32: v.re = *(const float *)p; break;
    case AXON_FLOAT64: v.re = *(const double *)p; break;
    case AXON_FLOAT16: v.re = ref_half_decode(*(const uint16_t *)p, 10, 15); break;
    case AXON_BFLOAT16: v.re = ref_half_decode(*(const uint16_t *)p, 7, 127); break;
    case AXON_INT8: v.is_int = 1, v.i = *(const int8_t *)p; break;
    case AXON_UINT8: v.is_int = 1, v.i = *(const uint8_t *)p; break;
    case AXON_INT16: v.is_int = 1, v.i = *(const int16_t *)p; break;
    case AXON_INT32: v.is_int = 1, v.i = *(const int32_t *)p; break;
    case AXON_INT64: v.is_int = 1, v.i = *(const int64_t *)p; break;
    case AXON_BOOL: v.is_int = 1, v.i = *(const uint8_t *)p != 0; break;
    case AXON_COMPLEX64: v.re = ((const float *)p)[0], v.im = ((const float *)p)[1]; break;
    case AXON_COMPLEX128: v.re = ((const double *)p)[0], v.im = ((const double *)p)[1]; break;
    case AXON_UINT16: v.is_int = 1, v.i = *(const uint16_t *)p; break;
    case AXON_UINT32: v.is_int = 1, v.i = *(const uint32_t *)p; break;
    case AXON_UINT64: v.is_int = 1, v.is_u64 = 1, v.i = (int64_t)*(const uint64_t *)p; break;
    case AXON_COMPLEX32:
        v.re = ref_half_decode(((const uint16_t *)p)[0], 10, 15);
        v.im = ref_half_decode(((const uint16_t *)p)[1], 10, 15);
        break;
    default: break;
    }
    return v;
}

/* Floating -> integer as documented: truncate in range; else the minimum of int32 (or int64 with `wide`). */
static int64_t ref_trunc(long double x, int wide) {
    long double lim = wide ? 0x1p63L : 0x1p31L;
    if (isnan(x) || x < -lim || x >= lim) return wide ? INT64_MIN : INT32_MIN;
    return (int64_t)truncl(x);
}

/* Floating -> uint32 (bits 32) or uint64 (bits 64), as PyTorch's vectorized x86 casts give it: truncated in
 * [0, 2^bits); wrapped from (-2^(bits-1), 0); 0 at or past 2^bits; 2^(bits-1) for NaN and at or below -2^(bits-1). */
static uint64_t ref_trunc_unsigned(long double x, int bits) {
    long double half = ldexpl(1.0L, bits - 1), top = 2 * half;
    uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    if (isnan(x) || x <= -half) return (uint64_t)1 << (bits - 1);
    if (x >= top) return 0;
    long double t = truncl(x);
    return t >= 0 ? (uint64_t)t : (uint64_t)(int64_t)t & mask;
}

static void ref_store(axon_dtype_t d, void *p, ref_val_t v) {
    /* Everything reaches the halves through float32, as in PyTorch (c10::Half and c10::BFloat16 are built from a
     * float): float64 sources round twice. */
    long double x = v.is_int ? (long double)(float)ref_int_value(v) : (long double)(float)v.re;
    int64_t narrow = v.is_int ? v.i : ref_trunc(v.re, 0), wide = v.is_int ? v.i : ref_trunc(v.re, 1);
    switch (d) {
    case AXON_FLOAT32: *(float *)p = v.is_int ? (float)ref_int_value(v) : (float)v.re; break;
    case AXON_FLOAT64: *(double *)p = v.is_int ? (double)ref_int_value(v) : (double)v.re; break;
    case AXON_FLOAT16: *(uint16_t *)p = ref_half_encode(x, 10, 15); break;
    case AXON_BFLOAT16: *(uint16_t *)p = ref_half_encode(x, 7, 127); break;
    case AXON_INT8: *(int8_t *)p = (int8_t)narrow; break;
    case AXON_UINT8: *(uint8_t *)p = (uint8_t)wide; break;
    case AXON_INT16: *(int16_t *)p = (int16_t)narrow; break;
    case AXON_INT32: *(int32_t *)p = (int32_t)narrow; break;
    case AXON_INT64: *(int64_t *)p = wide; break;
    case AXON_BOOL: *(uint8_t *)p = v.is_int ? v.i != 0 : (v.re != 0 || v.im != 0); break;
    case AXON_COMPLEX64:
        ((float *)p)[0] = v.is_int ? (float)ref_int_value(v) : (float)v.re;
        ((float *)p)[1] = v.is_int ? 0.0f : (float)v.im;
        break;
    case AXON_COMPLEX128:
        ((double *)p)[0] = v.is_int ? (double)ref_int_value(v) : (double)v.re;
        ((double *)p)[1] = v.is_int ? 0.0 : (double)v.im;
        break;
    case AXON_UINT16: *(uint16_t *)p = (uint16_t)narrow; break;
    case AXON_UINT32: *(uint32_t *)p = v.is_int ? (uint32_t)v.i : (uint32_t)ref_trunc_unsigned(v.re, 32); break;
    case AXON_UINT64: *(uint64_t *)p = v.is_int ? (uint64_t)v.i : ref_trunc_unsigned(v.re, 64); break;
    case AXON_COMPLEX32: /* each part as a float16 (through float32); an integer's imaginary part is zero */
        ((uint16_t *)p)[0] = ref_half_encode(x, 10, 15);
        ((uint16_t *)p)[1] = ref_half_encode(v.is_int ? 0.0L : (long double)(float)v.im, 10, 15);
        break;
    default: break;
    }
}

/* Equal bytes, or both NaN in the same (real/imaginary) part for floating dtypes. */
static int same_element(axon_dtype_t d, const void *a, const void *b) {
    if (memcmp(a, b, dsz(d)) == 0) return 1;
    if (d == AXON_BOOL || is_int_dtype(d)) return 0;
    size_t parts = d == AXON_COMPLEX64 || d == AXON_COMPLEX128 || d == AXON_COMPLEX32 ? 2 : 1, ps = dsz(d) / parts;
    axon_dtype_t pd = d == AXON_COMPLEX64    ? AXON_FLOAT32
                      : d == AXON_COMPLEX128 ? AXON_FLOAT64
                      : d == AXON_COMPLEX32  ? AXON_FLOAT16
                                             : d;
    for (size_t k = 0; k < parts; k++) {
        ref_val_t x = ref_load(pd, (const char *)a + k * ps), y = ref_load(pd, (const char *)b + k * ps);
        if (!(isnan(x.re) && isnan(y.re)) && memcmp((const char *)a + k * ps, (const char *)b + k * ps, ps) != 0)
            return 0;
    }
    return 1;
}

/* ---- source values ---- */

static const double float_values[] = {
    0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 1.5, -0.7, 127.0, 128.0, 255.0, 256.0, -129.0, 300.0, -300.0,
    65504.0, 65519.0, 65520.0, 1e10, -1e10, 3e9, 2147483648.0, -2147483648.0, 9.3e18, 1e20, 1.00390625,
    1.01171875, 1.0 + 0x1p-8 + 0x1p-30, 1e-8, 0x1p-24, 0x1p-25, 3 * 0x1p-25, 1e-40, 3.4e38, 1e300, 0.1,
    1.0 / 3.0, 16777217.0, INFINITY, -INFINITY, NAN, -NAN, 0x1p32, 4294967295.0, 1.8e19, 0x1p63, 0x1p64, -0x1p63,
};
#define NFLOAT (sizeof float_values / sizeof float_values[0])

static const int64_t int_values[] = {
    0, 1, -1, 2, 127, 128, 255, 256, -128, -129, 300, 32767, 32768, -32769, 65535, 65536, 65520, 16777217,
    33554435, 2147483647, (int64_t)2147483648LL, -(int64_t)2147483648LL, (int64_t)1 << 53, ((int64_t)1 << 53) + 1,
    INT64_MAX, INT64_MIN, 1000000007,
};
#define NINT (sizeof int_values / sizeof int_values[0])
#define NVALS (NFLOAT > NINT ? NFLOAT : NINT)

/* Fill buf with NVALS elements of dtype d built from the value lists through the reference. */
static void make_source(axon_dtype_t d, void *buf) {
    for (size_t k = 0; k < NVALS; k++) {
        ref_val_t v = {0, 0, 0, 0, 0};
        if (d == AXON_BOOL) {
            ((uint8_t *)buf)[k] = (uint8_t)(k % 3); /* a stray byte 2 must still read as true */
            continue;
        }
        if (is_int_dtype(d)) v.is_int = 1, v.i = int_values[k % NINT];
        else v.re = float_values[k % NFLOAT], v.im = float_values[(k + 5) % NFLOAT];
        if (d == AXON_COMPLEX64 || d == AXON_COMPLEX128 || d == AXON_COMPLEX32) {
            ref_store(d, (char *)buf + k * dsz(d), v);
        } else {
            v.im = 0;
            /* Narrow the value to d first so that the source element is exactly representable. */
            ref_store(d, (char *)buf + k * dsz(d), v);
        }
    }
}

static void test_every_dtype_pair_converts_like_the_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    unsigned char src[NVALS * 16], got[NVALS * 16], want[NVALS * 16];
    int64_t n = (int64_t)NVALS;
    int bad_pairs = 0;
    for (int s = 0; s < NDT; s++) {
        make_source((axon_dtype_t)s, src);
        void *dsrc = kc_upload(&k, src, NVALS * dsz((axon_dtype_t)s));
        for (int d = 0; d < NDT; d++) {
            for (size_t e = 0; e < NVALS; e++) {
                ref_val_t v = ref_load((axon_dtype_t)s, src + e * dsz((axon_dtype_t)s));
                ref_store((axon_dtype_t)d, want + e * dsz((axon_dtype_t)d), v);
            }
            if (s == d) memcpy(want, src, NVALS * dsz((axon_dtype_t)s)); /* same dtype: bytes as they are */
            void *ddst = kc_upload(&k, NULL, NVALS * dsz((axon_dtype_t)d));
            axon_tensor_t td = kc_tensor(ddst, (axon_dtype_t)d, 1, &n, NULL);
            axon_tensor_t ts = kc_tensor(dsrc, (axon_dtype_t)s, 1, &n, NULL);
            CHECK_OK(axon_kernel_copy(k.s, &td, &ts));
            CHECK(kc_download(&k, got, ddst, NVALS * dsz((axon_dtype_t)d)));
            for (size_t e = 0; e < NVALS; e++) {
                const void *g = got + e * dsz((axon_dtype_t)d), *w = want + e * dsz((axon_dtype_t)d);
                if (!same_element((axon_dtype_t)d, g, w)) {
                    if (bad_pairs++ < 20)
                        fprintf(stderr, "  %s -> %s: element %zu differs from the reference\n",
                                axon_dtype_name((axon_dtype_t)s), axon_dtype_name((axon_dtype_t)d), e);
                    check_failures_in_test++;
                    break;
                }
            }
            /* The same pair through the strided and broadcast loops: reversed source, then one broadcast element. */
            int64_t neg = -1, zero = 0;
            axon_tensor_t rev = kc_tensor((char *)dsrc + (NVALS - 1) * dsz((axon_dtype_t)s), (axon_dtype_t)s, 1, &n,
                                          &neg);
            CHECK_OK(axon_kernel_copy(k.s, &td, &rev));
            CHECK(kc_download(&k, got, ddst, NVALS * dsz((axon_dtype_t)d)));
            for (size_t e = 0; e < NVALS; e++)
                if (!same_element((axon_dtype_t)d, got + e * dsz((axon_dtype_t)d),
                                  want + (NVALS - 1 - e) * dsz((axon_dtype_t)d))) {
                    fprintf(stderr, "  %s -> %s reversed: element %zu differs\n", axon_dtype_name((axon_dtype_t)s),
                            axon_dtype_name((axon_dtype_t)d), e);
                    check_failures_in_test++;
                    break;
                }
            axon_tensor_t bc = kc_tensor((char *)dsrc + 3 * dsz((axon_dtype_t)s), (axon_dtype_t)s, 1, &n, &zero);
            CHECK_OK(axon_kernel_copy(k.s, &td, &bc));
            CHECK(kc_download(&k, got, ddst, NVALS * dsz((axon_dtype_t)d)));
            for (size_t e = 0; e < NVALS; e++)
                if (!same_element((axon_dtype_t)d, got + e * dsz((axon_dtype_t)d), want + 3 * dsz((axon_dtype_t)d))) {
                    fprintf(stderr, "  %s -> %s broadcast: element %zu differs\n", axon_dtype_name((axon_dtype_t)s),
                            axon_dtype_name((axon_dtype_t)d), e);
                    check_failures_in_test++;
                    break;
                }
            axon_mem_free(k.dev, ddst);
        }
        axon_mem_free(k.dev, dsrc);
    }
    axon_runtime_destroy(k.rt);
}

/* Copy n host elements of dtype s to dtype d through the device; result in out. */
static void convert_on_device(const kc_dev_t *k, axon_dtype_t s, const void *in, axon_dtype_t d, void *out,
                              int64_t n) {
    void *a = kc_upload(k, in, (size_t)n * dsz(s)), *b = kc_upload(k, NULL, (size_t)n * dsz(d));
    axon_tensor_t ts = kc_tensor(a, s, 1, &n, NULL), td = kc_tensor(b, d, 1, &n, NULL);
    CHECK_OK(axon_kernel_copy(k->s, &td, &ts));
    CHECK(kc_download(k, out, b, (size_t)n * dsz(d)));
    axon_mem_free(k->dev, a);
    axon_mem_free(k->dev, b);
}

static void test_hand_checked_conversions(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    {
        float in[] = {2.5f, -2.5f, 0.99f, -0.99f, 1e10f, NAN};
        int32_t out[6];
        convert_on_device(&k, AXON_FLOAT32, in, AXON_INT32, out, 6);
        CHECK(out[0] == 2 && out[1] == -2 && out[2] == 0 && out[3] == 0);
        CHECK(out[4] == INT32_MIN && out[5] == INT32_MIN); /* x86's answer, pinned down */
    }
    {
        float in[] = {300.0f, -1.0f, 255.9f};
        int8_t i8[3];
        uint8_t u8[3];
        convert_on_device(&k, AXON_FLOAT32, in, AXON_INT8, i8, 3);
        convert_on_device(&k, AXON_FLOAT32, in, AXON_UINT8, u8, 3);
        CHECK(i8[0] == 44 && i8[1] == -1 && i8[2] == -1);
        CHECK(u8[0] == 44 && u8[1] == 255 && u8[2] == 255);
    }
    {
        float in[] = {NAN, 1.00390625f, 1.01171875f, 3.4e38f, -0.0f, 1e-40f};
        uint16_t out[6];
        convert_on_device(&k, AXON_FLOAT32, in, AXON_BFLOAT16, out, 6);
        CHECK((out[0] & 0x7F80) == 0x7F80 && (out[0] & 0x7F) != 0); /* NaN stays NaN */
        CHECK_EQ_I64(out[1], 0x3F80);                                /* tie: down to even 1.0 */
        CHECK_EQ_I64(out[2], 0x3F82);                                /* tie: up to even */
        CHECK_EQ_I64(out[3], 0x7F80);                                /* rounds past the largest bf16 */
        CHECK_EQ_I64(out[4], 0x8000);
        CHECK_EQ_I64(out[5], 0x0001); /* 1e-40 is 0x000116C2: the subnormal rounds to 1 */
    }
    {
        float in[] = {65520.0f, 65519.0f, 0x1p-24f, 0x1p-25f, 3 * 0x1p-25f, NAN, -INFINITY, 1.0f / 3.0f};
        uint16_t out[8];
        convert_on_device(&k, AXON_FLOAT32, in, AXON_FLOAT16, out, 8);
        CHECK_EQ_I64(out[0], 0x7C00); /* 65520 rounds to inf */
        CHECK_EQ_I64(out[1], 0x7BFF); /* 65504 */
        CHECK_EQ_I64(out[2], 0x0001); /* smallest subnormal */
        CHECK_EQ_I64(out[3], 0x0000); /* tie to even zero */
        CHECK_EQ_I64(out[4], 0x0002); /* 1.5 ulp rounds to even 2 */
        CHECK((out[5] & 0x7C00) == 0x7C00 && (out[5] & 0x3FF) != 0);
        CHECK_EQ_I64(out[6], 0xFC00);
        CHECK_EQ_I64(out[7], 0x3555);
    }
    {
        /* float64 -> bfloat16/float16 round through float32, as PyTorch does: 1 + 2^-8 + 2^-30 becomes the tie
         * 1 + 2^-8 and rounds to even 1.0; 65519.999 becomes 65520 and overflows float16. */
        double in[] = {1.0 + 0x1p-8 + 0x1p-30, 65519.999, 1e-300};
        uint16_t bf[3], h[3];
        convert_on_device(&k, AXON_FLOAT64, in, AXON_BFLOAT16, bf, 3);
        convert_on_device(&k, AXON_FLOAT64, in, AXON_FLOAT16, h, 3);
        CHECK_EQ_I64(bf[0], 0x3F80);
        CHECK_EQ_I64(h[1], 0x7C00);
        CHECK_EQ_I64(bf[2], 0x0000);
        CHECK_EQ_I64(h[2], 0x0000);
    }
    {
        uint16_t in[] = {0x7E01, 0x0001, 0x7BFF, 0xFC00};
        float out[4];
        convert_on_device(&k, AXON_FLOAT16, in, AXON_FLOAT32, out, 4);
        CHECK(isnan(out[0]) && out[1] == 0x1p-24f && out[2] == 65504.0f && out[3] == -INFINITY);
    }
    {
        float in[] = {0.5f, -0.0f, NAN, 0.0f};
        uint8_t out[4];
        convert_on_device(&k, AXON_FLOAT32, in, AXON_BOOL, out, 4);
        CHECK(out[0] == 1 && out[1] == 0 && out[2] == 1 && out[3] == 0);
        int32_t ints[] = {256, 0, -1};
        convert_on_device(&k, AXON_INT32, ints, AXON_BOOL, out, 3);
        CHECK(out[0] == 1 && out[1] == 0 && out[2] == 1); /* != 0, not the low byte */
        uint8_t bools[] = {2, 0, 1};
        int32_t back[3];
        convert_on_device(&k, AXON_BOOL, bools, AXON_INT32, back, 3);
        CHECK(back[0] == 1 && back[1] == 0 && back[2] == 1);
    }
    {
        float in[] = {0.0f, 1.0f, 3.7f, -1.0f, 0.0f, 0.0f}; /* complex64: 0+1i, 3.7-1i, 0+0i */
        uint8_t b[3];
        int32_t i[3];
        convert_on_device(&k, AXON_COMPLEX64, in, AXON_BOOL, b, 3);
        convert_on_device(&k, AXON_COMPLEX64, in, AXON_INT32, i, 3);
        CHECK(b[0] == 1 && b[1] == 1 && b[2] == 0);
        CHECK(i[0] == 0 && i[1] == 3 && i[2] == 0);
        double real[] = {2.0, -0.5};
        double c[4];
        convert_on_device(&k, AXON_FLOAT64, real, AXON_COMPLEX128, c, 2);
        CHECK(c[0] == 2.0 && c[1] == 0.0 && c[2] == -0.5 && c[3] == 0.0);
    }
    {
        int64_t in[] = {16777217, INT64_MAX};
        float out[2];
        convert_on_device(&k, AXON_INT64, in, AXON_FLOAT32, out, 2);
        CHECK(out[0] == 16777216.0f && out[1] == 0x1p63f);
    }
    axon_runtime_destroy(k.rt);
}

/* ---- layouts ---- */

/* Host reference for a strided float32 view: element (i, j, l) of a 3-d view at base with strides st. */
static float view3(const float *base, const int64_t *st, int64_t i, int64_t j, int64_t l) {
    return base[i * st[0] + j * st[1] + l * st[2]];
}

/* Copy a float32 view of host buffer `host` (device copy at dev) into a fresh contiguous tensor of dtype d and check
 * every element against the host reference converted by the library's own contiguous path's rules (float32 -> d
 * through the reference). */
static void check_view_copy(const kc_dev_t *k, const float *host, float *dev, int64_t off, const int64_t *sizes,
                            const int64_t *st, axon_dtype_t d, const char *label) {
    int64_t n = sizes[0] * sizes[1] * sizes[2];
    size_t es = dsz(d);
    void *out = kc_upload(k, NULL, (size_t)n * es);
    axon_tensor_t ts = kc_tensor(dev + off, AXON_FLOAT32, 3, sizes, st), td = kc_tensor(out, d, 3, sizes, NULL);
    CHECK_OK(axon_kernel_copy(k->s, &td, &ts));
    unsigned char *got = malloc((size_t)n * es), want[16];
    CHECK(kc_download(k, got, out, (size_t)n * es));
    int64_t e = 0, bad = -1;
    for (int64_t i = 0; i < sizes[0]; i++)
        for (int64_t j = 0; j < sizes[1]; j++)
            for (int64_t l = 0; l < sizes[2]; l++, e++) {
                ref_val_t v = {.re = view3(host + off, st, i, j, l)};
                ref_store(d, want, v);
                if (bad < 0 && !same_element(d, got + e * (int64_t)es, want)) bad = e;
            }
    if (bad >= 0) {
        fprintf(stderr, "  %s: element %" PRId64 " differs\n", label, bad);
        check_failures_in_test++;
    }
    free(got);
    axon_mem_free(k->dev, out);
}

static void test_transposed_sliced_broadcast_and_reversed_sources(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { N = 60 * 70 * 80 };
    float *host = malloc(N * sizeof *host);
    for (int i = 0; i < N; i++) host[i] = (float)i * 0.37f - 1000.0f;
    float *dev = kc_upload(&k, host, N * sizeof *host);
    struct {
        const char *label;
        int64_t off, sizes[3], st[3];
    } cases[] = {
        {"contiguous", 0, {60, 70, 80}, {5600, 80, 1}},
        {"transposed last two", 0, {60, 80, 70}, {5600, 1, 80}},
        {"fully permuted", 0, {80, 70, 60}, {1, 80, 5600}},
        {"sliced every third column", 7, {60, 70, 25}, {5600, 80, 3}},
        {"broadcast row", 0, {60, 70, 80}, {0, 80, 1}},
        {"broadcast column", 0, {60, 70, 80}, {5600, 0, 0}},
        {"one broadcast element", 123, {60, 70, 80}, {0, 0, 0}},
        {"reversed rows and columns", N - 1, {60, 70, 80}, {-5600, -80, -1}},
        {"reversed, transposed", 79, {60, 80, 70}, {5600, -1, 80}},
    };
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_BFLOAT16, AXON_FLOAT64, AXON_INT32, AXON_COMPLEX64};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
            check_view_copy(&k, host, dev, cases[c].off, cases[c].sizes, cases[c].st, dts[t], cases[c].label);
    axon_mem_free(k.dev, dev);
    free(host);
    axon_runtime_destroy(k.rt);
}

static void test_negative_dst_strides_write_the_mirrored_layout(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 300, C = 500 };
    int64_t sizes[2] = {R, C}, rev[2] = {-C, -1}, tr[2] = {1, R};
    int16_t *host = malloc(R * C * sizeof *host), *got = malloc(R * C * sizeof *got);
    for (int i = 0; i < R * C; i++) host[i] = (int16_t)(i * 7);
    int16_t *src = kc_upload(&k, host, R * C * sizeof *host);
    int32_t *dst = kc_upload(&k, NULL, R * C * sizeof(int32_t));
    int32_t *back = malloc(R * C * sizeof *back);
    axon_tensor_t ts = kc_tensor(src, AXON_INT16, 2, sizes, NULL);
    axon_tensor_t td = kc_tensor(dst + R * C - 1, AXON_INT32, 2, sizes, rev);
    CHECK_OK(axon_kernel_copy(k.s, &td, &ts));
    CHECK(kc_download(&k, back, dst, R * C * sizeof *back));
    int ok = 1;
    for (int i = 0; i < R * C; i++) ok &= back[R * C - 1 - i] == host[i];
    CHECK(ok);
    /* Transposed dst (column-major), same dtype: the strided no-conversion loop. */
    int16_t *dst16 = kc_upload(&k, NULL, R * C * sizeof(int16_t));
    axon_tensor_t tt = kc_tensor(dst16, AXON_INT16, 2, sizes, tr);
    CHECK_OK(axon_kernel_copy(k.s, &tt, &ts));
    CHECK(kc_download(&k, got, dst16, R * C * sizeof *got));
    ok = 1;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) ok &= got[j * R + i] == host[i * C + j];
    CHECK(ok);
    axon_mem_free(k.dev, src);
    axon_mem_free(k.dev, dst);
    axon_mem_free(k.dev, dst16);
    free(host);
    free(got);
    free(back);
    axon_runtime_destroy(k.rt);
}

/* ---- bad input ---- */

static void test_overlapping_dst_is_rejected(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 64 * sizeof(float));
    int64_t sizes[2] = {3, 4}, st[2] = {0, 1};
    axon_tensor_t td = kc_tensor(buf, AXON_FLOAT32, 2, sizes, st), ts = kc_tensor(buf + 16, AXON_FLOAT32, 2, sizes, NULL);
    CHECK_STATUS(axon_kernel_copy(k.s, &td, &ts), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dst has overlapping elements");
    /* A stride of 0 on a dimension of size 1 overlaps nothing. */
    int64_t one[2] = {1, 4};
    td = kc_tensor(buf, AXON_FLOAT32, 2, one, st);
    ts = kc_tensor(buf + 16, AXON_FLOAT32, 2, one, NULL);
    CHECK_OK(axon_kernel_copy(k.s, &td, &ts));
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_shape_mismatch_names_both_shapes(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 64 * sizeof(float));
    int64_t a[2] = {2, 3}, b[2] = {3, 2}, c[3] = {1, 2, 3};
    axon_tensor_t td = kc_tensor(buf, AXON_FLOAT32, 2, a, NULL), ts = kc_tensor(buf + 16, AXON_FLOAT32, 2, b, NULL);
    CHECK_STATUS(axon_kernel_copy(k.s, &td, &ts), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("[2, 3]");
    CHECK_MSG("[3, 2]");
    ts = kc_tensor(buf + 16, AXON_FLOAT32, 3, c, NULL); /* same elements, different ndim: still a mismatch */
    CHECK_STATUS(axon_kernel_copy(k.s, &td, &ts), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("[1, 2, 3]");
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_bad_descriptors_are_invalid_arg(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 64 * sizeof(float));
    int64_t n = 4, neg = -1;
    axon_tensor_t good = kc_tensor(buf, AXON_FLOAT32, 1, &n, NULL), t;
    CHECK_STATUS(axon_kernel_copy(k.s, NULL, &good), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("copy: dst is NULL");
    CHECK_STATUS(axon_kernel_copy(k.s, &good, NULL), AXON_ERROR_INVALID_ARG);
    t = good, t.ndim = AXON_MAX_DIMS + 1;
    CHECK_STATUS(axon_kernel_copy(k.s, &t, &good), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("9 dimensions");
    t = good, t.dtype = AXON_DTYPE_COUNT;
    CHECK_STATUS(axon_kernel_copy(k.s, &good, &t), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("unknown dtype");
    t = kc_tensor(buf, AXON_FLOAT32, 1, &neg, NULL);
    CHECK_STATUS(axon_kernel_copy(k.s, &t, &t), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("negative size");
    t = good, t.data = NULL;
    CHECK_STATUS(axon_kernel_copy(k.s, &good, &t), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("data is NULL");
    t = good, t.data = (char *)buf + 2;
    CHECK_STATUS(axon_kernel_copy(k.s, &good, &t), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not aligned");
    int64_t huge[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 1 << 20};
    t = kc_tensor(buf, AXON_FLOAT32, 3, huge, NULL);
    CHECK_STATUS(axon_tensor_check(&t, "t"), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("more than 2^63");
    CHECK_OK(axon_stream_sync(k.s)); /* nothing bad was enqueued */
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_empty_tensors_enqueue_nothing(void) {
    axon_hw_null_t rec;
    CHECK_OK(axon_hw_null_create(&rec));
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, axon_hw_null(), rec);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    int64_t sizes[2] = {0, 5};
    axon_tensor_t t = kc_tensor(NULL, AXON_FLOAT32, 2, sizes, NULL), u = kc_tensor(NULL, AXON_INT8, 2, sizes, NULL);
    CHECK_OK(axon_kernel_copy(s, &t, &u));
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(axon_hw_null_count(rec), 0);
    /* A real copy on the null port is recorded under the kernel's name. */
    float x = 1, y = 0;
    int64_t one = 1;
    t = kc_tensor(&y, AXON_FLOAT32, 1, &one, NULL), u = kc_tensor(&x, AXON_FLOAT32, 1, &one, NULL);
    CHECK_OK(axon_kernel_copy(s, &t, &u));
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(axon_hw_null_count(rec), 1);
    CHECK(axon_hw_null_name(rec, 0) && strcmp(axon_hw_null_name(rec, 0), "tensor_copy") == 0);
    axon_runtime_destroy(rt);
    axon_hw_null_destroy(rec);
}

static void test_scalar_and_same_view_copies(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    double *buf = kc_upload(&k, NULL, 4 * sizeof(double));
    double in = 2.75, out[2] = {0, 0};
    CHECK_OK(axon_memcpy(buf, &in, sizeof in, AXON_COPY_HOST_TO_DEVICE, k.s));
    axon_tensor_t s0 = kc_tensor(buf, AXON_FLOAT64, 0, NULL, NULL), d0 = kc_tensor(buf + 1, AXON_INT64, 0, NULL, NULL);
    CHECK_OK(axon_kernel_copy(k.s, &d0, &s0));
    CHECK_OK(axon_kernel_copy(k.s, &s0, &s0)); /* the very same view: nothing to do */
    CHECK(kc_download(&k, out, buf, sizeof out));
    int64_t as_int;
    memcpy(&as_int, &out[1], sizeof as_int);
    CHECK(out[0] == 2.75 && as_int == 2);
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_tensor_helpers_describe_dtypes_and_layouts(void) {
    CHECK(strcmp(axon_dtype_name(AXON_BFLOAT16), "bfloat16") == 0);
    CHECK(strcmp(axon_dtype_name(AXON_COMPLEX128), "complex128") == 0);
    CHECK(strcmp(axon_dtype_name(AXON_DTYPE_COUNT), "invalid") == 0);
    CHECK_EQ_I64(axon_dtype_size(AXON_COMPLEX64), 8);
    CHECK_EQ_I64(axon_dtype_size(AXON_BOOL), 1);
    CHECK_EQ_I64(axon_dtype_size(AXON_DTYPE_COUNT), 0);
    CHECK(axon_dtype_is_floating(AXON_FLOAT16) && !axon_dtype_is_floating(AXON_COMPLEX64));
    CHECK(axon_dtype_is_integer(AXON_UINT8) && !axon_dtype_is_integer(AXON_BOOL));
    float x;
    int64_t sizes[3] = {2, 1, 3}, odd[3] = {3, 99, 1}, tr[3] = {1, 1, 2}, empty[2] = {4, 0};
    axon_tensor_t t = kc_tensor(&x, AXON_FLOAT32, 3, sizes, NULL);
    CHECK_EQ_I64(axon_tensor_numel(&t), 6);
    CHECK(axon_tensor_is_contiguous(&t));
    t = kc_tensor(&x, AXON_FLOAT32, 3, sizes, odd); /* a size-1 dimension may have any stride */
    CHECK(axon_tensor_is_contiguous(&t));
    t = kc_tensor(&x, AXON_FLOAT32, 3, sizes, tr);
    CHECK(!axon_tensor_is_contiguous(&t));
    t = kc_tensor(NULL, AXON_FLOAT32, 2, empty, tr);
    CHECK(axon_tensor_is_contiguous(&t) && axon_tensor_numel(&t) == 0);
    CHECK_OK(axon_tensor_check(&t, "empty"));
    t = kc_tensor(&x, AXON_FLOAT32, 0, NULL, NULL);
    CHECK(axon_tensor_numel(&t) == 1 && axon_tensor_is_contiguous(&t));
    CHECK_STATUS(axon_tensor_check(NULL, "t"), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("t is NULL");
}

/* ---- large copies ---- */

/* Run a copy of the same host input on a runtime with `threads` workers; returns the output bytes (malloc'd). */
static unsigned char *large_copy(int threads, const float *host, int64_t rows, int64_t cols, int transposed,
                                 axon_dtype_t d) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return NULL;
    size_t n = (size_t)(rows * cols);
    float *src = kc_upload(&k, host, n * sizeof *host);
    void *dst = kc_upload(&k, NULL, n * dsz(d));
    int64_t sizes[2] = {rows, cols}, tsizes[2] = {cols, rows}, tst[2] = {1, cols};
    axon_tensor_t ts = transposed ? kc_tensor(src, AXON_FLOAT32, 2, tsizes, tst) : kc_tensor(src, AXON_FLOAT32, 2, sizes, NULL);
    axon_tensor_t td = kc_tensor(dst, d, 2, transposed ? tsizes : sizes, NULL);
    unsigned char *out = malloc(n * dsz(d));
    if (axon_kernel_copy(k.s, &td, &ts) != AXON_OK || !kc_download(&k, out, dst, n * dsz(d))) {
        free(out);
        out = NULL;
    }
    axon_runtime_destroy(k.rt);
    return out;
}

static void test_large_copies_do_not_depend_on_the_thread_count(void) {
    const int64_t rows = 1031, cols = 1237; /* 1.27M elements; odd sizes leave partial tiles and chunks */
    size_t n = (size_t)(rows * cols);
    float *host = malloc(n * sizeof *host);
    for (size_t i = 0; i < n; i++) host[i] = (float)((double)i * 1.000123 - 600000.0) * 0.01f;
    const axon_dtype_t dts[] = {AXON_BFLOAT16, AXON_FLOAT16, AXON_FLOAT32, AXON_INT64};
    for (int transposed = 0; transposed < 2; transposed++)
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
            unsigned char *one = large_copy(1, host, rows, cols, transposed, dts[t]);
            unsigned char *two = large_copy(2, host, rows, cols, transposed, dts[t]);
            REQUIRE(one && two);
            CHECK(memcmp(one, two, n * dsz(dts[t])) == 0);
            /* And both are right: spot-check every 997th element against the reference. */
            int ok = 1;
            for (size_t e = 0; e < n; e += 997) {
                size_t r = e / (size_t)(transposed ? rows : cols), c = e % (size_t)(transposed ? rows : cols);
                float v = transposed ? host[c * (size_t)cols + r] : host[e];
                unsigned char want[16];
                ref_val_t rv = {.re = v};
                ref_store(dts[t], want, rv);
                ok &= same_element(dts[t], one + e * dsz(dts[t]), want);
            }
            CHECK(ok);
            free(one);
            free(two);
        }
    free(host);
}

/* float32 -> float16 over a sweep of float32 bit patterns (every 4093rd, both signs: normals, subnormal results,
 * overflow to infinity, ties, NaNs), contiguous (the conversion instruction where the CPU has it) and transposed (the
 * plain loop): the reference's bits, and each NaN a quiet NaN keeping its sign and top payload bits. */
static void test_float32_to_float16_over_a_sweep_of_bit_patterns(void) {
    const int64_t rows = 1021, cols = 1027;
    const size_t n = (size_t)(rows * cols);
    float *host = malloc(n * sizeof *host);
    REQUIRE(host);
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)(i * 4093u);
        memcpy(&host[i], &u, 4);
    }
    for (int transposed = 0; transposed < 2; transposed++) {
        uint16_t *got = (uint16_t *)(void *)large_copy(2, host, rows, cols, transposed, AXON_FLOAT16);
        REQUIRE(got);
        int64_t bad = 0;
        for (size_t e = 0; e < n; e++) {
            size_t r = e / (size_t)(transposed ? rows : cols), c = e % (size_t)(transposed ? rows : cols);
            const float v = transposed ? host[c * (size_t)cols + r] : host[e];
            uint32_t u;
            memcpy(&u, &v, 4);
            uint16_t want;
            if (isnan(v)) {
                want = (uint16_t)(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu));
            } else {
                ref_val_t rv = {.re = v};
                ref_store(AXON_FLOAT16, &want, rv);
            }
            bad += got[e] != want;
        }
        CHECK_EQ_I64(bad, 0);
        free(got);
    }
    free(host);
}

/* float64 -> float16 (through float32, as PyTorch) over doubles near a sweep of float32 bit patterns, some a hair
 * off them so that the first rounding matters: contiguous (the conversion instructions where the CPU has them) and
 * every other element (the plain loop), both against axon_f64_to_f16 with NaNs compared as NaN. */
static void test_float64_to_float16_rounds_through_float32(void) {
    enum { N = 200003 };
    double *host = malloc(N * sizeof *host);
    uint16_t *got = malloc(N * sizeof *got);
    REQUIRE(host && got);
    for (size_t i = 0; i < N; i++) {
        const uint32_t u = (uint32_t)(i * 21467u);
        float f;
        memcpy(&f, &u, 4);
        host[i] = (double)f * (i % 3 == 0 ? 1.0 : i % 3 == 1 ? 1 + 0x1p-40 : 1 - 0x1p-40);
    }
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    double *src = kc_upload(&k, host, N * sizeof *host);
    uint16_t *dst = kc_upload(&k, NULL, N * sizeof *got);
    REQUIRE(src && dst);
    for (int step = 1; step <= 2; step++) {
        const int64_t n = N / step, stride = step;
        axon_tensor_t ts = kc_tensor(src, AXON_FLOAT64, 1, &n, &stride), td = kc_tensor(dst, AXON_FLOAT16, 1, &n, NULL);
        REQUIRE(axon_kernel_copy(k.s, &td, &ts) == AXON_OK && kc_download(&k, got, dst, (size_t)n * sizeof *got));
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            const uint16_t want = axon_f64_to_f16(host[i * step]);
            bad += got[i] != want && !(isnan(host[i * step]) && (got[i] & 0x7C00) == 0x7C00 && (got[i] & 0x3FF));
        }
        CHECK_EQ_I64(bad, 0);
    }
    axon_runtime_destroy(k.rt);
    free(host);
    free(got);
}

/* float16 -> float32 and float64 over every half bit pattern, contiguous (the conversion instruction where the CPU
 * has it, in blocks of 8 or 16 with a rest) and at stride 2 (the plain loop): the reference's value exactly, and each
 * NaN a NaN of the same sign whose payload is the half's moved up to the top of the wider mantissa, the quiet bit set
 * or kept. */
static void test_float16_to_float32_and_float64_over_every_bit_pattern(void) {
    enum { N = 65536 + 5 };
    uint16_t *host = malloc(N * sizeof *host);
    double *got = malloc(N * sizeof *got); /* room for either width */
    REQUIRE(host && got);
    for (size_t i = 0; i < N; i++) host[i] = (uint16_t)(i * 40503u); /* odd: a permutation of the 65536 patterns */
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    uint16_t *src = kc_upload(&k, host, N * sizeof *host);
    double *dst = kc_upload(&k, NULL, N * sizeof *got);
    REQUIRE(src && dst);
    for (int wide = 0; wide <= 1; wide++) {
        const size_t es = wide ? 8 : 4;
        for (int step = 1; step <= 2; step++) {
            const int64_t n = N / step, stride = step;
            axon_tensor_t ts = kc_tensor(src, AXON_FLOAT16, 1, &n, &stride);
            axon_tensor_t td = kc_tensor(dst, wide ? AXON_FLOAT64 : AXON_FLOAT32, 1, &n, NULL);
            REQUIRE(axon_kernel_copy(k.s, &td, &ts) == AXON_OK && kc_download(&k, got, dst, (size_t)n * es));
            int64_t bad = 0;
            for (int64_t i = 0; i < n; i++) {
                const uint16_t h = host[i * step];
                double v;
                uint64_t top; /* sign and the 9 payload bits below the quiet bit, where the half's were */
                if (wide) {
                    uint64_t u;
                    memcpy(&v, &got[i], 8);
                    memcpy(&u, &got[i], 8);
                    top = (u >> 63) << 9 | ((u >> 42) & 0x1FFu);
                } else {
                    float f;
                    uint32_t u;
                    memcpy(&f, (const char *)got + i * 4, 4);
                    memcpy(&u, &f, 4);
                    v = f;
                    top = (uint64_t)(u >> 31) << 9 | ((u >> 13) & 0x1FFu);
                }
                if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF))
                    bad += top != ((uint64_t)(h >> 15) << 9 | (h & 0x1FFu)) || !isnan(v);
                else
                    bad += v != (double)ref_half_decode(h, 10, 15);
            }
            CHECK_EQ_I64(bad, 0);
        }
    }
    axon_runtime_destroy(k.rt);
    free(host);
    free(got);
}

/* Same-dtype transposes of 1-, 2-, 4- and 8-byte elements (square blocks through a buffer, 32 or 16 elements on an
 * edge; the edges row by row): a [3, 211, 77] source read as its [0, 2, 1] and [2, 1, 0] permutations, every element
 * checked. */
static void test_same_dtype_transposes_move_every_element(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { A = 3, B = 211, C = 77, N = A * B * C };
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_INT64, AXON_BFLOAT16, AXON_INT8};
    uint64_t *host = malloc(8 * N), *out = malloc(8 * N);
    REQUIRE(host && out);
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        const size_t es = dsz(dts[t]);
        for (int i = 0; i < N; i++) {
            const uint64_t v = ((uint64_t)i + 1) * 0x9E3779B97F4A7C15u >> (64 - 8 * es); /* the bits that vary */
            memcpy((char *)host + (size_t)i * es, &v, es);
        }
        void *src = kc_upload(&k, host, N * es), *dst = kc_upload(&k, NULL, N * es);
        for (int perm = 0; perm < 2; perm++) {
            /* the source's strides (C * B, C, 1) permuted: [A, C, B] or [C, B, A] */
            const int64_t sz0[3] = {A, C, B}, st0[3] = {B * C, 1, C}, sz1[3] = {C, B, A}, st1[3] = {1, C, B * C};
            axon_tensor_t ts = kc_tensor(src, dts[t], 3, perm ? sz1 : sz0, perm ? st1 : st0);
            axon_tensor_t td = kc_tensor(dst, dts[t], 3, perm ? sz1 : sz0, NULL);
            CHECK_OK(axon_kernel_copy(k.s, &td, &ts));
            CHECK(kc_download(&k, out, dst, N * es));
            int64_t bad = 0;
            const int64_t *sz = perm ? sz1 : sz0, *st = perm ? st1 : st0;
            for (int64_t i = 0; i < sz[0]; i++)
                for (int64_t j = 0; j < sz[1]; j++)
                    for (int64_t l = 0; l < sz[2]; l++) {
                        const int64_t o = (i * sz[1] + j) * sz[2] + l, from = i * st[0] + j * st[1] + l * st[2];
                        bad += memcmp((char *)out + o * (int64_t)es, (char *)host + from * (int64_t)es, es) != 0;
                    }
            CHECK_EQ_I64(bad, 0);
        }
        axon_mem_free(k.dev, src), axon_mem_free(k.dev, dst);
    }
    free(host), free(out);
    axon_runtime_destroy(k.rt);
}

/* Short rows of one dtype (the row path: a pad's interior) land exactly in a strided dst view and nothing around
 * them is touched, for 1- to 16-byte elements, rows from 1 element to past the path's 2048-byte limit, and a source
 * whose middle dimension runs backwards. Catches a row stepped with the wrong outer stride or an odometer that
 * carries late. */
static void test_short_rows_fill_a_padded_interior(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const axon_dtype_t dts[] = {AXON_UINT8, AXON_INT16, AXON_FLOAT32, AXON_FLOAT64, AXON_COMPLEX128};
    const int64_t widths[] = {1, 3, 16, 33, 128, 513};
    enum { A = 3, B = 37 };
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
            for (int reversed = 0; reversed < 2; reversed++) {
                const int64_t C = widths[w], es = (int64_t)dsz(dts[t]), n = A * B * C;
                const int64_t P = B + 2, Q = C + 3, big = A * P * Q;
                unsigned char *host = malloc((size_t)(n * es)), *out = malloc((size_t)(big * es));
                REQUIRE(host && out);
                for (int64_t i = 0; i < n * es; i++) host[i] = (unsigned char)(i * 131 + 7);
                memset(out, 0xA5, (size_t)(big * es));
                void *src = kc_upload(&k, host, (size_t)(n * es)), *dst = kc_upload(&k, out, (size_t)(big * es));
                const int64_t sz[3] = {A, B, C}, dst_st[3] = {P * Q, Q, 1};
                const int64_t src_st[3] = {B * C, reversed ? -C : C, 1}, src_off = reversed ? (B - 1) * C : 0;
                axon_tensor_t ts = kc_tensor((char *)src + src_off * es, dts[t], 3, sz, src_st);
                axon_tensor_t td = kc_tensor((char *)dst + (Q + 2) * es, dts[t], 3, sz, dst_st);
                CHECK_OK(axon_kernel_copy(k.s, &td, &ts));
                CHECK(kc_download(&k, out, dst, (size_t)(big * es)));
                int64_t bad = 0;
                for (int64_t a = 0; a < A; a++)
                    for (int64_t p = 0; p < P; p++)
                        for (int64_t q = 0; q < Q; q++) {
                            const unsigned char *got = out + ((a * P + p) * Q + q) * es;
                            const int64_t b = p - 1, c = q - 2;
                            if (b >= 0 && b < B && c >= 0 && c < C) {
                                const int64_t from = src_off + a * src_st[0] + b * src_st[1] + c;
                                bad += memcmp(got, host + from * es, (size_t)es) != 0;
                            } else {
                                for (int64_t e = 0; e < es; e++) bad += got[e] != 0xA5;
                            }
                        }
                if (bad)
                    fprintf(stderr, "  %s width %lld%s: %lld wrong bytes or elements\n", axon_dtype_name(dts[t]),
                            (long long)C, reversed ? " reversed" : "", (long long)bad);
                CHECK_EQ_I64(bad, 0);
                axon_mem_free(k.dev, src), axon_mem_free(k.dev, dst);
                free(host), free(out);
            }
    axon_runtime_destroy(k.rt);
}

/* Contiguous runs whose destination lies 0-100 bytes after the source modulo a page, across the sizes where
 * glibc's memcpy switches to `rep movsb` (2112 bytes) and where move_bytes.c takes over from it (2048): every byte
 * lands, and the bytes around the destination stay as they were. Host memory, page-aligned, one allocation. */
static void test_runs_a_few_bytes_ahead_of_their_source_move_every_byte(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { SRC_AT = 64, DST_AT = 32 * 4096, CAP = DST_AT + 20 * 4096 }; /* aligned_alloc: a multiple of the page */
    unsigned char *buf = aligned_alloc(4096, CAP), *want = malloc(CAP);
    REQUIRE(buf && want);
    const int64_t sizes[] = {1, 100, 2047, 2048, 2049, 4084, 70000};
    const int aheads[] = {0, 1, 4, 12, 31, 32, 63, 64, 100};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t ai = 0; ai < sizeof aheads / sizeof aheads[0]; ai++) {
            const int64_t n = sizes[si];
            const int64_t at = DST_AT + SRC_AT + aheads[ai]; /* dst - src = 32 pages + the ahead bytes */
            for (int64_t i = 0; i < CAP; i++) buf[i] = (unsigned char)(i * 131 + 7 + (int64_t)ai);
            memcpy(want, buf, CAP);
            memcpy(want + at, buf + SRC_AT, (size_t)n);
            axon_tensor_t ts = kc_tensor(buf + SRC_AT, AXON_UINT8, 1, &n, NULL);
            axon_tensor_t td = kc_tensor(buf + at, AXON_UINT8, 1, &n, NULL);
            CHECK_OK(axon_kernel_copy(k.s, &td, &ts));
            CHECK_OK(axon_stream_sync(k.s));
            const int64_t bad = kc_first_diff(buf, want, CAP);
            if (bad >= 0)
                fprintf(stderr, "  %lld bytes %d ahead: first wrong byte at %lld\n", (long long)n, aheads[ai],
                        (long long)bad);
            CHECK_EQ_I64(bad, -1);
        }
    free(buf), free(want);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_dtype_pair_converts_like_the_reference);
    RUN(test_hand_checked_conversions);
    RUN(test_transposed_sliced_broadcast_and_reversed_sources);
    RUN(test_negative_dst_strides_write_the_mirrored_layout);
    RUN(test_overlapping_dst_is_rejected);
    RUN(test_shape_mismatch_names_both_shapes);
    RUN(test_bad_descriptors_are_invalid_arg);
    RUN(test_empty_tensors_enqueue_nothing);
    RUN(test_scalar_and_same_view_copies);
    RUN(test_tensor_helpers_describe_dtypes_and_layouts);
    RUN(test_large_copies_do_not_depend_on_the_thread_count);
    RUN(test_float32_to_float16_over_a_sweep_of_bit_patterns);
    RUN(test_float64_to_float16_rounds_through_float32);
    RUN(test_float16_to_float32_and_float64_over_every_bit_pattern);
    RUN(test_same_dtype_transposes_move_every_element);
    RUN(test_short_rows_fill_a_padded_interior);
    RUN(test_runs_a_few_bytes_ahead_of_their_source_move_every_byte);
    return check_report();
}
