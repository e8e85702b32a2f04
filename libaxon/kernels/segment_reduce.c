/* axon_kernel_segment_reduce (axon/segment.h): one row of data ([n, inner]) per task. A row's segments are walked
 * in order, each one's elements loaded into float64 a chunk at a time and folded lane by lane (one lane per inner
 * index), in data's order, so results do not depend on the thread count. Lengths are checked as they are read: a
 * negative length or a segment outside the row stops the command with INVALID_ARG before it reads past the row. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "axon/segment.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

#define SEG_LANES 256            /* inner indices folded together: a stack buffer of doubles */

typedef struct seg_args {
    axon_segment_reduce_t op;
    int is_offsets, has_initial;
    double initial;
    int64_t outer, n, inner, segments;
    const char *data;
    char *out;
    const char *lengths;
    int lengths64;
    size_t es;
    axon_convert_fn load, store;
} seg_args_t;

typedef struct seg_job {
    const seg_args_t *a;
    atomic_int bad;              /* a malformed length or offset was read */
} seg_job_t;

static int64_t seg_index(const seg_args_t *a, int64_t i) {
    return a->lengths64 ? ((const int64_t *)(const void *)a->lengths)[i]
                        : (int64_t)((const int32_t *)(const void *)a->lengths)[i];
}

static double seg_start_value(const seg_args_t *a) {
    if (a->has_initial) return a->initial;
    switch (a->op) {
    case AXON_SEGMENT_MAX: return -INFINITY;
    case AXON_SEGMENT_MIN: return INFINITY;
    case AXON_SEGMENT_PROD: return 1.0;
    default: return 0.0;
    }
}

/* acc = op(acc, v) for the m lanes of one element row; max and min keep the first NaN, as PyTorch's loop does. */
static void seg_fold(axon_segment_reduce_t op, double *acc, const double *v, int64_t m) {
    for (int64_t l = 0; l < m; l++) {
        const double x = v[l];
        switch (op) {
        case AXON_SEGMENT_MAX: acc[l] = x != x ? x : (acc[l] < x ? x : acc[l]); break;
        case AXON_SEGMENT_MIN: acc[l] = x != x ? x : (x < acc[l] ? x : acc[l]); break;
        case AXON_SEGMENT_PROD: acc[l] *= x; break;
        default: acc[l] += x; break;
        }
    }
}

/* Rows [begin, end). */
static void seg_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    seg_job_t *j = ctx;
    const seg_args_t *a = j->a;
    double acc[SEG_LANES], v[SEG_LANES];
    const int64_t per_row = a->segments + (a->is_offsets ? 1 : 0);
    for (int64_t o = begin; o < end && !atomic_load_explicit(&j->bad, memory_order_relaxed); o++) {
        int64_t start = a->is_offsets ? seg_index(a, o * per_row) : 0;
        for (int64_t s = 0; s < a->segments; s++) {
            const int64_t len =
                a->is_offsets ? seg_index(a, o * per_row + s + 1) - start : seg_index(a, o * per_row + s);
            if (len < 0 || start < 0 || start > a->n || len > a->n - start) {
                atomic_store_explicit(&j->bad, 1, memory_order_relaxed);
                return;
            }
            for (int64_t l0 = 0; l0 < a->inner; l0 += SEG_LANES) {
                const int64_t m = a->inner - l0 < SEG_LANES ? a->inner - l0 : SEG_LANES;
                const double init = seg_start_value(a);
                for (int64_t l = 0; l < m; l++) acc[l] = init;
                for (int64_t e = start; e < start + len; e++) {
                    a->load((char *)v, 1, a->data + ((o * a->n + e) * a->inner + l0) * (int64_t)a->es, 1, m);
                    seg_fold(a->op, acc, v, m);
                }
                if (a->op == AXON_SEGMENT_MEAN) {
                    for (int64_t l = 0; l < m; l++) {
                        if (len == 0 && !a->has_initial) acc[l] = NAN;
                        else if (len > 0 && acc[l] == acc[l]) acc[l] /= (double)len;
                    }
                }
                a->store(a->out + ((o * a->segments + s) * a->inner + l0) * (int64_t)a->es, 1, (const char *)acc, 1,
                         m);
            }
            start += len;
        }
    }
}

