/* axon_kernel_arange (axon/kernels.h) and axon_kernel_linspace (axon/linspace.h): 1-d sequences whose element i is a
 * function of i alone, so the result does not depend on how the range is split over threads. Values are made in
 * short stack batches, in int64 or double, and stored with the copy's conversion loops, so every dtype and stride the
 * copy handles is handled here too. */
#include <math.h>
#include <string.h>

#include "axon/linspace.h"

#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"

#define SEQUENCE_BATCH 256

enum sequence_kind {
    SEQUENCE_ARANGE_INT,         /* istart + i * istep in wrapping int64 */
    SEQUENCE_ARANGE_FLOAT,       /* start + i * step in double */
    SEQUENCE_LINSPACE,           /* PyTorch's symmetric formula: up from start below half, down from end above */
};

struct sequence_args {
    axon_tensor_t dst;
    enum sequence_kind kind;
    double start, end, step;
    int64_t istart, istep;
    int64_t n, half;             /* linspace only */
};

struct sequence_job {
    const struct sequence_args *a;
    axon_iter_t it;              /* dst's single dimension */
};

/* Elements first..first+m-1 into buf (int64 for SEQUENCE_ARANGE_INT, double otherwise). */
static void sequence_values(const struct sequence_args *a, int64_t first, int64_t m, void *buf) {
    switch (a->kind) {
    case SEQUENCE_ARANGE_INT: {
        int64_t *out = buf;
        /* Unsigned arithmetic: wrapping is the defined low-bits behaviour we document. */
        for (int64_t k = 0; k < m; k++)
            out[k] = (int64_t)((uint64_t)a->istart + (uint64_t)(first + k) * (uint64_t)a->istep);
        break;
    }
    case SEQUENCE_ARANGE_FLOAT: {
        double *out = buf;
        for (int64_t k = 0; k < m; k++) out[k] = a->start + (double)(first + k) * a->step;
        break;
    }
    case SEQUENCE_LINSPACE: {
        /* fma, not a * b + c: PyTorch's vectorized CPU builds contract theirs, and wide int64 ranges differ by an
         * ulp of the double (512 at 2^62) otherwise. */
        double *out = buf;
        for (int64_t k = 0; k < m; k++) {
            const int64_t i = first + k;
            out[k] = i < a->half ? fma((double)i, a->step, a->start) : fma((double)(a->n - 1 - i), -a->step, a->end);
        }
        break;
    }
    }
}

AXON_CLONES static void sequence_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    const struct sequence_args *a = ((const struct sequence_job *)ctx)->a;
    const axon_convert_fn store = axon_convert_get(a->kind == SEQUENCE_ARANGE_INT ? AXON_INT64 : AXON_FLOAT64,
                                                   a->dst.dtype);
    const size_t es = axon_dtype_size(a->dst.dtype);
    for (int64_t done = 0; done < n; done += SEQUENCE_BATCH) {
        const int64_t m = n - done < SEQUENCE_BATCH ? n - done : SEQUENCE_BATCH;
        union {
            int64_t i[SEQUENCE_BATCH];
            double f[SEQUENCE_BATCH];
        } buf;
        sequence_values(a, pos + done, m, &buf);
        store(ptr[0] + done * stride[0] * (int64_t)es, stride[0], (const char *)&buf, 1, m);
    }
}

static void sequence_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct sequence_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, sequence_run, ctx);
}

static axon_status_t sequence_kernel(const void *args, const axon_exec_t *ex) {
    struct sequence_job j = {args, {0}};
    const axon_tensor_t *t = &j.a->dst;
    axon_iter_init(&j.it, 1, &t, 0);
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, sequence_range, &j);
    return AXON_OK;
}

/* The checks both ops share: a valid, 1-d, floating or integer dst. */
static axon_status_t sequence_check_dst(const axon_tensor_t *dst, const char *op, const char *what) {
    axon_status_t st = axon_kernel_check_dst(dst, what);
    if (st != AXON_OK) return st;
    if (dst->ndim != 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dst has %d dimensions; expected 1", op, dst->ndim);
    if (!axon_dtype_is_floating(dst->dtype) && !axon_dtype_is_integer(dst->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s is not a floating or integer dtype", op,
                         axon_dtype_name(dst->dtype));
    return AXON_OK;
}

static axon_status_t sequence_launch(axon_stream_t s, const struct sequence_args *a, const char *op) {
    if (a->dst.sizes[0] == 0) return AXON_OK;
    axon_launch_t l = {sequence_kernel, a, sizeof *a, op, (uint64_t)a->dst.sizes[0] * axon_dtype_size(a->dst.dtype)};
    return axon_stream_launch(s, &l);
}

/* The scalar as a double or an int64, with the copy rules; complex is refused. */
static axon_status_t arange_scalar(axon_scalar_t v, const char *name, double *f, int64_t *i) {
    switch (v.dtype) {
    case AXON_FLOAT64: *f = v.f, *i = axon_f64_to_i64(v.f); return AXON_OK;
    case AXON_INT64: *f = (double)v.i, *i = v.i; return AXON_OK;
    case AXON_BOOL: *f = v.i != 0, *i = v.i != 0; return AXON_OK;
    default:
        return axon_fail(AXON_ERROR_INVALID_ARG, "arange: %s has dtype %s (%d); expected float64, int64 or bool",
                         name, axon_dtype_name(v.dtype), (int)v.dtype);
    }
}

axon_status_t axon_kernel_arange(axon_stream_t s, const axon_tensor_t *dst, axon_scalar_t start,
                                 axon_scalar_t step) {
    axon_status_t st = sequence_check_dst(dst, "arange", "arange: dst");
    if (st != AXON_OK) return st;
    struct sequence_args a;
    memset(&a, 0, sizeof a);
    a.dst = *dst;
    a.kind = axon_dtype_is_integer(dst->dtype) ? SEQUENCE_ARANGE_INT : SEQUENCE_ARANGE_FLOAT;
    if ((st = arange_scalar(start, "start", &a.start, &a.istart)) != AXON_OK) return st;
    if ((st = arange_scalar(step, "step", &a.step, &a.istep)) != AXON_OK) return st;
    return sequence_launch(s, &a, "arange");
}

axon_status_t axon_kernel_linspace(axon_stream_t s, const axon_tensor_t *dst, double start, double end) {
    axon_status_t st = sequence_check_dst(dst, "linspace", "linspace: dst");
    if (st != AXON_OK) return st;
    struct sequence_args a;
    memset(&a, 0, sizeof a);
    a.dst = *dst;
    a.kind = SEQUENCE_LINSPACE;
    a.n = dst->sizes[0];
    a.start = start;
    a.end = end;
    a.step = a.n > 1 ? (end - start) / (double)(a.n - 1) : 0;
    a.half = a.n > 1 ? a.n / 2 : 1; /* one element: start */
    return sequence_launch(s, &a, "linspace");
}
