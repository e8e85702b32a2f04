/* The connectionist temporal classification loss (axon/loss.h), after Graves et al. 2006 ("Connectionist Temporal
 * Classification", ICML), in log space, with PyTorch's conventions: the forward variables alpha over the extended
 * target (a blank between and around the labels: s even is blank, s odd is label s / 2), the loss -log of the sum of
 * the last two alphas, and a gradient with respect to log_probs of exp(lp) - exp(log(sum alpha beta) + nll - lp),
 * which is the gradient through a log_softmax that produced log_probs, as PyTorch's CPU kernel defines it.
 *
 * Each batch element is independent: one per task of the pool. Sums of exponentials are shifted by their largest
 * term (0 when every term is -inf) and evaluated in the tensors' dtype (loss_ctc_body.h), float32 in float as on
 * PyTorch CPU: in double, float32 took twice CPU's time, most of it in libm's double exp and log. */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "axon/loss.h"
#include "axon/stream.h"
#include "index_impl.h"
#include "internal.h"
#include "kernels_impl.h"

typedef struct ctc_args {
    axon_tensor_t lp, tg, il, tl, nll, alpha, beta, grad, gout;
    int64_t T, N, C, L, blank;
    int f64, tg32, tg_flat, backward, zero_infinity;
} ctc_args_t;

_Static_assert(sizeof(ctc_args_t) <= AXON_LAUNCH_MAX_ARGS, "ctc's arguments travel in one launch block");

typedef struct ctc_job {
    const ctc_args_t *a;
    _Atomic int64_t bad;         /* the first batch element whose target or lengths are invalid; INT64_MAX if none */
} ctc_job_t;

static inline int64_t ctc_i64(const axon_tensor_t *t, int64_t i) { return ((const int64_t *)t->data)[i]; }

/* Label k of element b's target. */
static inline int64_t ctc_label(const ctc_args_t *a, int64_t b, int64_t off, int64_t k) {
    const int64_t i = a->tg_flat ? off + k : b * a->tg.sizes[1] + k;
    return a->tg32 ? ((const int32_t *)a->tg.data)[i] : ((const int64_t *)a->tg.data)[i];
}

/* Extended target position s: blank for even s. */
static inline int64_t ctc_prime(const ctc_args_t *a, int64_t b, int64_t off, int64_t s) {
    return s % 2 == 0 ? a->blank : ctc_label(a, b, off, s / 2);
}

/* The offset of element b's labels in a concatenated target (the sum of the earlier lengths). */
static int64_t ctc_offset(const ctc_args_t *a, int64_t b) {
    int64_t off = 0;
    for (int64_t j = 0; a->tg_flat && j < b; j++) off += ctc_i64(&a->tl, j);
    return off;
}

/* Lengths and labels of element b in range: input_length in [0, T], target_length in [0, S] (or within a
 * concatenated target) with 2 target_length + 1 <= L, labels in [0, C). */
static int ctc_valid(const ctc_args_t *a, int64_t b, int64_t off) {
    const int64_t il = ctc_i64(&a->il, b), tl = ctc_i64(&a->tl, b);
    const int64_t room = a->tg_flat ? a->tg.sizes[0] - off : a->tg.ndim == 2 ? a->tg.sizes[1] : 0;
    if (il < 0 || il > a->T || tl < 0 || tl > room || 2 * tl + 1 > a->L) return 0;
    for (int64_t k = 0; k < tl; k++) {
        const int64_t c = ctc_label(a, b, off, k);
        if (c < 0 || c >= a->C) return 0;
    }
    return 1;
}

#define CTC_T float
#define CTC_NAME(x) x##f32
#define CTC_M(fn) fn##f
#include "loss_ctc_body.h"
#undef CTC_M
#undef CTC_NAME
#undef CTC_T

#define CTC_T double
#define CTC_NAME(x) x##f64
#define CTC_M(fn) fn
#include "loss_ctc_body.h"
#undef CTC_M
#undef CTC_NAME
#undef CTC_T

static void ctc_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    ctc_job_t *j = ctx;
    for (int64_t b = begin; b < end; b++) {
        const int64_t off = ctc_offset(j->a, b);
        if (!ctc_valid(j->a, b, off)) {
            axon_ix_note_first(&j->bad, b);
            continue;
        }
        if (j->a->backward) (j->a->f64 ? ctc_backward_one_f64 : ctc_backward_one_f32)(j->a, b, off);
        else (j->a->f64 ? ctc_forward_one_f64 : ctc_forward_one_f32)(j->a, b, off);
    }
}

static axon_status_t ctc_kernel(const void *args, const axon_exec_t *ex) {
    ctc_job_t j;
    j.a = args;
    atomic_init(&j.bad, INT64_MAX);
    axon_parallel_for(ex->pool, 0, j.a->N, 1, ctc_range, &j);
    const int64_t b = atomic_load(&j.bad);
    if (b != INT64_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "ctc_loss: batch element %" PRId64 " has input length %" PRId64 ", target length %" PRId64
                         " or a label outside what the tensors hold (T %" PRId64 ", %" PRId64 " classes, %" PRId64
                         " extended target positions); its outputs are left unwritten",
                         b, ctc_i64(&j.a->il, b), ctc_i64(&j.a->tl, b), j.a->T, j.a->C, j.a->L);
    return AXON_OK;
}

/* ---- launch ---- */

static axon_status_t ctc_check(const char *op, const char *role, const axon_tensor_t *t, int dst, axon_dtype_t dtype,
                               int ndim, const int64_t *sizes) {
    return axon_kernel_check_shaped(t, op, role, dst, dtype, ndim, sizes, "axon/loss.h");
}

