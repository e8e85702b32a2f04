/* The bfloat16 attention forward on AMX tiles (attention_impl.h: at_amx_*), which at_forward_kernel takes when
 * at_amx_usable says so.
 *
 * Why: the float32 tile code converts bfloat16 q, k and v to float32 and multiplies on FMA units; PyTorch CPU's flash
 * attention multiplies bfloat16 tiles on AMX and ran the same bfloat16 attention 2-4x faster (docs/benchmarks.md).
 *
 * How: K and V are packed once per call as AMX's B operands (axon_gemm_amx_pack_b), block of AT_AMX_KEYS keys by
 * block, spread over the pool: K^T by panels of 32 keys, V by panels of 32 value columns with the keys as the depth.
 * A unit is 32 query rows of one head (one row of 16 x 32 tiles; zero padded); for each key block it multiplies
 * Q K^T on tiles into float32 scores, masks them, runs the online softmax step of at_softmax_update_f32 (scaling
 * folded in where no float mask needs the scaled scores first), rounds the weights to bfloat16 (as PyTorch's CPU
 * kernel does before its P V product) and adds P V to its float32 output on tiles. Padding keys get weight 0; a
 * padding row of Q is zeros and its results are never stored. With the causal limit, tiles of keys no row of the
 * unit sees are skipped. Each output element is one sum in a fixed order, so any thread count gives the same bits. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_amx.h"
#include "attention_impl.h"
#include "gemm_impl.h"

#define AT_T float
#define AT_SFX f32
#define AT_GEMM axon_gemm_f32
#define AT_GEMM_FEW axon_gemm_skinny_f32
#define AT_CDT AXON_FLOAT32
#include "attention_tile.h"

/* Query rows per unit and keys per block. Of 64 x 128, 64 x 64, 64 x 256, 32 x 128, 32 x 256 and 32 x 512, this
 * measured fastest (bfloat16 [1, 16, 512, 64], causal or not): a unit's scores (32 KiB), weights, output and key
 * block stay near L1, and the P V product runs 8 chunks deep per load and store of its float32 sums. */
#define AT_AMX_ROWS 32
#define AT_AMX_KEYS 256

/* Elements (uint16) of one key block of packed K and of packed V. */
static int64_t at_amx_k_block(const at_args_t *a) { return (int64_t)axon_gemm_amx_b_bytes(a->E, AT_AMX_KEYS) / 2; }
static int64_t at_amx_v_block(const at_args_t *a) { return (int64_t)axon_gemm_amx_b_bytes(AT_AMX_KEYS, a->Ev) / 2; }

int at_amx_usable(const at_args_t *a) {
#if AT_AMX_X86
    return a->L >= AT_AMX_MIN_ROWS && a->E > 0 && a->Ev > 0 && a->S > 0 &&
           at_bf16_unit_rows(&a->q) && at_bf16_unit_rows(&a->k) && at_bf16_unit_rows(&a->v) &&
           axon_gemm_amx_available() && __builtin_cpu_supports("avx512bf16");
#else
    return (void)a, 0;
#endif
}

/* The scratch of one unit (at_amx_layout: its pieces from base; base NULL measures it). */
typedef struct {
    uint16_t *q, *p;
    float *s, *acc, *mx, *l, *lse, *mrow, *z;
} at_amx_tiles_t;

static size_t at_amx_layout(const at_args_t *a, char *base, at_amx_tiles_t *t) {
    const size_t b = AT_AMX_ROWS, kb = AT_AMX_KEYS, evp = (size_t)at_round32(a->Ev);
    size_t off = 0;
    t->q = at_piece(base, &off, b * (size_t)at_round32(a->E), sizeof(uint16_t));
    t->p = at_piece(base, &off, b * kb, sizeof(uint16_t));
    t->s = at_piece(base, &off, b * kb, sizeof(float));
    t->acc = at_piece(base, &off, b * evp, sizeof(float));
    t->mx = at_piece(base, &off, b, sizeof(float));
    t->l = at_piece(base, &off, b, sizeof(float));
    t->lse = at_piece(base, &off, b, sizeof(float));
    t->mrow = at_piece(base, &off, kb, sizeof(float));
    t->z = at_piece(base, &off, kb, sizeof(float));
    return off;
}

