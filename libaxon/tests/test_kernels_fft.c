/* axon_kernel_fft: c2c, r2c and c2r over one or several dimensions, rows and columns, in both precisions and on 1
 * and 2 threads, against a direct DFT in long double; the input left unchanged; bad input refused. Without MKL the
 * kernel must say UNSUPPORTED (and the numeric tests have nothing to run). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/fft.h"
#include "kernels_check.h"

typedef long double complex lc_t;

static int64_t numel_of(int ndim, const int64_t *sizes) {
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= sizes[k];
    return n;
}

/* x (contiguous, `sizes`) transformed along dimension d in place: sign -1 forward, +1 backward. */
static void ref_dft(lc_t *x, int ndim, const int64_t *sizes, int d, int sign) {
    int64_t outer = 1, inner = 1, n = sizes[d];
    for (int k = 0; k < d; k++) outer *= sizes[k];
    for (int k = d + 1; k < ndim; k++) inner *= sizes[k];
    lc_t *row = malloc((size_t)n * sizeof *row);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            lc_t *base = x + o * n * inner + i;
            for (int64_t k = 0; k < n; k++) {
                lc_t acc = 0;
                for (int64_t j = 0; j < n; j++) {
                    long double t = 2.0L * (long double)M_PI * (long double)((j * k) % n) / (long double)n;
                    acc += base[j * inner] * (cosl(t) + (long double)sign * I * sinl(t));
                }
                row[k] = acc;
            }
            for (int64_t k = 0; k < n; k++) base[k * inner] = row[k];
        }
    free(row);
}

/* Random values in [-1, 1): parts of complex numbers, or reals. */
static void fill_random(double *v, int64_t n, uint64_t seed) {
    uint64_t x = seed * 2654435761u + 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = (double)(x >> 11) * 0x1p-52 - 1.0;
    }
}

/* Upload n values (of `count` doubles) as dtype: reals as themselves, complex as pairs. */
static void *upload_as(kc_dev_t *k, const double *v, int64_t count, axon_dtype_t dtype) {
    if (dtype == AXON_FLOAT64 || dtype == AXON_COMPLEX128) return kc_upload(k, v, (size_t)count * sizeof(double));
    float *f = malloc((size_t)count * sizeof *f);
    for (int64_t i = 0; i < count; i++) f[i] = (float)v[i];
    void *p = kc_upload(k, f, (size_t)count * sizeof *f);
    free(f);
    return p;
}

static int download_as(kc_dev_t *k, double *v, const void *dev, int64_t count, axon_dtype_t dtype) {
    if (dtype == AXON_FLOAT64 || dtype == AXON_COMPLEX128) return kc_download(k, v, dev, (size_t)count * 8);
    float *f = malloc((size_t)count * sizeof *f);
    int ok = kc_download(k, f, dev, (size_t)count * sizeof *f);
    for (int64_t i = 0; i < count; i++) v[i] = f[i];
    free(f);
    return ok;
}

/* Largest |got - want| over the largest |want| (values as doubles, complex as pairs). */
static double rel_error(const double *got, const lc_t *want, int64_t n, int complex_result) {
    long double err = 0, top = 1e-30L;
    for (int64_t i = 0; i < n; i++) {
        lc_t g = complex_result ? got[2 * i] + I * (long double)got[2 * i + 1] : got[i];
        lc_t w = complex_result ? want[i] : creall(want[i]);
        if (cabsl(g - w) > err) err = cabsl(g - w);
        if (cabsl(w) > top) top = cabsl(w);
    }
    return (double)(err / top);
}

typedef struct fft_case {
    axon_fft_kind_t kind;
    int ndim;
    int64_t sizes[3];        /* of the signal: in for c2c and r2c, out for c2r */
    int ndims;
    int dims[3];
    int full;                /* r2c: the whole spectrum */
} fft_case_t;

