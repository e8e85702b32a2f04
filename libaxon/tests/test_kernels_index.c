/* index.h's kernels against plain C references: index_select and gather for every dtype and strided inputs, scatter
 * with each reduction, index_add with alpha, embedding backward with repeated indices and padding (bitwise equal to
 * an in-order reference with 1 and 2 threads), masked_fill, cat of 1..N inputs with empty and strided ones, and
 * out-of-range indices failing at sync with PyTorch's message and nothing written by the in-place ops; the index
 * vector of repeat_interleave, and its refusal of negative repeats or a wrong total. Buffers are
 * host memory (the kernels take it), so AddressSanitizer sees any access outside them. */
#include <math.h>
#include <stdint.h>

#include "../kernels/dtype.h"
#include "kernels_check.h"

static axon_tensor_t T2(void *p, axon_dtype_t d, int64_t a, int64_t b) {
    const int64_t sz[2] = {a, b};
    return kc_tensor(p, d, 2, sz, NULL);
}

static axon_tensor_t T1(void *p, axon_dtype_t d, int64_t a) {
    const int64_t sz[1] = {a};
    return kc_tensor(p, d, 1, sz, NULL);
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static void fill_bytes(void *p, size_t n) {
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)rnd();
}

static const axon_dtype_t all_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_FLOAT16, AXON_BFLOAT16,
                                          AXON_INT8,    AXON_UINT8,   AXON_INT16,   AXON_INT32,
                                          AXON_INT64,   AXON_BOOL,    AXON_COMPLEX64, AXON_COMPLEX128};

static void test_index_select_matches_reference_for_every_dtype_and_layout(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t R = 6, C = 7;
    const int64_t idx64[6] = {5, -1, 0, 2, 2, -6};
    const int32_t idx32[6] = {5, -1, 0, 2, 2, -6};
    for (size_t di = 0; di < sizeof all_dtypes / sizeof all_dtypes[0]; di++) {
        axon_dtype_t d = all_dtypes[di];
        size_t es = axon_dtype_size(d);
        char in[64 * 16], out[64 * 16], want[64 * 16];
        fill_bytes(in, sizeof in);
        for (int tr = 0; tr < 2; tr++)          /* tr: in is a transposed view of a [C, R] buffer */
            for (int dim = 0; dim < 2; dim++)
                for (int i32 = 0; i32 < 2; i32++) {
                    axon_tensor_t ti = T2(in, d, R, C);
                    if (tr) ti.strides[0] = 1, ti.strides[1] = R;
                    int64_t osz[2] = {R, C};
                    osz[dim] = 6;
                    axon_tensor_t to = T2(out, d, osz[0], osz[1]);
                    axon_tensor_t tx = T1(i32 ? (void *)idx32 : (void *)idx64, i32 ? AXON_INT32 : AXON_INT64, 6);
                    CHECK_OK(axon_kernel_index_select(k.s, &to, &ti, dim, &tx, AXON_INDEX_WRAP));
                    CHECK_OK(axon_stream_sync(k.s));
                    int64_t size = dim == 0 ? R : C;
                    for (int64_t r = 0; r < osz[0]; r++)
                        for (int64_t c = 0; c < osz[1]; c++) {
                            int64_t rr = r, cc = c;
                            int64_t *sel = dim == 0 ? &rr : &cc;
                            *sel = idx64[*sel] < 0 ? idx64[*sel] + size : idx64[*sel];
                            memcpy(want + (r * osz[1] + c) * es, in + (rr * ti.strides[0] + cc * ti.strides[1]) * es,
                                   es);
                        }
                    int64_t diff = kc_first_diff(out, want, (size_t)(osz[0] * osz[1]) * es);
                    if (diff >= 0)
                        fprintf(stderr, "  %s tr %d dim %d i32 %d: byte %lld differs\n", axon_dtype_name(d), tr, dim,
                                i32, (long long)diff);
                    CHECK(diff < 0);
                }
    }
    /* An empty index gives an empty out and enqueues nothing. */
    float in[12] = {0}, out[1];
    int64_t none[1];
    axon_tensor_t ti = T2(in, AXON_FLOAT32, 3, 4), to = T2(out, AXON_FLOAT32, 0, 4), tx = T1(none, AXON_INT64, 0);
    CHECK_OK(axon_kernel_index_select(k.s, &to, &ti, 0, &tx, AXON_INDEX_WRAP));
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

static void test_gather_matches_reference_on_both_dims(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float in[20];
    for (int i = 0; i < 20; i++) in[i] = (float)i;
    axon_tensor_t ti = T2(in, AXON_FLOAT32, 4, 5);
    /* dim 1: index [4, 3]; dim 0: index [3, 5], both smaller than in elsewhere. */
    int64_t i1[12], i0[15];
    for (int i = 0; i < 12; i++) i1[i] = (int64_t)(rnd() % 10) - 5;
    for (int i = 0; i < 15; i++) i0[i] = (int64_t)(rnd() % 8) - 4;
    float o1[12], o0[15];
    axon_tensor_t x1 = T2(i1, AXON_INT64, 4, 3), x0 = T2(i0, AXON_INT64, 3, 5);
    axon_tensor_t t1 = T2(o1, AXON_FLOAT32, 4, 3), t0 = T2(o0, AXON_FLOAT32, 3, 5);
    CHECK_OK(axon_kernel_gather(k.s, &t1, &ti, 1, &x1, AXON_INDEX_WRAP));
    CHECK_OK(axon_kernel_gather(k.s, &t0, &ti, -2, &x0, AXON_INDEX_WRAP));
    CHECK_OK(axon_stream_sync(k.s));
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) {
            int64_t v = i1[r * 3 + c];
            CHECK(o1[r * 3 + c] == in[r * 5 + (v < 0 ? v + 5 : v)]);
        }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 5; c++) {
            int64_t v = i0[r * 5 + c];
            CHECK(o0[r * 5 + c] == in[(v < 0 ? v + 4 : v) * 5 + c]);
        }
    axon_runtime_destroy(k.rt);
}

