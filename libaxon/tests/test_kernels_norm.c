/* axon/norm.h against long double references: softmax and log-softmax (last and middle dims, rows of length 1 and
 * > 4096, -inf entries, all -inf rows), their backward, layer norm and RMS norm forward and backward (with and
 * without weight and bias, zero-variance rows); bitwise identical results with 1 and 4 threads; bad input refused.
 *
 * Tolerances: the kernels compute in float64 from the rounded inputs, so the reference (from the same rounded
 * inputs) differs by the output's rounding plus float64 noise: relative 2^-8 (bfloat16), 2^-11 (float16), 2^-23
 * (float32) with a little slack, 1e-11 for float64; plus an absolute term relative to the row's scale for results
 * that cancel to near zero (gradients). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/norm.h"
#include "reduce_ref.h"

static const axon_dtype_t nt_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};

static long double nt_rtol(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return 1e-11L;
    case AXON_FLOAT32: return 3e-7L;
    case AXON_FLOAT16: return 1.1e-3L;
    default: return 8e-3L;
    }
}

/* A host buffer of n elements of dtype d with its device copy. */
typedef struct nt_buf {
    axon_dtype_t d;
    int64_t n;
    void *h, *dev;
} nt_buf_t;

/* Random values in [lo, hi), rounded to d; NULL host values = zeros. */
static nt_buf_t nt_make(const kc_dev_t *k, axon_dtype_t d, int64_t n, double lo, double hi) {
    nt_buf_t b = {d, n, calloc((size_t)(n > 0 ? n : 1), axon_dtype_size(d)), NULL};
    for (int64_t i = 0; i < n && hi > lo; i++) rr_set(d, b.h, i, lo + (hi - lo) * (rr_rand() / 4294967296.0));
    b.dev = rr_upload(k, d, b.h, n);
    return b;
}

/* Set element i; -inf is written as bits because the reference encoder is for finite values. */
static void nt_set(nt_buf_t *b, int64_t i, long double v) {
    if (!isinf(v)) {
        rr_set(b->d, b->h, i, v);
        return;
    }
    char *p = (char *)b->h + i * (int64_t)axon_dtype_size(b->d);
    uint16_t half = b->d == AXON_FLOAT16 ? 0xFC00 : 0xFF80;
    if (b->d == AXON_FLOAT32) *(float *)p = -INFINITY;
    else if (b->d == AXON_FLOAT64) *(double *)p = -INFINITY;
    else memcpy(p, &half, 2);
}

static void nt_push(const kc_dev_t *k, nt_buf_t *b) {
    axon_memcpy(b->dev, b->h, (size_t)b->n * axon_dtype_size(b->d), AXON_COPY_HOST_TO_DEVICE, k->s);
}

static int nt_pull(const kc_dev_t *k, nt_buf_t *b) {
    return kc_download(k, b->h, b->dev, (size_t)b->n * axon_dtype_size(b->d));
}

static long double nt_get(const nt_buf_t *b, int64_t i) { return rr_get(b->d, b->h, i); }

static void nt_free(const kc_dev_t *k, nt_buf_t *b) {
    free(b->h);
    axon_mem_free(k->dev, b->dev);
}

static axon_tensor_t nt_t(const nt_buf_t *b, int ndim, const int64_t *sz) {
    return kc_tensor(b->dev, b->d, ndim, sz, NULL);
}

/* got close to want: NaN matches NaN, infinities match exactly. */
static int nt_close(axon_dtype_t d, long double got, long double want, long double scale) {
    if (isnan(want) || isinf(want)) return isnan(want) ? isnan(got) : got == want;
    return fabsl(got - want) <= nt_rtol(d) * (fabsl(want) + scale);
}

/* Compare n results with a reference; prints the first mismatch. */
static int nt_compare(const char *what, const nt_buf_t *got, const long double *want, long double scale) {
    for (int64_t i = 0; i < got->n; i++) {
        long double g = nt_get(got, i);
        if (!nt_close(got->d, g, want[i], scale)) {
            fprintf(stderr, "  %s %s: element %lld is %.10Lg, want %.10Lg\n", what, axon_dtype_name(got->d),
                    (long long)i, g, want[i]);
            return 1;
        }
    }
    return 0;
}

/* nt_compare with an error bound of rtol * (terms[i] + scale): for results computed in float (layer norm's float32
 * and half rows), whose rounding errors scale with the magnitudes of the terms summed, not with the result. */
