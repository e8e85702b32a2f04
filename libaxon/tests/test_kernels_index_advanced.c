/* index_advanced.h's kernels against plain C references: index with one, two and broadcast indices (negative ones
 * wrapping, int32 and int64), index_put plain and accumulating with repeated destinations (bitwise equal to an
 * in-order reference with 1 and 4 threads), nonzero / masked_select / masked_scatter over strided inputs, and bad
 * indices or stale counts failing at sync with nothing written. Buffers are host memory (the kernels take it), so
 * AddressSanitizer sees any access outside them. */
#include <math.h>
#include <stdint.h>

#include "../kernels/dtype.h"
#include "axon/index_advanced.h"
#include "kernels_check.h"

static axon_tensor_t T2(void *p, axon_dtype_t d, int64_t a, int64_t b) {
    const int64_t sz[2] = {a, b};
    return kc_tensor(p, d, 2, sz, NULL);
}

static axon_tensor_t T1(void *p, axon_dtype_t d, int64_t a) {
    const int64_t sz[1] = {a};
    return kc_tensor(p, d, 1, sz, NULL);
}

static uint32_t rng_state = 777;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* x[i, j] for x [R, C], i [4, 1] and j [1, 3] broadcast to [4, 3]: restrided src [4, 3] with 0 strides. */
static void test_index_with_two_broadcast_indices_matches_reference(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.rt);
    enum { R = 5, C = 7 };
    double x[R * C], out[12];
    for (int i = 0; i < R * C; i++) x[i] = i * 1.5;
    int64_t i64[4] = {4, -1, 0, -5};
    int32_t j32[3] = {6, -7, 2};
    axon_tensor_t to = T2(out, AXON_FLOAT64, 4, 3), ts = T2(x, AXON_FLOAT64, 4, 3);
    ts.strides[0] = ts.strides[1] = 0;
    axon_tensor_t idx[2] = {T2(i64, AXON_INT64, 4, 3), T2(j32, AXON_INT32, 4, 3)};
    idx[0].strides[0] = 1, idx[0].strides[1] = 0; /* [4, 1] broadcast along columns */
    idx[1].strides[0] = 0, idx[1].strides[1] = 1; /* [1, 3] broadcast along rows */
    const int64_t sizes[2] = {R, C}, strides[2] = {C, 1};
    CHECK_OK(axon_kernel_index(k.s, &to, &ts, idx, 2, sizes, strides));
    CHECK_OK(axon_stream_sync(k.s));
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++) {
            int64_t r = i64[a] < 0 ? i64[a] + R : i64[a], c = j32[b] < 0 ? j32[b] + C : j32[b];
            CHECK(out[a * 3 + b] == x[r * C + c]);
        }
    axon_runtime_destroy(k.rt);
}

/* x[:, idx] for x [R, C] strided (transposed buffer): the iteration shape is [R, n], src keeps its row stride. */
static void test_index_of_a_transposed_view_matches_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 6, C = 4, N = 5 };
    int16_t buf[R * C], out[R * N];
    for (int i = 0; i < R * C; i++) buf[i] = (int16_t)(rnd() & 0x7fff);
    int64_t id[N] = {3, 0, -1, 2, 2};
    /* x[r, c] = buf[c * R + r] */
    axon_tensor_t to = T2(out, AXON_INT16, R, N), ts = T2(buf, AXON_INT16, R, N);
    ts.strides[0] = 1, ts.strides[1] = 0;
    axon_tensor_t idx = T2(id, AXON_INT64, R, N);
    idx.strides[0] = 0;
    const int64_t sizes[1] = {C}, strides[1] = {R};
    CHECK_OK(axon_kernel_index(k.s, &to, &ts, &idx, 1, sizes, strides));
    CHECK_OK(axon_stream_sync(k.s));
    for (int r = 0; r < R; r++)
        for (int n = 0; n < N; n++) {
            int64_t c = id[n] < 0 ? id[n] + C : id[n];
            CHECK(out[r * N + n] == buf[c * R + r]);
        }
    axon_runtime_destroy(k.rt);
}

