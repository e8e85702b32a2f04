/* Strided iteration: turn up to AXON_ITER_MAX_TENSORS same-shaped descriptors into as few, as long innermost runs as
 * possible, and visit any range of positions, so kernels split work into chunks with axon_parallel_for and still run
 * plain loops. */
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

static void iter_swap_dims(axon_iter_t *it, int a, int b) {
    int64_t t = it->sizes[a];
    it->sizes[a] = it->sizes[b];
    it->sizes[b] = t;
    for (int k = 0; k < it->ntensors; k++) {
        t = it->strides[k][a];
        it->strides[k][a] = it->strides[k][b];
        it->strides[k][b] = t;
    }
}

/* Memory order of tensor 0: its smallest stride innermost; ties broken by the other tensor's strides. */
static int iter_dim_before(const axon_iter_t *it, int a, int b) {
    for (int k = 0; k < it->ntensors; k++) {
        int64_t sa = abs64(it->strides[k][a]), sb = abs64(it->strides[k][b]);
        if (sa != sb) return sa < sb;
    }
    return 0;
}

void axon_iter_init(axon_iter_t *it, int n, const axon_tensor_t *const *t, int reorder) {
    AXON_ASSERT(n >= 1 && n <= AXON_ITER_MAX_TENSORS);
    memset(it, 0, sizeof *it);
    it->ntensors = n;
    for (int k = 0; k < n; k++) {
        it->data[k] = t[k]->data;
        it->esize[k] = axon_dtype_size(t[k]->dtype);
    }
    it->numel = axon_tensor_numel(t[0]);
    int nd = 0;
    for (int i = t[0]->ndim - 1; i >= 0; i--) {
        if (t[0]->sizes[i] == 1) continue; /* any stride; irrelevant */
        it->sizes[nd] = t[0]->sizes[i];
        for (int k = 0; k < n; k++) it->strides[k][nd] = t[k]->strides[i];
        nd++;
    }
    it->ndim = nd;
    if (reorder) {
        /* Walking a dimension backwards in every tensor at once visits the same pairs of elements. */
        for (int d = 0; d < nd; d++) {
            if (it->strides[0][d] >= 0) continue;
            for (int k = 0; k < n; k++) {
                it->data[k] += (it->sizes[d] - 1) * it->strides[k][d] * (int64_t)it->esize[k];
                it->strides[k][d] = -it->strides[k][d];
            }
        }
        for (int d = 1; d < nd; d++)
            for (int e = d; e > 0 && iter_dim_before(it, e, e - 1); e--) iter_swap_dims(it, e, e - 1);
    }
    /* Merge dimension d into the run below it when, in every tensor, it steps exactly over that run. */
    int out = 0;
    for (int d = 1; d < nd; d++) {
        int merge = 1;
        for (int k = 0; k < n; k++) merge &= it->strides[k][d] == it->strides[k][out] * it->sizes[out];
        if (merge) {
            it->sizes[out] *= it->sizes[d];
        } else {
            out++;
            it->sizes[out] = it->sizes[d];
            for (int k = 0; k < n; k++) it->strides[k][out] = it->strides[k][d];
        }
    }
    it->ndim = nd == 0 ? 1 : out + 1;
    if (nd == 0) it->sizes[0] = 1; /* a scalar, or every size 1: one run of one element */
}

void axon_dims_coalesce(int *ndim, int64_t *sizes, int n, int64_t *const *strides) {
    int r = 0;
    for (int d = 0; d < *ndim; d++) {
        if (sizes[d] == 1) continue;
        int merge = r > 0;
        for (int k = 0; merge && k < n; k++) merge = strides[k][r - 1] == strides[k][d] * sizes[d];
        if (merge) {
            sizes[r - 1] *= sizes[d];
            for (int k = 0; k < n; k++) strides[k][r - 1] = strides[k][d];
            continue;
        }
        sizes[r] = sizes[d];
        for (int k = 0; k < n; k++) strides[k][r] = strides[k][d];
        r++;
    }
    *ndim = r;
}

/* Byte offsets of every tensor at visit position pos; idx gets the multi-index when not NULL. */
static void iter_decode(const axon_iter_t *it, int64_t pos, int64_t *off, int64_t *idx) {
    for (int k = 0; k < it->ntensors; k++) off[k] = 0;
    for (int d = 0; d < it->ndim; d++) {
        int64_t i = pos % it->sizes[d];
        pos /= it->sizes[d];
        if (idx) idx[d] = i;
        for (int k = 0; k < it->ntensors; k++) off[k] += i * it->strides[k][d] * (int64_t)it->esize[k];
    }
}

char *axon_iter_at(const axon_iter_t *it, int k, int64_t pos) {
    int64_t off[AXON_ITER_MAX_TENSORS];
    iter_decode(it, pos, off, NULL);
    return it->data[k] + off[k];
}

void axon_iter_row_seek(const axon_iter_t *it, axon_iter_row_t *r, int64_t row) {
    memset(r, 0, sizeof *r);
    iter_decode(it, row * it->sizes[0], r->off, r->idx);
}

void axon_iter_runs(const axon_iter_t *it, int64_t begin, int64_t end, axon_run_fn fn, void *ctx) {
    if (begin >= end) return;
    int64_t idx[AXON_MAX_DIMS], off[AXON_ITER_MAX_TENSORS], inner[AXON_ITER_MAX_TENSORS];
    iter_decode(it, begin, off, idx);
    for (int k = 0; k < AXON_ITER_MAX_TENSORS; k++) inner[k] = k < it->ntensors ? it->strides[k][0] : 0;
    for (int64_t pos = begin;;) {
        int64_t n = it->sizes[0] - idx[0];
        if (n > end - pos) n = end - pos;
        char *ptr[AXON_ITER_MAX_TENSORS];
        for (int k = 0; k < AXON_ITER_MAX_TENSORS; k++) ptr[k] = k < it->ntensors ? it->data[k] + off[k] : NULL;
        fn(ctx, ptr, inner, n, pos);
        pos += n;
        if (pos >= end) return;
        /* The run ended at the end of dimension 0: rewind it and carry into the outer dimensions. */
        for (int k = 0; k < it->ntensors; k++) off[k] -= idx[0] * it->strides[k][0] * (int64_t)it->esize[k];
        idx[0] = 0;
        for (int d = 1; d < it->ndim; d++) {
            for (int k = 0; k < it->ntensors; k++) off[k] += it->strides[k][d] * (int64_t)it->esize[k];
            if (++idx[d] < it->sizes[d]) break;
            for (int k = 0; k < it->ntensors; k++) off[k] -= it->sizes[d] * it->strides[k][d] * (int64_t)it->esize[k];
            idx[d] = 0;
        }
    }
}
