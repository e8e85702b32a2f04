/* Average pooling and adaptive average pooling, forward and backward (axon/pooling.h).
 *
 * Both share one loop: only the windows differ (pooling_impl.h) and the divisor (an adaptive window's own size; for
 * fixed windows divisor_override, else the window clipped to input plus padding or to the input, as PyTorch's
 * count_include_pad says). Sums are float64; fixed windows of integers (forward only) sum in int64, wrapping, and
 * divide with truncation toward zero, as PyTorch's integer division does. The forward splits output rows over the
 * pool; the backward scatters grad_out / divisor over each window, a plane per step (windows overlap when stride <
 * kernel). */
#include <string.h>

#include "axon/pooling.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"
#include "pooling_impl.h"

typedef struct pa_args {
    axon_pool_geom_t w;
    axon_spatial_t g;
    char *dst;               /* forward: out; backward: grad_in */
    const char *src;         /* forward: in; backward: grad_out */
    axon_dtype_t dt_dst, dt_src;
} pa_args_t;

static double pa_divisor(const axon_pool_geom_t *w, const axon_pool_span_t *sp) {
    if (w->adaptive) return (double)((sp[0].end - sp[0].first) * (sp[1].end - sp[1].first) * (sp[2].end - sp[2].first));
    if (w->divisor != 0) return (double)w->divisor;
    if (w->count_include_pad) return (double)(sp[0].padded * sp[1].padded * sp[2].padded);
    return (double)(axon_pool_span_count(sp[0]) * axon_pool_span_count(sp[1]) * axon_pool_span_count(sp[2]));
}

/* The sum of a float32 window: each of its rows summed in AXON_PARTS partial sums (element w into part w % AXON_PARTS),
 * the rows' sums added in order. Independent chains instead of one add after another: a global average pool sums a
 * whole plane per output. */
AXON_CLONES static double pa_window_sum_f32(const float *x, const axon_pool_span_t *sp, int64_t ih, int64_t iw) {
    double sum = 0.0;
    const int64_t w0 = sp[2].first, n = sp[2].end - sp[2].first, bulk = n - n % AXON_PARTS;
    for (int64_t d = sp[0].first; d < sp[0].end; d++)
        for (int64_t h = sp[1].first; h < sp[1].end; h++) {
            const float *row = x + (d * ih + h) * iw + w0;
            double part[AXON_PARTS] = {0};
            for (int64_t i = 0; i < bulk; i += AXON_PARTS)
                for (int k = 0; k < AXON_PARTS; k++) part[k] += (double)row[i + k];
            for (int64_t i = bulk; i < n; i++) part[i - bulk] += (double)row[i];
            for (int k = 0; k < AXON_PARTS; k++) sum += part[k];
        }
    return sum;
}

/* A float32 window's float64 sum: long rows through pa_window_sum_f32's parts; short rows, without a call, each as
 * its own chain of adds before it joins the window's sum as pa_window_sum_f32 adds its rows, so that rows are
 * independent chains the core overlaps (one chain over the window made an adaptive pool of 64 x 64 planes to 7 x 7
 * twice torch CPU's time). */
static inline __attribute__((always_inline)) double pa_window_f32(const float *x, const axon_pool_span_t *sp,
                                                                  int64_t ih, int64_t iw) {
    if (sp[2].end - sp[2].first >= 2 * AXON_PARTS) return pa_window_sum_f32(x, sp, ih, iw);
    double sum = 0.0;
    for (int64_t d = sp[0].first; d < sp[0].end; d++)
        for (int64_t h = sp[1].first; h < sp[1].end; h++) {
            const float *row = x + (d * ih + h) * iw;
            double rs = 0.0;
            for (int64_t w = sp[2].first; w < sp[2].end; w++) rs += (double)row[w];
            sum += rs;
        }
    return sum;
}

/* An integer window's average: the int64 sum (wrapping) over the int64 divisor, truncated; INT64_MIN / -1 wraps. */
static int64_t pa_window_mean_int(const pa_args_t *a, int64_t i0, const axon_pool_span_t *sp, int64_t ih,
                                  int64_t iw) {
    uint64_t sum = 0;
    for (int64_t d = sp[0].first; d < sp[0].end; d++)
        for (int64_t h = sp[1].first; h < sp[1].end; h++) {
            const int64_t row = i0 + (d * ih + h) * iw;
            for (int64_t w = sp[2].first; w < sp[2].end; w++)
                sum += (uint64_t)axon_spatial_load_int(a->dt_src, a->src, row + w);
        }
    const int64_t div = (int64_t)pa_divisor(&a->w, sp), n = axon_pool_span_count(sp[0]) *
                                                             axon_pool_span_count(sp[1]) * axon_pool_span_count(sp[2]);
    if (n == 0 || div == 0) return 0;
    return div == -1 ? (int64_t)(0 - sum) : (int64_t)sum / div;
}

