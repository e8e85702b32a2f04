/* The random kernels: Philox known answers, reproducibility across thread counts and dst layouts, the offset
 * contract, distributions within statistical tolerance, and bad input. Tolerances are 6 standard errors, so a
 * correct generator fails one of these checks far less than once in a million runs. */
#include <math.h>

#include "../kernels/philox.h"
#include "kernels_check.h"

#define MILLION (1 << 20)

static void test_philox_matches_the_known_answer_vectors(void) {
    /* Random123's kat_vectors for philox4x32-10: counter, key -> output. */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        axon_philox4x32(kat[v], kat[v] + 4, out);
        for (int j = 0; j < 4; j++) CHECK_EQ_I64(out[j], kat[v][6 + j]);
    }
    /* Through the kernel: int64 with range 2^64 returns the raw bits, lanes (0, 1) then (2, 3) of block 0. */
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    int64_t n = 2;
    uint64_t got[2];
    void *buf = kc_upload(&k, NULL, sizeof got);
    axon_tensor_t t = kc_tensor(buf, AXON_INT64, 1, &n, NULL);
    CHECK_OK(axon_kernel_random_int(k.s, &t, 0, 0, 0, 0));
    CHECK(kc_download(&k, got, buf, sizeof got));
    CHECK(got[0] == 0xe169c58d6627e8d5ull && got[1] == 0x9b00dbd8bc57ac4cull);
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_philox_blocks_counts_per_dtype(void) {
    CHECK_EQ_I64(axon_philox_blocks(AXON_FLOAT32, 0), 0);
    CHECK_EQ_I64(axon_philox_blocks(AXON_FLOAT32, 1), 1);
    CHECK_EQ_I64(axon_philox_blocks(AXON_FLOAT32, 8), 2);
    CHECK_EQ_I64(axon_philox_blocks(AXON_BFLOAT16, 9), 3);
    CHECK_EQ_I64(axon_philox_blocks(AXON_FLOAT64, 5), 3);
    CHECK_EQ_I64(axon_philox_blocks(AXON_INT64, 4), 2);
    CHECK_EQ_I64(axon_philox_blocks(AXON_INT8, -3), 0);
}

enum kind { UNIFORM, NORMAL, RANDOM_INT, BERNOULLI, EXPONENTIAL };

static axon_status_t draw(const kc_dev_t *k, enum kind kind, const axon_tensor_t *t, uint64_t seed, uint64_t offset) {
    switch (kind) {
    case UNIFORM: return axon_kernel_uniform(k->s, t, seed, offset, -2.0, 3.0);
    case NORMAL: return axon_kernel_normal(k->s, t, seed, offset, 1.0, 2.0);
    case RANDOM_INT: return axon_kernel_random_int(k->s, t, seed, offset, -1000, 100000);
    case EXPONENTIAL: return axon_kernel_exponential(k->s, t, seed, offset, 4.0);
    default: return axon_kernel_bernoulli(k->s, t, seed, offset, 0.25);
    }
}

/* Draw rows x cols elements of dtype d in logical order into a malloc'd buffer; the dst in device memory is
 * row-major, or column-major (a transposed view) when `transposed`, and is read back in logical order. */