static int nt_compare_terms(const char *what, const nt_buf_t *got, const long double *want, const long double *terms,
                            long double scale) {
    for (int64_t i = 0; i < got->n; i++) {
        long double g = nt_get(got, i);
        if (!nt_close(got->d, g, want[i], terms[i] + scale)) {
            fprintf(stderr, "  %s %s: element %lld is %.10Lg, want %.10Lg (terms %.4Lg)\n", what,
                    axon_dtype_name(got->d), (long long)i, g, want[i], terms[i]);
            return 1;
        }
    }
    return 0;
}

/* ---- softmax ---- */

/* [outer, len, inner] softmax (or log) along the middle dim, forward and backward, against the reference. */
static int check_softmax(const kc_dev_t *k, axon_dtype_t d, int64_t outer, int64_t len, int64_t inner, int is_log,
                         int with_inf) {
    const int64_t sz[3] = {outer, len, inner}, n = outer * len * inner;
    nt_buf_t x = nt_make(k, d, n, -4, 4), y = nt_make(k, d, n, 0, 0), g = nt_make(k, d, n, -1, 1);
    nt_buf_t gi = nt_make(k, d, n, 0, 0);
    if (with_inf) {
        for (int64_t i = 0; i < n; i += 3) nt_set(&x, i, -INFINITY);
        for (int64_t j = 0; j < len && outer > 1; j++) nt_set(&x, (outer - 1) * len * inner + j * inner, -INFINITY);
        nt_push(k, &x);
    }
    axon_tensor_t tx = nt_t(&x, 3, sz), ty = nt_t(&y, 3, sz), tg = nt_t(&g, 3, sz), tgi = nt_t(&gi, 3, sz);
    int bad = 0;
    if (axon_kernel_softmax(k->s, &ty, &tx, 1, is_log) != AXON_OK || !nt_pull(k, &y)) {
        fprintf(stderr, "  softmax: %s\n", axon_last_error());
        bad = 1;
    }
    long double *want = malloc(sizeof(long double) * (size_t)n), *wg = malloc(sizeof(long double) * (size_t)n);
    for (int64_t o = 0; o < outer && !bad; o++) {
        for (int64_t l = 0; l < inner; l++) {
            int64_t base = o * len * inner + l;
            long double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < len; j++) mx = fmaxl(mx, nt_get(&x, base + j * inner));
            for (int64_t j = 0; j < len; j++) sum += expl(nt_get(&x, base + j * inner) - mx);
            for (int64_t j = 0; j < len; j++) {
                long double v = nt_get(&x, base + j * inner) - mx;
                want[base + j * inner] = is_log ? v - logl(sum) : expl(v) / sum;
            }
        }
    }
    if (!bad) bad = nt_compare(is_log ? "log_softmax" : "softmax", &y, want, is_log ? 1.0L : 1e-3L);
    /* Backward from the kernel's own (rounded) forward output, as autograd does. */
    if (!bad && (axon_kernel_softmax_backward(k->s, &tgi, &tg, &ty, -2, is_log) != AXON_OK || !nt_pull(k, &gi))) {
        fprintf(stderr, "  softmax_backward: %s\n", axon_last_error());
        bad = 1;
    }
    for (int64_t o = 0; o < outer && !bad; o++) {
        for (int64_t l = 0; l < inner; l++) {
            int64_t base = o * len * inner + l;
            long double acc = 0;
            for (int64_t j = 0; j < len; j++) {
                long double gv = nt_get(&g, base + j * inner);
                acc += is_log ? gv : gv * nt_get(&y, base + j * inner);
            }
            for (int64_t j = 0; j < len; j++) {
                long double gv = nt_get(&g, base + j * inner), yv = nt_get(&y, base + j * inner);
                wg[base + j * inner] = is_log ? gv - expl(yv) * acc : yv * (gv - acc);
            }
        }
    }
    /* float32 rows along the last dim compute in float, as PyTorch does: g - e * sum cancels, so the error is
     * relative to the terms (|g| <= 1), not to the result. */
    if (!bad) bad = nt_compare(is_log ? "log_softmax_backward" : "softmax_backward", &gi, wg, 1.0L);
    if (bad)
        fprintf(stderr, "  (%s [%lld, %lld, %lld]%s)\n", axon_dtype_name(d), (long long)outer, (long long)len,
                (long long)inner, with_inf ? " with -inf" : "");
    free(want);
    free(wg);
    nt_free(k, &x), nt_free(k, &y), nt_free(k, &g), nt_free(k, &gi);
    return bad;
}

