/* Bessel functions of torch.special computed in double as vectorized Chebyshev series (libaxon/tools/
 * gen_bessel_series.py derives them into special_bessel_coefs.h), for every float dtype the op takes (float32 and
 * float64; the half types for I0, I1 and their scaled forms, rounded once from the double result). glibc's scalar
 * j0..y1, a power series for I and a quadrature for K took 3x, 1.3x and 11-22x torch CPU's time on a million
 * floats.
 *   - J0, J1, Y0, Y1: below |x| = 8, series in z = x^2 of J0, J1 / x and of Y0, Y1 less their logarithmic and pole
 *     parts; from 8 on, Hankel's form sqrt(2 / (pi x)) (P cos chi -/+ Q sin chi) with series for P and x Q in
 *     64 / x^2, and chi = x - pi/4 (or 3 pi / 4) through sin x and cos x, which glibc reduces exactly. The error is a
 *     few units in the last place of the functions' scale (an absolute error near 1e-16 max(1, 1 / sqrt(x))), as for
 *     glibc's and PyTorch's own, which also lose relative accuracy next to the functions' zeros.
 *   - I0, I1 and e^-|x| I0, I1: below |x| = 8, e^-x I0 and e^-x I1 / x in x; from 8 on, sqrt(x) e^-x I in 8 / x;
 *     I itself is the scaled value times e^|x|, taken as e^(|x|/2) twice, so that it overflows only where I does
 *     (past 713.98, where e^|x| alone would at 709.78). A few ulps.
 *   - K0, K1 and e^x K0, K1: below x = 2, series in z = x^2 of I0, I1 / x and of K0, K1 less their logarithmic and
 *     pole parts; from 2 on, sqrt(x) e^x K in 2 / x; the other scaling is e^-x or e^x, in the block's last loop.
 *
 * Elements go through blocks of BJ_BLOCK, and each block runs, as full vectors, only the forms its elements need:
 * normal-sized inputs never pay for sin and cos. Each element sees the same arithmetic wherever a block boundary
 * falls (no scalar tails: a partial block is padded), so results do not depend on the thread count. Off the domain,
 * as PyTorch: J, Y and unscaled I are NaN at +-inf (glibc's J and Y return the limit 0), Y0 and Y1 NaN below 0 and
 * -inf at 0. */
#include <math.h>
#include <string.h>

#include "chebyshev.h"
#include "pointwise_impl.h"
#include "special_bessel_coefs.h"

#ifdef AXON_HAVE_LIBMVEC
/* libmvec's vector sin, cos, log and exp (pointwise_unary.c says why the attribute), so that the block loops
 * vectorize. */
double(sin)(double) PW_SIMD;
double(cos)(double) PW_SIMD;
double(log)(double) PW_SIMD;
double(exp)(double) PW_SIMD;
#endif

#define BJ_BLOCK 64
#define BJ_SPLIT 8.0  /* J, Y, I */
#define BJ_K_SPLIT 2.0
#define BJ_2_PI 0.63661977236758134308 /* 2 / pi */
#define BJ_SQRT_PI 1.7724538509055160273

#define BJ_SERIES(c, t) AXON_CHEBYSHEV(c, t)

/* The series variable of each region: z = x^2 over [0, 64] and w = 64 / x^2 over [0, 1], mapped onto [-1, 1]. */
static inline __attribute__((always_inline)) double bj_t_small(double x) { return x * x * (1.0 / 32) - 1; }
static inline __attribute__((always_inline)) double bj_t_large(double a) { return 128 / (a * a) - 1; }

/* The Hankel form's parts for a = |x| >= 8: (s + c) and (s - c) are sqrt(2) cos and sin of a - pi/4, k the
 * amplitude sqrt(2 / (pi a)) / sqrt(2). */
typedef struct bj_hankel {
    double sum, diff, k;
} bj_hankel_t;
static inline __attribute__((always_inline)) bj_hankel_t bj_hankel(double a) {
    const double s = sin(a), c = cos(a);
    return (bj_hankel_t){s + c, s - c, 1 / (BJ_SQRT_PI * sqrt(a))};
}

