/* The float32 attention forward on AVX-512 register tiles (attention_impl.h: at_f32v_*), which at_forward_kernel
 * takes when at_f32v_usable says so.
 *
 * Why: the float32 tile code (attention_tile.h) hands each block's two products to the BLAS. For the heads of
 * encoder models (BERT's 64-128 tokens, head dims 32-64) those products are 64 x 128 x 32 and smaller, where a
 * library call's own cost is a large part of the product, and the query block is transposed first for them:
 * F.scaled_dot_product_attention [8, 12, 64, 32] with a mask took 480-500 us against torch CPU's 390, MKL's two calls
 * 26% of it (perf, session 47).
 *
 * How: a unit is AT_BLOCK query rows of one head, as in the tile code, and keys go by AT_KBLOCK. Each key block is
 * packed transposed (head dim by keys, 16 keys per vector) into the unit's scratch; the scores of 4 query rows by 64
 * keys are 16 accumulators, each query element broadcast into 4 FMAs; the masks are the tile code's
 * (at_mask_scores_f32), its online softmax step runs on 16-lane vectors (at_f32v_softmax, with at_exp2_512); P V takes
 * 8 rows by 32 head-dim columns (16 accumulators), the value rows read where they lie. Every output element is one
 * sum in a fixed order, so any thread count gives the same bits. The alternated runs of rows by 4 and by 8 for P V
 * (2 threads, SDPA [8, 12, 64, 32] masked, [4, 4, 128, 64] masked and causal, [2, 12, 256, 64]; three rounds of
 * separate processes) gave 422-576 -> 382-429, 411-664 -> 393-432, 333-489 -> 303-328, 2294-2377 -> 2113-2300 us. */
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

/* Head dims up to this take the path (a transposed key block, AT_KBLOCK x 128 floats, is 64 KiB). */
#define AT_F32V_MAX_DIM 128

/* Whether operand t is float32 with unit stride along the head dim. */
static int at_f32_unit_rows(const at_operand_t *t) { return t->dtype == AXON_FLOAT32 && t->st[3] == 1; }

int at_f32v_usable(const at_args_t *a) {
#if AT_AMX_X86
    return !a->f64 && a->L >= AT_AMX_MIN_ROWS && a->E > 0 && a->Ev > 0 && a->S > 0 && a->E <= AT_F32V_MAX_DIM &&
           a->Ev <= AT_F32V_MAX_DIM && !a->dropout && at_f32_unit_rows(&a->q) && at_f32_unit_rows(&a->k) &&
           at_f32_unit_rows(&a->v) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return (void)a, 0;
#endif
}

typedef struct {
    float *kt, *s, *acc, *mx, *l, *lse, *mrow;
} at_f32v_tiles_t;

static size_t at_f32v_layout(const at_args_t *a, char *base, at_f32v_tiles_t *t) {
    const size_t r = AT_BLOCK, kb = AT_KBLOCK; /* AT_BLOCK: a multiple of 8, the rows P V takes at a time */
    size_t off = 0;
    t->kt = at_piece(base, &off, (size_t)a->E * kb, sizeof(float));
    t->s = at_piece(base, &off, r * kb, sizeof(float));
    t->acc = at_piece(base, &off, r * (size_t)at_round32(a->Ev), sizeof(float));
    t->mx = at_piece(base, &off, r, sizeof(float));
    t->l = at_piece(base, &off, r, sizeof(float));
    t->lse = at_piece(base, &off, r, sizeof(float));
    t->mrow = at_piece(base, &off, kb, sizeof(float));
    return off;
}

size_t at_f32v_slot_bytes(const at_args_t *a) {
    at_f32v_tiles_t t;
    return at_f32v_layout(a, NULL, &t);
}

int64_t at_f32v_units(const at_args_t *a) { return a->B * a->Hq * ((a->L + AT_BLOCK - 1) / AT_BLOCK); }

#if AT_AMX_X86
#include "transpose16.h"

#define AT_F32V_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

