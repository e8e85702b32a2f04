/* The normal distribution's special functions of torch.special in double (the float dtypes compute in double and
 * round once): erfcx(x) = e^(x^2) erfc(x) and log_ndtr(x) = log Phi(x), with PyTorch's values at the ends of their
 * domains (ndtri and erfinv: special_ndtri.c). Never installed. */
#ifndef AXON_KERNELS_SPECIAL_ERF_H
#define AXON_KERNELS_SPECIAL_ERF_H

#include <math.h>

#define AXON_SQRT2 1.41421356237309504880
#define AXON_SQRT_PI 1.77245385090551602730

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

#endif
