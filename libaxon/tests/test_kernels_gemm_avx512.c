/* float32 axon_kernel_matmul on the shapes that take gemm_avx512.c (more than 16 rows and columns, k >= 1, on a CPU
 * with AVX-512F; elsewhere the same cases check the library path): sizes around the micro-kernel's 14 x 32 tile, the
 * 84-row blocks, the 256-deep slices and the 1024-column chunks of packed B; A and B stored either way (a Linear's
 * weight is B stored (n, k)); alpha, beta, beta = 0 over NaN, a bias (per column, or per row when out is column-major
 * and the product is computed transposed); out with padded rows; few rows (A packed once, panels of B per thread);
 * batches split evenly over the pool (one matrix per call) or not (each matrix shared out).
 *
 * Inputs are random floats in [-1, 1) with 24 significant bits, the reference a float64 sum: each result must be
 * within (k + 4) * 2^-24 of the sum of |terms| (float32 rounding of every partial sum and of alpha, beta, bias). Every
 * case also runs on a 1- and a 2-thread device, whose results must be the same bits: each element is one sum in a
 * fixed order whichever thread computes it. On a CPU without AVX-512F the library computes them, and MKL picks its
 * edge kernels by the shape of the block each thread gets: there only the accuracy is checked (the 1- and 2-thread
 * results of an AVX2 EPYC differed in one column's last bit).
 *
 * Which products gemm.c gives the kernel depends on the BLAS it was built with (with MKL: single Linears from 2^25
 * multiply-adds), so this test sets AXON_GEMM_F32=avx512, which sends every product with more than 16 rows and
 * columns there. The shapes still follow the default OpenBLAS routing (from AV_MIN_MADDS multiply-adds, a single
 * matrix with no fewer rows than columns only past AV_ROWS_MIN): smaller ones get a deeper k, or come in a batch of 3
 * (which 2 threads share out matrix by matrix, split by rows as a large single matrix is).
 *
 * bfloat16 and float16 products take the kernel too (gemm.c: bfloat16 only on a CPU without AMX), their operands
 * widened as they are packed: the same cases run with inputs, bias and out in those dtypes, against the float64 sum
 * of the 16-bit inputs, allowing one rounding of out to the dtype on top. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "axon/gemm.h"
#include "kernels_check.h"

static kc_dev_t dev1, dev2;
static int av_kernel_runs; /* the CPU has AVX-512F, so gemm_avx512.c computes the cases */

#define AV_MIN_MADDS (1 << 20)
#define AV_ROWS_MIN (1 << 25)

/* k, or the least depth that gives m x n a product gemm_avx512.c takes. */
static int64_t av_depth(int64_t m, int64_t n, int64_t k) {
    const int64_t least = (AV_MIN_MADDS + m * n - 1) / (m * n);
    return k > least ? k : least;
}

static int av_avx16_runs; /* ... and takes bfloat16 products (no AMX) */
static int av_avx2_bt_runs; /* no AVX-512F but AVX2 and FMA: gemm_avx2_bt.c takes 2 to 256 rows times B (n, k) */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float rnd(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) * 0x1p-23 - 1.0);
}

typedef struct av_case {
    int64_t bsz, m, k, n;        /* bsz 0: 2-D operands */
    int ta, tb;                  /* a stored (k, m) / b stored (n, k), i.e. transposed views */
    int bcast_b;                 /* batched: one b for the whole batch (batch stride 0) */
    int out_cm;                  /* out column-major (computed as out^T = b^T @ a^T) */
    int64_t pad;                 /* extra elements at the end of each row of a row-major out */
    double alpha, beta, bias_scale;
    int bias, nan_out;
    axon_dtype_t dt;             /* of the inputs, bias and out: FLOAT32, BFLOAT16 or FLOAT16 */
    int library;                 /* computed by the BLAS: 1 and 2 threads may sum in different orders */
    int in_place_b;              /* computed by gemm_avx512_bt.c or gemm_avx2_bt.c: the same bits on any thread count */
} av_case_t;

static size_t av_size(const av_case_t *c) { return c->dt == AXON_FLOAT32 ? 4 : 2; }

/* x rounded to the nearest c->dt (ties to even) and stored at p, element q; returns the rounded value. */
static float av_put(const av_case_t *c, void *p, int64_t q, float x) {
    if (c->dt == AXON_FLOAT32) return ((float *)p)[q] = x;
    if (c->dt == AXON_FLOAT16) {
        _Float16 h = (_Float16)x;
        memcpy((uint16_t *)p + q, &h, 2);
        return (float)h;
    }
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16; /* finite inputs only */
    ((uint16_t *)p)[q] = (uint16_t)u;
    u <<= 16;
    memcpy(&x, &u, 4);
    return x;
}

