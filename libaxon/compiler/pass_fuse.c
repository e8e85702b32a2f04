/* Fusion: runs of consecutive elementwise nodes that the tile interpreter can run (fused_can_run) and that share one
 * result shape, optionally ended by a reduction over trailing dimensions of a member's result (fused_reduce_dims),
 * become a `kernel` function and one `fused` call in its place. A run is contiguous in program order,
 * so every value a member reads from outside is defined before the run starts, and the call can take the first
 * member's place. The call returns the members' results that anything after the run (or the return) reads.
 * Runs of one node stay as they are (a library launch is just as good), except where the node reads a matrix
 * product: as a kernel it can run inside the product's command (a GEMM epilogue, program_epilogue.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "compile_impl.h"

#define FUSE_MAX_NODES (FUSED_MAX_REGS - FUSED_MAX_INPUTS)

typedef struct group {
    axon_axir_node_t *nodes[FUSED_MAX_REGS];
    int num_nodes;
    axon_axir_value_t *inputs[FUSED_MAX_INPUTS];
    int num_inputs;
    int closed;                  /* ends in a reduction: nothing more joins */
    axon_dtype_t work;           /* the members' float work dtype (fused_work); AXON_DTYPE_COUNT while none has one */
} group_t;

static int in_group(const group_t *g, const axon_axir_value_t *v) {
    for (int i = 0; i < g->num_nodes; i++)
        if (v->def == g->nodes[i]) return 1;
    return 0;
}

static int shape_equal(axon_axir_module_t *m, const axon_axir_type_t *a, const axon_axir_type_t *b) {
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (!axon_axir_dim_equal(m, a->dims[d], b->dims[d])) return 0;
    return 1;
}

/* Adds n to g if it fits: same shape and work type, and room for its outside operands. */
static int try_add(axon_axir_module_t *m, group_t *g, axon_axir_node_t *n) {
    if (g->closed) return 0;
    /* A reduction over trailing dimensions of a member's result may end the group. */
    const int reduce = !fused_can_run(n) && fused_reduce_dims(n) > 0;
    if (!reduce && !fused_can_run(n)) return 0;
    if (reduce && (g->num_nodes == 0 || !in_group(g, n->operands[0]))) return 0;
    /* Bools mix with either float work dtype; float32 and float64 members do not mix. */
    const axon_dtype_t w = reduce ? (n->operands[0]->type.dtype == AXON_FLOAT64 ? AXON_FLOAT64 : AXON_FLOAT32)
                                  : fused_work(n);
    if (g->num_nodes == 0) g->work = AXON_DTYPE_COUNT;
    if (w != AXON_BOOL && g->work != AXON_DTYPE_COUNT && w != g->work) return 0;
    if (g->num_nodes > 0) {
        const axon_axir_type_t *t0 = &g->nodes[0]->results[0]->type;
        const axon_axir_type_t *t = reduce ? &n->operands[0]->type : &n->results[0]->type;
        if (!shape_equal(m, t0, t)) return 0;
        if (g->num_nodes >= FUSE_MAX_NODES) return 0;
    }
    axon_axir_value_t *extra[3];
    int ne = 0;
    for (int k = 0; k < n->num_operands; k++) {
        axon_axir_value_t *v = n->operands[k];
        int known = in_group(g, v);
        for (int i = 0; i < g->num_inputs && !known; i++) known = g->inputs[i] == v;
        for (int i = 0; i < ne && !known; i++) known = extra[i] == v;
        if (!known) extra[ne++] = v;
    }
    if (g->num_inputs + ne > FUSED_MAX_INPUTS) return 0;
    for (int i = 0; i < ne; i++) g->inputs[g->num_inputs++] = extra[i];
    g->nodes[g->num_nodes++] = n;
    g->closed = reduce;
    if (w != AXON_BOOL) g->work = w;
    return 1;
}

/* 1 if v is read by a node outside g or returned: it has more uses than the members' operand slots that name it
 * (use counts are exact here: recomputed when the pass starts, kept by the builders since). */
static int used_outside(const group_t *g, const axon_axir_value_t *v) {
    int inside = 0;
    for (int i = 0; i < g->num_nodes; i++)
        for (int k = 0; k < g->nodes[i]->num_operands; k++) inside += g->nodes[i]->operands[k] == v;
    return v->num_uses > inside;
}

