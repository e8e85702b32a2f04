/* Group norm forward and backward over a contiguous [N, C, S] tensor (axon/groupnorm.h).
 *
 * A row is one (n, group): D = C / groups channels of S elements each, contiguous. The forward and grad_in take one
 * row per step, rows in parallel; each row is re-read in chunks converted into float64 on the stack, once per pass
 * (the variance is two-pass, so rows with a large mean do not cancel). grad_weight and grad_bias are sums over n for
 * each channel: a second parallel loop over channels, each summing its N runs in order, so no partial sums cross
 * threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/groupnorm.h"
#include "axon/stream.h"
#include "internal.h"
#include "norm_impl.h"

typedef struct gn_args {
    int backward;
    int f32;                    /* float32 tensors: gn_forward_row_f32 (in, out, weight, bias) or gn_backward_row_f32
                                 * (in, grad_out, weight, grad_in) */
    int half;                   /* float16 or bfloat16 in and out (grad_out and grad_in), rows of up to GN_HALF_ROW
                                 * and up to GN_HALF_CHANNELS channels: gn_half_rows, through buffers */
    axon_convert_fn in_to_float, w_to_float, b_to_float, out_from_float; /* half's conversions */
    double *ab;                 /* gn_backward_row_float's channel sums, in the command's own copy of the args */
    int64_t n, c, s, groups, d; /* d = channels per group */
    double eps;
    /* Forward: out, in, w, b, mean, rstd. Backward: out = grad_in, in, go, w, mean, rstd, gw, gb. */
    axon_norm_ref_t out, in, go, w, b, mean, rstd, gw, gb;
} gn_args_t;

static int64_t gn_min(int64_t a, int64_t b) { return a < b ? a : b; }

static void gn_forward_row(const gn_args_t *a, int64_t r) {
    double x[AXON_NORM_CHUNK];
    const int64_t len = a->d * a->s, base = r * len, c0 = (r % a->groups) * a->d;
    /* the sums in AXON_PARTS partial sums (element i of a chunk into part i % AXON_PARTS; chunks are whole multiples
     * of it): one running sum was a chain of dependent adds, 4x the float32 path's time in float16 */
    double sum = 0.0, ss = 0.0, part[AXON_PARTS];
    for (int pass = 0; pass < 2; pass++) {
        const double mean = sum / (double)len;
        memset(part, 0, sizeof part);
        for (int64_t j = 0; j < len; j += AXON_NORM_CHUNK) {
            int64_t m = gn_min(AXON_NORM_CHUNK, len - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            if (pass == 1)
                for (int64_t i = 0; i < m; i++) x[i] = (x[i] - mean) * (x[i] - mean);
            axon_parts_add(part, x, m);
        }
        if (pass == 0) sum = axon_parts_total(part);
        else ss = axon_parts_total(part);
    }
    const double mean = sum / (double)len, rstd = 1.0 / sqrt(ss / (double)len + a->eps);
    axon_norm_put(&a->mean, r, mean);
    axon_norm_put(&a->rstd, r, rstd);
    for (int64_t k = 0; k < a->d; k++) {
        const double scale = rstd * axon_norm_get(&a->w, c0 + k, 1.0), shift = axon_norm_get(&a->b, c0 + k, 0.0);
        const int64_t cb = base + k * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = gn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->in, x, cb + j, m, 0.0);
            for (int64_t i = 0; i < m; i++) x[i] = (x[i] - mean) * scale + shift;
            axon_norm_store(&a->out, x, cb + j, m);
        }
    }
}

/* gn_forward_row for rows read as float, x into y: float32 in, out, weight and bias (each of the last two may be
 * absent) in place, float16 and bfloat16 rows of up to GN_HALF_ROW through float buffers (gn_rows), without
 * converting each chunk through a float64 stack buffer: float64 statistics and the same expression per element, the
 * sums spread over GN_PARTS running partial sums (element i into part i % GN_PARTS, the tail into the first parts in
 * order; gn_forward_row uses fewer, so these are not its bits). The order depends on the row length alone, not on
 * the thread count. */
#define GN_PARTS AXON_NORM_PARTS
#define GN_HALF_ROW 16384     /* floats: the half rows' two buffers are 128 KiB of a worker's (8 MiB) stack */
#define GN_HALF_CHANNELS 2048
/* The row's sum (shift 0, square 0) or sum of squared distances to shift: float64 parts for float32 rows, float
 * for float16 and bfloat16 ones (axon_norm_run_sum_f32). */
