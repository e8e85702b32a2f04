/* axon_kernel_linspace: PyTorch's symmetric linspace (axon/linspace.h), in double, stored with the copy rules. Values
 * are made in short stack batches, as arange's are (fill.c), and each element from its own index, so the result does
 * not depend on how the range is split over threads. fma, not a * b + c: PyTorch's vectorized CPU builds contract
 * theirs, and wide int64 ranges differ by an ulp of the double (512 at 2^62) otherwise. */
#include <math.h>
#include <string.h>

#include "axon/linspace.h"

#include "internal.h"
#include "kernels_impl.h"

#define LINSPACE_BATCH 256

struct linspace_args {
    axon_tensor_t dst;
    double start, end, step;
    int64_t n, half;             /* n elements; those below half count up from start, the rest down from end */
};

struct linspace_job {
    const struct linspace_args *a;
    axon_iter_t it;              /* dst's single dimension */
};

static void linspace_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    const struct linspace_args *a = ((const struct linspace_job *)ctx)->a;
    const axon_convert_fn store = axon_convert_get(AXON_FLOAT64, a->dst.dtype);
    const size_t es = axon_dtype_size(a->dst.dtype);
    for (int64_t done = 0; done < n; done += LINSPACE_BATCH) {
        const int64_t m = n - done < LINSPACE_BATCH ? n - done : LINSPACE_BATCH;
        double buf[LINSPACE_BATCH];
        for (int64_t k = 0; k < m; k++) {
            const int64_t i = pos + done + k;
            buf[k] = i < a->half ? fma((double)i, a->step, a->start) : fma((double)(a->n - 1 - i), -a->step, a->end);
        }
        store(ptr[0] + done * stride[0] * (int64_t)es, stride[0], (const char *)buf, 1, m);
    }
}

static void linspace_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct linspace_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, linspace_run, ctx);
}

static axon_status_t linspace_kernel(const void *args, const axon_exec_t *ex) {
    struct linspace_job j = {args, {0}};
    const axon_tensor_t *t = &j.a->dst;
    axon_iter_init(&j.it, 1, &t, 0);
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, linspace_range, &j);
    return AXON_OK;
}

axon_status_t axon_kernel_linspace(axon_stream_t s, const axon_tensor_t *dst, double start, double end) {
    axon_status_t st = axon_kernel_check_dst(dst, "linspace: dst");
    if (st != AXON_OK) return st;
    if (dst->ndim != 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "linspace: dst has %d dimensions; expected 1", dst->ndim);
    if (!axon_dtype_is_floating(dst->dtype) && !axon_dtype_is_integer(dst->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "linspace: %s is not a floating or integer dtype",
                         axon_dtype_name(dst->dtype));
    struct linspace_args a;
    memset(&a, 0, sizeof a);
    a.dst = *dst;
    a.n = dst->sizes[0];
    if (a.n == 0) return AXON_OK;
    a.start = start;
    a.end = end;
    a.step = a.n > 1 ? (end - start) / (double)(a.n - 1) : 0;
    a.half = a.n > 1 ? a.n / 2 : 1; /* one element: start */
    axon_launch_t l = {linspace_kernel, &a, sizeof a, "linspace", (uint64_t)a.n * axon_dtype_size(dst->dtype)};
    return axon_stream_launch(s, &l);
}
