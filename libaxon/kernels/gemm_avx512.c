/* float32 GEMM for AVX-512F, for gemm.c: C = alpha * op(A) @ op(B) + beta * C + bias, float32 throughout; A and B
 * may also be bfloat16 or float16, widened (exactly) to float32 as they are packed.
 *
 * Why: on this project's machine (docs/benchmarks.md, "Against this host's peaks") single-threaded OpenBLAS 0.3.21
 * and oneDNN 2.6 reached 64-74% of the float32 FMA peak for mm 1024..4096 on 2 threads, and less for the Linears and
 * the MLP shapes; section "float32 GEMM: libaxon's own AVX-512 kernel" has what this file reaches.
 *
 * Layout (BLIS's): B is packed into panels of AVX_NR = 32 columns (columns past n zero), by chunks of panels and,
 * inside a chunk, by depth slices of AVX_KC, each slice of a panel AVX_KC x 32 floats; A into micro-panels of
 * AVX_MR = 14 rows, d x 14 floats per depth slice. The micro-kernel keeps a 14 x 32 block of C in 28 zmm accumulators
 * and, per depth step, loads two vectors of the B panel and broadcasts each of 14 elements of A from memory into two
 * FMAs (GCC 12 emits one vbroadcastss per element rather than two {1to16} FMA operands: one load fewer; no spills,
 * checked with objdump). With both operands in cache it ran at 215 GFLOP/s on one core, 92% of the 233 peak. alpha,
 * beta and the bias are applied when the block is stored (masked in the last panel), after the first depth slice;
 * later slices add to C. A row tail runs a micro-kernel compiled for that many rows, so no lane computes padding.
 *
 * Threads (gemm.c): a chunk of B is packed once and shared (its panels spread over the pool), then each participant
 * takes blocks of rows and packs its own rows of A, AVX_MC x AVX_KC at a time, to stay in L2 while the B slice's
 * 32-column micro-panel (32 KiB) stays in L1 (axon_gemm_avx512_rows). With few rows A is packed once instead and each
 * participant packs and multiplies its own panels of B (axon_gemm_avx512_cols). The packed operands live in the
 * calling thread's kept scratch (axon_gemm_scratch), so a product pays no page faults for them.
 *
 * Every element of C is one sum in a fixed order (each depth slice a chain of FMAs in depth order, the slices
 * added in order), whatever rows, panels or thread it falls to, so results are the same bits for any thread count.
 * The code is compiled for AVX-512F, BW and VL (BW's masked 16-bit loads read the tails of 16-bit rows) by target
 * attributes and chosen at run time: on another CPU axon_gemm_avx512_available() says 0 and gemm.c keeps the
 * library path. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_impl.h"

#define AVX_MR AXON_GEMM_AVX_MR
#define AVX_NR AXON_GEMM_AVX_NR
#define AVX_KC AXON_GEMM_AVX_KC
#define AVX_MC AXON_GEMM_AVX_MC

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include "transpose16.h"
#include "widen16.h"

#define AVX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#define AVX_INLINE AVX_TARGET static inline __attribute__((always_inline))

/* The packing routines are inlined once per kind of A and B (widen16.h's AXON_WIDEN_BY_KIND), so a float32 product
 * runs the same loads as before 16-bit sources existed. */

/* Rows [i0, i0 + mr) (mr <= AVX_MR) and depths [d0, d0 + kc) of op(A) into one micro-panel: kc x AVX_MR floats,
 * row d holding the mr elements of depth d0 + d (lanes past mr zero). */
AVX_INLINE void avx_pack_a_as(const int kind, const axon_gemm_avx512_t *op, float *dst, int64_t i0, int64_t mr,
                              int64_t d0, int64_t kc) {
    const __mmask16 keep = (__mmask16)((1u << AVX_MR) - 1);
    const int64_t es = axon_widen_size(kind);
    if (op->ta) { /* A stored k x m: each depth's rows are contiguous */
        const __mmask16 m = (__mmask16)((1u << mr) - 1);
        const char *src = (const char *)op->a + (d0 * op->lda + i0) * es;
        for (int64_t d = 0; d < kc; d++)
            _mm512_mask_storeu_ps(dst + d * AVX_MR, keep, axon_widen_load(kind, src + d * op->lda * es, m));
        return;
    }
    __m512 col[16];
    const char *src = (const char *)op->a + (i0 * op->lda + d0) * es;
    for (int64_t d = 0; d < kc; d += 16) {
        const int64_t nd = kc - d < 16 ? kc - d : 16;
        /* 14 short row streams, too short for the hardware prefetcher to pick up: 4 lines ahead by hand (256 bytes,
         * whatever the kind: 16-bit rows are read as far ahead in bytes) */
        for (int64_t r = 0; r < mr && d + 64 < kc; r++)
            _mm_prefetch(src + (r * op->lda + d) * es + 256, _MM_HINT_T0);
        axon_transpose16(kind, src + d * es, op->lda, mr, nd, col);
        for (int64_t q = 0; q < nd; q++) _mm512_mask_storeu_ps(dst + (d + q) * AVX_MR, keep, col[q]);
    }
}

