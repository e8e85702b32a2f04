/* axon_kernel_fill and axon_kernel_arange.
 *
 * fill converts the value once, on the host, into dst's dtype and stores the bytes in the argument block; the kernel
 * is then a copy from a broadcast (all strides 0) source that points into its own argument copy, so every dst layout
 * the copy handles is handled here too. arange computes values in double or int64 in short stack batches and stores
 * them with the same conversion loops. */
#include <inttypes.h>

#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"

struct fill_args {
    axon_tensor_t dst;
    union {
        unsigned char bytes[16];
        double align;            /* complex128 elements need 8-byte alignment */
    } value;
};

/* Convert a scalar to one element of dtype `to` in out (16 bytes). INVALID_ARG for a scalar of another dtype. */
static axon_status_t fill_convert_scalar(axon_scalar_t v, axon_dtype_t to, void *out, const char *what) {
    union {
        double f;
        int64_t i;
        uint8_t b;
        axon_c128_t c;
    } src;
    switch (v.dtype) {
    case AXON_FLOAT64: src.f = v.f; break;
    case AXON_INT64: src.i = v.i; break;
    case AXON_BOOL: src.b = v.i != 0; break;
    case AXON_COMPLEX128: src.c.re = v.f, src.c.im = v.imag; break;
    default:
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: scalar dtype %s (%d) is not float64, int64, bool or complex128", what,
                         axon_dtype_name(v.dtype), (int)v.dtype);
    }
    axon_convert_get(v.dtype, to)(out, 1, (const char *)&src, 1, 1);
    return AXON_OK;
}

static axon_status_t fill_kernel(const void *args, const axon_exec_t *ex) {
    const struct fill_args *a = args;
    axon_tensor_t src = a->dst;
    src.data = (void *)a->value.bytes; /* read only: the copy never writes its source */
    for (int i = 0; i < src.ndim; i++) src.strides[i] = 0;
    axon_copy_execute(&a->dst, &src, ex->pool);
    return AXON_OK;
}

axon_status_t axon_kernel_fill(axon_stream_t s, const axon_tensor_t *dst, axon_scalar_t value) {
    axon_status_t st = axon_kernel_check_dst(dst, "fill: dst");
    if (st != AXON_OK) return st;
    struct fill_args a;
    memset(&a, 0, sizeof a);
    a.dst = *dst;
    if ((st = fill_convert_scalar(value, dst->dtype, a.value.bytes, "fill")) != AXON_OK) return st;
    int64_t n = axon_tensor_numel(dst);
    if (n == 0) return AXON_OK;
    axon_launch_t l = {fill_kernel, &a, sizeof a, "fill", (uint64_t)n * axon_dtype_size(dst->dtype)};
    return axon_stream_launch(s, &l);
}

/* ---- arange ---- */

#define ARANGE_BATCH 256

struct arange_args {
    axon_tensor_t dst;
    int integer;                 /* 1: int64 arithmetic with istart/istep; 0: double with start/step */
    double start, step;
    int64_t istart, istep;
};

struct arange_job {
    const struct arange_args *a;
    axon_iter_t it;              /* dst's single dimension */
};

AXON_CLONES static void arange_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    const struct arange_args *a = ((const struct arange_job *)ctx)->a;
    axon_convert_fn store = axon_convert_get(a->integer ? AXON_INT64 : AXON_FLOAT64, a->dst.dtype);
    size_t es = axon_dtype_size(a->dst.dtype);
    for (int64_t done = 0; done < n; done += ARANGE_BATCH) {
        int64_t m = n - done < ARANGE_BATCH ? n - done : ARANGE_BATCH;
        if (a->integer) {
            int64_t buf[ARANGE_BATCH];
            /* Unsigned arithmetic: wrapping is the defined low-bits behaviour we document. */
            for (int64_t k = 0; k < m; k++)
                buf[k] = (int64_t)((uint64_t)a->istart + (uint64_t)(pos + done + k) * (uint64_t)a->istep);
            store(ptr[0] + done * stride[0] * (int64_t)es, stride[0], (const char *)buf, 1, m);
        } else {
            double buf[ARANGE_BATCH];
            for (int64_t k = 0; k < m; k++) buf[k] = a->start + (double)(pos + done + k) * a->step;
            store(ptr[0] + done * stride[0] * (int64_t)es, stride[0], (const char *)buf, 1, m);
        }
    }
}

static void arange_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct arange_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, arange_run, ctx);
}

static axon_status_t arange_kernel(const void *args, const axon_exec_t *ex) {
    struct arange_job j = {args, {0}};
    const axon_tensor_t *t = &j.a->dst;
    axon_iter_init(&j.it, 1, &t, 0);
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, arange_range, &j);
    return AXON_OK;
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
    axon_status_t st = axon_kernel_check_dst(dst, "arange: dst");
    if (st != AXON_OK) return st;
    if (dst->ndim != 1) return axon_fail(AXON_ERROR_INVALID_ARG, "arange: dst has %d dimensions; expected 1", dst->ndim);
    if (!axon_dtype_is_floating(dst->dtype) && !axon_dtype_is_integer(dst->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "arange: %s is not a floating or integer dtype",
                         axon_dtype_name(dst->dtype));
    struct arange_args a;
    memset(&a, 0, sizeof a);
    a.dst = *dst;
    a.integer = axon_dtype_is_integer(dst->dtype);
    if ((st = arange_scalar(start, "start", &a.start, &a.istart)) != AXON_OK) return st;
    if ((st = arange_scalar(step, "step", &a.step, &a.istep)) != AXON_OK) return st;
    if (dst->sizes[0] == 0) return AXON_OK;
    axon_launch_t l = {arange_kernel, &a, sizeof a, "arange", (uint64_t)dst->sizes[0] * axon_dtype_size(dst->dtype)};
    return axon_stream_launch(s, &l);
}