/* Run one case on `threads` workers in precision dbl; the error against the reference, or -1 on failure. */
static double run_case(const fft_case_t *c, int dbl, int threads, int forward, double scale) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return -1;
    const axon_dtype_t real = dbl ? AXON_FLOAT64 : AXON_FLOAT32, cplx = dbl ? AXON_COMPLEX128 : AXON_COMPLEX64;
    const int last = c->dims[c->ndims - 1];
    int64_t half[3];   /* the one-sided shape */
    memcpy(half, c->sizes, sizeof half);
    half[last] = c->sizes[last] / 2 + 1;
    const int64_t *in_sizes = c->kind == AXON_FFT_C2R ? half : c->sizes;
    const int64_t *out_sizes = c->kind == AXON_FFT_R2C && !c->full ? half : c->sizes;
    const int in_complex = c->kind != AXON_FFT_R2C, out_complex = c->kind != AXON_FFT_C2R;
    const int64_t nin = numel_of(c->ndim, in_sizes), nout = numel_of(c->ndim, out_sizes);
    const int64_t in_count = nin * (in_complex ? 2 : 1), out_count = nout * (out_complex ? 2 : 1);

    double *x = malloc((size_t)in_count * sizeof *x), *got = malloc((size_t)out_count * sizeof *got);
    double *again = malloc((size_t)in_count * sizeof *again);
    fill_random(x, in_count, (uint64_t)(c->sizes[0] * 131 + c->sizes[1] * 7 + c->kind));
    if (!dbl)
        for (int64_t i = 0; i < in_count; i++) x[i] = (float)x[i];
    void *din = upload_as(&k, x, in_count, in_complex ? cplx : real);
    void *dout = kc_upload(&k, NULL, (size_t)out_count * (dbl ? 8 : 4));
    axon_tensor_t ti = kc_tensor(din, in_complex ? cplx : real, c->ndim, in_sizes, NULL);
    axon_tensor_t to = kc_tensor(dout, out_complex ? cplx : real, c->ndim, out_sizes, NULL);
    int ok = din && dout && axon_kernel_fft(k.s, &to, &ti, c->kind, c->dims, c->ndims, forward, scale) == AXON_OK &&
             download_as(&k, got, dout, out_count, out_complex ? cplx : real) &&
             download_as(&k, again, din, in_count, in_complex ? cplx : real);
    double err = -1;
    if (ok && memcmp(x, again, (size_t)in_count * sizeof *x) == 0) {
        /* the reference on the full signal shape */
        const int64_t nfull = numel_of(c->ndim, c->sizes);
        lc_t *ref = calloc((size_t)nfull, sizeof *ref);
        const int sign = forward ? -1 : 1;
        if (c->kind == AXON_FFT_C2R) {
            /* backward along the other dims on the half spectrum, then the real transform of each last-dim row:
             * the Hermitian extension, with the imaginary parts of the DC and Nyquist terms dropped */
            lc_t *h = malloc((size_t)nin * sizeof *h);
            for (int64_t i = 0; i < nin; i++) h[i] = x[2 * i] + I * (long double)x[2 * i + 1];
            for (int q = 0; q < c->ndims - 1; q++) ref_dft(h, c->ndim, half, c->dims[q], 1);
            int64_t outer = 1, inner = 1, n = c->sizes[last], m = half[last];
            for (int q = 0; q < last; q++) outer *= c->sizes[q];
            for (int q = last + 1; q < c->ndim; q++) inner *= c->sizes[q];
            for (int64_t o = 0; o < outer; o++)
                for (int64_t i = 0; i < inner; i++)
                    for (int64_t j = 0; j < n; j++) {
                        long double acc = creall(h[o * m * inner + i]);
                        for (int64_t kk = 1; kk < m; kk++) {
                            lc_t v = h[(o * m + kk) * inner + i];
                            long double t = 2.0L * (long double)M_PI * (long double)((j * kk) % n) / (long double)n;
                            lc_t term = v * (cosl(t) + I * sinl(t));
                            acc += (n % 2 == 0 && kk == n / 2) ? creall(term) : 2.0L * creall(term);
                        }
                        ref[(o * n + j) * inner + i] = acc;
                    }
            free(h);
        } else {
            for (int64_t i = 0; i < nfull; i++)
                ref[i] = in_complex ? x[2 * i] + I * (long double)x[2 * i + 1] : (lc_t)x[i];
            for (int q = 0; q < c->ndims; q++) ref_dft(ref, c->ndim, c->sizes, c->dims[q], sign);
        }
        for (int64_t i = 0; i < nfull; i++) ref[i] *= scale;
        if (c->kind == AXON_FFT_R2C && !c->full) {
            /* keep the one-sided half along the last dim */
            lc_t *h = malloc((size_t)nout * sizeof *h);
            int64_t outer = 1, inner = 1, n = c->sizes[last], m = half[last];
            for (int q = 0; q < last; q++) outer *= c->sizes[q];
            for (int q = last + 1; q < c->ndim; q++) inner *= c->sizes[q];
            for (int64_t o = 0; o < outer; o++)
                for (int64_t kk = 0; kk < m; kk++)
                    for (int64_t i = 0; i < inner; i++) h[(o * m + kk) * inner + i] = ref[(o * n + kk) * inner + i];
            free(ref);
            ref = h;
        }
        err = rel_error(got, ref, nout, out_complex);
        free(ref);
    }
    free(x), free(got), free(again);
    axon_mem_free(k.dev, din);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
    return err;
}