AVX_TARGET static void avx_pack_a(const axon_gemm_avx512_t *op, float *dst, int64_t i0, int64_t mr, int64_t d0,
                                  int64_t kc) {
    AXON_WIDEN_BY_KIND(op->src, avx_pack_a_as, op, dst, i0, mr, d0, kc);
}

/* Depths [d0, d0 + kc) of panel p of op(B) (columns [32p, 32p + 32), those past n zero) into dst, kc x 32 floats. */
AVX_INLINE void avx_pack_b_as(const int kind, const axon_gemm_avx512_t *op, float *dst, int64_t p, int64_t d0,
                              int64_t kc) {
    const int64_t j0 = p * AVX_NR, nj = op->n - j0 < AVX_NR ? op->n - j0 : AVX_NR;
    const int64_t es = axon_widen_size(kind);
    if (!op->tb) { /* B stored k x n: rows of the panel are contiguous */
        const __mmask16 m0 = nj >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nj) - 1);
        const __mmask16 m1 = nj >= 32 ? (__mmask16)0xFFFF : nj <= 16 ? 0 : (__mmask16)((1u << (nj - 16)) - 1);
        const char *src = (const char *)op->b + (d0 * op->ldb + j0) * es;
        for (int64_t d = 0; d < kc; d++) {
            _mm512_storeu_ps(dst + d * AVX_NR, axon_widen_load(kind, src + d * op->ldb * es, m0));
            _mm512_storeu_ps(dst + d * AVX_NR + 16, axon_widen_load(kind, src + (d * op->ldb + 16) * es, m1));
        }
        return;
    }
    /* B stored n x k (a Linear's weight): 16 x 16 transposes of its rows */
    __m512 col[16];
    for (int h = 0; h < 2; h++) {
        const int64_t nr = nj - 16 * h;
        for (int64_t d = 0; d < kc; d += 16) {
            const int64_t nd = kc - d < 16 ? kc - d : 16;
            if (nr <= 0) {
                for (int64_t q = 0; q < nd; q++) _mm512_storeu_ps(dst + (d + q) * AVX_NR + 16 * h, _mm512_setzero_ps());
                continue;
            }
            const char *src = (const char *)op->b + ((j0 + 16 * h) * op->ldb + d0) * es;
            for (int64_t r = 0; r < nr && r < 16 && d + 64 < kc; r++) /* as in avx_pack_a_as */
                _mm_prefetch(src + (r * op->ldb + d) * es + 256, _MM_HINT_T0);
            axon_transpose16(kind, src + d * es, op->ldb, nr, nd, col);
            for (int64_t q = 0; q < nd; q++) _mm512_storeu_ps(dst + (d + q) * AVX_NR + 16 * h, col[q]);
        }
    }
}

AVX_TARGET static void avx_pack_b(const axon_gemm_avx512_t *op, float *dst, int64_t p, int64_t d0, int64_t kc) {
    AXON_WIDEN_BY_KIND(op->src, avx_pack_b_as, op, dst, p, d0, kc);
}

/* The micro-kernel for mr rows (a constant once inlined): rows [i0, i0 + mr) and columns [j0, j0 + nc) of C from kc
 * depths of the micro-panel ap and the panel slice bp; first: the slice starting at depth 0 (apply beta and bias). */