static void test_softmax_matches_reference_on_last_and_middle_dims(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    const int64_t shapes[][3] = {{5, 1, 1}, {3, 7, 1}, {2, 5000, 1}, {3, 9, 70}, {2, 33, 3}, {1, 4100, 2}};
    for (size_t di = 0; di < sizeof nt_dtypes / sizeof nt_dtypes[0]; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int lg = 0; lg < 2; lg++)
                CHECK(!check_softmax(&k, nt_dtypes[di], shapes[si][0], shapes[si][1], shapes[si][2], lg, 0));
    axon_runtime_destroy(k.rt);
}

static void test_softmax_of_minus_inf_entries_is_zero_and_all_minus_inf_row_is_nan(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    for (size_t di = 0; di < sizeof nt_dtypes / sizeof nt_dtypes[0]; di++)
        for (int lg = 0; lg < 2; lg++) {
            CHECK(!check_softmax(&k, nt_dtypes[di], 3, 10, 1, lg, 1));
            CHECK(!check_softmax(&k, nt_dtypes[di], 2, 10, 5, lg, 1));
        }
    /* The reference's all -inf row is NaN by the same arithmetic; check it directly too. */
    const int64_t sz[2] = {1, 4};
    nt_buf_t x = nt_make(&k, AXON_FLOAT32, 4, 0, 0), y = nt_make(&k, AXON_FLOAT32, 4, 0, 0);
    for (int i = 0; i < 4; i++) nt_set(&x, i, -INFINITY);
    nt_push(&k, &x);
    axon_tensor_t tx = nt_t(&x, 2, sz), ty = nt_t(&y, 2, sz);
    CHECK_OK(axon_kernel_softmax(k.s, &ty, &tx, -1, 0));
    CHECK(nt_pull(&k, &y));
    for (int i = 0; i < 4; i++) CHECK(isnan(nt_get(&y, i)));
    nt_free(&k, &x), nt_free(&k, &y);
    axon_runtime_destroy(k.rt);
}

/* _safe_softmax: in rows x len x inner, along len, the lanes of row 0 are all -inf (zeros out), row 1 has -inf
 * entries, row 2 a NaN among -infs (NaN out, as PyTorch), row 3 plain values: every row but 0 and 2 gives softmax's
 * bits. Both paths: the float32 rows (inner 1) and the general lanes. */
static int check_safe_softmax(const kc_dev_t *k, axon_dtype_t d, int64_t inner) {
    const int64_t len = 6, rows = 4, n = rows * len * inner, sz[3] = {rows, len, inner};
    nt_buf_t x = nt_make(k, d, n, -3, 3), y = nt_make(k, d, n, 0, 0), ref = nt_make(k, d, n, 0, 0);
    for (int64_t j = 0; j < len; j++)
        for (int64_t l = 0; l < inner; l++) {
            nt_set(&x, (0 * len + j) * inner + l, -INFINITY);
            if (j % 2) nt_set(&x, (1 * len + j) * inner + l, -INFINITY);
            nt_set(&x, (2 * len + j) * inner + l, -INFINITY);
        }
    const int64_t nan_at = (2 * len + 3) * inner; /* lane 0 of row 2 */
    char *p = (char *)x.h + nan_at * (int64_t)axon_dtype_size(d);
    if (d == AXON_FLOAT32) *(float *)p = NAN;
    else if (d == AXON_FLOAT64) *(double *)p = NAN;
    else memcpy(p, &(uint16_t){d == AXON_FLOAT16 ? 0x7E00 : 0x7FC0}, 2); /* quiet NaNs */
    nt_push(k, &x);
    axon_tensor_t tx = nt_t(&x, 3, sz), ty = nt_t(&y, 3, sz), tr = nt_t(&ref, 3, sz);
    int bad = axon_kernel_safe_softmax(k->s, &ty, &tx, 1) != AXON_OK || axon_kernel_softmax(k->s, &tr, &tx, 1, 0) !=
              AXON_OK || !nt_pull(k, &y) || !nt_pull(k, &ref);
    for (int64_t i = 0; i < n && !bad; i++) {
        const int64_t row = i / (len * inner), lane = i % inner;
        long double got = nt_get(&y, i), want = nt_get(&ref, i);
        int ok = row == 0 ? got == 0 : (row == 2 && lane == 0) ? isnan(got) : row == 2 ? got == 0
                 : got == want || (isnan(got) && isnan(want));
        if (!ok) {
            fprintf(stderr, "  safe_softmax %s inner %lld element %lld: got %Lg, softmax %Lg\n", axon_dtype_name(d),
                    (long long)inner, (long long)i, got, want);
            bad = 1;
        }
    }
    nt_free(k, &x), nt_free(k, &y), nt_free(k, &ref);
    return bad;
}

