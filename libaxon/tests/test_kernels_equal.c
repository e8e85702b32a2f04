/* axon_kernel_equal (axon/reduce.h): equal and unequal tensors of every dtype, float semantics (NaN, signed zero),
 * bools as truth values, strided and broadcast operands, a difference in the last of many chunks; bad input
 * refused with a message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "axon/reduce.h"
#include "kernels_check.h"

/* equal(a, b) for n-element contiguous host buffers of dtype d, through device copies. -1 on a failed launch. */
static int eq_of(kc_dev_t *k, axon_dtype_t d, const void *a, const void *b, int64_t n) {
    const size_t bytes = (size_t)n * axon_dtype_size(d);
    void *da = kc_upload(k, a, bytes), *db = kc_upload(k, b, bytes);
    axon_tensor_t ta = kc_vector(da, d, n), tb = kc_vector(db, d, n);
    unsigned char same = 9;
    const int ok = axon_kernel_equal(k->s, &ta, &tb, &same) == AXON_OK && axon_stream_sync(k->s) == AXON_OK;
    axon_mem_free(k->dev, da), axon_mem_free(k->dev, db);
    return ok ? same : -1;
}

static void test_every_dtype_compares_its_values(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    static const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_FLOAT16, AXON_BFLOAT16, AXON_INT8,
                                       AXON_UINT8, AXON_INT16, AXON_INT32, AXON_INT64, AXON_BOOL,
                                       AXON_COMPLEX64, AXON_COMPLEX128};
    unsigned char a[64], b[64];
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        const axon_dtype_t d = dts[t];
        const size_t es = axon_dtype_size(d);
        for (size_t i = 0; i < sizeof a; i++) a[i] = (unsigned char)(i % 3 == 0);   /* valid values of every dtype */
        memcpy(b, a, sizeof a);
        const int64_t n = (int64_t)(sizeof a / es);
        CHECK(eq_of(&k, d, a, b, n) == 1);
        b[sizeof a - es] ^= 1;  /* the last element's low byte: a different value of every dtype */
        if (eq_of(&k, d, a, b, n) != 0) {
            fprintf(stderr, "  %s: a changed last element compared equal\n", axon_dtype_name(d));
            check_failures_in_test++;
        }
    }
    /* floats: NaN equals nothing, -0 equals 0; bools: any nonzero byte is true */
    const float fa[3] = {0.0f, 1.0f, NAN}, fb[3] = {-0.0f, 1.0f, NAN};
    CHECK(eq_of(&k, AXON_FLOAT32, fa, fb, 2) == 1);
    CHECK(eq_of(&k, AXON_FLOAT32, fa, fb, 3) == 0);
    CHECK(eq_of(&k, AXON_FLOAT32, fa + 2, fa + 2, 1) == 0);
    const uint16_t ha[2] = {0x8000, 0x7e00}, hb[2] = {0x0000, 0x7e00};  /* float16 -0, 0; NaN */
    CHECK(eq_of(&k, AXON_FLOAT16, ha, hb, 1) == 1);
    CHECK(eq_of(&k, AXON_FLOAT16, ha, hb, 2) == 0);
    const unsigned char ba[2] = {2, 0}, bb[2] = {1, 0};
    CHECK(eq_of(&k, AXON_BOOL, ba, bb, 2) == 1);
    axon_runtime_destroy(k.rt);
}

static void test_strided_broadcast_and_chunked_operands(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.s);
    const int64_t n = 1 << 20;
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 1000);
    void *dx = kc_upload(&k, x, sizeof(float) * (size_t)n), *dy = kc_upload(&k, x, sizeof(float) * (size_t)n);
    axon_tensor_t ta = kc_vector(dx, AXON_FLOAT32, n), tb = kc_vector(dy, AXON_FLOAT32, n);
    unsigned char same = 9;
    CHECK_OK(axon_kernel_equal(k.s, &ta, &tb, &same));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(same == 1);
    const float seven = 7;  /* a difference in the very last element, in the last chunk */
    CHECK_OK(axon_memcpy((float *)dy + n - 1, &seven, sizeof seven, AXON_COPY_HOST_TO_DEVICE, k.s));
    CHECK_OK(axon_kernel_equal(k.s, &ta, &tb, &same));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(same == 0);
    /* [1000, 1000] of rows 0..999 of x against the same rows read column-major; and a broadcast row */
    const int64_t sz[2] = {1000, 1000}, rows[2] = {1000, 1}, cols[2] = {1, 1000}, bcast[2] = {0, 1};
    axon_tensor_t r = kc_tensor(dx, AXON_FLOAT32, 2, sz, rows), c = kc_tensor(dx, AXON_FLOAT32, 2, sz, cols);
    axon_tensor_t row0 = kc_tensor(dx, AXON_FLOAT32, 2, sz, bcast);
    CHECK_OK(axon_kernel_equal(k.s, &r, &row0, &same));  /* every row of x's first million is 0..999 */
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(same == 1);
    CHECK_OK(axon_kernel_equal(k.s, &r, &c, &same));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(same == 0);
    axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dy);
    free(x);
    axon_runtime_destroy(k.rt);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[16];
    unsigned char same;
    axon_tensor_t a4 = kc_vector(buf, AXON_FLOAT32, 4), a5 = kc_vector(buf, AXON_FLOAT32, 5);
    axon_tensor_t i4 = kc_vector(buf, AXON_INT32, 4);
    CHECK_STATUS(axon_kernel_equal(k.s, &a4, &a5, &same), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("equal: shapes [4] and [5] differ");
    CHECK_STATUS(axon_kernel_equal(k.s, &a4, &i4, &same), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("one dtype");
    CHECK_STATUS(axon_kernel_equal(k.s, &a4, &a4, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("same is NULL");
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_dtype_compares_its_values);
    RUN(test_strided_broadcast_and_chunked_operands);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}
