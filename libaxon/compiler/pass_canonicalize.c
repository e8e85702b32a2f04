/* Canonicalization: rewrites that make a node a no-op, or shorten a chain, without changing any result bit.
 *   cast to the operand's own dtype             -> the operand
 *   reshape/squeeze/unsqueeze/expand to the operand's own shape, permute by the identity -> the operand
 *   permute of a permute that it undoes                         -> the first one's operand
 *   reshape of reshape                          -> one reshape of the first operand
 *   contiguous of a value that a compute op produced, directly or through reshape/squeeze/unsqueeze -> the operand:
 *   every value that is not a view is row-major in its own storage, so the copy would change nothing (the output
 *   projection after attention and its residual add asked for such copies)
 *   mul by 1, sub 0, add -0.0 (any dtype) and add 0 (integers and bool) -> the other operand, when that already has
 *   the result's type (no broadcasting hidden in the op). Floating x + 0.0 is not x for x = -0.0, so it stays.
 * A rewritten node that is left without uses is erased here; other dead code is dce's. */
#include <math.h>

#include "compile_impl.h"

static int same_type(axon_axir_module_t *m, const axon_axir_type_t *a, const axon_axir_type_t *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (!axon_axir_dim_equal(m, a->dims[d], b->dims[d])) return 0;
    return 1;
}

static int is_identity_permute(const axon_axir_node_t *n) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, "dims");
    if (!a) return 0;
    for (int d = 0; d < a->count; d++) {
        int64_t v = a->items[d].size;
        if (v < 0) v += a->count;
        if (a->items[d].expr || v != d) return 0;
    }
    return 1;
}

/* 1 if permuting by inner's dims and then by outer's gives the identity. */
static int permutes_cancel(const axon_axir_node_t *outer, const axon_axir_node_t *inner) {
    const axon_axir_attr_t *o = axon_axir_node_attr(outer, "dims"), *i = axon_axir_node_attr(inner, "dims");
    if (!o || !i || o->count != i->count) return 0;
    for (int d = 0; d < o->count; d++) {
        int64_t od = o->items[d].size < 0 ? o->items[d].size + o->count : o->items[d].size;
        if (o->items[d].expr || od < 0 || od >= i->count || i->items[od].expr) return 0;
        int64_t id = i->items[od].size < 0 ? i->items[od].size + i->count : i->items[od].size;
        if (id != d) return 0;
    }
    return 1;
}

/* 1 if the const node k holds the 0-d number that is an identity for n's op from operand position `pos`. */
static int is_identity_operand(const axon_axir_node_t *n, int pos) {
    const axon_axir_node_t *k = n->operands[pos]->def;
    if (!k || k->op != AXON_AXIR_OP_CONST || k->results[0]->type.rank != 0) return 0;
    const axon_axir_attr_t *a = axon_axir_node_attr(k, "value");
    if (!a) return 0;
    int floating = axon_dtype_is_floating(n->results[0]->type.dtype);
    switch (n->op) {
    case AXON_AXIR_OP_MUL: return compile_const_equals(k, 1.0);
    case AXON_AXIR_OP_SUB: return pos == 1 && compile_const_equals(k, 0.0);
    case AXON_AXIR_OP_ADD:
        if (!compile_const_equals(k, 0.0)) return 0;
        if (!floating) return 1;
        return a->kind == AXON_AXIR_ATTR_FLOAT && signbit(a->f);
    default: return 0;
    }
}

/* 1 if x is row-major by construction: a non-view op's result, or a restriding view of one. Parameters and the other
 * views (permute, slice, expand, select) may have any strides. */
static int is_row_major(const axon_axir_value_t *x) {
    for (const axon_axir_node_t *d = x->def; d; d = d->operands[0]->def) {
        if (axon_axir_op_class(d->op) != AXON_AXIR_CLASS_VIEW) return 1;
        if (d->op != AXON_AXIR_OP_RESHAPE && d->op != AXON_AXIR_OP_SQUEEZE && d->op != AXON_AXIR_OP_UNSQUEEZE) return 0;
    }
    return 0;
}

/* The value n reduces to, or NULL. */
static axon_axir_value_t *simplify(axon_axir_module_t *m, axon_axir_node_t *n) {
    if (n->num_results != 1 || n->num_operands < 1) return NULL;
    axon_axir_value_t *x = n->operands[0], *r = n->results[0];
    switch (n->op) {
    case AXON_AXIR_OP_CAST:
        return x->type.dtype == r->type.dtype ? x : NULL;
    case AXON_AXIR_OP_RESHAPE: case AXON_AXIR_OP_SQUEEZE: case AXON_AXIR_OP_UNSQUEEZE: case AXON_AXIR_OP_EXPAND:
        return same_type(m, &x->type, &r->type) ? x : NULL;
    case AXON_AXIR_OP_CONTIGUOUS:
        return is_row_major(x) ? x : NULL;
    case AXON_AXIR_OP_PERMUTE:
        if (is_identity_permute(n)) return x;
        /* permute of a permute that undoes it (a transpose transposed back, as autograd's mm backward makes) */
        return x->def && x->def->op == AXON_AXIR_OP_PERMUTE && permutes_cancel(n, x->def) ? x->def->operands[0] : NULL;
    case AXON_AXIR_OP_MUL: case AXON_AXIR_OP_ADD: case AXON_AXIR_OP_SUB:
        for (int pos = 0; pos < 2; pos++) {
            axon_axir_value_t *other = n->operands[1 - pos];
            if (is_identity_operand(n, pos) && same_type(m, &other->type, &r->type)) return other;
        }
        return NULL;
    default: return NULL;
    }
}