/* J0 = 1 - x^2 / 4 + ... rounds to 1 below 2^-26, where the series may be a rounding error off: 1 there. */
static inline __attribute__((always_inline)) double bj_j0_of(double x, double t) {
    return fabs(x) < 0x1p-26 ? 1.0 : BJ_SERIES(bessel_j0_small, t);
}
static inline __attribute__((always_inline)) double bj_j0_small(double x) { return bj_j0_of(x, bj_t_small(x)); }
static inline __attribute__((always_inline)) double bj_j1_small(double x) {
    return x * BJ_SERIES(bessel_j1_small, bj_t_small(x));
}
static inline __attribute__((always_inline)) double bj_y0_small(double x) {
    const double t = bj_t_small(x);
    return BJ_2_PI * (log(x) - M_LN2) * bj_j0_of(x, t) + BJ_SERIES(bessel_y0_small, t);
}
static inline __attribute__((always_inline)) double bj_y1_small(double x) {
    const double t = bj_t_small(x), j1 = x * BJ_SERIES(bessel_j1_small, t);
    return BJ_2_PI * ((log(x) - M_LN2) * j1 - 1 / x) + x * BJ_SERIES(bessel_y1_small, t);
}

static inline __attribute__((always_inline)) double bj_j0_large(double x) {
    const double a = fabs(x), t = bj_t_large(a);
    const double p = BJ_SERIES(bessel_p0_large, t), q = BJ_SERIES(bessel_q0_large, t) / a;
    const bj_hankel_t h = bj_hankel(a);
    return h.k * (p * h.sum - q * h.diff);
}
static inline __attribute__((always_inline)) double bj_j1_large(double x) {
    const double a = fabs(x), t = bj_t_large(a);
    const double p = BJ_SERIES(bessel_p1_large, t), q = BJ_SERIES(bessel_q1_large, t) / a;
    const bj_hankel_t h = bj_hankel(a);
    const double r = h.k * (p * h.diff + q * h.sum);
    return x < 0 ? -r : r; /* J1 is odd */
}
static inline __attribute__((always_inline)) double bj_y0_large(double x) {
    const double t = bj_t_large(x);
    const double p = BJ_SERIES(bessel_p0_large, t), q = BJ_SERIES(bessel_q0_large, t) / x;
    const bj_hankel_t h = bj_hankel(x);
    return h.k * (p * h.diff + q * h.sum);
}
static inline __attribute__((always_inline)) double bj_y1_large(double x) {
    const double t = bj_t_large(x);
    const double p = BJ_SERIES(bessel_p1_large, t), q = BJ_SERIES(bessel_q1_large, t) / x;
    const bj_hankel_t h = bj_hankel(x);
    return h.k * (q * h.diff - p * h.sum);
}

/* e^-|x| I0, I1 and I0, I1 (both even or odd as their order). */
static inline __attribute__((always_inline)) double bj_i0e_small(double x) {
    return BJ_SERIES(bessel_i0e_small, fabs(x) * 0.25 - 1);
}
static inline __attribute__((always_inline)) double bj_i1e_small(double x) {
    const double a = fabs(x), r = a * BJ_SERIES(bessel_i1e_small, a * 0.25 - 1);
    return x < 0 ? -r : r; /* +0 at -0, as PyTorch */
}
static inline __attribute__((always_inline)) double bj_i0e_large(double x) {
    const double a = fabs(x);
    return BJ_SERIES(bessel_i0e_large, 16 / a - 1) / sqrt(a);
}
static inline __attribute__((always_inline)) double bj_i1e_large(double x) {
    const double a = fabs(x), r = BJ_SERIES(bessel_i1e_large, 16 / a - 1) / sqrt(a);
    return x < 0 ? -r : r;
}
/* scaled * e^|x|, as e^(|x|/2) twice: I0 and I1 overflow past 713.98, e^|x| alone at 709.78 */
static inline __attribute__((always_inline)) double bj_unscale(double scaled, double x) {
    const double h = exp(fabs(x) * 0.5);
    return scaled * h * h;
}
/* I0 and I1 run the scaled forms and unscale in the block's last loop (BJ_FIX_i0, _i1): GCC vectorizes the call to
 * exp there, in a loop of its own, and not inside the forms' loops. */
#define bj_i0_small bj_i0e_small
#define bj_i0_large bj_i0e_large
#define bj_i1_small bj_i1e_small
#define bj_i1_large bj_i1e_large

