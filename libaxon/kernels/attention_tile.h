/* The attention tile code in one compute type: included once with AT_T float (float32 and the half types) and once
 * with AT_T double (float64) by attention_fwd.c and attention_bwd.c, each using its part. The includer defines AT_T,
 * AT_SFX (name suffix), AT_GEMM (axon_gemm_f32 / _f64), for float AT_GEMM_FEW (axon_gemm_skinny_f32, taken for
 * products of a few rows) and AT_CDT (the axon dtype of AT_T); they are undefined at the end. Everything is static
 * inline so a file that uses only the forward or the backward part gets no unused-function warnings. Scratch layout
 * (elements of AT_T, per worker): see at_slot_bytes in attention_fwd.c. */
#include <math.h>
#include <string.h>

#include "attention_impl.h"
#include "gemm_impl.h"
#include "pointwise_impl.h"

#define AT_CAT2(a, b) a##_##b
#define AT_CAT(a, b) AT_CAT2(a, b)
#define AT_FN(name) AT_CAT(name, AT_SFX)

/* The tiles of one worker's scratch. */
typedef struct {
    AT_T *q, *qt, *dout, *gt, *k, *v, *s, *dp, *pd, *acc_e, *acc_v, *rowa, *rowb, *rowc, *mrow, *z;
} AT_FN(at_tiles_t);

static inline AT_FN(at_tiles_t) AT_FN(at_tiles)(const at_args_t *a, void *scratch) {
    const int64_t b = AT_BLOCK, kb = AT_KBLOCK, e = a->E > 0 ? a->E : 1, ev = a->Ev > 0 ? a->Ev : 1;
    AT_FN(at_tiles_t) t;
    AT_T *p = scratch;
    t.q = p, p += b * e;
    t.qt = p, p += b * e;
    t.dout = p, p += b * ev;
    t.gt = p, p += b * ev;
    t.k = p, p += kb * e;
    t.v = p, p += kb * ev;
    t.s = p, p += b * kb;
    t.dp = p, p += b * b;
    t.pd = p, p += b * b;
    t.acc_e = p, p += b * e;
    t.acc_v = p, p += b * ev;
    t.rowa = p, p += b;
    t.rowb = p, p += b;
    t.rowc = p, p += b;
    t.mrow = p, p += kb;
    t.z = p;
    return t;
}

/* C = alpha * op(A) @ op(B) + beta * C, skipping empty products; a failed portable GEMM is recorded in j. */
static inline void AT_FN(at_gemm)(at_job_t *j, int ta, int tb, int64_t m, int64_t n, int64_t k, AT_T alpha,
                                  const AT_T *x, int64_t ldx, const AT_T *y, int64_t ldy, AT_T beta, AT_T *c,
                                  int64_t ldc) {
    if (m <= 0 || n <= 0) return;
#ifdef AT_GEMM_FEW /* a few query rows (decoding): OpenBLAS's per-call cost would dominate */
    if (m <= AXON_GEMM_SKINNY && AT_GEMM_FEW(ta, tb, m, n, k, alpha, x, ldx, y, ldy, beta, c, ldc) == 0) return;
#endif
    if (AT_GEMM(ta, tb, m, n, k, alpha, x, ldx, y, ldy, beta, c, ldc) != 0) atomic_store(&j->failed, 1);
}

/* Rows [r0, r0 + n) of operand t at (b, h) as an n x D matrix with row stride *ld: t's own memory when it already
 * is one in the compute type (unit stride along D), else converted into buf. */
static inline const AT_T *AT_FN(at_rows)(const at_operand_t *t, int64_t b, int64_t h, int64_t r0, int64_t n,
                                         int64_t d, AT_T *buf, int64_t *ld) {
    const char *p = t->data + (b * t->st[0] + h * t->st[1] + r0 * t->st[2]) * (int64_t)t->es;
    const int64_t dd = d > 0 ? d : 1;
    if (t->dtype == AT_CDT && (t->st[3] == 1 || d <= 1) && t->st[2] >= dd && t->st[2] <= INT32_MAX) {
        *ld = t->st[2];
        return (const AT_T *)(const void *)p;
    }
    for (int64_t r = 0; r < n; r++) t->ld((char *)(buf + r * d), 1, p + r * t->st[2] * (int64_t)t->es, t->st[3], d);
    *ld = dd;
    return buf;
}

