/* axon_kernel_fill and axon_kernel_arange: conversions of the value, strided and reversed dst, bad input, empty
 * tensors, and large fills that must not depend on the thread count. */
#include <math.h>

#include "kernels_check.h"

static void test_fill_converts_the_value_to_every_dtype(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    int64_t n = 5;
    unsigned char *buf = kc_upload(&k, NULL, 5 * 16);
    unsigned char got[5 * 16];
    axon_tensor_t t;
#define FILL(dt, value)                                                                                          \
    do {                                                                                                         \
        t = kc_tensor(buf, dt, 1, &n, NULL);                                                                     \
        CHECK_OK(axon_kernel_fill(k.s, &t, value));                                                              \
        CHECK(kc_download(&k, got, buf, 5 * axon_dtype_size(dt)));                                               \
    } while (0)
    FILL(AXON_INT32, axon_scalar_float(-2.5));
    for (int i = 0; i < 5; i++) CHECK(((int32_t *)got)[i] == -2);
    FILL(AXON_UINT8, axon_scalar_int(-1));
    for (int i = 0; i < 5; i++) CHECK(got[i] == 255);
    FILL(AXON_BFLOAT16, axon_scalar_float(1.00390625));
    for (int i = 0; i < 5; i++) CHECK(((uint16_t *)got)[i] == 0x3F80);
    FILL(AXON_FLOAT16, axon_scalar_float(65520.0));
    for (int i = 0; i < 5; i++) CHECK(((uint16_t *)got)[i] == 0x7C00);
    FILL(AXON_FLOAT32, axon_scalar_float(NAN));
    for (int i = 0; i < 5; i++) CHECK(isnan(((float *)got)[i]));
    FILL(AXON_BOOL, axon_scalar_float(0.25));
    for (int i = 0; i < 5; i++) CHECK(got[i] == 1);
    FILL(AXON_BOOL, axon_scalar_complex(0.0, 0.0));
    for (int i = 0; i < 5; i++) CHECK(got[i] == 0);
    FILL(AXON_FLOAT64, axon_scalar_bool(1));
    for (int i = 0; i < 5; i++) CHECK(((double *)got)[i] == 1.0);
    FILL(AXON_INT64, axon_scalar_int(INT64_MIN));
    for (int i = 0; i < 5; i++) CHECK(((int64_t *)got)[i] == INT64_MIN);
    FILL(AXON_COMPLEX128, axon_scalar_complex(1.5, -2.0));
    for (int i = 0; i < 5; i++) CHECK(((double *)got)[2 * i] == 1.5 && ((double *)got)[2 * i + 1] == -2.0);
    FILL(AXON_COMPLEX64, axon_scalar_int(7));
    for (int i = 0; i < 5; i++) CHECK(((float *)got)[2 * i] == 7.0f && ((float *)got)[2 * i + 1] == 0.0f);
    FILL(AXON_FLOAT32, axon_scalar_complex(3.0, 4.0)); /* complex -> real takes the real part */
    for (int i = 0; i < 5; i++) CHECK(((float *)got)[i] == 3.0f);
#undef FILL
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_fill_of_a_strided_view_leaves_the_gaps_alone(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 40, C = 30 };
    int16_t host[R * C], got[R * C];
    for (int i = 0; i < R * C; i++) host[i] = -1;
    int16_t *buf = kc_upload(&k, host, sizeof host);
    /* Every other row, columns 5..24 backwards. */
    int64_t sizes[2] = {R / 2, 20}, st[2] = {2 * C, -1};
    axon_tensor_t t = kc_tensor(buf + 24, AXON_INT16, 2, sizes, st);
    CHECK_OK(axon_kernel_fill(k.s, &t, axon_scalar_int(9)));
    CHECK(kc_download(&k, got, buf, sizeof got));
    int ok = 1;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) ok &= got[r * C + c] == ((r % 2 == 0 && c >= 5 && c < 25) ? 9 : -1);
    CHECK(ok);
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_fill_rejects_bad_input_and_skips_empty_tensors(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 64);
    int64_t sizes[2] = {3, 4}, st[2] = {0, 1}, none = 0;
    axon_tensor_t t = kc_tensor(buf, AXON_FLOAT32, 2, sizes, st);
    CHECK_STATUS(axon_kernel_fill(k.s, &t, axon_scalar_float(1)), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("fill: dst has overlapping elements");
    t = kc_tensor(buf, AXON_FLOAT32, 2, sizes, NULL);
    axon_scalar_t odd = axon_scalar_float(1);
    odd.dtype = AXON_FLOAT32;
    CHECK_STATUS(axon_kernel_fill(k.s, &t, odd), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("scalar dtype float32");
    CHECK_STATUS(axon_kernel_fill(k.s, NULL, axon_scalar_float(1)), AXON_ERROR_INVALID_ARG);
    t = kc_tensor(NULL, AXON_FLOAT32, 1, &none, NULL);
    CHECK_OK(axon_kernel_fill(k.s, &t, axon_scalar_float(1)));
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

/* Fill a large 2-d tensor (transposed view) on a runtime with `threads` workers; malloc'd bytes or NULL. */
static unsigned char *large_fill(int threads, int64_t rows, int64_t cols) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return NULL;
    size_t n = (size_t)(rows * cols);
    uint16_t *buf = kc_upload(&k, NULL, n * 2);
    int64_t sizes[2] = {cols, rows}, st[2] = {1, cols};
    axon_tensor_t t = kc_tensor(buf, AXON_BFLOAT16, 2, sizes, st);
    unsigned char *out = malloc(n * 2);
    int ok = axon_kernel_fill(k.s, &t, axon_scalar_float(-3.140625)) == AXON_OK;
    int64_t m = (int64_t)n - 100;
    axon_tensor_t tail = kc_tensor(buf + 100, AXON_BFLOAT16, 1, &m, NULL);
    ok = ok && axon_kernel_fill(k.s, &tail, axon_scalar_int(2)) == AXON_OK; /* in stream order, after the first */
    if (!ok || !kc_download(&k, out, buf, n * 2)) {
        free(out);
        out = NULL;
    }
    axon_runtime_destroy(k.rt);
    return out;
}

static void test_large_fills_do_not_depend_on_the_thread_count(void) {
    const int64_t rows = 1201, cols = 1001;
    size_t n = (size_t)(rows * cols);
    unsigned char *one = large_fill(1, rows, cols), *two = large_fill(2, rows, cols);
    REQUIRE(one && two);
    CHECK(memcmp(one, two, n * 2) == 0);
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= ((uint16_t *)one)[i] == (i < 100 ? 0xC049 : 0x4000);
    CHECK(ok);
    free(one);
    free(two);
}

/* ---- arange ---- */

static void test_arange_computes_start_plus_i_times_step(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { N = 100003 };
    int64_t n = N;
    double *got = malloc(N * sizeof *got);
    double *buf = kc_upload(&k, NULL, N * sizeof(double));
    axon_tensor_t t = kc_tensor(buf, AXON_FLOAT64, 1, &n, NULL);
    CHECK_OK(axon_kernel_arange(k.s, &t, axon_scalar_float(0.1), axon_scalar_float(0.1)));
    CHECK(kc_download(&k, got, buf, N * sizeof *got));
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= got[i] == 0.1 + (double)i * 0.1; /* not an accumulated sum */
    CHECK(ok);
    /* float32: computed in double, rounded once. */
    float *f = (float *)got;
    t.dtype = AXON_FLOAT32;
    CHECK_OK(axon_kernel_arange(k.s, &t, axon_scalar_int(-5), axon_scalar_float(1.0 / 3.0)));
    CHECK(kc_download(&k, f, buf, N * sizeof *f));
    ok = 1;
    for (int i = 0; i < N; i++) ok &= f[i] == (float)(-5.0 + (double)i * (1.0 / 3.0));
    CHECK(ok);
    axon_mem_free(k.dev, buf);
    free(got);
    axon_runtime_destroy(k.rt);
}

static void test_arange_on_integers_uses_int64_arithmetic(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    int64_t n = 70000;
    int64_t *buf = kc_upload(&k, NULL, (size_t)n * sizeof(int64_t)), *got = malloc((size_t)n * sizeof *got);
    axon_tensor_t t = kc_tensor(buf, AXON_INT64, 1, &n, NULL);
    int64_t big = (int64_t)1 << 60;
    CHECK_OK(axon_kernel_arange(k.s, &t, axon_scalar_int(big), axon_scalar_int(3)));
    CHECK(kc_download(&k, got, buf, (size_t)n * sizeof *got));
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= got[i] == big + 3 * i; /* exact beyond 2^53 */
    CHECK(ok);
    /* int8 keeps the low bits; float scalars convert with the copy rules (0.5 -> 0, 1.9 -> 1). */
    int8_t *b8 = (int8_t *)got;
    t.dtype = AXON_INT8;
    CHECK_OK(axon_kernel_arange(k.s, &t, axon_scalar_float(0.5), axon_scalar_float(1.9)));
    CHECK(kc_download(&k, b8, buf, (size_t)n));
    ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= b8[i] == (int8_t)i;
    CHECK(ok);
    /* A reversed dst: logical element i is at the far end. */
    int64_t m = 10, neg = -1;
    int32_t *i32 = (int32_t *)buf, back[10];
    t = kc_tensor(i32 + 9, AXON_INT32, 1, &m, &neg);
    CHECK_OK(axon_kernel_arange(k.s, &t, axon_scalar_int(100), axon_scalar_int(-7)));
    CHECK(kc_download(&k, back, i32, sizeof back));
    ok = 1;
    for (int i = 0; i < 10; i++) ok &= back[9 - i] == 100 - 7 * i;
    CHECK(ok);
    axon_mem_free(k.dev, buf);
    free(got);
    axon_runtime_destroy(k.rt);
}

static void test_arange_rejects_bad_input(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 64);
    int64_t sizes[2] = {2, 2}, n = 4, none = 0;
    axon_tensor_t t = kc_tensor(buf, AXON_FLOAT32, 2, sizes, NULL);
    CHECK_STATUS(axon_kernel_arange(k.s, &t, axon_scalar_int(0), axon_scalar_int(1)), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("expected 1");
    t = kc_tensor(buf, AXON_BOOL, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_arange(k.s, &t, axon_scalar_int(0), axon_scalar_int(1)), AXON_ERROR_UNSUPPORTED);
    t = kc_tensor(buf, AXON_COMPLEX64, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_arange(k.s, &t, axon_scalar_int(0), axon_scalar_int(1)), AXON_ERROR_UNSUPPORTED);
    t = kc_tensor(buf, AXON_FLOAT32, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_arange(k.s, &t, axon_scalar_complex(0, 1), axon_scalar_int(1)), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("start");
    t = kc_tensor(NULL, AXON_FLOAT32, 1, &none, NULL);
    CHECK_OK(axon_kernel_arange(k.s, &t, axon_scalar_int(0), axon_scalar_int(1)));
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_fill_converts_the_value_to_every_dtype);
    RUN(test_fill_of_a_strided_view_leaves_the_gaps_alone);
    RUN(test_fill_rejects_bad_input_and_skips_empty_tensors);
    RUN(test_large_fills_do_not_depend_on_the_thread_count);
    RUN(test_arange_computes_start_plus_i_times_step);
    RUN(test_arange_on_integers_uses_int64_arithmetic);
    RUN(test_arange_rejects_bad_input);
    return check_report();
}
