/* One call's binding: symbols read from the inputs' shapes (checked against the parameter types), every buffer's
 * size under that binding, and the workspace layout: buffers in order of their first step, each placed at the lowest
 * 64-byte aligned offset that no buffer still alive at that step occupies. The program is never written, so any
 * number of threads may prepare and run it at once. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compile_impl.h"

#define PROG_ALIGN 64

void prog_contiguous(axon_tensor_t *t, void *data, axon_dtype_t dtype, int ndim, const int64_t *sizes) {
    memset(t, 0, sizeof *t);
    t->data = data;
    t->dtype = dtype;
    t->ndim = ndim;
    int64_t step = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t->sizes[d] = sizes[d];
        t->strides[d] = step;
        step *= sizes[d] > 0 ? sizes[d] : 1;
    }
}

axon_status_t prog_eval_type(const prog_call_t *c, const axon_axir_type_t *t, int64_t *sizes) {
    for (int d = 0; d < t->rank; d++) {
        if (!t->dims[d].expr) {
            sizes[d] = t->dims[d].size;
            continue;
        }
        axon_status_t s = axon_sym_eval(t->dims[d].expr, c->syms, c->p->num_symbols, &sizes[d]);
        if (s != AXON_OK) return axon_fail(s, "axon_program: dimension %d cannot be evaluated: %s", d, axon_last_error());
        if (sizes[d] < 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program: dimension %d evaluates to %" PRId64, d, sizes[d]);
    }
    return AXON_OK;
}

static const char *sym_name(const axon_program_t *p, int var) {
    return var >= 0 && var < p->func->num_symbols ? p->func->symbols[var] : "?";
}

/* Binds each symbol from the first parameter dimension that is that symbol alone, then checks every dimension. */
static axon_status_t bind_symbols(prog_call_t *c, const axon_tensor_t *inputs) {
    const axon_program_t *p = c->p;
    const axon_axir_func_t *f = p->func;
    int *from = malloc((size_t)(p->num_symbols > 0 ? p->num_symbols : 1) * 2 * sizeof *from);
    if (!from) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_program_prepare: out of memory");
    for (int k = 0; k < p->num_symbols; k++) from[2 * k] = -1;
    axon_status_t st = AXON_OK;
    for (int k = 0; k < f->num_params && st == AXON_OK; k++) {
        const axon_axir_value_t *pv = f->params[k];
        const axon_tensor_t *in = &inputs[k];
        if (in->dtype != pv->type.dtype) {
            st = axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_prepare: input %d (%%%s) has dtype %s, expected %s", k,
                           pv->name, axon_dtype_name(in->dtype), axon_dtype_name(pv->type.dtype));
            break;
        }
        if (in->ndim != pv->type.rank) {
            st = axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_prepare: input %d (%%%s) has %d dimensions, expected %d",
                           k, pv->name, in->ndim, pv->type.rank);
            break;
        }
        for (int d = 0; d < pv->type.rank; d++) {
            const axon_sym_expr_t *e = pv->type.dims[d].expr;
            int64_t got = in->sizes[d];
            if (!e && got != pv->type.dims[d].size) {
                st = axon_fail(AXON_ERROR_INVALID_ARG,
                               "axon_program_prepare: input %d (%%%s) dim %d has size %" PRId64 ", expected %" PRId64, k,
                               pv->name, d, got, pv->type.dims[d].size);
                break;
            }
            if (!e || e->kind != AXON_SYM_VAR || e->var < 0 || e->var >= p->num_symbols) continue;
            int v = e->var;
            if (from[2 * v] < 0) {
                c->syms[v] = got;
                from[2 * v] = k;
                from[2 * v + 1] = d;
            } else if (c->syms[v] != got) {
                st = axon_fail(AXON_ERROR_INVALID_ARG,
                               "axon_program_prepare: input %d (%%%s) dim %d has size %" PRId64 ", but symbol %s is %" PRId64
                               " from input %d dim %d",
                               k, pv->name, d, got, sym_name(p, v), c->syms[v], from[2 * v], from[2 * v + 1]);
                break;
            }
        }
    }
    for (int v = 0; v < p->num_symbols && st == AXON_OK; v++)
        if (from[2 * v] < 0)
            st = axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_prepare: symbol %s is not bound by any input",
                           sym_name(p, v));
    free(from);
    /* Dimensions that are expressions of symbols (%x: f32[s0, s0*2]) must agree with their evaluation. */
    for (int k = 0; k < f->num_params && st == AXON_OK; k++) {
        const axon_axir_value_t *pv = f->params[k];
        int64_t want[AXON_MAX_DIMS];
        st = prog_eval_type(c, &pv->type, want);
        for (int d = 0; d < pv->type.rank && st == AXON_OK; d++)
            if (want[d] != inputs[k].sizes[d])
                st = axon_fail(AXON_ERROR_INVALID_ARG,
                               "axon_program_prepare: input %d (%%%s) dim %d has size %" PRId64 ", expected %" PRId64, k,
                               pv->name, d, inputs[k].sizes[d], want[d]);
    }
    return st;
}