/* x.index_put_((i,), v, accumulate) for x [V, D], i [N] with repeats: dst restrided to [N, D] (0 stride at N). */
static void run_put(int threads, int accumulate, float *x, const int64_t *id, const float *v, int V, int D, int N) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.rt);
    axon_tensor_t td = T2(x, AXON_FLOAT32, N, D), tv = T2((void *)v, AXON_FLOAT32, N, D);
    td.strides[0] = 0;
    axon_tensor_t idx = T2((void *)id, AXON_INT64, N, D);
    idx.strides[0] = 1, idx.strides[1] = 0;
    const int64_t sizes[1] = {V}, strides[1] = {D};
    CHECK_OK(axon_kernel_index_put(k.s, &td, &tv, &idx, 1, sizes, strides, accumulate));
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

static void test_index_put_accumulate_is_in_order_and_thread_count_independent(void) {
    enum { V = 7, D = 33, N = 500 };
    static float v[N * D], want[V * D], x1[V * D], x4[V * D];
    static int64_t id[N];
    for (int i = 0; i < N * D; i++) v[i] = (float)((int)(rnd() % 2001) - 1000) / 7.0f;
    for (int i = 0; i < N; i++) id[i] = (int64_t)(rnd() % (2 * V)) - V;
    for (int i = 0; i < V * D; i++) want[i] = x1[i] = x4[i] = (float)i * 0.25f;
    for (int n = 0; n < N; n++) {
        int64_t r = id[n] < 0 ? id[n] + V : id[n];
        for (int d = 0; d < D; d++) want[r * D + d] += v[n * D + d];
    }
    run_put(1, 1, x1, id, v, V, D, N);
    run_put(4, 1, x4, id, v, V, D, N);
    for (int i = 0; i < V * D; i++) {
        CHECK(x1[i] == want[i]);
        CHECK(memcmp(&x1[i], &x4[i], sizeof(float)) == 0);
    }
    /* Without accumulate, the last write in order wins. */
    for (int i = 0; i < V * D; i++) x1[i] = -1.0f;
    run_put(4, 0, x1, id, v, V, D, N);
    for (int r = 0; r < V; r++) {
        int last = -1;
        for (int n = 0; n < N; n++)
            if ((id[n] < 0 ? id[n] + V : id[n]) == r) last = n;
        for (int d = 0; d < D; d++) CHECK(x1[r * D + d] == (last < 0 ? -1.0f : v[last * D + d]));
    }
}

/* float16 and bfloat16 x.index_put_((i,), v, accumulate=True) with repeats, into dense rows (a vector loop) and
 * rows of stride 2 (one element at a time), on 1 and 4 threads: each update is added in order and rounded to the
 * half type, as torch CPU's += does; the reference adds in float64 and rounds (the same value). */
static void test_index_put_accumulate_rounds_each_half_update_in_order(void) {
    enum { V = 5, D = 40, N = 300 };
    static uint16_t v[N * D], x[2 * V * D], want[2 * V * D];
    static int64_t id[N];
    for (int i = 0; i < N; i++) id[i] = (int64_t)(rnd() % V);
    const axon_dtype_t dts[2] = {AXON_BFLOAT16, AXON_FLOAT16};
    for (int di = 0; di < 2; di++)
        for (int step = 1; step <= 2; step++)
            for (int threads = 1; threads <= 4; threads += 3) {
                const int bf = dts[di] == AXON_BFLOAT16;
                for (int i = 0; i < N * D; i++) {
                    const float f = (float)((int)(rnd() % 2001) - 1000) / 37.0f;
                    v[i] = bf ? axon_f32_to_bf16(f) : axon_f32_to_f16(f);
                }
                for (int i = 0; i < 2 * V * D; i++)
                    x[i] = want[i] = bf ? axon_f32_to_bf16((float)i) : axon_f32_to_f16((float)i);
                for (int n = 0; n < N; n++)
                    for (int d = 0; d < D; d++) {
                        uint16_t *w = &want[id[n] * D * step + d * step];
                        const double a = bf ? axon_bf16_to_f32(*w) : axon_f16_to_f32(*w);
                        const double b = bf ? axon_bf16_to_f32(v[n * D + d]) : axon_f16_to_f32(v[n * D + d]);
                        *w = bf ? axon_f64_to_bf16(a + b) : axon_f64_to_f16(a + b);
                    }
                kc_dev_t k = kc_open(threads);
                REQUIRE(k.rt);
                axon_tensor_t td = T2(x, dts[di], N, D), tv = T2(v, dts[di], N, D);
                td.strides[0] = 0, td.strides[1] = step;
                axon_tensor_t idx = T2(id, AXON_INT64, N, D);
                idx.strides[0] = 1, idx.strides[1] = 0;
                const int64_t sizes[1] = {V}, strides[1] = {(int64_t)D * step};
                CHECK_OK(axon_kernel_index_put(k.s, &td, &tv, &idx, 1, sizes, strides, 1));
                CHECK_OK(axon_stream_sync(k.s));
                axon_runtime_destroy(k.rt);
                const int64_t bad = kc_first_diff(x, want, sizeof x);
                if (bad >= 0)
                    fprintf(stderr, "  %s step %d threads %d: first wrong byte %lld\n", axon_dtype_name(dts[di]), step,
                            threads, (long long)bad);
                CHECK_EQ_I64(bad, -1);
            }
}