/* Element q of p (c->dt) as a float. */
static float av_get(const av_case_t *c, const void *p, int64_t q) {
    if (c->dt == AXON_FLOAT32) return ((const float *)p)[q];
    uint16_t h = ((const uint16_t *)p)[q];
    if (c->dt == AXON_FLOAT16) {
        _Float16 v;
        memcpy(&v, &h, 2);
        return (float)v;
    }
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Runs c on k into out (host memory, the case's layout) from the given inputs; 0 on success. */
static int av_run(const kc_dev_t *k, const av_case_t *c, const void *A, const void *B, const void *bias,
                  void *out) {
    const int64_t z = c->bsz ? c->bsz : 1, M = c->m, K = c->k, N = c->n, ldo = N + c->pad;
    int64_t sa[3], sb[3], so[3], za[3] = {z, M, K}, zb[3] = {z, K, N}, zo[3] = {z, M, N};
    sa[0] = M * K, sb[0] = c->bcast_b ? 0 : K * N;
    if (c->ta) sa[1] = 1, sa[2] = M;
    else sa[1] = K, sa[2] = 1;
    if (c->tb) sb[1] = 1, sb[2] = K;
    else sb[1] = N, sb[2] = 1;
    if (c->out_cm) so[0] = M * N, so[1] = 1, so[2] = M;
    else so[0] = M * ldo, so[1] = ldo, so[2] = 1;
    const int nd = c->bsz ? 3 : 2, o = c->bsz ? 0 : 1;
    axon_tensor_t ta = kc_tensor((void *)A, c->dt, nd, za + o, sa + o);
    axon_tensor_t tb = kc_tensor((void *)B, c->dt, nd, zb + o, sb + o);
    axon_tensor_t to = kc_tensor(out, c->dt, nd, zo + o, so + o);
    axon_tensor_t tbias = kc_tensor((void *)bias, c->dt, 1, &c->n, NULL);
    axon_gemm_params_t p = axon_gemm_params_default();
    p.alpha = c->alpha, p.beta = c->beta, p.bias_scale = c->bias_scale;
    p.bias = c->bias ? &tbias : NULL;
    if (axon_kernel_matmul(k->s, &to, &ta, &tb, &p) != AXON_OK || axon_stream_sync(k->s) != AXON_OK) {
        fprintf(stderr, "  matmul failed: %s\n", axon_last_error());
        return -1;
    }
    return 0;
}

/* Element (i, j) of matrix zz of out in c's layout. */
static int64_t av_at(const av_case_t *c, int64_t zz, int64_t i, int64_t j) {
    const int64_t ldo = c->n + c->pad;
    return c->out_cm ? zz * c->m * c->n + j * c->m + i : zz * c->m * ldo + i * ldo + j;
}

/* Runs c on both devices and checks both against the reference and each other; returns the number of problems. */
static int av_check(const av_case_t *c) {
    const int64_t z = c->bsz ? c->bsz : 1, M = c->m, K = c->k, N = c->n;
    const int64_t na = z * M * K, nb = (c->bcast_b ? 1 : z) * K * N, no = z * M * (N + c->pad);
    const size_t es = av_size(c);
    /* A, B, bias and C0 as floats (the values the dtype holds), then as the dtype (*16; the same for float32) */
    float *A = malloc((size_t)na * 4), *B = malloc((size_t)nb * 4), *bias = malloc((size_t)N * 4);
    float *C0 = malloc((size_t)no * 4);
    char *A16 = malloc((size_t)na * es), *B16 = malloc((size_t)nb * es), *bias16 = malloc((size_t)N * es);
    char *C16 = malloc((size_t)no * es), *C1 = malloc((size_t)no * es), *C2 = malloc((size_t)no * es);
    int bad = 0;
    if (!A || !B || !bias || !C0 || !A16 || !B16 || !bias16 || !C16 || !C1 || !C2) {
        bad = 1;
        goto done;
    }
    for (int64_t q = 0; q < na; q++) A[q] = av_put(c, A16, q, rnd());
    for (int64_t q = 0; q < nb; q++) B[q] = av_put(c, B16, q, rnd());
    for (int64_t q = 0; q < N; q++) bias[q] = av_put(c, bias16, q, rnd());
    for (int64_t q = 0; q < no; q++) C0[q] = c->nan_out ? NAN : av_put(c, C16, q, rnd());
    if (c->nan_out) memset(C16, 0xFF, (size_t)no * es); /* all NaN in every dtype */
    memcpy(C1, C16, (size_t)no * es);
    memcpy(C2, C16, (size_t)no * es);
    if (av_run(&dev1, c, A16, B16, bias16, C1) != 0 || av_run(&dev2, c, A16, B16, bias16, C2) != 0) {
        bad = 1;
        goto done;
    }
    int64_t diff = 0;
    for (int64_t q = 0; q < no; q++) diff += memcmp(C1 + q * es, C2 + q * es, es) != 0;
    if (diff && !c->library && (c->dt == AXON_FLOAT32 ? av_kernel_runs || c->in_place_b : av_avx16_runs)) {
        fprintf(stderr, "  1 vs 2 threads: %lld elements differ\n", (long long)diff);
        bad++;
    }
    for (int64_t zz = 0; zz < z; zz++) {
        const float *a = A + zz * M * K, *b = B + (c->bcast_b ? 0 : zz * K * N);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0, mag = 0;
                for (int64_t d = 0; d < K; d++) {
                    const double x = c->ta ? a[d * M + i] : a[i * K + d], y = c->tb ? b[j * K + d] : b[d * N + j];
                    acc += x * y, mag += fabs(x * y);
                }
                const int64_t at = av_at(c, zz, i, j);
                const double old = c->beta != 0 ? (double)C0[at] : 0, bv = c->bias ? c->bias_scale * bias[j] : 0;
                const double want = c->alpha * acc + c->beta * old + bv;
                /* and one rounding to a 16-bit out: 2^-8 relative for bfloat16, 2^-11 for float16 (whose subnormals,
                 * below 2^-14, are multiples of 2^-24: half of that absolute) */
                const double round = c->dt == AXON_BFLOAT16 ? 0x1p-8 : c->dt == AXON_FLOAT16 ? 0x1p-11 : 0;
                const double tol = (double)(K + 4) * 0x1p-24 * (fabs(c->alpha) * mag + fabs(c->beta * old) + fabs(bv)) +
                                   round * fabs(want) + (c->dt == AXON_FLOAT16 ? 0x1p-25 : 0);
                const double got = av_get(c, C1, at), got2 = av_get(c, C2, at);
                if (!(fabs(got - want) <= tol) || !(fabs(got2 - want) <= tol)) {
                    if (bad < 4)
                        fprintf(stderr, "  [%lld, %lld, %lld]: got %.9g, want %.9g (tolerance %.3g)\n", (long long)zz,
                                (long long)i, (long long)j, got, want, tol);
                    bad++;
                }
            }
    }
    /* row padding of out is left alone */
    for (int64_t zz = 0; zz < z && !c->out_cm; zz++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = N; j < N + c->pad; j++) {
                const int64_t at = av_at(c, zz, i, j);
                if (memcmp(C1 + at * es, C16 + at * es, es) != 0) bad++;
            }
done:
    if (bad)
        fprintf(stderr, "  case %s bsz %lld, %lld x %lld x %lld, ta %d, tb %d, out_cm %d, pad %lld: %d problems\n",
                axon_dtype_name(c->dt), (long long)c->bsz, (long long)M, (long long)K, (long long)N, c->ta, c->tb,
                c->out_cm, (long long)c->pad, bad);
    free(A), free(B), free(bias), free(C0), free(A16), free(B16), free(bias16), free(C16), free(C1), free(C2);
    return bad;
}

static axon_dtype_t av_dt; /* of the cases the tests make: main runs them in each dtype */

static av_case_t av_plain(int64_t m, int64_t k, int64_t n) {
    av_case_t c;
    memset(&c, 0, sizeof c);
    c.m = m, c.k = k, c.n = n, c.alpha = 1, c.bias_scale = 1;
    c.dt = av_dt;
    return c;
}

/* Row counts around the 14-row tile and the 84-row block, column counts around the 32-column panel. */
static void test_sizes_around_the_tiles(void) {
    static const int64_t ms[] = {17, 27, 28, 29, 41, 43, 83, 84, 85, 171};
    static const int64_t ns[] = {17, 31, 32, 33, 63, 65, 97};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            av_case_t c = av_plain(ms[i], av_depth(ms[i], ns[j], 19), ns[j]);
            c.tb = (int)((i + j) & 1);
            if (ms[i] >= ns[j]) c.bsz = 3;
            CHECK(av_check(&c) == 0);
        }
}

