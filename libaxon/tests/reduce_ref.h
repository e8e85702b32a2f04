/* Helpers for the reduction tests: deterministic inputs of every dtype, element access as long double, device
 * round trips of strided views, and a long double reference reduction. Shared by test_kernels_reduce*.c. */
#ifndef AXON_REDUCE_REF_H
#define AXON_REDUCE_REF_H

#include <math.h>
#include <stdint.h>

#include "kernels_check.h"
#include "pointwise_ref.h"

static uint64_t rr_state = 0x9E3779B97F4A7C15ull;

static inline uint32_t rr_rand(void) {
    rr_state = rr_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rr_state >> 33);
}

static inline int rr_is_float(axon_dtype_t d) { return ref_is_float(d); }

/* Element i of a host buffer of dtype d, as long double (bool and ints exact). */
static inline long double rr_get(axon_dtype_t d, const void *buf, int64_t i) {
    const char *p = (const char *)buf + i * (int64_t)axon_dtype_size(d);
    return rr_is_float(d) ? ref_load_f(d, p) : (long double)ref_load_i(d, p);
}

static inline void rr_set(axon_dtype_t d, void *buf, int64_t i, long double v) {
    char *p = (char *)buf + i * (int64_t)axon_dtype_size(d);
    if (rr_is_float(d)) ref_store_f(d, p, v);
    else if (d == AXON_BOOL) *(uint8_t *)p = v != 0;
    else ref_store_i(d, p, (int64_t)v);
}

/* n values of dtype d: floats in [-scale, scale] in steps of 1/64 (exact in every float dtype when scale <= 2),
 * integers in [-5, 5] ([0, 10] for uint8), bool about half ones. near_one: values 1 +- k/64 (for products). */
static inline void *rr_fill(axon_dtype_t d, int64_t n, int near_one) {
    void *b = malloc((size_t)(n > 0 ? n : 1) * axon_dtype_size(d));
    for (int64_t i = 0; i < n; i++) {
        long double v;
        if (d == AXON_BOOL) v = rr_rand() % 3 != 0;
        else if (near_one) v = rr_is_float(d) ? 1.0L + (long double)((int)(rr_rand() % 17) - 8) / 64
                              : (int)(rr_rand() % 3) - (d == AXON_UINT8 ? 0 : 1);
        else if (rr_is_float(d)) v = (long double)((int)(rr_rand() % 257) - 128) / 64;
        else v = (int)(rr_rand() % 11) - (d == AXON_UINT8 ? 0 : 5);
        rr_set(d, b, i, v);
    }
    return b;
}

/* W of an out dtype: what the kernel converts inputs to. */
static inline long double rr_to_work(axon_dtype_t out, long double v) {
    if (out == AXON_FLOAT64) return (double)v;
    if (rr_is_float(out)) return (float)v;
    return v; /* the inputs used with integer outs are integers */
}

/* The reference of op over v[0..n) (values exact as loaded from in), computed in long double. `scale` gets the
 * magnitude that rounding errors are relative to (sum of |terms| for sums). */
