/* axon/dropout.h: the mask is bernoulli(1 - p) of the same Philox stream, out = in * mask * scale exactly as
 * PyTorch rounds it, the kept fraction is near 1 - p, p = 0 keeps and p = 1 drops everything (NaN * 0 stays NaN),
 * the backward applies the mask, results do not depend on the thread count, and bad input is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/dropout.h"
#include "reduce_ref.h"

#define DT_N 10007 /* not a multiple of 4: the last Philox block is partly used */

typedef struct dt_run {
    float *out;
    uint8_t *mask, *bern;
} dt_run_t;

/* Dropout of a float32 ramp on `threads` workers, plus bernoulli(1 - p) into a bool tensor from the same
 * (seed, offset). Returns host copies (free them). */
static dt_run_t dt_run(int threads, float *x, int64_t n, double p) {
    dt_run_t r = {calloc((size_t)n, 4), calloc((size_t)n, 1), calloc((size_t)n, 1)};
    kc_dev_t k = kc_open(threads);
    if (!k.s) return r;
    void *dx = kc_upload(&k, x, (size_t)n * 4), *dout = kc_upload(&k, NULL, (size_t)n * 4);
    void *dm = kc_upload(&k, NULL, (size_t)n), *db = kc_upload(&k, NULL, (size_t)n);
    axon_tensor_t tx = kc_tensor(dx, AXON_FLOAT32, 1, &n, NULL), to = kc_tensor(dout, AXON_FLOAT32, 1, &n, NULL);
    axon_tensor_t tm = kc_tensor(dm, AXON_BOOL, 1, &n, NULL), tb = kc_tensor(db, AXON_BOOL, 1, &n, NULL);
    CHECK_OK(axon_kernel_dropout(k.s, &to, &tm, &tx, p, 42, 7));
    CHECK_OK(axon_kernel_bernoulli(k.s, &tb, 42, 7, 1.0 - p));
    CHECK(kc_download(&k, r.out, dout, (size_t)n * 4) && kc_download(&k, r.mask, dm, (size_t)n) &&
          kc_download(&k, r.bern, db, (size_t)n));
    axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dout), axon_mem_free(k.dev, dm), axon_mem_free(k.dev, db);
    axon_runtime_destroy(k.rt);
    return r;
}

static void dt_free(dt_run_t *r) { free(r->out), free(r->mask), free(r->bern); }

static float *dt_ramp(int64_t n) {
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 97) / 8.0f - 6.0f;
    return x;
}

static void test_mask_is_bernoulli_of_the_same_stream_and_out_is_scaled_input(void) {
    const int64_t n = DT_N;
    float *x = dt_ramp(n);
    const double ps[] = {0.1, 0.5, 0.8};
    for (size_t t = 0; t < 3; t++) {
        dt_run_t r = dt_run(3, x, n, ps[t]);
        CHECK(kc_first_diff(r.mask, r.bern, (size_t)n) == -1);
        const float scale = (float)(1.0 / (1.0 - ps[t]));
        int64_t kept = 0, bad = -1;
        for (int64_t i = 0; i < n; i++) {
            kept += r.mask[i];
            float want = r.mask[i] ? x[i] * scale : 0.0f;
            if (r.out[i] != want && bad < 0) bad = i;
        }
        CHECK_EQ_I64(bad, -1);
        /* Binomial(n, 1 - p): 6 standard deviations is under 1.5% of n here. */
        double frac = (double)kept / (double)n, sd = sqrt(ps[t] * (1 - ps[t]) / (double)n);
        CHECK(fabs(frac - (1.0 - ps[t])) < 6 * sd);
        dt_free(&r);
    }
    free(x);
}

static void test_p_zero_keeps_and_p_one_drops_everything(void) {
    const int64_t n = DT_N;
    float *x = dt_ramp(n);
    x[3] = NAN;
    dt_run_t keep = dt_run(2, x, n, 0.0), drop = dt_run(2, x, n, 1.0);
    int64_t kept = 0, dropped = 0, same = 0, zeros = 0;
    for (int64_t i = 0; i < n; i++) {
        kept += keep.mask[i], dropped += !drop.mask[i];
        same += i == 3 ? isnan(keep.out[i]) : keep.out[i] == x[i];
        zeros += i == 3 ? isnan(drop.out[i]) : drop.out[i] == 0.0f; /* NaN * 0 stays NaN, as in PyTorch */
    }
    CHECK_EQ_I64(kept, n);
    CHECK_EQ_I64(dropped, n);
    CHECK_EQ_I64(same, n);
    CHECK_EQ_I64(zeros, n);
    dt_free(&keep), dt_free(&drop), free(x);
}

