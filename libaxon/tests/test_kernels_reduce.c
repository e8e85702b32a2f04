/* axon_kernel_reduce: every op and dtype against a long double reference, over inner, outer, middle, several and all
 * dimensions, on transposed, sliced, reversed and expanded views, on shapes that take the split and outer paths;
 * float32 accuracy over 1M elements; empty reductions; NaN propagation; var/std corrections.
 * Tolerances (rr_tol): relative 1e-12 for float64, 2e-6 for float32, 2^-10 for float16, 2^-7 for bfloat16, of
 * max(|result|, sum of |terms|); integer and bool results exact. */
#include <complex.h>

#include "reduce_ref.h"

static const axon_dtype_t all_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16, AXON_INT32,
                                          AXON_INT64,   AXON_INT8,    AXON_UINT8,    AXON_BOOL};
#define NDTYPES (int)(sizeof all_dtypes / sizeof all_dtypes[0])

/* The out dtype PyTorch would give op on in dtype d. */
static axon_dtype_t out_dtype_for(axon_reduce_op_t op, axon_dtype_t d) {
    switch (op) {
    case AXON_REDUCE_SUM:
    case AXON_REDUCE_NANSUM:
    case AXON_REDUCE_PROD: return rr_is_float(d) ? d : AXON_INT64;
    case AXON_REDUCE_AMAX:
    case AXON_REDUCE_AMIN: return d;
    case AXON_REDUCE_ANY:
    case AXON_REDUCE_ALL: return AXON_BOOL;
    case AXON_REDUCE_COUNT_NONZERO:
    case AXON_REDUCE_XOR: return AXON_INT64;
    default: return rr_is_float(d) ? d : AXON_FLOAT32;
    }
}

typedef struct layout {
    const char *label;
    int nd;
    int64_t sizes[3], strides[3], off;
} layout_t;

/* Views over a 378-element buffer holding a [6, 7, 9] tensor. */
static const layout_t layouts[] = {
    {"contiguous", 3, {6, 7, 9}, {63, 9, 1}, 0},
    {"transposed", 3, {9, 7, 6}, {1, 9, 63}, 0},
    {"sliced", 3, {6, 7, 4}, {63, 9, 2}, 1},
    {"reversed", 3, {6, 7, 9}, {63, 9, -1}, 8},
    /* expanded views (stride 0): reductions over copies of one element and beside them */
    {"expanded dim 0", 3, {6, 7, 9}, {0, 9, 1}, 0},
    {"expanded dim 1", 3, {6, 7, 9}, {63, 0, 1}, 0},
    {"expanded dim 2", 3, {6, 7, 9}, {63, 9, 0}, 0},
};

/* Run op over the dims in mask of the view (sizes, strides, off) of host buffer h (hn elements, dtype d) into a
 * contiguous out of dtype od; compare every output with the reference. Returns the number of mismatches. */
static int run_case(const kc_dev_t *k, axon_reduce_op_t op, const axon_reduce_params_t *p, axon_dtype_t d,
                    axon_dtype_t od, const void *h, int64_t hn, int nd, const int64_t *sizes, const int64_t *strides,
                    int64_t off, unsigned mask, const char *label) {
    char *dev = rr_upload(k, d, h, hn);
    axon_tensor_t in = kc_tensor(dev + off * (int64_t)axon_dtype_size(d), d, nd, sizes, strides);
    int64_t osz[AXON_MAX_DIMS], nout = 1, count = 1, numel = 1;
    for (int i = 0; i < nd; i++) {
        osz[i] = (mask >> i) & 1 ? 1 : sizes[i];
        nout *= osz[i];
        count *= (mask >> i) & 1 ? sizes[i] : 1;
        numel *= sizes[i];
    }
    void *dout = rr_upload(k, od, NULL, nout);
    axon_tensor_t out = kc_tensor(dout, od, nd, osz, NULL);
    int bad = 0;
    axon_status_t st = axon_kernel_reduce(k->s, op, &out, &in, p);
    if (st != AXON_OK) {
        fprintf(stderr, "  %s %s %s->%s: %s\n", label, axon_reduce_op_name(op), axon_dtype_name(d),
                axon_dtype_name(od), axon_last_error());
        bad = 1;
    }
    void *got = malloc((size_t)nout * axon_dtype_size(od));
    if (!bad && !kc_download(k, got, dout, (size_t)nout * axon_dtype_size(od))) bad = 1;
    /* Gather each output's values in visit order. */
    long double *vals = malloc(sizeof(long double) * (size_t)(numel > 0 ? numel : 1));
    int64_t *fill = calloc((size_t)nout, sizeof(int64_t));
    for (int64_t e = 0; e < numel; e++) {
        int64_t rem = e, src = off, o = 0, ostep = 1;
        for (int i = nd - 1; i >= 0; i--) {
            int64_t idx = rem % sizes[i];
            rem /= sizes[i];
            src += idx * strides[i];
            if (!((mask >> i) & 1)) o += idx * ostep;
            ostep *= osz[i];
        }
        vals[o * count + fill[o]++] = rr_get(d, h, src);
    }
    for (int64_t o = 0; o < nout && !bad; o++) {
        long double scale, want = rr_reduce(op, p, od, vals + o * count, count, &scale);
        long double g = rr_get(od, got, o);
        if (!rr_close(od, g, want, scale)) {
            fprintf(stderr, "  %s mask %u %s(p=%g, c=%g) %s->%s: out[%lld] = %.10Lg, want %.10Lg\n", label, mask,
                    axon_reduce_op_name(op), p ? p->p : 2.0, p ? p->correction : 1.0, axon_dtype_name(d),
                    axon_dtype_name(od), (long long)o, g, want);
            bad++;
        }
    }
    free(vals);
    free(fill);
    free(got);
    axon_mem_free(k->dev, dev);
    axon_mem_free(k->dev, dout);
    return bad;
}

/* Run every params variant of op (norm orders, var corrections). */
static int run_variants(const kc_dev_t *k, axon_reduce_op_t op, axon_dtype_t d, const void *h, int64_t hn,
                        const layout_t *l, unsigned mask) {
    static const double orders[] = {0, 1, 2, 3, 0.5, INFINITY, -INFINITY};
    axon_reduce_params_t p = axon_reduce_params_default();
    axon_dtype_t od = out_dtype_for(op, d);
    int bad = 0;
    if (op == AXON_REDUCE_NORM) {
        for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
            p.p = orders[i];
            bad += run_case(k, op, &p, d, od, h, hn, l->nd, l->sizes, l->strides, l->off, mask, l->label);
        }
    } else if (op == AXON_REDUCE_VAR || op == AXON_REDUCE_STD) {
        for (int c = 0; c < 2; c++) {
            p.correction = c;
            bad += run_case(k, op, &p, d, od, h, hn, l->nd, l->sizes, l->strides, l->off, mask, l->label);
        }
    } else {
        bad += run_case(k, op, NULL, d, od, h, hn, l->nd, l->sizes, l->strides, l->off, mask, l->label);
    }
    return bad;
}