/* A window's divisor as a product of one factor per dimension (pa_divisor's products, split), so that a row's output
 * positions can have their factors computed once; 0 for divisor_override, whose divisor is the constant itself. */
static int64_t pa_factor(const axon_pool_geom_t *w, axon_pool_span_t s) {
    if (w->adaptive) return s.end - s.first;
    if (w->divisor != 0) return 0;
    return w->count_include_pad ? s.padded : axon_pool_span_count(s);
}

#define PA_ROW_SPANS 256 /* output positions along H and W whose spans and factors a row loop computes once per call */

/* What the row loops below compute once per call: the spans and divisor factors of every output column, and of
 * every output row position along H when there are at most PA_ROW_SPANS (else per row). A row's (plane, od, oh) is
 * stepped, not divided out of its number: three 64-bit divisions and the H span's two more per row were most of an
 * adaptive pool of 8 x 8 planes to 8 x 7 (bfloat16 [2, 8, 8, 8]: 12.9 us against CPU's 9.2). */
typedef struct pa_rows {
    axon_pool_span_t w[PA_ROW_SPANS], h[PA_ROW_SPANS], d;   /* d: the current row's D span */
    int64_t wf[PA_ROW_SPANS], hf[PA_ROW_SPANS], df;         /* divisor factors */
    int64_t wn[PA_ROW_SPANS], hn[PA_ROW_SPANS], dn;         /* elements inside the input */
    int h_table;                 /* h, hf and hn filled */
    int64_t plane, od, oh;       /* the current row */
} pa_rows_t;

static void pa_rows_span(const pa_args_t *a, int k, int64_t o, axon_pool_span_t *sp, int64_t *f, int64_t *n) {
    *sp = axon_pool_span(&a->w, &a->g, k, o);
    *f = pa_factor(&a->w, *sp);
    *n = axon_pool_span_count(*sp);
}

static void pa_rows_begin(const pa_args_t *a, int64_t begin, pa_rows_t *t) {
    const axon_spatial_t *g = &a->g;
    for (int64_t j = 0; j < g->out[2]; j++) pa_rows_span(a, 2, j, &t->w[j], &t->wf[j], &t->wn[j]);
    t->h_table = g->out[1] <= PA_ROW_SPANS;
    for (int64_t j = 0; t->h_table && j < g->out[1]; j++) pa_rows_span(a, 1, j, &t->h[j], &t->hf[j], &t->hn[j]);
    const int64_t per_plane = g->out[0] * g->out[1];
    t->plane = begin / per_plane, t->od = begin % per_plane / g->out[1], t->oh = begin % g->out[1];
    pa_rows_span(a, 0, t->od, &t->d, &t->df, &t->dn);
}

/* The current row's D and H spans into sp[0..1]; *rf gets their divisor factors' product, *rn their counts'. */
static inline void pa_rows_spans(const pa_args_t *a, const pa_rows_t *t, axon_pool_span_t *sp, int64_t *rf,
                                 int64_t *rn) {
    sp[0] = t->d;
    if (t->h_table) {
        sp[1] = t->h[t->oh];
        *rf = t->df * t->hf[t->oh], *rn = t->dn * t->hn[t->oh];
        return;
    }
    int64_t f, n;
    pa_rows_span(a, 1, t->oh, &sp[1], &f, &n);
    *rf = t->df * f, *rn = t->dn * n;
}

static inline void pa_rows_next(const pa_args_t *a, pa_rows_t *t) {
    if (++t->oh < a->g.out[1]) return;
    t->oh = 0;
    if (++t->od == a->g.out[0]) t->od = 0, t->plane++;
    pa_rows_span(a, 0, t->od, &t->d, &t->df, &t->dn);
}

