/* LAPACK's routines by dtype (linalg_impl.h), on MKL's LAPACKE: its high-level functions, which size and allocate
 * their workspaces, with the NaN check of their inputs off (mkl_layer.c), so that NaN inputs give NaN results as in
 * PyTorch instead of an argument error. */
#ifdef AXON_HAVE_MKL
#include <mkl_cblas.h>
#include <mkl_lapacke.h>

#include "linalg_impl.h"

#define LA_CM LAPACK_COL_MAJOR
#define LA_CF(p) ((lapack_complex_float *)(p))
#define LA_CD(p) ((lapack_complex_double *)(p))

/* LAPACKE reports a failed allocation as LAPACK_WORK_MEMORY_ERROR or LAPACK_TRANSPOSE_MEMORY_ERROR. */
static int la_info(lapack_int info) {
    return info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR ? LINALG_NOMEM_INFO : (int)info;
}

int la_getrf(axon_dtype_t t, int m, int n, void *a, int lda, int *ipiv) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sgetrf(LA_CM, m, n, a, lda, ipiv));
    case AXON_FLOAT64: return la_info(LAPACKE_dgetrf(LA_CM, m, n, a, lda, ipiv));
    case AXON_COMPLEX64: return la_info(LAPACKE_cgetrf(LA_CM, m, n, LA_CF(a), lda, ipiv));
    default: return la_info(LAPACKE_zgetrf(LA_CM, m, n, LA_CD(a), lda, ipiv));
    }
}

int la_getrs(axon_dtype_t t, char trans, int n, int nrhs, const void *a, int lda, const int *ipiv, void *b, int ldb) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sgetrs(LA_CM, trans, n, nrhs, a, lda, ipiv, b, ldb));
    case AXON_FLOAT64: return la_info(LAPACKE_dgetrs(LA_CM, trans, n, nrhs, a, lda, ipiv, b, ldb));
    case AXON_COMPLEX64: return la_info(LAPACKE_cgetrs(LA_CM, trans, n, nrhs, LA_CF(a), lda, ipiv, LA_CF(b), ldb));
    default: return la_info(LAPACKE_zgetrs(LA_CM, trans, n, nrhs, LA_CD(a), lda, ipiv, LA_CD(b), ldb));
    }
}

int la_getri(axon_dtype_t t, int n, void *a, int lda, const int *ipiv) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sgetri(LA_CM, n, a, lda, ipiv));
    case AXON_FLOAT64: return la_info(LAPACKE_dgetri(LA_CM, n, a, lda, ipiv));
    case AXON_COMPLEX64: return la_info(LAPACKE_cgetri(LA_CM, n, LA_CF(a), lda, ipiv));
    default: return la_info(LAPACKE_zgetri(LA_CM, n, LA_CD(a), lda, ipiv));
    }
}

void la_trsm(axon_dtype_t t, int left, int upper, axon_linalg_op_t op, int unit, int m, int n, const void *a,
             int lda, void *b, int ldb) {
    const CBLAS_SIDE side = left ? CblasLeft : CblasRight;
    const CBLAS_UPLO uplo = upper ? CblasUpper : CblasLower;
    const CBLAS_TRANSPOSE tr = op == AXON_LINALG_TRANS ? CblasTrans : op == AXON_LINALG_CONJTRANS ? CblasConjTrans
                                                                                                   : CblasNoTrans;
    const CBLAS_DIAG diag = unit ? CblasUnit : CblasNonUnit;
    static const float one_c[2] = {1.0f, 0.0f};
    static const double one_z[2] = {1.0, 0.0};
    switch (t) {
    case AXON_FLOAT32: cblas_strsm(CblasColMajor, side, uplo, tr, diag, m, n, 1.0f, a, lda, b, ldb); break;
    case AXON_FLOAT64: cblas_dtrsm(CblasColMajor, side, uplo, tr, diag, m, n, 1.0, a, lda, b, ldb); break;
    case AXON_COMPLEX64: cblas_ctrsm(CblasColMajor, side, uplo, tr, diag, m, n, one_c, a, lda, b, ldb); break;
    default: cblas_ztrsm(CblasColMajor, side, uplo, tr, diag, m, n, one_z, a, lda, b, ldb); break;
    }
}