AXON_CLONES static double gn_row_sum_f64(const float *x, int64_t len, double shift, int square) {
    double part[AXON_NORM_PARTS] = {0}, t = 0.0;
    axon_norm_run_sum_f64(part, x, len, shift, square);
    for (int k = 0; k < AXON_NORM_PARTS; k++) t += part[k];
    return t;
}
AXON_CLONES static double gn_row_sum_f32(const float *x, int64_t len, double shift, int square) {
    float part[AXON_NORM_PARTS] = {0};
    double t = 0.0;
    axon_norm_run_sum_f32(part, x, len, shift, square);
    for (int k = 0; k < AXON_NORM_PARTS; k++) t += (double)part[k];
    return t;
}

AXON_CLONES static void gn_forward_row_float(const gn_args_t *a, int64_t r, const float *x, float *y, const float *w,
                                             const float *b) {
    const int64_t len = a->d * a->s, c0 = (r % a->groups) * a->d;
    double (*row_sum)(const float *, int64_t, double, int) = a->half ? gn_row_sum_f32 : gn_row_sum_f64;
    const double mean = row_sum(x, len, 0.0, 0) / (double)len;
    const double rstd = 1.0 / sqrt(row_sum(x, len, mean, 1) / (double)len + a->eps);
    axon_norm_put(&a->mean, r, mean);
    axon_norm_put(&a->rstd, r, rstd);
    /* The output in float32, 8 lanes per vector with no conversions (in float64 this loop was half the kernel's
     * time): x - mean with the mean split into two floats, so the difference is as exact as in float64 even for rows
     * with a large mean, then one scale and one shift per channel. Each element is within about 2 ulp of
     * |x_hat * w| + |b| of the exact result (as torch CPU's float32 group norm), where float64 rounded once. */
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    for (int64_t k = 0; k < a->d; k++) {
        const float scale = (float)(rstd * (w ? (double)w[c0 + k] : 1.0)), shift = b ? b[c0 + k] : 0.0f;
        const float *xk = x + k * a->s;
        float *yk = y + k * a->s;
        for (int64_t i = 0; i < a->s; i++) yk[i] = ((xk[i] - mhi) - mlo) * scale + shift;
    }
}

/* Layer norm's gradient over the row, with a weight that is constant along each channel's run. */
static void gn_backward_row(const gn_args_t *a, int64_t r) {
    double x[AXON_NORM_CHUNK], g[AXON_NORM_CHUNK];
    const int64_t len = a->d * a->s, base = r * len, c0 = (r % a->groups) * a->d;
    const double mean = axon_norm_get(&a->mean, r, 0.0), rstd = axon_norm_get(&a->rstd, r, 0.0);
    double s1 = 0.0, s2 = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        const double c1 = s1 / (double)len, c2 = s2 / (double)len;
        for (int64_t k = 0; k < a->d; k++) {
            const double w = axon_norm_get(&a->w, c0 + k, 1.0);
            const int64_t cb = base + k * a->s;
            for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
                int64_t m = gn_min(AXON_NORM_CHUNK, a->s - j);
                axon_norm_load(&a->in, x, cb + j, m, 0.0);
                axon_norm_load(&a->go, g, cb + j, m, 0.0);
                if (pass == 0) {
                    for (int64_t i = 0; i < m; i++) s1 += g[i] * w, s2 += g[i] * w * (x[i] - mean) * rstd;
                } else {
                    for (int64_t i = 0; i < m; i++) x[i] = rstd * (g[i] * w - c1 - (x[i] - mean) * rstd * c2);
                    axon_norm_store(&a->out, x, cb + j, m);
                }
            }
        }
    }
}

/* gn_backward_row for rows read as float: float32 in and grad_out (weight and grad_in float32 or absent) in place
 * (gn_backward_row_f32), float16 and bfloat16 through buffers (gn_half_rows; through float64 chunks a bfloat16
 * backward took 4x torch CPU's time). x and g are row r's, dx its grad_in (NULL: not wanted; it may be x). One
 * pass sums each channel's run, A = sum of g and B = sum of g * x (float64, in GN_PARTS partial sums as the forward),
 * kept in a->ab for the channel gradients; the row's two sums follow from them, s1 = sum of w A and
 * s2 = rstd * sum of w (B - mean A); a second pass writes grad_in. */