static void test_results_do_not_depend_on_the_thread_count(void) {
    const int64_t n = 300007;
    float *x = dt_ramp(n);
    dt_run_t a = dt_run(1, x, n, 0.3), b = dt_run(4, x, n, 0.3);
    CHECK(kc_first_diff(a.mask, b.mask, (size_t)n) == -1);
    CHECK(kc_first_diff(a.out, b.out, (size_t)n * 4) == -1);
    dt_free(&a), dt_free(&b), free(x);
}

/* grad_in = grad * mask * scale for each float dtype, rounded as PyTorch (exact for these small-integer inputs). */
static void test_backward_applies_the_mask_in_every_float_dtype(void) {
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};
    const int64_t n = 1001;
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    uint8_t *m = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++) m[i] = (uint8_t)(i % 3 != 0 ? (i % 5 == 0 ? 7 : 1) : 0); /* any nonzero keeps */
    void *dm = kc_upload(&k, m, (size_t)n);
    axon_tensor_t tm = kc_tensor(dm, AXON_BOOL, 1, &n, NULL);
    for (size_t t = 0; t < 4; t++) {
        const size_t es = axon_dtype_size(dts[t]);
        void *g = malloc((size_t)n * es), *out = malloc((size_t)n * es);
        for (int64_t i = 0; i < n; i++) rr_set(dts[t], g, i, (long double)(i % 13) - 6);
        void *dg = kc_upload(&k, g, (size_t)n * es), *dgi = kc_upload(&k, NULL, (size_t)n * es);
        axon_tensor_t tg = kc_tensor(dg, dts[t], 1, &n, NULL), tgi = kc_tensor(dgi, dts[t], 1, &n, NULL);
        CHECK_OK(axon_kernel_dropout_backward(k.s, &tgi, &tg, &tm, 2.0));
        CHECK(kc_download(&k, out, dgi, (size_t)n * es));
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (rr_get(dts[t], out, i) != (m[i] ? rr_get(dts[t], g, i) * 2 : 0)) bad = i;
        CHECK_EQ_I64(bad, -1);
        axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dgi);
        free(g), free(out);
    }
    axon_mem_free(k.dev, dm);
    free(m);
    axon_runtime_destroy(k.rt);
}

static void test_bad_input_is_refused_with_messages(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    const int64_t n = 8, n2 = 4;
    void *dx = kc_upload(&k, NULL, 64), *dm = kc_upload(&k, NULL, 8);
    axon_tensor_t tx = kc_tensor(dx, AXON_FLOAT32, 1, &n, NULL), tm = kc_tensor(dm, AXON_BOOL, 1, &n, NULL);
    axon_tensor_t tm4 = kc_tensor(dm, AXON_BOOL, 1, &n2, NULL), ti = kc_tensor(dx, AXON_INT32, 1, &n, NULL);
    axon_tensor_t tu8 = kc_tensor(dm, AXON_UINT8, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_dropout(k.s, &tx, &tm, &tx, 1.5, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dropout: probability has to be between 0 and 1, but got 1.5");
    CHECK_STATUS(axon_kernel_dropout(k.s, &tx, &tm, &tx, NAN, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_dropout(k.s, &tx, &tm4, &tx, 0.5, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dropout: mask shape [4] does not match in shape [8]");
    CHECK_STATUS(axon_kernel_dropout(k.s, &ti, &tm, &ti, 0.5, 0, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("int32");
    CHECK_STATUS(axon_kernel_dropout(k.s, &tx, &tu8, &tx, 0.5, 0, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("mask dtype uint8 is not bool");
    CHECK_STATUS(axon_kernel_dropout_backward(k.s, &tx, &tx, NULL, 2.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dropout_backward: mask is NULL");
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dm);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_mask_is_bernoulli_of_the_same_stream_and_out_is_scaled_input);
    RUN(test_p_zero_keeps_and_p_one_drops_everything);
    RUN(test_results_do_not_depend_on_the_thread_count);
    RUN(test_backward_applies_the_mask_in_every_float_dtype);
    RUN(test_bad_input_is_refused_with_messages);
    return check_report();
}
