/* The linear-algebra kernels (axon/linalg.h), checked by what their results must satisfy, computed here in long
 * double: P L U = A, A X = B for every solve, A A^-1 = I, the determinant against an elimination of the test's own,
 * L L^H = A, A V = V diag(w) with V^H V = I, U diag(S) Vh = A, Q R = A with Q^H Q = I; the cross product against its
 * formula; the matrix exponential against a long double Taylor series. Every dtype, a batch of three, 1 and 2 threads. Bad input is refused at launch (or, for pivots, when the
 * command runs). Without MKL the LAPACK kernels must say UNSUPPORTED. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/linalg.h"
#include "kernels_check.h"

typedef long double complex lc_t;

static const axon_dtype_t dtypes[4] = {AXON_FLOAT32, AXON_FLOAT64, AXON_COMPLEX64, AXON_COMPLEX128};

static int is_complex(axon_dtype_t t) { return t == AXON_COMPLEX64 || t == AXON_COMPLEX128; }
static int is_double(axon_dtype_t t) { return t == AXON_FLOAT64 || t == AXON_COMPLEX128; }
static double tol_of(axon_dtype_t t) { return is_double(t) ? 1e-11 : 2e-4; }

/* Random entries in [-1, 1) (imaginary parts too for complex dtypes), rounded to the dtype's precision. */
static void fill_random(lc_t *v, int64_t n, axon_dtype_t t, uint64_t seed) {
    uint64_t x = seed * 2654435761u + 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        double part[2];
        for (int k = 0; k < 2; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            part[k] = (double)(x >> 11) * 0x1p-52 - 1.0;
            if (!is_double(t)) part[k] = (float)part[k];
        }
        v[i] = part[0] + (is_complex(t) ? I * (long double)part[1] : 0);
    }
}

/* Host values (count of them) to device memory of dtype t, and back. */
static void *upload(kc_dev_t *k, const lc_t *v, int64_t count, axon_dtype_t t) {
    const size_t es = axon_dtype_size(t);
    char *buf = malloc((size_t)(count > 0 ? count : 1) * es);
    for (int64_t i = 0; i < count; i++) {
        const double re = (double)creall(v[i]), im = (double)cimagl(v[i]);
        if (t == AXON_FLOAT32) ((float *)buf)[i] = (float)re;
        else if (t == AXON_FLOAT64) ((double *)buf)[i] = re;
        else if (t == AXON_COMPLEX64) ((float *)buf)[2 * i] = (float)re, ((float *)buf)[2 * i + 1] = (float)im;
        else ((double *)buf)[2 * i] = re, ((double *)buf)[2 * i + 1] = im;
    }
    void *p = kc_upload(k, buf, (size_t)(count > 0 ? count : 1) * es);
    free(buf);
    return p;
}

static int download(kc_dev_t *k, lc_t *v, const void *dev, int64_t count, axon_dtype_t t) {
    const size_t es = axon_dtype_size(t);
    char *buf = malloc((size_t)(count > 0 ? count : 1) * es);
    int ok = kc_download(k, buf, dev, (size_t)count * es);
    for (int64_t i = 0; ok && i < count; i++) {
        if (t == AXON_FLOAT32) v[i] = ((float *)buf)[i];
        else if (t == AXON_FLOAT64) v[i] = ((double *)buf)[i];
        else if (t == AXON_COMPLEX64) v[i] = ((float *)buf)[2 * i] + I * (long double)((float *)buf)[2 * i + 1];
        else v[i] = ((double *)buf)[2 * i] + I * (long double)((double *)buf)[2 * i + 1];
    }
    free(buf);
    return ok;
}

/* A batch of `batch` column-major r x c matrices over data. */
static axon_tensor_t mats(void *data, axon_dtype_t t, int64_t batch, int64_t r, int64_t c) {
    const int64_t sizes[3] = {batch, r, c}, strides[3] = {r * c, 1, r};
    return kc_tensor(data, t, 3, sizes, strides);
}

static axon_tensor_t vecs(void *data, axon_dtype_t t, int64_t batch, int64_t per) {
    const int64_t sizes[2] = {batch, per};
    return kc_tensor(data, t, 2, sizes, NULL);
}

/* Element (i, j) of a column-major matrix with `rows` rows. */
#define CM(m, rows, i, j) ((m)[(int64_t)(j) * (rows) + (i)])

/* max |X - Y| / max(1, max |Y|) of r x c matrices where X = op(A) B and Y is given (all column-major). op: 0 none, 1
 * transpose, 2 conjugate transpose of A (ar x ac as stored). */
static double residual(const lc_t *a, int64_t ar, int64_t ac, int op, const lc_t *b, int64_t bc, const lc_t *y) {
    const int64_t r = op ? ac : ar, inner = op ? ar : ac;
    long double err = 0, top = 1;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < bc; j++) {
            lc_t acc = 0;
            for (int64_t k = 0; k < inner; k++) {
                lc_t av = op ? CM(a, ar, k, i) : CM(a, ar, i, k);
                if (op == 2) av = conjl(av);
                acc += av * CM(b, inner, k, j);
            }
            const lc_t want = CM(y, r, i, j);
            if (cabsl(acc - want) > err) err = cabsl(acc - want);
            if (cabsl(want) > top) top = cabsl(want);
        }
    return (double)(err / top);
}

static lc_t *alloc_lc(int64_t n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(lc_t)); }

/* ---- LU: factor, unpack, solve, inverse, determinant ---- */

/* det by elimination with partial pivoting in long double (the matrix is copied). */
static lc_t ref_det(const lc_t *a0, int64_t n) {
    lc_t *a = alloc_lc(n * n), det = 1;
    memcpy(a, a0, (size_t)(n * n) * sizeof *a);
    for (int64_t c = 0; c < n; c++) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; r++)
            if (cabsl(CM(a, n, r, c)) > cabsl(CM(a, n, p, c))) p = r;
        if (p != c) {
            det = -det;
            for (int64_t j = 0; j < n; j++) {
                lc_t t = CM(a, n, c, j);
                CM(a, n, c, j) = CM(a, n, p, j), CM(a, n, p, j) = t;
            }
        }
        det *= CM(a, n, c, c);
        if (CM(a, n, c, c) == 0) break;
        for (int64_t r = c + 1; r < n; r++) {
            const lc_t f = CM(a, n, r, c) / CM(a, n, c, c);
            for (int64_t j = c; j < n; j++) CM(a, n, r, j) -= f * CM(a, n, c, j);
        }
    }
    free(a);
    return det;
}

