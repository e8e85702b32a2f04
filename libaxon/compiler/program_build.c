/* Lowering the entry function into a tier-0 program: one step per node (views only compute descriptors), copy steps
 * for outputs that cannot be written in place, and the memory plan: every value with its own storage and every step's
 * scratch gets a buffer with the range of steps it must live over. Sizes stay symbolic; program_bind.c evaluates them
 * per binding and packs the buffers into the workspace by those lifetimes. */
#include <stdlib.h>
#include <string.h>

#include "axon/index.h"
#include "axon/pointwise.h"
#include "compile_impl.h"

typedef struct build {
    axon_program_t *p;
    int cap_bufs;
    axon_axir_diag_t *diag;
} build_t;

static int add_buf(build_t *b, const axon_axir_type_t *t, int def, int last) {
    axon_program_t *p = b->p;
    if (p->num_bufs == b->cap_bufs) {
        int cap = b->cap_bufs ? 2 * b->cap_bufs : 16;
        prog_buf_t *nb = realloc(p->bufs, (size_t)cap * sizeof *nb);
        if (!nb) return -1;
        p->bufs = nb;
        b->cap_bufs = cap;
    }
    prog_buf_t *pb = &p->bufs[p->num_bufs];
    pb->type = *t;
    pb->def = def;
    pb->last = last;
    pb->output = -1;
    return p->num_bufs++;
}

/* A scratch copy of operand k for kernels that want contiguous tensors, unless it is already known contiguous. */
static int add_contig_temp(build_t *b, const axon_axir_node_t *n, int k, int step, int *slot) {
    if (k >= n->num_operands) return 0;
    const prog_val_t *v = &b->p->vals[n->operands[k]->id];
    if (v->contiguous) return 0;
    *slot = add_buf(b, &n->operands[k]->type, step, step);
    return *slot < 0 ? -1 : 0;
}

static axon_status_t check_node(build_t *b, const axon_axir_node_t *n) {
    axon_dtype_t dt = compile_node_dtype(n);
    const char *name = axon_axir_op_name(n->op);
    int k, ok = axon_compile_supports(n->op, dt);
    if (ok && compile_map_binary(n, n->op, &k)) ok = axon_binary_supports((axon_binary_op_t)k, dt);
    if (!ok)
        return compile_diag(b->diag, n, AXON_ERROR_UNSUPPORTED, "tier 0 cannot run %s on %s", name,
                            axon_axir_dtype_name(dt));
    switch (n->op) {
    case AXON_AXIR_OP_CAT:
        if (n->num_operands > AXON_CAT_MAX_INPUTS)
            return compile_diag(b->diag, n, AXON_ERROR_UNSUPPORTED, "tier 0 cannot run cat of %d inputs (at most %d)",
                                n->num_operands, AXON_CAT_MAX_INPUTS);
        break;
    case AXON_AXIR_OP_ARGMAX: case AXON_AXIR_OP_ARGMIN:
        if (!axon_axir_node_attr(n, "dim"))
            return compile_diag(b->diag, n, AXON_ERROR_UNSUPPORTED, "tier 0 cannot run %s without dim", name);
        break;
    case AXON_AXIR_OP_FUSED:
        if (n->num_operands > FUSED_MAX_INPUTS || n->num_results > FUSED_MAX_OUTPUTS)
            return compile_diag(b->diag, n, AXON_ERROR_UNSUPPORTED,
                                "tier 0 cannot run fused @%s with %d inputs and %d outputs (at most %d and %d)",
                                n->callee, n->num_operands, n->num_results, FUSED_MAX_INPUTS, FUSED_MAX_OUTPUTS);
        break;
    default: break;
    }
    return AXON_OK;
}

/* The interpreter program of callee, compiled once per kernel function. */
static axon_status_t fused_for(build_t *b, const axon_axir_node_t *n, const struct fused_prog **out) {
    axon_program_t *p = b->p;
    axon_axir_func_t *kf = axon_axir_module_find(p->module, n->callee);
    if (!kf || !kf->is_kernel)
        return compile_diag(b->diag, n, AXON_ERROR_INVALID_ARG, "fused: no kernel function @%s", n->callee);
    struct fused_prog *fp = NULL;
    axon_status_t st = fused_build(kf, &fp, b->diag);
    if (st != AXON_OK) return st;
    struct fused_prog **nf = realloc(p->fused, (size_t)(p->num_fused + 1) * sizeof *nf);
    if (!nf) {
        fused_destroy(fp);
        return compile_diag(b->diag, n, AXON_ERROR_OUT_OF_MEMORY, "fused: out of memory");
    }
    p->fused = nf;
    p->fused[p->num_fused++] = fp;
    *out = fp;
    return AXON_OK;
}

