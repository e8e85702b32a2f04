/* sort, topk, kthvalue and mode (axon/sort.h) against a stable insertion sort written out here, over float and integer
 * dtypes with repeated values, NaN, infinities and -0.0, along first, middle and last dims; int64 extremes keep
 * their order; results are identical for 1 and 4 threads; bad descriptors fail at launch with messages. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "axon/sort.h"
#include "kernels_check.h"

static const axon_dtype_t st_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_INT8, AXON_UINT8, AXON_INT32, AXON_INT64};

/* Store v (exact in every dtype used) as element i of raw. */
static void st_put(void *raw, axon_dtype_t dt, int64_t i, double v) {
    switch (dt) {
    case AXON_FLOAT32: ((float *)raw)[i] = (float)v; break;
    case AXON_FLOAT64: ((double *)raw)[i] = v; break;
    case AXON_INT8: ((int8_t *)raw)[i] = (int8_t)v; break;
    case AXON_UINT8: ((uint8_t *)raw)[i] = (uint8_t)v; break;
    case AXON_INT32: ((int32_t *)raw)[i] = (int32_t)v; break;
    default: ((int64_t *)raw)[i] = (int64_t)v; break;
    }
}

/* x < y with NaN largest. */
static int st_less(double x, double y) {
    if (isnan(x)) return 0;
    return isnan(y) || x < y;
}

/* Stable order of row (n values, stride) ascending or descending: ord[0..n). */
static void st_order(const double *v, int64_t stride, int64_t n, int desc, int64_t *ord) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        for (; j > 0; j--) {
            double a = v[i * stride], b = v[ord[j - 1] * stride];
            if (!(desc ? st_less(b, a) : st_less(a, b))) break;
            ord[j] = ord[j - 1];
        }
        ord[j] = i;
    }
}

typedef struct st_case {
    int64_t outer, len, inner;
} st_case_t;

/* Runs op (0 sort asc, 1 sort desc, 2 topk largest, 3 topk smallest, 4 kthvalue, 5 median, 6 nanmedian, whose
 * first row of a short case is all NaN, 7 mode) on one case, returns mismatches. */
