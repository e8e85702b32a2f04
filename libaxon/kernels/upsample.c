/* Nearest, nearest-exact, linear and cubic upsampling over 1 to 3 spatial dims, forward and backward
 * (axon/upsample.h).
 *
 * Every mode is separable: each output coordinate along a dimension reads 1 (nearest), 2 (linear) or 4 (cubic)
 * input coordinates with weights, and an output element is the weighted sum over the product of its dimensions'
 * taps. So one loop serves all modes and ranks; only the taps differ. Taps are recomputed per output coordinate
 * (a few flops) rather than tabulated, because kernels never allocate. The index arithmetic is done in float32
 * unless a tensor is float64, as PyTorch's opmath type does it: the chosen source elements then match PyTorch's at
 * every size, not just where float32 and float64 happen to round alike. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/stream.h"
#include "axon/upsample.h"
#include "internal.h"
#include "kernels_impl.h"
#include "spatial_impl.h"

static const char *const up_mode_names[] = {"upsample_nearest", "upsample_nearest_exact", "upsample_linear",
                                            "upsample_cubic"};
static_assert(sizeof up_mode_names / sizeof up_mode_names[0] == AXON_UPSAMPLE_MODE_COUNT,
              "every upsample mode needs a name");
static const char *const up_backward_names[] = {"upsample_nearest_backward", "upsample_nearest_exact_backward",
                                                "upsample_linear_backward", "upsample_cubic_backward"};
static_assert(sizeof up_backward_names / sizeof up_backward_names[0] == AXON_UPSAMPLE_MODE_COUNT,
              "every upsample mode needs a backward name");

typedef struct up_args {
    axon_spatial_t g;
    axon_upsample_mode_t mode;
    int align_corners, f64, first;   /* first: the first real spatial dim (0..2) of the 3-dim view */
    double scales[3];                /* D, H, W */
    char *dst;                       /* forward: out; backward: grad_in */
    const char *src;                 /* forward: in; backward: grad_out */
    axon_dtype_t dt_dst, dt_src;
    /* float16 or bfloat16 with src and dst of that one dtype: its conversions to float32 and back, else NULL */
    axon_convert_fn half_to_float, float_to_half;
} up_args_t;

typedef struct up_taps {
    int n;
    int64_t idx[4];
    double w[4];
} up_taps_t;

