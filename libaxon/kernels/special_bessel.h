/* The spherical Bessel function j0 of torch.special in double (the float dtypes compute in double and round once;
 * the other Bessel functions are Chebyshev series in loops of their own, special_bessel_series.c). Never installed. */
#ifndef AXON_KERNELS_SPECIAL_BESSEL_H
#define AXON_KERNELS_SPECIAL_BESSEL_H

#include <math.h>

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
