/* axon/upsample_aa.h against a long double reference: bilinear and bicubic antialiased resizing, down and up, with
 * align_corners and scale factors, float32 and float64, as two separable passes; the backward; the same bits for 1
 * and 4 threads; bad input refused with a message.
 *
 * The reference computes each window with exact arithmetic, so the sizes are chosen with scales that float32 holds
 * exactly (4, 2, 1.5, 0.625, ...): the windows are then the same, and only the weights' and sums' rounding differ. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/upsample_aa.h"
#include "kernels_check.h"

/* Window of output o along an axis (exact arithmetic; PyTorch's definition in axon/upsample_aa.h). */
static int64_t ua_window(int cubic, int align, double f, int64_t o, int64_t I, int64_t O, long double *w,
                         int64_t *xmin) {
    long double scale = align ? (O > 1 ? (long double)(I - 1) / (O - 1) : 0) : f > 0 ? 1.0L / f : (long double)I / O;
    long double support = (cubic ? 2 : 1) * (scale >= 1 ? scale : 1), inv = scale >= 1 ? 1 / scale : 1;
    long double center = scale * (o + 0.5L);
    int64_t lo = (int64_t)(center - support + 0.5L), hi = (int64_t)(center + support + 0.5L);
    if (lo < 0) lo = 0;
    if (hi > I) hi = I;
    long double total = 0;
    for (int64_t j = 0; j < hi - lo; j++) {
        long double x = fabsl((lo + j - center + 0.5L) * inv), a = -0.5L;
        w[j] = cubic ? (x < 1 ? ((a + 2) * x - (a + 3)) * x * x + 1 : x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0)
                     : (x < 1 ? 1 - x : 0);
        total += w[j];
    }
    for (int64_t j = 0; j < hi - lo; j++) w[j] /= total;
    *xmin = lo;
    return hi - lo;
}

typedef struct ua_case {
    int64_t ih, iw, oh, ow;
    int cubic, align;
    double sh, sw;
} ua_case_t;

static const ua_case_t ua_cases[] = {
    {16, 12, 4, 8, 0, 0, 0, 0},      /* down 4 and 1.5 */
    {16, 12, 4, 8, 1, 0, 0, 0},
    {5, 8, 8, 5, 0, 0, 0, 0},        /* up 0.625 along H, down 1.6 along W (1.6: not exact, windows still agree) */
    {5, 8, 8, 4, 1, 0, 0, 0},
    {9, 9, 5, 3, 0, 1, 0, 0},        /* align_corners: (I - 1) / (O - 1) = 2, 4 */
    {9, 9, 5, 3, 1, 1, 0, 0},
    {12, 16, 6, 4, 0, 0, 0.5, 0.25}, /* scale factors */
    {7, 20, 7, 5, 1, 0, 0, 0},       /* only W differs */
    {20, 7, 5, 7, 0, 0, 0, 0},       /* only H differs */
};

#define UA_PLANES 3

