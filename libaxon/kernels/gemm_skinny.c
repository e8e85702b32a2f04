/* float32 GEMM with few rows or few columns (AXON_GEMM_SKINNY): the decode-step Linear layers, (4, k) @ (k, n).
 *
 * OpenBLAS's single-threaded sgemm with B transposed (a Linear's weight, stored (n, k)) and m of a few rows is ~6x
 * slower than with B as it is, and both spend most of their time packing B for a product that reads each element of
 * B m times. Here B is streamed once, as it is stored:
 *   - B stored (n, k) (op(B) column-major, the Linear case): every output is a dot product over k; a tile of up to
 *     4 rows of A and 4 rows of B (1 x 16, 2 x 8 for one or two rows) keeps 16 vector accumulators along k, and the
 *     rows of B stay in L1 while all the rows of A pass over them. A stored transposed is first packed, a chunk of k at a time, on the stack.
 *   - B stored (k, n) row-major: each row of out is a sum of rows of B scaled by A's elements (axpy form); a tile of
 *     up to 4 rows of out and 64 columns keeps 16 vector accumulators while k rows of B stream by.
 * A product with few columns and many rows is the same computation on the transposes (out^T = op(B)^T op(A)^T), with
 * out written through its strides.
 *
 * The AVX-512 versions use intrinsics (FMA; the kernel sources build with -ffp-contract=off, so plain C would not
 * fuse), chosen at run time; the portable versions are plain C whose inner loops run over 8 independent lanes, so
 * the compiler vectorises them without reassociating a sum, compiled for AVX2 and the baseline (AXON_CLONES).
 * Sums are float32, in a different order from OpenBLAS's, like any two BLAS libraries.
 *
 * The AVX-512 dot form also streams a bfloat16 or float16 B (axon_gemm_skinny_16, widen16.h): a 16-bit decode step's
 * weight is read once, as it is stored, rather than widened into scratch first (gemm.c, GEMM_16_DOT_ROWS). */
#include <stdatomic.h>
#include <stdint.h>

#include "cpu.h"
#include "gemm_impl.h"
#include "kernels_impl.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXON_NO_CLONES)
#include <immintrin.h>
#define SK_AVX512 1
#include "widen16.h"
#endif

enum {
    SK_MR = 4,                   /* rows of A per tile */
    SK_NR = 4,                   /* rows of B per dot tile (16 and 8 when A has 1 or 2 rows) */
    SK_KC = 256,                 /* k per chunk when A must be packed (16 KiB of stack) */
    SK_NC = 256,                 /* columns per portable axpy tile */
};

/* One product: C[i][q] = alpha * sum_p op(A)[i][p] op(B)[p][q] + beta * C[i][q], each operand through two strides
 * in elements: op(A)[i][p] = a[i * a_rs + p * a_cs], op(B)[p][q] = b[p * b_rs + q * b_cs], C[i][q] = c[i * c_rs +
 * q * c_cs]. m <= AXON_GEMM_SKINNY. */
typedef struct sk_op {
    int64_t m, n, k;
    float alpha, beta;
    const float *a;
    int64_t a_rs, a_cs;
    const void *b;               /* float32, or (AVX-512 dot form only) bfloat16 / float16 */
    int64_t b_rs, b_cs;
    float *c;
    int64_t c_rs, c_cs;
    axon_dtype_t bdt;            /* of b */
} sk_op_t;

static int64_t sk_min(int64_t x, int64_t y) { return x < y ? x : y; }

/* beta == 0 never reads C. */
static inline float sk_out(const sk_op_t *op, float sum, const float *c) {
    return op->alpha * sum + (op->beta == 0 ? 0.0f : op->beta * *c);
}

/* ---- portable ---- */

/* Dot form: a_cs == 1 and b_rs == 1. Each row of B is read once from memory and then from L1 for every row of A. */
AXON_CLONES static void sk_dot_portable(const sk_op_t *op) {
    for (int64_t q = 0; q < op->n; q++) {
        const float *bq = (const float *)op->b + q * op->b_cs;
        for (int64_t i = 0; i < op->m; i++) {
            const float *ai = op->a + i * op->a_rs;
            float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t p = 0;
            for (; p + 8 <= op->k; p += 8)
                for (int l = 0; l < 8; l++) lane[l] += ai[p + l] * bq[p + l];
            float s = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
            for (; p < op->k; p++) s += ai[p] * bq[p];
            float *c = op->c + i * op->c_rs + q * op->c_cs;
            *c = sk_out(op, s, c);
        }
    }
}

