/* float32 products with few rows whose B is stored (n, k) with unit stride along k (a Linear's weight), for
 * AVX-512F: C = alpha * op(A) @ B^T + beta * C + bias, with B read where it lies.
 *
 * Why: gemm_avx512.c's micro-kernel takes B as vectors along n, so a weight stored (n, k) is transposed as it is
 * packed. With few rows each element of B serves few multiply-adds, the weight comes from memory (it is read once
 * per call) and the transposing pack, waiting on 32 row streams, cost 21-27% of the product (64 x 512 x 2048 on one
 * core, rdtsc around the pack in a throwaway harness; about as much with B in L2). Here the roles turn: A, small, is
 * packed (by each thread for itself, gemm.c) into panels of AXON_GEMM_BT_MR rows, depth-major (two vectors of rows
 * per depth), and the kernel broadcasts B's elements from AXON_GEMM_BT_NR of its rows, each row read in order, so
 * each element of B goes from memory to the FMAs with no pass of its own. Per depth step: two vector loads of A, 14
 * broadcasts of B, 28 FMAs into 28 accumulators (the block of C, 32 rows by 14 columns, held transposed); the block
 * is transposed back when it is stored, once per product, since the whole depth is one chain.
 *
 * Every element of C is one chain of FMAs in depth order (then alpha, beta * C and the biases, in gemm_avx512.c's
 * order), whatever block or thread computes it, so results are the same bits for any thread count. gemm.c decides
 * which products take this path from their shape alone.
 *
 * One core, the same harness, pack of A included: 64 x 512 x 2048 740 us (181 GFLOP/s) against 943-1007 on
 * gemm_avx512.c's column panels, 64 x 2048 x 512 722-745 against 1033, 64 x 512 x 512 181 against 232, 256 x 512 x
 * 512 610 against 686; with operands in cache the loop runs at 195-204 GFLOP/s (the 14 x 32 kernel's 215). */
#include <stdint.h>
#include <string.h>

#include "gemm_impl.h"

#define BT_MR AXON_GEMM_BT_MR
#define BT_NR AXON_GEMM_BT_NR

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include "transpose16.h"
#include "widen16.h"

#define BT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#define BT_INLINE BT_TARGET static inline __attribute__((always_inline))

/* Rows [16g, 16g + 16) of op(A) (those past m zero) into half g % 2 of panel g / 2: k x 32 floats, depth d's 32 rows
 * at d * 32. */
BT_TARGET static void bt_pack_group(const axon_gemm_avx512_t *op, float *ap, int64_t g) {
    const int64_t i0 = 16 * g, nr = op->m - i0 < 16 ? op->m - i0 : 16, k = op->k;
    float *dst = ap + (g / 2) * k * BT_MR + (g % 2) * 16;
    const float *a = op->a;
    if (op->ta) { /* A stored k x m: each depth's rows are contiguous */
        const __mmask16 m = (__mmask16)((1u << nr) - 1);
        for (int64_t d = 0; d < k; d++)
            _mm512_store_ps(dst + d * BT_MR, _mm512_maskz_loadu_ps(m, a + d * op->lda + i0));
        return;
    }
    __m512 col[16];
    for (int64_t d = 0; d < k; d += 16) {
        const int64_t nd = k - d < 16 ? k - d : 16;
        axon_transpose16(AXON_W_F32, (const char *)(a + i0 * op->lda + d), op->lda, nr, nd, col);
        for (int64_t q = 0; q < nd; q++) _mm512_store_ps(dst + (d + q) * BT_MR, col[q]);
    }
}

/* The block of C at rows [i0, i0 + mr) (mr <= 16 * mv) and columns [n0, n0 + nb) from panel ap: nb and mv are
 * constants once inlined. B's rows n0 + j are read at b0 + j * ldb floats; three row pointers and offsets of up to
 * four rows keep the 14 addresses in general registers. */
