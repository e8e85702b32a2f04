/* ndtri and float64 erfinv (kernels/special_ndtri.c, Chebyshev series in four ranges) through axon_kernel_unary:
 * against an independent method, a first guess refined by Halley steps through erf and erfc (libaxon's before session
 * 40, kept here as the reference), in float64 within 8 ulps (2.6 measured against mpmath) from the median to 1e-300
 * on both sides, across every range's ends, and against mpmath's values for subnormal p; float32 rounds the double
 * result; values do not depend on their neighbours; special values as PyTorch's. */
#include <math.h>
#include <string.h>

#include "../kernels/special_erf.h"
#include "axon/pointwise.h"
#include "kernels_check.h"

#define N 5000
#define AXON_SQRT_2PI 2.50662827463100050242

/* Phi^-1(p): a first guess good to 4.5e-4 (Abramowitz and Stegun 26.2.23) refined by three Halley steps, which
 * triple the correct digits each. The steps solve for the smaller tail q = min(p, 1 - p) (exact: 1 - p loses nothing
 * for p >= 1/2) through erfc, so that a tiny q keeps its relative precision, or, near the median, for p - 1/2
 * (also exact) through erf, so that a result near 0 does. */
static double halley_ndtri(double p) {
    if (p != p || p < 0 || p > 1) return NAN;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    const double q = p <= 0.5 ? p : 1 - p;
    const double t = sqrt(-2 * log(q));
    double z = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
    const int central = p >= 0.25 && p <= 0.75;
    const double d = p - 0.5;
    const double target = central ? (p <= 0.5 ? d : -d) : q;   /* z <= 0 solves for the lower side */
    for (int i = 0; i < 3; i++) {
        const double f = central ? 0.5 * erf(z / AXON_SQRT2) - target : 0.5 * erfc(-z / AXON_SQRT2) - target;
        const double u = f / (exp(-z * z / 2) / AXON_SQRT_2PI);
        z -= u / (1 + z * u / 2);
    }
    return p <= 0.5 ? z : -z;
}

/* erf^-1(y). Past |y| = 1/2 through the tail: erfc(x) = q with q = 1 - |y| (exact there) is x = -ndtri(q / 2) /
 * sqrt 2, which keeps a tiny q's relative precision. Inside, Halley steps on erf(x) = y from the series' first three
 * terms, good to 8e-4 at 1/2: two steps (the error cubes each time) reach double precision, and a small y keeps its
 * relative precision (erfinv(1e-20) is not 0). */
static double halley_erfinv(double y) {
    if (y != y || y < -1 || y > 1) return NAN;
    const double a = fabs(y);
    if (a > 0.5) return copysign(-halley_ndtri((1 - a) / 2) / AXON_SQRT2, y);
    const double y2 = y * y;
    double x = AXON_SQRT_PI / 2 * y * (1 + y2 * (0.26179938779914943653 + y2 * 0.14393173084921978));
    for (int i = 0; i < 2; i++) {
        const double u = (erf(x) - y) / (2 / AXON_SQRT_PI * exp(-x * x)); /* f / f'; f'' / f' = -2x */
        x -= u / (1 + x * u);
    }
    return x;
}


static int run_op(kc_dev_t *k, axon_unary_op_t op, axon_dtype_t d, const double *p, double *out, int64_t n) {
    static unsigned char host[N * 8];
    for (int64_t i = 0; i < n; i++) {
        if (d == AXON_FLOAT32) {
            const float f = (float)p[i];
            memcpy(host + i * 4, &f, 4);
        } else {
            memcpy(host + i * 8, &p[i], 8);
        }
    }
    const size_t es = axon_dtype_size(d);
    void *dp = kc_upload(k, host, (size_t)n * es), *dout = kc_upload(k, NULL, (size_t)n * es);
    if (!dp || !dout) return 0;
    axon_tensor_t tp = kc_tensor(dp, d, 1, &n, NULL), to = kc_tensor(dout, d, 1, &n, NULL);
    axon_op_params_t prm = axon_op_params_default();
    const int ok = axon_kernel_unary(k->s, op, &to, &tp, &prm) == AXON_OK &&
                   kc_download(k, host, dout, (size_t)n * es);
    for (int64_t i = 0; ok && i < n; i++) {
        if (d == AXON_FLOAT32) {
            float f;
            memcpy(&f, host + i * 4, 4);
            out[i] = f;
        } else {
            memcpy(&out[i], host + i * 8, 8);
        }
    }
    axon_mem_free(k->dev, dp);
    axon_mem_free(k->dev, dout);
    return ok;
}

static int run(kc_dev_t *k, axon_dtype_t d, const double *p, double *out, int64_t n) {
    return run_op(k, AXON_UNARY_NDTRI, d, p, out, n);
}

/* p from the median out: a linear sweep of (0, 1), then 10^-x and 1 - 10^-x down to the subnormals (the upper tail
 * stops near 1e-16, where 1 - p is the last representable step), plus each range's ends. */
static int probabilities(double *p) {
    int n = 0;
    for (int i = 1; i < 2000; i++) p[n++] = i / 2000.0;
    for (int i = 0; i < 1500; i++) p[n++] = pow(10, -1 - 322.0 * i / 1499);
    for (int i = 0; i < 1000; i++) p[n++] = 1 - pow(10, -1 - 15.0 * i / 999);
    const double ends[] = {0.2, 0.8, nextafter(0.2, 0), nextafter(0.8, 1), 0.5, 3.3546262790251185e-4, 1.2664e-14,
                           4.9406564584124654e-324, 0.5 + 0x1p-53};
    for (int i = 0; i < (int)(sizeof ends / sizeof ends[0]); i++) p[n++] = ends[i];
    return n;
}

