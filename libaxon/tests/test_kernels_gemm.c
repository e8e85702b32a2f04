/* axon_kernel_matmul against a reference computed on the host: every dtype, transposed, padded, strided and
 * batch-broadcast operands, alpha / beta / bias, beta = 0 over NaN, k = 0, empty shapes, argument errors, and 1 vs 2
 * threads.
 *
 * Inputs are multiples of 1/4 in [-1, 1] (integers in [-3, 3] for integer dtypes), so they are exact in every
 * dtype and, for the sizes used here, so is every partial sum in float32: float32 and float64 results must then be
 * exact too, and float16 / bfloat16 results within one rounding of the final value. Integer references are computed
 * in int64 and wrapped to the dtype's width, as the kernel (and PyTorch) wrap. Operands are laid out, converted and
 * read back with axon_kernel_copy, over host memory (which kernels accept). */
#include <math.h>
#include <stdint.h>

#include "axon/gemm.h"
#include "kernels_check.h"

/* Layouts of one (bsz, rows, cols) operand. */
enum { LAY_CONTIG, LAY_TRANS, LAY_PADDED, LAY_STRIDED, LAY_BCAST_BATCH, LAY_COUNT };

typedef struct mm_case {
    axon_dtype_t dt;
    int batched;                 /* 0: 2-D operands; 1: 3-D with bsz */
    int64_t bsz, m, k, n;
    int la, lb, lo;              /* layouts of a, b, out */
    double alpha, beta, bias_scale;
    int bias;                    /* 0 none, 1 contiguous, 2 stride 3 */
    int nan_out;                 /* out starts as NaN (floating dtypes) */
} mm_case_t;

static kc_dev_t dev1, dev2;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static int rnd_fine; /* 1: float values with 24 random bits, so sums round and their order shows */
static double rnd_value(axon_dtype_t dt) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    if (rnd_fine) return (double)(rng_state >> 40) * 0x1p-23 - 1.0;
    int v = (int)((rng_state >> 33) % 9) - 4;
    return axon_dtype_is_integer(dt) ? (double)(v < -3 ? -3 : v) : v / 4.0;
}

/* Strides and element span of a (bsz, r, c) operand in layout lay. */
static int64_t layout(int lay, int64_t bsz, int64_t r0, int64_t c0, int64_t st[3]) {
    /* PyTorch gives an empty dimension's neighbours strides as if it had size 1; so do we (copy rejects stride 0). */
    int64_t r = r0 > 0 ? r0 : 1, c = c0 > 0 ? c0 : 1;
    switch (lay) {
    case LAY_TRANS: st[0] = r * c, st[1] = 1, st[2] = r; break;
    case LAY_PADDED: st[0] = r * (c + 3), st[1] = c + 3, st[2] = 1; break;
    case LAY_STRIDED: st[0] = 2 * r * c, st[1] = 2 * c, st[2] = 2; break;
    case LAY_BCAST_BATCH: st[0] = 0, st[1] = c, st[2] = 1; return r * c + 1;
    default: st[0] = r * c, st[1] = c, st[2] = 1; break;
    }
    return (bsz - 1) * st[0] + (r - 1) * st[1] + (c - 1) * st[2] + 1;
}

/* A descriptor of the operand (2-D when !batched) over buf. */
static axon_tensor_t view(void *buf, axon_dtype_t dt, int batched, int64_t bsz, int64_t r, int64_t c,
                          const int64_t st[3]) {
    int64_t sizes[3] = {bsz, r, c};
    return batched ? kc_tensor(buf, dt, 3, sizes, st) : kc_tensor(buf, dt, 2, sizes + 1, st + 1);
}

/* Convert-copy between a contiguous float64 host array and the view t (either direction). */
static int xfer(const kc_dev_t *k, const axon_tensor_t *dst, const axon_tensor_t *src) {
    return axon_kernel_copy(k->s, dst, src) == AXON_OK && axon_stream_sync(k->s) == AXON_OK;
}

static double wrap(axon_dtype_t dt, int64_t v) {
    switch (dt) {
    case AXON_INT8: return (int8_t)v;
    case AXON_UINT8: return (uint8_t)v;
    case AXON_INT16: return (int16_t)v;
    case AXON_INT32: return (int32_t)v;
    default: return (double)v;
    }
}

static double tolerance(axon_dtype_t dt) {
    if (rnd_fine && dt == AXON_FLOAT32) return 0x1p-20;
    return dt == AXON_BFLOAT16 ? 0x1p-8 : dt == AXON_FLOAT16 ? 0x1p-11 : 0;
}

/* Run one case on k and compare; returns the number of mismatches (printing the first few). got (optional) receives
 * the result as float64 in logical order. */
