/* The margin losses and their backward (axon/loss.h): multi_margin_loss (a hinge on the margin between the target
 * class and every other) and multilabel_margin_loss (a hinge between every label of a row and every non-label).
 *
 * Rows are independent: the pool takes blocks of rows whose bounds depend only on N, each block sums its rows' losses
 * in order, and the blocks' sums are added in block order, so the reduced loss is the same for any thread count.
 * Every target is checked before anything is written. */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "axon/loss.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

#define ML_BLOCKS 256

typedef struct ml_args {
    const char *name;            /* the op's static name, for messages */
    int multilabel, backward, f64, p;
    axon_loss_reduction_t red;
    double margin;
    int64_t N, C;
    const char *in, *weight, *gout;
    const int64_t *target;
    char *out;                   /* out, or grad_in */
    char *is_target;             /* multilabel: written by the forward, read by the backward */
} ml_args_t;

typedef struct ml_job {
    const ml_args_t *a;
    int64_t nblk;
    double g;                    /* backward, reduced: grad_out's element (/ N for MEAN) */
    _Atomic int64_t bad;         /* the first row with a target out of range; INT64_MAX if none */
    double part[ML_BLOCKS];
} ml_job_t;

static void ml_bounds(const ml_job_t *j, int64_t b, int64_t *lo, int64_t *hi) {
    *lo = b * j->a->N / j->nblk;
    *hi = (b + 1) * j->a->N / j->nblk;
}

static int ml_row_valid(const ml_args_t *a, int64_t n) {
    const int64_t *t = a->target + (a->multilabel ? n * a->C : n);
    if (!a->multilabel) return t[0] >= 0 && t[0] < a->C;
    for (int64_t c = 0; c < a->C; c++)
        if (t[c] < -1 || t[c] >= a->C) return 0;
    return 1;
}

static void ml_scan_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    ml_job_t *j = ctx;
    for (int64_t n = begin; n < end; n++)
        if (!ml_row_valid(j->a, n)) {
            int64_t cur = atomic_load(&j->bad);
            while (n < cur && !atomic_compare_exchange_weak(&j->bad, &cur, n)) {}
            return;
        }
}

/* multi_margin's row n: its loss (sum / C), and with grad != NULL the row's gradient times g written there. */
static double ml_multi_row(const ml_args_t *a, int64_t n, double g, char *grad) {
    const int64_t C = a->C, y = a->target[n];
    const char *x = a->in + (size_t)(n * C) * (a->f64 ? 8 : 4);
    const double xy = axon_f3264_load(x, y, a->f64), w = a->weight ? axon_f3264_load(a->weight, y, a->f64) : 1.0;
    double sum = 0.0, gy = 0.0;
    for (int64_t c = 0; c < C; c++) {
        if (c == y) continue;
        const double z = a->margin - xy + axon_f3264_load(x, c, a->f64);
        if (grad) {
            const double h = z > 0.0 ? (a->p == 1 ? 1.0 : 2.0 * z) * w * g / (double)C : 0.0;
            gy -= h;
            axon_f3264_store(grad, n * C + c, h, a->f64);
        } else if (z > 0.0) {
            sum += (a->p == 1 ? z : z * z) * w;
        }
    }
    if (grad) axon_f3264_store(grad, n * C + y, gy, a->f64);
    return sum / (double)C;
}

/* multilabel's row n: marks its labels in is_target and returns its loss (sum / C). */
static double ml_label_row(const ml_args_t *a, int64_t n) {
    const int64_t C = a->C, *t = a->target + n * C;
    const size_t es = a->f64 ? 8 : 4;
    const char *x = a->in + (size_t)(n * C) * es;
    char *is_t = a->is_target + (size_t)(n * C) * es;
    memset(is_t, 0, (size_t)C * es);
    for (int64_t k = 0; k < C && t[k] >= 0; k++) axon_f3264_store(is_t, t[k], 1.0, a->f64);
    double sum = 0.0;
    for (int64_t k = 0; k < C && t[k] >= 0; k++) {
        const double xj = axon_f3264_load(x, t[k], a->f64);
        for (int64_t c = 0; c < C; c++) {
            if (axon_f3264_load(is_t, c, a->f64) != 0.0) continue;
            const double z = 1.0 - xj + axon_f3264_load(x, c, a->f64);
            if (z > 0.0) sum += z;
        }
    }
    return sum / (double)C;
}

/* multilabel's gradient row n, g per term: each term with a positive margin adds -g at its label's column and +g at
 * its non-label's, so column c's gradient is g times a count, found per column (no scatter, no row buffer): a
 * non-label counts the labels it is within the margin of; a label, minus its repeats in the list times the
 * non-labels within its margin. */
