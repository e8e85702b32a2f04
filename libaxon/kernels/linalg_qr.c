/* Householder QR (axon/linalg.h): the reflectors, their product, and their product applied to a matrix. */
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"
#include "linalg_impl.h"

/* ---- geqrf: a (0), tau (1) ---- */

static int geqrf_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t m = a->rows, n = a->cols;
    const int info = la_geqrf(a->t[0].dtype, (int)m, (int)n, linalg_at(a, 0, i, m * n), linalg_ld(m),
                              linalg_at(a, 1, i, linalg_min(m, n)));
    if (info < 0) return info;
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_geqrf(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *tau) {
    linalg_args_t x;
    linalg_args_init(&x, "geqrf");
    axon_status_t st = linalg_check_matrices(a, x.name, "a", &x.batch, &x.rows, &x.cols);
    if (st == AXON_OK) st = linalg_check_vectors(tau, x.name, "tau", a->dtype, x.batch, linalg_min(x.rows, x.cols));
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *tau;
    x.present[0] = x.present[1] = 1;
    x.fn = geqrf_one;
    return linalg_launch(s, &x, 1);
}

/* ---- householder product: a (0), tau (1) ---- */

static int householder_product_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t m = a->rows, n = a->cols, k = a->t[1].sizes[a->t[1].ndim - 1];
    const int info = la_orgqr(a->t[0].dtype, (int)m, (int)n, (int)k, linalg_at(a, 0, i, m * n), linalg_ld(m),
                              linalg_at(a, 1, i, k));
    if (info < 0) return info;
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_householder_product(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *tau) {
    linalg_args_t x;
    linalg_args_init(&x, "householder_product");
    axon_status_t st = linalg_check_matrices(a, x.name, "a", &x.batch, &x.rows, &x.cols);
    if (st == AXON_OK && x.rows < x.cols)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "householder_product: a must have at least as many rows as columns, "
                       "has %lld x %lld", (long long)x.rows, (long long)x.cols);
    if (st == AXON_OK && tau->ndim < 1)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "householder_product: tau must have one or more dimensions");
    const int64_t k = st == AXON_OK ? tau->sizes[tau->ndim - 1] : 0;
    if (st == AXON_OK && k > x.cols)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "householder_product: %lld reflectors for %lld columns", (long long)k,
                       (long long)x.cols);
    if (st == AXON_OK) st = linalg_check_vectors(tau, x.name, "tau", a->dtype, x.batch, k);
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *tau;
    x.present[0] = x.present[1] = 1;
    x.fn = householder_product_one;
    return linalg_launch(s, &x, 1);
}

/* ---- ormqr: a (0), tau (1), c (2) ---- */

static int ormqr_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t ar = a->rows, k = a->cols, m = a->t[2].sizes[a->t[2].ndim - 2], n = a->t[2].sizes[a->t[2].ndim - 1];
    const int info = la_ormqr(a->t[0].dtype, a->left, linalg_trans_char(a->op), (int)m, (int)n, (int)k,
                              linalg_at(a, 0, i, ar * k), linalg_ld(ar), linalg_at(a, 1, i, k),
                              linalg_at(a, 2, i, m * n), linalg_ld(m));
    if (info < 0) return info;
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_ormqr(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *tau,
                                const axon_tensor_t *c, int left, axon_linalg_op_t op) {
    linalg_args_t x;
    linalg_args_init(&x, "ormqr");
    int64_t cb = 0, m = -1, n = -1;
    axon_status_t st = linalg_check_matrices(c, x.name, "c", &cb, &m, &n);
    if (st == AXON_OK) x.rows = left ? m : n, st = linalg_check_matrices(a, x.name, "a", &x.batch, &x.rows, &x.cols);
    if (st == AXON_OK && x.cols > x.rows)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "ormqr: %lld reflectors of length %lld", (long long)x.cols,
                       (long long)x.rows);
    if (st == AXON_OK && cb != x.batch)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "ormqr: a has %lld matrices, c %lld", (long long)x.batch,
                       (long long)cb);
    if (st == AXON_OK) st = linalg_check_same_dtype(c, a->dtype, x.name, "c");
    if (st == AXON_OK) st = linalg_check_vectors(tau, x.name, "tau", a->dtype, x.batch, x.cols);
    const int cplx = a->dtype == AXON_COMPLEX64 || a->dtype == AXON_COMPLEX128;
    if (st == AXON_OK && (unsigned)op > AXON_LINALG_CONJTRANS)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "ormqr: op %d is not a transposition", (int)op);
    if (st == AXON_OK && op != AXON_LINALG_NOTRANS && (op == AXON_LINALG_CONJTRANS) != cplx)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "ormqr: %s takes the %s transpose", axon_dtype_name(a->dtype),
                       cplx ? "conjugate" : "plain");
    if (st != AXON_OK) return st;
    if (m * n == 0) return AXON_OK;
    x.t[0] = *a, x.t[1] = *tau, x.t[2] = *c;
    x.present[0] = x.present[1] = x.present[2] = 1;
    x.left = left != 0, x.op = op;
    x.fn = ormqr_one;
    return linalg_launch(s, &x, 1);
}
