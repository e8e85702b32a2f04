/* The bfloat16 attention forward for a few query rows (decoding; attention_impl.h: at_few_*), which
 * at_forward_kernel takes when at_few_usable says so.
 *
 * Why: the float32 tile code converts each block of bfloat16 keys and values to float32 and hands it to a float32
 * GEMM; for a decoding step, which reads every key and value once, that conversion was the kernel: a bf16 step over
 * 1024 cached keys (16 query heads, 8 kv heads, head dim 64) took 117 us against float32's 65 and torch CPU's 74.
 *
 * How: a unit is every query row of one head (after at_fold_groups, the query heads of a kv head). The scores come
 * from AVX512-BF16 dot products (vdpbf16ps) of each key row, as stored, with the rows of q: 16 keys' partial sums
 * at a time, folded into one vector of 16 scores by a tree of shuffles. Then the float32 path's steps (masks, the
 * online softmax update at_softmax_update_f32), and P V with each value row converted to float32 in registers as
 * its product is added. Each output element is one sum in a fixed order, so any thread count gives the same bits. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_amx.h"
#include "attention_impl.h"

#define AT_T float
#define AT_SFX f32
#define AT_GEMM axon_gemm_f32
#define AT_GEMM_FEW axon_gemm_skinny_f32
#define AT_CDT AXON_FLOAT32
#include "attention_tile.h"

/* Keys per block: a block's scores (16 rows x 256 floats) and keys (256 x E bfloat16) stay in L1 and L2. */
#define AT_FEW_KEYS 256
/* Rows of keys and values prefetched ahead of their use. */
#define AT_FEW_AHEAD 32

int at_few_usable(const at_args_t *a) {
#if AT_AMX_X86
    return a->L <= AT_FEW_ROWS && a->L >= 1 && a->E > 0 && a->Ev > 0 &&
           a->S > 0 && !a->dropout && at_bf16_unit_rows(&a->q) && at_bf16_unit_rows(&a->k) &&
           at_bf16_unit_rows(&a->v) && __builtin_cpu_supports("avx512bf16");
#else
    return (void)a, 0;
#endif
}

typedef struct {
    uint16_t *q;
    float *s, *acc, *mx, *l, *lse, *mrow;
} at_few_tiles_t;

static size_t at_few_layout(const at_args_t *a, char *base, at_few_tiles_t *t) {
    const size_t r = (AT_FEW_ROWS + 3) / 4 * 4, kb = AT_FEW_KEYS; /* at_few_pv's rows go by 4 */
    size_t off = 0;
    t->q = at_piece(base, &off, r * (size_t)at_round32(a->E), sizeof(uint16_t));
    t->s = at_piece(base, &off, r * kb, sizeof(float));
    t->acc = at_piece(base, &off, r * (size_t)at_round32(a->Ev), sizeof(float));
    t->mx = at_piece(base, &off, r, sizeof(float));
    t->l = at_piece(base, &off, r, sizeof(float));
    t->lse = at_piece(base, &off, r, sizeof(float));
    t->mrow = at_piece(base, &off, kb, sizeof(float));
    return off;
}

size_t at_few_slot_bytes(const at_args_t *a) {
    at_few_tiles_t t;
    return at_few_layout(a, NULL, &t);
}

int64_t at_few_units(const at_args_t *a) { return a->B * a->Hq; }

#if AT_AMX_X86

/* Lane t of the result: the sum of the 16 lanes of v[t]. Pairs of vectors fold lanes 2 apart, then 1 apart (each
 * 128-bit lane then holds 4 keys' partial sums), then the four 128-bit lanes. */
AT_AVX512 static inline __m512 at_few_hsum16(__m512 v[16]) {
    __m512 w[8], x[4];
    for (int i = 0; i < 8; i++)
        w[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(w[2 * i]), b = _mm512_castps_pd(w[2 * i + 1]);
        x[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    const __m512 y01 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], 0x88), _mm512_shuffle_f32x4(x[0], x[1], 0xDD));
    const __m512 y23 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], 0x88), _mm512_shuffle_f32x4(x[2], x[3], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(y01, y23, 0x88), _mm512_shuffle_f32x4(y01, y23, 0xDD));
}

/* s (m x n, row stride n) = scale * q K^T for m rows of q (e values, zero padded to a row stride of ep, a multiple
 * of 32, bfloat16) and n keys from k (row stride ldk); keys past n in a group of 16 are read as zeros, and a key's
 * values past e are not read. */
AT_AVX512 static void at_few_scores(const uint16_t *q, int64_t m, int64_t e, int64_t ep, const uint16_t *k,
                                    int64_t ldk, int64_t n, float scale, float *s) {
    const __m512 vs = _mm512_set1_ps(scale);
    const __mmask32 last = e % 32 ? (__mmask32)((1u << (e % 32)) - 1) : (__mmask32)0xFFFFFFFFu;
    for (int64_t j = 0; j < n; j += 16) {
        const int64_t nk = n - j < 16 ? n - j : 16;
        const __mmask16 tail = nk == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nk) - 1);
        for (int64_t t = j + AT_FEW_AHEAD; t < j + AT_FEW_AHEAD + 16 && t < n; t++) /* cached keys come from L3 */
            for (int64_t c = 0; c < e; c += 32) _mm_prefetch((const char *)(k + t * ldk + c), _MM_HINT_T0);
        for (int64_t r = 0; r < m; r++) {
            __m512 v[16];
            for (int t = 0; t < 16; t++) v[t] = _mm512_setzero_ps();
            for (int64_t c = 0; c < ep; c += 32) {
                const __m512bh qv = (__m512bh)_mm512_loadu_si512(q + r * ep + c);
                const __mmask32 km = c + 32 <= e ? (__mmask32)0xFFFFFFFFu : last;
                if (nk == 16) /* a constant count: v stays in registers */
                    for (int t = 0; t < 16; t++)
                        v[t] = _mm512_dpbf16_ps(v[t], (__m512bh)_mm512_maskz_loadu_epi16(km, k + (j + t) * ldk + c),
                                                qv);
                else
                    for (int t = 0; t < nk; t++)
                        v[t] = _mm512_dpbf16_ps(v[t], (__m512bh)_mm512_maskz_loadu_epi16(km, k + (j + t) * ldk + c),
                                                qv);
            }
            _mm512_mask_storeu_ps(s + r * n + j, tail, _mm512_mul_ps(at_few_hsum16(v), vs));
        }
    }
}

