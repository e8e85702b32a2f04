/* Runs of equal neighbours (axon/unique.h): the count, then values, inverse and counts. Elements are compared after
 * conversion to float64 (floats: == gives PyTorch's NaN and signed-zero rules) or int64 (integers, bool), in stack
 * batches so every dtype shares one loop. */
#include <inttypes.h>
#include <string.h>

#include "axon/stream.h"
#include "axon/unique.h"
#include "internal.h"
#include "kernels_impl.h"

#define UNQ_BATCH 512

typedef struct unq_args {
    axon_tensor_t in, values, inverse, counts, perm, count;
    int has_inverse, has_counts, has_perm;
} unq_args_t;

/* Calls visit(ctx, i, starts) for i in [0, n), starts telling whether element i opens a run. */
typedef int (*unq_visit_fn)(void *ctx, int64_t i, int starts);

static int unq_walk(const axon_tensor_t *in, unq_visit_fn visit, void *ctx) {
    const int64_t n = axon_tensor_numel(in);
    const size_t es = axon_dtype_size(in->dtype);
    const int floating = axon_dtype_is_floating(in->dtype);
    axon_convert_fn f = axon_convert_get(in->dtype, floating ? AXON_FLOAT64 : AXON_INT64);
    union {
        double d[UNQ_BATCH + 1];
        int64_t i[UNQ_BATCH + 1];
    } b;
    for (int64_t i = 0; i < n; i += UNQ_BATCH) {
        const int64_t m = n - i < UNQ_BATCH ? n - i : UNQ_BATCH;
        /* Slot 0 repeats the previous batch's last element so every comparison has its left neighbour. */
        if (i > 0) b.i[0] = b.i[UNQ_BATCH];
        f((char *)&b.d[1], 1, (const char *)in->data + (size_t)i * es, 1, m);
        for (int64_t k = 0; k < m; k++) {
            const int starts = i + k == 0 || (floating ? !(b.d[k + 1] == b.d[k]) : b.i[k + 1] != b.i[k]);
            if (!visit(ctx, i + k, starts)) return 0;
        }
    }
    return 1;
}

static int unq_count_visit(void *ctx, int64_t i, int starts) {
    (void)i;
    *(int64_t *)ctx += starts;
    return 1;
}

static axon_status_t unq_count_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const unq_args_t *a = args;
    int64_t runs = 0;
    unq_walk(&a->in, unq_count_visit, &runs);
    *(int64_t *)a->count.data = runs;
    return AXON_OK;
}

typedef struct unq_fill_state {
    const unq_args_t *a;
    int64_t run, k, n;           /* current run (-1 before the first), K, numel */
    size_t es;
    const char *bad;             /* set when the data disagree with the descriptors */
} unq_fill_state_t;

static int unq_fill_visit(void *ctx, int64_t i, int starts) {
    unq_fill_state_t *st = ctx;
    const unq_args_t *a = st->a;
    if (starts) {
        if (++st->run >= st->k) {
            st->bad = "more runs than values has room for";
            return 0;
        }
        memcpy((char *)a->values.data + (size_t)st->run * st->es, (const char *)a->in.data + (size_t)i * st->es,
               st->es);
        if (a->has_counts) ((int64_t *)a->counts.data)[st->run] = 0;
    }
    if (a->has_counts) ((int64_t *)a->counts.data)[st->run]++;
    if (a->has_inverse) {
        int64_t at = i;
        if (a->has_perm) {
            at = ((const int64_t *)a->perm.data)[i];
            if (at < 0 || at >= st->n) {
                st->bad = "perm entry out of range";
                return 0;
            }
        }
        ((int64_t *)a->inverse.data)[at] = st->run;
    }
    return 1;
}

static axon_status_t unq_fill_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const unq_args_t *a = args;
    unq_fill_state_t st = {a, -1, axon_tensor_numel(&a->values), axon_tensor_numel(&a->in),
                           axon_dtype_size(a->in.dtype), NULL};
    if (!unq_walk(&a->in, unq_fill_visit, &st) || st.run + 1 != st.k)
        return axon_fail(AXON_ERROR_INVALID_ARG, "unique: %s (values holds %" PRId64 ")",
                         st.bad ? st.bad : "fewer runs than values holds", st.k);
    return AXON_OK;
}

