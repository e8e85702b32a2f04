/* axon_kernel_index_copy against a plain in-order reference: every dtype (bytes compared exactly), each dim of a
 * 3-d out, int32 and int64 indices with repeats (the last one wins) and negative ones under AXON_INDEX_WRAP,
 * strided out and src, the element path (short rows) and the row path (rows of 64 bytes or more), 1 and 2 threads;
 * a KV-cache update (one slot of [4, 4, 128, 32]); out-of-range indices failing at sync with nothing written; bad
 * launch arguments refused. Buffers are host memory sized exactly, so AddressSanitizer sees any access outside
 * them. */
#include <stdint.h>
#include <stdlib.h>

#include "kernels_check.h"

static uint32_t rng_state = 4242;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static axon_tensor_t T1(void *p, axon_dtype_t d, int64_t a) {
    const int64_t sz[1] = {a};
    return kc_tensor(p, d, 1, sz, NULL);
}

static const axon_dtype_t all_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_FLOAT16, AXON_BFLOAT16,
                                          AXON_INT8,    AXON_UINT8,   AXON_INT16,   AXON_INT32,
                                          AXON_INT64,   AXON_BOOL,    AXON_COMPLEX64, AXON_COMPLEX128};

/* Byte offset of element (i0, i1, i2) of t. */
static size_t at3(const axon_tensor_t *t, int64_t i0, int64_t i1, int64_t i2) {
    return (size_t)((i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2]) *
                    (int64_t)axon_dtype_size(t->dtype));
}

/* One case: out [4, 5, C] (C = 3 for the element path, 40 for rows), copy along dim from src with N slots there.
 * out has a gap after each outer slice when `gap`; src is stored transposed (dims 0 and 2 swapped) when `tsrc`. */
static void copy_case(axon_dtype_t dt, int dim, int64_t C, int i32, int gap, int tsrc, int threads) {
    enum { N = 7 };
    const int64_t es = (int64_t)axon_dtype_size(dt), osz[3] = {4, 5, C};
    int64_t ssz[3] = {4, 5, C};
    ssz[dim] = N;
    const int64_t ostr[3] = {5 * C + (gap ? 3 : 0), C, 1};
    const size_t obytes = (size_t)(4 * ostr[0] * es), sbytes = (size_t)(ssz[0] * ssz[1] * ssz[2] * es);
    unsigned char *out = malloc(obytes), *want = malloc(obytes), *src = malloc(sbytes);
    REQUIRE(out && want && src);
    for (size_t i = 0; i < obytes; i++) out[i] = want[i] = (unsigned char)rnd();
    for (size_t i = 0; i < sbytes; i++) src[i] = (unsigned char)rnd();
    int64_t ix64[N];
    int32_t ix32[N];
    const int64_t size = osz[dim];
    for (int i = 0; i < N; i++)
        ix64[i] = (int64_t)(rnd() % (uint32_t)(2 * size)) - size, ix32[i] = (int32_t)ix64[i];
    axon_tensor_t to = kc_tensor(out, dt, 3, osz, ostr), ts = kc_tensor(src, dt, 3, ssz, NULL);
    if (tsrc) { /* the same sizes, stored as [C', 5', 4'] */
        ts.strides[0] = 1, ts.strides[1] = ssz[0], ts.strides[2] = ssz[0] * ssz[1];
    }
    axon_tensor_t tw = to;
    tw.data = want;
    for (int64_t a = 0; a < ssz[0]; a++)
        for (int64_t b = 0; b < ssz[1]; b++)
            for (int64_t c = 0; c < ssz[2]; c++) {
                int64_t p[3] = {a, b, c};
                int64_t v = ix64[p[dim]];
                p[dim] = v < 0 ? v + size : v;
                memcpy(want + at3(&tw, p[0], p[1], p[2]), src + at3(&ts, a, b, c), (size_t)es);
            }
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    axon_tensor_t tx = T1(i32 ? (void *)ix32 : (void *)ix64, i32 ? AXON_INT32 : AXON_INT64, N);
    CHECK_OK(axon_kernel_index_copy(k.s, &to, dim - 3, &tx, &ts, AXON_INDEX_WRAP)); /* negative dim */
    CHECK_OK(axon_stream_sync(k.s));
    int64_t diff = kc_first_diff(out, want, obytes);
    if (diff >= 0)
        fprintf(stderr, "  %s dim %d C %lld i32 %d gap %d tsrc %d threads %d: first byte differing %lld\n",
                axon_dtype_name(dt), dim, (long long)C, i32, gap, tsrc, threads, (long long)diff);
    CHECK(diff < 0);
    axon_runtime_destroy(k.rt);
    free(out), free(want), free(src);
}

