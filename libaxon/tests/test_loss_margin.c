/* axon_kernel_multi_margin_loss, axon_kernel_multilabel_margin_loss and their backward against PyTorch's definitions
 * written out as loops in float64, gradients against central differences of those references. Also: the three
 * reductions, weights, p = 1 and 2, repeated labels and a label list that fills its row, is_target, the same bits for
 * 1 and 3 threads, and targets out of range failing the command before any write.
 * Tolerances: 1e-14 relative for float64 losses, 2e-7 for float32 (one rounding); 1e-7 absolute for float64
 * gradients against differences of step 1e-6. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/loss.h"
#include "kernels_check.h"

enum { N = 5, C = 7 };

static const int64_t y[N] = {2, 0, 6, 2, 3};
/* labels: row 0 two, row 1 with a repeat, row 2 none, row 3 every class (no -1 at all), row 4 one then junk */
static const int64_t labels[N][C] = {{1, 4, -1, 0, 0, 0, 0},
                                     {3, 3, 5, -1, 2, 2, 2},
                                     {-1, 1, 1, 1, 1, 1, 1},
                                     {6, 5, 4, 3, 2, 1, 0},
                                     {0, -1, 6, 6, 6, 6, 6}};

static double ref_multi(const double *x, int64_t n, int p, double margin, const double *w) {
    double s = 0;
    for (int c = 0; c < C; c++) {
        if (c == y[n]) continue;
        const double z = margin - x[n * C + y[n]] + x[n * C + c];
        if (z > 0) s += (p == 1 ? z : z * z) * (w ? w[y[n]] : 1.0);
    }
    return s / C;
}

static double ref_label(const double *x, int64_t n) {
    int is_t[C] = {0};
    for (int k = 0; k < C && labels[n][k] >= 0; k++) is_t[labels[n][k]] = 1;
    double s = 0;
    for (int k = 0; k < C && labels[n][k] >= 0; k++)
        for (int c = 0; c < C; c++)
            if (!is_t[c] && 1 - x[n * C + labels[n][k]] + x[n * C + c] > 0)
                s += 1 - x[n * C + labels[n][k]] + x[n * C + c];
    return s / C;
}

/* The reduced or per-row loss weighted by gw (NONE) as one number, for finite differences. */
static double ref_total(const double *x, int multilabel, int p, double margin, const double *w,
                        axon_loss_reduction_t red, const double *gw) {
    double s = 0;
    for (int n = 0; n < N; n++) {
        const double l = multilabel ? ref_label(x, n) : ref_multi(x, n, p, margin, w);
        s += red == AXON_LOSS_NONE ? gw[n] * l : l;
    }
    return red == AXON_LOSS_MEAN ? s / N : s;
}

static void fill_random(double *x, int n, unsigned seed) {
    srand(seed);
    for (int i = 0; i < n; i++) x[i] = (double)rand() / RAND_MAX * 2 - 1;
}


/* Runs forward (and backward with gw as grad_out, or gw[0] when reduced) on host buffers; returns via out/grad. */
static void run(const kc_dev_t *k, axon_dtype_t d, int multilabel, int p, double margin, const double *w,
                axon_loss_reduction_t red, const double *x, const double *gw, double *out, double *grad,
                double *is_target) {
    void *hx = kc_doubles_as(x, N * C, d), *hw = w ? kc_doubles_as(w, C, d) : NULL, *hg = kc_doubles_as(gw, N, d);
    void *ho = calloc(N, 8), *hgr = calloc(N * C, 8), *hit = calloc(N * C, 8);
    const int64_t snc[2] = {N, C}, sn[1] = {N}, sc[1] = {C}, s1[1] = {1};
    const int full = red == AXON_LOSS_NONE;
    axon_tensor_t tx = kc_tensor(hx, d, 2, snc, NULL), to = kc_tensor(ho, d, 1, full ? sn : s1, NULL);
    axon_tensor_t tt = multilabel ? kc_tensor((void *)labels, AXON_INT64, 2, snc, NULL)
                                  : kc_tensor((void *)y, AXON_INT64, 1, sn, NULL);
    axon_tensor_t tw = kc_tensor(hw, d, 1, sc, NULL), tit = kc_tensor(hit, d, 2, snc, NULL);
    axon_tensor_t tg = kc_tensor(hg, d, 1, full ? sn : s1, NULL), tgr = kc_tensor(hgr, d, 2, snc, NULL);
    if (multilabel) {
        CHECK_OK(axon_kernel_multilabel_margin_loss(k->s, &to, &tit, &tx, &tt, red));
        if (grad) CHECK_OK(axon_kernel_multilabel_margin_loss_backward(k->s, &tgr, &tg, &tx, &tt, &tit, red));
    } else {
        CHECK_OK(axon_kernel_multi_margin_loss(k->s, &to, &tx, &tt, w ? &tw : NULL, p, margin, red));
        if (grad)
            CHECK_OK(axon_kernel_multi_margin_loss_backward(k->s, &tgr, &tg, &tx, &tt, w ? &tw : NULL, p, margin,
                                                            red));
    }
    CHECK_OK(axon_stream_sync(k->s));
    for (int i = 0; i < (full ? N : 1); i++) out[i] = kc_double_at(ho, i, d);
    for (int i = 0; grad && i < N * C; i++) grad[i] = kc_double_at(hgr, i, d);
    for (int i = 0; is_target && i < N * C; i++) is_target[i] = kc_double_at(hit, i, d);
    free(hx), free(hw), free(hg), free(ho), free(hgr), free(hit);
}

