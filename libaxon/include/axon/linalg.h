/* Dense linear algebra: the factorizations and solves behind torch.linalg (LU, triangular and Cholesky solves,
 * inverse, determinants, the symmetric eigenproblem, SVD, QR).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch.
 *
 * The work runs on MKL's LAPACK (its sequential layer, one matrix per call, the batch split over the device's pool).
 * A build without MKL has no linear algebra: axon_linalg_available() returns 0 and a launch returns UNSUPPORTED, so
 * callers fall back to the host.
 *
 * Operands. dtypes float32, float64, complex64, complex128; pivots and info int32. A "matrix batch" is a tensor of
 * two or more dimensions [batch..., rows, cols] stored as LAPACK wants it: column-major matrices one after another,
 * that is strides [..., rows * cols, 1, rows] (the layout of `t.mT.contiguous().mT` in PyTorch; dimensions of one
 * element may have any stride). The batch is the product of the leading sizes, and the operands of one call must
 * have the same batch (callers expand). Pivots [batch..., k] and info [batch...] are contiguous. Every matrix
 * operand of one call has the same dtype; eigenvalues and singular values have the matching real dtype.
 *
 * info reports per matrix what LAPACK reports: 0 on success, i > 0 when the i-th (1-based) pivot of an LU is exactly
 * zero, the i-th leading minor is not positive definite (Cholesky), or an eigen/singular value iteration did not
 * converge. The results of such a matrix are what LAPACK left (PyTorch's linalg.*_ex return them likewise).
 *
 * Errors at launch: INVALID_ARG for bad descriptors, layouts, shapes or dtypes; UNSUPPORTED without MKL. Errors while
 * running: OUT_OF_MEMORY for LAPACK's workspace; INTERNAL for an argument LAPACK rejects (a bug in libaxon). */
#ifndef AXON_LINALG_H
#define AXON_LINALG_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* op(A) of a solve: A, its transpose, or its conjugate transpose. */
typedef enum axon_linalg_op {
    AXON_LINALG_NOTRANS,
    AXON_LINALG_TRANS,
    AXON_LINALG_CONJTRANS,
} axon_linalg_op_t;

/* 1 when this build of libaxon has linear algebra (MKL's LAPACK), else 0. */
AXON_API int axon_linalg_available(void);

/* LU with partial pivoting, A = P L U (getrf), in place: a [batch, m, n] becomes L (below the diagonal, unit
 * diagonal implied) and U; pivots [batch, min(m, n)] the 1-based rows swapped with each row in turn. */
AXON_API axon_status_t axon_kernel_lu_factor(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *pivots,
                                             const axon_tensor_t *info);

/* Solve op(A) X = B from A's LU (getrs), in place: b [batch, n, k] becomes X; lu [batch, n, n]. */
AXON_API axon_status_t axon_kernel_lu_solve(axon_stream_t s, const axon_tensor_t *lu, const axon_tensor_t *pivots,
                                            const axon_tensor_t *b, axon_linalg_op_t op);

/* The matrix exponential, in place: a [batch, n, n] becomes exp(A) (scaling and squaring with the [13/13] Padé
 * approximant, in float64 or complex128 whatever the dtype; NaN everywhere for a matrix with a NaN or an infinity).
 * Needs no LAPACK. */
AXON_API axon_status_t axon_kernel_matrix_exp(axon_stream_t s, const axon_tensor_t *a);

/* The inverse (getrf, then getri), in place: a [batch, n, n] becomes A^-1; info as getrf's. */
AXON_API axon_status_t axon_kernel_inverse(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *info);

/* The determinant from an LU and its pivots (lu [batch, n, n]): with logabsdet NULL, det [batch] (lu's dtype) gets
 * det(A); otherwise det gets sign(det A) (lu's dtype: +-1, a unit complex number, or 0) and logabsdet [batch] (the
 * real dtype) log |det A| (-inf for a singular matrix). Both contiguous. */