static void test_float64_matches_the_halley_method(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static double p[N], got[N];
    const int n = probabilities(p);
    REQUIRE(run(&k, AXON_FLOAT64, p, got, n));
    double worst = 0, worst_p = 0;
    for (int i = 0; i < n; i++) {
        /* the Halley steps' erfc loses bits once its result is subnormal: those p are checked against mpmath below */
        if (p[i] < 1e-300) continue;
        const double want = halley_ndtri(p[i]);
        if (want == 0) {
            CHECK(got[i] == 0);
            continue;
        }
        const double e = fabs(got[i] - want) / fabs(want) / 0x1p-52;
        if (!(e <= worst)) worst = e, worst_p = p[i];
    }
    if (worst > 8) fprintf(stderr, "  ndtri: %.1f ulps at p = %.17g\n", worst, worst_p);
    CHECK(worst <= 8);
    /* subnormal p, against mpmath at 40 digits */
    const double tiny[3] = {1e-310, 4.9406564584124654e-324, 1.1857575500189917e-322};
    const double tiny_want[3] = {-37.663060331949523732, -38.467405617144346251, -38.384755870012011272};
    double tiny_got[3];
    REQUIRE(run(&k, AXON_FLOAT64, tiny, tiny_got, 3));
    for (int i = 0; i < 3; i++) CHECK(fabs(tiny_got[i] - tiny_want[i]) <= 8 * 0x1p-52 * fabs(tiny_want[i]));
    /* float32: the double result at the float argument, rounded once */
    static double pf[N], want32[N];
    for (int i = 0; i < n; i++) pf[i] = (float)p[i];
    REQUIRE(run(&k, AXON_FLOAT32, p, got, n));
    REQUIRE(run(&k, AXON_FLOAT64, pf, want32, n));
    int bad = 0;
    for (int i = 0; i < n; i++) bad += (float)got[i] != (float)want32[i] && !(isnan(got[i]) && isnan(want32[i]));
    CHECK(bad == 0);
    axon_runtime_destroy(k.rt);
}

/* Central values alone in a block, then next to deep-tail ones (more ranges in that block), shifted by one element,
 * then one element at a time: the same bits every time. */
static void test_values_do_not_depend_on_neighbours(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { M = 300 };
    static double p[M + 1], alone[M], mixed[M + 1], one;
    for (int i = 0; i < M; i++) p[i] = 0.21 + 0.58 * i / M;
    REQUIRE(run(&k, AXON_FLOAT64, p, alone, M));
    double q[M + 1];
    q[0] = 1e-200;
    memcpy(q + 1, p, sizeof(double) * M);
    REQUIRE(run(&k, AXON_FLOAT64, q, mixed, M + 1));
    int bad = 0;
    for (int i = 0; i < M; i++) bad += memcmp(&alone[i], &mixed[i + 1], 8) != 0;
    for (int i = 0; i < M; i += 37) {
        REQUIRE(run(&k, AXON_FLOAT64, &p[i], &one, 1));
        bad += memcmp(&alone[i], &one, 8) != 0;
    }
    CHECK(bad == 0);
    axon_runtime_destroy(k.rt);
}

static void test_special_values(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const double p[8] = {0.0, -0.0, 1.0, -0.1, 1.5, NAN, INFINITY, 0.5};
    double got[8];
    REQUIRE(run(&k, AXON_FLOAT64, p, got, 8));
    CHECK(got[0] == -INFINITY && got[1] == -INFINITY && got[2] == INFINITY);
    CHECK(isnan(got[3]) && isnan(got[4]) && isnan(got[5]) && isnan(got[6]) && got[7] == 0);
    axon_runtime_destroy(k.rt);
}

/* erfinv in float64: y from 0 out to 1 on both sides (-1e-300 and 1 - 2^-53 included), within 8 ulps. */
static void test_float64_erfinv_matches_the_halley_method(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static double y[N], got[N];
    int n = 0;
    for (int i = 0; i < 1000; i++) y[n++] = -0.999 + 1.998 * i / 999;
    for (int i = 0; i < 1000; i++) y[n++] = (i & 1 ? -1 : 1) * pow(10, -300.0 * i / 999);
    for (int i = 0; i < 1000; i++) y[n++] = (i & 1 ? -1 : 1) * (1 - pow(10, -1 - 15.0 * i / 999));
    y[n++] = 1 - 0x1p-53, y[n++] = 0.5, y[n++] = nextafter(0.5, 0), y[n++] = 0.6;
    REQUIRE(run_op(&k, AXON_UNARY_ERFINV, AXON_FLOAT64, y, got, n));
    double worst = 0, worst_y = 0;
    for (int i = 0; i < n; i++) {
        const double want = halley_erfinv(y[i]), e = fabs(got[i] - want) / fabs(want) / 0x1p-52;
        if (!(e <= worst)) worst = e, worst_y = y[i];
    }
    if (worst > 8) fprintf(stderr, "  erfinv: %.1f ulps at y = %.17g\n", worst, worst_y);
    CHECK(worst <= 8);
    const double sp[7] = {1.0, -1.0, 1.5, -2.0, NAN, 0.0, -0.0};
    double r[7];
    REQUIRE(run_op(&k, AXON_UNARY_ERFINV, AXON_FLOAT64, sp, r, 7));
    CHECK(r[0] == INFINITY && r[1] == -INFINITY && isnan(r[2]) && isnan(r[3]) && isnan(r[4]));
    CHECK(r[5] == 0 && !signbit(r[5]) && r[6] == 0 && signbit(r[6]));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_float64_matches_the_halley_method);
    RUN(test_float64_erfinv_matches_the_halley_method);
    RUN(test_values_do_not_depend_on_neighbours);
    RUN(test_special_values);
    return check_report();
}
