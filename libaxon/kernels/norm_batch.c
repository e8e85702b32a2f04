/* Batch norm forward (training and inference) and backward over a contiguous [N, C, S] tensor (axon/batchnorm.h).
 *
 * One channel per step, channels in parallel. A channel is N runs of S contiguous elements, one per batch index; its
 * statistics are sums over those runs (in AXON_PARTS partial sums), each run re-read in chunks converted into
 * float64 on the stack, once per pass. Everything a channel needs (mean, invstd, weight, the running stats) is per channel, so no
 * partial sums cross threads and results do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "axon/batchnorm.h"
#include "axon/stream.h"
#include "internal.h"
#include "norm_impl.h"

typedef struct bn_args {
    int training, backward;
    int f32;                    /* training backward, float32 in, grad_out, grad_in: bn_backward_channel_f32 */
    int64_t n, c, s;
    double momentum, eps;
    /* Forward: out, in, w, b, save_mean, save_invstd, running_mean, running_var.
     * Backward: out = grad_in, in, go, w, mean, inv (running_var when !training), gw, gb. */
    axon_norm_ref_t out, in, go, w, b, smean, sinv, rmean, rvar, mean, inv, gw, gb;
} bn_args_t;

static int64_t bn_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Sum over channel c of f(x) for the two statistics passes: x - shift, squared when `square`. The sums run in
 * AXON_PARTS partial sums, so they vectorize (the order depends on the shape alone). */
AXON_CLONES static double bn_sum(const bn_args_t *a, int64_t c, double shift, int square) {
    double x[AXON_NORM_CHUNK], part[AXON_PARTS] = {0};
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            if (square)
                for (int64_t i = 0; i < m; i++) x[i] = (x[i] - shift) * (x[i] - shift);
            axon_parts_add(part, x, m);
        }
    }
    return axon_parts_total(part);
}

AXON_CLONES static void bn_forward_channel(const bn_args_t *a, int64_t c) {
    double x[AXON_NORM_CHUNK];
    double mean, invstd;
    if (a->training) {
        const double count = (double)(a->n * a->s);
        mean = bn_sum(a, c, 0.0, 0) / count;
        const double ss = bn_sum(a, c, mean, 1);
        invstd = 1.0 / sqrt(ss / count + a->eps);
        axon_norm_put(&a->smean, c, mean);
        axon_norm_put(&a->sinv, c, invstd);
        /* count == 1 gives 0/0 = NaN for the unbiased variance, as PyTorch's CPU kernel does. */
        if (a->rmean.p)
            axon_norm_put(&a->rmean, c, a->momentum * mean + (1.0 - a->momentum) * axon_norm_get(&a->rmean, c, 0));
        if (a->rvar.p)
            axon_norm_put(&a->rvar, c,
                          a->momentum * (ss / (count - 1.0)) + (1.0 - a->momentum) * axon_norm_get(&a->rvar, c, 0));
    } else {
        mean = axon_norm_get(&a->rmean, c, 0.0);
        invstd = 1.0 / sqrt(axon_norm_get(&a->rvar, c, 0.0) + a->eps);
    }
    const double scale = invstd * axon_norm_get(&a->w, c, 1.0), shift = axon_norm_get(&a->b, c, 0.0);
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            for (int64_t i = 0; i < m; i++) x[i] = (x[i] - mean) * scale + shift;
            axon_norm_store(&a->out, x, base + j, m);
        }
    }
}

AXON_CLONES static void bn_backward_channel(const bn_args_t *a, int64_t c) {
    double x[AXON_NORM_CHUNK], g[AXON_NORM_CHUNK];
    const double count = (double)(a->n * a->s);
    const double mean = axon_norm_get(&a->mean, c, 0.0);
    const double inv = a->training ? axon_norm_get(&a->inv, c, 0.0)
                                   : 1.0 / sqrt(axon_norm_get(&a->inv, c, 0.0) + a->eps);
    double part_g[AXON_PARTS] = {0}, part_dot[AXON_PARTS] = {0};
    /* Inference grad_in needs neither sum: skip the pass when nothing else does. */
    const int need_sums = a->gw.p || a->gb.p || (a->out.p && a->training);
    for (int64_t n = 0; need_sums && n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            axon_norm_load(&a->go, g, base + j, m, 0.0);
            for (int64_t i = 0; i < m; i++) x[i] = g[i] * (x[i] - mean);
            axon_parts_add(part_g, g, m);
            axon_parts_add(part_dot, x, m);
        }
    }
    const double sum_g = axon_parts_total(part_g), dot = axon_parts_total(part_dot);
    axon_norm_put(&a->gw, c, dot * inv);
    axon_norm_put(&a->gb, c, sum_g);
    if (!a->out.p) return;
    const double w = axon_norm_get(&a->w, c, 1.0);
    const double gmean = a->training ? sum_g / count : 0.0, k = a->training ? dot * inv * inv / count : 0.0;
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->go, g, base + j, m, 0.0);
            if (a->training) {
                axon_norm_load(&a->in, x, base + j, m, 0.0);
                for (int64_t i = 0; i < m; i++) g[i] = (g[i] - gmean - (x[i] - mean) * k) * inv * w;
            } else {
                for (int64_t i = 0; i < m; i++) g[i] = g[i] * inv * w;
            }
            axon_norm_store(&a->out, g, base + j, m);
        }
    }
}

