/* Triangular solves and the symmetric factorizations: the Cholesky family and LDL^T (axon/linalg.h). */
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"
#include "linalg_impl.h"

/* Zero the strict lower (upper = 1) or strict upper triangle of an n x n column-major matrix. */
static void zero_other_triangle(char *m, int64_t n, size_t es, int upper) {
    for (int64_t c = 0; c < n; c++) {
        if (upper && c + 1 < n) memset(m + (size_t)(c * n + c + 1) * es, 0, (size_t)(n - c - 1) * es);
        if (!upper && c > 0) memset(m + (size_t)(c * n) * es, 0, (size_t)c * es);
    }
}

/* Fill the triangle opposite `upper`'s with the conjugate transpose of the other: a Hermitian matrix in full. */
static void mirror_triangle(char *m, int64_t n, axon_dtype_t t, int upper) {
    const size_t es = axon_dtype_size(t);
    const int cplx = t == AXON_COMPLEX64 || t == AXON_COMPLEX128;
    for (int64_t c = 0; c < n; c++)
        for (int64_t r = c + 1; r < n; r++) {
            /* (r, c) below the diagonal and (c, r) above it */
            char *below = m + (size_t)(c * n + r) * es, *above = m + (size_t)(r * n + c) * es;
            char *dst = upper ? below : above;
            memcpy(dst, upper ? above : below, es);
            if (!cplx) continue;
            if (t == AXON_COMPLEX64) ((float *)dst)[1] = -((float *)dst)[1];
            else ((double *)dst)[1] = -((double *)dst)[1];
        }
}

/* ---- triangular solve: a (0), b (1) ---- */

/* Parts of B: its columns for a left solve, its rows for a right one (X op(A) = B row by row). */
static int triangular_solve_part(const linalg_args_t *a, int64_t i, int64_t lo, int64_t hi) {
#ifdef AXON_HAVE_MKL
    const int64_t m = a->t[1].sizes[a->t[1].ndim - 2], n = a->t[1].sizes[a->t[1].ndim - 1];
    const int64_t k = a->left ? m : n;
    const size_t es = axon_dtype_size(a->t[1].dtype);
    char *b = linalg_at(a, 1, i, m * n) + (size_t)(a->left ? lo * m : lo) * es;
    la_trsm(a->t[0].dtype, a->left, a->upper, a->op, a->unit, a->left ? (int)m : (int)(hi - lo),
            a->left ? (int)(hi - lo) : (int)n, linalg_at(a, 0, i, k * k), linalg_ld(k), b, linalg_ld(m));
#else
    (void)a, (void)i, (void)lo, (void)hi;
#endif
    return 0;
}

axon_status_t axon_kernel_triangular_solve(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *b,
                                           int upper, int left, int unit, axon_linalg_op_t op) {
    linalg_args_t x;
    linalg_args_init(&x, "triangular_solve");
    int64_t bb = 0, m = -1, n = -1;
    axon_status_t st = linalg_check_matrices(b, x.name, "b", &bb, &m, &n);
    if (st == AXON_OK) {
        x.rows = x.cols = left ? m : n;
        st = linalg_check_matrices(a, x.name, "a", &x.batch, &x.rows, &x.cols);
    }
    if (st == AXON_OK && bb != x.batch)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "triangular_solve: a has %lld matrices, b %lld", (long long)x.batch,
                       (long long)bb);
    if (st == AXON_OK) st = linalg_check_same_dtype(b, a->dtype, x.name, "b");
    if (st == AXON_OK && (unsigned)op > AXON_LINALG_CONJTRANS)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "triangular_solve: op %d is not a transposition", (int)op);
    if (st != AXON_OK) return st;
    if (m * n == 0) return AXON_OK;
    x.t[0] = *a, x.t[1] = *b;
    x.present[0] = x.present[1] = 1;
    x.upper = upper != 0, x.left = left != 0, x.unit = unit != 0, x.op = op;
    x.part_fn = triangular_solve_part;
    x.rhs = left ? n : m;
    return linalg_launch(s, &x, 1);
}

/* ---- Cholesky: a (0), info (1) ---- */

static int cholesky_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t n = a->rows;
    char *m = linalg_at(a, 0, i, n * n);
    const int info = la_potrf(a->t[0].dtype, a->upper ? 'U' : 'L', (int)n, m, linalg_ld(n));
    if (info < 0) return info;
    zero_other_triangle(m, n, axon_dtype_size(a->t[0].dtype), a->upper);
    linalg_set_info(a, 1, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

/* ---- Cholesky inverse: a (0), info (1) ---- */

static int cholesky_inverse_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t n = a->rows;
    char *m = linalg_at(a, 0, i, n * n);
    const int info = la_potri(a->t[0].dtype, a->upper ? 'U' : 'L', (int)n, m, linalg_ld(n));
    if (info < 0) return info;
    mirror_triangle(m, n, a->t[0].dtype, a->upper);
    linalg_set_info(a, 1, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

static axon_status_t square_with_info(linalg_args_t *x, const axon_tensor_t *a, const axon_tensor_t *info) {
    axon_status_t st = linalg_check_square(x, a, "a");
    if (st == AXON_OK) st = linalg_check_vectors(info, x->name, "info", AXON_INT32, x->batch, 1);
    if (st != AXON_OK) return st;
    x->t[0] = *a, x->t[1] = *info;
    x->present[0] = x->present[1] = 1;
    return AXON_OK;
}

axon_status_t axon_kernel_cholesky(axon_stream_t s, const axon_tensor_t *a, int upper, const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "cholesky");
    axon_status_t st = square_with_info(&x, a, info);
    if (st != AXON_OK) return st;
    x.upper = upper != 0;
    x.fn = cholesky_one;
    return linalg_launch(s, &x, 1);
}

axon_status_t axon_kernel_cholesky_inverse(axon_stream_t s, const axon_tensor_t *a, int upper,
                                           const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "cholesky_inverse");
    axon_status_t st = square_with_info(&x, a, info);
    if (st != AXON_OK) return st;
    x.upper = upper != 0;
    x.fn = cholesky_inverse_one;
    return linalg_launch(s, &x, 1);
}

