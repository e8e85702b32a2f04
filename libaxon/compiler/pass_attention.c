/* Attention written out as ops becomes the fused attention op:
 *
 *   S  = bmm(reshape(Q), reshape(permute(K, [0, 1, 3, 2])))      [B*H, Sq, Sk]   (contiguous copies allowed between)
 *   T  = reshape(S) to [B, H, Sq, Sk], times a constant c (or divided by one), plus an optional mask M
 *   P  = softmax(T) over the last dim
 *   O  = bmm(reshape(P), reshape(V))                              [B*H, Sq, Dv]
 *
 * is replaced by sdpa(Q, K, V[, M]) {scale = c}, which never materializes the [Sq, Sk] scores and runs the tiled
 * kernel. This is what aot_autograd makes of `softmax(q @ k.transpose(-2, -1) * scale + mask) @ v` (Hugging Face's
 * "eager" attention, T5, older models). The scale must multiply the product before the mask is added, as sdpa does;
 * every intermediate must have no other use (else the scores are needed anyway); Q, K and V must be 4-D with the
 * batch dims of the scores. Rank-3 products (no head dim) are matched too, with Q = the bmm's first operand.
 * Results change only by rounding (the kernel scales q·k in a different order and accumulates blockwise).
 * Also, sdpa's key and value copied out to every query head (repeat_kv) are read as the grouped heads they are. */
#include <string.h>

#include "compile_impl.h"

/* x without the copies and same-shape expands that the front end puts between a view and a bmm. */
static axon_axir_value_t *peel(axon_axir_module_t *m, axon_axir_value_t *x) {
    for (;;) {
        const axon_axir_node_t *d = x->def;
        if (!d || d->num_operands < 1) return x;
        axon_axir_value_t *src = d->operands[0];
        int same = src->type.rank == x->type.rank;
        for (int i = 0; same && i < x->type.rank; i++) same = axon_axir_dim_equal(m, src->type.dims[i], x->type.dims[i]);
        if (d->op == AXON_AXIR_OP_CONTIGUOUS || (d->op == AXON_AXIR_OP_EXPAND && same)) x = src;
        else return x;
    }
}

/* The only node that reads v, or NULL. */
static axon_axir_node_t *only_user(const axon_axir_func_t *f, const axon_axir_value_t *v) {
    if (v->num_uses != 1) return NULL;
    for (axon_axir_node_t *n = f->first; n; n = n->next)
        for (int k = 0; k < n->num_operands; k++)
            if (n->operands[k] == v) return n;
    return NULL;   /* returned by the function */
}

static int dims_eq(axon_axir_module_t *m, const axon_axir_type_t *a, int i, const axon_axir_type_t *b, int j) {
    return axon_axir_dim_equal(m, a->dims[i], b->dims[j]);
}

/* The 4-D value that `flat` (an operand of a bmm, [B*H, x, y]) is a reshape of, with batch dims [B, H] of `like`;
 * else NULL. */
static axon_axir_value_t *unflatten(axon_axir_module_t *m, axon_axir_value_t *flat, const axon_axir_type_t *like) {
    if (!flat->def || flat->def->op != AXON_AXIR_OP_RESHAPE) return NULL;
    axon_axir_value_t *x = peel(m, flat->def->operands[0]);
    const axon_axir_type_t *t = &x->type;
    if (t->rank != 4 || !dims_eq(m, t, 0, like, 0) || !dims_eq(m, t, 1, like, 1) ||
        !dims_eq(m, t, 2, &flat->type, 1) || !dims_eq(m, t, 3, &flat->type, 2))
        return NULL;
    return x;
}

/* The constant scalar value of v, if v is a 0-d float const. */
static int const_scalar(const axon_axir_value_t *v, double *out) {
    const axon_axir_node_t *k = v->def;
    if (!k || k->op != AXON_AXIR_OP_CONST || v->type.rank != 0) return 0;
    const axon_axir_attr_t *a = axon_axir_node_attr(k, "value");
    if (!a || (a->kind != AXON_AXIR_ATTR_FLOAT && a->kind != AXON_AXIR_ATTR_INT)) return 0;
    *out = a->kind == AXON_AXIR_ATTR_FLOAT ? a->f : (double)a->i;
    return 1;
}

typedef struct attn_match {
    axon_axir_node_t *scores;          /* the first bmm */
    axon_axir_node_t *out;             /* the second bmm */
    axon_axir_value_t *q, *k, *v, *mask;
    int has_scale;
    double scale;
    int rank;                          /* of q, k, v: 4, or 3 without a head dim */
} attn_match_t;