static int64_t up_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t up_clamp(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* min(floor(x), I - 1) as PyTorch's (int64_t)floorf(x), with a huge or NaN x (a tiny scale factor) sent to I - 1
 * instead of an undefined conversion. */
static int64_t up_floor_index(float x, int64_t I) {
    if (!(x < 0x1p62f)) return I - 1;
    return up_min((int64_t)floorf(x), I - 1);
}

/* Keys' cubic convolution weights for fraction t (A = -0.75, PyTorch's), in type T. */
#define UP_CUBIC(T, t, w)                                                                   \
    do {                                                                                    \
        const T A_ = (T)-0.75, x1_ = (t) + (T)1, x2_ = (T)1 - (t), x3_ = x2_ + (T)1;        \
        (w)[0] = ((A_ * x1_ - (T)5 * A_) * x1_ + (T)8 * A_) * x1_ - (T)4 * A_;              \
        (w)[1] = (((A_ + (T)2) * (t) - (A_ + (T)3)) * (t)) * (t) + (T)1;                    \
        (w)[2] = (((A_ + (T)2) * x2_ - (A_ + (T)3)) * x2_) * x2_ + (T)1;                    \
        (w)[3] = ((A_ * x3_ - (T)5 * A_) * x3_ + (T)8 * A_) * x3_ - (T)4 * A_;              \
    } while (0)

/* Linear and cubic taps of output o (in size I, out size O, scale factor f or 0), with index arithmetic in T. */
#define UP_INTERP_TAPS(NAME, T)                                                                             \
    static up_taps_t NAME(int cubic, int align, double f, int64_t o, int64_t I, int64_t O) {                 \
        up_taps_t r;                                                                                        \
        memset(&r, 0, sizeof r);                                                                            \
        if (!cubic && O == I) {                                                                             \
            r.n = 1, r.idx[0] = o, r.w[0] = 1.0;                                                            \
            return r;                                                                                       \
        }                                                                                                   \
        T ratio;                                                                                            \
        if (align) ratio = O > 1 ? (T)(I - 1) / (T)(O - 1) : (T)0;                                          \
        else ratio = f > 0 ? (T)(1.0 / f) : (T)I / (T)O;                                                    \
        T x = align ? ratio * (T)o : ratio * ((T)o + (T)0.5) - (T)0.5;                                      \
        if (!cubic && x < (T)0) x = (T)0;                                                                   \
        const int64_t i0 = up_floor_index((float)x, I);                                       \
        T t = x - (T)i0;                                                                                    \
        t = t < (T)0 ? (T)0 : t > (T)1 ? (T)1 : t;                                                          \
        if (!cubic) {                                                                                       \
            r.n = 2, r.idx[0] = i0, r.idx[1] = i0 + (i0 < I - 1 ? 1 : 0);                                   \
            r.w[0] = (double)((T)1 - t), r.w[1] = (double)t;                                                \
            return r;                                                                                       \
        }                                                                                                   \
        T w[4];                                                                                             \
        UP_CUBIC(T, t, w);                                                                                  \
        r.n = 4;                                                                                            \
        for (int j = 0; j < 4; j++) r.idx[j] = up_clamp(i0 - 1 + j, I - 1), r.w[j] = (double)w[j];          \
        return r;                                                                                           \
    }

UP_INTERP_TAPS(up_interp_f32, float)
UP_INTERP_TAPS(up_interp_f64, double)

/* The taps along dim k (0 = D, 1 = H, 2 = W) of output coordinate o. */
static up_taps_t up_taps(const up_args_t *a, int k, int64_t o) {
    const int64_t I = a->g.in[k], O = a->g.out[k];
    up_taps_t r;
    memset(&r, 0, sizeof r);
    r.n = 1, r.w[0] = 1.0;
    if (k < a->first) return r;        /* a dimension the op does not have: size 1 both sides */
    const double f = a->scales[k];
    switch (a->mode) {
    case AXON_UPSAMPLE_NEAREST:
    case AXON_UPSAMPLE_NEAREST_EXACT: {
        /* PyTorch keeps float32 scales here whatever the dtype. */
        const float ratio = f > 0 ? (float)(1.0 / f) : (float)I / (float)O;
        if (a->mode == AXON_UPSAMPLE_NEAREST_EXACT)
            r.idx[0] = up_floor_index((float)(((double)o + 0.5) * (double)ratio), I);
        else if (O == I) r.idx[0] = o;
        else if (O == 2 * I) r.idx[0] = o >> 1;
        else r.idx[0] = up_floor_index((float)o * ratio, I);
        return r;
    }
    case AXON_UPSAMPLE_LINEAR:
    case AXON_UPSAMPLE_CUBIC:
    default: {
        const int cubic = a->mode == AXON_UPSAMPLE_CUBIC;
        r = a->f64 ? up_interp_f64(cubic, a->align_corners, f, o, I, O)
                   : up_interp_f32(cubic, a->align_corners, f, o, I, O);
        for (int j = 0; j < r.n; j++) r.idx[j] = up_clamp(r.idx[j], I - 1); /* a negative x (cubic) floors below 0 */
        return r;
    }
    }
}

/* Taps of a run of up to UP_CHUNK output columns (the W dimension), computed once and used for every row of a
 * range: W taps depend only on the column, and recomputing them per element cost more than the sums. */
#define UP_CHUNK 256
#define UP_SPAN 1024 /* source columns a half bilinear chunk widens at once (up_bilinear_row) */

typedef struct up_cols {
    int n;                           /* taps per column: the same for every column of one call */
    int64_t idx[UP_CHUNK][4];
    double w[UP_CHUNK][4];
    /* two-tap columns again, one array per tap, as float32 weights and int32 indices (when the row is short
     * enough): what up_bilinear_row's loop reads */
    int32_t idx0[UP_CHUNK], idx1[UP_CHUNK];
    float w0[UP_CHUNK], w1[UP_CHUNK];
} up_cols_t;

static void up_cols_fill(const up_args_t *a, int64_t ow0, int64_t m, up_cols_t *c) {
    for (int64_t j = 0; j < m; j++) {
        const up_taps_t t = up_taps(a, 2, ow0 + j);
        c->n = t.n;
        for (int z = 0; z < 4; z++) c->idx[j][z] = t.idx[z], c->w[j][z] = t.w[z];
        c->idx0[j] = (int32_t)t.idx[0], c->idx1[j] = (int32_t)t.idx[1];
        c->w0[j] = (float)t.w[0], c->w1[j] = (float)t.w[1];
    }
}

/* One output row's chunk of m columns: the weighted sums over the row's D and H taps and each column's W taps.
 * Written once per load/store pair so that the float32 case, the common one, has no dtype switch per element. */
#define UP_FORWARD_ROW(LOAD, STORE)                                                                  \
    for (int64_t j = 0; j < m; j++) {                                                                \
        double sum = 0.0;                                                                            \
        for (int x = 0; x < td.n; x++)                                                               \
            for (int y = 0; y < th.n; y++) {                                                         \
                const int64_t row = i0 + (td.idx[x] * ih + th.idx[y]) * iw;                          \
                const double wxy = td.w[x] * th.w[y];                                                \
                for (int z = 0; z < cols.n; z++) sum += wxy * cols.w[j][z] * LOAD(row + cols.idx[j][z]); \
            }                                                                                        \
        STORE(o0 + j, sum);                                                                          \
    }
#define UP_LOAD_F32(i) (double)((const float *)a->src)[i]
#define UP_STORE_F32(i, v) ((float *)a->dst)[i] = (float)(v)
#define UP_LOAD_ANY(i) axon_spatial_load(a->dt_src, a->src, i)
#define UP_STORE_ANY(i, v) axon_spatial_store(a->dt_dst, a->dst, i, v)

/* Nearest modes with one dtype: each output element is a copy of its one source element (a gather along the row), not
 * a weighted sum in float64: exact for every dtype (int64 above 2^53, -0, NaN payloads) and 3x faster for float32. */
#define UP_NEAREST_ROW(T)                                                                                          \
    do {                                                                                                           \
        const T *src = (const T *)a->src + i0 + (td->idx[0] * ih + th->idx[0]) * iw;                              \
        T *dst = (T *)a->dst + o0;                                                                                 \
        for (int64_t j = 0; j < m; j++) dst[j] = src[c->idx[j][0]];                                                 \
    } while (0)

static int up_nearest_row(const up_args_t *a, size_t es, int64_t i0, int64_t o0, int64_t ih, int64_t iw,
                          const up_taps_t *td, const up_taps_t *th, const up_cols_t *c, int64_t m) {
    if (td->n != 1 || th->n != 1 || c->n != 1 || a->dt_src != a->dt_dst) return 0;
    switch (es) {
    case 1: UP_NEAREST_ROW(uint8_t); return 1;
    case 2: UP_NEAREST_ROW(uint16_t); return 1;
    case 4: UP_NEAREST_ROW(uint32_t); return 1;
    case 8: UP_NEAREST_ROW(uint64_t); return 1;
    default: return 0;
    }
}

/* Bilinear rows (one D tap, two H taps, two W taps per column) of float32, float16 or bfloat16 (src and dst the same
 * dtype, the kind a constant in each inlined copy), in float as PyTorch's CPU kernel computes them (each row's two
 * columns blended, then the two rows), from one array per tap (int32 indices, float weights): in float64 from the
 * interleaved taps float32 ran at 1.6x torch CPU's time, and float16 at 3x. Halves are read as float and the result
 * rounded once. (GCC 12 keeps this loop scalar: it emits no gathers under its generic tuning.) Other dtypes and tap
 * counts keep UP_FORWARD_ROW's float64 sums. */
static inline __attribute__((always_inline)) void up_bilinear_row(const up_args_t *a, int64_t i0, int64_t o0,
                                                                  int64_t ih, int64_t iw, const up_taps_t *td,
                                                                  const up_taps_t *th, const up_cols_t *c, int64_t m,
                                                                  const int kind) {
    const size_t es = kind == AXON_FK_F32 ? 4 : 2;
    const char *r0 = a->src + (i0 + (td->idx[0] * ih + th->idx[0]) * iw) * (int64_t)es;
    const char *r1 = a->src + (i0 + (td->idx[0] * ih + th->idx[1]) * iw) * (int64_t)es;
    const float h0 = (float)(td->w[0] * th->w[0]), h1 = (float)(td->w[0] * th->w[1]);
    const int32_t *restrict x0 = c->idx0, *restrict x1 = c->idx1;
    const float *restrict w0 = c->w0, *restrict w1 = c->w1;
    char *dst = a->dst + o0 * (int64_t)es;
    if (kind != AXON_FK_F32 && a->half_to_float) {
        /* Halves: the span of the two source rows this chunk reads widened once into floats, the sums in float as
         * below (the same values), and the chunk rounded in one conversion: per element, the half loads and the
         * rounding took 2.2x float32's time. A span wider than UP_SPAN (a downsampling) keeps the loop below. */
        int32_t lo = x0[0], hi = x1[0];
        for (int64_t j = 0; j < m; j++) {
            lo = x0[j] < lo ? x0[j] : lo, lo = x1[j] < lo ? x1[j] : lo;
            hi = x0[j] > hi ? x0[j] : hi, hi = x1[j] > hi ? x1[j] : hi;
        }
        if (hi - lo < UP_SPAN) {
            float f0[UP_SPAN], f1[UP_SPAN], y[UP_CHUNK];
            a->half_to_float((char *)f0, 1, r0 + (int64_t)lo * 2, 1, hi - lo + 1);
            a->half_to_float((char *)f1, 1, r1 + (int64_t)lo * 2, 1, hi - lo + 1);
            for (int64_t j = 0; j < m; j++) {
                const float top = w0[j] * f0[x0[j] - lo] + w1[j] * f0[x1[j] - lo];
                const float bottom = w0[j] * f1[x0[j] - lo] + w1[j] * f1[x1[j] - lo];
                y[j] = h0 * top + h1 * bottom;
            }
            a->float_to_half(dst, 1, (const char *)y, 1, m);
            return;
        }
    }
    for (int64_t j = 0; j < m; j++) {
        const float top = w0[j] * axon_fk_load(kind, r0, x0[j]) + w1[j] * axon_fk_load(kind, r0, x1[j]);
        const float bottom = w0[j] * axon_fk_load(kind, r1, x0[j]) + w1[j] * axon_fk_load(kind, r1, x1[j]);
        axon_fk_store(kind, dst, j, h0 * top + h1 * bottom);
    }
}
#define UP_BILINEAR_ROW_FN(name, kind)                                                                            \
    AXON_CLONES static void name(const up_args_t *a, int64_t i0, int64_t o0, int64_t ih, int64_t iw,            \
                                 const up_taps_t *td, const up_taps_t *th, const up_cols_t *c, int64_t m) {      \
        up_bilinear_row(a, i0, o0, ih, iw, td, th, c, m, kind);                                                  \
    }
UP_BILINEAR_ROW_FN(up_bilinear_row_f32, AXON_FK_F32)
UP_BILINEAR_ROW_FN(up_bilinear_row_bf16, AXON_FK_BF16)
UP_BILINEAR_ROW_FN(up_bilinear_row_f16, AXON_FK_F16_SCALAR)

/* The bilinear row of the launch's dtype, if its rows take one (nonzero when done). */
static int up_bilinear_rows(const up_args_t *a, int64_t i0, int64_t o0, int64_t ih, int64_t iw, const up_taps_t *td,
                            const up_taps_t *th, const up_cols_t *c, int64_t m) {
    if (a->dt_src != a->dt_dst || td->n != 1 || th->n != 2 || c->n != 2 || iw > INT32_MAX) return 0;
    switch (a->dt_src) {
    case AXON_FLOAT32: up_bilinear_row_f32(a, i0, o0, ih, iw, td, th, c, m); return 1;
    case AXON_BFLOAT16: up_bilinear_row_bf16(a, i0, o0, ih, iw, td, th, c, m); return 1;
    case AXON_FLOAT16: up_bilinear_row_f16(a, i0, o0, ih, iw, td, th, c, m); return 1;
    default: return 0;
    }
}

/* Output rows [begin, end) (row r = plane, od, oh), a chunk of columns at a time. */
static void up_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const up_args_t *a = ctx;
    const axon_spatial_t *g = &a->g;
    const int64_t per_plane = g->out[0] * g->out[1], ih = g->in[1], iw = g->in[2];
    up_cols_t cols;
    for (int64_t ow0 = 0; ow0 < g->out[2]; ow0 += UP_CHUNK) {
        const int64_t m = g->out[2] - ow0 < UP_CHUNK ? g->out[2] - ow0 : UP_CHUNK;
        up_cols_fill(a, ow0, m, &cols);
        for (int64_t r = begin; r < end; r++) {
            const int64_t plane = r / per_plane, od = r % per_plane / g->out[1], oh = r % g->out[1];
            const up_taps_t td = up_taps(a, 0, od), th = up_taps(a, 1, oh);
            const int64_t i0 = plane * g->in_size, o0 = r * g->out[2] + ow0;
            if (up_nearest_row(a, axon_dtype_size(a->dt_src), i0, o0, ih, iw, &td, &th, &cols, m) ||
                up_bilinear_rows(a, i0, o0, ih, iw, &td, &th, &cols, m))
                continue;
            if (a->dt_src == AXON_FLOAT32 && a->dt_dst == AXON_FLOAT32) {
                UP_FORWARD_ROW(UP_LOAD_F32, UP_STORE_F32);
            } else {
                UP_FORWARD_ROW(UP_LOAD_ANY, UP_STORE_ANY);
            }
        }
    }
}

