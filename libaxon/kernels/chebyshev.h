/* Chebyshev series for the special functions' vector loops (special_bessel_series.c, special_ndtri.c). Never
 * installed. */
#ifndef AXON_KERNELS_CHEBYSHEV_H
#define AXON_KERNELS_CHEBYSHEV_H

#include <math.h>

/* r[i] = sum_k c_k T_k(t[i]) for len values (a multiple of AXON_CHEBYSHEV_LANES) by Clenshaw's recurrence, whose
 * rounding error stays near sum |c_k| ulps for |t| <= 1; fma keeps one set of bits whether the compiler fuses or not.
 * The terms run outermost over AXON_CHEBYSHEV_LANES values at a time, so that each step is 16 independent
 * recurrences (four AVX2 vectors) instead of one chain of dependent FMAs per vector, whose 4-cycle latency bounded
 * the element loops (a 30-term series over 64 doubles: 3.9 -> 2.2 ns a value on Zen 3; 8 lanes gave 3.0, 32 spilled,
 * 4.2). Every series is unrolled fully (the pragma). */
#define AXON_CHEBYSHEV_LANES 16
static inline __attribute__((always_inline)) void axon_chebyshev_lanes(const double *c, int n, const double *t,
                                                                       double *r, int len) {
    for (int i0 = 0; i0 < len; i0 += AXON_CHEBYSHEV_LANES) {
        double b1[AXON_CHEBYSHEV_LANES] = {0}, b2[AXON_CHEBYSHEV_LANES] = {0}, t2[AXON_CHEBYSHEV_LANES];
        for (int i = 0; i < AXON_CHEBYSHEV_LANES; i++) t2[i] = 2 * t[i0 + i];
#pragma GCC unroll 40
        for (int k = n - 1; k >= 1; k--)
            for (int i = 0; i < AXON_CHEBYSHEV_LANES; i++) {
                const double b = fma(t2[i], b1[i], c[k] - b2[i]);
                b2[i] = b1[i];
                b1[i] = b;
            }
        for (int i = 0; i < AXON_CHEBYSHEV_LANES; i++) r[i0 + i] = fma(t[i0 + i], b1[i], c[0] - b2[i]);
    }
}
/* The series of a static array c over a block. */
#define AXON_CHEBYSHEV_BLOCK(c, t, r, len) \
    axon_chebyshev_lanes((c), (int)(sizeof(c) / sizeof((c)[0])), (t), (r), (len))

#endif