static void test_losses_match_the_definitions(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    double x[N * C], w[C], out[N], is_t[N * C], gw[N] = {1};
    fill_random(x, N * C, 1);
    fill_random(w, C, 2);
    for (int di = 0; di < 2; di++) {
        const axon_dtype_t d = di ? AXON_FLOAT32 : AXON_FLOAT64;
        double xr[N * C]; /* the values the kernel sees */
        for (int i = 0; i < N * C; i++) xr[i] = di ? (double)(float)x[i] : x[i];
        double wr[C];
        for (int i = 0; i < C; i++) wr[i] = di ? (double)(float)w[i] : w[i];
        for (int ml = 0; ml < 2; ml++)
            for (int red = 0; red < 3; red++)
                for (int variant = 0; variant < (ml ? 1 : 4); variant++) {
                    const int p = variant % 2 ? 2 : 1;
                    const double *wp = variant >= 2 ? wr : NULL, margin = variant >= 2 ? 0.7 : 1.0;
                    run(&k, d, ml, p, margin, wp, (axon_loss_reduction_t)red, xr, gw, out, NULL, is_t);
                    for (int n = 0; n < (red == AXON_LOSS_NONE ? N : 1); n++) {
                        double want = red == AXON_LOSS_NONE ? (ml ? ref_label(xr, n) : ref_multi(xr, n, p, margin, wp))
                                                            : ref_total(xr, ml, p, margin, wp, red, NULL);
                        if (!(fabs(out[n] - want) <= (di ? 2e-7 : 1e-14) * fabs(want) + 1e-300)) {
                            fprintf(stderr, "  %s %s red %d variant %d row %d: %.17g, want %.17g\n",
                                    axon_dtype_name(d), ml ? "multilabel" : "multi", red, variant, n, out[n], want);
                            check_failures_in_test++;
                        }
                    }
                    if (ml)
                        for (int n = 0; n < N; n++)
                            for (int c = 0; c < C; c++) {
                                int want = 0;
                                for (int q = 0; q < C && labels[n][q] >= 0; q++) want |= labels[n][q] == c;
                                CHECK(is_t[n * C + c] == want);
                            }
                }
    }
    axon_runtime_destroy(k.rt);
}

static void test_gradients_are_the_derivatives(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    double x[N * C], w[C], gw[N], out[N], grad[N * C], xp[N * C];
    fill_random(x, N * C, 3);
    fill_random(w, C, 4);
    fill_random(gw, N, 5);
    for (int ml = 0; ml < 2; ml++)
        for (int red = 0; red < 3; red++)
            for (int variant = 0; variant < (ml ? 1 : 4); variant++) {
                const int p = variant % 2 ? 2 : 1;
                const double *wp = variant >= 2 ? w : NULL, margin = variant >= 2 ? 0.7 : 1.0;
                double g1[N];
                for (int n = 0; n < N; n++) g1[n] = red == AXON_LOSS_NONE ? gw[n] : gw[0];
                run(&k, AXON_FLOAT64, ml, p, margin, wp, (axon_loss_reduction_t)red, x, g1, out, grad, NULL);
                const double h = 1e-6;
                for (int e = 0; e < N * C; e++) {
                    double f[2];
                    for (int side = 0; side < 2; side++) {
                        memcpy(xp, x, sizeof xp);
                        xp[e] += side ? h : -h;
                        f[side] = ref_total(xp, ml, p, margin, wp, (axon_loss_reduction_t)red, gw);
                    }
                    const double want = (f[1] - f[0]) / (2 * h) * (red == AXON_LOSS_NONE ? 1.0 : gw[0]);
                    if (!(fabs(grad[e] - want) <= 1e-7)) {
                        fprintf(stderr, "  %s red %d variant %d grad[%d] = %.12g, finite difference %.12g\n",
                                ml ? "multilabel" : "multi", red, variant, e, grad[e], want);
                        check_failures_in_test++;
                    }
                }
            }
    axon_runtime_destroy(k.rt);
}