/* Axpy form: b_cs == 1. A tile of SK_NC columns of one row of out accumulates on the stack. */
AXON_CLONES static void sk_axpy_portable(const sk_op_t *op) {
    float acc[SK_NC];
    for (int64_t q0 = 0; q0 < op->n; q0 += SK_NC) {
        const int64_t nc = sk_min(SK_NC, op->n - q0);
        for (int64_t i = 0; i < op->m; i++) {
            for (int64_t q = 0; q < nc; q++) acc[q] = 0;
            for (int64_t p = 0; p < op->k; p++) {
                const float av = op->a[i * op->a_rs + p * op->a_cs], *bp = (const float *)op->b + p * op->b_rs + q0;
                for (int64_t q = 0; q < nc; q++) acc[q] += av * bp[q];
            }
            for (int64_t q = 0; q < nc; q++) {
                float *c = op->c + i * op->c_rs + (q0 + q) * op->c_cs;
                *c = sk_out(op, acc[q], c);
            }
        }
    }
}

/* ---- AVX-512 ---- */

#ifdef SK_AVX512
#define SK_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

static inline __mmask16 sk_mask(int64_t left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }

_Static_assert(SK_MR * SK_NR == 16, "a dot tile has the 16 accumulators sk_sum16 reduces");

/* The 16 sums of v[0..15]'s lanes, as one vector (lane t = sum of v[t]): pairs are interleaved and added, level by
 * level (within 32-bit pairs, 64-bit halves of a 128-bit lane, then across 128-bit lanes), 45 instructions where
 * 16 separate reductions take ~130. */