static void test_safe_softmax_zeroes_rows_of_all_minus_inf_only(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    for (size_t di = 0; di < sizeof nt_dtypes / sizeof nt_dtypes[0]; di++)
        for (int64_t inner = 1; inner <= 3; inner += 2) CHECK(!check_safe_softmax(&k, nt_dtypes[di], inner));
    axon_runtime_destroy(k.rt);
}

/* ---- layer norm and RMS norm ---- */

/* rows x n layer norm (or RMS norm) forward and backward with optional affine parameters, against the reference.
 * Row 0 is constant (zero variance) when rows > 1. */
static int check_norm(const kc_dev_t *k, axon_dtype_t d, int64_t rows, int64_t n, int rms, int affine) {
    const int64_t sz[2] = {rows, n}, nsz[1] = {n}, rsz[1] = {rows}, total = rows * n;
    axon_dtype_t sd = d == AXON_FLOAT64 ? AXON_FLOAT64 : AXON_FLOAT32;
    const double eps = 1e-5;
    nt_buf_t x = nt_make(k, d, total, -2, 3), y = nt_make(k, d, total, 0, 0), g = nt_make(k, d, total, -1, 1);
    nt_buf_t w = nt_make(k, d, n, 0.5, 1.5), b = nt_make(k, d, n, -1, 1), gi = nt_make(k, d, total, 0, 0);
    nt_buf_t gw = nt_make(k, d, n, 0, 0), gb = nt_make(k, d, n, 0, 0);
    nt_buf_t mean = nt_make(k, sd, rows, 0, 0), rstd = nt_make(k, sd, rows, 0, 0);
    if (rows > 1) {
        for (int64_t j = 0; j < n; j++) nt_set(&x, j, 1.25);
        nt_push(k, &x);
    }
    axon_tensor_t tx = nt_t(&x, 2, sz), ty = nt_t(&y, 2, sz), tg = nt_t(&g, 2, sz), tgi = nt_t(&gi, 2, sz);
    axon_tensor_t tw = nt_t(&w, 1, nsz), tb = nt_t(&b, 1, nsz), tgw = nt_t(&gw, 1, nsz), tgb = nt_t(&gb, 1, nsz);
    axon_tensor_t tm = nt_t(&mean, 1, rsz), tr = nt_t(&rstd, 1, rsz);
    const axon_tensor_t *pw = affine ? &tw : NULL, *pb = affine ? &tb : NULL;
    axon_status_t st = rms ? axon_kernel_rms_norm(k->s, &ty, &tr, &tx, pw, n, eps)
                           : axon_kernel_layer_norm(k->s, &ty, &tm, &tr, &tx, pw, pb, n, eps);
    if (st == AXON_OK)
        st = rms ? axon_kernel_rms_norm_backward(k->s, &tgi, affine ? &tgw : NULL, &tg, &tx, &tr, pw, n)
                 : axon_kernel_layer_norm_backward(k->s, &tgi, affine ? &tgw : NULL, affine ? &tgb : NULL, &tg, &tx,
                                                   &tm, &tr, pw, n);
    int bad = st != AXON_OK || !nt_pull(k, &y) || !nt_pull(k, &gi) || !nt_pull(k, &gw) || !nt_pull(k, &gb) ||
              !nt_pull(k, &mean) || !nt_pull(k, &rstd);
    if (bad) fprintf(stderr, "  norm: %s\n", axon_last_error());
    long double *wy = calloc((size_t)total, sizeof(long double)), *wgi = calloc((size_t)total, sizeof(long double));
    long double *wm = calloc((size_t)rows, sizeof(long double)), *wr = calloc((size_t)rows, sizeof(long double));
    long double *wgw = calloc((size_t)n, sizeof(long double)), *wgb = calloc((size_t)n, sizeof(long double));
    long double *terms = calloc((size_t)total, sizeof(long double));
    for (int64_t r = 0; r < rows && !bad; r++) {
        long double mu = 0, var = 0, s1 = 0, s2 = 0;
        const int64_t o = r * n;
        if (!rms) {
            for (int64_t j = 0; j < n; j++) mu += nt_get(&x, o + j);
            mu /= n;
        }
        for (int64_t j = 0; j < n; j++) var += (nt_get(&x, o + j) - mu) * (nt_get(&x, o + j) - mu);
        long double rs = 1.0L / sqrtl(var / n + eps);
        wm[r] = mu, wr[r] = rs;
        for (int64_t j = 0; j < n; j++) {
            long double xh = (nt_get(&x, o + j) - mu) * rs, wv = affine ? nt_get(&w, j) : 1;
            long double gv = nt_get(&g, o + j);
            wy[o + j] = xh * wv + (affine && !rms ? nt_get(&b, j) : 0);
            terms[o + j] = fabsl(xh * wv) + fabsl(affine && !rms ? nt_get(&b, j) : 0);
            s1 += gv * wv, s2 += gv * wv * xh;
            wgw[j] += gv * xh, wgb[j] += gv;
        }
        if (rms) s1 = 0;
        for (int64_t j = 0; j < n; j++) {
            long double xh = (nt_get(&x, o + j) - mu) * rs, wv = affine ? nt_get(&w, j) : 1;
            wgi[o + j] = rs * (nt_get(&g, o + j) * wv - s1 / n - xh * s2 / n);
        }
    }
    if (!bad) bad = nt_compare_terms("out", &y, wy, terms, 1e-2L);
    if (!bad) bad = nt_compare("rstd", &rstd, wr, 0);
    if (!bad && !rms) bad = nt_compare("mean", &mean, wm, 1e-3L);
    /* The gradients cancel: scale the absolute term by what was summed. */
    if (!bad) bad = nt_compare("grad_in", &gi, wgi, 1.0L);
    if (!bad && affine) bad = nt_compare("grad_weight", &gw, wgw, sqrtl((long double)rows));
    if (!bad && affine && !rms) bad = nt_compare("grad_bias", &gb, wgb, sqrtl((long double)rows));
    if (bad)
        fprintf(stderr, "  (%s %s [%lld, %lld]%s)\n", rms ? "rms_norm" : "layer_norm", axon_dtype_name(d),
                (long long)rows, (long long)n, affine ? " affine" : "");
    free(wy), free(wgi), free(wm), free(wr), free(wgw), free(wgb), free(terms);
    nt_buf_t *all[] = {&x, &y, &g, &w, &b, &gi, &gw, &gb, &mean, &rstd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) nt_free(k, all[i]);
    return bad;
}