int la_potrf(axon_dtype_t t, char uplo, int n, void *a, int lda) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_spotrf(LA_CM, uplo, n, a, lda));
    case AXON_FLOAT64: return la_info(LAPACKE_dpotrf(LA_CM, uplo, n, a, lda));
    case AXON_COMPLEX64: return la_info(LAPACKE_cpotrf(LA_CM, uplo, n, LA_CF(a), lda));
    default: return la_info(LAPACKE_zpotrf(LA_CM, uplo, n, LA_CD(a), lda));
    }
}

int la_potrs(axon_dtype_t t, char uplo, int n, int nrhs, const void *a, int lda, void *b, int ldb) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_spotrs(LA_CM, uplo, n, nrhs, a, lda, b, ldb));
    case AXON_FLOAT64: return la_info(LAPACKE_dpotrs(LA_CM, uplo, n, nrhs, a, lda, b, ldb));
    case AXON_COMPLEX64: return la_info(LAPACKE_cpotrs(LA_CM, uplo, n, nrhs, LA_CF(a), lda, LA_CF(b), ldb));
    default: return la_info(LAPACKE_zpotrs(LA_CM, uplo, n, nrhs, LA_CD(a), lda, LA_CD(b), ldb));
    }
}

int la_potri(axon_dtype_t t, char uplo, int n, void *a, int lda) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_spotri(LA_CM, uplo, n, a, lda));
    case AXON_FLOAT64: return la_info(LAPACKE_dpotri(LA_CM, uplo, n, a, lda));
    case AXON_COMPLEX64: return la_info(LAPACKE_cpotri(LA_CM, uplo, n, LA_CF(a), lda));
    default: return la_info(LAPACKE_zpotri(LA_CM, uplo, n, LA_CD(a), lda));
    }
}

/* Lower triangle, as PyTorch's linalg.ldl_factor. */
int la_sytrf(axon_dtype_t t, int hermitian, int n, void *a, int lda, int *ipiv) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_ssytrf(LA_CM, 'L', n, a, lda, ipiv));
    case AXON_FLOAT64: return la_info(LAPACKE_dsytrf(LA_CM, 'L', n, a, lda, ipiv));
    case AXON_COMPLEX64:
        return la_info(hermitian ? LAPACKE_chetrf(LA_CM, 'L', n, LA_CF(a), lda, ipiv)
                                 : LAPACKE_csytrf(LA_CM, 'L', n, LA_CF(a), lda, ipiv));
    default:
        return la_info(hermitian ? LAPACKE_zhetrf(LA_CM, 'L', n, LA_CD(a), lda, ipiv)
                                 : LAPACKE_zsytrf(LA_CM, 'L', n, LA_CD(a), lda, ipiv));
    }
}

int la_sytrs(axon_dtype_t t, int hermitian, int n, int nrhs, const void *a, int lda, const int *ipiv, void *b,
             int ldb) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_ssytrs(LA_CM, 'L', n, nrhs, a, lda, ipiv, b, ldb));
    case AXON_FLOAT64: return la_info(LAPACKE_dsytrs(LA_CM, 'L', n, nrhs, a, lda, ipiv, b, ldb));
    case AXON_COMPLEX64:
        return la_info(hermitian ? LAPACKE_chetrs(LA_CM, 'L', n, nrhs, LA_CF(a), lda, ipiv, LA_CF(b), ldb)
                                 : LAPACKE_csytrs(LA_CM, 'L', n, nrhs, LA_CF(a), lda, ipiv, LA_CF(b), ldb));
    default:
        return la_info(hermitian ? LAPACKE_zhetrs(LA_CM, 'L', n, nrhs, LA_CD(a), lda, ipiv, LA_CD(b), ldb)
                                 : LAPACKE_zsytrs(LA_CM, 'L', n, nrhs, LA_CD(a), lda, ipiv, LA_CD(b), ldb));
    }
}