AXON_API axon_status_t axon_kernel_lu_det(axon_stream_t s, const axon_tensor_t *lu, const axon_tensor_t *pivots,
                                          const axon_tensor_t *det, const axon_tensor_t *logabsdet);

/* P, L and U of an LU (lu [batch, m, n], k = min(m, n)): p [batch, m, m] (lu's dtype; A = P L U), l [batch, m, k]
 * (unit lower), u [batch, k, n] (upper). Any of p, l, u may be NULL; those given are contiguous row-major (not
 * matrix batches). */
AXON_API axon_status_t axon_kernel_lu_unpack(axon_stream_t s, const axon_tensor_t *lu, const axon_tensor_t *pivots,
                                             const axon_tensor_t *p, const axon_tensor_t *l, const axon_tensor_t *u);

/* Solve op(A) X = B (left) or X op(A) = B (right) for triangular A (trsm), in place: b [batch, m, n] becomes X;
 * a [batch, m, m] (left) or [batch, n, n] (right); only A's upper (or lower) triangle is read, its diagonal taken
 * as ones when `unit`. */
AXON_API axon_status_t axon_kernel_triangular_solve(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *b,
                                                    int upper, int left, int unit, axon_linalg_op_t op);

/* Cholesky, A = L L^H or U^H U (potrf), in place: a [batch, n, n] (its lower or upper triangle read) becomes L
 * (upper = 0) or U, the other triangle set to zero. */
AXON_API axon_status_t axon_kernel_cholesky(axon_stream_t s, const axon_tensor_t *a, int upper,
                                            const axon_tensor_t *info);

/* Solve A X = B from A's Cholesky factor f [batch, n, n] (lower or upper) (potrs), in place on b [batch, n, k]. */
AXON_API axon_status_t axon_kernel_cholesky_solve(axon_stream_t s, const axon_tensor_t *f, const axon_tensor_t *b,
                                                  int upper);

/* A^-1 from A's Cholesky factor (potri), in place: a [batch, n, n] becomes the whole (Hermitian) inverse. */
AXON_API axon_status_t axon_kernel_cholesky_inverse(axon_stream_t s, const axon_tensor_t *a, int upper,
                                                    const axon_tensor_t *info);

/* LDL^T (or LDL^H when `hermitian`) with Bunch-Kaufman pivoting (sytrf / hetrf) from A's lower triangle, in place:
 * a [batch, n, n] becomes L and D below and on the diagonal, its strict upper triangle zero; pivots [batch, n] as
 * LAPACK's ipiv (1-based; a negative pair marks a 2 x 2 block of D); info as getrf's. For real dtypes `hermitian`
 * changes nothing. */
AXON_API axon_status_t axon_kernel_ldl_factor(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *pivots,
                                              int hermitian, const axon_tensor_t *info);

/* Solve A X = B from A's LDL factorization (sytrs / hetrs), in place on b [batch, n, k]. Pivots outside [-n, n] or 0
 * fail the command with INVALID_ARG. */
AXON_API axon_status_t axon_kernel_ldl_solve(axon_stream_t s, const axon_tensor_t *ld, const axon_tensor_t *pivots,
                                             const axon_tensor_t *b, int hermitian);

/* Eigenvalues (ascending) of Hermitian A (syevd / heevd) from its lower or upper triangle: w [batch, n] (the real
 * dtype, contiguous); with `vectors`, a [batch, n, n] becomes the orthonormal eigenvectors (columns), else it is
 * overwritten. */
AXON_API axon_status_t axon_kernel_eigh(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *w, int upper,
                                        int vectors, const axon_tensor_t *info);

/* Eigenvalues and right eigenvectors of a general square A (geev): a [batch, n, n] (overwritten), w [batch, n] of
 * the complex dtype of a's precision (contiguous), v [batch, n, n] of that complex dtype (a matrix batch: the
 * eigenvectors as columns, each of norm 1 with its largest component real, as LAPACK returns them) or NULL for the
 * values alone. A real A's complex conjugate pairs come out as LAPACK orders them, the positive imaginary part first. */
