/* Phases 1-3 of the convolution command (conv_exec.c) for convolutions whose output channels each read one input
 * channel (conv_impl.h's cxg == 1): depthwise layers with any channel multiplier, and layers with one input channel.
 *
 * Why direct loops: through the column buffer such a layer is a GEMM whose depth is only the kernel's size (9 for
 * 3x3) and whose rows are the channel multiplier (usually 1), so it ran 3-7x slower than torch CPU (docs/benchmarks.md,
 * "Depthwise convolutions"). Here every unit works on one plane, copied with zero padding around it and split by
 * the stride into phase planes, so that each kernel tap is a fixed offset and consecutive outputs read consecutive
 * elements (conv_depthwise_planes.h). The outputs are computed at the phase planes' row width, so a plane of outputs
 * is one flat run of vectors summing the taps in registers (the few columns past the real rows are computed and
 * dropped).
 *
 * Units, each writing only its own outputs, so results do not depend on the pool's size:
 *   1. y = conv(x, w) + bias: one per output plane (batch element, output channel).
 *   2. x = conv^T(y, w) + bias: one per input plane; it adds the planes of its channel's cyg outputs in order. With
 *      stride 1 (and padding the kernel reaches) that is phase 1's flat run over padded dy with the kernel flipped;
 *      otherwise each dy row is scattered back tap by tap with bounds checks.
 *   3. dW: one per output channel, over the whole batch in order; each tap's product with a plane of dy (dy laid
 *      out at the phase planes' row width, zeros past its rows) is summed in vector lanes of the compute type and
 *      added into float64 per tap.
 * float32 and float64 are read and written in place; bfloat16 and float16 planes are converted to float32 scratch. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"
#include "internal.h"

#define DW_T float
#define DW_V v8f_dw
#define DW_FN(name) name##_f32
typedef float v8f_dw __attribute__((vector_size(32)));
#include "conv_depthwise_planes.h"
#undef DW_T
#undef DW_V
#undef DW_FN

#define DW_T double
#define DW_V v4d_dw
#define DW_FN(name) name##_f64
typedef double v4d_dw __attribute__((vector_size(32)));
#include "conv_depthwise_planes.h"
#undef DW_T
#undef DW_V
#undef DW_FN

#define DW_INLINE_TAPS 32
#define DW_SLACK 32 /* elements past a flat run: its rounding up to four vectors (32 float32 lanes) */

typedef struct dw_job {
    const conv_args_t *a;
    const conv_geom_t *g;
    int f64;                         /* compute in float64, else float32 */
    int direct;                      /* dt is the compute dtype: planes are used in place */
    size_t es, esc;                  /* bytes per element of dt and of the compute dtype */
    axon_convert_fn ld, st;          /* dt -> compute dtype, compute dtype -> dt */
    const char *w;                   /* weight [cy, ksp] in the compute dtype */
    const char *bias;                /* phase 1's or 2's bias in the compute dtype, or NULL */
    /* phases 1 and 3: x padded by pad[] to pf[] (the extent the outputs read), split by the strides into phase
     * planes of extents qf[] (pfn elements in all); tap t at offset off_f[t] */
    int64_t pf[3], qf[3], pfn, *off_f;
    /* phase 2, flat when flat_b (stride 1, padding the kernel reaches): dy padded by (k - 1) * dil - pad to pb[], the
     * flipped tap t at off_b[t] */
    int64_t pb[3], pbn, lead_b[3], *off_b;
    int flat_b;
    int64_t slack;                   /* zeros after a padded plane: a flat run's last row reads (k - 1) * dil past the
                                      * row end, and its rounding up to four vectors reads further */
    int64_t *tap_lo, *hi;            /* phase 2's scatter: tap kw's valid outputs along w, [tap_lo[kw], hi[kw]) */
    int64_t *ints;                   /* storage of off_f, off_b, tap_lo, hi: inline or malloc'ed */
    int64_t ints_inline[4 * DW_INLINE_TAPS];
    atomic_int failed;
} dw_job_t;

int conv_depthwise_applies(const conv_geom_t *g) { return g->cxg == 1 && g->ksp > 0; }

