/* searchsorted and bincount (axon/search.h).
 *
 * searchsorted: each value is one binary search over its row of the sorted sequence, the values split over the
 * device's pool. Elements are read through a small switch on the dtype (float64 for floats, int64 for integers) so
 * that int64 keys keep every bit and no scratch copy of the sequence is needed. bincount is one sequential pass. */
#include <inttypes.h>
#include <string.h>

#include "axon/search.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

typedef struct srch_args {
    const char *seq, *val;
    const int64_t *sorter;       /* NULL: none */
    void *out;
    axon_dtype_t dtype, out_dtype;
    int floating, right;
    int64_t m;                   /* length of a sorted row */
    int64_t n;                   /* values per row; 0 when every value searches row 0 (1-d sequence) */
    int64_t numel, rows;         /* values in all; rows of the sequence (for the sorter check) */
    axon_convert_fn to_f64, to_i64;
} srch_args_t;

static double srch_f(const srch_args_t *a, const char *base, int64_t i) {
    switch (a->dtype) {
    case AXON_FLOAT32: return (double)((const float *)(const void *)base)[i];
    case AXON_FLOAT64: return ((const double *)(const void *)base)[i];
    default: {
        double d;
        a->to_f64((char *)&d, 1, base + i * 2, 1, 1);   /* float16 / bfloat16 */
        return d;
    }
    }
}

static int64_t srch_i(const srch_args_t *a, const char *base, int64_t i) {
    switch (a->dtype) {
    case AXON_INT8: return ((const int8_t *)(const void *)base)[i];
    case AXON_UINT8: return ((const uint8_t *)(const void *)base)[i];
    case AXON_INT16: return ((const int16_t *)(const void *)base)[i];
    case AXON_INT32: return ((const int32_t *)(const void *)base)[i];
    default: return ((const int64_t *)(const void *)base)[i];
    }
}

/* PyTorch's CPU loop: move right while the middle element is below (left) or not above (right) the value. */
static int64_t srch_one(const srch_args_t *a, int64_t row, int64_t j) {
    const size_t es = axon_dtype_size(a->dtype);
    const char *seq = a->seq + (size_t)(row * a->m) * es;
    const int64_t *perm = a->sorter ? a->sorter + row * a->m : NULL;
    int64_t lo = 0, hi = a->m;
    if (a->floating) {
        const double v = srch_f(a, a->val, j);
        while (lo < hi) {
            const int64_t mid = lo + ((hi - lo) >> 1);
            const double e = srch_f(a, seq, perm ? perm[mid] : mid);
            if (a->right ? !(e > v) : !(e >= v)) lo = mid + 1;
            else hi = mid;
        }
    } else {
        const int64_t v = srch_i(a, a->val, j);
        while (lo < hi) {
            const int64_t mid = lo + ((hi - lo) >> 1);
            const int64_t e = srch_i(a, seq, perm ? perm[mid] : mid);
            if (a->right ? e <= v : e < v) lo = mid + 1;
            else hi = mid;
        }
    }
    return lo;
}

static void srch_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const srch_args_t *a = ctx;
    for (int64_t j = begin; j < end; j++) {
        const int64_t pos = srch_one(a, a->n ? j / a->n : 0, j);
        if (a->out_dtype == AXON_INT32) ((int32_t *)a->out)[j] = (int32_t)pos;
        else ((int64_t *)a->out)[j] = pos;
    }
}

static axon_status_t srch_kernel(const void *args, const axon_exec_t *ex) {
    const srch_args_t *a = args;
    /* A sorter entry outside its row would read out of bounds: refuse the whole command before searching. */
    for (int64_t i = 0; a->sorter && i < a->rows * a->m; i++)
        if (a->sorter[i] < 0 || a->sorter[i] >= a->m)
            return axon_fail(AXON_ERROR_INVALID_ARG, "searchsorted: sorter index %" PRId64 " is out of range [0, %" PRId64 ")",
                             a->sorter[i], a->m);
    int64_t cost = 1;
    for (int64_t m = a->m; m > 1; m >>= 1) cost++;
    const int64_t grain = AXON_KERNEL_GRAIN / (cost * 4);
    axon_parallel_for(ex->pool, 0, a->numel, grain < 1 ? 1 : grain, srch_range, (void *)a);
    return AXON_OK;
}

