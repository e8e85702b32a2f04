/* What the linear-algebra kernels (axon/linalg.h) share: the launch checks, one command that runs a per-matrix
 * function over the batch on the pool, and LAPACK's routines by dtype (linalg_lapack.c). Never installed. */
#ifndef AXON_LINALG_IMPL_H
#define AXON_LINALG_IMPL_H

#include <stdint.h>

#include "axon/linalg.h"

/* Operand slots of one command; each op says which slot holds what. */
#define LINALG_MAX_OPERANDS 5

typedef struct linalg_args linalg_args_t;

/* One matrix of the batch: 0, LINALG_NOMEM when a workspace could not be had, LINALG_BAD_PIVOT, or LAPACK's
 * negative info (an argument it rejected). Positive infos are written to the op's info operand, not returned. */
typedef int (*linalg_matrix_fn)(const linalg_args_t *a, int64_t i);

/* The same for solves, whose right-hand sides [lo, hi) (columns, or rows of a right-side solve) are independent: a
 * batch smaller than the pool is cut into parts of them, so that one large solve uses every core. */
typedef int (*linalg_part_fn)(const linalg_args_t *a, int64_t i, int64_t lo, int64_t hi);
#define LINALG_NOMEM 1
#define LINALG_BAD_PIVOT 2   /* a pivot outside [1, rows]: the matrix is left as it was */

struct linalg_args {
    axon_tensor_t t[LINALG_MAX_OPERANDS];
    int present[LINALG_MAX_OPERANDS];
    int64_t batch;
    int64_t rows, cols;          /* of the op's main matrix (its first operand) */
    int upper, left, unit, flag; /* flag: the op's own switch (eigenvectors, full SVD) */
    axon_linalg_op_t op;
    linalg_matrix_fn fn;         /* one of fn and part_fn */
    linalg_part_fn part_fn;
    int64_t rhs;                 /* part_fn's count of right-hand sides */
    double rcond;                /* lstsq: the singular value cut-off (< 0: machine precision) */
    const char *name;            /* static: the op's name for traces and errors */
};

/* Zeroed arguments of op `name` (a static string), rows and cols unknown (-1). */
void linalg_args_init(linalg_args_t *a, const char *name);

/* Checks of one operand, messages prefixed "op: role". A matrix batch (axon/linalg.h) of a float or complex dtype
 * whose last two sizes are rows and cols (-1: any; the sizes found are returned through *rows / *cols when not
 * NULL); the batch (product of the leading sizes) is returned through *batch. */
axon_status_t linalg_check_matrices(const axon_tensor_t *t, const char *op, const char *role, int64_t *batch,
                                    int64_t *rows, int64_t *cols);

/* A square matrix batch (linalg_check_matrices), its batch and size into x->batch, x->rows and x->cols. */
axon_status_t linalg_check_square(linalg_args_t *x, const axon_tensor_t *a, const char *role);

/* The right-hand sides b of a solve with x's square factor (checked by linalg_check_square, named `role`): a matrix
 * batch of x->rows rows, as many matrices, the factor's dtype; its column count into *k. */
axon_status_t linalg_check_rhs(const linalg_args_t *x, const axon_tensor_t *factor, const char *role,
                               const axon_tensor_t *b, int64_t *k);

/* A contiguous tensor of dtype `dtype` holding `per` elements for each of `batch` matrices (pivots, info, vectors of
 * values); ndim >= 1 unless per == 1. */
axon_status_t linalg_check_vectors(const axon_tensor_t *t, const char *op, const char *role, axon_dtype_t dtype,
                                   int64_t batch, int64_t per);

/* The same dtype as the main operand, or INVALID_ARG. */
axon_status_t linalg_check_same_dtype(const axon_tensor_t *t, axon_dtype_t want, const char *op, const char *role);

/* The real dtype of a float or complex one (complex64 -> float32). */
axon_dtype_t linalg_real_dtype(axon_dtype_t d);