/* bn_backward_channel for float32 in, grad_out and grad_in, in training, on typed runs instead of chunks converted
 * through stack buffers (1.7-2.7x torch CPU's time that way): the sums in float64 as there, spread over BN_PARTS
 * partial sums (element e of a run into part e % BN_PARTS) for independent chains of adds; grad_in in float32
 * (8 lanes, no conversions) with the mean split in two floats as group norm does (norm_group.c). */
#define BN_PARTS 32
AXON_CLONES static void bn_backward_channel_f32(const bn_args_t *a, int64_t c) {
    const double count = (double)(a->n * a->s);
    const double mean = axon_norm_get(&a->mean, c, 0.0), inv = axon_norm_get(&a->inv, c, 0.0);
    const int64_t bulk = a->s - a->s % BN_PARTS;
    double pg[BN_PARTS] = {0}, pd[BN_PARTS] = {0}, sum_g = 0.0, dot = 0.0;
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        const float *x = (const float *)a->in.p + base, *g = (const float *)a->go.p + base;
        for (int64_t i = 0; i < bulk; i += BN_PARTS)
            for (int q = 0; q < BN_PARTS; q++) {
                pg[q] += (double)g[i + q];
                pd[q] += (double)g[i + q] * ((double)x[i + q] - mean);
            }
        for (int64_t i = bulk; i < a->s; i++) {
            pg[i - bulk] += (double)g[i];
            pd[i - bulk] += (double)g[i] * ((double)x[i] - mean);
        }
    }
    for (int q = 0; q < BN_PARTS; q++) sum_g += pg[q], dot += pd[q];
    axon_norm_put(&a->gw, c, dot * inv);
    axon_norm_put(&a->gb, c, sum_g);
    if (!a->out.p) return;
    const double w = axon_norm_get(&a->w, c, 1.0), gmean = sum_g / count, k = dot * inv * inv / count;
    const float gm = (float)gmean, kf = (float)k, sc = (float)(inv * w);
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        const float *x = (const float *)a->in.p + base, *g = (const float *)a->go.p + base;
        float *dx = (float *)a->out.p + base;
        for (int64_t i = 0; i < a->s; i++) dx[i] = ((g[i] - gm) - ((x[i] - mhi) - mlo) * kf) * sc;
    }
}

static void bn_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const bn_args_t *a = ctx;
    for (int64_t c = begin; c < end; c++) {
        if (a->backward && a->f32) bn_backward_channel_f32(a, c);
        else if (a->backward) bn_backward_channel(a, c);
        else bn_forward_channel(a, c);
    }
}

static axon_status_t bn_kernel(const void *args, const axon_exec_t *ex) {
    const bn_args_t *a = args;
    const int64_t per = a->n * a->s > 0 ? a->n * a->s : 1;
    int64_t grain = AXON_KERNEL_GRAIN / per;
    axon_parallel_for(ex->pool, 0, a->c, grain < 1 ? 1 : grain, bn_range, (void *)a);
    return AXON_OK;
}

/* in's [N, C, S] split, after in's own check. */
static axon_status_t bn_shape(const char *op, const axon_tensor_t *in, int64_t *n, int64_t *c, int64_t *s) {
    axon_status_t st = axon_norm_check(op, "in", in, 0, in, 0);
    if (st != AXON_OK) return st;
    if (in->ndim < 2) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in must have ndim >= 2, got %d", op, in->ndim);
    *n = in->sizes[0], *c = in->sizes[1], *s = 1;
    for (int i = 2; i < in->ndim; i++) *s *= in->sizes[i];
    return AXON_OK;
}