/* The divisor of the window at column ow of a row whose D and H factors multiply to rf. */
static inline double pa_row_divisor(const pa_args_t *a, const pa_rows_t *t, int64_t rf, int64_t ow) {
    return a->w.divisor != 0 && !a->w.adaptive ? (double)a->w.divisor : (double)(rf * t->wf[ow]);
}

/* pa_forward_range for float32 in and out: the same sums in the same order (so the same bits), with spans and
 * divisor factors from pa_rows_t instead of once per output (whose integer divisions cost more than a small
 * window's sum: a 2 x 2 average pool ran at torch CPU's time for a few floats per output). */
AXON_CLONES static void pa_forward_rows_f32(const pa_args_t *a, int64_t begin, int64_t end) {
    const axon_spatial_t *g = &a->g;
    const int64_t ih = g->in[1], iw = g->in[2], ow_n = g->out[2];
    pa_rows_t t;
    pa_rows_begin(a, begin, &t);
    float *out = (float *)a->dst;
    for (int64_t r = begin; r < end; r++, pa_rows_next(a, &t)) {
        axon_pool_span_t sp[3];
        int64_t rf, rn;
        pa_rows_spans(a, &t, sp, &rf, &rn);
        const float *x = (const float *)a->src + t.plane * g->in_size;
        for (int64_t ow = 0; ow < ow_n; ow++) {
            sp[2] = t.w[ow];
            const double sum = pa_window_f32(x, sp, ih, iw), div = pa_row_divisor(a, &t, rf, ow);
            const int64_t n = rn * t.wn[ow];
            out[r * ow_n + ow] = (float)(n > 0 && div != 0 ? sum / div : 0.0);
        }
    }
}

/* pa_forward_range's sums for 16-bit floats in and out: each window summed in double in the generic loop's order
 * (the same bits), from typed loads, with pa_rows_t's spans and factors and a typed store, where the generic loop
 * loaded and stored each element through a dtype switch and divided out every span. */
static void pa_forward_rows_16(const pa_args_t *a, int64_t begin, int64_t end) {
    const axon_spatial_t *g = &a->g;
    const int64_t ih = g->in[1], iw = g->in[2], ow_n = g->out[2];
    const int bf16 = a->dt_src == AXON_BFLOAT16;
    pa_rows_t t;
    pa_rows_begin(a, begin, &t);
    uint16_t *out = (uint16_t *)a->dst;
    for (int64_t r = begin; r < end; r++, pa_rows_next(a, &t)) {
        axon_pool_span_t sp[3];
        int64_t rf, rn;
        pa_rows_spans(a, &t, sp, &rf, &rn);
        const uint16_t *x = (const uint16_t *)a->src + t.plane * g->in_size;
        for (int64_t ow = 0; ow < ow_n; ow++) {
            sp[2] = t.w[ow];
            double sum = 0.0;
            for (int64_t d = sp[0].first; d < sp[0].end; d++)
                for (int64_t h = sp[1].first; h < sp[1].end; h++) {
                    const uint16_t *row = x + (d * ih + h) * iw;
                    for (int64_t w = sp[2].first; w < sp[2].end; w++)
                        sum += bf16 ? axon_bf16_to_f32(row[w]) : axon_f16_to_f32(row[w]);
                }
            const double div = pa_row_divisor(a, &t, rf, ow);
            const int64_t n = rn * t.wn[ow];
            const double v = n > 0 && div != 0 ? sum / div : 0.0;
            out[r * ow_n + ow] = bf16 ? axon_f64_to_bf16(v) : axon_f64_to_f16(v);
        }
    }
}

