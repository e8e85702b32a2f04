/* axon/batchnorm.h and axon/groupnorm.h against long double references: batch norm training forward (save_mean,
 * save_invstd, running statistics with the unbiased variance) and inference forward, backward in both modes, with
 * and without weight and bias; group norm forward and backward; results bitwise identical for 1 and 4 threads; bad
 * input refused with messages that name the op and the operand.
 *
 * Tolerances: the kernels compute in float64 from the rounded inputs, so results differ from the reference by the
 * output's rounding: relative 2^-8 (bfloat16), 2^-11 (float16), 2^-23 (float32) with slack, 1e-11 for float64, plus
 * an absolute term for gradients that cancel to near zero. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/batchnorm.h"
#include "axon/groupnorm.h"
#include "reduce_ref.h"

static const axon_dtype_t bt_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};

static long double bt_rtol(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return 1e-11L;
    case AXON_FLOAT32: return 3e-7L;
    case AXON_FLOAT16: return 1.1e-3L;
    default: return 8e-3L;
    }
}

/* n elements of dtype d on the host and the device; values uniform in [lo, hi) rounded to d. */
typedef struct bt_buf {
    axon_dtype_t d;
    int64_t n;
    void *h, *dev;
} bt_buf_t;

static bt_buf_t bt_make(const kc_dev_t *k, axon_dtype_t d, int64_t n, double lo, double hi) {
    bt_buf_t b = {d, n, calloc((size_t)(n > 0 ? n : 1), axon_dtype_size(d)), NULL};
    for (int64_t i = 0; i < n && hi > lo; i++) rr_set(d, b.h, i, lo + (hi - lo) * (rr_rand() / 4294967296.0));
    b.dev = rr_upload(k, d, b.h, n);
    return b;
}

static long double bt_get(const bt_buf_t *b, int64_t i) { return rr_get(b->d, b->h, i); }

static int bt_pull(const kc_dev_t *k, bt_buf_t *b) {
    return kc_download(k, b->h, b->dev, (size_t)b->n * axon_dtype_size(b->d));
}

static void bt_free(const kc_dev_t *k, bt_buf_t *b) {
    free(b->h);
    axon_mem_free(k->dev, b->dev);
}

static axon_tensor_t bt_t(const bt_buf_t *b, int ndim, const int64_t *sz) {
    return kc_tensor(b->dev, b->d, ndim, sz, NULL);
}

static axon_tensor_t bt_vec(const bt_buf_t *b) { return kc_tensor(b->dev, b->d, 1, &b->n, NULL); }

/* Compare a result with n reference values; prints the first mismatch. 1 on mismatch. */
static int bt_compare(const char *what, const bt_buf_t *got, const long double *want, long double scale) {
    for (int64_t i = 0; i < got->n; i++) {
        long double g = bt_get(got, i);
        if (!(fabsl(g - want[i]) <= bt_rtol(got->d) * (fabsl(want[i]) + scale))) {
            fprintf(stderr, "  %s %s: element %lld is %.10Lg, want %.10Lg\n", what, axon_dtype_name(got->d),
                    (long long)i, g, want[i]);
            return 1;
        }
    }
    return 0;
}

/* bt_compare with an error bound of rtol * (terms[i] + scale): for results computed in their own dtype, whose
 * rounding errors scale with the magnitudes of the terms summed (terms[i]), not with the result. */
static int bt_compare_terms(const char *what, const bt_buf_t *got, const long double *want, const long double *terms,
                            long double scale) {
    for (int64_t i = 0; i < got->n; i++) {
        long double g = bt_get(got, i);
        if (!(fabsl(g - want[i]) <= bt_rtol(got->d) * (terms[i] + scale))) {
            fprintf(stderr, "  %s %s: element %lld is %.10Lg, want %.10Lg (terms %.4Lg)\n", what,
                    axon_dtype_name(got->d), (long long)i, g, want[i], terms[i]);
            return 1;
        }
    }
    return 0;
}

/* ---- batch norm ---- */

#define BN_N 3
#define BN_C 4
/* Positions per (n, c): 37 (a bulk of 32 in the float path's partial sums and a tail of 5), then 2085 (one whole
 * 2048-element chunk of the halves' float buffers, then a chunk of 37). */
static int64_t bn_s = 37;
#define BN_S bn_s
#define BN_S_MAX 2085
#define BN_NUMEL (BN_N * BN_C * BN_S)

/* Whether check_batch_norm lays its [N, C, S] tensors out channels-last ((n * S + s) * C + c). */
static int bn_cl;