/* A gather big enough for both threads, along either dim, for 1- to 16-byte elements and both index dtypes, plain
 * and transposed (the element loops for contiguous int64 indices, the general one otherwise): the reference's bytes;
 * with two out-of-range indices, the message names the first in out's order. */
static void test_gather_of_every_element_size_matches_reference_and_names_the_first_bad_index(void) {
    enum { R = 48, C = 2000 };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const axon_dtype_t dts[] = {AXON_UINT8, AXON_FLOAT16, AXON_FLOAT32, AXON_FLOAT64, AXON_COMPLEX128};
    unsigned char *in = malloc((size_t)R * C * 16), *out = malloc((size_t)R * C * 16);
    int64_t *ix = malloc(sizeof(int64_t) * R * C);
    REQUIRE(in && out && ix);
    fill_bytes(in, (size_t)R * C * 16);
    for (int dim = 0; dim < 2; dim++)
        for (int xd = 0; xd < 2; xd++)
            for (int tr = 0; tr < 2; tr++)
                for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
                    const size_t es = axon_dtype_size(dts[d]);
                    const int64_t size = dim ? C : R;
                    int32_t *ix32 = (int32_t *)ix;
                    for (int64_t i = 0; i < R * C; i++) {
                        const int64_t v = (int64_t)(rnd() % (2 * size)) - size;
                        if (xd) ix32[i] = (int32_t)v; else ix[i] = v;
                    }
                    /* tr: the index as the transpose of a [C, R] buffer, so runs along dim 1 are strided */
                    const int64_t sz[2] = {R, C}, st[2] = {tr ? 1 : C, tr ? R : 1};
                    axon_tensor_t ti = T2(in, dts[d], R, C), to = T2(out, dts[d], R, C);
                    axon_tensor_t tx = kc_tensor(ix, xd ? AXON_INT32 : AXON_INT64, 2, sz, st);
                    CHECK_OK(axon_kernel_gather(k.s, &to, &ti, dim, &tx, AXON_INDEX_WRAP));
                    CHECK_OK(axon_stream_sync(k.s));
                    int bad = 0;
                    for (int64_t r = 0; r < R && !bad; r++)
                        for (int64_t c = 0; c < C && !bad; c++) {
                            const int64_t at = r * st[0] + c * st[1];
                            int64_t v = xd ? ix32[at] : ix[at];
                            v += v < 0 ? size : 0;
                            const int64_t src = dim ? r * C + v : v * C + c;
                            bad = memcmp(out + (size_t)(r * C + c) * es, in + (size_t)src * es, es) != 0;
                        }
                    CHECK(!bad);
                    /* out's positions 3000 (1, 1000) and 90000 (45, 0) get bad indices, in that order */
                    const int64_t a1 = 1 * st[0] + 1000 * st[1], a2 = 45 * st[0];
                    if (xd) ix32[a1] = (int32_t)(size + 7), ix32[a2] = (int32_t)(-size - 3);
                    else ix[a1] = size + 7, ix[a2] = -size - 3;
                    CHECK_OK(axon_kernel_gather(k.s, &to, &ti, dim, &tx, AXON_INDEX_WRAP));
                    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
                    char want[96];
                    snprintf(want, sizeof want, "index %d is out of bounds for dimension %d", (int)(size + 7), dim);
                    CHECK_MSG(want);
                }
    free(in), free(out), free(ix);
    axon_runtime_destroy(k.rt);
}

/* Reference scatter along dim 0 of a [R, C] float out with index/src [N, C]: updates in index order. */
static float ref_op(axon_scatter_reduce_t r, float a, float b) {
    switch (r) {
    case AXON_SCATTER_SUM: return a + b;
    case AXON_SCATTER_PROD: return a * b;
    case AXON_SCATTER_AMAX: return isnan(b) ? b : a < b ? b : a;
    case AXON_SCATTER_AMIN: return isnan(b) ? b : a > b ? b : a;
    case AXON_SCATTER_MEAN: return a + b;   /* the sum; the test divides by the count */
    default: return b;
    }
}

