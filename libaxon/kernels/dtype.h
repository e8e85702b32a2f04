/* Element conversions between axon dtypes, shared by every kernel that stores into a dtype.
 *
 * A conversion is two steps: a source element is loaded as its "natural" C value (float for float32/16/bf16,
 * double, int32_t for the small integers and bool, int64_t (also for uint32), uint64_t, or a complex pair), then
 * axon_to_<dst>(value) picks the right rule for that natural type with _Generic. Everything is static inline and
 * branch-free where it matters, so a plain typed loop over the two steps is what the compiler vectorizes. The rules
 * are the ones kernels.h documents (PyTorch's casts on x86-64, with C's undefined cases pinned down). */
#ifndef AXON_KERNELS_DTYPE_H
#define AXON_KERNELS_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "axon/tensor.h"

/* Storage of the complex dtypes: the layout of C's float _Complex and of std::complex<float>. */
typedef struct axon_c64 {
    float re, im;
} axon_c64_t;

typedef struct axon_c128 {
    double re, im;
} axon_c128_t;

/* complex32: float16 parts, loaded as complex64 (its natural value). */
typedef struct axon_c32 {
    uint16_t re, im;
} axon_c32_t;

/* Every dtype with its short name (used to paste function names) and its storage type. */
#define AXON_DTYPE_LIST(X, ...)                  \
    X(__VA_ARGS__, AXON_FLOAT32, f32, float)     \
    X(__VA_ARGS__, AXON_FLOAT64, f64, double)    \
    X(__VA_ARGS__, AXON_FLOAT16, f16, uint16_t)  \
    X(__VA_ARGS__, AXON_BFLOAT16, bf16, uint16_t)\
    X(__VA_ARGS__, AXON_INT8, i8, int8_t)        \
    X(__VA_ARGS__, AXON_UINT8, u8, uint8_t)      \
    X(__VA_ARGS__, AXON_INT16, i16, int16_t)     \
    X(__VA_ARGS__, AXON_INT32, i32, int32_t)     \
    X(__VA_ARGS__, AXON_INT64, i64, int64_t)     \
    X(__VA_ARGS__, AXON_BOOL, b8, uint8_t)       \
    X(__VA_ARGS__, AXON_COMPLEX64, c64, axon_c64_t) \
    X(__VA_ARGS__, AXON_COMPLEX128, c128, axon_c128_t) \
    X(__VA_ARGS__, AXON_UINT16, u16, uint16_t)   \
    X(__VA_ARGS__, AXON_UINT32, u32, uint32_t)   \
    X(__VA_ARGS__, AXON_UINT64, u64, uint64_t)   \
    X(__VA_ARGS__, AXON_COMPLEX32, c32, axon_c32_t)

/* ---- bit access (memcpy compiles to a register move) ---- */