static int run_case(const kc_dev_t *k, const mm_case_t *c, double *got_out) {
    const int64_t B = c->batched ? c->bsz : 1, M = c->m, K = c->k, N = c->n;
    const size_t es = axon_dtype_size(c->dt);
    int64_t sa[3], sb[3], so[3];
    int64_t spa = layout(c->la, B, M, K, sa), spb = layout(c->lb, B, K, N, sb), spo = layout(c->lo, B, M, N, so);
    double *A = calloc((size_t)(B * M * K + 1), 8), *Bm = calloc((size_t)(B * K * N + 1), 8);
    double *C = calloc((size_t)(B * M * N + 1), 8), *R = calloc((size_t)(B * M * N + 1), 8);
    double *G = calloc((size_t)(B * M * N + 1), 8), *bias = calloc((size_t)N * 3, 8);
    char *ba = calloc((size_t)spa + 1, es), *bb = calloc((size_t)spb + 1, es), *bo = calloc((size_t)spo + 1, es);
    char *bbias = calloc((size_t)N * 3, 8);
    int bad = 0;
    if (!A || !Bm || !C || !R || !G || !ba || !bb || !bo || !bias || !bbias) {
        bad = 1;
        goto done;
    }
    /* A broadcast batch holds one matrix: draw it once and repeat it logically. */
    for (int64_t i = 0; i < B * M * K; i++) A[i] = c->la == LAY_BCAST_BATCH && i >= M * K ? A[i % (M * K)] : rnd_value(c->dt);
    for (int64_t i = 0; i < B * K * N; i++) Bm[i] = c->lb == LAY_BCAST_BATCH && i >= K * N ? Bm[i % (K * N)] : rnd_value(c->dt);
    for (int64_t i = 0; i < B * M * N; i++) C[i] = c->nan_out ? NAN : rnd_value(c->dt);
    int64_t bst = c->bias == 2 ? 3 : 1;
    for (int64_t j = 0; j < N; j++) bias[j * bst] = rnd_value(c->dt);
    int64_t sa0[3], sb0[3], sc0[3];
    layout(LAY_CONTIG, B, M, K, sa0), layout(LAY_CONTIG, B, K, N, sb0), layout(LAY_CONTIG, B, M, N, sc0);
    /* Upload: one matrix for a broadcast batch. */
    int64_t Ba = c->la == LAY_BCAST_BATCH ? 1 : B, Bb = c->lb == LAY_BCAST_BATCH ? 1 : B;
    axon_tensor_t ta = view(ba, c->dt, c->batched, B, M, K, sa), tb = view(bb, c->dt, c->batched, B, K, N, sb);
    axon_tensor_t to = view(bo, c->dt, c->batched, B, M, N, so);
    axon_tensor_t ua = view(ba, c->dt, 1, Ba, M, K, sa), ub = view(bb, c->dt, 1, Bb, K, N, sb);
    axon_tensor_t uo = view(bo, c->dt, 1, B, M, N, so);
    axon_tensor_t ha = view(A, AXON_FLOAT64, 1, Ba, M, K, sa0), hb = view(Bm, AXON_FLOAT64, 1, Bb, K, N, sb0);
    axon_tensor_t hc = view(C, AXON_FLOAT64, 1, B, M, N, sc0), hg = view(G, AXON_FLOAT64, 1, B, M, N, sc0);
    int64_t nb = N;
    axon_tensor_t tbias = kc_tensor(bbias, c->dt, 1, &nb, &bst), hbias = kc_tensor(bias, AXON_FLOAT64, 1, &nb, &bst);
    if (!xfer(k, &ua, &ha) || !xfer(k, &ub, &hb) || !xfer(k, &uo, &hc) || (c->bias && !xfer(k, &tbias, &hbias))) {
        fprintf(stderr, "upload failed: %s\n", axon_last_error());
        bad = 1;
        goto done;
    }
    axon_gemm_params_t p = axon_gemm_params_default();
    p.alpha = c->alpha, p.beta = c->beta, p.bias_scale = c->bias_scale;
    p.bias = c->bias ? &tbias : NULL;
    axon_status_t st = axon_kernel_matmul(k->s, &to, &ta, &tb, &p);
    if (st != AXON_OK || axon_stream_sync(k->s) != AXON_OK || !xfer(k, &hg, &uo)) {
        fprintf(stderr, "matmul failed: %s\n", axon_last_error());
        bad = 1;
        goto done;
    }
    for (int64_t z = 0; z < B; z++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t o = (z * M + i) * N + j;
                double acc = 0, mag = 0, want;
                int64_t iacc = 0;
                for (int64_t q = 0; q < K; q++) {
                    double x = A[(z * M + i) * K + q], y = Bm[(z * K + q) * N + j];
                    acc += x * y, mag += fabs(x * y);
                    iacc += (int64_t)x * (int64_t)y;
                }
                double bv = c->bias ? c->bias_scale * bias[j * bst] : 0;
                if (axon_dtype_is_integer(c->dt))
                    want = wrap(c->dt, (int64_t)c->alpha * iacc + (c->beta == 0 ? 0 : (int64_t)c->beta * (int64_t)C[o]) +
                                           (int64_t)bv);
                else
                    want = c->alpha * acc + (c->beta == 0 ? 0 : c->beta * C[o]) + bv;
                R[o] = want;
                double tol = tolerance(c->dt) * (fabs(want) + fabs(c->alpha) * mag + 1e-30);
                if (!(fabs(G[o] - want) <= tol)) {
                    if (bad < 3)
                        fprintf(stderr, "  %s b%d(%d,%d,%d) alpha %g beta %g bias %d: [%lld,%lld,%lld] = %g, want %g\n",
                                axon_dtype_name(c->dt), c->batched, c->la, c->lb, c->lo, c->alpha, c->beta, c->bias,
                                (long long)z, (long long)i, (long long)j, G[o], want);
                    bad++;
                }
            }
    if (got_out) memcpy(got_out, G, (size_t)(B * M * N) * 8);
done:
    free(A), free(Bm), free(C), free(R), free(G), free(ba), free(bb), free(bo), free(bias), free(bbias);
    return bad;
}

static const axon_dtype_t all_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16, AXON_INT8,
                                          AXON_UINT8,   AXON_INT16,   AXON_INT32,    AXON_INT64};
#define NDT ((int)(sizeof all_dtypes / sizeof *all_dtypes))

static mm_case_t basic(axon_dtype_t dt, int64_t m, int64_t k, int64_t n) {
    mm_case_t c = {dt, 0, 1, m, k, n, LAY_CONTIG, LAY_CONTIG, LAY_CONTIG, 1, 0, 1, 0, 0};
    return c;
}

static void test_every_dtype_matches_the_reference(void) {
    REQUIRE(dev2.s);
    for (int d = 0; d < NDT; d++) {
        mm_case_t c = basic(all_dtypes[d], 37, 29, 41);
        CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
        c = basic(all_dtypes[d], 130, 70, 60); /* large enough to be split over the pool */
        CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
    }
}

