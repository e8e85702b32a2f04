/* float32 products with few rows whose B is stored (n, k) with unit stride along k (a Linear's weight), for AVX2
 * and FMA: C = alpha * op(A) @ B^T + beta * C + bias, with B read where it lies. gemm_avx512_bt.c's scheme on 16
 * vector registers of 8 lanes, for CPUs without AVX-512 (where float32 products otherwise go to the BLAS).
 *
 * Why: with few rows each element of B serves few multiply-adds and the weight comes from memory, so a BLAS that
 * packs B first (MKL transposes a weight stored (n, k) into its panels) spends a pass over B that does no arithmetic.
 * Here A, small, is packed (by each thread for itself, gemm.c) into panels of AXON_GEMM_BT2_MR rows, depth-major
 * (two vectors of rows per depth), and the kernel broadcasts B's elements from AXON_GEMM_BT2_NR of its rows, each row
 * read in order. Per depth step: two vector loads of A, 6 broadcasts of B, 12 FMAs into 12 accumulators (the block of
 * C, 16 rows by 6 columns, held transposed): 15 of the 16 registers. The block is transposed back when it is stored,
 * once per product, since the whole depth is one chain.
 *
 * Every element of C is one chain of FMAs in depth order (then alpha, beta * C and the biases), whatever block or
 * thread computes it, so results are the same bits for any thread count. gemm.c decides which products take this
 * path from their shape alone. */
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "gemm_impl.h"

#define BT_MR AXON_GEMM_BT2_MR
#define BT_NR AXON_GEMM_BT2_NR

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define BT_TARGET __attribute__((target("avx2,fma")))
#define BT_INLINE BT_TARGET static inline __attribute__((always_inline))

/* Lanes [0, n) of 8 floats at p, the rest zero; nothing past p + n read. */
BT_INLINE __m256 bt_load_part(const float *p, int64_t n) {
    if (n >= 8) return _mm256_loadu_ps(p);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane));
}

/* In-register 8 x 8 transpose: lane c of r[q] becomes lane q of r[c]. */
BT_INLINE void bt_transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

/* Rows [8g, 8g + 8) of op(A) (those past m zero) into half g % 2 of panel g / 2: k x 16 floats, depth d's 16 rows
 * at d * 16. */
BT_TARGET static void bt_pack_group(const axon_gemm_avx512_t *op, float *ap, int64_t g) {
    const int64_t i0 = 8 * g, nr = op->m - i0 < 8 ? op->m - i0 : 8, k = op->k;
    float *dst = ap + (g / 2) * k * BT_MR + (g % 2) * 8;
    const float *a = op->a;
    if (op->ta) { /* A stored k x m: each depth's rows are contiguous */
        for (int64_t d = 0; d < k; d++) _mm256_store_ps(dst + d * BT_MR, bt_load_part(a + d * op->lda + i0, nr));
        return;
    }
    __m256 col[8];
    for (int64_t d = 0; d < k; d += 8) {
        const int64_t nd = k - d < 8 ? k - d : 8;
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++) col[q] = q < nr ? bt_load_part(a + (i0 + q) * op->lda + d, nd) : _mm256_setzero_ps();
        bt_transpose8(col);
        for (int64_t q = 0; q < nd; q++) _mm256_store_ps(dst + (d + q) * BT_MR, col[q]);
    }
}

/* The block of C at rows [i0, i0 + mr) (mr <= 8 * mv) and columns [n0, n0 + nb) from panel ap: nb and mv are
 * constants once inlined. B's rows n0 + j are read at b + (n0 + j) * ldb floats. */