/* How f's dims read inside a kernel. A kernel binds its symbols from its parameters' dims where one stands alone
 * (the verifier and the program bind them so), so a dim whose symbols no input has alone, s1-2 of the inputs
 * x[:, 1:-1] and x[:, :-2] of a [s0, s1] parameter, becomes a symbol of the kernel's own, bound by the inputs that
 * have that dim; every other dim is renamed symbol by symbol. */
#define FUSE_MAX_COMPOUND (FUSED_MAX_INPUTS * 4)
typedef struct kernel_dims {
    const axon_axir_func_t *f;
    unsigned char *alone;        /* per symbol of f: an input has it as a whole dim */
    const axon_sym_expr_t *compound[FUSE_MAX_COMPOUND];   /* simplified, in f's symbols */
    int32_t kvar[FUSE_MAX_COMPOUND];                      /* the kernel's symbol for each; -1 until created */
    int num_compound;
} kernel_dims_t;

static int compound_index(axon_axir_module_t *m, const kernel_dims_t *kd, const axon_sym_expr_t *e) {
    const axon_sym_expr_t *s = axon_sym_simplify(m, e);
    for (int i = 0; s && i < kd->num_compound; i++)
        if (axir_sym_compare(s, kd->compound[i]) == 0) return i;
    return -1;
}

/* 1 if e can be spelled in the kernel's symbols: constants, symbols alone in an input's dim, the compound dims
 * named so far, and expressions of those. */
static int expressible(axon_axir_module_t *m, const kernel_dims_t *kd, const axon_sym_expr_t *e) {
    if (e->kind == AXON_SYM_CONST) return 1;
    if (kd->num_compound > 0 && compound_index(m, kd, e) >= 0) return 1;
    if (e->kind == AXON_SYM_VAR) return kd->alone[e->var];
    return expressible(m, kd, e->lhs) && expressible(m, kd, e->rhs);
}

/* Fills kd from g's inputs; 0 (out of memory, or too many such dims) leaves the group unfused. */
static int kernel_dims_init(axon_axir_module_t *m, const axon_axir_func_t *f, const group_t *g, kernel_dims_t *kd) {
    memset(kd, 0, sizeof *kd);
    kd->f = f;
    kd->alone = calloc((size_t)(f->num_symbols > 0 ? f->num_symbols : 1), 1);
    if (!kd->alone) return 0;
    for (int k = 0; k < g->num_inputs; k++) {
        const axon_axir_type_t *t = &g->inputs[k]->type;
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d].expr && t->dims[d].expr->kind == AXON_SYM_VAR) kd->alone[t->dims[d].expr->var] = 1;
    }
    for (int k = 0; k < g->num_inputs; k++) {
        const axon_axir_type_t *t = &g->inputs[k]->type;
        for (int d = 0; d < t->rank; d++) {
            const axon_sym_expr_t *e = t->dims[d].expr;
            if (!e || expressible(m, kd, e)) continue;
            const axon_sym_expr_t *s = axon_sym_simplify(m, e);
            if (!s || kd->num_compound == FUSE_MAX_COMPOUND) return 0;
            kd->kvar[kd->num_compound] = -1;
            kd->compound[kd->num_compound++] = s;
        }
    }
    return 1;
}

static int type_expressible(axon_axir_module_t *m, const kernel_dims_t *kd, const axon_axir_type_t *t) {
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d].expr && !expressible(m, kd, t->dims[d].expr)) return 0;
    return 1;
}

/* e in the kernel kf's symbols (created as needed: f's by name, the kernel's own as "<kernel>_d<i>"). NULL on
 * allocation failure; e must be expressible. */
