/* axon_kernel_cdist, axon_kernel_pdist and their backward against a plain reference: the p-norm of each pair of rows
 * written out term by term in float64 (differences rounded to the dtype first, as the kernels and PyTorch take
 * them), and gradients against central differences of that reference. Also: ties of p = inf (every tied coordinate
 * gets the gradient), equal rows (D = 0: no gradient), NaN under p = inf (cdist skips it, pdist propagates it), the
 * same bits for 1 and 3 threads, and bad arguments refused with a message.
 * Tolerances: 1e-13 relative for float64 distances, 4e-7 for float32 (one rounding of a float64 result);
 * 2e-7 (times 1 + |gradient|) for float64 gradients against differences of step 1e-6, 1e-6 for p = 0.5, whose
 * |d|^(-1/2) makes the differences themselves less exact where a coordinate's difference is small. */
#define FD_TOL(p) ((p) < 1.0 ? 1e-6 : 2e-7)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/distance.h"
#include "kernels_check.h"

enum { B = 2, P = 3, R = 5, M = 37, N = 6 };

static const double ps[] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, INFINITY};
#define NP ((int)(sizeof ps / sizeof ps[0]))

static double ref_dist(const double *a, const double *b, int64_t m, double p, int f32) {
    double s = 0.0;
    for (int64_t k = 0; k < m; k++) {
        const double d = f32 ? (double)((float)a[k] - (float)b[k]) : a[k] - b[k];
        if (p == 0.0) s += d != 0.0;
        else if (isinf(p)) s = fabs(d) > s ? fabs(d) : s;
        else s += pow(fabs(d), p);
    }
    return p == 0.0 || isinf(p) ? s : pow(s, 1.0 / p);
}

static void fill_random(double *x, int n, unsigned seed) {
    srand(seed);
    for (int i = 0; i < n; i++) x[i] = (double)rand() / RAND_MAX * 4 - 2;
}

static int close_rel(double got, double want, double tol) {
    if (isnan(want)) return isnan(got);
    return got == want || fabs(got - want) <= tol * fabs(want);
}

static void test_cdist_matches_the_reference_for_every_p(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    double x1[B * P * M], x2[B * R * M];
    fill_random(x1, B * P * M, 1);
    fill_random(x2, B * R * M, 2);
    memcpy(x2 + 2 * M, x1, sizeof(double) * M); /* batch 0: x2 row 2 == x1 row 0, a zero distance */
    x2[3 * M + 5] = 0.0, x1[M + 5] = 0.0;        /* and one zero difference, for p = 0 */
    const int64_t s1[3] = {B, P, M}, s2[3] = {B, R, M}, so[3] = {B, P, R};
    for (int di = 0; di < 2; di++) {
        const axon_dtype_t d = di ? AXON_FLOAT32 : AXON_FLOAT64;
        void *h1 = kc_doubles_as(x1, B * P * M, d), *h2 = kc_doubles_as(x2, B * R * M, d), *ho = malloc(B * P * R * 8);
        axon_tensor_t t1 = kc_tensor(h1, d, 3, s1, NULL), t2 = kc_tensor(h2, d, 3, s2, NULL);
        axon_tensor_t to = kc_tensor(ho, d, 3, so, NULL);
        for (int pi = 0; pi < NP; pi++) {
            CHECK_OK(axon_kernel_cdist(k.s, &to, &t1, &t2, ps[pi]));
            CHECK_OK(axon_stream_sync(k.s));
            for (int b = 0; b < B; b++)
                for (int i = 0; i < P; i++)
                    for (int j = 0; j < R; j++) {
                        const double want = ref_dist(x1 + (b * P + i) * M, x2 + (b * R + j) * M, M, ps[pi], di);
                        const double got = kc_double_at(ho, (b * P + i) * R + j, d);
                        if (!close_rel(got, want, di ? 4e-7 : 1e-13)) {
                            fprintf(stderr, "  %s p %g [%d, %d, %d]: %.17g, want %.17g\n", axon_dtype_name(d),
                                    ps[pi], b, i, j, got, want);
                            check_failures_in_test++;
                        }
                    }
        }
        free(h1), free(h2), free(ho);
    }
    axon_runtime_destroy(k.rt);
}