static void test_transposed_padded_and_strided_operands(void) {
    REQUIRE(dev2.s);
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_INT32};
    for (int d = 0; d < 4; d++)
        for (int la = 0; la < LAY_BCAST_BATCH; la++)
            for (int lb = 0; lb < LAY_BCAST_BATCH; lb++)
                for (int lo = 0; lo < LAY_BCAST_BATCH; lo++) {
                    mm_case_t c = basic(dts[d], 33, 19, 21);
                    c.la = la, c.lb = lb, c.lo = lo;
                    CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
                }
}

static void test_vectors_and_single_rows_or_columns(void) {
    REQUIRE(dev2.s);
    const int64_t shapes[][3] = {{1, 7, 5}, {6, 7, 1}, {1, 1, 1}, {5, 1, 4}, {1, 9, 1}};
    for (int s = 0; s < 5; s++)
        for (int la = 0; la < LAY_BCAST_BATCH; la++)
            for (int lo = 0; lo < LAY_BCAST_BATCH; lo++) {
                mm_case_t c = basic(AXON_FLOAT32, shapes[s][0], shapes[s][1], shapes[s][2]);
                c.la = la, c.lb = (la + 1) % LAY_BCAST_BATCH, c.lo = lo;
                CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
            }
}

static void test_batched_with_broadcast_batches(void) {
    REQUIRE(dev2.s);
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_INT32};
    const int lays[][3] = {{0, 0, 0}, {1, 1, 1}, {4, 0, 0}, {0, 4, 2}, {3, 1, 0}, {4, 4, 3}};
    const int64_t bszs[] = {1, 2, 3, 5};
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 6; l++)
            for (int z = 0; z < 4; z++) {
                mm_case_t c = basic(dts[d], 24, 17, 40);
                c.batched = 1, c.bsz = bszs[z], c.la = lays[l][0], c.lb = lays[l][1], c.lo = lays[l][2];
                CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
            }
}

static void test_alpha_beta_and_bias(void) {
    REQUIRE(dev2.s);
    for (int d = 0; d < NDT; d++) {
        int integer = axon_dtype_is_integer(all_dtypes[d]);
        for (int v = 0; v < 4; v++) {
            mm_case_t c = basic(all_dtypes[d], 31, 23, 19);
            c.alpha = integer ? 2 : 0.5, c.beta = v & 1 ? (integer ? 3 : -2) : 0;
            c.bias = v & 2 ? 1 + (d & 1) : 0, c.bias_scale = integer ? -1 : 0.25;
            c.lo = v == 3 ? LAY_TRANS : LAY_CONTIG;
            CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
        }
    }
}

/* Products of at most 512 multiply-adds (2048 in 16 bits) run as plain loops: whole (gemm.c, GEMM_SMALL_MAX; every
 * floating dtype) or matrix by matrix (GEMM_NAIVE_MAX; float32 and float64), with every operand and out layout,
 * batches, alpha, beta (0 over a NaN out) and bias. */
static void test_tiny_products_match_the_reference(void) {
    REQUIRE(dev2.s);
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};
    const int64_t shapes[][3] = {{1, 4, 1}, {5, 5, 5}, {8, 3, 4}, {2, 7, 9}};
    for (int d = 0; d < 4; d++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < LAY_BCAST_BATCH; l++)
                for (int v = 0; v < 4; v++) {
                    mm_case_t c = basic(dts[d], shapes[s][0], shapes[s][1], shapes[s][2]);
                    c.la = l, c.lb = (l + v) % LAY_BCAST_BATCH, c.lo = (l + 2 * v) % LAY_BCAST_BATCH;
                    c.batched = v == 2, c.bsz = 8;
                    c.alpha = v & 1 ? 0.5 : 1, c.beta = v == 1 ? -2 : v == 2 ? 0.5 : v == 3 ? 0.25 : 0;
                    c.nan_out = c.beta == 0, c.bias = v >= 2 ? 2 : 0, c.bias_scale = 0.75;
                    CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
                }
}

static void test_beta_zero_ignores_nan_in_out(void) {
    REQUIRE(dev2.s);
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};
    for (int d = 0; d < 4; d++)
        for (int lo = 0; lo < LAY_BCAST_BATCH; lo++)
            for (int bias = 0; bias < 2; bias++)
                for (int k = 0; k < 2; k++) {
                    mm_case_t c = basic(dts[d], 20, k ? 0 : 9, 13);
                    c.lo = lo, c.nan_out = 1, c.bias = bias;
                    CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
                }
}

static void test_k_zero_gives_beta_times_out(void) {
    REQUIRE(dev2.s);
    for (int d = 0; d < NDT; d++)
        for (int v = 0; v < 4; v++) {
            mm_case_t c = basic(all_dtypes[d], 9, 0, 7);
            c.beta = v & 1 ? 2 : 0, c.bias = v & 2 ? 1 : 0, c.batched = v == 3, c.bsz = 3;
            CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
        }
}

static void test_empty_out_enqueues_nothing(void) {
    REQUIRE(dev2.s);
    float buf[4] = {0};
    int64_t s0x3[2] = {0, 3}, s3x0[2] = {3, 0}, s2x3[2] = {2, 3}, s3x2[2] = {3, 2}, s0x2[2] = {0, 2}, one[2] = {1, 1};
    axon_tensor_t a = kc_tensor(NULL, AXON_FLOAT32, 2, s0x3, NULL), b = kc_tensor(buf, AXON_FLOAT32, 2, s3x2, NULL);
    axon_tensor_t o = kc_tensor(NULL, AXON_FLOAT32, 2, s0x2, NULL);
    CHECK_OK(axon_kernel_matmul(dev2.s, &o, &a, &b, NULL));
    a = kc_tensor(buf, AXON_FLOAT32, 2, s2x3, NULL), b = kc_tensor(NULL, AXON_FLOAT32, 2, s3x0, one);
    int64_t s2x0[2] = {2, 0};
    o = kc_tensor(NULL, AXON_FLOAT32, 2, s2x0, one); /* PyTorch's strides for an empty (2, 0) */
    CHECK_OK(axon_kernel_matmul(dev2.s, &o, &a, &b, NULL));
    CHECK_OK(axon_stream_sync(dev2.s));
}

