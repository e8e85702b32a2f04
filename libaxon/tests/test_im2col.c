/* axon/im2col.h against a direct reference: patches of several geometries (padding, stride, dilation, a kernel
 * wider than the padded image's last block) in dtypes of every element size, col2im's sums in float32 and float64
 * (exact: inputs are small multiples of 1/8), the same bits for 1 and 4 threads, bad input refused with a message. */
#include <stdio.h>
#include <stdlib.h>

#include "axon/im2col.h"
#include "kernels_check.h"
#include "reduce_ref.h"

typedef struct ic_case {
    int64_t n, c, h, w;
    axon_im2col_params_t p;
} ic_case_t;

static const ic_case_t ic_cases[] = {
    {2, 3, 5, 6, {{2, 3}, {1, 1}, {0, 0}, {1, 1}}},
    {1, 2, 7, 7, {{3, 3}, {1, 1}, {1, 1}, {2, 2}}},
    {2, 1, 9, 8, {{2, 2}, {2, 3}, {1, 2}, {1, 2}}},
    {1, 4, 4, 5, {{4, 5}, {1, 1}, {0, 0}, {1, 1}}},      /* one block */
    {3, 2, 3, 3, {{1, 1}, {1, 1}, {2, 1}, {3, 2}}},      /* blocks that read only padding */
};

static int64_t ic_out(const ic_case_t *c, int i) {
    const int64_t in = i ? c->w : c->h;
    return (in + 2 * c->p.padding[i] - (c->p.dilation[i] * (c->p.kernel[i] - 1) + 1)) / c->p.stride[i] + 1;
}

/* Image element of column element (n, r, l), or -1 where it reads padding. */
static int64_t ic_source(const ic_case_t *c, int64_t n, int64_t r, int64_t l) {
    const int64_t kh = c->p.kernel[0], kw = c->p.kernel[1], ow = ic_out(c, 1);
    const int64_t ch = r / (kh * kw), i = r / kw % kh, j = r % kw, y = l / ow, x = l % ow;
    const int64_t iy = y * c->p.stride[0] - c->p.padding[0] + i * c->p.dilation[0];
    const int64_t ix = x * c->p.stride[1] - c->p.padding[1] + j * c->p.dilation[1];
    if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) return -1;
    return ((n * c->c + ch) * c->h + iy) * c->w + ix;
}

static void test_patches_and_sums_match_the_reference(void) {
    static const axon_dtype_t dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_INT64, AXON_BOOL,
                                          AXON_COMPLEX128, AXON_INT16};
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (size_t ci = 0; ci < sizeof ic_cases / sizeof ic_cases[0]; ci++)
        for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
            const ic_case_t *c = &ic_cases[ci];
            const axon_dtype_t d = dtypes[di];
            const size_t es = axon_dtype_size(d);
            const int64_t rows = c->c * c->p.kernel[0] * c->p.kernel[1], L = ic_out(c, 0) * ic_out(c, 1);
            const int64_t ni = c->n * c->c * c->h * c->w, nc = c->n * rows * L;
            unsigned char *img = malloc((size_t)ni * es), *col = malloc((size_t)nc * es);
            unsigned char *got = malloc((size_t)nc * es);
            for (size_t b = 0; b < (size_t)ni * es; b++)
                img[b] = (unsigned char)(d == AXON_BOOL ? rr_rand() % 2 : rr_rand());
            for (int64_t n = 0; n < c->n; n++)
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t l = 0; l < L; l++) {
                        const int64_t src = ic_source(c, n, r, l), at = (n * rows + r) * L + l;
                        if (src < 0) memset(col + at * es, 0, es);
                        else memcpy(col + at * es, img + src * es, es);
                    }
            int64_t si[4] = {c->n, c->c, c->h, c->w}, sc[3] = {c->n, rows, L};
            void *di_ = kc_upload(&k, img, (size_t)ni * es), *dc = kc_upload(&k, NULL, (size_t)nc * es);
            axon_tensor_t ti = kc_tensor(di_, d, 4, si, NULL), tc = kc_tensor(dc, d, 3, sc, NULL);
            CHECK_OK(axon_kernel_im2col(k.s, &tc, &ti, &c->p));
            CHECK(kc_download(&k, got, dc, (size_t)nc * es));
            const int64_t diff = kc_first_diff(got, col, (size_t)nc * es);
            if (diff >= 0)
                fprintf(stderr, "im2col case %zu %s: byte %lld differs\n", ci, axon_dtype_name(d), (long long)diff);
            CHECK(diff < 0);
            if (d == AXON_FLOAT32 || d == AXON_FLOAT64) {
                /* col2im of random columns: each image element the sum of the column elements that read it. */
                long double *want = calloc((size_t)ni, sizeof(long double));
                for (int64_t i = 0; i < nc; i++) {
                    const long double v = (long double)((int)(rr_rand() % 33) - 16) / 8;
                    rr_set(d, col, i, v);
                    const int64_t src = ic_source(c, i / (rows * L), i / L % rows, i % L);
                    if (src >= 0) want[src] += v;
                }
                void *dc2 = kc_upload(&k, col, (size_t)nc * es);
                axon_tensor_t tc2 = kc_tensor(dc2, d, 3, sc, NULL);
                CHECK_OK(axon_kernel_col2im(k.s, &ti, &tc2, &c->p));
                CHECK(kc_download(&k, img, di_, (size_t)ni * es));
                for (int64_t i = 0; i < ni; i++)
                    if (rr_get(d, img, i) != want[i]) {
                        fprintf(stderr, "col2im case %zu %s: element %lld is %Lg, expected %Lg\n", ci,
                                axon_dtype_name(d), (long long)i, rr_get(d, img, i), want[i]);
                        CHECK(0);
                        break;
                    }
                axon_mem_free(k.dev, dc2);
                free(want);
            }
            axon_mem_free(k.dev, di_), axon_mem_free(k.dev, dc);
            free(img), free(col), free(got);
        }
    axon_runtime_destroy(k.rt);
}