static unsigned char *draw_2d(int threads, enum kind kind, axon_dtype_t d, int64_t rows, int64_t cols, uint64_t seed,
                              uint64_t offset, int transposed) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return NULL;
    size_t es = axon_dtype_size(d), n = (size_t)(rows * cols);
    unsigned char *dev = kc_upload(&k, NULL, n * es), *mem = malloc(n * es), *out = malloc(n * es);
    int64_t sizes[2] = {rows, cols}, st[2] = {1, rows};
    axon_tensor_t t = kc_tensor(dev, d, 2, sizes, transposed ? st : NULL);
    int ok = draw(&k, kind, &t, seed, offset) == AXON_OK && kc_download(&k, mem, dev, n * es);
    for (size_t r = 0; ok && r < (size_t)rows; r++)
        for (size_t c = 0; c < (size_t)cols; c++) {
            size_t at = transposed ? c * (size_t)rows + r : r * (size_t)cols + c;
            memcpy(out + (r * (size_t)cols + c) * es, mem + at * es, es);
        }
    free(mem);
    axon_runtime_destroy(k.rt);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_same_seed_and_offset_give_the_same_bytes_for_any_threads_and_layout(void) {
    const int64_t rows = 1031, cols = 1021; /* 1.05M elements, not a multiple of 4 */
    size_t n = (size_t)(rows * cols);
    const struct {
        enum kind kind;
        axon_dtype_t d;
    } cases[] = {{UNIFORM, AXON_FLOAT32},    {UNIFORM, AXON_FLOAT64},   {NORMAL, AXON_BFLOAT16},
                 {NORMAL, AXON_FLOAT64},     {RANDOM_INT, AXON_INT32},  {RANDOM_INT, AXON_INT64},
                 {BERNOULLI, AXON_BOOL},     {UNIFORM, AXON_FLOAT16},   {EXPONENTIAL, AXON_FLOAT32},
                 {EXPONENTIAL, AXON_FLOAT64}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t bytes = n * axon_dtype_size(cases[c].d);
        unsigned char *a = draw_2d(1, cases[c].kind, cases[c].d, rows, cols, 42, 7, 0);
        unsigned char *b = draw_2d(2, cases[c].kind, cases[c].d, rows, cols, 42, 7, 0);
        unsigned char *t = draw_2d(2, cases[c].kind, cases[c].d, rows, cols, 42, 7, 1);
        REQUIRE(a && b && t);
        CHECK_EQ_I64(kc_first_diff(a, b, bytes), -1);
        CHECK_EQ_I64(kc_first_diff(a, t, bytes), -1);
        free(a);
        free(b);
        free(t);
    }
}

static void test_offsets_continue_the_stream_and_different_offsets_differ(void) {
    /* 4000 float32 values at offset 0 followed by 4000 at offset axon_philox_blocks(4000) equal 8000 at once. */
    unsigned char *whole = draw_2d(2, UNIFORM, AXON_FLOAT32, 1, 8000, 5, 0, 0);
    unsigned char *head = draw_2d(2, UNIFORM, AXON_FLOAT32, 1, 4000, 5, 0, 0);
    unsigned char *tail = draw_2d(2, UNIFORM, AXON_FLOAT32, 1, 4000, 5, axon_philox_blocks(AXON_FLOAT32, 4000), 0);
    unsigned char *other = draw_2d(2, UNIFORM, AXON_FLOAT32, 1, 4000, 5, 1, 0);
    unsigned char *seed = draw_2d(2, UNIFORM, AXON_FLOAT32, 1, 4000, 6, 0, 0);
    REQUIRE(whole && head && tail && other && seed);
    CHECK(memcmp(whole, head, 16000) == 0);
    CHECK(memcmp(whole + 16000, tail, 16000) == 0);
    /* Offset 1 is the same stream shifted by one block (4 elements), so no element may match its own position. */
    int same = 0, seed_same = 0;
    for (int i = 0; i < 4000; i++) {
        same += memcmp(head + 4 * i, other + 4 * i, 4) == 0;
        seed_same += memcmp(head + 4 * i, seed + 4 * i, 4) == 0;
    }
    CHECK(same < 5 && seed_same < 5);
    CHECK(memcmp(head + 16, other, 16000 - 16) == 0);
    free(whole);
    free(head);
    free(tail);
    free(other);
    free(seed);
}