static int64_t dw_round(int64_t n) { return (n + DW_SLACK - 1) / DW_SLACK * DW_SLACK; }

/* For each kw: the outputs ow with 0 <= ow * s - pad + kw * dil < xs along w. */
static void dw_tap_ranges(const conv_geom_t *g, int64_t *lo, int64_t *hi) {
    const int64_t s = g->stride[2], p = g->pad[2], d = g->dil[2], X = g->xs[2], Y = g->ys[2];
    for (int64_t kw = 0; kw < g->ks[2]; kw++) {
        const int64_t off = kw * d - p;  /* x index of output 0 */
        int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
        int64_t h = X - off <= 0 ? 0 : (X - off + s - 1) / s;
        if (h > Y) h = Y;
        if (l > h) l = h;
        lo[kw] = l, hi[kw] = h;
    }
}

static const int64_t dw_unit_strides[3] = {1, 1, 1};

/* off[t] for taps t in (kd, kh, kw) order, in phase planes of extents q for strides st (dw_pad_plane's layout). */
static void dw_tap_offsets(const conv_geom_t *g, const int64_t *q, const int64_t *st, int64_t *off) {
    int64_t t = 0;
    const int64_t vol = q[0] * q[1] * q[2];
    for (int64_t kd = 0; kd < g->ks[0]; kd++)
        for (int64_t kh = 0; kh < g->ks[1]; kh++)
            for (int64_t kw = 0; kw < g->ks[2]; kw++) {
                const int64_t a = kd * g->dil[0], b = kh * g->dil[1], c = kw * g->dil[2];
                const int64_t phase = ((a % st[0]) * st[1] + b % st[1]) * st[2] + c % st[2];
                off[t++] = phase * vol + ((a / st[0]) * q[1] + b / st[1]) * q[2] + c / st[2];
            }
}

/* Plane geometry shared by the units. */
static void dw_plan(dw_job_t *j) {
    const conv_geom_t *g = j->g;
    j->flat_b = 1;
    for (int i = 0; i < 3; i++) {
        const int64_t reach = (g->ks[i] - 1) * g->dil[i];
        j->pf[i] = (g->ys[i] - 1) * g->stride[i] + reach + 1;
        j->qf[i] = (j->pf[i] + g->stride[i] - 1) / g->stride[i];
        j->lead_b[i] = reach - g->pad[i];
        j->pb[i] = g->xs[i] + reach;
        j->flat_b = j->flat_b && g->stride[i] == 1 && j->lead_b[i] >= 0;
    }
    j->slack = (g->ks[2] - 1) * g->dil[2] + DW_SLACK;
    j->pfn = g->stride[0] * g->stride[1] * g->stride[2] * j->qf[0] * j->qf[1] * j->qf[2];
    j->pbn = j->pb[0] * j->pb[1] * j->pb[2];
    j->off_f = j->ints, j->off_b = j->ints + g->ksp;
    j->tap_lo = j->ints + 2 * g->ksp, j->hi = j->tap_lo + g->ks[2];
    dw_tap_offsets(g, j->qf, g->stride, j->off_f);
    dw_tap_offsets(g, j->pb, dw_unit_strides, j->off_b);
    dw_tap_ranges(g, j->tap_lo, j->hi);
}

/* One compute-dtype plane of n elements at src: src itself when no conversion is needed, else converted into buf. */
static const char *dw_plane(const dw_job_t *j, const char *src, int64_t n, char *buf) {
    if (j->direct) return src;
    j->ld(buf, 1, src, 1, n);
    return buf;
}

/* rows rows of len elements, from src (row stride ld) to dst (dense), in the compute dtype. */
static void dw_compact(const dw_job_t *j, char *dst, const char *src, int64_t rows, int64_t len, int64_t ld) {
    for (int64_t r = 0; r < rows; r++)
        memcpy(dst + (size_t)(r * len) * j->esc, src + (size_t)(r * ld) * j->esc, (size_t)len * j->esc);
}

