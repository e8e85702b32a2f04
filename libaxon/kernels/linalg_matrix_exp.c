/* The matrix exponential (axon_kernel_matrix_exp, axon/linalg.h), in place, one matrix per pool participant.
 *
 * Higham's scaling and squaring with the [13/13] Padé approximant (N. J. Higham, "The scaling and squaring method
 * for the matrix exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005): A is scaled by 2^-s so that its
 * 1-norm is at most theta_13, r_13(A) = Q^-1 P is formed from A^2, A^4 and A^6 (six products and one solve), and the
 * result squared s times. It runs in float64 (complex128 for complex dtypes) whatever the dtype, so a float32 result
 * is the exponential rounded once more; PyTorch CPU's Taylor-polynomial method works in the input's dtype, so the
 * two agree to that dtype's accuracy, not bit for bit. Storage order does not matter: exp(A^T) = exp(A)^T, so the
 * column-major batch is read as row-major matrices. A matrix with a NaN or an infinity gives NaN everywhere. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_impl.h"
#include "internal.h"
#include "kernels_impl.h"
#include "linalg_impl.h"

/* The [13/13] Padé coefficients b_0 .. b_13 and theta_13, the largest 1-norm it takes unscaled (Higham 2005). */
static const double mexp_b[14] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                                  1187353796428800.0,  129060195264000.0,   10559470521600.0,
                                  670442572800.0,      33522128640.0,       1323241920.0,
                                  40840800.0,          960960.0,            16380.0,
                                  182.0,               1.0};
#define MEXP_THETA13 5.371920351148152

/* One instantiation per compute type T (double, double complex): mexp_<sfx>(x, n) turns the n x n row-major x into
 * exp(x); 0, or LINALG_NOMEM. */
#define MEXP_DEFINE(SFX, T, ABS, GEMM)                                                                             \
    static void mexp_mm_##SFX(int64_t n, const T *x, const T *y, T *out) {                                         \
        GEMM(0, 0, n, n, n, 1.0, x, n, y, n, 0.0, out, n);                                                         \
    }                                                                                                              \
    /* x = q^-1 x by Gaussian elimination with partial pivoting on q (overwritten); 0, or -1 for a zero pivot. */  \
    static int mexp_solve_##SFX(int64_t n, T *q, T *x) {                                                           \
        for (int64_t k = 0; k < n; k++) {                                                                          \
            int64_t p = k;                                                                                         \
            for (int64_t i = k + 1; i < n; i++)                                                                    \
                if (ABS(q[i * n + k]) > ABS(q[p * n + k])) p = i;                                                  \
            if (q[p * n + k] == 0) return -1;                                                                      \
            if (p != k)                                                                                            \
                for (int64_t j = 0; j < n; j++) {                                                                  \
                    T t = q[k * n + j];                                                                            \
                    q[k * n + j] = q[p * n + j], q[p * n + j] = t;                                                 \
                    t = x[k * n + j];                                                                              \
                    x[k * n + j] = x[p * n + j], x[p * n + j] = t;                                                 \
                }                                                                                                  \
            for (int64_t i = k + 1; i < n; i++) {                                                                  \
                const T f = q[i * n + k] / q[k * n + k];                                                           \
                if (f == 0) continue;                                                                              \
                for (int64_t j = k + 1; j < n; j++) q[i * n + j] -= f * q[k * n + j];                              \
                for (int64_t j = 0; j < n; j++) x[i * n + j] -= f * x[k * n + j];                                  \
            }                                                                                                      \
        }                                                                                                          \
        for (int64_t k = n - 1; k >= 0; k--) {                                                                     \
            for (int64_t i = k + 1; i < n; i++) {                                                                  \
                const T f = q[k * n + i];                                                                          \
                for (int64_t j = 0; j < n; j++) x[k * n + j] -= f * x[i * n + j];                                  \
            }                                                                                                      \
            for (int64_t j = 0; j < n; j++) x[k * n + j] /= q[k * n + k];                                          \
        }                                                                                                          \
        return 0;                                                                                                  \
    }                                                                                                              \
    static int mexp_##SFX(T *x, int64_t n) {                                                                       \
        const int64_t nn = n * n;                                                                                  \
        double norm = 0;                                                                                           \
        for (int64_t j = 0; j < n; j++) { /* the 1-norm: the largest column sum */                                 \
            double c = 0;                                                                                          \
            for (int64_t i = 0; i < n; i++) c += ABS(x[i * n + j]);                                                \
            norm = c > norm || c != c ? c : norm;                                                                  \
        }                                                                                                          \
        if (!isfinite(norm)) {                                                                                     \
            for (int64_t i = 0; i < nn; i++) x[i] = NAN;                                                           \
            return 0;                                                                                              \
        }                                                                                                          \
        T *w = malloc((size_t)(6 * nn) * sizeof(T));                                                               \
        if (!w) return LINALG_NOMEM;                                                                               \
        T *a2 = w, *a4 = w + nn, *a6 = w + 2 * nn, *u = w + 3 * nn, *v = w + 4 * nn, *t = w + 5 * nn;             \
        const int s = norm > MEXP_THETA13 ? (int)ceil(log2(norm / MEXP_THETA13)) : 0;                              \
        const double scale = ldexp(1.0, -s);                                                                       \
        for (int64_t i = 0; i < nn; i++) x[i] *= scale;                                                            \
        mexp_mm_##SFX(n, x, x, a2);                                                                                \
        mexp_mm_##SFX(n, a2, a2, a4);                                                                              \
        mexp_mm_##SFX(n, a4, a2, a6);                                                                              \
        const double *b = mexp_b;                                                                                  \
        for (int64_t i = 0; i < nn; i++) t[i] = b[13] * a6[i] + b[11] * a4[i] + b[9] * a2[i];                      \
        mexp_mm_##SFX(n, a6, t, u);                                                                                \
        for (int64_t i = 0; i < nn; i++) u[i] += b[7] * a6[i] + b[5] * a4[i] + b[3] * a2[i];                       \
        for (int64_t i = 0; i < n; i++) u[i * n + i] += b[1];                                                      \
        mexp_mm_##SFX(n, x, u, t); /* U = A (...) */                                                               \
        for (int64_t i = 0; i < nn; i++) u[i] = b[12] * a6[i] + b[10] * a4[i] + b[8] * a2[i];                      \
        mexp_mm_##SFX(n, a6, u, v);                                                                                \
        for (int64_t i = 0; i < nn; i++) v[i] += b[6] * a6[i] + b[4] * a4[i] + b[2] * a2[i];                       \
        for (int64_t i = 0; i < n; i++) v[i * n + i] += b[0];                                                      \
        for (int64_t i = 0; i < nn; i++) x[i] = v[i] + t[i], u[i] = v[i] - t[i]; /* P into x, Q into u */          \
        if (mexp_solve_##SFX(n, u, x) != 0)                                                                        \
            for (int64_t i = 0; i < nn; i++) x[i] = NAN;                                                           \
        for (int k = 0; k < s; k++) {                                                                              \
            mexp_mm_##SFX(n, x, x, t);                                                                             \
            memcpy(x, t, (size_t)nn * sizeof(T));                                                                  \
        }                                                                                                          \
        free(w);                                                                                                   \
        return 0;                                                                                                  \
    }