/* Values of a float dtype as doubles. */
static double as_double(axon_dtype_t d, const unsigned char *p) {
    uint16_t h;
    switch (d) {
    case AXON_FLOAT32: return *(const float *)p;
    case AXON_FLOAT64: return *(const double *)p;
    case AXON_BFLOAT16: {
        memcpy(&h, p, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case AXON_FLOAT16: {
        memcpy(&h, p, 2);
        int e = (h >> 10) & 31, m = h & 1023;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? INFINITY : ldexp(m + 1024, e - 25);
        return h & 0x8000 ? -v : v;
    }
    case AXON_INT32: return *(const int32_t *)p;
    case AXON_INT64: return (double)*(const int64_t *)p;
    case AXON_INT8: return *(const int8_t *)p;
    case AXON_INT16: return *(const int16_t *)(const void *)p;
    case AXON_UINT8: return *(const uint8_t *)p;
    case AXON_BOOL: return *p;
    default: return NAN;
    }
}

struct moments {
    double min, max, mean, var;
};

static struct moments moments_of(axon_dtype_t d, const unsigned char *v, size_t n) {
    struct moments m = {INFINITY, -INFINITY, 0, 0};
    size_t es = axon_dtype_size(d);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        double x = as_double(d, v + i * es);
        if (x < m.min) m.min = x;
        if (x > m.max) m.max = x;
        sum += x;
        sq += x * x;
    }
    m.mean = sum / (double)n;
    m.var = sq / (double)n - m.mean * m.mean;
    return m;
}

static void test_uniform_stays_in_range_with_the_right_moments(void) {
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        unsigned char *v = draw_2d(2, UNIFORM, dts[t], 1, MILLION, 1234, 0, 0);
        REQUIRE(v);
        struct moments m = moments_of(dts[t], v, MILLION);
        double sd = 5.0 / sqrt(12.0), se = sd / sqrt((double)MILLION);
        CHECK(m.min >= -2.0 && m.max < 3.0);
        CHECK(fabs(m.mean - 0.5) < 6 * se + (dts[t] == AXON_BFLOAT16 ? 2e-3 : 0)); /* bf16 rounding bias */
        CHECK(fabs(sqrt(m.var) - sd) < 0.01 * sd);
        free(v);
    }
}

static void test_uniform_never_rounds_up_to_the_upper_bound(void) {
    /* In bfloat16, u > 1 - 2^-9 rounds to 1.0: about 2000 of a million draws would hit `to` without the clamp. */
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    int64_t n = MILLION;
    uint16_t *dev = kc_upload(&k, NULL, MILLION * 2), *got = malloc(MILLION * 2);
    axon_tensor_t t = kc_tensor(dev, AXON_BFLOAT16, 1, &n, NULL);
    CHECK_OK(axon_kernel_uniform(k.s, &t, 99, 0, 0.0, 1.0));
    CHECK(kc_download(&k, got, dev, MILLION * 2));
    int at_top = 0, below = 0;
    for (int i = 0; i < MILLION; i++) {
        at_top += got[i] >= 0x3F80;
        below += got[i] == 0x3F7F; /* 0.99609375, the largest bfloat16 below 1 */
    }
    CHECK_EQ_I64(at_top, 0);
    CHECK(below > 1000);
    /* from == to gives from. */
    CHECK_OK(axon_kernel_uniform(k.s, &t, 99, 0, 2.0, 2.0));
    CHECK(kc_download(&k, got, dev, MILLION * 2));
    CHECK(got[0] == 0x4000 && got[MILLION - 1] == 0x4000);
    free(got);
    axon_mem_free(k.dev, dev);
    axon_runtime_destroy(k.rt);
}

static void test_normal_has_the_requested_mean_and_std(void) {
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        unsigned char *v = draw_2d(2, NORMAL, dts[t], 1, MILLION, 77, 3, 0);
        REQUIRE(v);
        struct moments m = moments_of(dts[t], v, MILLION);
        double se = 2.0 / sqrt((double)MILLION);
        CHECK(fabs(m.mean - 1.0) < 6 * se);
        CHECK(fabs(sqrt(m.var) - 2.0) < 0.01 * 2.0);
        CHECK(isfinite(m.min) && isfinite(m.max));
        /* The share within one std of the mean is 68.27%. */
        size_t inside = 0, es = axon_dtype_size(dts[t]);
        for (size_t i = 0; i < MILLION; i++) inside += fabs(as_double(dts[t], v + i * es) - 1.0) < 2.0;
        CHECK(fabs((double)inside / MILLION - 0.6827) < 0.005);
        free(v);
    }
}

