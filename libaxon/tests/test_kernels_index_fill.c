/* axon_kernel_index_fill against a plain reference: every dtype (bytes compared exactly, the value's bytes taken from
 * axon_kernel_fill of one element), each dim of a 3-d out with and without a gap after each outer slice (so both the
 * index-by-index and the position-by-position visits run), int32 and int64 indices with repeats and negative ones
 * under AXON_INDEX_WRAP, 1 and 2 threads; out-of-range indices failing at sync with nothing written; bad launch
 * arguments refused. Buffers are host memory sized exactly, so AddressSanitizer sees any access outside them. */
#include <stdint.h>
#include <stdlib.h>

#include "kernels_check.h"

static uint32_t rng_state = 977;

static const axon_dtype_t all_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_FLOAT16,   AXON_BFLOAT16,
                                          AXON_INT8,    AXON_UINT8,   AXON_INT16,     AXON_INT32,
                                          AXON_INT64,   AXON_BOOL,    AXON_COMPLEX64, AXON_COMPLEX128};

/* out [4, 5, C], filled along dim at N indices with value v. */
static void fill_case(axon_dtype_t dt, int dim, int64_t C, int i32, int gap, int threads, axon_scalar_t v) {
    enum { N = 6 };
    const int64_t es = (int64_t)axon_dtype_size(dt), osz[3] = {4, 5, C};
    const int64_t ostr[3] = {5 * C + (gap ? 3 : 0), C, 1};
    const size_t obytes = (size_t)(4 * ostr[0] * es);
    unsigned char *out = malloc(obytes), *want = malloc(obytes), elem[16];
    REQUIRE(out && want);
    for (size_t i = 0; i < obytes; i++) out[i] = want[i] = (unsigned char)kc_next_u24(&rng_state);
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    axon_tensor_t te = kc_vector(elem, dt, 1);
    CHECK_OK(axon_kernel_fill(k.s, &te, v));
    CHECK_OK(axon_stream_sync(k.s));
    int64_t ix64[N];
    int32_t ix32[N];
    const int64_t size = osz[dim];
    for (int i = 0; i < N; i++)
        ix64[i] = (int64_t)(kc_next_u24(&rng_state) % (uint32_t)(2 * size)) - size, ix32[i] = (int32_t)ix64[i];
    for (int i = 0; i < N; i++) {
        const int64_t at = ix64[i] < 0 ? ix64[i] + size : ix64[i];
        for (int64_t a = 0; a < 4; a++)
            for (int64_t b = 0; b < 5; b++)
                for (int64_t c = 0; c < C; c++) {
                    const int64_t p[3] = {a, b, c};
                    if (p[dim] != at) continue;
                    memcpy(want + (a * ostr[0] + b * ostr[1] + c) * es, elem, (size_t)es);
                }
    }
    axon_tensor_t to = kc_tensor(out, dt, 3, osz, ostr);
    axon_tensor_t tx = kc_vector(i32 ? (void *)ix32 : (void *)ix64, i32 ? AXON_INT32 : AXON_INT64, N);
    CHECK_OK(axon_kernel_index_fill(k.s, &to, dim - 3, &tx, v, AXON_INDEX_WRAP)); /* negative dim */
    CHECK_OK(axon_stream_sync(k.s));
    const int64_t diff = kc_first_diff(out, want, obytes);
    if (diff >= 0)
        fprintf(stderr, "  %s dim %d C %lld i32 %d gap %d threads %d: first byte differing %lld\n",
                axon_dtype_name(dt), dim, (long long)C, i32, gap, threads, (long long)diff);
    CHECK(diff < 0);
    axon_runtime_destroy(k.rt);
    free(out), free(want);
}

static void test_index_fill_matches_the_reference_for_every_dtype_dim_and_layout(void) {
    for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++)
        for (int dim = 0; dim < 3; dim++)
            for (int v = 0; v < 4; v++)
                fill_case(all_dtypes[d], dim, v & 1 ? 40 : 3, v >> 1, v == 1, 2, axon_scalar_float(-2.5));
    for (int threads = 1; threads <= 2; threads++)
        for (int dim = 0; dim < 3; dim++)
            for (int v = 0; v < 8; v++)
                fill_case(AXON_INT64, dim, v & 1 ? 4000 : 3, v >> 1 & 1, v >> 2, threads, axon_scalar_int(-7));
}

static void test_index_fill_fails_on_an_out_of_range_index_and_writes_nothing(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float out[5 * 3];
    for (int i = 0; i < 15; i++) out[i] = -1.0f;
    const int64_t osz[2] = {5, 3};
    axon_tensor_t to = kc_tensor(out, AXON_FLOAT32, 2, osz, NULL);
    int64_t bad[3] = {1, 7, 0}, neg[3] = {0, -6, 2};
    axon_tensor_t tb = kc_vector(bad, AXON_INT64, 3), tn = kc_vector(neg, AXON_INT64, 3);
    CHECK_OK(axon_kernel_index_fill(k.s, &to, 0, &tb, axon_scalar_float(1.0), AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index 7 is out of bounds for dimension 0 with size 5");
    CHECK_OK(axon_kernel_index_fill(k.s, &to, 0, &tn, axon_scalar_float(1.0), AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index -6 is out of bounds for dimension 0 with size 5");
    for (int i = 0; i < 15; i++) CHECK(out[i] == -1.0f);
    axon_runtime_destroy(k.rt);
}

static void test_index_fill_refuses_bad_launch_arguments(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float out[6] = {0}, fidx[2] = {0, 1};
    int64_t idx[2] = {0, 1}, idx2[2][1] = {{0}, {1}};
    const int64_t osz[2] = {3, 2}, xsz[2] = {2, 1};
    axon_tensor_t to = kc_tensor(out, AXON_FLOAT32, 2, osz, NULL);
    axon_tensor_t tf = kc_vector(fidx, AXON_FLOAT32, 2), tx = kc_vector(idx, AXON_INT64, 2);
    axon_tensor_t t2 = kc_tensor(idx2, AXON_INT64, 2, xsz, NULL);
    const axon_scalar_t v = axon_scalar_float(1.0);
    CHECK_STATUS(axon_kernel_index_fill(k.s, &to, 0, &tf, v, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("int32/int64");
    CHECK_STATUS(axon_kernel_index_fill(k.s, &to, 0, &t2, v, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_fill: index [2, 1] must have 0 or 1 dimensions");
    CHECK_STATUS(axon_kernel_index_fill(k.s, &to, 2, &tx, v, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dim 2 is out of range");
    CHECK_STATUS(axon_kernel_index_fill(k.s, &to, 0, NULL, v, 0), AXON_ERROR_INVALID_ARG);
    /* Nothing to do: no launch, no error. */
    axon_tensor_t te = kc_vector(idx, AXON_INT64, 0);
    CHECK_OK(axon_kernel_index_fill(k.s, &to, 0, &te, v, 0));
    CHECK_OK(axon_stream_sync(k.s));
    for (int i = 0; i < 6; i++) CHECK(out[i] == 0.0f);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_index_fill_matches_the_reference_for_every_dtype_dim_and_layout);
    RUN(test_index_fill_fails_on_an_out_of_range_index_and_writes_nothing);
    RUN(test_index_fill_refuses_bad_launch_arguments);
    return check_report();
}