/* K0, K1 below x = 2 (x > 0; t for z = x^2 over [0, 4]) and e^x K0, K1 from 2 on. */
static inline __attribute__((always_inline)) double bj_k0_below2(double x) {
    const double t = x * x * 0.5 - 1;
    return BJ_SERIES(bessel_k_k0_small, t) - (log(x) - M_LN2) * BJ_SERIES(bessel_k_i0_small, t);
}
static inline __attribute__((always_inline)) double bj_k1_below2(double x) {
    const double t = x * x * 0.5 - 1;
    return 1 / x + (log(x) - M_LN2) * (x * BJ_SERIES(bessel_k_i1_small, t)) + x * BJ_SERIES(bessel_k_k1_small, t);
}
static inline __attribute__((always_inline)) double bj_k0e_above2(double x) {
    return BJ_SERIES(bessel_k0e_large, 4 / x - 1) / sqrt(x);
}
static inline __attribute__((always_inline)) double bj_k1e_above2(double x) {
    return BJ_SERIES(bessel_k1e_large, 4 / x - 1) / sqrt(x);
}
/* Each K op's forms give K below the split and e^x K above; the block's last loop (BJ_FIX) multiplies by e^-x or
 * e^x where its op needs it, so that exp is called in a loop of its own (see I0 above). */
#define bj_k0_small bj_k0_below2
#define bj_k0_large bj_k0e_above2
#define bj_k1_small bj_k1_below2
#define bj_k1_large bj_k1e_above2
#define bj_k0e_small bj_k0_below2
#define bj_k0e_large bj_k0e_above2
#define bj_k1e_small bj_k1_below2
#define bj_k1e_large bj_k1e_above2
/* K's values off its domain, as PyTorch's: NaN below 0, inf at 0 (either sign), 0 at inf. */
#define BJ_K_DOMAIN(x, r) ((x) != (x) || (x) < 0 ? NAN : (x) == 0 ? INFINITY : (x) == INFINITY ? 0.0 : (r))

/* The argument each form sees, and the values off the forms' domain: J is defined everywhere (even and odd), Y for
 * x >= 0 only (the forms see |x| and are masked after); I is the scaled form unscaled, NaN at +-inf as PyTorch's
 * (its e^|x| times a scaled 0). */
#define BJ_ARG_j0(x) (x)
#define BJ_ARG_j1(x) (x)
#define BJ_ARG_y0(x) fabs(x)
#define BJ_ARG_y1(x) fabs(x)
#define BJ_ARG_i0(x) (x)
#define BJ_ARG_i1(x) (x)
#define BJ_ARG_i0e(x) (x)
#define BJ_ARG_i1e(x) (x)
#define BJ_FIX_j0(x, r) (r)
#define BJ_FIX_j1(x, r) (r)
#define BJ_FIX_y0(x, r) ((x) < 0 ? NAN : (x) == 0 ? -INFINITY : (r))
#define BJ_FIX_y1(x, r) ((x) < 0 ? NAN : (x) == 0 ? -INFINITY : (r))
#define BJ_FIX_i0(x, r) (fabs(x) == INFINITY ? NAN : bj_unscale((r), (x)))
#define BJ_FIX_i1(x, r) (fabs(x) == INFINITY ? NAN : bj_unscale((r), (x)))
#define BJ_FIX_i0e(x, r) (r)
#define BJ_FIX_i1e(x, r) (r)
#define BJ_ARG_k0(x) fabs(x)
#define BJ_ARG_k1(x) fabs(x)
#define BJ_ARG_k0e(x) fabs(x)
#define BJ_ARG_k1e(x) fabs(x)
/* exp of a selected argument, 0 where no scaling is due (e^0 is exactly 1): a call GCC cannot sink into a branch,
 * so the loop stays vectorized */
#define BJ_FIX_k0(x, r) BJ_K_DOMAIN(x, (r) * exp(fabs(x) <= BJ_K_SPLIT ? 0.0 : -fabs(x)))
#define BJ_FIX_k1(x, r) BJ_FIX_k0(x, r)
#define BJ_FIX_k0e(x, r) BJ_K_DOMAIN(x, (r) * exp(fabs(x) <= BJ_K_SPLIT ? fabs(x) : 0.0))
#define BJ_FIX_k1e(x, r) BJ_FIX_k0e(x, r)
/* Where each function's forms meet. */
#define BJ_SPLIT_j0 BJ_SPLIT
#define BJ_SPLIT_j1 BJ_SPLIT
#define BJ_SPLIT_y0 BJ_SPLIT
#define BJ_SPLIT_y1 BJ_SPLIT
#define BJ_SPLIT_i0 BJ_SPLIT
#define BJ_SPLIT_i1 BJ_SPLIT
#define BJ_SPLIT_i0e BJ_SPLIT
#define BJ_SPLIT_i1e BJ_SPLIT
#define BJ_SPLIT_k0 BJ_K_SPLIT
#define BJ_SPLIT_k1 BJ_K_SPLIT
#define BJ_SPLIT_k0e BJ_K_SPLIT
#define BJ_SPLIT_k1e BJ_K_SPLIT

