/* Antialiased bilinear and bicubic resizing, forward (one separable pass per call) and backward
 * (axon/upsample_aa.h).
 *
 * The weights follow PyTorch's HelperInterpBase::_compute_indices_min_size_weights_aa expression by expression in
 * the tensor's dtype T, C's conversions standing in for C++'s (an int64 minus a float is a float subtraction, a float
 * plus 0.5 a double addition), so that every window and weight is PyTorch's; the sums then take the taps in
 * PyTorch's order. Kernels do not allocate: a pass computes its W windows for a chunk of output columns into a stack
 * table (up to AA_TABLE weights), and its H window once per output row. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "axon/stream.h"
#include "axon/upsample_aa.h"
#include "internal.h"
#include "kernels_impl.h"
#include "spatial_impl.h"

static const char *const aa_pass_names[] = {"upsample_bilinear2d_aa", "upsample_bicubic2d_aa"};
static_assert(sizeof aa_pass_names / sizeof aa_pass_names[0] == AXON_AA_FILTER_COUNT, "every filter needs a name");
static const char *const aa_backward_names[] = {"upsample_bilinear2d_aa_backward", "upsample_bicubic2d_aa_backward"};
static_assert(sizeof aa_backward_names / sizeof aa_backward_names[0] == AXON_AA_FILTER_COUNT,
              "every filter needs a backward name");

/* Weights of one stack table: a chunk of output columns times their windows. */
#define AA_TABLE 4096
/* Columns per table: windows have at least 3 taps (PyTorch's smallest max_interp_size). */
#define AA_COLS (AA_TABLE / 3 + 1)

typedef struct aa_args {
    axon_spatial_t g;            /* g.in / g.out [1..2]: H, W of the input and output side */
    int cubic, align, f64, backward;
    int axis;                    /* forward: 1 = H, 2 = W, 0 = neither (a copy) */
    double scales[3];            /* [1] = H, [2] = W */
    int64_t taps[3];             /* widest window per axis (PyTorch's max_interp_size) */
    char *dst;
    const char *src;
} aa_args_t;

/* The filters, in T as PyTorch's aa_filter<T> computes them (x is |x| already). */
#define AA_FILTERS(T, SUF)                                                                          \
    static T aa_triangle_##SUF(T x) { return x < 1.0 ? (T)(1.0 - (double)x) : (T)0; }               \
    static T aa_cubic_##SUF(T x) {                                                                  \
        const T a = (T)-0.5;                                                                        \
        if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;                                   \
        if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;                              \
        return (T)0;                                                                                \
    }
AA_FILTERS(float, f32)
AA_FILTERS(double, f64)

/* scale (area_pixel_compute_scale<T>), support and window of one axis, and the window of output o: its first
 * input xmin and its weights w[0 .. xsize), normalized; returns xsize. */
#define AA_AXIS(T, SUF, ABS)                                                                                 \
    static T aa_scale_##SUF(int align, double f, int64_t I, int64_t O) {                                    \
        if (align) return O > 1 ? (T)(I - 1) / (T)(O - 1) : (T)0;                                           \
        return f > 0 ? (T)(1.0 / f) : (T)I / (T)O;                                                          \
    }                                                                                                        \
    static T aa_support_##SUF(int cubic, T scale) {                                                          \
        const double half = (cubic ? 4 : 2) * 0.5;                                                           \
        return scale >= 1.0 ? (T)(half * (double)scale) : (T)half;                                           \
    }                                                                                                        \
    static int64_t aa_window_##SUF(int cubic, T scale, T support, int64_t o, int64_t I, int64_t max_taps,   \
                                   T *w, int64_t *xmin_out) {                                                \
        const T center = (T)((double)scale * ((double)o + 0.5));                                             \
        const T invscale = scale >= 1.0 ? (T)(1.0 / (double)scale) : (T)1.0;                                 \
        int64_t xmin = (int64_t)((double)(center - support) + 0.5);                                          \
        if (xmin < 0) xmin = 0;                                                                              \
        const int64_t hi = (int64_t)((double)(center + support) + 0.5);                                      \
        int64_t xsize = (hi < I ? hi : I) - xmin;                                                            \
        xsize = xsize < 0 ? 0 : xsize > max_taps ? max_taps : xsize;                                         \
        T total = 0;                                                                                         \
        for (int64_t j = 0; j < xsize; j++) {                                                                \
            const T x = (T)(((double)((T)(j + xmin) - center) + 0.5) * (double)invscale);                   \
            w[j] = cubic ? aa_cubic_##SUF(ABS(x)) : aa_triangle_##SUF(ABS(x));                               \
            total += w[j];                                                                                   \
        }                                                                                                    \
        if (total != 0)                                                                                      \
            for (int64_t j = 0; j < xsize; j++) w[j] /= total;                                               \
        *xmin_out = xmin;                                                                                    \
        return xsize;                                                                                        \
    }
