/* The bfloat16 attention backward on AMX tiles (attention_impl.h: at_amx_bwd_*), which at_backward_kernel takes when
 * at_amx_bwd_usable says so.
 *
 * Why: the float32 path converts every bfloat16 tile to float32 and spends most of its time in float32 GEMMs; the
 * same products on AMX tiles take a fraction of that (docs/benchmarks.md).
 *
 * How: after D = rowsum(dout * out) (attention_bwd.c), every operand is laid out once per call, spread over the pool
 * (at_amx_bwd_pack): per block of AT_AMX_BWD keys of a kv head, K and V as rows (A operands, zero padded) and packed
 * as B operands (K^T, V^T, and K with the keys as the depth); per block of as many query rows of a head, Q and dout
 * likewise. Then two passes of independent units, as the float32 path's two-pass backward: dk and dv per key block
 * walk every query block that sees it, computing S^T = K Q^T and dP^T = V dout^T directly in the transposed layout
 * that dV += P^T dout and dK += dS^T Q take as A operands; dq per query block walks the key blocks, computing
 * S = Q K^T and dP = dout V^T for dQ += dS K. The weights P and dS are rounded to bfloat16 for the products (as
 * PyTorch's CPU kernel does); sums are float32. Each gradient element is one sum in a fixed order, so any thread count
 * gives the same bits. A mask and dropout factors are laid out as tiles of the block (transposed for dk, dv). */
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

/* Keys per key block and query rows per query block: the depth of dV += P^T dout and dK += dS^T Q is a query block,
 * two 32-deep chunks per load and store of their float32 sums. */
#define AT_AMX_BWD 64

/* Offsets (uint16 elements) of the pieces of one packed key block (K rows, V rows, K^T, V^T, K by keys; query 0)
 * or query block (Q rows, dout rows, Q^T, dout^T, Q by rows, dout by rows; query 1), and the size of a block. Head
 * dims are padded to multiples of 32. */
typedef struct {
    int64_t rows_a, rows_b, t_a, t_b, r_a, r_b, size;
} at_bwd_block_t;

static at_bwd_block_t at_bwd_block(const at_args_t *a, int query) {
    const int64_t n = AT_AMX_BWD, e = at_round32(a->E), evp = at_round32(a->Ev);
    at_bwd_block_t o;
    o.rows_a = 0;
    o.rows_b = o.rows_a + n * e;
    o.t_a = o.rows_b + n * evp;
    o.t_b = o.t_a + (int64_t)axon_gemm_amx_b_bytes(e, n) / 2;
    o.r_a = o.t_b + (int64_t)axon_gemm_amx_b_bytes(evp, n) / 2;
    o.r_b = o.r_a + (int64_t)axon_gemm_amx_b_bytes(n, e) / 2;
    o.size = o.r_b + (query ? (int64_t)axon_gemm_amx_b_bytes(n, evp) / 2 : 0);
    return o;
}

static int64_t at_bwd_key_blocks(const at_args_t *a) { return a->B * a->Hkv * ((a->S + AT_AMX_BWD - 1) / AT_AMX_BWD); }
static int64_t at_bwd_query_blocks(const at_args_t *a) { return a->B * a->Hq * ((a->L + AT_AMX_BWD - 1) / AT_AMX_BWD); }

int at_amx_bwd_usable(const at_args_t *a) {
    return at_bf16_unit_rows(&a->dout) && at_amx_usable(a);
}

size_t at_amx_bwd_pack_bytes(const at_args_t *a) {
    return (size_t)(at_bwd_key_blocks(a) * at_bwd_block(a, 0).size + at_bwd_query_blocks(a) * at_bwd_block(a, 1).size) *
           sizeof(uint16_t);
}

/* The scratch of one unit. */
typedef struct {
    float *s, *dp, *acc_a, *acc_b, *lse, *d, *mask, *drop, *mask_t, *drop_t, *mrow;
    uint16_t *p, *ds;
} at_bwd_tiles_t;

