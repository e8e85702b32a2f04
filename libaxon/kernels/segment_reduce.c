/* axon_kernel_segment_reduce and its backward (axon/segment.h): one row of data ([n, inner]) per task. A row's
 * segments are walked in order, each one's elements loaded into float64 a block of lanes at a time (one lane per
 * inner index) and folded in data's order, so results do not depend on the thread count. Lengths are checked as
 * they are read: a negative length or a segment outside the row stops the command with INVALID_ARG before it reads
 * past the row. */
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
    int backward;
    const char *grad, *result;   /* backward: the output's gradient and the forward's output */
    char *grad_in;
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

/* Element e of lane block l0 of row o into v (m lanes). */
static void seg_load(const seg_args_t *a, const char *base, int64_t row, int64_t e, int64_t rows, int64_t l0,
                     int64_t m, double *v) {
    a->load((char *)v, 1, base + ((row * rows + e) * a->inner + l0) * (int64_t)a->es, 1, m);
}

static void seg_store(const seg_args_t *a, char *base, int64_t row, int64_t e, int64_t rows, int64_t l0, int64_t m,
                      const double *v) {
    a->store(base + ((row * rows + e) * a->inner + l0) * (int64_t)a->es, 1, (const char *)v, 1, m);
}

/* The forward of segment s ([start, start + len)) of row o for lanes [l0, l0 + m). */
static void seg_forward(const seg_args_t *a, int64_t o, int64_t s, int64_t start, int64_t len, int64_t l0, int64_t m) {
    double acc[SEG_LANES], v[SEG_LANES];
    const double init = seg_start_value(a);
    for (int64_t l = 0; l < m; l++) acc[l] = init;
    for (int64_t e = start; e < start + len; e++) {
        seg_load(a, a->data, o, e, a->n, l0, m, v);
        seg_fold(a->op, acc, v, m);
    }
    if (a->op == AXON_SEGMENT_MEAN) {
        for (int64_t l = 0; l < m; l++) {
            if (len == 0 && !a->has_initial) acc[l] = NAN;
            else if (len > 0 && acc[l] == acc[l]) acc[l] /= (double)len;
        }
    }
    seg_store(a, a->out, o, s, a->segments, l0, m, acc);
}

/* The backward of one non-empty segment, as axon/segment.h states it, one lane at a time. */
static void seg_backward(const seg_args_t *a, int64_t o, int64_t s, int64_t start, int64_t len, int64_t l0,
                         int64_t m) {
    double g[SEG_LANES], y[SEG_LANES], x[SEG_LANES], gi[SEG_LANES];
    seg_load(a, a->grad, o, s, a->segments, l0, m, g);
    seg_load(a, a->result, o, s, a->segments, l0, m, y);
    if (a->op == AXON_SEGMENT_SUM || a->op == AXON_SEGMENT_MEAN) {
        for (int64_t l = 0; l < m; l++) gi[l] = a->op == AXON_SEGMENT_MEAN ? g[l] / (double)len : g[l];
        for (int64_t e = start; e < start + len; e++) seg_store(a, a->grad_in, o, e, a->n, l0, m, gi);
        return;
    }
    if (a->op == AXON_SEGMENT_MAX || a->op == AXON_SEGMENT_MIN) {
        int64_t count[SEG_LANES] = {0};
        for (int64_t e = start; e < start + len; e++) {
            seg_load(a, a->data, o, e, a->n, l0, m, x);
            for (int64_t l = 0; l < m; l++) count[l] += x[l] != x[l] || x[l] == y[l];
        }
        for (int64_t e = start; e < start + len; e++) {
            seg_load(a, a->data, o, e, a->n, l0, m, x);
            seg_load(a, a->grad_in, o, e, a->n, l0, m, gi);
            for (int64_t l = 0; l < m; l++)
                if (x[l] != x[l] || x[l] == y[l]) gi[l] = count[l] >= 2 && g[l] > 0 ? g[l] / (double)count[l] : g[l];
            seg_store(a, a->grad_in, o, e, a->n, l0, m, gi);
        }
        return;
    }
    /* PROD */
    const double init = a->has_initial ? a->initial : 1.0;
    for (int64_t e = start; e < start + len; e++) {
        seg_load(a, a->data, o, e, a->n, l0, m, x);
        for (int64_t l = 0; l < m; l++) {
            if (x[l] == x[l] && x[l] != 0) {
                gi[l] = g[l] * y[l] / x[l];
                continue;
            }
            double others = init, w;
            for (int64_t k = start; k < start + len; k++) {
                if (k == e) continue;
                a->load((char *)&w, 1, a->data + ((o * a->n + k) * a->inner + l0 + l) * (int64_t)a->es, 1, 1);
                others *= w;
            }
            gi[l] = g[l] * others;
        }
        seg_store(a, a->grad_in, o, e, a->n, l0, m, gi);
    }
}

/* Rows [begin, end). */
static void seg_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    seg_job_t *j = ctx;
    const seg_args_t *a = j->a;
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
                if (!a->backward) seg_forward(a, o, s, start, len, l0, m);
                else if (len > 0) seg_backward(a, o, s, start, len, l0, m);
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
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: a %s is negative or reaches past the %lld elements along the "
                         "reduced dimension", j.a->backward ? "segment_reduce_backward" : "segment_reduce",
                         j.a->is_offsets ? "segment's offsets are out of order or one" : "segment length",
                         (long long)j.a->n);
    return AXON_OK;
}