MEXP_DEFINE(real, double, fabs, axon_gemm_f64)
MEXP_DEFINE(cplx, double complex, cabs, axon_gemm_c128)

/* Matrix i of operand 0, widened into float64 / complex128, exponentiated, narrowed back. */
static int mexp_one(const linalg_args_t *a, int64_t i) {
    const int64_t n = a->rows, nn = n * n;
    const axon_dtype_t dt = a->t[0].dtype;
    char *p = linalg_at(a, 0, i, nn);
    if (dt == AXON_FLOAT64) return mexp_real((double *)(void *)p, n);
    if (dt == AXON_COMPLEX128) return mexp_cplx((double complex *)(void *)p, n);
    const int cplx = dt == AXON_COMPLEX64;
    const axon_dtype_t wd = cplx ? AXON_COMPLEX128 : AXON_FLOAT64;
    char *w = malloc((size_t)nn * axon_dtype_size(wd));
    if (!w) return LINALG_NOMEM;
    axon_convert_get(dt, wd)(w, 1, p, 1, nn);
    const int rc = cplx ? mexp_cplx((double complex *)(void *)w, n) : mexp_real((double *)(void *)w, n);
    if (rc == 0) axon_convert_get(wd, dt)(p, 1, w, 1, nn);
    free(w);
    return rc;
}

axon_status_t axon_kernel_matrix_exp(axon_stream_t s, const axon_tensor_t *a) {
    linalg_args_t x;
    linalg_args_init(&x, "matrix_exp");
    axon_status_t st = linalg_check_square(&x, a, "a");
    if (st != AXON_OK) return st;
    x.t[0] = *a;
    x.present[0] = 1;
    x.fn = mexp_one;
    return linalg_launch(s, &x, 0);
}
