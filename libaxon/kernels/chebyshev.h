/* Chebyshev series for the special functions' vector loops (special_bessel_series.c, special_ndtri.c). Never
 * installed. */
#ifndef AXON_KERNELS_CHEBYSHEV_H
#define AXON_KERNELS_CHEBYSHEV_H

#include <math.h>

/* sum_k c_k T_k(t) by Clenshaw's recurrence, whose rounding error stays near sum |c_k| ulps for |t| <= 1. fma keeps
 * one set of bits whether the compiler fuses or not. */
static inline __attribute__((always_inline)) double axon_chebyshev(const double *c, int n, double t) {
    const double t2 = 2 * t;
    double b1 = 0, b2 = 0;
#pragma GCC unroll 40 /* every series fully: the element loops around it vectorize only then */
    for (int k = n - 1; k >= 1; k--) {
        const double b = fma(t2, b1, c[k] - b2);
        b2 = b1;
        b1 = b;
    }
    return fma(t, b1, c[0] - b2);
}
/* The series of a static array c. */
#define AXON_CHEBYSHEV(c, t) axon_chebyshev((c), (int)(sizeof(c) / sizeof((c)[0])), (t))

#endif
