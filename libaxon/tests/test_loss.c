/* nll_loss and the element-wise losses (axon/loss.h), forward and backward, against float64 references written out
 * here: every reduction, with and without weight and ignore_index, [N, C] and [N, C, K] layouts; bad targets (and
 * BCE inputs outside [0, 1]) fail at synchronization without writing; bad descriptors fail at launch with messages;
 * results do not depend on the thread count. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "axon/loss.h"
#include "../kernels/dtype.h"
#include "kernels_check.h"

/* A float32 or float64 device buffer of n elements with host mirror. */
typedef struct lt_buf {
    axon_dtype_t dt;
    int64_t n;
    double *host;
    void *dev;
} lt_buf_t;

/* Element i of raw storage of a float dtype, widened. */
static double lt_value(axon_dtype_t dt, const char *raw, int64_t i) {
    const uint16_t *h = (const uint16_t *)(const void *)raw;
    return dt == AXON_FLOAT32   ? ((const float *)(const void *)raw)[i]
           : dt == AXON_FLOAT64 ? ((const double *)(const void *)raw)[i]
           : dt == AXON_FLOAT16 ? axon_f16_to_f32(h[i])
                                : axon_bf16_to_f32(h[i]);
}

static lt_buf_t lt_make(const kc_dev_t *k, axon_dtype_t dt, int64_t n, const double *vals) {
    lt_buf_t b = {dt, n, calloc((size_t)(n ? n : 1), sizeof(double)), NULL};
    size_t es = axon_dtype_size(dt);
    char *raw = calloc((size_t)(n ? n : 1), es);
    for (int64_t i = 0; i < n; i++) {
        b.host[i] = vals ? vals[i] : 0.0;
        if (dt == AXON_FLOAT32) ((float *)(void *)raw)[i] = (float)b.host[i];
        else if (dt == AXON_FLOAT64) ((double *)(void *)raw)[i] = b.host[i];
        else
            ((uint16_t *)(void *)raw)[i] = dt == AXON_FLOAT16 ? axon_f64_to_f16(b.host[i]) : axon_f64_to_bf16(b.host[i]);
        b.host[i] = lt_value(dt, raw, i); /* what the device holds */
    }
    b.dev = kc_upload(k, raw, (size_t)(n ? n : 1) * es);
    free(raw);
    return b;
}

/* Download into host (as doubles). */
static int lt_pull(const kc_dev_t *k, lt_buf_t *b) {
    size_t es = axon_dtype_size(b->dt);
    char *raw = calloc((size_t)(b->n ? b->n : 1), es);
    int ok = kc_download(k, raw, b->dev, (size_t)b->n * es);
    for (int64_t i = 0; ok && i < b->n; i++)
        b->host[i] = lt_value(b->dt, raw, i);
    free(raw);
    return ok;
}

static void lt_free(const kc_dev_t *k, lt_buf_t *b) {
    axon_mem_free(k->dev, b->dev);
    free(b->host);
}

static axon_tensor_t lt_t(const lt_buf_t *b, int ndim, const int64_t *sizes) {
    return kc_tensor(b->dev, b->dt, ndim, sizes, NULL);
}

static double lt_rand(unsigned *state) {
    *state = *state * 1103515245u + 12345u;
    return ((*state >> 8) & 0xffff) / 65536.0 * 4.0 - 3.0;
}