static void pa_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const pa_args_t *a = ctx;
    const axon_spatial_t *g = &a->g;
    const int64_t per_plane = g->out[0] * g->out[1], ih = g->in[1], iw = g->in[2];
    if (a->dt_src == AXON_FLOAT32 && a->dt_dst == AXON_FLOAT32 && g->out[2] <= PA_ROW_SPANS) {
        pa_forward_rows_f32(a, begin, end);
        return;
    }
    if ((a->dt_src == AXON_BFLOAT16 || a->dt_src == AXON_FLOAT16) && a->dt_dst == a->dt_src &&
        g->out[2] <= PA_ROW_SPANS) {
        pa_forward_rows_16(a, begin, end);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        const int64_t plane = r / per_plane, od = r % per_plane / g->out[1], oh = r % g->out[1];
        axon_pool_span_t sp[3] = {axon_pool_span(&a->w, g, 0, od), axon_pool_span(&a->w, g, 1, oh), {0, 0, 1, 0}};
        const int64_t i0 = plane * g->in_size, o0 = r * g->out[2];
        for (int64_t ow = 0; ow < g->out[2]; ow++) {
            sp[2] = axon_pool_span(&a->w, g, 2, ow);
            if (!axon_dtype_is_floating(a->dt_src)) {
                axon_spatial_store_int(a->dt_dst, a->dst, o0 + ow, pa_window_mean_int(a, i0, sp, ih, iw));
                continue;
            }
            double sum = 0.0;
            if (a->dt_src == AXON_FLOAT32) {
                sum = pa_window_f32((const float *)a->src + i0, sp, ih, iw);
            } else {
                for (int64_t d = sp[0].first; d < sp[0].end; d++)
                    for (int64_t h = sp[1].first; h < sp[1].end; h++) {
                        const int64_t row = i0 + (d * ih + h) * iw;
                        for (int64_t w = sp[2].first; w < sp[2].end; w++)
                            sum += axon_spatial_load(a->dt_src, a->src, row + w);
                    }
            }
            const double div = pa_divisor(&a->w, sp);
            const int64_t n = axon_pool_span_count(sp[0]) * axon_pool_span_count(sp[1]) * axon_pool_span_count(sp[2]);
            /* A window with no input element has nothing to average: 0, as PyTorch gives. */
            axon_spatial_store(a->dt_dst, a->dst, o0 + ow, n > 0 && div != 0 ? sum / div : 0.0);
        }
    }
}

#define PA_BLOCK 256 /* outputs of a row whose deltas pa_backward_planes_f32 divides before adding them */

/* Fixed windows that tile the input (stride = kernel, no padding, every window inside it: 2 x 2 pooling at stride
 * 2): each input element takes one window's delta or none, and every divisor is the first window's. */
static int pa_tiles(const pa_args_t *a) {
    if (a->w.adaptive) return 0;
    for (int k = 0; k < 3; k++)
        if (a->w.p[k] != 0 || a->w.s[k] != a->w.k[k] || a->w.d[k] != 1 || a->g.out[k] * a->w.k[k] > a->g.in[k])
            return 0;
    return 1;
}

/* pa_backward_planes_f32 where pa_tiles: rows written once with the window's (float)delta, which is the general
 * loop's (float)(0.0 + delta); it zeroed the plane and added to it window by window (a span, a divisor and a loop of
 * 2 per output: 2 x 2 pooling's backward ran 1.5x torch CPU's time). */
AXON_CLONES static void pa_backward_tiles_f32(const pa_args_t *a, int64_t p, double div) {
    const axon_spatial_t *g = &a->g;
    const int64_t ih = g->in[1], iw = g->in[2], oh_n = g->out[1], ow_n = g->out[2];
    const int64_t kd = a->w.k[0], kh = a->w.k[1], kw = a->w.k[2];
    float *dst = (float *)a->dst + p * g->in_size;
    const float *go = (const float *)a->src + p * g->out_size;
    if (g->out[0] * kd != g->in[0] || oh_n * kh != ih || ow_n * kw != iw)
        memset(dst, 0, (size_t)g->in_size * sizeof(float)); /* the elements no window covers */
    float dl[PA_BLOCK];
    for (int64_t od = 0; od < g->out[0]; od++)
        for (int64_t oh = 0; oh < oh_n; oh++) {
            const float *gr = go + (od * oh_n + oh) * ow_n;
            for (int64_t b0 = 0; b0 < ow_n; b0 += PA_BLOCK) {
                const int64_t m = ow_n - b0 < PA_BLOCK ? ow_n - b0 : PA_BLOCK;
                for (int64_t j = 0; j < m; j++) dl[j] = (float)((double)gr[b0 + j] / div);
                for (int64_t d = od * kd; d < (od + 1) * kd; d++)
                    for (int64_t h = oh * kh; h < (oh + 1) * kh; h++) {
                        float *row = dst + (d * ih + h) * iw + b0 * kw;
                        if (kw == 2)
                            for (int64_t j = 0; j < m; j++) row[2 * j] = row[2 * j + 1] = dl[j];
                        else
                            for (int64_t j = 0; j < m; j++)
                                for (int64_t w = 0; w < kw; w++) row[j * kw + w] = dl[j];
                    }
            }
        }
}

