/* Compactions whose output size depends on the data (index_advanced.h): count_nonzero, nonzero, masked_select and
 * masked_scatter; and nonzero_static, whose size is fixed (the first rows, then a fill).
 *
 * Each splits the row-major order of its shape into at most CMP_MAX_BLOCKS fixed blocks (fixed by the size, not by
 * the pool, so the result cannot depend on the thread count), counts the selected elements of each block in
 * parallel, turns the counts into offsets on the command's thread and then fills each block from its offset in
 * parallel. The count is compared with the output's size before the fill, so a count that went stale between the
 * caller's read-back and this command fails the command instead of writing past the output. "Selected" is
 * "!= 0" by the copy rules' conversion to bool (NaN and -0.0 included as PyTorch counts them). */
#include <inttypes.h>
#include <stdio.h>

#include "axon/index_advanced.h"
#include "internal.h"
#include "index_impl.h"

#define CMP_MAX_BLOCKS 256
#define CMP_BUF 256          /* elements converted to bool at a time */

enum cmp_kind { CMP_COUNT, CMP_NONZERO, CMP_NONZERO_STATIC, CMP_SELECT, CMP_SCATTER };

struct cmp_args {
    enum cmp_kind kind;
    axon_tensor_t test;      /* what decides selection: in (count, nonzero) or the mask (select, scatter) */
    axon_tensor_t data;      /* select: in; scatter: dst */
    axon_tensor_t out;       /* count: the int64 count; nonzero: [rows, ndim]; select: 1-d; scatter: 1-d source */
    int64_t fill;            /* nonzero_static: the value of the rows past the count */
};

struct cmp_job {
    const struct cmp_args *a;
    axon_iter_t it;          /* test (and data), logical order */
    int64_t block, nblocks;
    int64_t offset[CMP_MAX_BLOCKS];
    axon_convert_fn to_bool;
    size_t es;
};

/* Calls back for each selected position in [begin, end): pos is the row-major position, j the selection's rank
 * counted from `rank`. Returns the number selected. */
static int64_t cmp_scan(const struct cmp_job *j, int64_t begin, int64_t end, int64_t rank, int fill) {
    const struct cmp_args *a = j->a;
    int64_t count = 0;
    unsigned char flag[CMP_BUF];
    for (int64_t pos = begin; pos < end;) {
        /* A run of the innermost dimension, cut to CMP_BUF. */
        char *p = axon_iter_at(&j->it, 0, pos);
        int64_t inner = j->it.sizes[0], c = pos % inner, n = inner - c;
        if (n > end - pos) n = end - pos;
        if (n > CMP_BUF) n = CMP_BUF;
        j->to_bool((char *)flag, 1, p, j->it.strides[0][0], n);
        if (fill && (a->kind == CMP_SELECT || a->kind == CMP_SCATTER)) {
            /* the run's data elements are one stride apart: no position-to-address walk per element */
            char *d = axon_iter_at(&j->it, 1, pos);
            const int64_t ds = j->it.strides[1][0] * (int64_t)j->es, os = a->out.strides[0] * (int64_t)j->es;
            char *o = (char *)a->out.data + (rank + count) * os;
            for (int64_t i = 0; i < n; i++) {
                if (!flag[i]) continue;
                if (a->kind == CMP_SELECT) ix_move(o, d + i * ds, j->es);
                else ix_move(d + i * ds, o, j->es);
                o += os;
                count++;
            }
            pos += n;
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            if (!flag[i]) continue;
            if (fill) {
                int64_t r = rank + count, q = pos + i;
                switch (a->kind) {
                case CMP_NONZERO_STATIC:
                    if (r >= a->out.sizes[0]) break;   /* past the rows kept */
                    /* fall through */
                case CMP_NONZERO:
                    for (int d = a->test.ndim - 1; d >= 0; d--) {
                        int64_t v = q % a->test.sizes[d];
                        q /= a->test.sizes[d];
                        memcpy((char *)a->out.data + (r * a->out.strides[0] + d * a->out.strides[1]) * 8, &v, 8);
                    }
                    break;
                case CMP_SELECT:
                    ix_move((char *)a->out.data + r * a->out.strides[0] * (int64_t)j->es, axon_iter_at(&j->it, 1, q),
                            j->es);
                    break;
                case CMP_SCATTER:
                    ix_move(axon_iter_at(&j->it, 1, q), (const char *)a->out.data + r * a->out.strides[0] * (int64_t)j->es,
                            j->es);
                    break;
                default: break;
                }
            }
            count++;
        }
        pos += n;
    }
    return count;
}