static size_t at_bwd_layout(const at_args_t *a, char *base, at_bwd_tiles_t *t) {
    const size_t n = AT_AMX_BWD, e = (size_t)at_round32(a->E), evp = (size_t)at_round32(a->Ev);
    size_t off = 0;
    t->s = at_piece(base, &off, n * n, sizeof(float));
    t->dp = at_piece(base, &off, n * n, sizeof(float));
    t->acc_a = at_piece(base, &off, n * e, sizeof(float));
    t->acc_b = at_piece(base, &off, n * evp, sizeof(float));
    t->lse = at_piece(base, &off, n, sizeof(float));
    t->d = at_piece(base, &off, n, sizeof(float));
    t->p = at_piece(base, &off, n * n, sizeof(uint16_t));
    t->ds = at_piece(base, &off, n * n, sizeof(uint16_t));
    const size_t extra = a->mask.data || a->dropout ? n * n : 0; /* only with a mask or dropout */
    t->mask = at_piece(base, &off, extra, sizeof(float));
    t->drop = at_piece(base, &off, extra, sizeof(float));
    t->mask_t = at_piece(base, &off, extra, sizeof(float));
    t->drop_t = at_piece(base, &off, extra, sizeof(float));
    t->mrow = at_piece(base, &off, n, sizeof(float));
    return off;
}

size_t at_amx_bwd_slot_bytes(const at_args_t *a) {
    at_bwd_tiles_t t;
    return at_bwd_layout(a, NULL, &t);
}

/* rows (n x d, zero padded to AT_AMX_BWD x dp) of operand t at (b, h, r0), then packed as B operands: t_b = rows^T
 * (depth d, a column per row), r_b = rows (depth the rows); r_b NULL: not wanted. */
static void at_bwd_lay(const at_operand_t *t, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t d, int64_t dp,
                       uint16_t *rows, uint16_t *t_b, uint16_t *r_b) {
    memset(rows, 0, (size_t)(AT_AMX_BWD * dp) * 2);
    for (int64_t r = 0; r < n; r++) memcpy(rows + r * dp, at_bf16_rows(t, b, h, r0 + r), (size_t)d * 2);
    axon_gemm_amx_pack_b(t_b, rows, 1, dp, d, n, 0, (n + 31) / 32);
    if (r_b) axon_gemm_amx_pack_b(r_b, rows, dp, 1, n, d, 0, (d + 31) / 32);
}

static void at_bwd_pack_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    at_job_t *j = ctx;
    const at_args_t *a = j->a;
    const int64_t e = a->E, ep = at_round32(e), evp = at_round32(a->Ev), nkb = at_bwd_key_blocks(a);
    const at_bwd_block_t kb = at_bwd_block(a, 0), qb = at_bwd_block(a, 1);
    for (int64_t u = begin; u < end; u++) {
        if (u < nkb) { /* K rows, K^T, K by keys; V rows, V^T */
            const int64_t per = (a->S + AT_AMX_BWD - 1) / AT_AMX_BWD, b = u / (a->Hkv * per), hk = u / per % a->Hkv;
            const int64_t j0 = u % per * AT_AMX_BWD, n = a->S - j0 < AT_AMX_BWD ? a->S - j0 : AT_AMX_BWD;
            uint16_t *o = j->kpack + u * kb.size;
            at_bwd_lay(&a->k, b, hk, j0, n, e, ep, o + kb.rows_a, o + kb.t_a, o + kb.r_a);
            at_bwd_lay(&a->v, b, hk, j0, n, a->Ev, evp, o + kb.rows_b, o + kb.t_b, NULL);
        } else { /* Q and dout: rows, transposed, by rows */
            const int64_t w = u - nkb, per = (a->L + AT_AMX_BWD - 1) / AT_AMX_BWD, b = w / (a->Hq * per);
            const int64_t h = w / per % a->Hq, i0 = w % per * AT_AMX_BWD;
            const int64_t m = a->L - i0 < AT_AMX_BWD ? a->L - i0 : AT_AMX_BWD;
            uint16_t *o = j->vpack + w * qb.size;
            at_bwd_lay(&a->q, b, h, i0, m, e, ep, o + qb.rows_a, o + qb.t_a, o + qb.r_a);
            at_bwd_lay(&a->dout, b, h, i0, m, a->Ev, evp, o + qb.rows_b, o + qb.t_b, o + qb.r_b);
        }
    }
}

