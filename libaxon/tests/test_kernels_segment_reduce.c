/* axon_kernel_segment_reduce (axon/segment.h) against a float64 reference: every reduction, float32 and float64, int32
 * and int64 lengths and offsets, with and without an initial value, inner sizes 1 and 3 over two rows, empty
 * segments, NaN propagation in max and min; the backward's rules (ties, zeros, NaN in prod); malformed lengths and
 * offsets fail the command; bad descriptors refused. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "axon/segment.h"
#include "kernels_check.h"

#define OUTER 2
#define N 7
#define SEGS 4

/* Row o's segment lengths: 2, 0, 4, 1 and 3, 1, 0, 3 (each row sums to N). */
static const int64_t seg_len[OUTER][SEGS] = {{2, 0, 4, 1}, {3, 1, 0, 3}};

static double ref(axon_segment_reduce_t op, const double *x, int64_t len, int64_t inner, int has_init, double init) {
    double acc = has_init ? init
                 : op == AXON_SEGMENT_MAX ? -INFINITY
                 : op == AXON_SEGMENT_MIN ? INFINITY
                 : op == AXON_SEGMENT_PROD ? 1.0
                                            : 0.0;
    for (int64_t e = 0; e < len; e++) {
        const double v = x[e * inner];
        if (op == AXON_SEGMENT_MAX) acc = v != v ? v : (acc < v ? v : acc);
        else if (op == AXON_SEGMENT_MIN) acc = v != v ? v : (v < acc ? v : acc);
        else if (op == AXON_SEGMENT_PROD) acc *= v;
        else acc += v;
    }
    if (op == AXON_SEGMENT_MEAN) acc = len == 0 && !has_init ? NAN : len > 0 && acc == acc ? acc / (double)len : acc;
    return acc;
}

/* One configuration; returns the number of mismatches. */
static int check_case(kc_dev_t *k, axon_segment_reduce_t op, axon_dtype_t d, axon_dtype_t ld, int offsets,
                      int64_t inner, int has_init) {
    const size_t es = axon_dtype_size(d), ls = axon_dtype_size(ld);
    double x[OUTER * N * 3], want[OUTER * SEGS * 3];
    unsigned char xh[OUTER * N * 3 * 8], oh[OUTER * SEGS * 3 * 8], lh[OUTER * (SEGS + 1) * 8];
    for (int64_t i = 0; i < OUTER * N * inner; i++) {
        x[i] = (double)((i * 7) % 11) / 4.0 - 1.0;                 /* exact in float32; includes 0 and negatives */
        if (d == AXON_FLOAT32) ((float *)(void *)xh)[i] = (float)x[i];
        else ((double *)(void *)xh)[i] = x[i];
    }
    if (op == AXON_SEGMENT_MAX || op == AXON_SEGMENT_MIN) {   /* a NaN in row 1's first segment, first lane */
        x[N * inner] = NAN;
        if (d == AXON_FLOAT32) ((float *)(void *)xh)[N * inner] = NAN;
        else ((double *)(void *)xh)[N * inner] = NAN;
    }
    const int64_t per_row = SEGS + (offsets ? 1 : 0);
    for (int64_t o = 0; o < OUTER; o++) {
        int64_t start = 0;
        for (int64_t s = 0; s <= SEGS; s++) {
            if (s < per_row) {
                const int64_t v = offsets ? start : seg_len[o][s];
                if (ld == AXON_INT64) ((int64_t *)(void *)lh)[o * per_row + s] = v;
                else ((int32_t *)(void *)lh)[o * per_row + s] = (int32_t)v;
            }
            if (s == SEGS) break;
            for (int64_t l = 0; l < inner; l++)
                want[(o * SEGS + s) * inner + l] = ref(op, x + (o * N + start) * inner + l, seg_len[o][s], inner,
                                                       has_init, 0.5);
            start += seg_len[o][s];
        }
    }
    const int64_t ds[3] = {OUTER, N, inner}, os[3] = {OUTER, SEGS, inner}, lsz[2] = {OUTER, per_row};
    void *dd = kc_upload(k, xh, (size_t)(OUTER * N * inner) * es);
    void *dl = kc_upload(k, lh, (size_t)(OUTER * per_row) * ls);
    void *dout = kc_upload(k, oh, (size_t)(OUTER * SEGS * inner) * es);
    axon_tensor_t td = kc_tensor(dd, d, 3, ds, NULL), to = kc_tensor(dout, d, 3, os, NULL);
    axon_tensor_t tl = kc_tensor(dl, ld, 2, lsz, NULL);
    int bad = 0;
    if (axon_kernel_segment_reduce(k->s, op, &to, &td, &tl, offsets, has_init, 0.5) != AXON_OK ||
        !kc_download(k, oh, dout, (size_t)(OUTER * SEGS * inner) * es)) {
        fprintf(stderr, "  segment_reduce %d failed: %s\n", (int)op, axon_last_error());
        bad = 1;
    }
    for (int64_t i = 0; i < OUTER * SEGS * inner && !bad; i++) {
        const double got = d == AXON_FLOAT32 ? (double)((float *)(void *)oh)[i] : ((double *)(void *)oh)[i];
        const double w = d == AXON_FLOAT32 ? (double)(float)want[i] : want[i];
        const int ok = (got != got && w != w) || got == w || fabs(got - w) <= 1e-6 * fabs(w);
        if (!ok) {
            fprintf(stderr, "  op %d %s lengths %s offsets %d inner %lld init %d element %lld: got %g want %g\n",
                    (int)op, axon_dtype_name(d), axon_dtype_name(ld), offsets, (long long)inner, has_init,
                    (long long)i, got, w);
            bad = 1;
        }
    }
    axon_mem_free(k->dev, dd), axon_mem_free(k->dev, dl), axon_mem_free(k->dev, dout);
    return bad;
}