static inline uint32_t axon_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float axon_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint64_t axon_f64_bits(double f) {
    uint64_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline double axon_f64_from_bits(uint64_t u) {
    double f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- float16 and bfloat16 ---- */

static inline float axon_bf16_to_f32(uint16_t h) { return axon_f32_from_bits((uint32_t)h << 16); }

/* Exact. Normal and subnormal halves: put the exponent and mantissa bits where float32 keeps them and multiply by
 * 2^(127-15) to rebias; for a subnormal half this reads the bits as a float32 subnormal, which the same product
 * scales exactly. Infinity and NaN (exponent 31) are built directly, keeping the NaN payload. */
static inline float axon_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, a = h & 0x7FFFu;
    uint32_t finite = axon_f32_bits(axon_f32_from_bits(a << 13) * 0x1p112f);
    uint32_t special = 0x7F800000u | ((a & 0x3FFu) << 13);
    return axon_f32_from_bits(sign | (a >= 0x7C00u ? special : finite));
}

/* Round to nearest even by adding just under half an ulp plus the kept LSB; the carry moves into the exponent, up to
 * infinity. A NaN is made quiet and not rounded (the carry could turn it into inf), so it keeps its sign and top
 * payload bits. Written with masks rather than a select of two results: GCC then narrows to 16 bits once per vector
 * instead of twice, which halves the time of a large conversion. */
static inline uint16_t axon_f32_to_bf16(float f) {
    uint32_t u = axon_f32_bits(f);
    uint32_t nan = -(uint32_t)((int32_t)(u & 0x7FFFFFFFu) > 0x7F800000); /* signed compare: SSE2 has no unsigned */
    uint32_t v = u | (nan & 0x00400000u);
    uint32_t bias = (0x7FFFu + ((v >> 16) & 1u)) & ~nan;
    return (uint16_t)((v + bias) >> 16);
}

/* Round to nearest even, all selects so that loops vectorize. Normal results: rebias the exponent (127 -> 15) and
 * round the 13 dropped mantissa bits as axon_f32_to_bf16 does, clamping past-the-top results to infinity.
 * Results below 2^-14 are subnormal halves, integer multiples of 2^-24: scale by 2^24 and let a float32 addition of
 * 2^23 round to that integer (ties to even). */
static inline uint16_t axon_f32_to_f16(float f) {
    uint32_t u = axon_f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    uint32_t normal = (a - 0x38000000u + 0x0FFFu + ((a >> 13) & 1u)) >> 13;
    normal = normal > 0x7C00u ? 0x7C00u : normal;
    uint32_t sub = axon_f32_bits(axon_f32_from_bits(a) * 0x1p24f + 0x1p23f) - 0x4B000000u;
    uint32_t nan = 0x7E00u | ((a >> 13) & 0x3FFu);
    uint32_t h = (int32_t)a > 0x7F800000 ? nan : (int32_t)a < 0x38800000 ? sub : normal;
    return (uint16_t)(sign | h);
}

/* float64 -> float16/bfloat16 goes through float32, rounding twice, because that is what PyTorch does (c10::Half and
 * c10::BFloat16 are built from a float): results then match PyTorch's casts bit for bit, ties included. */
static inline uint16_t axon_f64_to_f16(double f) { return axon_f32_to_f16((float)f); }

static inline uint16_t axon_f64_to_bf16(double f) { return axon_f32_to_bf16((float)f); }

/* float32 and the 16-bit floats read as float (exact) and stored from it, for kernels that inline one copy of a loop
 * per kind with the kind a constant (so each copy has no dtype switch): AXON_FK_F32, AXON_FK_BF16, AXON_FK_F16, and
 * AXON_FK_F16_SCALAR for loops that stay scalar (gathers): float16 through C's _Float16 conversions, which GCC emits
 * as the F16C instructions in clones that have them (a libgcc call elsewhere), where the bit arithmetic of
 * axon_f16_to_f32 and axon_f32_to_f16 is a dozen instructions per element; the vectorized loops keep the latter. */
enum { AXON_FK_F32, AXON_FK_BF16, AXON_FK_F16, AXON_FK_F16_SCALAR };
static inline __attribute__((always_inline)) float axon_fk_load(const int kind, const void *p, int64_t i) {
    if (kind == AXON_FK_F32) return ((const float *)p)[i];
#ifdef __FLT16_MAX__
    if (kind == AXON_FK_F16_SCALAR) return (float)((const _Float16 *)p)[i];
#endif
    const uint16_t h = ((const uint16_t *)p)[i];
    return kind == AXON_FK_BF16 ? axon_bf16_to_f32(h) : axon_f16_to_f32(h);
}
static inline __attribute__((always_inline)) void axon_fk_store(const int kind, void *p, int64_t i, float v) {
    if (kind == AXON_FK_F32) {
        ((float *)p)[i] = v;
        return;
    }
#ifdef __FLT16_MAX__
    if (kind == AXON_FK_F16_SCALAR) {
        ((_Float16 *)p)[i] = (_Float16)v;
        return;
    }
#endif
    ((uint16_t *)p)[i] = kind == AXON_FK_BF16 ? axon_f32_to_bf16(v) : axon_f32_to_f16(v);
}

/* ---- floating -> integer ----
 * Truncation toward zero when in range; out of range and NaN give the minimum, as x86's cvttss2si does (and so as
 * PyTorch does there). The cast is always applied to an in-range value, so there is no undefined behaviour and no
 * FP exception, and the select vectorizes. */

static inline int32_t axon_f32_to_i32(float x) {
    int ok = x >= -0x1p31f && x < 0x1p31f;
    int32_t v = (int32_t)(ok ? x : 0.0f);
    return ok ? v : INT32_MIN;
}

static inline int32_t axon_f64_to_i32(double x) {
    int ok = x >= -0x1p31 && x < 0x1p31;
    int32_t v = (int32_t)(ok ? x : 0.0);
    return ok ? v : INT32_MIN;
}

static inline int64_t axon_f32_to_i64(float x) {
    int ok = x >= -0x1p63f && x < 0x1p63f;
    int64_t v = (int64_t)(ok ? x : 0.0f);
    return ok ? v : INT64_MIN;
}

static inline int64_t axon_f64_to_i64(double x) {
    int ok = x >= -0x1p63 && x < 0x1p63;
    int64_t v = (int64_t)(ok ? x : 0.0);
    return ok ? v : INT64_MIN;
}

/* float -> uint32/uint64: values at or above 2^(w-1) are moved down into the signed range, converted, and get their
 * top bit back; the rest take the signed rule, so negative values wrap. This is what PyTorch's vectorized x86 casts
 * compute (its strided scalar loops differ only where C leaves the result undefined: out of range and NaN). */
static inline uint32_t axon_f32_to_u32(float x) {
    return x >= 0x1p31f ? (uint32_t)axon_f32_to_i32(x - 0x1p31f) ^ 0x80000000u : (uint32_t)axon_f32_to_i32(x);
}

static inline uint32_t axon_f64_to_u32(double x) {
    return x >= 0x1p31 ? (uint32_t)axon_f64_to_i32(x - 0x1p31) ^ 0x80000000u : (uint32_t)axon_f64_to_i32(x);
}

static inline uint64_t axon_f32_to_u64(float x) {
    return x >= 0x1p63f ? (uint64_t)axon_f32_to_i64(x - 0x1p63f) ^ 0x8000000000000000u : (uint64_t)axon_f32_to_i64(x);
}

static inline uint64_t axon_f64_to_u64(double x) {
    return x >= 0x1p63 ? (uint64_t)axon_f64_to_i64(x - 0x1p63) ^ 0x8000000000000000u : (uint64_t)axon_f64_to_i64(x);
}

/* ---- loads: storage -> natural value ---- */

#define AXON_LOAD_f32(x) (x)
#define AXON_LOAD_f64(x) (x)
#define AXON_LOAD_f16(x) axon_f16_to_f32(x)
#define AXON_LOAD_bf16(x) axon_bf16_to_f32(x)
#define AXON_LOAD_i8(x) ((int32_t)(x))
#define AXON_LOAD_u8(x) ((int32_t)(x))
#define AXON_LOAD_i16(x) ((int32_t)(x))
#define AXON_LOAD_i32(x) (x)
#define AXON_LOAD_i64(x) (x)
#define AXON_LOAD_b8(x) ((int32_t)((x) != 0)) /* any nonzero byte reads as true */
#define AXON_LOAD_c64(x) (x)
#define AXON_LOAD_c128(x) (x)
#define AXON_LOAD_u16(x) ((int32_t)(x))
#define AXON_LOAD_u32(x) ((int64_t)(x))
#define AXON_LOAD_u64(x) (x)
#define AXON_LOAD_c32(x) axon_c32_load(x)

/* ---- stores: natural value -> storage, one function per (natural type, destination) ---- */

/* float32 / float64: C's conversions are already the rule (round to nearest even, overflow to inf). */
#define AXON_TARGET_REAL(dn, T)                                                \
    static inline T axon_##dn##_of_f32(float v) { return (T)v; }               \
    static inline T axon_##dn##_of_f64(double v) { return (T)v; }              \
    static inline T axon_##dn##_of_i32(int32_t v) { return (T)v; }             \
    static inline T axon_##dn##_of_i64(int64_t v) { return (T)v; }             \
    static inline T axon_##dn##_of_u64(uint64_t v) { return (T)v; }            \
    static inline T axon_##dn##_of_c64(axon_c64_t v) { return (T)v.re; }       \
    static inline T axon_##dn##_of_c128(axon_c128_t v) { return (T)v.re; }

/* Integers: floating values go through the int32, int64, uint32 or uint64 rule (W), then keep the low bits of T. */
#define AXON_TARGET_INT(dn, T, W)                                                          \
    static inline T axon_##dn##_of_f32(float v) { return (T)axon_f32_to_##W(v); }          \
    static inline T axon_##dn##_of_f64(double v) { return (T)axon_f64_to_##W(v); }         \
    static inline T axon_##dn##_of_i32(int32_t v) { return (T)v; }                         \
    static inline T axon_##dn##_of_i64(int64_t v) { return (T)v; }                         \
    static inline T axon_##dn##_of_u64(uint64_t v) { return (T)v; }                        \
    static inline T axon_##dn##_of_c64(axon_c64_t v) { return (T)axon_f32_to_##W(v.re); }  \
    static inline T axon_##dn##_of_c128(axon_c128_t v) { return (T)axon_f64_to_##W(v.re); }

/* Halves: integers go through float32 first, as PyTorch's constructors from float do. */
#define AXON_TARGET_HALF(dn)                                                                        \
    static inline uint16_t axon_##dn##_of_f32(float v) { return axon_f32_to_##dn(v); }              \
    static inline uint16_t axon_##dn##_of_f64(double v) { return axon_f64_to_##dn(v); }             \
    static inline uint16_t axon_##dn##_of_i32(int32_t v) { return axon_f32_to_##dn((float)v); }     \
    static inline uint16_t axon_##dn##_of_i64(int64_t v) { return axon_f32_to_##dn((float)v); }     \
    static inline uint16_t axon_##dn##_of_u64(uint64_t v) { return axon_f32_to_##dn((float)v); }    \
    static inline uint16_t axon_##dn##_of_c64(axon_c64_t v) { return axon_f32_to_##dn(v.re); }      \
    static inline uint16_t axon_##dn##_of_c128(axon_c128_t v) { return axon_f64_to_##dn(v.re); }

#define AXON_TARGET_COMPLEX(dn, T, R)                                                         \
    static inline T axon_##dn##_of_f32(float v) { T r = {(R)v, 0}; return r; }               \
    static inline T axon_##dn##_of_f64(double v) { T r = {(R)v, 0}; return r; }              \
    static inline T axon_##dn##_of_i32(int32_t v) { T r = {(R)v, 0}; return r; }             \
    static inline T axon_##dn##_of_i64(int64_t v) { T r = {(R)v, 0}; return r; }             \
    static inline T axon_##dn##_of_u64(uint64_t v) { T r = {(R)v, 0}; return r; }            \
    static inline T axon_##dn##_of_c64(axon_c64_t v) { T r = {(R)v.re, (R)v.im}; return r; }  \
    static inline T axon_##dn##_of_c128(axon_c128_t v) { T r = {(R)v.re, (R)v.im}; return r; }

AXON_TARGET_REAL(f32, float)
AXON_TARGET_REAL(f64, double)
AXON_TARGET_HALF(f16)
AXON_TARGET_HALF(bf16)
AXON_TARGET_INT(i8, int8_t, i32)
AXON_TARGET_INT(u8, uint8_t, i64) /* PyTorch casts to uint8 through int64 */
AXON_TARGET_INT(i16, int16_t, i32)
AXON_TARGET_INT(i32, int32_t, i32)
AXON_TARGET_INT(i64, int64_t, i64)
AXON_TARGET_INT(u16, uint16_t, i32)
AXON_TARGET_INT(u32, uint32_t, u32)
AXON_TARGET_INT(u64, uint64_t, u64)
AXON_TARGET_COMPLEX(c64, axon_c64_t, float)
AXON_TARGET_COMPLEX(c128, axon_c128_t, double)

/* complex32: each part rounded to float16 as a real float16 target rounds it (float64 through float32, as c10's
 * complex<Half> is built from a complex<float>). */
static inline axon_c32_t axon_c32_of_parts(uint16_t re, uint16_t im) {
    axon_c32_t r = {re, im};
    return r;
}
static inline axon_c32_t axon_c32_of_f32(float v) { return axon_c32_of_parts(axon_f32_to_f16(v), 0); }
static inline axon_c32_t axon_c32_of_f64(double v) { return axon_c32_of_parts(axon_f64_to_f16(v), 0); }
static inline axon_c32_t axon_c32_of_i32(int32_t v) { return axon_c32_of_f32((float)v); }
static inline axon_c32_t axon_c32_of_i64(int64_t v) { return axon_c32_of_f32((float)v); }
static inline axon_c32_t axon_c32_of_u64(uint64_t v) { return axon_c32_of_f32((float)v); }
static inline axon_c32_t axon_c32_of_c64(axon_c64_t v) {
    return axon_c32_of_parts(axon_f32_to_f16(v.re), axon_f32_to_f16(v.im));
}
static inline axon_c32_t axon_c32_of_c128(axon_c128_t v) {
    return axon_c32_of_parts(axon_f64_to_f16(v.re), axon_f64_to_f16(v.im));
}

static inline axon_c64_t axon_c32_load(axon_c32_t v) {
    axon_c64_t r = {axon_f16_to_f32(v.re), axon_f16_to_f32(v.im)};
    return r;
}

/* bool: != 0; a complex value is true when either part is nonzero (PyTorch does not take the real part here). */
static inline uint8_t axon_b8_of_f32(float v) { return v != 0; }
static inline uint8_t axon_b8_of_f64(double v) { return v != 0; }
static inline uint8_t axon_b8_of_i32(int32_t v) { return v != 0; }
static inline uint8_t axon_b8_of_i64(int64_t v) { return v != 0; }
static inline uint8_t axon_b8_of_u64(uint64_t v) { return v != 0; }
static inline uint8_t axon_b8_of_c64(axon_c64_t v) { return v.re != 0 || v.im != 0; }
static inline uint8_t axon_b8_of_c128(axon_c128_t v) { return v.re != 0 || v.im != 0; }

/* Convert a natural value v to the storage of destination dn (a short name from AXON_DTYPE_LIST). */
#define AXON_TO(dn, v)                                                                            \
    _Generic((v), float: axon_##dn##_of_f32, double: axon_##dn##_of_f64, int32_t: axon_##dn##_of_i32, \
             int64_t: axon_##dn##_of_i64, uint64_t: axon_##dn##_of_u64, axon_c64_t: axon_##dn##_of_c64,      \
             axon_c128_t: axon_##dn##_of_c128)(v)

#endif