static void test_every_op_and_dtype_over_every_layout_matches_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const unsigned masks[] = {4, 1, 2, 5, 3, 7, 0};
    for (int di = 0; di < NDTYPES; di++) {
        axon_dtype_t d = all_dtypes[di];
        void *h = rr_fill(d, 378, 0), *h1 = rr_fill(d, 378, 1);
        for (int op = 0; op < AXON_REDUCE_OP_COUNT; op++)
            for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
                for (size_t mi = 0; mi < sizeof masks / sizeof masks[0]; mi++) {
                    /* floats: test_xor_of_floats_folds_their_float64_bits */
                    if (op == AXON_REDUCE_XOR && rr_is_float(d)) continue;
                    /* views other than the contiguous one get fewer masks: inner, outer, several */
                    if (li > 0 && mi >= 4) continue;
                    int bad = run_variants(&k, (axon_reduce_op_t)op, d, op == AXON_REDUCE_PROD ? h1 : h, 378,
                                           &layouts[li], masks[mi]);
                    if (bad) check_failures_in_test++;
                }
        free(h);
        free(h1);
    }
    axon_runtime_destroy(k.rt);
}

/* Shapes large enough for the split path (few outputs), the outer path with row chunks (few lanes, many rows) and
 * with many lane blocks, in float32, bfloat16 and int32. */
static void test_split_and_outer_paths_match_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const struct {
        int64_t sizes[2];
        unsigned mask;
    } shapes[] = {{{3, 70001}, 2}, {{1, 200003}, 3}, {{20011, 5}, 1}, {{40, 300}, 1}, {{3000, 129}, 1}};
    static const axon_reduce_op_t ops[] = {AXON_REDUCE_SUM,  AXON_REDUCE_MEAN, AXON_REDUCE_AMAX,
                                           AXON_REDUCE_NORM, AXON_REDUCE_VAR,  AXON_REDUCE_LOGSUMEXP,
                                           AXON_REDUCE_ALL,  AXON_REDUCE_COUNT_NONZERO, AXON_REDUCE_XOR};
    static const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_BFLOAT16, AXON_INT32};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            int64_t n = shapes[si].sizes[0] * shapes[si].sizes[1];
            void *h = rr_fill(dts[di], n, 0);
            layout_t l = {"large", 2, {shapes[si].sizes[0], shapes[si].sizes[1]}, {shapes[si].sizes[1], 1}, 0};
            for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
                if (!(ops[oi] == AXON_REDUCE_XOR && rr_is_float(dts[di])) &&
                    run_variants(&k, ops[oi], dts[di], h, n, &l, shapes[si].mask))
                    check_failures_in_test++;
            free(h);
        }
    axon_runtime_destroy(k.rt);
}

/* The documented lane order, in the work type: 64 lanes over whole groups of 64, the tail folded into lane 0 in
 * order, then lane l with lane l + w for w = 32, 16, .., 1 (each level's left operand first); op 0 sum, 1 product,
 * 2 max and 3 min (a NaN wins). */
#define LANE_ORDER_REF(NAME, W)                                                                      \
    static W NAME(int op, const W *x, int64_t n) {                                                   \
        W acc[64];                                                                                   \
        for (int l = 0; l < 64; l++) acc[l] = op == 1 ? (W)1 : op == 2 ? (W)-INFINITY : op == 3 ? (W)INFINITY : 0; \
        int64_t i = 0;                                                                               \
        for (; i + 64 <= n; i += 64)                                                                 \
            for (int l = 0; l < 64; l++) acc[l] = NAME##_comb(op, acc[l], x[i + l]);                 \
        for (; i < n; i++) acc[0] = NAME##_comb(op, acc[0], x[i]);                                   \
        for (int w = 32; w >= 1; w /= 2)                                                             \
            for (int l = 0; l < w; l++) acc[l] = NAME##_comb(op, acc[l], acc[l + w]);                \
        return acc[0];                                                                               \
    }
#define LANE_COMB(NAME, W)                                                                           \
    static W NAME##_comb(int op, W a, W v) {                                                         \
        if (op == 0) return a + v;                                                                   \
        if (op == 1) return a * v;                                                                   \
        if (op == 2) return (v > a) | (v != v) ? v : a;                                              \
        return (v < a) | (v != v) ? v : a;                                                           \
    }
LANE_COMB(lanes_f32, float)
LANE_ORDER_REF(lanes_f32, float)
LANE_COMB(lanes_f64, double)
LANE_ORDER_REF(lanes_f64, double)

/* Rows of up to one block (2048 elements) fold in exactly the documented lane order, bitwise, in float32 and
 * float64, for sum, prod, amax and amin, with row lengths around the lane count; the same values read with a stride
 * of 2 (gathered into a buffer first) give the same bits. Catches a tree that pairs lanes differently or folds the
 * tail after it. */
static void test_rows_fold_in_the_documented_lane_order(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const int64_t lens[] = {1, 5, 37, 63, 64, 65, 100, 127, 200, 1000, 2047, 2048};
    static const axon_reduce_op_t ops[] = {AXON_REDUCE_SUM, AXON_REDUCE_PROD, AXON_REDUCE_AMAX, AXON_REDUCE_AMIN};
    const int64_t R = 37; /* two blocks of the short rows' 16 and a remainder */
    for (int f64 = 0; f64 < 2; f64++) {
        const axon_dtype_t d = f64 ? AXON_FLOAT64 : AXON_FLOAT32;
        const size_t es = f64 ? 8 : 4;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
                const int64_t n = lens[li];
                double *v = malloc(sizeof(double) * (size_t)(R * n));
                for (int64_t i = 0; i < R * n; i++) {
                    /* magnitudes spread over 2^-12 .. 2^12 so that any other order rounds differently */
                    double m = ldexp(1.0, (int)(rr_rand() % 25) - 12) * ((double)(rr_rand() % 1000) / 999.0 - 0.5);
                    v[i] = ops[oi] == AXON_REDUCE_PROD ? 1.0 + m * 1e-3 : m;
                }
                if (ops[oi] == AXON_REDUCE_AMAX || ops[oi] == AXON_REDUCE_AMIN) v[2 * n + n / 2] = NAN; /* row 2 */
                unsigned char *h = malloc(es * (size_t)(R * n)), *ht = calloc(2 * (size_t)(R * n), es);
                for (int64_t r = 0; r < R; r++)
                    for (int64_t j = 0; j < n; j++) {
                        float f = (float)v[r * n + j];
                        const void *src = f64 ? (const void *)&v[r * n + j] : (const void *)&f;
                        memcpy(h + (r * n + j) * es, src, es);
                        memcpy(ht + (r * 2 * n + 2 * j) * es, src, es);
                    }
                void *dev = rr_upload(&k, d, h, R * n), *devt = rr_upload(&k, d, ht, 2 * R * n);
                void *dout = rr_upload(&k, d, NULL, 2 * R);
                const int64_t sz[2] = {R, n}, rowmajor[2] = {n, 1}, spaced[2] = {2 * n, 2}, osz[2] = {R, 1};
                axon_tensor_t in = kc_tensor(dev, d, 2, sz, rowmajor), ins = kc_tensor(devt, d, 2, sz, spaced);
                axon_tensor_t out = kc_tensor(dout, d, 2, osz, NULL);
                axon_tensor_t outt = kc_tensor((char *)dout + R * es, d, 2, osz, NULL);
                CHECK_OK(axon_kernel_reduce(k.s, ops[oi], &out, &in, NULL));
                CHECK_OK(axon_kernel_reduce(k.s, ops[oi], &outt, &ins, NULL));
                unsigned char got[2 * 37 * 8];
                CHECK(kc_download(&k, got, dout, 2 * (size_t)R * es));
                for (int64_t r = 0; r < R; r++) {
                    unsigned char want[8];
                    if (f64) {
                        double w = lanes_f64((int)oi, (const double *)(h + r * n * es), n);
                        memcpy(want, &w, 8);
                    } else {
                        float w = lanes_f32((int)oi, (const float *)(h + r * n * es), n);
                        memcpy(want, &w, 4);
                    }
                    int same = memcmp(got + r * es, want, es) == 0, same_s = memcmp(got + (R + r) * es, want, es) == 0;
                    if (!same || !same_s)
                        fprintf(stderr, "  %s %s n %lld row %lld: contiguous %s, strided %s\n", axon_dtype_name(d),
                                axon_reduce_op_name(ops[oi]), (long long)n, (long long)r, same ? "ok" : "differs",
                                same_s ? "ok" : "differs");
                    CHECK(same && same_s);
                }
                axon_mem_free(k.dev, dev);
                axon_mem_free(k.dev, devt);
                axon_mem_free(k.dev, dout);
                free(v);
                free(h);
                free(ht);
            }
    }
    axon_runtime_destroy(k.rt);
}

