/* Indexing ops that may write one output element several times: scatter (plain and reducing), index_add,
 * index_copy and embedding backward.
 *
 * All four are one loop: for every position p of the index, out[p with coordinate dim replaced by index[p]] op=
 * src[p]. index_add and index_copy are that loop (summing, storing) with their 1-d index broadcast (0 strides) to
 * src's shape; embedding backward is index_add into a zeroed [V, D] weight gradient along dim 0, skipping
 * padding_idx.
 *
 * Why it is race-free and deterministic without atomics or sorting: positions that differ in any coordinate other
 * than dim write different output elements. So the work is split over "lines" (the positions of index with dim
 * removed): each line belongs to one thread, which applies its updates in index order. Neighbouring lines are
 * processed together, the dim loop outside and the lines inside, so that an embedding gradient reads and updates
 * whole rows contiguously. When the index is 1-d and the elements after dim are dense rows, index_add, index_copy
 * and embedding backward instead add or copy whole rows (scatter_rows), with the same order of updates per
 * element. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "dtype.h"
#include "index_impl.h"

static const char *const reduce_names[] = {"none", "sum", "prod", "amax", "amin", "mean"};
_Static_assert(sizeof reduce_names / sizeof reduce_names[0] == AXON_SCATTER_REDUCE_COUNT,
               "every axon_scatter_reduce_t needs a name");

const char *axon_scatter_reduce_name(axon_scatter_reduce_t r) {
    return (unsigned)r < AXON_SCATTER_REDUCE_COUNT ? reduce_names[r] : "invalid";
}

/* alpha in each compute type, converted once at launch. */
typedef struct ix_alpha {
    float f;
    double d;           /* also the real part for complex dtypes */
    int64_t i;
    double im;          /* the imaginary part of a complex alpha */
} ix_alpha_t;

/* d = d op s (times alpha for sums), for one element of one dtype. */
typedef void (*ix_combine_fn)(char *d, const char *s, const ix_alpha_t *al);

#define IX_ADD_float(a, b) ((a) + (b))
#define IX_ADD_double(a, b) ((a) + (b))
#define IX_ADD_int64_t(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define IX_MUL_float(a, b) ((a) * (b))
#define IX_MUL_double(a, b) ((a) * (b))
#define IX_MUL_int64_t(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
/* max/min with NaN winning on either side, as PyTorch's scatter_reduce does. */
#define IX_MAX(a, b) ((b) != (b) ? (b) : (a) < (b) ? (b) : (a))
#define IX_MIN(a, b) ((b) != (b) ? (b) : (a) > (b) ? (b) : (a))

#define IX_DEFINE(dn, T, W, AL)                                                                                   \
    static void ix_sum_##dn(char *d, const char *s, const ix_alpha_t *al) {                                      \
        T x, y;                                                                                                   \
        memcpy(&x, d, sizeof x), memcpy(&y, s, sizeof y);                                                         \
        W r = IX_ADD_##W((W)AXON_LOAD_##dn(x), IX_MUL_##W((W)AXON_LOAD_##dn(y), al->AL));                         \
        x = AXON_TO(dn, r);                                                                                       \
        memcpy(d, &x, sizeof x);                                                                                  \
    }                                                                                                             \
    static void ix_prod_##dn(char *d, const char *s, const ix_alpha_t *al) {                                     \
        (void)al;                                                                                                 \
        T x, y;                                                                                                   \
        memcpy(&x, d, sizeof x), memcpy(&y, s, sizeof y);                                                         \
        W r = IX_MUL_##W((W)AXON_LOAD_##dn(x), (W)AXON_LOAD_##dn(y));                                             \
        x = AXON_TO(dn, r);                                                                                       \
        memcpy(d, &x, sizeof x);                                                                                  \
    }                                                                                                             \
    static void ix_amax_##dn(char *d, const char *s, const ix_alpha_t *al) {                                     \
        (void)al;                                                                                                 \
        T x, y;                                                                                                   \
        memcpy(&x, d, sizeof x), memcpy(&y, s, sizeof y);                                                         \
        W a = (W)AXON_LOAD_##dn(x), b = (W)AXON_LOAD_##dn(y);                                                     \
        W r = IX_MAX(a, b);                                                                                       \
        x = AXON_TO(dn, r);                                                                                       \
        memcpy(d, &x, sizeof x);                                                                                  \
    }                                                                                                             \
    static void ix_amin_##dn(char *d, const char *s, const ix_alpha_t *al) {                                     \
        (void)al;                                                                                                 \
        T x, y;                                                                                                   \
        memcpy(&x, d, sizeof x), memcpy(&y, s, sizeof y);                                                         \
        W a = (W)AXON_LOAD_##dn(x), b = (W)AXON_LOAD_##dn(y);                                                     \
        W r = IX_MIN(a, b);                                                                                       \
        x = AXON_TO(dn, r);                                                                                       \
        memcpy(d, &x, sizeof x);                                                                                  \
    }

IX_DEFINE(f32, float, float, f)
IX_DEFINE(f64, double, double, d)
IX_DEFINE(f16, uint16_t, float, f)
IX_DEFINE(bf16, uint16_t, float, f)
IX_DEFINE(i8, int8_t, int64_t, i)
IX_DEFINE(u8, uint8_t, int64_t, i)
IX_DEFINE(i16, int16_t, int64_t, i)
IX_DEFINE(i32, int32_t, int64_t, i)
IX_DEFINE(i64, int64_t, int64_t, i)
IX_DEFINE(b8, uint8_t, int64_t, i)

/* Complex sums, d + s * alpha: with alpha 1 (scatter_add, and index_add's default) the parts add exactly, as
 * PyTorch's CPU loops do; otherwise the complex product first. */