size_t at_amx_slot_bytes(const at_args_t *a) {
    at_amx_tiles_t t;
    return at_amx_layout(a, NULL, &t);
}

/* Key blocks of every (b, kv head): the units of at_amx_pack. */
static int64_t at_amx_blocks(const at_args_t *a) { return a->B * a->Hkv * ((a->S + AT_AMX_KEYS - 1) / AT_AMX_KEYS); }

size_t at_amx_pack_bytes(const at_args_t *a) {
    return (size_t)at_amx_blocks(a) * (size_t)(at_amx_k_block(a) + at_amx_v_block(a)) * sizeof(uint16_t);
}

static void at_amx_pack_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    at_job_t *j = ctx;
    const at_args_t *a = j->a;
    const int64_t nkb = (a->S + AT_AMX_KEYS - 1) / AT_AMX_KEYS, kblk = at_amx_k_block(a), vblk = at_amx_v_block(a);
    for (int64_t u = begin; u < end; u++) {
        const int64_t b = u / (a->Hkv * nkb), hk = u / nkb % a->Hkv, j0 = u % nkb * AT_AMX_KEYS;
        const int64_t n = a->S - j0 < AT_AMX_KEYS ? a->S - j0 : AT_AMX_KEYS;
        axon_gemm_amx_pack_b(j->kpack + u * kblk, at_bf16_rows(&a->k, b, hk, j0), 1, a->k.st[2], a->E, n, 0,
                             (n + 31) / 32); /* B = K^T: depth E, a column per key */
        axon_gemm_amx_pack_b(j->vpack + u * vblk, at_bf16_rows(&a->v, b, hk, j0), a->v.st[2], 1, n, a->Ev, 0,
                             (a->Ev + 31) / 32); /* B = V: depth the keys */
    }
}

void at_amx_finish_rows(const at_args_t *a, int64_t b, int64_t h, int64_t i0, int64_t m, float *acc, int64_t ld,
                        const float *mx, const float *l, float *lse) {
    for (int64_t r = 0; r < m; r++) {
        const int any = l[r] > 0 || l[r] != l[r]; /* NaN propagates like a value */
        const float inv = any ? 1.0f / l[r] : 0.0f;
        for (int64_t c = 0; c < a->Ev; c++) acc[r * ld + c] *= inv;
        lse[r] = any ? mx[r] + (float)log((double)l[r]) : INFINITY;
    }
    at_store_rows_f32(&a->out, b, h, i0, m, a->Ev, acc, ld);
    const at_operand_t *ls = &a->lse;
    ls->st_fn(ls->data + (b * ls->st[0] + h * ls->st[1] + i0 * ls->st[2]) * (int64_t)ls->es, ls->st[2],
              (const char *)lse, 1, m);
}

int64_t at_amx_units(const at_args_t *a) { return a->B * a->Hq * ((a->L + AT_AMX_ROWS - 1) / AT_AMX_ROWS); }

void at_amx_pack(at_job_t *j, axon_pool_t pool) {
    const at_args_t *a = j->a;
    const int64_t blocks = at_amx_blocks(a);
    j->vpack = j->kpack + blocks * at_amx_k_block(a);
    const int64_t grain = AXON_KERNEL_GRAIN / (AT_AMX_KEYS * (a->E + a->Ev));
    axon_parallel_for(pool, 0, blocks, grain < 1 ? 1 : grain, at_amx_pack_range, j);
}

#if AT_AMX_X86
/* Rows [0, m) of s (row stride np): the first n scores times scale, where a float mask is added after scaling. */
AXON_CLONES static void at_amx_scale(float *s, int64_t m, int64_t n, int64_t np, float scale) {
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) s[r * np + c] *= scale;
}

/* The online-softmax step of at_softmax_update_f32 on rows [0, m) (m <= AT_AMX_ROWS) of the scores mul * s (row stride
 * np, keys [0, n) of np; mul > 0), with the weights written to p in bfloat16 (keys n.. get 0; times the dropout
 * factors of the unit's rows when a has dropout) instead of back to s: exp, its sum and the rounding in one pass.
 * acc (row stride evp) is rescaled. In passes over all rows (maxima, rescale factors, weights), so that the rows'
 * reductions overlap instead of forming one chain per row. z: np floats of room. */
