/* nll_loss and its backward (axon/loss.h).
 *
 * Positions p = n * K + k are split into at most NLL_BLOCKS blocks whose bounds depend only on N * K; each block is
 * one thread's sequential loop and keeps its own partial sums, which are then added in block order. That makes the
 * reduced loss bitwise identical for any thread count without allocating. A command first scans every target, so a
 * bad one fails the command before anything is written. */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "axon/loss.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"
#include "pointwise_math.h"

#define NLL_BLOCKS 256

typedef struct nll_args {
    int backward;
    axon_loss_reduction_t red;
    int64_t n, c, k, ignore;
    char *out;                    /* forward: out; backward: grad_in */
    char *tw;                     /* forward: total_weight or NULL */
    const char *in;               /* forward: the log-probabilities */
    const char *target;           /* int64 [N, K] */
    const char *weight;           /* [C] or NULL (ones) */
    const char *gout, *twin;      /* backward: grad_out, total_weight (MEAN only) */
    const char *logp;             /* fused log_softmax backward: the forward's log-probabilities, grad_in's dtype */
    int logp_f32;                 /* ... both float32: the vectorized row loop */
    axon_convert_fn ld_logp;
    size_t es_out, es_tw, es_in, es_w, es_g, es_twin;
    axon_convert_fn ld_in, ld_w, ld_g, ld_twin, st_out, st_tw;
} nll_args_t;

typedef struct nll_job {
    const nll_args_t *a;
    int64_t m, nblk;              /* positions and blocks */
    _Atomic int64_t bad;          /* smallest position of a bad target; INT64_MAX if none */
    double loss[NLL_BLOCKS], wsum[NLL_BLOCKS];
} nll_job_t;

static double nll_ld(axon_convert_fn f, const char *p, size_t es, int64_t i) {
    double v;
    f((char *)&v, 1, p + i * (int64_t)es, 1, 1);
    return v;
}

static int64_t nll_target(const nll_args_t *a, int64_t p) {
    int64_t t;
    memcpy(&t, a->target + p * (int64_t)sizeof t, sizeof t);
    return t;
}

static void nll_block_bounds(const nll_job_t *j, int64_t b, int64_t *lo, int64_t *hi) {
    *lo = b * j->m / j->nblk;
    *hi = (b + 1) * j->m / j->nblk;
}

static void nll_scan_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    nll_job_t *j = ctx;
    const nll_args_t *a = j->a;
    for (int64_t b = begin; b < end; b++) {
        int64_t lo, hi;
        nll_block_bounds(j, b, &lo, &hi);
        for (int64_t p = lo; p < hi; p++) {
            int64_t t = nll_target(a, p);
            if (t != a->ignore && (t < 0 || t >= a->c)) {
                int64_t cur = atomic_load(&j->bad);
                while (p < cur && !atomic_compare_exchange_weak(&j->bad, &cur, p)) {
                }
                break;
            }
        }
    }
}

static void nll_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    nll_job_t *j = ctx;
    const nll_args_t *a = j->a;
    for (int64_t b = begin; b < end; b++) {
        int64_t lo, hi;
        nll_block_bounds(j, b, &lo, &hi);
        double acc = 0.0, ws = 0.0;
        for (int64_t p = lo; p < hi; p++) {
            int64_t t = nll_target(a, p);
            double v = 0.0;
            if (t != a->ignore) {
                const int64_t n = p / a->k, kk = p % a->k;
                double w = a->weight ? nll_ld(a->ld_w, a->weight, a->es_w, t) : 1.0;
                v = -w * nll_ld(a->ld_in, a->in, a->es_in, (n * a->c + t) * a->k + kk);
                acc += v;
                ws += w;
            }
            if (a->red == AXON_LOSS_NONE) a->st_out(a->out + p * (int64_t)a->es_out, 1, (const char *)&v, 1, 1);
        }
        j->loss[b] = acc;
        j->wsum[b] = ws;
    }
}

/* The fused log_softmax backward for samples [begin, end): each slab is coef * exp(logp), then coef subtracted at
 * the target, with coef = weight[t] * g (0 for an ignored target). float32 rows (K == 1, the classifier case) use
 * the vectorizable pw_expf; other dtypes and layouts go through float64 element by element. */
AXON_CLONES static void nll_softmax_backward_f32(float *restrict o, const float *restrict lp, int64_t c, float coef) {
    for (int64_t i = 0; i < c; i++) o[i] = coef * pw_expf(lp[i]);
}