AXON_CLONES static void gn_backward_row_float(const gn_args_t *a, int64_t r, const float *x, const float *g,
                                              const float *w, float *dx) {
    const int64_t len = a->d * a->s, c0 = (r % a->groups) * a->d, bulk = a->s - a->s % GN_PARTS;
    const double mean = axon_norm_get(&a->mean, r, 0.0), rstd = axon_norm_get(&a->rstd, r, 0.0);
    double *ab = a->ab + 2 * (r / a->groups * a->c + c0);
    double s1 = 0.0, s2 = 0.0;
    for (int64_t k = 0; k < a->d; k++) {
        const float *xk = x + k * a->s, *gk = g + k * a->s;
        double pa[GN_PARTS] = {0}, pb[GN_PARTS] = {0}, sa = 0.0, sb = 0.0;
        for (int64_t i = 0; i < bulk; i += GN_PARTS)
            for (int q = 0; q < GN_PARTS; q++) pa[q] += (double)gk[i + q], pb[q] += (double)gk[i + q] * xk[i + q];
        for (int64_t i = bulk; i < a->s; i++) pa[i - bulk] += (double)gk[i], pb[i - bulk] += (double)gk[i] * xk[i];
        for (int q = 0; q < GN_PARTS; q++) sa += pa[q], sb += pb[q];
        ab[2 * k] = sa, ab[2 * k + 1] = sb;
        const double wk = w ? (double)w[c0 + k] : 1.0;
        s1 += wk * sa, s2 += wk * (sb - mean * sa);
    }
    if (dx == NULL) return;
    s2 *= rstd;
    const double c1 = s1 / (double)len, c2 = s2 / (double)len;
    /* grad_in = rstd * w * g - (x - mean) * rstd^2 * c2 - rstd * c1, in float32 as the forward's output (the mean
     * split in two floats): within a few ulp of the sum of the three terms' magnitudes. */
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    const float e = (float)(rstd * rstd * c2), f = (float)(rstd * c1);
    for (int64_t k = 0; k < a->d; k++) {
        const float ak = (float)(rstd * (w ? (double)w[c0 + k] : 1.0));
        const float *xk = x + k * a->s, *gk = g + k * a->s;
        float *dk = dx + k * a->s;
        for (int64_t i = 0; i < a->s; i++) dk[i] = (ak * gk[i] - ((xk[i] - mhi) - mlo) * e) - f;
    }
}

static void gn_backward_row_f32(const gn_args_t *a, int64_t r) {
    const int64_t len = a->d * a->s;
    gn_backward_row_float(a, r, (const float *)(const void *)a->in.p + r * len,
                          (const float *)(const void *)a->go.p + r * len, (const float *)(const void *)a->w.p,
                          a->out.p ? (float *)(void *)a->out.p + r * len : NULL);
}

/* grad_weight and grad_bias of channels [begin, end) from gn_backward_row_float's sums, over n in order. */
static void gn_channels_f32(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const gn_args_t *a = ctx;
    for (int64_t c = begin; c < end; c++) {
        double sw = 0.0, sb = 0.0;
        for (int64_t n = 0; n < a->n; n++) {
            const int64_t r = n * a->groups + c / a->d;
            const double *ab = a->ab + 2 * (n * a->c + c);
            sb += ab[0];
            sw += (ab[1] - axon_norm_get(&a->mean, r, 0.0) * ab[0]) * axon_norm_get(&a->rstd, r, 0.0);
        }
        axon_norm_put(&a->gw, c, sw);
        axon_norm_put(&a->gb, c, sb);
    }
}

/* Half rows, forward or backward: the weight and bias converted once per range, each row in and out through
 * buffers (the backward's grad_in written over its x buffer, element by element). */
static void gn_half_rows(const gn_args_t *a, int64_t begin, int64_t end) {
    float x[GN_HALF_ROW], y[GN_HALF_ROW], w[GN_HALF_CHANNELS], b[GN_HALF_CHANNELS];
    const int64_t len = a->d * a->s;
    if (a->w.p) a->w_to_float((char *)w, 1, a->w.p, 1, a->c);
    if (a->b.p) a->b_to_float((char *)b, 1, a->b.p, 1, a->c);
    for (int64_t r = begin; r < end; r++) {
        a->in_to_float((char *)x, 1, a->in.p + r * len * (int64_t)a->in.es, 1, len);
        if (a->backward) {
            a->in_to_float((char *)y, 1, a->go.p + r * len * (int64_t)a->go.es, 1, len);
            gn_backward_row_float(a, r, x, y, a->w.p ? w : NULL, a->out.p ? x : NULL);
            if (a->out.p) a->out_from_float(a->out.p + r * len * (int64_t)a->out.es, 1, (const char *)x, 1, len);
            continue;
        }
        gn_forward_row_float(a, r, x, y, a->w.p ? w : NULL, a->b.p ? b : NULL);
        a->out_from_float(a->out.p + r * len * (int64_t)a->out.es, 1, (const char *)y, 1, len);
    }
}

