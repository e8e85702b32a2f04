/* Tier-0 steps: each node becomes one libaxon kernel launch (two for addmm with a full bias, plus a copy for operands
 * that a norm kernel needs contiguous), over descriptors built from the call's inputs, outputs and workspace. */
#include <math.h>
#include <string.h>

#include "axon/attention.h"
#include "axon/dropout.h"
#include "axon/gemm.h"
#include "axon/index.h"
#include "axon/kernels.h"
#include "axon/loss.h"
#include "axon/norm.h"
#include "axon/pointwise.h"
#include "axon/reduce.h"
#include "compile_impl.h"
#include "tier1.h"

static int norm_dim(int64_t d, int ndim) { return (int)(d < 0 ? d + ndim : d); }

static const axon_tensor_t *operand(const prog_call_t *c, const axon_axir_node_t *n, int k) {
    return k < n->num_operands ? &c->desc[n->operands[k]->id] : NULL;
}

/* t itself if contiguous, else a copy into the step's scratch buffer `temp`. */
static axon_status_t contiguous_operand(prog_call_t *c, axon_stream_t s, const axon_tensor_t *t, int temp,
                                        axon_tensor_t *out) {
    if (axon_tensor_is_contiguous(t)) {
        *out = *t;
        return AXON_OK;
    }
    if (temp < 0) return axon_fail(AXON_ERROR_INTERNAL, "compiler: a strided operand has no scratch buffer");
    prog_contiguous(out, c->ws + c->offsets[temp], t->dtype, t->ndim, t->sizes);
    return axon_kernel_copy(s, out, t);
}

static axon_status_t run_elementwise(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n) {
    const axon_tensor_t *out = &c->desc[n->results[0]->id];
    axon_tensor_t in[3];
    for (int k = 0; k < n->num_operands && k < 3; k++) prog_broadcast(operand(c, n, k), out->ndim, out->sizes, &in[k]);
    int op;
    if (n->op == AXON_AXIR_OP_CAST) return axon_kernel_copy(s, out, &in[0]);
    if (n->op == AXON_AXIR_OP_WHERE) return axon_kernel_ternary(s, AXON_TERNARY_WHERE, out, &in[0], &in[1], &in[2], NULL);
    if (compile_map_unary(n, n->op, &op)) return axon_kernel_unary(s, (axon_unary_op_t)op, out, &in[0], NULL);
    if (compile_map_binary(n, n->op, &op)) return axon_kernel_binary(s, (axon_binary_op_t)op, out, &in[0], &in[1], NULL);
    return axon_fail(AXON_ERROR_INTERNAL, "compiler: %s is not elementwise", axon_axir_op_name(n->op));
}

