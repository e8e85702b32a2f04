/* The attention's loops over every score, per compute type and instruction set (attention_rows.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_impl.h"
#include "pointwise_impl.h"
#include "vec16.h"

/* Row reductions on vec16.h's 16-lane vectors. at_vexp is pw_expf lane by lane, the same operations in the same
 * order (kernels build with -ffp-contract=off; v8_fma where pw_expf has fmaf), so it gives pw_expf's bits, except
 * below -87 where it gives 0: exp's subnormal results there (every masked score, -inf, went through them) cost a
 * microcode assist per element, several times the rest of the softmax, and a weight under 2^-125 of the row's largest
 * never matters. The horizontal maximum and sum fold lane l with lane l + 8, l + 4, l + 2, l + 1 in turn: the first
 * step joins the two halves. */
#if defined(__GNUC__) && (__GNUC__ >= 12 || defined(__clang__)) /* __builtin_shufflevector */
V16_INLINE float at_hmax(v16f v) {
    v8f h = v8_max(v.h[1], v.h[0]);
    h = v8_max(__builtin_shufflevector(h, h, 4, 5, 6, 7, 0, 1, 2, 3), h);
    h = v8_max(__builtin_shufflevector(h, h, 2, 3, 0, 1, 6, 7, 4, 5), h);
    h = v8_max(__builtin_shufflevector(h, h, 1, 0, 3, 2, 5, 4, 7, 6), h);
    return h[0];
}
V16_INLINE float at_hsum(v16f v) {
    v8f h = v.h[0] + v.h[1];
    h += __builtin_shufflevector(h, h, 4, 5, 6, 7, 0, 1, 2, 3);
    h += __builtin_shufflevector(h, h, 2, 3, 0, 1, 6, 7, 4, 5);
    h += __builtin_shufflevector(h, h, 1, 0, 3, 2, 5, 4, 7, 6);
    return h[0];
}
V16_INLINE v8f at_vexp8(v8f x) {
    const v8f lo = v8_splat(-87.0f), hi = v8_splat(89.0f);
    const v8f xc = v8_select(x < lo, lo, v8_select(x > hi, hi, x)); /* a NaN passes through */
    PW_EXPF_CORE(v8f, v8_fma, v8_splat, xc, n, p)
    const v8i k = __builtin_convertvector(n, v8i), k1 = k >> 1, k2 = k - k1;
    const v8f y = p * (v8f)((v8u)(k1 + 127) << 23) * (v8f)((v8u)(k2 + 127) << 23);
    return v8_select(x != x, x, v8_select(x < lo, v8_splat(0), y));
}
V16_INLINE v16f at_vexp(v16f x) { return (v16f){{at_vexp8(x.h[0]), at_vexp8(x.h[1])}}; }

/* A 16 x 16 block of x (row stride ldx) transposed into y (row stride ldy), as four 8 x 8 blocks on vec16.h's
 * 32-byte halves (64-byte rows were shuffled through the stack on AVX2). An 8 x 8 transpose is three rounds that
 * swap the off-diagonal d x d blocks of every 2d x 2d block (d = 4, 2, 1), each a two-input shuffle per row pair. */
#define AT_SWAP(d, i0, ...)                                                                                            \
    do {                                                                                                               \
        const v8f a_ = r[i0], b_ = r[i0 + d];                                                                          \
        r[i0] = __builtin_shufflevector(a_, b_, __VA_ARGS__);                                                          \
        r[i0 + d] = __builtin_shufflevector(a_, b_, AT_SWAP_HI_##d);                                                   \
    } while (0)
#define AT_SWAP_HI_4 4, 5, 6, 7, 12, 13, 14, 15
#define AT_SWAP_HI_2 2, 3, 10, 11, 6, 7, 14, 15
#define AT_SWAP_HI_1 1, 9, 3, 11, 5, 13, 7, 15
V16_INLINE void at_transpose8(const float *x, int64_t ldx, float *y, int64_t ldy) {
    v8f r[8];
    for (int i = 0; i < 8; i++) r[i] = v8_load(x + i * ldx);
    for (int i = 0; i < 8; i++) /* i: the first row of each pair, bit d clear */
        if (!(i & 4)) AT_SWAP(4, i, 0, 1, 2, 3, 8, 9, 10, 11);
    for (int i = 0; i < 8; i++)
        if (!(i & 2)) AT_SWAP(2, i, 0, 1, 8, 9, 4, 5, 12, 13);
    for (int i = 0; i < 8; i++)
        if (!(i & 1)) AT_SWAP(1, i, 0, 8, 2, 10, 4, 12, 6, 14);
    for (int i = 0; i < 8; i++) v8_store(y + i * ldy, r[i]);
}
V16_INLINE void at_transpose16(const float *x, int64_t ldx, float *y, int64_t ldy) {
    for (int bi = 0; bi < 16; bi += 8)
        for (int bj = 0; bj < 16; bj += 8) at_transpose8(x + bi * ldx + bj, ldx, y + bj * ldy + bi, ldy);
}

#define AT_VEC 1
#endif

#define AT_T float
#define AT_SFX f32
#include "attention_rows.h"

#define AT_T double
#define AT_SFX f64
#include "attention_rows.h"