/* float16 and bfloat16 sums (and means) add their values widened to float in float32's order, bitwise: rows around
 * the lane count and the block size (one block, several blocks), read in place and with a stride of 2, and a full
 * reduction (the split path), against the same reduction of the widened values in float32 (whose lane order the
 * test above pins). A float32 out keeps every bit of the sum. */
static void test_half_sums_fold_their_widened_values_in_float_order(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const int64_t lens[] = {1, 7, 63, 64, 65, 127, 1000, 2047, 2048, 2049, 5000, 70001};
    static const axon_dtype_t dts[] = {AXON_FLOAT16, AXON_BFLOAT16};
    const int64_t R = 5;
    for (size_t di = 0; di < 2; di++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int mean = 0; mean < 2; mean++) {
                const axon_dtype_t d = dts[di];
                const int64_t n = lens[li], numel = R * n;
                uint16_t *h = malloc(2 * (size_t)numel), *ht = calloc(2 * (size_t)numel, 2);
                float *f = malloc(sizeof(float) * (size_t)numel);
                for (int64_t i = 0; i < numel; i++) {
                    rr_set(d, h, i, ldexpl((long double)((int)(rr_rand() % 2001) - 1000) / 1000,
                                              (int)(rr_rand() % 9) - 4));
                    f[i] = (float)rr_get(d, h, i);
                    ht[2 * i] = h[i];
                }
                void *dh = rr_upload(&k, d, h, numel), *dht = rr_upload(&k, d, ht, 2 * numel);
                void *df = rr_upload(&k, AXON_FLOAT32, f, numel), *dout = rr_upload(&k, AXON_FLOAT32, NULL, 3 * R + 2);
                const int64_t sz[2] = {R, n}, spaced[2] = {2 * n, 2}, osz[2] = {R, 1}, one[2] = {1, 1};
                axon_tensor_t in = kc_tensor(dh, d, 2, sz, NULL), ins = kc_tensor(dht, d, 2, sz, spaced);
                axon_tensor_t inf = kc_tensor(df, AXON_FLOAT32, 2, sz, NULL);
                float *o = dout;
                axon_tensor_t out = kc_tensor(o, AXON_FLOAT32, 2, osz, NULL);
                axon_tensor_t outs = kc_tensor(o + R, AXON_FLOAT32, 2, osz, NULL);
                axon_tensor_t outf = kc_tensor(o + 2 * R, AXON_FLOAT32, 2, osz, NULL);
                axon_tensor_t all = kc_tensor(o + 3 * R, AXON_FLOAT32, 2, one, NULL);
                axon_tensor_t allf = kc_tensor(o + 3 * R + 1, AXON_FLOAT32, 2, one, NULL);
                const axon_reduce_op_t op = mean ? AXON_REDUCE_MEAN : AXON_REDUCE_SUM;
                CHECK_OK(axon_kernel_reduce(k.s, op, &out, &in, NULL));
                CHECK_OK(axon_kernel_reduce(k.s, op, &outs, &ins, NULL));
                CHECK_OK(axon_kernel_reduce(k.s, op, &outf, &inf, NULL));
                CHECK_OK(axon_kernel_reduce(k.s, op, &all, &in, NULL));
                CHECK_OK(axon_kernel_reduce(k.s, op, &allf, &inf, NULL));
                float got[3 * 5 + 2];
                CHECK(kc_download(&k, got, dout, sizeof got));
                for (int64_t r = 0; r < R; r++) {
                    const int same = memcmp(&got[r], &got[2 * R + r], 4) == 0;
                    const int same_s = memcmp(&got[R + r], &got[2 * R + r], 4) == 0;
                    if (!same || !same_s)
                        fprintf(stderr, "  %s %s n %lld row %lld: in place %s, strided %s (float32 %.9g)\n",
                                axon_dtype_name(d), axon_reduce_op_name(op), (long long)n, (long long)r,
                                same ? "ok" : "differs", same_s ? "ok" : "differs", (double)got[2 * R + r]);
                    CHECK(same && same_s);
                }
                if (memcmp(&got[3 * R], &got[3 * R + 1], 4) != 0)
                    fprintf(stderr, "  %s %s of all %lld: %.9g against float32's %.9g\n", axon_dtype_name(d),
                            axon_reduce_op_name(op), (long long)numel, (double)got[3 * R], (double)got[3 * R + 1]);
                CHECK(memcmp(&got[3 * R], &got[3 * R + 1], 4) == 0);
                axon_mem_free(k.dev, dh);
                axon_mem_free(k.dev, dht);
                axon_mem_free(k.dev, df);
                axon_mem_free(k.dev, dout);
                free(h);
                free(ht);
                free(f);
            }
    axon_runtime_destroy(k.rt);
}

/* float32 sums of 1M values stay within 1e-5 of the float64 reference, relative to the sum of |x|, for a full
 * reduction, a column reduction (outer path) and positive values (where sequential float32 drifts most). */
