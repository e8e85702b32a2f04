/* The Airy function Ai of torch.special.airy_ai in double (the float dtypes compute in double and round once).
 * Never installed.
 *
 * Three regions, each where its method loses least:
 *   x > 1            Ai(x) = sqrt(x / 3) / pi K_{1/3}(z), z = 2/3 x^(3/2), with K_nu(z) = int_0^inf e^(-z cosh t)
 *                    cosh(nu t) dt summed by the trapezoidal rule: the integrand is analytic in the strip
 *                    |Im t| < pi/2 and decays like e^(-z e^t / 2), so with a step of min(0.2, 0.7 / sqrt(z)) the
 *                    sum is exact to double precision; terms stop once e^(-z (cosh t - 1)) < e^-42.
 *   -6.9 <= x <= 1   the Maclaurin series Ai = c1 f(x) - c2 g(x) (DLMF 9.4.1), whose terms grow like e^z before
 *                    they cancel: about 1e-12 absolute at -6.9.
 *   x < -6.9         the asymptotic expansion (DLMF 9.7.9) in powers of 1/z, summed while its terms fall: the
 *                    smallest term is below 1e-13 there.
 * Against mpmath at 30 digits the error stays below 5e-12 absolute over [-30, 30] (relative, except near the zeros
 * on the negative axis). PyTorch CPU's Cephes code is less accurate on [-3.2, -2.09] (up to 3e-6 absolute); it
 * returns NaN at both infinities, and so does this. */
#ifndef AXON_KERNELS_SPECIAL_AIRY_H
#define AXON_KERNELS_SPECIAL_AIRY_H

#include <math.h>

#define AXON_AIRY_STEP 0.2    /* the trapezoidal rule's largest step */
#define AXON_AIRY_TERMS 32    /* enough for z (cosh(k h) - 1) to pass 42 at every z >= 2/3 */

static inline double axon_airy_ai(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    if (x > 1) {
        const double z = 2.0 / 3.0 * x * sqrt(x);
        /* The step: the integrand narrows like e^(-z t^2 / 2) as z grows, and the rule's error for such a peak is
         * about e^(-2 pi^2 / (z h^2)): at most e^-40 with h = 0.7 / sqrt(z), and 0.2 bounds it for small z. */
        const double h = fmin(AXON_AIRY_STEP, 0.7 / sqrt(z));
        /* c = cosh(k h) - 1 and d = cosh(k h / 3) by their recurrences (cosh((k+1) h) = 2 cosh(h) cosh(k h) -
         * cosh((k-1) h)), from their values at h (cosh(h) - 1 as 2 sinh(h / 2)^2, without cancellation) */
        const double s1 = sinh(h / 2), c1 = 2 * s1 * s1, d1 = cosh(h / 3);
        double sum = 0.5, c_prev = 0, c = c1, d_prev = 1, d = d1;
        for (int k = 1; k <= AXON_AIRY_TERMS && z * c < 42; k++) {
            sum += exp(-z * c) * d;
            const double c_next = 2 * (c1 + 1) * c - c_prev + 2 * c1, d_next = 2 * d1 * d - d_prev;
            c_prev = c, c = c_next, d_prev = d, d = d_next;
        }
        /* the factor e^-z joined in the exponent, so that a result near the underflow keeps its precision */
        return exp(log(sqrt(x / 3) / 3.14159265358979323846 * h * sum) - z);
    }
    if (x >= -6.9) {
        const double c1 = 0.355028053887817239260, c2 = 0.258819403792806798405; /* Ai(0), -Ai'(0) */
        /* the terms' ratios x^3 / ((3k - 1) 3k) and x^3 / (3k (3k + 1)), the divisions done at compile time */
#define AXON_AIRY_R(k) {1.0 / ((3.0 * (k) - 1) * (3.0 * (k))), 1.0 / ((3.0 * (k)) * (3.0 * (k) + 1))}
        static const double r[40][2] = {
            AXON_AIRY_R(1), AXON_AIRY_R(2), AXON_AIRY_R(3), AXON_AIRY_R(4), AXON_AIRY_R(5), AXON_AIRY_R(6),
            AXON_AIRY_R(7), AXON_AIRY_R(8), AXON_AIRY_R(9), AXON_AIRY_R(10), AXON_AIRY_R(11), AXON_AIRY_R(12),
            AXON_AIRY_R(13), AXON_AIRY_R(14), AXON_AIRY_R(15), AXON_AIRY_R(16), AXON_AIRY_R(17), AXON_AIRY_R(18),
            AXON_AIRY_R(19), AXON_AIRY_R(20), AXON_AIRY_R(21), AXON_AIRY_R(22), AXON_AIRY_R(23), AXON_AIRY_R(24),
            AXON_AIRY_R(25), AXON_AIRY_R(26), AXON_AIRY_R(27), AXON_AIRY_R(28), AXON_AIRY_R(29), AXON_AIRY_R(30),
            AXON_AIRY_R(31), AXON_AIRY_R(32), AXON_AIRY_R(33), AXON_AIRY_R(34), AXON_AIRY_R(35), AXON_AIRY_R(36),
            AXON_AIRY_R(37), AXON_AIRY_R(38), AXON_AIRY_R(39), AXON_AIRY_R(40),
        };
#undef AXON_AIRY_R
        const double x3 = x * x * x;
        double f = 1, g = x, tf = 1, tg = x;
        for (int k = 0; k < 40; k++) { /* 20 terms reach 1e-17 at -6.9 */
            tf *= x3 * r[k][0];
            tg *= x3 * r[k][1];
            f += tf, g += tg;
            if (fabs(tf) <= 1e-17 * fabs(f) && fabs(tg) <= 1e-17 * fabs(g)) break;
        }
        return c1 * f - c2 * g;
    }
    const double t = -x, z = 2.0 / 3.0 * t * sqrt(t), iz = 1 / z;
    double p = 0, q = 0, u = 1, power = 1, last = INFINITY;
    for (int k = 0; k < 40; k++) {
        /* u_(2k) and u_(2k+1) of DLMF 9.7.2: u_j = (6j-5)(6j-3)(6j-1) / ((2j-1) 216 j) u_(j-1) */
        const double j0 = 2.0 * k, j1 = j0 + 1;
        const double u0 = k == 0 ? 1 : u * (6 * j0 - 5) * (6 * j0 - 3) * (6 * j0 - 1) / ((2 * j0 - 1) * 216 * j0);
        const double u1 = u0 * (6 * j1 - 5) * (6 * j1 - 3) * (6 * j1 - 1) / ((2 * j1 - 1) * 216 * j1);
        const double tp = u0 * power, tq = u1 * power * iz;
        if (tp > last) break; /* the series has begun to diverge */
        const double sign = k % 2 ? -1 : 1;
        p += sign * tp, q += sign * tq;
        last = tq, u = u1, power *= iz * iz;
    }
    const double phase = z + 0.78539816339744830962;
    return (sin(phase) * p - cos(phase) * q) / (1.77245385090551602730 * sqrt(sqrt(t)));
}

#endif
