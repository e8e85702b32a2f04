/* nll_loss and its backward (axon/loss.h) against a float64 reference written out here: every reduction, with and
 * without weight and ignore_index, [N, C] and [N, C, K] layouts; bad targets fail at synchronization without writing;
 * bad descriptors fail at launch with messages; results do not depend on the thread count. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "axon/loss.h"
#include "kernels_check.h"

/* A float32 or float64 device buffer of n elements with host mirror. */
typedef struct lt_buf {
    axon_dtype_t dt;
    int64_t n;
    double *host;
    void *dev;
} lt_buf_t;

static lt_buf_t lt_make(const kc_dev_t *k, axon_dtype_t dt, int64_t n, const double *vals) {
    lt_buf_t b = {dt, n, calloc((size_t)(n ? n : 1), sizeof(double)), NULL};
    size_t es = axon_dtype_size(dt);
    char *raw = calloc((size_t)(n ? n : 1), es);
    for (int64_t i = 0; i < n; i++) {
        b.host[i] = vals ? vals[i] : 0.0;
        if (dt == AXON_FLOAT32) ((float *)(void *)raw)[i] = (float)b.host[i];
        else ((double *)(void *)raw)[i] = b.host[i];
        if (dt == AXON_FLOAT32) b.host[i] = (float)b.host[i];
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
        b->host[i] = b->dt == AXON_FLOAT32 ? ((float *)(void *)raw)[i] : ((double *)(void *)raw)[i];
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

int main(void) {
    RUN(test_nll_loss_matches_reference_for_every_reduction_weight_and_layout);
    RUN(test_nll_loss_mean_with_every_target_ignored_is_nan);
    RUN(test_out_of_range_target_fails_at_sync_naming_the_value_and_writes_nothing);
    RUN(test_nll_loss_is_bitwise_identical_for_1_and_4_threads);
    RUN(test_nll_loss_refuses_bad_descriptors_with_messages);
    return check_report();
}