static const axon_sym_expr_t *remap_expr(axon_axir_module_t *m, kernel_dims_t *kd, axon_axir_func_t *kf,
                                         const axon_sym_expr_t *e) {
    if (e->kind == AXON_SYM_CONST) return axon_sym_const(m, e->value);
    const int c = kd->num_compound > 0 ? compound_index(m, kd, e) : -1;
    if (c >= 0) {
        if (kd->kvar[c] < 0) {
            char name[80];
            snprintf(name, sizeof name, "%s_d%d", kf->name, c);
            kd->kvar[c] = axon_axir_func_symbol(m, kf, name);
        }
        return kd->kvar[c] < 0 ? NULL : axon_sym_var(m, kd->kvar[c]);
    }
    if (e->kind == AXON_SYM_VAR) {
        int32_t v = axon_axir_func_symbol(m, kf, kd->f->symbols[e->var]);
        return v < 0 ? NULL : axon_sym_var(m, v);
    }
    const axon_sym_expr_t *l = remap_expr(m, kd, kf, e->lhs), *r = remap_expr(m, kd, kf, e->rhs);
    return l && r ? axon_sym_binary(m, e->kind, l, r) : NULL;
}

static int remap_type(axon_axir_module_t *m, kernel_dims_t *kd, axon_axir_func_t *kf, axon_axir_type_t *t) {
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d].expr && !(t->dims[d].expr = remap_expr(m, kd, kf, t->dims[d].expr))) return 0;
    return 1;
}

static axon_status_t emit(axon_axir_module_t *m, axon_axir_func_t *f, group_t *g, int *counter,
                          axon_axir_diag_t *diag) {
    axon_axir_value_t *outs[FUSED_MAX_OUTPUTS + 1];
    int nout = 0;
    for (int i = 0; i < g->num_nodes; i++) {
        axon_axir_value_t *v = g->nodes[i]->results[0];
        if (!used_outside(g, v)) continue;
        if (nout == FUSED_MAX_OUTPUTS) return AXON_OK;   /* too many results: leave the run unfused */
        outs[nout++] = v;
    }
    if (nout == 0) return AXON_OK;
    kernel_dims_t kd;
    if (!kernel_dims_init(m, f, g, &kd)) {
        free(kd.alone);
        return AXON_OK;   /* leave the run unfused */
    }
    int spelled = 1;
    for (int k = 0; k < g->num_inputs && spelled; k++) spelled = type_expressible(m, &kd, &g->inputs[k]->type);
    for (int i = 0; i < g->num_nodes && spelled; i++)
        spelled = type_expressible(m, &kd, &g->nodes[i]->results[0]->type);
    if (!spelled) {
        free(kd.alone);
        return AXON_OK;   /* a dim the kernel could not bind from its inputs: leave the run unfused */
    }
    char name[64];
    do snprintf(name, sizeof name, "fused_%d", (*counter)++);
    while (axon_axir_module_find(m, name));
    axon_axir_func_t *kf = axon_axir_func_add(m, name, 1);
    axon_axir_value_t **map = calloc((size_t)(f->next_value_id > 0 ? f->next_value_id : 1), sizeof *map);
    if (!kf || !map) {
        free(map);
        free(kd.alone);
        return compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "fuse: out of memory");
    }
    axon_status_t st = AXON_OK;
    for (int k = 0; k < g->num_inputs && st == AXON_OK; k++) {
        axon_axir_type_t t = g->inputs[k]->type;
        map[g->inputs[k]->id] = remap_type(m, &kd, kf, &t) ? axon_axir_func_add_param(m, kf, NULL, &t) : NULL;
        if (!map[g->inputs[k]->id]) st = AXON_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < g->num_nodes && st == AXON_OK; i++) {
        const axon_axir_node_t *n = g->nodes[i];
        axon_axir_value_t *ops[3];
        for (int k = 0; k < n->num_operands; k++) ops[k] = map[n->operands[k]->id];
        axon_axir_type_t t = n->results[0]->type;
        axon_axir_node_t *c = remap_type(m, &kd, kf, &t) ? axon_axir_node_create(m, kf, NULL, n->op, NULL,
                                                                                 n->num_operands, ops, 1, &t,
                                                                                 n->num_attrs, n->attrs)
                                                         : NULL;
        if (!c) st = AXON_ERROR_OUT_OF_MEMORY;
        else map[n->results[0]->id] = c->results[0];
    }
    axon_axir_value_t *kouts[FUSED_MAX_OUTPUTS];
    axon_axir_type_t types[FUSED_MAX_OUTPUTS];
    for (int r = 0; r < nout; r++) {
        kouts[r] = map[outs[r]->id];
        types[r] = outs[r]->type;
    }
    if (st == AXON_OK) st = axon_axir_func_set_returns(m, kf, nout, kouts);
    free(map);
    free(kd.alone);
    axon_axir_node_t *call = NULL;
    if (st == AXON_OK) {
        const char *callee = axon_axir_strdup(m, name, strlen(name));
        call = callee ? axon_axir_node_create(m, f, g->nodes[0], AXON_AXIR_OP_FUSED, callee, g->num_inputs, g->inputs,
                                              nout, types, 0, NULL)
                      : NULL;
        if (!call) st = AXON_ERROR_OUT_OF_MEMORY;
    }
    if (st != AXON_OK) return compile_diag(diag, NULL, st, "fuse: cannot build @%s", name);
    for (int r = 0; r < nout; r++) axon_axir_replace_uses(f, outs[r], call->results[r]);
    for (int i = g->num_nodes - 1; i >= 0; i--)
        if (!compile_erase_if_dead(f, g->nodes[i]))
            return compile_diag(diag, g->nodes[i], AXON_ERROR_INTERNAL, "fuse: %s still has uses",
                                axon_axir_op_name(g->nodes[i]->op));
    return AXON_OK;
}