int la_heevd(axon_dtype_t t, char jobz, char uplo, int n, void *a, int lda, void *w) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_ssyevd(LA_CM, jobz, uplo, n, a, lda, w));
    case AXON_FLOAT64: return la_info(LAPACKE_dsyevd(LA_CM, jobz, uplo, n, a, lda, w));
    case AXON_COMPLEX64: return la_info(LAPACKE_cheevd(LA_CM, jobz, uplo, n, LA_CF(a), lda, w));
    default: return la_info(LAPACKE_zheevd(LA_CM, jobz, uplo, n, LA_CD(a), lda, w));
    }
}

int la_geev(axon_dtype_t t, char jobvr, int n, void *a, int lda, void *w, void *wi, void *vr, int ldvr) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sgeev(LA_CM, 'N', jobvr, n, a, lda, w, wi, NULL, 1, vr, ldvr));
    case AXON_FLOAT64: return la_info(LAPACKE_dgeev(LA_CM, 'N', jobvr, n, a, lda, w, wi, NULL, 1, vr, ldvr));
    case AXON_COMPLEX64:
        return la_info(LAPACKE_cgeev(LA_CM, 'N', jobvr, n, LA_CF(a), lda, LA_CF(w), NULL, 1, LA_CF(vr), ldvr));
    default: return la_info(LAPACKE_zgeev(LA_CM, 'N', jobvr, n, LA_CD(a), lda, LA_CD(w), NULL, 1, LA_CD(vr), ldvr));
    }
}

int la_gesdd(axon_dtype_t t, char jobz, int m, int n, void *a, int lda, void *s, void *u, int ldu, void *vt,
             int ldvt) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sgesdd(LA_CM, jobz, m, n, a, lda, s, u, ldu, vt, ldvt));
    case AXON_FLOAT64: return la_info(LAPACKE_dgesdd(LA_CM, jobz, m, n, a, lda, s, u, ldu, vt, ldvt));
    case AXON_COMPLEX64:
        return la_info(LAPACKE_cgesdd(LA_CM, jobz, m, n, LA_CF(a), lda, s, LA_CF(u), ldu, LA_CF(vt), ldvt));
    default: return la_info(LAPACKE_zgesdd(LA_CM, jobz, m, n, LA_CD(a), lda, s, LA_CD(u), ldu, LA_CD(vt), ldvt));
    }
}

int la_geqrf(axon_dtype_t t, int m, int n, void *a, int lda, void *tau) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sgeqrf(LA_CM, m, n, a, lda, tau));
    case AXON_FLOAT64: return la_info(LAPACKE_dgeqrf(LA_CM, m, n, a, lda, tau));
    case AXON_COMPLEX64: return la_info(LAPACKE_cgeqrf(LA_CM, m, n, LA_CF(a), lda, LA_CF(tau)));
    default: return la_info(LAPACKE_zgeqrf(LA_CM, m, n, LA_CD(a), lda, LA_CD(tau)));
    }
}

int la_ormqr(axon_dtype_t t, int left, char trans, int m, int n, int k, const void *a, int lda, const void *tau,
             void *c, int ldc) {
    const char side = left ? 'L' : 'R';
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sormqr(LA_CM, side, trans, m, n, k, a, lda, tau, c, ldc));
    case AXON_FLOAT64: return la_info(LAPACKE_dormqr(LA_CM, side, trans, m, n, k, a, lda, tau, c, ldc));
    case AXON_COMPLEX64:
        return la_info(LAPACKE_cunmqr(LA_CM, side, trans, m, n, k, LA_CF(a), lda, LA_CF(tau), LA_CF(c), ldc));
    default: return la_info(LAPACKE_zunmqr(LA_CM, side, trans, m, n, k, LA_CD(a), lda, LA_CD(tau), LA_CD(c), ldc));
    }
}