static void gn_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const gn_args_t *a = ctx;
    if (a->half) {
        gn_half_rows(a, begin, end);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        const int64_t len = a->d * a->s;
        if (a->backward && a->f32) gn_backward_row_f32(a, r);
        else if (a->backward) gn_backward_row(a, r);
        else if (a->f32)
            gn_forward_row_float(a, r, (const float *)(const void *)a->in.p + r * len,
                                 (float *)(void *)a->out.p + r * len, (const float *)(const void *)a->w.p,
                                 (const float *)(const void *)a->b.p);
        else gn_forward_row(a, r);
    }
}

static void gn_channels(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const gn_args_t *a = ctx;
    double x[AXON_NORM_CHUNK], g[AXON_NORM_CHUNK];
    for (int64_t c = begin; c < end; c++) {
        double sw = 0.0, sb = 0.0;
        for (int64_t n = 0; n < a->n; n++) {
            const int64_t r = n * a->groups + c / a->d, cb = (n * a->c + c) * a->s;
            const double mean = axon_norm_get(&a->mean, r, 0.0), rstd = axon_norm_get(&a->rstd, r, 0.0);
            for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
                int64_t m = gn_min(AXON_NORM_CHUNK, a->s - j);
                axon_norm_load(&a->go, g, cb + j, m, 0.0);
                axon_norm_load(&a->in, x, cb + j, m, 0.0);
                for (int64_t i = 0; i < m; i++) sb += g[i], sw += g[i] * (x[i] - mean) * rstd;
            }
        }
        axon_norm_put(&a->gw, c, sw);
        axon_norm_put(&a->gb, c, sb);
    }
}

static axon_status_t gn_kernel(const void *args, const axon_exec_t *ex) {
    gn_args_t a = *(const gn_args_t *)args;
    const int64_t len = a.d * a.s > 0 ? a.d * a.s : 1, per_c = a.n * a.s > 0 ? a.n * a.s : 1;
    const int64_t rgrain = AXON_KERNEL_GRAIN / len, cgrain = AXON_KERNEL_GRAIN / per_c;
    if (a.backward && (a.f32 || a.half)) {
        /* the rows' channel sums, which the channel gradients reuse: 2 per (n, channel) */
        if ((a.ab = malloc((size_t)(2 * a.n * a.c + 1) * sizeof(double))) == NULL)
            return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "group_norm_backward: host scratch for %lld channel sums",
                             (long long)(2 * a.n * a.c));
        axon_parallel_for(ex->pool, 0, a.n * a.groups, rgrain < 1 ? 1 : rgrain, gn_rows, &a);
        if (a.gw.p || a.gb.p)
            axon_parallel_for(ex->pool, 0, a.c, AXON_KERNEL_GRAIN / (a.n + 1) + 1, gn_channels_f32, &a);
        free(a.ab);
        return AXON_OK;
    }
    if (!a.backward || a.out.p)
        axon_parallel_for(ex->pool, 0, a.n * a.groups, rgrain < 1 ? 1 : rgrain, gn_rows, &a);
    if (a.backward && (a.gw.p || a.gb.p))
        axon_parallel_for(ex->pool, 0, a.c, cgrain < 1 ? 1 : cgrain, gn_channels, &a);
    return AXON_OK;
}

/* An absent weight or bias, or one whose values float holds exactly. */
static int gn_floatish(const axon_tensor_t *t) {
    return !t || t->dtype == AXON_FLOAT32 || t->dtype == AXON_FLOAT16 || t->dtype == AXON_BFLOAT16;
}

/* Check in and groups and fill the shape fields of a. */
static axon_status_t gn_shape(const char *op, const axon_tensor_t *in, int64_t groups, gn_args_t *a) {
    axon_status_t st = axon_norm_check(op, "in", in, 0, in, 0);
    if (st != AXON_OK) return st;
    if (in->ndim < 2) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in must have ndim >= 2, got %d", op, in->ndim);
    a->n = in->sizes[0], a->c = in->sizes[1], a->s = 1;
    for (int i = 2; i < in->ndim; i++) a->s *= in->sizes[i];
    if (groups < 1 || a->c % groups != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: groups %lld must be >= 1 and divide the %lld channels", op,
                         (long long)groups, (long long)a->c);
    a->groups = groups;
    a->d = a->c / groups;
    return AXON_OK;
}

