/* The attention's loops over every score, per compute type and instruction set (attention_rows.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_impl.h"
#include "pointwise_impl.h"

/* float in 16 lanes (GCC vector extensions: one AVX-512 register, two AVX or four SSE ones), for the row
 * reductions. Unaligned loads and stores go through memcpy. at_vexp is pw_expf lane by lane, the same operations in
 * the same order (kernels build with -ffp-contract=off), so it gives pw_expf's bits, except below -87 where it gives
 * 0: exp's subnormal results there (every masked score, -inf, went through them) cost a microcode assist per
 * element, several times the rest of the softmax, and a weight under 2^-125 of the row's largest never matters. */
#if defined(__GNUC__) && (__GNUC__ >= 12 || defined(__clang__)) /* __builtin_shufflevector */
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi" /* 64-byte vectors in and out of static inline helpers: no ABI crosses */
#endif
/* Inlined into each instruction-set clone of their callers, else they would run as baseline code. */
#define AT_VINLINE static inline __attribute__((always_inline))
typedef float at_vf __attribute__((vector_size(64)));
typedef int32_t at_vi __attribute__((vector_size(64)));
typedef uint32_t at_vu __attribute__((vector_size(64)));

AT_VINLINE at_vf at_vload(const float *p) {
    at_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
AT_VINLINE void at_vstore(float *p, at_vf v) { memcpy(p, &v, sizeof v); }
AT_VINLINE at_vf at_vsplat(float x) { return (at_vf){0} + x; }
AT_VINLINE at_vf at_vselect(at_vi m, at_vf a, at_vf b) { return (at_vf)(((at_vi)a & m) | ((at_vi)b & ~m)); }
/* x where x > m, else m: a NaN in x is skipped, as in the scalar loops. */
AT_VINLINE at_vf at_vmax(at_vf x, at_vf m) { return at_vselect(x > m, x, m); }
AT_VINLINE float at_hmax(at_vf v) {
    v = at_vmax(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7), v);
    v = at_vmax(__builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11), v);
    v = at_vmax(__builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13), v);
    v = at_vmax(__builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14), v);
    return v[0];
}
AT_VINLINE float at_hsum(at_vf v) {
    v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    return v[0];
}
AT_VINLINE at_vf at_vexp(at_vf x) {
    const at_vf lo = at_vsplat(-87.0f), hi = at_vsplat(89.0f);
    const at_vf xc = at_vselect(x < lo, lo, at_vselect(x > hi, hi, x)); /* a NaN passes through */
    PW_EXPF_CORE(at_vf, xc, n, p)
    const at_vi k = __builtin_convertvector(n, at_vi), k1 = k >> 1, k2 = k - k1;
    const at_vf y = p * (at_vf)((at_vu)(k1 + 127) << 23) * (at_vf)((at_vu)(k2 + 127) << 23);
    return at_vselect(x != x, x, at_vselect(x < lo, at_vsplat(0), y));
}

/* A 16 x 16 block of x (row stride ldx) transposed into y (row stride ldy): four rounds that swap the off-diagonal
 * d x d blocks of every 2d x 2d block (d = 8, 4, 2, 1), each a two-input shuffle per row pair. */
#define AT_SWAP(d, i0, ...) \
    do { \
        const at_vf a_ = r[i0], b_ = r[i0 + d]; \
        r[i0] = __builtin_shufflevector(a_, b_, __VA_ARGS__); \
        r[i0 + d] = __builtin_shufflevector(a_, b_, AT_SWAP_HI_##d); \
    } while (0)
#define AT_SWAP_HI_8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define AT_SWAP_HI_4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define AT_SWAP_HI_2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define AT_SWAP_HI_1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
AT_VINLINE void at_transpose16(const float *x, int64_t ldx, float *y, int64_t ldy) {
    at_vf r[16];
    for (int i = 0; i < 16; i++) r[i] = at_vload(x + i * ldx);
    for (int i = 0; i < 16; i++) /* i: the first row of each pair, bit d clear */
        if (!(i & 8)) AT_SWAP(8, i, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    for (int i = 0; i < 16; i++)
        if (!(i & 4)) AT_SWAP(4, i, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    for (int i = 0; i < 16; i++)
        if (!(i & 2)) AT_SWAP(2, i, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
    for (int i = 0; i < 16; i++)
        if (!(i & 1)) AT_SWAP(1, i, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    for (int i = 0; i < 16; i++) at_vstore(y + i * ldy, r[i]);
}

#define AT_VEC 1
#endif

#define AT_T float
#define AT_SFX f32
#include "attention_rows.h"

#define AT_T double
#define AT_SFX f64
#include "attention_rows.h"