static void ml_label_grad_row(const ml_args_t *a, int64_t n, double g) {
    const int64_t C = a->C, *t = a->target + n * C;
    const size_t es = a->f64 ? 8 : 4;
    const char *x = a->in + (size_t)(n * C) * es, *is_t = a->is_target + (size_t)(n * C) * es;
    int64_t L = 0;
    while (L < C && t[L] >= 0) L++;
    for (int64_t c = 0; c < C; c++) {
        const double xc = axon_f3264_load(x, c, a->f64);
        int64_t count = 0;
        if (axon_f3264_load(is_t, c, a->f64) == 0.0) {
            for (int64_t k = 0; k < L; k++) count += 1.0 - axon_f3264_load(x, t[k], a->f64) + xc > 0.0;
        } else {
            int64_t repeats = 0, within = 0;
            for (int64_t k = 0; k < L; k++) repeats += t[k] == c;
            for (int64_t d = 0; repeats > 0 && d < C; d++)
                within += axon_f3264_load(is_t, d, a->f64) == 0.0 && 1.0 - xc + axon_f3264_load(x, d, a->f64) > 0.0;
            count = -repeats * within;
        }
        axon_f3264_store(a->out, n * C + c, (double)count * g, a->f64);
    }
}

static void ml_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    ml_job_t *j = ctx;
    const ml_args_t *a = j->a;
    const int per_row_g = a->backward && a->red == AXON_LOSS_NONE;
    for (int64_t b = begin; b < end; b++) {
        int64_t lo, hi;
        ml_bounds(j, b, &lo, &hi);
        double part = 0.0;
        for (int64_t n = lo; n < hi; n++) {
            const double g = per_row_g ? axon_f3264_load(a->gout, n, a->f64) : j->g;
            if (a->backward && a->multilabel) {
                ml_label_grad_row(a, n, g / (double)a->C);
            } else if (a->backward) {
                ml_multi_row(a, n, g, a->out);
            } else {
                const double l = a->multilabel ? ml_label_row(a, n) : ml_multi_row(a, n, 0.0, NULL);
                if (a->red == AXON_LOSS_NONE) axon_f3264_store(a->out, n, l, a->f64);
                else part += l;
            }
        }
        j->part[b] = part;
    }
}

static axon_status_t ml_kernel(const void *args, const axon_exec_t *ex) {
    const ml_args_t *a = args;
    const char *op = a->name;
    ml_job_t j;
    j.a = a;
    j.nblk = a->N < ML_BLOCKS ? a->N : ML_BLOCKS;
    j.g = 0.0;
    atomic_init(&j.bad, INT64_MAX);
    const int64_t work = a->multilabel ? a->C * a->C : a->C;
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    if (grain < 1) grain = 1;
    axon_parallel_for(ex->pool, 0, a->N, grain, ml_scan_range, &j);
    const int64_t bad = atomic_load(&j.bad);
    if (bad != INT64_MAX) {
        const int64_t *t = a->target + (a->multilabel ? bad * a->C : bad);
        int64_t v = t[0];
        for (int64_t c = 0; a->multilabel && c < a->C; c++)
            if (t[c] < -1 || t[c] >= a->C) {
                v = t[c];
                break;
            }
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s(): target %" PRId64 " of row %" PRId64 " is out of range for %" PRId64 " classes%s", op,
                         v, bad, a->C, a->multilabel ? " (labels lie in [0, C), -1 ends a row's list)" : "");
    }
    if (a->backward && a->red != AXON_LOSS_NONE) {
        j.g = axon_f3264_load(a->gout, 0, a->f64);
        if (a->red == AXON_LOSS_MEAN) j.g /= (double)a->N;
    }
    const int64_t rows_per_block = j.nblk ? a->N / j.nblk : 1;
    int64_t bgrain = grain / (rows_per_block > 0 ? rows_per_block : 1);
    if (bgrain < 1) bgrain = 1;
    axon_parallel_for(ex->pool, 0, j.nblk, bgrain, ml_range, &j);
    if (a->backward || a->red == AXON_LOSS_NONE) return AXON_OK;
    double sum = 0.0;
    for (int64_t b = 0; b < j.nblk; b++) sum += j.part[b];
    if (a->red == AXON_LOSS_MEAN) sum /= (double)a->N;
    axon_f3264_store(a->out, 0, sum, a->f64);
    return AXON_OK;
}

/* ---- launch ---- */

/* t: contiguous, of dtype dt, ndim dimensions of the given sizes (-1: any); n1 = 1 checks one element instead. */
static axon_status_t ml_check(const char *op, const char *role, const axon_tensor_t *t, int dst, axon_dtype_t dt,
                              int ndim, const int64_t *sizes, int n1) {
    if (!n1) return axon_kernel_check_shaped(t, op, role, dst, dt, ndim, sizes, "axon/loss.h");
    int64_t ones[AXON_MAX_DIMS]; /* one element: every dimension of size 1, however many */
    for (int i = 0; i < AXON_MAX_DIMS; i++) ones[i] = 1;
    return axon_kernel_check_shaped(t, op, role, dst, dt, t->ndim, ones, "axon/loss.h");
}

