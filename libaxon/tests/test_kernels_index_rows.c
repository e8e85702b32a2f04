/* The row paths of index.h's kernels: index_select copying whole rows, and index_add / embedding backward adding
 * whole rows, when the elements after dim are dense. Each is compared with a plain per-element reference, with
 * dimensions before dim (some strided), int32 and int64 indices, repeats, negative indices under AXON_INDEX_WRAP,
 * padding, 1 and 2 threads (bitwise equal), and out-of-range indices that must fail at sync with nothing written.
 * Buffers are host memory sized exactly, so AddressSanitizer sees any access outside them. */
#include <stdint.h>
#include <stdlib.h>

#include "kernels_check.h"

static uint32_t rng_state = 777;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* bfloat16 is float32's upper half: exact for the small integers these tests use. */
static uint16_t bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16);
}

static float f32_of(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static axon_tensor_t T1(void *p, axon_dtype_t d, int64_t a) {
    const int64_t sz[1] = {a};
    return kc_tensor(p, d, 1, sz, NULL);
}

/* index_select along dim 1 of in [A, B, C] (outer stride `ostride` elements), into a dense out [A, n, C]. */
static void select_rows_case(int threads, int i32, int64_t ostride) {
    enum { A = 3, B = 9, C = 24, N = 13 };
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    float *in = malloc(sizeof(float) * (size_t)(A * ostride)), *out = malloc(sizeof(float) * A * N * C);
    REQUIRE(in && out);
    for (int64_t i = 0; i < A * ostride; i++) in[i] = (float)(rnd() % 1000);
    int64_t ix64[N];
    int32_t ix32[N];
    for (int i = 0; i < N; i++) ix64[i] = (int64_t)(rnd() % (2 * B)) - B, ix32[i] = (int32_t)ix64[i];
    const int64_t isz[3] = {A, B, C}, ist[3] = {ostride, C, 1}, osz[3] = {A, N, C};
    axon_tensor_t ti = kc_tensor(in, AXON_FLOAT32, 3, isz, ist), to = kc_tensor(out, AXON_FLOAT32, 3, osz, NULL);
    axon_tensor_t tx = T1(i32 ? (void *)ix32 : (void *)ix64, i32 ? AXON_INT32 : AXON_INT64, N);
    CHECK_OK(axon_kernel_index_select(k.s, &to, &ti, 1, &tx, AXON_INDEX_WRAP));
    CHECK_OK(axon_stream_sync(k.s));
    int bad = 0;
    for (int a = 0; a < A; a++)
        for (int n = 0; n < N; n++) {
            int64_t v = ix64[n] < 0 ? ix64[n] + B : ix64[n];
            for (int c = 0; c < C; c++) bad += out[(a * N + n) * C + c] != in[a * ostride + v * C + c];
        }
    if (bad) fprintf(stderr, "  threads %d i32 %d ostride %lld: %d elements differ\n", threads, i32,
                     (long long)ostride, bad);
    CHECK(bad == 0);
    free(in), free(out);
    axon_runtime_destroy(k.rt);
}

static void test_index_select_copies_whole_rows_with_dims_before_dim(void) {
    for (int threads = 1; threads <= 2; threads++)
        for (int i32 = 0; i32 < 2; i32++) {
            select_rows_case(threads, i32, 9 * 24);      /* dense */
            select_rows_case(threads, i32, 9 * 24 + 5);  /* a gap between the outer slices */
        }
}

static void test_index_select_rows_of_an_embedding_table_and_a_0d_index(void) {
    enum { V = 1000, D = 48, N = 4096 };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    double *w = malloc(sizeof(double) * V * D), *out = malloc(sizeof(double) * N * D);
    int64_t *ix = malloc(sizeof(int64_t) * N);
    REQUIRE(w && out && ix);
    for (int i = 0; i < V * D; i++) w[i] = (double)rnd();
    for (int i = 0; i < N; i++) ix[i] = (int64_t)(rnd() % V);
    const int64_t wsz[2] = {V, D}, osz[2] = {N, D};
    axon_tensor_t tw = kc_tensor(w, AXON_FLOAT64, 2, wsz, NULL), to = kc_tensor(out, AXON_FLOAT64, 2, osz, NULL);
    axon_tensor_t tx = T1(ix, AXON_INT64, N);
    CHECK_OK(axon_kernel_index_select(k.s, &to, &tw, 0, &tx, AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    int bad = 0;
    for (int n = 0; n < N; n++) bad += memcmp(out + n * D, w + ix[n] * D, sizeof(double) * D) != 0;
    CHECK(bad == 0);
    /* A 0-d index picks one row: out has size 1 at dim. */
    int32_t one = 998;
    axon_tensor_t t0 = kc_tensor(&one, AXON_INT32, 0, NULL, NULL);
    const int64_t o1[2] = {1, D};
    axon_tensor_t to1 = kc_tensor(out, AXON_FLOAT64, 2, o1, NULL);
    CHECK_OK(axon_kernel_index_select(k.s, &to1, &tw, 0, &t0, AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(memcmp(out, w + 998 * D, sizeof(double) * D) == 0);
    free(w), free(out), free(ix);
    axon_runtime_destroy(k.rt);
}

/* index_add along dim 1 of out [A, B, C] from src [A, N, C], float32 and int32, with `threads` workers: results go
 * to outf/outi. */
enum { RA = 3, RB = 11, RC = 20, RN = 500 };

static void index_add_rows_run(int threads, float *outf, int32_t *outi, const float *srcf, const int32_t *srci,
                               const int32_t *ix) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    for (int i = 0; i < RA * RB * RC; i++) outf[i] = (float)(i % 7) - 3.0f, outi[i] = i % 5;
    const int64_t osz[3] = {RA, RB, RC}, ssz[3] = {RA, RN, RC};
    axon_tensor_t of = kc_tensor(outf, AXON_FLOAT32, 3, osz, NULL), oi = kc_tensor(outi, AXON_INT32, 3, osz, NULL);
    axon_tensor_t sf = kc_tensor((void *)srcf, AXON_FLOAT32, 3, ssz, NULL);
    axon_tensor_t si = kc_tensor((void *)srci, AXON_INT32, 3, ssz, NULL);
    axon_tensor_t tx = T1((void *)ix, AXON_INT32, RN);
    CHECK_OK(axon_kernel_index_add(k.s, &of, 1, &tx, &sf, axon_scalar_float(0.375), AXON_INDEX_WRAP));
    CHECK_OK(axon_kernel_index_add(k.s, &oi, 1, &tx, &si, axon_scalar_int(-3), AXON_INDEX_WRAP));
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

static void test_index_add_rows_match_the_in_order_reference_bitwise(void) {
    const size_t no = RA * RB * RC, ns = RA * RN * RC;
    float *srcf = malloc(sizeof(float) * ns), *f1 = malloc(sizeof(float) * no), *f2 = malloc(sizeof(float) * no);
    float *wf = malloc(sizeof(float) * no);
    int32_t *srci = malloc(sizeof(int32_t) * ns), *i1 = malloc(sizeof(int32_t) * no);
    int32_t *i2 = malloc(sizeof(int32_t) * no), *wi = malloc(sizeof(int32_t) * no), ix[RN];
    REQUIRE(srcf && f1 && f2 && wf && srci && i1 && i2 && wi);
    for (size_t i = 0; i < ns; i++) srcf[i] = (float)rnd() / (float)(1 << 20) - 8.0f, srci[i] = (int32_t)rnd();
    for (int i = 0; i < RN; i++) ix[i] = (int32_t)(rnd() % (2 * RB)) - RB;
    for (size_t i = 0; i < no; i++) wf[i] = (float)(i % 7) - 3.0f, wi[i] = (int32_t)(i % 5);
    for (int a = 0; a < RA; a++)
        for (int n = 0; n < RN; n++) {
            int v = ix[n] < 0 ? ix[n] + RB : ix[n];
            for (int c = 0; c < RC; c++) {
                size_t o = (size_t)(a * RB + v) * RC + c, s = (size_t)(a * RN + n) * RC + c;
                wf[o] = wf[o] + srcf[s] * 0.375f;
                wi[o] = (int32_t)(uint32_t)((uint64_t)(int64_t)wi[o] + (uint64_t)((int64_t)srci[s] * -3));
            }
        }
    index_add_rows_run(1, f1, i1, srcf, srci, ix);
    index_add_rows_run(2, f2, i2, srcf, srci, ix);
    CHECK(memcmp(f1, wf, sizeof(float) * no) == 0);
    CHECK(memcmp(f2, f1, sizeof(float) * no) == 0);
    CHECK(memcmp(i1, wi, sizeof(int32_t) * no) == 0);
    CHECK(memcmp(i2, i1, sizeof(int32_t) * no) == 0);
    free(srcf), free(f1), free(f2), free(wf), free(srci), free(i1), free(i2), free(wi);
}

static void test_embedding_backward_rows_zero_every_row_and_skip_padding(void) {
    enum { V = 300, D = 64, N = 2000 };
    uint16_t *g = malloc(sizeof(uint16_t) * N * D), *gw = malloc(sizeof(uint16_t) * V * D);
    float *want = calloc(V * D, sizeof(float));
    int64_t *ix = malloc(sizeof(int64_t) * N);
    REQUIRE(g && gw && want && ix);
    /* bfloat16 values that are small integers, so every sum is exact in bfloat16 and float: one answer. */
    for (int i = 0; i < N * D; i++) g[i] = bf16_of((float)(rnd() % 3) - 1.0f);
    for (int n = 0; n < N; n++) ix[n] = (int64_t)(rnd() % 40); /* rows 40..V-1 get nothing and must read 0 */
    for (int n = 0; n < N; n++)
        if (ix[n] != 7)
            for (int d = 0; d < D; d++) want[ix[n] * D + d] += f32_of(g[n * D + d]);
    for (int threads = 1; threads <= 2; threads++) {
        kc_dev_t k = kc_open(threads);
        REQUIRE(k.rt);
        for (int i = 0; i < V * D; i++) gw[i] = 0x7fc0; /* NaN: must be zeroed by the kernel */
        const int64_t wsz[2] = {V, D}, gsz[2] = {N, D};
        axon_tensor_t tw = kc_tensor(gw, AXON_BFLOAT16, 2, wsz, NULL), tg = kc_tensor(g, AXON_BFLOAT16, 2, gsz, NULL);
        axon_tensor_t tx = T1(ix, AXON_INT64, N);
        CHECK_OK(axon_kernel_embedding_backward(k.s, &tw, &tg, &tx, 7));
        CHECK_OK(axon_stream_sync(k.s));
        int bad = 0;
        for (int i = 0; i < V * D; i++) bad += f32_of(gw[i]) != want[i];
        if (bad) fprintf(stderr, "  threads %d: %d elements differ\n", threads, bad);
        CHECK(bad == 0);
        axon_runtime_destroy(k.rt);
    }
    free(g), free(gw), free(want), free(ix);
}

static void test_row_paths_fail_on_an_out_of_range_index_and_write_nothing(void) {
    enum { V = 8, D = 32, N = 5 };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float w[V * D], out[N * D], g[N * D];
    for (int i = 0; i < V * D; i++) w[i] = 1.0f;
    for (int i = 0; i < N * D; i++) out[i] = -1.0f, g[i] = 2.0f;
    int64_t bad[N] = {0, 3, 8, 1, 2};
    const int64_t wsz[2] = {V, D}, osz[2] = {N, D};
    axon_tensor_t tw = kc_tensor(w, AXON_FLOAT32, 2, wsz, NULL), to = kc_tensor(out, AXON_FLOAT32, 2, osz, NULL);
    axon_tensor_t tg = kc_tensor(g, AXON_FLOAT32, 2, osz, NULL), tx = T1(bad, AXON_INT64, N);
    CHECK_OK(axon_kernel_index_select(k.s, &to, &tw, 0, &tx, AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_select(): index 8 is out of bounds for dimension 0 with size 8");
    for (int i = 0; i < N * D; i++) CHECK(out[i] == -1.0f);
    CHECK_OK(axon_kernel_index_add(k.s, &tw, 0, &tx, &tg, axon_scalar_int(1), AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_add(): index 8 is out of bounds for dimension 0 with size 8");
    CHECK_OK(axon_kernel_embedding_backward(k.s, &tw, &tg, &tx, -1));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("embedding_backward(): index 8 is out of bounds for dimension 0 with size 8");
    for (int i = 0; i < V * D; i++) CHECK(w[i] == 1.0f);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_index_select_copies_whole_rows_with_dims_before_dim);
    RUN(test_index_select_rows_of_an_embedding_table_and_a_0d_index);
    RUN(test_index_add_rows_match_the_in_order_reference_bitwise);
    RUN(test_embedding_backward_rows_zero_every_row_and_skip_padding);
    RUN(test_row_paths_fail_on_an_out_of_range_index_and_write_nothing);
    return check_report();
}