/* One block: each form only where some element needs it (NaN and the infinities take the large-argument one). */
#define BJ_BLOCK_FN(fn)                                                                                        \
    static inline __attribute__((always_inline)) void bj_block_##fn(const double *restrict x,                  \
                                                                    double *restrict r) {                      \
        int small = 0, large = 0;                                                                              \
        for (int i = 0; i < BJ_BLOCK; i++) {                                                                   \
            small |= fabs(x[i]) <= BJ_SPLIT_##fn;                                                              \
            large |= !(fabs(x[i]) <= BJ_SPLIT_##fn);                                                           \
        }                                                                                                      \
        if (!large)                                                                                            \
            for (int i = 0; i < BJ_BLOCK; i++) r[i] = bj_##fn##_small(BJ_ARG_##fn(x[i]));                      \
        else if (!small)                                                                                       \
            for (int i = 0; i < BJ_BLOCK; i++) r[i] = bj_##fn##_large(BJ_ARG_##fn(x[i]));                      \
        else                                                                                                   \
            for (int i = 0; i < BJ_BLOCK; i++) {                                                               \
                const double s = bj_##fn##_small(BJ_ARG_##fn(x[i])), l = bj_##fn##_large(BJ_ARG_##fn(x[i]));   \
                r[i] = fabs(x[i]) <= BJ_SPLIT_##fn ? s : l;                                                    \
            }                                                                                                  \
        for (int i = 0; i < BJ_BLOCK; i++) r[i] = BJ_FIX_##fn(x[i], r[i]);                                     \
    }

/* The loop of one (function, dtype): blocks converted to double and back (through float for the half types). */
#define BJ_LOOP_FN(fn, DE, dn, T, WT, UT)                                                                      \
    AXON_CLONES int axon_pw_bessel_##fn##_##dn(char *o, const char *const *in, unsigned sm, int64_t n,         \
                                                const pw_ctx_t *ctx) {                                         \
        (void)sm;                                                                                              \
        (void)ctx;                                                                                             \
        const T *a = (const T *)in[0];                                                                         \
        T *out = (T *)o;                                                                                       \
        double x[BJ_BLOCK], r[BJ_BLOCK];                                                                       \
        for (int64_t i0 = 0; i0 < n; i0 += BJ_BLOCK) {                                                         \
            const int m = n - i0 < BJ_BLOCK ? (int)(n - i0) : BJ_BLOCK;                                        \
            if (m < BJ_BLOCK) memset(x, 0, sizeof x);                                                          \
            for (int i = 0; i < m; i++) x[i] = (double)PW_LD_##dn(a[i0 + i]);                                  \
            bj_block_##fn(x, r);                                                                               \
            for (int i = 0; i < m; i++) out[i0 + i] = PW_ST_##dn((WT)r[i]);                                    \
        }                                                                                                      \
        return 0;                                                                                              \
    }

BJ_BLOCK_FN(j0)
BJ_BLOCK_FN(j1)
BJ_BLOCK_FN(y0)
BJ_BLOCK_FN(y1)
BJ_BLOCK_FN(i0)
BJ_BLOCK_FN(i1)
BJ_BLOCK_FN(i0e)
BJ_BLOCK_FN(i1e)
BJ_BLOCK_FN(k0)
BJ_BLOCK_FN(k1)
BJ_BLOCK_FN(k0e)
BJ_BLOCK_FN(k1e)
PW_DOUBLES(BJ_LOOP_FN, j0)
PW_DOUBLES(BJ_LOOP_FN, j1)
PW_DOUBLES(BJ_LOOP_FN, y0)
PW_DOUBLES(BJ_LOOP_FN, y1)
PW_FLOATS(BJ_LOOP_FN, i0)
PW_FLOATS(BJ_LOOP_FN, i1)
PW_FLOATS(BJ_LOOP_FN, i0e)
PW_FLOATS(BJ_LOOP_FN, i1e)
PW_DOUBLES(BJ_LOOP_FN, k0)
PW_DOUBLES(BJ_LOOP_FN, k1)
PW_DOUBLES(BJ_LOOP_FN, k0e)
PW_DOUBLES(BJ_LOOP_FN, k1e)