/* complex64 and complex128 products against a complex double reference: contiguous, a transposed, b with every other
 * column, out padded, a batch with a broadcast a, alpha and beta over an existing out, a strided bias, and k == 0
 * (beta * out + bias only). Values are multiples of 1/4 in [-1, 1], so every product and sum is exact and so is the
 * comparison. */
typedef struct cx {
    double re, im;
} cx_t;

static int complex_case(axon_dtype_t dt, int batched, int64_t B, int64_t M, int64_t K, int64_t N, int la, int lb,
                        int lo, double alpha, double beta, int bias) {
    const int c64 = dt == AXON_COMPLEX64;
    const size_t es = axon_dtype_size(dt);
    int64_t sa[3], sb[3], so[3], sbias = 3;
    int64_t spa = layout(la, B, M, K, sa), spb = layout(lb, B, K, N, sb), spo = layout(lo, B, M, N, so);
    cx_t *A = calloc((size_t)(B * M * K + 1), sizeof(cx_t)), *Bm = calloc((size_t)(B * K * N + 1), sizeof(cx_t));
    cx_t *C = calloc((size_t)(B * M * N + 1), sizeof(cx_t)), *bv = calloc((size_t)N + 1, sizeof(cx_t));
    char *ha = calloc((size_t)spa + 1, es), *hb = calloc((size_t)spb + 1, es), *ho = calloc((size_t)spo + 1, es);
    char *hbias = calloc((size_t)(N * sbias + 1), es);
    void *da = NULL, *db = NULL, *dout = NULL, *dbias = NULL;
    int bad = 0;
    if (!A || !Bm || !C || !bv || !ha || !hb || !ho || !hbias) {
        bad = 1;
        goto done;
    }
    /* element (z, r, c) of an operand with strides st: written into host memory h of the device dtype */
#define PUT(h, st, z, r, c, v)                                                                                      \
    do {                                                                                                            \
        int64_t at_ = (z) * (st)[0] + (r) * (st)[1] + (c) * (st)[2];                                                \
        if (c64) ((float *)(h))[2 * at_] = (float)(v).re, ((float *)(h))[2 * at_ + 1] = (float)(v).im;              \
        else ((double *)(h))[2 * at_] = (v).re, ((double *)(h))[2 * at_ + 1] = (v).im;                              \
    } while (0)
    for (int64_t z = 0; z < B; z++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t q = 0; q < K; q++) {
                cx_t v = {rnd_value(dt), rnd_value(dt)};
                if (la == LAY_BCAST_BATCH && z > 0) v = A[i * K + q];
                A[(z * M + i) * K + q] = v;
                if (la != LAY_BCAST_BATCH || z == 0) PUT(ha, sa, z, i, q, v);
            }
    for (int64_t z = 0; z < B; z++)
        for (int64_t q = 0; q < K; q++)
            for (int64_t j = 0; j < N; j++) {
                cx_t v = {rnd_value(dt), rnd_value(dt)};
                Bm[(z * K + q) * N + j] = v;
                PUT(hb, sb, z, q, j, v);
            }
    for (int64_t z = 0; z < B; z++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                cx_t v = {rnd_value(dt), rnd_value(dt)};
                C[(z * M + i) * N + j] = v;
                PUT(ho, so, z, i, j, v);
            }
    int64_t bst[3] = {0, 0, sbias};
    for (int64_t j = 0; j < N; j++) {
        bv[j].re = rnd_value(dt), bv[j].im = rnd_value(dt);
        PUT(hbias, bst, 0, 0, j, bv[j]);
    }
#undef PUT
    da = kc_upload(&dev2, ha, (size_t)spa * es), db = kc_upload(&dev2, hb, (size_t)spb * es);
    dout = kc_upload(&dev2, ho, (size_t)spo * es), dbias = kc_upload(&dev2, hbias, (size_t)(N * sbias) * es);
    if (!da || !db || !dout || !dbias) {
        bad = 1;
        goto done;
    }
    axon_tensor_t ta = view(da, dt, batched, B, M, K, sa), tb = view(db, dt, batched, B, K, N, sb);
    axon_tensor_t to = view(dout, dt, batched, B, M, N, so), tbias = kc_tensor(dbias, dt, 1, &N, &sbias);
    axon_gemm_params_t p = axon_gemm_params_default();
    p.alpha = alpha, p.beta = beta, p.bias_scale = 0.5, p.bias = bias ? &tbias : NULL;
    if (axon_kernel_matmul(dev2.s, &to, &ta, &tb, &p) != AXON_OK || !kc_download(&dev2, ho, dout, (size_t)spo * es)) {
        fprintf(stderr, "  complex matmul failed: %s\n", axon_last_error());
        bad = 1;
        goto done;
    }
    for (int64_t z = 0; z < B; z++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                cx_t acc = {0, 0};
                for (int64_t q = 0; q < K; q++) {
                    cx_t x = A[(z * M + i) * K + q], y = Bm[(z * K + q) * N + j];
                    acc.re += x.re * y.re - x.im * y.im, acc.im += x.re * y.im + x.im * y.re;
                }
                cx_t o = C[(z * M + i) * N + j], want;
                want.re = alpha * acc.re + beta * o.re + (bias ? 0.5 * bv[j].re : 0);
                want.im = alpha * acc.im + beta * o.im + (bias ? 0.5 * bv[j].im : 0);
                int64_t at = z * so[0] + i * so[1] + j * so[2];
                double gre = c64 ? ((float *)ho)[2 * at] : ((double *)ho)[2 * at];
                double gim = c64 ? ((float *)ho)[2 * at + 1] : ((double *)ho)[2 * at + 1];
                if ((gre != want.re || gim != want.im) && bad++ < 3)
                    fprintf(stderr, "  %s b%d(%d,%d,%d) k %lld: [%lld,%lld,%lld] = %g%+gi, want %g%+gi\n",
                            axon_dtype_name(dt), batched, la, lb, lo, (long long)K, (long long)z, (long long)i,
                            (long long)j, gre, gim, want.re, want.im);
            }
done:
    if (da) axon_mem_free(dev2.dev, da);
    if (db) axon_mem_free(dev2.dev, db);
    if (dout) axon_mem_free(dev2.dev, dout);
    if (dbias) axon_mem_free(dev2.dev, dbias);
    free(A), free(Bm), free(C), free(bv), free(ha), free(hb), free(ho), free(hbias);
    return bad;
}