AVX_INLINE void avx_tile(const int mr, const axon_gemm_avx512_t *op, const float *ap, const float *bp, int64_t kc,
                         int64_t i0, int64_t j0, int64_t nc, int first) {
    __m512 c0[AVX_MR], c1[AVX_MR];
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++) c0[r] = _mm512_setzero_ps(), c1[r] = _mm512_setzero_ps();
#define AVX_STEP(d)                                                                                                \
    do {                                                                                                           \
        const __m512 b0 = _mm512_load_ps(bp + (d) * AVX_NR), b1 = _mm512_load_ps(bp + (d) * AVX_NR + 16);         \
        const float *a = ap + (d) * AVX_MR;                                                                        \
        _Pragma("GCC unroll 14") for (int r = 0; r < mr; r++) {                                                    \
            c0[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), b0, c0[r]);                                              \
            c1[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), b1, c1[r]);                                              \
        }                                                                                                          \
    } while (0)
    /* The block of C is fetched during the last 32 depth steps: fetched at the start, it would be evicted from L1 by
     * the A and B streams (46 of its 48 KiB) before the store. */
    const int64_t head = kc > 32 ? kc - 32 : 0;
#pragma GCC unroll 4
    for (int64_t d = 0; d < head; d++) AVX_STEP(d);
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++) {
        _mm_prefetch((const char *)(op->c + (i0 + r) * op->ldc + j0), _MM_HINT_T0);
        _mm_prefetch((const char *)(op->c + (i0 + r) * op->ldc + j0 + 16), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int64_t d = head; d < kc; d++) AVX_STEP(d);
#undef AVX_STEP
    const __mmask16 m0 = nc >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nc) - 1);
    const __mmask16 m1 = nc >= 32 ? (__mmask16)0xFFFF : nc <= 16 ? 0 : (__mmask16)((1u << (nc - 16)) - 1);
    const __m512 alpha = _mm512_set1_ps(op->alpha), beta = _mm512_set1_ps(op->beta);
    const int use_c = !first || op->beta != 0;
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
    if (first && op->bias) {
        bias0 = _mm512_maskz_loadu_ps(m0, op->bias + j0);
        bias1 = _mm512_maskz_loadu_ps(m1, op->bias + j0 + 16);
    }
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++) {
        float *c = op->c + (i0 + r) * op->ldc + j0;
        __m512 v0 = _mm512_mul_ps(alpha, c0[r]), v1 = _mm512_mul_ps(alpha, c1[r]);
        if (use_c) {
            const __m512 o0 = _mm512_maskz_loadu_ps(m0, c), o1 = _mm512_maskz_loadu_ps(m1, c + 16);
            if (first) v0 = _mm512_fmadd_ps(beta, o0, v0), v1 = _mm512_fmadd_ps(beta, o1, v1);
            else v0 = _mm512_add_ps(v0, o0), v1 = _mm512_add_ps(v1, o1);
        }
        if (first) {
            if (op->bias_rows) {
                const __m512 br = _mm512_set1_ps(op->bias_rows[i0 + r]);
                v0 = _mm512_add_ps(v0, br), v1 = _mm512_add_ps(v1, br);
            }
            v0 = _mm512_add_ps(v0, bias0), v1 = _mm512_add_ps(v1, bias1);
        }
        _mm512_mask_storeu_ps(c, m0, v0);
        _mm512_mask_storeu_ps(c + 16, m1, v1);
    }
}

#define AVX_TILE_CASE(R)                                                                                           \
    case R: avx_tile(R, op, ap, bp, kc, i0, j0, nc, first); break;

AVX_TARGET static void avx_tile_rows(int64_t mr, const axon_gemm_avx512_t *op, const float *ap, const float *bp,
                                     int64_t kc, int64_t i0, int64_t j0, int64_t nc, int first) {
    switch (mr) {
    AVX_TILE_CASE(14) AVX_TILE_CASE(13) AVX_TILE_CASE(12) AVX_TILE_CASE(11) AVX_TILE_CASE(10) AVX_TILE_CASE(9)
    AVX_TILE_CASE(8) AVX_TILE_CASE(7) AVX_TILE_CASE(6) AVX_TILE_CASE(5) AVX_TILE_CASE(4) AVX_TILE_CASE(3)
    AVX_TILE_CASE(2) AVX_TILE_CASE(1)
    default: break;
    }
}

static pthread_once_t avx_once = PTHREAD_ONCE_INIT;
static int avx_ok;

static void avx_init(void) {
    __builtin_cpu_init();
    avx_ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
}

int axon_gemm_avx512_available(void) {
    pthread_once(&avx_once, avx_init);
    return avx_ok;
}