/* Reductions write the keepdim form of their result: the output's memory with size 1 at each reduced dimension. */
static axon_status_t run_reduction(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n) {
    const axon_tensor_t *in = operand(c, n, 0);
    const axon_tensor_t *res = &c->desc[n->results[0]->id];
    int reduced[AXON_MAX_DIMS] = {0};
    int is_arg = n->op == AXON_AXIR_OP_ARGMAX || n->op == AXON_AXIR_OP_ARGMIN;
    int dim = 0;
    if (is_arg) {
        dim = norm_dim(compile_attr_int(n, "dim", 0), in->ndim);
        if (in->ndim > 0) reduced[dim] = 1;
    } else {
        const axon_axir_attr_t *a = axon_axir_node_attr(n, "dims");
        int all = !a || a->count == 0;   /* no dims: every dimension, as PyTorch's sum(x, dim=[]) */
        for (int d = 0; d < in->ndim; d++) reduced[d] = all;
        for (int k = 0; a && k < a->count; k++) reduced[norm_dim(a->items[k].size, in->ndim)] = 1;
    }
    int64_t sizes[AXON_MAX_DIMS];
    for (int d = 0; d < in->ndim; d++) sizes[d] = reduced[d] ? 1 : in->sizes[d];
    axon_tensor_t out;
    prog_contiguous(&out, res->data, res->dtype, in->ndim, sizes);
    if (is_arg) {
        axon_tensor_t src = *in;
        if (in->ndim == 0) src.ndim = 1, src.sizes[0] = 1, src.strides[0] = 1, out.ndim = 1, out.sizes[0] = 1;
        return axon_kernel_arg_reduce(s, n->op == AXON_AXIR_OP_ARGMAX ? AXON_ARG_REDUCE_ARGMAX : AXON_ARG_REDUCE_ARGMIN,
                                      NULL, &out, &src, in->ndim == 0 ? 0 : dim);
    }
    axon_reduce_params_t rp = axon_reduce_params_default();
    axon_reduce_op_t op = AXON_REDUCE_SUM;
    switch (n->op) {
    case AXON_AXIR_OP_SUM: op = AXON_REDUCE_SUM; break;
    case AXON_AXIR_OP_PROD: op = AXON_REDUCE_PROD; break;
    case AXON_AXIR_OP_MEAN: op = AXON_REDUCE_MEAN; break;
    case AXON_AXIR_OP_AMAX: op = AXON_REDUCE_AMAX; break;
    case AXON_AXIR_OP_AMIN: op = AXON_REDUCE_AMIN; break;
    case AXON_AXIR_OP_VAR:
        op = AXON_REDUCE_VAR;
        rp.correction = (double)compile_attr_int(n, "correction", 1);
        break;
    default: return axon_fail(AXON_ERROR_INTERNAL, "compiler: %s is not a reduction", axon_axir_op_name(n->op));
    }
    return axon_kernel_reduce(s, op, &out, in, &rp);
}

static axon_status_t run_addmm(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n,
                               const axon_gemm_epilogue_t *epi) {
    const axon_tensor_t *bias = operand(c, n, 0), *a = operand(c, n, 1), *b = operand(c, n, 2);
    const axon_tensor_t *out = &c->desc[n->results[0]->id];
    axon_gemm_params_t gp = axon_gemm_params_default();
    gp.epilogue = epi;
    gp.alpha = compile_attr_float(n, "alpha", 1.0);
    double beta = compile_attr_float(n, "beta", 1.0);
    const int64_t cols = out->sizes[1];
    axon_tensor_t row;
    /* A bias that is one row ([n] or [1, n]) rides along in the GEMM; any other shape is broadcast into out first. */
    if ((bias->ndim == 1 && bias->sizes[0] == cols) || (bias->ndim == 2 && bias->sizes[0] == 1 && bias->sizes[1] == cols)) {
        memset(&row, 0, sizeof row);
        row.data = bias->data;
        row.dtype = bias->dtype;
        row.ndim = 1;
        row.sizes[0] = cols;
        row.strides[0] = bias->strides[bias->ndim - 1];
        gp.bias = &row;
        gp.bias_scale = beta;
        return axon_kernel_matmul(s, out, a, b, &gp);
    }
    if (beta != 0.0) {
        axon_tensor_t full;
        prog_broadcast(bias, out->ndim, out->sizes, &full);
        axon_status_t e = axon_kernel_copy(s, out, &full);
        if (e != AXON_OK) return e;
        gp.beta = beta;
    }
    return axon_kernel_matmul(s, out, a, b, &gp);
}

static const axon_tensor_t *result_or_null(const prog_call_t *c, const axon_axir_node_t *n, int r) {
    if (r >= n->num_results || c->p->vals[n->results[r]->id].buf < 0) return NULL;
    return &c->desc[n->results[r]->id];
}

