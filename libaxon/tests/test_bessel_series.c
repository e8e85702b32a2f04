/* The Bessel functions of kernels/special_bessel_series.c through axon_kernel_unary, in float64:
 *   - J0, J1, Y0, Y1 against glibc's j0..y1 over [-60, 60] and out to 1e6, within 8 ulps of the functions' scale
 *     max(min(1, 1 / sqrt|x|), |f(x)|) (4.8 measured here, 5.5 against mpmath);
 *   - I0, I1, e^-|x| I0, I1 (and MODIFIED_BESSEL_I0, I1, the same loops) against their power series summed in long
 *     double (all terms positive) up to |x| = 40 and Hankel's asymptotic series beyond, within 12 ulps (9.2 measured
 *     against mpmath, near x = 8 where e^-x I1 / x's series loses most);
 *   - K0, K1, e^x K0, K1 against DLMF 10.31.1's series to 2 and a quadrature beyond, in long double, within 12 ulps
 *     (7.7 measured against mpmath, near the forms' seam at 2);
 * then for all: float32 rounds the double result once, float16 and bfloat16 (the I functions) round it through
 * float; an element's value does not depend on its neighbours (which blocks take the large-argument form) nor on
 * where the blocks start; special values as PyTorch's. */
#include <math.h>
#include <string.h>

#include "../kernels/dtype.h"
#include "axon/pointwise.h"
#include "kernels_check.h"

#define N 4000
#define OPS 14
static const axon_unary_op_t ops[OPS] = {
    AXON_UNARY_BESSEL_J0, AXON_UNARY_BESSEL_J1, AXON_UNARY_BESSEL_Y0,  AXON_UNARY_BESSEL_Y1,
    AXON_UNARY_I0,        AXON_UNARY_I1,        AXON_UNARY_I0E,        AXON_UNARY_I1E,
    AXON_UNARY_MODIFIED_BESSEL_I0,         AXON_UNARY_MODIFIED_BESSEL_I1,
    AXON_UNARY_MODIFIED_BESSEL_K0,         AXON_UNARY_MODIFIED_BESSEL_K1,
    AXON_UNARY_SCALED_MODIFIED_BESSEL_K0,  AXON_UNARY_SCALED_MODIFIED_BESSEL_K1};
#define IS_Y(op) ((op) == 2 || (op) == 3)
#define IS_I(op) ((op) >= 4 && (op) < 10)
#define IS_K(op) ((op) >= 10)
#define EULER 0.577215664901532860606512090082402431L
#define PI_L 3.14159265358979323846264338327950288L

/* e^-|x| I_v(|x|) in long double: the power series to 40 (its largest term there is e^40 / sqrt(80 pi), and the sum
 * as large, so nothing cancels), Hankel's series beyond (its terms fall below 1e-19 before they grow). */
static long double scaled_i(int v, double x) {
    const long double a = fabsl((long double)x);
    if (a <= 40) {
        const long double q = a * a / 4;
        long double term = v ? a / 2 : 1, sum = term;
        for (int k = 1; k < 400; k++) {
            term *= q / ((long double)k * (long double)(k + v));
            sum += term;
        }
        return sum * expl(-a);
    }
    long double term = 1, sum = 1;
    for (int k = 1; k < 30; k++) {
        const long double odd = 2 * k - 1;
        term *= -((long double)(4 * v * v) - odd * odd) / ((long double)k * 8 * a);
        sum += term;
    }
    return sum / sqrtl(2 * 3.14159265358979323846264338327950288L * a);
}

/* e^x K_v(x) for x > 0 in long double: up to 2 the series of DLMF 10.31.1 (times e^x), beyond the integral
 * e^x K_v(x) = int_0^inf e^(-x (cosh t - 1)) cosh(v t) dt by the trapezoidal rule, which converges geometrically
 * for this analytic, doubly exponentially decaying integrand, with cosh t - 1 = 2 sinh(t/2)^2 (no cancellation near
 * t = 0). The integrand's width near 0 is sqrt(2 / x); a step of a fifth of it (at most 0.05) leaves an error near
 * e^(-2 pi^2 25). */
static long double scaled_k(int v, double xd) {
    const long double x = xd;
    if (x <= 2) {
        const long double q = x * x / 4, lg = logl(x / 2);
        long double i = 0, sum = 0, term = 1;
        if (v == 0) {
            long double harmonic = 0;
            i = 1;
            for (int k = 1; k < 60; k++) {
                term *= q / ((long double)k * k);
                harmonic += 1.0L / k;
                i += term;
                sum += harmonic * term;
            }
            return (-(lg + EULER) * i + sum) * expl(x);
        }
        long double psi1 = -EULER, psi2 = 1 - EULER;
        i = x / 2, sum = psi1 + psi2;
        long double iterm = x / 2;
        for (int k = 1; k < 60; k++) {
            term *= q / ((long double)k * (k + 1));
            iterm *= q / ((long double)k * (k + 1));
            psi1 += 1.0L / k;
            psi2 += 1.0L / (k + 1);
            sum += (psi1 + psi2) * term;
            i += iterm;
        }
        return (1 / x + lg * i - x / 4 * sum) * expl(x);
    }
    const long double width = sqrtl(2 / x), h = width / 5 < 0.05L ? width / 5 : 0.05L;
    long double sum = 0.5L;
    for (int j = 1; j < 100000; j++) {
        const long double t = h * j, sh = sinhl(t / 2), f = expl(-2 * x * sh * sh) * (v ? coshl(t) : 1.0L);
        sum += f;
        if (f < 1e-22L * sum) break;
    }
    return sum * h;
}