static int64_t bn_at(int64_t n, int64_t c, int64_t s) {
    return bn_cl ? (n * BN_S + s) * BN_C + c : (n * BN_C + c) * BN_S + s;
}

/* A [N, C, S] descriptor in bn_cl's layout. */
static axon_tensor_t bn_image(const bt_buf_t *b, const int64_t sz[3]) {
    axon_tensor_t t = bt_t(b, 3, sz);
    if (bn_cl) t.strides[0] = sz[1] * sz[2], t.strides[1] = 1, t.strides[2] = sz[1];
    return t;
}

/* Training forward, then backward from the saved statistics, then inference forward and backward from the updated
 * running statistics, all against the reference. `affine` adds weight and bias. */
static void check_batch_norm(const kc_dev_t *k, axon_dtype_t d, int affine) {
    const int64_t sz[3] = {BN_N, BN_C, BN_S};
    const double momentum = 0.1, eps = 1e-5;
    bt_buf_t x = bt_make(k, d, BN_NUMEL, -3, 5), y = bt_make(k, d, BN_NUMEL, 0, 0), g = bt_make(k, d, BN_NUMEL, -1, 1);
    bt_buf_t gi = bt_make(k, d, BN_NUMEL, 0, 0), w = bt_make(k, d, BN_C, 0.5, 1.5), b = bt_make(k, d, BN_C, -1, 1);
    bt_buf_t sm = bt_make(k, AXON_FLOAT32, BN_C, 0, 0), si = bt_make(k, AXON_FLOAT32, BN_C, 0, 0);
    bt_buf_t rm = bt_make(k, AXON_FLOAT32, BN_C, -0.5, 0.5), rv = bt_make(k, AXON_FLOAT32, BN_C, 0.5, 2);
    bt_buf_t gw = bt_make(k, AXON_FLOAT32, BN_C, 0, 0), gb = bt_make(k, AXON_FLOAT32, BN_C, 0, 0);
    axon_tensor_t tx = bn_image(&x, sz), ty = bn_image(&y, sz), tg = bn_image(&g, sz), tgi = bn_image(&gi, sz);
    axon_tensor_t tw = bt_vec(&w), tb = bt_vec(&b), tsm = bt_vec(&sm), tsi = bt_vec(&si), trm = bt_vec(&rm);
    axon_tensor_t trv = bt_vec(&rv), tgw = bt_vec(&gw), tgb = bt_vec(&gb);
    const axon_tensor_t *pw = affine ? &tw : NULL, *pb = affine ? &tb : NULL;
    static long double want[BN_N * BN_C * BN_S_MAX], terms[BN_N * BN_C * BN_S_MAX];
    long double mean[BN_C], inv[BN_C], rm0[BN_C], rv0[BN_C], wgw[BN_C], wgb[BN_C];
    const long double M = BN_N * BN_S;
    for (int64_t c = 0; c < BN_C; c++) rm0[c] = bt_get(&rm, c), rv0[c] = bt_get(&rv, c);

    CHECK_OK(axon_kernel_batch_norm(k->s, &ty, &tsm, &tsi, &trm, &trv, &tx, pw, pb, 1, momentum, eps));
    REQUIRE(bt_pull(k, &y) && bt_pull(k, &sm) && bt_pull(k, &si) && bt_pull(k, &rm) && bt_pull(k, &rv));
    long double wrm[BN_C], wrv[BN_C];
    for (int64_t c = 0; c < BN_C; c++) {
        long double s = 0, ss = 0;
        for (int64_t n = 0; n < BN_N; n++)
            for (int64_t i = 0; i < BN_S; i++) s += bt_get(&x, bn_at(n, c, i));
        mean[c] = s / M;
        for (int64_t n = 0; n < BN_N; n++)
            for (int64_t i = 0; i < BN_S; i++) ss += powl(bt_get(&x, bn_at(n, c, i)) - mean[c], 2);
        inv[c] = 1 / sqrtl(ss / M + eps);
        wrm[c] = momentum * mean[c] + (1 - momentum) * rm0[c];
        wrv[c] = momentum * ss / (M - 1) + (1 - momentum) * rv0[c];
        long double wc = affine ? bt_get(&w, c) : 1, bc = affine ? bt_get(&b, c) : 0;
        for (int64_t n = 0; n < BN_N; n++)
            for (int64_t i = 0; i < BN_S; i++) {
                want[bn_at(n, c, i)] = (bt_get(&x, bn_at(n, c, i)) - mean[c]) * inv[c] * wc + bc;
                terms[bn_at(n, c, i)] = fabsl((bt_get(&x, bn_at(n, c, i)) - mean[c]) * inv[c] * wc) + fabsl(bc);
            }
    }
    /* the float dtypes' output is computed in float (norm_batch.c): its error bound scales with |x_hat * w| + |b| */
    CHECK(!bt_compare_terms("batch_norm out", &y, want, terms, 1e-3L));
    CHECK(!bt_compare("batch_norm save_mean", &sm, mean, 1e-3L));
    CHECK(!bt_compare("batch_norm save_invstd", &si, inv, 1e-3L));
    CHECK(!bt_compare("batch_norm running_mean", &rm, wrm, 1e-3L));
    CHECK(!bt_compare("batch_norm running_var", &rv, wrv, 1e-3L));

    /* Training backward from the kernel's own (rounded) saved statistics, as autograd does. */
    CHECK_OK(axon_kernel_batch_norm_backward(k->s, &tgi, &tgw, &tgb, &tg, &tx, pw, &tsm, &tsi, 1, eps));
    REQUIRE(bt_pull(k, &gi) && bt_pull(k, &gw) && bt_pull(k, &gb));
    for (int64_t c = 0; c < BN_C; c++) {
        long double m = bt_get(&sm, c), iv = bt_get(&si, c), sg = 0, dot = 0, wc = affine ? bt_get(&w, c) : 1;
        for (int64_t n = 0; n < BN_N; n++)
            for (int64_t i = 0; i < BN_S; i++) {
                long double gv = bt_get(&g, bn_at(n, c, i));
                sg += gv, dot += gv * (bt_get(&x, bn_at(n, c, i)) - m);
            }
        wgw[c] = dot * iv, wgb[c] = sg;
        for (int64_t n = 0; n < BN_N; n++)
            for (int64_t i = 0; i < BN_S; i++) {
                int64_t j = bn_at(n, c, i);
                want[j] = (bt_get(&g, j) - sg / M - (bt_get(&x, j) - m) * iv * iv * dot / M) * iv * wc;
            }
    }
    CHECK(!bt_compare("batch_norm_backward grad_in", &gi, want, 1.0L));
    CHECK(!bt_compare("batch_norm_backward grad_weight", &gw, wgw, 1.0L));
    CHECK(!bt_compare("batch_norm_backward grad_bias", &gb, wgb, 1.0L));

    /* Inference: the running statistics just written, left unchanged. */
    CHECK_OK(axon_kernel_batch_norm(k->s, &ty, NULL, NULL, &trm, &trv, &tx, pw, pb, 0, momentum, eps));
    REQUIRE(bt_pull(k, &y));
    for (int64_t c = 0; c < BN_C; c++) {
        long double m = bt_get(&rm, c), iv = 1 / sqrtl(bt_get(&rv, c) + eps);
        long double wc = affine ? bt_get(&w, c) : 1, bc = affine ? bt_get(&b, c) : 0;
        for (int64_t n = 0; n < BN_N; n++)
            for (int64_t i = 0; i < BN_S; i++) {
                want[bn_at(n, c, i)] = (bt_get(&x, bn_at(n, c, i)) - m) * iv * wc + bc;
                terms[bn_at(n, c, i)] = fabsl((bt_get(&x, bn_at(n, c, i)) - m) * iv * wc) + fabsl(bc);
            }
    }
    CHECK(!bt_compare_terms("batch_norm eval out", &y, want, terms, 1e-3L));
    CHECK_OK(axon_kernel_batch_norm_backward(k->s, &tgi, &tgw, NULL, &tg, &tx, pw, &trm, &trv, 0, eps));
    REQUIRE(bt_pull(k, &gi) && bt_pull(k, &gw));
    for (int64_t c = 0; c < BN_C; c++) {
        long double m = bt_get(&rm, c), iv = 1 / sqrtl(bt_get(&rv, c) + eps), wc = affine ? bt_get(&w, c) : 1;
        long double dot = 0;
        for (int64_t n = 0; n < BN_N; n++)
            for (int64_t i = 0; i < BN_S; i++) {
                int64_t j = bn_at(n, c, i);
                want[j] = bt_get(&g, j) * iv * wc;
                dot += bt_get(&g, j) * (bt_get(&x, j) - m);
            }
        wgw[c] = dot * iv;
    }
    CHECK(!bt_compare("batch_norm_backward eval grad_in", &gi, want, 1.0L));
    CHECK(!bt_compare("batch_norm_backward eval grad_weight", &gw, wgw, 1.0L));
    bt_buf_t *all[] = {&x, &y, &g, &gi, &w, &b, &sm, &si, &rm, &rv, &gw, &gb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) bt_free(k, all[i]);
}