/* Scatter one grad_out row's chunk of m columns over its taps (LOAD reads grad_out, DST and STORE grad_in). */
#define UP_BACKWARD_ROW(LOAD, DST, STORE)                                                            \
    for (int x = 0; x < td.n; x++)                                                                   \
        for (int y = 0; y < th.n; y++) {                                                             \
            const int64_t row = i0 + (td.idx[x] * ih + th.idx[y]) * iw;                              \
            const double wxy = td.w[x] * th.w[y];                                                    \
            for (int64_t j = 0; j < m; j++) {                                                        \
                const double gxy = wxy * LOAD(o0 + j);                                               \
                for (int z = 0; z < cols.n; z++) {                                                   \
                    const int64_t i = row + cols.idx[j][z];                                          \
                    STORE(i, DST(i) + gxy * cols.w[j][z]);                                           \
                }                                                                                    \
            }                                                                                        \
        }
#define UP_DST_F32(i) (double)((const float *)a->dst)[i]
#define UP_DST_ANY(i) axon_spatial_load(a->dt_dst, a->dst, i)

#define UP_LOAD_HALF(i) (double)hf[(i) - (o_plane)]
#define UP_ACC(i) (double)acc[(i) - i0]
#define UP_STORE_ACC(i, v) acc[(i) - i0] = (float)(v)