/* The step's operands, each contiguous (in place or copied into temp k); pin[k] NULL past the node's operands. */
static axon_status_t contiguous_operands(prog_call_t *c, axon_stream_t s, const prog_step_t *st,
                                         axon_tensor_t in[PROG_MAX_TEMPS], const axon_tensor_t *pin[PROG_MAX_TEMPS]) {
    const axon_axir_node_t *n = st->node;
    for (int k = 0; k < PROG_MAX_TEMPS; k++) {
        pin[k] = NULL;
        if (k >= n->num_operands) continue;
        axon_status_t e = contiguous_operand(c, s, operand(c, n, k), st->temp[k], &in[k]);
        if (e != AXON_OK) return e;
        pin[k] = &in[k];
    }
    return AXON_OK;
}

/* The product of the trailing `normalized_ndim` sizes of t: the normalized group of the norms. */
static int64_t normalized_count(const axon_axir_node_t *n, const axon_tensor_t *t) {
    int64_t nd = compile_attr_int(n, "normalized_ndim", 1), normalized = 1;
    for (int64_t d = 0; d < nd && d < t->ndim; d++) normalized *= t->sizes[t->ndim - 1 - d];
    return normalized;
}

static axon_status_t launch_norm(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n,
                                 const axon_tensor_t *const *pin) {
    const axon_tensor_t *out = &c->desc[n->results[0]->id];
    if (n->op == AXON_AXIR_OP_SOFTMAX || n->op == AXON_AXIR_OP_LOG_SOFTMAX)
        return axon_kernel_softmax(s, out, pin[0], (int)compile_attr_int(n, "dim", -1),
                                   n->op == AXON_AXIR_OP_LOG_SOFTMAX);
    const int64_t normalized = normalized_count(n, pin[0]);
    double eps = compile_attr_float(n, "eps", 1e-5);
    if (n->op == AXON_AXIR_OP_LAYER_NORM)
        return axon_kernel_layer_norm(s, out, result_or_null(c, n, 1), result_or_null(c, n, 2), pin[0], pin[1], pin[2],
                                      normalized, eps);
    return axon_kernel_rms_norm(s, out, result_or_null(c, n, 1), pin[0], pin[1], normalized, eps);
}

static axon_status_t run_embedding(prog_call_t *c, axon_stream_t s, const prog_step_t *st) {
    const axon_axir_node_t *n = st->node;
    const axon_tensor_t *w = operand(c, n, 0), *idx = operand(c, n, 1);
    const axon_tensor_t *res = &c->desc[n->results[0]->id];
    int64_t count = axon_tensor_numel(idx);
    axon_tensor_t flat, cidx, out;
    if (!prog_restride(idx, 1, &count, &flat)) {
        axon_status_t e = contiguous_operand(c, s, idx, st->temp[0], &cidx);
        if (e != AXON_OK) return e;
        prog_restride(&cidx, 1, &count, &flat);
    }
    int64_t sizes[2] = {count, w->ndim == 2 ? w->sizes[1] : 1};
    prog_contiguous(&out, res->data, res->dtype, 2, sizes);
    return axon_kernel_index_select(s, &out, w, 0, &flat, AXON_INDEX_DEFAULT);
}

/* sdpa (its log-sum-exp in a step temp), sdpa_lse (in its second result) and sdpa_backward. With dropout the forward
 * takes its draw's Philox blocks (program_run.c), and the backward reads the seed and offset the forward's
 * philox_state gave from its last two operands when it runs (an earlier step may still be writing them). */