/* dw_pad_plane in the compute dtype, with the job's slack of zeros after the n elements of the phase planes. */
static void dw_pad(const dw_job_t *j, const char *src, const int64_t *s, char *dst, char *prow, const int64_t *p,
                   const int64_t *lead, const int64_t *st, const int64_t *q, int64_t n) {
    if (j->f64) dw_pad_plane_f64((const double *)src, s, (double *)dst, p, lead, st, q, n + j->slack, (double *)prow);
    else dw_pad_plane_f32((const float *)src, s, (float *)dst, p, lead, st, q, n + j->slack, (float *)prow);
}

/* Scratch of one participant, in the compute dtype: each buffer NULL when the phase does not use it. */
typedef struct dw_scratch {
    char *xc, *yc;                   /* converted planes of x and y (half dtypes) */
    char *pad;                       /* a padded plane */
    char *row;                       /* a padded row, when split by a stride along w */
    char *tmp;                       /* flat-run outputs, or (phase 3) dy at the padded row width */
    char *wt;                        /* phase 2: a flipped kernel */
} dw_scratch_t;

static int dw_scratch_get(const dw_job_t *j, dw_scratch_t *s, int phase) {
    const conv_geom_t *g = j->g;
    memset(s, 0, sizeof *s);
    int ok = 1;
    if (!j->direct) {
        ok = ok && (s->xc = malloc((size_t)g->xsp * j->esc + 1)) != NULL;
        ok = ok && (s->yc = malloc((size_t)g->ysp * j->esc + 1)) != NULL;
    }
    const int64_t npad = phase == 2 ? j->pbn : j->pfn;
    int64_t ntmp = 0;
    if (phase == 1) ntmp = dw_round(g->ys[1] * j->qf[2]);
    if (phase == 2 && j->flat_b) ntmp = g->xs[0] * dw_round(g->xs[1] * j->pb[2]);
    if (phase == 3) ntmp = g->ys[1] * j->qf[2];
    if (phase != 2 || j->flat_b) ok = ok && (s->pad = malloc((size_t)(npad + j->slack) * j->esc)) != NULL;
    if (ntmp > 0) ok = ok && (s->tmp = malloc((size_t)ntmp * j->esc)) != NULL;
    if (phase == 2) ok = ok && (s->wt = malloc((size_t)g->ksp * j->esc)) != NULL;
    if (phase != 2) ok = ok && (s->row = malloc((size_t)j->pf[2] * j->esc)) != NULL;
    return ok;
}

static void dw_scratch_free(dw_scratch_t *s) {
    free(s->xc), free(s->yc), free(s->pad), free(s->row), free(s->tmp), free(s->wt);
}

/* Phase 1 for output plane u = (n, co), into y (compute dtype, ysp elements). */
static void dw_forward_unit(const dw_job_t *j, const dw_scratch_t *s, int64_t u, char *y) {
    const conv_geom_t *g = j->g;
    const int64_t n = u / g->cy, co = u % g->cy, c = co / g->cyg;
    const char *x = dw_plane(j, j->a->x_in + (size_t)((n * g->cx + c) * g->xsp) * j->es, g->xsp, s->xc);
    const char *w = j->w + (size_t)(co * g->ksp) * j->esc;
    const double b = j->bias == NULL ? 0.0 : j->f64 ? ((const double *)j->bias)[co] : ((const float *)j->bias)[co];
    dw_pad(j, x, g->xs, s->pad, s->row, j->pf, g->pad, g->stride, j->qf, j->pfn);
    const int64_t run = g->ys[1] * j->qf[2], plane = j->qf[1] * j->qf[2];
    for (int64_t od = 0; od < g->ys[0]; od++) {
        if (j->f64) dw_flat_taps_f64((const double *)s->pad + od * plane, run, j->off_f, (const double *)w, g->ksp,
                                     0, b, (double *)s->tmp);
        else dw_flat_taps_f32((const float *)s->pad + od * plane, run, j->off_f, (const float *)w, g->ksp, 0,
                              (float)b, (float *)s->tmp);
        dw_compact(j, y + (size_t)(od * g->ys[1] * g->ys[2]) * j->esc, s->tmp, g->ys[1], g->ys[2], j->qf[2]);
    }
}