/* Panels [p0, p1) of B stored k x n, depth by depth: each depth's columns are read as one contiguous run. dst as in
 * axon_gemm_avx512_pack_b, for a chunk of np panels starting at c0. */
AVX_INLINE void avx_pack_b_rows_as(const int kind, const axon_gemm_avx512_t *op, float *bp, int64_t c0, int64_t np,
                                   int64_t p0, int64_t p1) {
    const int64_t es = axon_widen_size(kind);
    for (int64_t d0 = 0; d0 < op->k; d0 += AVX_KC) {
        const int64_t kc = op->k - d0 < AVX_KC ? op->k - d0 : AVX_KC;
        for (int64_t d = 0; d < kc; d++) {
            const char *src = (const char *)op->b + (d0 + d) * op->ldb * es;
            for (int64_t p = p0; p < p1; p++) {
                const int64_t j0 = p * AVX_NR, nj = op->n - j0 < AVX_NR ? op->n - j0 : AVX_NR;
                const __mmask16 m0 = nj >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nj) - 1);
                const __mmask16 m1 = nj >= 32 ? (__mmask16)0xFFFF : nj <= 16 ? 0 : (__mmask16)((1u << (nj - 16)) - 1);
                float *dst = bp + (d0 * np + (p - c0) * kc + d) * AVX_NR;
                _mm512_store_ps(dst, axon_widen_load(kind, src + j0 * es, m0));
                _mm512_store_ps(dst + 16, axon_widen_load(kind, src + (j0 + 16) * es, m1));
            }
        }
    }
}

AVX_TARGET static void avx_pack_b_rows(const axon_gemm_avx512_t *op, float *bp, int64_t c0, int64_t np, int64_t p0,
                                       int64_t p1) {
    AXON_WIDEN_BY_KIND(op->src, avx_pack_b_rows_as, op, bp, c0, np, p0, p1);
}

/* A chunk of B is stored by depth slice, then panel: a slice's panels, which the row loop takes in turn, are one
 * stream. */
void axon_gemm_avx512_pack_b(const axon_gemm_avx512_t *op, float *bp, int64_t c0, int64_t c1, int64_t p0, int64_t p1) {
    const int64_t np = c1 - c0;
    if (!op->tb) {
        avx_pack_b_rows(op, bp, c0, np, p0, p1);
        return;
    }
    for (int64_t d0 = 0; d0 < op->k; d0 += AVX_KC) {
        const int64_t kc = op->k - d0 < AVX_KC ? op->k - d0 : AVX_KC;
        for (int64_t p = p0; p < p1; p++) avx_pack_b(op, bp + (d0 * np + (p - c0) * kc) * AVX_NR, p, d0, kc);
    }
}

void axon_gemm_avx512_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
        const int64_t i0 = u * AVX_MR, mr = op->m - i0 < AVX_MR ? op->m - i0 : AVX_MR;
        avx_pack_a(op, ap + u * op->k * AVX_MR, i0, mr, 0, op->k);
    }
}

void axon_gemm_avx512_rows(const axon_gemm_avx512_t *op, const float *bp, int64_t c0, int64_t c1, int64_t r0,
                           int64_t r1, float *ap) {
    const int64_t np = c1 - c0;
    for (int64_t ib = r0; ib < r1; ib += AVX_MC) {
        const int64_t mc = r1 - ib < AVX_MC ? r1 - ib : AVX_MC;
        for (int64_t d0 = 0; d0 < op->k; d0 += AVX_KC) {
            const int64_t kc = op->k - d0 < AVX_KC ? op->k - d0 : AVX_KC;
            for (int64_t u = 0; u * AVX_MR < mc; u++) {
                const int64_t mr = mc - u * AVX_MR < AVX_MR ? mc - u * AVX_MR : AVX_MR;
                avx_pack_a(op, ap + u * kc * AVX_MR, ib + u * AVX_MR, mr, d0, kc);
            }
            for (int64_t p = 0; p < np; p++) {
                const int64_t j0 = (c0 + p) * AVX_NR, nc = op->n - j0 < AVX_NR ? op->n - j0 : AVX_NR;
                const float *b = bp + (d0 * np + p * kc) * AVX_NR;
                for (int64_t u = 0; u * AVX_MR < mc; u++) {
                    const int64_t mr = mc - u * AVX_MR < AVX_MR ? mc - u * AVX_MR : AVX_MR;
                    avx_tile_rows(mr, op, ap + u * kc * AVX_MR, b, kc, ib + u * AVX_MR, j0, nc, d0 == 0);
                }
            }
        }
    }
}