static void test_index_copy_matches_the_in_order_reference_for_every_dtype_dim_and_layout(void) {
    for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++)
        for (int dim = 0; dim < 3; dim++)
            for (int v = 0; v < 4; v++) copy_case(all_dtypes[d], dim, v & 1 ? 40 : 3, v >> 1, v == 1, v == 2, 2);
    /* Layouts and thread counts on one dtype, both paths. */
    for (int threads = 1; threads <= 2; threads++)
        for (int dim = 0; dim < 3; dim++)
            for (int v = 0; v < 16; v++)
                copy_case(AXON_FLOAT32, dim, v & 1 ? 40 : 3, v >> 1 & 1, v >> 2 & 1, v >> 3, threads);
}

/* A static KV cache's decode step: one slot of a [4, 4, 128, 32] cache along dim 2, and a prefill of many. */
static void test_index_copy_writes_one_slot_of_a_kv_cache(void) {
    enum { B = 4, H = 4, S = 128, D = 32 };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float *cache = malloc(sizeof(float) * B * H * S * D), *src = malloc(sizeof(float) * B * H * S * D);
    REQUIRE(cache && src);
    for (int i = 0; i < B * H * S * D; i++) cache[i] = -1.0f, src[i] = (float)i;
    const int64_t csz[4] = {B, H, S, D}, ssz[4] = {B, H, 1, D};
    axon_tensor_t tc = kc_tensor(cache, AXON_FLOAT32, 4, csz, NULL), ts = kc_tensor(src, AXON_FLOAT32, 4, ssz, NULL);
    int64_t slot[1] = {127};
    axon_tensor_t tx = T1(slot, AXON_INT64, 1);
    CHECK_OK(axon_kernel_index_copy(k.s, &tc, 2, &tx, &ts, AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    int bad = 0;
    for (int bh = 0; bh < B * H; bh++)
        for (int s = 0; s < S; s++)
            for (int d = 0; d < D; d++)
                bad += cache[(bh * S + s) * D + d] != (s == 127 ? (float)(bh * D + d) : -1.0f);
    CHECK(bad == 0);
    /* Prefill: slots 0..S-1 in reverse order from a src of the cache's size. */
    int64_t *all = malloc(sizeof(int64_t) * S);
    REQUIRE(all);
    for (int s = 0; s < S; s++) all[s] = S - 1 - s;
    axon_tensor_t ta = T1(all, AXON_INT64, S), tf = kc_tensor(src, AXON_FLOAT32, 4, csz, NULL);
    CHECK_OK(axon_kernel_index_copy(k.s, &tc, -2, &ta, &tf, AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    bad = 0;
    for (int bh = 0; bh < B * H; bh++)
        for (int s = 0; s < S; s++)
            for (int d = 0; d < D; d++) bad += cache[(bh * S + s) * D + d] != src[(bh * S + (S - 1 - s)) * D + d];
    CHECK(bad == 0);
    free(all), free(cache), free(src);
    axon_runtime_destroy(k.rt);
}

static void test_index_copy_fails_on_an_out_of_range_index_and_writes_nothing(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    for (int C = 2; C <= 32; C += 30) { /* element path, row path */
        float out[5 * 32], src[3 * 32];
        for (int i = 0; i < 5 * C; i++) out[i] = -1.0f;
        for (int i = 0; i < 3 * C; i++) src[i] = 1.0f;
        const int64_t osz[2] = {5, C}, ssz[2] = {3, C};
        axon_tensor_t to = kc_tensor(out, AXON_FLOAT32, 2, osz, NULL);
        axon_tensor_t ts = kc_tensor(src, AXON_FLOAT32, 2, ssz, NULL);
        int64_t bad[3] = {1, 7, 0}, neg[3] = {0, -1, 2};
        axon_tensor_t tb = T1(bad, AXON_INT64, 3), tn = T1(neg, AXON_INT64, 3);
        CHECK_OK(axon_kernel_index_copy(k.s, &to, 0, &tb, &ts, AXON_INDEX_DEFAULT));
        CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("index_copy(): index 7 is out of bounds for dimension 0 with size 5");
        /* Without AXON_INDEX_WRAP a negative index is out of bounds, as in PyTorch's index_copy. */
        CHECK_OK(axon_kernel_index_copy(k.s, &to, 0, &tn, &ts, AXON_INDEX_DEFAULT));
        CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("index_copy(): index -1 is out of bounds for dimension 0 with size 5");
        for (int i = 0; i < 5 * C; i++) CHECK(out[i] == -1.0f);
    }
    axon_runtime_destroy(k.rt);
}

static void test_index_copy_refuses_bad_launch_arguments(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float out[6] = {0}, src[4] = {0};
    float fidx[2] = {0, 1};
    int64_t idx[2] = {0, 1}, idx2[2][1] = {{0}, {1}};
    const int64_t osz[2] = {3, 2}, ssz[2] = {2, 2}, xsz[2] = {2, 1};
    axon_tensor_t to = kc_tensor(out, AXON_FLOAT32, 2, osz, NULL), ts = kc_tensor(src, AXON_FLOAT32, 2, ssz, NULL);
    axon_tensor_t tf = T1(fidx, AXON_FLOAT32, 2), tx = T1(idx, AXON_INT64, 2);
    axon_tensor_t t2 = kc_tensor(idx2, AXON_INT64, 2, xsz, NULL);
    CHECK_STATUS(axon_kernel_index_copy(k.s, &to, 0, &tf, &ts, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_copy(): Expected dtype int32/int64 for index, got float32");
    CHECK_STATUS(axon_kernel_index_copy(k.s, &to, 0, &t2, &ts, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index must be 0-d or 1-d");
    CHECK_STATUS(axon_kernel_index_copy(k.s, &to, 2, &tx, &ts, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_copy: dim 2 is out of range");
    CHECK_STATUS(axon_kernel_index_copy(k.s, &to, 1, &tx, &ts, 0), AXON_ERROR_INVALID_ARG); /* src [2, 2] vs [3, _] */
    CHECK_MSG("index_copy(): src [2, 2] must match out [3, 2] apart from dim 1");
    CHECK_STATUS(axon_kernel_index_copy(k.s, &to, 0, &tx, NULL, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_copy: src is NULL");
    double dsrc[4] = {0};
    axon_tensor_t td = kc_tensor(dsrc, AXON_FLOAT64, 2, ssz, NULL);
    CHECK_STATUS(axon_kernel_index_copy(k.s, &to, 0, &tx, &td, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_copy(): Expected self.dtype to be equal to src.dtype (float32 vs float64)");
    /* Nothing to do: no launch, no error. */
    axon_tensor_t te = T1(idx, AXON_INT64, 0), ts0 = ts;
    ts0.sizes[0] = 0;
    CHECK_OK(axon_kernel_index_copy(k.s, &to, 0, &te, &ts0, 0));
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_index_copy_matches_the_in_order_reference_for_every_dtype_dim_and_layout);
    RUN(test_index_copy_writes_one_slot_of_a_kv_cache);
    RUN(test_index_copy_fails_on_an_out_of_range_index_and_writes_nothing);
    RUN(test_index_copy_refuses_bad_launch_arguments);
    return check_report();
}