static void nll_softmax_backward_rows(const nll_args_t *a, double g, int64_t begin, int64_t end) {
    const int64_t slab = a->c * a->k;
    for (int64_t n = begin; n < end; n++) {
        char *o = a->out + n * slab * (int64_t)a->es_out;
        const char *lp = a->logp + n * slab * (int64_t)a->es_out;
        for (int64_t kk = 0; kk < a->k; kk++) {
            const int64_t p = n * a->k + kk, t = nll_target(a, p);
            double coef = 0.0;
            if (t != a->ignore) {
                const double w = a->weight ? nll_ld(a->ld_w, a->weight, a->es_w, t) : 1.0;
                coef = w * (a->red == AXON_LOSS_NONE ? nll_ld(a->ld_g, a->gout, a->es_g, p) : g);
            }
            if (a->k == 1 && a->logp_f32) {
                float *of = (float *)(void *)o;
                nll_softmax_backward_f32(of, (const float *)(const void *)lp, a->c, (float)coef);
                if (t != a->ignore) of[t] -= (float)coef;
                continue;
            }
            for (int64_t q = 0; q < a->c; q++) {
                const int64_t at = (q * a->k + kk) * (int64_t)a->es_out;
                double v = coef * exp(nll_ld(a->ld_logp, lp, a->es_out, q * a->k + kk));
                if (q == t) v -= coef;
                a->st_out(o + at, 1, (const char *)&v, 1, 1);
            }
        }
    }
}

/* Backward: sample n owns the slab grad_in[n, :, :], zeroed and then written at its targets. */
static void nll_backward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const nll_job_t *j = ctx;
    const nll_args_t *a = j->a;
    double g = 0.0;
    if (a->red != AXON_LOSS_NONE) {
        g = nll_ld(a->ld_g, a->gout, a->es_g, 0);
        if (a->red == AXON_LOSS_MEAN) g /= nll_ld(a->ld_twin, a->twin, a->es_twin, 0);
    }
    const int64_t slab = a->c * a->k;
    if (a->logp) {
        nll_softmax_backward_rows(a, g, begin, end);
        return;
    }
    for (int64_t n = begin; n < end; n++) {
        char *o = a->out + n * slab * (int64_t)a->es_out;
        memset(o, 0, (size_t)slab * a->es_out); /* +0.0 is all zero bits in every float dtype */
        for (int64_t kk = 0; kk < a->k; kk++) {
            const int64_t p = n * a->k + kk, t = nll_target(a, p);
            if (t == a->ignore) continue;
            double w = a->weight ? nll_ld(a->ld_w, a->weight, a->es_w, t) : 1.0;
            double v = -w * (a->red == AXON_LOSS_NONE ? nll_ld(a->ld_g, a->gout, a->es_g, p) : g);
            a->st_out(o + (t * a->k + kk) * (int64_t)a->es_out, 1, (const char *)&v, 1, 1);
        }
    }
}

static axon_status_t nll_kernel(const void *args, const axon_exec_t *ex) {
    const nll_args_t *a = args;
    nll_job_t j;
    j.a = a;
    j.m = a->n * a->k;
    j.nblk = j.m < NLL_BLOCKS ? j.m : NLL_BLOCKS;
    atomic_init(&j.bad, INT64_MAX);
    int64_t per = j.nblk ? j.m / j.nblk : 1;
    int64_t grain = AXON_KERNEL_GRAIN / (per > 0 ? per : 1);
    if (grain < 1) grain = 1;
    axon_parallel_for(ex->pool, 0, j.nblk, grain, nll_scan_range, &j);
    int64_t bad = atomic_load(&j.bad);
    if (bad != INT64_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG, "nll_loss(): target %" PRId64 " is out of bounds for %" PRId64
                         " classes (valid: 0..%" PRId64 " or ignore_index %" PRId64 ")",
                         nll_target(a, bad), a->c, a->c - 1, a->ignore);
    if (a->backward) {
        int64_t slab = a->c * a->k, g2 = AXON_KERNEL_GRAIN / (slab > 0 ? slab : 1);
        axon_parallel_for(ex->pool, 0, a->n, g2 < 1 ? 1 : g2, nll_backward_range, &j);
        return AXON_OK;
    }
    axon_parallel_for(ex->pool, 0, j.nblk, grain, nll_forward_range, &j);
    double loss = 0.0, ws = 0.0;
    for (int64_t b = 0; b < j.nblk; b++) loss += j.loss[b], ws += j.wsum[b];
    if (a->red == AXON_LOSS_MEAN) loss /= ws;
    if (a->red != AXON_LOSS_NONE) a->st_out(a->out, 1, (const char *)&loss, 1, 1);
    if (a->tw) a->st_tw(a->tw, 1, (const char *)&ws, 1, 1);
    return AXON_OK;
}

