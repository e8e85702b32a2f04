/* The Bessel functions J0, J1, Y0, Y1 (kernels/special_bessel_jy.c) through axon_kernel_unary: against glibc's
 * j0..y1 over [-60, 60] and out to 1e6 in float64, within 8 ulps of the functions' scale max(min(1, 1 / sqrt|x|),
 * |f(x)|) (4.8 measured here, 5.5 against mpmath); float32 rounds the double result once; an element's value does
 * not depend on its neighbours (which blocks take the large-argument form) nor on where the blocks start; special
 * values as PyTorch's. */
#include <math.h>
#include <string.h>

#include "axon/pointwise.h"
#include "kernels_check.h"

#define N 4000
#define OPS 4
static const axon_unary_op_t ops[OPS] = {AXON_UNARY_BESSEL_J0, AXON_UNARY_BESSEL_J1, AXON_UNARY_BESSEL_Y0,
                                         AXON_UNARY_BESSEL_Y1};

static double glibc(int op, double x) {
    switch (op) {
    case 0: return j0(x);
    case 1: return j1(x);
    case 2: return y0(x);
    default: return y1(x);
    }
}

/* out[i] = op(x[i]) for n elements of dtype d (float64 or float32 values converted from and to double). */
static int run(kc_dev_t *k, axon_unary_op_t op, axon_dtype_t d, const double *x, double *out, int64_t n) {
    const size_t es = axon_dtype_size(d);
    static unsigned char host[N * 8 + 64];
    for (int64_t i = 0; i < n; i++) {
        if (d == AXON_FLOAT32) {
            const float f = (float)x[i];
            memcpy(host + i * 4, &f, 4);
        } else {
            memcpy(host + i * 8, &x[i], 8);
        }
    }
    void *dx = kc_upload(k, host, (size_t)n * es), *dout = kc_upload(k, NULL, (size_t)n * es);
    if (!dx || !dout) return 0;
    const int64_t sizes[1] = {n};
    axon_tensor_t tx = kc_tensor(dx, d, 1, sizes, NULL), to = kc_tensor(dout, d, 1, sizes, NULL);
    axon_op_params_t p = axon_op_params_default();
    int ok = axon_kernel_unary(k->s, op, &to, &tx, &p) == AXON_OK && kc_download(k, host, dout, (size_t)n * es);
    for (int64_t i = 0; ok && i < n; i++) {
        if (d == AXON_FLOAT32) {
            float f;
            memcpy(&f, host + i * 4, 4);
            out[i] = f;
        } else {
            memcpy(&out[i], host + i * 8, 8);
        }
    }
    axon_mem_free(k->dev, dx);
    axon_mem_free(k->dev, dout);
    return ok;
}

/* Arguments: a dense sweep of [-60, 60] (both forms and their seam at 8), then a geometric one to 1e6. */
static void arguments(double *x) {
    for (int i = 0; i < N / 2; i++) x[i] = -60 + 120.0 * i / (N / 2 - 1);
    for (int i = N / 2; i < N; i++) x[i] = 60 * pow(1e6 / 60, (double)(i - N / 2) / (N / 2 - 1));
    x[7] = 8.0, x[8] = nextafter(8.0, 0), x[9] = nextafter(8.0, 9), x[10] = 1e-300, x[11] = 0x1p-27;
}

static double scale(double x, double want) {
    const double amplitude = fabs(x) < 1 ? 1 : 1 / sqrt(fabs(x));
    return fabs(want) > amplitude ? fabs(want) : amplitude;
}

static void test_float64_matches_glibc(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static double x[N], got[N];
    arguments(x);
    for (int op = 0; op < OPS; op++) {
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, x, got, N));
        double worst = 0, worst_x = 0;
        for (int i = 0; i < N; i++) {
            if (op >= 2 && x[i] <= 0) continue; /* the special values below */
            const double want = glibc(op, x[i]), e = fabs(got[i] - want) / scale(x[i], want) / 0x1p-52;
            if (!(e <= worst)) worst = e, worst_x = x[i];
        }
        if (worst > 8) fprintf(stderr, "  %s: %.1f ulps of scale at %.17g\n", axon_unary_op_name(ops[op]), worst,
                                worst_x);
        CHECK(worst <= 8);
    }
    axon_runtime_destroy(k.rt);
}

/* float32: the float64 result at the float argument, rounded once. */
static void test_float32_rounds_the_double_result(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static double x[N], xf[N], got[N], want[N];
    arguments(x);
    for (int i = 0; i < N; i++) xf[i] = (float)x[i];
    for (int op = 0; op < OPS; op++) {
        REQUIRE(run(&k, ops[op], AXON_FLOAT32, x, got, N));
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, xf, want, N));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += memcmp(&(float){(float)want[i]}, &(float){(float)got[i]}, 4) != 0;
        CHECK(bad == 0);
    }
    axon_runtime_destroy(k.rt);
}

/* Small arguments alone in a block, then next to a large one (that block runs both forms and selects), then shifted
 * by one element so that the blocks start elsewhere, then one element at a time: the same bits every time. */
static void test_values_do_not_depend_on_neighbours(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { M = 300 };
    static double x[M + 1], alone[M], mixed[M + 1], one;
    for (int i = 0; i < M; i++) x[i] = 0.37 + 7.5 * i / M;
    for (int op = 0; op < OPS; op++) {
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, x, alone, M));
        double y[M + 1];
        y[0] = 30.5;
        memcpy(y + 1, x, sizeof(double) * M);
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, y, mixed, M + 1));
        int bad = 0;
        for (int i = 0; i < M; i++) bad += memcmp(&alone[i], &mixed[i + 1], 8) != 0;
        for (int i = 0; i < M; i += 37) {
            REQUIRE(run(&k, ops[op], AXON_FLOAT64, &x[i], &one, 1));
            bad += memcmp(&alone[i], &one, 8) != 0;
        }
        if (bad) fprintf(stderr, "  %s: %d values changed with their neighbours\n", axon_unary_op_name(ops[op]), bad);
        CHECK(bad == 0);
    }
    axon_runtime_destroy(k.rt);
}

static void test_special_values(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const double x[6] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -2.5};
    double got[6];
    REQUIRE(run(&k, AXON_UNARY_BESSEL_J0, AXON_FLOAT64, x, got, 6));
    CHECK(got[0] == 1 && got[1] == 1 && isnan(got[2]) && isnan(got[3]) && isnan(got[4]));
    CHECK(got[5] == j0(2.5) || fabs(got[5] - j0(2.5)) < 1e-15);
    REQUIRE(run(&k, AXON_UNARY_BESSEL_J1, AXON_FLOAT64, x, got, 6));
    CHECK(got[0] == 0 && !signbit(got[0]) && got[1] == 0 && signbit(got[1]));
    CHECK(isnan(got[2]) && isnan(got[3]) && isnan(got[4]) && fabs(got[5] + j1(2.5)) < 1e-15); /* odd */
    for (int op = 2; op < OPS; op++) {
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, x, got, 6));
        CHECK(got[0] == -INFINITY && got[1] == -INFINITY);
        CHECK(isnan(got[2]) && isnan(got[3]) && isnan(got[4]) && isnan(got[5]));
    }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_float64_matches_glibc);
    RUN(test_float32_rounds_the_double_result);
    RUN(test_values_do_not_depend_on_neighbours);
    RUN(test_special_values);
    return check_report();
}
