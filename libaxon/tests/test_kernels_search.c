/* axon_kernel_searchsorted, axon_kernel_bincount and the unique run kernels: PyTorch's answers on small cases
 * (both sides, a sorter, batched rows, NaN, int32 output; counts and float32 weights; runs with NaN and -0.0), the
 * same results for any thread count; isin with NaN, -0.0, int64 keys beyond float64's precision and invert; and bad
 * input refused with a message, or failed at run time without writing
 * out of bounds when only the data are wrong. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/search.h"
#include "axon/unique.h"
#include "kernels_check.h"

/* searchsorted of nv float64 values in `seq` (rows x m, rows == 0: one 1-d row) into int64 results. */
static int run_search(int threads, const double *seq, int64_t rows, int64_t m, const double *v, int64_t nv,
                      const int64_t *sorter, int right, int64_t *res) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return 0;
    const int64_t nseq = (rows ? rows : 1) * m;
    void *ds = kc_upload(&k, seq, (size_t)nseq * 8), *dv = kc_upload(&k, v, (size_t)nv * 8);
    void *dp = sorter ? kc_upload(&k, sorter, (size_t)nseq * 8) : NULL, *dout = kc_upload(&k, NULL, (size_t)nv * 8);
    int64_t ssz[2] = {rows, m}, vsz[2] = {rows, rows ? nv / rows : nv};
    axon_tensor_t ts = rows ? kc_tensor(ds, AXON_FLOAT64, 2, ssz, NULL) : kc_tensor(ds, AXON_FLOAT64, 1, &m, NULL);
    axon_tensor_t tv = rows ? kc_tensor(dv, AXON_FLOAT64, 2, vsz, NULL) : kc_tensor(dv, AXON_FLOAT64, 1, &nv, NULL);
    axon_tensor_t to = tv, tp = ts;
    to.data = dout;
    to.dtype = AXON_INT64;
    tp.data = dp;
    tp.dtype = AXON_INT64;
    int ok = ds && dv && dout && axon_kernel_searchsorted(k.s, &to, &ts, &tv, sorter ? &tp : NULL, right) == AXON_OK &&
             kc_download(&k, res, dout, (size_t)nv * 8);
    axon_mem_free(k.dev, ds);
    axon_mem_free(k.dev, dv);
    axon_mem_free(k.dev, dp);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
    return ok;
}

static void test_left_and_right_sides_give_pytorchs_insertion_points(void) {
    const double seq[] = {1, 2, 2, 2, 5, NAN};
    const double v[] = {0, 1, 2, 3, 5, 6, NAN, -INFINITY};
    /* PyTorch CPU's answers: its tests are false against a NaN in the sequence, which moves the search right. */
    const int64_t left[] = {0, 0, 1, 6, 6, 6, 6, 0}, right[] = {0, 1, 6, 6, 6, 6, 6, 0};
    int64_t res[8];
    REQUIRE(run_search(2, seq, 0, 6, v, 8, NULL, 0, res));
    for (int i = 0; i < 8; i++) CHECK_EQ_I64(res[i], left[i]);
    REQUIRE(run_search(1, seq, 0, 6, v, 8, NULL, 1, res));
    for (int i = 0; i < 8; i++) CHECK_EQ_I64(res[i], right[i]);
}

static void test_batched_rows_and_a_sorter_search_their_own_row(void) {
    /* Row 0 unsorted with its sorter; row 1 read through the identity. */
    const double seq[] = {30, 10, 20, 1, 2, 3};
    const int64_t sorter[] = {1, 2, 0, 0, 1, 2};
    const double v[] = {15, 31, 2, 0};
    int64_t res[4];
    REQUIRE(run_search(2, seq, 2, 3, v, 4, sorter, 0, res));
    CHECK_EQ_I64(res[0], 1);
    CHECK_EQ_I64(res[1], 3);
    CHECK_EQ_I64(res[2], 1);
    CHECK_EQ_I64(res[3], 0);
}

static void test_results_do_not_depend_on_the_thread_count(void) {
    const int64_t m = 1000, nv = 1 << 18;
    double *seq = malloc((size_t)m * 8), *v = malloc((size_t)nv * 8);
    int64_t *one = malloc((size_t)nv * 8), *four = malloc((size_t)nv * 8);
    REQUIRE(seq && v && one && four);
    for (int64_t i = 0; i < m; i++) seq[i] = (double)(i / 3);
    for (int64_t i = 0; i < nv; i++) v[i] = (double)((i * 7919) % 400) - 20.5;
    REQUIRE(run_search(1, seq, 0, m, v, nv, NULL, 1, one));
    REQUIRE(run_search(4, seq, 0, m, v, nv, NULL, 1, four));
    CHECK(kc_first_diff(one, four, (size_t)nv * 8) == -1);
    free(seq);
    free(v);
    free(one);
    free(four);
}