static axon_status_t seg_kernel(const void *args, const axon_exec_t *ex) {
    seg_job_t j;
    j.a = args;
    atomic_init(&j.bad, 0);
    const int64_t work = (j.a->n + j.a->segments) * (j.a->inner > 0 ? j.a->inner : 1);
    const int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, j.a->outer, grain < 1 ? 1 : grain, seg_rows, &j);
    if (atomic_load(&j.bad))
        return axon_fail(AXON_ERROR_INVALID_ARG, "segment_reduce: a %s is negative or reaches past the %lld elements "
                         "along the reduced dimension", j.a->is_offsets ? "segment's offsets are out of order or one"
                                                                          : "segment length",
                         (long long)j.a->n);
    return AXON_OK;
}

axon_status_t axon_kernel_segment_reduce(axon_stream_t s, axon_segment_reduce_t op, const axon_tensor_t *out,
                                         const axon_tensor_t *data, const axon_tensor_t *lengths, int is_offsets,
                                         int has_initial, double initial) {
    if ((unsigned)op >= AXON_SEGMENT_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "segment_reduce: op %d is not an axon_segment_reduce_t", (int)op);
    axon_status_t st = axon_kernel_check_operand(data, "segment_reduce", "data", 0);
    if (st == AXON_OK) st = axon_kernel_check_operand(out, "segment_reduce", "out", 1);
    if (st == AXON_OK) st = axon_kernel_check_operand(lengths, "segment_reduce", "lengths", 0);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(data->dtype) || out->dtype != data->dtype)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "segment_reduce: data and out must be one float dtype (got %s and %s)",
                         axon_dtype_name(data->dtype), axon_dtype_name(out->dtype));
    if (lengths->dtype != AXON_INT64 && lengths->dtype != AXON_INT32)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "segment_reduce: lengths dtype %s is not int32 or int64",
                         axon_dtype_name(lengths->dtype));
    if (data->ndim != 3 || out->ndim != 3 || lengths->ndim != 2 || !axon_tensor_is_contiguous(data) ||
        !axon_tensor_is_contiguous(out) || !axon_tensor_is_contiguous(lengths))
        return axon_fail(AXON_ERROR_INVALID_ARG, "segment_reduce: expected contiguous data [outer, n, inner], out "
                         "[outer, segments, inner] and lengths [outer, segments (+1 for offsets)]");
    const int64_t outer = data->sizes[0], segments = out->sizes[1];
    if (out->sizes[0] != outer || out->sizes[2] != data->sizes[2] || lengths->sizes[0] != outer ||
        lengths->sizes[1] != segments + (is_offsets ? 1 : 0)) {
        char sd[96], so[96], sl[96];
        return axon_fail(AXON_ERROR_INVALID_ARG, "segment_reduce: shapes data %s, out %s and lengths %s do not match",
                         axon_shape_format(data, sd, 96), axon_shape_format(out, so, 96),
                         axon_shape_format(lengths, sl, 96));
    }
    if (axon_tensor_numel(out) == 0) return AXON_OK;
    seg_args_t a;
    memset(&a, 0, sizeof a);
    a.op = op, a.is_offsets = is_offsets != 0, a.has_initial = has_initial != 0, a.initial = initial;
    a.outer = outer, a.n = data->sizes[1], a.inner = data->sizes[2], a.segments = segments;
    a.data = data->data, a.out = out->data, a.lengths = lengths->data, a.lengths64 = lengths->dtype == AXON_INT64;
    a.es = axon_dtype_size(data->dtype);
    a.load = axon_convert_get(data->dtype, AXON_FLOAT64);
    a.store = axon_convert_get(AXON_FLOAT64, out->dtype);
    const uint64_t bytes = (uint64_t)(axon_tensor_numel(data) + axon_tensor_numel(out)) * a.es;
    axon_launch_t l = {seg_kernel, &a, sizeof a, "segment_reduce", bytes};
    return axon_stream_launch(s, &l);
}