static int check_op(const kc_dev_t *k, axon_dtype_t dt, st_case_t c, int op, int64_t kk) {
    const int64_t numel = c.outer * c.len * c.inner;
    const int64_t out_len = op < 2 ? c.len : op < 4 ? kk : 1, onumel = c.outer * out_len * c.inner;
    const int floating = dt == AXON_FLOAT32 || dt == AXON_FLOAT64;
    const size_t es = axon_dtype_size(dt);
    double *v = malloc((size_t)numel * sizeof *v);
    char *raw = malloc((size_t)numel * es), *got = malloc((size_t)(onumel ? onumel : 1) * es);
    int64_t *gi = malloc((size_t)(onumel ? onumel : 1) * sizeof *gi), *ord = malloc((size_t)c.len * sizeof *ord);
    unsigned seed = (unsigned)(numel * 17 + op);
    for (int64_t i = 0; i < numel; i++) {
        seed = seed * 1103515245u + 12345u;
        int r = (int)((seed >> 16) % 23);
        v[i] = dt == AXON_UINT8 ? r * 11 : r - 11; /* many repeats */
        if (floating && r == 0) v[i] = NAN;
        if (floating && r == 1) v[i] = INFINITY;
        if (floating && r == 2) v[i] = -INFINITY;
        if (floating && r == 3) v[i] = -0.0;
        if (floating && r == 4) v[i] = 0.5;
        if (op == 6 && floating && c.len <= 40 && i % c.inner == 0 && i < c.len * c.inner) v[i] = NAN;
        st_put(raw, dt, i, v[i]);
    }
    const int64_t sin[3] = {c.outer, c.len, c.inner}, sout[3] = {c.outer, out_len, c.inner}, sw[1] = {
        (int64_t)axon_sort_workspace_size(numel)};
    void *din = kc_upload(k, raw, (size_t)numel * es), *dv = kc_upload(k, NULL, (size_t)(onumel ? onumel : 1) * es);
    void *di = kc_upload(k, NULL, (size_t)(onumel ? onumel : 1) * 8), *dw = kc_upload(k, NULL, (size_t)sw[0]);
    axon_tensor_t tin = kc_tensor(din, dt, 3, sin, NULL), tv = kc_tensor(dv, dt, 3, sout, NULL);
    axon_tensor_t ti = kc_tensor(di, AXON_INT64, 3, sout, NULL), tw = kc_tensor(dw, AXON_UINT8, 1, sw, NULL);
    axon_status_t st = op < 2   ? axon_kernel_sort(k->s, &tv, &ti, &tin, 1, op == 1, &tw)
                       : op < 4 ? axon_kernel_topk(k->s, &tv, &ti, &tin, -2, kk, op == 2, &tw)
                       : op < 6 ? axon_kernel_kthvalue(k->s, &tv, &ti, &tin, 1, kk, op == 5, &tw)
                       : op < 7 ? axon_kernel_nanmedian(k->s, &tv, &ti, &tin, 1, &tw)
                                : axon_kernel_mode(k->s, &tv, &ti, &tin, 1, &tw);
    int bad = st != AXON_OK;
    bad += !kc_download(k, got, dv, (size_t)onumel * es) || !kc_download(k, gi, di, (size_t)onumel * 8);
    for (int64_t o = 0; !bad && o < c.outer; o++)
        for (int64_t i = 0; i < c.inner; i++) {
            const double *row = v + o * c.len * c.inner + i;
            st_order(row, c.inner, c.len, op == 1 || op == 2, ord);
            int64_t want_first = -1, valid = c.len;
            for (int64_t j = 0; op == 6 && j < c.len; j++) valid -= isnan(row[j * c.inner]);
            if (op == 6) kk = valid > 0 ? (valid - 1) / 2 + 1 : 1; /* NaNs order last, by index among themselves */
            if (op == 5 && floating)
                for (int64_t j = 0; j < c.len && want_first < 0; j++)
                    if (isnan(row[j * c.inner])) want_first = j;
            /* mode: PyTorch's loop over the stable order, whose runs end where neighbours differ (== compares: -0.0
             * equals 0.0, a NaN equals nothing); the last element of the first longest run. */
            for (int64_t j = 0, run = 0, best = 0; op == 7 && j < c.len; j++) {
                run++;
                if (j == c.len - 1 || !(row[ord[j] * c.inner] == row[ord[j + 1] * c.inner])) {
                    if (run > best) best = run, want_first = ord[j];
                    run = 0;
                }
            }
            for (int64_t j = 0; j < out_len; j++) {
                int64_t w = op >= 4 ? (want_first >= 0 ? want_first : ord[kk > 0 ? kk - 1 : 0]) : ord[j];
                int64_t p = (o * out_len + j) * c.inner + i;
                bad += gi[p] != w;
                bad += memcmp(got + p * (int64_t)es, raw + (o * c.len * c.inner + w * c.inner + i) * (int64_t)es,
                              es) != 0;
            }
        }
    if (bad) fprintf(stderr, "  mismatch: %s [%lld, %lld, %lld] op %d k %lld\n", axon_dtype_name(dt),
                     (long long)c.outer, (long long)c.len, (long long)c.inner, op, (long long)kk);
    axon_mem_free(k->dev, din), axon_mem_free(k->dev, dv), axon_mem_free(k->dev, di), axon_mem_free(k->dev, dw);
    free(v), free(raw), free(got), free(gi), free(ord);
    return bad;
}

static const st_case_t st_cases[] = {{1, 1, 1}, {3, 37, 1}, {5, 4, 6}, {1, 100, 1}, {2, 3000, 1}, {1, 70, 33}};

static void test_sort_is_stable_and_matches_reference_with_nan_last(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    for (size_t d = 0; d < sizeof st_dtypes / sizeof st_dtypes[0]; d++)
        for (size_t c = 0; c < sizeof st_cases / sizeof st_cases[0]; c++)
            for (int desc = 0; desc < 2; desc++) CHECK(!check_op(&k, st_dtypes[d], st_cases[c], desc, 0));
    axon_runtime_destroy(k.rt);
}

static void test_topk_kthvalue_median_nanmedian_and_mode_match_reference(void) {
    kc_dev_t k = kc_open(4);
    REQUIRE(k.rt);
    for (size_t d = 0; d < sizeof st_dtypes / sizeof st_dtypes[0]; d++)
        for (size_t c = 0; c < sizeof st_cases / sizeof st_cases[0]; c++) {
            const int64_t len = st_cases[c].len, ks[4] = {1, len / 2 + 1, len, len > 3 ? 3 : 1};
            for (int i = 0; i < 4; i++)
                for (int op = 2; op < 8; op++) CHECK(!check_op(&k, st_dtypes[d], st_cases[c], op, ks[i]));
            CHECK(!check_op(&k, st_dtypes[d], st_cases[c], 2, 0)); /* k = 0: nothing to do */
        }
    axon_runtime_destroy(k.rt);
}