static void check_case(const fft_case_t *c, int forward, double scale) {
    for (int dbl = 0; dbl < 2; dbl++)
        for (int threads = 1; threads <= 2; threads++) {
            double err = run_case(c, dbl, threads, forward, scale);
            double tol = dbl ? 1e-13 : 3e-6;
            if (!(err >= 0 && err <= tol))
                fprintf(stderr, "  kind %d sizes [%lld, %lld, %lld] ndims %d dims[0] %d %s %d threads: error %g\n",
                        (int)c->kind, (long long)c->sizes[0], (long long)c->sizes[1], (long long)c->sizes[2],
                        c->ndims, c->dims[0], dbl ? "double" : "single", threads, err);
            CHECK(err >= 0 && err <= tol);
        }
}

static void test_c2c_rows_columns_and_several_dims(void) {
    if (!axon_fft_available()) return;
    const fft_case_t cases[] = {
        {AXON_FFT_C2C, 2, {6, 16, 1}, 1, {1, 0, 0}, 0},     /* rows */
        {AXON_FFT_C2C, 2, {13, 5, 1}, 1, {0, 0, 0}, 0},     /* columns, a prime length */
        {AXON_FFT_C2C, 3, {3, 7, 4}, 1, {1, 0, 0}, 0},      /* a middle dimension */
        {AXON_FFT_C2C, 3, {4, 6, 5}, 2, {2, 0, 0}, 0},      /* two dims, last first */
        {AXON_FFT_C2C, 3, {2, 3, 8}, 3, {0, 1, 2}, 0},      /* all three */
        {AXON_FFT_C2C, 2, {300, 12, 1}, 1, {1, 0, 0}, 0},   /* 300 rows in groups over the pool, with a tail */
        {AXON_FFT_C2C, 2, {12, 300, 1}, 1, {0, 0, 0}, 0},   /* 300 columns, the same */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], 1, 1.0);
        check_case(&cases[i], 0, 0.25);
    }
}