/* Enqueue a->fn over matrices [0, a->batch) on the pool (after UNSUPPORTED without MKL, when `needs_lapack`). */
axon_status_t linalg_launch(axon_stream_t s, linalg_args_t *a, int needs_lapack);

/* Element i of operand k's batch: the address of matrix (or vector) i of `per` elements. */
static inline char *linalg_at(const linalg_args_t *a, int k, int64_t i, int64_t per) {
    return (char *)a->t[k].data + (size_t)(i * per) * axon_dtype_size(a->t[k].dtype);
}

/* LAPACK's leading dimension of a column-major matrix of `rows` rows (at least 1). */
static inline int linalg_ld(int64_t rows) { return rows > 1 ? (int)rows : 1; }

static inline int64_t linalg_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* info[i] of operand k (int32). */
static inline void linalg_set_info(const linalg_args_t *a, int k, int64_t i, int v) {
    if (a->present[k]) ((int32_t *)a->t[k].data)[i] = v;
}

/* ---- LAPACK by dtype (linalg_lapack.c; MKL builds only). Column-major, leading dimensions as LAPACK's. Each
 * returns LAPACK's info (negative: a rejected argument; LINALG_NOMEM_INFO: no workspace). ---- */
#define LINALG_NOMEM_INFO (-1000)

int la_getrf(axon_dtype_t t, int m, int n, void *a, int lda, int *ipiv);
int la_getrs(axon_dtype_t t, char trans, int n, int nrhs, const void *a, int lda, const int *ipiv, void *b, int ldb);
int la_getri(axon_dtype_t t, int n, void *a, int lda, const int *ipiv);
void la_trsm(axon_dtype_t t, int left, int upper, axon_linalg_op_t op, int unit, int m, int n, const void *a,
             int lda, void *b, int ldb);
int la_potrf(axon_dtype_t t, char uplo, int n, void *a, int lda);
int la_potrs(axon_dtype_t t, char uplo, int n, int nrhs, const void *a, int lda, void *b, int ldb);
int la_potri(axon_dtype_t t, char uplo, int n, void *a, int lda);
int la_sytrf(axon_dtype_t t, int hermitian, int n, void *a, int lda, int *ipiv);
int la_sytrs(axon_dtype_t t, int hermitian, int n, int nrhs, const void *a, int lda, const int *ipiv, void *b,
             int ldb);
int la_heevd(axon_dtype_t t, char jobz, char uplo, int n, void *a, int lda, void *w);
/* Real dtypes: w is wr, wi the imaginary parts, vr real; complex: w complex, wi unused, vr complex. */
int la_geev(axon_dtype_t t, char jobvr, int n, void *a, int lda, void *w, void *wi, void *vr, int ldvr);
int la_gesdd(axon_dtype_t t, char jobz, int m, int n, void *a, int lda, void *s, void *u, int ldu, void *vt,
             int ldvt);
int la_geqrf(axon_dtype_t t, int m, int n, void *a, int lda, void *tau);
int la_ormqr(axon_dtype_t t, int left, char trans, int m, int n, int k, const void *a, int lda, const void *tau,
             void *c, int ldc);
int la_orgqr(axon_dtype_t t, int m, int n, int k, void *a, int lda, const void *tau);
/* Least squares min |A X - B| (driver 0 gels, 1 gelsy, 2 gelsd, 3 gelss): b (ldb >= max(m, n)) becomes X in its
 * first n rows; rank (gelsy, gelsd, gelss) and s (gelsd, gelss: min(m, n) real values) when not NULL; jpvt n zeroed
 * ints (gelsy). */
int la_gels_any(axon_dtype_t t, int driver, int m, int n, int nrhs, void *a, int lda, void *b, int ldb, double rcond,
                int *jpvt, void *s, int *rank);

/* The LAPACK character of op (N, T, C). */
static inline char linalg_trans_char(axon_linalg_op_t op) {
    return op == AXON_LINALG_TRANS ? 'T' : op == AXON_LINALG_CONJTRANS ? 'C' : 'N';
}

#endif