#define IX_DEFINE_COMPLEX_SUM(dn, T, R)                                                                           \
    static void ix_sum_##dn(char *d, const char *s, const ix_alpha_t *al) {                                      \
        T x, y;                                                                                                   \
        memcpy(&x, d, sizeof x), memcpy(&y, s, sizeof y);                                                         \
        if (al->d == 1.0 && al->im == 0.0) {                                                                      \
            x.re += y.re, x.im += y.im;                                                                           \
        } else {                                                                                                  \
            const R ar = (R)al->d, ai = (R)al->im;                                                                \
            const R pr = y.re * ar - y.im * ai, pi = y.re * ai + y.im * ar;                                       \
            x.re += pr, x.im += pi;                                                                               \
        }                                                                                                         \
        memcpy(d, &x, sizeof x);                                                                                  \
    }

IX_DEFINE_COMPLEX_SUM(c64, axon_c64_t, float)
IX_DEFINE_COMPLEX_SUM(c128, axon_c128_t, double)

#define IX_ROW(op, c64, c128) {ix_##op##_f32, ix_##op##_f64, ix_##op##_f16, ix_##op##_bf16, ix_##op##_i8,      \
                               ix_##op##_u8, ix_##op##_i16, ix_##op##_i32, ix_##op##_i64, ix_##op##_b8, c64, c128}

/* Indexed by reduce - 1 and dtype; NULL (UNSUPPORTED at launch) for complex but SUM. */
static const ix_combine_fn ix_combine[AXON_SCATTER_REDUCE_COUNT - 1][AXON_DTYPE_COUNT] = {
    IX_ROW(sum, ix_sum_c64, ix_sum_c128), IX_ROW(prod, NULL, NULL), IX_ROW(amax, NULL, NULL),
    IX_ROW(amin, NULL, NULL), IX_ROW(sum, NULL, NULL)};   /* MEAN sums, then divides */

/* The SUM update along a row of n elements: ix_sum_<dtype>'s arithmetic, element by element in the same order, so
 * the row path and the element path give the same bits; as a plain loop it vectorizes where the dtype allows. */
typedef void (*ix_rowsum_fn)(char *d, const char *s, int64_t n, const ix_alpha_t *al);

#define IX_ROWSUM_DEFINE(dn, T, W, AL)                                                                            \
    AXON_CLONES static void ix_rowsum_##dn(char *d, const char *s, int64_t n, const ix_alpha_t *al) {           \
        const W alpha = al->AL;                                                                                   \
        for (int64_t c = 0; c < n; c++) {                                                                         \
            T x, y;                                                                                               \
            memcpy(&x, d + c * (int64_t)sizeof x, sizeof x), memcpy(&y, s + c * (int64_t)sizeof y, sizeof y);     \
            W r = IX_ADD_##W((W)AXON_LOAD_##dn(x), IX_MUL_##W((W)AXON_LOAD_##dn(y), alpha));                      \
            x = AXON_TO(dn, r);                                                                                   \
            memcpy(d + c * (int64_t)sizeof x, &x, sizeof x);                                                      \
        }                                                                                                         \
    }

IX_ROWSUM_DEFINE(f32, float, float, f)
IX_ROWSUM_DEFINE(f64, double, double, d)
IX_ROWSUM_DEFINE(f16, uint16_t, float, f)
IX_ROWSUM_DEFINE(bf16, uint16_t, float, f)
IX_ROWSUM_DEFINE(i8, int8_t, int64_t, i)
IX_ROWSUM_DEFINE(u8, uint8_t, int64_t, i)
IX_ROWSUM_DEFINE(i16, int16_t, int64_t, i)
IX_ROWSUM_DEFINE(i32, int32_t, int64_t, i)
IX_ROWSUM_DEFINE(i64, int64_t, int64_t, i)
IX_ROWSUM_DEFINE(b8, uint8_t, int64_t, i)

static const ix_rowsum_fn ix_rowsum[AXON_DTYPE_COUNT] = {
    ix_rowsum_f32, ix_rowsum_f64, ix_rowsum_f16, ix_rowsum_bf16, ix_rowsum_i8,
    ix_rowsum_u8,  ix_rowsum_i16, ix_rowsum_i32, ix_rowsum_i64,  ix_rowsum_b8, NULL, NULL};

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* ix_rowsum_f16 on the conversion instructions: eight halves widened in a register, x + y * alpha as a product and a
 * sum (no fused multiply-add, as the plain loop), rounded to nearest even: the same bits. The plain loop's float16
 * conversions in bit arithmetic took 1336 us for index_select's backward (index_add of 4096 rows of 512) on 2
 * threads, torch CPU's whole training step 1557. */
__attribute__((target("avx2,f16c"))) static void ix_rowsum_f16_f16c(char *d, const char *s, int64_t n,
                                                                    const ix_alpha_t *al) {
    const __m256 alpha = _mm256_set1_ps(al->f);
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(d + 2 * c)));
        const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + 2 * c)));
        const __m256 r = _mm256_add_ps(x, _mm256_mul_ps(y, alpha));
        const __m128i h = _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * c), h);
    }
    if (c < n) ix_rowsum_f16(d + 2 * c, s + 2 * c, n - c, al);
}
#endif

/* The row sum for dtype d on this CPU, or NULL. */
static ix_rowsum_fn ix_rowsum_for(axon_dtype_t d) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (d == AXON_FLOAT16 && axon_convert_f16_level() > 0 && __builtin_cpu_supports("avx2")) return ix_rowsum_f16_f16c;
#endif
    return ix_rowsum[d];
}