static void test_index_put_accumulate_bool_is_or_and_int8_wraps(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    uint8_t b[3] = {0, 1, 0}, bv[4] = {1, 1, 0, 0};
    int8_t c[3] = {120, 0, -128}, cv[4] = {10, 5, -1, 3};
    int64_t id[4] = {0, 0, 1, 2};
    axon_tensor_t idx = T1(id, AXON_INT64, 4);
    const int64_t sizes[1] = {3}, strides[1] = {1};
    axon_tensor_t tb = T1(b, AXON_BOOL, 4), tbv = T1(bv, AXON_BOOL, 4);
    tb.strides[0] = 0;
    CHECK_OK(axon_kernel_index_put(k.s, &tb, &tbv, &idx, 1, sizes, strides, 1));
    axon_tensor_t tc = T1(c, AXON_INT8, 4), tcv = T1(cv, AXON_INT8, 4);
    tc.strides[0] = 0;
    CHECK_OK(axon_kernel_index_put(k.s, &tc, &tcv, &idx, 1, sizes, strides, 1));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK(b[0] == 1 && b[1] == 1 && b[2] == 0);
    CHECK(c[0] == (int8_t)(120 + 15) && c[1] == -1 && c[2] == (int8_t)(-128 + 3));
    axon_runtime_destroy(k.rt);
}

static void test_out_of_range_index_fails_at_sync_and_writes_nothing(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float x[10] = {0}, out[3] = {-1, -1, -1}, v[3] = {1, 2, 3};
    int64_t bad[3] = {1, 10, 0}, neg[3] = {0, -11, 2};
    axon_tensor_t to = T1(out, AXON_FLOAT32, 3), ts = T1(x, AXON_FLOAT32, 3), tv = T1(v, AXON_FLOAT32, 3);
    ts.strides[0] = 0;
    axon_tensor_t ib = T1(bad, AXON_INT64, 3), in = T1(neg, AXON_INT64, 3);
    const int64_t sizes[1] = {10}, strides[1] = {1};
    CHECK_OK(axon_kernel_index(k.s, &to, &ts, &ib, 1, sizes, strides));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index(): index 10 is out of bounds for dimension 0 with size 10");
    for (int i = 0; i < 3; i++) CHECK(out[i] == -1.0f);
    CHECK_OK(axon_kernel_index_put(k.s, &ts, &tv, &in, 1, sizes, strides, 1));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_put_(): index -11 is out of bounds for dimension 0 with size 10");
    for (int i = 0; i < 10; i++) CHECK(x[i] == 0.0f);
    axon_runtime_destroy(k.rt);
}

