/* axon/optim.h against double references: Adam and AdamW (weight decay, amsgrad, maximize, lr from a device tensor)
 * over lists spanning several commands, AMP's grad_scale (gradients written back unscaled) and found_inf (nothing
 * changes), SGD with momentum (first step and later), dampening, nesterov and maximize, float64 and bfloat16
 * params, and bad input refused.
 *
 * Tolerance: the kernels compute in float with rounded hyper-parameters, the reference in double from the same
 * inputs; after a few steps they agree to relative 2e-5 (float32). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/optim.h"
#include "kernels_check.h"

#define NT 130
#define STATE 6 /* param, grad, exp_avg, exp_avg_sq, max, step */

static uint32_t ot_seed = 777u;
static double ot_rand(void) {
    ot_seed = ot_seed * 1664525u + 1013904223u;
    return (ot_seed >> 8) / 8388608.0 - 1.0;
}

static kc_dev_t ot_dev;

static int64_t ot_size(int i) { return (i * 53) % 200 + 1; }

/* NT float32 tensors per list; list 5 holds the step counts (one element each). */
typedef struct ot_lists {
    axon_tensor_t t[STATE][NT];
    float *d[STATE][NT];
    double *ref[STATE][NT];
} ot_lists_t;

static void ot_make(ot_lists_t *l, float step) {
    for (int k = 0; k < STATE; k++)
        for (int i = 0; i < NT; i++) {
            int64_t n = k == 5 ? 1 : ot_size(i), sizes[1] = {n};
            l->d[k][i] = malloc(sizeof(float) * (size_t)n);
            l->ref[k][i] = malloc(sizeof(double) * (size_t)n);
            for (int64_t e = 0; e < n; e++) {
                float v = k == 5 ? step : k == 3 || k == 4 ? (float)fabs(ot_rand()) * 0.1f : (float)ot_rand();
                l->d[k][i][e] = v;
                l->ref[k][i][e] = v;
            }
            l->t[k][i] = kc_tensor(l->d[k][i], AXON_FLOAT32, 1, sizes, NULL);
        }
}

static void ot_free(ot_lists_t *l) {
    for (int k = 0; k < STATE; k++)
        for (int i = 0; i < NT; i++) free(l->d[k][i]), free(l->ref[k][i]);
}

/* Entries of list k that differ from the reference by more than rtol (relative, with a 1e-6 floor). */
static int ot_bad(const ot_lists_t *l, int k, double rtol) {
    int bad = 0;
    for (int i = 0; i < NT; i++)
        for (int64_t e = 0; e < ot_size(i); e++) {
            double got = l->d[k][i][e], want = l->ref[k][i][e];
            bad += !(fabs(got - want) <= rtol * fabs(want) + 1e-6);
        }
    return bad;
}

static void ot_adam_ref(ot_lists_t *l, const axon_adam_options_t *o, double lr, double scale) {
    for (int i = 0; i < NT; i++) {
        double step = l->ref[5][i][0], bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
        for (int64_t e = 0; e < ot_size(i); e++) {
            double *p = &l->ref[0][i][e], *g = &l->ref[1][i][e], *m = &l->ref[2][i][e], *v = &l->ref[3][i][e];
            double *mx = &l->ref[4][i][e];
            if (o->grad_scale) *g /= scale;
            double gr = o->maximize ? -*g : *g;
            if (o->decoupled) *p *= 1 - lr * o->weight_decay;
            else gr += o->weight_decay * *p;
            *m += (1 - o->beta1) * (gr - *m);
            *v = *v * o->beta2 + (1 - o->beta2) * gr * gr;
            double vv = *v;
            if (o->amsgrad) vv = *mx = *mx > *v ? *mx : *v;
            *p -= lr / bc1 * *m / (sqrt(vv) / sqrt(bc2) + o->eps);
        }
    }
}