static void dw_forward(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    dw_job_t *j = ctx;
    dw_scratch_t s;
    if (!dw_scratch_get(j, &s, 1)) {
        atomic_store(&j->failed, 1);
    } else {
        for (int64_t u = begin; u < end; u++) {
            char *yout = j->a->y_out + (size_t)(u * j->g->ysp) * j->es;
            dw_forward_unit(j, &s, u, j->direct ? yout : s.yc);
            if (!j->direct) j->st(yout, 1, s.yc, 1, j->g->ysp);
        }
    }
    dw_scratch_free(&s);
}

/* Phase 2 for input plane u = (n, c), into x (compute dtype, xsp elements). */
static void dw_backward_data_unit(const dw_job_t *j, const dw_scratch_t *s, int64_t u, char *x) {
    const conv_geom_t *g = j->g;
    const int64_t n = u / g->cx, c = u % g->cx;
    const double b = j->bias == NULL ? 0.0 : j->f64 ? ((const double *)j->bias)[c] : ((const float *)j->bias)[c];
    const int64_t run = g->xs[1] * j->pb[2], region = dw_round(run), plane = j->pb[1] * j->pb[2];
    if (!j->flat_b) {
        for (int64_t i = 0; i < g->xsp; i++) {
            if (j->f64) ((double *)x)[i] = b;
            else ((float *)x)[i] = (float)b;
        }
    }
    for (int64_t m = 0; m < g->cyg; m++) {
        const int64_t co = c * g->cyg + m;
        const char *dy = dw_plane(j, j->a->y_in + (size_t)((n * g->cy + co) * g->ysp) * j->es, g->ysp, s->yc);
        const char *w = j->w + (size_t)(co * g->ksp) * j->esc;
        if (!j->flat_b) {
            if (j->f64) dw_scatter_plane_f64(g, j->tap_lo, j->hi, (const double *)dy, (const double *)w, (double *)x);
            else dw_scatter_plane_f32(g, j->tap_lo, j->hi, (const float *)dy, (const float *)w, (float *)x);
            continue;
        }
        for (int64_t t = 0; t < g->ksp; t++)
            memcpy(s->wt + (size_t)t * j->esc, w + (size_t)(g->ksp - 1 - t) * j->esc, j->esc);
        dw_pad(j, dy, g->ys, s->pad, s->row, j->pb, j->lead_b, dw_unit_strides, j->pb, j->pbn);
        for (int64_t id = 0; id < g->xs[0]; id++) {
            if (j->f64) dw_flat_taps_f64((const double *)s->pad + id * plane, run, j->off_b, (const double *)s->wt,
                                         g->ksp, m > 0, b, (double *)s->tmp + id * region);
            else dw_flat_taps_f32((const float *)s->pad + id * plane, run, j->off_b, (const float *)s->wt, g->ksp,
                                  m > 0, (float)b, (float *)s->tmp + id * region);
        }
    }
    if (j->flat_b)
        for (int64_t id = 0; id < g->xs[0]; id++)
            dw_compact(j, x + (size_t)(id * g->xs[1] * g->xs[2]) * j->esc, s->tmp + (size_t)(id * region) * j->esc,
                       g->xs[1], g->xs[2], j->pb[2]);
}

static void dw_backward_data(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    dw_job_t *j = ctx;
    dw_scratch_t s;
    if (!dw_scratch_get(j, &s, 2)) {
        atomic_store(&j->failed, 1);
    } else {
        for (int64_t u = begin; u < end; u++) {
            char *xout = j->a->x_out + (size_t)(u * j->g->xsp) * j->es;
            dw_backward_data_unit(j, &s, u, j->direct ? xout : s.xc);
            if (!j->direct) j->st(xout, 1, s.xc, 1, j->g->xsp);
        }
    }
    dw_scratch_free(&s);
}