static void test_scatter_matches_in_order_reference_for_each_reduction(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 5, C = 40, N = 64 };
    static float base[R * C], src[N * C], out[R * C], want[R * C];
    static int32_t idx[N * C];
    for (int i = 0; i < R * C; i++) base[i] = (float)(rnd() % 100) / 8.0f - 6.0f;
    for (int i = 0; i < N * C; i++) src[i] = (float)(rnd() % 100) / 16.0f - 3.0f, idx[i] = (int32_t)(rnd() % 10) - 5;
    src[7] = NAN;
    for (int r = 0; r < AXON_SCATTER_REDUCE_COUNT; r++)
        for (int value_form = 0; value_form < 2; value_form++) {
            int count[R * C] = {0};
            memcpy(out, base, sizeof out);
            memcpy(want, base, sizeof want);
            for (int n = 0; n < N; n++)
                for (int c = 0; c < C; c++) {
                    int v = idx[n * C + c] < 0 ? idx[n * C + c] + R : idx[n * C + c];
                    float s = value_form ? 1.5f : src[n * C + c];
                    want[v * C + c] = ref_op((axon_scatter_reduce_t)r, want[v * C + c], s);
                    count[v * C + c]++;
                }
            if (r == AXON_SCATTER_MEAN)   /* out's own element counts once */
                for (int i = 0; i < R * C; i++) want[i] = (float)((double)want[i] / (count[i] + 1));
            axon_tensor_t to = T2(out, AXON_FLOAT32, R, C), tx = T2(idx, AXON_INT32, N, C);
            axon_tensor_t ts = T2(src, AXON_FLOAT32, N, C);
            CHECK_OK(axon_kernel_scatter(k.s, (axon_scatter_reduce_t)r, &to, 0, &tx, value_form ? NULL : &ts,
                                         axon_scalar_float(1.5), AXON_INDEX_WRAP));
            CHECK_OK(axon_stream_sync(k.s));
            int bad = 0;
            for (int i = 0; i < R * C; i++)
                bad += !(out[i] == want[i] || (isnan(out[i]) && isnan(want[i])));
            if (bad) fprintf(stderr, "  scatter %s value %d: %d elements differ\n",
                             axon_scatter_reduce_name((axon_scatter_reduce_t)r), value_form, bad);
            CHECK(bad == 0);
        }
    /* Integers along dim 1, with src larger than index. */
    int32_t io[12] = {0}, is[4 * 5];
    int64_t ix[4 * 2] = {0, 2, 1, 1, -1, 0, 2, 2};
    for (int i = 0; i < 20; i++) is[i] = i + 1;
    axon_tensor_t to = T2(io, AXON_INT32, 4, 3), tx = T2(ix, AXON_INT64, 4, 2), ts = T2(is, AXON_INT32, 4, 5);
    CHECK_OK(axon_kernel_scatter(k.s, AXON_SCATTER_SUM, &to, 1, &tx, &ts, axon_scalar_int(0), AXON_INDEX_WRAP));
    CHECK_OK(axon_stream_sync(k.s));
    const int32_t iw[12] = {1, 0, 2, 0, 13, 0, 12, 0, 11, 0, 0, 33};
    CHECK(memcmp(io, iw, sizeof iw) == 0);
    axon_runtime_destroy(k.rt);
}

/* scatter SUM and index_add along the last dim of a float32 [R, C] out (contiguous int64 index and src: the
 * register loop), with repeated and negative indices, on both threads: bitwise the in-order reference. */
static void test_sums_along_the_last_dim_match_the_in_order_reference(void) {
    enum { R = 40, C = 3000 };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float *out = malloc(sizeof(float) * R * C), *want = malloc(sizeof(float) * R * C);
    float *src = malloc(sizeof(float) * R * C);
    int64_t *ix = malloc(sizeof(int64_t) * R * C);
    REQUIRE(out && want && src && ix);
    for (int64_t i = 0; i < R * C; i++) {
        src[i] = (float)rnd() / (float)(1 << 24) - 0.5f;
        ix[i] = (int64_t)(rnd() % 200) - 100; /* many repeats, negatives wrapping */
    }
    for (int pass = 0; pass < 2; pass++) {
        const float alpha = pass ? 0.37f : 1.0f;
        for (int64_t i = 0; i < R * C; i++) out[i] = want[i] = (float)(i % 7);
        for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++) {
                const int64_t v = pass ? ix[c] : ix[r * C + c]; /* index_add: the 1-d index, row 0's values */
                float *d = &want[r * C + (v < 0 ? v + C : v)];
                *d = *d + src[r * C + c] * alpha;
            }
        axon_tensor_t to = T2(out, AXON_FLOAT32, R, C), ts = T2(src, AXON_FLOAT32, R, C);
        axon_tensor_t tx = T2(ix, AXON_INT64, R, C), tx1 = T1(ix, AXON_INT64, C);
        if (pass)
            CHECK_OK(axon_kernel_index_add(k.s, &to, 1, &tx1, &ts, axon_scalar_float(alpha), AXON_INDEX_WRAP));
        else
            CHECK_OK(axon_kernel_scatter(k.s, AXON_SCATTER_SUM, &to, 1, &tx, &ts, axon_scalar_int(0), AXON_INDEX_WRAP));
        CHECK_OK(axon_stream_sync(k.s));
        CHECK(memcmp(out, want, sizeof(float) * R * C) == 0);
    }
    free(out), free(want), free(src), free(ix);
    axon_runtime_destroy(k.rt);
}