AA_AXIS(float, f32, fabsf)
AA_AXIS(double, f64, fabs)

/* The forward pass along W for rows [begin, end) of a [planes * H, W] layout; along H for output rows
 * [begin, end) of [planes, OH]. T is the dtype. */
#define AA_PASS(T, SUF)                                                                                        \
    static void aa_pass_w_##SUF(const aa_args_t *a, int64_t begin, int64_t end) {                             \
        const int64_t I = a->g.in[2], O = a->g.out[2], taps = a->taps[2];                                     \
        const T scale = aa_scale_##SUF(a->align, a->scales[2], I, O), support = aa_support_##SUF(a->cubic, scale); \
        T tab[AA_TABLE];                                                                                       \
        int64_t xmin[AA_COLS], xsize[AA_COLS];                                                                 \
        const int64_t chunk = AA_TABLE / taps > 0 ? AA_TABLE / taps : 1;                                       \
        const T *src = (const T *)a->src;                                                                      \
        T *dst = (T *)a->dst;                                                                                  \
        for (int64_t c0 = 0; c0 < O; c0 += chunk) {                                                            \
            const int64_t m = O - c0 < chunk ? O - c0 : chunk;                                                 \
            for (int64_t j = 0; j < m; j++)                                                                    \
                xsize[j] = aa_window_##SUF(a->cubic, scale, support, c0 + j, I, taps, tab + j * taps, &xmin[j]); \
            for (int64_t r = begin; r < end; r++) {                                                            \
                const T *row = src + r * I;                                                                    \
                T *out = dst + r * O + c0;                                                                     \
                for (int64_t j = 0; j < m; j++) {                                                              \
                    const T *w = tab + j * taps, *x = row + xmin[j];                                           \
                    T sum = xsize[j] > 0 ? x[0] * w[0] : (T)0;                                                 \
                    for (int64_t k = 1; k < xsize[j]; k++) sum += x[k] * w[k];                                 \
                    out[j] = sum;                                                                              \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
    }                                                                                                          \
    static void aa_pass_h_##SUF(const aa_args_t *a, int64_t begin, int64_t end) {                             \
        const int64_t I = a->g.in[1], O = a->g.out[1], W = a->g.out[2], taps = a->taps[1];                    \
        const T scale = aa_scale_##SUF(a->align, a->scales[1], I, O), support = aa_support_##SUF(a->cubic, scale); \
        T w[AXON_UPSAMPLE_AA_MAX_TAPS];                                                                        \
        for (int64_t r = begin; r < end; r++) {                                                                \
            const int64_t plane = r / O, o = r % O;                                                            \
            int64_t ymin;                                                                                      \
            const int64_t n = aa_window_##SUF(a->cubic, scale, support, o, I, taps, w, &ymin);                 \
            const T *src = (const T *)a->src + (plane * I + ymin) * W;                                         \
            T *restrict out = (T *)a->dst + r * W;                                                             \
            if (n == 0) {                                                                                      \
                for (int64_t x = 0; x < W; x++) out[x] = 0;                                                    \
                continue;                                                                                      \
            }                                                                                                  \
            const T w0 = w[0];                                                                                 \
            for (int64_t x = 0; x < W; x++) out[x] = src[x] * w0;                                              \
            for (int64_t k = 1; k < n; k++) {                                                                  \
                const T *restrict s = src + k * W;                                                             \
                const T wk = w[k];                                                                             \
                for (int64_t x = 0; x < W; x++) out[x] += s[x] * wk;                                           \
            }                                                                                                  \
        }                                                                                                      \
    }
AA_PASS(float, f32)
AA_PASS(double, f64)

/* The backward for planes [begin, end): zero them, then for each output (oh, ow), in order, add
 * wx[x] * wy[y] * grad_out into its window (PyTorch's product order). */
#define AA_BACKWARD(T, SUF)                                                                                    \
    static void aa_backward_##SUF(const aa_args_t *a, int64_t begin, int64_t end) {                           \
        const int64_t IH = a->g.in[1], IW = a->g.in[2], OH = a->g.out[1], OW = a->g.out[2];                   \
        const int64_t th = a->taps[1], tw = a->taps[2];                                                        \
        const T sh = aa_scale_##SUF(a->align, a->scales[1], IH, OH), sw = aa_scale_##SUF(a->align, a->scales[2], IW, OW); \
        const T suph = aa_support_##SUF(a->cubic, sh), supw = aa_support_##SUF(a->cubic, sw);                 \
        T *gi = (T *)a->dst;                                                                                   \
        const T *go = (const T *)a->src;                                                                       \
        memset(gi + begin * IH * IW, 0, (size_t)((end - begin) * IH * IW) * sizeof(T));                        \
        T wy[AXON_UPSAMPLE_AA_MAX_TAPS], tab[AA_TABLE];                                                        \
        int64_t xmin[AA_COLS], xsize[AA_COLS];                                                                 \
        const int64_t chunk = AA_TABLE / tw > 0 ? AA_TABLE / tw : 1;                                           \
        for (int64_t oh = 0; oh < OH; oh++) {                                                                  \
            int64_t ymin;                                                                                      \
            const int64_t ny = aa_window_##SUF(a->cubic, sh, suph, oh, IH, th, wy, &ymin);                    \
            for (int64_t c0 = 0; c0 < OW; c0 += chunk) {                                                      \
                const int64_t m = OW - c0 < chunk ? OW - c0 : chunk;                                           \
                for (int64_t j = 0; j < m; j++)                                                                \
                    xsize[j] = aa_window_##SUF(a->cubic, sw, supw, c0 + j, IW, tw, tab + j * tw, &xmin[j]);    \
                for (int64_t j = 0; j < m; j++) {                                                              \
                    const T *wx = tab + j * tw;                                                                \
                    for (int64_t p = begin; p < end; p++) {                                                    \
                        const T g = go[(p * OH + oh) * OW + c0 + j];                                           \
                        T *base = gi + (p * IH + ymin) * IW + xmin[j];                                         \
                        for (int64_t y = 0; y < ny; y++)                                                       \
                            for (int64_t x = 0; x < xsize[j]; x++) base[y * IW + x] += wx[x] * wy[y] * g;      \
                    }                                                                                          \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
    }
AA_BACKWARD(float, f32)
AA_BACKWARD(double, f64)

static void aa_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const aa_args_t *a = ctx;
    if (a->backward) {
        if (a->f64) aa_backward_f64(a, begin, end);
        else aa_backward_f32(a, begin, end);
    } else if (a->axis == 2) {
        if (a->f64) aa_pass_w_f64(a, begin, end);
        else aa_pass_w_f32(a, begin, end);
    } else {
        if (a->f64) aa_pass_h_f64(a, begin, end);
        else aa_pass_h_f32(a, begin, end);
    }
}

static axon_status_t aa_kernel(const void *args, const axon_exec_t *ex) {
    const aa_args_t *a = args;
    const axon_spatial_t *g = &a->g;
    int64_t items, work;
    if (a->backward) {   /* planes; each a full scatter */
        items = g->planes;
        work = g->in_size + g->out_size * a->taps[1] * a->taps[2];
    } else if (a->axis == 2) {   /* input rows */
        items = g->planes * g->in[1];
        work = g->out[2] * a->taps[2];
    } else {             /* output rows */
        items = g->planes * g->out[1];
        work = g->out[2] * a->taps[1];
    }
    const int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, items, grain < 1 ? 1 : grain, aa_range, (void *)a);
    return AXON_OK;
}

/* PyTorch's max_interp_size of an axis: the forward's (int)ceil(support) * 2 + 1 in T; the backward takes ceilf. */
static int64_t aa_max_taps(const aa_args_t *a, int k) {
    const int64_t I = a->g.in[k], O = a->g.out[k];
    double support;
    if (a->f64) support = aa_support_f64(a->cubic, aa_scale_f64(a->align, a->scales[k], I, O));
    else support = aa_support_f32(a->cubic, aa_scale_f32(a->align, a->scales[k], I, O));
    const double c = a->backward ? (double)ceilf((float)support) : ceil(support);
    return c > AXON_UPSAMPLE_AA_MAX_TAPS ? AXON_UPSAMPLE_AA_MAX_TAPS + 1 : (int64_t)c * 2 + 1;
}

static axon_status_t aa_launch(axon_stream_t s, int backward, const axon_tensor_t *dst, const axon_tensor_t *src,
                               const axon_upsample_aa_params_t *p) {
    if (p == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "upsample_aa%s: params is NULL", backward ? "_backward" : "");
    if ((unsigned)p->filter >= AXON_AA_FILTER_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "upsample_aa%s: filter %d is not an axon_aa_filter_t",
                         backward ? "_backward" : "", (int)p->filter);
    const char *op = backward ? aa_backward_names[p->filter] : aa_pass_names[p->filter];
    aa_args_t a;
    memset(&a, 0, sizeof a);
    axon_status_t st = backward ? axon_spatial_check(op, 2, dst, "grad_in", 1, src, "grad_out", 0, &a.g)
                                : axon_spatial_check(op, 2, src, "in", 0, dst, "out", 0, &a.g);
    if (st != AXON_OK) return st;
    if ((src->dtype != AXON_FLOAT32 && src->dtype != AXON_FLOAT64) || dst->dtype != src->dtype)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: dtypes %s and %s (float32 or float64, one dtype)", op,
                         axon_dtype_name(src->dtype), axon_dtype_name(dst->dtype));
    for (int i = 0; i < 2; i++)
        if (!(p->scales[i] >= 0.0) || isinf(p->scales[i]))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: scale factor %g of spatial dim %d must be finite and >= 0 "
                             "(0 = none)", op, p->scales[i], i);
    const int dh = a.g.in[1] != a.g.out[1], dw = a.g.in[2] != a.g.out[2];
    if (!backward && dh && dw)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: one pass resizes one of H and W, but both differ ([%lld, %lld] "
                         "to [%lld, %lld])", op, (long long)a.g.in[1], (long long)a.g.in[2], (long long)a.g.out[1],
                         (long long)a.g.out[2]);
    if (a.g.planes == 0 || (backward ? a.g.in_size : a.g.out_size) == 0) return AXON_OK;
    a.cubic = p->filter == AXON_AA_CUBIC;
    a.align = p->align_corners != 0;
    a.f64 = src->dtype == AXON_FLOAT64;
    a.backward = backward;
    a.axis = backward ? 0 : dw ? 2 : dh ? 1 : 0;
    a.scales[1] = p->scales[0], a.scales[2] = p->scales[1];
    a.dst = dst->data, a.src = src->data;
    if (!backward && a.axis == 0) return axon_kernel_copy(s, dst, src);  /* nothing to resize */
    for (int k = 1; k <= 2; k++) {
        a.taps[k] = aa_max_taps(&a, k);
        if (a.taps[k] > AXON_UPSAMPLE_AA_MAX_TAPS)
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: a window of %lld taps along %s exceeds %d (a downscale by "
                             "more than about %d)", op, (long long)a.taps[k], k == 1 ? "H" : "W",
                             AXON_UPSAMPLE_AA_MAX_TAPS, AXON_UPSAMPLE_AA_MAX_TAPS / 4);
    }
    const uint64_t es = axon_dtype_size(src->dtype);
    const uint64_t bytes = (uint64_t)a.g.planes * ((uint64_t)a.g.in_size + (uint64_t)a.g.out_size) * es;
    axon_launch_t l = {aa_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_upsample_aa_pass(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                           const axon_upsample_aa_params_t *p) {
    return aa_launch(s, 0, out, in, p);
}

axon_status_t axon_kernel_upsample_aa_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                               const axon_tensor_t *grad_out, const axon_upsample_aa_params_t *p) {
    return aa_launch(s, 1, grad_in, grad_out, p);
}