static int lt_close(double got, double want, double tol) {
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* Forward and backward of one configuration against the reference; returns the number of mismatches. */
static int check_nll(const kc_dev_t *k, axon_dtype_t dt, int64_t n, int64_t c, int64_t kk, int weighted,
                     int64_t ignore, axon_loss_reduction_t red) {
    const int64_t m = n * kk, numel = n * c * kk;
    const double tol = dt == AXON_FLOAT32 ? 1e-5 : 1e-12;
    unsigned seed = (unsigned)(n * 131 + c * 7 + kk + red);
    double *x = malloc((size_t)numel * sizeof *x), *w = malloc((size_t)c * sizeof *w);
    double *go = malloc((size_t)m * sizeof *go);
    int64_t *t = malloc((size_t)m * sizeof *t);
    for (int64_t i = 0; i < numel; i++) x[i] = lt_rand(&seed);
    for (int64_t i = 0; i < c; i++) w[i] = 0.25 + (double)i / (double)c;
    for (int64_t i = 0; i < m; i++) t[i] = (int64_t)(lt_rand(&seed) * 1000.0 + 3000.0) % c, go[i] = lt_rand(&seed);
    if (m > 2) t[1] = ignore >= 0 && ignore < c ? ignore : t[1];
    lt_buf_t bx = lt_make(k, dt, numel, x), bw = lt_make(k, dt, c, w), bg = lt_make(k, dt, m, go);
    lt_buf_t bo = lt_make(k, dt, red == AXON_LOSS_NONE ? m : 1, NULL), btw = lt_make(k, dt, 1, NULL);
    lt_buf_t bgi = lt_make(k, dt, numel, NULL);
    void *tdev = kc_upload(k, t, (size_t)m * sizeof *t);
    const int64_t s3[3] = {n, c, kk}, s2[2] = {n, kk}, sc[1] = {c};
    axon_tensor_t tx = lt_t(&bx, 3, s3), tw = lt_t(&bw, 1, sc), tt = kc_tensor(tdev, AXON_INT64, 2, s2, NULL);
    axon_tensor_t to = red == AXON_LOSS_NONE ? lt_t(&bo, 2, s2) : lt_t(&bo, 0, NULL), ttw = lt_t(&btw, 0, NULL);
    axon_tensor_t tg = red == AXON_LOSS_NONE ? lt_t(&bg, 2, s2) : lt_t(&bg, 0, NULL), tgi = lt_t(&bgi, 3, s3);
    int bad = 0;
    bad += axon_kernel_nll_loss(k->s, &to, &ttw, &tx, &tt, weighted ? &tw : NULL, red, ignore) != AXON_OK;
    bad += axon_kernel_nll_loss_backward(k->s, &tgi, &tg, &tt, weighted ? &tw : NULL, &ttw, red, ignore) != AXON_OK;
    bad += !lt_pull(k, &bo) + !lt_pull(k, &btw) + !lt_pull(k, &bgi);
    /* Reference. */
    double sum = 0.0, ws = 0.0;
    double *gi = calloc((size_t)numel, sizeof *gi);
    for (int64_t p = 0; p < m; p++) {
        int64_t i = p / kk, j = p % kk;
        if (t[p] == ignore) {
            if (red == AXON_LOSS_NONE) bad += !lt_close(bo.host[p], 0.0, tol);
            continue;
        }
        double wt = weighted ? bw.host[t[p]] : 1.0, v = -wt * bx.host[(i * c + t[p]) * kk + j];
        sum += v, ws += wt;
        if (red == AXON_LOSS_NONE) bad += !lt_close(bo.host[p], v, tol);
    }
    if (red != AXON_LOSS_NONE) bad += !lt_close(bo.host[0], red == AXON_LOSS_MEAN ? sum / ws : sum, tol);
    bad += !lt_close(btw.host[0], ws, tol);
    for (int64_t p = 0; p < m; p++) {
        if (t[p] == ignore) continue;
        int64_t i = p / kk, j = p % kk;
        double wt = weighted ? bw.host[t[p]] : 1.0, g = red == AXON_LOSS_NONE ? bg.host[p] : bg.host[0];
        if (red == AXON_LOSS_MEAN) g /= ws;
        gi[(i * c + t[p]) * kk + j] = -wt * g;
    }
    for (int64_t q = 0; q < numel; q++) bad += !lt_close(bgi.host[q], gi[q], tol);
    /* The fused log_softmax backward with x as the log-probabilities: coef * (exp(x) - [c == t]), where -coef is
     * what nll_loss_backward wrote at the target (0 for an ignored one). */
    bad += axon_kernel_nll_loss_log_softmax_backward(k->s, &tgi, &tg, &tx, &tt, weighted ? &tw : NULL, &ttw, red,
                                                     ignore) != AXON_OK;
    bad += !lt_pull(k, &bgi);
    for (int64_t p = 0; p < m; p++) {
        int64_t i = p / kk, j = p % kk;
        double coef = t[p] == ignore ? 0.0 : -gi[(i * c + t[p]) * kk + j];
        for (int64_t q = 0; q < c; q++) {
            const int64_t at = (i * c + q) * kk + j;
            bad += !lt_close(bgi.host[at], coef * exp(bx.host[at]) - (q == t[p] ? coef : 0.0), tol);
        }
    }
    if (bad) fprintf(stderr, "  nll mismatch: %s N=%lld C=%lld K=%lld w=%d ignore=%lld red=%d\n",
                     axon_dtype_name(dt), (long long)n, (long long)c, (long long)kk, weighted, (long long)ignore,
                     (int)red);
    lt_free(k, &bx), lt_free(k, &bw), lt_free(k, &bg), lt_free(k, &bo), lt_free(k, &btw), lt_free(k, &bgi);
    axon_mem_free(k->dev, tdev);
    free(x), free(w), free(go), free(t), free(gi);
    return bad;
}

static void test_nll_loss_matches_reference_for_every_reduction_weight_and_layout(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    const int64_t shapes[][3] = {{4, 5, 1}, {1, 3, 1}, {3, 7, 4}, {70, 11, 1}, {5, 2, 300}, {2000, 9, 3}};
    const axon_dtype_t dts[2] = {AXON_FLOAT32, AXON_FLOAT64};
    for (int d = 0; d < 2; d++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int red = 0; red < AXON_LOSS_REDUCTION_COUNT; red++)
                for (int w = 0; w < 2; w++) {
                    CHECK(!check_nll(&k, dts[d], shapes[si][0], shapes[si][1], shapes[si][2], w, -100,
                                     (axon_loss_reduction_t)red));
                    CHECK(!check_nll(&k, dts[d], shapes[si][0], shapes[si][1], shapes[si][2], w, 1,
                                     (axon_loss_reduction_t)red));
                }
    axon_runtime_destroy(k.rt);
}

static void test_nll_loss_mean_with_every_target_ignored_is_nan(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const double x[6] = {-1, -2, -3, -4, -5, -6};
    const int64_t t[2] = {-100, -100}, s3[3] = {2, 3, 1}, s2[2] = {2, 1};
    lt_buf_t bx = lt_make(&k, AXON_FLOAT32, 6, x), bo = lt_make(&k, AXON_FLOAT32, 1, NULL);
    void *tdev = kc_upload(&k, t, sizeof t);
    axon_tensor_t tx = lt_t(&bx, 3, s3), to = lt_t(&bo, 0, NULL), tt = kc_tensor(tdev, AXON_INT64, 2, s2, NULL);
    CHECK_OK(axon_kernel_nll_loss(k.s, &to, NULL, &tx, &tt, NULL, AXON_LOSS_MEAN, -100));
    CHECK(lt_pull(&k, &bo));
    CHECK(isnan(bo.host[0]));
    lt_free(&k, &bx), lt_free(&k, &bo);
    axon_mem_free(k.dev, tdev);
    axon_runtime_destroy(k.rt);
}

static void test_out_of_range_target_fails_at_sync_naming_the_value_and_writes_nothing(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const double x[6] = {-1, -2, -3, -4, -5, -6}, sentinel[6] = {7, 7, 7, 7, 7, 7};
    const int64_t targets[2][2] = {{0, 5}, {-1, 2}}, s3[3] = {2, 3, 1}, s2[2] = {2, 1};
    const char *want[2] = {"target 5 is out of bounds", "target -1 is out of bounds"};
    for (int i = 0; i < 2; i++) {
        lt_buf_t bx = lt_make(&k, AXON_FLOAT32, 6, x), bo = lt_make(&k, AXON_FLOAT32, 2, sentinel);
        lt_buf_t bgi = lt_make(&k, AXON_FLOAT32, 6, sentinel), bg = lt_make(&k, AXON_FLOAT32, 2, x);
        void *tdev = kc_upload(&k, targets[i], sizeof targets[i]);
        axon_tensor_t tx = lt_t(&bx, 3, s3), to = lt_t(&bo, 2, s2), tgi = lt_t(&bgi, 3, s3), tg = lt_t(&bg, 2, s2);
        axon_tensor_t tt = kc_tensor(tdev, AXON_INT64, 2, s2, NULL);
        CHECK_OK(axon_kernel_nll_loss(k.s, &to, NULL, &tx, &tt, NULL, AXON_LOSS_NONE, -100));
        CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("nll_loss");
        CHECK_MSG(want[i]);
        CHECK_OK(axon_kernel_nll_loss_backward(k.s, &tgi, &tg, &tt, NULL, NULL, AXON_LOSS_NONE, -100));
        CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
        CHECK_MSG(want[i]);
        CHECK(lt_pull(&k, &bo) && lt_pull(&k, &bgi));
        for (int j = 0; j < 2; j++) CHECK(bo.host[j] == 7.0);
        for (int j = 0; j < 6; j++) CHECK(bgi.host[j] == 7.0);
        lt_free(&k, &bx), lt_free(&k, &bo), lt_free(&k, &bgi), lt_free(&k, &bg);
        axon_mem_free(k.dev, tdev);
    }
    axon_runtime_destroy(k.rt);
}

/* The mean loss of a large batch, as bytes, computed with `threads` workers. */
static double mean_loss_with(int threads) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return NAN;
    const int64_t n = 50000, c = 7, s3[3] = {n, c, 1}, s2[2] = {n, 1};
    double *x = malloc((size_t)(n * c) * sizeof *x);
    int64_t *t = malloc((size_t)n * sizeof *t);
    unsigned seed = 5;
    for (int64_t i = 0; i < n * c; i++) x[i] = lt_rand(&seed);
    for (int64_t i = 0; i < n; i++) t[i] = i % c;
    lt_buf_t bx = lt_make(&k, AXON_FLOAT32, n * c, x), bo = lt_make(&k, AXON_FLOAT32, 1, NULL);
    void *tdev = kc_upload(&k, t, (size_t)n * sizeof *t);
    axon_tensor_t tx = lt_t(&bx, 3, s3), to = lt_t(&bo, 0, NULL), tt = kc_tensor(tdev, AXON_INT64, 2, s2, NULL);
    double r = NAN;
    if (axon_kernel_nll_loss(k.s, &to, NULL, &tx, &tt, NULL, AXON_LOSS_MEAN, -100) == AXON_OK && lt_pull(&k, &bo))
        r = bo.host[0];
    lt_free(&k, &bx), lt_free(&k, &bo);
    axon_mem_free(k.dev, tdev);
    free(x), free(t);
    axon_runtime_destroy(k.rt);
    return r;
}