struct scatter_args {
    axon_tensor_t out;
    axon_tensor_t index;             /* the positions p: out's ndim, at most out's sizes apart from dim */
    axon_tensor_t src;               /* index's sizes or larger; unused when !has_src */
    axon_tensor_t check;             /* the index as the caller gave it, for the bounds check */
    int dim;
    int has_src;
    int zero_first;                  /* embedding backward: out = 0 before the updates */
    int has_skip;
    int wrap;                        /* AXON_INDEX_WRAP */
    int exclude_self;                /* scatter_reduce(include_self=False) */
    int64_t skip;                    /* index value whose updates are dropped (padding_idx) */
    axon_scatter_reduce_t reduce;
    ix_alpha_t alpha;
    const char *op;                  /* static string */
    union {
        unsigned char bytes[16];
        double align;
    } value;
};

struct scatter_job {
    const struct scatter_args *a;
    axon_iter_t lines;               /* out, index, src over index's shape without dim */
    int64_t len;                     /* index's size at dim */
    int64_t size;                    /* out's size at dim */
    int64_t os, is, ss;              /* strides at dim in bytes */
    ix_combine_fn fn;                /* NULL: plain store */
    int is64;
};

/* A float32 sum along one line whose int64 index and src are contiguous along dim (scatter_add along the last dim):
 * ix_sum_f32's arithmetic in a loop that keeps everything in registers. out may alias src (an in-place update of
 * self from itself), so no restrict on them. */
AXON_CLONES static void scatter_sum_line_f32(float *o, const int64_t *restrict ix, const float *s, int64_t n,
                                             int64_t os, int64_t size, float alpha, int64_t skip) {
    for (int64_t k = 0; k < n; k++) {
        const int64_t v = ix[k] + (ix[k] < 0 ? size : 0);
        if (v != skip) o[v * os] = o[v * os] + s[k] * alpha;
    }
}

/* The same for float16 and bfloat16 lines: ix_sum_f16's and ix_sum_bf16's arithmetic (in float, rounded once per
 * update) inline, where a call per element through ix_combine_fn took 1.5x torch CPU's time for a bfloat16 gather's
 * backward. */
static inline __attribute__((always_inline)) void scatter_sum_line_half(const int kind, uint16_t *o,
                                                                        const int64_t *restrict ix, const uint16_t *s,
                                                                        int64_t n, int64_t os, int64_t size,
                                                                        float alpha, int64_t skip) {
    for (int64_t k = 0; k < n; k++) {
        const int64_t v = ix[k] + (ix[k] < 0 ? size : 0);
        if (v != skip) axon_fk_store(kind, o, v * os, axon_fk_load(kind, o, v * os) + axon_fk_load(kind, s, k) * alpha);
    }
}

AXON_CLONES static void scatter_sum_line_bf16(uint16_t *o, const int64_t *restrict ix, const uint16_t *s, int64_t n,
                                              int64_t os, int64_t size, float alpha, int64_t skip) {
    scatter_sum_line_half(AXON_FK_BF16, o, ix, s, n, os, size, alpha, skip);
}

AXON_CLONES static void scatter_sum_line_f16(uint16_t *o, const int64_t *restrict ix, const uint16_t *s, int64_t n,
                                             int64_t os, int64_t size, float alpha, int64_t skip) {
    scatter_sum_line_half(AXON_FK_F16_SCALAR, o, ix, s, n, os, size, alpha, skip);
}

/* Float sums in the other order: updates k outer, the n lines of the run inner (a scatter_add along dim 0, whose
 * index rows are contiguous across the lines), ix_sum_f32's, ix_sum_f16's and ix_sum_bf16's arithmetic inline in a
 * clone per ISA: a call per element through ix_combine_fn, with float16's rounding in bit arithmetic, took 11 ns per
 * update (3.5x torch CPU's time), and float32 in the generic loop with its per-element branches 1.8x. */
static inline __attribute__((always_inline)) void scatter_sum_cross(const int kind, char *o, const char *x,
                                                                         const char *src, int64_t len, int64_t n,
                                                                         const int64_t *step, int is64, int64_t size,
                                                                         float alpha, int64_t skip) {
    const int64_t so = step[0], si = step[1], ss = step[2], os = step[3], is = step[4], ks = step[5];
    for (int64_t k = 0; k < len; k++)
        for (int64_t r = 0; r < n; r++) {
            int64_t v = ix_load(x + k * is + r * si, is64);
            v += v < 0 ? size : 0;
            if (v == skip) continue;
            char *d = o + r * so + v * os;
            axon_fk_store(kind, d, 0, axon_fk_load(kind, d, 0) + axon_fk_load(kind, src + k * ks + r * ss, 0) * alpha);
        }
}

typedef void (*scatter_cross_fn)(char *o, const char *x, const char *src, int64_t len, int64_t n, const int64_t *step,
                                 int is64, int64_t size, float alpha, int64_t skip);

AXON_CLONES static void scatter_sum_cross_f32(char *o, const char *x, const char *src, int64_t len, int64_t n,
                                              const int64_t *step, int is64, int64_t size, float alpha, int64_t skip) {
    scatter_sum_cross(AXON_FK_F32, o, x, src, len, n, step, is64, size, alpha, skip);
}

AXON_CLONES static void scatter_sum_cross_bf16(char *o, const char *x, const char *src, int64_t len, int64_t n,
                                               const int64_t *step, int is64, int64_t size, float alpha, int64_t skip) {
    scatter_sum_cross(AXON_FK_BF16, o, x, src, len, n, step, is64, size, alpha, skip);
}

AXON_CLONES static void scatter_sum_cross_f16(char *o, const char *x, const char *src, int64_t len, int64_t n,
                                              const int64_t *step, int is64, int64_t size, float alpha, int64_t skip) {
    scatter_sum_cross(AXON_FK_F16_SCALAR, o, x, src, len, n, step, is64, size, alpha, skip);
}