/* How many results of g's first k members a kernel of those k would return. */
static int prefix_outputs(const group_t *g, int k) {
    group_t p = *g;
    p.num_nodes = k;
    int nout = 0;
    for (int i = 0; i < k; i++) nout += used_outside(&p, g->nodes[i]->results[0]);
    return nout;
}

/* 1 if n reads a matrix product's result, itself or reshaped: a kernel of n alone can then be the product's
 * epilogue (program_epilogue.c), which saves a pass over the product's result. */
static int reads_product(const axon_axir_node_t *n) {
    for (int k = 0; k < n->num_operands; k++) {
        const axon_axir_value_t *v = n->operands[k];
        while (v->def && compile_op_restride(v->def->op)) v = v->def->operands[0];
        if (v->def && compile_op_product(v->def->op)) return 1;
    }
    return 0;
}

/* Emits g's members as kernels: the whole run if its results fit a kernel, else the longest leading part whose
 * results do (a run of several small parameters' updates returns more than FUSED_MAX_OUTPUTS values), then the
 * rest the same way. A run of one stays a library call unless it reads a matrix product. */
static axon_status_t flush(axon_axir_module_t *m, axon_axir_func_t *f, group_t *g, int *counter,
                           axon_axir_diag_t *diag) {
    while (g->num_nodes > 1) {
        int k = g->num_nodes;
        while (k > 1 && prefix_outputs(g, k) > FUSED_MAX_OUTPUTS) k--;
        axon_axir_node_t *rest[FUSED_MAX_REGS];
        int nrest = g->num_nodes - (k > 1 ? k : 1);
        memcpy(rest, g->nodes + g->num_nodes - nrest, (size_t)nrest * sizeof *rest);
        if (k > 1) {
            group_t head;
            memset(&head, 0, sizeof head);
            for (int i = 0; i < k; i++) try_add(m, &head, g->nodes[i]);
            axon_status_t st = emit(m, f, &head, counter, diag);
            if (st != AXON_OK) return st;
        }
        memset(g, 0, sizeof *g);
        for (int i = 0; i < nrest; i++) try_add(m, g, rest[i]);
    }
    if (g->num_nodes == 1 && !g->closed && reads_product(g->nodes[0])) return emit(m, f, g, counter, diag);
    return AXON_OK;
}

axon_status_t pass_fuse(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    int counter = 0;
    group_t g;
    memset(&g, 0, sizeof g);
    axon_axir_func_recompute_uses(f);
    for (axon_axir_node_t *n = f->first, *next; ; n = next) {
        next = n ? n->next : NULL;
        if (n && try_add(m, &g, n)) continue;
        axon_status_t st = flush(m, f, &g, &counter, diag);
        if (st != AXON_OK) return st;
        memset(&g, 0, sizeof g);
        if (!n) break;
        if (try_add(m, &g, n)) continue;
        memset(&g, 0, sizeof g);
    }
    axon_axir_func_recompute_uses(f);
    return AXON_OK;
}