/* The scores path ending in x: [mul/div by a constant] <- [reshape to rank r] <- bmm, each value used once. Sets
 * a->scores, the scale and *s4 (the scores at rank r). */
static int scores_path(axon_axir_value_t *x, int r, attn_match_t *a, axon_axir_value_t **s4) {
    axon_axir_value_t *t = x;
    a->has_scale = 0;
    if (t->num_uses != 1 || !t->def) return 0;
    if (t->def->op == AXON_AXIR_OP_MUL || t->def->op == AXON_AXIR_OP_DIV) {
        axon_axir_node_t *sc = t->def;
        double c;
        int pos = const_scalar(sc->operands[1], &c)                                    ? 0
                  : sc->op == AXON_AXIR_OP_MUL && const_scalar(sc->operands[0], &c) ? 1
                                                                                     : -1;
        if (pos < 0 || (sc->op == AXON_AXIR_OP_DIV && c == 0.0)) return 0;
        a->has_scale = 1;
        a->scale = sc->op == AXON_AXIR_OP_DIV ? 1.0 / c : c;
        t = sc->operands[pos];
        if (t->num_uses != 1) return 0;
    }
    *s4 = t;
    if (r == 4) {
        if (!t->def || t->def->op != AXON_AXIR_OP_RESHAPE) return 0;
        t = t->def->operands[0];
        if (t->num_uses != 1) return 0;
    }
    if (!t->def || t->def->op != AXON_AXIR_OP_BMM || t->type.rank != 3) return 0;
    a->scores = t->def;
    return 1;
}

/* Walks from softmax node sm backwards (mask, scale, bmm) and forwards (bmm with v). 1 if the pattern holds. */
static int match(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *sm, attn_match_t *a) {
    memset(a, 0, sizeof *a);
    const axon_axir_type_t *pt = &sm->results[0]->type;
    const int r = pt->rank;
    if ((r != 3 && r != 4) || !axon_dtype_is_floating(pt->dtype)) return 0;
    int64_t dim = compile_attr_int(sm, "dim", -1);
    if (dim != -1 && dim != r - 1) return 0;
    axon_axir_value_t *t = sm->operands[0], *s4 = NULL;
    if (!scores_path(t, r, a, &s4)) {
        /* a mask added after the scale: either operand of the add may be the scores */
        if (t->num_uses != 1 || !t->def || t->def->op != AXON_AXIR_OP_ADD) return 0;
        int pos = 0;
        while (pos < 2 && !scores_path(t->def->operands[pos], r, a, &s4)) pos++;
        if (pos == 2) return 0;
        a->mask = t->def->operands[1 - pos];
        if (a->mask->type.dtype != pt->dtype || a->mask->type.rank > r) return 0;
    }
    /* forwards: softmax -> [expand/reshape] -> bmm(., v) */
    axon_axir_value_t *p = sm->results[0];
    axon_axir_node_t *u = only_user(f, p);
    while (u && (u->op == AXON_AXIR_OP_EXPAND || u->op == AXON_AXIR_OP_CONTIGUOUS || u->op == AXON_AXIR_OP_RESHAPE) &&
           u->results[0]->type.rank >= 3) {
        p = u->results[0];
        u = only_user(f, p);
    }
    if (!u || u->op != AXON_AXIR_OP_BMM || u->operands[0] != p || p->type.rank != 3) return 0;
    const axon_axir_type_t *st = &a->scores->results[0]->type;
    for (int i = 0; i < 3; i++)
        if (!dims_eq(m, &p->type, i, st, i)) return 0;   /* the probabilities, in the scores' [B*H, Sq, Sk] */
    a->out = u;
    a->rank = r;
    axon_axir_value_t *qa = a->scores->operands[0], *kb = a->scores->operands[1], *vb = u->operands[1];
    if (r == 3) {
        a->q = qa, a->v = vb;
        a->k = NULL;   /* made as permute(kb, [0, 2, 1]) by the rewrite */
        return 1;
    }
    a->q = unflatten(m, qa, &s4->type);
    a->v = unflatten(m, vb, &s4->type);
    if (!kb->def || kb->def->op != AXON_AXIR_OP_RESHAPE) return 0;
    axon_axir_value_t *kt = peel(m, kb->def->operands[0]);
    if (!a->q || !a->v || kt->type.rank != 4 || !kt->def || kt->def->op != AXON_AXIR_OP_PERMUTE) return 0;
    const axon_axir_attr_t *pd = axon_axir_node_attr(kt->def, "dims");
    if (!pd || pd->count != 4) return 0;
    static const int64_t swap[4] = {0, 1, 3, 2};
    for (int i = 0; i < 4; i++) {
        int64_t d = pd->items[i].size < 0 ? pd->items[i].size + 4 : pd->items[i].size;
        if (pd->items[i].expr || d != swap[i]) return 0;
    }
    a->k = kt->def->operands[0];
    const axon_axir_type_t *kq = &a->k->type;
    if (!dims_eq(m, kq, 0, &s4->type, 0) || !dims_eq(m, kq, 1, &s4->type, 1) || !dims_eq(m, kq, 3, &a->q->type, 3))
        return 0;
    return a->q->type.dtype == pt->dtype && a->k->type.dtype == pt->dtype && a->v->type.dtype == pt->dtype;
}