static void test_int32_output_and_integer_keys(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const int64_t seq[] = {INT64_MIN, -1, (int64_t)1 << 60, ((int64_t)1 << 60) + 1}, v[] = {((int64_t)1 << 60) + 1};
    int64_t four = 4, one = 1;
    void *ds = kc_upload(&k, seq, sizeof seq), *dv = kc_upload(&k, v, sizeof v), *dout = kc_upload(&k, NULL, 4);
    axon_tensor_t ts = kc_tensor(ds, AXON_INT64, 1, &four, NULL), tv = kc_tensor(dv, AXON_INT64, 1, &one, NULL),
                  to = kc_tensor(dout, AXON_INT32, 1, &one, NULL);
    int32_t res = -1;
    /* 2^60 and 2^60 + 1 are one float64: int64 keys keep them apart. */
    CHECK_OK(axon_kernel_searchsorted(k.s, &to, &ts, &tv, NULL, 0));
    REQUIRE(kc_download(&k, &res, dout, 4));
    CHECK_EQ_I64(res, 3);
    axon_mem_free(k.dev, ds);
    axon_mem_free(k.dev, dv);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

static void test_searchsorted_rejects_bad_input(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    double *buf = kc_upload(&k, NULL, 256);
    int64_t four = 4, three = 3, rows[2] = {2, 2}, other[2] = {3, 2};
    axon_tensor_t seq = kc_tensor(buf, AXON_FLOAT64, 1, &four, NULL), v = kc_tensor(buf + 4, AXON_FLOAT64, 1, &four, NULL);
    axon_tensor_t out = kc_tensor(buf + 8, AXON_INT64, 1, &four, NULL);
    axon_tensor_t short_out = kc_tensor(buf + 8, AXON_INT64, 1, &three, NULL);
    CHECK_STATUS(axon_kernel_searchsorted(k.s, &short_out, &seq, &v, NULL, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out has shape [3], expected values' shape [4]");
    axon_tensor_t fout = out;
    fout.dtype = AXON_FLOAT32;
    CHECK_STATUS(axon_kernel_searchsorted(k.s, &fout, &seq, &v, NULL, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("is not int32 or int64");
    axon_tensor_t iv = v;
    iv.dtype = AXON_INT64;
    CHECK_STATUS(axon_kernel_searchsorted(k.s, &out, &seq, &iv, NULL, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("differs from values dtype");
    axon_tensor_t seq2 = kc_tensor(buf, AXON_FLOAT64, 2, rows, NULL), v2 = kc_tensor(buf + 4, AXON_FLOAT64, 2, other,
                                                                                      NULL);
    axon_tensor_t out2 = kc_tensor(buf + 12, AXON_INT64, 2, other, NULL);
    CHECK_STATUS(axon_kernel_searchsorted(k.s, &out2, &seq2, &v2, NULL, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("do not match the leading dimensions");
    /* A sorter entry outside its row fails the command instead of reading out of bounds. */
    const int64_t bad[] = {0, 1, 9, 2};
    void *dp = kc_upload(&k, bad, sizeof bad);
    axon_tensor_t sorter = kc_tensor(dp, AXON_INT64, 1, &four, NULL);
    CHECK_OK(axon_kernel_searchsorted(k.s, &out, &seq, &v, &sorter, 0));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("sorter index 9 is out of range [0, 4)");
    axon_mem_free(k.dev, dp);
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_bincount_counts_and_sums_float32_weights_in_order(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int32_t in[] = {2, 0, 2, 4, 2};
    const float w[] = {1e8f, 1.0f, 1.0f, 0.5f, -1e8f};
    int64_t five = 5;
    void *di = kc_upload(&k, in, sizeof in), *dw = kc_upload(&k, w, sizeof w), *dc = kc_upload(&k, NULL, 40),
         *ds = kc_upload(&k, NULL, 20);
    axon_tensor_t ti = kc_tensor(di, AXON_INT32, 1, &five, NULL), tw = kc_tensor(dw, AXON_FLOAT32, 1, &five, NULL);
    axon_tensor_t tc = kc_tensor(dc, AXON_INT64, 1, &five, NULL), ts = kc_tensor(ds, AXON_FLOAT32, 1, &five, NULL);
    CHECK_OK(axon_kernel_bincount(k.s, &tc, &ti, NULL));
    CHECK_OK(axon_kernel_bincount(k.s, &ts, &ti, &tw));
    int64_t c[5];
    float s[5];
    REQUIRE(kc_download(&k, c, dc, sizeof c) && kc_download(&k, s, ds, sizeof s));
    CHECK(c[0] == 1 && c[1] == 0 && c[2] == 3 && c[3] == 0 && c[4] == 1);
    /* In order and in float32: 1e8 + 1 rounds back to 1e8, so bin 2 ends at 0 (a float64 sum would give 1). */
    CHECK(s[0] == 1.0f && s[1] == 0.0f && s[2] == 0.0f && s[4] == 0.5f);
    /* A value past the last bin fails the command. */
    int64_t two = 2;
    axon_tensor_t small = kc_tensor(dc, AXON_INT64, 1, &two, NULL);
    CHECK_OK(axon_kernel_bincount(k.s, &small, &ti, NULL));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("value 2 is outside [0, 2)");
    axon_tensor_t fin = ti;
    fin.dtype = AXON_FLOAT32;
    CHECK_STATUS(axon_kernel_bincount(k.s, &tc, &fin, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("is not an integer dtype");
    CHECK_STATUS(axon_kernel_bincount(k.s, &tc, &ti, &tw), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("out dtype int64 is not float32 or float64");
    axon_mem_free(k.dev, di);
    axon_mem_free(k.dev, dw);
    axon_mem_free(k.dev, dc);
    axon_mem_free(k.dev, ds);
    axon_runtime_destroy(k.rt);
}

static void test_unique_runs_keep_nans_apart_and_merge_signed_zeros(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    /* Already sorted (as sort leaves it): -0.0 and 0.0 are one run, each NaN its own. perm maps back. */
    const double in[] = {-1, -0.0, 0.0, 3, 3, NAN, NAN};
    const int64_t perm[] = {6, 5, 4, 3, 2, 1, 0};
    int64_t n = 7, one = 1, kk = 5;
    void *di = kc_upload(&k, in, sizeof in), *dp = kc_upload(&k, perm, sizeof perm), *dn = kc_upload(&k, NULL, 8);
    void *dv = kc_upload(&k, NULL, 40), *dinv = kc_upload(&k, NULL, 56), *dcnt = kc_upload(&k, NULL, 40);
    axon_tensor_t ti = kc_tensor(di, AXON_FLOAT64, 1, &n, NULL), tp = kc_tensor(dp, AXON_INT64, 1, &n, NULL);
    axon_tensor_t tn = kc_tensor(dn, AXON_INT64, 1, &one, NULL), tv = kc_tensor(dv, AXON_FLOAT64, 1, &kk, NULL);
    axon_tensor_t tinv = kc_tensor(dinv, AXON_INT64, 1, &n, NULL), tc = kc_tensor(dcnt, AXON_INT64, 1, &kk, NULL);
    CHECK_OK(axon_kernel_unique_count(k.s, &tn, &ti));
    int64_t runs = 0;
    REQUIRE(kc_download(&k, &runs, dn, 8));
    CHECK_EQ_I64(runs, 5);
    CHECK_OK(axon_kernel_unique_fill(k.s, &tv, &tinv, &tc, &ti, &tp));
    double v[5];
    int64_t inv[7], cnt[5];
    REQUIRE(kc_download(&k, v, dv, 40) && kc_download(&k, inv, dinv, 56) && kc_download(&k, cnt, dcnt, 40));
    CHECK(v[0] == -1 && v[1] == 0 && signbit(v[1]) && v[2] == 3 && isnan(v[3]) && isnan(v[4]));
    const int64_t want_inv[] = {4, 3, 2, 2, 1, 1, 0}, want_cnt[] = {1, 2, 2, 1, 1};
    for (int i = 0; i < 7; i++) CHECK_EQ_I64(inv[i], want_inv[i]);
    for (int i = 0; i < 5; i++) CHECK_EQ_I64(cnt[i], want_cnt[i]);
    /* values too short for the runs: the command fails instead of writing past values. */
    int64_t three = 3;
    axon_tensor_t tv3 = kc_tensor(dv, AXON_FLOAT64, 1, &three, NULL);
    CHECK_OK(axon_kernel_unique_fill(k.s, &tv3, NULL, NULL, &ti, NULL));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("more runs than values has room for");
    axon_tensor_t tc3 = kc_tensor(dcnt, AXON_INT64, 1, &three, NULL);
    CHECK_STATUS(axon_kernel_unique_fill(k.s, &tv, NULL, &tc3, &ti, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("counts must be 1-d, contiguous, of 5 elements");
    axon_tensor_t cplx = ti;
    cplx.dtype = AXON_COMPLEX128;
    CHECK_STATUS(axon_kernel_unique_count(k.s, &tn, &cplx), AXON_ERROR_UNSUPPORTED);
    axon_mem_free(k.dev, di);
    axon_mem_free(k.dev, dp);
    axon_mem_free(k.dev, dn);
    axon_mem_free(k.dev, dv);
    axon_mem_free(k.dev, dinv);
    axon_mem_free(k.dev, dcnt);
    axon_runtime_destroy(k.rt);
}

/* isin of float64 elements in float64 test elements (nt of them) on `threads` workers into bool results. */
static int run_isin_f64(int threads, const double *e, int64_t ne, const double *t, int64_t nt, int invert,
                        uint8_t *res) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return 0;
    void *de = kc_upload(&k, e, (size_t)ne * 8), *dt = kc_upload(&k, t, (size_t)(nt ? nt : 1) * 8);
    void *dout = kc_upload(&k, NULL, (size_t)ne);
    axon_tensor_t te = kc_tensor(de, AXON_FLOAT64, 1, &ne, NULL), tt = kc_tensor(dt, AXON_FLOAT64, 1, &nt, NULL);
    axon_tensor_t to = kc_tensor(dout, AXON_BOOL, 1, &ne, NULL);
    int ok = de && dt && dout && axon_kernel_isin(k.s, &to, &te, &tt, invert) == AXON_OK &&
             kc_download(&k, res, dout, (size_t)ne);
    axon_mem_free(k.dev, de);
    axon_mem_free(k.dev, dt);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
    return ok;
}

static void test_isin_nan_matches_nothing_and_signed_zeros_match(void) {
    const double e[] = {1, 2, NAN, -0.0, 7, 3.5, -INFINITY};
    const double t[] = {3.5, NAN, 0.0, 1, -INFINITY, 1};
    const uint8_t want[] = {1, 0, 0, 1, 0, 1, 1};
    uint8_t res[7];
    REQUIRE(run_isin_f64(2, e, 7, t, 6, 0, res));
    for (int i = 0; i < 7; i++) CHECK_EQ_I64(res[i], want[i]);
    REQUIRE(run_isin_f64(1, e, 7, t, 6, 1, res));
    for (int i = 0; i < 7; i++) CHECK_EQ_I64(res[i], !want[i]);
    REQUIRE(run_isin_f64(2, e, 7, t, 0, 0, res)); /* no test elements: nothing is in */
    for (int i = 0; i < 7; i++) CHECK_EQ_I64(res[i], 0);
}

static void test_isin_int64_keys_keep_every_bit_against_a_brute_force_search(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.rt);
    enum { NE = 1 << 16, NT = 513 };
    static int64_t e[NE], t[NT];
    static uint8_t got[NE];
    for (int i = 0; i < NT; i++) t[i] = ((int64_t)1 << 60) + (int64_t)(i * 2) * ((i % 5) - 2); /* unsorted, dups */
    for (int i = 0; i < NE; i++) e[i] = ((int64_t)1 << 60) + (int64_t)(i % 3000) - 1500;
    const int64_t ne = NE, nt = NT;
    void *de = kc_upload(&k, e, sizeof e), *dt = kc_upload(&k, t, sizeof t), *dout = kc_upload(&k, NULL, NE);
    REQUIRE(de && dt && dout);
    axon_tensor_t te = kc_tensor(de, AXON_INT64, 1, &ne, NULL), tt = kc_tensor(dt, AXON_INT64, 1, &nt, NULL);
    axon_tensor_t to = kc_tensor(dout, AXON_BOOL, 1, &ne, NULL);
    CHECK_OK(axon_kernel_isin(k.s, &to, &te, &tt, 0));
    REQUIRE(kc_download(&k, got, dout, NE));
    int bad = 0;
    for (int i = 0; i < NE; i++) {
        int in = 0;
        for (int j = 0; j < NT && !in; j++) in = e[i] == t[j];
        bad += got[i] != in;
    }
    CHECK(bad == 0);
    /* refusals: mixed dtypes, a non-bool out, complex */
    axon_tensor_t tf = tt;
    tf.dtype = AXON_INT32;
    CHECK_STATUS(axon_kernel_isin(k.s, &to, &te, &tf, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("differs from test_elements dtype");
    axon_tensor_t ti = to;
    ti.dtype = AXON_UINT8;
    CHECK_STATUS(axon_kernel_isin(k.s, &ti, &te, &tt, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("is not bool");
    axon_mem_free(k.dev, de);
    axon_mem_free(k.dev, dt);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_left_and_right_sides_give_pytorchs_insertion_points);
    RUN(test_batched_rows_and_a_sorter_search_their_own_row);
    RUN(test_results_do_not_depend_on_the_thread_count);
    RUN(test_int32_output_and_integer_keys);
    RUN(test_searchsorted_rejects_bad_input);
    RUN(test_bincount_counts_and_sums_float32_weights_in_order);
    RUN(test_unique_runs_keep_nans_apart_and_merge_signed_zeros);
    RUN(test_isin_nan_matches_nothing_and_signed_zeros_match);
    RUN(test_isin_int64_keys_keep_every_bit_against_a_brute_force_search);
    return check_report();
}