AT_AVX512 static void at_amx_softmax(const at_args_t *a, const float *s, float mul, int64_t m, int64_t n, int64_t np,
                                     float *mx, float *l, float *acc, int64_t evp, uint16_t *p, int64_t b, int64_t h,
                                     int64_t i0, int64_t j0, float *z) {
    float top[AT_AMX_ROWS] __attribute__((aligned(64))), alpha[AT_AMX_ROWS] __attribute__((aligned(64)));
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __mmask16 tail = n % 16 ? (__mmask16)((1u << (n % 16)) - 1) : (__mmask16)0xFFFF;
    const int64_t nv = (n + 15) / 16; /* vectors holding keys; those after them are padding */
    for (int64_t r = 0; r < m; r++) {
        const float *row = s + r * np;
        __m512 v0 = ninf, v1 = ninf;
        int64_t c = 0;
        for (; c + 2 < nv; c += 2) { /* NaN skipped: vmaxps returns its second operand */
            v0 = _mm512_max_ps(_mm512_loadu_ps(row + 16 * c), v0);
            v1 = _mm512_max_ps(_mm512_loadu_ps(row + 16 * c + 16), v1);
        }
        if (c + 1 < nv) v0 = _mm512_max_ps(_mm512_loadu_ps(row + 16 * c++), v0);
        v1 = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tail, row + 16 * c), v1);
        const float t = _mm512_reduce_max_ps(_mm512_max_ps(v0, v1)) * mul;
        top[r] = t > mx[r] ? t : mx[r];
    }
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    for (int64_t r = 0; r < m; r += 16) { /* rescales what earlier blocks summed (0 for the first) */
        const __mmask16 k = m - r >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (m - r)) - 1);
        const __m512 t = _mm512_maskz_loadu_ps(k, top + r), old = _mm512_maskz_loadu_ps(k, mx + r);
        const __mmask16 none = _mm512_cmp_ps_mask(t, ninf, _CMP_EQ_OQ);
        const __m512 f = at_exp2_512(_mm512_mul_ps(_mm512_sub_ps(old, t), log2e));
        _mm512_store_ps(alpha + r, _mm512_mask_mov_ps(f, none, _mm512_set1_ps(1)));
    }
    const __m512 scale = _mm512_set1_ps(mul * 1.44269504088896341f);
    for (int64_t r = 0; r < m; r++) {
        const float *row = s + r * np;
        uint16_t *prow = p + r * np;
        if (top[r] == -INFINITY) { /* every key so far masked: nothing to add */
            memset(prow, 0, (size_t)np * 2);
            continue;
        }
        if (a->dropout) {
            at_dropout_row_f32(a, b, h, i0 + r, j0, n, z);
            for (int64_t c = n; c < np; c++) z[c] = 0;
        }
        const __m512 shift = _mm512_set1_ps(top[r] * 1.44269504088896341f);
        __m512 sum = _mm512_setzero_ps();
        for (int64_t c = 0; c < np; c += 16) {
            const __mmask16 k = c + 16 <= n ? (__mmask16)0xFFFF : c < n ? tail : 0;
            __m512 w = at_exp2_512(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, row + c), scale, shift));
            w = _mm512_maskz_mov_ps(k, w);
            sum = _mm512_add_ps(sum, w);
            if (a->dropout) w = _mm512_mul_ps(w, _mm512_loadu_ps(z + c)); /* after the sum: it does not change it */
            _mm256_storeu_si256((__m256i *)(void *)(prow + c), (__m256i)_mm512_cvtneps_pbh(w));
        }
        l[r] = l[r] * alpha[r] + _mm512_reduce_add_ps(sum); /* NaN in the row reaches l */
        mx[r] = top[r];
    }
    for (int64_t r = 0; r < m; r++) {
        if (alpha[r] == 1.0f) continue;
        const __m512 va = _mm512_set1_ps(alpha[r]);
        for (int64_t c = 0; c < evp; c += 16)
            _mm512_storeu_ps(acc + r * evp + c, _mm512_mul_ps(_mm512_loadu_ps(acc + r * evp + c), va));
    }
}

/* Keys of a block (from j0, np of them, a multiple of 32) that 32 query rows from i visit: np, or with the causal
 * limit, up to the 32-key panel that holds the last row's last key. Past them every score is masked (weight 0). */