/* pow with a constant exponent that PyTorch's CPU kernel computes without pow (x*x, x*x*x, 1/(x*x), sqrt, rsqrt,
 * reciprocal) becomes those ops, in its order of operations, so results keep their bits and the chain vectorizes
 * (libm's pow does not). GPT-2's tanh-GELU is written with pow(x, 3). The result replacing n, or NULL; nodes are
 * inserted before n. */
static axon_axir_value_t *expand_pow(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *n) {
    if (n->op != AXON_AXIR_OP_POW || n->num_operands != 2 || n->num_results != 1) return NULL;
    axon_axir_value_t *x = n->operands[0], *r = n->results[0];
    const axon_dtype_t d = r->type.dtype;
    if (d != AXON_FLOAT32 && d != AXON_FLOAT64 && d != AXON_FLOAT16 && d != AXON_BFLOAT16) return NULL;
    if (x->type.dtype != d || !same_type(m, &x->type, &r->type)) return NULL;   /* no broadcast by the exponent */
    const axon_axir_node_t *e = n->operands[1]->def;
    const axon_axir_type_t *t = &r->type;
    axon_axir_node_t *a, *b;
    if (compile_const_equals(e, 1.0)) return x;
    if (compile_const_equals(e, 2.0) || compile_const_equals(e, 3.0) || compile_const_equals(e, -2.0)) {
        axon_axir_value_t *xx[2] = {x, x};
        if (!(a = axon_axir_node_create(m, f, n, AXON_AXIR_OP_MUL, NULL, 2, xx, 1, t, 0, NULL))) return NULL;
        if (compile_const_equals(e, 2.0)) return a->results[0];
        if (compile_const_equals(e, -2.0))
            b = axon_axir_node_create(m, f, n, AXON_AXIR_OP_RECIPROCAL, NULL, 1, a->results, 1, t, 0, NULL);
        else {
            axon_axir_value_t *sq_x[2] = {a->results[0], x};
            b = axon_axir_node_create(m, f, n, AXON_AXIR_OP_MUL, NULL, 2, sq_x, 1, t, 0, NULL);
        }
        return b ? b->results[0] : NULL;
    }
    axon_axir_op_t op = compile_const_equals(e, 0.5)    ? AXON_AXIR_OP_SQRT
                        : compile_const_equals(e, -0.5) ? AXON_AXIR_OP_RSQRT
                        : compile_const_equals(e, -1.0) ? AXON_AXIR_OP_RECIPROCAL
                                                        : AXON_AXIR_OP_INVALID;
    if (op == AXON_AXIR_OP_INVALID) return NULL;
    a = axon_axir_node_create(m, f, n, op, NULL, 1, &x, 1, t, 0, NULL);
    return a ? a->results[0] : NULL;
}

axon_status_t pass_canonicalize(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    (void)diag;
    axon_axir_func_recompute_uses(f);
    for (axon_axir_node_t *n = f->first, *next; n; n = next) {
        next = n->next;
        /* reshape(reshape(x)) reads x directly; the inner one may then die. */
        if (n->op == AXON_AXIR_OP_RESHAPE && n->operands[0]->def && n->operands[0]->def->op == AXON_AXIR_OP_RESHAPE) {
            axon_axir_node_t *inner = n->operands[0]->def;
            n->operands[0]->num_uses--;   /* rewired by hand: keep the counts that erase trusts */
            n->operands[0] = inner->operands[0];
            n->operands[0]->num_uses++;
            compile_erase_if_dead(f, inner);
        }
        axon_axir_value_t *to = simplify(m, n);
        if (!to && (to = expand_pow(m, f, n)) != NULL) {
            /* the new nodes were made with use counts of their own: recount before erasing by count */
            axon_axir_node_t *exponent = n->operands[1]->def;
            axon_axir_replace_uses(f, n->results[0], to);
            axon_axir_func_recompute_uses(f);
            compile_erase_if_dead(f, n);
            if (exponent) compile_erase_if_dead(f, exponent);
            continue;
        }
        if (!to) continue;
        axon_axir_replace_uses(f, n->results[0], to);
        axon_axir_node_t *inner = n->operands[0]->def;
        /* a node the rewrite skipped over (the first of two cancelling permutes) may be left without uses too */
        if (compile_erase_if_dead(f, n) && inner && inner != to->def && inner->num_results == 1 &&
            axon_axir_op_class(inner->op) == AXON_AXIR_CLASS_VIEW)
            compile_erase_if_dead(f, inner);
    }
    axon_axir_func_recompute_uses(f);
    return AXON_OK;
}