static void cmp_count_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct cmp_job *j = ctx;
    for (int64_t b = begin; b < end; b++) {
        int64_t lo = b * j->block, hi = lo + j->block < j->it.numel ? lo + j->block : j->it.numel;
        j->offset[b] = cmp_scan(j, lo, hi, 0, 0);
    }
}

static void cmp_fill_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct cmp_job *j = ctx;
    for (int64_t b = begin; b < end; b++) {
        if (j->a->kind == CMP_NONZERO_STATIC && j->offset[b] >= j->a->out.sizes[0]) continue;   /* nothing kept */
        int64_t lo = b * j->block, hi = lo + j->block < j->it.numel ? lo + j->block : j->it.numel;
        cmp_scan(j, lo, hi, j->offset[b], 1);
    }
}

static axon_status_t cmp_kernel(const void *args, const axon_exec_t *ex) {
    const struct cmp_args *a = args;
    struct cmp_job j;
    j.a = a;
    const axon_tensor_t *ts[2] = {&a->test, &a->data};
    /* Logical order: the iterator's visit position is then the row-major position. */
    axon_iter_init(&j.it, a->kind == CMP_SELECT || a->kind == CMP_SCATTER ? 2 : 1, ts, 0);
    j.to_bool = axon_convert_get(a->test.dtype, AXON_BOOL);
    j.es = axon_dtype_size(a->data.dtype);
    j.block = (j.it.numel + CMP_MAX_BLOCKS - 1) / CMP_MAX_BLOCKS;
    if (j.block < 4096) j.block = 4096;
    j.nblocks = (j.it.numel + j.block - 1) / j.block;
    axon_parallel_for(ex->pool, 0, j.nblocks, 1, cmp_count_range, &j);
    int64_t total = 0;
    for (int64_t b = 0; b < j.nblocks; b++) {
        int64_t c = j.offset[b];
        j.offset[b] = total;
        total += c;
    }
    switch (a->kind) {
    case CMP_COUNT: memcpy(a->out.data, &total, sizeof total); return AXON_OK;
    case CMP_NONZERO:
        if (total > a->out.sizes[0])
            return axon_fail(AXON_ERROR_INVALID_ARG, "nonzero(): %" PRId64 " nonzero elements, the output has room "
                             "for %" PRId64, total, a->out.sizes[0]);
        break;
    case CMP_NONZERO_STATIC:
        for (int64_t r = total; r < a->out.sizes[0]; r++)
            for (int d = 0; d < a->out.sizes[1]; d++)
                memcpy((char *)a->out.data + (r * a->out.strides[0] + d * a->out.strides[1]) * 8, &a->fill, 8);
        break;
    case CMP_SELECT:
        if (total != a->out.sizes[0])
            return axon_fail(AXON_ERROR_INVALID_ARG, "masked_select(): the mask selects %" PRId64 " elements, the "
                             "output has %" PRId64, total, a->out.sizes[0]);
        break;
    case CMP_SCATTER:
        if (total > a->out.sizes[0])
            return axon_fail(AXON_ERROR_INVALID_ARG, "masked_scatter_(): Number of elements of source < number of "
                             "ones in mask (%" PRId64 " < %" PRId64 ")", a->out.sizes[0], total);
        break;
    }
    axon_parallel_for(ex->pool, 0, j.nblocks, 1, cmp_fill_range, &j);
    return AXON_OK;
}

static axon_status_t cmp_launch(axon_stream_t s, const struct cmp_args *a, const char *op) {
    int64_t n = axon_tensor_numel(&a->test);
    if (n == 0 && a->kind != CMP_COUNT && a->kind != CMP_NONZERO_STATIC) return AXON_OK;
    /* + 8: the count's own bytes, so that an empty input's launch still states a size (bytes 0 would always queue
     * it, and the host then waits a round trip through the executor for the count) */
    axon_launch_t l = {cmp_kernel, a, sizeof *a, op, (uint64_t)n * (1 + axon_dtype_size(a->data.dtype)) + 8};
    return axon_stream_launch(s, &l);
}

static int same_sizes(const axon_tensor_t *x, const axon_tensor_t *y) {
    int same = x->ndim == y->ndim;
    for (int d = 0; same && d < x->ndim; d++) same = x->sizes[d] == y->sizes[d];
    return same;
}

static axon_status_t check_mask(const axon_tensor_t *mask, const axon_tensor_t *like, const char *op) {
    char sa[160], sb[160];
    axon_status_t st = axon_kernel_check_operand(mask, op, "mask", 0);
    if (st != AXON_OK) return st;
    if (mask->dtype != AXON_BOOL && mask->dtype != AXON_UINT8)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: mask must be bool or uint8, got %s", op,
                         axon_dtype_name(mask->dtype));
    if (!same_sizes(mask, like))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: mask shape %s does not match %s", op,
                         axon_shape_format(mask, sa, sizeof sa), axon_shape_format(like, sb, sizeof sb));
    return AXON_OK;
}