static void test_complex_products_match_the_reference(void) {
    REQUIRE(dev2.s);
    const axon_dtype_t dts[2] = {AXON_COMPLEX64, AXON_COMPLEX128};
    for (int t = 0; t < 2; t++) {
        axon_dtype_t dt = dts[t];
        CHECK_EQ_I64(complex_case(dt, 0, 1, 37, 29, 41, LAY_CONTIG, LAY_CONTIG, LAY_CONTIG, 1, 0, 0), 0);
        CHECK_EQ_I64(complex_case(dt, 0, 1, 130, 70, 60, LAY_TRANS, LAY_STRIDED, LAY_PADDED, 1, 0, 0), 0);
        CHECK_EQ_I64(complex_case(dt, 1, 3, 9, 12, 7, LAY_BCAST_BATCH, LAY_TRANS, LAY_CONTIG, 0.5, 2, 0), 0);
        CHECK_EQ_I64(complex_case(dt, 0, 1, 8, 5, 6, LAY_CONTIG, LAY_CONTIG, LAY_TRANS, 2, 1, 1), 0);
        CHECK_EQ_I64(complex_case(dt, 0, 1, 4, 0, 3, LAY_CONTIG, LAY_CONTIG, LAY_CONTIG, 1, 2, 1), 0);
    }
}

static void test_bad_shapes_dtypes_and_scalars_are_rejected(void) {
    REQUIRE(dev2.s);
    float buf[64] = {0};
    int64_t s34[2] = {3, 4}, s56[2] = {5, 6}, s36[2] = {3, 6}, s46[2] = {4, 6}, s5[1] = {5}, s6[1] = {6};
    int64_t b234[3] = {2, 3, 4}, b346[3] = {3, 4, 6}, b236[3] = {2, 3, 6};
    axon_tensor_t a = kc_tensor(buf, AXON_FLOAT32, 2, s34, NULL), b = kc_tensor(buf, AXON_FLOAT32, 2, s56, NULL);
    axon_tensor_t o = kc_tensor(buf, AXON_FLOAT32, 2, s36, NULL);
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &o, &a, &b, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("[3, 4]");
    CHECK_MSG("[5, 6]");
    b = kc_tensor(buf, AXON_FLOAT32, 2, s46, NULL);
    CHECK_OK(axon_kernel_matmul(dev2.s, &o, &a, &b, NULL));
    axon_tensor_t a3 = kc_tensor(buf, AXON_FLOAT32, 3, b234, NULL), b3 = kc_tensor(buf, AXON_FLOAT32, 3, b346, NULL);
    axon_tensor_t o3 = kc_tensor(buf, AXON_FLOAT32, 3, b236, NULL);
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &o3, &a3, &b3, NULL), AXON_ERROR_INVALID_ARG); /* batch 2 vs 3 */
    CHECK_MSG("[3, 4, 6]");
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &o3, &a, &b, NULL), AXON_ERROR_INVALID_ARG); /* ndim */
    axon_gemm_params_t p = axon_gemm_params_default();
    axon_tensor_t bias = kc_tensor(buf, AXON_FLOAT32, 1, s5, NULL);
    p.bias = &bias;
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &o, &a, &b, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("bias shape [5]");
    bias = kc_tensor(buf, AXON_FLOAT64, 1, s6, NULL);
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &o, &a, &b, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dtypes differ");
    axon_tensor_t bh = kc_tensor(buf, AXON_FLOAT16, 2, s46, NULL);
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &o, &a, &bh, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("float16");
    axon_tensor_t ab = kc_tensor(buf, AXON_BOOL, 2, s34, NULL), bb = kc_tensor(buf, AXON_BOOL, 2, s46, NULL);
    axon_tensor_t ob = kc_tensor(buf, AXON_BOOL, 2, s36, NULL);
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &ob, &ab, &bb, NULL), AXON_ERROR_UNSUPPORTED);
    axon_tensor_t ac = kc_tensor(buf, AXON_COMPLEX64, 2, s34, NULL), bc = kc_tensor(buf, AXON_COMPLEX128, 2, s46, NULL);
    axon_tensor_t oc = kc_tensor(buf, AXON_COMPLEX64, 2, s36, NULL);
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &oc, &ac, &bc, NULL), AXON_ERROR_INVALID_ARG); /* mixed complex */
    CHECK_MSG("complex128");
    axon_tensor_t ai = kc_tensor(buf, AXON_INT32, 2, s34, NULL), bi = kc_tensor(buf, AXON_INT32, 2, s46, NULL);
    axon_tensor_t oi = kc_tensor(buf, AXON_INT32, 2, s36, NULL);
    p = axon_gemm_params_default();
    p.alpha = 0.5;
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &oi, &ai, &bi, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("whole number");
    int64_t zs[2] = {0, 6};
    axon_tensor_t ov = kc_tensor(buf, AXON_FLOAT32, 2, s36, zs); /* out with stride 0: overlapping */
    CHECK_STATUS(axon_kernel_matmul(dev2.s, &ov, &a, &b, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_matmul(dev2.s, NULL, &a, &b, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(dev2.s));
}

/* float32 products with at most 16 rows (or, seen through a transposed out, 16 columns) and past OpenBLAS's
 * small-product path go to gemm_skinny.c (m * n * k above 1e6 in each block the pool runs covers every layout):
 * row counts 1..9, 12, 16, 17, k with a tail past the 16-wide vectors, n with a tail past the 4-row and 64-column tiles,
 * every layout of a, b and out (B stored (n, k) takes the dot form, B stored (k, n) the axpy form, A stored
 * transposed, a single row with a column stride included, is packed), alpha, beta over NaN, a strided bias, on 1
 * and 2 threads (the pool splits n). The sums are exact, so is the comparison. */
static void test_skinny_products_match_the_reference(void) {
    REQUIRE(dev1.s && dev2.s);
    const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17};
    for (int mi = 0; mi < 12; mi++)
        for (int la = 0; la < LAY_BCAST_BATCH; la++)
            for (int lb = 0; lb < LAY_BCAST_BATCH; lb++) {
                const int64_t m = ms[mi], k = m & 1 ? 203 : 1100, n = 2000005 / (m * k) + 61; /* each of 2 blocks > 1e6 */
                mm_case_t c = basic(AXON_FLOAT32, m, k, n);
                c.la = la, c.lb = lb, c.lo = (la + lb + (int)m) % LAY_BCAST_BATCH;
                if ((la + lb) & 1) c.alpha = 0.5, c.beta = -2, c.bias = 2, c.bias_scale = 0.25;
                else c.nan_out = 1, c.bias = lb & 1;
                CHECK_EQ_I64(run_case(m & 1 ? &dev2 : &dev1, &c, NULL), 0);
            }
    /* Few columns, many rows: out^T = b^T @ a^T inside the kernel, out written through its strides. */
    const int64_t ns[] = {1, 3, 4, 8, 13, 16};
    for (int q = 0; q < 6; q++)
        for (int la = 0; la < 2; la++)
            for (int lb = 0; lb < 2; lb++)
                for (int lo = 0; lo < 2; lo++) {
                    mm_case_t c = basic(AXON_FLOAT32, 2000005 / (ns[q] * 203) + 37, 203, ns[q]);
                    c.la = la ? LAY_TRANS : LAY_PADDED, c.lb = lb ? LAY_TRANS : LAY_CONTIG;
                    c.lo = lo ? LAY_TRANS : LAY_CONTIG;
                    c.alpha = 0.5, c.beta = q & 1 ? -2 : 0, c.bias = 1;
                    CHECK_EQ_I64(run_case(&dev2, &c, NULL), 0);
                }
}

