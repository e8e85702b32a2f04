/* axon/upsample.h against a naive long double reference: nearest, nearest-exact, linear and cubic over 1, 2 and 3
 * spatial dims, with and without align_corners and scale factors, forward and backward, every float dtype; the
 * same bits for 1 and 4 threads; nearest of integers; bad input refused with a message.
 *
 * The reference maps coordinates with exact arithmetic, so the sizes here are chosen with ratios that float32
 * holds exactly (0.5, 0.625, 1.25, ...): then float32 index arithmetic (what the kernel and PyTorch use) picks the
 * same source elements. Inputs are multiples of 1/64; tolerances are the output's rounding (as test_pooling.c),
 * except that float32 linear and cubic results also carry PyTorch's float32 weights: the fraction t = x - floor(x)
 * keeps the absolute error of x (about 2^-24 * I), which a weight passes on scaled by the input's range. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/upsample.h"
#include "reduce_ref.h"

static const axon_dtype_t ut_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};
#define UT_PLANES 6

static long double ut_rtol(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return 1e-12L;
    case AXON_FLOAT32: return 3e-7L;
    case AXON_FLOAT16: return 1.1e-3L;
    default: return 8e-3L;
    }
}

/* 1-d taps of output o (exact arithmetic); returns the count. */
static int ut_taps(axon_upsample_mode_t mode, int align, double f, int64_t o, int64_t I, int64_t O, int64_t *idx,
                   long double *w) {
    long double r = f > 0 ? 1.0L / f : (long double)I / O;
    if (mode == AXON_UPSAMPLE_NEAREST || mode == AXON_UPSAMPLE_NEAREST_EXACT) {
        long double x = mode == AXON_UPSAMPLE_NEAREST ? o * r : (o + 0.5L) * r;
        idx[0] = (int64_t)floorl(x);
        if (idx[0] > I - 1) idx[0] = I - 1;
        w[0] = 1;
        return 1;
    }
    if (align) r = O > 1 ? (long double)(I - 1) / (O - 1) : 0;
    long double x = align ? r * o : r * (o + 0.5L) - 0.5L;
    if (mode == AXON_UPSAMPLE_LINEAR) {
        if (x < 0) x = 0;
        int64_t i0 = (int64_t)floorl(x);
        if (i0 > I - 1) i0 = I - 1;
        long double t = x - i0;
        t = t > 1 ? 1 : t;
        idx[0] = i0, idx[1] = i0 < I - 1 ? i0 + 1 : i0, w[0] = 1 - t, w[1] = t;
        return 2;
    }
    int64_t i0 = (int64_t)floorl(x);
    if (i0 > I - 1) i0 = I - 1;
    long double t = x - i0, A = -0.75L;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    /* Keys' kernel at distances 1 + t, t, 1 - t, 2 - t. */
    long double dist[4] = {1 + t, t, 1 - t, 2 - t};
    for (int j = 0; j < 4; j++) {
        long double s = dist[j];
        w[j] = s <= 1 ? ((A + 2) * s - (A + 3)) * s * s + 1 : ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
        int64_t k = i0 - 1 + j;
        idx[j] = k < 0 ? 0 : k > I - 1 ? I - 1 : k;
    }
    return 4;
}

typedef struct ut_case {
    int n;
    int64_t in[3], out[3];
    axon_upsample_mode_t mode;
    int align;
    double scales[3];
} ut_case_t;

