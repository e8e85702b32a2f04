/* Householder QR (axon/linalg.h): the reflectors and their product. */
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