/* ---- launch-time checks ---- */

/* One operand: well-formed, contiguous, of a float dtype (or int64 for the target) and ndim/sizes as given (ndim < 0:
 * any shape with `numel` elements). */
static axon_status_t nll_check(const char *op, const char *role, const axon_tensor_t *t, int dst, int is_target,
                               int ndim, const int64_t *sizes, int64_t numel) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    if (is_target ? t->dtype != AXON_INT64 : !axon_dtype_is_floating(t->dtype))
        return axon_fail(is_target ? AXON_ERROR_INVALID_ARG : AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not %s", op,
                         role, axon_dtype_name(t->dtype),
                         is_target ? "int64" : "float32, float64, float16 or bfloat16");
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, role,
                         axon_shape_format(t, sa, sizeof sa));
    int ok = ndim < 0 ? axon_tensor_numel(t) == numel : t->ndim == ndim;
    for (int i = 0; ok && ndim >= 0 && i < ndim; i++) ok = t->sizes[i] == sizes[i];
    if (!ok) {
        if (ndim < 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected %" PRId64 " element(s)", op,
                             role, axon_shape_format(t, sa, sizeof sa), numel);
        axon_tensor_t want;
        memset(&want, 0, sizeof want);
        want.ndim = ndim;
        for (int i = 0; i < ndim; i++) want.sizes[i] = sizes[i];
        char sb[160];
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected %s", op, role,
                         axon_shape_format(t, sa, sizeof sa), axon_shape_format(&want, sb, sizeof sb));
    }
    return AXON_OK;
}

/* Checks shared by both directions; `big` is in (forward) or grad_in (backward), [N, C, K]. */
static axon_status_t nll_prepare(nll_args_t *g, const char *op, const axon_tensor_t *big, int big_dst,
                                 const axon_tensor_t *target, const axon_tensor_t *weight,
                                 axon_loss_reduction_t reduction, int64_t ignore_index) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(big, op, big_dst ? "grad_in" : "in", big_dst);
    if (st != AXON_OK) return st;
    if (big->ndim != 3)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be 3-d [N, C, K], got shape %s", op,
                         big_dst ? "grad_in" : "in", axon_shape_format(big, sa, sizeof sa));
    const int64_t nk[2] = {big->sizes[0], big->sizes[2]}, c = big->sizes[1];
    if ((st = nll_check(op, big_dst ? "grad_in" : "in", big, big_dst, 0, 3, big->sizes, 0)) != AXON_OK) return st;
    if ((st = nll_check(op, "target", target, 0, 1, 2, nk, 0)) != AXON_OK) return st;
    if (weight && (st = nll_check(op, "weight", weight, 0, 0, 1, &c, 0)) != AXON_OK) return st;
    if ((unsigned)reduction >= AXON_LOSS_REDUCTION_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: reduction %d is not none (0), mean (1) or sum (2)", op,
                         (int)reduction);
    memset(g, 0, sizeof *g);
    g->red = reduction;
    g->n = nk[0];
    g->c = c;
    g->k = nk[1];
    g->ignore = ignore_index;
    g->target = target->data;
    g->weight = weight ? weight->data : NULL;
    if (weight) g->es_w = axon_dtype_size(weight->dtype), g->ld_w = axon_convert_get(weight->dtype, AXON_FLOAT64);
    g->out = big_dst ? big->data : NULL;
    g->es_out = axon_dtype_size(big->dtype);
    return AXON_OK;
}

axon_status_t axon_kernel_nll_loss(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *total_weight,
                                   const axon_tensor_t *in, const axon_tensor_t *target, const axon_tensor_t *weight,
                                   axon_loss_reduction_t reduction, int64_t ignore_index) {
    const char *op = "nll_loss";
    nll_args_t g;
    axon_status_t st = nll_prepare(&g, op, in, 0, target, weight, reduction, ignore_index);
    if (st != AXON_OK) return st;
    const int64_t nk[2] = {g.n, g.k};
    if (reduction == AXON_LOSS_NONE) st = nll_check(op, "out", out, 1, 0, 2, nk, 0);
    else st = nll_check(op, "out", out, 1, 0, -1, NULL, 1);
    if (st != AXON_OK) return st;
    if (total_weight && (st = nll_check(op, "total_weight", total_weight, 1, 0, -1, NULL, 1)) != AXON_OK) return st;
    if (reduction == AXON_LOSS_NONE && g.n * g.k == 0 && !total_weight) return AXON_OK;
    g.out = out->data;
    g.es_out = axon_dtype_size(out->dtype);
    g.st_out = axon_convert_get(AXON_FLOAT64, out->dtype);
    g.in = in->data;
    g.es_in = axon_dtype_size(in->dtype);
    g.ld_in = axon_convert_get(in->dtype, AXON_FLOAT64);
    if (total_weight) {
        g.tw = total_weight->data;
        g.es_tw = axon_dtype_size(total_weight->dtype);
        g.st_tw = axon_convert_get(AXON_FLOAT64, total_weight->dtype);
    }
    axon_launch_t l = {nll_kernel, &g, sizeof g, op, (uint64_t)(g.n * g.k) * (8u + 2u * (uint64_t)g.es_in)};
    return axon_stream_launch(s, &l);
}