/* ---- Cholesky solve: f (0), b (1) ---- */

static int cholesky_solve_part(const linalg_args_t *a, int64_t i, int64_t lo, int64_t hi) {
#ifdef AXON_HAVE_MKL
    const int64_t n = a->rows, k = a->rhs;
    char *b = linalg_at(a, 1, i, n * k) + (size_t)(lo * n) * axon_dtype_size(a->t[1].dtype);   /* columns lo.. */
    const int info = la_potrs(a->t[0].dtype, a->upper ? 'U' : 'L', (int)n, (int)(hi - lo), linalg_at(a, 0, i, n * n),
                              linalg_ld(n), b, linalg_ld(n));
    if (info < 0) return info;
#else
    (void)a, (void)i, (void)lo, (void)hi;
#endif
    return 0;
}

axon_status_t axon_kernel_cholesky_solve(axon_stream_t s, const axon_tensor_t *f, const axon_tensor_t *b,
                                         int upper) {
    linalg_args_t x;
    linalg_args_init(&x, "cholesky_solve");
    int64_t k = 0;
    axon_status_t st = linalg_check_square(&x, f, "f");
    if (st == AXON_OK) st = linalg_check_rhs(&x, f, "f", b, &k);
    if (st != AXON_OK) return st;
    if (k == 0) return AXON_OK;
    x.t[0] = *f, x.t[1] = *b;
    x.present[0] = x.present[1] = 1;
    x.upper = upper != 0;
    x.part_fn = cholesky_solve_part;
    x.rhs = k;
    return linalg_launch(s, &x, 1);
}

/* ---- LDL^T: a (0), pivots (1), info (2); solve: ld (0), pivots (1), b (2) ---- */

static int ldl_factor_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t n = a->rows;
    char *m = linalg_at(a, 0, i, n * n);
    zero_other_triangle(m, n, axon_dtype_size(a->t[0].dtype), 0);   /* only the lower triangle is A's */
    const int info = la_sytrf(a->t[0].dtype, a->flag, (int)n, m, linalg_ld(n), (int *)linalg_at(a, 1, i, n));
    if (info < 0) return info;
    linalg_set_info(a, 2, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_ldl_factor(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *pivots,
                                     int hermitian, const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "ldl_factor");
    axon_status_t st = linalg_check_square(&x, a, "a");
    if (st == AXON_OK) st = linalg_check_vectors(pivots, x.name, "pivots", AXON_INT32, x.batch, x.rows);
    if (st == AXON_OK) st = linalg_check_vectors(info, x.name, "info", AXON_INT32, x.batch, 1);
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *pivots, x.t[2] = *info;
    x.present[0] = x.present[1] = x.present[2] = 1;
    x.flag = hermitian != 0;
    x.fn = ldl_factor_one;
    return linalg_launch(s, &x, 1);
}

static int ldl_solve_part(const linalg_args_t *a, int64_t i, int64_t lo, int64_t hi) {
    const int64_t n = a->rows, k = a->rhs;
    const int32_t *piv = (const int32_t *)linalg_at(a, 1, i, n);
    for (int64_t j = 0; j < n; j++)
        if (piv[j] == 0 || piv[j] > n || piv[j] < -n) return LINALG_BAD_PIVOT;
#ifdef AXON_HAVE_MKL
    char *b = linalg_at(a, 2, i, n * k) + (size_t)(lo * n) * axon_dtype_size(a->t[2].dtype);   /* columns lo.. */
    const int info = la_sytrs(a->t[0].dtype, a->flag, (int)n, (int)(hi - lo), linalg_at(a, 0, i, n * n),
                              linalg_ld(n), piv, b, linalg_ld(n));
    if (info < 0) return info;
#else
    (void)lo, (void)hi;
#endif
    return 0;
}

axon_status_t axon_kernel_ldl_solve(axon_stream_t s, const axon_tensor_t *ld, const axon_tensor_t *pivots,
                                    const axon_tensor_t *b, int hermitian) {
    linalg_args_t x;
    linalg_args_init(&x, "ldl_solve");
    int64_t k = 0;
    axon_status_t st = linalg_check_square(&x, ld, "ld");
    if (st == AXON_OK) st = linalg_check_rhs(&x, ld, "ld", b, &k);
    if (st == AXON_OK) st = linalg_check_vectors(pivots, x.name, "pivots", AXON_INT32, x.batch, x.rows);
    if (st != AXON_OK) return st;
    if (k == 0) return AXON_OK;
    x.t[0] = *ld, x.t[1] = *pivots, x.t[2] = *b;
    x.present[0] = x.present[1] = x.present[2] = 1;
    x.flag = hermitian != 0;
    x.part_fn = ldl_solve_part;
    x.rhs = k;
    return linalg_launch(s, &x, 1);
}
