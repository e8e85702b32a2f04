/* The normal distribution's special functions of torch.special in double (the float dtypes compute in double and
 * round once): erfcx(x) = e^(x^2) erfc(x), log_ndtr(x) = log Phi(x) and ndtri(p) = Phi^-1(p), with PyTorch's values
 * at the ends of their domains. Never installed. */
#ifndef AXON_KERNELS_SPECIAL_ERF_H
#define AXON_KERNELS_SPECIAL_ERF_H

#include <math.h>

#define AXON_SQRT2 1.41421356237309504880
#define AXON_SQRT_PI 1.77245385090551602730
#define AXON_SQRT_2PI 2.50662827463100050242

/* e^(x^2) with x^2 carried as hi + lo (one fma), so that the rounding of x^2 (up to 676 ulps of e^(x^2) at x = 26)
 * does not reach the result. */
static inline double axon_exp_square(double x) {
    const double hi = x * x, lo = fma(x, x, -hi);
    return exp(hi) * (1 + lo);
}

/* erfcx for x >= 0: e^(x^2) erfc(x) while erfc(x) is a normal double (x < 26), then the asymptotic series
 * 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k, whose terms shrink by about k / 676 each there. */
static inline double axon_erfcx_nonnegative(double x) {
    if (x < 26) return axon_exp_square(x) * erfc(x);
    if (x == INFINITY) return 0;
    const double w = 1 / (2 * x * x);
    double term = 1, sum = 1;
    for (int k = 1; k < 30; k++) {
        term *= -(double)(2 * k - 1) * w;
        sum += term;
        if (fabs(term) < 1e-18) break;
    }
    return sum / (x * AXON_SQRT_PI);
}

/* erfcx(-x) = 2 e^(x^2) - erfcx(x): inf past about x = -26.6, where e^(x^2) overflows. */
static inline double axon_erfcx(double x) {
    if (x != x) return x;
    if (x >= 0) return axon_erfcx_nonnegative(x);
    if (x < -26.7) return INFINITY;
    return 2 * axon_exp_square(x) - axon_erfcx_nonnegative(-x);
}

/* log Phi(x), PyTorch's split: below -1 through erfcx (Phi's tail underflows long before its log does), above it
 * log1p of the upper tail. */
static inline double axon_log_ndtr(double x) {
    const double t = x / AXON_SQRT2;
    if (x < -1) return log(axon_erfcx(-t) / 2) - t * t;
    return log1p(-erfc(t) / 2);
}

/* Phi^-1(p): a first guess good to 4.5e-4 (Abramowitz and Stegun 26.2.23) refined by three Halley steps, which
 * triple the correct digits each. The steps solve for the smaller tail q = min(p, 1 - p) (exact: 1 - p loses nothing
 * for p >= 1/2) through erfc, so that a tiny q keeps its relative precision, or, near the median, for p - 1/2
 * (also exact) through erf, so that a result near 0 does. */
static inline double axon_ndtri(double p) {
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
static inline double axon_erfinv(double y) {
    if (y != y || y < -1 || y > 1) return NAN;
    const double a = fabs(y);
    if (a > 0.5) return copysign(-axon_ndtri((1 - a) / 2) / AXON_SQRT2, y);
    const double y2 = y * y;
    double x = AXON_SQRT_PI / 2 * y * (1 + y2 * (0.26179938779914943653 + y2 * 0.14393173084921978));
    for (int i = 0; i < 2; i++) {
        const double u = (erf(x) - y) / (2 / AXON_SQRT_PI * exp(-x * x)); /* f / f'; f'' / f' = -2x */
        x -= u / (1 + x * u);
    }
    return x;
}

#endif