static void test_batch_norm_matches_reference_in_training_and_inference(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (bn_s = 37; bn_s <= BN_S_MAX; bn_s += BN_S_MAX - 37)
        for (size_t i = 0; i < sizeof bt_dtypes / sizeof *bt_dtypes; i++) {
            check_batch_norm(&k, bt_dtypes[i], 1);
            check_batch_norm(&k, bt_dtypes[i], 0);
        }
    bn_s = 37;
    axon_runtime_destroy(k.rt);
}

/* The same with channels-last tensors: 111 positions are four blocks of the channels-last loop's partial sums. */
static void test_channels_last_batch_norm_matches_reference(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    bn_cl = 1;
    for (size_t i = 0; i < sizeof bt_dtypes / sizeof *bt_dtypes; i++) {
        check_batch_norm(&k, bt_dtypes[i], 1);
        check_batch_norm(&k, bt_dtypes[i], 0);
    }
    bn_cl = 0;
    axon_runtime_destroy(k.rt);
}

/* ---- group norm ---- */

/* x uniform in [x0, x0 + 8) */
static void check_group_norm(const kc_dev_t *k, axon_dtype_t d, int64_t N, int64_t C, int64_t S, int64_t G, double x0) {
    const int64_t sz[3] = {N, C, S}, numel = N * C * S, D = C / G, len = D * S;
    const double eps = 1e-5;
    bt_buf_t x = bt_make(k, d, numel, x0, x0 + 8), y = bt_make(k, d, numel, 0, 0), g = bt_make(k, d, numel, -1, 1);
    bt_buf_t gi = bt_make(k, d, numel, 0, 0), w = bt_make(k, d, C, 0.5, 1.5), b = bt_make(k, d, C, -1, 1);
    bt_buf_t m = bt_make(k, d, N * G, 0, 0), r = bt_make(k, d, N * G, 0, 0);
    bt_buf_t gw = bt_make(k, d, C, 0, 0), gb = bt_make(k, d, C, 0, 0);
    axon_tensor_t tx = bt_t(&x, 3, sz), ty = bt_t(&y, 3, sz), tg = bt_t(&g, 3, sz), tgi = bt_t(&gi, 3, sz);
    axon_tensor_t tw = bt_vec(&w), tb = bt_vec(&b), tm = bt_vec(&m), tr = bt_vec(&r), tgw = bt_vec(&gw);
    axon_tensor_t tgb = bt_vec(&gb);
    long double *want = malloc(sizeof(long double) * (size_t)numel), *wm = malloc(sizeof(long double) * (size_t)N * G);
    long double *wr = malloc(sizeof(long double) * (size_t)N * G), *wgw = calloc((size_t)C, sizeof(long double));
    long double *wgb = calloc((size_t)C, sizeof(long double)), *terms = malloc(sizeof(long double) * (size_t)numel);
    CHECK_OK(axon_kernel_group_norm(k->s, &ty, &tm, &tr, &tx, &tw, &tb, G, eps));
    REQUIRE(bt_pull(k, &y) && bt_pull(k, &m) && bt_pull(k, &r));
    for (int64_t row = 0; row < N * G; row++) {
        long double s = 0, ss = 0;
        for (int64_t j = 0; j < len; j++) s += bt_get(&x, row * len + j);
        wm[row] = s / len;
        for (int64_t j = 0; j < len; j++) ss += powl(bt_get(&x, row * len + j) - wm[row], 2);
        wr[row] = 1 / sqrtl(ss / len + eps);
        for (int64_t j = 0; j < len; j++) {
            int64_t c = (row % G) * D + j / S;
            want[row * len + j] = (bt_get(&x, row * len + j) - wm[row]) * wr[row] * bt_get(&w, c) + bt_get(&b, c);
            terms[row * len + j] = fabsl((bt_get(&x, row * len + j) - wm[row]) * wr[row] * bt_get(&w, c)) +
                                   fabsl(bt_get(&b, c));
        }
    }
    /* float32 output is computed in float32 (norm_group.c): its error bound scales with |x_hat * w| + |b| */
    CHECK(!bt_compare_terms("group_norm out", &y, want, terms, 1e-3L));
    CHECK(!bt_compare("group_norm mean", &m, wm, 1e-3L));
    CHECK(!bt_compare("group_norm rstd", &r, wr, 1e-3L));
    CHECK_OK(axon_kernel_group_norm_backward(k->s, &tgi, &tgw, &tgb, &tg, &tx, &tm, &tr, &tw, G));
    REQUIRE(bt_pull(k, &gi) && bt_pull(k, &gw) && bt_pull(k, &gb));
    for (int64_t row = 0; row < N * G; row++) {
        long double mu = bt_get(&m, row), rs = bt_get(&r, row), s1 = 0, s2 = 0;
        for (int64_t j = 0; j < len; j++) {
            int64_t c = (row % G) * D + j / S;
            long double gwv = bt_get(&g, row * len + j) * bt_get(&w, c), xh = (bt_get(&x, row * len + j) - mu) * rs;
            s1 += gwv, s2 += gwv * xh;
            wgw[c] += bt_get(&g, row * len + j) * xh;
            wgb[c] += bt_get(&g, row * len + j);
        }
        for (int64_t j = 0; j < len; j++) {
            int64_t c = (row % G) * D + j / S;
            long double gwv = bt_get(&g, row * len + j) * bt_get(&w, c), xh = (bt_get(&x, row * len + j) - mu) * rs;
            want[row * len + j] = rs * (gwv - s1 / len - xh * s2 / len);
            terms[row * len + j] = fabsl(rs * gwv) + fabsl(rs * s1 / len) + fabsl(rs * xh * s2 / len);
        }
    }
    /* float32 grad_in is computed in float32 too: bounded by its terms' magnitudes */
    CHECK(!bt_compare_terms("group_norm_backward grad_in", &gi, want, terms, 1.0L));
    CHECK(!bt_compare("group_norm_backward grad_weight", &gw, wgw, 1.0L));
    CHECK(!bt_compare("group_norm_backward grad_bias", &gb, wgb, 1.0L));
    free(want), free(wm), free(wr), free(wgw), free(wgb), free(terms);
    bt_buf_t *all[] = {&x, &y, &g, &gi, &w, &b, &m, &r, &gw, &gb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) bt_free(k, all[i]);
}