/* Depths around the 16-wide transposes of packing and the 256-deep slices (later slices add to out); shallow ones
 * with enough columns to reach the kernel. */
static void test_depths_around_the_slices(void) {
    static const int64_t ks[] = {1, 2, 15, 16, 17, 255, 256, 257, 513};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        for (int t = 0; t < 4; t++) {
            const int64_t n = (AV_MIN_MADDS + 45 * ks[i] - 1) / (45 * ks[i]);
            av_case_t c = av_plain(45, ks[i], n > 70 ? n : 70);
            c.ta = t & 1, c.tb = t >> 1;
            CHECK(av_check(&c) == 0);
        }
}

static void test_alpha_beta_bias_and_nan_out(void) {
    for (int v = 0; v < 8; v++) {
        av_case_t c = av_plain(50, 350, 60);
        c.alpha = v & 1 ? -1.5 : 1.0;
        c.beta = v & 2 ? 0.5 : 0.0;
        c.nan_out = !(v & 2); /* beta 0 must not read out */
        c.bias = (v & 4) != 0, c.bias_scale = 0.75;
        c.ta = v & 1, c.tb = (v >> 1) & 1;
        CHECK(av_check(&c) == 0);
        c.m = 20, c.n = 300; /* few rows: the column split */
        CHECK(av_check(&c) == 0);
    }
}