static axon_status_t ml_launch(axon_stream_t s, ml_args_t *a, const axon_tensor_t *out, const axon_tensor_t *gout,
                               const axon_tensor_t *in, const axon_tensor_t *target, const axon_tensor_t *weight,
                               const axon_tensor_t *is_target) {
    const char *op = a->multilabel ? (a->backward ? "multilabel_margin_loss_backward" : "multilabel_margin_loss")
                                   : (a->backward ? "multi_margin_loss_backward" : "multi_margin_loss");
    a->name = op;
    if ((unsigned)a->red >= AXON_LOSS_REDUCTION_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: reduction %d is not none (0), mean (1) or sum (2)", op,
                         (int)a->red);
    if (!a->multilabel && a->p != 1 && a->p != 2)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: p = %d, only 1 and 2 are supported", op, a->p);
    axon_status_t st = axon_kernel_check_operand(in, op, "in", 0);
    if (st != AXON_OK) return st;
    const axon_dtype_t d = in->dtype;
    if (d != AXON_FLOAT32 && d != AXON_FLOAT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: in dtype %s is not float32 or float64", op,
                         axon_dtype_name(d));
    const int64_t any2[2] = {-1, -1};
    if ((st = ml_check(op, "in", in, 0, d, 2, any2, 0)) != AXON_OK) return st;
    a->N = in->sizes[0], a->C = in->sizes[1];
    const int64_t nc[2] = {a->N, a->C}, n1[1] = {a->N}, c1[1] = {a->C};
    if ((st = ml_check(op, "target", target, 0, AXON_INT64, a->multilabel ? 2 : 1, a->multilabel ? nc : n1, 0)))
        return st;
    if (weight && (st = ml_check(op, "weight", weight, 0, d, 1, c1, 0)) != AXON_OK) return st;
    if (is_target && (st = ml_check(op, "is_target", is_target, !a->backward, d, 2, nc, 0)) != AXON_OK) return st;
    const int full = a->backward || a->red == AXON_LOSS_NONE;
    if ((st = ml_check(op, a->backward ? "grad_in" : "out", out, 1, d, a->backward ? 2 : 1, a->backward ? nc : n1,
                       !full)) != AXON_OK)
        return st;
    if (a->backward && (st = ml_check(op, "grad_out", gout, 0, d, 1, n1, a->red != AXON_LOSS_NONE)) != AXON_OK)
        return st;
    if (a->N == 0 && full) return AXON_OK;
    a->f64 = d == AXON_FLOAT64;
    a->in = in->data;
    a->target = target->data;
    a->weight = weight ? weight->data : NULL;
    a->is_target = is_target ? is_target->data : NULL;
    a->gout = gout ? gout->data : NULL;
    a->out = out->data;
    const uint64_t bytes = (uint64_t)(a->N * a->C) * (a->f64 ? 8u : 4u) * (a->backward || a->multilabel ? 2u : 1u);
    axon_launch_t l = {ml_kernel, a, sizeof *a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_multi_margin_loss(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                            const axon_tensor_t *target, const axon_tensor_t *weight, int p,
                                            double margin, axon_loss_reduction_t reduction) {
    ml_args_t a = {.p = p, .margin = margin, .red = reduction};
    return ml_launch(s, &a, out, NULL, in, target, weight, NULL);
}

axon_status_t axon_kernel_multi_margin_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                     const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                                     const axon_tensor_t *target, const axon_tensor_t *weight, int p,
                                                     double margin, axon_loss_reduction_t reduction) {
    ml_args_t a = {.backward = 1, .p = p, .margin = margin, .red = reduction};
    return ml_launch(s, &a, grad_in, grad_out, in, target, weight, NULL);
}

axon_status_t axon_kernel_multilabel_margin_loss(axon_stream_t s, const axon_tensor_t *out,
                                                 const axon_tensor_t *is_target, const axon_tensor_t *in,
                                                 const axon_tensor_t *target, axon_loss_reduction_t reduction) {
    if (!is_target) return axon_fail(AXON_ERROR_INVALID_ARG, "multilabel_margin_loss: is_target is required");
    ml_args_t a = {.multilabel = 1, .red = reduction};
    return ml_launch(s, &a, out, NULL, in, target, NULL, is_target);
}

axon_status_t axon_kernel_multilabel_margin_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                                          const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                                          const axon_tensor_t *target,
                                                          const axon_tensor_t *is_target,
                                                          axon_loss_reduction_t reduction) {
    if (!is_target)
        return axon_fail(AXON_ERROR_INVALID_ARG, "multilabel_margin_loss_backward: is_target is required");
    ml_args_t a = {.multilabel = 1, .backward = 1, .red = reduction};
    return ml_launch(s, &a, grad_in, grad_out, in, target, NULL, is_target);
}