static const ut_case_t ut_cases[] = {
    {1, {5}, {8}, AXON_UPSAMPLE_NEAREST, 0, {0}},
    {1, {8}, {5}, AXON_UPSAMPLE_NEAREST, 0, {0.625}},
    {2, {4, 5}, {8, 8}, AXON_UPSAMPLE_NEAREST, 0, {2.0, 1.6}},
    {3, {2, 3, 4}, {4, 6, 5}, AXON_UPSAMPLE_NEAREST, 0, {0, 0, 1.25}},
    {1, {5}, {8}, AXON_UPSAMPLE_NEAREST_EXACT, 0, {0}},
    {2, {4, 8}, {8, 5}, AXON_UPSAMPLE_NEAREST_EXACT, 0, {0, 0}},
    {3, {2, 4, 5}, {3, 8, 4}, AXON_UPSAMPLE_NEAREST_EXACT, 0, {1.5, 2.0, 0.8}},
    {1, {5}, {9}, AXON_UPSAMPLE_LINEAR, 1, {0}},
    {1, {6}, {15}, AXON_UPSAMPLE_LINEAR, 0, {2.5}},
    {2, {5, 4}, {9, 8}, AXON_UPSAMPLE_LINEAR, 0, {0}},
    {2, {5, 4}, {9, 7}, AXON_UPSAMPLE_LINEAR, 1, {0}},
    {2, {8, 6}, {5, 6}, AXON_UPSAMPLE_LINEAR, 0, {0.625, 0}},
    {3, {3, 4, 5}, {5, 8, 9}, AXON_UPSAMPLE_LINEAR, 1, {0}},
    {3, {2, 4, 4}, {4, 6, 8}, AXON_UPSAMPLE_LINEAR, 0, {2.0, 1.5, 2.0}},
    {2, {5, 4}, {9, 8}, AXON_UPSAMPLE_CUBIC, 0, {0}},
    {2, {5, 6}, {9, 11}, AXON_UPSAMPLE_CUBIC, 1, {0}},
    {2, {8, 8}, {5, 4}, AXON_UPSAMPLE_CUBIC, 0, {0.625, 0.5}},
};

static int ut_compare(const kc_dev_t *k, axon_dtype_t d, const void *dev, const long double *want, int64_t n,
                      long double scale, const char *what, size_t ci) {
    void *h = calloc((size_t)n, axon_dtype_size(d));
    int ok = kc_download(k, h, dev, (size_t)n * axon_dtype_size(d));
    const int interp = ut_cases[ci].mode == AXON_UPSAMPLE_LINEAR || ut_cases[ci].mode == AXON_UPSAMPLE_CUBIC;
    const long double rtol = d == AXON_FLOAT32 && interp ? 1e-5L : ut_rtol(d);
    for (int64_t i = 0; ok && i < n; i++) {
        long double got = rr_get(d, h, i);
        if (!(fabsl(got - want[i]) <= rtol * (fabsl(want[i]) + scale))) {
            fprintf(stderr, "%s case %zu (%s): element %lld is %.10Lg, expected %.10Lg\n", what, ci,
                    axon_dtype_name(d), (long long)i, got, want[i]);
            ok = 0;
        }
    }
    free(h);
    return ok;
}

static void *ut_upload(const kc_dev_t *k, axon_dtype_t d, long double *v, int64_t n) {
    void *h = calloc((size_t)n, axon_dtype_size(d));
    for (int64_t i = 0; i < n; i++) {
        v[i] = (long double)((int)(rr_rand() % 257) - 128) / 64;
        rr_set(d, h, i, v[i]);
    }
    void *dev = rr_upload(k, d, h, n);
    free(h);
    return dev;
}