static void test_nonzero_and_masked_ops_follow_row_major_order_of_strided_inputs(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    enum { R = 70, C = 150 };                    /* > one block of 4096 elements */
    static float buf[R * C];
    static uint8_t mask[R * C];
    static int64_t coords[R * C * 2];
    static float sel[R * C], src[R * C];
    int64_t want = 0;
    for (int i = 0; i < R * C; i++) {
        uint32_t r = rnd() % 4;
        buf[i] = r == 0 ? 0.0f : r == 1 ? -0.0f : r == 2 ? NAN : (float)i;
        mask[i] = (uint8_t)(rnd() % 3 == 0);
        src[i] = (float)-i;
    }
    /* in = buf viewed transposed: in[a, b] = buf[b * R + a], shape [R, C]... with buf laid out [C, R]. */
    axon_tensor_t tin = T2(buf, AXON_FLOAT32, R, C);
    tin.strides[0] = 1, tin.strides[1] = R;
    for (int a = 0; a < R; a++)
        for (int b = 0; b < C; b++) want += !(buf[b * R + a] == 0.0f);
    int64_t count = -1;
    axon_tensor_t tcount = T1(&count, AXON_INT64, 1);
    CHECK_OK(axon_kernel_count_nonzero(k.s, &tcount, &tin));
    CHECK_OK(axon_stream_sync(k.s));
    CHECK_EQ_I64(count, want);
    axon_tensor_t tc = T2(coords, AXON_INT64, count, 2);
    CHECK_OK(axon_kernel_nonzero(k.s, &tc, &tin));
    CHECK_OK(axon_stream_sync(k.s));
    int64_t j = 0;
    for (int a = 0; a < R; a++)
        for (int b = 0; b < C; b++)
            if (!(buf[b * R + a] == 0.0f)) {
                CHECK(coords[2 * j] == a && coords[2 * j + 1] == b);
                j++;
            }
    /* Too small an output: the command fails, out untouched. */
    int64_t small[4] = {-9, -9, -9, -9};
    axon_tensor_t ts = T2(small, AXON_INT64, 2, 2);
    CHECK_OK(axon_kernel_nonzero(k.s, &ts, &tin));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("nonzero()");
    for (int i = 0; i < 4; i++) CHECK(small[i] == -9);

    axon_tensor_t tm = T2(mask, AXON_BOOL, R, C);
    CHECK_OK(axon_kernel_count_nonzero(k.s, &tcount, &tm));
    CHECK_OK(axon_stream_sync(k.s));
    axon_tensor_t tsel = T1(sel, AXON_FLOAT32, count);
    CHECK_OK(axon_kernel_masked_select(k.s, &tsel, &tin, &tm));
    CHECK_OK(axon_stream_sync(k.s));
    j = 0;
    for (int a = 0; a < R; a++)
        for (int b = 0; b < C; b++)
            if (mask[a * C + b]) {
                float e = buf[b * R + a];
                CHECK(memcmp(&sel[j], &e, sizeof e) == 0);
                j++;
            }
    CHECK_EQ_I64(j, count);
    /* masked_scatter writes source in order into the selected places of in. */
    axon_tensor_t tsrc = T1(src, AXON_FLOAT32, count);
    CHECK_OK(axon_kernel_masked_scatter(k.s, &tin, &tm, &tsrc));
    CHECK_OK(axon_stream_sync(k.s));
    j = 0;
    for (int a = 0; a < R; a++)
        for (int b = 0; b < C; b++)
            if (mask[a * C + b]) CHECK(buf[b * R + a] == src[j++]);
    /* A source one short fails and writes nothing. */
    tsrc.sizes[0] = count - 1;
    buf[0] = 12345.0f;
    CHECK_OK(axon_kernel_masked_scatter(k.s, &tin, &tm, &tsrc));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("masked_scatter_(): Number of elements of source < number of ones in mask");
    CHECK(buf[0] == 12345.0f);
    axon_runtime_destroy(k.rt);
}