static void test_layer_norm_and_rms_norm_match_reference_forward_and_backward(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    const int64_t shapes[][2] = {{4, 1}, {1, 1}, {7, 33}, {3, 5000}, {300, 64}, {2, 1100}};
    for (size_t di = 0; di < sizeof nt_dtypes / sizeof nt_dtypes[0]; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int rms = 0; rms < 2; rms++)
                for (int affine = 0; affine < 2; affine++)
                    CHECK(!check_norm(&k, nt_dtypes[di], shapes[si][0], shapes[si][1], rms, affine));
    axon_runtime_destroy(k.rt);
}

/* float32 in, weight, bias and out take a specialized loop (norm_layer.c): its statistics are the general path's
 * (the same float64 sums in the same order; rstd is kept in float64, so a sum taken in another order shows), and its
 * output, computed in float with the mean split in two floats, within 4 float32 ulps of |x_hat * w| + |b| of the
 * general path's float64 result. Row lengths around the 8 partial sums and the 1024-element chunks; with and without
 * weight and bias; layer norm and RMS norm; rows whose mean is far from zero (x - mean in float would fail). */
static void test_layer_norm_float32_path_keeps_the_general_paths_statistics(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t lens[] = {1, 7, 8, 9, 1023, 1031, 2050};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int rms = 0; rms < 2; rms++)
            for (int affine = 0; affine < 3; affine++) {   /* 0: none, 1: weight, 2: weight and bias */
                const int64_t rows = 3, n = lens[li], sz[2] = {rows, n}, nsz[1] = {n}, rsz[1] = {rows};
                const double lo = li % 2 ? 300 : -2, hi = li % 2 ? 310 : 5; /* odd lengths: means of about 300 */
                nt_buf_t x = nt_make(&k, AXON_FLOAT32, rows * n, lo, hi), w = nt_make(&k, AXON_FLOAT32, n, -1, 1),
                         b = nt_make(&k, AXON_FLOAT32, n, -1, 1), y32 = nt_make(&k, AXON_FLOAT32, rows * n, 0, 0),
                         y64 = nt_make(&k, AXON_FLOAT64, rows * n, 0, 0), r32 = nt_make(&k, AXON_FLOAT64, rows, 0, 0),
                         r64 = nt_make(&k, AXON_FLOAT64, rows, 0, 0);
                axon_tensor_t tx = nt_t(&x, 2, sz), tw = nt_t(&w, 1, nsz), tb = nt_t(&b, 1, nsz);
                axon_tensor_t ty32 = nt_t(&y32, 2, sz), ty64 = nt_t(&y64, 2, sz), tr32 = nt_t(&r32, 1, rsz),
                              tr64 = nt_t(&r64, 1, rsz);
                const axon_tensor_t *pw = affine ? &tw : NULL, *pb = affine == 2 ? &tb : NULL;
                int ok;
                if (rms)
                    ok = axon_kernel_rms_norm(k.s, &ty32, &tr32, &tx, pw, n, 1e-6) == AXON_OK &&
                         axon_kernel_rms_norm(k.s, &ty64, &tr64, &tx, pw, n, 1e-6) == AXON_OK;
                else
                    ok = axon_kernel_layer_norm(k.s, &ty32, NULL, &tr32, &tx, pw, pb, n, 1e-5) == AXON_OK &&
                         axon_kernel_layer_norm(k.s, &ty64, NULL, &tr64, &tx, pw, pb, n, 1e-5) == AXON_OK;
                ok = ok && nt_pull(&k, &y32) && nt_pull(&k, &y64) && nt_pull(&k, &r32) && nt_pull(&k, &r64);
                CHECK(ok);
                int64_t bad = -1;
                for (int64_t i = 0; ok && i < rows * n && bad < 0; i++) {
                    const double want = ((double *)y64.h)[i], bias = affine == 2 ? ((float *)b.h)[i % n] : 0.0;
                    const double bound = 4 * 0x1p-24 * (fabs(want - bias) + fabs(bias));
                    if (!(fabs(((float *)y32.h)[i] - want) <= bound)) bad = i;
                }
                if (bad >= 0)
                    fprintf(stderr, "  n %lld rms %d affine %d: element %lld %.9g against %.17g\n", (long long)n, rms,
                            affine, (long long)bad, ((float *)y32.h)[bad], ((double *)y64.h)[bad]);
                CHECK_EQ_I64(bad, -1);
                CHECK_EQ_I64(kc_first_diff(r32.h, r64.h, (size_t)rows * 8), -1);   /* rstd in float64: the sums' bits */
                nt_free(&k, &x), nt_free(&k, &w), nt_free(&k, &b), nt_free(&k, &y32), nt_free(&k, &y64);
                nt_free(&k, &r32), nt_free(&k, &r64);
            }
    axon_runtime_destroy(k.rt);
}