static void test_every_reduction_matches_the_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    for (int op = 0; op < AXON_SEGMENT_COUNT; op++)
        for (int f64 = 0; f64 < 2; f64++)
            for (int l64 = 0; l64 < 2; l64++)
                for (int offsets = 0; offsets < 2; offsets++)
                    for (int64_t inner = 1; inner <= 3; inner += 2)
                        for (int init = 0; init < 2; init++)
                            CHECK(!check_case(&k, (axon_segment_reduce_t)op, f64 ? AXON_FLOAT64 : AXON_FLOAT32,
                                              l64 ? AXON_INT64 : AXON_INT32, offsets, inner, init));
    axon_runtime_destroy(k.rt);
}

/* The gradient of one segment of one lane by the rules in axon/segment.h, from its n elements x (stride 1). */
static void ref_backward(axon_segment_reduce_t op, const double *x, int64_t len, double g, double y, double init,
                         double *gi) {
    int64_t count = 0;
    for (int64_t e = 0; e < len; e++) count += x[e] != x[e] || x[e] == y;
    for (int64_t e = 0; e < len; e++) {
        if (op == AXON_SEGMENT_SUM) gi[e] = g;
        else if (op == AXON_SEGMENT_MEAN) gi[e] = g / (double)len;
        else if (op == AXON_SEGMENT_MAX || op == AXON_SEGMENT_MIN)
            gi[e] = x[e] != x[e] || x[e] == y ? (count >= 2 && g > 0 ? g / (double)count : g) : 0.0;
        else if (x[e] == x[e] && x[e] != 0) gi[e] = g * y / x[e];
        else {
            double others = init;
            for (int64_t k = 0; k < len; k++) if (k != e) others *= x[k];
            gi[e] = g * others;
        }
    }
}

