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
_Static_assert(BJ_BLOCK % AXON_CHEBYSHEV_LANES == 0, "blocks of whole lane groups");
#define BJ_SPLIT 8.0  /* J, Y, I */
#define BJ_K_SPLIT 2.0
#define BJ_2_PI 0.63661977236758134308 /* 2 / pi */
#define BJ_SQRT_PI 1.7724538509055160273

/* Each form is one or two series over one series variable t (BJ_T_form of the form's argument a), finished per
 * element (BJ_DONE_form of a and the series' values sa, sb); BJ_FORM runs a form over a whole block, each series
 * through axon_chebyshev_lanes, so that the series' dependent FMAs interleave across 16 values. */
#define BJ_J0_TINY 0x1p-26 /* J0 = 1 - x^2 / 4 + ... rounds to 1 below it, where the series may be a rounding off */

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

/* J0, J1, Y0, Y1 below 8: series in z = x^2 of J0, J1 / x, and of Y0, Y1 less their logarithmic and pole parts. */
#define BJ_T_j0_small(a) bj_t_small(a)
#define BJ_A_j0_small bessel_j0_small
#define BJ_TWO_j0_small 0
#define BJ_DONE_j0_small(a, sa, sb) (fabs(a) < BJ_J0_TINY ? 1.0 : (sa))
#define BJ_T_j1_small(a) bj_t_small(a)
#define BJ_A_j1_small bessel_j1_small
#define BJ_TWO_j1_small 0
#define BJ_DONE_j1_small(a, sa, sb) ((a) * (sa))
#define BJ_T_y0_small(a) bj_t_small(a)
#define BJ_A_y0_small bessel_j0_small
#define BJ_B_y0_small bessel_y0_small
#define BJ_TWO_y0_small 1
#define BJ_DONE_y0_small(a, sa, sb) (BJ_2_PI * (log(a) - M_LN2) * BJ_DONE_j0_small(a, sa, 0) + (sb))
#define BJ_T_y1_small(a) bj_t_small(a)
#define BJ_A_y1_small bessel_j1_small
#define BJ_B_y1_small bessel_y1_small
#define BJ_TWO_y1_small 1
#define BJ_DONE_y1_small(a, sa, sb) (BJ_2_PI * ((log(a) - M_LN2) * ((a) * (sa)) - 1 / (a)) + (a) * (sb))

/* From 8 on, Hankel's form with series for P and x Q in 64 / x^2 (J1 is odd). */
static inline __attribute__((always_inline)) double bj_j0_large(double x, double p, double xq) {
    const double a = fabs(x), q = xq / a;
    const bj_hankel_t h = bj_hankel(a);
    return h.k * (p * h.sum - q * h.diff);
}
static inline __attribute__((always_inline)) double bj_j1_large(double x, double p, double xq) {
    const double a = fabs(x), q = xq / a;
    const bj_hankel_t h = bj_hankel(a);
    const double r = h.k * (p * h.diff + q * h.sum);
    return x < 0 ? -r : r;
}
static inline __attribute__((always_inline)) double bj_y0_large(double x, double p, double xq) {
    const double q = xq / x;
    const bj_hankel_t h = bj_hankel(x);
    return h.k * (p * h.diff + q * h.sum);
}
static inline __attribute__((always_inline)) double bj_y1_large(double x, double p, double xq) {
    const double q = xq / x;
    const bj_hankel_t h = bj_hankel(x);
    return h.k * (q * h.diff - p * h.sum);
}
#define BJ_T_j0_large(a) bj_t_large(fabs(a))
#define BJ_A_j0_large bessel_p0_large
#define BJ_B_j0_large bessel_q0_large
#define BJ_TWO_j0_large 1
#define BJ_DONE_j0_large(a, sa, sb) bj_j0_large(a, sa, sb)
#define BJ_T_j1_large(a) bj_t_large(fabs(a))
#define BJ_A_j1_large bessel_p1_large
#define BJ_B_j1_large bessel_q1_large
#define BJ_TWO_j1_large 1
#define BJ_DONE_j1_large(a, sa, sb) bj_j1_large(a, sa, sb)
#define BJ_T_y0_large(a) bj_t_large(a)
#define BJ_A_y0_large bessel_p0_large
#define BJ_B_y0_large bessel_q0_large
#define BJ_TWO_y0_large 1
#define BJ_DONE_y0_large(a, sa, sb) bj_y0_large(a, sa, sb)
#define BJ_T_y1_large(a) bj_t_large(a)
#define BJ_A_y1_large bessel_p1_large
#define BJ_B_y1_large bessel_q1_large
#define BJ_TWO_y1_large 1
#define BJ_DONE_y1_large(a, sa, sb) bj_y1_large(a, sa, sb)