/* The checks both directions share; fills a's shape and operand fields. */
static axon_status_t seg_prepare(const char *name, axon_segment_reduce_t op, const axon_tensor_t *out,
                                 const axon_tensor_t *data, const axon_tensor_t *lengths, int is_offsets,
                                 int has_initial, double initial, seg_args_t *a) {
    if ((unsigned)op >= AXON_SEGMENT_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: op %d is not an axon_segment_reduce_t", name, (int)op);
    axon_status_t st = axon_kernel_check_operand(data, name, "data", 0);
    if (st == AXON_OK) st = axon_kernel_check_operand(out, name, "out", 0);
    if (st == AXON_OK) st = axon_kernel_check_operand(lengths, name, "lengths", 0);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(data->dtype) || out->dtype != data->dtype)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: data and out must be one float dtype (got %s and %s)", name,
                         axon_dtype_name(data->dtype), axon_dtype_name(out->dtype));
    if (lengths->dtype != AXON_INT64 && lengths->dtype != AXON_INT32)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: lengths dtype %s is not int32 or int64", name,
                         axon_dtype_name(lengths->dtype));
    if (data->ndim != 3 || out->ndim != 3 || lengths->ndim != 2 || !axon_tensor_is_contiguous(data) ||
        !axon_tensor_is_contiguous(out) || !axon_tensor_is_contiguous(lengths))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: expected contiguous data [outer, n, inner], out "
                         "[outer, segments, inner] and lengths [outer, segments (+1 for offsets)]", name);
    const int64_t outer = data->sizes[0], segments = out->sizes[1];
    if (out->sizes[0] != outer || out->sizes[2] != data->sizes[2] || lengths->sizes[0] != outer ||
        lengths->sizes[1] != segments + (is_offsets ? 1 : 0)) {
        char sd[96], so[96], sl[96];
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: shapes data %s, out %s and lengths %s do not match", name,
                         axon_shape_format(data, sd, 96), axon_shape_format(out, so, 96),
                         axon_shape_format(lengths, sl, 96));
    }
    memset(a, 0, sizeof *a);
    a->op = op, a->is_offsets = is_offsets != 0, a->has_initial = has_initial != 0, a->initial = initial;
    a->outer = outer, a->n = data->sizes[1], a->inner = data->sizes[2], a->segments = segments;
    a->data = data->data, a->lengths = lengths->data, a->lengths64 = lengths->dtype == AXON_INT64;
    a->es = axon_dtype_size(data->dtype);
    a->load = axon_convert_get(data->dtype, AXON_FLOAT64);
    a->store = axon_convert_get(AXON_FLOAT64, out->dtype);
    return AXON_OK;
}

/* Same shape and dtype as ref, contiguous. */
static axon_status_t seg_like(const char *name, const char *role, const axon_tensor_t *t, const axon_tensor_t *ref,
                              int is_dst) {
    axon_status_t st = axon_kernel_check_operand(t, name, role, is_dst);
    if (st != AXON_OK) return st;
    int same = t->dtype == ref->dtype && t->ndim == ref->ndim && axon_tensor_is_contiguous(t);
    for (int i = 0; same && i < t->ndim; i++) same = t->sizes[i] == ref->sizes[i];
    if (!same) {
        char st_[96], sr[96];
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s %s %s must be contiguous with %s %s", name, role,
                         axon_dtype_name(t->dtype), axon_shape_format(t, st_, 96), axon_dtype_name(ref->dtype),
                         axon_shape_format(ref, sr, 96));
    }
    return AXON_OK;
}

axon_status_t axon_kernel_segment_reduce(axon_stream_t s, axon_segment_reduce_t op, const axon_tensor_t *out,
                                         const axon_tensor_t *data, const axon_tensor_t *lengths, int is_offsets,
                                         int has_initial, double initial) {
    seg_args_t a;
    axon_status_t st = seg_prepare("segment_reduce", op, out, data, lengths, is_offsets, has_initial, initial, &a);
    if (st == AXON_OK) st = axon_kernel_check_operand(out, "segment_reduce", "out", 1);
    if (st != AXON_OK) return st;
    if (axon_tensor_numel(out) == 0) return AXON_OK;
    a.out = out->data;
    const uint64_t bytes = (uint64_t)(axon_tensor_numel(data) + axon_tensor_numel(out)) * a.es;
    axon_launch_t l = {seg_kernel, &a, sizeof a, "segment_reduce", bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_segment_reduce_backward(axon_stream_t s, axon_segment_reduce_t op,
                                                  const axon_tensor_t *grad_in, const axon_tensor_t *grad,
                                                  const axon_tensor_t *out, const axon_tensor_t *data,
                                                  const axon_tensor_t *lengths, int is_offsets, int has_initial,
                                                  double initial) {
    const char *name = "segment_reduce_backward";
    seg_args_t a;
    axon_status_t st = seg_prepare(name, op, out, data, lengths, is_offsets, has_initial, initial, &a);
    if (st == AXON_OK) st = seg_like(name, "grad", grad, out, 0);
    if (st == AXON_OK) st = seg_like(name, "grad_in", grad_in, data, 1);
    if (st != AXON_OK) return st;
    if (axon_tensor_numel(out) == 0 || axon_tensor_numel(data) == 0) return AXON_OK;
    a.backward = 1;
    a.grad = grad->data, a.result = out->data, a.grad_in = grad_in->data;
    const uint64_t bytes = (uint64_t)(2 * axon_tensor_numel(data) + 2 * axon_tensor_numel(out)) * a.es;
    axon_launch_t l = {seg_kernel, &a, sizeof a, name, bytes};
    return axon_stream_launch(s, &l);
}