static void test_int64_extremes_keep_their_order(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const int64_t x[6] = {INT64_MAX, INT64_MIN, 0, -1, INT64_MAX - 1, INT64_MIN + 1};
    const int64_t want[6] = {1, 5, 3, 2, 4, 0}, sz[1] = {6}, sw[1] = {(int64_t)axon_sort_workspace_size(6)};
    void *din = kc_upload(&k, x, sizeof x), *dv = kc_upload(&k, NULL, sizeof x), *di = kc_upload(&k, NULL, sizeof x);
    void *dw = kc_upload(&k, NULL, (size_t)sw[0]);
    axon_tensor_t tin = kc_tensor(din, AXON_INT64, 1, sz, NULL), tv = kc_tensor(dv, AXON_INT64, 1, sz, NULL);
    axon_tensor_t ti = kc_tensor(di, AXON_INT64, 1, sz, NULL), tw = kc_tensor(dw, AXON_UINT8, 1, sw, NULL);
    CHECK_OK(axon_kernel_sort(k.s, &tv, &ti, &tin, 0, 0, &tw));
    int64_t gv[6], gi[6];
    CHECK(kc_download(&k, gv, dv, sizeof gv) && kc_download(&k, gi, di, sizeof gi));
    for (int i = 0; i < 6; i++) CHECK(gi[i] == want[i] && gv[i] == x[want[i]]);
    axon_mem_free(k.dev, din), axon_mem_free(k.dev, dv), axon_mem_free(k.dev, di), axon_mem_free(k.dev, dw);
    axon_runtime_destroy(k.rt);
}

/* Three NaNs are three values that occur once each, so two equal numbers are the mode (PyTorch CPU agrees here). */
static void test_mode_counts_each_nan_alone(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const float x[5] = {NAN, NAN, NAN, 2.0f, 2.0f};
    const int64_t sz[1] = {5}, one[1] = {1}, sw[1] = {(int64_t)axon_sort_workspace_size(5)};
    void *din = kc_upload(&k, x, sizeof x), *dv = kc_upload(&k, NULL, 4), *di = kc_upload(&k, NULL, 8);
    void *dw = kc_upload(&k, NULL, (size_t)sw[0]);
    axon_tensor_t tin = kc_tensor(din, AXON_FLOAT32, 1, sz, NULL), tv = kc_tensor(dv, AXON_FLOAT32, 1, one, NULL);
    axon_tensor_t ti = kc_tensor(di, AXON_INT64, 1, one, NULL), tw = kc_tensor(dw, AXON_UINT8, 1, sw, NULL);
    CHECK_OK(axon_kernel_mode(k.s, &tv, &ti, &tin, 0, &tw));
    float gv = 0;
    int64_t gi = -1;
    CHECK(kc_download(&k, &gv, dv, sizeof gv) && kc_download(&k, &gi, di, sizeof gi));
    CHECK(gv == 2.0f && gi == 4);
    axon_mem_free(k.dev, din), axon_mem_free(k.dev, dv), axon_mem_free(k.dev, di), axon_mem_free(k.dev, dw);
    axon_runtime_destroy(k.rt);
}

static void test_sort_is_identical_for_1_and_4_threads(void) {
    for (int t = 1; t <= 4; t += 3) {
        kc_dev_t k = kc_open(t);
        REQUIRE(k.rt);
        const st_case_t c = {64, 500, 1};
        CHECK(!check_op(&k, AXON_FLOAT32, c, 0, 0));
        CHECK(!check_op(&k, AXON_FLOAT32, c, 2, 7));
        axon_runtime_destroy(k.rt);
    }
}

/* One long row (fewer rows than threads: each thread sorts a chunk, then the chunks merge pairwise; 3 threads leave
 * an unpaired run): the same values and indices as on one thread, ascending, ties in position order. */
