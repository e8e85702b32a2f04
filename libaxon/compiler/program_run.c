/* axon_program_run: binds the call (program_bind.c), checks the caller's outputs and workspace against that binding,
 * then enqueues the steps in order. Descriptors live only for the duration of the call: every kernel copies its own at
 * launch. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../kernels/kernels_impl.h"
#include "axon/attention.h"
#include "axon/kernels.h"
#include "compile_impl.h"
#include "tier1.h"

static axon_status_t check_outputs(const prog_call_t *c, int num_outputs, const axon_tensor_t *outputs) {
    const axon_program_t *p = c->p;
    if (num_outputs != p->num_outputs || (num_outputs > 0 && !outputs))
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_run: %d outputs given, the program has %d", num_outputs,
                         p->num_outputs);
    for (int k = 0; k < num_outputs; k++) {
        const axon_axir_type_t *t = &p->func->result_types[k];
        int64_t sizes[AXON_MAX_DIMS];
        axon_status_t st = prog_eval_type(c, t, sizes);
        if (st != AXON_OK) return st;
        const axon_tensor_t *o = &outputs[k];
        int ok = o->dtype == t->dtype && o->ndim == t->rank && axon_tensor_is_contiguous(o);
        for (int d = 0; ok && d < t->rank; d++) ok = o->sizes[d] == sizes[d];
        if (!ok)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "axon_program_run: output %d is not the contiguous %s tensor of %d dimensions that "
                             "axon_program_prepare described",
                             k, axon_dtype_name(t->dtype), t->rank);
        axon_status_t cs = axon_tensor_check(o, "axon_program_run: output");
        if (cs != AXON_OK) return cs;
    }
    return AXON_OK;
}

/* The end of a queued run: drops the reference that run held. */
static void program_release(void *user) { axon_program_destroy(user); }

/* The Philox blocks draw node n takes under c's binding, as its eager kernel claims them: dropout one 32-bit lane per
 * element of its operand; attention one per score (B * Hq * L * S: q's dims but the last, times k's length). */
static axon_status_t draw_blocks(prog_call_t *c, const axon_axir_node_t *n, uint64_t *blocks) {
    const axon_axir_type_t *t = &n->operands[0]->type;
    int64_t sizes[AXON_MAX_DIMS], numel = 1;
    axon_status_t st = prog_eval_type(c, t, sizes);
    if (st != AXON_OK) return st;
    if (n->op == AXON_AXIR_OP_DROPOUT) {
        for (int d = 0; d < t->rank; d++) numel *= sizes[d];
        *blocks = axon_philox_blocks(AXON_FLOAT32, numel);
        return AXON_OK;
    }
    int64_t rows = 1, ksizes[AXON_MAX_DIMS];
    for (int d = 0; d + 1 < t->rank; d++) rows *= sizes[d];
    const axon_axir_type_t *kt = &n->operands[1]->type;
    if ((st = prog_eval_type(c, kt, ksizes)) != AXON_OK) return st;
    *blocks = axon_attention_philox_blocks(1, 1, rows, kt->rank >= 2 ? ksizes[kt->rank - 2] : 1);
    return AXON_OK;
}

/* Each draw's first Philox block under c's binding: offset, then on by the blocks of the draws before it, as eager
 * kernels run in draw order would claim them. */
static axon_status_t draw_offsets(prog_call_t *c, uint64_t offset, uint64_t *total) {
    const axon_program_t *p = c->p;
    for (int k = 0; k < p->num_draws; k++) {
        uint64_t blocks = 0;
        axon_status_t st = draw_blocks(c, p->draws[k], &blocks);
        if (st != AXON_OK) return st;
        if (c->draw_offset) c->draw_offset[k] = offset;
        offset += blocks;
        *total += blocks;
    }
    return AXON_OK;
}

AXON_API int axon_program_num_draws(const axon_program_t *p) { return p ? p->num_draws : 0; }

AXON_API axon_status_t axon_program_philox_blocks(const axon_program_t *p, int num_inputs,
                                                  const axon_tensor_t *inputs, uint64_t *blocks) {
    if (!p || !blocks) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_philox_blocks: program or blocks is NULL");
    *blocks = 0;
    if (p->num_draws == 0) return AXON_OK;
    prog_call_t c;
    axon_status_t st = prog_call_begin(p, num_inputs, inputs, &c);
    if (st != AXON_OK) return st;
    st = draw_offsets(&c, 0, blocks);
    prog_call_end(&c);
    return st;
}