axon_status_t axon_kernel_count_nonzero(axon_stream_t s, const axon_tensor_t *count, const axon_tensor_t *in) {
    axon_status_t st;
    if ((st = axon_kernel_check_operand(count, "count_nonzero", "count", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(in, "count_nonzero", "in", 0)) != AXON_OK) return st;
    if (count->dtype != AXON_INT64 || axon_tensor_numel(count) != 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "count_nonzero: count must be one int64, got %s of %" PRId64
                         " elements", axon_dtype_name(count->dtype), axon_tensor_numel(count));
    struct cmp_args a;
    memset(&a, 0, sizeof a);
    a.kind = CMP_COUNT, a.test = *in, a.data = *in, a.out = *count;
    return cmp_launch(s, &a, "count_nonzero");
}

/* nonzero's and nonzero_static's operands: out [rows, in.ndim] int64 for an in of ndim >= 1; `op` is "nonzero" or
 * "nonzero_static". */
static axon_status_t check_coords(const axon_tensor_t *out, const axon_tensor_t *in, const char *op) {
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(out, op, "out", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(in, op, "in", 0)) != AXON_OK) return st;
    if (in->ndim < 1 || out->dtype != AXON_INT64 || out->ndim != 2 || out->sizes[1] != in->ndim)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): out %s %s must be [rows, %d] int64 for in %s", op,
                         axon_dtype_name(out->dtype), axon_shape_format(out, sa, sizeof sa), in->ndim,
                         axon_shape_format(in, sb, sizeof sb));
    return AXON_OK;
}

axon_status_t axon_kernel_nonzero(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in) {
    const axon_status_t st = check_coords(out, in, "nonzero");
    if (st != AXON_OK) return st;
    struct cmp_args a;
    memset(&a, 0, sizeof a);
    a.kind = CMP_NONZERO, a.test = *in, a.data = *in, a.out = *out;
    return cmp_launch(s, &a, "nonzero");
}

axon_status_t axon_kernel_nonzero_static(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                         int64_t fill_value) {
    const axon_status_t st = check_coords(out, in, "nonzero_static");
    if (st != AXON_OK || out->sizes[0] == 0) return st;
    struct cmp_args a;
    memset(&a, 0, sizeof a);
    a.kind = CMP_NONZERO_STATIC, a.test = *in, a.data = *in, a.out = *out, a.fill = fill_value;
    return cmp_launch(s, &a, "nonzero_static");
}

axon_status_t axon_kernel_masked_select(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                        const axon_tensor_t *mask) {
    axon_status_t st;
    if ((st = axon_kernel_check_operand(out, "masked_select", "out", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(in, "masked_select", "in", 0)) != AXON_OK) return st;
    if ((st = check_mask(mask, in, "masked_select")) != AXON_OK) return st;
    if (out->ndim != 1 || out->dtype != in->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "masked_select(): out must be 1-d %s, got %d-d %s",
                         axon_dtype_name(in->dtype), out->ndim, axon_dtype_name(out->dtype));
    struct cmp_args a;
    memset(&a, 0, sizeof a);
    a.kind = CMP_SELECT, a.test = *mask, a.data = *in, a.out = *out;
    if (axon_tensor_numel(in) == 0 && out->sizes[0] != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "masked_select(): in is empty, out has %" PRId64 " elements",
                         out->sizes[0]);
    return cmp_launch(s, &a, "masked_select");
}

axon_status_t axon_kernel_masked_scatter(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *mask,
                                         const axon_tensor_t *source) {
    axon_status_t st;
    if ((st = axon_kernel_check_operand(dst, "masked_scatter_", "dst", 1)) != AXON_OK) return st;
    if ((st = check_mask(mask, dst, "masked_scatter_")) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(source, "masked_scatter_", "source", 0)) != AXON_OK) return st;
    if (source->ndim != 1 || source->dtype != dst->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "masked_scatter_(): source must be 1-d %s, got %d-d %s",
                         axon_dtype_name(dst->dtype), source->ndim, axon_dtype_name(source->dtype));
    struct cmp_args a;
    memset(&a, 0, sizeof a);
    a.kind = CMP_SCATTER, a.test = *mask, a.data = *dst, a.out = *source;
    return cmp_launch(s, &a, "masked_scatter_");
}