void at_amx_bwd_pack(at_job_t *j, axon_pool_t pool) {
    const at_args_t *a = j->a;
    const int64_t nkb = at_bwd_key_blocks(a);
    j->vpack = j->kpack + nkb * at_bwd_block(a, 0).size;
    const int64_t grain = AXON_KERNEL_GRAIN / (AT_AMX_BWD * 4 * (a->E + a->Ev));
    axon_parallel_for(pool, 0, nkb + at_bwd_query_blocks(a), grain < 1 ? 1 : grain, at_bwd_pack_range, j);
}

int64_t at_amx_bwd_kv_units(const at_args_t *a) { return at_bwd_key_blocks(a); }
int64_t at_amx_bwd_q_units(const at_args_t *a) { return at_bwd_query_blocks(a); }

#if AT_AMX_X86

/* A tile of weights and their gradients, rows [0, rows) and columns [0, cols) (row stride AT_AMX_BWD):
 * p = exp(scale * s + mask - lse), ds = p * (dp * z - D), p * z and ds to bfloat16 (mask: NULL or a tile in s's
 * layout, added; z: NULL (1) or a tile of dropout factors); lse and D belong to the rows (by_col 0: s is Q K^T) or
 * the columns (by_col 1: s is K Q^T). Causal: entry (r, c) is masked (p = 0) when its key is past its
 * query, key = kq0 + r and query = kq1 + c for by_col (else query = kq0 + r, key = kq1 + c); keys past nkeys too.
 * A row or column of lse +inf (a padding row) gets p = 0. */
AT_AVX512 static void at_bwd_grad(const at_args_t *a, const float *s, const float *dp, const float *lse,
                                  const float *d, int by_col, int64_t rows, int64_t cols, int64_t kq0, int64_t kq1,
                                  int64_t nkeys, const float *mask, const float *z, uint16_t *p, uint16_t *ds) {
    const __m512 scale = _mm512_set1_ps((float)a->scale * 1.44269504088896341f);
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int64_t r = 0; r < rows; r++) {
        const __m512 lr = _mm512_set1_ps(lse[r] * 1.44269504088896341f), dr = _mm512_set1_ps(d[r]);
        for (int64_t c = 0; c < cols; c += 16) {
            const __m512i col = _mm512_add_epi32(lane, _mm512_set1_epi32((int)c));
            __mmask16 live;
            __m512 shift, dd;
            if (by_col) { /* key kq0 + r against queries kq1 + c..: seen by queries >= the key */
                live = r < nkeys ? (__mmask16)0xFFFF : 0;
                if (a->causal)
                    live &= _mm512_cmp_epi32_mask(col, _mm512_set1_epi32((int)(kq0 + r - kq1)), _MM_CMPINT_NLT);
                shift = _mm512_mul_ps(_mm512_loadu_ps(lse + c), log2e);
                dd = _mm512_loadu_ps(d + c);
            } else { /* query kq0 + r against keys kq1 + c.. */
                live = _mm512_cmp_epi32_mask(col, _mm512_set1_epi32((int)nkeys), _MM_CMPINT_LT);
                if (a->causal)
                    live &= _mm512_cmp_epi32_mask(col, _mm512_set1_epi32((int)(kq0 + r - kq1)), _MM_CMPINT_LE);
                shift = lr;
                dd = dr;
            }
            const int64_t at = r * AT_AMX_BWD + c;
            __m512 x = _mm512_fmsub_ps(_mm512_loadu_ps(s + at), scale, shift);
            if (mask) x = _mm512_fmadd_ps(_mm512_loadu_ps(mask + at), log2e, x); /* -inf masks */
            const __m512 w = _mm512_maskz_mov_ps(live, at_exp2_512(x)); /* lse +inf: exp2(-inf) = 0 */
            __m512 dpz = _mm512_loadu_ps(dp + at), wz = w;
            if (z) {
                const __m512 zv = _mm512_loadu_ps(z + at);
                dpz = _mm512_mul_ps(dpz, zv), wz = _mm512_mul_ps(w, zv);
            }
            const __m512 g = _mm512_mul_ps(w, _mm512_sub_ps(dpz, dd));
            _mm256_storeu_si256((__m256i *)(void *)(p + r * AT_AMX_BWD + c), (__m256i)_mm512_cvtneps_pbh(wz));
            _mm256_storeu_si256((__m256i *)(void *)(ds + r * AT_AMX_BWD + c), (__m256i)_mm512_cvtneps_pbh(g));
        }
    }
}

