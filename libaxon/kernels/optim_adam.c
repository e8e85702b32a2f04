/* Fused Adam / AdamW steps over lists (axon/optim.h), on the multi-tensor engine.
 *
 * The update is the one PyTorch's CPU _fused_adam_ kernel vectorizes, step for step: bias corrections from the
 * per-tensor step count in double, every per-element product in the opmath type with the hyper-parameters rounded
 * to it, exp_avg moved towards grad with lerp's two-sided formula, and param -= step_size * exp_avg / denom with
 * denom = sqrt(v) / sqrt(bias_correction2) + eps. float16 and bfloat16 tensors are widened to float per block and
 * rounded once on store, as the CPU kernel does. */
#include <math.h>
#include <string.h>

#include "foreach_impl.h"
#include "internal.h"

enum { AD_PARAM, AD_GRAD, AD_AVG, AD_SQ, AD_MAX, AD_STEP, AD_LISTS };
enum { AD_NUM_LR, AD_NUM_SCALE, AD_NUM_INF };

/* One block of m <= FE_BLOCK elements. Written as a few passes of branch-free loops over the block (which sits in L1)
 * rather than one loop with the options tested inside, so that each pass vectorizes. */
#define ADAM_LOOP(T, SQRT)                                                                                        \
    AXON_CLONES static void adam_block_##T(const fe_adam_params_t *p, T *prm, T *grd, T *avg, T *sq, T *mx,       \
                                           double lr, double bc1, double bc2, double scale, int64_t m) {          \
        const T step_size = (T)(lr / bc1), bc2_sqrt = (T)sqrt(bc2), eps = (T)p->eps, beta2 = (T)p->beta2;       \
        const T w1 = (T)(1.0 - p->beta1), c2 = (T)(1.0 - p->beta2), wd = (T)p->weight_decay;                    \
        const T decay = (T)(1.0 - lr * p->weight_decay), sc = (T)(float)scale;                                  \
        /* lerp(exp_avg, grad, w1) = base + coeff * (grad - exp_avg), the side chosen by |w1| < 0.5 */          \
        const int small = fabs((double)w1) < 0.5;                                                                \
        const T coeff = small ? w1 : w1 - (T)1;                                                                  \
        T g[FE_BLOCK];                                                                                           \
        if (!p->has_grad_scale && !p->maximize && !p->amsgrad && (p->decoupled || p->weight_decay == 0.0)) {     \
            /* The common case as one pass, each element's steps in the order of the passes below: the arrays   \
             * stream once (the separate passes re-read each block and break the prefetcher's streams). */       \
            const T dec = p->weight_decay != 0.0 ? decay : (T)1;                                                 \
            if (small)                                                                                           \
                for (int64_t k = 0; k < m; k++) {                                                                \
                    const T gk = grd[k], a1 = coeff * (gk - avg[k]) + avg[k];                                    \
                    const T s1 = sq[k] * beta2 + c2 * gk * gk;                                                   \
                    avg[k] = a1, sq[k] = s1;                                                                     \
                    prm[k] = prm[k] * dec - step_size * a1 / (SQRT(s1) / bc2_sqrt + eps);                       \
                }                                                                                                \
            else                                                                                                 \
                for (int64_t k = 0; k < m; k++) {                                                                \
                    const T gk = grd[k], a1 = coeff * (gk - avg[k]) + gk;                                        \
                    const T s1 = sq[k] * beta2 + c2 * gk * gk;                                                   \
                    avg[k] = a1, sq[k] = s1;                                                                     \
                    prm[k] = prm[k] * dec - step_size * a1 / (SQRT(s1) / bc2_sqrt + eps);                       \
                }                                                                                                \
            return;                                                                                              \
        }                                                                                                        \
        if (p->has_grad_scale)                                                                                   \
            for (int64_t k = 0; k < m; k++) grd[k] = grd[k] / sc;                                                \
        if (p->maximize)                                                                                         \
            for (int64_t k = 0; k < m; k++) g[k] = -grd[k];                                                      \
        else                                                                                                     \
            for (int64_t k = 0; k < m; k++) g[k] = grd[k];                                                       \
        if (p->weight_decay != 0.0 && p->decoupled)                                                              \
            for (int64_t k = 0; k < m; k++) prm[k] = prm[k] * decay;                                             \
        else if (p->weight_decay != 0.0)                                                                         \
            for (int64_t k = 0; k < m; k++) g[k] += prm[k] * wd;                                                 \
        if (small)                                                                                               \
            for (int64_t k = 0; k < m; k++) avg[k] = coeff * (g[k] - avg[k]) + avg[k];                           \
        else                                                                                                     \
            for (int64_t k = 0; k < m; k++) avg[k] = coeff * (g[k] - avg[k]) + g[k];                             \
        for (int64_t k = 0; k < m; k++) sq[k] = sq[k] * beta2 + c2 * g[k] * g[k];                               \
        if (p->amsgrad) {                                                                                        \
            for (int64_t k = 0; k < m; k++) {                                                                    \
                const T old = mx[k], v = sq[k];                                                                  \
                mx[k] = (old != old || v != v) ? old + v : old > v ? old : v; /* NaN propagates */              \
            }                                                                                                    \
            for (int64_t k = 0; k < m; k++) prm[k] = prm[k] - step_size * avg[k] / (SQRT(mx[k]) / bc2_sqrt + eps); \
        } else {                                                                                                 \
            for (int64_t k = 0; k < m; k++) prm[k] = prm[k] - step_size * avg[k] / (SQRT(sq[k]) / bc2_sqrt + eps); \
        }                                                                                                        \
    }

