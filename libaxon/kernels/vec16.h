/* 16 float lanes as two 8-lane halves (GCC vector extensions), for loops the compiler does not vectorize by itself
 * from scalar code (row reductions with partial results per lane, attention's exponentials). Lane k is lane k % 8 of
 * half k / 8.
 *
 * Why halves and not one 64-byte vector: GCC 12 keeps a 64-byte vector in registers only on targets that have them
 * (AVX-512). On AVX2 a loop-carried one lives on the stack, rebuilt from 16-byte pieces every iteration, and a
 * comparison becomes 16 scalar compares: softmax's rows and attention's exponentials ran 2-3x slower on an AVX2 host
 * than PyTorch. A 32-byte half is one register on AVX2 and AVX-512 (two SSE ones on the baseline), and two
 * independent halves are what the AVX-512 clone also ran best (GCC prefers 256-bit vectors there too).
 *
 * Unaligned loads and stores go through memcpy. The helpers are always inlined, so each instruction-set clone of a
 * caller (AXON_CLONES) gets its own code instead of calling baseline code. */
#ifndef AXON_KERNELS_VEC16_H
#define AXON_KERNELS_VEC16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi" /* 32-byte vectors in and out of inline helpers: no ABI crosses */
#endif

#define V16_INLINE static inline __attribute__((always_inline))
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef struct {
    v8f h[2];
} v16f;

/* ---- 8 lanes ---- */
V16_INLINE v8f v8_load(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}
V16_INLINE void v8_store(float *p, v8f v) { memcpy(p, &v, sizeof v); }
V16_INLINE v8f v8_splat(float x) { return (v8f){0} + x; }
/* a * b + c rounded once, lane by lane: GCC turns the lane loop into one vfmadd on FMA targets (libm's fmaf per lane
 * on the baseline), so vector code gives the bits of scalar code written with fmaf. */
V16_INLINE v8f v8_fma(v8f a, v8f b, v8f c) {
    v8f r;
    for (int i = 0; i < 8; i++) r[i] = fmaf(a[i], b[i], c[i]);
    return r;
}
/* a where the mask lane is all ones, b where it is zero */
V16_INLINE v8f v8_select(v8i m, v8f a, v8f b) { return (v8f)(((v8i)a & m) | ((v8i)b & ~m)); }
/* x where x > m, else m: a NaN in x is skipped, as in scalar loops written `x > m ? x : m`. */
V16_INLINE v8f v8_max(v8f x, v8f m) { return v8_select(x > m, x, m); }

/* ---- 16 lanes ---- */
/* Half by half: one 64-byte memcpy became four 16-byte loads stored to the stack and read back as 32-byte halves,
 * which store forwarding cannot serve (a fifth of a softmax row's time). */
V16_INLINE v16f v16_load(const float *p) { return (v16f){{v8_load(p), v8_load(p + 8)}}; }
V16_INLINE void v16_store(float *p, v16f v) {
    v8_store(p, v.h[0]);
    v8_store(p + 8, v.h[1]);
}
V16_INLINE v16f v16_splat(float x) { return (v16f){{v8_splat(x), v8_splat(x)}}; }
V16_INLINE v16f v16_add(v16f a, v16f b) { return (v16f){{a.h[0] + b.h[0], a.h[1] + b.h[1]}}; }
V16_INLINE v16f v16_mul(v16f a, v16f b) { return (v16f){{a.h[0] * b.h[0], a.h[1] * b.h[1]}}; }
V16_INLINE v16f v16_sub_scalar(v16f a, float s) { return (v16f){{a.h[0] - s, a.h[1] - s}}; }
V16_INLINE v16f v16_max(v16f x, v16f m) { return (v16f){{v8_max(x.h[0], m.h[0]), v8_max(x.h[1], m.h[1])}}; }

#endif