/* pa_backward_range for float32 grad_out and grad_in: the same sums (each element of a window gets
 * (float)((double)element + delta) in output order, so the same bits), on typed rows that GCC vectorizes, where the
 * generic loop loaded and stored each element through a dtype switch (a global average pool's backward, one window
 * per plane, ran 10x torch CPU's time). */
AXON_CLONES static void pa_backward_planes_f32(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const pa_args_t *a = ctx;
    const axon_spatial_t *g = &a->g;
    const int64_t ih = g->in[1], iw = g->in[2];
    axon_pool_span_t span[PA_BLOCK];
    char skip[PA_BLOCK];
    if (pa_tiles(a)) {
        const axon_pool_span_t first[3] = {axon_pool_span(&a->w, g, 0, 0), axon_pool_span(&a->w, g, 1, 0),
                                           axon_pool_span(&a->w, g, 2, 0)};
        const double div = pa_divisor(&a->w, first);
        if (div != 0) {
            for (int64_t p = begin; p < end; p++) pa_backward_tiles_f32(a, p, div);
            return;
        }
    }
    for (int64_t p = begin; p < end; p++) {
        float *dst = (float *)a->dst + p * g->in_size;
        const float *go = (const float *)a->src + p * g->out_size;
        if (a->w.adaptive && g->out_size == 1) { /* a global average pool: one window, the plane; one pass */
            const float v = (float)((double)go[0] / (double)g->in_size);
            for (int64_t i = 0; i < g->in_size; i++) dst[i] = v;
            continue;
        }
        memset(dst, 0, (size_t)g->in_size * sizeof(float));
        for (int64_t od = 0; od < g->out[0]; od++) {
            axon_pool_span_t sp[3] = {axon_pool_span(&a->w, g, 0, od), {0, 0, 1, 0}, {0, 0, 1, 0}};
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                sp[1] = axon_pool_span(&a->w, g, 1, oh);
                /* a block of the row's deltas first (independent divisions), then their adds in output order */
                const float *gr = go + (od * g->out[1] + oh) * g->out[2];
                for (int64_t b0 = 0; b0 < g->out[2]; b0 += PA_BLOCK) {
                    const int64_t m = g->out[2] - b0 < PA_BLOCK ? g->out[2] - b0 : PA_BLOCK;
                    double delta[PA_BLOCK];
                    for (int64_t j = 0; j < m; j++) {
                        sp[2] = axon_pool_span(&a->w, g, 2, b0 + j);
                        const double div = pa_divisor(&a->w, sp);
                        delta[j] = div == 0 ? 0.0 : (double)gr[b0 + j] / div;
                        span[j] = sp[2];
                        skip[j] = div == 0;
                    }
                    for (int64_t j = 0; j < m; j++) {
                        if (skip[j]) continue;
                        for (int64_t d = sp[0].first; d < sp[0].end; d++)
                            for (int64_t h = sp[1].first; h < sp[1].end; h++) {
                                float *row = dst + (d * ih + h) * iw;
                                for (int64_t w = span[j].first; w < span[j].end; w++)
                                    row[w] = (float)((double)row[w] + delta[j]);
                            }
                    }
                }
            }
        }
    }
}

static void pa_backward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const pa_args_t *a = ctx;
    const axon_spatial_t *g = &a->g;
    const int64_t ih = g->in[1], iw = g->in[2];
    for (int64_t p = begin; p < end; p++) {
        const int64_t i0 = p * g->in_size;
        int64_t o = p * g->out_size;
        axon_spatial_zero(a->dt_dst, a->dst, i0, g->in_size);
        for (int64_t od = 0; od < g->out[0]; od++) {
            axon_pool_span_t sp[3] = {axon_pool_span(&a->w, g, 0, od), {0, 0, 1, 0}, {0, 0, 1, 0}};
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                sp[1] = axon_pool_span(&a->w, g, 1, oh);
                for (int64_t ow = 0; ow < g->out[2]; ow++, o++) {
                    sp[2] = axon_pool_span(&a->w, g, 2, ow);
                    const double div = pa_divisor(&a->w, sp);
                    if (div == 0) continue;
                    const double delta = axon_spatial_load(a->dt_src, a->src, o) / div;
                    for (int64_t d = sp[0].first; d < sp[0].end; d++)
                        for (int64_t h = sp[1].first; h < sp[1].end; h++) {
                            const int64_t row = i0 + (d * ih + h) * iw;
                            for (int64_t w = sp[2].first; w < sp[2].end; w++)
                                axon_spatial_store(a->dt_dst, a->dst, row + w,
                                                   axon_spatial_load(a->dt_dst, a->dst, row + w) + delta);
                        }
                }
            }
        }
    }
}