/* float32 single matrices of 200^3 multiply-adds or more go to oneDNN's brgemm kernels where it offers them
 * (a build without oneDNN, or a layout it does not offer, takes OpenBLAS): every layout, alpha, beta over NaN, a
 * strided bias, row counts that split into strips of rows or of columns, on 1 and 2 threads. Exact sums. */
static void test_float32_products_past_the_small_path_match_the_reference(void) {
    REQUIRE(dev1.s && dev2.s);
    const int64_t shapes[][3] = {{150, 203, 270}, {40, 300, 670}, {250, 129, 250}};
    for (int s = 0; s < 3; s++)
        for (int la = 0; la < LAY_BCAST_BATCH; la++)
            for (int lb = 0; lb < LAY_BCAST_BATCH; lb++)
                for (int v = 0; v < 2; v++) {
                    mm_case_t c = basic(AXON_FLOAT32, shapes[s][0], shapes[s][1], shapes[s][2]);
                    c.la = la, c.lb = lb, c.lo = (la + lb + s) % LAY_BCAST_BATCH;
                    if (v) c.alpha = 0.5, c.beta = -2, c.bias = 2, c.bias_scale = 0.25;
                    else c.nan_out = 1, c.bias = lb & 1;
                    CHECK_EQ_I64(run_case(v ? &dev2 : &dev1, &c, NULL), 0);
                }
}

/* The split over the pool changes which library call computes an element, not the order of its sum over k, so the
 * results agree; OpenBLAS may still pick different micro-kernels for edge blocks, so equality is checked within
 * float32 rounding of the sum of |products|, and exact equality is reported. */
static void test_one_and_two_threads_agree(void) {
    REQUIRE(dev1.s && dev2.s);
    const int64_t M = 150, K = 203, N = 170;
    double *g1 = malloc((size_t)(M * N * 3) * 8), *g2 = malloc((size_t)(M * N * 3) * 8);
    REQUIRE(g1 && g2);
    rnd_fine = 1;
    for (int batched = 0; batched < 2; batched++) {
        mm_case_t c = basic(AXON_FLOAT32, M, K, N);
        c.batched = batched, c.bsz = 3, c.lb = LAY_TRANS;
        uint64_t seed = rng_state;
        CHECK_EQ_I64(run_case(&dev1, &c, g1), 0);
        rng_state = seed;
        CHECK_EQ_I64(run_case(&dev2, &c, g2), 0);
        int64_t n = (batched ? 3 : 1) * M * N, differ = 0;
        for (int64_t i = 0; i < n; i++) {
            CHECK(fabs(g1[i] - g2[i]) <= 0x1p-20 * K);
            differ += g1[i] != g2[i];
        }
        fprintf(stderr, "  1 vs 2 threads, batched %d: %lld of %lld elements differ in the last bits\n", batched,
                (long long)differ, (long long)n);
    }
    rnd_fine = 0;
    free(g1), free(g2);
}

/* bfloat16 products large enough that the device splits them over its pool (with oneDNN: by whole matrices, by a
 * batch range with a shorter tail, or by strips of each matrix), with every layout, broadcast batches, alpha, beta,
 * a strided bias and NaN in out; each run twice to check the result is the same bit for bit. */