static void test_float32_sum_of_1m_elements_is_accurate(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t n = 1 << 20;
    float *h = malloc(sizeof(float) * (size_t)n);
    for (int pos = 0; pos < 2; pos++) {
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            h[i] = (float)(rr_rand() % 100000) / 99991.0f - (pos ? 0.0f : 0.5f);
            exact += h[i], mag += fabs(h[i]);
        }
        float *dev = rr_upload(&k, AXON_FLOAT32, h, n), *dout = rr_upload(&k, AXON_FLOAT32, NULL, 16);
        const int64_t full[1] = {n}, one[1] = {1}, cols[2] = {n / 16, 16}, orow[2] = {1, 16};
        axon_tensor_t in = kc_tensor(dev, AXON_FLOAT32, 1, full, NULL), out = kc_tensor(dout, AXON_FLOAT32, 1, one, NULL);
        float got[16];
        CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, &in, NULL));
        CHECK(kc_download(&k, got, dout, sizeof(float)));
        CHECK(fabs(got[0] - exact) <= 1e-5 * mag);
        if (fabs(got[0] - exact) > 1e-6 * mag) fprintf(stderr, "  full: rel err %g\n", fabs(got[0] - exact) / mag);
        in = kc_tensor(dev, AXON_FLOAT32, 2, cols, NULL);
        out = kc_tensor(dout, AXON_FLOAT32, 2, orow, NULL);
        CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, &in, NULL));
        CHECK(kc_download(&k, got, dout, sizeof got));
        for (int c = 0; c < 16; c++) {
            double e = 0, m = 0;
            for (int64_t r = 0; r < n / 16; r++) e += h[r * 16 + c], m += fabs(h[r * 16 + c]);
            CHECK(fabs(got[c] - e) <= 1e-5 * m);
        }
        axon_mem_free(k.dev, dev);
        axon_mem_free(k.dev, dout);
    }
    free(h);
    axon_runtime_destroy(k.rt);
}

/* The host xor of output o of a rows x cols matrix of words reduced over each row (c 0), each column (c 1) or all of
 * it (c 2). */
static uint64_t xor_want(const uint64_t *w, int64_t rows, int64_t cols, int c, int64_t o) {
    uint64_t want = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            if ((c == 0 && r == o) || (c == 1 && j == o) || c == 2) want ^= w[r * cols + j];
    return want;
}

/* XOR keeps all 64 bits: full-width int64 values (top bit included) over the inner, split and outer paths against
 * a host xor, int32 values sign-extended; an empty xor is 0; a floating out is refused with a message. */
static void test_xor_keeps_every_bit(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t rows = 3, cols = 70001, n = rows * cols;
    int64_t *h = malloc(sizeof(int64_t) * (size_t)n);
    uint64_t z = 0x9e3779b97f4a7c15u;
    for (int64_t i = 0; i < n; i++) {
        z += 0x9e3779b97f4a7c15u;
        uint64_t x = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9u;
        h[i] = (int64_t)(x ^ (x >> 29));
    }
    int64_t *dev = rr_upload(&k, AXON_INT64, h, n), *dout = rr_upload(&k, AXON_INT64, NULL, cols);
    int64_t *got = malloc(sizeof(int64_t) * (size_t)cols);
    const int64_t isz[2] = {rows, cols}, per_row[2] = {rows, 1}, per_col[2] = {1, cols}, all[2] = {1, 1};
    axon_tensor_t in = kc_tensor(dev, AXON_INT64, 2, isz, NULL);
    /* over each row (inner, and split: 70001 elements in few outputs), each column (outer), and everything */
    const int64_t *osz[3] = {per_row, per_col, all};
    for (int c = 0; c < 3; c++) {
        axon_tensor_t out = kc_tensor(dout, AXON_INT64, 2, osz[c], NULL);
        CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_XOR, &out, &in, NULL));
        int64_t nout = osz[c][0] * osz[c][1];
        CHECK(kc_download(&k, got, dout, sizeof(int64_t) * (size_t)nout));
        for (int64_t o = 0; o < nout; o++) {
            const uint64_t want = xor_want((const uint64_t *)h, rows, cols, c, o);
            if ((uint64_t)got[o] != want) {
                fprintf(stderr, "  xor case %d output %lld: got %llx want %llx\n", c, (long long)o,
                        (unsigned long long)got[o], (unsigned long long)want);
                check_failures_in_test++;
                break;
            }
        }
    }
    /* int32 -1 and 6 sign-extend: -1 ^ 6 = -7 */
    const int32_t small[2] = {-1, 6};
    const int64_t two[1] = {2}, one[1] = {1};
    int32_t *d32 = rr_upload(&k, AXON_INT32, small, 2);
    axon_tensor_t i32 = kc_tensor(d32, AXON_INT32, 1, two, NULL), o1 = kc_tensor(dout, AXON_INT64, 1, one, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_XOR, &o1, &i32, NULL));
    CHECK(kc_download(&k, got, dout, sizeof(int64_t)));
    CHECK(got[0] == -7);
    const int64_t zero[1] = {0};
    axon_tensor_t empty = kc_tensor(d32, AXON_INT32, 1, zero, NULL);
    const int64_t five = 5;
    int64_t *d5 = rr_upload(&k, AXON_INT64, &five, 1);
    axon_tensor_t o5 = kc_tensor(d5, AXON_INT64, 1, one, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_XOR, &o5, &empty, NULL));
    CHECK(kc_download(&k, got, d5, sizeof(int64_t)));
    CHECK(got[0] == 0);
    axon_mem_free(k.dev, d5);
    axon_tensor_t f_out = kc_tensor(dout, AXON_FLOAT64, 1, one, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_XOR, &f_out, &i32, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("out must have an integer or bool dtype, got float64");
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dev);
    axon_mem_free(k.dev, dout);
    axon_mem_free(k.dev, d32);
    free(got);
    free(h);
    axon_runtime_destroy(k.rt);
}

/* XOR of a floating in folds the bits of each value widened to float64 (torch.hash_tensor's definition): every
 * floating dtype, with -0, infinities, a NaN and the smallest subnormal among the values, over rows (the split path
 * for 70001 elements), columns (the outer path) and everything, against a host xor of (double)x's bits. */
static void test_xor_of_floats_folds_their_float64_bits(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_FLOAT16, AXON_BFLOAT16};
    static const long double tiny[] = {0x1p-149L, 0x1p-1074L, 0x1p-24L, 0x1p-133L};
    const int64_t rows = 3, cols = 70001, n = rows * cols;
    const int64_t isz[2] = {rows, cols}, per_row[2] = {rows, 1}, per_col[2] = {1, cols}, all[2] = {1, 1};
    const int64_t *osz[3] = {per_row, per_col, all};
    uint64_t *bits = malloc(sizeof(uint64_t) * (size_t)n), *got = malloc(sizeof(uint64_t) * (size_t)cols);
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        axon_dtype_t d = dts[di];
        void *h = rr_fill(d, n, 0);
        const long double special[] = {-0.0L, INFINITY, -INFINITY, NAN, tiny[di], -tiny[di]};
        for (int j = 0; j < 6; j++) rr_set(d, h, 1000 * j + 7, special[j]);
        for (int64_t i = 0; i < n; i++) {
            double x = (double)rr_get(d, h, i);
            memcpy(&bits[i], &x, sizeof x);
        }
        void *dev = rr_upload(&k, d, h, n), *dout = rr_upload(&k, AXON_INT64, NULL, cols);
        axon_tensor_t in = kc_tensor(dev, d, 2, isz, NULL);
        for (int c = 0; c < 3; c++) {
            axon_tensor_t out = kc_tensor(dout, AXON_INT64, 2, osz[c], NULL);
            CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_XOR, &out, &in, NULL));
            const int64_t nout = osz[c][0] * osz[c][1];
            CHECK(kc_download(&k, got, dout, sizeof(uint64_t) * (size_t)nout));
            for (int64_t o = 0; o < nout; o++) {
                const uint64_t want = xor_want(bits, rows, cols, c, o);
                if (got[o] != want) {
                    fprintf(stderr, "  xor of %s, case %d, output %lld: got %llx want %llx\n", axon_dtype_name(d), c,
                            (long long)o, (unsigned long long)got[o], (unsigned long long)want);
                    check_failures_in_test++;
                    break;
                }
            }
        }
        axon_mem_free(k.dev, dev);
        axon_mem_free(k.dev, dout);
        free(h);
    }
    free(bits);
    free(got);
    axon_runtime_destroy(k.rt);
}

