/* LU and what is computed from it (axon/linalg.h): the factorization, solves, the inverse, the determinant and the
 * unpacked P, L, U. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"
#include "linalg_impl.h"

_Static_assert(sizeof(int) == sizeof(int32_t), "LAPACK's (LP64) pivots are int32 as PyTorch's");

/* 1 when every pivot of a matrix with `rows` rows is in [1, rows]: getrs and the unpacking index rows with them. */
static int pivots_ok(const int32_t *piv, int64_t k, int64_t rows) {
    for (int64_t j = 0; j < k; j++)
        if (piv[j] < 1 || piv[j] > rows) return 0;
    return 1;
}

/* ---- factor: a (0), pivots (1), info (2) ---- */

static int lu_factor_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t m = a->rows, n = a->cols;
    const int info = la_getrf(a->t[0].dtype, (int)m, (int)n, linalg_at(a, 0, i, m * n), linalg_ld(m),
                              (int *)linalg_at(a, 1, i, linalg_min(m, n)));
    if (info < 0) return info;
    linalg_set_info(a, 2, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_lu_factor(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *pivots,
                                    const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "lu_factor");
    axon_status_t st = linalg_check_matrices(a, x.name, "a", &x.batch, &x.rows, &x.cols);
    if (st == AXON_OK) st = linalg_check_vectors(pivots, x.name, "pivots", AXON_INT32, x.batch, linalg_min(x.rows, x.cols));
    if (st == AXON_OK) st = linalg_check_vectors(info, x.name, "info", AXON_INT32, x.batch, 1);
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *pivots, x.t[2] = *info;
    x.present[0] = x.present[1] = x.present[2] = 1;
    x.fn = lu_factor_one;
    return linalg_launch(s, &x, 1);
}

/* ---- solve: lu (0), pivots (1), b (2) ---- */

static int lu_solve_part(const linalg_args_t *a, int64_t i, int64_t lo, int64_t hi) {
    const int64_t n = a->rows, k = a->rhs;
    const int32_t *piv = (const int32_t *)linalg_at(a, 1, i, n);
    if (!pivots_ok(piv, n, n)) return LINALG_BAD_PIVOT;
#ifdef AXON_HAVE_MKL
    char *b = linalg_at(a, 2, i, n * k) + (size_t)(lo * n) * axon_dtype_size(a->t[2].dtype);   /* columns lo.. */
    const int info = la_getrs(a->t[0].dtype, linalg_trans_char(a->op), (int)n, (int)(hi - lo),
                              linalg_at(a, 0, i, n * n), linalg_ld(n), piv, b, linalg_ld(n));
    if (info < 0) return info;
#endif
    return 0;
}

axon_status_t axon_kernel_lu_solve(axon_stream_t s, const axon_tensor_t *lu, const axon_tensor_t *pivots,
                                   const axon_tensor_t *b, axon_linalg_op_t op) {
    linalg_args_t x;
    linalg_args_init(&x, "lu_solve");
    int64_t k = 0;
    axon_status_t st = linalg_check_square(&x, lu, "lu");
    if (st == AXON_OK) st = linalg_check_rhs(&x, lu, "lu", b, &k);
    if (st == AXON_OK) st = linalg_check_vectors(pivots, x.name, "pivots", AXON_INT32, x.batch, x.rows);
    if (st == AXON_OK && (unsigned)op > AXON_LINALG_CONJTRANS)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "lu_solve: op %d is not a transposition", (int)op);
    if (st != AXON_OK) return st;
    if (k == 0) return AXON_OK;
    x.t[0] = *lu, x.t[1] = *pivots, x.t[2] = *b;
    x.present[0] = x.present[1] = x.present[2] = 1;
    x.op = op;
    x.part_fn = lu_solve_part;
    x.rhs = k;
    return linalg_launch(s, &x, 1);
}

/* ---- inverse: a (0), info (1) ---- */