static void test_bf16_products_split_over_the_pool_match_the_reference(void) {
    REQUIRE(dev1.s && dev2.s);
    const int64_t bszs[] = {1, 3, 4, 9};
    const int lays[][3] = {{0, 0, 0}, {1, 1, 0}, {2, 3, 2}, {4, 0, 0}, {0, 4, 1}, {0, 0, 0}};
    for (int z = 0; z < 4; z++)
        for (int l = 0; l < 6; l++)
            for (int v = 0; v < 2; v++) {
                /* 150 rows split into strips of rows; 40 rows into strips of columns. */
                mm_case_t c = basic(AXON_BFLOAT16, l == 5 ? 40 : 150, 203, l == 5 ? 300 : 170);
                c.batched = 1, c.bsz = bszs[z], c.la = lays[l][0], c.lb = lays[l][1], c.lo = lays[l][2];
                if (v) c.alpha = 0.5, c.beta = -2, c.bias = 2, c.bias_scale = 0.25;
                else c.nan_out = 1;
                int64_t n = c.bsz * c.m * c.n;
                double *g1 = malloc((size_t)n * 8), *g2 = malloc((size_t)n * 8);
                REQUIRE(g1 && g2);
                uint64_t seed = rng_state;
                CHECK_EQ_I64(run_case(&dev2, &c, g1), 0);
                rng_state = seed;
                CHECK_EQ_I64(run_case(&dev2, &c, g2), 0);
                CHECK(memcmp(g1, g2, (size_t)n * 8) == 0);
                rng_state = seed;
                CHECK_EQ_I64(run_case(&dev1, &c, NULL), 0);
                free(g1), free(g2);
            }
}

/* c against the reference on a 1- and a 2-thread device, with the same inputs: both results must be the same bits. */
static void check_same_bits_on_one_and_two_threads(const mm_case_t *c) {
    int64_t n = c->m * c->n;
    double *g1 = malloc((size_t)n * 8), *g2 = malloc((size_t)n * 8);
    REQUIRE(g1 && g2);
    uint64_t seed = rng_state;
    CHECK_EQ_I64(run_case(&dev1, c, g1), 0);
    rng_state = seed;
    CHECK_EQ_I64(run_case(&dev2, c, g2), 0);
    CHECK(memcmp(g1, g2, (size_t)n * 8) == 0);
    free(g1), free(g2);
}

/* Single bfloat16 matrices of 32 or more rows, columns and depth and 128^3 to 256^3 multiply-adds (on AMX where the CPU
 * has it, gemm_amx.c; the largest products take the same code with other block sizes): depth,
 * row and column tails, several row blocks per thread, B row-major, transposed (a Linear's weight) and strided, A
 * transposed, alpha, beta and a bias; values with 24 random bits, so that a different order of the sums would show.
 * 1 and 2 threads must give the same bits: each element is one sum in a fixed order, whatever rows a thread gets. */
static void test_bf16_single_matrices_are_the_same_on_one_and_two_threads(void) {
    REQUIRE(dev1.s && dev2.s);
    const int64_t shapes[][3] = {{300, 700, 77}, {64, 512, 500}, {33, 2000, 33}, {520, 96, 300}, {200, 40, 300}};
    const int lays[][3] = {{0, 0, 0}, {0, 1, 0}, {1, 3, 2}, {3, 0, 0}};
    rnd_fine = 1;
    for (int s = 0; s < 5; s++)
        for (int l = 0; l < 4; l++) {
            mm_case_t c = basic(AXON_BFLOAT16, shapes[s][0], shapes[s][1], shapes[s][2]);
            c.la = lays[l][0], c.lb = lays[l][1], c.lo = lays[l][2];
            if (l >= 2) c.alpha = 0.5, c.beta = -2, c.bias = l - 1, c.bias_scale = 0.25;
            check_same_bits_on_one_and_two_threads(&c);
        }
    rnd_fine = 0;
}

/* Few rows (2 to 64) of bfloat16 times a Linear's weight (B stored (n, k)), depth a multiple of 32 and n of 16: on AMX
 * the weight's tiles are loaded as stored and X is packed (gemm_amx.c, axon_gemm_amx_few); elsewhere the other paths
 * compute the same cases. Row counts on both sides of one and two X tiles and of the 32-row slabs, column counts that
 * leave groups of one to three W tiles, alpha, beta and a bias, A transposed (packed by its strides); against the
 * reference, and 1 and 2 threads to the same bits. */
static void test_bf16_few_rows_times_a_linear_weight(void) {
    REQUIRE(dev1.s && dev2.s);
    const int64_t shapes[][3] = {{2, 64, 16}, {5, 96, 48}, {16, 32, 80}, {17, 128, 64}, {31, 64, 112},
                                 {33, 96, 32}, {48, 64, 208}, {64, 160, 96}};
    rnd_fine = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int v = 0; v < 3; v++) {
            mm_case_t c = basic(AXON_BFLOAT16, shapes[s][0], shapes[s][1], shapes[s][2]);
            c.lb = LAY_TRANS;
            if (v == 1) c.alpha = 0.5, c.beta = -2, c.bias = 1, c.bias_scale = 0.25;
            if (v == 2) c.la = LAY_TRANS, c.bias = 1;
            check_same_bits_on_one_and_two_threads(&c);
        }
    rnd_fine = 0;
}