/* Complex SUM and MEAN reduce the real and imaginary parts separately: over dim 0 of a transposed complex128 view,
 * over everything of a complex64 tensor into complex64 (also as a tensor of AXON_MAX_DIMS dimensions), and MEAN over
 * dim 1; the other ops are refused. */
static void test_complex_sum_and_mean_reduce_each_part(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 37, C = 5 };
    static double h[R * C][2];
    static float hf[R * C][2];
    for (int i = 0; i < R * C; i++) {
        h[i][0] = (double)(rr_rand() % 1000) / 7.0 - 60, h[i][1] = (double)(rr_rand() % 1000) / 13.0 - 30;
        hf[i][0] = (float)h[i][0], hf[i][1] = (float)h[i][1];
    }
    void *dev = kc_upload(&k, h, sizeof h), *devf = kc_upload(&k, hf, sizeof hf), *dout = kc_upload(&k, NULL, 1024);
    REQUIRE(dev && devf && dout);
    /* the [C, R] transpose of the [R, C] array, summed over its dim 0 (the C columns) into [1, R] */
    const int64_t tsz[2] = {C, R}, tst[2] = {1, C}, osz[2] = {1, R};
    axon_tensor_t in = kc_tensor(dev, AXON_COMPLEX128, 2, tsz, tst), out = kc_tensor(dout, AXON_COMPLEX128, 2, osz, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, &in, NULL));
    double got[R][2];
    REQUIRE(kc_download(&k, got, dout, sizeof got));
    for (int r = 0; r < R; r++) {
        double re = 0, im = 0;
        for (int c = 0; c < C; c++) re += h[r * C + c][0], im += h[r * C + c][1];
        CHECK(fabs(got[r][0] - re) <= 1e-12 * 400 && fabs(got[r][1] - im) <= 1e-12 * 400);
    }
    /* MEAN over dim 1 of the [R, C] array into [R, 1] */
    const int64_t sz[2] = {R, C}, o1[2] = {R, 1};
    in = kc_tensor(dev, AXON_COMPLEX128, 2, sz, NULL), out = kc_tensor(dout, AXON_COMPLEX128, 2, o1, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_MEAN, &out, &in, NULL));
    REQUIRE(kc_download(&k, got, dout, sizeof got));
    for (int r = 0; r < R; r++) {
        double re = 0, im = 0;
        for (int c = 0; c < C; c++) re += h[r * C + c][0], im += h[r * C + c][1];
        CHECK(fabs(got[r][0] - re / C) <= 1e-12 * 100 && fabs(got[r][1] - im / C) <= 1e-12 * 100);
    }
    /* complex64 over everything */
    const int64_t all[1] = {R * C}, one[1] = {1};
    in = kc_tensor(devf, AXON_COMPLEX64, 1, all, NULL), out = kc_tensor(dout, AXON_COMPLEX64, 1, one, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, &in, NULL));
    float gf[2];
    REQUIRE(kc_download(&k, gf, dout, sizeof gf));
    double re = 0, im = 0, mag = 0;
    for (int i = 0; i < R * C; i++) re += hf[i][0], im += hf[i][1], mag += fabs(hf[i][0]) + fabs(hf[i][1]);
    CHECK(fabs(gf[0] - re) <= 1e-6 * mag && fabs(gf[1] - im) <= 1e-6 * mag);
    /* a tensor of AXON_MAX_DIMS dimensions: the parts need no extra one */
    int64_t dims[AXON_MAX_DIMS], odims[AXON_MAX_DIMS];
    for (int d = 0; d < AXON_MAX_DIMS; d++) dims[d] = 1, odims[d] = 1;
    dims[0] = R * C;
    in = kc_tensor(devf, AXON_COMPLEX64, AXON_MAX_DIMS, dims, NULL);
    out = kc_tensor(dout, AXON_COMPLEX64, AXON_MAX_DIMS, odims, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, &in, NULL));
    REQUIRE(kc_download(&k, gf, dout, sizeof gf));
    CHECK(fabs(gf[0] - re) <= 1e-6 * mag && fabs(gf[1] - im) <= 1e-6 * mag);
    /* refused: an op other than SUM, MEAN, PROD and LOGSUMEXP; complex in, real out */
    in = kc_tensor(dev, AXON_COMPLEX128, 2, sz, NULL), out = kc_tensor(dout, AXON_COMPLEX128, 2, o1, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_AMAX, &out, &in, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("complex");
    out = kc_tensor(dout, AXON_FLOAT64, 2, o1, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_PROD, &out, &in, NULL), AXON_ERROR_UNSUPPORTED);
    out = kc_tensor(dout, AXON_FLOAT64, 2, o1, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, &in, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dev);
    axon_mem_free(k.dev, devf);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* The reference of one complex output over n elements (x[i] = (re, im)): PROD as c10::complex multiplies, from 1;
 * LOGSUMEXP as PyTorch's composite: shifted by the largest real part m (NaN if any real part is; 0 if infinite),
 * log(sum exp(z - m)) + m. In long double. */
static void rc_ref(int lse, const long double (*x)[2], int64_t n, int64_t step, long double *re, long double *im) {
    long double complex acc = lse ? 0 : 1;
    long double m = -INFINITY;
    for (int64_t i = 0; i < n && lse; i++) m = isnan(x[i * step][0]) || x[i * step][0] > m ? x[i * step][0] : m;
    if (isinf(m)) m = 0;
    for (int64_t i = 0; i < n; i++) {
        const long double a = x[i * step][0], b = x[i * step][1];
        if (lse) acc += cexpl(CMPLXL(a - m, b));
        else acc = CMPLXL(creall(acc) * a - cimagl(acc) * b, creall(acc) * b + cimagl(acc) * a);
    }
    if (lse) acc = clogl(acc) + m;
    *re = creall(acc), *im = cimagl(acc);
}

/* PROD of n complex128 values as libaxon computes it, to the bit: element i into partial product i % 16 by the
 * textbook formula, the 16 multiplied together in order at the end. */
static void rc_lanes_ref(const double (*x)[2], int64_t n, double *re, double *im) {
    double lr[16], li[16];
    for (int l = 0; l < 16; l++) lr[l] = 1, li[l] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int l = (int)(i % 16);
        const double a = lr[l], b = li[l];
        lr[l] = a * x[i][0] - b * x[i][1], li[l] = a * x[i][1] + b * x[i][0];
    }
    double a = lr[0], b = li[0];
    for (int l = 1; l < 16; l++) {
        const double c = a * lr[l] - b * li[l];
        b = a * li[l] + b * lr[l], a = c;
    }
    *re = a, *im = b;
}