/* x (m x d, row stride ldx) transposed into buf (d x m, row stride *ld = m) when m >= AT_TRANSPOSE_ROWS; returns
 * buf, or x as it is. Products of the form X K^T (the scores, dP) then take X so (both operands transposed):
 * OpenBLAS runs them on its small-matrix kernel, while with X as it is a tile of many rows goes through its packing
 * path, which costs more than this copy. A few rows (decoding) are better off as they are: OpenBLAS's small kernel
 * takes them either way, and faster untransposed. */
static inline const AT_T *AT_FN(at_rows_t)(const AT_T *x, int64_t ldx, int64_t m, int64_t d, AT_T *buf,
                                           int64_t *ld) {
    if (m < AT_TRANSPOSE_ROWS) {
        *ld = ldx;
        return x;
    }
    AT_FN(at_transpose)(x, ldx, m, d, buf);
    *ld = m;
    return buf;
}

/* Store an n x d matrix (row stride ld) into rows [r0, r0 + n) of operand t at (b, h). */
static inline void AT_FN(at_store_rows)(const at_operand_t *t, int64_t b, int64_t h, int64_t r0, int64_t n,
                                        int64_t d, const AT_T *buf, int64_t ld) {
    char *p = t->data + (b * t->st[0] + h * t->st[1] + r0 * t->st[2]) * (int64_t)t->es;
    for (int64_t r = 0; r < n; r++) t->st_fn(p + r * t->st[2] * (int64_t)t->es, t->st[3], (const char *)(buf + r * ld), 1, d);
}

/* lse (or any [B, H, L] operand) at rows [i0, i0 + m) of (b, h) into out. */
static inline void AT_FN(at_row_values)(const at_operand_t *t, int64_t b, int64_t h, int64_t i0, int64_t m,
                                        AT_T *out) {
    t->ld((char *)out, 1, t->data + (b * t->st[0] + h * t->st[1] + i0 * t->st[2]) * (int64_t)t->es, t->st[2], m);
}

/* The mask and the causal limit on the m x n scores s (row stride lds) of query rows i0.. of head h and keys j0..:
 * masked entries become -inf, float masks are added. mrow: n elements of room for a row of a converted mask. */
static inline void AT_FN(at_mask_scores)(const at_args_t *a, AT_T *mrow, int64_t b, int64_t h, int64_t i0, int64_t m,
                                         int64_t j0, int64_t n, AT_T *s, int64_t lds) {
    const at_operand_t *mk = &a->mask;
    const char *mp = mk->data ? mk->data + (b * mk->st[0] + h * mk->st[1] + i0 * mk->st[2] + j0 * mk->st[3]) *
                                               (int64_t)mk->es
                              : NULL;
    const int direct = mp && !a->mask_bool && mk->dtype == AT_CDT && (mk->st[3] == 1 || n == 1);
    if (direct) AT_FN(at_add_rows)(s, lds, m, n, (const AT_T *)(const void *)mp, mk->st[2]);
    for (int64_t r = 0; r < m && (a->causal || (mp && !direct)); r++) {
        AT_T *row = s + r * lds;
        if (mp && !direct) {
            mk->ld((char *)mrow, 1, mp + r * mk->st[2] * (int64_t)mk->es, mk->st[3], n);
            if (a->mask_bool)
                for (int64_t c = 0; c < n; c++) row[c] = mrow[c] != 0 ? row[c] : (AT_T)-INFINITY;
            else
                for (int64_t c = 0; c < n; c++) row[c] += mrow[c];
        }
        if (a->causal)
            for (int64_t c = i0 + r + 1 - j0 < 0 ? 0 : i0 + r + 1 - j0; c < n; c++) row[c] = (AT_T)-INFINITY;
    }
}

/* s (m x n, row stride n) = scale * Q K^T for query rows i0.. of head h and keys j0.., masked (at_mask_scores). */
static inline void AT_FN(at_scores)(at_job_t *j, AT_FN(at_tiles_t) *t, int64_t b, int64_t h, int64_t i0, int64_t m,
                                    int64_t j0, int64_t n, const AT_T *q, int64_t ldq, const AT_T *k, int64_t ldk) {
    const at_args_t *a = j->a;
    AT_FN(at_gemm)(j, q == t->qt, 1, m, n, a->E, (AT_T)a->scale, q, ldq, k, ldk, 0, t->s, n); /* q: at_rows_t */
    if (a->E == 0) memset(t->s, 0, (size_t)(m * n) * sizeof(AT_T)); /* not left to how BLAS treats k == 0 */
    AT_FN(at_mask_scores)(a, t->mrow, b, h, i0, m, j0, n, t->s, n);
}