/* lse and D of query rows [i0, i0 + m) of (b, h) into t, padded to AT_AMX_BWD with +inf and 0. */
static void at_bwd_rows(at_job_t *j, int64_t b, int64_t h, int64_t i0, int64_t m, at_bwd_tiles_t *t) {
    const at_args_t *a = j->a;
    at_row_values_f32(&a->lse, b, h, i0, m, t->lse);
    memcpy(t->d, (const float *)j->d + (b * a->Hq + h) * a->L + i0, (size_t)m * sizeof(float));
    for (int64_t r = m; r < AT_AMX_BWD; r++) t->lse[r] = INFINITY, t->d[r] = 0;
}

/* The mask (float, -inf where masked) and dropout factors of query rows [i0, i0 + m) of (b, h) and keys
 * [j0, j0 + n), as tiles of rows = queries into t->mask and t->drop, zero elsewhere; transposed (rows = keys) into
 * t->mask_t and t->drop_t as well when kv. Returns 0 when the problem has neither (the tiles are not used). */
static int at_bwd_extra(const at_args_t *a, at_bwd_tiles_t *t, int64_t b, int64_t h, int64_t i0, int64_t m,
                        int64_t j0, int64_t n, int kv) {
    if (!a->mask.data && !a->dropout) return 0;
    const size_t tile = (size_t)(AT_AMX_BWD * AT_AMX_BWD) * sizeof(float);
    if (a->mask.data) {
        memset(t->mask, 0, tile);
        at_mask_scores_f32(a, t->mrow, b, h, i0, m, j0, n, t->mask, AT_AMX_BWD);
        if (kv) at_transpose_f32(t->mask, AT_AMX_BWD, AT_AMX_BWD, AT_AMX_BWD, t->mask_t);
    }
    if (a->dropout) {
        memset(t->drop, 0, tile);
        for (int64_t r = 0; r < m; r++) at_dropout_row_f32(a, b, h, i0 + r, j0, n, t->drop + r * AT_AMX_BWD);
        if (kv) at_transpose_f32(t->drop, AT_AMX_BWD, AT_AMX_BWD, AT_AMX_BWD, t->drop_t);
    }
    return 1;
}

/* acc (rows x cols, row stride ld) times scale, stored as rows [r0, r0 + rows) of operand o at (b, h). */
static void at_bwd_store(const at_operand_t *o, int64_t b, int64_t h, int64_t r0, int64_t rows, int64_t cols,
                         float *acc, int64_t ld, float scale) {
    if (scale != 1.0f)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) acc[r * ld + c] *= scale;
    at_store_rows_f32(o, b, h, r0, rows, cols, acc, ld);
}