/* float64 data [1, 9, 1] in segments 3, 0, 4, 2 with ties, zeros and a NaN; grads of mixed signs. */
static void test_backward_matches_the_rules(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    const double x[9] = {2, 2, -1, 3, 0, 3, 0, NAN, 5}, g[4] = {0.5, 2, -1.5, 3};
    const int64_t lens[4] = {3, 0, 4, 2}, ds[3] = {1, 9, 1}, os[3] = {1, 4, 1}, ls[2] = {1, 4};
    for (int op = 0; op < AXON_SEGMENT_COUNT; op++) {
        for (int init = 0; init < 2; init++) {
            double y[4], want[9] = {0}, got[9] = {0};
            int64_t start = 0;
            for (int s = 0; s < 4; s++) {
                y[s] = ref((axon_segment_reduce_t)op, x + start, lens[s], 1, init, 0.5);
                ref_backward((axon_segment_reduce_t)op, x + start, lens[s], g[s], y[s], init ? 0.5 : 1.0, want + start);
                start += lens[s];
            }
            void *dx = kc_upload(&k, x, sizeof x), *dg = kc_upload(&k, g, sizeof g), *dy = kc_upload(&k, y, sizeof y);
            void *dl = kc_upload(&k, lens, sizeof lens), *dgi = kc_upload(&k, got, sizeof got);
            axon_tensor_t tx = kc_tensor(dx, AXON_FLOAT64, 3, ds, NULL);
            axon_tensor_t tgi = kc_tensor(dgi, AXON_FLOAT64, 3, ds, NULL);
            axon_tensor_t tg = kc_tensor(dg, AXON_FLOAT64, 3, os, NULL), ty = kc_tensor(dy, AXON_FLOAT64, 3, os, NULL);
            axon_tensor_t tl = kc_tensor(dl, AXON_INT64, 2, ls, NULL);
            CHECK_OK(axon_kernel_segment_reduce_backward(k.s, (axon_segment_reduce_t)op, &tgi, &tg, &ty, &tx, &tl, 0,
                                                         init, 0.5));
            CHECK(kc_download(&k, got, dgi, sizeof got));
            for (int i = 0; i < 9; i++) {
                if (!((got[i] != got[i] && want[i] != want[i]) || fabs(got[i] - want[i]) <= 1e-12 * fabs(want[i]))) {
                    fprintf(stderr, "  backward op %d init %d element %d: got %g want %g\n", op, init, i, got[i],
                            want[i]);
                    check_failures_in_test++;
                }
            }
            axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dy);
            axon_mem_free(k.dev, dl), axon_mem_free(k.dev, dgi);
        }
    }
    axon_runtime_destroy(k.rt);
}

static void test_malformed_lengths_fail_the_command_and_bad_descriptors_are_refused(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    float x[6] = {1, 2, 3, 4, 5, 6}, o[3] = {0};
    const int64_t too_long[3] = {2, 2, 3}, negative[3] = {2, -1, 5}, unordered[4] = {0, 4, 2, 6};
    const int64_t ds[3] = {1, 6, 1}, os[3] = {1, 3, 1}, l3[2] = {1, 3}, l4[2] = {1, 4};
    void *dd = kc_upload(&k, x, sizeof x), *dout = kc_upload(&k, o, sizeof o);
    axon_tensor_t td = kc_tensor(dd, AXON_FLOAT32, 3, ds, NULL), to = kc_tensor(dout, AXON_FLOAT32, 3, os, NULL);
    const int64_t *cases[3] = {too_long, negative, unordered};
    for (int c = 0; c < 3; c++) {
        void *dl = kc_upload(&k, cases[c], sizeof(int64_t) * (c == 2 ? 4 : 3));
        axon_tensor_t tl = kc_tensor(dl, AXON_INT64, 2, c == 2 ? l4 : l3, NULL);
        axon_status_t st = axon_kernel_segment_reduce(k.s, AXON_SEGMENT_SUM, &to, &td, &tl, c == 2, 0, 0);
        if (st == AXON_OK) st = axon_stream_sync(k.s);
        CHECK(st == AXON_ERROR_INVALID_ARG);
        CHECK(strstr(axon_last_error(), "segment_reduce") != NULL);
        axon_mem_free(k.dev, dl);
    }
    /* an integer data dtype, and lengths of the wrong shape, are refused at launch */
    const int64_t fine[3] = {2, 2, 2};
    void *dl = kc_upload(&k, fine, sizeof fine);
    axon_tensor_t tl = kc_tensor(dl, AXON_INT64, 2, l3, NULL), tl4 = kc_tensor(dl, AXON_INT64, 2, l4, NULL);
    axon_tensor_t ti = kc_tensor(dd, AXON_INT32, 3, ds, NULL);
    CHECK_STATUS(axon_kernel_segment_reduce(k.s, AXON_SEGMENT_SUM, &to, &ti, &tl, 0, 0, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_segment_reduce(k.s, AXON_SEGMENT_SUM, &to, &td, &tl4, 0, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_segment_reduce(k.s, AXON_SEGMENT_COUNT, &to, &td, &tl, 0, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_kernel_segment_reduce(k.s, AXON_SEGMENT_SUM, &to, &td, &tl, 0, 0, 0));
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dl), axon_mem_free(k.dev, dd), axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_reduction_matches_the_reference);
    RUN(test_backward_matches_the_rules);
    RUN(test_malformed_lengths_fail_the_command_and_bad_descriptors_are_refused);
    return check_report();
}