axon_status_t axon_kernel_group_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mean,
                                     const axon_tensor_t *rstd, const axon_tensor_t *in, const axon_tensor_t *weight,
                                     const axon_tensor_t *bias, int64_t groups, double eps) {
    const char *op = "group_norm";
    gn_args_t a;
    memset(&a, 0, sizeof a);
    axon_status_t st;
    if (in == NULL || out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, in == NULL ? "in" : "out");
    if ((st = gn_shape(op, in, groups, &a)) != AXON_OK) return st;
    if ((st = axon_norm_check(op, "out", out, 0, in, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "weight", weight, a.c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "bias", bias, a.c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "mean", mean, a.n * groups, NULL, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "rstd", rstd, a.n * groups, NULL, 1)) != AXON_OK)
        return st;
    if (a.n == 0 || a.c == 0) return AXON_OK;
    a.eps = eps;
    a.out = axon_norm_ref(out), a.in = axon_norm_ref(in), a.w = axon_norm_ref(weight), a.b = axon_norm_ref(bias);
    a.mean = axon_norm_ref(mean), a.rstd = axon_norm_ref(rstd);
    a.f32 = in->dtype == AXON_FLOAT32 && out->dtype == AXON_FLOAT32 && (!weight || weight->dtype == AXON_FLOAT32) &&
            (!bias || bias->dtype == AXON_FLOAT32);
    const axon_dtype_t h = in->dtype;
    a.half = (h == AXON_FLOAT16 || h == AXON_BFLOAT16) && out->dtype == h && a.d * a.s <= GN_HALF_ROW &&
             a.c <= GN_HALF_CHANNELS && gn_floatish(weight) && gn_floatish(bias);
    if (a.half) {
        a.in_to_float = axon_convert_get(h, AXON_FLOAT32), a.out_from_float = axon_convert_get(AXON_FLOAT32, h);
        if (weight) a.w_to_float = axon_convert_get(weight->dtype, AXON_FLOAT32);
        if (bias) a.b_to_float = axon_convert_get(bias->dtype, AXON_FLOAT32);
    }
    axon_launch_t l = {gn_kernel, &a, sizeof a, op, (uint64_t)axon_tensor_numel(in) * 2u * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_group_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                              const axon_tensor_t *grad_weight, const axon_tensor_t *grad_bias,
                                              const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                              const axon_tensor_t *mean, const axon_tensor_t *rstd,
                                              const axon_tensor_t *weight, int64_t groups) {
    const char *op = "group_norm_backward";
    gn_args_t a;
    memset(&a, 0, sizeof a);
    axon_status_t st;
    if (in == NULL || grad_out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, in == NULL ? "in" : "grad_out");
    if ((st = gn_shape(op, in, groups, &a)) != AXON_OK) return st;
    if (mean == NULL || rstd == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the forward's %s is NULL", op, mean == NULL ? "mean" : "rstd");
    if ((st = axon_norm_check(op, "grad_out", grad_out, 0, in, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_in", grad_in, 0, in, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "weight", weight, a.c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "mean", mean, a.n * groups, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "rstd", rstd, a.n * groups, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_weight", grad_weight, a.c, NULL, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_bias", grad_bias, a.c, NULL, 1)) != AXON_OK)
        return st;
    if (a.c == 0 || (!grad_in && !grad_weight && !grad_bias)) return AXON_OK;
    if (a.n * a.s == 0 && !grad_weight && !grad_bias) return AXON_OK; /* else zeros go to grad_weight, grad_bias */
    a.backward = 1;
    a.out = axon_norm_ref(grad_in), a.in = axon_norm_ref(in), a.go = axon_norm_ref(grad_out);
    a.w = axon_norm_ref(weight), a.mean = axon_norm_ref(mean), a.rstd = axon_norm_ref(rstd);
    a.gw = axon_norm_ref(grad_weight), a.gb = axon_norm_ref(grad_bias);
    a.f32 = in->dtype == AXON_FLOAT32 && grad_out->dtype == AXON_FLOAT32 &&
            (!weight || weight->dtype == AXON_FLOAT32) && (!grad_in || grad_in->dtype == AXON_FLOAT32);
    const axon_dtype_t h = in->dtype;
    a.half = (h == AXON_FLOAT16 || h == AXON_BFLOAT16) && grad_out->dtype == h && (!grad_in || grad_in->dtype == h) &&
             a.d * a.s <= GN_HALF_ROW && a.c <= GN_HALF_CHANNELS && gn_floatish(weight);
    if (a.half) {
        a.in_to_float = axon_convert_get(h, AXON_FLOAT32), a.out_from_float = axon_convert_get(AXON_FLOAT32, h);
        if (weight) a.w_to_float = axon_convert_get(weight->dtype, AXON_FLOAT32);
    }
    axon_launch_t l = {gn_kernel, &a, sizeof a, op, (uint64_t)axon_tensor_numel(in) * 3u * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}
