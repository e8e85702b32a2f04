/* The GEMM library behind axon_gemm_f32/f64: MKL or OpenBLAS, whichever CMake found (AXON_HAVE_MKL first, then
 * AXON_HAVE_OPENBLAS), else the portable blocked code. float32 products with few rows or columns go to gemm_skinny.c
 * where it is the faster one.
 *
 * The library runs single-threaded here. libaxon already splits each GEMM over the device's worker pool (gemm.c), so
 * the library's own threads would only compete for the same cores; its thread count is also process-wide, so it
 * could not honour two devices with different thread counts. Set once, before the first call: MKL's sequential
 * threading layer (mkl_rt would otherwise load Intel's OpenMP runtime), OpenBLAS's thread count 1. Both libraries'
 * single-threaded paths are safe to call from several threads at once. */
#include <pthread.h>

#include "gemm_impl.h"

#if defined(AXON_HAVE_MKL) || defined(AXON_HAVE_OPENBLAS)
#ifdef AXON_HAVE_MKL
#include <mkl_cblas.h>

#include "mkl_layer.h"

static void gemm_init(void) { axon_mkl_use_sequential(); }
#define GEMM_LIBRARY "mkl"
#else
#include <cblas.h>

void openblas_set_num_threads(int num_threads); /* declared by cblas.h in some packagings only */

static void gemm_init(void) { openblas_set_num_threads(1); }
#define GEMM_LIBRARY "openblas"
#endif

static pthread_once_t gemm_once = PTHREAD_ONCE_INIT;

/* OpenBLAS 0.3.21 (single-threaded, Sapphire Rapids) has a fast path for small products: up to m*n*k = 100^3, and
 * with B transposed (row-major view; its TN kernel in column-major terms) only while m*n <= 1200 and k >= 32. Past
 * it, a product with AXON_GEMM_SKINNY rows or columns or fewer runs 1.1-8x slower than gemm_skinny.c, which
 * streams B once (e.g. 4 x 256 @ 256 x 688 with B stored (n, k): 59 us against 17 us; 16 rows: 1.3-5x). Inside it
 * OpenBLAS is up to 30% faster, so it keeps those. */
static int gemm_skinny_wanted(int ta, int tb, int64_t m, int64_t n, int64_t k) {
    if (m > AXON_GEMM_SKINNY && n > AXON_GEMM_SKINNY) return 0;
    if (!ta && tb && (m * n > 1200 || k < 32)) return 1;
    return (double)m * (double)n * (double)k > 1e6;
}

const char *axon_gemm_backend_name(void) { return GEMM_LIBRARY; }

int axon_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (gemm_skinny_wanted(ta, tb, m, n, k))
        return axon_gemm_skinny_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    pthread_once(&gemm_once, gemm_init);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return 0;
}

#ifdef AXON_HAVE_MKL
/* MKL's bfloat16 product, from mkl_rt itself (axon_mkl_symbol: torch exports its own MKL's copy). */
typedef void (*gemm_bf16_fn_t)(const CBLAS_LAYOUT, const CBLAS_TRANSPOSE, const CBLAS_TRANSPOSE, const MKL_INT,
                               const MKL_INT, const MKL_INT, const float, const MKL_BF16 *, const MKL_INT,
                               const MKL_BF16 *, const MKL_INT, const float, float *, const MKL_INT);
static pthread_once_t gemm_bf16_once = PTHREAD_ONCE_INIT;
static gemm_bf16_fn_t gemm_bf16_fn;

static void gemm_bf16_init(void) { gemm_bf16_fn = (gemm_bf16_fn_t)axon_mkl_symbol("cblas_gemm_bf16bf16f32"); }

int axon_gemm_bf16_available(void) {
    pthread_once(&gemm_bf16_once, gemm_bf16_init);
    return gemm_bf16_fn != NULL;
}

int axon_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t *a, int64_t lda,
                   const uint16_t *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (!axon_gemm_bf16_available()) return -1;
    pthread_once(&gemm_once, gemm_init);
    gemm_bf16_fn(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (MKL_INT)m,
                 (MKL_INT)n, (MKL_INT)k, alpha, a, (MKL_INT)lda, b, (MKL_INT)ldb, beta, c, (MKL_INT)ldc);
    return 0;
}
#endif

int axon_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                  const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
    pthread_once(&gemm_once, gemm_init);
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return 0;
}

/* alpha and beta as the complex pairs (alpha, 0) and (beta, 0) the library takes */
int axon_gemm_c64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                  const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    pthread_once(&gemm_once, gemm_init);
    const float al[2] = {(float)alpha, 0.0f}, be[2] = {(float)beta, 0.0f};
    cblas_cgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, al, a, (int)lda, b, (int)ldb, be, c, (int)ldc);
    return 0;
}

int axon_gemm_c128(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                   const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    pthread_once(&gemm_once, gemm_init);
    const double al[2] = {alpha, 0.0}, be[2] = {beta, 0.0};
    cblas_zgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, al, a, (int)lda, b, (int)ldb, be, c, (int)ldc);
    return 0;
}

#else

const char *axon_gemm_backend_name(void) { return "portable"; }

int axon_gemm_c64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                  const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    return axon_gemm_portable_c64(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int axon_gemm_c128(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                   const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    return axon_gemm_portable_c128(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int axon_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (axon_gemm_skinny_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == 0) return 0; /* few rows */
    return axon_gemm_portable_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int axon_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                  const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
    return axon_gemm_portable_f64(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#endif

#ifndef AXON_HAVE_MKL /* OpenBLAS and the portable code have no bfloat16 product */
int axon_gemm_bf16_available(void) { return 0; }

int axon_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t *a, int64_t lda,
                   const uint16_t *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
    (void)c, (void)ldc;
    return -1;
}
#endif
