/* A kernel function (a fused group) compiled for the tile interpreter (fused_exec.c): one register per value, each a
 * tile of work-type numbers (float for float32/float16/bfloat16 groups, double for float64) or of bools, and one instruction
 * per node: a loop of libaxon's pointwise tables (kernels/pointwise_*.c) for the work dtype, or a cast, which rounds
 * the register through its target dtype. Inputs convert to the work type when loaded and outputs on store, so
 * intermediates stay in registers and never reach memory. */
#include <stdlib.h>
#include <string.h>

#include "fused_impl.h"

static axon_dtype_t work_of(axon_dtype_t d) {
    if (d == AXON_FLOAT32 || d == AXON_FLOAT16 || d == AXON_BFLOAT16) return AXON_FLOAT32;
    if (d == AXON_FLOAT64) return AXON_FLOAT64;
    if (d == AXON_BOOL) return AXON_BOOL;
    return AXON_DTYPE_COUNT;
}

static int is_float_work(axon_dtype_t w) { return w == AXON_FLOAT32 || w == AXON_FLOAT64; }

/* The float work dtype node n computes in (AXON_BOOL for a node on bools only), its loop and parameters, or
 * AXON_DTYPE_COUNT if the interpreter cannot run it. Registers hold floats of the work dtype or bools (one byte): the
 * comparisons and isnan make a bool from floats, the logical ops combine bools, where picks floats by a bool. */
static axon_dtype_t node_work(const axon_axir_node_t *n, pw_loop_fn *loop, int *is_cast, pw_ctx_t *ctx) {
    int op;
    *loop = NULL;
    *is_cast = 0;
    memset(ctx, 0, sizeof *ctx);
    if (axon_axir_op_class(n->op) != AXON_AXIR_CLASS_ELEMENTWISE || n->num_results != 1 || n->num_operands > 3)
        return AXON_DTYPE_COUNT;
    axon_dtype_t r = work_of(n->results[0]->type.dtype), w[3] = {AXON_DTYPE_COUNT, AXON_DTYPE_COUNT, AXON_DTYPE_COUNT};
    for (int k = 0; k < n->num_operands; k++) w[k] = work_of(n->operands[k]->type.dtype);
    switch (n->op) {
    case AXON_AXIR_OP_CAST:   /* among floats of one work dtype, and between those and bool (mask.float()) */
        *is_cast = 1;
        if (is_float_work(r) && (w[0] == r || w[0] == AXON_BOOL)) return r;
        return r == AXON_BOOL && is_float_work(w[0]) ? w[0] : AXON_DTYPE_COUNT;
    case AXON_AXIR_OP_EQ: case AXON_AXIR_OP_NE: case AXON_AXIR_OP_LT: case AXON_AXIR_OP_LE: case AXON_AXIR_OP_GT:
    case AXON_AXIR_OP_GE:
        if (r != AXON_BOOL || !is_float_work(w[0]) || w[1] != w[0]) return AXON_DTYPE_COUNT;
        compile_map_binary(n, n->op, &op);
        *loop = axon_pw_binary_loops[op][w[0]];
        return *loop ? w[0] : AXON_DTYPE_COUNT;
    case AXON_AXIR_OP_ISNAN:
        if (r != AXON_BOOL || !is_float_work(w[0])) return AXON_DTYPE_COUNT;
        *loop = axon_pw_unary_loops[AXON_UNARY_ISNAN][w[0]];
        return *loop ? w[0] : AXON_DTYPE_COUNT;
    case AXON_AXIR_OP_LOGICAL_AND: case AXON_AXIR_OP_LOGICAL_OR:
        if (r != AXON_BOOL || w[0] != AXON_BOOL || w[1] != AXON_BOOL) return AXON_DTYPE_COUNT;
        compile_map_binary(n, n->op, &op);
        *loop = axon_pw_binary_loops[op][AXON_BOOL];
        return *loop ? AXON_BOOL : AXON_DTYPE_COUNT;
    case AXON_AXIR_OP_LOGICAL_NOT:
        if (r != AXON_BOOL || w[0] != AXON_BOOL) return AXON_DTYPE_COUNT;
        *loop = axon_pw_unary_loops[AXON_UNARY_LOGICAL_NOT][AXON_BOOL];
        return *loop ? AXON_BOOL : AXON_DTYPE_COUNT;
    case AXON_AXIR_OP_WHERE:
        if (!is_float_work(r) || w[0] != AXON_BOOL || w[1] != r || w[2] != r) return AXON_DTYPE_COUNT;
        *loop = axon_pw_ternary_loops[AXON_TERNARY_WHERE][r];
        return *loop ? r : AXON_DTYPE_COUNT;
    default: break;
    }
    if (!is_float_work(r)) return AXON_DTYPE_COUNT;
    for (int k = 0; k < n->num_operands; k++)
        if (w[k] != r) return AXON_DTYPE_COUNT;
    if (compile_map_unary(n, n->op, &op)) {
        if (op != AXON_UNARY_BITWISE_NOT) *loop = axon_pw_unary_loops[op][r];
    } else if (compile_map_binary(n, n->op, &op)) {
        if (op == AXON_BINARY_ADD || op == AXON_BINARY_SUB) ctx->pf[0] = 1.0f, ctx->pd[0] = 1.0, ctx->pi[0] = 1;
        *loop = axon_pw_binary_loops[op][r];
    }
    return *loop ? r : AXON_DTYPE_COUNT;
}