/* Row padding of out, and a column-major out (the product runs transposed, the bias then per row). */
static void test_padded_and_column_major_out(void) {
    for (int v = 0; v < 4; v++) {
        av_case_t c = av_plain(50, 240, 90);
        c.pad = 7;
        c.beta = v & 1 ? 2.0 : 0.0, c.bias = v >> 1;
        CHECK(av_check(&c) == 0);
        c.pad = 0, c.out_cm = 1, c.bsz = 3; /* computed as out^T: 90 x 50, more rows than columns */
        CHECK(av_check(&c) == 0);
    }
}

/* Few rows and many columns: A packed once, each thread packs and multiplies its own panels of B. */
static void test_few_rows_split_by_panels(void) {
    static const int64_t ms[] = {17, 30, 64, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (int tb = 0; tb < 2; tb++) {
            av_case_t c = av_plain(ms[i], 300, 333);
            c.tb = tb, c.bias = 1, c.beta = 1;
            CHECK(av_check(&c) == 0);
        }
}

/* Up to 256 rows times B stored (n, k) (gemm_avx512_bt.c: A packed in 32-row panels per thread, blocks of 14
 * columns with B read in place, the whole depth one chain; without AVX-512 gemm_avx2_bt.c from 2 rows, 16-row panels
 * and blocks of 6 columns): rows around the 8- and 16-row vectors and 16- and 32-row panels, columns around the 6- and
 * 14-column blocks, A stored either way, depths around the 8- and 16-wide transposes of A's packing, alpha, beta over
 * NaN or not, a bias; a column-major out of few columns makes out^T the product, A^T the weight and the bias one per
 * row. With AVX-512 up to 16 rows go to gemm_skinny.c instead (only the accuracy is checked there). */
static int av_in_place_b(int64_t m) { return av_kernel_runs ? m > 16 : av_avx2_bt_runs && m >= 2; }

static void test_few_rows_times_b_in_place(void) {
    static const int64_t ms[] = {2, 3, 7, 8, 9, 16, 17, 31, 32, 33, 48, 49, 64, 65, 100, 255, 256};
    static const int64_t ns[] = {17, 23, 24, 25, 27, 28, 29, 43, 70, 300};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            av_case_t c = av_plain(ms[i], 1 + (int64_t)(i * 7 + j * 5) % 40, ns[j]);
            c.tb = 1, c.ta = (int)((i + j) & 1), c.in_place_b = av_in_place_b(ms[i]);
            c.bias = (int)(j & 1), c.beta = i & 1 ? 0.5 : 0, c.nan_out = !(i & 1), c.alpha = j & 2 ? -2 : 1;
            CHECK(av_check(&c) == 0);
        }
    static const int64_t ks[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 257, 1025};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        av_case_t c = av_plain(i & 2 ? 5 : 40, ks[i], 60);
        c.tb = 1, c.ta = (int)(i & 1), c.bias = 1, c.in_place_b = av_in_place_b(c.m);
        CHECK(av_check(&c) == 0);
    }
    av_case_t c = av_plain(200, 300, 60); /* out^T = B^T A^T: 60 rows, the weight A (stored (m, k)) */
    c.out_cm = 1, c.bias = 1, c.beta = 1, c.in_place_b = av_in_place_b(60);
    CHECK(av_check(&c) == 0);
}

/* A single matrix past AV_ROWS_MIN, split by rows (B packed once, shared). */
static void test_single_matrix_split_by_rows(void) {
    av_case_t c = av_plain(340, 330, 300);
    c.tb = 1, c.bias = 1, c.beta = 0.5;
    CHECK(av_check(&c) == 0);
}

