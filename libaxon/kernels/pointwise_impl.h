/* What the pointwise files share: the loop signature, the per-dtype traits the loops are generated from, and the
 * scalar helpers the op expressions use. Never installed.
 *
 * One loop function exists per (op, compute dtype): a plain typed loop over contiguous elements that the compiler
 * vectorizes. The executor (pointwise_exec.c) picks it once per kernel and feeds it runs of memory directly when the
 * operands allow, or blocks converted into stack buffers when they do not, so no loop ever switches on a dtype or an
 * op inside its body. */
#ifndef AXON_KERNELS_POINTWISE_IMPL_H
#define AXON_KERNELS_POINTWISE_IMPL_H

#include <math.h>
#include <stdint.h>

#include "axon/pointwise.h"
#include "axon/stream.h"
#include "dtype.h"
#include "kernels_impl.h"
#include "pointwise_math.h"

/* Op parameters converted at launch for every work type, so a loop reads its own with one load. Slot meanings per op
 * are set in pointwise.c (pw_params_for). */
typedef struct pw_ctx {
    float pf[3];
    double pd[3];
    int64_t pi[3];
    axon_c64_t pc64;             /* slot 0 (alpha) of the complex loops */
    axon_c128_t pc128;
} pw_ctx_t;

/* A loop over n elements. out holds n elements of the op's result dtype (the compute dtype, or bool for the
 * comparison-like ops). in[k] holds n elements of operand k's load dtype (the compute dtype; bool for WHERE's
 * condition), or, when bit k of `scalar` is set, points at ONE value of the work type (float for float16 and
 * bfloat16, else the storage type; bool as 0/1). Every element is at stride 1. out may be the very same array as an
 * input. Returns nonzero if an integer division by zero was seen (the result is then unspecified). */
typedef int (*pw_loop_fn)(char *out, const char *const *in, unsigned scalar, int64_t n, const pw_ctx_t *ctx);

/* The row form of a binary loop (x * scale[:, None]): g rows of R elements in which operand `which` (0: a, 1: b) has
 * one value per row. Row r's value is at v + r * vstep (work values: float for float16 and bfloat16, else the storage
 * type), the other operand's row at e + r * estep (its load dtype) and out's row at out + r * ostep; rows are at stride
 * 1 and steps count elements (estep 0: the same row for every value). The same expression as the op's pw_loop_fn, so
 * the same bits; x * s[:, None] runs without spreading s's values over a buffer or a loop call per row. */
typedef struct pw_rows {
    char *out;
    const char *v, *e;
    int64_t ostep, vstep, estep;
    int64_t g, R;
    int which;
} pw_rows_t;
typedef int (*pw_row_loop_fn)(const pw_rows_t *rows, const pw_ctx_t *ctx);

/* The loop tables (pointwise_unary.c, _binary.c, _ternary.c): NULL where the op is not defined for the dtype. */
extern const pw_loop_fn axon_pw_unary_loops[AXON_UNARY_COUNT][AXON_DTYPE_COUNT];
extern const pw_loop_fn axon_pw_binary_loops[AXON_BINARY_COUNT][AXON_DTYPE_COUNT];
/* Float add ([0]) and sub ([1]) when alpha is not 1: x + alpha * y rounded once, as PyTorch's CPU loops. */
extern const pw_loop_fn axon_pw_binary_alpha_loops[2][AXON_DTYPE_COUNT];
/* The binary ops that also have a pw_row_loop_fn (the float arithmetic); NULL elsewhere. */
extern const pw_row_loop_fn axon_pw_binary_row_loops[AXON_BINARY_COUNT][AXON_DTYPE_COUNT];
extern const pw_loop_fn axon_pw_ternary_loops[AXON_TERNARY_COUNT][AXON_DTYPE_COUNT];

/* float16 and bfloat16 add, sub, mul, div, threshold_backward, leaky_relu_backward and hardswish_backward in one AVX2
 * pass (pointwise_half_avx2.c), for op an axon_binary_op_t and t the compute dtype: NULL for other ops and dtypes or
 * where the CPU lacks AVX2, FMA or F16C. A drop-in for the op's 16-bit loop, with the same bits. */
pw_loop_fn axon_pw_half_binary(int op, axon_dtype_t t);
pw_row_loop_fn axon_pw_half_binary_rows(int op, axon_dtype_t t); /* their row forms, likewise */
pw_loop_fn axon_pw_half_unary(int op, axon_dtype_t t);           /* relu, leaky_relu, hardswish likewise, or NULL */

/* The complex loops (pointwise_complex.c), column 0 for complex64 and 1 for complex128: the real tables leave the
 * complex dtypes' columns empty, and the op's table entry is looked up here instead (pw_loop_of in pointwise.c). */