/* forward and backward of one case and dtype against the reference */
static void ua_check_case(kc_dev_t *k, const ua_case_t *c, axon_dtype_t d) {
    const int64_t P = UA_PLANES, ni = P * c->ih * c->iw, nt = P * c->ih * c->ow, no = P * c->oh * c->ow;
    const size_t es = axon_dtype_size(d);
    long double *x = malloc(sizeof(long double) * (size_t)ni), *g = malloc(sizeof(long double) * (size_t)no);
    long double *y = calloc((size_t)no, sizeof(long double)), *gi = calloc((size_t)ni, sizeof(long double));
    char *hx = malloc((size_t)ni * es), *hg = malloc((size_t)no * es), *hy = malloc((size_t)no * es);
    char *hgi = malloc((size_t)ni * es);
    for (int64_t i = 0; i < ni; i++) {
        x[i] = (long double)((i * 37 % 101) - 50) / 64;
        if (d == AXON_FLOAT32) ((float *)hx)[i] = (float)x[i];
        else ((double *)hx)[i] = (double)x[i];
    }
    for (int64_t i = 0; i < no; i++) {
        g[i] = (long double)((i * 53 % 97) - 48) / 32;
        if (d == AXON_FLOAT32) ((float *)hg)[i] = (float)g[i];
        else ((double *)hg)[i] = (double)g[i];
    }
    long double wy[64], wx[64];
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < c->oh; oh++)
            for (int64_t ow = 0; ow < c->ow; ow++) {
                int64_t y0, x0;
                int64_t ny = ua_window(c->cubic, c->align, c->sh, oh, c->ih, c->oh, wy, &y0);
                int64_t nx = ua_window(c->cubic, c->align, c->sw, ow, c->iw, c->ow, wx, &x0);
                if (c->ih == c->oh) ny = 1, y0 = oh, wy[0] = 1;   /* an axis of equal sizes is not resampled */
                if (c->iw == c->ow) nx = 1, x0 = ow, wx[0] = 1;
                const long double go = g[(p * c->oh + oh) * c->ow + ow];
                long double s = 0;
                for (int64_t a = 0; a < ny; a++)
                    for (int64_t b = 0; b < nx; b++) {
                        const int64_t i = (p * c->ih + y0 + a) * c->iw + x0 + b;
                        s += wy[a] * wx[b] * x[i];
                        gi[i] += wy[a] * wx[b] * go;
                    }
                y[(p * c->oh + oh) * c->ow + ow] = s;
            }
    void *dx = kc_upload(k, hx, (size_t)ni * es), *dt = kc_upload(k, NULL, (size_t)nt * es);
    void *dy = kc_upload(k, NULL, (size_t)no * es), *dg = kc_upload(k, hg, (size_t)no * es);
    void *dgi = kc_upload(k, NULL, (size_t)ni * es);
    int64_t si[3] = {P, c->ih, c->iw}, st[3] = {P, c->ih, c->ow}, so[3] = {P, c->oh, c->ow};
    axon_tensor_t tx = kc_tensor(dx, d, 3, si, NULL), tt = kc_tensor(dt, d, 3, st, NULL);
    axon_tensor_t ty = kc_tensor(dy, d, 3, so, NULL), tg = kc_tensor(dg, d, 3, so, NULL);
    axon_tensor_t tgi = kc_tensor(dgi, d, 3, si, NULL);
    axon_upsample_aa_params_t prm = {c->cubic ? AXON_AA_CUBIC : AXON_AA_TRIANGLE, c->align, {c->sh, c->sw}};
    CHECK_OK(axon_kernel_upsample_aa_pass(k->s, &tt, &tx, &prm));   /* W, then H: PyTorch's order */
    CHECK_OK(axon_kernel_upsample_aa_pass(k->s, &ty, &tt, &prm));
    CHECK_OK(axon_kernel_upsample_aa_backward(k->s, &tgi, &tg, &prm));
    CHECK(kc_download(k, hy, dy, (size_t)no * es));
    CHECK(kc_download(k, hgi, dgi, (size_t)ni * es));
    const long double tol = d == AXON_FLOAT32 ? 4e-6L : 1e-13L;
    long double worst = 0, worst_b = 0;
    for (int64_t i = 0; i < no; i++) {
        const long double v = d == AXON_FLOAT32 ? ((float *)hy)[i] : ((double *)hy)[i];
        if (fabsl(v - y[i]) > worst) worst = fabsl(v - y[i]);
    }
    for (int64_t i = 0; i < ni; i++) {
        const long double v = d == AXON_FLOAT32 ? ((float *)hgi)[i] : ((double *)hgi)[i];
        if (fabsl(v - gi[i]) > worst_b) worst_b = fabsl(v - gi[i]);
    }
    if (worst > tol || worst_b > 4 * tol) {
        fprintf(stderr, "  case %lldx%lld -> %lldx%lld cubic %d align %d %s: forward error %Lg, backward %Lg\n",
                (long long)c->ih, (long long)c->iw, (long long)c->oh, (long long)c->ow, c->cubic, c->align,
                axon_dtype_name(d), worst, worst_b);
        check_failures_in_test++;
    }
    axon_mem_free(k->dev, dx), axon_mem_free(k->dev, dt), axon_mem_free(k->dev, dy);
    axon_mem_free(k->dev, dg), axon_mem_free(k->dev, dgi);
    free(x), free(g), free(y), free(gi), free(hx), free(hg), free(hy), free(hgi);
}

