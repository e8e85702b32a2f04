/* Eigenproblems, symmetric (Hermitian) and general, and the singular value decomposition (axon/linalg.h). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"
#include "linalg_impl.h"

/* ---- eigh: a (0), w (1), info (2) ---- */

static int eigh_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t n = a->rows;
    const int info = la_heevd(a->t[0].dtype, a->flag ? 'V' : 'N', a->upper ? 'U' : 'L', (int)n,
                              linalg_at(a, 0, i, n * n), linalg_ld(n), linalg_at(a, 1, i, n));
    if (info < 0) return info;
    linalg_set_info(a, 2, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_eigh(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *w, int upper,
                               int vectors, const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "eigh");
    axon_status_t st = linalg_check_square(&x, a, "a");
    if (st == AXON_OK) st = linalg_check_vectors(w, x.name, "w", linalg_real_dtype(a->dtype), x.batch, x.rows);
    if (st == AXON_OK) st = linalg_check_vectors(info, x.name, "info", AXON_INT32, x.batch, 1);
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *w, x.t[2] = *info;
    x.present[0] = x.present[1] = x.present[2] = 1;
    x.upper = upper != 0, x.flag = vectors != 0;
    x.fn = eigh_one;
    return linalg_launch(s, &x, 1);
}

/* ---- eig: a (0), w (1), v (2, optional), info (3) ---- */

#ifdef AXON_HAVE_MKL
/* A real geev's results as complex: w = wr + i wi; a conjugate pair (wi[j] > 0) has vectors vr[:, j] +- i vr[:, j+1]. */
#define EIG_REAL_TO_COMPLEX(R)                                                                                     \
    do {                                                                                                       \
        const R *er = (const R *)scratch, *ei = er + n, *ev = ei + n;                                                     \
        R *wc = (R *)linalg_at(a, 1, i, n), *vc = a->present[2] ? (R *)linalg_at(a, 2, i, n * n) : NULL;       \
        for (int64_t j = 0; j < n; j++) wc[2 * j] = er[j], wc[2 * j + 1] = ei[j];                              \
        for (int64_t j = 0; vc && j < n; j++) {                                                                \
            const int pair = ei[j] > 0 && j + 1 < n;                                                          \
            for (int64_t r = 0; r < n; r++) {                                                                  \
                const R re = ev[j * n + r], im = pair ? ev[(j + 1) * n + r] : 0;                               \
                vc[2 * (j * n + r)] = re, vc[2 * (j * n + r) + 1] = im;                                        \
                if (pair) vc[2 * ((j + 1) * n + r)] = re, vc[2 * ((j + 1) * n + r) + 1] = -im;                 \
            }                                                                                                  \
            j += pair;                                                                                         \
        }                                                                                                      \
    } while (0)
#endif

static int eig_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t n = a->rows;
    const axon_dtype_t t = a->t[0].dtype;
    const int vectors = a->present[2];
    void *m = linalg_at(a, 0, i, n * n);
    int info;
    if (t == AXON_COMPLEX64 || t == AXON_COMPLEX128) {
        info = la_geev(t, vectors ? 'V' : 'N', (int)n, m, linalg_ld(n), linalg_at(a, 1, i, n), NULL,
                       vectors ? linalg_at(a, 2, i, n * n) : NULL, linalg_ld(n));
    } else {
        /* wr, wi and the real eigenvectors, then their complex form */
        const size_t es = axon_dtype_size(t);
        void *scratch = malloc((size_t)(2 * n + (vectors ? n * n : 0) + 1) * es);
        if (!scratch) return LINALG_NOMEM;
        char *wr = scratch, *wi = wr + (size_t)n * es, *vr = wi + (size_t)n * es;
        info = la_geev(t, vectors ? 'V' : 'N', (int)n, m, linalg_ld(n), wr, wi, vectors ? vr : NULL, linalg_ld(n));
        if (info >= 0) {
            if (t == AXON_FLOAT32) EIG_REAL_TO_COMPLEX(float);
            else EIG_REAL_TO_COMPLEX(double);
        }
        free(scratch);
    }
    if (info < 0) return info;
    linalg_set_info(a, 3, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

static axon_dtype_t complex_of(axon_dtype_t t) {
    return t == AXON_FLOAT32 || t == AXON_COMPLEX64 ? AXON_COMPLEX64 : AXON_COMPLEX128;
}

axon_status_t axon_kernel_eig(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *w,
                              const axon_tensor_t *v, const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "eig");
    axon_status_t st = linalg_check_square(&x, a, "a");
    if (st == AXON_OK) st = linalg_check_vectors(w, x.name, "w", complex_of(a->dtype), x.batch, x.rows);
    if (st == AXON_OK) st = linalg_check_vectors(info, x.name, "info", AXON_INT32, x.batch, 1);
    if (st == AXON_OK && v) {
        int64_t b = 0, r = x.rows, c = x.rows;
        st = linalg_check_matrices(v, x.name, "v", &b, &r, &c);
        if (st == AXON_OK) st = linalg_check_same_dtype(v, complex_of(a->dtype), x.name, "v");
        if (st == AXON_OK && b != x.batch)
            st = axon_fail(AXON_ERROR_INVALID_ARG, "eig: a has %lld matrices, v %lld", (long long)x.batch,
                           (long long)b);
    }
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[1] = *w, x.t[3] = *info;
    x.present[0] = x.present[1] = x.present[3] = 1;
    if (v) x.t[2] = *v, x.present[2] = 1;
    x.fn = eig_one;
    return linalg_launch(s, &x, 1);
}