static axon_status_t ctc_prepare(ctc_args_t *a, const char *op, const axon_tensor_t *log_probs,
                                 const axon_tensor_t *targets, const axon_tensor_t *input_lengths,
                                 const axon_tensor_t *target_lengths, const axon_tensor_t *nll,
                                 const axon_tensor_t *log_alpha, int nll_dst, int64_t blank) {
    axon_status_t st = axon_kernel_check_operand(log_probs, op, "log_probs", 0);
    if (st != AXON_OK) return st;
    const axon_dtype_t d = log_probs->dtype;
    if (d != AXON_FLOAT32 && d != AXON_FLOAT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: log_probs dtype %s is not float32 or float64", op,
                         axon_dtype_name(d));
    if (log_probs->ndim != 3)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: log_probs must be [T, N, C], got %d dimensions", op,
                         log_probs->ndim);
    memset(a, 0, sizeof *a);
    a->T = log_probs->sizes[0], a->N = log_probs->sizes[1], a->C = log_probs->sizes[2];
    const int64_t lp_sz[3] = {a->T, a->N, a->C}, n1[1] = {a->N}, any1[1] = {-1}, tg2[2] = {a->N, -1};
    const int64_t al_sz[3] = {a->N, a->T, -1};
    if ((st = ctc_check(op, "log_probs", log_probs, 0, d, 3, lp_sz)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(targets, op, "targets", 0)) != AXON_OK) return st;
    if (targets->dtype != AXON_INT32 && targets->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: targets dtype %s is not int32 or int64", op,
                         axon_dtype_name(targets->dtype));
    a->tg32 = targets->dtype == AXON_INT32;
    a->tg_flat = targets->ndim == 1;
    if ((st = ctc_check(op, "targets", targets, 0, targets->dtype, a->tg_flat ? 1 : 2, a->tg_flat ? any1 : tg2)))
        return st;
    if ((st = ctc_check(op, "input_lengths", input_lengths, 0, AXON_INT64, 1, n1)) != AXON_OK) return st;
    if ((st = ctc_check(op, "target_lengths", target_lengths, 0, AXON_INT64, 1, n1)) != AXON_OK) return st;
    if ((st = ctc_check(op, "neg_log_likelihood", nll, nll_dst, d, 1, n1)) != AXON_OK) return st;
    if ((st = ctc_check(op, "log_alpha", log_alpha, nll_dst, d, 3, al_sz)) != AXON_OK) return st;
    if (blank < 0 || blank >= a->C)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: blank %" PRId64 " is not a class of %" PRId64, op, blank, a->C);
    a->lp = *log_probs, a->tg = *targets, a->il = *input_lengths, a->tl = *target_lengths;
    a->nll = *nll, a->alpha = *log_alpha;
    a->L = log_alpha->sizes[2], a->blank = blank, a->f64 = d == AXON_FLOAT64;
    return AXON_OK;
}

axon_status_t axon_kernel_ctc_loss(axon_stream_t s, const axon_tensor_t *nll, const axon_tensor_t *log_alpha,
                                   const axon_tensor_t *log_probs, const axon_tensor_t *targets,
                                   const axon_tensor_t *input_lengths, const axon_tensor_t *target_lengths,
                                   int64_t blank) {
    ctc_args_t a;
    axon_status_t st = ctc_prepare(&a, "ctc_loss", log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
                                   1, blank);
    if (st != AXON_OK || a.N == 0) return st;
    const uint64_t bytes = (uint64_t)axon_tensor_numel(log_probs) * (a.f64 ? 8u : 4u) +
                           (uint64_t)axon_tensor_numel(log_alpha) * (a.f64 ? 8u : 4u);
    axon_launch_t l = {ctc_kernel, &a, sizeof a, "ctc_loss", bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_ctc_loss_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                            const axon_tensor_t *log_beta, const axon_tensor_t *grad_out,
                                            const axon_tensor_t *log_probs, const axon_tensor_t *targets, const axon_tensor_t *input_lengths,
                                            const axon_tensor_t *target_lengths, const axon_tensor_t *nll,
                                            const axon_tensor_t *log_alpha, int64_t blank, int zero_infinity) {
    ctc_args_t a;
    const char *op = "ctc_loss_backward";
    axon_status_t st = ctc_prepare(&a, op, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, 0,
                                   blank);
    if (st != AXON_OK) return st;
    const axon_dtype_t d = log_probs->dtype;
    const int64_t lp_sz[3] = {a.T, a.N, a.C}, n1[1] = {a.N}, al_sz[3] = {a.N, a.T, a.L};
    if ((st = ctc_check(op, "grad_in", grad_in, 1, d, 3, lp_sz)) != AXON_OK) return st;
    if ((st = ctc_check(op, "log_beta", log_beta, 1, d, 3, al_sz)) != AXON_OK) return st;
    if ((st = ctc_check(op, "grad_out", grad_out, 0, d, 1, n1)) != AXON_OK) return st;
    if (a.N == 0) return AXON_OK;
    a.grad = *grad_in, a.beta = *log_beta, a.gout = *grad_out;
    a.backward = 1, a.zero_infinity = zero_infinity != 0;
    const uint64_t bytes = (uint64_t)axon_tensor_numel(log_probs) * (a.f64 ? 16u : 8u) +
                           (uint64_t)axon_tensor_numel(log_alpha) * (a.f64 ? 16u : 8u);
    axon_launch_t l = {ctc_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}