static void scatter_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const struct scatter_job *j = ctx;
    const struct scatter_args *a = j->a;
    const size_t es = j->lines.esize[0];
    const int64_t so = stride[0] * (int64_t)es, si = stride[1] * (int64_t)j->lines.esize[1];
    const int64_t ss = stride[2] * (int64_t)j->lines.esize[2];
    /* Lines never share an out element, and each line takes its updates in k order either way: walk whichever of
     * k and the lines is closer together in the index (along dim when dim is the fastest, as in a scatter over a
     * row's last dimension), so the reads and writes stay within a line instead of striding across all of them. */
    const int lines_outer = (j->is < 0 ? -j->is : j->is) < (si < 0 ? -si : si);
    const int64_t outer = lines_outer ? n : j->len, inner = lines_outer ? j->len : n;
    /* in locals: the stores through d could alias j's and a's fields, which would then be reloaded per element */
    const int64_t is = j->is, ks = j->ss, os = j->os, size = j->size, skip = a->has_skip ? a->skip : INT64_MIN;
    const int is64 = j->is64;
    const ix_combine_fn fn = j->fn;
    const ix_alpha_t alpha = a->alpha;
    /* (a broadcast index, si 0, as index_add's: every line reads the same, cache-resident index) */
    if ((lines_outer || si == 0) && fn == ix_sum_f32 && is64 && is == 8 && ks == 4 && os % 4 == 0) {
        for (int64_t r = 0; r < n; r++)
            scatter_sum_line_f32((float *)(ptr[0] + r * so), (const int64_t *)(ptr[1] + r * si),
                                 (const float *)(ptr[2] + r * ss), j->len, os / 4, size, alpha.f, skip);
        return;
    }
    if ((lines_outer || si == 0) && (fn == ix_sum_bf16 || fn == ix_sum_f16) && is64 && is == 8 && ks == 2 &&
        os % 2 == 0) {
        for (int64_t r = 0; r < n; r++)
            (fn == ix_sum_bf16 ? scatter_sum_line_bf16 : scatter_sum_line_f16)(
                (uint16_t *)(void *)(ptr[0] + r * so), (const int64_t *)(const void *)(ptr[1] + r * si),
                (const uint16_t *)(const void *)(ptr[2] + r * ss), j->len, os / 2, size, alpha.f, skip);
        return;
    }
    if (!lines_outer && (fn == ix_sum_f32 || fn == ix_sum_bf16 || fn == ix_sum_f16)) {
        const int64_t step[6] = {so, si, ss, os, is, ks};
        const scatter_cross_fn cross = fn == ix_sum_f32    ? scatter_sum_cross_f32
                                       : fn == ix_sum_bf16 ? scatter_sum_cross_bf16
                                                           : scatter_sum_cross_f16;
        cross(ptr[0], ptr[1], ptr[2], j->len, n, step, is64, size, alpha.f, skip);
        return;
    }
    for (int64_t q = 0; q < outer; q++)
        for (int64_t e = 0; e < inner; e++) {
            const int64_t k = lines_outer ? e : q, r = lines_outer ? q : e;
            int64_t v = ix_load(ptr[1] + k * is + r * si, is64);
            v += v < 0 ? size : 0;
            if (v == skip) continue;
            char *d = ptr[0] + r * so + v * os;
            const char *sp = ptr[2] + k * ks + r * ss;
            if (fn == ix_sum_f32) /* ix_sum_f32's arithmetic, without a call per element */
                *(float *)d = *(float *)d + *(const float *)sp * alpha.f;
            else if (fn == ix_sum_i64) /* the same for int64 (and the counts of a mean), wrapping */
                *(int64_t *)d = IX_ADD_int64_t(*(int64_t *)d, IX_MUL_int64_t(*(const int64_t *)sp, alpha.i));
            else if (fn == ix_amax_f32)
                *(float *)d = IX_MAX(*(float *)d, *(const float *)sp);
            else if (fn == ix_amin_f32)
                *(float *)d = IX_MIN(*(float *)d, *(const float *)sp);
            else if (fn)
                fn(d, sp, &alpha);
            else
                ix_move(d, sp, es);
        }
}

static void scatter_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct scatter_job *j = ctx;
    axon_iter_runs(&j->lines, begin, end, scatter_run, j);
}

/* t restricted to `shape`'s sizes, without dimension dim. */
static axon_tensor_t scatter_line_desc(const axon_tensor_t *t, const axon_tensor_t *shape, int dim) {
    axon_tensor_t r = *t;
    r.ndim = 0;
    for (int d = 0; d < shape->ndim; d++) {
        if (d == dim) continue;
        r.sizes[r.ndim] = shape->sizes[d];
        r.strides[r.ndim] = t->strides[d];
        r.ndim++;
    }
    return r;
}

/* index_add, index_copy and embedding backward whose elements after dim form dense rows in out and src: whole rows
 * added with a vector loop (or copied with one memcpy) instead of one indirect call per element. The units of work
 * are the rows of out, (position before dim, slot along dim) in row-major order; each participant owns a range of
 * them, reads the whole index once per position before dim in its range and applies, in index order, the updates
 * that land in its rows: as deterministic as the element path, and with the same bits. A zeroed out (embedding
 * backward) is zeroed by the owner of each row, just before its updates, while the row is about to be in cache. */
struct scatter_rows_job {
    const struct scatter_args *a;
    ix_rowsum_fn add;                /* NULL: copy (index_copy) */
    int64_t outer;                   /* positions before dim */
    int64_t inner, es;               /* row length in elements, element size */
    int64_t os, ss;                  /* out's and src's strides at dim, in bytes */
    const char *x;                   /* the 1-d index as given */
    int64_t xs, len;                 /* its stride in bytes, its numel */
    int is64;
};