/* PROD and LOGSUMEXP of complex64 and complex128 (and float32 into complex128) over dim 1, dim 0 of a transposed view
 * and everything, against rc_ref; a NaN real part, all -inf and a +inf real part in LOGSUMEXP rows; empty
 * reductions give 1 and -inf. */
static void test_complex_prod_and_logsumexp_match_a_long_double_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 6, C = 41, N = R * C }; /* rows of 41: whole rounds of the 16 lanes and a rest */
    static long double x[2][N][2];   /* [0]: PROD's values (near the unit circle), [1]: LOGSUMEXP's */
    for (int64_t e = 0; e < N; e++) {
        const long double t = (long double)((int)(rr_rand() % 1000) - 500) / 150;
        const long double r = 1 + (long double)((int)(rr_rand() % 41) - 20) / 200;
        x[0][e][0] = r * cosl(t), x[0][e][1] = r * sinl(t);
        x[1][e][0] = (long double)((int)(rr_rand() % 601) - 300) / 100;
        x[1][e][1] = (long double)((int)(rr_rand() % 1001) - 500) / 100;
    }
    x[1][1 * C + 4][0] = NAN;
    for (int c = 0; c < C; c++) x[1][2 * C + c][0] = -INFINITY;
    x[1][3 * C + 2][0] = INFINITY;
    const axon_dtype_t ins[] = {AXON_COMPLEX64, AXON_COMPLEX128, AXON_FLOAT32};
    const axon_dtype_t outs[] = {AXON_COMPLEX64, AXON_COMPLEX128, AXON_COMPLEX128};
    for (int lse = 0; lse < 2; lse++)
        for (int c = 0; c < 3; c++) {
            const axon_dtype_t d = ins[c], od = outs[c];
            const size_t es = axon_dtype_size(d), oes = axon_dtype_size(od);
            long double v[N][2];
            unsigned char h[N * 16], got[N * 16];
            for (int64_t e = 0; e < N; e++) {   /* the values as stored in d, for the reference too */
                if (d == AXON_COMPLEX64) {
                    ((float *)h)[2 * e] = (float)x[lse][e][0], ((float *)h)[2 * e + 1] = (float)x[lse][e][1];
                    v[e][0] = ((float *)h)[2 * e], v[e][1] = ((float *)h)[2 * e + 1];
                } else if (d == AXON_COMPLEX128) {
                    ((double *)h)[2 * e] = (double)x[lse][e][0], ((double *)h)[2 * e + 1] = (double)x[lse][e][1];
                    v[e][0] = ((double *)h)[2 * e], v[e][1] = ((double *)h)[2 * e + 1];
                } else {
                    ((float *)h)[e] = (float)x[lse][e][0];
                    v[e][0] = ((float *)h)[e], v[e][1] = 0;
                }
            }
            void *dev = kc_upload(&k, h, N * es), *dout = kc_upload(&k, NULL, N * oes);
            const axon_reduce_op_t op = lse ? AXON_REDUCE_LOGSUMEXP : AXON_REDUCE_PROD;
            /* 0: [R, C] over dim 1; 1: the [C, R] transpose over dim 0; 2: everything */
            for (int form = 0; form < 3; form++) {
                const int64_t sz[2] = {R, C}, o1[2] = {R, 1}, tsz[2] = {C, R}, tst[2] = {1, C}, o0[2] = {1, R};
                const int64_t osz[2] = {1, 1};
                axon_tensor_t in = form == 1 ? kc_tensor(dev, d, 2, tsz, tst) : kc_tensor(dev, d, 2, sz, NULL);
                axon_tensor_t out = kc_tensor(dout, od, 2, form == 0 ? o1 : form == 1 ? o0 : osz, NULL);
                CHECK_OK(axon_kernel_reduce(k.s, op, &out, &in, NULL));
                REQUIRE(kc_download(&k, got, dout, (form == 2 ? 1 : R) * oes));
                for (int64_t o = 0; o < (form == 2 ? 1 : R); o++) {
                    long double re, im;
                    rc_ref(lse, (const long double (*)[2])v + (form == 2 ? 0 : o * C), form == 2 ? N : C, 1, &re,
                           &im);
                    const long double gre = od == AXON_COMPLEX64 ? ((float *)got)[2 * o] : ((double *)got)[2 * o];
                    const long double gim =
                        od == AXON_COMPLEX64 ? ((float *)got)[2 * o + 1] : ((double *)got)[2 * o + 1];
                    const long double tol = (od == AXON_COMPLEX64 ? 4e-6L : 1e-13L) * (1 + fabsl(re) + fabsl(im));
                    const int ok = (isnan(re) ? isnan(gre) : isinf(re) ? gre == re : fabsl(gre - re) <= tol) &&
                                   (isnan(im) ? isnan(gim) : fabsl(gim - im) <= tol);
                    /* complex128 products in place: the same bits as rc_lanes_ref, whichever vector form ran */
                    if (!lse && d == AXON_COMPLEX128 && form != 1) {
                        double lre, lim;
                        rc_lanes_ref((const double (*)[2])h + (form == 2 ? 0 : o * C), form == 2 ? N : C, &lre, &lim);
                        CHECK(memcmp(&lre, (double *)got + 2 * o, sizeof lre) == 0);
                        CHECK(memcmp(&lim, (double *)got + 2 * o + 1, sizeof lim) == 0);
                    }
                    if (!ok) {
                        fprintf(stderr, "  %s %s -> %s form %d output %lld: (%Lg, %Lg) want (%Lg, %Lg)\n",
                                axon_reduce_op_name(op), axon_dtype_name(d), axon_dtype_name(od), form, (long long)o,
                                gre, gim, re, im);
                        check_failures_in_test++;
                    }
                }
            }
            axon_mem_free(k.dev, dev);
            axon_mem_free(k.dev, dout);
        }
    /* PROD over dims 1 and 2 of a [2, 35, 3] slice of [2, 35, 4]: 105 elements per output in 35 runs of 3, so the
     * lanes' rounds cross run boundaries */
    {
        enum { B = 2, M = 35, K = 4 };
        static double hb[B * M * K][2];
        long double v3[B * M * 3][2];
        for (int64_t e = 0; e < B * M * K; e++) {
            const double t = (double)((int)(rr_rand() % 1000) - 500) / 150;
            const double r = 1 + (double)((int)(rr_rand() % 41) - 20) / 400;
            hb[e][0] = r * cos(t), hb[e][1] = r * sin(t);
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < M * 3; i++)
                v3[b * M * 3 + i][0] = hb[(b * M + i / 3) * K + i % 3][0],
                v3[b * M * 3 + i][1] = hb[(b * M + i / 3) * K + i % 3][1];
        void *dev = kc_upload(&k, hb, sizeof hb), *dout = kc_upload(&k, NULL, 64);
        const int64_t sz[3] = {B, M, 3}, st[3] = {M * K, K, 1}, osz[3] = {B, 1, 1};
        axon_tensor_t in = kc_tensor(dev, AXON_COMPLEX128, 3, sz, st);
        axon_tensor_t out = kc_tensor(dout, AXON_COMPLEX128, 3, osz, NULL);
        CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_PROD, &out, &in, NULL));
        double g3[B][2];
        REQUIRE(kc_download(&k, g3, dout, sizeof g3));
        for (int b = 0; b < B; b++) {
            long double re, im;
            rc_ref(0, (const long double (*)[2])v3 + b * M * 3, M * 3, 1, &re, &im);
            const long double tol = 1e-13L * (1 + fabsl(re) + fabsl(im));
            CHECK(fabsl(g3[b][0] - re) <= tol && fabsl(g3[b][1] - im) <= tol);
        }
        axon_mem_free(k.dev, dev);
        axon_mem_free(k.dev, dout);
    }
    /* empty: a [2, 0] complex64 tensor over dim 1 */
    void *dout = kc_upload(&k, NULL, 64);
    const int64_t esz[2] = {2, 0}, eo[2] = {2, 1};
    axon_tensor_t ein = kc_tensor(dout, AXON_COMPLEX64, 2, esz, NULL);
    axon_tensor_t eout = kc_tensor(dout, AXON_COMPLEX64, 2, eo, NULL);
    float g[4];
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_PROD, &eout, &ein, NULL));
    REQUIRE(kc_download(&k, g, dout, sizeof g));
    CHECK(g[0] == 1 && g[1] == 0 && g[2] == 1 && g[3] == 0);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_LOGSUMEXP, &eout, &ein, NULL));
    REQUIRE(kc_download(&k, g, dout, sizeof g));
    CHECK(g[0] == -INFINITY && g[1] == 0 && g[2] == -INFINITY && g[3] == 0);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* ANY, ALL and COUNT_NONZERO of complex64, complex128 and complex32 rows: an element is nonzero when either part is
 * (a zero of either sign in both parts is zero; a NaN part is nonzero). complex32 is read for these tests only. */