/* Exp(4): mean and std 1/4, every value finite and > 0, P(x > 1/4) = e^-1; lambda must be finite and > 0. */
static void test_exponential_has_mean_and_std_one_over_lambda(void) {
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64};
    for (size_t t = 0; t < 2; t++) {
        unsigned char *v = draw_2d(2, EXPONENTIAL, dts[t], 1, MILLION, 5, 0, 0);
        REQUIRE(v);
        struct moments m = moments_of(dts[t], v, MILLION);
        CHECK(fabs(m.mean - 0.25) < 6 * 0.25 / sqrt((double)MILLION));
        CHECK(fabs(sqrt(m.var) - 0.25) < 0.01 * 0.25);
        CHECK(m.min > 0 && isfinite(m.max));
        size_t above = 0, es = axon_dtype_size(dts[t]);
        for (size_t i = 0; i < MILLION; i++) above += as_double(dts[t], v + i * es) > 0.25;
        CHECK(fabs((double)above / MILLION - exp(-1.0)) < 0.005);
        free(v);
    }
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float x[4];
    const int64_t n = 4;
    axon_tensor_t tf = kc_tensor(x, AXON_FLOAT32, 1, &n, NULL), ti = kc_tensor(x, AXON_INT32, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_exponential(k.s, &tf, 0, 0, 0.0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_exponential(k.s, &tf, 0, 0, INFINITY), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_exponential(k.s, &ti, 0, 0, 1.0), AXON_ERROR_UNSUPPORTED);
    axon_runtime_destroy(k.rt);
}

/* n draws of dtype d from launch(kind) into a malloc'ed host buffer (NULL on failure). kind 0 cauchy(1, 2),
 * 1 log_normal(0.5, 0.25), 2 geometric(0.25), 3 normal(0.5, 0.25). */
static unsigned char *draw_more(int kind, axon_dtype_t d, int64_t n, uint64_t seed) {
    kc_dev_t k = kc_open(2);
    if (!k.rt) return NULL;
    const size_t bytes = (size_t)n * axon_dtype_size(d);
    void *dev = kc_upload(&k, NULL, bytes);
    unsigned char *host = malloc(bytes);
    axon_tensor_t t = kc_tensor(dev, d, 1, &n, NULL);
    axon_status_t st = kind == 0   ? axon_kernel_cauchy(k.s, &t, seed, 0, 1.0, 2.0)
                       : kind == 1 ? axon_kernel_log_normal(k.s, &t, seed, 0, 0.5, 0.25)
                       : kind == 2 ? axon_kernel_geometric(k.s, &t, seed, 0, 0.25)
                                   : axon_kernel_normal(k.s, &t, seed, 0, 0.5, 0.25);
    int ok = dev && host && st == AXON_OK && kc_download(&k, host, dev, bytes);
    axon_mem_free(k.dev, dev);
    axon_runtime_destroy(k.rt);
    if (!ok) free(host);
    return ok ? host : NULL;
}

/* The share of n values of dtype d below x. */
static double share_below(axon_dtype_t d, const unsigned char *v, size_t n, double x) {
    size_t below = 0, es = axon_dtype_size(d);
    for (size_t i = 0; i < n; i++) below += as_double(d, v + i * es) < x;
    return (double)below / (double)n;
}

/* Cauchy(1, 2): quartiles at -1, 1, 3; log-normal(0.5, 0.25): its log is the normal of the same draws; geometric
 * (0.25): mean 4, P(1) = 1/4, never below 1, in an integer dtype too; and their parameter checks. */