static void scatter_rows_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct scatter_rows_job *j = ctx;
    const struct scatter_args *a = j->a;
    const int dim = a->dim;
    const int64_t size = a->out.sizes[dim];
    const size_t row = (size_t)(j->inner * j->es);
    for (int64_t o = begin / size; o * size < end; o++) {
        /* This participant's slots of position o: [lo, hi). */
        const int64_t lo = o * size < begin ? begin - o * size : 0;
        const int64_t hi = end - o * size < size ? end - o * size : size;
        char *ob = (char *)a->out.data + ix_outer_offset(&a->out, &a->index, dim, o) * j->es;
        const char *sb = (const char *)a->src.data + ix_outer_offset(&a->src, &a->index, dim, o) * j->es;
        if (a->zero_first)
            for (int64_t v = lo; v < hi; v++) memset(ob + v * j->os, 0, row);
        for (int64_t k = 0; k < j->len; k++) {
            int64_t v = ix_load(j->x + k * j->xs, j->is64);
            v += v < 0 ? size : 0;
            if (v < lo || v >= hi || (a->has_skip && v == a->skip)) continue;
            if (j->add)
                j->add(ob + v * j->os, sb + k * j->ss, j->inner, &a->alpha);
            else
                memcpy(ob + v * j->os, sb + k * j->ss, row);
        }
    }
}

/* Runs the row path and returns 1 when a allows it (a summing or storing update through a 1-d index broadcast over
 * dense rows), else returns 0 having done nothing. */
static int scatter_rows(const struct scatter_args *a, axon_pool_t pool) {
    const int dim = a->dim;
    const axon_tensor_t *x = &a->check;
    int64_t inner_out, inner_src, outer = 1;
    const int64_t es = (int64_t)axon_dtype_size(a->out.dtype);
    const int copy = a->reduce == AXON_SCATTER_NONE;
    if ((!copy && (a->reduce != AXON_SCATTER_SUM || !ix_rowsum_for(a->out.dtype))) || !a->has_src || x->ndim > 1 ||
        axon_tensor_numel(x) != a->index.sizes[dim])
        return 0;
    for (int d = 0; d < a->out.ndim; d++) {
        /* The index must be the broadcast one, and cover out and src entirely apart from dim. */
        if (d == dim) continue;
        if ((a->index.strides[d] != 0 && a->index.sizes[d] != 1) || a->index.sizes[d] != a->out.sizes[d] ||
            a->index.sizes[d] != a->src.sizes[d])
            return 0;
        if (d < dim) outer *= a->index.sizes[d];
    }
    if (!ix_inner_rows(&a->out, dim, &inner_out) || !ix_inner_rows(&a->src, dim, &inner_src) ||
        inner_out != inner_src || inner_out * es < IX_ROW_MIN_BYTES)
        return 0;
    struct scatter_rows_job j = {a,
                                 copy ? NULL : ix_rowsum_for(a->out.dtype),
                                 outer,
                                 inner_out,
                                 es,
                                 a->out.strides[dim] * es,
                                 a->src.strides[dim] * es,
                                 x->data,
                                 x->ndim ? x->strides[0] * (int64_t)axon_dtype_size(x->dtype) : 0,
                                 axon_tensor_numel(x),
                                 x->dtype == AXON_INT64};
    /* Every chunk reads the whole index for each position before dim that it touches: keep chunks few (the pool
     * makes a handful per participant) unless the work is too small to share. */
    const int64_t rows = outer * a->out.sizes[dim];
    const double work = (double)outer * (double)(j.len + (a->zero_first ? a->out.sizes[dim] : 0)) * (double)inner_out;
    axon_parallel_for(pool, 0, rows, work < (double)AXON_KERNEL_GRAIN ? rows : 1, scatter_rows_range, &j);
    return 1;
}

/* Every update of a, applied (the index already checked). */
static void scatter_apply(const struct scatter_args *a, axon_pool_t pool) {
    const int dim = a->dim;
    if (scatter_rows(a, pool)) return;
    if (a->zero_first) {
        static const double zeros[2] = {0.0, 0.0};
        axon_tensor_t z = a->out;
        z.data = (void *)zeros;
        for (int d = 0; d < z.ndim; d++) z.strides[d] = 0;
        axon_copy_execute(&a->out, &z, pool);
    }
    axon_tensor_t src = a->src;
    if (!a->has_src) {
        src = a->index;
        src.dtype = a->out.dtype;
        src.data = (void *)a->value.bytes;
        for (int d = 0; d < src.ndim; d++) src.strides[d] = 0;
    }
    struct scatter_job j;
    j.a = a;
    const axon_tensor_t o = scatter_line_desc(&a->out, &a->index, dim);
    const axon_tensor_t i = scatter_line_desc(&a->index, &a->index, dim);
    const axon_tensor_t s = scatter_line_desc(&src, &a->index, dim);
    const axon_tensor_t *ts[3] = {&o, &i, &s};
    axon_iter_init(&j.lines, 3, ts, 1);
    const int64_t es = (int64_t)axon_dtype_size(a->out.dtype);
    j.len = a->index.sizes[dim];
    j.size = a->out.sizes[dim];
    j.os = a->out.strides[dim] * es;
    j.is = a->index.strides[dim] * (int64_t)axon_dtype_size(a->index.dtype);
    j.ss = src.strides[dim] * es;
    j.fn = a->reduce == AXON_SCATTER_NONE ? NULL : ix_combine[a->reduce - 1][a->out.dtype];
    j.is64 = a->index.dtype == AXON_INT64;
    /* A chunk of lines does len updates per line; keep chunks near the usual grain, and at least a cache line's
     * worth of lines so that neighbouring threads do not share one. */
    int64_t grain = AXON_KERNEL_GRAIN / (j.len > 0 ? j.len : 1);
    axon_parallel_for(pool, 0, j.lines.numel, grain < 16 ? 16 : grain, scatter_range, &j);
}