static int srch_key_dtype(axon_dtype_t d) {
    return d != AXON_BOOL && d != AXON_COMPLEX64 && d != AXON_COMPLEX128;
}

axon_status_t axon_kernel_searchsorted(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *sorted,
                                       const axon_tensor_t *values, const axon_tensor_t *sorter, int right) {
    const char *op = "searchsorted";
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(sorted, op, "sorted", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(values, op, "values", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out, op, "out", 1)) != AXON_OK) return st;
    if (sorter && (st = axon_kernel_check_operand(sorter, op, "sorter", 0)) != AXON_OK) return st;
    if (sorted->dtype != values->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: sorted dtype %s differs from values dtype %s", op,
                         axon_dtype_name(sorted->dtype), axon_dtype_name(values->dtype));
    if (!srch_key_dtype(sorted->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: dtype %s has no order to search", op,
                         axon_dtype_name(sorted->dtype));
    if (out->dtype != AXON_INT32 && out->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: out dtype %s is not int32 or int64", op,
                         axon_dtype_name(out->dtype));
    if (sorter && sorter->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: sorter dtype %s is not int64", op,
                         axon_dtype_name(sorter->dtype));
    if (!axon_tensor_is_contiguous(sorted) || !axon_tensor_is_contiguous(values) || !axon_tensor_is_contiguous(out) ||
        (sorter && !axon_tensor_is_contiguous(sorter)))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: sorted, values, out and sorter must be contiguous", op);
    if (sorted->ndim < 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: sorted must have at least one dimension", op);
    int same = out->ndim == values->ndim;
    for (int d = 0; same && d < out->ndim; d++) same = out->sizes[d] == values->sizes[d];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out has shape %s, expected values' shape %s", op,
                         axon_shape_format(out, sa, sizeof sa), axon_shape_format(values, sb, sizeof sb));
    if (sorter) {
        same = sorter->ndim == sorted->ndim;
        for (int d = 0; same && d < sorter->ndim; d++) same = sorter->sizes[d] == sorted->sizes[d];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: sorter has shape %s, expected sorted's shape %s", op,
                             axon_shape_format(sorter, sa, sizeof sa), axon_shape_format(sorted, sb, sizeof sb));
    }
    if (sorted->ndim > 1) {
        same = values->ndim == sorted->ndim;
        for (int d = 0; same && d < sorted->ndim - 1; d++) same = values->sizes[d] == sorted->sizes[d];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "%s: values of shape %s do not match the leading dimensions of sorted %s", op,
                             axon_shape_format(values, sa, sizeof sa), axon_shape_format(sorted, sb, sizeof sb));
    }
    srch_args_t a;
    memset(&a, 0, sizeof a);
    a.numel = axon_tensor_numel(values);
    if (a.numel == 0) return AXON_OK;
    a.m = sorted->sizes[sorted->ndim - 1];
    a.rows = a.m ? axon_tensor_numel(sorted) / a.m : 0;
    a.n = sorted->ndim > 1 ? values->sizes[values->ndim - 1] : 0;
    a.seq = sorted->data;
    a.val = values->data;
    a.sorter = sorter ? sorter->data : NULL;
    a.out = out->data;
    a.dtype = sorted->dtype;
    a.out_dtype = out->dtype;
    a.floating = axon_dtype_is_floating(sorted->dtype);
    a.right = right != 0;
    a.to_f64 = a.floating ? axon_convert_get(a.dtype, AXON_FLOAT64) : NULL;
    axon_launch_t l = {srch_kernel, &a, sizeof a, op, (uint64_t)a.numel * axon_dtype_size(a.dtype)};
    return axon_stream_launch(s, &l);
}