static int64_t at_amx_keys(const at_args_t *a, int64_t i, int64_t j0, int64_t np) {
    if (!a->causal) return np;
    const int64_t seen = at_round32(i + 32 - j0);
    return seen < np ? seen : np;
}

static void at_amx_forward_unit(at_job_t *j, int64_t u, at_amx_tiles_t *t) {
    const at_args_t *a = j->a;
    const int64_t nrb = (a->L + AT_AMX_ROWS - 1) / AT_AMX_ROWS, nkb = (a->S + AT_AMX_KEYS - 1) / AT_AMX_KEYS;
    const int64_t b = u / (a->Hq * nrb), h = u / nrb % a->Hq, i0 = u % nrb * AT_AMX_ROWS, hk = h / a->group;
    const int64_t m = a->L - i0 < AT_AMX_ROWS ? a->L - i0 : AT_AMX_ROWS, e = a->E, ev = a->Ev;
    const int64_t evp = at_round32(ev), ep = at_round32(e), nche = ep / 32; /* head dims padded with zeros */
    memset(t->q, 0, (size_t)(32 * ep) * 2);
    for (int64_t r = 0; r < m; r++) memcpy(t->q + r * ep, at_bf16_rows(&a->q, b, h, i0 + r), (size_t)e * 2);
    for (int64_t r = 0; r < m; r++) t->mx[r] = -INFINITY, t->l[r] = 0;
    memset(t->acc, 0, (size_t)(32 * evp) * sizeof(float));
    const uint16_t *kp = j->kpack + (b * a->Hkv + hk) * nkb * at_amx_k_block(a);
    const uint16_t *vp = j->vpack + (b * a->Hkv + hk) * nkb * at_amx_v_block(a);
    const int64_t jend = at_key_end_f32(a, i0, m);
    const int prescale = (a->mask.data && !a->mask_bool) || !(a->scale > 0); /* a float mask adds to scaled scores */
    for (int64_t j0 = 0; j0 < jend; j0 += AT_AMX_KEYS) {
        const int64_t n = jend - j0 < AT_AMX_KEYS ? jend - j0 : AT_AMX_KEYS, np = at_round32(n);
        const int64_t seen = at_amx_keys(a, i0, j0, np);
        const int64_t packed = a->S - j0 < AT_AMX_KEYS ? a->S - j0 : AT_AMX_KEYS; /* a V panel: its chunks */
        const uint16_t *kb = kp + j0 / AT_AMX_KEYS * at_amx_k_block(a), *vb = vp + j0 / AT_AMX_KEYS * at_amx_v_block(a);
        for (int64_t c = 0; c < seen; c += 32)
            axon_gemm_amx_tile32(t->q, ep, kb + c / 32 * nche * 1024, nche, NULL, 0, t->s + c, np);
        if (prescale) at_amx_scale(t->s, m, n, np, (float)a->scale);
        if (a->mask.data || (a->causal && j0 + n - 1 > i0)) /* else no score of the block is masked */
            at_mask_scores_f32(a, t->mrow, b, h, i0, m, j0, n, t->s, np);
        at_amx_softmax(a, t->s, prescale ? 1.0f : (float)a->scale, m, n, np, t->mx, t->l, t->acc, evp, t->p, b, h, i0,
                       j0, t->z);
        memset(t->p + m * np, 0, (size_t)((32 - m) * np) * 2);
        for (int64_t c = 0; c < evp; c += 32)
            axon_gemm_amx_tile32(t->p, np, vb + c / 32 * ((packed + 31) / 32) * 1024, seen / 32, t->acc + c, evp,
                                 t->acc + c, evp);
    }
    at_amx_finish_rows(a, b, h, i0, m, t->acc, evp, t->mx, t->l, t->lse);
}

void at_amx_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    at_amx_tiles_t t;
    at_amx_layout(j->a, j->scratch + (size_t)slot * j->slot_bytes, &t);
    axon_gemm_amx_begin();
    for (int64_t u = begin; u < end; u++) at_amx_forward_unit(j, u, &t);
    axon_gemm_amx_end();
}

#else

void at_amx_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)ctx, (void)begin, (void)end, (void)slot;
}

#endif
