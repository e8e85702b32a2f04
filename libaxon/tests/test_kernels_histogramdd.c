/* axon/histogramdd.h against a direct reference (each coordinate's bin by a scan of its edges): 1 to 3 dims, linear
 * and arbitrary edges, with and without weights, values on edges, outside the range and NaN; float32 and float64;
 * the same bits for 1 and 4 threads; bad input refused with a message. Coordinates, edges and weights are
 * multiples of 1/16, exact in both dtypes, so the sums are exact too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/histogramdd.h"
#include "kernels_check.h"

/* the bin of x among edges e[0..nb] by a scan (the last bin takes its right edge), -1 outside or NaN */
static int64_t hd_ref_bin(const double *e, int64_t nb, double x) {
    if (!(x >= e[0] && x <= e[nb])) return -1;
    int64_t b = 0;
    while (b + 1 < nb && e[b + 1] <= x) b++;
    return b;
}

static void hd_put(axon_dtype_t d, void *p, int64_t i, double v) {
    if (d == AXON_FLOAT64) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

static double hd_get(axon_dtype_t d, const void *p, int64_t i) {
    return d == AXON_FLOAT64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* n points of D coordinates into bins nb[d] over linear edges [-4, 4] (linear) or uneven ones */
static void hd_check(kc_dev_t *k, axon_dtype_t d, int D, const int64_t *nb, int linear, int weighted, int64_t n) {
    const size_t es = axon_dtype_size(d);
    int64_t nbins = 1, nedges = 0;
    for (int j = 0; j < D; j++) nbins *= nb[j], nedges += nb[j] + 1;
    double *x = malloc(sizeof(double) * (size_t)(n * D)), *w = malloc(sizeof(double) * (size_t)n);
    double *e = malloc(sizeof(double) * (size_t)nedges), *ref = calloc((size_t)nbins, sizeof(double));
    uint32_t st = 7;
    for (int64_t i = 0; i < n * D; i++) {
        x[i] = (double)((int)(kc_next_u24(&st) % 161) - 80) / 16;   /* [-5, 5] by 1/16: edges hit, some outside */
        if (i % 97 == 5) x[i] = NAN;
    }
    for (int64_t i = 0; i < n; i++) w[i] = (double)(kc_next_u24(&st) % 33) / 16;
    for (int j = 0, at = 0; j < D; at += (int)nb[j] + 1, j++)
        for (int64_t b = 0; b <= nb[j]; b++)
            e[at + b] = linear ? -4.0 + 8.0 * (double)b / (double)nb[j] : -4.0 + 8.0 * pow((double)b / (double)nb[j], 2);
    for (int64_t i = 0; i < n; i++) {
        int64_t at = 0, stride = 1, off = nedges;
        int inside = 1;
        for (int j = D - 1; j >= 0; j--) {
            off -= nb[j] + 1;
            const int64_t b = hd_ref_bin(e + off, nb[j], x[i * D + j]);
            if (b < 0) inside = 0;
            at += stride * b, stride *= nb[j];
        }
        if (inside) ref[at] += weighted ? w[i] : 1.0;
    }
    char *hx = malloc((size_t)(n * D) * es), *hw = malloc((size_t)n * es), *he = malloc((size_t)nedges * es);
    char *hh = malloc((size_t)nbins * es);
    for (int64_t i = 0; i < n * D; i++) hd_put(d, hx, i, x[i]);
    for (int64_t i = 0; i < n; i++) hd_put(d, hw, i, w[i]);
    for (int64_t i = 0; i < nedges; i++) hd_put(d, he, i, e[i]);
    void *dx = kc_upload(k, hx, (size_t)(n * D) * es), *dw = kc_upload(k, hw, (size_t)n * es);
    void *de = kc_upload(k, he, (size_t)nedges * es), *dh = kc_upload(k, NULL, (size_t)nbins * es);
    int64_t sx[2] = {n, D};
    axon_tensor_t tx = kc_tensor(dx, d, 2, sx, NULL), tw = kc_vector(dw, d, n), th = kc_tensor(dh, d, D, nb, NULL);
    axon_tensor_t te[AXON_MAX_DIMS];
    for (int j = 0, at = 0; j < D; at += (int)nb[j] + 1, j++)
        te[j] = kc_vector((char *)de + (size_t)at * es, d, nb[j] + 1);
    CHECK_OK(axon_kernel_histogramdd(k->s, &th, &tx, weighted ? &tw : NULL, te, linear));
    CHECK(kc_download(k, hh, dh, (size_t)nbins * es));
    int64_t bad = -1;
    for (int64_t b = 0; b < nbins && bad < 0; b++)
        if (hd_get(d, hh, b) != ref[b]) bad = b;
    if (bad >= 0) {
        fprintf(stderr, "  %s D=%d linear=%d weighted=%d: bin %lld is %g, expected %g\n", axon_dtype_name(d), D, linear,
                weighted, (long long)bad, hd_get(d, hh, bad), ref[bad]);
        check_failures_in_test++;
    }
    axon_mem_free(k->dev, dx), axon_mem_free(k->dev, dw), axon_mem_free(k->dev, de), axon_mem_free(k->dev, dh);
    free(x), free(w), free(e), free(ref), free(hx), free(hw), free(he), free(hh);
}

static void test_counts_and_weighted_sums_match_the_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    static const int64_t nb1[1] = {16}, nb2[2] = {5, 8}, nb3[3] = {3, 4, 2};
    const axon_dtype_t dts[2] = {AXON_FLOAT32, AXON_FLOAT64};
    for (int t = 0; t < 2; t++)
        for (int linear = 0; linear < 2; linear++)
            for (int weighted = 0; weighted < 2; weighted++) {
                hd_check(&k, dts[t], 1, nb1, linear, weighted, 100000);
                hd_check(&k, dts[t], 2, nb2, linear, weighted, 5000);
                hd_check(&k, dts[t], 3, nb3, linear, weighted, 777);
            }
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

/* Chunks are cut by the number of points, never by threads: the same bits with 1 and 4 workers. */
static void test_results_are_bitwise_the_same_for_any_thread_count(void) {
    const int64_t n = 200000, nb = 7;
    float *x = malloc(sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n), e[8], res[2][7];
    for (int64_t i = 0; i < n; i++) x[i] = (float)sin((double)i), w[i] = (float)cos((double)i * 0.37);
    for (int b = 0; b <= nb; b++) e[b] = -1.0f + 2.0f * (float)b / (float)nb;
    for (int t = 0; t < 2; t++) {
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        void *dx = kc_upload(&k, x, sizeof(float) * (size_t)n), *dw = kc_upload(&k, w, sizeof(float) * (size_t)n);
        void *de = kc_upload(&k, e, sizeof e), *dh = kc_upload(&k, NULL, sizeof res[0]);
        int64_t sx[2] = {n, 1};
        axon_tensor_t tx = kc_tensor(dx, AXON_FLOAT32, 2, sx, NULL), tw = kc_vector(dw, AXON_FLOAT32, n);
        axon_tensor_t te = kc_vector(de, AXON_FLOAT32, nb + 1), th = kc_vector(dh, AXON_FLOAT32, nb);
        CHECK_OK(axon_kernel_histogramdd(k.s, &th, &tx, &tw, &te, 1));
        CHECK(kc_download(&k, res[t], dh, sizeof res[0]));
        axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dw), axon_mem_free(k.dev, de), axon_mem_free(k.dev, dh);
        axon_runtime_destroy(k.rt);
    }
    CHECK(kc_first_diff(res[0], res[1], sizeof res[0]) < 0);
    free(x), free(w);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[64];
    int64_t s_in[2] = {8, 2}, s_h[2] = {3, 4}, s_h1[1] = {3};
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 2, s_in, NULL), h = kc_tensor(buf, AXON_FLOAT32, 2, s_h, NULL);
    axon_tensor_t e[2] = {kc_vector(buf, AXON_FLOAT32, 4), kc_vector(buf, AXON_FLOAT32, 5)};
    axon_tensor_t h1 = kc_tensor(buf, AXON_FLOAT32, 1, s_h1, NULL), w = kc_vector(buf, AXON_FLOAT32, 7);
    CHECK_STATUS(axon_kernel_histogramdd(k.s, &h1, &in, NULL, e, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("hist has 1 dimensions, in has 2 coordinates");
    CHECK_STATUS(axon_kernel_histogramdd(k.s, &h, &in, &w, e, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("weight must be [8]");
    axon_tensor_t e_bad[2] = {kc_vector(buf, AXON_FLOAT32, 4), kc_vector(buf, AXON_FLOAT32, 4)};
    CHECK_STATUS(axon_kernel_histogramdd(k.s, &h, &in, NULL, e_bad, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("edges 1 must have hist.size(1) + 1 elements");
    axon_tensor_t i64 = kc_tensor(buf, AXON_INT64, 2, s_in, NULL);
    CHECK_STATUS(axon_kernel_histogramdd(k.s, &h, &i64, NULL, e, 1), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("one floating dtype");
    CHECK_STATUS(axon_kernel_histogramdd(k.s, &h, &in, NULL, NULL, 1), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_counts_and_weighted_sums_match_the_reference);
    RUN(test_results_are_bitwise_the_same_for_any_thread_count);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}