/* d/dx1 of sum over (b, i, j) of w[b, i, j] dist(x1[b, i], x2[b, j]) by central differences. */
static void fd_cdist_grad(const double *x1, const double *x2, const double *w, double p, double *out) {
    const double h = 1e-6;
    double xp[B * P * M];
    for (int e = 0; e < B * P * M; e++) {
        const int b = e / (P * M), i = e / M % P;
        double f[2];
        for (int side = 0; side < 2; side++) {
            memcpy(xp, x1, sizeof xp);
            xp[e] += side ? h : -h;
            f[side] = 0;
            for (int j = 0; j < R; j++)
                f[side] += w[(b * P + i) * R + j] * ref_dist(xp + (b * P + i) * M, x2 + (b * R + j) * M, M, p, 0);
        }
        out[e] = (f[1] - f[0]) / (2 * h);
    }
}

static void test_cdist_backward_is_the_derivative(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    double x1[B * P * M], x2[B * R * M], w[B * P * R], dist[B * P * R], g[B * P * M], want[B * P * M];
    fill_random(x1, B * P * M, 3);
    fill_random(x2, B * R * M, 4);
    fill_random(w, B * P * R, 5);
    const int64_t s1[3] = {B, P, M}, s2[3] = {B, R, M}, so[3] = {B, P, R};
    axon_tensor_t t1 = kc_tensor(x1, AXON_FLOAT64, 3, s1, NULL), t2 = kc_tensor(x2, AXON_FLOAT64, 3, s2, NULL);
    axon_tensor_t tw = kc_tensor(w, AXON_FLOAT64, 3, so, NULL), td = kc_tensor(dist, AXON_FLOAT64, 3, so, NULL);
    axon_tensor_t tg = kc_tensor(g, AXON_FLOAT64, 3, s1, NULL);
    for (int pi = 0; pi < NP; pi++) {
        CHECK_OK(axon_kernel_cdist(k.s, &td, &t1, &t2, ps[pi]));
        CHECK_OK(axon_kernel_cdist_backward(k.s, &tg, &tw, &t1, &t2, &td, ps[pi]));
        CHECK_OK(axon_stream_sync(k.s));
        if (ps[pi] == 0.0) memset(want, 0, sizeof want); /* a count: no gradient */
        else fd_cdist_grad(x1, x2, w, ps[pi], want);
        for (int e = 0; e < B * P * M; e++)
            if (!(fabs(g[e] - want[e]) <= FD_TOL(ps[pi]) * (1 + fabs(want[e])))) {
                fprintf(stderr, "  p %g grad[%d] = %.12g, finite difference %.12g\n", ps[pi], e, g[e], want[e]);
                check_failures_in_test++;
            }
    }
    axon_runtime_destroy(k.rt);
}

static void test_ties_equal_rows_and_nan(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    /* row 0 against row 0 of x2: differences (2, -2, 1): p = inf ties at coordinates 0 and 1 */
    double x1[3] = {3, -1, 0.5}, x2[2 * 3] = {1, 1, -0.5, 3, -1, 0.5}, dist[2], g[3], w[2] = {1.5, 4};
    const int64_t s1[3] = {1, 1, 3}, s2[3] = {1, 2, 3}, so[3] = {1, 1, 2};
    axon_tensor_t t1 = kc_tensor(x1, AXON_FLOAT64, 3, s1, NULL), t2 = kc_tensor(x2, AXON_FLOAT64, 3, s2, NULL);
    axon_tensor_t td = kc_tensor(dist, AXON_FLOAT64, 3, so, NULL), tw = kc_tensor(w, AXON_FLOAT64, 3, so, NULL);
    axon_tensor_t tg = kc_tensor(g, AXON_FLOAT64, 3, s1, NULL);
    CHECK_OK(axon_kernel_cdist(k.s, &td, &t1, &t2, INFINITY));
    CHECK_OK(axon_kernel_cdist_backward(k.s, &tg, &tw, &t1, &t2, &td, INFINITY));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(dist[0] == 2.0 && dist[1] == 0.0);
    CHECK(g[0] == 1.5 && g[1] == -1.5 && g[2] == 0.0); /* the equal row (dist 0) adds nothing */
    CHECK_OK(axon_kernel_cdist(k.s, &td, &t1, &t2, 2.0));
    CHECK_OK(axon_kernel_cdist_backward(k.s, &tg, &tw, &t1, &t2, &td, 2.0));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(dist[0] == 3.0 && dist[1] == 0.0);
    CHECK(g[0] == 1.5 * 2 / 3 && g[1] == -1.5 * 2 / 3 && g[2] == 1.5 * 1 / 3.0);
    /* NaN: cdist's p = inf skips it as PyTorch CPU's scalar loop does; pdist's propagates it */
    x1[2] = NAN;
    CHECK_OK(axon_kernel_cdist(k.s, &td, &t1, &t2, INFINITY));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(dist[0] == 2.0);
    CHECK_OK(axon_kernel_cdist(k.s, &td, &t1, &t2, 2.0));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(isnan(dist[0]));
    double px[2 * 3] = {3, -1, NAN, 1, 1, -0.5}, pd[1];
    const int64_t sx[2] = {2, 3}, s1d[1] = {1};
    axon_tensor_t tpx = kc_tensor(px, AXON_FLOAT64, 2, sx, NULL), tpd = kc_tensor(pd, AXON_FLOAT64, 1, s1d, NULL);
    CHECK_OK(axon_kernel_pdist(k.s, &tpd, &tpx, INFINITY));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(isnan(pd[0]));
    axon_runtime_destroy(k.rt);
}