/* ---- svd: a (0), u (1), sv (2), vh (3), info (4) ---- */

static int svd_one(const linalg_args_t *a, int64_t i) {
#ifdef AXON_HAVE_MKL
    const int64_t m = a->rows, n = a->cols, k = linalg_min(m, n);
    const int vectors = a->present[1];
    const int64_t ucols = a->flag ? m : k, vrows = a->flag ? n : k;
    const int info = la_gesdd(a->t[0].dtype, !vectors ? 'N' : a->flag ? 'A' : 'S', (int)m, (int)n,
                              linalg_at(a, 0, i, m * n), linalg_ld(m), linalg_at(a, 2, i, k),
                              vectors ? linalg_at(a, 1, i, m * ucols) : NULL, linalg_ld(m),
                              vectors ? linalg_at(a, 3, i, vrows * n) : NULL, linalg_ld(vrows));
    /* gesdd refuses a matrix with NaN or inf as its argument 4 (LAPACKE's 5): reported as info -4, PyTorch's code
     * for "the input matrix contained non-finite values" */
    if (info == -5) {
        linalg_set_info(a, 4, i, -4);
        return 0;
    }
    if (info < 0) return info;
    linalg_set_info(a, 4, i, info);
#else
    (void)a, (void)i;
#endif
    return 0;
}

axon_status_t axon_kernel_svd(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *u,
                              const axon_tensor_t *sv, const axon_tensor_t *vh, int full, const axon_tensor_t *info) {
    linalg_args_t x;
    linalg_args_init(&x, "svd");
    axon_status_t st = linalg_check_matrices(a, x.name, "a", &x.batch, &x.rows, &x.cols);
    const int64_t m = x.rows, n = x.cols, k = linalg_min(m, n);
    if (st == AXON_OK && (u == NULL) != (vh == NULL))
        st = axon_fail(AXON_ERROR_INVALID_ARG, "svd: u and vh must be given together");
    if (st == AXON_OK) st = linalg_check_vectors(sv, x.name, "sv", linalg_real_dtype(a->dtype), x.batch, k);
    if (st == AXON_OK) st = linalg_check_vectors(info, x.name, "info", AXON_INT32, x.batch, 1);
    if (st == AXON_OK && u) {
        int64_t b = 0, r = m, c = full ? m : k;
        st = linalg_check_matrices(u, x.name, "u", &b, &r, &c);
        if (st == AXON_OK) r = full ? n : k, c = n, st = linalg_check_matrices(vh, x.name, "vh", &b, &r, &c);
        if (st == AXON_OK && b != x.batch)
            st = axon_fail(AXON_ERROR_INVALID_ARG, "svd: a has %lld matrices, u and vh %lld", (long long)x.batch,
                           (long long)b);
        if (st == AXON_OK) st = linalg_check_same_dtype(u, a->dtype, x.name, "u");
        if (st == AXON_OK) st = linalg_check_same_dtype(vh, a->dtype, x.name, "vh");
    }
    if (st != AXON_OK) return st;
    x.t[0] = *a, x.t[2] = *sv, x.t[4] = *info;
    x.present[0] = x.present[2] = x.present[4] = 1;
    if (u) x.t[1] = *u, x.t[3] = *vh, x.present[1] = x.present[3] = 1;
    x.flag = full != 0;
    x.fn = svd_one;
    return linalg_launch(s, &x, 1);
}
