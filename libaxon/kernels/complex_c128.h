/* complex128 arithmetic as PyTorch CPU's c10::complex<double> computes it, for the kernels that accumulate complex
 * values in complex128 (logcumsumexp's scan, complex products and log-sum-exps): the product by the textbook formula
 * (not C's Annex G one), exp and log as std::complex (libstdc++ hands them to cexp and clog), log1p in c10's form,
 * and the log-add-exp of PyTorch's logcumsumexp. Never installed. */
#ifndef AXON_KERNELS_COMPLEX_C128_H
#define AXON_KERNELS_COMPLEX_C128_H

#include <complex.h>
#include <math.h>

#include "dtype.h"

static inline axon_c128_t axon_c128(double re, double im) {
    axon_c128_t z = {re, im};
    return z;
}

/* (a + bi)(c + di) = (ac - bd) + (ad + bc)i */
static inline axon_c128_t axon_c128_mul(axon_c128_t x, axon_c128_t y) {
    return axon_c128(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re);
}

static inline axon_c128_t axon_c128_add(axon_c128_t x, axon_c128_t y) { return axon_c128(x.re + y.re, x.im + y.im); }

static inline axon_c128_t axon_c128_sub(axon_c128_t x, axon_c128_t y) { return axon_c128(x.re - y.re, x.im - y.im); }

static inline int axon_c128_isnan(axon_c128_t x) { return isnan(x.re) || isnan(x.im); }

static inline axon_c128_t axon_c128_exp(axon_c128_t x) {
    const double complex r = cexp(CMPLX(x.re, x.im));
    return axon_c128(creal(r), cimag(r));
}

static inline axon_c128_t axon_c128_log(axon_c128_t x) {
    const double complex r = clog(CMPLX(x.re, x.im));
    return axon_c128(creal(r), cimag(r));
}

/* log(1 + z) = log|1 + z| + i atan2(y, 1 + x); for |z| < 0.5, log|1 + z| = log1p(x (2 + x) + y^2) / 2 (x itself
 * when that underflows to 0), else log(hypot(1 + x, y)). */
static inline axon_c128_t axon_c128_log1p(axon_c128_t z) {
    const double x = z.re, y = z.im, theta = atan2(y, x + 1.0);
    if (hypot(x, y) < 0.5) {
        const double r = x * (2.0 + x) + y * y;
        return axon_c128(r == 0 ? x : 0.5 * log1p(r), theta);
    }
    return axon_c128(log(hypot(x + 1.0, y)), theta);
}

/* log(exp(x) + exp(y)) as PyTorch's logcumsumexp computes it: a NaN (in either part) of y, else of x, makes the
 * result NaN; the operand with the smaller real part is the min; equal infinite real parts give the min (-inf) or
 * log(exp(min) + exp(max)) (+inf); otherwise log1p(exp(min - max)) + max. */
static inline axon_c128_t axon_c128_log_add_exp(axon_c128_t x, axon_c128_t y) {
    axon_c128_t lo, hi;
    if (axon_c128_isnan(y)) lo = hi = y;
    else if (axon_c128_isnan(x)) lo = hi = x;
    else if (x.re < y.re) lo = x, hi = y;
    else lo = y, hi = x;
    if (axon_c128_isnan(lo)) return axon_c128(NAN, NAN);
    if (!isfinite(lo.re) && lo.re == hi.re)
        return lo.re < 0 ? lo : axon_c128_log(axon_c128_add(axon_c128_exp(lo), axon_c128_exp(hi)));
    return axon_c128_add(axon_c128_log1p(axon_c128_exp(axon_c128_sub(lo, hi))), hi);
}

#endif