int fused_can_run(const axon_axir_node_t *n) { return fused_work(n) != AXON_DTYPE_COUNT; }

axon_dtype_t fused_work(const axon_axir_node_t *n) {
    pw_loop_fn loop;
    int is_cast;
    pw_ctx_t ctx;
    return node_work(n, &loop, &is_cast, &ctx);
}

int fused_reduce_dims(const axon_axir_node_t *n) {
    if (n->op != AXON_AXIR_OP_SUM && n->op != AXON_AXIR_OP_MEAN && n->op != AXON_AXIR_OP_AMAX &&
        n->op != AXON_AXIR_OP_AMIN)
        return 0;
    if (n->num_operands != 1 || n->num_results != 1) return 0;
    axon_dtype_t w = work_of(n->operands[0]->type.dtype);
    if (w == AXON_DTYPE_COUNT || work_of(n->results[0]->type.dtype) != w) return 0;
    const int rank = n->operands[0]->type.rank;
    const axon_axir_attr_t *a = axon_axir_node_attr(n, "dims");
    if (!a || a->count == 0) return rank;
    int reduced[AXON_MAX_DIMS] = {0}, k = 0;
    for (int i = 0; i < a->count; i++) {
        int64_t d = a->items[i].size < 0 ? a->items[i].size + rank : a->items[i].size;
        if (a->items[i].expr || d < 0 || d >= rank) return 0;
        reduced[d] = 1;
    }
    while (k < rank && reduced[rank - 1 - k]) k++;
    for (int d = 0; d < rank - k; d++)
        if (reduced[d]) return 0;    /* not a trailing set */
    return k;
}

void fused_destroy(struct fused_prog *fp) {
    if (!fp) return;
    free(fp->insns);
    free(fp);
}