/* e^-|x| I0 and e^-|x| I1 (even and odd as their order, +0 at -0 as PyTorch): series in |x| below 8 (of I1 / x),
 * and of sqrt(|x|) e^-|x| I in 8 / |x| from 8 on. */
#define BJ_ODD(x, r) ((x) < 0 ? -(r) : (r))
#define BJ_T_i0e_small(a) (fabs(a) * 0.25 - 1)
#define BJ_A_i0e_small bessel_i0e_small
#define BJ_TWO_i0e_small 0
#define BJ_DONE_i0e_small(a, sa, sb) (sa)
#define BJ_T_i1e_small(a) (fabs(a) * 0.25 - 1)
#define BJ_A_i1e_small bessel_i1e_small
#define BJ_TWO_i1e_small 0
#define BJ_DONE_i1e_small(a, sa, sb) BJ_ODD(a, fabs(a) * (sa))
#define BJ_T_i0e_large(a) (16 / fabs(a) - 1)
#define BJ_A_i0e_large bessel_i0e_large
#define BJ_TWO_i0e_large 0
#define BJ_DONE_i0e_large(a, sa, sb) ((sa) / sqrt(fabs(a)))
#define BJ_T_i1e_large(a) (16 / fabs(a) - 1)
#define BJ_A_i1e_large bessel_i1e_large
#define BJ_TWO_i1e_large 0
#define BJ_DONE_i1e_large(a, sa, sb) BJ_ODD(a, (sa) / sqrt(fabs(a)))
/* scaled * e^|x|, as e^(|x|/2) twice: I0 and I1 overflow past 713.98, e^|x| alone at 709.78 */
static inline __attribute__((always_inline)) double bj_unscale(double scaled, double x) {
    const double h = exp(fabs(x) * 0.5);
    return scaled * h * h;
}

/* K0, K1 below x = 2 (x > 0; t for z = x^2 over [0, 4]): series of I0, I1 / x and of K0, K1 less their logarithmic
 * and pole parts; e^x K0, K1 from 2 on, series in 2 / x. */
#define BJ_T_k0_below2(a) ((a) * (a) * 0.5 - 1)
#define BJ_A_k0_below2 bessel_k_k0_small
#define BJ_B_k0_below2 bessel_k_i0_small
#define BJ_TWO_k0_below2 1
#define BJ_DONE_k0_below2(a, sa, sb) ((sa) - (log(a) - M_LN2) * (sb))
#define BJ_T_k1_below2(a) ((a) * (a) * 0.5 - 1)
#define BJ_A_k1_below2 bessel_k_i1_small
#define BJ_B_k1_below2 bessel_k_k1_small
#define BJ_TWO_k1_below2 1
#define BJ_DONE_k1_below2(a, sa, sb) (1 / (a) + (log(a) - M_LN2) * ((a) * (sa)) + (a) * (sb))
#define BJ_T_k0e_above2(a) (4 / (a) - 1)
#define BJ_A_k0e_above2 bessel_k0e_large
#define BJ_TWO_k0e_above2 0
#define BJ_DONE_k0e_above2(a, sa, sb) ((sa) / sqrt(a))
#define BJ_T_k1e_above2(a) (4 / (a) - 1)
#define BJ_A_k1e_above2 bessel_k1e_large
#define BJ_TWO_k1e_above2 0
#define BJ_DONE_k1e_above2(a, sa, sb) ((sa) / sqrt(a))
#define BJ_B_j0_small BJ_A_j0_small /* unused: one series */
#define BJ_B_j1_small BJ_A_j1_small
#define BJ_B_i0e_small BJ_A_i0e_small
#define BJ_B_i1e_small BJ_A_i1e_small
#define BJ_B_i0e_large BJ_A_i0e_large
#define BJ_B_i1e_large BJ_A_i1e_large
#define BJ_B_k0e_above2 BJ_A_k0e_above2
#define BJ_B_k1e_above2 BJ_A_k1e_above2

