/* View ops as descriptor arithmetic: permute, expand, slice and select change strides and the data pointer; reshape,
 * squeeze and unsqueeze find strides for the new sizes over the same memory, and reshape copies into its own buffer
 * only when the source's layout admits no such strides (a transposed tensor flattened, say). */
#include <string.h>

#include "axon/kernels.h"
#include "compile_impl.h"

void prog_broadcast(const axon_tensor_t *t, int ndim, const int64_t *sizes, axon_tensor_t *out) {
    axon_tensor_t r;
    memset(&r, 0, sizeof r);
    r.data = t->data;
    r.dtype = t->dtype;
    r.ndim = ndim;
    int lead = ndim - t->ndim;
    for (int d = 0; d < ndim; d++) {
        r.sizes[d] = sizes[d];
        int j = d - lead;
        r.strides[d] = j < 0 || (t->sizes[j] == 1 && sizes[d] != 1) ? 0 : t->strides[j];
    }
    *out = r;
}

/* Strides for `sizes` over src's memory: the sizes must split or merge runs of src's dimensions that are laid out
 * contiguously with respect to each other. Walks both shapes from the innermost dimension, one such run at a time. */
int prog_restride(const axon_tensor_t *src, int ndim, const int64_t *sizes, axon_tensor_t *dst) {
    axon_tensor_t r;
    memset(&r, 0, sizeof r);
    r.data = src->data;
    r.dtype = src->dtype;
    r.ndim = ndim;
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        r.sizes[d] = sizes[d];
        numel *= sizes[d];
    }
    if (numel == 0 || axon_tensor_numel(src) == 0) {
        prog_contiguous(&r, src->data, src->dtype, ndim, sizes);
        *dst = r;
        return 1;
    }
    /* Dimensions of size 1 carry no layout: drop them from the source. */
    int64_t ss[AXON_MAX_DIMS], st[AXON_MAX_DIMS];
    int sn = 0;
    for (int d = 0; d < src->ndim; d++)
        if (src->sizes[d] != 1) ss[sn] = src->sizes[d], st[sn] = src->strides[d], sn++;
    int v = ndim - 1;
    int s = sn - 1;
    while (s >= 0) {
        /* The run: source dims [lo, s] where each outer stride is the inner one times the inner size. */
        int lo = s;
        int64_t run = ss[s];
        while (lo > 0 && st[lo - 1] == st[lo] * ss[lo]) run *= ss[--lo];
        /* Give the run's elements to view dimensions from the inside out. */
        int64_t step = st[s], have = 1;
        while (v >= 0 && (have < run || sizes[v] == 1)) {
            r.strides[v] = step * have;
            have *= sizes[v];
            v--;
        }
        if (have != run) return 0;
        s = lo - 1;
    }
    for (; v >= 0; v--) {
        if (sizes[v] != 1) return 0;
        r.strides[v] = 1;
    }
    *dst = r;
    return 1;
}

static int norm_dim(int64_t d, int ndim) { return (int)(d < 0 ? d + ndim : d); }

axon_status_t prog_run_view(prog_call_t *c, axon_stream_t s, const prog_step_t *st) {
    const axon_axir_node_t *n = st->node;
    const axon_tensor_t *src = &c->desc[n->operands[0]->id];
    const axon_axir_value_t *res = n->results[0];
    axon_tensor_t *dst = &c->desc[res->id];
    int64_t sizes[AXON_MAX_DIMS];
    axon_status_t e = prog_eval_type(c, &res->type, sizes);
    if (e != AXON_OK) return e;
    const int rank = res->type.rank;
    const size_t es = axon_dtype_size(src->dtype);
    axon_tensor_t r = *src;
    r.ndim = rank;
    switch (n->op) {
    case AXON_AXIR_OP_PERMUTE: {
        const axon_axir_attr_t *a = axon_axir_node_attr(n, "dims");
        for (int d = 0; d < rank; d++) {
            int from = norm_dim(a->items[d].size, src->ndim);
            r.sizes[d] = src->sizes[from];
            r.strides[d] = src->strides[from];
        }
        break;
    }
    case AXON_AXIR_OP_EXPAND: prog_broadcast(src, rank, sizes, &r); break;
    case AXON_AXIR_OP_SLICE: {
        int d = norm_dim(compile_attr_int(n, "dim", 0), src->ndim);
        int64_t start = compile_attr_int(n, "start", 0), step = compile_attr_int(n, "step", 1);
        if (start < 0) start += src->sizes[d];
        if (start < 0) start = 0;
        if (start > src->sizes[d]) start = src->sizes[d];
        if (sizes[d] > 0) r.data = (char *)src->data + start * src->strides[d] * (int64_t)es;
        r.sizes[d] = sizes[d];
        r.strides[d] = src->strides[d] * step;
        break;
    }
    case AXON_AXIR_OP_SELECT: {
        int d = norm_dim(compile_attr_int(n, "dim", 0), src->ndim);
        int64_t idx = compile_attr_int(n, "index", 0);
        if (idx < 0) idx += src->sizes[d];
        if (idx < 0 || idx >= src->sizes[d])
            return axon_fail(AXON_ERROR_INVALID_ARG, "select: index %lld is out of range for dimension %d of size %lld",
                             (long long)compile_attr_int(n, "index", 0), d, (long long)src->sizes[d]);
        r.data = (char *)src->data + idx * src->strides[d] * (int64_t)es;
        for (int k = d; k < rank; k++) {
            r.sizes[k] = src->sizes[k + 1];
            r.strides[k] = src->strides[k + 1];
        }
        break;
    }
    case AXON_AXIR_OP_RESHAPE: case AXON_AXIR_OP_SQUEEZE: case AXON_AXIR_OP_UNSQUEEZE: {
        if (prog_restride(src, rank, sizes, &r)) break;
        int b = c->p->vals[res->id].buf;
        if (b < 0) return axon_fail(AXON_ERROR_INTERNAL, "reshape: no view and no buffer for %%%s", res->name);
        prog_contiguous(&r, c->ws + c->offsets[b], src->dtype, rank, sizes);
        /* The copy keeps the source's shape over the buffer, whose row-major order is the reshape's. */
        axon_tensor_t flat;
        prog_contiguous(&flat, r.data, src->dtype, src->ndim, src->sizes);
        e = axon_kernel_copy(s, &flat, src);
        if (e != AXON_OK) return e;
        break;
    }
    default: return axon_fail(AXON_ERROR_INTERNAL, "%s is not a view", axon_axir_op_name(n->op));
    }
    *dst = r;
    return AXON_OK;
}