/* More columns than one chunk of packed B holds (32 panels of 32). */
static void test_columns_past_one_chunk(void) {
    av_case_t c = av_plain(200, 40, 1100); /* 8.8M multiply-adds */
    CHECK(av_check(&c) == 0);
    c.tb = 1, c.beta = -1, c.bias = 1;
    CHECK(av_check(&c) == 0);
}

/* Batches: 4 spreads over 2 threads (one whole matrix per call), 3 does not (each matrix shared out); a broadcast
 * b (batch stride 0). */
static void test_batches(void) {
    for (int v = 0; v < 8; v++) {
        av_case_t c = av_plain(45, 600, 40);
        c.bsz = v & 1 ? 3 : 4;
        c.bcast_b = (v >> 1) & 1;
        c.tb = v >> 2, c.ta = v >> 2;
        c.beta = v & 2 ? 0.5 : 0;
        c.bias = v & 1;
        CHECK(av_check(&c) == 0);
    }
    av_case_t big = av_plain(128, 64, 128); /* benchmarks/ops.py's bmm */
    big.bsz = 32;
    CHECK(av_check(&big) == 0);
}

/* 16-bit products with few rows or columns: up to 8 rows times B stored (n, k) stream B through gemm_skinny.c's dot
 * form (large ones split by columns over the pool), the rest take the kernel (bfloat16 from 2 rows and columns: one
 * row or column stays with oneDNN's matrix-vector kernel); few columns run transposed into a column-major scratch. */
static void test_16bit_few_rows_or_columns(void) {
    if (av_dt == AXON_FLOAT32) return; /* float32 keeps gemm_skinny.c there */
    static const int64_t shapes[][3] = {{1, 300, 70}, {2, 300, 70}, {5, 64, 40}, {16, 40, 33}, {70, 300, 3},
                                        {70, 300, 1}, {40, 17, 5}, {3, 2, 2}, {4, 1000, 1030}, {8, 300, 700},
                                        {9, 300, 70}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int v = 0; v < 4; v++) {
            av_case_t c = av_plain(shapes[i][0], shapes[i][1], shapes[i][2]);
            c.tb = v & 1, c.ta = (int)(i & 1);
            c.bias = v >> 1, c.beta = v >> 1 ? 0.5 : 0;
            c.out_cm = v == 3;
            CHECK(av_check(&c) == 0);
        }
}

/* Past 2^27 multiply-adds per matrix 16-bit operands are widened into float32 scratch for the BLAS instead. Here
 * AXON_GEMM_F32=avx512 still sends the widened float32 product to the kernel, so this checks the widening (an
 * operand, or out, column-major); tests/test_matmul.py's products past 2048^3 reach the BLAS itself. */
static void test_16bit_large_products_widened_for_the_library(void) {
    if (av_dt == AXON_FLOAT32) return;
    for (int v = 0; v < 2; v++) {
        av_case_t c = av_plain(530, 520, 500);
        c.library = 1;
        c.tb = v, c.bias = v, c.beta = v ? 0.5 : 0, c.out_cm = v;
        CHECK(av_check(&c) == 0);
    }
}

int main(void) {
    setenv("AXON_GEMM_F32", "avx512", 1);   /* before the first product: gemm.c reads it once */
    av_kernel_runs = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512vl");
    av_avx16_runs = av_kernel_runs && !__builtin_cpu_supports("amx-bf16");
    av_avx2_bt_runs = !av_kernel_runs && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!av_kernel_runs) fprintf(stderr, "no AVX-512F/BW/VL: the cases check the library path's accuracy only\n");
    dev1 = kc_open(1);
    dev2 = kc_open(2);
    static const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_BFLOAT16, AXON_FLOAT16};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        av_dt = dts[d];
        fprintf(stderr, "%s:\n", axon_dtype_name(av_dt));
        RUN(test_sizes_around_the_tiles);
        RUN(test_depths_around_the_slices);
        RUN(test_alpha_beta_bias_and_nan_out);
        RUN(test_padded_and_column_major_out);
        RUN(test_few_rows_split_by_panels);
        RUN(test_few_rows_times_b_in_place);
        RUN(test_single_matrix_split_by_rows);
        RUN(test_columns_past_one_chunk);
        RUN(test_batches);
        RUN(test_16bit_few_rows_or_columns);
        RUN(test_16bit_large_products_widened_for_the_library);
    }
    axon_runtime_destroy(dev1.rt);
    axon_runtime_destroy(dev2.rt);
    return check_report();
}