static void check_lu(axon_dtype_t t, int threads, int64_t m, int64_t n) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, kk = m < n ? m : n;
    lc_t *a = alloc_lc(B * m * n), *lu = alloc_lc(B * m * n), *p = alloc_lc(B * m * m), *l = alloc_lc(B * m * kk),
         *u = alloc_lc(B * kk * n);
    fill_random(a, B * m * n, t, (uint64_t)(m * 10 + n + t));
    void *da = upload(&k, a, B * m * n, t);
    int32_t *dpiv = kc_upload(&k, NULL, (size_t)(B * (kk > 0 ? kk : 1)) * 4), *dinfo = kc_upload(&k, NULL, 12);
    void *dp = kc_upload(&k, NULL, (size_t)(B * m * m + 1) * axon_dtype_size(t));
    void *dl = kc_upload(&k, NULL, (size_t)(B * m * kk + 1) * axon_dtype_size(t));
    void *du = kc_upload(&k, NULL, (size_t)(B * kk * n + 1) * axon_dtype_size(t));
    axon_tensor_t ta = mats(da, t, B, m, n), tpiv = vecs(dpiv, AXON_INT32, B, kk), tinfo = vecs(dinfo, AXON_INT32, B, 1);
    const int64_t ps[3] = {B, m, m}, ls[3] = {B, m, kk}, us[3] = {B, kk, n};
    axon_tensor_t tp = kc_tensor(dp, t, 3, ps, NULL), tl = kc_tensor(dl, t, 3, ls, NULL), tu = kc_tensor(du, t, 3, us,
                                                                                                          NULL);
    CHECK_OK(axon_kernel_lu_factor(k.s, &ta, &tpiv, &tinfo));
    CHECK_OK(axon_kernel_lu_unpack(k.s, &ta, &tpiv, &tp, &tl, &tu));
    int32_t info[3] = {-1, -1, -1};
    CHECK(kc_download(&k, info, dinfo, sizeof info));
    CHECK(info[0] == 0 && info[1] == 0 && info[2] == 0);
    CHECK(download(&k, lu, da, B * m * n, t) && download(&k, p, dp, B * m * m, t) &&
          download(&k, l, dl, B * m * kk, t) && download(&k, u, du, B * kk * n, t));
    for (int64_t b = 0; b < B; b++) {
        /* P L U with P, L, U row-major: rebuild column-major copies and multiply */
        lc_t *pc = alloc_lc(m * m), *lc = alloc_lc(m * kk), *uc = alloc_lc(kk * n), *lu_ = alloc_lc(m * n);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < m; j++) CM(pc, m, i, j) = p[b * m * m + i * m + j];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < kk; j++) CM(lc, m, i, j) = l[b * m * kk + i * kk + j];
        for (int64_t i = 0; i < kk; i++)
            for (int64_t j = 0; j < n; j++) CM(uc, kk, i, j) = u[b * kk * n + i * n + j];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                lc_t acc = 0;
                for (int64_t q = 0; q < kk; q++) acc += CM(lc, m, i, q) * CM(uc, kk, q, j);
                CM(lu_, m, i, j) = acc;
            }
        const double err = residual(pc, m, m, 0, lu_, n, a + b * m * n);
        if (!(err <= tol_of(t))) fprintf(stderr, "  lu %s %lldx%lld: error %g\n", axon_dtype_name(t), (long long)m,
                                        (long long)n, err);
        CHECK(err <= tol_of(t));
        /* L's unit diagonal, U's zeros below it, and P a permutation */
        for (int64_t i = 0; i < kk; i++) CHECK(CM(lc, m, i, i) == 1);
        for (int64_t i = 0; i < kk; i++)
            for (int64_t j = 0; j < i && j < n; j++) CHECK(CM(uc, kk, i, j) == 0);
        for (int64_t i = 0; i < m; i++) {
            lc_t row = 0;
            for (int64_t j = 0; j < m; j++) row += CM(pc, m, i, j);
            CHECK(row == 1);
        }
        free(pc), free(lc), free(uc), free(lu_);
    }
    if (m == n) {
        /* solves for each op, the inverse, det and slogdet */
        const int64_t rhs = 2;
        lc_t *bm = alloc_lc(B * n * rhs), *x = alloc_lc(B * n * rhs), *inv = alloc_lc(B * n * n), *dv = alloc_lc(B),
             *sg = alloc_lc(B), *la = alloc_lc(B);
        for (int op = 0; op < 3; op++) {
            fill_random(bm, B * n * rhs, t, (uint64_t)(77 + op));
            void *db = upload(&k, bm, B * n * rhs, t);
            axon_tensor_t tb = mats(db, t, B, n, rhs);
            CHECK_OK(axon_kernel_lu_solve(k.s, &ta, &tpiv, &tb, (axon_linalg_op_t)op));
            CHECK(download(&k, x, db, B * n * rhs, t));
            for (int64_t b = 0; b < B; b++) {
                const double err = residual(a + b * n * n, n, n, op, x + b * n * rhs, rhs, bm + b * n * rhs);
                if (!(err <= tol_of(t))) fprintf(stderr, "  lu_solve %s op %d: error %g\n", axon_dtype_name(t), op,
                                                err);
                CHECK(err <= tol_of(t));
            }
            axon_mem_free(k.dev, db);
        }
        void *dinv = upload(&k, a, B * n * n, t);
        axon_tensor_t tinv = mats(dinv, t, B, n, n);
        CHECK_OK(axon_kernel_inverse(k.s, &tinv, &tinfo));
        CHECK(download(&k, inv, dinv, B * n * n, t));
        lc_t *eye = alloc_lc(n * n);
        for (int64_t i = 0; i < n; i++) CM(eye, n, i, i) = 1;
        for (int64_t b = 0; b < B; b++) CHECK(residual(a + b * n * n, n, n, 0, inv + b * n * n, n, eye) <= 10 * tol_of(t));
        void *ddet = kc_upload(&k, NULL, (size_t)B * axon_dtype_size(t));
        void *dsign = kc_upload(&k, NULL, (size_t)B * axon_dtype_size(t));
        void *dlog = kc_upload(&k, NULL, (size_t)B * axon_dtype_size(t));
        axon_tensor_t tdet = vecs(ddet, t, B, 1), tsign = vecs(dsign, t, B, 1);
        axon_tensor_t tlog = vecs(dlog, is_complex(t) ? (is_double(t) ? AXON_FLOAT64 : AXON_FLOAT32) : t, B, 1);
        CHECK_OK(axon_kernel_lu_det(k.s, &ta, &tpiv, &tdet, NULL));
        CHECK_OK(axon_kernel_lu_det(k.s, &ta, &tpiv, &tsign, &tlog));
        CHECK(download(&k, dv, ddet, B, t) && download(&k, sg, dsign, B, t) && download(&k, la, dlog, B, tlog.dtype));
        for (int64_t b = 0; b < B; b++) {
            const lc_t want = ref_det(a + b * n * n, n);
            CHECK(cabsl(dv[b] - want) <= tol_of(t) * (1 + cabsl(want)));
            CHECK(cabsl(sg[b] * expl(creall(la[b])) - want) <= tol_of(t) * (1 + cabsl(want)));
            CHECK(fabsl(cabsl(sg[b]) - 1) <= tol_of(t));
        }
        free(bm), free(x), free(inv), free(dv), free(sg), free(la), free(eye);
        axon_mem_free(k.dev, dinv), axon_mem_free(k.dev, ddet), axon_mem_free(k.dev, dsign), axon_mem_free(k.dev, dlog);
    }
    free(a), free(lu), free(p), free(l), free(u);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, dpiv), axon_mem_free(k.dev, dinfo);
    axon_mem_free(k.dev, dp), axon_mem_free(k.dev, dl), axon_mem_free(k.dev, du);
    axon_runtime_destroy(k.rt);
}

static void test_lu_factor_unpack_solve_inverse_det(void) {
    if (!axon_linalg_available()) return;
    for (int d = 0; d < 4; d++)
        for (int threads = 1; threads <= 2; threads++) {
            check_lu(dtypes[d], threads, 5, 5);
            check_lu(dtypes[d], threads, 6, 3);
            check_lu(dtypes[d], threads, 3, 6);
        }
}

/* A singular matrix: info names the zero pivot, the determinant is 0 and log |det| is -inf; an SVD of non-finite
 * input reports it in info. */