/* z[0..n) = the dropout factor (0 or keep_scale) of keys j0.. of query row i of head h. */
static inline void AT_FN(at_dropout_row)(const at_args_t *a, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t n,
                                         AT_T *z) {
    uint64_t e = (uint64_t)(((b * a->Hq + h) * a->L + i) * a->S + j0);
    const uint64_t end = e + (uint64_t)n;
    const AT_T keep = (AT_T)a->keep_scale;
    AT_T *o = z;
    while (e < end) { /* one Philox block serves up to 4 neighbouring elements */
        uint32_t x[4];
        axon_philox_block(a->seed, a->offset, e / 4, x);
        for (unsigned lane = (unsigned)(e % 4); lane < 4 && e < end; lane++, e++)
            *o++ = at_dropout_keep(x[lane], a->p) ? keep : (AT_T)0;
    }
}

/* Last key + 1 that query rows [i0, i0 + m) may see. */
static inline int64_t AT_FN(at_key_end)(const at_args_t *a, int64_t i0, int64_t m) {
    return a->causal && i0 + m < a->S ? i0 + m : a->S;
}

/* ---- forward: one unit = AT_BLOCK query rows of one (b, h) ---- */

static inline void AT_FN(at_forward_unit)(at_job_t *j, int64_t u, void *scratch) {
    const at_args_t *a = j->a;
    AT_FN(at_tiles_t) t = AT_FN(at_tiles)(a, scratch);
    const int64_t nrb = (a->L + AT_BLOCK - 1) / AT_BLOCK;
    const int64_t b = u / (a->Hq * nrb), h = u / nrb % a->Hq, i0 = u % nrb * AT_BLOCK, hk = h / a->group;
    const int64_t m = a->L - i0 < AT_BLOCK ? a->L - i0 : AT_BLOCK, ev = a->Ev;
    AT_T *mx = t.rowa, *l = t.rowb, *acc = t.acc_v;
    int64_t ldq, ldk, ldv;
    const AT_T *q = AT_FN(at_rows)(&a->q, b, h, i0, m, a->E, t.q, &ldq);
    q = AT_FN(at_rows_t)(q, ldq, m, a->E, t.qt, &ldq);
    for (int64_t r = 0; r < m; r++) mx[r] = (AT_T)-INFINITY, l[r] = 0;
    memset(acc, 0, (size_t)(m * (ev > 0 ? ev : 1)) * sizeof(AT_T));
    const int64_t jend = AT_FN(at_key_end)(a, i0, m);
    for (int64_t j0 = 0; j0 < jend; j0 += AT_KBLOCK) {
        const int64_t n = jend - j0 < AT_KBLOCK ? jend - j0 : AT_KBLOCK;
        const AT_T *k = AT_FN(at_rows)(&a->k, b, hk, j0, n, a->E, t.k, &ldk);
        AT_FN(at_scores)(j, &t, b, h, i0, m, j0, n, q, ldq, k, ldk);
        AT_FN(at_softmax_update)(t.s, m, n, mx, l, acc, ev);
        for (int64_t r = 0; r < m && a->dropout; r++) { /* after the sums: dropout does not change them */
            AT_T *row = t.s + r * n;
            AT_FN(at_dropout_row)(a, b, h, i0 + r, j0, n, t.z);
            for (int64_t c = 0; c < n; c++) row[c] *= t.z[c];
        }
        const AT_T *v = AT_FN(at_rows)(&a->v, b, hk, j0, n, ev, t.v, &ldv);
        AT_FN(at_gemm)(j, 0, 0, m, ev, n, 1, t.s, n, v, ldv, 1, acc, ev);
    }
    AT_T *lse = t.rowc;
    for (int64_t r = 0; r < m; r++) {
        const int any = l[r] > 0 || l[r] != l[r]; /* NaN propagates like a value */
        const AT_T inv = any ? (AT_T)1 / l[r] : (AT_T)0;
        for (int64_t c = 0; c < ev; c++) acc[r * ev + c] *= inv;
        lse[r] = any ? mx[r] + (AT_T)log((double)l[r]) : (AT_T)INFINITY;
    }
    AT_FN(at_store_rows)(&a->out, b, h, i0, m, ev, acc, ev);
    const at_operand_t *ls = &a->lse;
    ls->st_fn(ls->data + (b * ls->st[0] + h * ls->st[1] + i0 * ls->st[2]) * (int64_t)ls->es, ls->st[2],
              (const char *)lse, 1, m);
}