static int is_view(axon_axir_op_t op) { return axon_axir_op_class(op) == AXON_AXIR_CLASS_VIEW; }

/* Results that need storage: all but the optional ones nothing reads (the norms' statistics, the loss's total weight,
 * the norm backwards' gradients). */
static int result_needed(const axon_axir_node_t *n, int r) {
    switch (n->op) {
    case AXON_AXIR_OP_LAYER_NORM: case AXON_AXIR_OP_RMS_NORM: case AXON_AXIR_OP_NLL_LOSS:
        return r == 0 || n->results[r]->num_uses > 0;
    case AXON_AXIR_OP_LAYER_NORM_BACKWARD: case AXON_AXIR_OP_RMS_NORM_BACKWARD:
        return n->results[r]->num_uses > 0;   /* the kernels compute only the gradients asked for */
    default: return 1;
    }
}

/* 1 if every use of v is a permute by [0, 2, 1, 3] (how a model merges attention heads back: transpose(1, 2), then
 * reshape). A returned value has a use that is not a node, so it never qualifies. */
static int only_read_heads_swapped(const axon_axir_func_t *f, const axon_axir_value_t *v) {
    if (v->type.rank != 4 || v->num_uses == 0) return 0;
    int seen = 0;
    for (const axon_axir_node_t *n = f->first; n; n = n->next)
        for (int k = 0; k < n->num_operands; k++) {
            if (n->operands[k] != v) continue;
            const axon_axir_attr_t *a = axon_axir_node_attr(n, "dims");
            static const int64_t want[4] = {0, 2, 1, 3};
            int ok = n->op == AXON_AXIR_OP_PERMUTE && a && a->count == 4;
            for (int d = 0; ok && d < 4; d++) ok = !a->items[d].expr && (a->items[d].size + 4) % 4 == want[d];
            if (!ok) return 0;
            seen++;
        }
    return seen == v->num_uses;
}