static axon_status_t unq_check_in(const char *op, const axon_tensor_t *in) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(in, op, "in", 0);
    if (st != AXON_OK) return st;
    if (in->dtype == AXON_COMPLEX64 || in->dtype == AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: in dtype %s is not supported", op, axon_dtype_name(in->dtype));
    if (in->ndim != 1 || !axon_tensor_is_contiguous(in))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in must be 1-d and contiguous (shape %s)", op,
                         axon_shape_format(in, sa, sizeof sa));
    return AXON_OK;
}

/* A contiguous 1-d operand of n elements and dtype dt. */
static axon_status_t unq_check_vec(const char *op, const char *role, const axon_tensor_t *t, int64_t n,
                                   axon_dtype_t dt, int is_dst) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, is_dst);
    if (st != AXON_OK) return st;
    if (t->dtype != dt)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s dtype %s is not %s", op, role, axon_dtype_name(t->dtype),
                         axon_dtype_name(dt));
    if (t->ndim != 1 || !axon_tensor_is_contiguous(t) || (n >= 0 && t->sizes[0] != n))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be 1-d, contiguous, of %" PRId64 " elements (shape %s)",
                         op, role, n, axon_shape_format(t, sa, sizeof sa));
    return AXON_OK;
}

axon_status_t axon_kernel_unique_count(axon_stream_t s, const axon_tensor_t *count, const axon_tensor_t *in) {
    const char *op = "unique";
    axon_status_t st;
    if ((st = unq_check_in(op, in)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(count, op, "count", 1)) != AXON_OK) return st;
    if (count->dtype != AXON_INT64 || axon_tensor_numel(count) != 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: count must be one int64 element (has %s, %" PRId64 " elements)",
                         op, axon_dtype_name(count->dtype), axon_tensor_numel(count));
    unq_args_t a;
    memset(&a, 0, sizeof a);
    a.in = *in;
    a.count = *count;
    axon_launch_t l = {unq_count_kernel, &a, sizeof a, op, (uint64_t)in->sizes[0] * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_unique_fill(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *inverse,
                                      const axon_tensor_t *counts, const axon_tensor_t *in,
                                      const axon_tensor_t *perm) {
    const char *op = "unique";
    axon_status_t st;
    if ((st = unq_check_in(op, in)) != AXON_OK) return st;
    const int64_t n = in->sizes[0];
    if ((st = unq_check_vec(op, "values", values, -1, in->dtype, 1)) != AXON_OK) return st;
    const int64_t k = values->sizes[0];
    if ((k == 0) != (n == 0))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: values has %" PRId64 " elements for %" PRId64 " inputs", op, k, n);
    if (k > n)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: values has %" PRId64 " elements, more than in's %" PRId64, op,
                         k, n);
    if (inverse && (st = unq_check_vec(op, "inverse", inverse, n, AXON_INT64, 1)) != AXON_OK) return st;
    if (counts && (st = unq_check_vec(op, "counts", counts, k, AXON_INT64, 1)) != AXON_OK) return st;
    if (perm && (st = unq_check_vec(op, "perm", perm, n, AXON_INT64, 0)) != AXON_OK) return st;
    if (n == 0) return AXON_OK;
    unq_args_t a;
    memset(&a, 0, sizeof a);
    a.in = *in;
    a.values = *values;
    a.has_inverse = inverse != NULL;
    a.has_counts = counts != NULL;
    a.has_perm = perm != NULL;
    if (inverse) a.inverse = *inverse;
    if (counts) a.counts = *counts;
    if (perm) a.perm = *perm;
    axon_launch_t l = {unq_fill_kernel, &a, sizeof a, op, (uint64_t)n * (axon_dtype_size(in->dtype) + 16)};
    return axon_stream_launch(s, &l);
}