/* Phase 3: acc (ksp taps) += batch element n's share of output channel co's dW. */
static void dw_weight_unit(const dw_job_t *j, const dw_scratch_t *s, int64_t n, int64_t co, double *acc) {
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    const int64_t c = co / g->cyg;
    const char *x = dw_plane(j, a->x_w + (size_t)((n * g->cx + c) * g->xsp) * j->es, g->xsp, s->xc);
    const char *dy = dw_plane(j, a->y_w + (size_t)((n * g->cy + co) * g->ysp) * j->es, g->ysp, s->yc);
    dw_pad(j, x, g->xs, s->pad, s->row, j->pf, g->pad, g->stride, j->qf, j->pfn);
    /* dy at the phase planes' row width, zero past each row, so that a plane of d is one flat run */
    const int64_t run = g->ys[1] * j->qf[2], plane = j->qf[1] * j->qf[2];
    memset(s->tmp, 0, (size_t)run * j->esc);
    for (int64_t od = 0; od < g->ys[0]; od++) {
        for (int64_t oh = 0; oh < g->ys[1]; oh++)
            memcpy(s->tmp + (size_t)(oh * j->qf[2]) * j->esc, dy + (size_t)((od * g->ys[1] + oh) * g->ys[2]) * j->esc,
                   (size_t)g->ys[2] * j->esc);
        if (j->f64) dw_flat_weight_f64((const double *)s->pad + od * plane, (const double *)s->tmp, run, j->off_f,
                                       g->ksp, acc);
        else dw_flat_weight_f32((const float *)s->pad + od * plane, (const float *)s->tmp, run, j->off_f, g->ksp,
                                acc);
    }
}

static void dw_weight(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    dw_job_t *j = ctx;
    const conv_geom_t *g = j->g;
    axon_convert_fn st = axon_convert_get(AXON_FLOAT64, j->a->dt);
    dw_scratch_t s;
    double *acc = malloc((size_t)g->ksp * sizeof(double));
    if (acc == NULL || !dw_scratch_get(j, &s, 3)) {
        atomic_store(&j->failed, 1);
        if (acc != NULL) dw_scratch_free(&s);
        free(acc);
        return;
    }
    for (int64_t co = begin; co < end; co++) {
        memset(acc, 0, (size_t)g->ksp * sizeof(double));
        for (int64_t n = 0; n < g->batch; n++) dw_weight_unit(j, &s, n, co, acc);
        st(j->a->w_out + (size_t)(co * g->ksp) * j->es, 1, (const char *)acc, 1, g->ksp);
    }
    dw_scratch_free(&s);
    free(acc);
}

axon_status_t conv_depthwise_run(const conv_args_t *a, const axon_exec_t *ex, const char *w, const char *bias,
                                 int small) {
    const conv_geom_t *g = &a->g;
    dw_job_t j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.failed, 0);
    j.a = a, j.g = g, j.w = w, j.bias = bias;
    j.f64 = a->dt == AXON_FLOAT64;
    j.direct = a->dt == AXON_FLOAT32 || a->dt == AXON_FLOAT64;
    const axon_dtype_t cdt = j.f64 ? AXON_FLOAT64 : AXON_FLOAT32;
    j.es = axon_dtype_size(a->dt), j.esc = axon_dtype_size(cdt);
    j.ld = axon_convert_get(a->dt, cdt), j.st = axon_convert_get(cdt, a->dt);
    const int64_t nints = 2 * g->ksp + 2 * g->ks[2];
    j.ints = j.ints_inline;
    if (nints > 4 * DW_INLINE_TAPS && (j.ints = malloc((size_t)nints * sizeof(int64_t))) == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "conv: host scratch for a kernel of %" PRId64 " taps", g->ksp);
    dw_plan(&j);
    /* One unit is a plane (or, for dW, a channel over the batch): a grain of 1 unless the whole problem is small. */
    if (a->y_out) {
        const int64_t units = g->batch * g->cy;
        axon_parallel_for(ex->pool, 0, units, small ? units : 1, dw_forward, &j);
    }
    if (a->x_out && !atomic_load(&j.failed)) {
        const int64_t units = g->batch * g->cx;
        axon_parallel_for(ex->pool, 0, units, small ? units : 1, dw_backward_data, &j);
    }
    if (a->w_out && !atomic_load(&j.failed)) axon_parallel_for(ex->pool, 0, g->cy, small ? g->cy : 1, dw_weight, &j);
    if (j.ints != j.ints_inline) free(j.ints);
    if (atomic_load(&j.failed))
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "conv: host scratch for a %" PRId64 "-element plane (%s compute)",
                         j.pfn > j.pbn ? j.pfn : j.pbn, axon_dtype_name(cdt));
    return AXON_OK;
}