static void test_adam_and_adamw_variants_match_reference(void) {
    for (int variant = 0; variant < 4; variant++) {
        ot_lists_t l;
        ot_make(&l, 3.0f);
        float lr_dev = 0.01f;
        axon_tensor_t lr_t = kc_tensor(&lr_dev, AXON_FLOAT32, 0, NULL, NULL);
        axon_adam_options_t o = {0.01, NULL, 0.9, 0.999, 0.0, 1e-8, 0, 0, 0, NULL, NULL};
        o.decoupled = variant & 1;
        o.weight_decay = variant ? 0.1 : 0.0;
        o.amsgrad = variant >= 2;
        o.maximize = variant == 3;
        if (variant == 2) o.lr_tensor = &lr_t;
        for (int stepno = 0; stepno < 3; stepno++) {
            CHECK_OK(axon_optim_adam(ot_dev.s, &o, NT, l.t[0], l.t[1], l.t[2], l.t[3], l.t[4], l.t[5]));
            ot_adam_ref(&l, &o, (double)(float)0.01, 1.0);
        }
        CHECK_OK(axon_stream_sync(ot_dev.s));
        for (int k = 0; k < 5; k++) {
            int bad = ot_bad(&l, k, 2e-5);
            if (bad) fprintf(stderr, "variant %d list %d: %d differ\n", variant, k, bad);
            CHECK_EQ_I64(bad, 0);
        }
        ot_free(&l);
    }
}

static void test_grad_scale_unscales_grads_and_found_inf_skips(void) {
    ot_lists_t l;
    ot_make(&l, 1.0f);
    float scale = 1024.0f, found = 0.0f;
    axon_tensor_t ts = kc_tensor(&scale, AXON_FLOAT32, 0, NULL, NULL), tf = kc_tensor(&found, AXON_FLOAT32, 0, NULL,
                                                                                        NULL);
    axon_adam_options_t o = {1e-3, NULL, 0.9, 0.999, 0.01, 1e-8, 0, 0, 1, &ts, &tf};
    CHECK_OK(axon_optim_adam(ot_dev.s, &o, NT, l.t[0], l.t[1], l.t[2], l.t[3], NULL, l.t[5]));
    ot_adam_ref(&l, &o, 1e-3, 1024.0);
    CHECK_OK(axon_stream_sync(ot_dev.s));
    for (int k = 0; k < 4; k++) CHECK_EQ_I64(ot_bad(&l, k, 2e-5), 0);
    float before = l.d[0][5][0], grad_before = l.d[1][5][0];
    found = 1.0f;
    CHECK_OK(axon_optim_adam(ot_dev.s, &o, NT, l.t[0], l.t[1], l.t[2], l.t[3], NULL, l.t[5]));
    CHECK_OK(axon_stream_sync(ot_dev.s));
    CHECK(l.d[0][5][0] == before && l.d[1][5][0] == grad_before);
    ot_free(&l);
}

static void ot_sgd_ref(ot_lists_t *l, const axon_sgd_options_t *o) {
    for (int i = 0; i < NT; i++)
        for (int64_t e = 0; e < ot_size(i); e++) {
            double *p = &l->ref[0][i][e], *b = &l->ref[2][i][e], g = l->ref[1][i][e];
            if (o->maximize) g = -g;
            g += o->weight_decay * *p;
            if (o->momentum != 0) {
                *b = o->first_step ? g : *b * o->momentum + (1 - o->dampening) * g;
                g = o->nesterov ? g + o->momentum * *b : *b;
            }
            *p -= o->lr * g;
        }
}

static void test_sgd_momentum_nesterov_dampening_maximize(void) {
    for (int variant = 0; variant < 4; variant++) {
        ot_lists_t l;
        ot_make(&l, 1.0f);
        axon_sgd_options_t o = {0.1, NULL, 0.01, 0.9, 0.0, 0, 0, 1, NULL, NULL};
        o.nesterov = variant == 1;
        o.dampening = variant == 2 ? 0.3 : 0.0;
        o.maximize = variant == 3;
        o.momentum = variant == 3 ? 0.0 : 0.9;
        for (int stepno = 0; stepno < 3; stepno++) {
            o.first_step = stepno == 0;
            CHECK_OK(axon_optim_sgd(ot_dev.s, &o, NT, l.t[0], l.t[1], o.momentum != 0 ? l.t[2] : NULL));
            ot_sgd_ref(&l, &o);
        }
        CHECK_OK(axon_stream_sync(ot_dev.s));
        CHECK_EQ_I64(ot_bad(&l, 0, 2e-5), 0);
        if (o.momentum != 0) CHECK_EQ_I64(ot_bad(&l, 2, 2e-5), 0);
        ot_free(&l);
    }
}