static void test_pdist_and_its_backward(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    enum { K = N * (N - 1) / 2 };
    double x[N * M], w[K], out[K], g[N * M];
    fill_random(x, N * M, 6);
    fill_random(w, K, 7);
    memcpy(x + 4 * M, x + M, sizeof(double) * M); /* rows 1 and 4 equal */
    const int64_t sx[2] = {N, M}, sk[1] = {K};
    axon_tensor_t tx = kc_tensor(x, AXON_FLOAT64, 2, sx, NULL), to = kc_tensor(out, AXON_FLOAT64, 1, sk, NULL);
    axon_tensor_t tw = kc_tensor(w, AXON_FLOAT64, 1, sk, NULL), tg = kc_tensor(g, AXON_FLOAT64, 2, sx, NULL);
    for (int pi = 0; pi < NP; pi++) {
        const double p = ps[pi];
        CHECK_OK(axon_kernel_pdist(k.s, &to, &tx, p));
        CHECK_OK(axon_kernel_pdist_backward(k.s, &tg, &tw, &tx, &to, p));
        CHECK_OK(axon_stream_sync(k.s));
        int e = 0;
        for (int i = 0; i < N; i++)
            for (int j = i + 1; j < N; j++, e++) {
                const double want = ref_dist(x + i * M, x + j * M, M, p, 0);
                if (!close_rel(out[e], want, 1e-13)) {
                    fprintf(stderr, "  p %g pair (%d, %d): %.17g, want %.17g\n", p, i, j, out[e], want);
                    check_failures_in_test++;
                }
            }
        const double h = 1e-6;
        double xp[N * M];
        for (int c = 0; c < N * M; c++) {
            double f[2];
            for (int side = 0; side < 2; side++) {
                memcpy(xp, x, sizeof xp);
                xp[c] += side ? h : -h;
                f[side] = 0;
                int q = 0;
                for (int i = 0; i < N; i++)
                    for (int j = i + 1; j < N; j++, q++)
                        /* the equal pair (1, 4) sits at a kink for every p; PyTorch's gradient there is 0 */
                        if (!(i == 1 && j == 4)) f[side] += w[q] * ref_dist(xp + i * M, xp + j * M, M, p, 0);
            }
            const double want = p == 0.0 ? 0.0 : (f[1] - f[0]) / (2 * h);
            if (!(fabs(g[c] - want) <= FD_TOL(p) * (1 + fabs(want)))) {
                fprintf(stderr, "  p %g grad[%d] = %.12g, finite difference %.12g\n", p, c, g[c], want);
                check_failures_in_test++;
            }
        }
    }
    axon_runtime_destroy(k.rt);
}

