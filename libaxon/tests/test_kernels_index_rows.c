/* The row paths of index.h's kernels: index_select copying whole rows, index_add / embedding backward adding whole
 * rows, when the elements after dim are dense; cat copying each input's dense block into out's rows (any number of
 * narrow rows, or a few wide ones split across threads), next to inputs that take the element copy. Each is
 * compared with a plain per-element reference, with dimensions before dim (some strided), int32 and int64 indices,
 * repeats, negative indices under AXON_INDEX_WRAP, padding, 1 and 2 threads (bitwise equal), and out-of-range
 * indices that must fail at sync with nothing written. Buffers are host memory sized exactly, so AddressSanitizer
 * sees any access outside them. */
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

/* cat of n inputs [2, 3, 5, w_k] (some empty) along `dim` of a 4-d out, checked against a per-element reference.
 * Input k is float32 and dense, except: every third is stored with gaps in its outer dims, every fifth is
 * transposed within its last two dims (not dense from dim on: element copy), every seventh is int32 (converted:
 * element copy). out has a gap after each position of dim 0 when `gap`. Sizes along dim: 1 + (k * 5) % 9. */
static void cat_case(int n, int dim, int gap, int threads) {
    int64_t base[4] = {2, 3, 5, 4}, total = 0, w[AXON_CAT_MAX_INPUTS];
    void *buf[AXON_CAT_MAX_INPUTS];
    axon_tensor_t in[AXON_CAT_MAX_INPUTS];
    for (int k = 0; k < n; k++) {
        int64_t sz[4] = {base[0], base[1], base[2], base[3]}, st[4];
        w[k] = k % 4 == 3 ? 0 : 1 + (k * 5) % 9;
        sz[dim] = w[k];
        const int pad = k % 3 == 1 ? 2 : 0;
        st[3] = 1, st[2] = sz[3], st[1] = sz[2] * sz[3] + pad, st[0] = sz[1] * st[1] + pad;
        if (k % 5 == 4) st[3] = sz[2], st[2] = 1; /* [.., a, b] stored as [.., b, a] */
        const axon_dtype_t dt = k % 7 == 6 ? AXON_INT32 : AXON_FLOAT32;
        const size_t bytes = (size_t)(sz[0] * st[0] + 1) * 4;
        buf[k] = malloc(bytes);
        REQUIRE(buf[k]);
        for (size_t i = 0; i < bytes / 4; i++) {
            if (dt == AXON_INT32) ((int32_t *)buf[k])[i] = (int32_t)(rnd() % 1000);
            else ((float *)buf[k])[i] = (float)(rnd() % 1000) + 0.5f;
        }
        in[k] = kc_tensor(buf[k], dt, 4, sz, st);
        total += w[k];
    }
    int64_t osz[4] = {base[0], base[1], base[2], base[3]}, ost[4];
    osz[dim] = total;
    ost[3] = 1, ost[2] = osz[3], ost[1] = osz[2] * osz[3], ost[0] = osz[1] * ost[1] + (gap ? 7 : 0);
    const size_t obytes = (size_t)(osz[0] * ost[0]) * sizeof(float);
    float *out = malloc(obytes), *want = malloc(obytes);
    REQUIRE(out && want);
    for (size_t i = 0; i < obytes / sizeof(float); i++) out[i] = want[i] = -1.0f;
    int64_t start = 0;
    for (int k = 0; k < n; k++) {
        const axon_tensor_t *t = &in[k];
        for (int64_t a = 0; a < t->sizes[0]; a++)
            for (int64_t b = 0; b < t->sizes[1]; b++)
                for (int64_t c = 0; c < t->sizes[2]; c++)
                    for (int64_t d = 0; d < t->sizes[3]; d++) {
                        int64_t p[4] = {a, b, c, d};
                        const int64_t e = a * t->strides[0] + b * t->strides[1] + c * t->strides[2] +
                                          d * t->strides[3];
                        const float v =
                            t->dtype == AXON_INT32 ? (float)((int32_t *)t->data)[e] : ((float *)t->data)[e];
                        p[dim] += start;
                        want[p[0] * ost[0] + p[1] * ost[1] + p[2] * ost[2] + p[3] * ost[3]] = v;
                    }
        start += w[k];
    }
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    axon_tensor_t to = kc_tensor(out, AXON_FLOAT32, 4, osz, ost);
    CHECK_OK(axon_kernel_cat(k.s, &to, in, n, dim - 4));
    CHECK_OK(axon_stream_sync(k.s));
    int64_t diff = kc_first_diff(out, want, obytes);
    if (diff >= 0)
        fprintf(stderr, "  n %d dim %d gap %d threads %d: first byte differing %lld\n", n, dim, gap, threads,
                (long long)diff);
    CHECK(diff < 0);
    axon_runtime_destroy(k.rt);
    for (int i = 0; i < n; i++) free(buf[i]);
    free(out), free(want);
}