/* The two backward entry points: nll_loss_backward (logp NULL) and the fused one. */
static axon_status_t nll_backward_launch(axon_stream_t s, const char *op, const axon_tensor_t *grad_in,
                                         const axon_tensor_t *grad_out, const axon_tensor_t *logp,
                                         const axon_tensor_t *target, const axon_tensor_t *weight,
                                         const axon_tensor_t *total_weight, axon_loss_reduction_t reduction,
                                         int64_t ignore_index) {
    nll_args_t g;
    axon_status_t st = nll_prepare(&g, op, grad_in, 1, target, weight, reduction, ignore_index);
    if (st != AXON_OK) return st;
    const int64_t nk[2] = {g.n, g.k};
    if (reduction == AXON_LOSS_NONE) st = nll_check(op, "grad_out", grad_out, 0, 0, 2, nk, 0);
    else st = nll_check(op, "grad_out", grad_out, 0, 0, -1, NULL, 1);
    if (st != AXON_OK) return st;
    if (reduction == AXON_LOSS_MEAN) {
        if (!total_weight)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: total_weight is NULL (needed for reduction mean)", op);
        if ((st = nll_check(op, "total_weight", total_weight, 0, 0, -1, NULL, 1)) != AXON_OK) return st;
        g.twin = total_weight->data;
        g.es_twin = axon_dtype_size(total_weight->dtype);
        g.ld_twin = axon_convert_get(total_weight->dtype, AXON_FLOAT64);
    }
    if (axon_tensor_numel(grad_in) == 0 && g.n * g.k == 0) return AXON_OK;
    g.backward = 1;
    g.gout = grad_out->data;
    g.es_g = axon_dtype_size(grad_out->dtype);
    g.ld_g = axon_convert_get(grad_out->dtype, AXON_FLOAT64);
    g.st_out = axon_convert_get(AXON_FLOAT64, grad_in->dtype);
    if (logp) {
        g.logp = logp->data;
        g.logp_f32 = logp->dtype == AXON_FLOAT32;
        g.ld_logp = axon_convert_get(logp->dtype, AXON_FLOAT64);
    }
    axon_launch_t l = {nll_kernel, &g, sizeof g, op,
                       (uint64_t)axon_tensor_numel(grad_in) * g.es_out * (logp ? 2u : 1u)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_nll_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                            const axon_tensor_t *grad_out, const axon_tensor_t *target,
                                            const axon_tensor_t *weight, const axon_tensor_t *total_weight,
                                            axon_loss_reduction_t reduction, int64_t ignore_index) {
    return nll_backward_launch(s, "nll_loss_backward", grad_in, grad_out, NULL, target, weight, total_weight,
                               reduction, ignore_index);
}

axon_status_t axon_kernel_nll_loss_log_softmax_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                        const axon_tensor_t *grad_out, const axon_tensor_t *out,
                                                        const axon_tensor_t *target, const axon_tensor_t *weight,
                                                        const axon_tensor_t *total_weight,
                                                        axon_loss_reduction_t reduction, int64_t ignore_index) {
    const char *op = "nll_loss_log_softmax_backward";
    axon_status_t st = axon_kernel_check_operand(grad_in, op, "grad_in", 1);
    if (st == AXON_OK) st = nll_check(op, "out", out, 0, 0, grad_in->ndim, grad_in->sizes, 0);
    if (st != AXON_OK) return st;
    if (out->dtype != grad_in->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out is %s but grad_in is %s (one dtype)", op,
                         axon_dtype_name(out->dtype), axon_dtype_name(grad_in->dtype));
    return nll_backward_launch(s, op, grad_in, grad_out, out, target, weight, total_weight, reduction, ignore_index);
}