static inline long double rr_reduce(axon_reduce_op_t op, const axon_reduce_params_t *p, axon_dtype_t out,
                                    const long double *raw, int64_t n, long double *scale) {
    long double r = 0, s = 0;
    long double *v = malloc(sizeof(long double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = rr_to_work(out, raw[i]);
    switch (op) {
    case AXON_REDUCE_SUM:
    case AXON_REDUCE_MEAN:
    case AXON_REDUCE_NANSUM:
        for (int64_t i = 0; i < n; i++)
            if (!(op == AXON_REDUCE_NANSUM && isnan(v[i]))) r += v[i], s += fabsl(v[i]);
        if (op == AXON_REDUCE_MEAN) r /= n, s /= n;
        break;
    case AXON_REDUCE_PROD:
        r = 1;
        if (!rr_is_float(out)) { /* int64 arithmetic wraps */
            uint64_t q = 1;
            for (int64_t i = 0; i < n; i++) q *= (uint64_t)(int64_t)v[i];
            r = (long double)(int64_t)q;
        } else {
            for (int64_t i = 0; i < n; i++) r *= v[i];
        }
        s = fabsl(r);
        break;
    case AXON_REDUCE_AMAX:
    case AXON_REDUCE_AMIN:
        r = n > 0 ? v[0] : NAN; /* amax/amin of nothing is never asked for */
        for (int64_t i = 0; i < n; i++) {
            if (isnan(v[i]) || isnan(r)) r = NAN;
            else if (op == AXON_REDUCE_AMAX ? v[i] > r : v[i] < r) r = v[i];
        }
        s = fabsl(r);
        break;
    case AXON_REDUCE_ANY:
        for (int64_t i = 0; i < n; i++) r = r || raw[i] != 0;
        break;
    case AXON_REDUCE_ALL:
        r = 1;
        for (int64_t i = 0; i < n; i++) r = r && raw[i] != 0;
        break;
    case AXON_REDUCE_COUNT_NONZERO:
        for (int64_t i = 0; i < n; i++) r += raw[i] != 0;
        break;
    case AXON_REDUCE_XOR: {
        uint64_t q = 0;
        for (int64_t i = 0; i < n; i++) q ^= (uint64_t)(int64_t)v[i];
        r = (long double)(int64_t)q;
        break;
    }
    case AXON_REDUCE_NORM:
        if (p->p == INFINITY || p->p == -INFINITY) {
            r = fabsl(v[0]);
            for (int64_t i = 0; i < n; i++)
                r = isnan(v[i]) || isnan(r) ? NAN : p->p > 0 ? fmaxl(r, fabsl(v[i])) : fminl(r, fabsl(v[i]));
        } else if (p->p == 0) {
            for (int64_t i = 0; i < n; i++) r += v[i] != 0;
        } else {
            for (int64_t i = 0; i < n; i++) r += powl(fabsl(v[i]), p->p);
            r = powl(r, 1.0L / p->p);
        }
        s = fabsl(r);
        break;
    case AXON_REDUCE_VAR:
    case AXON_REDUCE_STD: {
        long double m = 0;
        for (int64_t i = 0; i < n; i++) m += v[i];
        m /= n;
        for (int64_t i = 0; i < n; i++) r += (v[i] - m) * (v[i] - m), s += v[i] * v[i];
        long double dof = n - p->correction;
        r /= dof > 0 ? dof : 0;
        s /= dof > 0 ? dof : 1;
        if (op == AXON_REDUCE_STD) r = sqrtl(r), s = sqrtl(s);
        break;
    }
    case AXON_REDUCE_LOGSUMEXP: {
        long double m = -INFINITY;
        for (int64_t i = 0; i < n; i++) m = fmaxl(m, v[i]);
        for (int64_t i = 0; i < n; i++) r += expl(v[i] - m);
        r = logl(r) + m;
        s = fabsl(m) + 1;
        break;
    }
    default: break;
    }
    free(v);
    if (scale) *scale = s;
    return r;
}

/* Relative tolerance of a result stored in dtype out (its rounding plus the float32/float64 accumulation). */
static inline long double rr_tol(axon_dtype_t out) {
    switch (out) {
    case AXON_FLOAT64: return 1e-12L;
    case AXON_FLOAT32: return 2e-6L;
    case AXON_FLOAT16: return 1.0L / 1024;
    case AXON_BFLOAT16: return 1.0L / 128;
    default: return 0;
    }
}

/* got matches want (NaN matches NaN). Integer and bool outs must be exact after want's conversion to out. */
static inline int rr_close(axon_dtype_t out, long double got, long double want, long double scale) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (rr_is_float(out) && isinf(ref_round(out, want))) return got == ref_round(out, want);
    if (isinf(want) || isinf(got)) return got == want;
    if (!rr_is_float(out)) {
        unsigned char b[8];
        rr_set(out, b, 0, want);
        return got == rr_get(out, b, 0);
    }
    long double tol = rr_tol(out) * (fabsl(want) > scale ? fabsl(want) : scale) + 1e-30L;
    return fabsl(got - want) <= tol;
}

/* A device copy of n elements of dtype d from host. */
static inline void *rr_upload(const kc_dev_t *k, axon_dtype_t d, const void *host, int64_t n) {
    return kc_upload(k, host, (size_t)(n > 0 ? n : 1) * axon_dtype_size(d));
}

#endif