/* ---- backward ---- */

/* P (in t->s, from the scores and lse) and dS (in t->dp) of query rows [i0, i0 + m) x keys [j0, j0 + n); with
 * dropout, P with the dropout factors applied goes to t->pd (else t->pd is unused and P is the weight). Returns the
 * dropped-out weights (t->pd or t->s). */
static inline const AT_T *AT_FN(at_grad_tile)(at_job_t *j, AT_FN(at_tiles_t) *t, int64_t b, int64_t h, int64_t i0,
                                              int64_t m, int64_t j0, int64_t n, const AT_T *q, int64_t ldq,
                                              const AT_T *k, int64_t ldk, const AT_T *dout, int64_t lddo,
                                              const AT_T *v, int64_t ldv, const AT_T *lse, const AT_T *dd) {
    const at_args_t *a = j->a;
    int64_t ldqt, ldgt; /* both products with the rows transposed, for OpenBLAS's small-matrix kernel (at_rows_t) */
    const AT_T *qt = AT_FN(at_rows_t)(q, ldq, m, a->E, t->qt, &ldqt);
    const AT_T *gt = AT_FN(at_rows_t)(dout, lddo, m, a->Ev, t->gt, &ldgt);
    AT_FN(at_scores)(j, t, b, h, i0, m, j0, n, qt, ldqt, k, ldk);
    AT_FN(at_gemm)(j, gt == t->gt, 1, m, n, a->Ev, 1, gt, ldgt, v, ldv, 0, t->dp, n); /* dP = dout V^T */
    if (a->Ev == 0) memset(t->dp, 0, (size_t)(m * n) * sizeof(AT_T));
    if (!a->dropout) {
        AT_FN(at_grad_rows)(t->s, t->dp, m, n, lse, dd);
        return t->s;
    }
    AT_FN(at_exp_rows)(t->s, m, n, lse);
    for (int64_t r = 0; r < m; r++) {
        AT_T *p = t->s + r * n, *dp = t->dp + r * n, *pd = t->pd + r * n;
        const AT_T di = dd[r];
        AT_FN(at_dropout_row)(a, b, h, i0 + r, j0, n, t->z);
        for (int64_t c = 0; c < n; c++) pd[c] = p[c] * t->z[c], dp[c] *= t->z[c];
        for (int64_t c = 0; c < n; c++) dp[c] = p[c] * (dp[c] - di);
    }
    return t->pd;
}

/* D[b, h, i] = sum(dout * out) over Ev for one row u = (b * Hq + h) * L + i. */
static inline void AT_FN(at_backward_d_row)(at_job_t *j, int64_t u, void *scratch) {
    const at_args_t *a = j->a;
    AT_FN(at_tiles_t) t = AT_FN(at_tiles)(a, scratch);
    const int64_t b = u / (a->Hq * a->L), h = u / a->L % a->Hq, i = u % a->L;
    int64_t ld1, ld2;
    const AT_T *g = AT_FN(at_rows)(&a->dout, b, h, i, 1, a->Ev, t.dout, &ld1);
    const AT_T *o = AT_FN(at_rows)(&a->out, b, h, i, 1, a->Ev, t.acc_v, &ld2);
    AT_T s = 0;
    for (int64_t c = 0; c < a->Ev; c++) s += g[c] * o[c];
    ((AT_T *)j->d)[u] = s;
}

/* dk, dv of AT_BLOCK keys of one (b, kv head): sums over every query head of its group and every query row that
 * may see them. */