static int inverse_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t n = a->rows;
    int *piv = malloc((size_t)(n > 0 ? n : 1) * sizeof *piv);
    if (!piv) return LINALG_NOMEM;
    void *m = linalg_at(a, 0, i, n * n);
    int info = la_getrf(a->t[0].dtype, (int)n, (int)n, m, linalg_ld(n), piv);
    if (info == 0) info = la_getri(a->t[0].dtype, (int)n, m, linalg_ld(n), piv);
    free(piv);
    if (info < 0) return info;
    linalg_set_info(a, 1, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_inverse(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "inverse");
    axon_status_t st = linalg_check_square(&x, a, "a");
    if (st == AXON_OK) st = linalg_check_vectors(info, x.name, "info", AXON_INT32, x.batch, 1);
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *info;
    x.present[0] = x.present[1] = 1;
    x.fn = inverse_one;
    return linalg_launch(s, &x, 1);
}

/* ---- determinant: lu (0), pivots (1), det or sign (2), logabsdet (3, optional) ---- */

static double complex load_c(const char *p, axon_dtype_t t) {
    switch (t) {
    case AXON_FLOAT32: return *(const float *)p;
    case AXON_FLOAT64: return *(const double *)p;
    case AXON_COMPLEX64: return CMPLXF(((const float *)p)[0], ((const float *)p)[1]);
    default: return CMPLX(((const double *)p)[0], ((const double *)p)[1]);
    }
}

static void store_c(char *p, axon_dtype_t t, double complex v) {
    switch (t) {
    case AXON_FLOAT32: *(float *)p = (float)creal(v); break;
    case AXON_FLOAT64: *(double *)p = creal(v); break;
    case AXON_COMPLEX64: ((float *)p)[0] = (float)creal(v), ((float *)p)[1] = (float)cimag(v); break;
    default: ((double *)p)[0] = creal(v), ((double *)p)[1] = cimag(v); break;
    }
}

static int lu_det_one(const linalg_args_t *a, int64_t i) {
    const int64_t n = a->rows;
    const axon_dtype_t t = a->t[0].dtype;
    const size_t es = axon_dtype_size(t);
    const char *lu = linalg_at(a, 0, i, n * n);
    const int32_t *piv = (const int32_t *)linalg_at(a, 1, i, n);
    int odd = 0;
    for (int64_t j = 0; j < n; j++) odd ^= piv[j] != j + 1;
    /* in double precision: a float32 determinant does not overflow in its running product */
    if (!a->present[3]) {
        double complex det = odd ? -1.0 : 1.0;
        for (int64_t j = 0; j < n; j++) det *= load_c(lu + (size_t)(j * n + j) * es, t);
        store_c(linalg_at(a, 2, i, 1), t, det);
        return 0;
    }
    double complex sign = odd ? -1.0 : 1.0;
    double logabs = 0.0;
    for (int64_t j = 0; j < n; j++) {
        const double complex d = load_c(lu + (size_t)(j * n + j) * es, t);
        const double mag = cabs(d);
        sign = mag == 0.0 ? 0.0 : sign * (d / mag);
        logabs += log(mag);
    }
    store_c(linalg_at(a, 2, i, 1), t, sign);
    store_c(linalg_at(a, 3, i, 1), linalg_real_dtype(t), logabs);
    return 0;
}

axon_status_t axon_kernel_lu_det(axon_stream_t s, const axon_tensor_t *lu, const axon_tensor_t *pivots,
                                 const axon_tensor_t *det, const axon_tensor_t *logabsdet) {
    linalg_args_t x;
    linalg_args_init(&x, logabsdet ? "slogdet" : "det");
    axon_status_t st = linalg_check_square(&x, lu, "lu");
    if (st == AXON_OK) st = linalg_check_vectors(pivots, x.name, "pivots", AXON_INT32, x.batch, x.rows);
    if (st == AXON_OK) st = linalg_check_vectors(det, x.name, logabsdet ? "sign" : "det", lu->dtype, x.batch, 1);
    if (st == AXON_OK && logabsdet)
        st = linalg_check_vectors(logabsdet, x.name, "logabsdet", linalg_real_dtype(lu->dtype), x.batch, 1);
    if (st != AXON_OK) return st;
    x.t[0] = *lu, x.t[1] = *pivots, x.t[2] = *det;
    x.present[0] = x.present[1] = x.present[2] = 1;
    if (logabsdet) x.t[3] = *logabsdet, x.present[3] = 1;
    x.fn = lu_det_one;
    return linalg_launch(s, &x, 0);
}

/* ---- unpack: lu (0), pivots (1), p (2), l (3), u (4); p, l, u row-major ---- */