static void at_bwd_kv_unit(at_job_t *j, int64_t u, at_bwd_tiles_t *t) {
    const at_args_t *a = j->a;
    const int64_t e = a->E, ep = at_round32(e), evp = at_round32(a->Ev), nche = ep / 32, nchv = evp / 32;
    const int64_t per = (a->S + AT_AMX_BWD - 1) / AT_AMX_BWD, b = u / (a->Hkv * per), hk = u / per % a->Hkv;
    const int64_t j0 = u % per * AT_AMX_BWD, n = a->S - j0 < AT_AMX_BWD ? a->S - j0 : AT_AMX_BWD, np = at_round32(n);
    const int64_t qper = (a->L + AT_AMX_BWD - 1) / AT_AMX_BWD;
    const at_bwd_block_t kl = at_bwd_block(a, 0), ql = at_bwd_block(a, 1);
    const uint16_t *kb = j->kpack + u * kl.size;
    float *dk = t->acc_a, *dv = t->acc_b;
    memset(dk, 0, (size_t)(AT_AMX_BWD * ep) * sizeof(float));
    memset(dv, 0, (size_t)(AT_AMX_BWD * evp) * sizeof(float));
    for (int64_t h = hk * a->group; h < (hk + 1) * a->group; h++) {
        for (int64_t i0 = a->causal ? j0 : 0; i0 < a->L; i0 += AT_AMX_BWD) { /* causal: rows before j0 see none */
            const int64_t m = a->L - i0 < AT_AMX_BWD ? a->L - i0 : AT_AMX_BWD, mp = at_round32(m);
            const uint16_t *qb = j->vpack + ((b * a->Hq + h) * qper + i0 / AT_AMX_BWD) * ql.size;
            for (int64_t r = 0; r < np; r += 32)
                for (int64_t c = 0; c < mp; c += 32) { /* S^T = K Q^T, dP^T = V dout^T */
                    axon_gemm_amx_tile32(kb + kl.rows_a + r * ep, ep, qb + ql.t_a + c / 32 * nche * 1024, nche, NULL, 0,
                                         t->s + r * AT_AMX_BWD + c, AT_AMX_BWD);
                    axon_gemm_amx_tile32(kb + kl.rows_b + r * evp, evp, qb + ql.t_b + c / 32 * nchv * 1024, nchv, NULL,
                                         0, t->dp + r * AT_AMX_BWD + c, AT_AMX_BWD);
                }
            at_bwd_rows(j, b, h, i0, m, t);
            const int extra = at_bwd_extra(a, t, b, h, i0, m, j0, n, 1);
            at_bwd_grad(a, t->s, t->dp, t->lse, t->d, 1, np, mp, j0, i0, n, extra && a->mask.data ? t->mask_t : NULL,
                        extra && a->dropout ? t->drop_t : NULL, t->p, t->ds);
            for (int64_t r = 0; r < np; r += 32) { /* dV += P^T dout, dK += dS^T Q (scaled at the end) */
                for (int64_t c = 0; c < evp; c += 32)
                    axon_gemm_amx_tile32(t->p + r * AT_AMX_BWD, AT_AMX_BWD, qb + ql.r_b + c / 32 * (mp / 32) * 1024,
                                         mp / 32, dv + r * evp + c, evp, dv + r * evp + c, evp);
                for (int64_t c = 0; c < ep; c += 32)
                    axon_gemm_amx_tile32(t->ds + r * AT_AMX_BWD, AT_AMX_BWD, qb + ql.r_a + c / 32 * (mp / 32) * 1024,
                                         mp / 32, dk + r * ep + c, ep, dk + r * ep + c, ep);
            }
        }
    }
    at_bwd_store(&a->dk, b, hk, j0, n, e, dk, ep, (float)a->scale);
    at_bwd_store(&a->dv, b, hk, j0, n, a->Ev, dv, evp, 1.0f);
}