static void test_cauchy_log_normal_and_geometric_follow_their_distributions(void) {
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64};
    for (size_t t = 0; t < 2; t++) {
        unsigned char *c = draw_more(0, dts[t], MILLION, 11);
        REQUIRE(c);
        CHECK(fabs(share_below(dts[t], c, MILLION, -1.0) - 0.25) < 0.003);
        CHECK(fabs(share_below(dts[t], c, MILLION, 1.0) - 0.5) < 0.003);
        CHECK(fabs(share_below(dts[t], c, MILLION, 3.0) - 0.75) < 0.003);
        free(c);
        unsigned char *ln = draw_more(1, dts[t], MILLION, 12), *nv = draw_more(3, dts[t], MILLION, 12);
        REQUIRE(ln && nv);
        const size_t es = axon_dtype_size(dts[t]);
        int bad = 0;
        for (size_t i = 0; i < MILLION; i++) {
            const double x = as_double(dts[t], ln + i * es), z = as_double(dts[t], nv + i * es);
            bad += !(x > 0) || fabs(log(x) - z) > (t ? 1e-14 : 1e-6) * (1 + fabs(z));
        }
        CHECK_EQ_I64(bad, 0);
        free(ln);
        free(nv);
    }
    const axon_dtype_t gts[] = {AXON_FLOAT32, AXON_INT64, AXON_INT16};
    for (size_t t = 0; t < 3; t++) {
        unsigned char *g = draw_more(2, gts[t], MILLION, 13);
        REQUIRE(g);
        struct moments m = moments_of(gts[t], g, MILLION);
        CHECK(m.min == 1 && fabs(m.mean - 4.0) < 6 * sqrt(12.0) / sqrt((double)MILLION)); /* var (1 - p) / p^2 */
        CHECK(fabs(share_below(gts[t], g, MILLION, 1.5) - 0.25) < 0.003);
        free(g);
    }
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float x[4];
    const int64_t n = 4;
    axon_tensor_t tf = kc_tensor(x, AXON_FLOAT32, 1, &n, NULL), ti = kc_tensor(x, AXON_INT32, 1, &n, NULL);
    axon_tensor_t tb = kc_tensor(x, AXON_BOOL, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_cauchy(k.s, &tf, 0, 0, 0.0, 0.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("sigma > 0");
    CHECK_STATUS(axon_kernel_cauchy(k.s, &ti, 0, 0, 0.0, 1.0), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_log_normal(k.s, &tf, 0, 0, 0.0, -1.0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_geometric(k.s, &tf, 0, 0, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("p=1 is not in (0, 1)");
    CHECK_STATUS(axon_kernel_geometric(k.s, &tb, 0, 0, 0.5), AXON_ERROR_UNSUPPORTED);
    axon_runtime_destroy(k.rt);
}

/* randperm: Fisher-Yates as documented (recomputed here from the Philox blocks), a permutation, and bad dst refused. */
static void test_randperm_is_the_documented_fisher_yates(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t n = 100001;
    int64_t *got = malloc(sizeof(int64_t) * n), *want = malloc(sizeof(int64_t) * n);
    unsigned char *seen = calloc((size_t)n, 1);
    REQUIRE(got && want && seen);
    void *dev = kc_upload(&k, NULL, sizeof(int64_t) * n);
    axon_tensor_t t = kc_tensor(dev, AXON_INT64, 1, &n, NULL);
    CHECK_OK(axon_kernel_randperm(k.s, &t, 1234, 12));
    CHECK(kc_download(&k, got, dev, sizeof(int64_t) * n));
    for (int64_t i = 0; i < n; i++) want[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        uint32_t x[4];
        axon_philox_block(1234, 12, (uint64_t)i / 2, x);
        const uint64_t bits = x[2 * (i % 2)] | (uint64_t)x[2 * (i % 2) + 1] << 32;
        const int64_t j = (int64_t)(bits % (uint64_t)(i + 1)), tmp = want[i];
        want[i] = want[j], want[j] = tmp;
    }
    CHECK(memcmp(got, want, sizeof(int64_t) * n) == 0);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += got[i] < 0 || got[i] >= n || seen[got[i]]++;
    CHECK_EQ_I64(bad, 0);
    axon_tensor_t ti = kc_tensor(dev, AXON_INT32, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_randperm(k.s, &ti, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("contiguous 1-d int64");
    axon_mem_free(k.dev, dev);
    free(got), free(want), free(seen);
    axon_runtime_destroy(k.rt);
}

static void test_random_int_covers_its_range_evenly(void) {
    /* int32 in [-1000, 99000): 10 buckets of 10000 values each. */
    unsigned char *v = draw_2d(2, RANDOM_INT, AXON_INT32, 1, MILLION, 3, 0, 0);
    REQUIRE(v);
    int64_t bucket[10] = {0};
    int ok = 1;
    for (int i = 0; i < MILLION; i++) {
        int32_t x = ((int32_t *)v)[i];
        ok &= x >= -1000 && x < 99000;
        if (x >= -1000 && x < 99000) bucket[(x + 1000) / 10000]++;
    }
    CHECK(ok);
    double expect = MILLION / 10.0, tol = 6 * sqrt(expect);
    for (int b = 0; b < 10; b++) CHECK(fabs((double)bucket[b] - expect) < tol);
    free(v);
    /* int8 over all 256 values, and int64 over 2^40 values (64-bit draws). */
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    int64_t n = MILLION;
    void *dev = kc_upload(&k, NULL, MILLION * 8);
    unsigned char *got = malloc(MILLION * 8);
    axon_tensor_t t = kc_tensor(dev, AXON_INT8, 1, &n, NULL);
    CHECK_OK(axon_kernel_random_int(k.s, &t, 8, 0, -128, 256));
    CHECK(kc_download(&k, got, dev, MILLION));
    int64_t counts[256] = {0};
    for (int i = 0; i < MILLION; i++) counts[(uint8_t)got[i]]++;
    ok = 1;
    for (int b = 0; b < 256; b++) ok &= fabs((double)counts[b] - MILLION / 256.0) < 6 * sqrt(MILLION / 256.0);
    CHECK(ok);
    t.dtype = AXON_INT64;
    int64_t from = -((int64_t)1 << 39), range = (int64_t)1 << 40;
    CHECK_OK(axon_kernel_random_int(k.s, &t, 8, 0, from, (uint64_t)range));
    CHECK(kc_download(&k, got, dev, MILLION * 8));
    struct moments m = moments_of(AXON_INT64, got, MILLION);
    CHECK(m.min >= (double)from && m.max < (double)(from + range));
    CHECK(fabs(m.mean) < 6 * (double)range / sqrt(12.0 * MILLION));
    /* Floating dst: integers in range, stored as floats. */
    t.dtype = AXON_FLOAT32;
    CHECK_OK(axon_kernel_random_int(k.s, &t, 8, 0, 0, 10));
    CHECK(kc_download(&k, got, dev, MILLION * 4));
    ok = 1;
    for (int i = 0; i < MILLION; i++) {
        float x = ((float *)got)[i];
        ok &= x >= 0 && x < 10 && x == floorf(x);
    }
    CHECK(ok);
    free(got);
    axon_mem_free(k.dev, dev);
    axon_runtime_destroy(k.rt);
}

static void test_bernoulli_frequency_matches_p(void) {
    unsigned char *v = draw_2d(2, BERNOULLI, AXON_BOOL, 1, MILLION, 11, 0, 0);
    REQUIRE(v);
    int64_t ones = 0, other = 0;
    for (int i = 0; i < MILLION; i++) ones += v[i] == 1, other += v[i] > 1;
    CHECK_EQ_I64(other, 0);
    CHECK(fabs((double)ones / MILLION - 0.25) < 6 * sqrt(0.25 * 0.75 / MILLION));
    free(v);
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    int64_t n = 100000;
    void *dev = kc_upload(&k, NULL, (size_t)n * 8);
    double *got = malloc((size_t)n * 8);
    axon_tensor_t t = kc_tensor(dev, AXON_FLOAT64, 1, &n, NULL);
    CHECK_OK(axon_kernel_bernoulli(k.s, &t, 1, 0, 0.0));
    CHECK(kc_download(&k, got, dev, (size_t)n * 8));
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= got[i] == 0.0;
    CHECK_OK(axon_kernel_bernoulli(k.s, &t, 1, 0, 1.0));
    CHECK(kc_download(&k, got, dev, (size_t)n * 8));
    for (int64_t i = 0; i < n; i++) ok &= got[i] == 1.0;
    CHECK(ok);
    free(got);
    axon_mem_free(k.dev, dev);
    axon_runtime_destroy(k.rt);
}

/* bernoulli with a p per element: a broadcast p of one value gives the one-p kernel's bytes (float32 and float64 dst:
 * both lane widths); per-element p of 0 and 1 give 0 and 1 where they stand; a p outside [0, 1] fails at sync naming
 * the first one; a p of another shape is refused at launch. */
static void test_bernoulli_with_a_tensor_of_p(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 7, C = 30001 };
    const int64_t sz[2] = {R, C}, pst[2] = {0, 1}, n = R * C;
    double *p = malloc(sizeof(double) * C);
    unsigned char *want = malloc((size_t)n * 8), *got = malloc((size_t)n * 8);
    REQUIRE(p && want && got);
    for (int64_t c = 0; c < C; c++) p[c] = 0.25;
    void *dp = kc_upload(&k, p, sizeof(double) * C), *dd = kc_upload(&k, NULL, (size_t)n * 8);
    const axon_dtype_t dts[2] = {AXON_FLOAT32, AXON_FLOAT64};
    for (int t = 0; t < 2; t++) {
        axon_tensor_t td = kc_tensor(dd, dts[t], 2, sz, NULL), tp = kc_tensor(dp, AXON_FLOAT64, 2, sz, pst);
        CHECK_OK(axon_kernel_bernoulli(k.s, &td, 77, 8, 0.25));
        CHECK(kc_download(&k, want, dd, (size_t)n * axon_dtype_size(dts[t])));
        CHECK_OK(axon_kernel_bernoulli_tensor(k.s, &td, &tp, 77, 8));
        CHECK(kc_download(&k, got, dd, (size_t)n * axon_dtype_size(dts[t])));
        CHECK(memcmp(got, want, (size_t)n * axon_dtype_size(dts[t])) == 0);
    }
    for (int64_t c = 0; c < C; c++) p[c] = c % 2 ? 1.0 : 0.0;
    axon_mem_free(k.dev, dp);
    dp = kc_upload(&k, p, sizeof(double) * C);
    axon_tensor_t td = kc_tensor(dd, AXON_FLOAT64, 2, sz, NULL), tp = kc_tensor(dp, AXON_FLOAT64, 2, sz, pst);
    CHECK_OK(axon_kernel_bernoulli_tensor(k.s, &td, &tp, 3, 0));
    CHECK(kc_download(&k, got, dd, (size_t)n * 8));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += ((const double *)(void *)got)[i] != p[i % C];
    CHECK_EQ_I64(bad, 0);
    p[20000] = 1.5, p[25000] = -1.0;
    axon_mem_free(k.dev, dp);
    dp = kc_upload(&k, p, sizeof(double) * C);
    tp.data = dp;
    CHECK_OK(axon_kernel_bernoulli_tensor(k.s, &td, &tp, 3, 0));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("bernoulli: p=1.5 is not in [0, 1]");
    const int64_t other[2] = {R, C - 1};
    axon_tensor_t tq = kc_tensor(dp, AXON_FLOAT64, 2, other, pst);
    CHECK_STATUS(axon_kernel_bernoulli_tensor(k.s, &td, &tq, 3, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("must have dst's shape");
    axon_mem_free(k.dev, dp), axon_mem_free(k.dev, dd);
    free(p), free(want), free(got);
    axon_runtime_destroy(k.rt);
}

static void test_random_kernels_reject_bad_input(void) {
    axon_hw_null_t rec;
    CHECK_OK(axon_hw_null_create(&rec));
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, axon_hw_null(), rec);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    static int64_t storage[64];
    int64_t n = 8, none = 0, sizes[2] = {2, 4}, bcast[2] = {0, 1};
    axon_tensor_t t = kc_tensor(storage, AXON_INT32, 1, &n, NULL);
    CHECK_STATUS(axon_kernel_uniform(s, &t, 0, 0, 0, 1), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("uniform: int32 is not a floating dtype");
    CHECK_STATUS(axon_kernel_normal(s, &t, 0, 0, 0, 1), AXON_ERROR_UNSUPPORTED);
    t.dtype = AXON_COMPLEX64;
    CHECK_STATUS(axon_kernel_bernoulli(s, &t, 0, 0, 0.5), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_random_int(s, &t, 0, 0, 0, 5), AXON_ERROR_UNSUPPORTED);
    t.dtype = AXON_FLOAT32;
    CHECK_STATUS(axon_kernel_uniform(s, &t, 0, 0, 1, 0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_uniform(s, &t, 0, 0, -1e308, 1e308), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_uniform(s, &t, 0, 0, 0, INFINITY), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_normal(s, &t, 0, 0, 0, -1), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_normal(s, &t, 0, 0, NAN, 1), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_bernoulli(s, &t, 0, 0, 1.5), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_bernoulli(s, &t, 0, 0, NAN), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_random_int(s, &t, 0, 0, 0, (uint64_t)1 << 33), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("float32");
    CHECK_STATUS(axon_kernel_random_int(s, &t, 0, 0, 0, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("2^64");
    t = kc_tensor(storage, AXON_FLOAT32, 2, sizes, bcast);
    CHECK_STATUS(axon_kernel_uniform(s, &t, 0, 0, 0, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("uniform: dst has overlapping elements");
    CHECK_STATUS(axon_kernel_uniform(s, NULL, 0, 0, 0, 1), AXON_ERROR_INVALID_ARG);
    /* Empty tensors and rejected calls enqueue nothing. */
    t = kc_tensor(NULL, AXON_FLOAT32, 1, &none, NULL);
    CHECK_OK(axon_kernel_uniform(s, &t, 0, 0, 0, 1));
    CHECK_OK(axon_kernel_normal(s, &t, 0, 0, 0, 1));
    CHECK_OK(axon_kernel_random_int(s, &t, 0, 0, 0, 1));
    CHECK_OK(axon_kernel_bernoulli(s, &t, 0, 0, 0.5));
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(axon_hw_null_count(rec), 0);
    axon_runtime_destroy(rt);
    axon_hw_null_destroy(rec);
}

int main(void) {
    RUN(test_cauchy_log_normal_and_geometric_follow_their_distributions);
    RUN(test_philox_matches_the_known_answer_vectors);
    RUN(test_philox_blocks_counts_per_dtype);
    RUN(test_same_seed_and_offset_give_the_same_bytes_for_any_threads_and_layout);
    RUN(test_offsets_continue_the_stream_and_different_offsets_differ);
    RUN(test_uniform_stays_in_range_with_the_right_moments);
    RUN(test_uniform_never_rounds_up_to_the_upper_bound);
    RUN(test_normal_has_the_requested_mean_and_std);
    RUN(test_random_int_covers_its_range_evenly);
    RUN(test_bernoulli_frequency_matches_p);
    RUN(test_bernoulli_with_a_tensor_of_p);
    RUN(test_exponential_has_mean_and_std_one_over_lambda);
    RUN(test_randperm_is_the_documented_fisher_yates);
    RUN(test_random_kernels_reject_bad_input);
    return check_report();
}