static void test_singular_matrix(void) {
    if (!axon_linalg_available()) return;
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    /* Columns 0 and 1 are parallel, and the pivot 4 makes every multiplier a power of two, so the elimination is exact
     * in any order of operations (with 3 as pivot, MKL's AVX-512 path left a pivot of 1e-16 instead of 0). */
    const lc_t a[9] = {1, 2, 4, 2, 4, 8, 0, 1, 5};
    void *da = upload(&k, a, 9, AXON_FLOAT64);
    int32_t *dpiv = kc_upload(&k, NULL, 12), *dinfo = kc_upload(&k, NULL, 4);
    double *dsign = kc_upload(&k, NULL, 8), *dlog = kc_upload(&k, NULL, 8);
    axon_tensor_t ta = mats(da, AXON_FLOAT64, 1, 3, 3), tpiv = vecs(dpiv, AXON_INT32, 1, 3),
                  tinfo = vecs(dinfo, AXON_INT32, 1, 1), ts = vecs(dsign, AXON_FLOAT64, 1, 1),
                  tl = vecs(dlog, AXON_FLOAT64, 1, 1);
    CHECK_OK(axon_kernel_lu_factor(k.s, &ta, &tpiv, &tinfo));
    CHECK_OK(axon_kernel_lu_det(k.s, &ta, &tpiv, &ts, &tl));
    int32_t info = -1;
    double sign = 7, logabs = 7;
    CHECK(kc_download(&k, &info, dinfo, 4) && kc_download(&k, &sign, dsign, 8) && kc_download(&k, &logabs, dlog, 8));
    CHECK(info == 2);
    CHECK(sign == 0 && isinf(logabs) && logabs < 0);
    /* a NaN in an SVD's input: info -4, PyTorch's code for non-finite input, not a failed command */
    const lc_t with_nan[9] = {1, NAN, 3, 2, 4, 6, 0, 1, 5};
    void *dn = upload(&k, with_nan, 9, AXON_FLOAT64), *ds = kc_upload(&k, NULL, 24);
    axon_tensor_t tn = mats(dn, AXON_FLOAT64, 1, 3, 3), tsv = vecs(ds, AXON_FLOAT64, 1, 3);
    CHECK_OK(axon_kernel_svd(k.s, &tn, NULL, &tsv, NULL, 0, &tinfo));
    CHECK(kc_download(&k, &info, dinfo, 4) && info == -4);
    axon_mem_free(k.dev, dn), axon_mem_free(k.dev, ds);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, dpiv), axon_mem_free(k.dev, dinfo);
    axon_mem_free(k.dev, dsign), axon_mem_free(k.dev, dlog);
    axon_runtime_destroy(k.rt);
}

/* ---- triangular solves ---- */

static void check_triangular(axon_dtype_t t, int threads, int upper, int left, int unit, int op) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, m = 4, n = 3, ka = left ? m : n;
    lc_t *a = alloc_lc(B * ka * ka), *b = alloc_lc(B * m * n), *x = alloc_lc(B * m * n);
    fill_random(a, B * ka * ka, t, 5);
    fill_random(b, B * m * n, t, 6);
    for (int64_t i = 0; i < B * ka; i++) a[(i / ka) * ka * ka + (i % ka) * (ka + 1)] += 3;  /* well conditioned */
    void *da = upload(&k, a, B * ka * ka, t), *db = upload(&k, b, B * m * n, t);
    axon_tensor_t ta = mats(da, t, B, ka, ka), tb = mats(db, t, B, m, n);
    CHECK_OK(axon_kernel_triangular_solve(k.s, &ta, &tb, upper, left, unit, (axon_linalg_op_t)op));
    CHECK(download(&k, x, db, B * m * n, t));
    for (int64_t q = 0; q < B; q++) {
        /* the triangle the kernel reads, with the unit diagonal when asked */
        lc_t *tri = alloc_lc(ka * ka);
        for (int64_t i = 0; i < ka; i++)
            for (int64_t j = 0; j < ka; j++)
                if (i == j) CM(tri, ka, i, j) = unit ? 1 : CM(a + q * ka * ka, ka, i, j);
                else if (upper ? j > i : j < i) CM(tri, ka, i, j) = CM(a + q * ka * ka, ka, i, j);
        double err;
        if (left) {
            err = residual(tri, ka, ka, op, x + q * m * n, n, b + q * m * n);
        } else {
            /* X op(A) = B  <=>  op(A)^T X^T = B^T: compare through transposes */
            lc_t *xt = alloc_lc(m * n), *bt = alloc_lc(m * n), *opa = alloc_lc(ka * ka);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++)
                    CM(xt, n, j, i) = CM(x + q * m * n, m, i, j), CM(bt, n, j, i) = CM(b + q * m * n, m, i, j);
            for (int64_t i = 0; i < ka; i++)
                for (int64_t j = 0; j < ka; j++) {
                    lc_t v = op ? CM(tri, ka, j, i) : CM(tri, ka, i, j);
                    CM(opa, ka, i, j) = op == 2 ? conjl(v) : v;
                }
            err = residual(opa, ka, ka, 1, xt, m, bt);
            free(xt), free(bt), free(opa);
        }
        if (!(err <= tol_of(t)))
            fprintf(stderr, "  triangular %s upper %d left %d unit %d op %d: error %g\n", axon_dtype_name(t), upper,
                    left, unit, op, err);
        CHECK(err <= tol_of(t));
        free(tri);
    }
    free(a), free(b), free(x);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, db);
    axon_runtime_destroy(k.rt);
}

static void test_triangular_solve_every_variant(void) {
    if (!axon_linalg_available()) return;
    for (int d = 0; d < 4; d++)
        for (int v = 0; v < 24; v++) check_triangular(dtypes[d], 1 + (v & 1), (v >> 1) & 1, (v >> 2) & 1, 0, v / 8);
    check_triangular(AXON_FLOAT64, 2, 0, 1, 1, 0);
    check_triangular(AXON_COMPLEX64, 1, 1, 0, 1, 2);
}

/* ---- Cholesky ---- */

/* B Hermitian positive definite matrices M M^H + n I. */
static void fill_hpd(lc_t *a, int64_t B, int64_t n, axon_dtype_t t, uint64_t seed) {
    lc_t *mm = alloc_lc(n * n);
    for (int64_t q = 0; q < B; q++) {
        fill_random(mm, n * n, t, seed + (uint64_t)q);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                lc_t acc = i == j ? (lc_t)n : 0;
                for (int64_t r = 0; r < n; r++) acc += CM(mm, n, i, r) * conjl(CM(mm, n, j, r));
                CM(a + q * n * n, n, i, j) = acc;
            }
        if (!is_double(t))   /* representable, so that the matrix is exactly Hermitian on the device */
            for (int64_t i = 0; i < n * n; i++)
                a[q * n * n + i] = (float)creall(a[q * n * n + i]) + I * (long double)(float)cimagl(a[q * n * n + i]);
    }
    free(mm);
}