#define PW_COMPLEX_COLUMN(d) ((d) == AXON_COMPLEX64 ? 0 : (d) == AXON_COMPLEX128 ? 1 : -1)
extern const pw_loop_fn axon_pw_unary_complex_loops[AXON_UNARY_COUNT][2];
extern const pw_loop_fn axon_pw_binary_complex_loops[AXON_BINARY_COUNT][2];
extern const pw_loop_fn axon_pw_ternary_complex_loops[AXON_TERNARY_COUNT][2];

/* One value of a work type: float (float32, float16, bfloat16), double, an integer's storage, bool as 0/1, or a
 * complex pair. */
typedef union pw_value {
    float f;
    double d;
    int64_t i;
    axon_c64_t c64;
    axon_c128_t c128;
    unsigned char bytes[16];
} pw_value_t;

/* A launch's argument block, copied into the stream: everything the executor needs, decided on the host. */
typedef struct pw_args {
    pw_loop_fn loop;
    pw_row_loop_fn row_loop;     /* the op's row form, or NULL */
    const char *name;            /* static op name, for the division-by-zero message */
    int arity;                   /* 1, 2 or 3 */
    unsigned scalar;             /* bit k: operand k is the number value[k], in[k] is unused */
    axon_dtype_t compute;        /* the dtype the op computes in */
    axon_dtype_t result;         /* what the loop stores: compute, or bool for the bool-result ops */
    axon_dtype_t load[3];        /* what operand k is converted to before the loop: compute, or bool (WHERE) */
    axon_tensor_t out;
    axon_tensor_t in[3];
    pw_value_t value[3];
    pw_ctx_t ctx;
    /* out and every tensor operand are contiguous and already in the loop's dtypes, so element i of each is at
     * data + i * its element size: the executor calls the loop on flat ranges, with no iterator or buffers. */
    int flat;
    size_t flat_size[4];         /* element bytes of out, then of operands a, b, c */
} pw_args_t;

/* The kernel all pointwise launches enqueue (pointwise_exec.c). */
axon_status_t axon_pw_kernel(const void *args, const axon_exec_t *ex);

/* One element of dtype d (already in d's storage) as its work value. Bool becomes 0 or 1. */
void axon_pw_widen(axon_dtype_t d, const void *storage, pw_value_t *out);

/* ---- dtype traits ----
 * X(..., dtype enum, short name, storage T, work type W, unsigned type U). W is what an op computes in; U is the
 * unsigned type integer + - * and shifts go through, so that overflow wraps instead of being undefined (U is at least
 * as wide as int, so small types do not promote back to signed int). */
#define PW_FLOATS(X, ...)                                       \
    X(__VA_ARGS__, AXON_FLOAT32, f32, float, float, uint32_t)   \
    X(__VA_ARGS__, AXON_FLOAT64, f64, double, double, uint64_t) \
    X(__VA_ARGS__, AXON_FLOAT16, f16, uint16_t, float, uint32_t) \
    X(__VA_ARGS__, AXON_BFLOAT16, bf16, uint16_t, float, uint32_t)
/* The float dtypes of ops that PyTorch CPU defines for float32 and float64 only. */
#define PW_DOUBLES(X, ...)                                      \
    X(__VA_ARGS__, AXON_FLOAT32, f32, float, float, uint32_t)   \
    X(__VA_ARGS__, AXON_FLOAT64, f64, double, double, uint64_t)
#define PW_INTS(X, ...)                                          \
    X(__VA_ARGS__, AXON_INT8, i8, int8_t, int8_t, uint32_t)      \
    X(__VA_ARGS__, AXON_UINT8, u8, uint8_t, uint8_t, uint32_t)   \
    X(__VA_ARGS__, AXON_INT16, i16, int16_t, int16_t, uint32_t)  \
    X(__VA_ARGS__, AXON_INT32, i32, int32_t, int32_t, uint32_t)  \
    X(__VA_ARGS__, AXON_INT64, i64, int64_t, int64_t, uint64_t)
#define PW_BOOLS(X, ...) X(__VA_ARGS__, AXON_BOOL, b8, uint8_t, uint8_t, uint32_t)

/* The Bessel functions J0, J1, Y0, Y1, K0, K1, e^x K0, K1 (float32 and float64) and I0, I1, e^-|x| I0, I1 (every
 * float dtype): block loops of their own (special_bessel_series.c). */
#define PW_BESSEL_SERIES_LOOP(fn, DE, dn, T, WT, UT) \
    int axon_pw_bessel_##fn##_##dn(char *out, const char *const *in, unsigned scalar, int64_t n, const pw_ctx_t *ctx);
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, j0)
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, j1)
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, y0)
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, y1)
PW_FLOATS(PW_BESSEL_SERIES_LOOP, i0)
PW_FLOATS(PW_BESSEL_SERIES_LOOP, i1)
PW_FLOATS(PW_BESSEL_SERIES_LOOP, i0e)
PW_FLOATS(PW_BESSEL_SERIES_LOOP, i1e)
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, k0)
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, k1)
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, k0e)
PW_DOUBLES(PW_BESSEL_SERIES_LOOP, k1e)

