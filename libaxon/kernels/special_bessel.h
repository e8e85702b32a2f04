/* Modified Bessel functions K0, K1 and the spherical j0 of torch.special in double (the float dtypes compute in
 * double and round once; J0, J1, Y0, Y1, I0 and I1 are Chebyshev series in loops of their own,
 * special_bessel_series.c). Never installed.
 *   - K0, K1 (and e^x K): up to x = 1 the series of DLMF 10.31.1 (with I0, I1 as their power series, all of whose
 *     terms are positive); to x = 30 the integral
 *     e^x K_v(x) = int_0^inf e^(-x (cosh t - 1)) cosh(v t) dt by the trapezoidal rule, which converges geometrically
 *     for this analytic, doubly-exponentially decaying integrand (step 0.1: error near e^(-pi^2 / 0.1)); beyond,
 *     the asymptotic series.
 *   - the spherical j0: sin(x) / x, its Taylor series near 0. */
#ifndef AXON_KERNELS_SPECIAL_BESSEL_H
#define AXON_KERNELS_SPECIAL_BESSEL_H

#include <math.h>

#define AXON_EULER_GAMMA 0.57721566490153286061
#define AXON_BESSEL_SERIES_MAX 30.0

/* sum_k (x^2 / 4)^k / (k! (k + v)!) for v = 0, 1 (times (x / 2)^v: I_v(x) for x >= 0). */
static inline double axon_bessel_i_series(double x, int v) {
    const double q = x * x / 4;
    double term = v ? x / 2 : 1, sum = term;
    for (int k = 1; k < 500 && term > sum * 1e-18; k++) {
        term *= q / ((double)k * (double)(k + v));
        sum += term;
    }
    return sum;
}

/* Hankel's series sum_k s^k a_k(v) / x^k with a_k(v) = prod_{j <= k} (4 v^2 - (2j - 1)^2) / (k! 8^k): s = 1 gives
 * e^x K_v(x) sqrt(2 x / pi) (s = -1 would give e^-x I_v(x) sqrt(2 pi x)). For x > 30 the terms shrink past k = 40. */
static inline double axon_bessel_hankel(double x, int v, double s) {
    double term = 1, sum = 1;
    for (int k = 1; k < 60; k++) {
        const double odd = (double)(2 * k - 1);
        term *= s * ((double)(4 * v * v) - odd * odd) / ((double)k * 8 * x);
        sum += term;
        if (fabs(term) < 1e-18 * fabs(sum)) break;
    }
    return sum;
}

/* K_v(x) for 0 < x <= 1 by DLMF 10.31.1: K_0 = -(ln(x/2) + gamma) I_0 + sum_k H_k (x^2/4)^k / k!^2 and
 * K_1 = 1/x + ln(x/2) I_1 - (x/4) sum_k (psi(k + 1) + psi(k + 2)) (x^2/4)^k / (k! (k + 1)!). */
static inline double axon_bessel_k_series(double x, int v) {
    const double q = x * x / 4, lg = log(x / 2);
    if (v == 0) {
        double term = 1, harmonic = 0, sum = 0;
        for (int k = 1; k < 100; k++) {
            term *= q / ((double)k * (double)k);
            harmonic += 1.0 / k;
            sum += harmonic * term;
            if (term * harmonic < 1e-18 * fabs(sum)) break;
        }
        return -(lg + AXON_EULER_GAMMA) * axon_bessel_i_series(x, 0) + sum;
    }
    double term = 1, psi1 = -AXON_EULER_GAMMA, psi2 = 1 - AXON_EULER_GAMMA, sum = psi1 + psi2;
    for (int k = 1; k < 100; k++) {
        term *= q / ((double)k * (double)(k + 1));
        psi1 += 1.0 / k;
        psi2 += 1.0 / (k + 1);
        sum += (psi1 + psi2) * term;
        if (fabs((psi1 + psi2) * term) < 1e-18 * fabs(sum)) break;
    }
    return 1 / x + lg * axon_bessel_i_series(x, 1) - x / 4 * sum;
}

/* e^x K_v(x) for 1 < x <= 30: the trapezoidal rule on int_0^inf e^(-x (cosh t - 1)) cosh(v t) dt, with
 * cosh t - 1 = 2 sinh(t/2)^2 (no cancellation near t = 0); stops when the integrand is below 1e-18 of the sum. */
static inline double axon_bessel_k_integral(double x, int v) {
    const double h = 0.1;
    double sum = 0.5;
    for (int j = 1; j < 2000; j++) {
        const double t = h * j, s = sinh(t / 2);
        const double f = exp(-2 * x * s * s) * (v ? cosh(t) : 1.0);
        sum += f;
        if (f < 1e-18 * sum) break;
    }
    return sum * h;
}

/* e^x K_v(x), v = 0 or 1: inf at 0, NaN below. */
static inline double axon_bessel_k_scaled(double x, int v) {
    if (x != x || x < 0) return NAN;
    if (x == 0) return INFINITY;
    if (x == INFINITY) return 0;
    if (x <= 1) return axon_bessel_k_series(x, v) * exp(x);
    if (x <= AXON_BESSEL_SERIES_MAX) return axon_bessel_k_integral(x, v);
    return axon_bessel_hankel(x, v, 1.0) * sqrt(M_PI / (2 * x));
}

static inline double axon_bessel_k(double x, int v) {
    if (x != x || x < 0) return NAN;
    if (x == 0) return INFINITY;
    if (x <= 1) return axon_bessel_k_series(x, v);
    return x > 746 ? 0.0 : axon_bessel_k_scaled(x, v) * exp(-x);
}

/* sin(x) / x; 1 - x^2/6 + x^4/120 - ... below 0.5 (where the quotient would round twice), 0 at +-inf. */
static inline double axon_spherical_bessel_j0(double x) {
    if (isinf(x)) return 0;
    if (fabs(x) < 0.5) {
        const double q = x * x;
        return 1 + q * (-1.0 / 6 + q * (1.0 / 120 + q * (-1.0 / 5040 + q * (1.0 / 362880 + q * (-1.0 / 39916800 +
               q * (1.0 / 6227020800.0))))));
    }
    return sin(x) / x;
}

#endif
