/* Portable GEMM: the float32/float64/complex fallback when no BLAS library was found, and the integer GEMM.
 *
 * The float code is the classic Goto/BLIS blocking in plain C: a KC x NC panel of B and an MC x KC block of A are
 * packed into contiguous buffers (which also absorbs the transpose flags and folds alpha into A), then a micro-kernel
 * keeps an MR x NR block of C in local accumulators while it streams through the panels. The accumulator loops have
 * fixed trip counts, so GCC at -O3 keeps them in vector registers; the panel sizes keep B's panel in L2 and A's
 * block rows in L1. No intrinsics: it is a correct, reasonably fast floor, not a replacement for a tuned library. */
#include <stdlib.h>

#include "dtype.h"
#include "gemm_impl.h"
#include "kernels_impl.h"

#define GEMM_MR 4
#define GEMM_KC 256
#define GEMM_MC 64

static int64_t gemm_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* One definition per float type T; NR is the micro-tile width (two 64-byte vectors of T), NC the panel width. */
#define GEMM_PORTABLE(T, NAME, NR, NC)                                                                              \
    static void NAME##_pack_b(T *bp, int tb, const T *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,          \
                              int64_t nc) {                                                                         \
        for (int64_t p = 0; p < kc; p++)                                                                            \
            for (int64_t j = 0; j < nc; j++)                                                                        \
                bp[p * nc + j] = tb ? b[(j0 + j) * ldb + p0 + p] : b[(p0 + p) * ldb + j0 + j];                      \
    }                                                                                                               \
    static void NAME##_pack_a(T *ap, int ta, T alpha, const T *a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,  \
                              int64_t kc) {                                                                         \
        for (int64_t i = 0; i < mc; i++)                                                                            \
            for (int64_t p = 0; p < kc; p++)                                                                        \
                ap[i * kc + p] = alpha * (ta ? a[(p0 + p) * lda + i0 + i] : a[(i0 + i) * lda + p0 + p]);            \
    }                                                                                                               \
    /* C[0..mr, 0..nr) (+)= Ap[0..mr, :] @ Bp[:, 0..nr); beta 0 overwrites, else C = acc + beta * C. */             \
    static void NAME##_micro(int64_t mr, int64_t nr, int64_t kc, const T *ap, const T *bp, int64_t ldbp, T beta,    \
                             T *c, int64_t ldc) {                                                                   \
        T acc[GEMM_MR][NR] = {{0}};                                                                                 \
        if (mr == GEMM_MR && nr == NR) {                                                                            \
            for (int64_t p = 0; p < kc; p++) {                                                                      \
                const T *brow = bp + p * ldbp;                                                                      \
                for (int r = 0; r < GEMM_MR; r++) {                                                                 \
                    T av = ap[r * kc + p];                                                                          \
                    for (int j = 0; j < NR; j++) acc[r][j] += av * brow[j];                                         \
                }                                                                                                   \
            }                                                                                                       \
        } else {                                                                                                    \
            for (int64_t p = 0; p < kc; p++) {                                                                      \
                const T *brow = bp + p * ldbp;                                                                      \
                for (int64_t r = 0; r < mr; r++) {                                                                  \
                    T av = ap[r * kc + p];                                                                          \
                    for (int64_t j = 0; j < nr; j++) acc[r][j] += av * brow[j];                                     \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        for (int64_t r = 0; r < mr; r++)                                                                            \
            for (int64_t j = 0; j < nr; j++)                                                                        \
                c[r * ldc + j] = beta == 0 ? acc[r][j] : acc[r][j] + beta * c[r * ldc + j];                         \
    }                                                                                                               \
    int NAME(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,         \
             int64_t ldb, T beta, T *c, int64_t ldc) {                                                              \
        if (k == 0 || alpha == 0) {                                                                                 \
            for (int64_t i = 0; i < m; i++)                                                                         \
                for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];            \
            return 0;                                                                                               \
        }                                                                                                           \
        T *bp = malloc(sizeof(T) * GEMM_KC * NC), *ap = malloc(sizeof(T) * GEMM_MC * GEMM_KC);                      \
        if (bp == NULL || ap == NULL) {                                                                             \
            free(bp);                                                                                               \
            free(ap);                                                                                               \
            return -1;                                                                                              \
        }                                                                                                           \
        for (int64_t j0 = 0; j0 < n; j0 += NC) {                                                                    \
            int64_t nc = gemm_min(NC, n - j0);                                                                      \
            for (int64_t p0 = 0; p0 < k; p0 += GEMM_KC) {                                                           \
                int64_t kc = gemm_min(GEMM_KC, k - p0);                                                             \
                T bet = p0 == 0 ? beta : (T)1; /* later K panels accumulate onto the first */                      \
                NAME##_pack_b(bp, tb, b, ldb, p0, kc, j0, nc);                                                      \
                for (int64_t i0 = 0; i0 < m; i0 += GEMM_MC) {                                                       \
                    int64_t mc = gemm_min(GEMM_MC, m - i0);                                                         \
                    NAME##_pack_a(ap, ta, alpha, a, lda, i0, mc, p0, kc);                                           \
                    for (int64_t i = 0; i < mc; i += GEMM_MR)                                                       \
                        for (int64_t j = 0; j < nc; j += NR)                                                        \
                            NAME##_micro(gemm_min(GEMM_MR, mc - i), gemm_min(NR, nc - j), kc, ap + i * kc, bp + j,  \
                                         nc, bet, c + (i0 + i) * ldc + j0 + j, ldc);                                \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        free(bp);                                                                                                   \
        free(ap);                                                                                                   \
        return 0;                                                                                                   \
    }

GEMM_PORTABLE(float, axon_gemm_portable_f32, 32, 512)
GEMM_PORTABLE(double, axon_gemm_portable_f64, 16, 256)

/* Integer GEMM: a plain loop (PyTorch's CPU integer mm is one too). Products and sums go through uint64_t so that
 * overflow wraps instead of being undefined; the row of C is accumulated in chunks so B is read along its rows.
 * Cloned per ISA: AVX-512 multiplies 64-bit lanes in one instruction (vpmullq), which the baseline build lacks. */
AXON_CLONES void axon_gemm_i64(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t alpha, const int64_t *a, int64_t lda,
                   const int64_t *b, int64_t ldb, int64_t beta, int64_t *c, int64_t ldc) {
    enum { CHUNK = 256 };
    uint64_t acc[CHUNK];
    int64_t as_i = ta ? 1 : lda, as_p = ta ? lda : 1, bs_p = tb ? 1 : ldb, bs_j = tb ? ldb : 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
            int64_t nc = gemm_min(CHUNK, n - j0);
            for (int64_t j = 0; j < nc; j++) acc[j] = 0;
            for (int64_t p = 0; p < k; p++) {
                uint64_t av = (uint64_t)a[i * as_i + p * as_p];
                const int64_t *brow = b + p * bs_p + j0 * bs_j;
                for (int64_t j = 0; j < nc; j++) acc[j] += av * (uint64_t)brow[j * bs_j];
            }
            int64_t *crow = c + i * ldc + j0;
            for (int64_t j = 0; j < nc; j++) {
                uint64_t v = (uint64_t)alpha * acc[j];
                if (beta != 0) v += (uint64_t)beta * (uint64_t)crow[j];
                crow[j] = (int64_t)v;
            }
        }
}

/* Complex GEMM: a plain loop (the fallback where no library has cgemm and zgemm), each dot product accumulated in
 * the element type with the four-multiply product. */
#define GEMM_PORTABLE_COMPLEX(T, R, NAME)                                                                          \
    int NAME(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *av, int64_t lda,            \
             const void *bv, int64_t ldb, double beta, void *cv, int64_t ldc) {                                     \
        const T *a = av, *b = bv;                                                                                   \
        T *c = cv;                                                                                                  \
        int64_t as_i = ta ? 1 : lda, as_p = ta ? lda : 1, bs_p = tb ? 1 : ldb, bs_j = tb ? ldb : 1;                 \
        for (int64_t i = 0; i < m; i++)                                                                             \
            for (int64_t j = 0; j < n; j++) {                                                                       \
                R re = 0, im = 0;                                                                                   \
                for (int64_t p = 0; p < k; p++) {                                                                   \
                    T x = a[i * as_i + p * as_p], y = b[p * bs_p + j * bs_j];                                       \
                    re += x.re * y.re - x.im * y.im;                                                                \
                    im += x.re * y.im + x.im * y.re;                                                                \
                }                                                                                                   \
                T *o = &c[i * ldc + j];                                                                             \
                R ore = beta == 0 ? 0 : (R)beta * o->re, oim = beta == 0 ? 0 : (R)beta * o->im;                    \
                o->re = (R)alpha * re + ore;                                                                        \
                o->im = (R)alpha * im + oim;                                                                        \
            }                                                                                                       \
        return 0;                                                                                                   \
    }
GEMM_PORTABLE_COMPLEX(axon_c64_t, float, axon_gemm_portable_c64)
GEMM_PORTABLE_COMPLEX(axon_c128_t, double, axon_gemm_portable_c128)
