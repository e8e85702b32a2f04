/* Group norm forward and backward over a contiguous [N, C, S] tensor (axon/groupnorm.h).
 *
 * A row is one (n, group): D = C / groups channels of S elements each, contiguous. The forward and grad_in take one
 * row per step, rows in parallel; each row is re-read in chunks converted into float64 on the stack, once per pass
 * (the variance is two-pass, so rows with a large mean do not cancel). grad_weight and grad_bias are sums over n for
 * each channel: a second parallel loop over channels, each summing its N runs in order, so no partial sums cross
 * threads. */
#include <math.h>
#include <string.h>

#include "axon/groupnorm.h"
#include "axon/stream.h"
#include "internal.h"
#include "norm_impl.h"

typedef struct gn_args {
    int backward;
    int f32;                    /* forward with float32 in, out, weight and bias: gn_forward_row_f32 */
    int64_t n, c, s, groups, d; /* d = channels per group */
    double eps;
    /* Forward: out, in, w, b, mean, rstd. Backward: out = grad_in, in, go, w, mean, rstd, gw, gb. */
    axon_norm_ref_t out, in, go, w, b, mean, rstd, gw, gb;
} gn_args_t;

static int64_t gn_min(int64_t a, int64_t b) { return a < b ? a : b; }

static void gn_forward_row(const gn_args_t *a, int64_t r) {
    double x[AXON_NORM_CHUNK];
    const int64_t len = a->d * a->s, base = r * len, c0 = (r % a->groups) * a->d;
    double sum = 0.0, ss = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        const double mean = sum / (double)len;
        for (int64_t j = 0; j < len; j += AXON_NORM_CHUNK) {
            int64_t m = gn_min(AXON_NORM_CHUNK, len - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            if (pass == 0)
                for (int64_t i = 0; i < m; i++) sum += x[i];
            else
                for (int64_t i = 0; i < m; i++) ss += (x[i] - mean) * (x[i] - mean);
        }
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

/* gn_forward_row for float32 in, out, weight and bias (each of the last two may be absent), without converting each
 * chunk through a stack buffer: float64 statistics and the same expression per element, but the sums spread over
 * GN_PARTS running partial sums (element i into part i % GN_PARTS, the tail into the first parts in order) so that
 * they vectorize, where one running sum is a chain of dependent adds (so not gn_forward_row's bits). The order
 * depends on the row length alone, not on the thread count. */
#define GN_PARTS 32
AXON_CLONES static void gn_forward_row_f32(const gn_args_t *a, int64_t r) {
    const int64_t len = a->d * a->s, bulk = len - len % GN_PARTS, c0 = (r % a->groups) * a->d;
    const float *x = (const float *)a->in.p + r * len, *w = (const float *)a->w.p, *b = (const float *)a->b.p;
    double part[GN_PARTS] = {0}, sum = 0.0, ss = 0.0;
    for (int64_t i = 0; i < bulk; i += GN_PARTS)
        for (int k = 0; k < GN_PARTS; k++) part[k] += (double)x[i + k];
    for (int64_t i = bulk; i < len; i++) part[i - bulk] += (double)x[i];
    for (int k = 0; k < GN_PARTS; k++) sum += part[k];
    const double mean = sum / (double)len;
    memset(part, 0, sizeof part);
    for (int64_t i = 0; i < bulk; i += GN_PARTS)
        for (int k = 0; k < GN_PARTS; k++) part[k] += ((double)x[i + k] - mean) * ((double)x[i + k] - mean);
    for (int64_t i = bulk; i < len; i++) part[i - bulk] += ((double)x[i] - mean) * ((double)x[i] - mean);
    for (int k = 0; k < GN_PARTS; k++) ss += part[k];
    const double rstd = 1.0 / sqrt(ss / (double)len + a->eps);
    axon_norm_put(&a->mean, r, mean);
    axon_norm_put(&a->rstd, r, rstd);
    float *y = (float *)a->out.p + r * len;
    for (int64_t k = 0; k < a->d; k++) {
        const double scale = rstd * (w ? (double)w[c0 + k] : 1.0), shift = b ? (double)b[c0 + k] : 0.0;
        const float *xk = x + k * a->s;
        float *yk = y + k * a->s;
        for (int64_t i = 0; i < a->s; i++) yk[i] = (float)(((double)xk[i] - mean) * scale + shift);
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

static void gn_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const gn_args_t *a = ctx;
    for (int64_t r = begin; r < end; r++) {
        if (a->backward) gn_backward_row(a, r);
        else if (a->f32) gn_forward_row_f32(a, r);
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
    const gn_args_t *a = args;
    const int64_t len = a->d * a->s > 0 ? a->d * a->s : 1, per_c = a->n * a->s > 0 ? a->n * a->s : 1;
    const int64_t rgrain = AXON_KERNEL_GRAIN / len, cgrain = AXON_KERNEL_GRAIN / per_c;
    if (!a->backward || a->out.p)
        axon_parallel_for(ex->pool, 0, a->n * a->groups, rgrain < 1 ? 1 : rgrain, gn_rows, (void *)a);
    if (a->backward && (a->gw.p || a->gb.p))
        axon_parallel_for(ex->pool, 0, a->c, cgrain < 1 ? 1 : cgrain, gn_channels, (void *)a);
    return AXON_OK;
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
    axon_launch_t l = {gn_kernel, &a, sizeof a, op, (uint64_t)axon_tensor_numel(in) * 3u * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}