static void test_float64_and_bfloat16_params(void) {
    double p64[5] = {1, 2, 3, 4, 5}, g64[5] = {0.5, -0.5, 1, -1, 0}, m64[5] = {0}, v64[5] = {0};
    float step = 1.0f;
    uint16_t pb[5], gb[5], mb[5] = {0}, vb[5] = {0};
    for (int e = 0; e < 5; e++) pb[e] = (uint16_t)(0x3F80 + e * 0x80), gb[e] = 0x3F00; /* 1, 2, 4.. ; grad 0.5 */
    int64_t sz[1] = {5};
    axon_tensor_t ts = kc_tensor(&step, AXON_FLOAT32, 0, NULL, NULL);
    axon_tensor_t d[4] = {kc_tensor(p64, AXON_FLOAT64, 1, sz, NULL), kc_tensor(g64, AXON_FLOAT64, 1, sz, NULL),
                          kc_tensor(m64, AXON_FLOAT64, 1, sz, NULL), kc_tensor(v64, AXON_FLOAT64, 1, sz, NULL)};
    axon_tensor_t b[4] = {kc_tensor(pb, AXON_BFLOAT16, 1, sz, NULL), kc_tensor(gb, AXON_BFLOAT16, 1, sz, NULL),
                          kc_tensor(mb, AXON_BFLOAT16, 1, sz, NULL), kc_tensor(vb, AXON_BFLOAT16, 1, sz, NULL)};
    axon_adam_options_t o = {0.1, NULL, 0.9, 0.999, 0.0, 1e-8, 0, 0, 1, NULL, NULL};
    CHECK_OK(axon_optim_adam(ot_dev.s, &o, 1, &d[0], &d[1], &d[2], &d[3], NULL, &ts));
    CHECK_OK(axon_optim_adam(ot_dev.s, &o, 1, &b[0], &b[1], &b[2], &b[3], NULL, &ts));
    CHECK_OK(axon_stream_sync(ot_dev.s));
    /* First step: the update is lr * sign(grad) (up to eps), 0 for a zero gradient. */
    CHECK(fabs(p64[0] - 0.9) < 1e-7 && fabs(p64[1] - 2.1) < 1e-7 && p64[4] == 5.0);
    float p0;
    uint32_t bits = (uint32_t)pb[0] << 16;
    memcpy(&p0, &bits, sizeof p0);
    CHECK(fabsf(p0 - 0.9f) < 0.01f);
}

static void test_bad_optimizer_input_is_refused(void) {
    ot_lists_t l;
    ot_make(&l, 1.0f);
    axon_adam_options_t o = {1e-3, NULL, 0.9, 0.999, 0.0, 1e-8, 1, 0, 0, NULL, NULL};
    CHECK_STATUS(axon_optim_adam(ot_dev.s, &o, NT, l.t[0], l.t[1], l.t[2], l.t[3], NULL, l.t[5]),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("fused_adam: the max_exp_avg_sqs list is NULL");
    o.amsgrad = 0;
    CHECK_STATUS(axon_optim_adam(ot_dev.s, &o, NT, l.t[0], l.t[1], l.t[2], l.t[3], NULL, l.t[0]),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("state_steps[1] must hold one element");
    CHECK_STATUS(axon_optim_adam(ot_dev.s, &o, NT, l.t[0], l.t[2] + 1, l.t[2], l.t[3], NULL, l.t[5]),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("does not match params[0]");
    axon_tensor_t two = l.t[0][1]; /* 54 elements */
    o.grad_scale = &two;
    CHECK_STATUS(axon_optim_adam(ot_dev.s, &o, NT, l.t[0], l.t[1], l.t[2], l.t[3], NULL, l.t[5]),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("grad_scale must hold one element");
    axon_sgd_options_t so = {0.1, NULL, 0.0, 0.9, 0.0, 0, 0, 0, NULL, NULL};
    CHECK_STATUS(axon_optim_sgd(ot_dev.s, &so, NT, l.t[0], l.t[1], NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("fused_sgd: the momentum_buffer_list list is NULL");
    CHECK_STATUS(axon_optim_sgd(ot_dev.s, NULL, NT, l.t[0], l.t[1], NULL), AXON_ERROR_INVALID_ARG);
    ot_free(&l);
}

int main(void) {
    ot_dev = kc_open(4);
    if (!ot_dev.rt) return 1;
    RUN(test_adam_and_adamw_variants_match_reference);
    RUN(test_grad_scale_unscales_grads_and_found_inf_skips);
    RUN(test_sgd_momentum_nesterov_dampening_maximize);
    RUN(test_float64_and_bfloat16_params);
    RUN(test_bad_optimizer_input_is_refused);
    axon_runtime_destroy(ot_dev.rt);
    return check_report();
}