static void check_cholesky(axon_dtype_t t, int threads, int upper) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, n = 5, rhs = 2;
    lc_t *a = alloc_lc(B * n * n), *f = alloc_lc(B * n * n), *b = alloc_lc(B * n * rhs), *x = alloc_lc(B * n * rhs),
         *inv = alloc_lc(B * n * n), *eye = alloc_lc(n * n);
    fill_hpd(a, B, n, t, 40);
    fill_random(b, B * n * rhs, t, 41);
    for (int64_t i = 0; i < n; i++) CM(eye, n, i, i) = 1;
    void *da = upload(&k, a, B * n * n, t), *db = upload(&k, b, B * n * rhs, t);
    int32_t *dinfo = kc_upload(&k, NULL, 12);
    axon_tensor_t ta = mats(da, t, B, n, n), tb = mats(db, t, B, n, rhs), tinfo = vecs(dinfo, AXON_INT32, B, 1);
    CHECK_OK(axon_kernel_cholesky(k.s, &ta, upper, &tinfo));
    CHECK(download(&k, f, da, B * n * n, t));
    CHECK_OK(axon_kernel_cholesky_solve(k.s, &ta, &tb, upper));
    CHECK(download(&k, x, db, B * n * rhs, t));
    CHECK_OK(axon_kernel_cholesky_inverse(k.s, &ta, upper, &tinfo));
    CHECK(download(&k, inv, da, B * n * n, t));
    int32_t info[3] = {-1, -1, -1};
    CHECK(kc_download(&k, info, dinfo, sizeof info) && info[0] == 0 && info[1] == 0 && info[2] == 0);
    for (int64_t q = 0; q < B; q++) {
        const lc_t *fq = f + q * n * n, *aq = a + q * n * n;
        /* the other triangle is zero, and L L^H (or U^H U) is A */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                if (upper ? i > j : j > i) CHECK(CM(fq, n, i, j) == 0);
        lc_t *fh = alloc_lc(n * n);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) CM(fh, n, i, j) = conjl(CM(fq, n, j, i));
        const double err = upper ? residual(fq, n, n, 2, fq, n, aq) : residual(fq, n, n, 0, fh, n, aq);
        CHECK(err <= tol_of(t));
        CHECK(residual(aq, n, n, 0, x + q * n * rhs, rhs, b + q * n * rhs) <= tol_of(t));
        CHECK(residual(aq, n, n, 0, inv + q * n * n, n, eye) <= 10 * tol_of(t));
        free(fh);
    }
    /* not positive definite: info names the failing minor */
    lc_t bad[4] = {1, 2, 2, 1};
    void *dbad = upload(&k, bad, 4, t);
    axon_tensor_t tbad = mats(dbad, t, 1, 2, 2), tone = vecs(dinfo, AXON_INT32, 1, 1);
    CHECK_OK(axon_kernel_cholesky(k.s, &tbad, upper, &tone));
    CHECK(kc_download(&k, info, dinfo, 4) && info[0] == 2);
    free(a), free(f), free(b), free(x), free(inv), free(eye);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, db), axon_mem_free(k.dev, dinfo), axon_mem_free(k.dev, dbad);
    axon_runtime_destroy(k.rt);
}

static void test_cholesky_solve_and_inverse(void) {
    if (!axon_linalg_available()) return;
    for (int d = 0; d < 4; d++)
        for (int v = 0; v < 4; v++) check_cholesky(dtypes[d], 1 + (v & 1), v >> 1);
}

/* ---- eigh and svd ---- */

static void check_eigh(axon_dtype_t t, int threads, int upper) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, n = 6;
    const axon_dtype_t rt = is_complex(t) ? (is_double(t) ? AXON_FLOAT64 : AXON_FLOAT32) : t;
    lc_t *a = alloc_lc(B * n * n), *v = alloc_lc(B * n * n), *w = alloc_lc(B * n), *w2 = alloc_lc(B * n);
    fill_hpd(a, B, n, t, 90);
    for (int64_t q = 0; q < B; q++) CM(a + q * n * n, n, 0, 0) -= 2 * n;   /* a negative eigenvalue too */
    void *da = upload(&k, a, B * n * n, t), *da2 = upload(&k, a, B * n * n, t);
    void *dw = kc_upload(&k, NULL, (size_t)(B * n) * 8), *dw2 = kc_upload(&k, NULL, (size_t)(B * n) * 8);
    int32_t *dinfo = kc_upload(&k, NULL, 12);
    axon_tensor_t ta = mats(da, t, B, n, n), ta2 = mats(da2, t, B, n, n), tw = vecs(dw, rt, B, n),
                  tw2 = vecs(dw2, rt, B, n), tinfo = vecs(dinfo, AXON_INT32, B, 1);
    CHECK_OK(axon_kernel_eigh(k.s, &ta, &tw, upper, 1, &tinfo));
    CHECK_OK(axon_kernel_eigh(k.s, &ta2, &tw2, upper, 0, &tinfo));
    CHECK(download(&k, v, da, B * n * n, t) && download(&k, w, dw, B * n, rt) && download(&k, w2, dw2, B * n, rt));
    for (int64_t q = 0; q < B; q++) {
        const lc_t *vq = v + q * n * n;
        lc_t *vw = alloc_lc(n * n), *eye = alloc_lc(n * n);
        for (int64_t i = 0; i < n; i++) {
            CM(eye, n, i, i) = 1;
            for (int64_t j = 0; j < n; j++) CM(vw, n, i, j) = CM(vq, n, i, j) * w[q * n + j];
            if (i > 0) CHECK(creall(w[q * n + i]) >= creall(w[q * n + i - 1]));
            CHECK(cabsl(w[q * n + i] - w2[q * n + i]) <= tol_of(t) * 10 * n);
        }
        CHECK(residual(a + q * n * n, n, n, 0, vq, n, vw) <= tol_of(t) * 10);
        CHECK(residual(vq, n, n, 2, vq, n, eye) <= tol_of(t));
        free(vw), free(eye);
    }
    free(a), free(v), free(w), free(w2);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, da2), axon_mem_free(k.dev, dw), axon_mem_free(k.dev, dw2);
    axon_mem_free(k.dev, dinfo);
    axon_runtime_destroy(k.rt);
}

static void check_svd(axon_dtype_t t, int threads, int64_t m, int64_t n, int full) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, kk = m < n ? m : n, uc = full ? m : kk, vr = full ? n : kk;
    const axon_dtype_t rt = is_complex(t) ? (is_double(t) ? AXON_FLOAT64 : AXON_FLOAT32) : t;
    lc_t *a = alloc_lc(B * m * n), *u = alloc_lc(B * m * uc), *s = alloc_lc(B * kk), *vh = alloc_lc(B * vr * n),
         *s2 = alloc_lc(B * kk);
    fill_random(a, B * m * n, t, (uint64_t)(m * 3 + n + full));
    void *da = upload(&k, a, B * m * n, t), *da2 = upload(&k, a, B * m * n, t);
    void *du = kc_upload(&k, NULL, (size_t)(B * m * uc) * 16), *dv = kc_upload(&k, NULL, (size_t)(B * vr * n) * 16);
    void *ds = kc_upload(&k, NULL, (size_t)(B * kk) * 8), *ds2 = kc_upload(&k, NULL, (size_t)(B * kk) * 8);
    int32_t *dinfo = kc_upload(&k, NULL, 12);
    axon_tensor_t ta = mats(da, t, B, m, n), ta2 = mats(da2, t, B, m, n), tu = mats(du, t, B, m, uc),
                  tv = mats(dv, t, B, vr, n), ts = vecs(ds, rt, B, kk), ts2 = vecs(ds2, rt, B, kk),
                  tinfo = vecs(dinfo, AXON_INT32, B, 1);
    CHECK_OK(axon_kernel_svd(k.s, &ta, &tu, &ts, &tv, full, &tinfo));
    CHECK_OK(axon_kernel_svd(k.s, &ta2, NULL, &ts2, NULL, 0, &tinfo));
    CHECK(download(&k, u, du, B * m * uc, t) && download(&k, vh, dv, B * vr * n, t) &&
          download(&k, s, ds, B * kk, rt) && download(&k, s2, ds2, B * kk, rt));
    for (int64_t q = 0; q < B; q++) {
        /* U[:, :k] diag(S) Vh[:k, :] = A */
        lc_t *us = alloc_lc(m * kk), *eye = alloc_lc(uc * uc);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < kk; j++) CM(us, m, i, j) = CM(u + q * m * uc, m, i, j) * s[q * kk + j];
        lc_t *vk = alloc_lc(kk * n);
        for (int64_t i = 0; i < kk; i++)
            for (int64_t j = 0; j < n; j++) CM(vk, kk, i, j) = CM(vh + q * vr * n, vr, i, j);
        CHECK(residual(us, m, kk, 0, vk, n, a + q * m * n) <= tol_of(t) * 10);
        for (int64_t i = 0; i < uc; i++) CM(eye, uc, i, i) = 1;
        CHECK(residual(u + q * m * uc, m, uc, 2, u + q * m * uc, uc, eye) <= tol_of(t) * 10);
        for (int64_t j = 0; j < kk; j++) {
            if (j > 0) CHECK(creall(s[q * kk + j]) <= creall(s[q * kk + j - 1]));
            CHECK(cabsl(s[q * kk + j] - s2[q * kk + j]) <= tol_of(t) * 10);
        }
        free(us), free(eye), free(vk);
    }
    free(a), free(u), free(s), free(vh), free(s2);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, da2), axon_mem_free(k.dev, du), axon_mem_free(k.dev, dv);
    axon_mem_free(k.dev, ds), axon_mem_free(k.dev, ds2), axon_mem_free(k.dev, dinfo);
    axon_runtime_destroy(k.rt);
}