static void test_group_norm_matches_reference_forward_and_backward(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (size_t i = 0; i < sizeof bt_dtypes / sizeof *bt_dtypes; i++) {
        check_group_norm(&k, bt_dtypes[i], 2, 6, 7, 3, -2);
        check_group_norm(&k, bt_dtypes[i], 3, 4, 1, 1, -2);   /* one group, no spatial dims */
        check_group_norm(&k, bt_dtypes[i], 1, 4, 600, 4, -2); /* runs longer than a conversion chunk */
        check_group_norm(&k, bt_dtypes[i], 2, 4, 100, 2, -2); /* float32 sums: 96 in partial sums, a tail of 4 */
        check_group_norm(&k, bt_dtypes[i], 2, 4, 100, 2, 1000); /* a mean 430 standard deviations from 0 */
    }
    axon_runtime_destroy(k.rt);
}

/* Channels and rows go to different threads; each sum is one thread's loop, so the bits cannot change. */
static void check_bitwise_identical_for_1_and_4_threads(void) {
    const int64_t sz[3] = {8, 64, 300}, n = 8 * 64 * 300;
    float *out[2] = {NULL, NULL}, *gout[2] = {NULL, NULL};
    for (int run = 0; run < 2; run++) {
        kc_dev_t k = kc_open(run == 0 ? 1 : 4);
        REQUIRE(k.s);
        rr_state = 12345;
        bt_buf_t x = bt_make(&k, AXON_FLOAT32, n, -3, 3), y = bt_make(&k, AXON_FLOAT32, n, 0, 0);
        bt_buf_t m = bt_make(&k, AXON_FLOAT32, 64, 0, 0), r = bt_make(&k, AXON_FLOAT32, 64, 0, 0);
        bt_buf_t gi = bt_make(&k, AXON_FLOAT32, n, 0, 0);
        axon_tensor_t tx = bn_image(&x, sz), ty = bn_image(&y, sz), tm = bt_vec(&m), tr = bt_vec(&r);
        axon_tensor_t tgi = bn_image(&gi, sz);
        CHECK_OK(axon_kernel_batch_norm(k.s, &ty, &tm, &tr, NULL, NULL, &tx, NULL, NULL, 1, 0.1, 1e-5));
        CHECK_OK(axon_kernel_batch_norm_backward(k.s, &tgi, NULL, NULL, &tx, &ty, NULL, &tm, &tr, 1, 1e-5));
        CHECK(bt_pull(&k, &y) && bt_pull(&k, &gi));
        out[run] = y.h, gout[run] = gi.h;
        y.h = gi.h = NULL;
        bt_buf_t *all[] = {&x, &y, &m, &r, &gi};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) bt_free(&k, all[i]);
        axon_runtime_destroy(k.rt);
    }
    CHECK(out[0] && out[1] && kc_first_diff(out[0], out[1], (size_t)n * 4) == -1);
    CHECK(gout[0] && gout[1] && kc_first_diff(gout[0], gout[1], (size_t)n * 4) == -1);
    free(out[0]), free(out[1]), free(gout[0]), free(gout[1]);
}