/* Work of one output element: about the window's size. */
static int64_t pa_window_work(const pa_args_t *a) {
    if (a->w.adaptive) return 1 + a->g.in_size / (a->g.out_size > 0 ? a->g.out_size : 1);
    return a->w.k[0] * a->w.k[1] * a->w.k[2];
}

static axon_status_t pa_forward_kernel(const void *args, const axon_exec_t *ex) {
    const pa_args_t *a = args;
    const int64_t rows = a->g.planes * a->g.out[0] * a->g.out[1], work = a->g.out[2] * pa_window_work(a);
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, rows, grain < 1 ? 1 : grain, pa_forward_range, (void *)a);
    return AXON_OK;
}

static axon_status_t pa_backward_kernel(const void *args, const axon_exec_t *ex) {
    const pa_args_t *a = args;
    const int64_t work = a->g.in_size + a->g.out_size * pa_window_work(a);
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    const int f32 = a->dt_src == AXON_FLOAT32 && a->dt_dst == AXON_FLOAT32;
    axon_parallel_for(ex->pool, 0, a->g.planes, grain < 1 ? 1 : grain, f32 ? pa_backward_planes_f32 : pa_backward_range,
                      (void *)a);
    return AXON_OK;
}

/* Shared launch. Forward: dst = out, src = in. Backward: dst = grad_in, src = grad_out. */
static axon_status_t pa_launch(axon_stream_t s, const char *op, int backward, const axon_tensor_t *dst,
                               const axon_tensor_t *src, const axon_pool_geom_t *w, int nspatial) {
    pa_args_t a;
    memset(&a, 0, sizeof a);
    axon_status_t st = backward ? axon_spatial_check(op, nspatial, dst, "grad_in", 1, src, "grad_out", 0, &a.g)
                                : axon_spatial_check(op, nspatial, src, "in", 0, dst, "out", !w->adaptive, &a.g);
    if (st != AXON_OK) return st;
    if (a.g.planes == 0 || (backward ? a.g.in_size : a.g.out_size) == 0) return AXON_OK;
    a.w = *w;
    a.dst = dst->data, a.src = src->data, a.dt_dst = dst->dtype, a.dt_src = src->dtype;
    const size_t es_in = axon_dtype_size(backward ? dst->dtype : src->dtype);
    const size_t es_out = axon_dtype_size(backward ? src->dtype : dst->dtype);
    const uint64_t bytes = (uint64_t)a.g.planes * ((uint64_t)a.g.in_size * es_in + (uint64_t)a.g.out_size * es_out);
    axon_launch_t l = {backward ? pa_backward_kernel : pa_forward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_avg_pool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                   const axon_pool_params_t *p) {
    axon_pool_geom_t w;
    axon_status_t st = axon_pool_geom_fixed("avg_pool", p, 0, &w);
    return st != AXON_OK ? st : pa_launch(s, "avg_pool", 0, out, in, &w, p->nspatial);
}

axon_status_t axon_kernel_avg_pool_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                            const axon_tensor_t *grad_out, const axon_pool_params_t *p) {
    axon_pool_geom_t w;
    axon_status_t st = axon_pool_geom_fixed("avg_pool_backward", p, 0, &w);
    return st != AXON_OK ? st : pa_launch(s, "avg_pool_backward", 1, grad_in, grad_out, &w, p->nspatial);
}

axon_status_t axon_kernel_adaptive_avg_pool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                            int nspatial) {
    axon_pool_geom_t w;
    axon_status_t st = axon_pool_geom_adaptive("adaptive_avg_pool", nspatial, &w);
    return st != AXON_OK ? st : pa_launch(s, "adaptive_avg_pool", 0, out, in, &w, nspatial);
}

axon_status_t axon_kernel_adaptive_avg_pool_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                     const axon_tensor_t *grad_out, int nspatial) {
    axon_pool_geom_t w;
    axon_status_t st = axon_pool_geom_adaptive("adaptive_avg_pool_backward", nspatial, &w);
    return st != AXON_OK ? st : pa_launch(s, "adaptive_avg_pool_backward", 1, grad_in, grad_out, &w, nspatial);
}
