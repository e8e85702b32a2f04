/* float and int32 in 16 lanes (GCC vector extensions: one AVX-512 register, two AVX or four SSE ones), for loops the
 * compiler does not vectorize by itself from scalar code (row reductions with partial results per lane). Unaligned
 * loads and stores go through memcpy. The helpers are always inlined, so each instruction-set clone of a caller
 * (AXON_CLONES) gets its own code instead of calling baseline code. */
#ifndef AXON_KERNELS_VEC16_H
#define AXON_KERNELS_VEC16_H

#include <stdint.h>
#include <string.h>

#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi" /* 64-byte vectors in and out of inline helpers: no ABI crosses */
#endif

#define V16_INLINE static inline __attribute__((always_inline))
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));

V16_INLINE v16f v16_load(const float *p) {
    v16f v;
    memcpy(&v, p, sizeof v);
    return v;
}
V16_INLINE void v16_store(float *p, v16f v) { memcpy(p, &v, sizeof v); }
V16_INLINE v16f v16_splat(float x) { return (v16f){0} + x; }
V16_INLINE v16f v16_select(v16i m, v16f a, v16f b) { return (v16f)(((v16i)a & m) | ((v16i)b & ~m)); }
/* x where x > m, else m: a NaN in x is skipped, as in scalar loops written `x > m ? x : m`. */
V16_INLINE v16f v16_max(v16f x, v16f m) { return v16_select(x > m, x, m); }

#endif