/* The reference value of ops[op] at x, and the scale its error is measured against. */
static double reference(int op, double x, double *scale) {
    double want;
    switch (op) {
    case 0: want = j0(x); break;
    case 1: want = j1(x); break;
    case 2: want = y0(x); break;
    case 3: want = y1(x); break;
    case 10:
    case 11:
    case 12:
    case 13: {
        const int v = op == 11 || op == 13;
        long double r = scaled_k(v, x);
        if (op < 12) r *= expl(-(long double)x);
        want = (double)r;
        *scale = fabs(want);
        return want;
    }
    default: {
        const int v = op == 5 || op == 7 || op == 9, scaled = op == 6 || op == 7;
        long double r = scaled_i(v, x);
        if (!scaled) r *= expl(fabsl((long double)x));
        want = (double)(v && x < 0 ? -r : r);
        *scale = fabs(want);
        return want;
    }
    }
    const double amplitude = fabs(x) < 1 ? 1 : 1 / sqrt(fabs(x));
    *scale = fabs(want) > amplitude ? fabs(want) : amplitude;
    return want;
}

/* out[i] = op(x[i]) for n elements of dtype d, from and to double. */
static int run(kc_dev_t *k, axon_unary_op_t op, axon_dtype_t d, const double *x, double *out, int64_t n) {
    const size_t es = axon_dtype_size(d);
    static unsigned char host[N * 8 + 64];
    for (int64_t i = 0; i < n; i++) {
        if (d == AXON_FLOAT32) {
            const float f = (float)x[i];
            memcpy(host + i * 4, &f, 4);
        } else if (d == AXON_FLOAT16 || d == AXON_BFLOAT16) {
            const uint16_t h = d == AXON_FLOAT16 ? axon_f32_to_f16((float)x[i]) : axon_f32_to_bf16((float)x[i]);
            memcpy(host + i * 2, &h, 2);
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
        } else if (d == AXON_FLOAT16 || d == AXON_BFLOAT16) {
            uint16_t h;
            memcpy(&h, host + i * 2, 2);
            out[i] = d == AXON_FLOAT16 ? axon_f16_to_f32(h) : axon_bf16_to_f32(h);
        } else {
            memcpy(&out[i], host + i * 8, 8);
        }
    }
    axon_mem_free(k->dev, dx);
    axon_mem_free(k->dev, dout);
    return ok;
}

/* Arguments: a dense sweep of [-60, 60] (both forms and their seam at 8), then a geometric one to 1e6 (to 700 for
 * the unscaled I, which overflows past 713.98). */
static void arguments(double *x, double top) {
    for (int i = 0; i < N / 2; i++) x[i] = -60 + 120.0 * i / (N / 2 - 1);
    for (int i = N / 2; i < N; i++) x[i] = 60 * pow(top / 60, (double)(i - N / 2) / (N / 2 - 1));
    x[7] = 8.0, x[8] = nextafter(8.0, 0), x[9] = nextafter(8.0, 9), x[10] = 1e-300, x[11] = 0x1p-27;
}
static double top_of(int op) { return op == 4 || op == 5 || op == 8 || op == 9 ? 700 : 1e6; }

static void test_float64_matches_the_references(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static double x[N], got[N];
    for (int op = 0; op < OPS; op++) {
        arguments(x, top_of(op));
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, x, got, N));
        double worst = 0, worst_x = 0;
        for (int i = 0; i < N; i++) {
            if ((IS_Y(op) || IS_K(op)) && x[i] <= 0) continue; /* the special values below */
            if (IS_K(op) && op < 12 && x[i] > 700) continue;   /* K0, K1 near the bottom of double: subnormal */
            double scale;
            const double want = reference(op, x[i], &scale);
            const double e = scale == 0 ? (got[i] == 0 ? 0 : INFINITY) : fabs(got[i] - want) / scale / 0x1p-52;
            if (!(e <= worst)) worst = e, worst_x = x[i];
        }
        const double limit = IS_Y(op) || op < 2 ? 8 : 12;
        if (worst > limit)
            fprintf(stderr, "  %s: %.1f ulps of scale at %.17g\n", axon_unary_op_name(ops[op]), worst, worst_x);
        CHECK(worst <= limit);
    }
    axon_runtime_destroy(k.rt);
}

/* float32: the float64 result at the float argument, rounded once; the half types (the I functions take them): the
 * float32 result at the half argument, rounded to the half type. */