static void test_results_do_not_depend_on_threads(void) {
    double x1[B * P * M], x2[B * R * M], w[B * P * R], out[2][B * P * R], g[2][B * P * M];
    fill_random(x1, B * P * M, 8);
    fill_random(x2, B * R * M, 9);
    fill_random(w, B * P * R, 10);
    const int64_t s1[3] = {B, P, M}, s2[3] = {B, R, M}, so[3] = {B, P, R};
    for (int run = 0; run < 2; run++) {
        kc_dev_t k = kc_open(run ? 3 : 1);
        REQUIRE(k.s);
        axon_tensor_t t1 = kc_tensor(x1, AXON_FLOAT64, 3, s1, NULL), t2 = kc_tensor(x2, AXON_FLOAT64, 3, s2, NULL);
        axon_tensor_t to = kc_tensor(out[run], AXON_FLOAT64, 3, so, NULL);
        axon_tensor_t tw = kc_tensor(w, AXON_FLOAT64, 3, so, NULL), tg = kc_tensor(g[run], AXON_FLOAT64, 3, s1, NULL);
        CHECK_OK(axon_kernel_cdist(k.s, &to, &t1, &t2, 1.5));
        CHECK_OK(axon_kernel_cdist_backward(k.s, &tg, &tw, &t1, &t2, &to, 1.5));
        CHECK_OK(axon_stream_sync(k.s));
        axon_runtime_destroy(k.rt);
    }
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
    CHECK(memcmp(g[0], g[1], sizeof g[0]) == 0);
}

static void test_bad_arguments_are_refused(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    double x1[2 * 3 * 4] = {0}, x2[2 * 5 * 4] = {0}, out[2 * 3 * 5];
    const int64_t s1[3] = {2, 3, 4}, s2[3] = {2, 5, 4}, so[3] = {2, 3, 5}, s2m[3] = {2, 5, 3}, sb[3] = {1, 5, 4};
    axon_tensor_t t1 = kc_tensor(x1, AXON_FLOAT64, 3, s1, NULL), t2 = kc_tensor(x2, AXON_FLOAT64, 3, s2, NULL);
    axon_tensor_t to = kc_tensor(out, AXON_FLOAT64, 3, so, NULL);
    CHECK_STATUS(axon_kernel_cdist(k.s, &to, &t1, &t2, -1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("p = -1 must be non-negative");
    CHECK_STATUS(axon_kernel_cdist(k.s, &to, &t1, &t2, NAN), AXON_ERROR_INVALID_ARG);
    axon_tensor_t tm = kc_tensor(x2, AXON_FLOAT64, 3, s2m, NULL), tb = kc_tensor(x2, AXON_FLOAT64, 3, sb, NULL);
    CHECK_STATUS(axon_kernel_cdist(k.s, &to, &t1, &tm, 2.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("cdist: x2 (shape [2, 5, 3])");
    CHECK_STATUS(axon_kernel_cdist(k.s, &to, &t1, &tb, 2.0), AXON_ERROR_INVALID_ARG);
    axon_tensor_t th = kc_tensor(x1, AXON_FLOAT16, 3, s1, NULL);
    CHECK_STATUS(axon_kernel_cdist(k.s, &to, &th, &t2, 2.0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("float16 is not float32 or float64");
    axon_tensor_t tf = kc_tensor(x2, AXON_FLOAT32, 3, s2, NULL);
    CHECK_STATUS(axon_kernel_cdist(k.s, &to, &t1, &tf, 2.0), AXON_ERROR_UNSUPPORTED);
    const int64_t st1[3] = {12, 1, 3};
    axon_tensor_t tnc = kc_tensor(x1, AXON_FLOAT64, 3, s1, st1);
    CHECK_STATUS(axon_kernel_cdist(k.s, &to, &tnc, &t2, 2.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("must be contiguous");
    const int64_t sp[1] = {2};
    axon_tensor_t tp = kc_tensor(out, AXON_FLOAT64, 1, sp, NULL), tx = kc_tensor(x1, AXON_FLOAT64, 2, s1 + 1, NULL);
    CHECK_STATUS(axon_kernel_pdist(k.s, &tp, &tx, 2.0), AXON_ERROR_INVALID_ARG); /* 3 rows: 3 pairs, not 2 */
    CHECK_MSG("pdist: out (shape [2])");
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_cdist_matches_the_reference_for_every_p);
    RUN(test_cdist_backward_is_the_derivative);
    RUN(test_ties_equal_rows_and_nan);
    RUN(test_pdist_and_its_backward);
    RUN(test_results_do_not_depend_on_threads);
    RUN(test_bad_arguments_are_refused);
    return check_report();
}