/* A reshape of x to `rank` dims, inserted before `at`; NULL on allocation failure. */
static axon_axir_value_t *reshaped(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *at,
                                   axon_axir_value_t *x, const axon_axir_type_t *to) {
    axon_axir_dim_t shape[AXON_MAX_DIMS];
    for (int i = 0; i < to->rank; i++) shape[i] = to->dims[i];
    axon_axir_attr_t sa = {.name = "shape", .kind = AXON_AXIR_ATTR_LIST, .count = to->rank, .items = shape};
    axon_axir_node_t *n = axon_axir_node_create(m, f, at, AXON_AXIR_OP_RESHAPE, NULL, 1, &x, 1, to, 1, &sa);
    return n ? n->results[0] : NULL;
}

/* [N, S, D] as [1, N, S, D]: the attention kernel takes batch and heads. */
static axon_axir_value_t *with_batch(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *at,
                                     axon_axir_value_t *x) {
    axon_axir_type_t t = x->type;
    t.rank = 4;
    t.dims[0] = (axon_axir_dim_t){1, NULL};
    for (int i = 0; i < 3; i++) t.dims[i + 1] = x->type.dims[i];
    return reshaped(m, f, at, x, &t);
}

/* Inserts sdpa (and the views it needs) before the second bmm and points the bmm's readers at its result. */
static int rewrite(axon_axir_module_t *m, axon_axir_func_t *f, const attn_match_t *a) {
    axon_axir_node_t *at = a->out;
    axon_axir_value_t *q = a->q, *k = a->k, *v = a->v;
    if (a->rank == 3) {   /* k = the product's second operand transposed back; all three get a batch of 1 */
        axon_axir_dim_t dl[3] = {{0, NULL}, {2, NULL}, {1, NULL}};
        axon_axir_attr_t pa = {.name = "dims", .kind = AXON_AXIR_ATTR_LIST, .count = 3, .items = dl};
        axon_axir_type_t kt = a->scores->operands[1]->type;
        kt.dims[1] = a->scores->operands[1]->type.dims[2];
        kt.dims[2] = a->scores->operands[1]->type.dims[1];
        axon_axir_node_t *perm = axon_axir_node_create(m, f, at, AXON_AXIR_OP_PERMUTE, NULL, 1,
                                                       &a->scores->operands[1], 1, &kt, 1, &pa);
        if (!perm || !(q = with_batch(m, f, at, q)) || !(k = with_batch(m, f, at, perm->results[0])) ||
            !(v = with_batch(m, f, at, v)))
            return 0;
    }
    axon_axir_value_t *ops[4] = {q, k, v, a->mask};
    axon_axir_attr_t attrs[3] = {
        {.name = "dropout_p", .kind = AXON_AXIR_ATTR_FLOAT, .f = 0.0},
        {.name = "is_causal", .kind = AXON_AXIR_ATTR_BOOL, .i = 0},
        {.name = "scale", .kind = AXON_AXIR_ATTR_FLOAT, .f = a->has_scale ? a->scale : 1.0},
    };
    axon_axir_type_t rt = q->type;
    rt.dims[3] = v->type.dims[3];
    axon_axir_node_t *sd = axon_axir_node_create(m, f, at, AXON_AXIR_OP_SDPA, NULL, a->mask ? 4 : 3, ops, 1, &rt, 3,
                                                 attrs);
    if (!sd) return 0;
    axon_axir_value_t *res = sd->results[0], *old = a->out->results[0];
    /* the bmm's [B*H, Sq, Dv]: a reading reshape back to [B, H, Sq, Dv] takes sdpa's result as it is */
    axon_axir_node_t *u = only_user(f, old);
    int same = a->rank == 4 && u && u->op == AXON_AXIR_OP_RESHAPE && u->results[0]->type.rank == 4;
    for (int i = 0; same && i < 4; i++) same = dims_eq(m, &u->results[0]->type, i, &rt, i);
    if (same) {
        axon_axir_replace_uses(f, u->results[0], res);
        return 1;
    }
    if (!(res = reshaped(m, f, at, res, &old->type))) return 0;
    axon_axir_replace_uses(f, old, res);
    return 1;
}