BT_INLINE void bt_tile(const int nb, const int mv, const axon_gemm_avx512_t *op, const float *ap, int64_t i0,
                       int64_t mr, int64_t n0) {
    __m512 c0[BT_NR], c1[BT_NR];
#pragma GCC unroll 16
    for (int j = 0; j < nb; j++) c0[j] = _mm512_setzero_ps(), c1[j] = _mm512_setzero_ps();
    const int64_t ld = op->ldb, k = op->k;
    enum { G = (BT_NR + 2) / 3 }; /* rows per pointer */
    const float *p = (const float *)op->b + n0 * ld, *q = p + G * ld, *r = p + 2 * G * ld;
#pragma GCC unroll 4
    for (int64_t d = 0; d < k; d++) {
        const __m512 a0 = _mm512_load_ps(ap + d * BT_MR);
        const __m512 a1 = mv == 2 ? _mm512_load_ps(ap + d * BT_MR + 16) : _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int j = 0; j < nb; j++) {
            const float *row = j < G ? p : j < 2 * G ? q : r;
            const __m512 b = _mm512_set1_ps(row[(j % G) * ld + d]);
            c0[j] = _mm512_fmadd_ps(a0, b, c0[j]);
            if (mv == 2) c1[j] = _mm512_fmadd_ps(a1, b, c1[j]);
        }
    }
    /* back to rows: lane l of c0[j] is C's element (i0 + l, n0 + j) */
    float t[BT_NR * 16] __attribute__((aligned(64)));
    const __mmask16 cols = (__mmask16)((1u << nb) - 1);
    const __m512 alpha = _mm512_set1_ps(op->alpha), beta = _mm512_set1_ps(op->beta);
    const __m512 bias = op->bias ? _mm512_maskz_loadu_ps(cols, op->bias + n0) : _mm512_setzero_ps();
    for (int h = 0; h < mv; h++) {
#pragma GCC unroll 16
        for (int j = 0; j < nb; j++) _mm512_store_ps(t + j * 16, h ? c1[j] : c0[j]);
        __m512 row[16];
        axon_transpose16(AXON_W_F32, (const char *)t, 16, nb, 16, row);
        for (int64_t l = 0; l < 16 && 16 * h + l < mr; l++) {
            const int64_t i = i0 + 16 * h + l;
            float *c = op->c + i * op->ldc + n0;
            __m512 v = _mm512_mul_ps(alpha, row[l]);
            if (op->beta != 0) v = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(cols, c), v);
            if (op->bias_rows) v = _mm512_add_ps(v, _mm512_set1_ps(op->bias_rows[i]));
            v = _mm512_add_ps(v, bias);
            _mm512_mask_storeu_ps(c, cols, v);
        }
    }
}

#define BT_CASE(N)                                                                                                 \
    case N:                                                                                                        \
        if (mv == 2) bt_tile(N, 2, op, ap, i0, mr, n0);                                                            \
        else bt_tile(N, 1, op, ap, i0, mr, n0);                                                                    \
        break;

BT_TARGET static void bt_block(int64_t nb, int mv, const axon_gemm_avx512_t *op, const float *ap, int64_t i0,
                               int64_t mr, int64_t n0) {
    switch (nb) {
    BT_CASE(14) BT_CASE(13) BT_CASE(12) BT_CASE(11) BT_CASE(10) BT_CASE(9) BT_CASE(8) BT_CASE(7) BT_CASE(6)
    BT_CASE(5) BT_CASE(4) BT_CASE(3) BT_CASE(2) BT_CASE(1)
    default: break;
    }
}

void axon_gemm_avx512_bt_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; g++) bt_pack_group(op, ap, g);
}

void axon_gemm_avx512_bt_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
        const int64_t n0 = b * BT_NR, nb = op->n - n0 < BT_NR ? op->n - n0 : BT_NR;
        /* every panel of A against these rows of B, which stay in L1 or L2 after the first */
        for (int64_t i0 = 0; i0 < op->m; i0 += BT_MR) {
            const int64_t mr = op->m - i0 < BT_MR ? op->m - i0 : BT_MR;
            bt_block(nb, mr > 16 ? 2 : 1, op, ap + (i0 / BT_MR) * op->k * BT_MR, i0, mr, n0);
        }
    }
}

#else

void axon_gemm_avx512_bt_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t g0, int64_t g1) {
    (void)op, (void)ap, (void)g0, (void)g1;
}

void axon_gemm_avx512_bt_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t b0, int64_t b1) {
    (void)op, (void)ap, (void)b0, (void)b1;
}

#endif

int64_t axon_gemm_avx512_bt_groups(int64_t m) { return (m + 15) / 16; }

int64_t axon_gemm_avx512_bt_blocks(int64_t n) { return (n + BT_NR - 1) / BT_NR; }

size_t axon_gemm_avx512_bt_a_bytes(int64_t m, int64_t k) {
    return (size_t)((m + BT_MR - 1) / BT_MR) * (size_t)k * BT_MR * sizeof(float);
}