static void test_every_mode_matches_reference_forward_and_backward(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (size_t ci = 0; ci < sizeof ut_cases / sizeof ut_cases[0]; ci++)
        for (size_t di = 0; di < sizeof ut_dtypes / sizeof ut_dtypes[0]; di++) {
            const ut_case_t *c = &ut_cases[ci];
            axon_dtype_t d = ut_dtypes[di];
            int64_t I[3] = {1, 1, 1}, O[3] = {1, 1, 1}, si[5] = {2, 3}, so[5] = {2, 3};
            double f[3] = {0, 0, 0};
            for (int i = 0; i < c->n; i++) {
                I[3 - c->n + i] = si[2 + i] = c->in[i], O[3 - c->n + i] = so[2 + i] = c->out[i];
                f[3 - c->n + i] = c->scales[i];
            }
            int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2], ni = UT_PLANES * isz, no = UT_PLANES * osz;
            long double *x = malloc(sizeof(long double) * (size_t)ni), *y = calloc((size_t)no, sizeof(long double));
            long double *g = malloc(sizeof(long double) * (size_t)no), *gi = calloc((size_t)ni, sizeof(long double));
            void *dx = ut_upload(&k, d, x, ni), *dg = ut_upload(&k, d, g, no);
            size_t es = axon_dtype_size(d);
            void *dy = kc_upload(&k, NULL, (size_t)no * es), *dgi = kc_upload(&k, NULL, (size_t)ni * es);
            for (int64_t p = 0; p < UT_PLANES; p++)
                for (int64_t o = 0; o < osz; o++) {
                    int64_t oc[3] = {o / (O[1] * O[2]), o / O[2] % O[1], o % O[2]}, id[3][4];
                    long double wt[3][4];
                    int nt[3];
                    for (int q = 0; q < 3; q++) {
                        if (q < 3 - c->n) nt[q] = 1, id[q][0] = 0, wt[q][0] = 1;
                        else nt[q] = ut_taps(c->mode, c->align, f[q], oc[q], I[q], O[q], id[q], wt[q]);
                    }
                    for (int a = 0; a < nt[0]; a++)
                        for (int b = 0; b < nt[1]; b++)
                            for (int e = 0; e < nt[2]; e++) {
                                int64_t i = p * isz + (id[0][a] * I[1] + id[1][b]) * I[2] + id[2][e];
                                long double w = wt[0][a] * wt[1][b] * wt[2][e];
                                y[p * osz + o] += w * x[i];
                                gi[i] += w * g[p * osz + o];
                            }
                }
            axon_upsample_params_t prm = {c->n, c->mode, c->align, {c->scales[0], c->scales[1], c->scales[2]}};
            axon_tensor_t tx = kc_tensor(dx, d, c->n + 2, si, NULL), ty = kc_tensor(dy, d, c->n + 2, so, NULL);
            axon_tensor_t tg = kc_tensor(dg, d, c->n + 2, so, NULL), tgi = kc_tensor(dgi, d, c->n + 2, si, NULL);
            CHECK_OK(axon_kernel_upsample(k.s, &ty, &tx, &prm));
            CHECK(ut_compare(&k, d, dy, y, no, 2, "upsample", ci));
            CHECK_OK(axon_kernel_upsample_backward(k.s, &tgi, &tg, &prm));
            CHECK(ut_compare(&k, d, dgi, gi, ni, 8, "upsample_backward", ci));
            CHECK_OK(axon_stream_sync(k.s));
            axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dy), axon_mem_free(k.dev, dgi);
            free(x), free(y), free(g), free(gi);
        }
    axon_runtime_destroy(k.rt);
}

static void test_backward_is_bitwise_the_same_for_any_thread_count(void) {
    int64_t si[4] = {2, 3, 13, 17}, so[4] = {2, 3, 29, 40}, ni = 6 * 13 * 17, no = 6 * 29 * 40;
    long double *g = malloc(sizeof(long double) * (size_t)no);
    void *res[2] = {malloc((size_t)ni * 2), malloc((size_t)ni * 2)};
    axon_upsample_params_t prm = {2, AXON_UPSAMPLE_CUBIC, 0, {0, 0}};
    for (int t = 0; t < 2; t++) {
        rr_state = 42;
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        void *dg = ut_upload(&k, AXON_BFLOAT16, g, no), *dgi = kc_upload(&k, NULL, (size_t)ni * 2);
        axon_tensor_t tg = kc_tensor(dg, AXON_BFLOAT16, 4, so, NULL), tgi = kc_tensor(dgi, AXON_BFLOAT16, 4, si, NULL);
        CHECK_OK(axon_kernel_upsample_backward(k.s, &tgi, &tg, &prm));
        CHECK(kc_download(&k, res[t], dgi, (size_t)ni * 2));
        axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dgi);
        axon_runtime_destroy(k.rt);
    }
    CHECK(kc_first_diff(res[0], res[1], (size_t)ni * 2) < 0);
    free(res[0]), free(res[1]), free(g);
}