static axon_status_t run_sdpa(prog_call_t *c, axon_stream_t s, const prog_step_t *st) {
    const axon_axir_node_t *n = st->node;
    const int bwd = n->op == AXON_AXIR_OP_SDPA_BACKWARD, b = bwd ? 1 : 0;
    const axon_tensor_t *q = operand(c, n, b);
    axon_attention_params_t ap;
    memset(&ap, 0, sizeof ap);
    const axon_axir_attr_t *sc = axon_axir_node_attr(n, "scale");
    ap.scale = sc ? compile_attr_float(n, "scale", 1.0) : 1.0 / sqrt((double)(q->ndim == 4 ? q->sizes[3] : 1));
    ap.is_causal = (int)compile_attr_int(n, "is_causal", 0);
    ap.dropout_p = compile_attr_float(n, "dropout_p", 0.0);
    if (bwd) {
        if (ap.dropout_p > 0) {
            ap.seed_at = operand(c, n, n->num_operands - 2)->data;
            ap.offset_at = operand(c, n, n->num_operands - 1)->data;
        }
        const int mask = axon_axir_sdpa_backward_mask(n);
        return axon_kernel_attention_backward(s, &c->desc[n->results[0]->id], &c->desc[n->results[1]->id],
                                              &c->desc[n->results[2]->id], operand(c, n, 0), q, operand(c, n, 2),
                                              operand(c, n, 3), mask >= 0 ? operand(c, n, mask) : NULL,
                                              operand(c, n, 4), operand(c, n, 5), &ap);
    }
    if (ap.dropout_p > 0) {
        ap.seed = c->seed;
        ap.offset = c->draw_offset[compile_attr_int(n, "draw", 0)];
    }
    axon_tensor_t lse;
    if (n->op == AXON_AXIR_OP_SDPA_LSE) {
        lse = c->desc[n->results[1]->id];
    } else {
        int64_t ls[3] = {q->sizes[0], q->sizes[1], q->sizes[2]};
        prog_contiguous(&lse, c->ws + c->offsets[st->temp[0]], c->p->bufs[st->temp[0]].type.dtype, 3, ls);
    }
    return axon_kernel_attention(s, &c->desc[n->results[0]->id], &lse, q, operand(c, n, 1), operand(c, n, 2),
                                 operand(c, n, 3), &ap);
}

/* The training library ops: softmax and norm backwards, embedding backward, the nll_loss family and dropout. Their
 * kernels take contiguous tensors: operands are made so (temps), results have storage of their own. */
static axon_loss_reduction_t loss_reduction(const axon_axir_node_t *n) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, "reduction");
    if (a && strcmp(a->s, "none") == 0) return AXON_LOSS_NONE;
    return a && strcmp(a->s, "sum") == 0 ? AXON_LOSS_SUM : AXON_LOSS_MEAN;
}

/* t (contiguous) in the rank-2 or rank-3 form the loss kernels take, padded with 1s: logp [N, C] -> [N, C, 1],
 * [C] -> [1, C, 1]; a target or per-sample loss [N] -> [N, 1], [] -> [1, 1]. */
static axon_tensor_t loss_view(const axon_tensor_t *t, int rank) {
    int64_t sizes[3] = {1, 1, 1};
    const int lead = t->ndim == rank - 1 ? 0 : 1;   /* [C] and [] lack the batch dim, [N, C] and [N] the positions */
    for (int d = 0; d < t->ndim; d++) sizes[lead + d] = t->sizes[d];
    axon_tensor_t v;
    prog_contiguous(&v, t->data, t->dtype, rank, sizes);
    return v;
}

static axon_status_t launch_nll(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n,
                                const axon_tensor_t *const *pin) {
    const axon_loss_reduction_t red = loss_reduction(n);
    const int64_t ignore = compile_attr_int(n, "ignore_index", -100);
    const axon_tensor_t *res = &c->desc[n->results[0]->id];
    if (n->op == AXON_AXIR_OP_NLL_LOSS) {
        const axon_tensor_t x = loss_view(pin[0], 3), t = loss_view(pin[1], 2);
        const axon_tensor_t out = red == AXON_LOSS_NONE ? loss_view(res, 2) : *res;
        return axon_kernel_nll_loss(s, &out, result_or_null(c, n, 1), &x, &t, pin[2], red, ignore);
    }
    /* (grad_out, logp, target, total_weight[, weight]) */
    const axon_tensor_t gi = loss_view(res, 3), x = loss_view(pin[1], 3), t = loss_view(pin[2], 2);
    const axon_tensor_t g = red == AXON_LOSS_NONE ? loss_view(pin[0], 2) : *pin[0];
    if (n->op == AXON_AXIR_OP_NLL_LOSS_BACKWARD)
        return axon_kernel_nll_loss_backward(s, &gi, &g, &t, pin[4], pin[3], red, ignore);
    return axon_kernel_nll_loss_log_softmax_backward(s, &gi, &g, &x, &t, pin[4], pin[3], red, ignore);
}