static void test_eigh_and_svd(void) {
    if (!axon_linalg_available()) return;
    for (int d = 0; d < 4; d++) {
        check_eigh(dtypes[d], 1, 0);
        check_eigh(dtypes[d], 2, 1);
        check_svd(dtypes[d], 1, 5, 3, 0);
        check_svd(dtypes[d], 2, 3, 5, 1);
        check_svd(dtypes[d], 2, 4, 4, 1);
    }
}

/* ---- QR ---- */

static void check_qr(axon_dtype_t t, int threads, int64_t m, int64_t n) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, kk = m < n ? m : n;
    lc_t *a = alloc_lc(B * m * n), *fr = alloc_lc(B * m * n), *q = alloc_lc(B * m * kk), *r = alloc_lc(kk * n),
         *eye = alloc_lc(kk * kk);
    fill_random(a, B * m * n, t, (uint64_t)(m + 13 * n));
    void *da = upload(&k, a, B * m * n, t), *dtau = kc_upload(&k, NULL, (size_t)(B * kk) * 16);
    axon_tensor_t ta = mats(da, t, B, m, n), ttau = vecs(dtau, t, B, kk);
    CHECK_OK(axon_kernel_geqrf(k.s, &ta, &ttau));
    CHECK(download(&k, fr, da, B * m * n, t));
    /* Q: the first k columns of the reflectors' product */
    lc_t *refl = alloc_lc(B * m * kk);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < kk; j++) CM(refl + b * m * kk, m, i, j) = CM(fr + b * m * n, m, i, j);
    void *dq = upload(&k, refl, B * m * kk, t);
    axon_tensor_t tq = mats(dq, t, B, m, kk);
    CHECK_OK(axon_kernel_householder_product(k.s, &tq, &ttau));
    CHECK(download(&k, q, dq, B * m * kk, t));
    /* ormqr: Q applied to the first k columns of the identity is Q's first k columns; then Q^H Q = I */
    lc_t *ik = alloc_lc(B * m * kk), *qi = alloc_lc(B * m * kk);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < kk; i++) CM(ik + b * m * kk, m, i, i) = 1;
    void *dfr = upload(&k, refl, B * m * kk, t), *dik = upload(&k, ik, B * m * kk, t);   /* the reflectors */
    axon_tensor_t tfr = mats(dfr, t, B, m, kk), tik = mats(dik, t, B, m, kk);
    const axon_linalg_op_t adj = is_complex(t) ? AXON_LINALG_CONJTRANS : AXON_LINALG_TRANS;
    CHECK_OK(axon_kernel_ormqr(k.s, &tfr, &ttau, &tik, 1, AXON_LINALG_NOTRANS));
    CHECK(download(&k, qi, dik, B * m * kk, t));
    for (int64_t i = 0; i < B * m * kk; i++) CHECK(cabsl(qi[i] - q[i]) <= 10 * tol_of(t));
    CHECK_OK(axon_kernel_ormqr(k.s, &tfr, &ttau, &tik, 1, adj));
    CHECK(download(&k, qi, dik, B * m * kk, t));
    for (int64_t i = 0; i < B * m * kk; i++) CHECK(cabsl(qi[i] - ik[i]) <= 10 * tol_of(t));
    CHECK_STATUS(axon_kernel_ormqr(k.s, &tfr, &ttau, &tik, 1, is_complex(t) ? AXON_LINALG_TRANS : AXON_LINALG_CONJTRANS),
                 AXON_ERROR_INVALID_ARG);
    free(ik), free(qi);
    axon_mem_free(k.dev, dfr), axon_mem_free(k.dev, dik);
    for (int64_t i = 0; i < kk; i++) CM(eye, kk, i, i) = 1;
    for (int64_t b = 0; b < B; b++) {
        memset(r, 0, (size_t)(kk * n) * sizeof *r);
        for (int64_t i = 0; i < kk; i++)
            for (int64_t j = i; j < n; j++) CM(r, kk, i, j) = CM(fr + b * m * n, m, i, j);
        CHECK(residual(q + b * m * kk, m, kk, 0, r, n, a + b * m * n) <= tol_of(t) * 10);
        CHECK(residual(q + b * m * kk, m, kk, 2, q + b * m * kk, kk, eye) <= tol_of(t) * 10);
    }
    free(a), free(fr), free(q), free(r), free(eye), free(refl);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, dtau), axon_mem_free(k.dev, dq);
    axon_runtime_destroy(k.rt);
}

static void test_qr(void) {
    if (!axon_linalg_available()) return;
    for (int d = 0; d < 4; d++) {
        check_qr(dtypes[d], 1, 6, 4);
        check_qr(dtypes[d], 2, 4, 6);
        check_qr(dtypes[d], 2, 5, 5);
    }
}

/* ---- eig and LDL ---- */