ADAM_LOOP(float, sqrtf)
ADAM_LOOP(double, sqrt)

static void adam_piece(const fe_job_t *j, int64_t i, int64_t lo, int64_t hi) {
    const fe_cmd_t *c = j->c;
    const fe_adam_params_t *p = &c->p.adam;
    _Alignas(16) double buf[AD_STEP][FE_BLOCK];
    double step;
    axon_convert_get(c->dtype[AD_STEP], AXON_FLOAT64)((char *)&step, 1, fe_ptr(c, AD_STEP, i), 1, 1);
    const int nl = p->amsgrad ? AD_MAX + 1 : AD_MAX;
    /* The bias corrections, once per piece (two pow calls per block cost as much as the block's arithmetic). */
    const double bc1 = 1.0 - pow(p->beta1, step), bc2 = 1.0 - pow(p->beta2, step);
    for (int64_t off = lo; off < hi; off += FE_BLOCK) {
        const int64_t m = hi - off < FE_BLOCK ? hi - off : FE_BLOCK;
        void *v[AD_STEP] = {NULL, NULL, NULL, NULL, NULL};
        for (int k = 0; k < nl; k++) v[k] = axon_fe_load(c, k, i, off, m, buf[k]);
        if (c->f64)
            adam_block_double(p, v[AD_PARAM], v[AD_GRAD], v[AD_AVG], v[AD_SQ], v[AD_MAX], j->num[AD_NUM_LR], bc1,
                              bc2, j->num[AD_NUM_SCALE], m);
        else
            adam_block_float(p, v[AD_PARAM], v[AD_GRAD], v[AD_AVG], v[AD_SQ], v[AD_MAX], j->num[AD_NUM_LR], bc1,
                             bc2, j->num[AD_NUM_SCALE], m);
        for (int k = 0; k < nl; k++)
            if (k != AD_GRAD || p->has_grad_scale) axon_fe_store(c, k, i, off, m, v[k]);
    }
}

axon_status_t axon_optim_adam(axon_stream_t s, const axon_adam_options_t *o, int64_t n, const axon_tensor_t *params,
                              const axon_tensor_t *grads, const axon_tensor_t *exp_avgs,
                              const axon_tensor_t *exp_avg_sqs, const axon_tensor_t *max_exp_avg_sqs,
                              const axon_tensor_t *state_steps) {
    const char *name = o && o->decoupled ? "fused_adamw" : "fused_adam";
    if (o == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: options are NULL", name);
    if (n < 0) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: list length %lld is negative", name, (long long)n);
    if (n == 0) return AXON_OK;
    static const char *const roles[AD_LISTS] = {"params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs",
                                                "state_steps"};
    fe_launch_t l;
    memset(&l, 0, sizeof l);
    l.name = name;
    l.n = n;
    l.lists[AD_PARAM] = params;
    l.lists[AD_GRAD] = grads;
    l.lists[AD_AVG] = exp_avgs;
    l.lists[AD_SQ] = exp_avg_sqs;
    l.lists[AD_MAX] = o->amsgrad ? max_exp_avg_sqs : NULL;
    axon_status_t st = axon_fe_check_list(name, roles[AD_PARAM], n, params, NULL, NULL, 1);
    for (int k = AD_GRAD; st == AXON_OK && k <= AD_MAX; k++) {
        if (k == AD_MAX && !o->amsgrad) break;
        st = axon_fe_check_list(name, roles[k], n, l.lists[k], params, roles[AD_PARAM], 1);
    }
    if (st == AXON_OK) st = axon_fe_check_list(name, roles[AD_STEP], n, state_steps, NULL, NULL, 0);
    for (int64_t i = 0; st == AXON_OK && i < n; i++)
        if (axon_tensor_numel(&state_steps[i]) != 1)
            st = axon_fail(AXON_ERROR_INVALID_ARG, "%s: state_steps[%lld] must hold one element, it has %lld", name,
                           (long long)i, (long long)axon_tensor_numel(&state_steps[i]));
    if (st == AXON_OK) st = axon_fe_set_number(&l, AD_NUM_LR, "lr", o->lr_tensor, o->lr);
    if (st == AXON_OK) st = axon_fe_set_number(&l, AD_NUM_SCALE, "grad_scale", o->grad_scale, 1.0);
    if (st == AXON_OK) st = axon_fe_set_number(&l, AD_NUM_INF, "found_inf", o->found_inf, 0.0);
    if (st != AXON_OK) return st;
    l.lists[AD_STEP] = state_steps;
    l.cmd.piece = adam_piece;
    l.cmd.nlists = AD_LISTS;
    l.cmd.skip_num = o->found_inf ? AD_NUM_INF : -1;
    l.cmd.p.adam.beta1 = o->beta1;
    l.cmd.p.adam.beta2 = o->beta2;
    l.cmd.p.adam.weight_decay = o->weight_decay;
    l.cmd.p.adam.eps = o->eps;
    l.cmd.p.adam.amsgrad = o->amsgrad != 0;
    l.cmd.p.adam.maximize = o->maximize != 0;
    l.cmd.p.adam.decoupled = o->decoupled != 0;
    l.cmd.p.adam.has_grad_scale = o->grad_scale != NULL;
    l.shape_list = AD_PARAM;
    l.compute_list = AD_PARAM;
    return axon_fe_submit(s, &l);
}