/* acc (m x ev, row stride evp, a multiple of 32) += p (m x n, row stride n) times V (n rows of ev bfloat16 values
 * from v, row stride ldv), each value row widened to float32 in registers. Rows go by 4 and columns by 32 (8
 * independent sums per key); p and acc have room, and zeros, for the rows up to a multiple of 4; acc's columns past
 * ev get zeros added. */
AT_AVX512 static void at_few_pv(const float *p, int64_t m, int64_t n, const uint16_t *v, int64_t ldv, int64_t ev,
                                int64_t evp, float *acc) {
    const __mmask32 last = ev % 32 ? (__mmask32)((1u << (ev % 32)) - 1) : (__mmask32)0xFFFFFFFFu;
    for (int64_t r0 = 0; r0 < m; r0 += 4) {
        const float *p0 = p + r0 * n;
        float *a0 = acc + r0 * evp;
        for (int64_t c = 0; c < evp; c += 32) {
            const __mmask32 vm = c + 32 <= ev ? (__mmask32)0xFFFFFFFFu : last;
            __m512 o[8];
            for (int i = 0; i < 4; i++)
                o[2 * i] = _mm512_loadu_ps(a0 + i * evp + c), o[2 * i + 1] = _mm512_loadu_ps(a0 + i * evp + c + 16);
            for (int64_t j = 0; j < n; j++) {
                if (j + AT_FEW_AHEAD < n) _mm_prefetch((const char *)(v + (j + AT_FEW_AHEAD) * ldv + c), _MM_HINT_T0);
                const __m512i raw = _mm512_maskz_loadu_epi16(vm, v + j * ldv + c);
                const __m512 lo = _mm512_castsi512_ps(
                    _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(raw)), 16));
                const __m512 hi = _mm512_castsi512_ps(
                    _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(raw, 1)), 16));
                for (int i = 0; i < 4; i++) {
                    const __m512 w = _mm512_set1_ps(p0[i * n + j]);
                    o[2 * i] = _mm512_fmadd_ps(w, lo, o[2 * i]);
                    o[2 * i + 1] = _mm512_fmadd_ps(w, hi, o[2 * i + 1]);
                }
            }
            for (int i = 0; i < 4; i++)
                _mm512_storeu_ps(a0 + i * evp + c, o[2 * i]), _mm512_storeu_ps(a0 + i * evp + c + 16, o[2 * i + 1]);
        }
    }
}

static void at_few_unit(at_job_t *j, int64_t u, at_few_tiles_t *t) {
    const at_args_t *a = j->a;
    const int64_t b = u / a->Hq, h = u % a->Hq, hk = h / a->group, m = a->L, e = a->E, ev = a->Ev;
    const int64_t ep = at_round32(e), evp = at_round32(ev); /* head dims padded with zeros */
    memset(t->q, 0, (size_t)(m * ep) * 2);
    for (int64_t r = 0; r < m; r++) memcpy(t->q + r * ep, at_bf16_rows(&a->q, b, h, r), (size_t)e * 2);
    const int64_t m4 = (m + 3) / 4 * 4; /* at_few_pv's rows */
    for (int64_t r = 0; r < m; r++) t->mx[r] = -INFINITY, t->l[r] = 0;
    memset(t->acc, 0, (size_t)(m4 * evp) * sizeof(float));
    const int64_t jend = at_key_end_f32(a, 0, m);
    for (int64_t j0 = 0; j0 < jend; j0 += AT_FEW_KEYS) {
        const int64_t n = jend - j0 < AT_FEW_KEYS ? jend - j0 : AT_FEW_KEYS;
        at_few_scores(t->q, m, e, ep, at_bf16_rows(&a->k, b, hk, j0), a->k.st[2], n, (float)a->scale, t->s);
        at_mask_scores_f32(a, t->mrow, b, h, 0, m, j0, n, t->s, n);
        at_softmax_update_f32(t->s, m, n, t->mx, t->l, t->acc, evp);
        memset(t->s + m * n, 0, (size_t)((m4 - m) * n) * sizeof(float));
        at_few_pv(t->s, m, n, at_bf16_rows(&a->v, b, hk, j0), a->v.st[2], ev, evp, t->acc);
    }
    at_amx_finish_rows(a, b, h, 0, m, t->acc, evp, t->mx, t->l, t->lse);
}

void at_few_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    at_few_tiles_t t;
    at_few_layout(j->a, j->scratch + (size_t)slot * j->slot_bytes, &t);
    for (int64_t u = begin; u < end; u++) at_few_unit(j, u, &t);
}

#else

void at_few_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)ctx, (void)begin, (void)end, (void)slot;
}

#endif