/* The identity of reduce in dtype d (SUM and MEAN 0, PROD 1, AMAX the lowest value, AMIN the highest), as bytes. */
static void scatter_identity(axon_scatter_reduce_t reduce, axon_dtype_t d, unsigned char *bytes) {
    memset(bytes, 0, 16);
    const int hi = reduce == AXON_SCATTER_AMIN;
    if (reduce == AXON_SCATTER_PROD) {
        const int64_t one = 1;
        axon_convert_get(AXON_INT64, d)((char *)bytes, 1, (const char *)&one, 1, 1);
    } else if (reduce == AXON_SCATTER_AMAX || reduce == AXON_SCATTER_AMIN) {
        if (axon_dtype_is_floating(d)) {
            const double inf = hi ? INFINITY : -INFINITY;
            axon_convert_get(AXON_FLOAT64, d)((char *)bytes, 1, (const char *)&inf, 1, 1);
        } else {
            int64_t v;
            switch (d) {
            case AXON_INT8: v = hi ? INT8_MAX : INT8_MIN; break;
            case AXON_UINT8: v = hi ? UINT8_MAX : 0; break;
            case AXON_INT16: v = hi ? INT16_MAX : INT16_MIN; break;
            case AXON_INT32: v = hi ? INT32_MAX : INT32_MIN; break;
            case AXON_INT64: v = hi ? INT64_MAX : INT64_MIN; break;
            default: v = hi; break;   /* bool */
            }
            axon_convert_get(AXON_INT64, d)((char *)bytes, 1, (const char *)&v, 1, 1);
        }
    }
}

/* MEAN's division: out / count (count + 1 with out's own value included; 1 where nothing arrived), true division
 * for floats (in float64, rounded once: a quotient of two floats rounds the same as in float) and floor division
 * for integers, as PyTorch's div_(rounding_mode="floor"). */
struct scatter_mean {
    axon_dtype_t dtype;
    int64_t self;
    const axon_iter_t *it;       /* over out and the counts */
};

#define SCATTER_MEAN_BATCH 256
static void scatter_mean_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const struct scatter_mean *m = ctx;
    const int floating = axon_dtype_is_floating(m->dtype);
    const size_t es = axon_dtype_size(m->dtype);
    for (int64_t b = 0; b < n; b += SCATTER_MEAN_BATCH) {
        const int64_t k = n - b < SCATTER_MEAN_BATCH ? n - b : SCATTER_MEAN_BATCH;
        char *o = ptr[0] + b * stride[0] * (int64_t)es;
        const int64_t *count = (const int64_t *)ptr[1] + b * stride[1];
        union {
            double f[SCATTER_MEAN_BATCH];
            int64_t i[SCATTER_MEAN_BATCH];
        } v;
        axon_convert_get(m->dtype, floating ? AXON_FLOAT64 : AXON_INT64)((char *)v.f, 1, o, stride[0], k);
        for (int64_t e = 0; e < k; e++) {
            int64_t c = count[e * stride[1]] + m->self;
            c = c == 0 ? 1 : c;
            if (floating) {
                v.f[e] /= (double)c;
            } else {
                const int64_t q = v.i[e] / c, r = v.i[e] % c;
                v.i[e] = r != 0 && (r < 0) != (c < 0) ? q - 1 : q;
            }
        }
        axon_convert_get(floating ? AXON_FLOAT64 : AXON_INT64, m->dtype)(o, stride[0], (const char *)v.f, 1, k);
    }
}

/* Elements [begin, end) of out divided by their counts: the pool splits the division, which is one pass over out. */
static void scatter_mean_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct scatter_mean *m = ctx;
    axon_iter_runs(m->it, begin, end, scatter_mean_run, (void *)m);
}