/* up_backward_range for float16 and bfloat16: a plane at a time, its grad_in summed in a float plane (as PyTorch's
 * CPU kernel sums 16-bit gradients) with float32's arithmetic on the widened grad_out, then rounded once. Summed in
 * the 16-bit grad_in element by element, the gradient lost precision at each add and took 1.4-1.6x float32's time.
 * Nonzero when done (no memory for the plane: the caller's loop). */
static int up_backward_half(const up_args_t *a, int64_t begin, int64_t end) {
    const axon_spatial_t *g = &a->g;
    const int64_t ih = g->in[1], iw = g->in[2], out_plane = g->out_size;
    float *acc = malloc((size_t)g->in_size * sizeof *acc), *hf = malloc((size_t)out_plane * sizeof *hf);
    if (!acc || !hf) {
        free(acc), free(hf);
        return 0;
    }
    up_cols_t cols;
    for (int64_t p = begin; p < end; p++) {
        const int64_t i0 = p * g->in_size, o_plane = p * out_plane;
        memset(acc, 0, (size_t)g->in_size * sizeof *acc);
        a->half_to_float((char *)hf, 1, a->src + o_plane * 2, 1, out_plane);
        for (int64_t ow0 = 0; ow0 < g->out[2]; ow0 += UP_CHUNK) {
            const int64_t m = g->out[2] - ow0 < UP_CHUNK ? g->out[2] - ow0 : UP_CHUNK;
            if (p == begin || g->out[2] > UP_CHUNK) up_cols_fill(a, ow0, m, &cols); /* one chunk: filled once */
            for (int64_t od = 0; od < g->out[0]; od++) {
                const up_taps_t td = up_taps(a, 0, od);
                for (int64_t oh = 0; oh < g->out[1]; oh++) {
                    const up_taps_t th = up_taps(a, 1, oh);
                    const int64_t o0 = ((p * g->out[0] + od) * g->out[1] + oh) * g->out[2] + ow0;
                    UP_BACKWARD_ROW(UP_LOAD_HALF, UP_ACC, UP_STORE_ACC);
                }
            }
        }
        a->float_to_half(a->dst + i0 * 2, 1, (const char *)acc, 1, g->in_size);
    }
    free(acc), free(hf);
    return 1;
}