axon_status_t fused_build(const axon_axir_func_t *kf, struct fused_prog **out, axon_axir_diag_t *diag) {
    *out = NULL;
    if (kf->num_params > FUSED_MAX_INPUTS || kf->num_results > FUSED_MAX_OUTPUTS || kf->num_results < 1)
        return compile_diag(diag, NULL, AXON_ERROR_UNSUPPORTED,
                            "tier 0 cannot run kernel @%s: %d inputs and %d outputs (at most %d and %d)", kf->name,
                            kf->num_params, kf->num_results, FUSED_MAX_INPUTS, FUSED_MAX_OUTPUTS);
    fused_prog_t *fp = calloc(1, sizeof *fp);
    int *reg = malloc((size_t)(kf->next_value_id > 0 ? kf->next_value_id : 1) * sizeof *reg);
    int nodes = 0;
    for (const axon_axir_node_t *n = kf->first; n; n = n->next) nodes++;
    if (fp) fp->insns = calloc((size_t)(nodes > 0 ? nodes : 1), sizeof *fp->insns);
    if (!fp || !reg || !fp->insns) {
        free(reg);
        fused_destroy(fp);
        return compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "fused: out of memory");
    }
    axon_status_t st = AXON_OK;
    /* The group's float work dtype: the first a node computes in (bools are neutral). */
    fp->work = AXON_FLOAT32;
    for (const axon_axir_node_t *n = kf->first; n; n = n->next) {
        axon_dtype_t w = fused_reduce_dims(n) > 0 ? work_of(n->operands[0]->type.dtype) : fused_work(n);
        if (is_float_work(w)) {
            fp->work = w;
            break;
        }
    }
    fp->num_inputs = kf->num_params;
    fp->num_outputs = kf->num_results;
    for (int k = 0; k < kf->num_params && st == AXON_OK; k++) {
        axon_dtype_t d = kf->params[k]->type.dtype, rd = work_of(d) == AXON_BOOL ? AXON_BOOL : fp->work;
        if (work_of(d) != rd)
            st = compile_diag(diag, NULL, AXON_ERROR_UNSUPPORTED, "tier 0 cannot run kernel @%s: input %d is %s", kf->name,
                              k, axon_axir_dtype_name(d));
        else fp->load[k] = axon_convert_get(d, rd);
        fp->direct[k] = d == rd;
        fp->reg_dtype[k] = rd;
        reg[kf->params[k]->id] = k;
    }
    int nregs = kf->num_params;
    const axon_axir_value_t *reduced = NULL;
    fp->reduce_op = AXON_AXIR_OP_INVALID;
    fp->reduce_in = fp->reduce_out = -1;
    for (const axon_axir_node_t *n = kf->first; n && st == AXON_OK; n = n->next) {
        fused_insn_t *in = &fp->insns[fp->num_insns];
        int is_cast;
        if (!n->next && fused_reduce_dims(n) > 0 && work_of(n->operands[0]->type.dtype) == fp->work) {
            fp->reduce_op = n->op;
            fp->reduce_in = reg[n->operands[0]->id];
            fp->reduce_dims = fused_reduce_dims(n);
            reduced = n->results[0];
            break;
        }
        axon_dtype_t w = node_work(n, &in->loop, &is_cast, &in->ctx);
        if (w == AXON_DTYPE_COUNT || (w != AXON_BOOL && w != fp->work)) {
            st = compile_diag(diag, n, AXON_ERROR_UNSUPPORTED, "tier 0 cannot run %s on %s inside kernel @%s",
                              axon_axir_op_name(n->op), axon_axir_dtype_name(n->results[0]->type.dtype), kf->name);
            break;
        }
        if (nregs >= FUSED_MAX_REGS) {
            st = compile_diag(diag, n, AXON_ERROR_UNSUPPORTED, "tier 0 cannot run kernel @%s: more than %d values",
                              kf->name, FUSED_MAX_REGS);
            break;
        }
        in->arity = n->num_operands;
        for (int k = 0; k < n->num_operands; k++) in->in[k] = reg[n->operands[k]->id];
        in->out = reg[n->results[0]->id] = nregs++;
        axon_dtype_t to = n->results[0]->type.dtype;
        fp->reg_dtype[in->out] = to == AXON_BOOL ? AXON_BOOL : fp->work;
        in->round_to = AXON_DTYPE_COUNT;
        in->convert = NULL;
        if (is_cast && fp->reg_dtype[in->in[0]] != fp->reg_dtype[in->out])
            in->convert = axon_convert_get(fp->reg_dtype[in->in[0]], fp->reg_dtype[in->out]);
        if (is_cast && (to == AXON_FLOAT16 || to == AXON_BFLOAT16)) {
            in->round_to = to;
            in->round_down = axon_convert_get(fp->work, to);
            in->round_up = axon_convert_get(to, fp->work);
        }
        fp->num_insns++;
    }
    for (int r = 0; r < kf->num_results && st == AXON_OK; r++) {
        axon_dtype_t d = kf->result_types[r].dtype;
        axon_dtype_t rd = fp->work;
        if (kf->returns[r] == reduced) {
            fp->out_reg[r] = -1;
            fp->reduce_out = r;
        } else {
            fp->out_reg[r] = reg[kf->returns[r]->id];
            rd = fp->reg_dtype[fp->out_reg[r]];
        }
        fp->store[r] = axon_convert_get(rd, d);
        fp->store_direct[r] = d == rd && fp->out_reg[r] >= kf->num_params;
    }
    fp->num_regs = nregs;
    free(reg);
    if (st != AXON_OK) {
        fused_destroy(fp);
        return st;
    }
    *out = fp;
    return AXON_OK;
}