static inline void AT_FN(at_backward_kv_unit)(at_job_t *j, int64_t u, void *scratch) {
    const at_args_t *a = j->a;
    AT_FN(at_tiles_t) t = AT_FN(at_tiles)(a, scratch);
    const int64_t nkb = (a->S + AT_BLOCK - 1) / AT_BLOCK;
    const int64_t b = u / (a->Hkv * nkb), hk = u / nkb % a->Hkv, j0 = u % nkb * AT_BLOCK;
    const int64_t n = a->S - j0 < AT_BLOCK ? a->S - j0 : AT_BLOCK, e = a->E, ev = a->Ev;
    int64_t ldk, ldv, ldq, lddo;
    const AT_T *k = AT_FN(at_rows)(&a->k, b, hk, j0, n, e, t.k, &ldk);
    const AT_T *v = AT_FN(at_rows)(&a->v, b, hk, j0, n, ev, t.v, &ldv);
    AT_T *dk = t.acc_e, *dv = t.acc_v;
    memset(dk, 0, (size_t)(n * (e > 0 ? e : 1)) * sizeof(AT_T));
    memset(dv, 0, (size_t)(n * (ev > 0 ? ev : 1)) * sizeof(AT_T));
    const AT_T *dvec = j->d;
    for (int64_t h = hk * a->group; h < (hk + 1) * a->group; h++) {
        for (int64_t i0 = a->causal ? j0 : 0; i0 < a->L; i0 += AT_BLOCK) { /* causal: rows before j0 see none */
            const int64_t m = a->L - i0 < AT_BLOCK ? a->L - i0 : AT_BLOCK;
            const AT_T *q = AT_FN(at_rows)(&a->q, b, h, i0, m, e, t.q, &ldq);
            const AT_T *g = AT_FN(at_rows)(&a->dout, b, h, i0, m, ev, t.dout, &lddo);
            AT_FN(at_row_values)(&a->lse, b, h, i0, m, t.rowa);
            const AT_T *pw = AT_FN(at_grad_tile)(j, &t, b, h, i0, m, j0, n, q, ldq, k, ldk, g, lddo, v, ldv, t.rowa,
                                                 dvec + (b * a->Hq + h) * a->L + i0);
            AT_FN(at_gemm)(j, 1, 0, n, ev, m, 1, pw, n, g, lddo, 1, dv, ev);                  /* dV += P^T dout */
            AT_FN(at_gemm)(j, 1, 0, n, e, m, (AT_T)a->scale, t.dp, n, q, ldq, 1, dk, e);      /* dK += dS^T Q */
        }
    }
    if (a->dk.data) AT_FN(at_store_rows)(&a->dk, b, hk, j0, n, e, dk, e);
    if (a->dv.data) AT_FN(at_store_rows)(&a->dv, b, hk, j0, n, ev, dv, ev);
}

/* dq of AT_BLOCK query rows of one (b, h). */
static inline void AT_FN(at_backward_q_unit)(at_job_t *j, int64_t u, void *scratch) {
    const at_args_t *a = j->a;
    AT_FN(at_tiles_t) t = AT_FN(at_tiles)(a, scratch);
    const int64_t nrb = (a->L + AT_BLOCK - 1) / AT_BLOCK;
    const int64_t b = u / (a->Hq * nrb), h = u / nrb % a->Hq, i0 = u % nrb * AT_BLOCK, hk = h / a->group;
    const int64_t m = a->L - i0 < AT_BLOCK ? a->L - i0 : AT_BLOCK, e = a->E;
    int64_t ldk, ldv, ldq, lddo;
    const AT_T *q = AT_FN(at_rows)(&a->q, b, h, i0, m, e, t.q, &ldq);
    const AT_T *g = AT_FN(at_rows)(&a->dout, b, h, i0, m, a->Ev, t.dout, &lddo);
    AT_FN(at_row_values)(&a->lse, b, h, i0, m, t.rowa);
    const AT_T *dvec = (const AT_T *)j->d + (b * a->Hq + h) * a->L + i0;
    AT_T *dq = t.acc_e;
    memset(dq, 0, (size_t)(m * (e > 0 ? e : 1)) * sizeof(AT_T));
    const int64_t jend = AT_FN(at_key_end)(a, i0, m);
    for (int64_t j0 = 0; j0 < jend; j0 += AT_BLOCK) {
        const int64_t n = jend - j0 < AT_BLOCK ? jend - j0 : AT_BLOCK;
        const AT_T *k = AT_FN(at_rows)(&a->k, b, hk, j0, n, e, t.k, &ldk);
        const AT_T *v = AT_FN(at_rows)(&a->v, b, hk, j0, n, a->Ev, t.v, &ldv);
        AT_FN(at_grad_tile)(j, &t, b, h, i0, m, j0, n, q, ldq, k, ldk, g, lddo, v, ldv, t.rowa, dvec);
        AT_FN(at_gemm)(j, 0, 0, m, e, n, (AT_T)a->scale, t.dp, n, k, ldk, 1, dq, e); /* dQ += dS K */
    }
    AT_FN(at_store_rows)(&a->dq, b, h, i0, m, e, dq, e);
}