static void at_bwd_q_unit(at_job_t *j, int64_t u, at_bwd_tiles_t *t) {
    const at_args_t *a = j->a;
    const int64_t e = a->E, ep = at_round32(e), evp = at_round32(a->Ev), nche = ep / 32, nchv = evp / 32;
    const int64_t per = (a->L + AT_AMX_BWD - 1) / AT_AMX_BWD, b = u / (a->Hq * per), h = u / per % a->Hq;
    const int64_t i0 = u % per * AT_AMX_BWD, m = a->L - i0 < AT_AMX_BWD ? a->L - i0 : AT_AMX_BWD, mp = at_round32(m);
    const int64_t kper = (a->S + AT_AMX_BWD - 1) / AT_AMX_BWD, hk = h / a->group;
    const at_bwd_block_t kl = at_bwd_block(a, 0), ql = at_bwd_block(a, 1);
    const uint16_t *qb = j->vpack + u * ql.size;
    float *dq = t->acc_a;
    memset(dq, 0, (size_t)(AT_AMX_BWD * ep) * sizeof(float));
    at_bwd_rows(j, b, h, i0, m, t);
    const int64_t jend = at_key_end_f32(a, i0, m);
    for (int64_t j0 = 0; j0 < jend; j0 += AT_AMX_BWD) {
        const int64_t packed = a->S - j0 < AT_AMX_BWD ? a->S - j0 : AT_AMX_BWD;
        const int64_t n = jend - j0 < AT_AMX_BWD ? jend - j0 : AT_AMX_BWD, np = at_round32(n);
        const uint16_t *kb = j->kpack + ((b * a->Hkv + hk) * kper + j0 / AT_AMX_BWD) * kl.size;
        for (int64_t r = 0; r < mp; r += 32)
            for (int64_t c = 0; c < np; c += 32) { /* S = Q K^T, dP = dout V^T */
                axon_gemm_amx_tile32(qb + ql.rows_a + r * ep, ep, kb + kl.t_a + c / 32 * nche * 1024, nche, NULL, 0,
                                     t->s + r * AT_AMX_BWD + c, AT_AMX_BWD);
                axon_gemm_amx_tile32(qb + ql.rows_b + r * evp, evp, kb + kl.t_b + c / 32 * nchv * 1024, nchv, NULL, 0,
                                     t->dp + r * AT_AMX_BWD + c, AT_AMX_BWD);
            }
        const int extra = at_bwd_extra(a, t, b, h, i0, m, j0, n, 0);
        at_bwd_grad(a, t->s, t->dp, t->lse, t->d, 0, mp, np, i0, j0, n, extra && a->mask.data ? t->mask : NULL,
                    extra && a->dropout ? t->drop : NULL, t->p, t->ds);
        for (int64_t r = 0; r < mp; r += 32) /* dQ += dS K (scaled at the end) */
            for (int64_t c = 0; c < ep; c += 32)
                axon_gemm_amx_tile32(t->ds + r * AT_AMX_BWD, AT_AMX_BWD,
                                     kb + kl.r_a + c / 32 * ((packed + 31) / 32) * 1024, np / 32, dq + r * ep + c, ep,
                                     dq + r * ep + c, ep);
    }
    at_bwd_store(&a->dq, b, h, i0, m, e, dq, ep, (float)a->scale);
}

static void at_bwd_range(void *ctx, int64_t begin, int64_t end, int slot, int kv) {
    at_job_t *j = ctx;
    at_bwd_tiles_t t;
    at_bwd_layout(j->a, j->scratch + (size_t)slot * j->slot_bytes, &t);
    axon_gemm_amx_begin();
    for (int64_t u = begin; u < end; u++) {
        if (kv) at_bwd_kv_unit(j, u, &t);
        else at_bwd_q_unit(j, u, &t);
    }
    axon_gemm_amx_end();
}

void at_amx_bwd_kv_range(void *ctx, int64_t begin, int64_t end, int slot) { at_bwd_range(ctx, begin, end, slot, 1); }
void at_amx_bwd_q_range(void *ctx, int64_t begin, int64_t end, int slot) { at_bwd_range(ctx, begin, end, slot, 0); }

#else

void at_amx_bwd_kv_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)ctx, (void)begin, (void)end, (void)slot;
}
void at_amx_bwd_q_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)ctx, (void)begin, (void)end, (void)slot;
}

#endif