static void test_every_case_matches_the_reference_forward_and_backward(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    for (size_t ci = 0; ci < sizeof ua_cases / sizeof ua_cases[0]; ci++) {
        ua_check_case(&k, &ua_cases[ci], AXON_FLOAT32);
        ua_check_case(&k, &ua_cases[ci], AXON_FLOAT64);
    }
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

/* The forward splits rows and the backward planes over the pool: the bits do not depend on the thread count. */
static void test_results_are_bitwise_the_same_for_any_thread_count(void) {
    const int64_t P = 5, ih = 37, iw = 41, ow = 13;
    float *x = malloc(sizeof(float) * (size_t)(P * ih * iw)), *res[2][2];
    for (int64_t i = 0; i < P * ih * iw; i++) x[i] = (float)sin((double)i);
    int64_t si[3] = {P, ih, iw}, so[3] = {P, ih, ow};
    const size_t bi = sizeof(float) * (size_t)(P * ih * iw), bo = sizeof(float) * (size_t)(P * ih * ow);
    axon_upsample_aa_params_t prm = {AXON_AA_CUBIC, 0, {0, 0}};
    for (int t = 0; t < 2; t++) {
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        res[t][0] = malloc(bo), res[t][1] = malloc(bi);
        void *dx = kc_upload(&k, x, bi), *dy = kc_upload(&k, NULL, bo), *dg = kc_upload(&k, NULL, bi);
        axon_tensor_t tx = kc_tensor(dx, AXON_FLOAT32, 3, si, NULL), ty = kc_tensor(dy, AXON_FLOAT32, 3, so, NULL);
        axon_tensor_t tg = kc_tensor(dg, AXON_FLOAT32, 3, si, NULL);
        CHECK_OK(axon_kernel_upsample_aa_pass(k.s, &ty, &tx, &prm));
        CHECK_OK(axon_kernel_upsample_aa_backward(k.s, &tg, &ty, &prm));
        CHECK(kc_download(&k, res[t][0], dy, bo));
        CHECK(kc_download(&k, res[t][1], dg, bi));
        axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dy), axon_mem_free(k.dev, dg);
        axon_runtime_destroy(k.rt);
    }
    CHECK(kc_first_diff(res[0][0], res[1][0], bo) < 0);
    CHECK(kc_first_diff(res[0][1], res[1][1], bi) < 0);
    free(res[0][0]), free(res[0][1]), free(res[1][0]), free(res[1][1]), free(x);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[2 * 8 * 8];
    int64_t s_in[3] = {2, 4, 4}, s_out[3] = {2, 8, 8}, s_w[3] = {2, 4, 8}, s_bad[3] = {1, 4, 8};
    int64_t s_huge[3] = {1, 1, 1 << 14}, s_one[3] = {1, 1, 1};
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 3, s_in, NULL), out = kc_tensor(buf, AXON_FLOAT32, 3, s_out, NULL);
    axon_tensor_t w = kc_tensor(buf, AXON_FLOAT32, 3, s_w, NULL);
    axon_upsample_aa_params_t p = {AXON_AA_TRIANGLE, 0, {0, 0}}, q = p;
    CHECK_STATUS(axon_kernel_upsample_aa_pass(k.s, &out, &in, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("one pass resizes one of H and W, but both differ");
    q.filter = AXON_AA_FILTER_COUNT;
    CHECK_STATUS(axon_kernel_upsample_aa_pass(k.s, &w, &in, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("filter 2 is not an axon_aa_filter_t");
    q = p, q.scales[1] = -1;
    CHECK_STATUS(axon_kernel_upsample_aa_pass(k.s, &w, &in, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("upsample_bilinear2d_aa: scale factor -1 of spatial dim 1");
    axon_tensor_t half = kc_tensor(buf, AXON_FLOAT16, 3, s_in, NULL), halfw = kc_tensor(buf, AXON_FLOAT16, 3, s_w, NULL);
    CHECK_STATUS(axon_kernel_upsample_aa_pass(k.s, &halfw, &half, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("float32 or float64");
    axon_tensor_t bad = kc_tensor(buf, AXON_FLOAT32, 3, s_bad, NULL);
    CHECK_STATUS(axon_kernel_upsample_aa_backward(k.s, &in, &bad, &p), AXON_ERROR_INVALID_ARG);
    axon_tensor_t huge = kc_tensor(NULL, AXON_FLOAT32, 3, s_huge, NULL), one = kc_tensor(buf, AXON_FLOAT32, 3, s_one, NULL);
    huge.data = buf;   /* never read: the launch refuses the window first */
    CHECK_STATUS(axon_kernel_upsample_aa_pass(k.s, &one, &huge, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("taps along W exceeds");
    CHECK_STATUS(axon_kernel_upsample_aa_pass(k.s, &w, &in, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_case_matches_the_reference_forward_and_backward);
    RUN(test_results_are_bitwise_the_same_for_any_thread_count);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}