/* Grouped-query attention as Hugging Face writes it (repeat_kv): x = reshape(contiguous(expand(unsqueeze(K, 2))))
 * from K [B, Hkv, L, E] through [B, Hkv, G, L, E] to [B, Hkv*G, L, E]. Returns K, or NULL. */
static axon_axir_value_t *repeated_heads(axon_axir_module_t *m, axon_axir_value_t *x) {
    const axon_axir_node_t *r = x->def;
    if (!r || r->op != AXON_AXIR_OP_RESHAPE || x->type.rank != 4) return NULL;
    axon_axir_value_t *e = r->operands[0];
    if (e->def && e->def->op == AXON_AXIR_OP_CONTIGUOUS) e = e->def->operands[0];
    if (!e->def || e->def->op != AXON_AXIR_OP_EXPAND || e->type.rank != 5) return NULL;
    axon_axir_value_t *u = e->def->operands[0];
    if (!u->def || (u->def->op != AXON_AXIR_OP_UNSQUEEZE && u->def->op != AXON_AXIR_OP_RESHAPE) || u->type.rank != 5)
        return NULL;
    axon_axir_value_t *kv = u->def->operands[0];
    const axon_axir_type_t *et = &e->type, *ut = &u->type, *kt = &kv->type;
    if (kt->rank != 4 || ut->dims[2].expr || ut->dims[2].size != 1 || et->dims[2].expr || et->dims[2].size < 2 ||
        x->type.dims[1].expr || kt->dims[1].expr || x->type.dims[1].size != kt->dims[1].size * et->dims[2].size)
        return NULL;
    static const int from[4] = {0, 1, 3, 4}, to[4] = {0, 1, 2, 3};
    for (int i = 0; i < 4; i++)   /* K's dims are the expand's (but the group) and x's (but the heads) */
        if (!dims_eq(m, ut, from[i], kt, to[i]) || !dims_eq(m, et, from[i], kt, to[i]) ||
            (i != 1 && !dims_eq(m, &x->type, i, kt, i)))
            return NULL;
    return kv;
}

/* sdpa / sdpa_lse whose key and value are repeat_kv copies read the grouped heads directly (the kernel maps query
 * head h to key/value head h / G): the copies go. Returns 0 on allocation failure. */
static int grouped_query(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *n) {
    /* k and v repeat to the same head count, so equal head counts mean equal groups */
    axon_axir_value_t *k = repeated_heads(m, n->operands[1]), *v = repeated_heads(m, n->operands[2]);
    if (!k || !v || !dims_eq(m, &k->type, 1, &v->type, 1)) return 1;
    axon_axir_value_t *ops[4] = {n->operands[0], k, v, n->num_operands > 3 ? n->operands[3] : NULL};
    axon_axir_type_t types[2];
    for (int r = 0; r < n->num_results; r++) types[r] = n->results[r]->type;
    axon_axir_node_t *g = axon_axir_node_create(m, f, n, n->op, NULL, n->num_operands, ops, n->num_results, types,
                                                n->num_attrs, n->attrs);
    if (!g) return 0;
    for (int r = 0; r < n->num_results; r++) axon_axir_replace_uses(f, n->results[r], g->results[r]);
    return 1;
}

axon_status_t pass_attention(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    axon_axir_func_recompute_uses(f);
    for (axon_axir_node_t *n = f->first; n; n = n->next) {
        if (n->op != AXON_AXIR_OP_SOFTMAX) continue;
        attn_match_t a;
        if (!match(m, f, n, &a)) continue;
        if (!rewrite(m, f, &a)) return compile_diag(diag, n, AXON_ERROR_OUT_OF_MEMORY, "attention: out of memory");
        axon_axir_func_recompute_uses(f);   /* the pattern's nodes are now dead; dce erases them */
    }
    for (axon_axir_node_t *n = f->first; n; n = n->next) {
        if ((n->op != AXON_AXIR_OP_SDPA && n->op != AXON_AXIR_OP_SDPA_LSE) || n->num_operands < 3) continue;
        if (!grouped_query(m, f, n)) return compile_diag(diag, n, AXON_ERROR_OUT_OF_MEMORY, "attention: out of memory");
    }
    axon_axir_func_recompute_uses(f);
    return AXON_OK;
}