/* Batch norm in both layouts. */
static void test_results_are_bitwise_identical_for_1_and_4_threads(void) {
    for (bn_cl = 0; bn_cl < 2; bn_cl++) check_bitwise_identical_for_1_and_4_threads();
    bn_cl = 0;
}

static void test_bad_input_is_refused_with_messages(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    const int64_t sz[3] = {2, 4, 3}, one[1] = {24};
    bt_buf_t x = bt_make(&k, AXON_FLOAT32, 24, -1, 1), y = bt_make(&k, AXON_FLOAT32, 24, 0, 0);
    bt_buf_t v3 = bt_make(&k, AXON_FLOAT32, 3, 0, 0), v4 = bt_make(&k, AXON_FLOAT32, 4, 1, 2);
    bt_buf_t xi = bt_make(&k, AXON_INT32, 24, 0, 0);
    axon_tensor_t tx = bt_t(&x, 3, sz), ty = bt_t(&y, 3, sz), t3 = bt_vec(&v3), t4 = bt_vec(&v4);
    axon_tensor_t flat = bt_t(&x, 1, one), txi = bt_t(&xi, 3, sz);
    CHECK_STATUS(axon_kernel_batch_norm(k.s, &ty, NULL, NULL, NULL, NULL, &tx, &t3, NULL, 1, 0.1, 1e-5),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("batch_norm: weight has 3 elements");
    CHECK_STATUS(axon_kernel_batch_norm(k.s, &ty, NULL, NULL, NULL, NULL, &flat, NULL, NULL, 1, 0.1, 1e-5),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("ndim >= 2");
    CHECK_STATUS(axon_kernel_batch_norm(k.s, &ty, NULL, NULL, &t4, NULL, &tx, NULL, NULL, 0, 0.1, 1e-5),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("inference needs running_mean and running_var");
    axon_tensor_t tcl = tx; /* channels-last in, contiguous out */
    tcl.strides[0] = 12, tcl.strides[1] = 1, tcl.strides[2] = 4;
    CHECK_STATUS(axon_kernel_batch_norm(k.s, &ty, NULL, NULL, NULL, NULL, &tcl, NULL, NULL, 1, 0.1, 1e-5),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("must share one layout");
    CHECK_STATUS(axon_kernel_batch_norm(k.s, &txi, NULL, NULL, NULL, NULL, &txi, NULL, NULL, 1, 0.1, 1e-5),
                 AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("int32");
    CHECK_STATUS(axon_kernel_batch_norm_backward(k.s, &ty, NULL, NULL, &tx, &tx, NULL, NULL, &t4, 1, 1e-5),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("batch_norm_backward: mean is NULL");
    CHECK_STATUS(axon_kernel_group_norm(k.s, &ty, NULL, NULL, &tx, NULL, NULL, 3, 1e-5), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("group_norm: groups 3 must be >= 1 and divide the 4 channels");
    CHECK_STATUS(axon_kernel_group_norm(k.s, &ty, &t3, NULL, &tx, NULL, NULL, 2, 1e-5), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("group_norm: mean has 3 elements");
    CHECK_STATUS(axon_kernel_group_norm_backward(k.s, &ty, NULL, NULL, &tx, &tx, &t4, NULL, NULL, 2),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("the forward's rstd is NULL");
    CHECK_OK(axon_stream_sync(k.s));
    bt_buf_t *all[] = {&x, &y, &v3, &v4, &xi};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) bt_free(&k, all[i]);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_batch_norm_matches_reference_in_training_and_inference);
    RUN(test_channels_last_batch_norm_matches_reference);
    RUN(test_group_norm_matches_reference_forward_and_backward);
    RUN(test_results_are_bitwise_identical_for_1_and_4_threads);
    RUN(test_bad_input_is_refused_with_messages);
    return check_report();
}