SK_TARGET static inline __attribute__((always_inline)) __m512 sk_sum16(const __m512 v[16]) {
    __m512 w[8], x[4], y[2];
    _Pragma("GCC unroll 8")
    for (int u = 0; u < 8; u++) /* per 128-bit lane: v[2u] 0+2, v[2u+1] 0+2, v[2u] 1+3, v[2u+1] 1+3 */
        w[u] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * u], v[2 * u + 1]), _mm512_unpackhi_ps(v[2 * u], v[2 * u + 1]));
    _Pragma("GCC unroll 4")
    for (int u = 0; u < 4; u++) /* per 128-bit lane: the sums of v[4u..4u+3] within that lane */
        x[u] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * u], w[2 * u + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(w[2 * u], w[2 * u + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    _Pragma("GCC unroll 2")
    for (int u = 0; u < 2; u++) /* 128-bit lanes: x[2u] lanes 0+2, 1+3, then x[2u+1]'s */
        y[u] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * u], x[2 * u + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(x[2 * u], x[2 * u + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Lane i * nr + j = sum_p a[i * lda + p] * bq[j][p] for i < mr, j < nr (compile-time constants after inlining,
 * mr * nr <= 16; bq's rows hold elements of the kind, widened as they are loaded). The 16 accumulators are one 4 x 4
 * tile, or 1 x 16 and 2 x 8 for one or two rows of A, so that those too keep 16 independent FMA chains in flight. */
SK_TARGET static inline __attribute__((always_inline)) __m512 sk_dot_tile512(int kind, int mr, int nr, int64_t k,
                                                                           const float *a, int64_t lda,
                                                                           const char *const *bq) {
    const int64_t es = axon_widen_size(kind);
    __m512 acc[16];
    _Pragma("GCC unroll 16")
    for (int t = 0; t < 16; t++) acc[t] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m512 bv[16];
        _Pragma("GCC unroll 16")
        for (int j = 0; j < nr; j++) bv[j] = axon_widen_load(kind, bq[j] + p * es, (__mmask16)0xFFFF);
        _Pragma("GCC unroll 4")
        for (int i = 0; i < mr; i++) {
            __m512 av = _mm512_loadu_ps(a + i * lda + p);
            _Pragma("GCC unroll 16")
            for (int j = 0; j < nr; j++) acc[i * nr + j] = _mm512_fmadd_ps(av, bv[j], acc[i * nr + j]);
        }
    }
    if (p < k) { /* masked lanes are not read, so nothing past the row is touched */
        const __mmask16 mk = sk_mask(k - p);
        __m512 bv[16];
        _Pragma("GCC unroll 16")
        for (int j = 0; j < nr; j++) bv[j] = axon_widen_load(kind, bq[j] + p * es, mk);
        _Pragma("GCC unroll 4")
        for (int i = 0; i < mr; i++) {
            __m512 av = _mm512_maskz_loadu_ps(mk, a + i * lda + p);
            _Pragma("GCC unroll 16")
            for (int j = 0; j < nr; j++) acc[i * nr + j] = _mm512_fmadd_ps(av, bv[j], acc[i * nr + j]);
        }
    }
    return sk_sum16(acc);
}

SK_TARGET static inline __attribute__((always_inline)) void sk_dot512_as(int kind, const sk_op_t *op) {
    const __m512 alpha = _mm512_set1_ps(op->alpha), beta = _mm512_set1_ps(op->beta);
    const int64_t nr = op->m == 1 ? 16 : op->m == 2 ? 8 : SK_NR, es = axon_widen_size(kind); /* nr: rows of B */
    for (int64_t q0 = 0; q0 < op->n; q0 += nr) {
        const int64_t nq = sk_min(nr, op->n - q0);
        const char *bq[16];
        for (int j = 0; j < nr; j++) /* tail: repeat the last row */
            bq[j] = (const char *)op->b + (q0 + (j < nq ? j : nq - 1)) * op->b_cs * es;
        for (int64_t i0 = 0; i0 < op->m; i0 += SK_MR) {
            const int64_t mr = sk_min(SK_MR, op->m - i0);
            const float *a = op->a + i0 * op->a_rs;
            __m512 z;
            if (nr == 16) z = sk_dot_tile512(kind, 1, 16, op->k, a, op->a_rs, bq);
            else if (nr == 8) z = sk_dot_tile512(kind, 2, 8, op->k, a, op->a_rs, bq);
            else if (mr == 1) z = sk_dot_tile512(kind, 1, SK_NR, op->k, a, op->a_rs, bq);
            else if (mr == 2) z = sk_dot_tile512(kind, 2, SK_NR, op->k, a, op->a_rs, bq);
            else if (mr == 3) z = sk_dot_tile512(kind, 3, SK_NR, op->k, a, op->a_rs, bq);
            else z = sk_dot_tile512(kind, 4, SK_NR, op->k, a, op->a_rs, bq);
            if (op->c_cs == 1) { /* each row's nq lanes moved down to lane 0 and stored at once */
                const __mmask16 st = (__mmask16)((1u << nq) - 1);
                for (int64_t i = 0; i < mr; i++) {
                    float *c = op->c + (i0 + i) * op->c_rs + q0;
                    __m512 v = _mm512_mul_ps(alpha, _mm512_maskz_compress_ps((__mmask16)(st << (i * nr)), z));
                    if (op->beta != 0) v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(st, c)));
                    _mm512_mask_storeu_ps(c, st, v);
                }
            } else {
                float s[16];
                _mm512_storeu_ps(s, z);
                for (int64_t i = 0; i < mr; i++)
                    for (int64_t j = 0; j < nq; j++) {
                        float *c = op->c + (i0 + i) * op->c_rs + (q0 + j) * op->c_cs;
                        *c = sk_out(op, s[i * nr + j], c);
                    }
            }
        }
    }
}

SK_TARGET static void sk_dot512(const sk_op_t *op) { AXON_WIDEN_BY_KIND(op->bdt, sk_dot512_as, op); }

/* Rows i0..i0+mr of out, columns q0..q0+64 (masked by mk): acc[i][j] = sum_p op(A)[i][p] op(B)[p][q0 + 16 j ...]. */
SK_TARGET static inline __attribute__((always_inline)) void sk_axpy_tile512(int mr, const sk_op_t *op, int64_t i0,
                                                                            int64_t q0, const __mmask16 *mk) {
    __m512 acc[SK_MR][4];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < mr; i++)
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) acc[i][j] = _mm512_setzero_ps();
    const float *a = op->a + i0 * op->a_rs, *b = (const float *)op->b + q0;
    for (int64_t p = 0; p < op->k; p++, a += op->a_cs, b += op->b_rs) {
        __m512 bv[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) bv[j] = _mm512_maskz_loadu_ps(mk[j], b + 16 * j);
        _Pragma("GCC unroll 4")
        for (int i = 0; i < mr; i++) {
            __m512 av = _mm512_set1_ps(a[i * op->a_rs]);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }
    const __m512 alpha = _mm512_set1_ps(op->alpha), beta = _mm512_set1_ps(op->beta);
    _Pragma("GCC unroll 4")
    for (int i = 0; i < mr; i++) {
        float *c = op->c + (i0 + i) * op->c_rs + q0 * op->c_cs;
        if (op->c_cs == 1) {
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                __m512 v = _mm512_mul_ps(alpha, acc[i][j]);
                if (op->beta != 0) v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(mk[j], c + 16 * j)));
                _mm512_mask_storeu_ps(c + 16 * j, mk[j], v);
            }
        } else { /* out seen transposed: a column of out is strided */
            float s[64];
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) _mm512_storeu_ps(s + 16 * j, acc[i][j]);
            for (int64_t q = 0, nq = sk_min(64, op->n - q0); q < nq; q++) c[q * op->c_cs] = sk_out(op, s[q], c + q * op->c_cs);
        }
    }
}

