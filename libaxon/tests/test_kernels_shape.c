/* shape.h's kernels against plain C references: tril/triu for every diagonal, in place and out of place over a
 * strided batch; reflect, replicate and circular pads of 1 to 3 dimensions forward, and their backward bitwise equal
 * to an in-order reference with 1 and 4 threads; pads with no source refused at launch; unfold's backward against a
 * scatter of its windows; tril/triu indices against a brute-force walk. */
#include <stdint.h>
#include <string.h>

#include "axon/shape.h"
#include "kernels_check.h"

static uint32_t rng_state = 4242;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* Every diagonal through a [3, 4, 6] tensor and both far ends of int64, out of place and in place, from a view with
 * its batch dimension last in memory (element by element) and from a contiguous one (whole pieces of rows). */
static void test_triangles_match_reference_for_every_diagonal(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.rt);
    enum { B = 3, R = 4, C = 6 };
    int32_t in[B * R * C], out[B * R * C], inplace[B * R * C];
    for (int i = 0; i < B * R * C; i++) in[i] = (int32_t)rnd() | 1;
    const int64_t sz[3] = {B, R, C};
    int64_t diags[15] = {INT64_MIN, INT64_MAX};
    for (int i = 2; i < 15; i++) diags[i] = i - 7; /* -5 .. 7 */
    for (int contiguous = 0; contiguous < 2; contiguous++)
        for (int upper = 0; upper < 2; upper++)
            for (int di = 0; di < 15; di++) {
                const int64_t diag = diags[di];
                /* batch last: in[b, r, c] = buf[(r * C + c) * B + b]; contiguous: buf[(b * R + r) * C + c] */
                const int64_t st_last[3] = {1, C * B, B}, st_rows[3] = {R * C, C, 1};
                const int64_t *st = contiguous ? st_rows : st_last;
                axon_tensor_t ti = kc_tensor(in, AXON_INT32, 3, sz, st), to = kc_tensor(out, AXON_INT32, 3, sz, NULL);
                CHECK_OK(axon_kernel_triangle(k.s, &to, &ti, diag, upper));
                memcpy(inplace, in, sizeof in);
                axon_tensor_t tp = kc_tensor(inplace, AXON_INT32, 3, sz, st);
                CHECK_OK(axon_kernel_triangle(k.s, &tp, &tp, diag, upper));
                CHECK_OK(axon_stream_sync(k.s));
                int bad = 0;
                for (int b = 0; b < B; b++)
                    for (int r = 0; r < R; r++)
                        for (int c = 0; c < C; c++) {
                            int keep = upper ? (diag <= c - r) : (c - r <= diag);
                            const int at = contiguous ? (b * R + r) * C + c : (r * C + c) * B + b;
                            bad += out[(b * R + r) * C + c] != (keep ? in[at] : 0);
                            bad += inplace[at] != (keep ? in[at] : 0);
                        }
                if (bad) fprintf(stderr, "  %s diag %lld contiguous %d\n", upper ? "triu" : "tril", (long long)diag,
                                 contiguous);
                CHECK_EQ_I64(bad, 0);
            }
    axon_runtime_destroy(k.rt);
}

/* Every (rows, cols, offset) of small sizes and offsets past both corners (and near INT64's ends): the count and the
 * positions against a walk over the matrix, into an int64 [2, n] and an int32 one stored column-major. */