static void test_col2im_is_bitwise_the_same_for_any_thread_count(void) {
    const axon_im2col_params_t p = {{3, 3}, {1, 1}, {1, 1}, {1, 1}};
    int64_t si[4] = {3, 5, 17, 19}, sc[3] = {3, 45, 17 * 19};
    const int64_t ni = 3 * 5 * 17 * 19, nc = 3 * 45 * 17 * 19;
    float *col = malloc(sizeof(float) * (size_t)nc), *res[2] = {malloc(sizeof(float) * (size_t)ni),
                                                                 malloc(sizeof(float) * (size_t)ni)};
    for (int64_t i = 0; i < nc; i++) col[i] = (float)((int)(rr_rand() % 2001) - 1000) / 7.0f;
    for (int t = 0; t < 2; t++) {
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        void *dc = kc_upload(&k, col, sizeof(float) * (size_t)nc);
        void *di = kc_upload(&k, NULL, sizeof(float) * (size_t)ni);
        axon_tensor_t tc = kc_tensor(dc, AXON_FLOAT32, 3, sc, NULL), ti = kc_tensor(di, AXON_FLOAT32, 4, si, NULL);
        CHECK_OK(axon_kernel_col2im(k.s, &ti, &tc, &p));
        CHECK(kc_download(&k, res[t], di, sizeof(float) * (size_t)ni));
        axon_mem_free(k.dev, dc), axon_mem_free(k.dev, di);
        axon_runtime_destroy(k.rt);
    }
    CHECK(kc_first_diff(res[0], res[1], sizeof(float) * (size_t)ni) < 0);
    free(col), free(res[0]), free(res[1]);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[512], cbuf[512];
    int64_t si[4] = {2, 3, 4, 4}, sc[3] = {2, 12, 9}, sc_bad[3] = {2, 12, 8};
    memset(buf, 0, sizeof buf);
    axon_tensor_t img = kc_tensor(buf, AXON_FLOAT32, 4, si, NULL), col = kc_tensor(cbuf, AXON_FLOAT32, 3, sc, NULL);
    axon_im2col_params_t p = {{2, 2}, {1, 1}, {0, 0}, {1, 1}}, q = p;
    CHECK_OK(axon_kernel_im2col(k.s, &col, &img, &p));
    q.stride[1] = 0;
    CHECK_STATUS(axon_kernel_im2col(k.s, &col, &img, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("im2col: kernel 2, dilation 1 and stride 0 must be >= 1");
    axon_tensor_t bad = kc_tensor(buf, AXON_FLOAT32, 3, sc_bad, NULL);
    CHECK_STATUS(axon_kernel_col2im(k.s, &img, &bad, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("col2im: image [2, 3, 4, 4] and columns [2, 12, 8] do not fit a 2 x 2 kernel (3 x 3 blocks)");
    axon_tensor_t i64 = kc_tensor(buf, AXON_INT64, 4, si, NULL), c64 = kc_tensor(buf, AXON_INT64, 3, sc, NULL);
    CHECK_STATUS(axon_kernel_col2im(k.s, &i64, &c64, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("col2im: dtype int64 is not float32 or float64");
    CHECK_STATUS(axon_kernel_im2col(k.s, &c64, &img, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("differ");
    CHECK_STATUS(axon_kernel_im2col(k.s, &col, &img, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_patches_and_sums_match_the_reference);
    RUN(test_col2im_is_bitwise_the_same_for_any_thread_count);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}