SK_TARGET static void sk_axpy512(const sk_op_t *op) {
    for (int64_t q0 = 0; q0 < op->n; q0 += 64) {
        __mmask16 mk[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) {
            int64_t left = op->n - q0 - 16 * j;
            mk[j] = left <= 0 ? 0 : sk_mask(left);
        }
        for (int64_t i0 = 0; i0 < op->m; i0 += SK_MR) {
            switch (sk_min(SK_MR, op->m - i0)) {
            case 1: sk_axpy_tile512(1, op, i0, q0, mk); break;
            case 2: sk_axpy_tile512(2, op, i0, q0, mk); break;
            case 3: sk_axpy_tile512(3, op, i0, q0, mk); break;
            default: sk_axpy_tile512(4, op, i0, q0, mk); break;
            }
        }
    }
}

/* 1 when the CPU (and OS) run AVX-512F, BW, VL and FMA; looked up once. */
static int sk_have_avx512(void) {
    static atomic_int known; /* 0 not yet, 1 yes, 2 no */
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v == 0) {
        unsigned f = axon_cpu_features();
        v = (f & AXON_CPU_AVX512F) && (f & AXON_CPU_FMA) && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl")
                ? 1
                : 2;
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v == 1;
}
#endif

static void sk_dot(const sk_op_t *op) {
#ifdef SK_AVX512
    if (sk_have_avx512()) {
        sk_dot512(op);
        return;
    }
#endif
    sk_dot_portable(op);
}

static void sk_axpy(const sk_op_t *op) {
#ifdef SK_AVX512
    if (sk_have_avx512()) {
        sk_axpy512(op);
        return;
    }
#endif
    sk_axpy_portable(op);
}

/* The dot form wants op(A) rows contiguous: pack A, SK_KC of k at a time, on the stack; the chunks after the first
 * add to C (beta 1). */
static void sk_dot_packed(const sk_op_t *op) {
    float buf[AXON_GEMM_SKINNY * SK_KC];
    for (int64_t p0 = 0; p0 < op->k; p0 += SK_KC) {
        const int64_t kc = sk_min(SK_KC, op->k - p0);
        for (int64_t i = 0; i < op->m; i++)
            for (int64_t p = 0; p < kc; p++) buf[i * kc + p] = op->a[i * op->a_rs + (p0 + p) * op->a_cs];
        sk_op_t sub = *op;
        sub.k = kc;
        sub.a = buf, sub.a_rs = kc, sub.a_cs = 1;
        sub.b = (const char *)op->b + p0 * op->b_rs * (int64_t)axon_dtype_size(op->bdt);
        if (p0 > 0) sub.beta = 1;
        sk_dot(&sub);
    }
}

static void sk_run(const sk_op_t *op) {
    if (op->b_rs == 1 && op->k > 0) {
        if (op->a_cs == 1) sk_dot(op);
        else sk_dot_packed(op);
    } else {
        sk_axpy(op); /* b_cs == 1; with k == 0 it only scales C */
    }
}

/* Shapes measured faster here than OpenBLAS's single-threaded sgemm (2-thread H200 host, Sapphire Rapids, OpenBLAS
 * 0.3.21): every dot form (B stored (n, k)) with few rows; the axpy form only where OpenBLAS has no edge. */
int axon_gemm_skinny_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    sk_op_t op = {m, n, k, alpha, beta, a, ta ? 1 : lda, ta ? lda : 1, b, tb ? 1 : ldb, tb ? ldb : 1,
                  c, ldc, 1, AXON_FLOAT32};
    if (m > AXON_GEMM_SKINNY) {
        if (n > AXON_GEMM_SKINNY) return 1;
        /* out^T (n x m) = op(B)^T op(A)^T */
        sk_op_t t = {n, m, k, alpha, beta, b, op.b_cs, op.b_rs, a, op.a_cs, op.a_rs, c, 1, ldc, AXON_FLOAT32};
        op = t;
    }
    sk_run(&op);
    return 0;
}

int axon_gemm_skinny_16(axon_dtype_t bdt, int ta, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                        int64_t lda, const void *b, int64_t ldb, float beta, float *c, int64_t ldc) {
#ifdef SK_AVX512
    if (m > AXON_GEMM_SKINNY || k < 1 || !sk_have_avx512()) return 1;
    sk_op_t op = {m, n, k, alpha, beta, a, ta ? 1 : lda, ta ? lda : 1, b, 1, ldb, c, ldc, 1, bdt};
    sk_run(&op);
    return 0;
#else
    (void)bdt, (void)ta, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
    (void)c, (void)ldc;
    return 1;
#endif
}