void axon_gemm_avx512_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t p0, int64_t p1, float *bp) {
    for (int64_t p = p0; p < p1; p++) {
        const int64_t j0 = p * AVX_NR, nc = op->n - j0 < AVX_NR ? op->n - j0 : AVX_NR;
        for (int64_t d0 = 0; d0 < op->k; d0 += AVX_KC) {
            const int64_t kc = op->k - d0 < AVX_KC ? op->k - d0 : AVX_KC;
            avx_pack_b(op, bp + d0 * AVX_NR, p, d0, kc);
            for (int64_t u = 0; u * AVX_MR < op->m; u++) {
                const int64_t mr = op->m - u * AVX_MR < AVX_MR ? op->m - u * AVX_MR : AVX_MR;
                avx_tile_rows(mr, op, ap + (u * op->k + d0) * AVX_MR, bp + d0 * AVX_NR, kc, u * AVX_MR, j0, nc,
                              d0 == 0);
            }
        }
    }
}

#else

int axon_gemm_avx512_available(void) { return 0; }

void axon_gemm_avx512_pack_b(const axon_gemm_avx512_t *op, float *bp, int64_t c0, int64_t c1, int64_t p0, int64_t p1) {
    (void)op, (void)bp, (void)c0, (void)c1, (void)p0, (void)p1;
}

void axon_gemm_avx512_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t u0, int64_t u1) {
    (void)op, (void)ap, (void)u0, (void)u1;
}

void axon_gemm_avx512_rows(const axon_gemm_avx512_t *op, const float *bp, int64_t c0, int64_t c1, int64_t r0,
                           int64_t r1, float *ap) {
    (void)op, (void)bp, (void)c0, (void)c1, (void)r0, (void)r1, (void)ap;
}

void axon_gemm_avx512_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t p0, int64_t p1, float *bp) {
    (void)op, (void)ap, (void)p0, (void)p1, (void)bp;
}

#endif

int64_t axon_gemm_avx512_panels(int64_t n) { return (n + AVX_NR - 1) / AVX_NR; }

int64_t axon_gemm_avx512_chunk(int64_t k, int64_t n) {
    const int64_t np = axon_gemm_avx512_panels(n);
    /* At most AXON_GEMM_AVX_CHUNK_BYTES of packed B (memory kept per thread), and a depth slice of a chunk within half
     * an L2 (1 MiB: 32 panels), where the row loop finds it again for each block of rows. */
    const int64_t c = (int64_t)(AXON_GEMM_AVX_CHUNK_BYTES / ((size_t)k * AVX_NR * sizeof(float)));
    const int64_t cap = c < AXON_GEMM_AVX_SLICE_PANELS ? c : AXON_GEMM_AVX_SLICE_PANELS;
    return cap < 1 ? 1 : cap > np ? np : cap;
}

size_t axon_gemm_avx512_b_bytes(int64_t k, int64_t panels) {
    return (size_t)panels * (size_t)k * AVX_NR * sizeof(float);
}

size_t axon_gemm_avx512_a_bytes(int64_t m, int64_t k) {
    return (size_t)((m + AVX_MR - 1) / AVX_MR) * (size_t)k * AVX_MR * sizeof(float);
}

size_t axon_gemm_avx512_block_bytes(int64_t k) {
    return axon_gemm_avx512_a_bytes(AVX_MC, k < AVX_KC ? k : AVX_KC);
}

int axon_gemm_avx512_run(const axon_gemm_avx512_t *op) {
    const int64_t np = axon_gemm_avx512_panels(op->n), nc = axon_gemm_avx512_chunk(op->k, op->n);
    const size_t bb = axon_gemm_avx512_b_bytes(op->k, nc);
    float *bp = axon_gemm_scratch(AXON_GEMM_SCRATCH_PACK, bb + axon_gemm_avx512_block_bytes(op->k));
    if (!bp) return -1;
    for (int64_t c0 = 0; c0 < np; c0 += nc) {
        const int64_t c1 = np - c0 < nc ? np : c0 + nc;
        axon_gemm_avx512_pack_b(op, bp, c0, c1, c0, c1);
        axon_gemm_avx512_rows(op, bp, c0, c1, 0, op->m, bp + bb / sizeof(float));
    }
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, bp);
    return 0;
}