/* A scale factor so small that its ratio overflows float32 still picks an element inside the input. */
static void test_extreme_scale_factors_stay_inside_the_input(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float in[2 * 3 * 4], out[2 * 3 * 7];
    for (int i = 0; i < 24; i++) in[i] = (float)i;
    int64_t si[3] = {2, 3, 4}, so[3] = {2, 3, 7};
    void *di = kc_upload(&k, in, sizeof in), *dout = kc_upload(&k, NULL, sizeof out);
    axon_tensor_t ti = kc_tensor(di, AXON_FLOAT32, 3, si, NULL), to = kc_tensor(dout, AXON_FLOAT32, 3, so, NULL);
    for (int m = 0; m < AXON_UPSAMPLE_MODE_COUNT; m++) {
        axon_upsample_params_t prm = {1, (axon_upsample_mode_t)m, 0, {1e-300}};
        CHECK_OK(axon_kernel_upsample(k.s, &to, &ti, &prm));
        CHECK(kc_download(&k, out, dout, sizeof out));
        for (int i = 0; i < 42; i++) CHECK(isfinite(out[i]) && out[i] >= 0 && out[i] <= 23);
    }
    axon_mem_free(k.dev, di), axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* Nearest and nearest-exact of integers copy the elements the float path picks (small integers, exact in float32),
 * over 1 to 3 spatial dims with ratios up and down; int64 values above 2^53 come through unrounded. */
static void test_nearest_of_integers_copies_the_elements_floats_pick(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    static const axon_dtype_t dts[] = {AXON_INT8, AXON_INT16, AXON_INT32, AXON_INT64, AXON_UINT8};
    static const struct {
        int n;
        int64_t in[3], out[3];
    } cases[] = {{1, {7}, {12}}, {2, {5, 6}, {9, 4}}, {3, {3, 4, 5}, {5, 7, 3}}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int mode = AXON_UPSAMPLE_NEAREST; mode <= AXON_UPSAMPLE_NEAREST_EXACT; mode++)
            for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
                const int n = cases[ci].n;
                int64_t si[4] = {2}, so[4] = {2}, ni = 2, no = 2;
                for (int i = 0; i < n; i++) si[1 + i] = cases[ci].in[i], so[1 + i] = cases[ci].out[i];
                for (int i = 0; i < n; i++) ni *= si[1 + i], no *= so[1 + i];
                const axon_dtype_t d = dts[di];
                const int64_t big = d == AXON_INT64 ? (int64_t)1 << 60 : 0;
                char *hx = malloc((size_t)ni * 8), *hy = malloc((size_t)no * 8);
                float *fx = malloc(sizeof(float) * (size_t)ni), *fy = malloc(sizeof(float) * (size_t)no);
                for (int64_t i = 0; i < ni; i++) {
                    fx[i] = (float)(i % 100);
                    rr_set(d, hx, i, (long double)(big + i % 100));
                }
                void *dx = kc_upload(&k, hx, (size_t)ni * axon_dtype_size(d));
                void *dy = kc_upload(&k, NULL, (size_t)no * 8);
                void *dfx = kc_upload(&k, fx, sizeof(float) * (size_t)ni);
                void *dfy = kc_upload(&k, NULL, sizeof(float) * (size_t)no);
                axon_tensor_t tx = kc_tensor(dx, d, n + 1, si, NULL), ty = kc_tensor(dy, d, n + 1, so, NULL);
                axon_tensor_t tfx = kc_tensor(dfx, AXON_FLOAT32, n + 1, si, NULL);
                axon_tensor_t tfy = kc_tensor(dfy, AXON_FLOAT32, n + 1, so, NULL);
                axon_upsample_params_t prm = {n, (axon_upsample_mode_t)mode, 0, {0, 0, 0}};
                CHECK_OK(axon_kernel_upsample(k.s, &ty, &tx, &prm));
                CHECK_OK(axon_kernel_upsample(k.s, &tfy, &tfx, &prm));
                CHECK(kc_download(&k, hy, dy, (size_t)no * axon_dtype_size(d)));
                CHECK(kc_download(&k, fy, dfy, sizeof(float) * (size_t)no));
                int bad = 0;
                for (int64_t o = 0; o < no; o++) bad |= (int64_t)rr_get(d, hy, o) != big + (int64_t)fy[o];
                if (bad) {
                    fprintf(stderr, "  nearest mode %d case %zu %s differs\n", mode, ci, axon_dtype_name(d));
                    check_failures_in_test++;
                }
                axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dy);
                axon_mem_free(k.dev, dfx), axon_mem_free(k.dev, dfy);
                free(hx), free(hy), free(fx), free(fy);
            }
    /* the other modes and every backward stay float-only; integers take one dtype */
    int32_t a[2 * 4], b[2 * 8];
    float f[2 * 8];
    int64_t s_in[2] = {2, 4}, s_out[2] = {2, 8};
    axon_tensor_t ti = kc_tensor(a, AXON_INT32, 2, s_in, NULL), to = kc_tensor(b, AXON_INT32, 2, s_out, NULL);
    axon_tensor_t tf = kc_tensor(f, AXON_FLOAT32, 2, s_out, NULL);
    axon_upsample_params_t lin = {1, AXON_UPSAMPLE_LINEAR, 0, {0}}, near = {1, AXON_UPSAMPLE_NEAREST, 0, {0}};
    CHECK_STATUS(axon_kernel_upsample(k.s, &to, &ti, &lin), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_upsample_backward(k.s, &ti, &to, &near), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_upsample(k.s, &tf, &ti, &near), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("differ");
    axon_runtime_destroy(k.rt);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[2 * 3 * 8 * 8];
    int64_t s_in[4] = {2, 3, 4, 4}, s_out[4] = {2, 3, 8, 8}, s_bad[4] = {1, 3, 8, 8}, s_empty[4] = {2, 3, 0, 4};
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 4, s_in, NULL), out = kc_tensor(buf, AXON_FLOAT32, 4, s_out, NULL);
    axon_upsample_params_t p = {2, AXON_UPSAMPLE_LINEAR, 0, {0, 0}};
    axon_upsample_params_t q = p;
    q.mode = AXON_UPSAMPLE_MODE_COUNT;
    CHECK_STATUS(axon_kernel_upsample(k.s, &out, &in, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("mode 4 is not an axon_upsample_mode_t");
    q = p, q.scales[1] = -2;
    CHECK_STATUS(axon_kernel_upsample(k.s, &out, &in, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("upsample_linear: scale factor -2 of spatial dim 1");
    q = p, q.nspatial = 0;
    CHECK_STATUS(axon_kernel_upsample_backward(k.s, &in, &out, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("upsample_linear_backward: 0 spatial dimensions");
    axon_tensor_t bad = kc_tensor(buf, AXON_FLOAT32, 4, s_bad, NULL);
    CHECK_STATUS(axon_kernel_upsample(k.s, &bad, &in, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("same rank and leading");
    axon_tensor_t empty = kc_tensor(buf, AXON_FLOAT32, 4, s_empty, NULL);
    CHECK_STATUS(axon_kernel_upsample(k.s, &out, &empty, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("empty spatial dimension");
    axon_tensor_t i64 = kc_tensor(buf, AXON_INT64, 4, s_in, NULL);
    CHECK_STATUS(axon_kernel_upsample(k.s, &out, &i64, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("upsample_linear: in dtype int64");
    CHECK_STATUS(axon_kernel_upsample(k.s, &out, &in, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_mode_matches_reference_forward_and_backward);
    RUN(test_backward_is_bitwise_the_same_for_any_thread_count);
    RUN(test_extreme_scale_factors_stay_inside_the_input);
    RUN(test_nearest_of_integers_copies_the_elements_floats_pick);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}