static axon_status_t launch_backward(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n,
                                     const axon_tensor_t *const *pin) {
    const axon_tensor_t *gi = result_or_null(c, n, 0);
    switch (n->op) {
    case AXON_AXIR_OP_SOFTMAX_BACKWARD: case AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD:
        return axon_kernel_softmax_backward(s, gi, pin[0], pin[1], (int)compile_attr_int(n, "dim", -1),
                                            n->op == AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD);
    case AXON_AXIR_OP_LAYER_NORM_BACKWARD:   /* (grad_out, x, mean, rstd[, weight]) */
        return axon_kernel_layer_norm_backward(s, gi, result_or_null(c, n, 1), result_or_null(c, n, 2), pin[0], pin[1],
                                               pin[2], pin[3], pin[4], normalized_count(n, pin[1]));
    case AXON_AXIR_OP_RMS_NORM_BACKWARD:     /* (grad_out, x, rstd[, weight]) */
        return axon_kernel_rms_norm_backward(s, gi, result_or_null(c, n, 1), pin[0], pin[1], pin[2], pin[3],
                                             normalized_count(n, pin[1]));
    default: {                               /* embedding_backward(grad [..., D], indices [...]) */
        const int64_t count = axon_tensor_numel(pin[1]);
        const int64_t gs[2] = {count, pin[0]->ndim > 0 ? pin[0]->sizes[pin[0]->ndim - 1] : 1};
        axon_tensor_t g, idx;
        prog_contiguous(&g, pin[0]->data, pin[0]->dtype, 2, gs);
        prog_contiguous(&idx, pin[1]->data, pin[1]->dtype, 1, &count);
        return axon_kernel_embedding_backward(s, gi, &g, &idx, compile_attr_int(n, "padding_idx", -1));
    }
    }
}

/* dropout: the draw's Philox blocks are the call's (program_run.c), so the mask is the one eager mode draws. */
static axon_status_t launch_dropout(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n,
                                    const axon_tensor_t *const *pin) {
    const int64_t draw = compile_attr_int(n, "draw", 0);
    return axon_kernel_dropout(s, &c->desc[n->results[0]->id], &c->desc[n->results[1]->id], pin[0],
                               compile_attr_float(n, "p", 0.0), c->seed, c->draw_offset[draw]);
}

/* The library ops whose kernels take contiguous tensors only: each operand is made so (in place, or copied into the
 * step's temp of the same index), then one launch. */
static axon_status_t run_contiguous(prog_call_t *c, axon_stream_t s, const prog_step_t *st) {
    axon_tensor_t in[PROG_MAX_TEMPS];
    const axon_tensor_t *pin[PROG_MAX_TEMPS];
    axon_status_t e = contiguous_operands(c, s, st, in, pin);
    if (e != AXON_OK) return e;
    const axon_axir_node_t *n = st->node;
    switch (n->op) {
    case AXON_AXIR_OP_SOFTMAX: case AXON_AXIR_OP_LOG_SOFTMAX: case AXON_AXIR_OP_LAYER_NORM: case AXON_AXIR_OP_RMS_NORM:
        return launch_norm(c, s, n, pin);
    case AXON_AXIR_OP_NLL_LOSS: case AXON_AXIR_OP_NLL_LOSS_BACKWARD: case AXON_AXIR_OP_NLL_LOSS_LOG_SOFTMAX_BACKWARD:
        return launch_nll(c, s, n, pin);
    case AXON_AXIR_OP_DROPOUT: return launch_dropout(c, s, n, pin);
    default: return launch_backward(c, s, n, pin);
    }
}

