/* Special functions of the pointwise ops: the digamma function, the Hurwitz zeta function and the polygamma functions
 * built on them, in double (the float dtypes compute in double and round once). Special values follow PyTorch's
 * (and SciPy's): digamma(+-0) = -+inf, digamma at a negative integer or -inf is NaN; zeta(1, q) = inf, zeta(s < 1, q)
 * is NaN, zeta(s, q) at an integer q <= 0 is inf and at a negative q with a non-integer s NaN. Never installed. */
#ifndef AXON_KERNELS_SPECIAL_MATH_H
#define AXON_KERNELS_SPECIAL_MATH_H

#include <math.h>

#define AXON_PI 3.14159265358979323846

/* psi(x): the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
 * ln x - 1/(2x) - sum_k B_2k / (2k x^2k) to k = 7 (its terms are below 1e-17 there); negative x by the reflection
 * psi(1 - x) - pi / tan(pi x), with tan taken of x's fractional part, which loses nothing to the period. */
static inline double axon_digamma(double x) {
    if (x == 0) return copysign(INFINITY, -x);
    if (x < 0) {
        if (x == trunc(x)) return NAN;
        double whole, frac = modf(x, &whole);
        return axon_digamma(1 - x) - AXON_PI / tan(AXON_PI * frac);
    }
    double acc = 0;
    while (x < 10) {
        acc -= 1 / x;
        x += 1;
    }
    double z = 1 / (x * x);
    double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -
                    z * (691.0 / 32760 - z / 12))))));
    return acc + log(x) - 0.5 / x - series;
}

/* zeta(s, q) = sum_k (q + k)^-s by Euler-Maclaurin: the terms directly until q + k >= 10 (and at least 10 of them,
 * or until they stop mattering), then the integral, half the next term, and ten Bernoulli corrections
 * B_2j / (2j)! s (s + 1) ... (s + 2j - 2) a^(-s - 2j + 1), which are below 1e-20 of the sum from a = 10 on. */
static inline double axon_zeta(double s, double q) {
    static const double bernoulli_over_factorial[10] = {
        8.3333333333333333e-02, -1.3888888888888889e-03, 3.3068783068783069e-05, -8.2671957671957672e-07,
        2.0876756987868099e-08, -5.2841901386874932e-10, 1.3382536530684679e-11, -3.3896802963225829e-13,
        8.5860620562778446e-15, -2.1748686985580619e-16,
    };
    if (s != s || q != q) return NAN;
    if (s == 1) return INFINITY;
    if (s < 1) return NAN;
    if (q == INFINITY) return 0;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (s != floor(s)) return NAN; /* a negative base to a non-integer power */
    }
    double sum = pow(q, -s), a = q, term;
    int n = 0;
    while (n < 9 || a <= 9) {
        a += 1, n += 1;
        term = pow(a, -s);
        sum += term;
        if (fabs(term / sum) < 1.1e-16) return sum;
    }
    /* the tail from a (its own term counted half) */
    double w = pow(a, -s);
    sum += a * w / (s - 1) - 0.5 * w;
    double rising = s, power = w / a; /* s (s+1) ... (s+2j-2) and a^(-s-2j+1) */
    for (int j = 0; j < 10; j++) {
        double t = bernoulli_over_factorial[j] * rising * power;
        sum += t;
        if (fabs(t / sum) < 1.1e-17) break;
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
        power /= a * a;
    }
    return sum;
}

/* The n-th derivative of digamma: digamma itself for n = 0, else (-1)^(n+1) n! zeta(n + 1, x). n >= 0. */
static inline double axon_polygamma(int64_t n, double x) {
    if (n == 0) return axon_digamma(x);
    double factorial = tgamma((double)n + 1);
    return (n % 2 ? 1.0 : -1.0) * factorial * axon_zeta((double)n + 1, x);
}

/* The regularized incomplete gamma functions: P(a, x) = gamma(a, x) / Gamma(a) (upper = 0) and Q(a, x) = 1 - P
 * (upper = 1), for a, x >= 0, by the power series of P where x < a + 1 and the continued fraction of Q beyond
 * (modified Lentz), each the side that converges fast and computes its function without cancellation, both scaled by
 * x^a e^-x / Gamma(a) taken in logs. PyTorch's edge values: NaN for a negative or NaN argument, for a = x = 0 and for
 * a = x = inf; P(0, x > 0) = 1; P(a, 0) = 0; P(inf, x) = 0; P(a, inf) = 1. */
static inline double axon_igamma(double a, double x, int upper) {
    if (isnan(a) || isnan(x) || a < 0 || x < 0) return NAN;
    if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : NAN;
    if (isinf(a)) return isinf(x) ? NAN : (upper ? 1.0 : 0.0);
    if (x == 0) return upper ? 1.0 : 0.0;
    if (isinf(x)) return upper ? 0.0 : 1.0;
    int sign;
    const double scale = exp(a * log(x) - x - lgamma_r(a, &sign));
    if (x < a + 1) {
        double term = 1.0 / a, sum = term, an = a;
        for (int n = 0; n < 1000000 && term > sum * 1e-17; n++) {
            an += 1.0;
            term *= x / an;
            sum += term;
        }
        const double p = scale * sum;
        return upper ? 1.0 - p : p;
    }
    const double tiny = 1e-300;
    double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
    for (int i = 1; i < 1000000; i++) {
        const double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        const double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-16) break;
    }
    const double q = scale * h;
    return upper ? q : 1.0 - q;
}

#endif