static void test_a_long_row_sorts_in_chunks_to_the_same_result(void) {
    const int64_t n = 200003, sz[1] = {n}, sw[1] = {(int64_t)axon_sort_workspace_size(n)};
    float *x = malloc((size_t)n * sizeof *x), *v[2] = {malloc((size_t)n * 4), malloc((size_t)n * 4)};
    int64_t *ix[2] = {malloc((size_t)n * 8), malloc((size_t)n * 8)};
    REQUIRE(x && v[0] && v[1] && ix[0] && ix[1]);
    unsigned seed = 5;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 12) % 5000) - 2500.0f; /* many ties */
    }
    x[7] = NAN;
    const int threads[2] = {1, 3};
    for (int t = 0; t < 2; t++) {
        kc_dev_t k = kc_open(threads[t]);
        REQUIRE(k.rt);
        void *din = kc_upload(&k, x, (size_t)n * 4), *dv = kc_upload(&k, NULL, (size_t)n * 4);
        void *di = kc_upload(&k, NULL, (size_t)n * 8), *dw = kc_upload(&k, NULL, (size_t)sw[0]);
        axon_tensor_t tin = kc_tensor(din, AXON_FLOAT32, 1, sz, NULL), tv = kc_tensor(dv, AXON_FLOAT32, 1, sz, NULL);
        axon_tensor_t ti = kc_tensor(di, AXON_INT64, 1, sz, NULL), tw = kc_tensor(dw, AXON_UINT8, 1, sw, NULL);
        CHECK_OK(axon_kernel_sort(k.s, &tv, &ti, &tin, 0, 0, &tw));
        CHECK(kc_download(&k, v[t], dv, (size_t)n * 4) && kc_download(&k, ix[t], di, (size_t)n * 8));
        axon_mem_free(k.dev, din), axon_mem_free(k.dev, dv), axon_mem_free(k.dev, di), axon_mem_free(k.dev, dw);
        axon_runtime_destroy(k.rt);
    }
    CHECK(memcmp(v[0], v[1], (size_t)n * 4) == 0 && memcmp(ix[0], ix[1], (size_t)n * 8) == 0);
    int64_t bad = 0;
    for (int64_t j = 0; j + 1 < n; j++) {
        const float a = v[1][j], b = v[1][j + 1];
        bad += isnan(a) || a > b || (a == b && ix[1][j] >= ix[1][j + 1]);   /* NaN only last */
    }
    bad += !isnan(v[1][n - 1]) || ix[1][n - 1] != 7;
    CHECK_EQ_I64(bad, 0);
    free(x), free(v[0]), free(v[1]), free(ix[0]), free(ix[1]);
}

/* Rows long enough for the radix passes, of keys that differ in every digit (random 64-bit integers, float64 of
 * both signs with -0.0, infinities and NaN), half of them repeats, both directions: each row is a permutation
 * (values[j] = in[indices[j]]) in order, ties by position. */
static void test_long_rows_of_wide_values_sort_in_order(void) {
    enum { R = 3, L = 30000 };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t sz[2] = {R, L}, sw[1] = {(int64_t)axon_sort_workspace_size(R * L)};
    uint64_t *x = malloc(8 * R * L), *v = malloc(8 * R * L);
    int64_t *ix = malloc(8 * R * L);
    unsigned char *seen = malloc(L);
    REQUIRE(x && v && ix && seen);
    uint64_t seed = 99;
    for (int dt = 0; dt < 2; dt++)
        for (int desc = 0; desc < 2; desc++) {
            for (int64_t i = 0; i < R * L; i++) {
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                x[i] = (i % 2 && i > 10) ? x[(seed >> 40) % (uint64_t)i] : seed; /* half repeat an earlier one */
                if (dt) {
                    double d = ((double)(int64_t)seed) * 1e-300 * (double)(seed % 1000);
                    if (i % 97 == 0) d = NAN;
                    if (i % 89 == 0) d = (i % 2) ? INFINITY : -INFINITY;
                    if (i % 83 == 0) d = (i % 3) ? -0.0 : 0.0;
                    memcpy(&x[i], &d, 8);
                }
            }
            const axon_dtype_t t = dt ? AXON_FLOAT64 : AXON_INT64;
            void *din = kc_upload(&k, x, 8 * R * L), *dv = kc_upload(&k, NULL, 8 * R * L);
            void *di = kc_upload(&k, NULL, 8 * R * L), *dw = kc_upload(&k, NULL, (size_t)sw[0]);
            axon_tensor_t tin = kc_tensor(din, t, 2, sz, NULL), tv = kc_tensor(dv, t, 2, sz, NULL);
            axon_tensor_t ti = kc_tensor(di, AXON_INT64, 2, sz, NULL), tw = kc_tensor(dw, AXON_UINT8, 1, sw, NULL);
            CHECK_OK(axon_kernel_sort(k.s, &tv, &ti, &tin, 1, desc, &tw));
            CHECK(kc_download(&k, v, dv, 8 * R * L) && kc_download(&k, ix, di, 8 * R * L));
            int64_t bad = 0;
            for (int64_t r = 0; r < R; r++) {
                memset(seen, 0, L);
                for (int64_t j = 0; j < L; j++) {
                    const int64_t p = ix[r * L + j];
                    bad += p < 0 || p >= L || seen[p]++ || v[r * L + j] != x[r * L + p];
                    if (j == 0 || bad) continue;
                    int less, equal; /* previous vs this, in ascending order */
                    if (dt) {
                        double a, b;
                        memcpy(&a, &v[r * L + j - 1], 8), memcpy(&b, &v[r * L + j], 8);
                        equal = a == b || (isnan(a) && isnan(b));
                        less = !equal && (isnan(b) || a < b);
                    } else {
                        const int64_t a = (int64_t)v[r * L + j - 1], b = (int64_t)v[r * L + j];
                        equal = a == b, less = a < b;
                    }
                    bad += equal ? ix[r * L + j - 1] >= p : desc == less;
                }
            }
            CHECK_EQ_I64(bad, 0);
            axon_mem_free(k.dev, din), axon_mem_free(k.dev, dv), axon_mem_free(k.dev, di), axon_mem_free(k.dev, dw);
        }
    free(x), free(v), free(ix), free(seen);
    axon_runtime_destroy(k.rt);
}