/* The lanes of a 16-lane vector that hold the `left` elements still to go (all from 16 on, none below 1). */
static inline __mmask16 at_f32v_lanes(int64_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

/* n keys (row stride ldk, e values each) into kt: e rows of np = n rounded up to 16 floats, keys past n zero. */
AT_F32V_TARGET static void at_f32v_pack_keys(const float *k, int64_t ldk, int64_t n, int64_t e, float *kt) {
    const int64_t np = (n + 15) / 16 * 16;
    __m512 col[16];
    for (int64_t j = 0; j < np; j += 16)
        for (int64_t d = 0; d < e; d += 16) {
            const int64_t nd = e - d < 16 ? e - d : 16;
            axon_transpose16(AXON_W_F32, (const char *)(k + j * ldk + d), ldk, n - j < 16 ? n - j : 16, nd, col);
            for (int64_t q = 0; q < nd; q++) _mm512_storeu_ps(kt + (d + q) * np + j, col[q]);
        }
}

/* s (m x n, row stride n) = scale * q kt for m query rows (row stride ldq, e values) and the np = n rounded up to
 * 16 keys of kt: rows by 4 (the rows past m of the last group are computed from row m - 1 and not stored), keys by
 * 64 (fewer vectors at the end). */
AT_F32V_TARGET static void at_f32v_scores(const float *q, int64_t ldq, int64_t m, int64_t e, const float *kt, int64_t n,
                                     float scale, float *s) {
    const int64_t np = (n + 15) / 16 * 16;
    const __m512 vs = _mm512_set1_ps(scale);
    for (int64_t r0 = 0; r0 < m; r0 += 4) {
        const float *qr[4];
        for (int i = 0; i < 4; i++) qr[i] = q + (r0 + i < m ? r0 + i : m - 1) * ldq;
        for (int64_t j = 0; j < np; j += 64) {
            const int nv = np - j >= 64 ? 4 : (int)((np - j) / 16);
            __m512 c[4][4];
            for (int i = 0; i < 4; i++)
                for (int v = 0; v < 4; v++) c[i][v] = _mm512_setzero_ps();
            if (nv == 4) /* a constant count: the accumulators stay in registers */
                for (int64_t d = 0; d < e; d++) {
                    const float *kr = kt + d * np + j;
                    const __m512 k0 = _mm512_loadu_ps(kr), k1 = _mm512_loadu_ps(kr + 16);
                    const __m512 k2 = _mm512_loadu_ps(kr + 32), k3 = _mm512_loadu_ps(kr + 48);
                    for (int i = 0; i < 4; i++) {
                        const __m512 x = _mm512_set1_ps(qr[i][d]);
                        c[i][0] = _mm512_fmadd_ps(x, k0, c[i][0]), c[i][1] = _mm512_fmadd_ps(x, k1, c[i][1]);
                        c[i][2] = _mm512_fmadd_ps(x, k2, c[i][2]), c[i][3] = _mm512_fmadd_ps(x, k3, c[i][3]);
                    }
                }
            else
                for (int64_t d = 0; d < e; d++)
                    for (int v = 0; v < nv; v++) {
                        const __m512 kv = _mm512_loadu_ps(kt + d * np + j + 16 * v);
                        for (int i = 0; i < 4; i++) c[i][v] = _mm512_fmadd_ps(_mm512_set1_ps(qr[i][d]), kv, c[i][v]);
                    }
            for (int i = 0; i < 4 && r0 + i < m; i++)
                for (int v = 0; v < nv; v++) {
                    const int64_t at = j + 16 * v, left = n - at;
                    const __mmask16 keep = at_f32v_lanes(left);
                    _mm512_mask_storeu_ps(s + (r0 + i) * n + at, keep, _mm512_mul_ps(c[i][v], vs));
                }
        }
    }
}

/* acc (m8 x ev, row stride evp, a multiple of 32) += p (m8 x n, row stride n) times V (n rows of ev values from v,
 * row stride ldv): rows by 8 (m8 a multiple of 8; p's rows past m are zeros), columns by 32 (16 accumulators: two
 * value vectors and 8 weights per key for 16 FMAs). */
AT_F32V_TARGET static void at_f32v_pv(const float *p, int64_t m8, int64_t n, const float *v, int64_t ldv, int64_t ev,
                                 int64_t evp, float *acc) {
    for (int64_t r0 = 0; r0 < m8; r0 += 8) {
        const float *p0 = p + r0 * n;
        float *a0 = acc + r0 * evp;
        for (int64_t c = 0; c < evp; c += 32) {
            const __mmask16 m0 = at_f32v_lanes(ev - c), m1 = at_f32v_lanes(ev - c - 16);
            __m512 o[16];
            for (int i = 0; i < 8; i++)
                o[2 * i] = _mm512_loadu_ps(a0 + i * evp + c), o[2 * i + 1] = _mm512_loadu_ps(a0 + i * evp + c + 16);
            for (int64_t j = 0; j < n; j++) {
                const __m512 lo = _mm512_maskz_loadu_ps(m0, v + j * ldv + c);
                const __m512 hi = _mm512_maskz_loadu_ps(m1, v + j * ldv + c + 16);
                for (int i = 0; i < 8; i++) {
                    const __m512 w = _mm512_set1_ps(p0[i * n + j]);
                    o[2 * i] = _mm512_fmadd_ps(w, lo, o[2 * i]);
                    o[2 * i + 1] = _mm512_fmadd_ps(w, hi, o[2 * i + 1]);
                }
            }
            for (int i = 0; i < 8; i++)
                _mm512_storeu_ps(a0 + i * evp + c, o[2 * i]), _mm512_storeu_ps(a0 + i * evp + c + 16, o[2 * i + 1]);
        }
    }
}

/* at_softmax_update_f32's step on 16-lane vectors with at_exp2_512: for each of the m rows of s (n scores, row
 * stride n) the new maximum top (NaN skipped; the running mx included), s = exp(s - top) (0 where every key so far
 * is masked), l = l * exp(mx - top) + the row's sum, acc's row (evp columns) rescaled by the same factor. */
AT_F32V_TARGET static void at_f32v_softmax(float *s, int64_t m, int64_t n, float *mx, float *l, float *acc,
                                           int64_t evp) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY), log2e = _mm512_set1_ps(1.4426950408889634f);
    for (int64_t r = 0; r < m; r++) {
        float *row = s + r * n;
        __m512 top = _mm512_set1_ps(mx[r]);
        for (int64_t c = 0; c < n; c += 16) {
            const __mmask16 k = at_f32v_lanes(n - c);
            top = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, k, row + c), top); /* a NaN score: top kept */
        }
        const float t = _mm512_reduce_max_ps(top);
        if (t == -INFINITY) { /* every key so far masked: nothing to add */
            memset(row, 0, (size_t)n * sizeof(float));
            continue;
        }
        const __m512 vt = _mm512_set1_ps(t);
        __m512 sum = _mm512_setzero_ps();
        for (int64_t c = 0; c < n; c += 16) {
            const __mmask16 k = at_f32v_lanes(n - c);
            const __m512 x = _mm512_mask_loadu_ps(ninf, k, row + c);
            const __m512 p = at_exp2_512(_mm512_mul_ps(_mm512_sub_ps(x, vt), log2e));
            _mm512_mask_storeu_ps(row + c, k, p);
            sum = _mm512_add_ps(sum, p);
        }
        const float alpha = mx[r] == -INFINITY ? 0.0f : expf(mx[r] - t);
        l[r] = l[r] * alpha + _mm512_reduce_add_ps(sum);
        mx[r] = t;
        if (alpha != 1.0f) {
            const __m512 va = _mm512_set1_ps(alpha);
            for (int64_t c = 0; c < evp; c += 16)
                _mm512_storeu_ps(acc + r * evp + c, _mm512_mul_ps(_mm512_loadu_ps(acc + r * evp + c), va));
        }
    }
}