static void test_cat_rows_match_the_reference_along_every_dim_with_mixed_inputs(void) {
    for (int threads = 1; threads <= 2; threads++)
        for (int dim = 0; dim < 4; dim++)
            for (int gap = 0; gap < 2; gap++) {
                const int ns[4] = {1, 3, 8, AXON_CAT_MAX_INPUTS};
                for (int i = 0; i < 4; i++) cat_case(ns[i], dim, gap, threads);
            }
}

/* Big enough for the byte-split loop to cut rows and inputs between participants (1, 2 and 3, so parts of unequal
 * sizes too): 3 x [512, 256] along the last dim (narrow rows), and 2 x [300001] along dim 0 (one wide row). */
static void test_cat_rows_split_across_threads_match_a_serial_copy(void) {
    enum { R = 512, W = 256, L = 300001, N = 2 * L > 3 * R * W ? 2 * L : 3 * R * W };
    float *x = malloc(sizeof(float) * N), *out = malloc(sizeof(float) * N);
    REQUIRE(x && out);
    for (int i = 0; i < N; i++) x[i] = (float)i;
    for (int threads = 1; threads <= 3; threads++) {
        kc_dev_t k = kc_open(threads);
        REQUIRE(k.rt);
        axon_tensor_t in[3];
        const int64_t isz[2] = {R, W}, osz[2] = {R, 3 * W}, lsz[1] = {L}, l2[1] = {2 * L};
        for (int i = 0; i < 3; i++) in[i] = kc_tensor(x + i * R * W, AXON_FLOAT32, 2, isz, NULL);
        axon_tensor_t to = kc_tensor(out, AXON_FLOAT32, 2, osz, NULL);
        memset(out, 0, sizeof(float) * N);
        CHECK_OK(axon_kernel_cat(k.s, &to, in, 3, -1));
        CHECK_OK(axon_stream_sync(k.s));
        int bad = 0;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < 3 * W; c++) bad += out[r * 3 * W + c] != x[(c / W) * R * W + r * W + c % W];
        CHECK(bad == 0);
        in[0] = kc_tensor(x, AXON_FLOAT32, 1, lsz, NULL), in[1] = kc_tensor(x + L, AXON_FLOAT32, 1, lsz, NULL);
        to = kc_tensor(out, AXON_FLOAT32, 1, l2, NULL);
        memset(out, 0, sizeof(float) * N);
        CHECK_OK(axon_kernel_cat(k.s, &to, in, 2, 0));
        CHECK_OK(axon_stream_sync(k.s));
        CHECK(memcmp(out, x, sizeof(float) * 2 * L) == 0);
        axon_runtime_destroy(k.rt);
    }
    free(x), free(out);
}

/* Pieces of every length from 1 to 70 bytes (int8 along the last dim, 5 rows, the second input read with a gap
 * between rows): short pieces are copied with fixed-size moves, longer ones with memcpy. */
static void test_cat_rows_copy_pieces_of_every_short_length(void) {
    enum { R = 5, MAXW = 70 };
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    int8_t a[R * MAXW], b[R * (MAXW + 3)], out[R * 2 * MAXW];
    for (int i = 0; i < R * MAXW; i++) a[i] = (int8_t)(i % 101);
    for (int i = 0; i < R * (MAXW + 3); i++) b[i] = (int8_t)(-(i % 97));
    for (int64_t w = 1; w <= MAXW; w++) {
        const int64_t wa = w, wb = MAXW + 1 - w; /* widths w and 71 - w */
        const int64_t asz[2] = {R, wa}, bsz[2] = {R, wb}, bst[2] = {wb + 3, 1}, osz[2] = {R, wa + wb};
        axon_tensor_t in[2] = {kc_tensor(a, AXON_INT8, 2, asz, NULL), kc_tensor(b, AXON_INT8, 2, bsz, bst)};
        axon_tensor_t to = kc_tensor(out, AXON_INT8, 2, osz, NULL);
        memset(out, 0x55, sizeof out);
        CHECK_OK(axon_kernel_cat(k.s, &to, in, 2, 1));
        CHECK_OK(axon_stream_sync(k.s));
        int bad = 0;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < wa + wb; c++)
                bad += out[r * (wa + wb) + c] != (c < wa ? a[r * wa + c] : b[r * (wb + 3) + c - wa]);
        for (size_t i = (size_t)(R * (wa + wb)); i < sizeof out; i++) bad += out[i] != 0x55; /* nothing past out */
        if (bad) fprintf(stderr, "  widths %lld + %lld: %d bytes wrong\n", (long long)wa, (long long)wb, bad);
        CHECK(bad == 0);
    }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_index_select_copies_whole_rows_with_dims_before_dim);
    RUN(test_index_select_rows_of_an_embedding_table_and_a_0d_index);
    RUN(test_index_add_rows_match_the_in_order_reference_bitwise);
    RUN(test_embedding_backward_rows_zero_every_row_and_skip_padding);
    RUN(test_row_paths_fail_on_an_out_of_range_index_and_write_nothing);
    RUN(test_cat_rows_match_the_reference_along_every_dim_with_mixed_inputs);
    RUN(test_cat_rows_split_across_threads_match_a_serial_copy);
    RUN(test_cat_rows_copy_pieces_of_every_short_length);
    return check_report();
}
