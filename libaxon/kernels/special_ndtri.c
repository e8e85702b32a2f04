/* ndtri(p), the inverse of the standard normal CDF, for float32 and float64 (and through it erfinv for float64,
 * erfinv(y) = -ndtri((1 - y) / 2) / sqrt(2)), computed in double as vectorized
 * Chebyshev series (libaxon/tools/gen_ndtri_series.py says which, and derives them into special_ndtri_coefs.h): a
 * series in q^2 for |q| = |p - 1/2| <= 0.3, and in the tails a correction to -s, s = sqrt(-2 ln min(p, 1 - p)), over
 * three ranges of s. A first guess refined by Halley steps through erf and erfc (special_erf.h's axon_ndtri and
 * axon_erfinv) took 7-14x torch CPU's time, and 9x for float64 erfinv.
 *
 * Elements go through blocks of ND_BLOCK, and each block runs, as full vectors, only the ranges its elements fall
 * in; every element sees the same arithmetic wherever a block boundary falls (no scalar tails: a partial block is
 * padded with 1/2), so results do not depend on the thread count. Off the domain, as PyTorch: -inf at 0, inf at 1,
 * NaN outside [0, 1] and for NaN. */
#include <math.h>
#include <string.h>

#include "chebyshev.h"
#include "pointwise_impl.h"
#include "special_ndtri_coefs.h"

#ifdef AXON_HAVE_LIBMVEC
/* libmvec's vector log (pointwise_unary.c says why the attribute). */
double(log)(double) PW_SIMD;
#endif

#define ND_BLOCK 64
_Static_assert(ND_BLOCK % AXON_CHEBYSHEV_LANES == 0, "blocks of whole lane groups");
#define ND_Q_CENTRAL 0.3

/* The series variables of the central range (q^2 over [0, 0.09]) and of the tails' three ranges of s. */
static inline __attribute__((always_inline)) double nd_t_central(double q) { return q * q * (2 / 0.09) - 1; }
static inline __attribute__((always_inline)) double nd_t_tail1(double s) {
    return (2 * s - (NDTRI_S_CENTRAL + 4)) / (4 - NDTRI_S_CENTRAL);
}
static inline __attribute__((always_inline)) double nd_t_tail2(double s) { return (s - 6) * 0.5; }
static inline __attribute__((always_inline)) double nd_t_tail3(double s) {
    const double lo = 1 / 38.7, hi = 1.0 / 8;
    return (2 / s - (lo + hi)) / (hi - lo);
}

/* One tail range's values over the block into r where `in_range` holds: its series at t = T(s) is a correction to
 * -s, and the tails' values are ndtri(a), negated above the median. */
#define ND_TAIL(coefs, T, in_range)                                                                             \
    do {                                                                                                        \
        for (int i = 0; i < ND_BLOCK; i++) t[i] = T(s[i]);                                                      \
        AXON_CHEBYSHEV_BLOCK(coefs, t, v, ND_BLOCK);                                                            \
        for (int i = 0; i < ND_BLOCK; i++) {                                                                    \
            const double y = v[i] - s[i];                                                                       \
            r[i] = fabs(q[i]) > ND_Q_CENTRAL && (in_range) ? (q[i] > 0 ? -y : y) : r[i];                        \
        }                                                                                                       \
    } while (0)

/* A block into r: ndtri(p) given, per element, p itself (for the domain), q = p - 1/2 and a = min(p, 1 - p), each
 * exact (the central range needs q, the tails a, only where they apply): the central range q C(q^2), and in the
 * tails a correction to -s, s = sqrt(-2 ln a). */
