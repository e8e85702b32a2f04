/* Constant folding: an elementwise node whose operands are all 0-d constants becomes a 0-d constant. The value is
 * computed by libaxon's own pointwise loop for the node's compute dtype (kernels/pointwise_*.c), so it is the bit
 * the kernel would have produced at run time. Folded for float32, float64, int32, int64 and bool compute; float16 and
 * bfloat16 are left to run time. Constants left without uses are erased, and a 0-d constant equal to an earlier one
 * (same dtype, same bits) is replaced by it: a front end emits one per Python scalar, an optimizer step hundreds of
 * the same few, and each is a fill when the program runs. */
#include <string.h>

#include "../kernels/pointwise_impl.h"
#include "compile_impl.h"

static int foldable_dtype(axon_dtype_t d) {
    return d == AXON_FLOAT32 || d == AXON_FLOAT64 || d == AXON_INT32 || d == AXON_INT64 || d == AXON_BOOL;
}

/* The const's number as storage of dtype d. */
static int const_load(const axon_axir_node_t *k, axon_dtype_t d, pw_value_t *out) {
    const axon_axir_attr_t *a = axon_axir_node_attr(k, "value");
    if (!a) return 0;
    memset(out, 0, sizeof *out);
    if (a->kind == AXON_AXIR_ATTR_FLOAT) axon_convert_get(AXON_FLOAT64, d)((char *)out->bytes, 1, (const char *)&a->f, 1, 1);
    else if (a->kind == AXON_AXIR_ATTR_INT || a->kind == AXON_AXIR_ATTR_BOOL)
        axon_convert_get(AXON_INT64, d)((char *)out->bytes, 1, (const char *)&a->i, 1, 1);
    else return 0;
    return 1;
}

static pw_loop_fn fold_loop(const axon_axir_node_t *n, axon_dtype_t compute, pw_ctx_t *ctx) {
    int op;
    memset(ctx, 0, sizeof *ctx);
    if (n->op == AXON_AXIR_OP_WHERE) return axon_pw_ternary_loops[AXON_TERNARY_WHERE][compute];
    if (compile_map_unary(n, n->op, &op)) return axon_pw_unary_loops[op][compute];
    if (compile_map_binary(n, n->op, &op)) {
        if (op == AXON_BINARY_ADD || op == AXON_BINARY_SUB) ctx->pf[0] = 1.0f, ctx->pd[0] = 1.0, ctx->pi[0] = 1;
        return axon_pw_binary_loops[op][compute];
    }
    return NULL;
}

/* Folds n into a new const node before it; 1 on success. */
static int fold_node(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *n) {
    if (axon_axir_op_class(n->op) != AXON_AXIR_CLASS_ELEMENTWISE || n->num_results != 1) return 0;
    const axon_axir_value_t *r = n->results[0];
    if (r->type.rank != 0) return 0;
    for (int k = 0; k < n->num_operands; k++) {
        const axon_axir_node_t *d = n->operands[k]->def;
        if (!d || d->op != AXON_AXIR_OP_CONST || n->operands[k]->type.rank != 0) return 0;
    }
    axon_dtype_t rt = r->type.dtype;
    pw_value_t in[3], res;
    memset(&res, 0, sizeof res);
    if (n->op == AXON_AXIR_OP_CAST) {
        axon_dtype_t from = n->operands[0]->type.dtype;
        if (!foldable_dtype(from) || !foldable_dtype(rt) || !const_load(n->operands[0]->def, from, &in[0])) return 0;
        axon_convert_get(from, rt)((char *)res.bytes, 1, (const char *)in[0].bytes, 1, 1);
    } else {
        axon_dtype_t compute = compile_node_dtype(n);
        if (!foldable_dtype(compute) || !foldable_dtype(rt)) return 0;
        pw_ctx_t ctx;
        pw_loop_fn loop = fold_loop(n, compute, &ctx);
        if (!loop) return 0;
        const char *ins[3];
        for (int k = 0; k < n->num_operands && k < 3; k++) {
            axon_dtype_t ld = n->op == AXON_AXIR_OP_WHERE && k == 0 ? AXON_BOOL : compute;
            if (!const_load(n->operands[k]->def, ld, &in[k])) return 0;
            ins[k] = (const char *)in[k].bytes;
        }
        if (loop((char *)res.bytes, ins, 0u, 1, &ctx) != 0) return 0;   /* integer division by zero: left to run time */
    }
    axon_axir_attr_t attr;
    memset(&attr, 0, sizeof attr);
    attr.name = "value";
    if (axon_dtype_is_floating(rt)) {
        attr.kind = AXON_AXIR_ATTR_FLOAT;
        axon_convert_get(rt, AXON_FLOAT64)((char *)&attr.f, 1, (const char *)res.bytes, 1, 1);
    } else {
        attr.kind = rt == AXON_BOOL ? AXON_AXIR_ATTR_BOOL : AXON_AXIR_ATTR_INT;
        axon_convert_get(rt, AXON_INT64)((char *)&attr.i, 1, (const char *)res.bytes, 1, 1);
    }
    axon_axir_node_t *k = axon_axir_node_create(m, f, n, AXON_AXIR_OP_CONST, NULL, 0, NULL, 1, &r->type, 1, &attr);
    if (!k) return 0;
    axon_axir_replace_uses(f, n->results[0], k->results[0]);
    axon_axir_value_t *ops[3];
    int nops = n->num_operands;
    for (int j = 0; j < nops && j < 3; j++) ops[j] = n->operands[j];
    compile_erase_if_dead(f, n);
    for (int j = 0; j < nops && j < 3; j++) {
        int seen = 0;
        for (int i = 0; i < j; i++) seen |= ops[i] == ops[j];
        if (!seen && ops[j]->def) compile_erase_if_dead(f, ops[j]->def);
    }
    return 1;
}

static int same_const(const axon_axir_node_t *a, const axon_axir_node_t *b) {
    if (a->results[0]->type.dtype != b->results[0]->type.dtype) return 0;
    const axon_axir_attr_t *x = axon_axir_node_attr(a, "value"), *y = axon_axir_node_attr(b, "value");
    if (!x || !y || x->kind != y->kind) return 0;
    if (x->kind == AXON_AXIR_ATTR_FLOAT) return memcmp(&x->f, &y->f, sizeof x->f) == 0;
    return (x->kind == AXON_AXIR_ATTR_INT || x->kind == AXON_AXIR_ATTR_BOOL) && x->i == y->i;
}

#define FOLD_MAX_DISTINCT 256   /* distinct 0-d constants compared against (a linear search) */

static void merge_equal_constants(axon_axir_func_t *f) {
    axon_axir_node_t *seen[FOLD_MAX_DISTINCT];
    int nseen = 0;
    for (axon_axir_node_t *n = f->first, *next; n; n = next) {
        next = n->next;
        if (n->op != AXON_AXIR_OP_CONST || n->num_results != 1 || n->results[0]->type.rank != 0) continue;
        int i = 0;
        while (i < nseen && !same_const(seen[i], n)) i++;
        if (i < nseen) {
            axon_axir_replace_uses(f, n->results[0], seen[i]->results[0]);
            compile_erase_if_dead(f, n);
        } else if (nseen < FOLD_MAX_DISTINCT) {
            seen[nseen++] = n;
        }
    }
}

axon_status_t pass_fold(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    (void)diag;
    axon_axir_func_recompute_uses(f);
    for (axon_axir_node_t *n = f->first, *next; n; n = next) {
        next = n->next;
        fold_node(m, f, n);
    }
    merge_equal_constants(f);
    axon_axir_func_recompute_uses(f);
    return AXON_OK;
}
