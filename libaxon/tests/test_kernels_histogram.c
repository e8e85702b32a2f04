/* axon_kernel_histc: bins and edges as PyTorch's histc (CPU for floats, CUDA for integers), values outside the
 * range ignored, the same counts for any thread count, and bad input refused with a message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/histogram.h"
#include "kernels_check.h"

/* Run histc on n host values of dtype (element size es) into a float64 result of `bins` counts. */
static int run_histc(int threads, axon_dtype_t dtype, const void *values, int64_t n, int64_t bins, double lo,
                     double hi, double *counts) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return 0;
    size_t es = axon_dtype_size(dtype);
    void *in = kc_upload(&k, values, (size_t)n * es);
    void *out = kc_upload(&k, NULL, (size_t)bins * sizeof(double));
    axon_tensor_t ti = kc_tensor(in, dtype, 1, &n, NULL), to = kc_tensor(out, AXON_FLOAT64, 1, &bins, NULL);
    int ok = in && out && axon_kernel_histc(k.s, &to, &ti, bins, lo, hi) == AXON_OK &&
             kc_download(&k, counts, out, (size_t)bins * sizeof(double));
    axon_mem_free(k.dev, in);
    axon_mem_free(k.dev, out);
    axon_runtime_destroy(k.rt);
    return ok;
}

static void test_floats_on_edges_open_their_bin_and_the_top_goes_last(void) {
    /* [0, 4] in 4 bins: edges 0 1 2 3 4. 4.0 counts in the last bin; -0.5, 4.5 and NaN are not counted. */
    float v[] = {0.0f, 0.5f, 1.0f, 1.999f, 2.0f, 3.0f, 4.0f, -0.5f, 4.5f, NAN};
    double c[4];
    REQUIRE(run_histc(2, AXON_FLOAT32, v, 10, 4, 0.0, 4.0, c));
    CHECK(c[0] == 2 && c[1] == 2 && c[2] == 1 && c[3] == 2);
}

static void test_integers_use_cudas_integer_formula(void) {
    /* A router's expert ids 0..3 in 4 bins over [0, 3]: id * 4 / 3 in integers puts every id in its own bin. */
    int32_t ids[] = {3, 0, 1, 1, 2, 3, 3, 7, -1};
    double c[4];
    REQUIRE(run_histc(1, AXON_INT32, ids, 9, 4, 0.0, 3.0, c));
    CHECK(c[0] == 1 && c[1] == 2 && c[2] == 1 && c[3] == 3);
}

static void test_counts_do_not_depend_on_the_thread_count(void) {
    const int64_t n = 1 << 21, bins = 37;
    double *v = malloc((size_t)n * sizeof *v), one[37], two[37];
    REQUIRE(v);
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = (double)(x >> 11) * 0x1p-53 * 12.0 - 1.0;   /* [-1, 11): some below the range */
    }
    REQUIRE(run_histc(1, AXON_FLOAT64, v, n, bins, 0.0, 10.0, one));
    REQUIRE(run_histc(2, AXON_FLOAT64, v, n, bins, 0.0, 10.0, two));
    double total = 0;
    int64_t want = 0;
    for (int64_t i = 0; i < n; i++) want += v[i] >= 0.0 && v[i] <= 10.0;
    for (int b = 0; b < bins; b++) {
        CHECK(one[b] == two[b]);
        total += one[b];
    }
    CHECK(total == (double)want);
    free(v);
}

static void test_histc_rejects_bad_input(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 64);
    int64_t four = 4, three = 3;
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 1, &four, NULL), out = kc_tensor(buf + 4, AXON_FLOAT32, 1, &four,
                                                                                     NULL);
    CHECK_STATUS(axon_kernel_histc(k.s, &out, &in, 0, 0.0, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("bins must be > 0");
    CHECK_STATUS(axon_kernel_histc(k.s, &out, &in, 4, 1.0, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("must be finite with min < max");
    CHECK_STATUS(axon_kernel_histc(k.s, &out, &in, 4, 0.0, INFINITY), AXON_ERROR_INVALID_ARG);
    axon_tensor_t short_out = kc_tensor(buf + 4, AXON_FLOAT32, 1, &three, NULL);
    CHECK_STATUS(axon_kernel_histc(k.s, &short_out, &in, 4, 0.0, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out has shape [3], expected [4]");
    axon_tensor_t flags = kc_tensor(buf, AXON_BOOL, 1, &four, NULL);
    CHECK_STATUS(axon_kernel_histc(k.s, &out, &flags, 4, 0.0, 1.0), AXON_ERROR_UNSUPPORTED);
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_floats_on_edges_open_their_bin_and_the_top_goes_last);
    RUN(test_integers_use_cudas_integer_formula);
    RUN(test_counts_do_not_depend_on_the_thread_count);
    RUN(test_histc_rejects_bad_input);
    return check_report();
}
