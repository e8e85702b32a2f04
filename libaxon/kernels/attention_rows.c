/* The attention's loops over every score, per compute type and instruction set (attention_rows.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_impl.h"
#include "pointwise_impl.h"
#include "vec16.h"

/* Row reductions on vec16.h's 16-lane vectors. at_vexp is pw_expf lane by lane, the same operations in the same
 * order (kernels build with -ffp-contract=off), so it gives pw_expf's bits, except below -87 where it gives 0: exp's
 * subnormal results there (every masked score, -inf, went through them) cost a microcode assist per element, several
 * times the rest of the softmax, and a weight under 2^-125 of the row's largest never matters. The horizontal
 * maximum and sum fold lane l with lane l + 8, l + 4, l + 2, l + 1 in turn: the first step joins the two halves. */
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
    PW_EXPF_CORE(v8f, xc, n, p)
    const v8i k = __builtin_convertvector(n, v8i), k1 = k >> 1, k2 = k - k1;
    const v8f y = p * (v8f)((v8u)(k1 + 127) << 23) * (v8f)((v8u)(k2 + 127) << 23);
    return v8_select(x != x, x, v8_select(x < lo, v8_splat(0), y));
}
V16_INLINE v16f at_vexp(v16f x) { return (v16f){{at_vexp8(x.h[0]), at_vexp8(x.h[1])}}; }

/* A 16 x 16 block of x (row stride ldx) transposed into y (row stride ldy): four rounds that swap the off-diagonal
 * d x d blocks of every 2d x 2d block (d = 8, 4, 2, 1), each a two-input shuffle per row pair. */
#define AT_SWAP(d, i0, ...) \
    do { \
        const at_row16 a_ = r[i0], b_ = r[i0 + d]; \
        r[i0] = __builtin_shufflevector(a_, b_, __VA_ARGS__); \
        r[i0 + d] = __builtin_shufflevector(a_, b_, AT_SWAP_HI_##d); \
    } while (0)
#define AT_SWAP_HI_8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define AT_SWAP_HI_4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define AT_SWAP_HI_2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define AT_SWAP_HI_1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
typedef float at_row16 __attribute__((vector_size(64)));
V16_INLINE void at_transpose16(const float *x, int64_t ldx, float *y, int64_t ldy) {
    at_row16 r[16];
    for (int i = 0; i < 16; i++) memcpy(&r[i], x + i * ldx, sizeof r[i]);
    for (int i = 0; i < 16; i++) /* i: the first row of each pair, bit d clear */
        if (!(i & 8)) AT_SWAP(8, i, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    for (int i = 0; i < 16; i++)
        if (!(i & 4)) AT_SWAP(4, i, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    for (int i = 0; i < 16; i++)
        if (!(i & 2)) AT_SWAP(2, i, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
    for (int i = 0; i < 16; i++)
        if (!(i & 1)) AT_SWAP(1, i, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    for (int i = 0; i < 16; i++) memcpy(y + i * ldy, &r[i], sizeof r[i]);
}

#define AT_VEC 1
#endif

#define AT_T float
#define AT_SFX f32
#include "attention_rows.h"

#define AT_T double
#define AT_SFX f64
#include "attention_rows.h"