static void at_f32v_unit(at_job_t *j, int64_t u, at_f32v_tiles_t *t) {
    const at_args_t *a = j->a;
    const int64_t nrb = (a->L + AT_BLOCK - 1) / AT_BLOCK;
    const int64_t b = u / (a->Hq * nrb), h = u / nrb % a->Hq, i0 = u % nrb * AT_BLOCK, hk = h / a->group;
    const int64_t m = a->L - i0 < AT_BLOCK ? a->L - i0 : AT_BLOCK, m8 = (m + 7) / 8 * 8, e = a->E, ev = a->Ev;
    const int64_t evp = at_round32(ev);
    const float *q = at_f32_rows(&a->q, b, h, i0);
    for (int64_t r = 0; r < m; r++) t->mx[r] = -INFINITY, t->l[r] = 0;
    memset(t->acc, 0, (size_t)(m8 * evp) * sizeof(float));
    const int64_t jend = at_key_end_f32(a, i0, m);
    for (int64_t j0 = 0; j0 < jend; j0 += AT_KBLOCK) {
        const int64_t n = jend - j0 < AT_KBLOCK ? jend - j0 : AT_KBLOCK;
        at_f32v_pack_keys(at_f32_rows(&a->k, b, hk, j0), a->k.st[2], n, e, t->kt);
        at_f32v_scores(q, a->q.st[2], m, e, t->kt, n, (float)a->scale, t->s);
        at_mask_scores_f32(a, t->mrow, b, h, i0, m, j0, n, t->s, n);
        at_f32v_softmax(t->s, m, n, t->mx, t->l, t->acc, evp);
        memset(t->s + m * n, 0, (size_t)((m8 - m) * n) * sizeof(float));
        at_f32v_pv(t->s, m8, n, at_f32_rows(&a->v, b, hk, j0), a->v.st[2], ev, evp, t->acc);
    }
    at_amx_finish_rows(a, b, h, i0, m, t->acc, evp, t->mx, t->l, t->lse);
}

void at_f32v_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    at_f32v_tiles_t t;
    at_f32v_layout(j->a, j->scratch + (size_t)slot * j->slot_bytes, &t);
    for (int64_t u = begin; u < end; u++) at_f32v_unit(j, u, &t);
}

#else

void at_f32v_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)ctx, (void)begin, (void)end, (void)slot;
}

#endif