static axon_status_t lower_node(build_t *b, const axon_axir_node_t *n, int i) {
    axon_program_t *p = b->p;
    prog_step_t *st = &p->steps[i];
    memset(st, 0, sizeof *st);
    st->kind = PROG_STEP_NODE;
    st->node = n;
    st->value = st->output = -1;
    for (int k = 0; k < PROG_MAX_TEMPS; k++) st->temp[k] = PROG_NO_BUF;
    axon_status_t s = check_node(b, n);
    if (s != AXON_OK) return s;
    for (int r = 0; r < n->num_results; r++) {
        prog_val_t *v = &p->vals[n->results[r]->id];
        v->v = n->results[r];
        v->input = -1;
        v->buf = PROG_NO_BUF;
        v->contiguous = 0;
    }
    int fail = 0;
    if (is_view(n->op)) {
        const prog_val_t *src = &p->vals[n->operands[0]->id];
        prog_val_t *v = &p->vals[n->results[0]->id];
        int restride = n->op == AXON_AXIR_OP_RESHAPE || n->op == AXON_AXIR_OP_SQUEEZE ||
                       n->op == AXON_AXIR_OP_UNSQUEEZE;
        v->contiguous = restride && src->contiguous;
        /* A reshape of a layout no strides can express copies into storage of its own. */
        if (n->op == AXON_AXIR_OP_RESHAPE && !src->contiguous) {
            v->buf = add_buf(b, &n->results[0]->type, i, i);
            fail |= v->buf < 0;
        }
    } else if (n->op == AXON_AXIR_OP_INDEX_COPY_INTO) {
        /* no storage: the result is the parameter it writes into (program_ops.c) */
    } else {
        for (int r = 0; r < n->num_results; r++) {
            if (!result_needed(n, r)) continue;
            prog_val_t *v = &p->vals[n->results[r]->id];
            v->buf = add_buf(b, &n->results[r]->type, i, i);
            v->contiguous = 1;
            fail |= v->buf < 0;
        }
    }
    /* attention writes its output (the backward: dq, dk, dv) in the layout the head merge after it reads (the
     * kernels take any out strides) */
    const int attn_results = n->op == AXON_AXIR_OP_SDPA || n->op == AXON_AXIR_OP_SDPA_LSE ? 1
                             : n->op == AXON_AXIR_OP_SDPA_BACKWARD                          ? 3
                                                                                            : 0;
    for (int r = 0; r < attn_results; r++) {
        if (!only_read_heads_swapped(b->p->func, n->results[r])) continue;
        prog_val_t *v = &p->vals[n->results[r]->id];
        v->swap12 = 1;
        v->contiguous = 0;
    }
    switch (n->op) {
    case AXON_AXIR_OP_SOFTMAX: case AXON_AXIR_OP_LOG_SOFTMAX:
        fail |= add_contig_temp(b, n, 0, i, &st->temp[0]);
        break;
    case AXON_AXIR_OP_LAYER_NORM: case AXON_AXIR_OP_RMS_NORM:
        for (int k = 0; k < 3; k++) fail |= add_contig_temp(b, n, k, i, &st->temp[k]);
        break;
    case AXON_AXIR_OP_EMBEDDING:
        fail |= add_contig_temp(b, n, 1, i, &st->temp[0]);
        break;
    case AXON_AXIR_OP_SOFTMAX_BACKWARD: case AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD: case AXON_AXIR_OP_LAYER_NORM_BACKWARD:
    case AXON_AXIR_OP_RMS_NORM_BACKWARD: case AXON_AXIR_OP_EMBEDDING_BACKWARD: case AXON_AXIR_OP_NLL_LOSS:
    case AXON_AXIR_OP_NLL_LOSS_BACKWARD: case AXON_AXIR_OP_NLL_LOSS_LOG_SOFTMAX_BACKWARD: case AXON_AXIR_OP_DROPOUT:
        /* these kernels take contiguous tensors only: operand k gets a copy in temp k where it may be strided */
        for (int k = 0; k < n->num_operands && k < PROG_MAX_TEMPS; k++) fail |= add_contig_temp(b, n, k, i, &st->temp[k]);
        break;
    case AXON_AXIR_OP_SDPA: {
        axon_axir_type_t lse = n->operands[0]->type;
        lse.dtype = lse.dtype == AXON_FLOAT64 ? AXON_FLOAT64 : AXON_FLOAT32;
        lse.rank = 3;
        st->temp[0] = add_buf(b, &lse, i, i);
        fail |= st->temp[0] < 0;
        break;
    }
    case AXON_AXIR_OP_FUSED: {
        axon_status_t fs = fused_for(b, n, &st->fused);
        if (fs != AXON_OK) return fs;
        break;
    }
    default: break;
    }
    if (fail) return compile_diag(b->diag, n, AXON_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    return AXON_OK;
}

static int same_type(axon_axir_module_t *m, const axon_axir_type_t *a, const axon_axir_type_t *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (!axon_axir_dim_equal(m, a->dims[d], b->dims[d])) return 0;
    return 1;
}

/* In place: a plain elementwise node writes its result over an operand that it reads for the last time, when that
 * operand has workspace storage of its own with the result's dtype and shape (libaxon's pointwise kernels accept an
 * input that is the very same view as out). The result's own buffer is then never laid out (def -1). */
static void share_in_place(axon_program_t *p, int nodes, const int *last) {
    for (int j = 0; j < nodes; j++) {
        const axon_axir_node_t *n = p->steps[j].node;
        if (axon_axir_op_class(n->op) != AXON_AXIR_CLASS_ELEMENTWISE || n->op == AXON_AXIR_OP_CAST) continue;
        prog_val_t *rv = &p->vals[n->results[0]->id];
        if (rv->buf < 0 || p->bufs[rv->buf].output >= 0) continue;
        for (int k = 0; k < n->num_operands; k++) {
            const axon_axir_value_t *o = n->operands[k];
            const prog_val_t *ov = &p->vals[o->id];
            if (ov->buf < 0 || !o->def || is_view(o->def->op) || last[o->id] != j || p->bufs[ov->buf].output >= 0)
                continue;
            if (!same_type(p->module, &o->type, &n->results[0]->type)) continue;
            p->bufs[rv->buf].def = -1;
            rv->buf = ov->buf;
            break;
        }
    }
}

/* The random nodes (dropout, attention with dropout) in draw order. Their draws must be 0, 1, ..., k - 1, each once:
 * a call takes Philox blocks for them in that order (program_run.c), the order in which eager mode would have run
 * them. A philox_state must name one of them. */
static axon_status_t collect_draws(axon_program_t *p, axon_axir_diag_t *diag) {
    int count = 0;
    for (const axon_axir_node_t *n = p->func->first; n; n = n->next) count += axon_axir_node_draws(n);
    if (count > 0) {
        p->draws = calloc((size_t)count, sizeof *p->draws);
        if (!p->draws) return compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        p->num_draws = count;
    }
    for (const axon_axir_node_t *n = p->func->first; n; n = n->next) {
        const int draws = axon_axir_node_draws(n);
        if (!draws && n->op != AXON_AXIR_OP_PHILOX_STATE) continue;
        const char *op = axon_axir_op_name(n->op);
        int64_t k = compile_attr_int(n, "draw", -1);
        if (k < 0 || k >= count)
            return compile_diag(diag, n, AXON_ERROR_INVALID_ARG,
                                "%s: draw %lld is not in [0, %d): the function's draws must be 0, 1, ... in the "
                                "order eager mode would run them", op, (long long)k, count);
        if (!draws) continue;
        if (p->draws[k])
            return compile_diag(diag, n, AXON_ERROR_INVALID_ARG, "%s: draw %lld is taken twice (line %d)", op,
                                (long long)k, p->draws[k]->line);
        p->draws[k] = n;
    }
    return AXON_OK;
}

axon_status_t program_build(axon_program_t *p, axon_axir_diag_t *diag) {
    build_t b = {p, 0, diag};
    axon_axir_func_t *f = p->func;
    axon_axir_func_recompute_uses(f);
    p->num_inputs = f->num_params;
    p->num_outputs = f->num_results;
    p->num_symbols = f->num_symbols;
    p->num_values = f->next_value_id;
    int nodes = 0;
    for (axon_axir_node_t *n = f->first; n; n = n->next) nodes++;
    p->vals = calloc((size_t)(p->num_values > 0 ? p->num_values : 1), sizeof *p->vals);
    p->steps = calloc((size_t)(nodes + f->num_results + 1), sizeof *p->steps);
    int *last = malloc((size_t)(p->num_values > 0 ? p->num_values : 1) * sizeof *last);
    if (!p->vals || !p->steps || !last) {
        free(last);
        return compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    for (int v = 0; v < p->num_values; v++) {
        p->vals[v].input = -1;
        p->vals[v].buf = PROG_NO_BUF;
        last[v] = -1;
    }
    for (int k = 0; k < f->num_params; k++) {
        prog_val_t *v = &p->vals[f->params[k]->id];
        v->v = f->params[k];
        v->input = k;
    }
    int i = 0;
    for (axon_axir_node_t *n = f->first; n; n = n->next, i++) {
        axon_status_t s = lower_node(&b, n, i);
        if (s != AXON_OK) {
            free(last);
            return s;
        }
        for (int k = 0; k < n->num_operands; k++) last[n->operands[k]->id] = i;
    }
    axon_status_t ds = collect_draws(p, diag);
    if (ds != AXON_OK) {
        free(last);
        return ds;
    }
    /* Results go straight into the caller's output buffers where a node writes them whole; inputs, views and values
     * returned twice are copied at the end. */
    for (int k = 0; k < f->num_results; k++) {
        const axon_axir_value_t *r = f->returns[k];
        prog_val_t *v = &p->vals[r->id];
        if (v->buf >= 0 && p->bufs[v->buf].output < 0 && r->def && !is_view(r->def->op)) {
            p->bufs[v->buf].output = k;
            continue;
        }
        /* A reshape, squeeze or unsqueeze of such a result (sum with keepdim, then a view without the 1) is the same
         * bytes in the same order: its source writes into the output instead. */
        if (v->buf < 0 && v->contiguous) {
            const axon_axir_value_t *src = r;
            while (src->def && compile_op_restride(src->def->op)) src = src->def->operands[0];
            prog_val_t *sv = &p->vals[src->id];
            if (src != r && sv->buf >= 0 && sv->contiguous && p->bufs[sv->buf].output < 0 && src->def &&
                !is_view(src->def->op)) {
                p->bufs[sv->buf].output = k;
                continue;
            }
        }
        prog_step_t *st = &p->steps[i];
        memset(st, 0, sizeof *st);
        st->kind = PROG_STEP_COPY_OUT;
        st->value = r->id;
        st->output = k;
        for (int t = 0; t < PROG_MAX_TEMPS; t++) st->temp[t] = PROG_NO_BUF;
        last[r->id] = i++;
    }
    p->num_steps = i;
    /* A view keeps its source's storage alive as long as the view itself is read. */
    for (int j = p->num_steps - 1; j >= 0; j--) {
        const axon_axir_node_t *n = p->steps[j].node;
        if (p->steps[j].kind != PROG_STEP_NODE || !is_view(n->op)) continue;
        int src = n->operands[0]->id, res = n->results[0]->id;
        if (last[res] > last[src]) last[src] = last[res];
    }
    share_in_place(p, nodes, last);
    for (int v = 0; v < p->num_values; v++) {
        int bi = p->vals[v].buf;
        if (bi >= 0 && last[v] > p->bufs[bi].last) p->bufs[bi].last = last[v];
    }
    free(last);
    program_plan_epilogues(p);
    return AXON_OK;
}