/* ndtri for float32 and float64, erfinv for float64 (special_ndtri.c): block loops of their own. */
int axon_pw_ndtri_f32(char *out, const char *const *in, unsigned scalar, int64_t n, const pw_ctx_t *ctx);
int axon_pw_ndtri_f64(char *out, const char *const *in, unsigned scalar, int64_t n, const pw_ctx_t *ctx);
int axon_pw_erfinv_f64(char *out, const char *const *in, unsigned scalar, int64_t n, const pw_ctx_t *ctx);

/* fmod, remainder and div_floor for every float dtype (pointwise_fmod.c): block loops of their own. */
#define PW_FMOD_LOOP(op, DE, dn, T, WT, UT) \
    int axon_pw_fmod_##op##_##dn(char *out, const char *const *in, unsigned scalar, int64_t n, const pw_ctx_t *ctx);
PW_FLOATS(PW_FMOD_LOOP, fmod)
PW_FLOATS(PW_FMOD_LOOP, remainder)
PW_FLOATS(PW_FMOD_LOOP, div_floor)

/* Storage -> work value, and work value -> storage (round to nearest even for the halves; low bits for ints). */
#define PW_LD_f32(x) (x)
#define PW_LD_f64(x) (x)
#define PW_LD_f16(x) axon_f16_to_f32(x)
#define PW_LD_bf16(x) axon_bf16_to_f32(x)
#define PW_LD_i8(x) (x)
#define PW_LD_u8(x) (x)
#define PW_LD_i16(x) (x)
#define PW_LD_i32(x) (x)
#define PW_LD_i64(x) (x)
#define PW_LD_b8(x) ((uint8_t)((x) != 0)) /* any nonzero byte reads as true */
#define PW_ST_f32(v) ((float)(v))
#define PW_ST_f64(v) ((double)(v))
#define PW_ST_f16(v) axon_f32_to_f16(v)
#define PW_ST_bf16(v) axon_f32_to_bf16(v)
#define PW_ST_i8(v) ((int8_t)(v))
#define PW_ST_u8(v) ((uint8_t)(v))
#define PW_ST_i16(v) ((int16_t)(v))
#define PW_ST_i32(v) ((int32_t)(v))
#define PW_ST_i64(v) ((int64_t)(v))
#define PW_ST_b8(v) ((uint8_t)((v) != 0))
#define PW_ST_BOOL(v) ((uint8_t)((v) != 0)) /* results of the bool-result ops */

/* Parameter slot k in the loop's work type W (a block-scope typedef in every generated loop). */
#define PW_P(ctx, k) _Generic((W)0, float: (ctx)->pf[k], double: (ctx)->pd[k], default: (W)(ctx)->pi[k])

/* Declares p0..p2 in every loop; (void) keeps -Wunused quiet in loops that take no parameters. */
#define PW_PARAMS(ctx)                                                              \
    const W p0 = PW_P(ctx, 0), p1 = PW_P(ctx, 1), p2 = PW_P(ctx, 2);                \
    (void)p0, (void)p1, (void)p2, (void)sizeof(U)

/* std::max / std::min exactly: a NaN in the first argument comes back, one in the second is dropped. PyTorch's
 * clamp and hard* activations are written with them, so NaN inputs propagate the same way here. */
#define PW_MAX_STD(a, b) ((a) < (b) ? (b) : (a))
#define PW_MIN_STD(a, b) ((b) < (a) ? (b) : (a))

/* Type-generic spellings for the op expressions, which are written once for float and double. */
#define PW_EXP(x) _Generic((x), float: pw_expf, double: pw_exp_f64)(x)
/* gelu's erf: float through pw_erf_f32 (pointwise_math.h), double through libm's (libmvec's where vectorized). */
#define PW_ERF_GELU(x) _Generic((x), float: pw_erf_f32, double: (erf))(x)
/* exp(-y^2 / 2): gelu_backward's Gaussian (pw_gauss_f32 for float). */
#define PW_GAUSS(y) _Generic((y), float: pw_gauss_f32, double: pw_gauss_f64)(y)
#define PW_RINT(x) _Generic((x), float: pw_rint_f32, double: pw_rint_f64)(x)
#define PW_FLOOR(x) _Generic((x), float: pw_floor_f32, double: pw_floor_f64)(x)
#define PW_CEIL(x) _Generic((x), float: pw_ceil_f32, double: pw_ceil_f64)(x)
#define PW_TRUNC(x) _Generic((x), float: pw_trunc_f32, double: pw_trunc_f64)(x)

/* libmvec's vector versions of a few float functions (pointwise_unary.c says which and why): a declaration marked
 * PW_SIMD lets GCC vectorize a loop that calls it, and such loops run their body on multiples of PW_SIMD_PAD elements
 * and the rest through a zero-padded block, so that the vector and scalar versions never both compute one tensor. */
#ifdef AXON_HAVE_LIBMVEC
#define PW_SIMD __attribute__((simd("notinbranch")))
#define PW_SIMD_PAD 64
#endif

#endif
