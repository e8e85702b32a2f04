/* The classical orthogonal polynomials of torch.special, P_n(x) for an integer degree n, in double (the float dtypes
 * compute in double and round once): Chebyshev T, U, V, W and their shifted forms on [0, 1], the physicists' and
 * probabilists' Hermite H and He, Laguerre L and Legendre P. As PyTorch's: a negative degree gives 0, the values at
 * the interval's ends are the closed forms, inside the interval a high-degree Chebyshev polynomial is its
 * trigonometric form (cos(n acos x) and kin, where the three-term recurrence would accumulate n roundings), and
 * everything else is the three-term recurrence from P_0 and P_1. Never installed. */
#ifndef AXON_KERNELS_SPECIAL_POLY_H
#define AXON_KERNELS_SPECIAL_POLY_H

#include <math.h>
#include <stdint.h>

/* The degree as PyTorch reads it from a floating tensor: truncated toward zero (NaN and out-of-range as -1, which
 * gives 0, where C's conversion would be undefined). */
static inline int64_t axon_poly_degree(double n) {
    return n == n && n > -9.2e18 && n < 9.2e18 ? (int64_t)n : -1;
}

/* p_{k+1} = 2 y p_k - p_{k-1} from p_0 = 1 and p_1, the Chebyshev recurrence (y = x, or 2x - 1 shifted). */
static inline double axon_chebyshev_recurrence(double y, double p1, int64_t n) {
    if (n == 0) return 1;
    double p = 1, q = p1;
    for (int64_t k = 2; k <= n; k++) {
        double r = (y + y) * q - p;
        p = q;
        q = r;
    }
    return q;
}

static inline double axon_odd_sign(int64_t n) { return n % 2 == 0 ? 1.0 : -1.0; }

/* T_n(y): cos(n t) with y = cos t. */
static inline double axon_chebyshev_t_at(double y, int64_t n) {
    if (n < 0) return 0;
    if (fabs(y) == 1) return y > 0 ? 1 : axon_odd_sign(n);
    if (n > 6 && fabs(y) < 1) return cos((double)n * acos(y));
    return axon_chebyshev_recurrence(y, y, n);
}

/* U_n(y) = sin((n + 1) t) / sin t. */
static inline double axon_chebyshev_u_at(double y, int64_t n) {
    if (n < 0) return 0;
    if (fabs(y) == 1) return (y > 0 ? 1 : axon_odd_sign(n)) * (double)(n + 1);
    if (n > 8 && fabs(y) < 1) {
        double t = acos(y);
        if (sin(t) != 0) return sin((double)(n + 1) * t) / sin(t);
        return (double)(n + 1) * cos((double)(n + 1) * t) / y;
    }
    return axon_chebyshev_recurrence(y, y + y, n);
}

/* V_n(y) = cos((n + 1/2) t) / cos(t / 2). */
static inline double axon_chebyshev_v_at(double y, int64_t n) {
    if (n < 0) return 0;
    if (fabs(y) == 1) return y > 0 ? 1 : axon_odd_sign(n) * (double)(n + n + 1);
    if (n > 8 && fabs(y) < 1) {
        double t = acos(y);
        if (sin(t / 2) != 1) return cos(((double)n + 0.5) * t) / cos(t / 2);
        return axon_odd_sign(n) * (double)(n + n + 1);
    }
    return axon_chebyshev_recurrence(y, y + y - 1, n);
}

/* W_n(y) = sin((n + 1/2) t) / sin(t / 2). */
static inline double axon_chebyshev_w_at(double y, int64_t n) {
    if (n < 0) return 0;
    if (fabs(y) == 1) return y > 0 ? (double)(n + n + 1) : axon_odd_sign(n);
    if (n > 8 && fabs(y) < 1) {
        double t = acos(y);
        if (cos(t / 2) != 1) return sin(((double)n + 0.5) * t) / sin(t / 2);
        return y > 0 ? (double)(n + n + 1) : axon_odd_sign(n);
    }
    return axon_chebyshev_recurrence(y, y + y + 1, n);
}

static inline double axon_chebyshev_t(double x, int64_t n) { return axon_chebyshev_t_at(x, n); }
static inline double axon_chebyshev_u(double x, int64_t n) { return axon_chebyshev_u_at(x, n); }
static inline double axon_chebyshev_v(double x, int64_t n) { return axon_chebyshev_v_at(x, n); }
static inline double axon_chebyshev_w(double x, int64_t n) { return axon_chebyshev_w_at(x, n); }

/* The shifted polynomials: P*_n(x) = P_n(2x - 1). */
static inline double axon_shifted_chebyshev_t(double x, int64_t n) { return axon_chebyshev_t_at(x + x - 1, n); }
static inline double axon_shifted_chebyshev_u(double x, int64_t n) { return axon_chebyshev_u_at(x + x - 1, n); }
static inline double axon_shifted_chebyshev_v(double x, int64_t n) { return axon_chebyshev_v_at(x + x - 1, n); }
static inline double axon_shifted_chebyshev_w(double x, int64_t n) { return axon_chebyshev_w_at(x + x - 1, n); }

/* H_{k+1} = 2x H_k - 2k H_{k-1}, H_0 = 1, H_1 = 2x. */
static inline double axon_hermite_h(double x, int64_t n) {
    if (n < 0) return 0;
    if (n == 0) return 1;
    double p = 1, q = x + x;
    for (int64_t k = 1; k < n; k++) {
        double r = (x + x) * q - (double)(k + k) * p;
        p = q;
        q = r;
    }
    return q;
}

/* He_{k+1} = x He_k - k He_{k-1}, He_0 = 1, He_1 = x. */
static inline double axon_hermite_he(double x, int64_t n) {
    if (n < 0) return 0;
    if (n == 0) return 1;
    double p = 1, q = x;
    for (int64_t k = 1; k < n; k++) {
        double r = x * q - (double)k * p;
        p = q;
        q = r;
    }
    return q;
}

/* (k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}, L_0 = 1, L_1 = 1 - x; L_n(0) = 1. */
static inline double axon_laguerre_l(double x, int64_t n) {
    if (n < 0) return 0;
    if (x == 0 || n == 0) return 1;
    double p = 1, q = 1 - x;
    for (int64_t k = 1; k < n; k++) {
        double r = (((double)(k + k) + (1 - x)) * q - (double)k * p) / (double)(k + 1);
        p = q;
        q = r;
    }
    return q;
}

/* (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}, P_0 = 1, P_1 = x; P_n(+-1) = (+-1)^n. */
static inline double axon_legendre_p(double x, int64_t n) {
    if (n < 0) return 0;
    if (fabs(x) == 1) return x > 0 || n == 0 ? 1 : axon_odd_sign(n);
    if (n == 0) return 1;
    double p = 1, q = x;
    for (int64_t k = 1; k < n; k++) {
        double r = ((double)(k + k + 1) * x * q - (double)k * p) / (double)(k + 1);
        p = q;
        q = r;
    }
    return q;
}

#endif