static axon_status_t program_run(const axon_program_t *p, axon_stream_t s, int num_inputs, const axon_tensor_t *inputs,
                                 int num_outputs, const axon_tensor_t *outputs, void *workspace,
                                 size_t workspace_bytes, uint64_t seed, uint64_t offset) {
    prog_call_t c;
    axon_status_t st = prog_call_begin(p, num_inputs, inputs, &c);
    if (st != AXON_OK) return st;
    uint64_t offsets[64], total = 0;
    c.seed = seed;
    c.draw_offset = p->num_draws <= 64 ? offsets : malloc((size_t)p->num_draws * sizeof *c.draw_offset);
    if (!c.draw_offset) {
        prog_call_end(&c);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_program_run: out of memory");
    }
    st = draw_offsets(&c, offset, &total);
    if (st == AXON_OK) st = check_outputs(&c, num_outputs, outputs);
    /* prepare accepts inputs without data; run reads them (fused groups with no launch-time check of their own) */
    for (int k = 0; k < num_inputs && st == AXON_OK; k++) {
        char what[96];
        snprintf(what, sizeof what, "axon_program_run: input %d (%%%s)", k, p->func->params[k]->name);
        st = axon_kernel_check_src(&inputs[k], what);   /* well formed, and aligned for its dtype */
    }
    if (st == AXON_OK && c.workspace > 0 && (!workspace || workspace_bytes < c.workspace))
        st = axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_run: workspace of %zu bytes given, %zu needed",
                       workspace ? workspace_bytes : (size_t)0, c.workspace);
    if (st == AXON_OK && c.workspace > 0 && ((uintptr_t)workspace & 63) != 0)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_run: workspace %p is not 64-byte aligned", workspace);
    if (st != AXON_OK) {
        if (c.draw_offset != offsets) free(c.draw_offset);
        prog_call_end(&c);
        return st;
    }
    c.outputs = outputs;
    c.ws = workspace;
    for (int k = 0; k < p->num_inputs; k++) c.desc[p->func->params[k]->id] = inputs[k];
    for (int i = 0, next = 1; i < p->num_steps && st == AXON_OK; i = next, next = i + 1) {
        const prog_step_t *step = &p->steps[i];
        if (step->kind == PROG_STEP_COPY_OUT) st = axon_kernel_copy(s, &outputs[step->output], &c.desc[step->value]);
        else if (step->epilogue) st = prog_run_with_epilogue(&c, s, i, &next);
        else st = prog_run_node(&c, s, step);
        if (st != AXON_OK && step->node) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", axon_last_error());
            st = axon_fail(st, "axon_program_run: step %d (%s at line %d): %s", i, axon_axir_op_name(step->node->op),
                           step->node->line, msg);
        }
    }
    if (c.draw_offset != offsets) free(c.draw_offset);
    prog_call_end(&c);
    /* The queued steps may read p (fused groups, tier 1's library) until they run: hold a reference until the
     * stream reaches this point. If even that cannot be queued, wait for the stream instead. When every step already
     * ran (small steps on an idle stream run inline), there is nothing to hold, and no callback to wake the worker
     * for: the next run's small steps can then run inline too. */
    if (axon_stream_completed(s) >= axon_stream_enqueued(s)) return st;
    axon_program_t *held = (axon_program_t *)p;   /* the count is the only field a run writes */
    atomic_fetch_add_explicit(&held->refs, 1, memory_order_relaxed);
    if (axon_stream_add_callback(s, program_release, held) != AXON_OK) {
        axon_status_t sync = axon_stream_sync(s);
        axon_program_destroy(held);
        if (st == AXON_OK) st = sync;
    }
    return st;
}

AXON_API axon_status_t axon_program_run(const axon_program_t *p, axon_stream_t s, int num_inputs,
                                        const axon_tensor_t *inputs, int num_outputs, const axon_tensor_t *outputs,
                                        void *workspace, size_t workspace_bytes) {
    if (!p) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_run: program is NULL");
    if (!s) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_run: stream is NULL");
    if (p->num_draws > 0)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "axon_program_run: the program draws random numbers (%d dropout node(s)); run it with "
                         "axon_program_run_philox and the generator's seed and offset", p->num_draws);
    return program_run(p, s, num_inputs, inputs, num_outputs, outputs, workspace, workspace_bytes, 0, 0);
}

AXON_API axon_status_t axon_program_run_philox(const axon_program_t *p, axon_stream_t s, int num_inputs,
                                               const axon_tensor_t *inputs, int num_outputs,
                                               const axon_tensor_t *outputs, void *workspace, size_t workspace_bytes,
                                               uint64_t seed, uint64_t offset) {
    if (!p) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_run_philox: program is NULL");
    if (!s) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_run_philox: stream is NULL");
    return program_run(p, s, num_inputs, inputs, num_outputs, outputs, workspace, workspace_bytes, seed, offset);
}

AXON_API void axon_program_destroy(axon_program_t *p) {
    if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) return;
    axon_tier1_destroy(p->tier1);
    for (int k = 0; k < p->num_fused; k++) fused_destroy(p->fused[k]);
    free(p->fused);
    free(p->draws);
    free(p->vals);
    free(p->bufs);
    free(p->steps);
    axon_axir_module_destroy(p->module);
    free(p);
}

AXON_API int axon_program_num_inputs(const axon_program_t *p) { return p ? p->num_inputs : 0; }
AXON_API int axon_program_num_outputs(const axon_program_t *p) { return p ? p->num_outputs : 0; }
AXON_API const axon_axir_module_t *axon_program_module(const axon_program_t *p) { return p ? p->module : NULL; }