/* The same for float16 and bfloat16 (their own inline loops): each update in float, rounded to the half type, in
 * index order; bitwise the reference, which rounds through float64 (the same half for two halves' float result).
 * Pass 2 scatters along dim 0 (the loop with the updates outer and the columns inner), pass 3 index_adds whole rows
 * along dim 0 (the row path; float16 on the conversion instructions where the CPU has them). */
static void test_half_sums_along_either_dim_match_the_in_order_reference(void) {
    enum { R = 16, C = 1000 };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static uint16_t out[R * C], want[R * C], src[R * C];
    static int64_t ix[R * C];
    const axon_dtype_t dts[2] = {AXON_BFLOAT16, AXON_FLOAT16};
    for (int di = 0; di < 2; di++)
        for (int pass = 0; pass < 4; pass++) {
            const int bf = dts[di] == AXON_BFLOAT16, dim0 = pass >= 2, rows = pass == 3;
            const float alpha = pass == 1 || rows ? 0.37f : 1.0f;
            for (int64_t i = 0; i < R * C; i++) {
                const float f = (float)rnd() / (float)(1 << 24) - 0.5f;
                src[i] = bf ? axon_f32_to_bf16(f) : axon_f32_to_f16(f);
                ix[i] = dim0 ? (int64_t)(rnd() % (2 * R)) - R : (int64_t)(rnd() % 200) - 100;
                out[i] = want[i] = bf ? axon_f32_to_bf16((float)(i % 7)) : axon_f32_to_f16((float)(i % 7));
            }
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++) {
                    const int64_t v = pass == 1 ? ix[c] : rows ? ix[r] : ix[r * C + c];
                    uint16_t *d = dim0 ? &want[(v < 0 ? v + R : v) * C + c] : &want[r * C + (v < 0 ? v + C : v)];
                    const float a = bf ? axon_bf16_to_f32(*d) : axon_f16_to_f32(*d);
                    const float b = bf ? axon_bf16_to_f32(src[r * C + c]) : axon_f16_to_f32(src[r * C + c]);
                    const double sum = (double)a + (double)(b * alpha);
                    *d = bf ? axon_f64_to_bf16(sum) : axon_f64_to_f16(sum);
                }
            axon_tensor_t to = T2(out, dts[di], R, C), ts = T2(src, dts[di], R, C);
            axon_tensor_t tx = T2(ix, AXON_INT64, R, C), tx1 = T1(ix, AXON_INT64, C);
            axon_tensor_t txr = T1(ix, AXON_INT64, R);
            if (pass == 1)
                CHECK_OK(axon_kernel_index_add(k.s, &to, 1, &tx1, &ts, axon_scalar_float(alpha), AXON_INDEX_WRAP));
            else if (rows)
                CHECK_OK(axon_kernel_index_add(k.s, &to, 0, &txr, &ts, axon_scalar_float(alpha), AXON_INDEX_WRAP));
            else
                CHECK_OK(axon_kernel_scatter(k.s, AXON_SCATTER_SUM, &to, dim0 ? 0 : 1, &tx, &ts, axon_scalar_int(0),
                                             AXON_INDEX_WRAP));
            CHECK_OK(axon_stream_sync(k.s));
            const int64_t bad = kc_first_diff(out, want, sizeof out);
            if (bad >= 0)
                fprintf(stderr, "  %s %s: first wrong byte %lld\n", axon_dtype_name(dts[di]),
                        pass == 1 ? "index_add" : rows ? "index_add of rows" : dim0 ? "scatter along dim 0" : "scatter",
                        (long long)bad);
            CHECK_EQ_I64(bad, -1);
        }
    axon_runtime_destroy(k.rt);
}