BT_INLINE void bt_tile(const int nb, const int mv, const axon_gemm_avx512_t *op, const float *ap, int64_t i0,
                       int64_t mr, int64_t n0) {
    __m256 c0[BT_NR], c1[BT_NR];
#pragma GCC unroll 8
    for (int j = 0; j < nb; j++) c0[j] = _mm256_setzero_ps(), c1[j] = _mm256_setzero_ps();
    const int64_t ld = op->ldb, k = op->k;
    const float *row[BT_NR];
#pragma GCC unroll 8
    for (int j = 0; j < nb; j++) row[j] = (const float *)op->b + (n0 + j) * ld;
#pragma GCC unroll 4
    for (int64_t d = 0; d < k; d++) {
        const __m256 a0 = _mm256_load_ps(ap + d * BT_MR);
        const __m256 a1 = mv == 2 ? _mm256_load_ps(ap + d * BT_MR + 8) : _mm256_setzero_ps();
#pragma GCC unroll 8
        for (int j = 0; j < nb; j++) {
            const __m256 b = _mm256_broadcast_ss(row[j] + d);
            c0[j] = _mm256_fmadd_ps(a0, b, c0[j]);
            if (mv == 2) c1[j] = _mm256_fmadd_ps(a1, b, c1[j]);
        }
    }
    /* back to rows: lane l of c0[j] is C's element (i0 + l, n0 + j) */
    const __m256 alpha = _mm256_set1_ps(op->alpha), beta = _mm256_set1_ps(op->beta);
    const __m256 bias = op->bias ? bt_load_part(op->bias + n0, nb) : _mm256_setzero_ps();
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i cols = _mm256_cmpgt_epi32(_mm256_set1_epi32(nb), lane);
    for (int h = 0; h < mv; h++) {
        __m256 r[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) r[j] = j < nb ? (h ? c1[j] : c0[j]) : _mm256_setzero_ps();
        bt_transpose8(r);
        for (int64_t l = 0; l < 8 && 8 * h + l < mr; l++) {
            const int64_t i = i0 + 8 * h + l;
            float *c = op->c + i * op->ldc + n0;
            __m256 v = _mm256_mul_ps(alpha, r[l]);
            if (op->beta != 0) v = _mm256_fmadd_ps(beta, _mm256_maskload_ps(c, cols), v);
            if (op->bias_rows) v = _mm256_add_ps(v, _mm256_set1_ps(op->bias_rows[i]));
            v = _mm256_add_ps(v, bias);
            _mm256_maskstore_ps(c, cols, v);
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
    BT_CASE(6) BT_CASE(5) BT_CASE(4) BT_CASE(3) BT_CASE(2) BT_CASE(1)
    default: break;
    }
}

void axon_gemm_avx2_bt_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; g++) bt_pack_group(op, ap, g);
}

void axon_gemm_avx2_bt_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
        const int64_t n0 = b * BT_NR, nb = op->n - n0 < BT_NR ? op->n - n0 : BT_NR;
        /* every panel of A against these rows of B, which stay in L1 or L2 after the first */
        for (int64_t i0 = 0; i0 < op->m; i0 += BT_MR) {
            const int64_t mr = op->m - i0 < BT_MR ? op->m - i0 : BT_MR;
            bt_block(nb, mr > 8 ? 2 : 1, op, ap + (i0 / BT_MR) * op->k * BT_MR, i0, mr, n0);
        }
    }
}

#else

void axon_gemm_avx2_bt_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t g0, int64_t g1) {
    (void)op, (void)ap, (void)g0, (void)g1;
}

void axon_gemm_avx2_bt_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t b0, int64_t b1) {
    (void)op, (void)ap, (void)b0, (void)b1;
}

#endif

int axon_gemm_avx2_bt_available(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    const unsigned f = axon_cpu_features();
    return (f & AXON_CPU_AVX2) && (f & AXON_CPU_FMA);
#else
    return 0;
#endif
}

int64_t axon_gemm_avx2_bt_groups(int64_t m) { return (m + 7) / 8; }

int64_t axon_gemm_avx2_bt_blocks(int64_t n) { return (n + BT_NR - 1) / BT_NR; }

size_t axon_gemm_avx2_bt_a_bytes(int64_t m, int64_t k) {
    return (size_t)((m + BT_MR - 1) / BT_MR) * (size_t)k * BT_MR * sizeof(float);
}
