/* The column buffer of a convolution (conv_impl.h): gather input patches into rows (im2col) and scatter-add rows
 * back into an input-shaped buffer (col2im, the adjoint, for grad_input and transposed convolutions).
 *
 * Both walk the same map. A row r is one input channel and one kernel offset (kd, kh, kw); its columns are output
 * positions p0 .. p0 + m - 1, taken as runs along the innermost output dimension. Along a run the input column
 * iw = ow * stride - pad + kw * dil moves by `stride`, so the in-bounds part of a run is one strided segment whose
 * ends are computed once: the inner loop has no bounds tests, and the gather of that segment is a single converting
 * copy (axon_convert_fn takes a source stride), whatever the input dtype. */
#include <string.h>

#include "conv_impl.h"

static int64_t c2_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t c2_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* Ceiling of a / b for b > 0 and any a. */
static int64_t c2_ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* One walk over rows: a gather into col (im2col) or a scatter-add of col into acc (col2im). */
typedef struct c2_walk {
    const conv_geom_t *g;
    int scatter;                     /* 0: im2col, 1: col2im */
    const char *x;                   /* im2col source, dtype loaded by ld */
    size_t es_x;
    axon_convert_fn ld;
    char *col;
    const char *ccol;
    size_t es_c;
    char *acc;                       /* col2im target */
    axon_dtype_t cdt;                /* its dtype: float32, float64 or int64 */
    int64_t cld;                     /* row stride of the column buffer, in elements (>= m) */
} c2_walk_t;

static void c2_add(char *acc, int64_t stride, const char *src, int64_t n, axon_dtype_t cdt) {
    if (cdt == AXON_INT64) { /* wrapping, as PyTorch's integer convolutions */
        uint64_t *a = (uint64_t *)acc;
        const uint64_t *s = (const uint64_t *)src;
        for (int64_t i = 0; i < n; i++) a[i * stride] += s[i];
    } else if (cdt == AXON_FLOAT64) {
        double *a = (double *)acc;
        const double *s = (const double *)src;
        for (int64_t i = 0; i < n; i++) a[i * stride] += s[i];
    } else {
        float *a = (float *)acc;
        const float *s = (const float *)src;
        for (int64_t i = 0; i < n; i++) a[i * stride] += s[i];
    }
}

static void c2_row(const c2_walk_t *w, int64_t r, int64_t p0, int64_t m) {
    const conv_geom_t *g = w->g;
    const int64_t c = r / g->ksp, k = r % g->ksp;
    const int64_t kd = k / (g->ks[1] * g->ks[2]), kh = k / g->ks[2] % g->ks[1], kw = k % g->ks[2];
    /* iw = ow * s2 + base lies in [0, xs2) exactly for ow in [lo, hi). */
    const int64_t s2 = g->stride[2], base = kw * g->dil[2] - g->pad[2];
    const int64_t lo = c2_max(0, c2_ceil_div(-base, s2)), hi = c2_max(0, c2_ceil_div(g->xs[2] - base, s2));
    const int64_t plane = g->ys[1] * g->ys[2];
    int64_t od = p0 / plane, oh = p0 / g->ys[2] % g->ys[1], ow = p0 % g->ys[2];
    const size_t es_c = w->es_c;
    for (int64_t j = 0; j < m;) {
        const int64_t len = c2_min(g->ys[2] - ow, m - j);
        const int64_t id = od * g->stride[0] - g->pad[0] + kd * g->dil[0];
        const int64_t ih = oh * g->stride[1] - g->pad[1] + kh * g->dil[1];
        int64_t a = ow, b = ow; /* the in-bounds segment [a, b) of this run */
        if (id >= 0 && id < g->xs[0] && ih >= 0 && ih < g->xs[1]) {
            a = c2_max(ow, lo);
            b = c2_min(ow + len, hi);
            if (b < a) b = a;
        }
        const int64_t xoff = ((c * g->xs[0] + id) * g->xs[1] + ih) * g->xs[2] + a * s2 + base;
        const int64_t coff = r * w->cld + j + (a - ow);
        if (!w->scatter) {
            char *dst = w->col + (size_t)(r * w->cld + j) * es_c;
            if (b == a) {
                memset(dst, 0, (size_t)len * es_c);
            } else {
                memset(dst, 0, (size_t)(a - ow) * es_c);
                w->ld(w->col + (size_t)coff * es_c, 1, w->x + xoff * (int64_t)w->es_x, s2, b - a);
                memset(dst + (size_t)(b - ow) * es_c, 0, (size_t)(ow + len - b) * es_c);
            }
        } else if (b > a) {
            c2_add(w->acc + (size_t)xoff * es_c, s2, w->ccol + (size_t)coff * es_c, b - a, w->cdt);
        }
        j += len;
        ow = 0;
        if (++oh == g->ys[1]) oh = 0, od++;
    }
}

void conv_im2col_ld(const conv_geom_t *g, const char *x, size_t es_x, axon_convert_fn ld, char *col, size_t es_c,
                    int64_t p0, int64_t m, int64_t nrows, int64_t col_ld) {
    c2_walk_t w;
    memset(&w, 0, sizeof w);
    w.g = g, w.x = x, w.es_x = es_x, w.ld = ld, w.col = col, w.es_c = es_c, w.cld = col_ld;
    for (int64_t r = 0; r < nrows; r++) c2_row(&w, r, p0, m);
}

void conv_im2col(const conv_geom_t *g, const char *x, size_t es_x, axon_convert_fn ld, char *col, size_t es_c,
                 int64_t p0, int64_t m, int64_t nrows) {
    conv_im2col_ld(g, x, es_x, ld, col, es_c, p0, m, nrows, m);
}

void conv_col2im_ld(const conv_geom_t *g, const char *col, char *acc, axon_dtype_t cdt, int64_t p0, int64_t m,
                    int64_t nrows, int64_t col_ld) {
    c2_walk_t w;
    memset(&w, 0, sizeof w);
    w.g = g, w.scatter = 1, w.ccol = col, w.acc = acc, w.cdt = cdt, w.es_c = axon_dtype_size(cdt), w.cld = col_ld;
    for (int64_t r = 0; r < nrows; r++) c2_row(&w, r, p0, m);
}

void conv_col2im(const conv_geom_t *g, const char *col, char *acc, axon_dtype_t cdt, int64_t p0, int64_t m,
                 int64_t nrows) {
    conv_col2im_ld(g, col, acc, cdt, p0, m, nrows, m);
}