/* ---- determinism and bad input ---- */

/* Every output of a softmax over the middle dim and a layer norm backward, as bytes. */
static void *run_for_bytes(int threads, size_t *nbytes) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return NULL;
    rr_state = 12345;
    const int64_t sz[3] = {64, 300, 65}, n = 64 * 300 * 65, lsz[2] = {64 * 300, 65}, rsz[1] = {64 * 300},
                  nsz[1] = {65};
    nt_buf_t x = nt_make(&k, AXON_FLOAT32, n, -3, 3), y = nt_make(&k, AXON_FLOAT32, n, 0, 0);
    nt_buf_t gw = nt_make(&k, AXON_FLOAT32, 65, 0, 0), m = nt_make(&k, AXON_FLOAT32, lsz[0], 0, 0),
             r = nt_make(&k, AXON_FLOAT32, lsz[0], 0, 0), gi = nt_make(&k, AXON_FLOAT32, n, 0, 0);
    axon_tensor_t tx = nt_t(&x, 3, sz), ty = nt_t(&y, 3, sz), lx = nt_t(&x, 2, lsz), ly = nt_t(&y, 2, lsz);
    axon_tensor_t lgi = nt_t(&gi, 2, lsz), tgw = nt_t(&gw, 1, nsz), tm = nt_t(&m, 1, rsz), tr = nt_t(&r, 1, rsz);
    size_t total = (size_t)(n + n + 65) * 4;
    char *out = malloc(total);
    int ok = axon_kernel_softmax(k.s, &ty, &tx, 1, 0) == AXON_OK && nt_pull(&k, &y) &&
             axon_kernel_layer_norm(k.s, &ly, &tm, &tr, &lx, NULL, NULL, 65, 1e-5) == AXON_OK &&
             axon_kernel_layer_norm_backward(k.s, &lgi, &tgw, NULL, &ly, &lx, &tm, &tr, NULL, 65) == AXON_OK &&
             nt_pull(&k, &gi) && nt_pull(&k, &gw);
    if (ok) {
        memcpy(out, y.h, (size_t)n * 4);
        memcpy(out + n * 4, gi.h, (size_t)n * 4);
        memcpy(out + 2 * n * 4, gw.h, 65 * 4);
    }
    nt_free(&k, &x), nt_free(&k, &y), nt_free(&k, &gw), nt_free(&k, &m), nt_free(&k, &r), nt_free(&k, &gi);
    axon_runtime_destroy(k.rt);
    if (!ok) {
        free(out);
        return NULL;
    }
    *nbytes = total;
    return out;
}