/* MEAN: the sums are in out; count the updates of each element into a dense int64 copy of out's shape, divide. */
static axon_status_t scatter_mean_divide(const struct scatter_args *a, axon_pool_t pool) {
    const int64_t numel = axon_tensor_numel(&a->out);
    int64_t *counts = calloc((size_t)(numel > 0 ? numel : 1), sizeof *counts);
    if (counts == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %" PRId64 " counters for mean", a->op, numel);
    struct scatter_args c = *a;
    c.out.data = counts;
    c.out.dtype = AXON_INT64;
    int64_t step = 1;
    for (int d = c.out.ndim - 1; d >= 0; d--) c.out.strides[d] = step, step *= c.out.sizes[d];
    c.reduce = AXON_SCATTER_SUM;
    c.has_src = 0;
    const int64_t one = 1;
    memcpy(c.value.bytes, &one, sizeof one);
    c.alpha.i = 1;
    scatter_apply(&c, pool);
    struct scatter_mean m = {a->out.dtype, a->exclude_self ? 0 : 1, NULL};
    axon_iter_t it;
    const axon_tensor_t *ts[2] = {&a->out, &c.out};
    axon_iter_init(&it, 2, ts, 1);
    m.it = &it;
    int64_t grain = AXON_KERNEL_GRAIN / 4;
    axon_parallel_for(pool, 0, it.numel, grain, scatter_mean_range, &m);
    free(counts);
    return AXON_OK;
}

static axon_status_t scatter_kernel(const void *args, const axon_exec_t *ex) {
    const struct scatter_args *a = args;
    const int dim = a->dim;
    axon_status_t st = axon_ix_check_bounds(&a->check, a->out.sizes[dim], a->wrap, dim, a->op, ex->pool);
    if (st != AXON_OK) return st;
    if (a->exclude_self) {
        /* the elements that receive updates start from the identity: a storing pass of it */
        struct scatter_args first = *a;
        first.reduce = AXON_SCATTER_NONE;
        first.has_src = 0;
        scatter_identity(a->reduce, a->out.dtype, first.value.bytes);
        scatter_apply(&first, ex->pool);
    }
    scatter_apply(a, ex->pool);
    return a->reduce == AXON_SCATTER_MEAN ? scatter_mean_divide(a, ex->pool) : AXON_OK;
}

/* Launch checks shared by the three ops; a->index, a->src, a->dim and a->reduce are set. */
static axon_status_t scatter_launch(axon_stream_t s, struct scatter_args *a) {
    char sa[160], sb[160];
    const axon_tensor_t *out = &a->out, *index = &a->index;
    if (out->ndim < 1 || index->ndim != out->ndim)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): index %s and out %s must have the same number (>= 1) of "
                         "dimensions", a->op, axon_shape_format(index, sa, sizeof sa),
                         axon_shape_format(out, sb, sizeof sb));
    for (int d = 0; d < out->ndim; d++) {
        if (d != a->dim && index->sizes[d] > out->sizes[d])
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): Expected index %s to be smaller than self %s apart from "
                             "dimension %d", a->op, axon_shape_format(index, sa, sizeof sa),
                             axon_shape_format(out, sb, sizeof sb), a->dim);
        if (a->has_src && (a->src.ndim != out->ndim || a->src.sizes[d] < index->sizes[d]))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): Expected index %s to be smaller than src %s", a->op,
                             axon_shape_format(index, sa, sizeof sa), axon_shape_format(&a->src, sb, sizeof sb));
    }
    if (a->has_src && a->src.dtype != out->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): Expected self.dtype to be equal to src.dtype (%s vs %s)", a->op,
                         axon_dtype_name(out->dtype), axon_dtype_name(a->src.dtype));
    if ((unsigned)a->reduce >= AXON_SCATTER_REDUCE_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: reduce %d is out of range", a->op, (int)a->reduce);
    if ((a->reduce != AXON_SCATTER_NONE && !ix_combine[a->reduce - 1][out->dtype]) ||
        (a->reduce == AXON_SCATTER_MEAN && out->dtype == AXON_BOOL))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: reduce %s is not supported for %s", a->op,
                         reduce_names[a->reduce], axon_dtype_name(out->dtype));
    int64_t n = axon_tensor_numel(index);
    if (n == 0 && !a->zero_first) return AXON_OK;   /* no updates: nothing changes, for every reduction */
    axon_launch_t l = {scatter_kernel, a, sizeof *a, a->op, (uint64_t)n * 3 * axon_dtype_size(out->dtype)};
    return axon_stream_launch(s, &l);
}

/* Common argument checks; fills a's out, src and op. */
static axon_status_t scatter_begin(struct scatter_args *a, const char *op, const axon_tensor_t *out,
                                   const axon_tensor_t *index, const axon_tensor_t *src, int *dim) {
    axon_status_t st;
    memset(a, 0, sizeof *a);
    a->op = op;
    if ((st = axon_ix_check_operand(out, op, "out", -1, 1)) != AXON_OK) return st;
    if ((st = axon_ix_check_index(index, op)) != AXON_OK) return st;
    if (src) {
        if ((st = axon_ix_check_operand(src, op, "src", -1, 0)) != AXON_OK) return st;
        a->src = *src;
        a->has_src = 1;
    }
    if ((st = axon_ix_wrap_dim(op, out->ndim, dim)) != AXON_OK) return st;
    a->out = *out;
    a->check = *index;
    a->dim = *dim;
    return AXON_OK;
}

static ix_alpha_t scatter_alpha(axon_scalar_t v) {
    ix_alpha_t al;
    double f = v.dtype == AXON_FLOAT64 || v.dtype == AXON_COMPLEX128 ? v.f : (double)v.i;
    al.d = f;
    al.f = (float)f;
    al.i = v.dtype == AXON_FLOAT64 || v.dtype == AXON_COMPLEX128 ? axon_f64_to_i64(f) : v.i;
    al.im = v.dtype == AXON_COMPLEX128 ? v.imag : 0.0;
    return al;
}

axon_status_t axon_kernel_scatter(axon_stream_t s, axon_scatter_reduce_t reduce, const axon_tensor_t *out, int dim,
                                  const axon_tensor_t *index, const axon_tensor_t *src, axon_scalar_t value,
                                  unsigned flags) {
    struct scatter_args a;
    axon_status_t st = scatter_begin(&a, "scatter", out, index, src, &dim);
    if (st != AXON_OK) return st;
    a.index = *index;
    a.reduce = reduce;
    a.wrap = flags & AXON_INDEX_WRAP;
    a.alpha = scatter_alpha(axon_scalar_int(1));
    if (!src && (st = axon_ix_scalar_bytes(value, out->dtype, a.value.bytes, "scatter")) != AXON_OK) return st;
    return scatter_launch(s, &a);
}