static void test_index_add_scales_by_alpha_and_accumulates_repeats(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    double out[15] = {0}, src[12];
    for (int i = 0; i < 12; i++) src[i] = i;
    int64_t idx[4] = {1, 1, 4, -1};
    axon_tensor_t to = T2(out, AXON_FLOAT64, 5, 3), ts = T2(src, AXON_FLOAT64, 4, 3), tx = T1(idx, AXON_INT64, 4);
    CHECK_OK(axon_kernel_index_add(k.s, &to, 0, &tx, &ts, axon_scalar_float(2.0), AXON_INDEX_WRAP));
    CHECK_OK(axon_stream_sync(k.s));
    const double want[15] = {0, 0, 0, 6, 10, 14, 0, 0, 0, 0, 0, 0, 30, 34, 38};
    CHECK(memcmp(out, want, sizeof want) == 0);
    /* int64 along dim 1, src transposed. */
    int64_t io[6] = {0}, is[6] = {1, 2, 3, 4, 5, 6};
    int32_t ix[3] = {2, 0, 2};
    axon_tensor_t o2 = T2(io, AXON_INT64, 2, 3), s2 = T2(is, AXON_INT64, 2, 3), x2 = T1(ix, AXON_INT32, 3);
    s2.strides[0] = 1, s2.strides[1] = 2; /* src[r][c] = is[r + 2c] */
    CHECK_OK(axon_kernel_index_add(k.s, &o2, 1, &x2, &s2, axon_scalar_int(-1), AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    const int64_t w2[6] = {-3, 0, -6, -4, 0, -8};
    CHECK(memcmp(io, w2, sizeof w2) == 0);
    /* complex128: alpha 1 adds the parts exactly; a complex alpha multiplies first; repeats accumulate */
    double co[4] = {1, 2, 0, 0}, cs[6] = {0.5, -1, 2, 3, 4, 0.25};
    int64_t cx[3] = {0, 1, 0};
    axon_tensor_t tco = T1(co, AXON_COMPLEX128, 2), tcs = T1(cs, AXON_COMPLEX128, 3), tcx = T1(cx, AXON_INT64, 3);
    CHECK_OK(axon_kernel_index_add(k.s, &tco, 0, &tcx, &tcs, axon_scalar_int(1), AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(co[0] == 5.5 && co[1] == 1.25 && co[2] == 2 && co[3] == 3);
    CHECK_OK(axon_kernel_index_add(k.s, &tco, 0, &tcx, &tcs, axon_scalar_complex(0, 1), AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    /* += i * s: (re, im) gains (-s.im, s.re) */
    CHECK(co[0] == 5.5 + 1 - 0.25 && co[1] == 1.25 + 0.5 + 4 && co[2] == 2 - 3 && co[3] == 3 + 2);
    axon_runtime_destroy(k.rt);
}

/* Embedding backward with N rows into V, repeated indices and a padding row, with `threads` workers. */
static void embedding_backward_run(int threads, float *gw, const float *g, const int64_t *ix, int V, int D, int N) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return;
    for (int i = 0; i < V * D; i++) gw[i] = 99.0f; /* must be zeroed by the kernel */
    axon_tensor_t tw = T2(gw, AXON_FLOAT32, V, D), tg = T2((void *)g, AXON_FLOAT32, N, D), tx = T1((void *)ix,
                                                                                                      AXON_INT64, N);
    CHECK_OK(axon_kernel_embedding_backward(k.s, &tw, &tg, &tx, 3));
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

static void test_embedding_backward_is_deterministic_and_skips_padding(void) {
    enum { V = 50, D = 37, N = 3000 };
    float *g = malloc(sizeof(float) * N * D), *w1 = malloc(sizeof(float) * V * D), *w2 = malloc(sizeof(float) * V * D);
    float *want = calloc(V * D, sizeof(float));
    int64_t *ix = malloc(sizeof(int64_t) * N);
    REQUIRE(g && w1 && w2 && want && ix);
    for (int i = 0; i < N * D; i++) g[i] = (float)rnd() / (float)(1 << 24) - 0.5f;
    for (int n = 0; n < N; n++) ix[n] = (int64_t)(rnd() % V);
    for (int n = 0; n < N; n++) {
        int64_t v = ix[n] < 0 ? ix[n] + V : ix[n];
        if (v == 3) continue;
        for (int d = 0; d < D; d++) want[v * D + d] += g[n * D + d];
    }
    embedding_backward_run(1, w1, g, ix, V, D, N);
    embedding_backward_run(2, w2, g, ix, V, D, N);
    CHECK(memcmp(w1, want, sizeof(float) * V * D) == 0);
    CHECK(memcmp(w2, w1, sizeof(float) * V * D) == 0);
    free(g), free(w1), free(w2), free(want), free(ix);
}

static void test_out_of_range_index_fails_at_sync_and_in_place_ops_write_nothing(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float in[10] = {0}, out[6], src[6] = {1, 2, 3, 4, 5, 6};
    int64_t bad[3] = {1, 7, 0}, neg[3] = {0, -6, 1};
    axon_tensor_t ti = T2(in, AXON_FLOAT32, 5, 2), to = T2(out, AXON_FLOAT32, 3, 2), tb = T1(bad, AXON_INT64, 3);
    for (int i = 0; i < 6; i++) out[i] = -1.0f;
    CHECK_OK(axon_kernel_index_select(k.s, &to, &ti, 0, &tb, AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_select(): index 7 is out of bounds for dimension 0 with size 5");
    /* (index_select and gather check as they copy: their out's contents are then unspecified, as on PyTorch CPU) */
    CHECK_OK(axon_stream_sync(k.s)); /* reported once */
    /* Without AXON_INDEX_WRAP a negative index is out of bounds, as in PyTorch's index_select. */
    int32_t negsel[1] = {-1};
    axon_tensor_t t1 = T2(out, AXON_FLOAT32, 1, 2), tneg = T1(negsel, AXON_INT32, 1);
    CHECK_OK(axon_kernel_index_select(k.s, &t1, &ti, 0, &tneg, AXON_INDEX_DEFAULT));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index -1 is out of bounds for dimension 0 with size 5");

    axon_tensor_t tn = T1(neg, AXON_INT64, 3), ts = T2(src, AXON_FLOAT32, 3, 2);
    CHECK_OK(axon_kernel_index_add(k.s, &ti, 0, &tn, &ts, axon_scalar_int(1), AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index -6 is out of bounds for dimension 0 with size 5");
    for (int i = 0; i < 10; i++) CHECK(in[i] == 0.0f);

    int64_t g2[6] = {0, 1, 1, 2, 0, 1};
    axon_tensor_t tg = T2(g2, AXON_INT64, 3, 2);
    CHECK_OK(axon_kernel_gather(k.s, &to, &ti, 1, &tg, AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("gather(): index 2 is out of bounds for dimension 1 with size 2");
    CHECK_OK(axon_kernel_scatter(k.s, AXON_SCATTER_NONE, &ti, 1, &tg, NULL, axon_scalar_float(5), AXON_INDEX_WRAP));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("scatter(): index 2 is out of bounds for dimension 1 with size 2");
    for (int i = 0; i < 10; i++) CHECK(in[i] == 0.0f);

    float gw[10], gr[6] = {1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 10; i++) gw[i] = 42.0f;
    axon_tensor_t tw = T2(gw, AXON_FLOAT32, 5, 2), tgr = T2(gr, AXON_FLOAT32, 3, 2);
    CHECK_OK(axon_kernel_embedding_backward(k.s, &tw, &tgr, &tb, -1));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out of bounds");
    for (int i = 0; i < 10; i++) CHECK(gw[i] == 42.0f);
    axon_runtime_destroy(k.rt);
}

static void test_masked_fill_broadcasts_the_mask(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float out[20] = {0};
    uint8_t mask[5] = {1, 0, 2, 0, 1};
    axon_tensor_t to = T2(out, AXON_FLOAT32, 4, 5), tm = T2(mask, AXON_BOOL, 4, 5);
    tm.strides[0] = 0;
    CHECK_OK(axon_kernel_masked_fill(k.s, &to, &tm, axon_scalar_float(7.5)));
    CHECK_OK(axon_stream_sync(k.s));
    for (int i = 0; i < 20; i++) CHECK(out[i] == (mask[i % 5] ? 7.5f : 0.0f));
    double cz[4] = {0}; /* complex64 [2]: the value keeps its imaginary part */
    uint8_t m2[2] = {0, 1};
    axon_tensor_t tc = T1(cz, AXON_COMPLEX64, 2), t2 = T1(m2, AXON_BOOL, 2);
    CHECK_OK(axon_kernel_masked_fill(k.s, &tc, &t2, axon_scalar_complex(1.0, -2.0)));
    CHECK_OK(axon_stream_sync(k.s));
    float *cf = (float *)cz;
    CHECK(cf[0] == 0 && cf[1] == 0 && cf[2] == 1.0f && cf[3] == -2.0f);
    axon_runtime_destroy(k.rt);
}

static void test_cat_of_one_to_many_inputs_with_empty_strided_and_mixed_dtypes(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    /* dim 0: float32 [2, 3], int32 [0, 3], float64 [4, 3] as a transposed view. */
    float a[6] = {1, 2, 3, 4, 5, 6}, out[18];
    int32_t e[1];
    double b[12];
    for (int i = 0; i < 12; i++) b[i] = 10 + i;
    axon_tensor_t in[3] = {T2(a, AXON_FLOAT32, 2, 3), T2(e, AXON_INT32, 0, 3), T2(b, AXON_FLOAT64, 4, 3)};
    in[2].strides[0] = 1, in[2].strides[1] = 4; /* b viewed as [4, 3]: element (r, c) = b[r + 4c] */
    axon_tensor_t to = T2(out, AXON_FLOAT32, 6, 3);
    CHECK_OK(axon_kernel_cat(k.s, &to, in, 3, 0));
    CHECK_OK(axon_stream_sync(k.s));
    for (int i = 0; i < 6; i++) CHECK(out[i] == a[i]);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) CHECK(out[6 + r * 3 + c] == (float)b[r + 4 * c]);
    /* dim 1 with 1..AXON_CAT_MAX_INPUTS inputs of width i % 3 (some empty). */
    static int16_t src[AXON_CAT_MAX_INPUTS][2 * 2], big[2 * 2 * AXON_CAT_MAX_INPUTS];
    axon_tensor_t ins[AXON_CAT_MAX_INPUTS];
    for (int n = 1; n <= AXON_CAT_MAX_INPUTS; n++) {
        int64_t w = 0;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 4; j++) src[i][j] = (int16_t)(100 * i + j);
            ins[i] = T2(src[i], AXON_INT16, 2, i % 3);
            w += i % 3;
        }
        if (w == 0) continue;
        axon_tensor_t tb = T2(big, AXON_INT16, 2, w);
        CHECK_OK(axon_kernel_cat(k.s, &tb, ins, n, -1));
        CHECK_OK(axon_stream_sync(k.s));
        int64_t col = 0;
        for (int i = 0; i < n; i++)
            for (int c = 0; c < i % 3; c++, col++)
                for (int r = 0; r < 2; r++) CHECK(big[r * w + col] == src[i][r * (i % 3) + c]);
    }
    CHECK_STATUS(axon_kernel_cat(k.s, &to, in, AXON_CAT_MAX_INPUTS + 1, 0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_cat(k.s, &to, in, 2, 0), AXON_ERROR_INVALID_ARG); /* 2 rows for 6 */
    CHECK_MSG("add up to 2");
    in[1] = T2(e, AXON_INT32, 0, 2);
    CHECK_STATUS(axon_kernel_cat(k.s, &to, in, 3, 0), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(k.rt);
}

static void test_bad_launch_arguments_are_refused(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float in[6] = {0}, out[6];
    float fidx[2] = {0, 1};
    int64_t idx[2] = {0, 1};
    axon_tensor_t ti = T2(in, AXON_FLOAT32, 3, 2), to = T2(out, AXON_FLOAT32, 2, 2);
    axon_tensor_t tf = T1(fidx, AXON_FLOAT32, 2), tx = T1(idx, AXON_INT64, 2);
    CHECK_STATUS(axon_kernel_index_select(k.s, &to, &ti, 0, &tf, AXON_INDEX_WRAP), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("int32/int64");
    CHECK_STATUS(axon_kernel_index_select(k.s, &to, &ti, 2, &tx, AXON_INDEX_WRAP), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_index_select(k.s, &to, &ti, 1, &tx, 0), AXON_ERROR_INVALID_ARG); /* out shape */
    double c[8] = {0};
    axon_tensor_t tc = T1(c, AXON_COMPLEX128, 4), tc2 = T1(c, AXON_COMPLEX128, 2);
    CHECK_STATUS(axon_kernel_scatter(k.s, AXON_SCATTER_PROD, &tc, 0, &tx, &tc2, axon_scalar_int(0), 0),
                 AXON_ERROR_UNSUPPORTED);
    axon_tensor_t td = T2(in, AXON_FLOAT64, 3, 1);
    CHECK_STATUS(axon_kernel_index_add(k.s, &ti, 0, &tx, &td, axon_scalar_int(1), 0), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(k.rt);
}

/* scatter_reduce(include_self=False) and index_reduce against an in-order reference: the elements that receive
 * updates start from the reduction's identity; MEAN divides by the count (floor division for integers); elements
 * without updates keep their value. */
static void test_scatter_reduce_without_self_and_index_reduce(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 6, C = 7, N = 9 };
    static int32_t base[R * C], src[N * C], out[R * C], want[R * C];
    static int64_t idx[N * C], idx1[N];
    for (int i = 0; i < R * C; i++) base[i] = (int32_t)(rnd() % 41) - 20;
    for (int i = 0; i < N * C; i++) src[i] = (int32_t)(rnd() % 41) - 20, idx[i] = (int64_t)(rnd() % 5);   /* row 5 never */
    for (int i = 0; i < N; i++) idx1[i] = (int64_t)(rnd() % 4);
    const axon_scatter_reduce_t rs[] = {AXON_SCATTER_SUM, AXON_SCATTER_PROD, AXON_SCATTER_AMAX, AXON_SCATTER_AMIN,
                                        AXON_SCATTER_MEAN};
    for (int form = 0; form < 2; form++)            /* scatter_reduce, index_reduce */
        for (int self = 0; self < 2; self++)
            for (size_t q = 0; q < sizeof rs / sizeof rs[0]; q++) {
                const axon_scatter_reduce_t r = rs[q];
                int64_t acc[R * C];
                int count[R * C] = {0};
                for (int i = 0; i < R * C; i++) acc[i] = base[i];
                for (int n = 0; n < N; n++)
                    for (int c = 0; c < C; c++) {
                        const int v = (int)(form ? idx1[n] : idx[n * C + c]) * C + c;
                        const int64_t x = src[n * C + c];
                        if (!self && count[v] == 0) acc[v] = x;
                        else acc[v] = r == AXON_SCATTER_PROD ? acc[v] * x
                                    : r == AXON_SCATTER_AMAX ? (acc[v] > x ? acc[v] : x)
                                    : r == AXON_SCATTER_AMIN ? (acc[v] < x ? acc[v] : x) : acc[v] + x;
                        count[v]++;
                    }
                for (int i = 0; i < R * C; i++) {
                    int64_t c = count[i] + self, v = acc[i];
                    if (r == AXON_SCATTER_MEAN && c > 0) v = v / c - ((v % c != 0) && ((v < 0) != (c < 0)));
                    want[i] = (int32_t)v;
                }
                memcpy(out, base, sizeof out);
                axon_tensor_t to = T2(out, AXON_INT32, R, C), ts = T2(src, AXON_INT32, N, C);
                if (form) {
                    const int64_t n1 = N;
                    axon_tensor_t tx = kc_tensor(idx1, AXON_INT64, 1, &n1, NULL);
                    CHECK_OK(axon_kernel_index_reduce(k.s, r, &to, 0, &tx, &ts, self, AXON_INDEX_DEFAULT));
                } else {
                    axon_tensor_t tx = T2(idx, AXON_INT64, N, C);
                    CHECK_OK(axon_kernel_scatter_reduce(k.s, r, &to, 0, &tx, &ts, self, AXON_INDEX_DEFAULT));
                }
                CHECK_OK(axon_stream_sync(k.s));
                const int64_t d = kc_first_diff(out, want, sizeof want);
                if (d >= 0)
                    fprintf(stderr, "  %s %s include_self %d: element %lld is %d, want %d\n",
                            form ? "index_reduce" : "scatter_reduce", axon_scatter_reduce_name(r), self,
                            (long long)(d / 4), out[d / 4], want[d / 4]);
                CHECK(d < 0);
            }
    /* MEAN of floats divides exactly; bool has no MEAN */
    float fo[2] = {1.0f, 5.0f}, fs[3] = {2.0f, 4.0f, 7.0f};
    int64_t fx[3] = {0, 0, 0}, two = 2, three = 3;
    axon_tensor_t tfo = kc_tensor(fo, AXON_FLOAT32, 1, &two, NULL), tfs = kc_tensor(fs, AXON_FLOAT32, 1, &three, NULL);
    axon_tensor_t tfx = kc_tensor(fx, AXON_INT64, 1, &three, NULL);
    CHECK_OK(axon_kernel_scatter_reduce(k.s, AXON_SCATTER_MEAN, &tfo, 0, &tfx, &tfs, 1, AXON_INDEX_DEFAULT));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(fo[0] == 3.5f && fo[1] == 5.0f);
    uint8_t bo[2] = {0, 1}, bs[3] = {1, 1, 0};
    axon_tensor_t tbo = kc_tensor(bo, AXON_BOOL, 1, &two, NULL), tbs = kc_tensor(bs, AXON_BOOL, 1, &three, NULL);
    CHECK_STATUS(axon_kernel_scatter_reduce(k.s, AXON_SCATTER_MEAN, &tbo, 0, &tfx, &tbs, 1, AXON_INDEX_DEFAULT),
                 AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_scatter_reduce(k.s, AXON_SCATTER_NONE, &tfo, 0, &tfx, &tfs, 1, AXON_INDEX_DEFAULT),
                 AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(k.rt);
}

/* repeat_interleave's index vector: zero repeats skipped, int32 and int64, then negative repeats and a total that
 * does not match failing at sync with out untouched. */
static void test_repeat_interleave_lists_each_index_its_count_times(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const int64_t rep64[5] = {2, 0, 3, 1, 0};
    static const int32_t rep32[5] = {2, 0, 3, 1, 0};
    static const int64_t want[6] = {0, 0, 2, 2, 2, 3};
    int64_t out64[6];
    int32_t out32[6];
    const int64_t n = 5, total = 6;
    axon_tensor_t r = kc_tensor((void *)rep64, AXON_INT64, 1, &n, NULL), o = kc_tensor(out64, AXON_INT64, 1, &total, NULL);
    CHECK_OK(axon_kernel_repeat_interleave(k.s, &o, &r));
    axon_tensor_t r32 = kc_tensor((void *)rep32, AXON_INT32, 1, &n, NULL);
    axon_tensor_t o32 = kc_tensor(out32, AXON_INT32, 1, &total, NULL);
    CHECK_OK(axon_kernel_repeat_interleave(k.s, &o32, &r32));
    CHECK_OK(axon_stream_sync(k.s));
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_I64(out64[i], want[i]);
        CHECK_EQ_I64(out32[i], want[i]);
    }
    static const int64_t negative[5] = {2, -1, 3, 1, 1};
    for (int i = 0; i < 6; i++) out64[i] = -7;
    r.data = (void *)negative;
    CHECK_OK(axon_kernel_repeat_interleave(k.s, &o, &r));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("repeats can not be negative (repeats[1] is -1)");
    r.data = (void *)rep64;
    const int64_t short_total = 5;
    axon_tensor_t small = kc_tensor(out64, AXON_INT64, 1, &short_total, NULL);
    CHECK_OK(axon_kernel_repeat_interleave(k.s, &small, &r));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("sum to more than the output size 5");
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(out64[i], -7);
    CHECK_STATUS(axon_kernel_repeat_interleave(k.s, &o32, &r), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("differs from repeats dtype");
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_index_select_matches_reference_for_every_dtype_and_layout);
    RUN(test_repeat_interleave_lists_each_index_its_count_times);
    RUN(test_gather_matches_reference_on_both_dims);
    RUN(test_gather_of_every_element_size_matches_reference_and_names_the_first_bad_index);
    RUN(test_scatter_matches_in_order_reference_for_each_reduction);
    RUN(test_scatter_reduce_without_self_and_index_reduce);
    RUN(test_index_add_scales_by_alpha_and_accumulates_repeats);
    RUN(test_sums_along_the_last_dim_match_the_in_order_reference);
    RUN(test_half_sums_along_either_dim_match_the_in_order_reference);
    RUN(test_embedding_backward_is_deterministic_and_skips_padding);
    RUN(test_out_of_range_index_fails_at_sync_and_in_place_ops_write_nothing);
    RUN(test_masked_fill_broadcasts_the_mask);
    RUN(test_cat_of_one_to_many_inputs_with_empty_strided_and_mixed_dtypes);
    RUN(test_bad_launch_arguments_are_refused);
    return check_report();
}