/* philox_state: the seed and first block of a draw in this call, written in stream order (the outputs' memory may
 * still be read by earlier steps). */
static axon_status_t run_philox_state(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n) {
    const uint64_t values[2] = {c->seed, c->draw_offset[compile_attr_int(n, "draw", 0)]};
    for (int r = 0; r < 2; r++) {
        axon_status_t st = axon_kernel_fill(s, &c->desc[n->results[r]->id], axon_scalar_int((int64_t)values[r]));
        if (st != AXON_OK) return st;
    }
    return AXON_OK;
}

static axon_status_t run_const(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n) {
    const axon_tensor_t *out = &c->desc[n->results[0]->id];
    const axon_axir_attr_t *a = axon_axir_node_attr(n, "value");
    axon_scalar_t v = axon_scalar_int(0);
    if (a && a->kind == AXON_AXIR_ATTR_FLOAT) v = axon_scalar_float(a->f);
    else if (a && a->kind == AXON_AXIR_ATTR_BOOL) v = axon_scalar_bool((int)a->i);
    else if (a) v = axon_scalar_int(a->i);
    return axon_kernel_fill(s, out, v);
}

axon_tier1_fn prog_group_operands(const prog_call_t *c, const axon_axir_node_t *n, axon_tensor_t *ops) {
    for (int k = 0; k < n->num_operands; k++) ops[k] = *operand(c, n, k);
    for (int r = 0; r < n->num_results; r++) ops[n->num_operands + r] = c->desc[n->results[r]->id];
    return c->p->tier1 ? axon_tier1_lookup(c->p->tier1, n->callee) : NULL;
}

axon_status_t prog_run_gemm(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n,
                            const axon_gemm_epilogue_t *epi) {
    if (n->op == AXON_AXIR_OP_ADDMM) return run_addmm(c, s, n, epi);
    axon_gemm_params_t gp = axon_gemm_params_default();
    gp.epilogue = epi;
    return axon_kernel_matmul(s, &c->desc[n->results[0]->id], operand(c, n, 0), operand(c, n, 1), &gp);
}

axon_status_t prog_bind_results(prog_call_t *c, const axon_axir_node_t *n) {
    /* Results with storage of their own: contiguous over the workspace or the caller's output. */
    for (int r = 0; r < n->num_results; r++) {
        const axon_axir_value_t *v = n->results[r];
        int b = c->p->vals[v->id].buf;
        if (b < 0) continue;
        int64_t sizes[AXON_MAX_DIMS];
        axon_status_t e = prog_eval_type(c, &v->type, sizes);
        if (e != AXON_OK) return e;
        const prog_buf_t *pb = &c->p->bufs[b];
        void *data = pb->output >= 0 ? c->outputs[pb->output].data : c->ws + c->offsets[b];
        axon_tensor_t *t = &c->desc[v->id];
        prog_contiguous(t, data, v->type.dtype, v->type.rank, sizes);
        if (c->p->vals[v->id].swap12) {   /* [B, H, L, E] over [B, L, H, E] storage */
            t->strides[2] = sizes[1] * sizes[3];
            t->strides[1] = sizes[3];
        }
    }
    return AXON_OK;
}