static inline __attribute__((always_inline)) void nd_block(const double *restrict p, const double *restrict q,
                                                           const double *restrict a, double *restrict r) {
    double s[ND_BLOCK], t[ND_BLOCK], v[ND_BLOCK];
    int central = 0, t1 = 0, t2 = 0, t3 = 0;
    for (int i = 0; i < ND_BLOCK; i++) {
        s[i] = sqrt(-2 * log(a[i]));
        const int c = fabs(q[i]) <= ND_Q_CENTRAL;
        central |= c;
        t1 |= !c & (s[i] <= 4);
        t2 |= !c & (s[i] > 4) & (s[i] <= 8);
        t3 |= !c & (s[i] > 8);
    }
    for (int i = 0; i < ND_BLOCK; i++) r[i] = 0;
    if (central) {
        for (int i = 0; i < ND_BLOCK; i++) t[i] = nd_t_central(q[i]);
        AXON_CHEBYSHEV_BLOCK(ndtri_central, t, v, ND_BLOCK);
        for (int i = 0; i < ND_BLOCK; i++) r[i] = fabs(q[i]) <= ND_Q_CENTRAL ? q[i] * v[i] : r[i];
    }
    if (t1) ND_TAIL(ndtri_tail1, nd_t_tail1, s[i] <= 4);
    if (t2) ND_TAIL(ndtri_tail2, nd_t_tail2, s[i] > 4 && s[i] <= 8);
    if (t3) ND_TAIL(ndtri_tail3, nd_t_tail3, s[i] > 8);
    for (int i = 0; i < ND_BLOCK; i++)
        r[i] = p[i] == 0 ? -INFINITY : p[i] == 1 ? INFINITY : p[i] >= 0 && p[i] <= 1 ? r[i] : NAN;
}
#undef ND_TAIL

/* The inputs of nd_block for ndtri(p): p - 1/2 is exact, and so is 1 - p for p >= 1/2. */
static inline __attribute__((always_inline)) void nd_ndtri_block(const double *restrict x, double *restrict p,
                                                                 double *restrict q, double *restrict a) {
    for (int i = 0; i < ND_BLOCK; i++) {
        p[i] = x[i];
        q[i] = x[i] - 0.5;
        a[i] = x[i] < 0.5 ? x[i] : 1 - x[i];
    }
}
/* The inputs for erfinv(y) = -ndtri((1 - y) / 2) / sqrt(2): q = -y/2 is exact, and so is a = (1 - |y|) / 2 for
 * |y| >= 1/2, the only y whose a is used (the central range covers |q| <= 0.3). p only marks the domain: 0 and 1 at
 * y = 1 and -1, NaN outside [-1, 1], 1/2 inside (where (1 - y) / 2 could round to 1 next to y = -1). */
static inline __attribute__((always_inline)) void nd_erfinv_block(const double *restrict y, double *restrict p,
                                                                  double *restrict q, double *restrict a) {
    for (int i = 0; i < ND_BLOCK; i++) {
        p[i] = y[i] == 1 ? 0 : y[i] == -1 ? 1 : fabs(y[i]) <= 1 ? 0.5 : NAN;
        q[i] = -0.5 * y[i];
        a[i] = (1 - fabs(y[i])) * 0.5;
    }
}
#define ND_RESULT_ndtri(r) (r)
#define ND_RESULT_erfinv(r) (-(r) * 0.70710678118654752440) /* 1 / sqrt(2) */

#define ND_LOOP_FN(fn, DE, dn, T, WT, UT)                                                                      \
    AXON_CLONES int axon_pw_##fn##_##dn(char *o, const char *const *in, unsigned sm, int64_t n,                \
                                        const pw_ctx_t *ctx) {                                                 \
        (void)sm;                                                                                              \
        (void)ctx;                                                                                             \
        const T *x = (const T *)in[0];                                                                         \
        T *out = (T *)o;                                                                                       \
        double v[ND_BLOCK], p[ND_BLOCK], q[ND_BLOCK], a[ND_BLOCK], r[ND_BLOCK];                                \
        for (int64_t i0 = 0; i0 < n; i0 += ND_BLOCK) {                                                         \
            const int m = n - i0 < ND_BLOCK ? (int)(n - i0) : ND_BLOCK;                                        \
            for (int i = m; i < ND_BLOCK; i++) v[i] = 0.5; /* padding inside both domains */                  \
            for (int i = 0; i < m; i++) v[i] = (double)x[i0 + i];                                              \
            nd_##fn##_block(v, p, q, a);                                                                       \
            nd_block(p, q, a, r);                                                                              \
            for (int i = 0; i < m; i++) out[i0 + i] = (T)ND_RESULT_##fn(r[i]);                                 \
        }                                                                                                      \
        return 0;                                                                                              \
    }
PW_DOUBLES(ND_LOOP_FN, ndtri)
ND_LOOP_FN(erfinv, AXON_FLOAT64, f64, double, double, uint64_t)