static void test_norm_results_are_bitwise_identical_for_1_and_4_threads(void) {
    size_t n1 = 0, n4 = 0;
    void *a = run_for_bytes(1, &n1), *b = run_for_bytes(4, &n4);
    CHECK(a && b && n1 == n4);
    if (a && b) CHECK_EQ_I64(kc_first_diff(a, b, n1), -1);
    free(a);
    free(b);
}

static void test_norm_refuses_bad_input_with_messages(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const int64_t sz[2] = {4, 6}, st[2] = {1, 4}, bsz[2] = {4, 5}, nsz[1] = {5};
    nt_buf_t x = nt_make(&k, AXON_FLOAT32, 24, -1, 1), y = nt_make(&k, AXON_FLOAT32, 24, 0, 0);
    nt_buf_t xi = nt_make(&k, AXON_INT32, 24, 0, 0);
    axon_tensor_t tx = nt_t(&x, 2, sz), ty = nt_t(&y, 2, sz), ti = nt_t(&xi, 2, sz);
    axon_tensor_t tt = kc_tensor(x.dev, AXON_FLOAT32, 2, sz, st), tbad = nt_t(&y, 2, bsz), tw = nt_t(&x, 1, nsz);
    CHECK_STATUS(axon_kernel_softmax(k.s, &ty, &tx, 2, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out of range");
    CHECK_STATUS(axon_kernel_softmax(k.s, &ty, &tt, 1, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("contiguous");
    CHECK_STATUS(axon_kernel_softmax(k.s, &tbad, &tx, 1, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("does not match");
    CHECK_STATUS(axon_kernel_softmax(k.s, &ti, &tx, 1, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("int32");
    CHECK_STATUS(axon_kernel_layer_norm(k.s, &ty, NULL, NULL, &tx, NULL, NULL, 5, 1e-5), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("does not divide");
    CHECK_STATUS(axon_kernel_layer_norm(k.s, &ty, NULL, NULL, &tx, &tw, NULL, 6, 1e-5), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("weight has 5 elements");
    CHECK_STATUS(axon_kernel_rms_norm(k.s, &ty, NULL, &tx, NULL, 0, 1e-5), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_kernel_rms_norm(k.s, &ty, NULL, &tx, NULL, 6, -1.0)); /* a negative eps is PyTorch's to allow */
    CHECK_STATUS(axon_kernel_layer_norm_backward(k.s, &ty, NULL, NULL, &tx, &tx, NULL, NULL, NULL, 6),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("rstd");
    CHECK_OK(axon_stream_sync(k.s));
    nt_free(&k, &x), nt_free(&k, &y), nt_free(&k, &xi);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_softmax_matches_reference_on_last_and_middle_dims);
    RUN(test_softmax_of_minus_inf_entries_is_zero_and_all_minus_inf_row_is_nan);
    RUN(test_safe_softmax_zeroes_rows_of_all_minus_inf_only);
    RUN(test_layer_norm_and_rms_norm_match_reference_forward_and_backward);
    RUN(test_layer_norm_float32_path_keeps_the_general_paths_statistics);
    RUN(test_norm_results_are_bitwise_identical_for_1_and_4_threads);
    RUN(test_norm_refuses_bad_input_with_messages);
    return check_report();
}
