/* Least squares (axon_kernel_lstsq, axon/linalg.h): one LAPACK driver call per matrix of the batch. Operands: a (0),
 * b (1), rank (2, int64), sv (3), info (4). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "linalg_impl.h"

static int lstsq_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t m = a->rows, n = a->cols, k = a->rhs, lb = m > n ? m : n, mn = linalg_min(m, n);
    const int driver = a->flag;
    int *jpvt = NULL, rank = 0;
    if (driver == AXON_LSTSQ_GELSY && (jpvt = calloc((size_t)(n > 0 ? n : 1), sizeof *jpvt)) == NULL) return LINALG_NOMEM;
    const int info = la_gels_any(a->t[0].dtype, driver, (int)m, (int)n, (int)k, linalg_at(a, 0, i, m * n),
                                 linalg_ld(m), linalg_at(a, 1, i, lb * k), linalg_ld(lb), a->rcond, jpvt,
                                 a->present[3] ? linalg_at(a, 3, i, mn) : NULL, &rank);
    free(jpvt);
    if (info < 0) return info;
    if (a->present[2]) ((int64_t *)a->t[2].data)[i] = rank;
    linalg_set_info(a, 4, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_lstsq(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *b,
                                const axon_tensor_t *rank, const axon_tensor_t *sv, const axon_tensor_t *info,
                                axon_lstsq_driver_t driver, double rcond) {
    linalg_args_t x;
    linalg_args_init(&x, "lstsq");
    if ((unsigned)driver > AXON_LSTSQ_GELSS)
        return axon_fail(AXON_ERROR_INVALID_ARG, "lstsq: driver %d is not an axon_lstsq_driver_t", (int)driver);
    axon_status_t st = linalg_check_matrices(a, x.name, "a", &x.batch, &x.rows, &x.cols);
    const int64_t m = x.rows, n = x.cols;
    int64_t bb = 0, br = m > n ? m : n, bc = -1;
    if (st == AXON_OK) st = linalg_check_matrices(b, x.name, "b", &bb, &br, &bc);
    if (st == AXON_OK && bb != x.batch)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "lstsq: a has %lld matrices, b %lld", (long long)x.batch,
                       (long long)bb);
    if (st == AXON_OK) st = linalg_check_same_dtype(b, a->dtype, x.name, "b");
    const int wants_rank = driver != AXON_LSTSQ_GELS, wants_sv = driver == AXON_LSTSQ_GELSD || driver == AXON_LSTSQ_GELSS;
    if (st == AXON_OK && ((rank != NULL) != wants_rank || (sv != NULL) != wants_sv))
        st = axon_fail(AXON_ERROR_INVALID_ARG, "lstsq: rank is for gelsy, gelsd and gelss, sv for gelsd and gelss");
    if (st == AXON_OK && rank) st = linalg_check_vectors(rank, x.name, "rank", AXON_INT64, x.batch, 1);
    if (st == AXON_OK && sv)
        st = linalg_check_vectors(sv, x.name, "sv", linalg_real_dtype(a->dtype), x.batch, linalg_min(m, n));
    if (st == AXON_OK) st = linalg_check_vectors(info, x.name, "info", AXON_INT32, x.batch, 1);
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *b, x.t[4] = *info;
    x.present[0] = x.present[1] = x.present[4] = 1;
    if (rank) x.t[2] = *rank, x.present[2] = 1;
    if (sv) x.t[3] = *sv, x.present[3] = 1;
    x.flag = (int)driver;
    x.rhs = bc;
    x.rcond = rcond;
    x.fn = lstsq_one;
    return linalg_launch(s, &x, 1);
}
