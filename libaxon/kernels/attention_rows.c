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
 * times the rest of the softmax, and a weight under 2^-125 of the row's largest never matters. */
#if defined(__GNUC__) && (__GNUC__ >= 12 || defined(__clang__)) /* __builtin_shufflevector */
V16_INLINE float at_hmax(v16f v) {
    v = v16_max(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7), v);
    v = v16_max(__builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11), v);
    v = v16_max(__builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13), v);
    v = v16_max(__builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14), v);
    return v[0];
}
V16_INLINE float at_hsum(v16f v) {
    v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    return v[0];
}
V16_INLINE v16f at_vexp(v16f x) {
    const v16f lo = v16_splat(-87.0f), hi = v16_splat(89.0f);
    const v16f xc = v16_select(x < lo, lo, v16_select(x > hi, hi, x)); /* a NaN passes through */
    PW_EXPF_CORE(v16f, xc, n, p)
    const v16i k = __builtin_convertvector(n, v16i), k1 = k >> 1, k2 = k - k1;
    const v16f y = p * (v16f)((v16u)(k1 + 127) << 23) * (v16f)((v16u)(k2 + 127) << 23);
    return v16_select(x != x, x, v16_select(x < lo, v16_splat(0), y));
}

/* A 16 x 16 block of x (row stride ldx) transposed into y (row stride ldy): four rounds that swap the off-diagonal
 * d x d blocks of every 2d x 2d block (d = 8, 4, 2, 1), each a two-input shuffle per row pair. */
#define AT_SWAP(d, i0, ...) \
    do { \
        const v16f a_ = r[i0], b_ = r[i0 + d]; \
        r[i0] = __builtin_shufflevector(a_, b_, __VA_ARGS__); \
        r[i0 + d] = __builtin_shufflevector(a_, b_, AT_SWAP_HI_##d); \
    } while (0)
#define AT_SWAP_HI_8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define AT_SWAP_HI_4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define AT_SWAP_HI_2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define AT_SWAP_HI_1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
V16_INLINE void at_transpose16(const float *x, int64_t ldx, float *y, int64_t ldy) {
    v16f r[16];
    for (int i = 0; i < 16; i++) r[i] = v16_load(x + i * ldx);
    for (int i = 0; i < 16; i++) /* i: the first row of each pair, bit d clear */
        if (!(i & 8)) AT_SWAP(8, i, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    for (int i = 0; i < 16; i++)
        if (!(i & 4)) AT_SWAP(4, i, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    for (int i = 0; i < 16; i++)
        if (!(i & 2)) AT_SWAP(2, i, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
    for (int i = 0; i < 16; i++)
        if (!(i & 1)) AT_SWAP(1, i, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    for (int i = 0; i < 16; i++) v16_store(y + i * ldy, r[i]);
}

#define AT_VEC 1
#endif

#define AT_T float
#define AT_SFX f32
#include "attention_rows.h"

#define AT_T double
#define AT_SFX f64
#include "attention_rows.h"
