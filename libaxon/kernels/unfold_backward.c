/* unfold's backward (axon/shape.h): each element of grad_input gathers the window elements it appeared in.
 *
 * Tensor.unfold(dim, size, step) views window w as elements w * step .. w * step + size - 1 of dim, so element j of
 * a line along dim sits in the windows w with 0 <= j - w * step < size. Each output block is owned by one thread
 * (no two threads write one element), and each element gets the sum over its windows in increasing w, in double,
 * rounded once. Elements in no window (the tail past the last one, or gaps when step > size) get 0. */
#include <inttypes.h>
#include <string.h>

#include "axon/shape.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

typedef struct ufb_args {
    const char *grad;            /* [outer, windows, inner, size], contiguous */
    char *out;                   /* [outer, len, inner], contiguous */
    axon_dtype_t dtype;
    int64_t outer, len, inner, windows, size, step;
    axon_convert_fn to_f64, from_f64;
} ufb_args_t;

/* Work is split into units of one line (o, i) and one block of UFB_BATCH consecutive j; the block's windows add
 * their contiguous runs into a double accumulator in increasing w, so each element still sums its windows in
 * increasing order, and the per-element index arithmetic (a division and a modulo each) is gone. */
#define UFB_BATCH 256

AXON_CLONES static void ufb_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const ufb_args_t *a = ctx;
    const size_t es = axon_dtype_size(a->dtype);
    const int64_t blocks = (a->len + UFB_BATCH - 1) / UFB_BATCH;
    double acc[UFB_BATCH], run[UFB_BATCH];
    for (int64_t u = begin; u < end; u++) {
        const int64_t line = u / blocks, o = line / a->inner, i = line % a->inner;
        const int64_t j0 = u % blocks * UFB_BATCH, j1 = j0 + UFB_BATCH < a->len ? j0 + UFB_BATCH : a->len;
        memset(acc, 0, sizeof acc);
        /* windows w with w * step <= j < w * step + size for some j in [j0, j1) */
        const int64_t lo = j0 - a->size + 1 <= 0 ? 0 : (j0 - a->size + 1 + a->step - 1) / a->step;
        const int64_t hi = (j1 - 1) / a->step < a->windows - 1 ? (j1 - 1) / a->step : a->windows - 1;
        for (int64_t w = lo; w <= hi; w++) {
            const int64_t first = w * a->step > j0 ? w * a->step : j0;
            const int64_t last = w * a->step + a->size < j1 ? w * a->step + a->size : j1;
            if (first >= last) continue; /* a gap between windows when step > size */
            /* grad element of j in window w: base + j */
            const int64_t base = ((o * a->windows + w) * a->inner + i) * a->size - w * a->step;
            double *dst = acc + (first - j0);
            const int64_t n = last - first;
            if (a->dtype == AXON_FLOAT32) {
                const float *g = (const float *)(const void *)a->grad + base + first;
                for (int64_t k = 0; k < n; k++) dst[k] += g[k];
            } else if (a->dtype == AXON_FLOAT64) {
                const double *g = (const double *)(const void *)a->grad + base + first;
                for (int64_t k = 0; k < n; k++) dst[k] += g[k];
            } else { /* the half types */
                a->to_f64((char *)run, 1, a->grad + (size_t)(base + first) * es, 1, n);
                for (int64_t k = 0; k < n; k++) dst[k] += run[k];
            }
        }
        a->from_f64(a->out + (size_t)((o * a->len + j0) * a->inner + i) * es, a->inner, (const char *)acc, 1,
                    j1 - j0);
    }
}

static axon_status_t ufb_kernel(const void *args, const axon_exec_t *ex) {
    const ufb_args_t *a = args;
    const int64_t blocks = (a->len + UFB_BATCH - 1) / UFB_BATCH;
    const int64_t per = (a->size / a->step + 1) * UFB_BATCH, grain = AXON_KERNEL_GRAIN / per;
    axon_parallel_for(ex->pool, 0, a->outer * a->inner * blocks, grain < 1 ? 1 : grain, ufb_range, (void *)a);
    return AXON_OK;
}

axon_status_t axon_kernel_unfold_backward(axon_stream_t s, const axon_tensor_t *grad_input,
                                          const axon_tensor_t *grad, int64_t size, int64_t step) {
    const char *op = "unfold_backward";
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(grad, op, "grad", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(grad_input, op, "grad_input", 1)) != AXON_OK) return st;
    if (grad->dtype != grad_input->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: grad dtype %s differs from grad_input dtype %s", op,
                         axon_dtype_name(grad->dtype), axon_dtype_name(grad_input->dtype));
    if (!axon_dtype_is_floating(grad->dtype) || axon_dtype_size(grad->dtype) == 1 ||
        grad->dtype == AXON_COMPLEX64 || grad->dtype == AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: dtype %s is not supported (float32/64, float16, bfloat16)", op,
                         axon_dtype_name(grad->dtype));
    if (grad_input->ndim != 3 || grad->ndim != 4 || !axon_tensor_is_contiguous(grad) ||
        !axon_tensor_is_contiguous(grad_input))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: expects a contiguous [outer, len, inner] grad_input and "
                         "[outer, windows, inner, size] grad, got %s and %s", op,
                         axon_shape_format(grad_input, sa, sizeof sa), axon_shape_format(grad, sb, sizeof sb));
    const int64_t outer = grad_input->sizes[0], len = grad_input->sizes[1], inner = grad_input->sizes[2];
    const int64_t windows = grad->sizes[1];
    if (size < 1 || step < 1 || grad->sizes[0] != outer || grad->sizes[2] != inner || grad->sizes[3] != size ||
        (len >= size ? windows != (len - size) / step + 1 : windows != 0))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: grad %s does not hold the windows of size %" PRId64 " and step %"
                         PRId64 " of grad_input %s", op, axon_shape_format(grad, sb, sizeof sb), size, step,
                         axon_shape_format(grad_input, sa, sizeof sa));
    ufb_args_t a;
    memset(&a, 0, sizeof a);
    a.grad = grad->data;
    a.out = grad_input->data;
    a.dtype = grad->dtype;
    a.outer = outer, a.len = len, a.inner = inner, a.windows = windows, a.size = size, a.step = step;
    if (outer * len * inner == 0) return AXON_OK;
    a.to_f64 = axon_convert_get(a.dtype, AXON_FLOAT64);
    a.from_f64 = axon_convert_get(AXON_FLOAT64, a.dtype);
    axon_launch_t l = {ufb_kernel, &a, sizeof a, op,
                       (uint64_t)(axon_tensor_numel(grad) + outer * len * inner) * axon_dtype_size(a.dtype)};
    return axon_stream_launch(s, &l);
}