axon_status_t axon_kernel_scatter_reduce(axon_stream_t s, axon_scatter_reduce_t reduce, const axon_tensor_t *out,
                                         int dim, const axon_tensor_t *index, const axon_tensor_t *src,
                                         int include_self, unsigned flags) {
    struct scatter_args a;
    if (src == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "scatter_reduce: src is NULL");
    axon_status_t st = scatter_begin(&a, "scatter_reduce", out, index, src, &dim);
    if (st != AXON_OK) return st;
    if (reduce == AXON_SCATTER_NONE)
        return axon_fail(AXON_ERROR_INVALID_ARG, "scatter_reduce: reduce must be sum, prod, amax, amin or mean");
    a.index = *index;
    a.reduce = reduce;
    a.wrap = flags & AXON_INDEX_WRAP;
    a.exclude_self = !include_self;
    a.alpha = scatter_alpha(axon_scalar_int(1));
    return scatter_launch(s, &a);
}

/* index (0-d or 1-d) broadcast to `shape` along dim. */
static axon_tensor_t scatter_broadcast_index(const axon_tensor_t *index, const axon_tensor_t *shape, int dim) {
    axon_tensor_t r = *shape;
    r.data = index->data;
    r.dtype = index->dtype;
    for (int d = 0; d < r.ndim; d++) r.strides[d] = d == dim && index->ndim ? index->strides[0] : 0;
    return r;
}

/* Checks and arguments shared by index_add and index_copy (op names them): src along dim through a 0-d or 1-d
 * index. */
static axon_status_t index_along_begin(struct scatter_args *a, const char *op, const axon_tensor_t *out, int dim,
                                       const axon_tensor_t *index, const axon_tensor_t *src, unsigned flags) {
    char sa[160], sb[160];
    if (!src) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: src is NULL", op);
    axon_status_t st = scatter_begin(a, op, out, index, src, &dim);
    if (st != AXON_OK) return st;
    int ok = index->ndim <= 1 && src->ndim == out->ndim && out->ndim >= 1 &&
             axon_tensor_numel(index) == src->sizes[dim];
    for (int d = 0; ok && d < out->ndim; d++) ok = d == dim || src->sizes[d] == out->sizes[d];
    if (!ok)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): src %s must match out %s apart from dim %d, where "
                         "it has index's %" PRId64 " elements (index must be 0-d or 1-d)", op,
                         axon_shape_format(src, sa, sizeof sa), axon_shape_format(out, sb, sizeof sb), dim,
                         axon_tensor_numel(index));
    a->index = scatter_broadcast_index(index, src, dim);
    a->wrap = flags & AXON_INDEX_WRAP;
    return AXON_OK;
}

axon_status_t axon_kernel_index_add(axon_stream_t s, const axon_tensor_t *out, int dim, const axon_tensor_t *index,
                                    const axon_tensor_t *src, axon_scalar_t alpha, unsigned flags) {
    struct scatter_args a;
    axon_status_t st = index_along_begin(&a, "index_add", out, dim, index, src, flags);
    if (st != AXON_OK) return st;
    a.reduce = AXON_SCATTER_SUM;
    a.alpha = scatter_alpha(alpha);
    return scatter_launch(s, &a);
}

axon_status_t axon_kernel_index_reduce(axon_stream_t s, axon_scatter_reduce_t reduce, const axon_tensor_t *out,
                                       int dim, const axon_tensor_t *index, const axon_tensor_t *src, int include_self,
                                       unsigned flags) {
    struct scatter_args a;
    axon_status_t st = index_along_begin(&a, "index_reduce", out, dim, index, src, flags);
    if (st != AXON_OK) return st;
    if (reduce == AXON_SCATTER_NONE)
        return axon_fail(AXON_ERROR_INVALID_ARG, "index_reduce: reduce must be sum, prod, amax, amin or mean");
    a.reduce = reduce;
    a.exclude_self = !include_self;
    a.alpha = scatter_alpha(axon_scalar_int(1));
    return scatter_launch(s, &a);
}

axon_status_t axon_kernel_index_copy(axon_stream_t s, const axon_tensor_t *out, int dim, const axon_tensor_t *index,
                                     const axon_tensor_t *src, unsigned flags) {
    struct scatter_args a;
    axon_status_t st = index_along_begin(&a, "index_copy", out, dim, index, src, flags);
    if (st != AXON_OK) return st;
    a.reduce = AXON_SCATTER_NONE;
    a.alpha = scatter_alpha(axon_scalar_int(1));
    return scatter_launch(s, &a);
}

axon_status_t axon_kernel_embedding_backward(axon_stream_t s, const axon_tensor_t *grad_weight,
                                             const axon_tensor_t *grad, const axon_tensor_t *indices,
                                             int64_t padding_idx) {
    char sa[160], sb[160], sc[160];
    if (!grad) return axon_fail(AXON_ERROR_INVALID_ARG, "embedding_backward: grad is NULL");
    struct scatter_args a;
    int dim = 0;
    axon_status_t st = scatter_begin(&a, "embedding_backward", grad_weight, indices, grad, &dim);
    if (st != AXON_OK) return st;
    if (grad_weight->ndim != 2 || grad->ndim != 2 || indices->ndim != 1 || grad->sizes[1] != grad_weight->sizes[1] ||
        grad->sizes[0] != indices->sizes[0])
        return axon_fail(AXON_ERROR_INVALID_ARG, "embedding_backward: grad_weight %s, grad %s and indices %s must be "
                         "[V, D], [N, D] and [N]", axon_shape_format(grad_weight, sa, sizeof sa),
                         axon_shape_format(grad, sb, sizeof sb), axon_shape_format(indices, sc, sizeof sc));
    a.index = scatter_broadcast_index(indices, grad, 0);
    a.reduce = AXON_SCATTER_SUM;
    a.alpha = scatter_alpha(axon_scalar_int(1));
    a.zero_first = 1;
    a.has_skip = padding_idx >= 0;
    a.skip = padding_idx;
    if (axon_tensor_numel(grad_weight) == 0) return AXON_OK;
    return scatter_launch(s, &a);
}