/* Planes [begin, end): zero each, then scatter its grad_out, a chunk of columns at a time (the order of the
 * additions into one element is fixed by the sizes alone, so the result does not depend on the thread count). */
static void up_backward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const up_args_t *a = ctx;
    const axon_spatial_t *g = &a->g;
    const int64_t ih = g->in[1], iw = g->in[2];
    if (a->half_to_float && up_backward_half(a, begin, end)) return;
    up_cols_t cols;
    for (int64_t p = begin; p < end; p++) axon_spatial_zero(a->dt_dst, a->dst, p * g->in_size, g->in_size);
    for (int64_t ow0 = 0; ow0 < g->out[2]; ow0 += UP_CHUNK) {
        const int64_t m = g->out[2] - ow0 < UP_CHUNK ? g->out[2] - ow0 : UP_CHUNK;
        up_cols_fill(a, ow0, m, &cols);
        for (int64_t p = begin; p < end; p++) {
            const int64_t i0 = p * g->in_size;
            for (int64_t od = 0; od < g->out[0]; od++) {
                const up_taps_t td = up_taps(a, 0, od);
                for (int64_t oh = 0; oh < g->out[1]; oh++) {
                    const up_taps_t th = up_taps(a, 1, oh);
                    const int64_t o0 = ((p * g->out[0] + od) * g->out[1] + oh) * g->out[2] + ow0;
                    if (a->dt_src == AXON_FLOAT32 && a->dt_dst == AXON_FLOAT32) {
                        UP_BACKWARD_ROW(UP_LOAD_F32, UP_DST_F32, UP_STORE_F32);
                    } else {
                        UP_BACKWARD_ROW(UP_LOAD_ANY, UP_DST_ANY, UP_STORE_ANY);
                    }
                }
            }
        }
    }
}