static void test_results_do_not_depend_on_threads(void) {
    double x[N * C], gw[N], out[2][N], grad[2][N * C];
    fill_random(x, N * C, 6);
    fill_random(gw, N, 7);
    for (int run_i = 0; run_i < 2; run_i++) {
        kc_dev_t k = kc_open(run_i ? 3 : 1);
        REQUIRE(k.s);
        run(&k, AXON_FLOAT32, 1, 1, 1.0, NULL, AXON_LOSS_MEAN, x, gw, out[run_i], grad[run_i], NULL);
        axon_runtime_destroy(k.rt);
    }
    CHECK(memcmp(out[0], out[1], sizeof(double)) == 0);
    CHECK(memcmp(grad[0], grad[1], sizeof grad[0]) == 0);
}

static void test_targets_out_of_range_fail_before_writing(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    double x[N * C] = {0}, out[N] = {-7, -7, -7, -7, -7}, is_t[N * C];
    int64_t bad_y[N] = {2, 0, 7, 2, 3}, bad_labels[N * C];
    memcpy(bad_labels, labels, sizeof bad_labels);
    bad_labels[4 * C + 3] = -2; /* after row 4's -1, but PyTorch checks every entry */
    const int64_t snc[2] = {N, C}, sn[1] = {N};
    axon_tensor_t tx = kc_tensor(x, AXON_FLOAT64, 2, snc, NULL), to = kc_tensor(out, AXON_FLOAT64, 1, sn, NULL);
    axon_tensor_t ty = kc_tensor(bad_y, AXON_INT64, 1, sn, NULL), tl = kc_tensor(bad_labels, AXON_INT64, 2, snc, NULL);
    axon_tensor_t tit = kc_tensor(is_t, AXON_FLOAT64, 2, snc, NULL);
    CHECK_OK(axon_kernel_multi_margin_loss(k.s, &to, &tx, &ty, NULL, 1, 1.0, AXON_LOSS_NONE));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("multi_margin_loss(): target 7 of row 2 is out of range for 7 classes");
    CHECK(out[0] == -7 && out[4] == -7);
    CHECK_OK(axon_kernel_multilabel_margin_loss(k.s, &to, &tit, &tx, &tl, AXON_LOSS_NONE));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("multilabel_margin_loss(): target -2 of row 4");
    CHECK(out[0] == -7);
    CHECK_STATUS(axon_kernel_multi_margin_loss(k.s, &to, &tx, &ty, NULL, 3, 1.0, AXON_LOSS_NONE),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("p = 3, only 1 and 2");
    axon_tensor_t ty32 = kc_tensor(bad_y, AXON_INT32, 1, sn, NULL);
    CHECK_STATUS(axon_kernel_multi_margin_loss(k.s, &to, &tx, &ty32, NULL, 1, 1.0, AXON_LOSS_NONE),
                 AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("target dtype int32, expected int64");
    const int64_t s1[1] = {1};
    axon_tensor_t to1 = kc_tensor(out, AXON_FLOAT64, 1, s1, NULL);
    CHECK_STATUS(axon_kernel_multi_margin_loss(k.s, &to1, &tx, &ty, NULL, 1, 1.0, AXON_LOSS_NONE),
                 AXON_ERROR_INVALID_ARG); /* NONE needs one loss per row */
    CHECK_MSG("out (shape [1])");
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_losses_match_the_definitions);
    RUN(test_gradients_are_the_derivatives);
    RUN(test_results_do_not_depend_on_threads);
    RUN(test_targets_out_of_range_fail_before_writing);
    return check_report();
}