axon_status_t prog_run_node(prog_call_t *c, axon_stream_t s, const prog_step_t *st) {
    const axon_axir_node_t *n = st->node;
    axon_status_t bs = prog_bind_results(c, n);
    if (bs != AXON_OK) return bs;
    switch (axon_axir_op_class(n->op)) {
    case AXON_AXIR_CLASS_ELEMENTWISE: return run_elementwise(c, s, n);
    case AXON_AXIR_CLASS_REDUCTION: return run_reduction(c, s, n);
    case AXON_AXIR_CLASS_VIEW: return prog_run_view(c, s, st);
    default: break;
    }
    const axon_tensor_t *out = &c->desc[n->results[0]->id];
    switch (n->op) {
    case AXON_AXIR_OP_CONST: return run_const(c, s, n);
    case AXON_AXIR_OP_IOTA:
        return axon_kernel_arange(s, out, axon_scalar_int(compile_attr_int(n, "start", 0)),
                                  axon_scalar_int(compile_attr_int(n, "step", 1)));
    case AXON_AXIR_OP_CONTIGUOUS: return axon_kernel_copy(s, out, operand(c, n, 0));
    case AXON_AXIR_OP_CAT: {
        axon_tensor_t ins[AXON_CAT_MAX_INPUTS];
        for (int k = 0; k < n->num_operands; k++) ins[k] = *operand(c, n, k);
        return axon_kernel_cat(s, out, ins, n->num_operands, norm_dim(compile_attr_int(n, "dim", 0), out->ndim));
    }
    case AXON_AXIR_OP_MM: case AXON_AXIR_OP_BMM: case AXON_AXIR_OP_ADDMM: return prog_run_gemm(c, s, n, NULL);
    case AXON_AXIR_OP_EMBEDDING: return run_embedding(c, s, st);
    case AXON_AXIR_OP_GATHER:
        return axon_kernel_gather(s, out, operand(c, n, 0), (int)compile_attr_int(n, "dim", 0), operand(c, n, 1),
                                  AXON_INDEX_DEFAULT);
    case AXON_AXIR_OP_INDEX_SELECT:
        return axon_kernel_index_select(s, out, operand(c, n, 0), (int)compile_attr_int(n, "dim", 0), operand(c, n, 1),
                                        AXON_INDEX_DEFAULT);
    case AXON_AXIR_OP_INDEX_COPY_INTO: {
        /* the result is the parameter itself, written where the index says (negative entries count from the end, as
         * in index_put_, which this op comes from) */
        axon_tensor_t *x = &c->desc[n->results[0]->id];
        *x = *operand(c, n, 0);
        return axon_kernel_index_copy(s, x, norm_dim(compile_attr_int(n, "dim", 0), x->ndim), operand(c, n, 1),
                                      operand(c, n, 2), AXON_INDEX_WRAP);
    }
    case AXON_AXIR_OP_SDPA: case AXON_AXIR_OP_SDPA_LSE: case AXON_AXIR_OP_SDPA_BACKWARD: return run_sdpa(c, s, st);
    case AXON_AXIR_OP_PHILOX_STATE: return run_philox_state(c, s, n);
    case AXON_AXIR_OP_SOFTMAX: case AXON_AXIR_OP_LOG_SOFTMAX: case AXON_AXIR_OP_LAYER_NORM: case AXON_AXIR_OP_RMS_NORM:
    case AXON_AXIR_OP_SOFTMAX_BACKWARD: case AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD: case AXON_AXIR_OP_LAYER_NORM_BACKWARD:
    case AXON_AXIR_OP_RMS_NORM_BACKWARD: case AXON_AXIR_OP_EMBEDDING_BACKWARD: case AXON_AXIR_OP_NLL_LOSS:
    case AXON_AXIR_OP_NLL_LOSS_BACKWARD: case AXON_AXIR_OP_NLL_LOSS_LOG_SOFTMAX_BACKWARD: case AXON_AXIR_OP_DROPOUT:
        return run_contiguous(c, s, st);
    case AXON_AXIR_OP_FUSED: {
        /* tier 1's generated function once it is loaded, else the interpreter */
        axon_tensor_t ops[FUSED_MAX_INPUTS + FUSED_MAX_OUTPUTS];
        axon_tier1_fn fn = prog_group_operands(c, n, ops);
        if (fn) return axon_tier1_launch(s, fn, n->num_operands + n->num_results, ops, out);
        return fused_launch(s, st->fused, n->num_operands, ops, n->num_results, ops + n->num_operands);
    }
    default: return axon_fail(AXON_ERROR_UNSUPPORTED, "tier 0 cannot run %s", axon_axir_op_name(n->op));
    }
}