static void test_sort_refuses_bad_descriptors_with_messages(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const int64_t sz[2] = {3, 4}, bad[2] = {3, 5}, k2[2] = {3, 2}, sw[1] = {(int64_t)axon_sort_workspace_size(12)};
    const int64_t small[1] = {8}, tr[2] = {1, 3};
    void *buf = kc_upload(&k, NULL, 1024), *ws = kc_upload(&k, NULL, (size_t)sw[0]);
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 2, sz, NULL), v = in, i = kc_tensor(buf, AXON_INT64, 2, sz, NULL);
    axon_tensor_t w = kc_tensor(ws, AXON_UINT8, 1, sw, NULL), wsmall = kc_tensor(ws, AXON_UINT8, 1, small, NULL);
    axon_tensor_t vb = kc_tensor(buf, AXON_FLOAT32, 2, bad, NULL), ci = kc_tensor(buf, AXON_COMPLEX64, 2, sz, NULL);
    axon_tensor_t vk = kc_tensor(buf, AXON_FLOAT32, 2, k2, NULL), ik = kc_tensor(buf, AXON_INT64, 2, k2, NULL);
    axon_tensor_t strided = kc_tensor(buf, AXON_FLOAT32, 2, sz, (const int64_t[2]){1, 3});
    (void)tr;
    CHECK_STATUS(axon_kernel_sort(k.s, &v, &i, &in, 2, 0, &w), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dim 2 is out of range");
    CHECK_STATUS(axon_kernel_sort(k.s, &vb, &i, &in, 1, 0, &w), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("values has shape [3, 5], expected [3, 4]");
    CHECK_STATUS(axon_kernel_sort(k.s, &v, &v, &in, 1, 0, &w), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("indices dtype float32 is not int64");
    CHECK_STATUS(axon_kernel_sort(k.s, &v, &i, &in, 1, 0, &wsmall), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("workspace");
    CHECK_STATUS(axon_kernel_sort(k.s, &v, &i, &ci, 1, 0, &w), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_sort(k.s, &v, &i, &strided, 1, 0, &w), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("contiguous");
    CHECK_STATUS(axon_kernel_topk(k.s, &vk, &ik, &in, 1, 5, 1, &w), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("k (5) is out of range");
    CHECK_STATUS(axon_kernel_kthvalue(k.s, &vk, &ik, &in, 1, 0, 0, &w), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("kthvalue: k (0)");
    CHECK_STATUS(axon_kernel_topk(k.s, &vk, &ik, &in, 1, 2, 1, NULL), AXON_ERROR_INVALID_ARG);
    const int64_t e[2] = {3, 0}, e1[2] = {3, 1};
    axon_tensor_t ein = kc_tensor(buf, AXON_FLOAT32, 2, e, NULL), ev = kc_tensor(buf, AXON_FLOAT32, 2, e1, NULL);
    axon_tensor_t ei = kc_tensor(buf, AXON_INT64, 2, e1, NULL);
    CHECK_STATUS(axon_kernel_mode(k.s, &ev, &ei, &ein, 1, &w), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("mode: dimension 1 has size 0");
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf), axon_mem_free(k.dev, ws);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_sort_is_stable_and_matches_reference_with_nan_last);
    RUN(test_topk_kthvalue_median_nanmedian_and_mode_match_reference);
    RUN(test_int64_extremes_keep_their_order);
    RUN(test_mode_counts_each_nan_alone);
    RUN(test_sort_is_identical_for_1_and_4_threads);
    RUN(test_a_long_row_sorts_in_chunks_to_the_same_result);
    RUN(test_long_rows_of_wide_values_sort_in_order);
    RUN(test_sort_refuses_bad_descriptors_with_messages);
    return check_report();
}