int la_orgqr(axon_dtype_t t, int m, int n, int k, void *a, int lda, const void *tau) {
    switch (t) {
    case AXON_FLOAT32: return la_info(LAPACKE_sorgqr(LA_CM, m, n, k, a, lda, tau));
    case AXON_FLOAT64: return la_info(LAPACKE_dorgqr(LA_CM, m, n, k, a, lda, tau));
    case AXON_COMPLEX64: return la_info(LAPACKE_cungqr(LA_CM, m, n, k, LA_CF(a), lda, LA_CF(tau)));
    default: return la_info(LAPACKE_zungqr(LA_CM, m, n, k, LA_CD(a), lda, LA_CD(tau)));
    }
}

int la_gels_any(axon_dtype_t t, int driver, int m, int n, int nrhs, void *a, int lda, void *b, int ldb, double rcond,
                int *jpvt, void *s, int *rank) {
    lapack_int r = 0;
    int info;
    const float rf = (float)rcond;
    switch (driver) {
    case 0:
        switch (t) {
        case AXON_FLOAT32: return la_info(LAPACKE_sgels(LA_CM, 'N', m, n, nrhs, a, lda, b, ldb));
        case AXON_FLOAT64: return la_info(LAPACKE_dgels(LA_CM, 'N', m, n, nrhs, a, lda, b, ldb));
        case AXON_COMPLEX64: return la_info(LAPACKE_cgels(LA_CM, 'N', m, n, nrhs, LA_CF(a), lda, LA_CF(b), ldb));
        default: return la_info(LAPACKE_zgels(LA_CM, 'N', m, n, nrhs, LA_CD(a), lda, LA_CD(b), ldb));
        }
    case 1:
        switch (t) {
        case AXON_FLOAT32: info = LAPACKE_sgelsy(LA_CM, m, n, nrhs, a, lda, b, ldb, jpvt, rf, &r); break;
        case AXON_FLOAT64: info = LAPACKE_dgelsy(LA_CM, m, n, nrhs, a, lda, b, ldb, jpvt, rcond, &r); break;
        case AXON_COMPLEX64:
            info = LAPACKE_cgelsy(LA_CM, m, n, nrhs, LA_CF(a), lda, LA_CF(b), ldb, jpvt, rf, &r);
            break;
        default: info = LAPACKE_zgelsy(LA_CM, m, n, nrhs, LA_CD(a), lda, LA_CD(b), ldb, jpvt, rcond, &r); break;
        }
        break;
    case 2:
        switch (t) {
        case AXON_FLOAT32: info = LAPACKE_sgelsd(LA_CM, m, n, nrhs, a, lda, b, ldb, s, rf, &r); break;
        case AXON_FLOAT64: info = LAPACKE_dgelsd(LA_CM, m, n, nrhs, a, lda, b, ldb, s, rcond, &r); break;
        case AXON_COMPLEX64: info = LAPACKE_cgelsd(LA_CM, m, n, nrhs, LA_CF(a), lda, LA_CF(b), ldb, s, rf, &r); break;
        default: info = LAPACKE_zgelsd(LA_CM, m, n, nrhs, LA_CD(a), lda, LA_CD(b), ldb, s, rcond, &r); break;
        }
        break;
    default:
        switch (t) {
        case AXON_FLOAT32: info = LAPACKE_sgelss(LA_CM, m, n, nrhs, a, lda, b, ldb, s, rf, &r); break;
        case AXON_FLOAT64: info = LAPACKE_dgelss(LA_CM, m, n, nrhs, a, lda, b, ldb, s, rcond, &r); break;
        case AXON_COMPLEX64: info = LAPACKE_cgelss(LA_CM, m, n, nrhs, LA_CF(a), lda, LA_CF(b), ldb, s, rf, &r); break;
        default: info = LAPACKE_zgelss(LA_CM, m, n, nrhs, LA_CD(a), lda, LA_CD(b), ldb, s, rcond, &r); break;
        }
        break;
    }
    if (rank) *rank = (int)r;
    return la_info(info);
}

#else
typedef int axon_linalg_lapack_unused; /* ISO C: a translation unit is not empty */

#endif