static void test_triangle_indices_list_each_side_in_row_major_order(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const int64_t offsets[] = {-7, -3, -1, 0, 1, 2, 5, 9, INT64_MIN / 2, INT64_MAX / 2};
    enum { MAXN = 64 };
    int64_t want[2][MAXN], got64[2 * MAXN];
    int32_t got32[2 * MAXN];
    for (int upper = 0; upper < 2; upper++)
        for (int64_t rows = 0; rows <= 6; rows++)
            for (int64_t cols = 0; cols <= 7; cols++)
                for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
                    const int64_t off = offsets[oi];
                    int64_t n = 0;
                    for (int64_t r = 0; r < rows; r++)
                        for (int64_t c = 0; c < cols; c++) {
                            const int keep = upper ? c - r >= off : c - r <= off;
                            if (keep) want[0][n] = r, want[1][n] = c, n++;
                        }
                    CHECK(axon_triangle_indices_count(rows, cols, off, upper) == n);
                    const int64_t sz[2] = {2, n}, cm[2] = {1, 2};
                    axon_tensor_t t64 = kc_tensor(got64, AXON_INT64, 2, sz, NULL);
                    axon_tensor_t t32 = kc_tensor(got32, AXON_INT32, 2, sz, cm);
                    memset(got64, 0xff, sizeof got64);
                    memset(got32, 0xff, sizeof got32);
                    CHECK_OK(axon_kernel_triangle_indices(k.s, &t64, rows, cols, off, upper));
                    CHECK_OK(axon_kernel_triangle_indices(k.s, &t32, rows, cols, off, upper));
                    CHECK_OK(axon_stream_sync(k.s));
                    int bad = 0;
                    for (int64_t i = 0; i < n; i++)
                        bad |= got64[i] != want[0][i] || got64[n + i] != want[1][i] || got32[2 * i] != want[0][i] ||
                               got32[2 * i + 1] != want[1][i];
                    if (bad) {
                        fprintf(stderr, "  %s_indices(%lld, %lld, %lld) differs\n", upper ? "triu" : "tril",
                                (long long)rows, (long long)cols, (long long)off);
                        check_failures_in_test++;
                    }
                }
    const int64_t wrong[2] = {2, 5}, sz[2] = {2, 6};
    axon_tensor_t tw = kc_tensor(got64, AXON_INT64, 2, wrong, NULL), tf = kc_tensor(got64, AXON_FLOAT64, 2, sz, NULL);
    CHECK_STATUS(axon_kernel_triangle_indices(k.s, &tw, 3, 3, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("[2, 6]");
    CHECK_STATUS(axon_kernel_triangle_indices(k.s, &tf, 3, 3, 0, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("float64");
    CHECK_STATUS(axon_kernel_triangle_indices(k.s, &tw, -1, 3, 0, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("triu_indices");
    axon_runtime_destroy(k.rt);
}

static int64_t ref_source(axon_pad_mode_t m, int64_t x, int64_t n) {
    if (m == AXON_PAD_REFLECT) return x < 0 ? -x : x >= n ? 2 * (n - 1) - x : x;
    if (m == AXON_PAD_REPLICATE) return x < 0 ? 0 : x >= n ? n - 1 : x;
    return ((x % n) + n) % n;
}

/* [2, H, W] padded over its last two dims, forward against the reference, backward in order with 1 and 4 threads. */
static void test_pads_of_two_dims_forward_and_backward_match_reference(void) {
    enum { P = 2, H = 5, W = 4 };
    const int64_t before[2] = {3, -1}, after[2] = {2, 3};
    const int64_t OH = H + before[0] + after[0], OW = W + before[1] + after[1];
    static double in[P * H * W], out[P * 10 * 10], go[P * 10 * 10], gi[2][P * H * W], want[P * H * W];
    for (int i = 0; i < P * H * W; i++) in[i] = (double)(rnd() % 1000) / 8.0;
    for (int i = 0; i < P * OH * OW; i++) go[i] = (double)(rnd() % 1000) / 3.0;
    for (axon_pad_mode_t m = 0; m < AXON_PAD_MODE_COUNT; m++) {
        const int64_t bh = m == AXON_PAD_REFLECT ? 3 : before[0];
        const int64_t b2[2] = {bh, before[1]};
        for (int t = 0; t < 2; t++) {
            kc_dev_t k = kc_open(t ? 4 : 1);
            REQUIRE(k.rt);
            const int64_t isz[3] = {P, H, W}, osz[3] = {P, OH, OW};
            axon_tensor_t ti = kc_tensor(in, AXON_FLOAT64, 3, isz, NULL), to = kc_tensor(out, AXON_FLOAT64, 3, osz, NULL);
            axon_tensor_t tgi = kc_tensor(gi[t], AXON_FLOAT64, 3, isz, NULL);
            axon_tensor_t tgo = kc_tensor(go, AXON_FLOAT64, 3, osz, NULL);
            CHECK_OK(axon_kernel_pad(k.s, m, &to, &ti, 2, b2));
            CHECK_OK(axon_kernel_pad_backward(k.s, m, &tgi, &tgo, 2, b2));
            CHECK_OK(axon_stream_sync(k.s));
            memset(want, 0, sizeof want);
            for (int p = 0; p < P; p++)
                for (int64_t y = 0; y < OH; y++)
                    for (int64_t x = 0; x < OW; x++) {
                        int64_t sy = ref_source(m, y - b2[0], H), sx = ref_source(m, x - b2[1], W);
                        CHECK(out[(p * OH + y) * OW + x] == in[(p * H + sy) * W + sx]);
                        want[(p * H + sy) * W + sx] += go[(p * OH + y) * OW + x];
                    }
            for (int i = 0; i < P * H * W; i++) CHECK(memcmp(&gi[t][i], &want[i], sizeof(double)) == 0);
            axon_runtime_destroy(k.rt);
        }
    }
}

static void test_pad_of_one_and_three_dims_with_float16_and_complex(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    /* 1-d reflect on complex64 pairs: [1, 6] -> [1, 6 + 2 + 5] */
    float c[12], co[26];
    for (int i = 0; i < 12; i++) c[i] = (float)i;
    const int64_t isz[2] = {1, 6}, osz[2] = {1, 13}, b1[1] = {2};
    axon_tensor_t ti = kc_tensor(c, AXON_COMPLEX64, 2, isz, NULL), to = kc_tensor(co, AXON_COMPLEX64, 2, osz, NULL);
    CHECK_OK(axon_kernel_pad(k.s, AXON_PAD_REFLECT, &to, &ti, 1, b1));
    /* 3-d replicate on float16 bits: [2, 2, 3] -> [3, 4, 4] */
    uint16_t h[12], ho[48];
    for (int i = 0; i < 12; i++) h[i] = (uint16_t)(0x3c00 + i);
    const int64_t hs[3] = {2, 2, 3}, hos[3] = {3, 4, 4}, b3[3] = {1, 0, 1};
    axon_tensor_t th = kc_tensor(h, AXON_FLOAT16, 3, hs, NULL), tho = kc_tensor(ho, AXON_FLOAT16, 3, hos, NULL);
    CHECK_OK(axon_kernel_pad(k.s, AXON_PAD_REPLICATE, &tho, &th, 3, b3));
    CHECK_OK(axon_stream_sync(k.s));
    for (int x = 0; x < 13; x++) {
        int64_t s = ref_source(AXON_PAD_REFLECT, x - 2, 6);
        CHECK(co[2 * x] == c[2 * s] && co[2 * x + 1] == c[2 * s + 1]);
    }
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++) {
                int64_t sz = ref_source(AXON_PAD_REPLICATE, z - 1, 2), sy = ref_source(AXON_PAD_REPLICATE, y, 2);
                int64_t sx = ref_source(AXON_PAD_REPLICATE, x - 1, 3);
                CHECK(ho[(z * 4 + y) * 4 + x] == h[(sz * 2 + sy) * 3 + sx]);
            }
    axon_runtime_destroy(k.rt);
}

static void test_bad_pad_and_triangle_arguments_are_refused(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float in[8], out[64];
    const int64_t isz[2] = {2, 4}, osz[2] = {2, 12}, b[1] = {5};
    axon_tensor_t ti = kc_tensor(in, AXON_FLOAT32, 2, isz, NULL), to = kc_tensor(out, AXON_FLOAT32, 2, osz, NULL);
    memset(in, 0, sizeof in);
    /* reflect needs pads < 4, circular <= 4 */
    CHECK_STATUS(axon_kernel_pad(k.s, AXON_PAD_REFLECT, &to, &ti, 1, b), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("has positions with no source");
    CHECK_STATUS(axon_kernel_pad(k.s, AXON_PAD_CIRCULAR, &to, &ti, 1, b), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_kernel_pad(k.s, AXON_PAD_REPLICATE, &to, &ti, 1, b));
    /* replicate cropping past the input: before -6 on 4 elements, 2 outputs, each the last element */
    {
        float crop_in[4] = {1, 2, 3, 4}, crop_out[2] = {0, 0};
        const int64_t cin[1] = {4}, cout[1] = {2}, cb[1] = {-6};
        axon_tensor_t tci = kc_tensor(crop_in, AXON_FLOAT32, 1, cin, NULL);
        axon_tensor_t tco = kc_tensor(crop_out, AXON_FLOAT32, 1, cout, NULL);
        CHECK_OK(axon_kernel_pad(k.s, AXON_PAD_REPLICATE, &tco, &tci, 1, cb));
        CHECK_OK(axon_stream_sync(k.s));
        CHECK(crop_out[0] == 4 && crop_out[1] == 4);
    }
    CHECK_STATUS(axon_kernel_pad(k.s, AXON_PAD_MODE_COUNT, &to, &ti, 1, b), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_pad(k.s, AXON_PAD_REPLICATE, &to, &ti, 3, b), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_pad(k.s, AXON_PAD_REPLICATE, &to, &ti, 1, NULL), AXON_ERROR_INVALID_ARG);
    int32_t gi[8];
    axon_tensor_t tg = kc_tensor(gi, AXON_INT32, 2, isz, NULL);
    CHECK_STATUS(axon_kernel_pad_backward(k.s, AXON_PAD_REPLICATE, &tg, &to, 1, b), AXON_ERROR_UNSUPPORTED);
    const int64_t one[1] = {8};
    axon_tensor_t t1 = kc_tensor(in, AXON_FLOAT32, 1, one, NULL);
    CHECK_STATUS(axon_kernel_triangle(k.s, &t1, &t1, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("at least 2 dimensions");
    CHECK_STATUS(axon_kernel_triangle(k.s, &tg, &ti, 0, 1), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(strcmp(axon_pad_mode_name(AXON_PAD_CIRCULAR), "circular") == 0);
    CHECK(strcmp(axon_pad_mode_name((axon_pad_mode_t)99), "invalid") == 0);
    axon_runtime_destroy(k.rt);
}

/* unfold's backward on [outer 2, len, inner 3] for overlapping windows (step < size), gaps (step > size), one
 * window and none (len < size), in float64 and float32, against a scatter of the windows in order. */
static void test_unfold_backward_sums_each_elements_windows(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    /* len, size, step; the last two span several of the kernel's 256-element blocks */
    static const int64_t cases[][3] = {{11, 4, 2}, {11, 2, 3}, {5, 5, 1},  {3, 4, 1},
                                       {12, 3, 3}, {600, 7, 3}, {530, 2, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int f32 = 0; f32 < 2; f32++) {
            const int64_t len = cases[c][0], size = cases[c][1], step = cases[c][2], outer = 2, inner = 3;
            const int64_t windows = len >= size ? (len - size) / step + 1 : 0, ng = outer * windows * inner * size;
            static double g[2 * 198 * 3 * 7], want[2 * 600 * 3];
            static unsigned char gb[sizeof g], ob[sizeof want];
            memset(want, 0, sizeof want);
            for (int64_t e = 0; e < ng; e++) {
                g[e] = (double)((e * 37) % 19) - 9.25;
                const int64_t q = e % size, i = e / size % inner, w = e / (size * inner) % windows,
                              o = e / (size * inner * windows);
                want[(o * len + w * step + q) * inner + i] += g[e];
                if (f32) {
                    float v = (float)g[e];
                    memcpy(gb + e * 4, &v, 4);
                } else {
                    memcpy(gb + e * 8, &g[e], 8);
                }
            }
            const axon_dtype_t d = f32 ? AXON_FLOAT32 : AXON_FLOAT64;
            const size_t es = axon_dtype_size(d);
            void *dg = kc_upload(&k, gb, (size_t)(ng ? ng : 1) * es), *dout = kc_upload(&k, NULL, sizeof want);
            const int64_t gs[4] = {outer, windows, inner, size}, os[3] = {outer, len, inner};
            axon_tensor_t tg = kc_tensor(dg, d, 4, gs, NULL), to = kc_tensor(dout, d, 3, os, NULL);
            CHECK_OK(axon_kernel_unfold_backward(k.s, &to, &tg, size, step));
            REQUIRE(kc_download(&k, ob, dout, (size_t)(outer * len * inner) * es));
            int bad = 0;
            for (int64_t e = 0; e < outer * len * inner; e++) {
                double got;
                if (f32) {
                    float v;
                    memcpy(&v, ob + e * 4, 4);
                    got = v;
                } else {
                    memcpy(&got, ob + e * 8, 8);
                }
                bad += got != (f32 ? (double)(float)want[e] : want[e]);
            }
            CHECK_EQ_I64(bad, 0);
            if (c == 0 && !f32) { /* a grad that does not hold the windows, and an integer dtype */
                CHECK_STATUS(axon_kernel_unfold_backward(k.s, &to, &tg, size, step + 1), AXON_ERROR_INVALID_ARG);
                CHECK_MSG("does not hold the windows of size 4 and step 3");
                axon_tensor_t ti = to, tgi = tg;
                ti.dtype = tgi.dtype = AXON_INT64;
                CHECK_STATUS(axon_kernel_unfold_backward(k.s, &ti, &tgi, size, step), AXON_ERROR_UNSUPPORTED);
            }
            axon_mem_free(k.dev, dg);
            axon_mem_free(k.dev, dout);
        }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_triangles_match_reference_for_every_diagonal);
    RUN(test_pads_of_two_dims_forward_and_backward_match_reference);
    RUN(test_pad_of_one_and_three_dims_with_float16_and_complex);
    RUN(test_bad_pad_and_triangle_arguments_are_refused);
    RUN(test_unfold_backward_sums_each_elements_windows);
    RUN(test_triangle_indices_list_each_side_in_row_major_order);
    return check_report();
}