static void check_eig_ldl(axon_dtype_t t, int threads) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, n = 5, rhs = 2;
    const axon_dtype_t ct = is_double(t) ? AXON_COMPLEX128 : AXON_COMPLEX64;
    lc_t *a = alloc_lc(B * n * n), *w = alloc_lc(B * n), *v = alloc_lc(B * n * n), *sym = alloc_lc(B * n * n);
    lc_t *b = alloc_lc(B * n * rhs), *x = alloc_lc(B * n * rhs);
    fill_random(a, B * n * n, t, 31);   /* a real random matrix has complex conjugate pairs */
    for (int64_t q = 0; q < B; q++)     /* symmetric (complex symmetric, not Hermitian) and indefinite */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                CM(sym + q * n * n, n, i, j) = CM(a + q * n * n, n, i, j) + CM(a + q * n * n, n, j, i);
    fill_random(b, B * n * rhs, t, 32);
    void *da = upload(&k, a, B * n * n, t), *dw = kc_upload(&k, NULL, (size_t)(B * n) * 16);
    void *dv = kc_upload(&k, NULL, (size_t)(B * n * n) * 16), *ds = upload(&k, sym, B * n * n, t);
    void *db = upload(&k, b, B * n * rhs, t);
    int32_t *dinfo = kc_upload(&k, NULL, 12), *dpiv = kc_upload(&k, NULL, (size_t)(B * n) * 4);
    axon_tensor_t ta = mats(da, t, B, n, n), tw = vecs(dw, ct, B, n), tv = mats(dv, ct, B, n, n),
                  ts = mats(ds, t, B, n, n), tb = mats(db, t, B, n, rhs), tinfo = vecs(dinfo, AXON_INT32, B, 1),
                  tpiv = vecs(dpiv, AXON_INT32, B, n);
    CHECK_OK(axon_kernel_eig(k.s, &ta, &tw, &tv, &tinfo));
    CHECK(download(&k, w, dw, B * n, ct) && download(&k, v, dv, B * n * n, ct));
    CHECK_OK(axon_kernel_ldl_factor(k.s, &ts, &tpiv, 0, &tinfo));
    CHECK_OK(axon_kernel_ldl_solve(k.s, &ts, &tpiv, &tb, 0));
    CHECK(download(&k, x, db, B * n * rhs, t));
    int pairs = 0;
    for (int64_t q = 0; q < B; q++) {
        lc_t *vw = alloc_lc(n * n);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) CM(vw, n, i, j) = CM(v + q * n * n, n, i, j) * w[q * n + j];
        CHECK(residual(a + q * n * n, n, n, 0, v + q * n * n, n, vw) <= 20 * tol_of(t));
        for (int64_t j = 0; j < n; j++) pairs += cimagl(w[q * n + j]) > 0;
        CHECK(residual(sym + q * n * n, n, n, 0, x + q * n * rhs, rhs, b + q * n * rhs) <= 20 * tol_of(t));
        free(vw);
    }
    if (!is_complex(t)) CHECK(pairs > 0);   /* the conjugate-pair path was taken */
    free(a), free(w), free(v), free(sym), free(b), free(x);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, dw), axon_mem_free(k.dev, dv), axon_mem_free(k.dev, ds);
    axon_mem_free(k.dev, db), axon_mem_free(k.dev, dinfo), axon_mem_free(k.dev, dpiv);
    axon_runtime_destroy(k.rt);
}

static void test_eig_and_ldl(void) {
    if (!axon_linalg_available()) return;
    for (int d = 0; d < 4; d++) check_eig_ldl(dtypes[d], 1 + d % 2);
}

/* ---- one matrix, many right-hand sides: the solves cut them into parts over the pool ---- */

static void test_one_solve_is_split_over_the_pool(void) {
    if (!axon_linalg_available()) return;
    for (int threads = 1; threads <= 2; threads++) {
        kc_dev_t k = kc_open(threads);
        REQUIRE(k.rt);
        const int64_t n = 6, r = 100;   /* 100 columns: parts of 16-50 */
        const axon_dtype_t t = AXON_FLOAT64;
        lc_t *a = alloc_lc(n * n), *spd = alloc_lc(n * n), *b = alloc_lc(n * r), *x = alloc_lc(n * r);
        lc_t *bt = alloc_lc(r * n), *xt = alloc_lc(r * n);
        fill_random(a, n * n, t, 11);
        for (int64_t i = 0; i < n; i++) CM(a, n, i, i) += 4;
        fill_hpd(spd, 1, n, t, 12);
        fill_random(b, n * r, t, 13);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < r; j++) CM(bt, r, j, i) = CM(b, n, i, j);
        void *da = upload(&k, a, n * n, t), *ds = upload(&k, spd, n * n, t);
        int32_t *dpiv = kc_upload(&k, NULL, (size_t)n * 4), *dinfo = kc_upload(&k, NULL, 4);
        axon_tensor_t ta = mats(da, t, 1, n, n), ts = mats(ds, t, 1, n, n), tpiv = vecs(dpiv, AXON_INT32, 1, n),
                      tinfo = vecs(dinfo, AXON_INT32, 1, 1);
        /* lu_solve */
        void *db = upload(&k, b, n * r, t);
        axon_tensor_t tb = mats(db, t, 1, n, r);
        void *dlu = upload(&k, a, n * n, t);
        axon_tensor_t tlu = mats(dlu, t, 1, n, n);
        CHECK_OK(axon_kernel_lu_factor(k.s, &tlu, &tpiv, &tinfo));
        CHECK_OK(axon_kernel_lu_solve(k.s, &tlu, &tpiv, &tb, AXON_LINALG_NOTRANS));
        CHECK(download(&k, x, db, n * r, t));
        CHECK(residual(a, n, n, 0, x, r, b) <= 1e-12);
        /* cholesky_solve */
        void *db2 = upload(&k, b, n * r, t);
        axon_tensor_t tb2 = mats(db2, t, 1, n, r);
        CHECK_OK(axon_kernel_cholesky(k.s, &ts, 0, &tinfo));
        CHECK_OK(axon_kernel_cholesky_solve(k.s, &ts, &tb2, 0));
        CHECK(download(&k, x, db2, n * r, t));
        CHECK(residual(spd, n, n, 0, x, r, b) <= 1e-12);
        /* triangular, left (columns cut) and right (rows cut): X^T A^T = B^T is the left solve transposed */
        void *db3 = upload(&k, b, n * r, t), *db4 = upload(&k, bt, r * n, t);
        axon_tensor_t tb3 = mats(db3, t, 1, n, r), tb4 = mats(db4, t, 1, r, n);
        CHECK_OK(axon_kernel_triangular_solve(k.s, &ta, &tb3, 1, 1, 0, AXON_LINALG_NOTRANS));
        CHECK_OK(axon_kernel_triangular_solve(k.s, &ta, &tb4, 1, 0, 0, AXON_LINALG_TRANS));
        CHECK(download(&k, x, db3, n * r, t) && download(&k, xt, db4, r * n, t));
        lc_t *tri = alloc_lc(n * n);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i; j < n; j++) CM(tri, n, i, j) = CM(a, n, i, j);
        CHECK(residual(tri, n, n, 0, x, r, b) <= 1e-12);
        for (int64_t i = 0; i < n; i++)   /* X op(A) = B with op = T: the same X as the left solve, transposed */
            for (int64_t j = 0; j < r; j++) CHECK(cabsl(CM(xt, r, j, i) - CM(x, n, i, j)) <= 1e-12);
        free(a), free(spd), free(b), free(x), free(bt), free(xt), free(tri);
        axon_mem_free(k.dev, da), axon_mem_free(k.dev, ds), axon_mem_free(k.dev, dpiv), axon_mem_free(k.dev, dinfo);
        axon_mem_free(k.dev, db), axon_mem_free(k.dev, dlu), axon_mem_free(k.dev, db2), axon_mem_free(k.dev, db3);
        axon_mem_free(k.dev, db4);
        axon_runtime_destroy(k.rt);
    }
}

/* ---- cross product ---- */