static void test_narrow_dtypes_round_the_double_result(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static double x[N], xf[N], got[N], want[N];
    for (int op = 0; op < OPS; op++) {
        arguments(x, top_of(op));
        for (int i = 0; i < N; i++) xf[i] = (float)x[i];
        REQUIRE(run(&k, ops[op], AXON_FLOAT32, x, got, N));
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, xf, want, N));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += memcmp(&(float){(float)want[i]}, &(float){(float)got[i]}, 4) != 0;
        CHECK(bad == 0);
        if (op < 4 || op >= 8) continue; /* J, Y, K and the MODIFIED_BESSEL ops are float32 and float64 only */
        for (int half = 0; half < 2; half++) {
            const axon_dtype_t d = half ? AXON_BFLOAT16 : AXON_FLOAT16;
            static double xh[N];
            for (int i = 0; i < N; i++) {
                const float f = (float)x[i];
                xh[i] = half ? axon_bf16_to_f32(axon_f32_to_bf16(f)) : axon_f16_to_f32(axon_f32_to_f16(f));
            }
            REQUIRE(run(&k, ops[op], d, x, got, N));
            REQUIRE(run(&k, ops[op], AXON_FLOAT32, xh, want, N));
            bad = 0;
            for (int i = 0; i < N; i++) {
                const uint16_t g = half ? axon_f32_to_bf16((float)got[i]) : axon_f32_to_f16((float)got[i]);
                const uint16_t w = half ? axon_f32_to_bf16((float)want[i]) : axon_f32_to_f16((float)want[i]);
                bad += g != w && !(isnan(got[i]) && isnan(want[i]));
            }
            CHECK(bad == 0);
        }
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
    const double x[8] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -2.5, 713.9, 714.0};
    double got[8];
    REQUIRE(run(&k, AXON_UNARY_BESSEL_J0, AXON_FLOAT64, x, got, 6));
    CHECK(got[0] == 1 && got[1] == 1 && isnan(got[2]) && isnan(got[3]) && isnan(got[4]));
    CHECK(fabs(got[5] - j0(2.5)) < 1e-15);
    REQUIRE(run(&k, AXON_UNARY_BESSEL_J1, AXON_FLOAT64, x, got, 6));
    CHECK(got[0] == 0 && !signbit(got[0]) && got[1] == 0 && signbit(got[1]));
    CHECK(isnan(got[2]) && isnan(got[3]) && isnan(got[4]) && fabs(got[5] + j1(2.5)) < 1e-15); /* odd */
    for (int op = 2; op < 4; op++) {
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, x, got, 6));
        CHECK(got[0] == -INFINITY && got[1] == -INFINITY);
        CHECK(isnan(got[2]) && isnan(got[3]) && isnan(got[4]) && isnan(got[5]));
    }
    /* I: even and odd, NaN at +-inf as PyTorch's, finite to 713.98 (where e^x alone overflows past 709.78) */
    REQUIRE(run(&k, AXON_UNARY_I0, AXON_FLOAT64, x, got, 8));
    CHECK(got[0] == 1 && got[1] == 1 && isnan(got[2]) && isnan(got[3]) && isnan(got[4]));
    CHECK(isfinite(got[6]) && got[6] > 1e308 && got[7] == INFINITY);
    REQUIRE(run(&k, AXON_UNARY_I1, AXON_FLOAT64, x, got, 8));
    CHECK(got[0] == 0 && !signbit(got[0]) && got[1] == 0 && !signbit(got[1]) && isnan(got[2]) && isnan(got[3]));
    CHECK(got[5] < 0 && isfinite(got[6]) && got[7] == INFINITY);
    REQUIRE(run(&k, AXON_UNARY_I0E, AXON_FLOAT64, x, got, 8));
    CHECK(got[0] == 1 && got[2] == 0 && got[3] == 0 && isnan(got[4]) && got[7] > 0.0149 && got[7] < 0.0150);
    REQUIRE(run(&k, AXON_UNARY_I1E, AXON_FLOAT64, x, got, 8));
    CHECK(got[1] == 0 && !signbit(got[1]) && got[2] == 0 && got[3] == 0 && signbit(got[3]) && got[5] < 0);
    /* K: inf at 0 (either sign), NaN below, 0 at inf; K itself underflows to 0 near 745, e^x K does not */
    for (int op = 10; op < 14; op++) {
        REQUIRE(run(&k, ops[op], AXON_FLOAT64, x, got, 8));
        CHECK(got[0] == INFINITY && got[1] == INFINITY && got[2] == 0 && isnan(got[3]) && isnan(got[4]));
        CHECK(isnan(got[5]) && (op < 12 ? got[7] < 1e-300 : got[7] > 0.04 && got[7] < 0.05));
    }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_float64_matches_the_references);
    RUN(test_narrow_dtypes_round_the_double_result);
    RUN(test_values_do_not_depend_on_neighbours);
    RUN(test_special_values);
    return check_report();
}