typedef struct bcnt_args {
    axon_tensor_t out, in, weights;
    int weighted;
} bcnt_args_t;

#define BCNT_BATCH 256

static axon_status_t bcnt_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const bcnt_args_t *a = args;
    const int64_t n = axon_tensor_numel(&a->in), bins = a->out.sizes[0];
    const size_t ies = axon_dtype_size(a->in.dtype), wes = a->weighted ? axon_dtype_size(a->weights.dtype) : 0;
    axon_convert_fn ci = axon_convert_get(a->in.dtype, AXON_INT64);
    axon_convert_fn cw = a->weighted ? axon_convert_get(a->weights.dtype, a->out.dtype) : NULL;
    memset(a->out.data, 0, (size_t)bins * axon_dtype_size(a->out.dtype));
    for (int64_t i = 0; i < n; i += BCNT_BATCH) {
        const int64_t m = n - i < BCNT_BATCH ? n - i : BCNT_BATCH;
        int64_t v[BCNT_BATCH];
        union {
            double d[BCNT_BATCH];
            float f[BCNT_BATCH];
        } w;   /* weights converted to out's dtype */
        ci((char *)v, 1, (const char *)a->in.data + (size_t)i * ies, 1, m);
        if (cw) cw((char *)&w, 1, (const char *)a->weights.data + (size_t)i * wes, 1, m);
        for (int64_t k = 0; k < m; k++) {
            if (v[k] < 0 || v[k] >= bins)
                return axon_fail(AXON_ERROR_INVALID_ARG, "bincount: value %" PRId64 " is outside [0, %" PRId64 ")",
                                 v[k], bins);
            if (!cw) ((int64_t *)a->out.data)[v[k]] += 1;
            else if (a->out.dtype == AXON_FLOAT32) ((float *)a->out.data)[v[k]] += w.f[k];
            else ((double *)a->out.data)[v[k]] += w.d[k];
        }
    }
    return AXON_OK;
}

axon_status_t axon_kernel_bincount(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                   const axon_tensor_t *weights) {
    const char *op = "bincount";
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(in, op, "in", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out, op, "out", 1)) != AXON_OK) return st;
    if (weights && (st = axon_kernel_check_operand(weights, op, "weights", 0)) != AXON_OK) return st;
    if (!axon_dtype_is_integer(in->dtype) || in->dtype == AXON_BOOL)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: in dtype %s is not an integer dtype", op,
                         axon_dtype_name(in->dtype));
    if (weights ? (out->dtype != AXON_FLOAT32 && out->dtype != AXON_FLOAT64) : out->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: out dtype %s is not %s", op, axon_dtype_name(out->dtype),
                         weights ? "float32 or float64" : "int64");
    if (weights && (!srch_key_dtype(weights->dtype)))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: weights dtype %s is not a real dtype", op,
                         axon_dtype_name(weights->dtype));
    if (in->ndim != 1 || out->ndim != 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in (shape %s) and out (shape %s) must be 1-d", op,
                         axon_shape_format(in, sa, sizeof sa), axon_shape_format(out, sb, sizeof sb));
    if (weights && (weights->ndim != 1 || weights->sizes[0] != in->sizes[0]))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: weights has shape %s, expected in's shape %s", op,
                         axon_shape_format(weights, sa, sizeof sa), axon_shape_format(in, sb, sizeof sb));
    if (!axon_tensor_is_contiguous(in) || !axon_tensor_is_contiguous(out) ||
        (weights && !axon_tensor_is_contiguous(weights)))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in, out and weights must be contiguous", op);
    if (out->sizes[0] == 0 && in->sizes[0] == 0) return AXON_OK;
    bcnt_args_t a;
    memset(&a, 0, sizeof a);
    a.out = *out;
    a.in = *in;
    if (weights) a.weights = *weights;
    a.weighted = weights != NULL;
    axon_launch_t l = {bcnt_kernel, &a, sizeof a, op, (uint64_t)in->sizes[0] * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}