/* dq, dk and dv of one (b, kv head) in one pass: its keys block by block, each against every query row of the
 * group that sees them, dq accumulated in the unit's own buffer dqs (group x L x E). The tiles, their order and
 * every sum's order are those of the two passes above (key blocks ascending for each dq row block; heads, then row
 * blocks ascending for each key block), so the results are bitwise the same; it saves recomputing the weights and
 * dP for dq. */
static inline void AT_FN(at_backward_fused_unit)(at_job_t *j, int64_t u, void *scratch, AT_T *dqs) {
    const at_args_t *a = j->a;
    AT_FN(at_tiles_t) t = AT_FN(at_tiles)(a, scratch);
    const int64_t b = u / a->Hkv, hk = u % a->Hkv, e = a->E, ev = a->Ev, h0 = hk * a->group;
    int64_t ldk, ldv, ldq, lddo;
    memset(dqs, 0, (size_t)(a->group * a->L * (e > 0 ? e : 1)) * sizeof(AT_T));
    for (int64_t j0 = 0; j0 < a->S; j0 += AT_BLOCK) {
        const int64_t n = a->S - j0 < AT_BLOCK ? a->S - j0 : AT_BLOCK;
        const AT_T *k = AT_FN(at_rows)(&a->k, b, hk, j0, n, e, t.k, &ldk);
        const AT_T *v = AT_FN(at_rows)(&a->v, b, hk, j0, n, ev, t.v, &ldv);
        AT_T *dk = t.acc_e, *dv = t.acc_v;
        memset(dk, 0, (size_t)(n * (e > 0 ? e : 1)) * sizeof(AT_T));
        memset(dv, 0, (size_t)(n * (ev > 0 ? ev : 1)) * sizeof(AT_T));
        for (int64_t h = h0; h < h0 + a->group; h++) {
            for (int64_t i0 = a->causal ? j0 : 0; i0 < a->L; i0 += AT_BLOCK) {
                const int64_t m = a->L - i0 < AT_BLOCK ? a->L - i0 : AT_BLOCK;
                const AT_T *q = AT_FN(at_rows)(&a->q, b, h, i0, m, e, t.q, &ldq);
                const AT_T *g = AT_FN(at_rows)(&a->dout, b, h, i0, m, ev, t.dout, &lddo);
                AT_FN(at_row_values)(&a->lse, b, h, i0, m, t.rowa);
                const AT_T *pw = AT_FN(at_grad_tile)(j, &t, b, h, i0, m, j0, n, q, ldq, k, ldk, g, lddo, v, ldv,
                                                     t.rowa, (const AT_T *)j->d + (b * a->Hq + h) * a->L + i0);
                AT_FN(at_gemm)(j, 1, 0, n, ev, m, 1, pw, n, g, lddo, 1, dv, ev);
                AT_FN(at_gemm)(j, 1, 0, n, e, m, (AT_T)a->scale, t.dp, n, q, ldq, 1, dk, e);
                AT_FN(at_gemm)(j, 0, 0, m, e, n, (AT_T)a->scale, t.dp, n, k, ldk, 1,
                               dqs + ((h - h0) * a->L + i0) * e, e);
            }
        }
        AT_FN(at_store_rows)(&a->dk, b, hk, j0, n, e, dk, e);
        AT_FN(at_store_rows)(&a->dv, b, hk, j0, n, ev, dv, ev);
    }
    for (int64_t h = h0; h < h0 + a->group; h++)
        AT_FN(at_store_rows)(&a->dq, b, h, 0, a->L, e, dqs + (h - h0) * a->L * e, e);
}

#undef AT_FN
#undef AT_CAT
#undef AT_CAT2
#undef AT_T
#undef AT_SFX
#undef AT_GEMM
#undef AT_GEMM_FEW
#undef AT_CDT
