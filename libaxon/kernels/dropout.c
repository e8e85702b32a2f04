/* Dropout forward and backward (axon/dropout.h). Contiguous tensors are walked in blocks of DO_BATCH elements, blocks
 * in parallel; the forward draws element i from Philox block i / 4, lane i % 4, so the mask depends only on
 * (seed, offset, i), never on the thread count. Values go through float64 on the stack with the copy's converters;
 * the multiply by scale is rounded to float first for the 32-bit and half dtypes, which is the opmath product
 * PyTorch takes. */
#include <math.h>
#include <string.h>

#include "axon/dropout.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"
#include "philox.h"

#define DO_BATCH 256

typedef struct do_args {
    int backward;
    int64_t numel;
    uint64_t seed, offset;
    double keep_p, scale;
    int float_math;              /* round x * scale to float before the dtype (all but float64) */
    char *out, *mask;            /* forward writes the mask; backward reads it */
    const char *in;
    axon_dtype_t dt_out, dt_in;
} do_args_t;

static void do_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const do_args_t *a = ctx;
    const size_t es_in = axon_dtype_size(a->dt_in), es_out = axon_dtype_size(a->dt_out);
    axon_convert_fn ld = axon_convert_get(a->dt_in, AXON_FLOAT64), st = axon_convert_get(AXON_FLOAT64, a->dt_out);
    double v[DO_BATCH];
    uint8_t m[DO_BATCH];
    for (int64_t j = begin; j < end; j += DO_BATCH) {
        const int64_t n = end - j < DO_BATCH ? end - j : DO_BATCH;
        ld((char *)v, 1, a->in + j * (int64_t)es_in, 1, n);
        if (a->backward) {
            for (int64_t k = 0; k < n; k++) m[k] = a->mask[j + k] != 0;
        } else {
            for (int64_t k = 0; k < n;) {
                uint32_t x[4];
                const int64_t i = j + k;
                axon_philox_block(a->seed, a->offset, (uint64_t)(i / 4), x);
                for (int64_t lane = i % 4; lane < 4 && k < n; lane++, k++)
                    m[k] = (double)x[lane] * 0x1p-32 < a->keep_p;
            }
            memcpy(a->mask + j, m, (size_t)n);
        }
        for (int64_t k = 0; k < n; k++) {
            double y = (v[k] * (double)m[k]) * a->scale; /* NaN * 0 stays NaN, as in PyTorch */
            v[k] = a->float_math ? (double)(float)y : y;
        }
        st(a->out + j * (int64_t)es_out, 1, (const char *)v, 1, n);
    }
}

static axon_status_t do_kernel(const void *args, const axon_exec_t *ex) {
    const do_args_t *a = args;
    axon_parallel_for(ex->pool, 0, a->numel, AXON_KERNEL_GRAIN / 4, do_range, (void *)a);
    return AXON_OK;
}

/* Checks shared by both directions: in and out float of one dtype, mask bool; all contiguous, one shape. */
static axon_status_t do_check(const char *op, const axon_tensor_t *out, const axon_tensor_t *mask,
                              const axon_tensor_t *in, const char *in_role, const char *out_role, int mask_is_dst) {
    char sa[160], sb[160];
    const axon_tensor_t *t[3] = {out, mask, in};
    const char *roles[3] = {out_role, "mask", in_role};
    const int dst[3] = {1, mask_is_dst, 0};
    for (int k = 0; k < 3; k++) {
        if (t[k] == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, roles[k]);
        axon_status_t st = axon_kernel_check_operand(t[k], op, roles[k], dst[k]);
        if (st != AXON_OK) return st;
        if (!axon_tensor_is_contiguous(t[k]))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, roles[k],
                             axon_shape_format(t[k], sa, sizeof sa));
        int same = t[k]->ndim == in->ndim;
        for (int i = 0; same && i < in->ndim; i++) same = t[k]->sizes[i] == in->sizes[i];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s does not match %s shape %s", op, roles[k],
                             axon_shape_format(t[k], sa, sizeof sa), in_role, axon_shape_format(in, sb, sizeof sb));
    }
    if (!axon_dtype_is_floating(in->dtype) || out->dtype != in->dtype)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s %s and %s %s must be one of float32, float64, float16, "
                         "bfloat16", op, in_role, axon_dtype_name(in->dtype), out_role, axon_dtype_name(out->dtype));
    if (mask->dtype != AXON_BOOL)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: mask dtype %s is not bool", op, axon_dtype_name(mask->dtype));
    return AXON_OK;
}

static axon_status_t do_launch(axon_stream_t s, const do_args_t *a, const char *op) {
    if (a->numel == 0) return AXON_OK;
    axon_launch_t l = {do_kernel, a, sizeof *a, op,
                       (uint64_t)a->numel * (1u + axon_dtype_size(a->dt_in) + axon_dtype_size(a->dt_out))};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_dropout(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mask,
                                  const axon_tensor_t *in, double p, uint64_t seed, uint64_t offset) {
    axon_status_t st = do_check("dropout", out, mask, in, "in", "out", 1);
    if (st != AXON_OK) return st;
    if (!(p >= 0.0 && p <= 1.0))
        return axon_fail(AXON_ERROR_INVALID_ARG, "dropout: probability has to be between 0 and 1, but got %g", p);
    do_args_t a;
    memset(&a, 0, sizeof a);
    a.numel = axon_tensor_numel(in);
    a.seed = seed, a.offset = offset;
    a.keep_p = 1.0 - p;
    a.scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
    a.float_math = in->dtype != AXON_FLOAT64;
    if (a.float_math) a.scale = (double)(float)a.scale;
    a.out = out->data, a.mask = mask->data, a.in = in->data;
    a.dt_out = out->dtype, a.dt_in = in->dtype;
    return do_launch(s, &a, "dropout");
}

axon_status_t axon_kernel_dropout_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                           const axon_tensor_t *grad_out, const axon_tensor_t *mask, double scale) {
    axon_status_t st = do_check("dropout_backward", grad_in, mask, grad_out, "grad_out", "grad_in", 0);
    if (st != AXON_OK) return st;
    do_args_t a;
    memset(&a, 0, sizeof a);
    a.backward = 1;
    a.numel = axon_tensor_numel(grad_out);
    a.float_math = grad_out->dtype != AXON_FLOAT64;
    a.scale = a.float_math ? (double)(float)scale : scale;
    a.out = grad_in->data, a.mask = mask->data, a.in = grad_out->data;
    a.dt_out = grad_in->dtype, a.dt_in = grad_out->dtype;
    return do_launch(s, &a, "dropout_backward");
}