static void store_one(char *p, axon_dtype_t t) { store_c(p, t, 1.0); }

static int lu_unpack_one(const linalg_args_t *a, int64_t i) {
    const int64_t m = a->rows, n = a->cols, k = linalg_min(m, n);
    const axon_dtype_t t = a->t[0].dtype;
    const size_t es = axon_dtype_size(t);
    const char *lu = linalg_at(a, 0, i, m * n);
    if (a->present[2]) {
        const int32_t *piv = (const int32_t *)linalg_at(a, 1, i, k);
        if (!pivots_ok(piv, k, m)) return LINALG_BAD_PIVOT;
        int64_t *perm = malloc((size_t)(m > 0 ? m : 1) * sizeof *perm);
        if (!perm) return LINALG_NOMEM;
        for (int64_t r = 0; r < m; r++) perm[r] = r;
        for (int64_t j = 0; j < k; j++) {
            const int64_t o = piv[j] - 1, tmp = perm[j];
            perm[j] = perm[o], perm[o] = tmp;
        }
        /* A = P L U with row j of L U being row perm[j] of A: P[perm[j], j] = 1 */
        char *p = linalg_at(a, 2, i, m * m);
        memset(p, 0, (size_t)(m * m) * es);
        for (int64_t j = 0; j < m; j++) store_one(p + (size_t)(perm[j] * m + j) * es, t);
        free(perm);
    }
    if (a->present[3]) {
        char *l = linalg_at(a, 3, i, m * k);
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < k; c++) {
                char *d = l + (size_t)(r * k + c) * es;
                if (r > c) memcpy(d, lu + (size_t)(c * m + r) * es, es);
                else if (r == c) store_one(d, t);
                else memset(d, 0, es);
            }
    }
    if (a->present[4]) {
        char *u = linalg_at(a, 4, i, k * n);
        for (int64_t r = 0; r < k; r++)
            for (int64_t c = 0; c < n; c++) {
                char *d = u + (size_t)(r * n + c) * es;
                if (r <= c) memcpy(d, lu + (size_t)(c * m + r) * es, es);
                else memset(d, 0, es);
            }
    }
    return 0;
}

static axon_status_t check_rowmajor(const axon_tensor_t *t, const char *role, axon_dtype_t dtype, int64_t batch,
                                    int64_t rows, int64_t cols) {
    axon_status_t st = linalg_check_vectors(t, "lu_unpack", role, dtype, batch, rows * cols);
    if (st == AXON_OK && (t->ndim < 2 || t->sizes[t->ndim - 2] != rows || t->sizes[t->ndim - 1] != cols))
        st = axon_fail(AXON_ERROR_INVALID_ARG, "lu_unpack: %s must hold %lld x %lld matrices", role, (long long)rows,
                       (long long)cols);
    return st;
}

axon_status_t axon_kernel_lu_unpack(axon_stream_t s, const axon_tensor_t *lu, const axon_tensor_t *pivots,
                                    const axon_tensor_t *p, const axon_tensor_t *l, const axon_tensor_t *u) {
    linalg_args_t x;
    linalg_args_init(&x, "lu_unpack");
    axon_status_t st = linalg_check_matrices(lu, x.name, "lu", &x.batch, &x.rows, &x.cols);
    const int64_t m = x.rows, n = x.cols, k = linalg_min(m, n);
    if (st == AXON_OK) st = linalg_check_vectors(pivots, x.name, "pivots", AXON_INT32, x.batch, k);
    if (st == AXON_OK && p) st = check_rowmajor(p, "p", lu->dtype, x.batch, m, m);
    if (st == AXON_OK && l) st = check_rowmajor(l, "l", lu->dtype, x.batch, m, k);
    if (st == AXON_OK && u) st = check_rowmajor(u, "u", lu->dtype, x.batch, k, n);
    if (st != AXON_OK) return st;
    x.t[0] = *lu, x.t[1] = *pivots;
    x.present[0] = x.present[1] = 1;
    if (p) x.t[2] = *p, x.present[2] = 1;
    if (l) x.t[3] = *l, x.present[3] = 1;
    if (u) x.t[4] = *u, x.present[4] = 1;
    x.fn = lu_unpack_one;
    return linalg_launch(s, &x, 0);
}
