/* axon_kernel_index_fill: out[..., index[k], ...] = value along dim.
 *
 * The indices are checked before anything is written, then read once into a list. The elements to fill are the
 * slice of out without dim, once per index, and they are visited in the order that follows out's memory: when dim
 * strides out at least as far as the slice's fastest dimension does (x.index_fill(0, ...): whole rows), index by
 * index, each slice filled run by run; otherwise (x.index_fill(-1, ...): a few elements of every row), position by
 * position of the slice, each position's elements of every index written before the next position. Repeated indices
 * fill the same elements again, with the same value. */
#include <stdlib.h>
#include <string.h>

#include "index_impl.h"
#include "internal.h"

struct ifill_args {
    axon_tensor_t out, index;
    int dim;
    unsigned flags;
    union {
        unsigned char bytes[16];
        double align;            /* complex128 elements need 8-byte alignment */
    } value;
};

struct ifill_job {
    const struct ifill_args *a;
    const int64_t *idx;          /* the indices, wrapped into [0, size) */
    int64_t n;                   /* how many */
    axon_iter_t slice;           /* out without dim */
    int64_t step;                /* bytes between consecutive positions along dim */
    size_t es;
};

/* One call of a run callback: the job, and the byte offset of the index being filled (index-outer path). */
struct ifill_visit {
    const struct ifill_job *j;
    int64_t at;
};

static void ifill_slice_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const struct ifill_visit *v = ctx;
    axon_fill_elements(ptr[0] + v->at, stride[0], n, v->j->a->value.bytes, v->j->es);
}

/* Indices [begin, end): each one's slice, run by run. */
static void ifill_by_index(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct ifill_job *j = ctx;
    for (int64_t k = begin; k < end; k++) {
        struct ifill_visit v = {j, j->idx[k] * j->step};
        axon_iter_runs(&j->slice, 0, j->slice.numel, ifill_slice_run, &v);
    }
}

static void ifill_position_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const struct ifill_job *j = ctx;
    const unsigned char *v = j->a->value.bytes;
    for (int64_t i = 0; i < n; i++) {
        char *p = ptr[0] + i * stride[0] * (int64_t)j->es;
        for (int64_t k = 0; k < j->n; k++) ix_move(p + j->idx[k] * j->step, (const char *)v, j->es);
    }
}

/* Slice positions [begin, end): every index's element at each. */
static void ifill_by_position(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct ifill_job *j = ctx;
    axon_iter_runs(&j->slice, begin, end, ifill_position_run, (void *)j);
}

static axon_status_t ifill_kernel(const void *args, const axon_exec_t *ex) {
    const struct ifill_args *a = args;
    const int64_t size = a->out.sizes[a->dim];
    const int wrap = (a->flags & AXON_INDEX_WRAP) != 0;
    axon_status_t st = axon_ix_check_bounds(&a->index, size, wrap, a->dim, "index_fill", ex->pool);
    if (st != AXON_OK) return st;
    struct ifill_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.n = axon_tensor_numel(&a->index);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)j.n);
    if (idx == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "index_fill: no host memory for %lld indices",
                                      (long long)j.n);
    const int is64 = a->index.dtype == AXON_INT64;
    const int64_t istride = a->index.ndim == 0 ? 0 : a->index.strides[0];
    const size_t ies = axon_dtype_size(a->index.dtype);
    for (int64_t k = 0; k < j.n; k++) {
        const int64_t v = ix_load((const char *)a->index.data + k * istride * (int64_t)ies, is64);
        idx[k] = v < 0 ? v + size : v;
    }
    j.idx = idx;
    j.es = axon_dtype_size(a->out.dtype);
    j.step = a->out.strides[a->dim] * (int64_t)j.es;
    /* the slice: out without dim */
    axon_tensor_t slice = a->out;
    slice.ndim = a->out.ndim - 1;
    int64_t fastest = INT64_MAX;
    for (int d = a->dim; d < slice.ndim; d++) {
        slice.sizes[d] = a->out.sizes[d + 1];
        slice.strides[d] = a->out.strides[d + 1];
    }
    for (int d = 0; d < slice.ndim; d++) {
        const int64_t s = slice.strides[d] < 0 ? -slice.strides[d] : slice.strides[d];
        if (slice.sizes[d] > 1 && s < fastest) fastest = s;
    }
    const axon_tensor_t *ts[1] = {&slice};
    axon_iter_init(&j.slice, 1, ts, 1);
    const int64_t along = a->out.strides[a->dim] < 0 ? -a->out.strides[a->dim] : a->out.strides[a->dim];
    if (along >= fastest) {
        const int64_t grain = AXON_KERNEL_GRAIN / (j.slice.numel > 0 ? j.slice.numel : 1);
        axon_parallel_for(ex->pool, 0, j.n, grain < 1 ? 1 : grain, ifill_by_index, &j);
    } else {
        const int64_t grain = AXON_KERNEL_GRAIN / (j.n > 0 ? j.n : 1);
        axon_parallel_for(ex->pool, 0, j.slice.numel, grain < 1 ? 1 : grain, ifill_by_position, &j);
    }
    free(idx);
    return AXON_OK;
}

axon_status_t axon_kernel_index_fill(axon_stream_t s, const axon_tensor_t *out, int dim, const axon_tensor_t *index,
                                     axon_scalar_t value, unsigned flags) {
    char sa[160];
    axon_status_t st;
    if ((st = axon_ix_check_operand(out, "index_fill", "out", -1, 1)) != AXON_OK) return st;
    if ((st = axon_ix_check_operand(index, "index_fill", "index", -1, 0)) != AXON_OK) return st;
    if ((st = axon_ix_check_index(index, "index_fill")) != AXON_OK) return st;
    if (index->ndim > 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "index_fill: index %s must have 0 or 1 dimensions",
                         axon_shape_format(index, sa, sizeof sa));
    if (out->ndim < 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "index_fill: out must have at least one dimension");
    if ((st = axon_ix_wrap_dim("index_fill", out->ndim, &dim)) != AXON_OK) return st;
    struct ifill_args a;
    memset(&a, 0, sizeof a);
    a.out = *out, a.index = *index, a.dim = dim, a.flags = flags;
    if ((st = axon_ix_scalar_bytes(value, out->dtype, a.value.bytes, "index_fill")) != AXON_OK) return st;
    /* Nothing to fill: no index, or an empty slice (CPU then checks no index either). A dim of size 0 with
     * indices goes on, to fail the bounds check. */
    int64_t n = axon_tensor_numel(index), slice = 1;
    for (int d = 0; d < out->ndim; d++)
        if (d != dim) slice *= out->sizes[d];
    if (n == 0 || slice == 0) return AXON_OK;
    axon_launch_t l = {ifill_kernel, &a, sizeof a, "index_fill",
                       (uint64_t)(n * slice) * axon_dtype_size(out->dtype) + (uint64_t)n * 8};
    return axon_stream_launch(s, &l);
}