static void test_r2c_one_sided_and_full(void) {
    if (!axon_fft_available()) return;
    const fft_case_t cases[] = {
        {AXON_FFT_R2C, 2, {5, 16, 1}, 1, {1, 0, 0}, 0},
        {AXON_FFT_R2C, 2, {5, 15, 1}, 1, {1, 0, 0}, 0},     /* odd: no Nyquist term */
        {AXON_FFT_R2C, 2, {9, 4, 1}, 1, {0, 0, 0}, 0},      /* along columns */
        {AXON_FFT_R2C, 3, {3, 6, 10}, 2, {0, 2, 0}, 0},     /* the real transform last, then the others */
        {AXON_FFT_R2C, 2, {5, 16, 1}, 1, {1, 0, 0}, 1},
        {AXON_FFT_R2C, 3, {3, 6, 7}, 2, {1, 2, 0}, 1},
        {AXON_FFT_R2C, 2, {400, 10, 1}, 1, {1, 0, 0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], 1, 1.0 / 3.0);
}

static void test_c2r_is_the_hermitian_inverse(void) {
    if (!axon_fft_available()) return;
    const fft_case_t cases[] = {
        {AXON_FFT_C2R, 2, {5, 16, 1}, 1, {1, 0, 0}, 0},
        {AXON_FFT_C2R, 2, {5, 15, 1}, 1, {1, 0, 0}, 0},
        {AXON_FFT_C2R, 2, {9, 6, 1}, 1, {0, 0, 0}, 0},
        {AXON_FFT_C2R, 3, {3, 6, 10}, 2, {1, 2, 0}, 0},     /* dim 1 (complex), then 2 (real); input unchanged */
        {AXON_FFT_C2R, 3, {4, 5, 6}, 3, {2, 0, 1}, 0},
        {AXON_FFT_C2R, 2, {400, 10, 1}, 1, {1, 0, 0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], 0, 0.5);
}

static void test_fft_rejects_bad_input(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    char *buf = kc_upload(&k, NULL, 4096);
    int64_t s8[2] = {2, 8}, s5[2] = {2, 5}, s4[2] = {2, 4}, s0[2] = {2, 0};
    axon_tensor_t c8 = kc_tensor(buf, AXON_COMPLEX64, 2, s8, NULL), o8 = kc_tensor(buf + 1024, AXON_COMPLEX64, 2, s8,
                                                                                   NULL);
    axon_tensor_t r8 = kc_tensor(buf, AXON_FLOAT32, 2, s8, NULL), h5 = kc_tensor(buf + 1024, AXON_COMPLEX64, 2, s5,
                                                                                 NULL);
    axon_tensor_t d8 = kc_tensor(buf + 1024, AXON_COMPLEX128, 2, s8, NULL);
    int dim1[1] = {1}, twice[2] = {1, 1}, far[1] = {2};
    if (!axon_fft_available()) {
        CHECK_STATUS(axon_kernel_fft(k.s, &o8, &c8, AXON_FFT_C2C, dim1, 1, 1, 1.0), AXON_ERROR_UNSUPPORTED);
        CHECK_MSG("without MKL");
    }
    CHECK_STATUS(axon_kernel_fft(k.s, &d8, &c8, AXON_FFT_C2C, dim1, 1, 1, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dtypes complex64 -> complex128");
    CHECK_STATUS(axon_kernel_fft(k.s, &o8, &r8, AXON_FFT_C2C, dim1, 1, 1, 1.0), AXON_ERROR_INVALID_ARG);
    axon_tensor_t h4 = kc_tensor(buf + 1024, AXON_COMPLEX64, 2, s4, NULL);   /* r2c of 8 keeps 5 or 8 */
    CHECK_STATUS(axon_kernel_fft(k.s, &h4, &r8, AXON_FFT_R2C, dim1, 1, 1, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("shapes [2, 8] -> [2, 4] do not match along dimension 1");
    CHECK_STATUS(axon_kernel_fft(k.s, &o8, &c8, AXON_FFT_C2C, twice, 2, 1, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out of range or repeated");
    CHECK_STATUS(axon_kernel_fft(k.s, &o8, &c8, AXON_FFT_C2C, far, 1, 1, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_fft(k.s, &o8, &c8, AXON_FFT_C2C, NULL, 0, 1, 1.0), AXON_ERROR_INVALID_ARG);
    axon_tensor_t r4 = kc_tensor(buf + 2048, AXON_FLOAT32, 2, s4, NULL);   /* c2r to 4 reads 3 */
    CHECK_STATUS(axon_kernel_fft(k.s, &r4, &h5, AXON_FFT_C2R, dim1, 1, 1, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("always backward");
    CHECK_STATUS(axon_kernel_fft(k.s, &r4, &h5, AXON_FFT_C2R, dim1, 1, 0, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("do not match along dimension 1");
    axon_tensor_t e0 = kc_tensor(buf, AXON_COMPLEX64, 2, s0, NULL), f0 = kc_tensor(buf + 1024, AXON_COMPLEX64, 2, s0,
                                                                                   NULL);
    CHECK_STATUS(axon_kernel_fft(k.s, &f0, &e0, AXON_FFT_C2C, dim1, 1, 1, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("a transform needs one or more");
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_c2c_rows_columns_and_several_dims);
    RUN(test_r2c_one_sided_and_full);
    RUN(test_c2r_is_the_hermitian_inverse);
    RUN(test_fft_rejects_bad_input);
    return check_report();
}