/* Taps per output element, for the grain. */
static int64_t up_work(const up_args_t *a) {
    const int64_t per_dim = a->mode == AXON_UPSAMPLE_CUBIC ? 4 : a->mode == AXON_UPSAMPLE_LINEAR ? 2 : 1;
    int64_t w = 1;
    for (int k = a->first; k < 3; k++) w *= per_dim;
    return w;
}

static axon_status_t up_forward_kernel(const void *args, const axon_exec_t *ex) {
    const up_args_t *a = args;
    const int64_t rows = a->g.planes * a->g.out[0] * a->g.out[1], work = a->g.out[2] * up_work(a);
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, rows, grain < 1 ? 1 : grain, up_forward_range, (void *)a);
    return AXON_OK;
}

static axon_status_t up_backward_kernel(const void *args, const axon_exec_t *ex) {
    const up_args_t *a = args;
    const int64_t work = a->g.in_size + a->g.out_size * up_work(a);
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, a->g.planes, grain < 1 ? 1 : grain, up_backward_range, (void *)a);
    return AXON_OK;
}

static axon_status_t up_launch(axon_stream_t s, int backward, const axon_tensor_t *dst, const axon_tensor_t *src,
                               const axon_upsample_params_t *p) {
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "upsample%s: params is NULL", backward ? "_backward" : "");
    if ((unsigned)p->mode >= AXON_UPSAMPLE_MODE_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "upsample%s: mode %d is not an axon_upsample_mode_t",
                         backward ? "_backward" : "", (int)p->mode);
    const char *op = backward ? up_backward_names[p->mode] : up_mode_names[p->mode];
    up_args_t a;
    memset(&a, 0, sizeof a);
    /* nearest forward copies elements (up_nearest_row), so it takes integers too */
    const int copies = !backward && (p->mode == AXON_UPSAMPLE_NEAREST || p->mode == AXON_UPSAMPLE_NEAREST_EXACT);
    axon_status_t st = backward ? axon_spatial_check(op, p->nspatial, dst, "grad_in", 1, src, "grad_out", 0, &a.g)
                                : axon_spatial_check(op, p->nspatial, src, "in", 0, dst, "out", copies, &a.g);
    if (st != AXON_OK) return st;
    for (int i = 0; i < p->nspatial; i++)
        if (!(p->scales[i] >= 0.0) || isinf(p->scales[i]))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: scale factor %g of spatial dim %d must be finite and >= 0 "
                             "(0 = none)", op, p->scales[i], i);
    if (a.g.planes == 0 || (backward ? a.g.in_size : a.g.out_size) == 0) return AXON_OK;
    a.mode = p->mode;
    a.align_corners = p->align_corners != 0;
    a.f64 = dst->dtype == AXON_FLOAT64 || src->dtype == AXON_FLOAT64;
    a.first = AXON_SPATIAL_MAX - p->nspatial;
    for (int i = 0; i < p->nspatial; i++) a.scales[a.first + i] = p->scales[i];
    a.dst = dst->data, a.src = src->data, a.dt_dst = dst->dtype, a.dt_src = src->dtype;
    if (a.dt_src == a.dt_dst && (a.dt_src == AXON_FLOAT16 || a.dt_src == AXON_BFLOAT16)) {
        a.half_to_float = axon_convert_get(a.dt_src, AXON_FLOAT32);
        a.float_to_half = axon_convert_get(AXON_FLOAT32, a.dt_src);
    }
    const uint64_t bytes =
        (uint64_t)a.g.planes * ((uint64_t)a.g.in_size * axon_dtype_size(backward ? dst->dtype : src->dtype) +
                                (uint64_t)a.g.out_size * axon_dtype_size(backward ? src->dtype : dst->dtype));
    axon_launch_t l = {backward ? up_backward_kernel : up_forward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_upsample(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                   const axon_upsample_params_t *p) {
    return up_launch(s, 0, out, in, p);
}

axon_status_t axon_kernel_upsample_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                            const axon_tensor_t *grad_out, const axon_upsample_params_t *p) {
    return up_launch(s, 1, grad_in, grad_out, p);
}