static void test_complex_nonzero_tests_look_at_both_parts(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    enum { R = 4, C = 3 };
    /* rows: all zero (one -0.0), a real part only, an imaginary part only, everything nonzero (a NaN) */
    const double h[R][C][2] = {{{0, 0}, {-0.0, 0}, {0, -0.0}},
                               {{0, 0}, {2, 0}, {0, 0}},
                               {{0, 0.5}, {0, 0}, {0, 0}},
                               {{1, 1}, {NAN, 0}, {0, -3}}};
    const int64_t want_count[R] = {0, 1, 1, 3};
    float hf[R][C][2];
    uint16_t hh[R][C][2];
    for (int r = 0; r < R; r++) {
        for (int c = 0; c < C; c++) {
            for (int part = 0; part < 2; part++) {
                hf[r][c][part] = (float)h[r][c][part];
                hh[r][c][part] = ref_half_encode(hf[r][c][part], 10, 15);
            }
        }
    }
    void *dev = kc_upload(&k, h, sizeof h), *devf = kc_upload(&k, hf, sizeof hf), *devh = kc_upload(&k, hh, sizeof hh);
    void *dout = kc_upload(&k, NULL, 256);
    REQUIRE(dev && devf && devh && dout);
    const int64_t sz[2] = {R, C}, o1[2] = {R, 1};
    static const axon_dtype_t dtypes[3] = {AXON_COMPLEX128, AXON_COMPLEX64, AXON_COMPLEX32};
    for (int f = 0; f < 3; f++) {
        axon_tensor_t in = kc_tensor(f == 2 ? devh : f ? devf : dev, dtypes[f], 2, sz, NULL);
        axon_tensor_t ob = kc_tensor(dout, AXON_BOOL, 2, o1, NULL), oc = kc_tensor(dout, AXON_INT64, 2, o1, NULL);
        uint8_t got[R];
        int64_t count[R];
        CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_ANY, &ob, &in, NULL));
        REQUIRE(kc_download(&k, got, dout, sizeof got));
        for (int r = 0; r < R; r++) CHECK(got[r] == (want_count[r] > 0));
        CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_ALL, &ob, &in, NULL));
        REQUIRE(kc_download(&k, got, dout, sizeof got));
        for (int r = 0; r < R; r++) CHECK(got[r] == (want_count[r] == C));
        CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_COUNT_NONZERO, &oc, &in, NULL));
        REQUIRE(kc_download(&k, count, dout, sizeof count));
        for (int r = 0; r < R; r++) CHECK(count[r] == want_count[r]);
    }
    /* any other reduction of complex32 is refused, naming it */
    axon_tensor_t in = kc_tensor(devh, AXON_COMPLEX32, 2, sz, NULL), of = kc_tensor(dout, AXON_FLOAT32, 2, o1, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &of, &in, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("complex32");
    axon_mem_free(k.dev, dev);
    axon_mem_free(k.dev, devf);
    axon_mem_free(k.dev, devh);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* Reductions over zero elements: the identity where there is one, INVALID_ARG naming the op where not. */
static void test_empty_reductions_give_identities_or_name_the_op(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    float *dout = rr_upload(&k, AXON_FLOAT32, NULL, 3);
    float dummy[1];
    const int64_t isz[2] = {0, 3}, osz[2] = {1, 3};
    axon_tensor_t in = kc_tensor(dummy, AXON_FLOAT32, 2, isz, NULL), out = kc_tensor(dout, AXON_FLOAT32, 2, osz, NULL);
    static const struct {
        axon_reduce_op_t op;
        double want;
    } cases[] = {{AXON_REDUCE_SUM, 0},      {AXON_REDUCE_PROD, 1},          {AXON_REDUCE_MEAN, NAN},
                 {AXON_REDUCE_ANY, 0},      {AXON_REDUCE_ALL, 1},           {AXON_REDUCE_NORM, 0},
                 {AXON_REDUCE_VAR, NAN},    {AXON_REDUCE_LOGSUMEXP, -INFINITY}, {AXON_REDUCE_COUNT_NONZERO, 0},
                 {AXON_REDUCE_NANSUM, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float got[3] = {7, 7, 7};
        CHECK_OK(axon_kernel_reduce(k.s, cases[i].op, &out, &in, NULL));
        CHECK(kc_download(&k, got, dout, sizeof got));
        for (int j = 0; j < 3; j++)
            if (!(isnan(cases[i].want) ? isnan(got[j]) : got[j] == cases[i].want)) {
                fprintf(stderr, "  empty %s: got %g\n", axon_reduce_op_name(cases[i].op), got[j]);
                check_failures_in_test++;
            }
    }
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_AMAX, &out, &in, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("amax");
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_AMIN, &out, &in, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("amin");
    axon_reduce_params_t p = axon_reduce_params_default();
    p.p = INFINITY;
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_NORM, &out, &in, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("norm");
    /* no outputs: nothing to do, even for amax */
    const int64_t z[2] = {0, 3};
    axon_tensor_t out0 = kc_tensor(dout, AXON_FLOAT32, 2, z, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_AMAX, &out0, &in, NULL));
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* A NaN anywhere makes amax, amin, sum, norm-inf and logsumexp NaN, in every path (inner, split, outer); any()
 * counts NaN as true. */
static void test_nan_propagates_through_every_path(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const struct {
        int64_t sizes[2];
        unsigned mask;
    } shapes[] = {{{4, 100}, 2}, {{2, 100000}, 2}, {{1000, 4}, 1}, {{100, 300}, 1}};
    static const axon_reduce_op_t ops[] = {AXON_REDUCE_AMAX, AXON_REDUCE_AMIN, AXON_REDUCE_SUM,
                                           AXON_REDUCE_LOGSUMEXP, AXON_REDUCE_NORM, AXON_REDUCE_ANY};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int64_t n = shapes[si].sizes[0] * shapes[si].sizes[1];
        float *h = rr_fill(AXON_FLOAT32, n, 0);
        for (int64_t i = 0; i < n; i++) h[i] = 0.0f; /* any() must see only the NaN as true */
        int64_t at = n - 3 < 17 ? 0 : n - 3;         /* late, so it lands after the first block and chunk */
        h[at] = NAN;
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            axon_reduce_params_t p = axon_reduce_params_default();
            if (ops[oi] == AXON_REDUCE_NORM) p.p = INFINITY;
            layout_t l = {"nan", 2, {shapes[si].sizes[0], shapes[si].sizes[1]}, {shapes[si].sizes[1], 1}, 0};
            axon_dtype_t od = ops[oi] == AXON_REDUCE_ANY ? AXON_BOOL : AXON_FLOAT32;
            if (run_case(&k, ops[oi], &p, AXON_FLOAT32, od, h, n, 2, l.sizes, l.strides, 0, shapes[si].mask, "nan"))
                check_failures_in_test++;
        }
        free(h);
    }
    axon_runtime_destroy(k.rt);
}