static size_t buf_bytes(const prog_call_t *c, const prog_buf_t *b, axon_status_t *st) {
    int64_t sizes[AXON_MAX_DIMS];
    *st = prog_eval_type(c, &b->type, sizes);
    if (*st != AXON_OK) return 0;
    uint64_t n = axon_dtype_size(b->type.dtype);
    for (int d = 0; d < b->type.rank; d++) {
        if (sizes[d] != 0 && n > UINT64_MAX / 4 / (uint64_t)sizes[d]) {
            *st = axon_fail(AXON_ERROR_INVALID_ARG, "axon_program: a buffer's size overflows");
            return 0;
        }
        n *= (uint64_t)sizes[d];
    }
    return (size_t)((n + PROG_ALIGN - 1) / PROG_ALIGN * PROG_ALIGN);
}

/* Greedy first fit by lifetime: buffers are visited in order of their first step (they were created in that order). */
static axon_status_t layout(prog_call_t *c) {
    const axon_program_t *p = c->p;
    size_t *size = calloc((size_t)(p->num_bufs > 0 ? p->num_bufs : 1), sizeof *size);
    int *live = malloc((size_t)(p->num_bufs > 0 ? p->num_bufs : 1) * sizeof *live);
    if (!size || !live) {
        free(size);
        free(live);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_program: out of memory");
    }
    axon_status_t st = AXON_OK;
    int nlive = 0;
    size_t total = 0;
    for (int b = 0; b < p->num_bufs && st == AXON_OK; b++) {
        const prog_buf_t *pb = &p->bufs[b];
        c->offsets[b] = 0;
        if (pb->output >= 0 || pb->def < 0) continue;   /* the caller's output, or merged into another (in place) */
        size[b] = buf_bytes(c, pb, &st);
        if (st != AXON_OK || size[b] == 0) continue;
        int keep = 0;
        for (int j = 0; j < nlive; j++)
            if (p->bufs[live[j]].last >= pb->def) live[keep++] = live[j];
        nlive = keep;
        /* live[] is kept sorted by offset: try each gap in turn. */
        size_t at = 0;
        int pos = 0;
        for (; pos < nlive; pos++) {
            size_t o = c->offsets[live[pos]];
            if (o >= at + size[b]) break;
            if (o + size[live[pos]] > at) at = o + size[live[pos]];
        }
        c->offsets[b] = at;
        memmove(live + pos + 1, live + pos, (size_t)(nlive - pos) * sizeof *live);
        live[pos] = b;
        nlive++;
        if (at + size[b] > total) total = at + size[b];
    }
    c->workspace = total;
    free(size);
    free(live);
    return st;
}

axon_status_t prog_call_begin(const axon_program_t *p, int num_inputs, const axon_tensor_t *inputs, prog_call_t *c) {
    memset(c, 0, sizeof *c);
    c->p = p;
    if (num_inputs != p->num_inputs)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program: %d inputs given, the program takes %d", num_inputs,
                         p->num_inputs);
    if (num_inputs > 0 && !inputs) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program: inputs is NULL");
    c->inputs = inputs;
    c->syms = calloc((size_t)(p->num_symbols > 0 ? p->num_symbols : 1), sizeof *c->syms);
    c->offsets = calloc((size_t)(p->num_bufs > 0 ? p->num_bufs : 1), sizeof *c->offsets);
    c->desc = calloc((size_t)(p->num_values > 0 ? p->num_values : 1), sizeof *c->desc);
    if (!c->syms || !c->offsets || !c->desc) {
        prog_call_end(c);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_program: out of memory");
    }
    axon_status_t st = bind_symbols(c, inputs);
    if (st == AXON_OK) st = layout(c);
    if (st != AXON_OK) prog_call_end(c);
    return st;
}

void prog_call_end(prog_call_t *c) {
    free(c->syms);
    free(c->offsets);
    free(c->desc);
    c->syms = NULL;
    c->offsets = NULL;
    c->desc = NULL;
}

AXON_API axon_status_t axon_program_prepare(const axon_program_t *p, int num_inputs, const axon_tensor_t *inputs,
                                            int num_outputs, axon_tensor_t *outputs, size_t *workspace_bytes) {
    if (!p) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_prepare: program is NULL");
    if (num_outputs != p->num_outputs || (num_outputs > 0 && !outputs))
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_prepare: %d outputs given, the program has %d",
                         num_outputs, p->num_outputs);
    prog_call_t c;
    axon_status_t st = prog_call_begin(p, num_inputs, inputs, &c);
    if (st != AXON_OK) return st;
    for (int k = 0; k < num_outputs && st == AXON_OK; k++) {
        const axon_axir_type_t *t = &p->func->result_types[k];
        int64_t sizes[AXON_MAX_DIMS];
        st = prog_eval_type(&c, t, sizes);
        if (st == AXON_OK) prog_contiguous(&outputs[k], NULL, t->dtype, t->rank, sizes);
    }
    if (st == AXON_OK && workspace_bytes) *workspace_bytes = c.workspace;
    prog_call_end(&c);
    return st;
}