AXON_API axon_status_t axon_kernel_eig(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *w,
                                       const axon_tensor_t *v, const axon_tensor_t *info);

/* A = U diag(S) Vh (gesdd), k = min(m, n): a [batch, m, n] (overwritten), sv [batch, k] descending (the real dtype,
 * contiguous); u [batch, m, m] and vh [batch, n, n] (`full`) or [batch, m, k] and [batch, k, n], both matrix
 * batches; u and vh both NULL for the values alone. A matrix with a NaN or infinity gets info -4 (as PyTorch's
 * kernels report it), its results undefined. */
AXON_API axon_status_t axon_kernel_svd(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *u,
                                       const axon_tensor_t *sv, const axon_tensor_t *vh, int full,
                                       const axon_tensor_t *info);

/* Householder QR (geqrf), in place: a [batch, m, n] becomes R (on and above the diagonal) and the reflectors
 * (below); tau [batch, min(m, n)] (contiguous) their scales. */
AXON_API axon_status_t axon_kernel_geqrf(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *tau);

/* The first n columns of the product of k Householder reflectors (orgqr / ungqr), in place: a [batch, m, n]
 * (m >= n) holds the reflectors below its diagonal (as geqrf leaves them) and becomes Q; tau [batch, k], k <= n. */
AXON_API axon_status_t axon_kernel_householder_product(axon_stream_t s, const axon_tensor_t *a,
                                                       const axon_tensor_t *tau);

/* The cross product of 3-vectors along dimension `dim` (linalg.cross), element-wise over the other dimensions:
 * out = a x b. out, a and b have the same shape with 3 elements along dim; a and b may broadcast (strides of 0), out
 * must not overlap them. Every dtype but bool; float16/bfloat16 round each product to their precision before the
 * difference, and integers wrap, as PyTorch's CPU kernel does. Plain C: available without MKL. */
AXON_API axon_status_t axon_kernel_cross(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *a,
                                         const axon_tensor_t *b, int dim);

/* C = op(Q) C (left) or C op(Q) (right), Q the product of k Householder reflectors as geqrf leaves them (ormqr /
 * unmqr), in place on c [batch, m, n]: a [batch, m, k] (left) or [batch, n, k] (right) holds the reflectors below
 * its diagonal, tau [batch, k] (contiguous) their scales; op NOTRANS or, for real dtypes TRANS, for complex
 * CONJTRANS. */
AXON_API axon_status_t axon_kernel_ormqr(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *tau,
                                         const axon_tensor_t *c, int left, axon_linalg_op_t op);

/* Least squares: X minimizing |A X - B| per matrix (LAPACK's gels, gelsy, gelsd or gelss, as torch.linalg.lstsq's
 * drivers), in place: a [batch, m, n] is overwritten, b [batch, max(m, n), k] holds B in its first m rows and gets X
 * in its first n (rows n.. keep what LAPACK leaves there: for m > n and gels/gelsd/gelss, the residual's parts).
 * rank [batch] int64 (gelsy, gelsd, gelss; NULL otherwise) gets the effective rank, sv [batch, min(m, n)] (real
 * dtype; gelsd and gelss, else NULL) the singular values, info [batch] int32 LAPACK's info (gels: i > 0 when A is
 * rank deficient; gelsd/gelss: SVD not converging). Singular values below rcond times the largest count as zero
 * (rcond < 0: machine precision), for every driver but gels. */
typedef enum axon_lstsq_driver {
    AXON_LSTSQ_GELS = 0,
    AXON_LSTSQ_GELSY = 1,
    AXON_LSTSQ_GELSD = 2,
    AXON_LSTSQ_GELSS = 3,
} axon_lstsq_driver_t;

AXON_API axon_status_t axon_kernel_lstsq(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *b,
                                         const axon_tensor_t *rank, const axon_tensor_t *sv,
                                         const axon_tensor_t *info, axon_lstsq_driver_t driver, double rcond);

AXON_EXTERN_C_END

#endif