/* bfloat16 bits of v (exact for the multiples of 1/4 that rnd_value draws). */
static uint16_t bf16_bits(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* Four streams of one device multiply bf16 matrices at once, several shapes in turn, so the GEMM library is set up
 * and run from several threads together: every result must equal, bit for bit, the same product run alone. */
static void test_bf16_products_on_concurrent_streams_agree(void) {
    REQUIRE(dev2.s);
    enum { NS = 4, NR = 6, NSH = 3 };
    const int64_t shp[NSH][3] = {{96, 128, 80}, {150, 203, 170}, {64, 256, 300}}; /* m, k, n */
    uint16_t *a = malloc(150 * 256 * 2), *b = malloc(256 * 300 * 2), *want[NSH], *got[NS][NR];
    axon_stream_t st[NS] = {dev2.s};
    REQUIRE(a && b);
    for (int i = 0; i < 150 * 256; i++) a[i] = bf16_bits(rnd_value(AXON_BFLOAT16));
    for (int i = 0; i < 256 * 300; i++) b[i] = bf16_bits(rnd_value(AXON_BFLOAT16));
    for (int i = 1; i < NS; i++) REQUIRE(axon_stream_create(dev2.dev, 0, &st[i]) == AXON_OK);
    for (int z = 0; z < NSH; z++) REQUIRE((want[z] = malloc((size_t)(shp[z][0] * shp[z][2]) * 2)) != NULL);
    for (int i = 0; i < NS; i++)
        for (int r = 0; r < NR; r++) REQUIRE((got[i][r] = malloc(150 * 300 * 2)) != NULL);
    for (int pass = 0; pass < 2; pass++) /* pass 0: each shape alone on one stream; pass 1: all streams at once */
        for (int i = 0; i < (pass ? NS : 1); i++)
            for (int r = 0; r < (pass ? NR : NSH); r++) {
                int z = pass ? (i + r) % NSH : r;
                int64_t sa[2] = {shp[z][0], shp[z][1]}, sb[2] = {shp[z][1], shp[z][2]};
                int64_t so[2] = {shp[z][0], shp[z][2]};
                axon_tensor_t ta = kc_tensor(a, AXON_BFLOAT16, 2, sa, NULL);
                axon_tensor_t tb = kc_tensor(b, AXON_BFLOAT16, 2, sb, NULL);
                axon_tensor_t to = kc_tensor(pass ? got[i][r] : want[z], AXON_BFLOAT16, 2, so, NULL);
                CHECK(axon_kernel_matmul(st[i], &to, &ta, &tb, NULL) == AXON_OK);
                if (!pass) CHECK(axon_stream_sync(st[i]) == AXON_OK);
            }
    for (int i = 0; i < NS; i++) CHECK(axon_stream_sync(st[i]) == AXON_OK);
    for (int i = 0; i < NS; i++)
        for (int r = 0; r < NR; r++) {
            int z = (i + r) % NSH;
            CHECK(memcmp(got[i][r], want[z], (size_t)(shp[z][0] * shp[z][2]) * 2) == 0);
        }
    for (int i = 1; i < NS; i++) axon_stream_destroy(st[i]);
    for (int z = 0; z < NSH; z++) free(want[z]);
    for (int i = 0; i < NS; i++)
        for (int r = 0; r < NR; r++) free(got[i][r]);
    free(a), free(b);
}

/* A batch walked backwards (a negative batch stride, which PyTorch never makes but the C API allows) gives the
 * matrices of the forward walk in reverse order. */
static void test_bf16_negative_batch_stride_reverses_the_batch(void) {
    REQUIRE(dev2.s);
    const int64_t B = 3, M = 150, K = 203, N = 170;
    uint16_t *a = malloc((size_t)(B * M * K) * 2), *b = malloc((size_t)(K * N) * 2);
    uint16_t *fwd = malloc((size_t)(B * M * N) * 2), *bwd = malloc((size_t)(B * M * N) * 2);
    REQUIRE(a && b && fwd && bwd);
    for (int64_t i = 0; i < B * M * K; i++) a[i] = bf16_bits(rnd_value(AXON_BFLOAT16));
    for (int64_t i = 0; i < K * N; i++) b[i] = bf16_bits(rnd_value(AXON_BFLOAT16));
    int64_t sa[3] = {B, M, K}, sb[3] = {B, K, N}, so[3] = {B, M, N};
    int64_t back[3] = {-M * K, K, 1}, bcast[3] = {0, N, 1};
    axon_tensor_t ta = kc_tensor(a, AXON_BFLOAT16, 3, sa, NULL), tb = kc_tensor(b, AXON_BFLOAT16, 3, sb, bcast);
    axon_tensor_t tr = kc_tensor(a + (B - 1) * M * K, AXON_BFLOAT16, 3, sa, back);
    axon_tensor_t tf = kc_tensor(fwd, AXON_BFLOAT16, 3, so, NULL), tw = kc_tensor(bwd, AXON_BFLOAT16, 3, so, NULL);
    CHECK(axon_kernel_matmul(dev2.s, &tf, &ta, &tb, NULL) == AXON_OK);
    CHECK(axon_kernel_matmul(dev2.s, &tw, &tr, &tb, NULL) == AXON_OK);
    CHECK(axon_stream_sync(dev2.s) == AXON_OK);
    for (int64_t z = 0; z < B; z++)
        CHECK(memcmp(bwd + z * M * N, fwd + (B - 1 - z) * M * N, (size_t)(M * N) * 2) == 0);
    free(a), free(b), free(fwd), free(bwd);
}

int main(void) {
    dev1 = kc_open(1);
    dev2 = kc_open(2);
    RUN(test_every_dtype_matches_the_reference);
    RUN(test_transposed_padded_and_strided_operands);
    RUN(test_vectors_and_single_rows_or_columns);
    RUN(test_batched_with_broadcast_batches);
    RUN(test_alpha_beta_and_bias);
    RUN(test_tiny_products_match_the_reference);
    RUN(test_beta_zero_ignores_nan_in_out);
    RUN(test_k_zero_gives_beta_times_out);
    RUN(test_empty_out_enqueues_nothing);
    RUN(test_complex_products_match_the_reference);
    RUN(test_bad_shapes_dtypes_and_scalars_are_rejected);
    RUN(test_skinny_products_match_the_reference);
    RUN(test_float32_products_past_the_small_path_match_the_reference);
    RUN(test_one_and_two_threads_agree);
    RUN(test_bf16_products_split_over_the_pool_match_the_reference);
    RUN(test_bf16_products_on_concurrent_streams_agree);
    RUN(test_bf16_single_matrices_are_the_same_on_one_and_two_threads);
    RUN(test_bf16_few_rows_times_a_linear_weight);
    RUN(test_bf16_negative_batch_stride_reverses_the_batch);
    axon_runtime_destroy(dev1.rt);
    axon_runtime_destroy(dev2.rt);
    return check_report();
}
