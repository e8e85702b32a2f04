/* GEMM epilogues: a fused elementwise group that reads a matrix product's result (an addmm then gelu, a projection
 * then its residual add) runs inside the product's command, on each block of rows as the product finishes it
 * (axon/gemm.h), while the rows are still in cache, instead of as a command of its own over the whole result.
 *
 * Planned when the program is built: the group must follow the product with only view steps between, must not end in
 * a reduction, and must read the product (or reshapes of it) element for element. Checked again at each run, where
 * the layouts are known: the product is contiguous and the group reads it in its own row-major order over the same
 * number of elements (so the product's rows are ranges of the group's iteration space), and the group writes no
 * memory that the product reads (a buffer the plan reuses could be A while other threads still pack it). A run that
 * fails a check launches the two commands as before. */
#include <stdlib.h>
#include <string.h>

#include "fused_impl.h"
#include "tier1.h"

static int in_set(const int *set, int n, int id) {
    for (int k = 0; k < n; k++)
        if (set[k] == id) return 1;
    return 0;
}

void program_plan_epilogues(axon_program_t *p) {
    const char *env = getenv("AXON_GEMM_EPILOGUE");   /* "0": plan none (for comparisons; read per compile) */
    if (env && strcmp(env, "0") == 0) return;
    for (int i = 0; i < p->num_steps; i++) {
        prog_step_t *st = &p->steps[i];
        if (st->kind != PROG_STEP_NODE || !compile_op_product(st->node->op)) continue;
        int chain[16], nchain = 0;   /* the product and its reshapes */
        chain[nchain++] = st->node->results[0]->id;
        for (int j = i + 1; j < p->num_steps; j++) {
            const prog_step_t *sj = &p->steps[j];
            if (sj->kind != PROG_STEP_NODE) break;
            const axon_axir_node_t *n = sj->node;
            if (axon_axir_op_class(n->op) == AXON_AXIR_CLASS_VIEW) {
                if (!in_set(chain, nchain, n->operands[0]->id)) continue;   /* a view of another value */
                if (!compile_op_restride(n->op) || nchain == 16) break;               /* reorders the product */
                chain[nchain++] = n->results[0]->id;
                continue;
            }
            int reads = 0;
            for (int k = 0; k < n->num_operands; k++) reads |= in_set(chain, nchain, n->operands[k]->id);
            if (n->op == AXON_AXIR_OP_FUSED && sj->fused && sj->fused->reduce_op == AXON_AXIR_OP_INVALID && reads)
                st->epilogue = j;
            break;
        }
    }
}

static int overlaps(const axon_tensor_t *a, const axon_tensor_t *b) {
    uintptr_t alo, ahi, blo, bhi;
    axon_tensor_extent(a, &alo, &ahi);
    axon_tensor_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

/* t is prod's memory in prod's order, with the iteration's shape (no broadcast). */
static int same_elements(const axon_tensor_t *t, const axon_tensor_t *prod, const axon_tensor_t *iter) {
    if (t->data != prod->data || t->dtype != prod->dtype || t->ndim != iter->ndim || !axon_tensor_is_contiguous(t))
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] != iter->sizes[d]) return 0;
    return axon_tensor_numel(t) == axon_tensor_numel(prod);
}

/* Whether group node g may run inside product node n's command in this call (see the top of this file). */
static int fits(const prog_call_t *c, const axon_axir_node_t *n, const axon_axir_node_t *g) {
    const axon_tensor_t *prod = &c->desc[n->results[0]->id], *iter = &c->desc[g->results[0]->id];
    if (!axon_tensor_is_contiguous(prod) || axon_tensor_numel(iter) != axon_tensor_numel(prod)) return 0;
    int reads = 0;
    for (int k = 0; k < g->num_operands; k++) {
        const axon_tensor_t *t = &c->desc[g->operands[k]->id];
        if (!overlaps(t, prod)) continue;
        if (!same_elements(t, prod, iter)) return 0;   /* read in another order, or broadcast */
        reads = 1;
    }
    if (!reads) return 0;
    for (int r = 0; r < g->num_results; r++) {
        const axon_tensor_t *o = &c->desc[g->results[r]->id];
        if (overlaps(o, prod) && !same_elements(o, prod, iter)) return 0;   /* in place, element for element, only */
        for (int k = 0; k < n->num_operands; k++)
            if (overlaps(o, &c->desc[n->operands[k]->id])) return 0;
    }
    return 1;
}

axon_status_t prog_run_with_epilogue(prog_call_t *c, axon_stream_t s, int i, int *next) {
    const prog_step_t *st = &c->p->steps[i], *gs = &c->p->steps[st->epilogue];
    const axon_axir_node_t *n = st->node, *g = gs->node;
    axon_status_t e = prog_bind_results(c, n);
    /* The views in between only compute descriptors (reshapes of the contiguous product never copy; a view of another
     * value that copies reads what earlier steps made), so they may run before the product is launched. */
    for (int j = i + 1; e == AXON_OK && j < st->epilogue; j++) e = prog_run_node(c, s, &c->p->steps[j]);
    if (e == AXON_OK) e = prog_bind_results(c, g);
    if (e != AXON_OK) return e;
    if (!fits(c, n, g)) {
        *next = st->epilogue;
        return prog_run_gemm(c, s, n, NULL);
    }
    axon_tensor_t ops[FUSED_MAX_INPUTS + FUSED_MAX_OUTPUTS];
    axon_tier1_fn fn = prog_group_operands(c, g, ops);
    _Alignas(16) unsigned char ctx[AXON_GEMM_EPILOGUE_MAX];
    axon_gemm_epilogue_t epi;
    if (fn) e = axon_tier1_epilogue(fn, g->num_operands + g->num_results, ops, &c->desc[g->results[0]->id], ctx, &epi);
    else e = fused_epilogue(gs->fused, g->num_operands, ops, g->num_results, ops + g->num_operands, ctx, &epi);
    if (e != AXON_OK) return e;
    *next = st->epilogue + 1;
    return prog_run_gemm(c, s, n, &epi);
}