/* nansum is sum with each NaN read as 0: the same plan, so the very bits of sum over the data with its NaNs zeroed, in
 * every path (inner, split, outer, short rows), float32 and float64. */
static void test_nansum_is_sum_with_nans_zeroed(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const struct {
        int64_t sizes[2];
        unsigned mask;
    } shapes[] = {{{4, 100}, 2}, {{2, 100000}, 2}, {{1000, 4}, 1}, {{100, 300}, 1}, {{50, 7}, 2}, {{3, 5}, 3}};
    static const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64};
    for (size_t di = 0; di < 2; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const axon_dtype_t d = dts[di];
            const int64_t n = shapes[si].sizes[0] * shapes[si].sizes[1], es = (int64_t)axon_dtype_size(d);
            char *h = rr_fill(d, n, 0), *zeroed = malloc((size_t)(n * es));
            memcpy(zeroed, h, (size_t)(n * es));
            for (int64_t i = 0; i < n; i += 1 + i % 13) { /* NaNs scattered, some in runs */
                if (d == AXON_FLOAT32) ((float *)h)[i] = NAN, ((float *)zeroed)[i] = 0.0f;
                else ((double *)h)[i] = NAN, ((double *)zeroed)[i] = 0.0;
            }
            int64_t osz[2];
            for (int i = 0; i < 2; i++) osz[i] = (shapes[si].mask >> i) & 1 ? 1 : shapes[si].sizes[i];
            const int64_t nout = osz[0] * osz[1];
            char *got = malloc((size_t)(nout * es)), *want = malloc((size_t)(nout * es));
            const axon_reduce_op_t ops[2] = {AXON_REDUCE_NANSUM, AXON_REDUCE_SUM};
            const char *src[2] = {h, zeroed};
            char *dst[2] = {got, want};
            for (int r = 0; r < 2; r++) {
                char *dev = rr_upload(&k, d, src[r], n), *dout = rr_upload(&k, d, NULL, nout);
                axon_tensor_t in = kc_tensor(dev, d, 2, shapes[si].sizes, NULL), out = kc_tensor(dout, d, 2, osz, NULL);
                CHECK_OK(axon_kernel_reduce(k.s, ops[r], &out, &in, NULL));
                CHECK(kc_download(&k, dst[r], dout, (size_t)(nout * es)));
                axon_mem_free(k.dev, dev);
                axon_mem_free(k.dev, dout);
            }
            if (memcmp(got, want, (size_t)(nout * es)) != 0) {
                fprintf(stderr, "  nansum %s [%lld, %lld] mask %u differs from sum of the zeroed data\n",
                        axon_dtype_name(d), (long long)shapes[si].sizes[0], (long long)shapes[si].sizes[1],
                        shapes[si].mask);
                check_failures_in_test++;
            }
            free(h), free(zeroed), free(got), free(want);
        }
    axon_runtime_destroy(k.rt);
}

/* var/std with correction 0 and 1 on known values; one element with correction 1 is NaN (PyTorch: nan). */
static void test_var_and_std_follow_the_correction(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    double h[4] = {1, 2, 3, 4};
    double *dev = rr_upload(&k, AXON_FLOAT64, h, 4), *dout = rr_upload(&k, AXON_FLOAT64, NULL, 1);
    const int64_t n4[1] = {4}, n1[1] = {1};
    axon_tensor_t in = kc_tensor(dev, AXON_FLOAT64, 1, n4, NULL), out = kc_tensor(dout, AXON_FLOAT64, 1, n1, NULL);
    axon_reduce_params_t p = axon_reduce_params_default();
    double got;
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_VAR, &out, &in, &p));
    CHECK(kc_download(&k, &got, dout, 8) && fabs(got - 5.0 / 3.0) < 1e-15);
    p.correction = 0;
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_VAR, &out, &in, &p));
    CHECK(kc_download(&k, &got, dout, 8) && got == 1.25);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_STD, &out, &in, &p));
    CHECK(kc_download(&k, &got, dout, 8) && fabs(got - sqrt(1.25)) < 1e-15);
    p.correction = 1;
    in = kc_tensor(dev, AXON_FLOAT64, 1, n1, NULL);
    CHECK_OK(axon_kernel_reduce(k.s, AXON_REDUCE_VAR, &out, &in, &p));
    CHECK(kc_download(&k, &got, dout, 8) && isnan(got));
    axon_mem_free(k.dev, dev);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_op_and_dtype_over_every_layout_matches_reference);
    RUN(test_split_and_outer_paths_match_reference);
    RUN(test_rows_fold_in_the_documented_lane_order);
    RUN(test_half_sums_fold_their_widened_values_in_float_order);
    RUN(test_float32_sum_of_1m_elements_is_accurate);
    RUN(test_empty_reductions_give_identities_or_name_the_op);
    RUN(test_nan_propagates_through_every_path);
    RUN(test_nansum_is_sum_with_nans_zeroed);
    RUN(test_var_and_std_follow_the_correction);
    RUN(test_xor_keeps_every_bit);
    RUN(test_xor_of_floats_folds_their_float64_bits);
    RUN(test_complex_sum_and_mean_reduce_each_part);
    RUN(test_complex_nonzero_tests_look_at_both_parts);
    RUN(test_complex_prod_and_logsumexp_match_a_long_double_reference);
    return check_report();
}