static axon_status_t bn_enqueue(axon_stream_t s, const bn_args_t *a, const char *op, const axon_tensor_t *in) {
    if (a->n * a->c * a->s == 0) return AXON_OK;
    axon_launch_t l = {bn_kernel, a, sizeof *a, op,
                       (uint64_t)axon_tensor_numel(in) * (a->backward ? 3u : 2u) * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_batch_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *save_mean,
                                     const axon_tensor_t *save_invstd, const axon_tensor_t *running_mean,
                                     const axon_tensor_t *running_var, const axon_tensor_t *in,
                                     const axon_tensor_t *weight, const axon_tensor_t *bias, int training,
                                     double momentum, double eps) {
    const char *op = "batch_norm";
    axon_status_t st;
    int64_t n = 0, c = 0, sp = 0;
    if (in == NULL || out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, in == NULL ? "in" : "out");
    if ((st = bn_shape(op, in, &n, &c, &sp)) != AXON_OK) return st;
    if ((st = axon_norm_check(op, "out", out, 0, in, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "weight", weight, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "bias", bias, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "running_mean", running_mean, c, NULL, training)) != AXON_OK ||
        (st = axon_norm_check(op, "running_var", running_var, c, NULL, training)) != AXON_OK ||
        (st = axon_norm_check(op, "save_mean", save_mean, c, NULL, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "save_invstd", save_invstd, c, NULL, 1)) != AXON_OK)
        return st;
    if (!training && (running_mean == NULL || running_var == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: inference needs running_mean and running_var", op);
    if (!training && (save_mean || save_invstd))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: inference computes no save_mean or save_invstd", op);
    bn_args_t a;
    memset(&a, 0, sizeof a);
    a.training = training != 0;
    a.n = n, a.c = c, a.s = sp;
    a.momentum = momentum, a.eps = eps;
    a.out = axon_norm_ref(out), a.in = axon_norm_ref(in), a.w = axon_norm_ref(weight), a.b = axon_norm_ref(bias);
    a.smean = axon_norm_ref(save_mean), a.sinv = axon_norm_ref(save_invstd);
    a.rmean = axon_norm_ref(running_mean), a.rvar = axon_norm_ref(running_var);
    return bn_enqueue(s, &a, op, in);
}

axon_status_t axon_kernel_batch_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                              const axon_tensor_t *grad_weight, const axon_tensor_t *grad_bias,
                                              const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                              const axon_tensor_t *weight, const axon_tensor_t *mean,
                                              const axon_tensor_t *invstd, int training, double eps) {
    const char *op = "batch_norm_backward";
    const char *inv_role = training ? "invstd" : "running_var";
    axon_status_t st;
    int64_t n = 0, c = 0, sp = 0;
    if (in == NULL || grad_out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, in == NULL ? "in" : "grad_out");
    if ((st = bn_shape(op, in, &n, &c, &sp)) != AXON_OK) return st;
    if (mean == NULL || invstd == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, mean == NULL ? "mean" : inv_role);
    if ((st = axon_norm_check(op, "grad_out", grad_out, 0, in, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_in", grad_in, 0, in, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "weight", weight, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "mean", mean, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, inv_role, invstd, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_weight", grad_weight, c, NULL, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_bias", grad_bias, c, NULL, 1)) != AXON_OK)
        return st;
    if (!grad_in && !grad_weight && !grad_bias) return AXON_OK;
    bn_args_t a;
    memset(&a, 0, sizeof a);
    a.training = training != 0, a.backward = 1;
    a.n = n, a.c = c, a.s = sp;
    a.eps = eps;
    a.out = axon_norm_ref(grad_in), a.in = axon_norm_ref(in), a.go = axon_norm_ref(grad_out);
    a.w = axon_norm_ref(weight), a.mean = axon_norm_ref(mean), a.inv = axon_norm_ref(invstd);
    a.gw = axon_norm_ref(grad_weight), a.gb = axon_norm_ref(grad_bias);
    a.f32 = a.training && in->dtype == AXON_FLOAT32 && grad_out->dtype == AXON_FLOAT32 &&
            (!grad_in || grad_in->dtype == AXON_FLOAT32);
    if (n * sp == 0 && c > 0 && (grad_weight || grad_bias)) {
        /* No elements: the sums are zero, but grad_weight and grad_bias still have C values to write. */
        a.n = 1, a.s = 0;
    }
    if (a.n * a.c * a.s == 0 && !(a.c > 0 && (grad_weight || grad_bias))) return AXON_OK;
    axon_launch_t l = {bn_kernel, &a, sizeof a, op, (uint64_t)axon_tensor_numel(in) * 3u * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}