/* r[i] = form at a[i] over a block (BJ_FORM expands form first: BJ_SMALL_fn names one). */
#define BJ_FORM(form, a, r) BJ_FORM_(form, a, r)
#define BJ_FORM_(form, a, r)                                                                                   \
    do {                                                                                                       \
        double t_[BJ_BLOCK], sa_[BJ_BLOCK], sb_[BJ_BLOCK];                                                     \
        for (int i = 0; i < BJ_BLOCK; i++) t_[i] = BJ_T_##form(a[i]);                                          \
        AXON_CHEBYSHEV_BLOCK(BJ_A_##form, t_, sa_, BJ_BLOCK);                                                  \
        if (BJ_TWO_##form) AXON_CHEBYSHEV_BLOCK(BJ_B_##form, t_, sb_, BJ_BLOCK);                               \
        else memset(sb_, 0, sizeof sb_);                                                                       \
        for (int i = 0; i < BJ_BLOCK; i++) r[i] = BJ_DONE_##form(a[i], sa_[i], sb_[i]);                        \
    } while (0)

/* Each function's forms below and from its split on; I0 and I1 run the scaled forms and unscale in the block's last
 * loop (BJ_FIX_i0, _i1), and each K op's forms give K below the split and e^x K above, scaled in that loop too
 * (BJ_FIX): GCC vectorizes the call to exp there, in a loop of its own, and not inside the forms' loops. */
#define BJ_SMALL_j0 j0_small
#define BJ_LARGE_j0 j0_large
#define BJ_SMALL_j1 j1_small
#define BJ_LARGE_j1 j1_large
#define BJ_SMALL_y0 y0_small
#define BJ_LARGE_y0 y0_large
#define BJ_SMALL_y1 y1_small
#define BJ_LARGE_y1 y1_large
#define BJ_SMALL_i0 i0e_small
#define BJ_LARGE_i0 i0e_large
#define BJ_SMALL_i1 i1e_small
#define BJ_LARGE_i1 i1e_large
#define BJ_SMALL_i0e i0e_small
#define BJ_LARGE_i0e i0e_large
#define BJ_SMALL_i1e i1e_small
#define BJ_LARGE_i1e i1e_large
#define BJ_SMALL_k0 k0_below2
#define BJ_LARGE_k0 k0e_above2
#define BJ_SMALL_k1 k1_below2
#define BJ_LARGE_k1 k1e_above2
#define BJ_SMALL_k0e k0_below2
#define BJ_LARGE_k0e k0e_above2
#define BJ_SMALL_k1e k1_below2
#define BJ_LARGE_k1e k1e_above2
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
        double a[BJ_BLOCK], rl[BJ_BLOCK];                                                                      \
        int small = 0, large = 0;                                                                              \
        for (int i = 0; i < BJ_BLOCK; i++) {                                                                   \
            a[i] = BJ_ARG_##fn(x[i]);                                                                          \
            small |= fabs(x[i]) <= BJ_SPLIT_##fn;                                                              \
            large |= !(fabs(x[i]) <= BJ_SPLIT_##fn);                                                           \
        }                                                                                                      \
        if (small) BJ_FORM(BJ_SMALL_##fn, a, r);                                                               \
        if (large && !small) BJ_FORM(BJ_LARGE_##fn, a, r);                                                     \
        if (large && small) {                                                                                  \
            BJ_FORM(BJ_LARGE_##fn, a, rl);                                                                     \
            for (int i = 0; i < BJ_BLOCK; i++) r[i] = fabs(x[i]) <= BJ_SPLIT_##fn ? r[i] : rl[i];              \
        }                                                                                                      \
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