/* float32 along dim 0 of [3, 2] with b broadcast (stride 0 along dim 1); int8 products that wrap; bad input. */
static void test_cross(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const float a[6] = {1, 4, 2, 5, 3, 6}, b[3] = {-1, 0.5f, 2};
    float *da = kc_upload(&k, a, sizeof a), *db = kc_upload(&k, b, sizeof b), *dout = kc_upload(&k, NULL, 24);
    const int64_t s32[2] = {3, 2}, bstr[2] = {1, 0};
    axon_tensor_t ta = kc_tensor(da, AXON_FLOAT32, 2, s32, NULL), tb = kc_tensor(db, AXON_FLOAT32, 2, s32, bstr),
                  to = kc_tensor(dout, AXON_FLOAT32, 2, s32, NULL);
    CHECK_OK(axon_kernel_cross(k.s, &to, &ta, &tb, 0));
    float got[6];
    CHECK(kc_download(&k, got, dout, sizeof got));
    for (int col = 0; col < 2; col++) {
        const float x[3] = {a[col], a[2 + col], a[4 + col]};
        const float want[3] = {x[1] * b[2] - x[2] * b[1], x[2] * b[0] - x[0] * b[2], x[0] * b[1] - x[1] * b[0]};
        for (int i = 0; i < 3; i++) CHECK(got[2 * i + col] == want[i]);
    }
    const int8_t ia[3] = {100, -7, 90}, ib[3] = {3, 120, -100};
    int8_t *dia = kc_upload(&k, ia, 3), *dib = kc_upload(&k, ib, 3), *dio = kc_upload(&k, NULL, 3);
    const int64_t s3[1] = {3};
    axon_tensor_t tia = kc_tensor(dia, AXON_INT8, 1, s3, NULL), tib = kc_tensor(dib, AXON_INT8, 1, s3, NULL),
                  tio = kc_tensor(dio, AXON_INT8, 1, s3, NULL);
    CHECK_OK(axon_kernel_cross(k.s, &tio, &tia, &tib, 0));
    int8_t igot[3];
    CHECK(kc_download(&k, igot, dio, 3));
    CHECK(igot[0] == (int8_t)(-7 * -100 - 90 * 120) && igot[1] == (int8_t)(90 * 3 - 100 * -100) &&
          igot[2] == (int8_t)(100 * 120 - -7 * 3));
    const int64_t s2[2] = {2, 2};
    axon_tensor_t t22 = kc_tensor(dout, AXON_FLOAT32, 2, s2, NULL), tbool = kc_tensor(dio, AXON_BOOL, 1, s3, NULL);
    CHECK_STATUS(axon_kernel_cross(k.s, &t22, &t22, &t22, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not 3");
    CHECK_STATUS(axon_kernel_cross(k.s, &tbool, &tbool, &tbool, 0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_cross(k.s, &to, &ta, &tb, 2), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_cross(k.s, &to, &tia, &tb, 0), AXON_ERROR_INVALID_ARG);
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, db), axon_mem_free(k.dev, dout);
    axon_mem_free(k.dev, dia), axon_mem_free(k.dev, dib), axon_mem_free(k.dev, dio);
    axon_runtime_destroy(k.rt);
}

/* ---- bad input ---- */

/* ---- matrix exponential ---- */

/* exp of the n x n column-major a in long double: Taylor's series on a / 2^s (norm under 1/2, 40 terms), squared s
 * times. */
static void ref_expm(const lc_t *a, int64_t n, lc_t *out) {
    long double norm = 0;
    for (int64_t j = 0; j < n; j++) {
        long double c = 0;
        for (int64_t i = 0; i < n; i++) c += cabsl(CM(a, n, i, j));
        norm = c > norm ? c : norm;
    }
    int s = 0;
    while (norm > 0.5L) norm /= 2, s++;
    lc_t *x = alloc_lc(n * n), *term = alloc_lc(n * n), *t2 = alloc_lc(n * n);
    for (int64_t q = 0; q < n * n; q++) x[q] = a[q] / powl(2.0L, s);
    for (int64_t q = 0; q < n * n; q++) out[q] = term[q] = q % (n + 1) == 0; /* I */
    for (int k = 1; k <= 40; k++) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                lc_t acc = 0;
                for (int64_t l = 0; l < n; l++) acc += CM(term, n, i, l) * CM(x, n, l, j);
                CM(t2, n, i, j) = acc / k;
            }
        memcpy(term, t2, (size_t)(n * n) * sizeof(lc_t));
        for (int64_t q = 0; q < n * n; q++) out[q] += term[q];
    }
    for (int k = 0; k < s; k++) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                lc_t acc = 0;
                for (int64_t l = 0; l < n; l++) acc += CM(out, n, i, l) * CM(out, n, l, j);
                CM(t2, n, i, j) = acc;
            }
        memcpy(out, t2, (size_t)(n * n) * sizeof(lc_t));
    }
    free(x), free(term), free(t2);
}

/* A batch of three: norms about 0.3 (no scaling), 6 and 40 (3 squarings), against ref_expm relative to the result's
 * largest element; then a NaN in one matrix makes only that matrix NaN. */
static void check_matrix_exp(axon_dtype_t t, int threads, int64_t n) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    const int64_t B = 3, nn = n * n;
    const long double scales[3] = {0.3L, 6.0L, 40.0L};
    lc_t *a = alloc_lc(B * nn), *got = alloc_lc(B * nn), *want = alloc_lc(nn);
    fill_random(a, B * nn, t, 7 + (uint64_t)n);
    for (int64_t b = 0; b < B; b++)
        for (int64_t q = 0; q < nn; q++) a[b * nn + q] *= scales[b] / n;
    if (!is_double(t)) { /* the values the dtype holds */
        void *d = upload(&k, a, B * nn, t);
        download(&k, a, d, B * nn, t);
        axon_mem_free(k.dev, d);
    }
    void *d = upload(&k, a, B * nn, t);
    axon_tensor_t ta = mats(d, t, B, n, n);
    CHECK_OK(axon_kernel_matrix_exp(k.s, &ta));
    CHECK(download(&k, got, d, B * nn, t));
    for (int64_t b = 0; b < B; b++) {
        ref_expm(a + b * nn, n, want);
        long double big = 0, err = 0;
        for (int64_t q = 0; q < nn; q++) big = fmaxl(big, cabsl(want[q]));
        for (int64_t q = 0; q < nn; q++) err = fmaxl(err, cabsl(got[b * nn + q] - want[q]));
        if (!(err <= (is_double(t) ? 1e-12L : 1e-6L) * big)) {
            fprintf(stderr, "  matrix_exp %s n %lld matrix %lld: error %Lg of %Lg\n", axon_dtype_name(t),
                    (long long)n, (long long)b, err, big);
            CHECK(0);
        }
    }
    a[nn + nn / 2] = NAN; /* in the second matrix */
    axon_mem_free(k.dev, d);
    d = upload(&k, a, B * nn, t);
    ta = mats(d, t, B, n, n);
    CHECK_OK(axon_kernel_matrix_exp(k.s, &ta));
    CHECK(download(&k, got, d, B * nn, t));
    for (int64_t q = 0; q < B * nn; q++) CHECK((q / nn == 1) == (creall(got[q]) != creall(got[q])));
    axon_mem_free(k.dev, d);
    free(a), free(got), free(want);
    axon_runtime_destroy(k.rt);
}

static void test_matrix_exp(void) {
    for (int d = 0; d < 4; d++)
        for (int threads = 1; threads <= 2; threads++) {
            check_matrix_exp(dtypes[d], threads, 1);
            check_matrix_exp(dtypes[d], threads, 5);
            check_matrix_exp(dtypes[d], threads, 17);
        }
}

/* ---- least squares ---- */

/* Every driver on tall [6, 3] matrices: the solution meets the normal equations A^H (A X - B) = 0; the rank is 3 and
 * the singular values positive where the driver gives them; a wide [3, 5] system is solved exactly. */
