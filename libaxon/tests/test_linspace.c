/* axon_kernel_linspace: PyTorch's values (taken from torch 2.13's CPU linspace) for integer dtypes, exact ends and
 * the symmetric halves for floats, a reversed dst, one element, a long range split over threads, and bad input. */
#include <math.h>

#include "axon/linspace.h"
#include "kernels_check.h"

/* Runs linspace into a fresh n-element buffer of dtype dt and downloads it into out. */
static int run_linspace(kc_dev_t *k, axon_dtype_t dt, int64_t n, double start, double end, void *out) {
    void *buf = kc_upload(k, NULL, (size_t)(n > 0 ? n : 1) * axon_dtype_size(dt));
    axon_tensor_t t = kc_tensor(buf, dt, 1, &n, NULL);
    int ok = axon_kernel_linspace(k->s, &t, start, end) == AXON_OK &&
             kc_download(k, out, buf, (size_t)n * axon_dtype_size(dt));
    axon_mem_free(k->dev, buf);
    return ok;
}

static void test_integer_dtypes_give_cpus_values(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    int16_t i16[7];
    CHECK(run_linspace(&k, AXON_INT16, 7, -3, 300, i16));
    const int16_t want16[7] = {-3, 47, 98, 148, 199, 249, 300};
    CHECK(memcmp(i16, want16, sizeof want16) == 0);
    int64_t i64[5];
    CHECK(run_linspace(&k, AXON_INT64, 4, 0, 10, i64));
    CHECK(i64[0] == 0 && i64[1] == 3 && i64[2] == 6 && i64[3] == 10);
    CHECK(run_linspace(&k, AXON_INT64, 5, -0x1p62, 0x1p62, i64));
    const int64_t q = INT64_C(1) << 61;
    CHECK(i64[0] == -2 * q && i64[1] == -q && i64[2] == 0 && i64[3] == q && i64[4] == 2 * q);
    /* torch.linspace(-2**62, 2**62 - 1, 1001, dtype=torch.int64)[33:35]: a product that rounds apart from the sum */
    int64_t wide[1001];
    CHECK(run_linspace(&k, AXON_INT64, 1001, -0x1p62, (double)(INT64_C(1) << 62) - 1, wide));
    CHECK(wide[33] == INT64_C(-4307314741211180544) && wide[34] == INT64_C(-4298091369174325760));
    int8_t i8[6];
    CHECK(run_linspace(&k, AXON_INT8, 6, -100, 100, i8));
    const int8_t want8[6] = {-100, -60, -20, 20, 60, 100};
    CHECK(memcmp(i8, want8, sizeof want8) == 0);
    int32_t i32[7];
    CHECK(run_linspace(&k, AXON_INT32, 7, 10, -10, i32)); /* descending: toward zero, not floor */
    const int32_t want32[7] = {10, 6, 3, 0, -3, -6, -10};
    CHECK(memcmp(i32, want32, sizeof want32) == 0);
    uint8_t u8[5];
    CHECK(run_linspace(&k, AXON_UINT8, 5, 0, 255, u8));
    CHECK(u8[0] == 0 && u8[1] == 63 && u8[2] == 127 && u8[3] == 191 && u8[4] == 255);
    axon_runtime_destroy(k.rt);
}

static void test_floats_have_exact_ends_and_symmetric_halves(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float f[7];
    CHECK(run_linspace(&k, AXON_FLOAT32, 7, 0.1, 0.7, f));
    const double step = (0.7 - 0.1) / 6;
    for (int i = 0; i < 7; i++) CHECK(f[i] == (float)(i < 3 ? 0.1 + i * step : 0.7 - (6 - i) * step));
    CHECK(f[0] == 0.1f && f[6] == 0.7f && f[4] == 0.5f);
    /* float64 bits of torch's CPU linspace where counting up from start all the way, or switching to counting down
     * one element later, would differ in the middle elements */
    static const double want7[7] = {0x1.999999999999ap-4, 0x1.999999999999ap-3, 0x1.3333333333333p-2,
                                    0x1.9999999999999p-2, 0x1.0000000000000p-1, 0x1.3333333333333p-1,
                                    0x1.6666666666666p-1};
    static const double want11[11] = {0x1.0624dd2f1a9fcp-10, 0x1.8e48e8a71de69p-1, 0x1.8e075f6fd21fep+0,
                                      0x1.2a7525460aa64p+1,  0x1.8de69ad42c3c9p+1, 0x1.f15810624dd2fp+1,
                                      0x1.2a64c2f837b4ap+2,  0x1.5c1d7dbf487fcp+2, 0x1.8dd63886594afp+2,
                                      0x1.bf8ef34d6a162p+2,  0x1.f147ae147ae14p+2};
    double d[11];
    CHECK(run_linspace(&k, AXON_FLOAT64, 7, 0.1, 0.7, d));
    CHECK(memcmp(d, want7, sizeof want7) == 0);
    CHECK(run_linspace(&k, AXON_FLOAT64, 11, 0.001, 7.77, d));
    CHECK(memcmp(d, want11, sizeof want11) == 0);
    double one;
    CHECK(run_linspace(&k, AXON_FLOAT64, 1, 2.5, 9.0, &one));
    CHECK(one == 2.5);
    axon_runtime_destroy(k.rt);
}

/* A reversed dst (negative stride) gets element i at its logical place; a long range is the same on 1 and 2 threads. */
static void test_reversed_and_long_ranges(void) {
    enum { N = 300007 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    REQUIRE(a && b);
    for (int threads = 1; threads <= 2; threads++) {
        kc_dev_t k = kc_open(threads);
        REQUIRE(k.rt);
        CHECK(run_linspace(&k, AXON_FLOAT64, N, -1e6, 3.25, threads == 1 ? a : b));
        axon_runtime_destroy(k.rt);
    }
    CHECK(memcmp(a, b, N * sizeof *a) == 0);
    CHECK(a[0] == -1e6 && a[N - 1] == 3.25);
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    int64_t n = 9;
    double got[9], *buf = kc_upload(&k, NULL, sizeof got);
    axon_tensor_t t = kc_tensor(buf, AXON_FLOAT64, 1, &n, NULL);
    t.data = buf + 8;
    t.strides[0] = -1;
    CHECK_OK(axon_kernel_linspace(k.s, &t, 0, 8));
    CHECK(kc_download(&k, got, buf, sizeof got));
    for (int i = 0; i < 9; i++) CHECK(got[i] == 8 - i);
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
    free(a);
    free(b);
}

static void test_bad_input_is_refused_and_empty_is_a_no_op(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 64);
    int64_t sizes[2] = {2, 2}, n = 4, none = 0;
    axon_tensor_t t = kc_tensor(buf, AXON_FLOAT32, 2, sizes, NULL);
    CHECK_STATUS(axon_kernel_linspace(k.s, &t, 0, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("expected 1");
    t = kc_tensor(buf, AXON_BOOL, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_linspace(k.s, &t, 0, 1), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("bool");
    t = kc_tensor(buf, AXON_COMPLEX64, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_linspace(k.s, &t, 0, 1), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_linspace(k.s, NULL, 0, 1), AXON_ERROR_INVALID_ARG);
    t = kc_tensor(NULL, AXON_FLOAT32, 1, &none, NULL);
    CHECK_OK(axon_kernel_linspace(k.s, &t, 0, 1));
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_integer_dtypes_give_cpus_values);
    RUN(test_floats_have_exact_ends_and_symmetric_halves);
    RUN(test_reversed_and_long_ranges);
    RUN(test_bad_input_is_refused_and_empty_is_a_no_op);
    return check_report();
}