/* nonzero_static: the first rows of nonzero's coordinates across blocks, a cut count, and the fill past it. */
static void test_nonzero_static_keeps_the_first_rows_and_fills_the_rest(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    enum { N = 20000 };                          /* several blocks of 4096 */
    static float buf[N];
    static int64_t all[N], part[2 * N];
    int64_t count = 0;
    for (int i = 0; i < N; i++) {
        buf[i] = rnd() % 3 == 0 ? (float)i : 0.0f;
        if (buf[i] != 0.0f) all[count++] = i;
    }
    const int64_t rows[3] = {count / 2, count, count + 7};
    for (int c = 0; c < 3; c++) {
        for (int64_t i = 0; i < 2 * N; i++) part[i] = 12345;
        axon_tensor_t tin = T1(buf, AXON_FLOAT32, N), tout = T2(part, AXON_INT64, rows[c], 1);
        CHECK_OK(axon_kernel_nonzero_static(k.s, &tout, &tin, -3));
        CHECK_OK(axon_stream_sync(k.s));
        int64_t bad = 0;
        for (int64_t r = 0; r < rows[c]; r++) bad += part[r] != (r < count ? all[r] : -3);
        bad += part[rows[c]] != 12345;           /* nothing written past the rows */
        CHECK_EQ_I64(bad, 0);
    }
    /* an empty input fills every row */
    int64_t two[4] = {0, 0, 0, 0};
    axon_tensor_t empty = T2(buf, AXON_FLOAT32, 0, 2), t2 = T2(two, AXON_INT64, 2, 2);
    CHECK_OK(axon_kernel_nonzero_static(k.s, &t2, &empty, 9));
    CHECK_OK(axon_stream_sync(k.s));
    for (int i = 0; i < 4; i++) CHECK(two[i] == 9);
    axon_tensor_t wrong = T2(two, AXON_INT64, 2, 1);
    CHECK_STATUS(axon_kernel_nonzero_static(k.s, &wrong, &empty, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("nonzero_static(): out");
    axon_runtime_destroy(k.rt);
}

static void test_bad_launch_arguments_are_refused(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float x[6], out[6];
    int64_t id[6] = {0};
    double f[6];
    axon_tensor_t to = T2(out, AXON_FLOAT32, 2, 3), ts = T2(x, AXON_FLOAT32, 2, 3), ti = T2(id, AXON_INT64, 2, 3);
    axon_tensor_t tf = T2(f, AXON_FLOAT64, 2, 3), tw = T2(id, AXON_INT64, 3, 2);
    const int64_t sizes[1] = {2}, strides[1] = {3};
    CHECK_STATUS(axon_kernel_index(k.s, &to, &ts, &ti, 0, sizes, strides), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_index(k.s, &to, &ts, NULL, 1, sizes, strides), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_index(k.s, &to, &ts, &tf, 1, sizes, strides), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("int32/int64");
    CHECK_STATUS(axon_kernel_index(k.s, &to, &tf, &ti, 1, sizes, strides), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("differ");
    CHECK_STATUS(axon_kernel_index(k.s, &to, &ts, &tw, 1, sizes, strides), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("iteration shape");
    /* index_put: an index that varies where dst moves would let two threads meet. */
    CHECK_STATUS(axon_kernel_index_put(k.s, &ts, &to, &ti, 1, sizes, strides, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("varies along dimension");
    int64_t c2[2];
    axon_tensor_t tc2 = T1(c2, AXON_INT64, 2), tco = T2(c2, AXON_INT64, 1, 3);
    CHECK_STATUS(axon_kernel_count_nonzero(k.s, &tc2, &ts), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_nonzero(k.s, &tco, &ts), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_masked_select(k.s, &to, &ts, &ts), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("bool or uint8");
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_index_with_two_broadcast_indices_matches_reference);
    RUN(test_index_of_a_transposed_view_matches_reference);
    RUN(test_index_put_accumulate_is_in_order_and_thread_count_independent);
    RUN(test_index_put_accumulate_bool_is_or_and_int8_wraps);
    RUN(test_index_put_accumulate_rounds_each_half_update_in_order);
    RUN(test_out_of_range_index_fails_at_sync_and_writes_nothing);
    RUN(test_nonzero_and_masked_ops_follow_row_major_order_of_strided_inputs);
    RUN(test_nonzero_static_keeps_the_first_rows_and_fills_the_rest);
    RUN(test_bad_launch_arguments_are_refused);
    return check_report();
}