static void check_lstsq(axon_dtype_t t, int driver) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t B = 2, rhs = 2, shapes[2][2] = {{6, 3}, {3, 5}};
    for (int sh = 0; sh < 2; sh++) {
        const int64_t m = shapes[sh][0], n = shapes[sh][1], lb = m > n ? m : n, mn = m < n ? m : n;
        lc_t *a = alloc_lc(B * m * n), *b = alloc_lc(B * lb * rhs), *x = alloc_lc(B * lb * rhs), *sv = alloc_lc(B * mn);
        fill_random(a, B * m * n, t, 41 + (uint64_t)sh);
        fill_random(b, B * lb * rhs, t, 43 + (uint64_t)sh);   /* rows m.. of each b are ignored on input */
        const axon_dtype_t rt = is_double(t) ? AXON_FLOAT64 : AXON_FLOAT32;
        void *da = upload(&k, a, B * m * n, t), *db = upload(&k, b, B * lb * rhs, t);
        void *dsv = kc_upload(&k, NULL, (size_t)(B * mn) * 8);
        int64_t *drank = kc_upload(&k, NULL, (size_t)B * 8);
        int32_t *dinfo = kc_upload(&k, NULL, (size_t)B * 4);
        axon_tensor_t ta = mats(da, t, B, m, n), tb = mats(db, t, B, lb, rhs), tr = vecs(drank, AXON_INT64, B, 1),
                      ts = vecs(dsv, rt, B, mn), ti = vecs(dinfo, AXON_INT32, B, 1);
        const int rank = driver != AXON_LSTSQ_GELS, svs = driver >= AXON_LSTSQ_GELSD;
        CHECK_OK(axon_kernel_lstsq(k.s, &ta, &tb, rank ? &tr : NULL, svs ? &ts : NULL, &ti,
                                   (axon_lstsq_driver_t)driver, -1.0));
        CHECK(download(&k, x, db, B * lb * rhs, t));
        if (svs) CHECK(download(&k, sv, dsv, B * mn, rt));
        int64_t ranks[2] = {0, 0};
        if (rank) CHECK(kc_download(&k, ranks, drank, sizeof ranks));
        for (int64_t q = 0; q < B; q++) {
            const lc_t *aq = a + q * m * n, *bq = b + q * lb * rhs, *xq = x + q * lb * rhs;
            long double worst = 0, scale = 1;
            for (int64_t c = 0; c < rhs; c++) {
                lc_t r[8];
                for (int64_t i = 0; i < m; i++) {
                    r[i] = -CM(bq, lb, i, c);
                    for (int64_t j = 0; j < n; j++) r[i] += CM(aq, m, i, j) * CM(xq, lb, j, c);
                    if (cabsl(CM(bq, lb, i, c)) > scale) scale = cabsl(CM(bq, lb, i, c));
                }
                for (int64_t j = 0; j < n; j++) {   /* (A^H r)_j */
                    lc_t g = 0;
                    for (int64_t i = 0; i < m; i++) g += conjl(CM(aq, m, i, j)) * r[i];
                    if (cabsl(g) > worst) worst = cabsl(g);
                }
            }
            CHECK(worst / scale <= 50 * tol_of(t));
            if (rank) CHECK_EQ_I64(ranks[q], mn);
            for (int64_t i = 0; svs && i < mn; i++) CHECK(creall(sv[q * mn + i]) > 0);
        }
        free(a), free(b), free(x), free(sv);
        axon_mem_free(k.dev, da), axon_mem_free(k.dev, db), axon_mem_free(k.dev, dsv), axon_mem_free(k.dev, drank);
        axon_mem_free(k.dev, dinfo);
    }
    axon_runtime_destroy(k.rt);
}

static void test_lstsq_every_driver(void) {
    if (!axon_linalg_available()) return;
    for (int d = 0; d < 4; d++)
        for (int driver = AXON_LSTSQ_GELS; driver <= AXON_LSTSQ_GELSS; driver++) check_lstsq(dtypes[d], driver);
}

static void test_linalg_rejects_bad_input(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    char *buf = kc_upload(&k, NULL, 4096);
    const int64_t s33[3] = {2, 3, 3};
    axon_tensor_t rowmajor = kc_tensor(buf, AXON_FLOAT32, 3, s33, NULL);
    axon_tensor_t good = mats(buf, AXON_FLOAT32, 2, 3, 3), ints = mats(buf, AXON_INT32, 2, 3, 3);
    axon_tensor_t piv = vecs(buf + 1024, AXON_INT32, 2, 3), info = vecs(buf + 2048, AXON_INT32, 2, 1);
    axon_tensor_t piv_short = vecs(buf + 1024, AXON_INT32, 2, 2), info_f = vecs(buf + 2048, AXON_FLOAT32, 2, 1);
    const int64_t s2[1] = {9};
    axon_tensor_t flat = kc_tensor(buf, AXON_FLOAT32, 1, s2, NULL);
    CHECK_STATUS(axon_kernel_lu_factor(k.s, &rowmajor, &piv, &info), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not a batch of column-major matrices");
    CHECK_STATUS(axon_kernel_lu_factor(k.s, &ints, &piv, &info), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("has dtype int32");
    CHECK_STATUS(axon_kernel_lu_factor(k.s, &flat, &piv, &info), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("two or more dimensions");
    CHECK_STATUS(axon_kernel_lu_factor(k.s, &good, &piv_short, &info), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_lu_factor(k.s, &good, &piv, &info_f), AXON_ERROR_INVALID_ARG);
    axon_tensor_t wide = mats(buf, AXON_FLOAT32, 2, 3, 4), b1 = mats(buf + 3072, AXON_FLOAT32, 1, 3, 1);
    CHECK_STATUS(axon_kernel_inverse(k.s, &wide, &info), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("must be square");
    CHECK_STATUS(axon_kernel_lu_solve(k.s, &good, &piv, &b1, AXON_LINALG_NOTRANS), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("lu has 2 matrices, b 1");
    axon_tensor_t bd = mats(buf + 3072, AXON_FLOAT64, 2, 3, 1);
    CHECK_STATUS(axon_kernel_triangular_solve(k.s, &good, &bd, 1, 1, 0, AXON_LINALG_NOTRANS), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("has dtype float64, expected float32");
    axon_tensor_t b4 = mats(buf + 3072, AXON_FLOAT32, 2, 4, 1);
    CHECK_STATUS(axon_kernel_cholesky_solve(k.s, &good, &b4, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("its matrices must be 3 x 1");
    CHECK_STATUS(axon_kernel_householder_product(k.s, &wide, &piv), AXON_ERROR_INVALID_ARG);
    if (axon_linalg_available()) {
        /* pivots that are not an LU's: an error when the command runs, and nothing written out of bounds */
        const int32_t bad[6] = {1, 9, 3, 0, 2, 3};
        CHECK_OK(axon_memcpy(buf + 1024, bad, sizeof bad, AXON_COPY_HOST_TO_DEVICE, k.s));
        axon_tensor_t b2 = mats(buf + 3072, AXON_FLOAT32, 2, 3, 1);
        CHECK_OK(axon_kernel_lu_solve(k.s, &good, &piv, &b2, AXON_LINALG_NOTRANS));
        CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("pivots must be between 1 and the number of rows");
    } else {
        CHECK_STATUS(axon_kernel_lu_factor(k.s, &good, &piv, &info), AXON_ERROR_UNSUPPORTED);
        CHECK_MSG("without MKL");
    }
    axon_stream_sync(k.s);
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_lu_factor_unpack_solve_inverse_det);
    RUN(test_singular_matrix);
    RUN(test_triangular_solve_every_variant);
    RUN(test_cholesky_solve_and_inverse);
    RUN(test_eigh_and_svd);
    RUN(test_qr);
    RUN(test_eig_and_ldl);
    RUN(test_one_solve_is_split_over_the_pool);
    RUN(test_cross);
    RUN(test_matrix_exp);
    RUN(test_lstsq_every_driver);
    RUN(test_linalg_rejects_bad_input);
    return check_report();
}
