/* Fused SGD steps over lists (axon/optim.h), on the multi-tensor engine.
 *
 * PyTorch's CPU _fused_sgd_ step, formula by formula, in the opmath type: unscale (and write back) the gradient,
 * negate it for maximize, add weight decay, run the momentum buffer (set to the gradient on the first step), take
 * the Nesterov look-ahead or the buffer itself, then param -= lr * grad. */
#include <math.h>
#include <string.h>

#include "foreach_impl.h"
#include "internal.h"

enum { SG_PARAM, SG_GRAD, SG_BUF, SG_LISTS };
enum { SG_NUM_LR, SG_NUM_SCALE, SG_NUM_INF };

/* One block of m <= FE_BLOCK elements, as passes of branch-free loops so that each vectorizes. */
#define SGD_LOOP(T)                                                                                             \
    AXON_CLONES static void sgd_block_##T(const fe_sgd_params_t *p, T *prm, T *grd, T *buf, double lr,          \
                                          double scale, int64_t m) {                                            \
        const T wd = (T)p->weight_decay, mom = (T)p->momentum, damp = (T)(1.0 - p->dampening), lrt = (T)lr;    \
        const T sc = (T)(float)scale;                                                                           \
        T g[FE_BLOCK];                                                                                          \
        if (!p->has_grad_scale && !p->maximize && p->weight_decay == 0.0 && p->momentum != 0.0 &&              \
            !p->first_step && !p->nesterov) {                                                                   \
            /* Plain momentum as one pass (the passes below, element by element): the arrays stream once. */    \
            for (int64_t k = 0; k < m; k++) {                                                                   \
                const T b = buf[k] * mom + grd[k] * damp;                                                       \
                buf[k] = b;                                                                                     \
                prm[k] = prm[k] - b * lrt;                                                                      \
            }                                                                                                   \
            return;                                                                                             \
        }                                                                                                       \
        if (p->has_grad_scale)                                                                                  \
            for (int64_t k = 0; k < m; k++) grd[k] = grd[k] / sc;                                               \
        if (p->maximize)                                                                                        \
            for (int64_t k = 0; k < m; k++) g[k] = -grd[k];                                                     \
        else                                                                                                    \
            for (int64_t k = 0; k < m; k++) g[k] = grd[k];                                                      \
        if (p->weight_decay != 0.0)                                                                             \
            for (int64_t k = 0; k < m; k++) g[k] += prm[k] * wd;                                                \
        if (p->momentum != 0.0) {                                                                               \
            if (p->first_step)                                                                                  \
                for (int64_t k = 0; k < m; k++) buf[k] = g[k];                                                  \
            else                                                                                                \
                for (int64_t k = 0; k < m; k++) buf[k] = buf[k] * mom + g[k] * damp;                            \
            if (p->nesterov)                                                                                    \
                for (int64_t k = 0; k < m; k++) g[k] += buf[k] * mom;                                           \
            else                                                                                                \
                for (int64_t k = 0; k < m; k++) g[k] = buf[k];                                                  \
        }                                                                                                       \
        for (int64_t k = 0; k < m; k++) prm[k] = prm[k] - g[k] * lrt;                                           \
    }

SGD_LOOP(float)
SGD_LOOP(double)

static void sgd_piece(const fe_job_t *j, int64_t i, int64_t lo, int64_t hi) {
    const fe_cmd_t *c = j->c;
    const fe_sgd_params_t *p = &c->p.sgd;
    _Alignas(16) double buf[SG_LISTS][FE_BLOCK];
    const int nl = p->momentum != 0.0 ? SG_LISTS : SG_BUF;
    for (int64_t off = lo; off < hi; off += FE_BLOCK) {
        const int64_t m = hi - off < FE_BLOCK ? hi - off : FE_BLOCK;
        void *v[SG_LISTS] = {NULL, NULL, NULL};
        for (int k = 0; k < nl; k++)
            v[k] = k == SG_BUF && p->first_step ? axon_fe_out(c, k, i, off, m, buf[k])
                                                 : axon_fe_load(c, k, i, off, m, buf[k]);
        if (c->f64)
            sgd_block_double(p, v[SG_PARAM], v[SG_GRAD], v[SG_BUF], j->num[SG_NUM_LR], j->num[SG_NUM_SCALE], m);
        else
            sgd_block_float(p, v[SG_PARAM], v[SG_GRAD], v[SG_BUF], j->num[SG_NUM_LR], j->num[SG_NUM_SCALE], m);
        for (int k = 0; k < nl; k++)
            if (k != SG_GRAD || p->has_grad_scale) axon_fe_store(c, k, i, off, m, v[k]);
    }
}

axon_status_t axon_optim_sgd(axon_stream_t s, const axon_sgd_options_t *o, int64_t n, const axon_tensor_t *params,
                             const axon_tensor_t *grads, const axon_tensor_t *momentum_buffers) {
    const char *name = "fused_sgd";
    if (o == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: options are NULL", name);
    if (n < 0) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: list length %lld is negative", name, (long long)n);
    if (n == 0) return AXON_OK;
    fe_launch_t l;
    memset(&l, 0, sizeof l);
    l.name = name;
    l.n = n;
    axon_status_t st = axon_fe_check_list(name, "params", n, params, NULL, NULL, 1);
    if (st == AXON_OK) st = axon_fe_check_list(name, "grads", n, grads, params, "params", 1);
    if (st == AXON_OK && o->momentum != 0.0)
        st = axon_fe_check_list(name, "momentum_buffer_list", n, momentum_buffers, params, "params", 1);
    if (st == AXON_OK) st = axon_fe_set_number(&l, SG_NUM_LR, "lr", o->lr_tensor, o->lr);
    if (st == AXON_OK) st = axon_fe_set_number(&l, SG_NUM_SCALE, "grad_scale", o->grad_scale, 1.0);
    if (st == AXON_OK) st = axon_fe_set_number(&l, SG_NUM_INF, "found_inf", o->found_inf, 0.0);
    if (st != AXON_OK) return st;
    l.lists[SG_PARAM] = params;
    l.lists[SG_GRAD] = grads;
    l.lists[SG_BUF] = o->momentum != 0.0 ? momentum_buffers : NULL;
    l.cmd.piece = sgd_piece;
    l.cmd.nlists = SG_LISTS;
    l.cmd.skip_num = o->found_inf ? SG_NUM_INF : -1;
    l.cmd.p.sgd.weight_decay = o->weight_decay;
    l.cmd.p.sgd.momentum = o->momentum;
    l.cmd.p.sgd.dampening = o->dampening;
    l.cmd.p.sgd.nesterov = o->nesterov != 0;
    l.cmd.p.sgd.maximize = o->maximize != 0;
    l.cmd.p.sgd.first_step = o->first_step != 0;
    l.cmd.p.sgd.has_grad_scale = o->grad_scale != NULL;
    l.shape_list = SG_PARAM;
    l.compute_list = SG_PARAM;
    return axon_fe_submit(s, &l);
}