static void test_nll_loss_is_bitwise_identical_for_1_and_4_threads(void) {
    double a = mean_loss_with(1), b = mean_loss_with(4);
    CHECK(!isnan(a) && memcmp(&a, &b, sizeof a) == 0);
}

static void test_nll_loss_refuses_bad_descriptors_with_messages(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const int64_t s3[3] = {2, 3, 1}, s2[2] = {2, 1}, s2b[2] = {3, 1}, sc[1] = {4}, s1[1] = {2};
    lt_buf_t bx = lt_make(&k, AXON_FLOAT32, 6, NULL), bo = lt_make(&k, AXON_FLOAT32, 6, NULL);
    int64_t t[3] = {0, 1, 2};
    void *tdev = kc_upload(&k, t, sizeof t);
    axon_tensor_t tx = lt_t(&bx, 3, s3), to = lt_t(&bo, 2, s2), tt = kc_tensor(tdev, AXON_INT64, 2, s2, NULL);
    axon_tensor_t t2 = lt_t(&bx, 2, s2b), tw = lt_t(&bx, 1, sc), ttb = kc_tensor(tdev, AXON_INT64, 2, s2b, NULL);
    axon_tensor_t ti32 = kc_tensor(tdev, AXON_INT32, 2, s2, NULL), txi = kc_tensor(bx.dev, AXON_INT32, 3, s3, NULL);
    axon_tensor_t t1 = lt_t(&bo, 1, s1);
    CHECK_STATUS(axon_kernel_nll_loss(k.s, &to, NULL, &t2, &tt, NULL, AXON_LOSS_NONE, -100), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("3-d");
    CHECK_STATUS(axon_kernel_nll_loss(k.s, &to, NULL, &tx, &ttb, NULL, AXON_LOSS_NONE, -100), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("target has shape [3, 1], expected [2, 1]");
    CHECK_STATUS(axon_kernel_nll_loss(k.s, &to, NULL, &tx, &ti32, NULL, AXON_LOSS_NONE, -100),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("int64");
    CHECK_STATUS(axon_kernel_nll_loss(k.s, &to, NULL, &tx, &tt, &tw, AXON_LOSS_NONE, -100), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("weight");
    CHECK_STATUS(axon_kernel_nll_loss(k.s, &to, NULL, &txi, &tt, NULL, AXON_LOSS_NONE, -100),
                 AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_nll_loss(k.s, &t1, NULL, &tx, &tt, NULL, AXON_LOSS_SUM, -100), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("expected 1 element");
    CHECK_STATUS(axon_kernel_nll_loss(k.s, &to, NULL, &tx, &tt, NULL, (axon_loss_reduction_t)3, -100),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("reduction");
    CHECK_STATUS(axon_kernel_nll_loss_backward(k.s, &tx, &t1, &tt, NULL, NULL, AXON_LOSS_MEAN, -100),
                 AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_nll_loss(k.s, NULL, NULL, &tx, &tt, NULL, AXON_LOSS_NONE, -100), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    lt_free(&k, &bx), lt_free(&k, &bo);
    axon_mem_free(k.dev, tdev);
    axon_runtime_destroy(k.rt);
}

/* Reference loss and gradient of one element (the formulas of axon/loss.h, written independently). */
static double ref_loss(axon_ploss_t op, double x, double t, double p) {
    double d = x - t, z = fabs(d);
    if (op == AXON_PLOSS_MSE) return d * d;
    if (op == AXON_PLOSS_SMOOTH_L1) return z < p ? 0.5 * d * d / p : z - 0.5 * p;
    if (op == AXON_PLOSS_HUBER) return z < p ? 0.5 * d * d : p * z - 0.5 * p * p;
    return -(t * fmax(log(x), -100.0) + (1.0 - t) * fmax(log(1.0 - x), -100.0));
}

static double ref_grad(axon_ploss_t op, double x, double t, double p) {
    double d = x - t;
    if (op == AXON_PLOSS_MSE) return 2.0 * d;
    if (op == AXON_PLOSS_SMOOTH_L1) return d <= -p ? -1.0 : d >= p ? 1.0 : d / p;
    if (op == AXON_PLOSS_HUBER) return d <= -p ? -p : d >= p ? p : d;
    return d / fmax(x * (1.0 - x), (double)1e-12f);
}

static int check_ploss(const kc_dev_t *k, axon_dtype_t dt, axon_ploss_t op, int64_t n, int weighted,
                       axon_loss_reduction_t red, double p) {
    /* 16-bit results: the reference on the stored inputs, within an ulp or so of the type (and of float's sums) */
    const double tol = dt == AXON_FLOAT32 ? 2e-5 : dt == AXON_FLOAT16 ? 1.5e-3 : dt == AXON_BFLOAT16 ? 1e-2 : 1e-11;
    unsigned seed = (unsigned)(n * 3 + op * 11 + red);
    double *x = malloc((size_t)n * sizeof *x), *t = malloc((size_t)n * sizeof *t), *w = malloc((size_t)n * sizeof *w);
    double *go = malloc((size_t)n * sizeof *go);
    for (int64_t i = 0; i < n; i++) {
        double a = lt_rand(&seed), b = lt_rand(&seed);
        x[i] = op == AXON_PLOSS_BCE ? (a + 3.0) / 4.0 : a;       /* BCE: in [0, 1] */
        t[i] = op == AXON_PLOSS_BCE ? (b + 3.0) / 4.0 : b;
        if (op == AXON_PLOSS_BCE && i % 7 == 3) x[i] = i % 2 ? 0.0 : 1.0; /* log clamp */
        w[i] = 0.5 + (double)(i % 5) / 4.0;
        go[i] = lt_rand(&seed);
    }
    const int64_t sz[1] = {n};
    lt_buf_t bx = lt_make(k, dt, n, x), bt = lt_make(k, dt, n, t), bw = lt_make(k, dt, n, w);
    lt_buf_t bg = lt_make(k, dt, red == AXON_LOSS_NONE ? n : 1, go), bo = lt_make(k, dt, red == AXON_LOSS_NONE ? n : 1,
                                                                                   NULL);
    lt_buf_t bgi = lt_make(k, dt, n, NULL);
    axon_tensor_t tx = lt_t(&bx, 1, sz), tt = lt_t(&bt, 1, sz), tw = lt_t(&bw, 1, sz), tgi = lt_t(&bgi, 1, sz);
    axon_tensor_t to = red == AXON_LOSS_NONE ? lt_t(&bo, 1, sz) : lt_t(&bo, 0, NULL);
    axon_tensor_t tg = red == AXON_LOSS_NONE ? lt_t(&bg, 1, sz) : lt_t(&bg, 0, NULL);
    const axon_tensor_t *pw = weighted ? &tw : NULL;
    int bad = axon_kernel_pointwise_loss(k->s, op, &to, &tx, &tt, pw, red, p) != AXON_OK;
    bad += axon_kernel_pointwise_loss_backward(k->s, op, &tgi, &tg, &tx, &tt, pw, red, p) != AXON_OK;
    bad += !lt_pull(k, &bo) + !lt_pull(k, &bgi);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double wi = weighted ? bw.host[i] : 1.0, l = wi * ref_loss(op, bx.host[i], bt.host[i], p);
        double g = red == AXON_LOSS_NONE ? bg.host[i] : bg.host[0] / (red == AXON_LOSS_MEAN ? (double)n : 1.0);
        sum += l;
        if (red == AXON_LOSS_NONE) bad += !lt_close(bo.host[i], l, tol);
        bad += !lt_close(bgi.host[i], wi * g * ref_grad(op, bx.host[i], bt.host[i], p), tol);
    }
    if (red != AXON_LOSS_NONE) bad += !lt_close(bo.host[0], red == AXON_LOSS_MEAN ? sum / (double)n : sum, tol);
    if (bad) fprintf(stderr, "  %s mismatch: %s n=%lld w=%d red=%d p=%g\n", axon_ploss_name(op), axon_dtype_name(dt),
                     (long long)n, weighted, (int)red, p);
    lt_free(k, &bx), lt_free(k, &bt), lt_free(k, &bw), lt_free(k, &bg), lt_free(k, &bo), lt_free(k, &bgi);
    free(x), free(t), free(w), free(go);
    return bad;
}

static void test_pointwise_losses_match_reference_forward_and_backward(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    const axon_dtype_t dts[4] = {AXON_FLOAT32, AXON_FLOAT64, AXON_FLOAT16, AXON_BFLOAT16};
    const int64_t sizes[4] = {1, 37, 1000, 70001};
    for (int d = 0; d < 4; d++)
        for (int op = 0; op < AXON_PLOSS_COUNT; op++)
            for (int si = 0; si < 4; si++)
                for (int red = 0; red < AXON_LOSS_REDUCTION_COUNT; red++) {
                    /* 16-bit types: BCE's gradient at x = 1 (1e12) and float16 sums of 70001 losses overflow */
                    const int half = dts[d] == AXON_FLOAT16 || dts[d] == AXON_BFLOAT16;
                    if (half && (op == AXON_PLOSS_BCE || (dts[d] == AXON_FLOAT16 && red == AXON_LOSS_SUM && si == 3)))
                        continue;
                    double p = op == AXON_PLOSS_SMOOTH_L1 ? 0.7 : op == AXON_PLOSS_HUBER ? 1.3 : 0.0;
                    CHECK(!check_ploss(&k, dts[d], (axon_ploss_t)op, sizes[si], 0, (axon_loss_reduction_t)red, p));
                    if (op == AXON_PLOSS_BCE)
                        CHECK(!check_ploss(&k, dts[d], AXON_PLOSS_BCE, sizes[si], 1, (axon_loss_reduction_t)red, 0));
                    if (op == AXON_PLOSS_SMOOTH_L1) /* beta 0 is L1, sign(0) = -1 in the gradient */
                        CHECK(!check_ploss(&k, dts[d], AXON_PLOSS_SMOOTH_L1, sizes[si], 0,
                                           (axon_loss_reduction_t)red, 0.0));
                }
    axon_runtime_destroy(k.rt);
}

static void test_bce_input_outside_0_1_fails_at_sync_and_writes_nothing(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const double x[4] = {0.5, 1.5, 0.2, 0.1}, xn[4] = {0.5, NAN, 0.2, 0.1}, t[4] = {0, 1, 0, 1};
    const double sentinel[4] = {7, 7, 7, 7};
    const int64_t sz[1] = {4};
    for (int i = 0; i < 2; i++) {
        lt_buf_t bx = lt_make(&k, AXON_FLOAT32, 4, i ? xn : x), bt = lt_make(&k, AXON_FLOAT32, 4, t);
        lt_buf_t bo = lt_make(&k, AXON_FLOAT32, 4, sentinel);
        axon_tensor_t tx = lt_t(&bx, 1, sz), tt = lt_t(&bt, 1, sz), to = lt_t(&bo, 1, sz);
        CHECK_OK(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_BCE, &to, &tx, &tt, NULL, AXON_LOSS_NONE, 0));
        CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("binary_cross_entropy(): all elements of input should be between 0 and 1");
        CHECK(lt_pull(&k, &bo));
        for (int j = 0; j < 4; j++) CHECK(bo.host[j] == 7.0);
        lt_free(&k, &bx), lt_free(&k, &bt), lt_free(&k, &bo);
    }
    axon_runtime_destroy(k.rt);
}

static void test_pointwise_loss_mean_of_nothing_is_nan_and_bad_arguments_fail(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const int64_t z[1] = {0}, sz[1] = {4}, sz5[1] = {5};
    lt_buf_t bo = lt_make(&k, AXON_FLOAT32, 1, NULL), bx = lt_make(&k, AXON_FLOAT32, 5, NULL);
    axon_tensor_t te = kc_tensor(bx.dev, AXON_FLOAT32, 1, z, NULL), to = lt_t(&bo, 0, NULL);
    axon_tensor_t t4 = lt_t(&bx, 1, sz), t5 = lt_t(&bx, 1, sz5), ti = kc_tensor(bx.dev, AXON_INT32, 1, sz, NULL);
    CHECK_OK(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_MSE, &to, &te, &te, NULL, AXON_LOSS_MEAN, 0));
    CHECK(lt_pull(&k, &bo));
    CHECK(isnan(bo.host[0]));
    CHECK_STATUS(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_MSE, &to, &t4, &t5, NULL, AXON_LOSS_SUM, 0),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("mse_loss: target shape [5] does not match in's shape [4]");
    CHECK_STATUS(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_HUBER, &to, &t4, &t4, NULL, AXON_LOSS_SUM, 0.0),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("delta");
    CHECK_STATUS(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_SMOOTH_L1, &to, &t4, &t4, NULL, AXON_LOSS_SUM, -1.0),
                 AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_MSE, &to, &t4, &t4, &t4, AXON_LOSS_SUM, 0),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("no weight");
    CHECK_STATUS(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_MSE, &to, &ti, &t4, NULL, AXON_LOSS_SUM, 0),
                 AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_MSE, &t4, &t4, &t4, NULL, AXON_LOSS_SUM, 0),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("expected one element");
    CHECK_STATUS(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_COUNT, &to, &t4, &t4, NULL, AXON_LOSS_SUM, 0),
                 AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    lt_free(&k, &bo), lt_free(&k, &bx);
    axon_runtime_destroy(k.rt);
}

/* mse with every operand float32 (its one-pass path) gives the float64-out result rounded once to float, bitwise:
 * the same widened values summed into the same parts, for every reduction, forward and backward, at lengths that
 * leave tails in the parts and split into several blocks. Catches a pass that subtracts or multiplies in float. */
static void test_float32_mse_matches_the_float64_path_rounded_once(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const int64_t lens[] = {1, 13, 1000, 70001};
    unsigned st = 7;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int red = 0; red < AXON_LOSS_REDUCTION_COUNT; red++)
            for (int backward = 0; backward < 2; backward++) {
                const int64_t n = lens[li], full = backward || red == AXON_LOSS_NONE ? n : 1;
                double *vx = malloc(sizeof(double) * (size_t)n), *vt = malloc(sizeof(double) * (size_t)n);
                double *vg = malloc(sizeof(double) * (size_t)n);
                for (int64_t i = 0; i < n; i++) { /* magnitudes spread, so that a float difference would round */
                    vx[i] = lt_rand(&st) * exp(lt_rand(&st)), vt[i] = lt_rand(&st) * exp(lt_rand(&st));
                    vg[i] = lt_rand(&st);
                }
                lt_buf_t x = lt_make(&k, AXON_FLOAT32, n, vx), t = lt_make(&k, AXON_FLOAT32, n, vt);
                const int64_t gn = backward && red == AXON_LOSS_NONE ? n : 1;
                lt_buf_t g = lt_make(&k, AXON_FLOAT32, gn, vg);
                lt_buf_t o32 = lt_make(&k, AXON_FLOAT32, full, NULL), o64 = lt_make(&k, AXON_FLOAT64, full, NULL);
                const int64_t sz[1] = {n}, one[1] = {1};
                axon_tensor_t tx = lt_t(&x, 1, sz), tt = lt_t(&t, 1, sz), tg = lt_t(&g, 1, gn == n ? sz : one);
                axon_tensor_t t32 = lt_t(&o32, 1, full == n ? sz : one), t64 = lt_t(&o64, 1, full == n ? sz : one);
                for (int w = 0; w < 2; w++) {
                    axon_tensor_t *out = w ? &t64 : &t32;
                    if (backward)
                        CHECK_OK(axon_kernel_pointwise_loss_backward(k.s, AXON_PLOSS_MSE, out, &tg, &tx, &tt, NULL,
                                                                     (axon_loss_reduction_t)red, 0));
                    else
                        CHECK_OK(axon_kernel_pointwise_loss(k.s, AXON_PLOSS_MSE, out, &tx, &tt, NULL,
                                                            (axon_loss_reduction_t)red, 0));
                }
                CHECK(lt_pull(&k, &o32) && lt_pull(&k, &o64));
                int64_t bad = 0;
                for (int64_t i = 0; i < full; i++) bad += (float)o64.host[i] != (float)o32.host[i];
                if (bad)
                    fprintf(stderr, "  n %lld reduction %d %s: %lld values differ\n", (long long)n, red,
                            backward ? "backward" : "forward", (long long)bad);
                CHECK_EQ_I64(bad, 0);
                lt_free(&k, &x), lt_free(&k, &t), lt_free(&k, &g), lt_free(&k, &o32), lt_free(&k, &o64);
                free(vx), free(vt), free(vg);
            }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_nll_loss_matches_reference_for_every_reduction_weight_and_layout);
    RUN(test_nll_loss_mean_with_every_target_ignored_is_nan);
    RUN(test_out_of_range_target_fails_at_sync_naming_the_value_and_writes_nothing);
    RUN(test_nll_loss_is_bitwise_identical_for_1_and_4_threads);
    RUN(test_nll_loss_refuses_bad_descriptors_with_messages);
    RUN(test_pointwise_losses_match_reference_forward_and_backward);
    RUN(test_float32_mse_matches_the_float64_path_rounded_once);
    RUN(test_bce_input_outside_0_1_fails_at_sync_and_writes_nothing);
    RUN(test_pointwise_loss_mean_of_nothing_is_nan_and_bad_arguments_fail);
    return check_report();
}
