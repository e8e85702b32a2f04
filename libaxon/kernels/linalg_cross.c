/* axon_kernel_cross (axon/linalg.h): the three operands seen with one element along `dim` are walked together by the
 * strided iterator; each visited position reads a's and b's three components at their strides along dim. */
#include <string.h>

#include "axon/linalg.h"
#include "axon/stream.h"
#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"

typedef struct cross_args {
    axon_tensor_t out, a, b;
    int dim;
} cross_args_t;

typedef struct cross_job {
    const cross_args_t *args;
    axon_iter_t it;
} cross_job_t;

/* Component k of operand p at visit step j: element (j * stride + k * along). */
#define CROSS_AT(T, p, st, along, j, k) (((T *)(p))[(j) * (st) + (k) * (along)])

/* Floats: out_i = a_j b_k - a_k b_j in the dtype's own arithmetic. */
#define CROSS_NATIVE(T)                                                                                    \
    for (int64_t j = 0; j < n; j++)                                                                        \
        for (int i = 0; i < 3; i++) {                                                                      \
            const int u = (i + 1) % 3, v = (i + 2) % 3;                                                    \
            CROSS_AT(T, ptr[0], st[0], sd[0], j, i) =                                                      \
                CROSS_AT(T, ptr[1], st[1], sd[1], j, u) * CROSS_AT(T, ptr[2], st[2], sd[2], j, v) -         \
                CROSS_AT(T, ptr[1], st[1], sd[1], j, v) * CROSS_AT(T, ptr[2], st[2], sd[2], j, u);          \
        }

/* Integers: in uint64 (wrapping, defined), keeping the low bits as C++'s promoted int arithmetic does. */
#define CROSS_INT(T)                                                                                       \
    for (int64_t j = 0; j < n; j++)                                                                        \
        for (int i = 0; i < 3; i++) {                                                                      \
            const int u = (i + 1) % 3, v = (i + 2) % 3;                                                    \
            const uint64_t au = (uint64_t)(int64_t)CROSS_AT(T, ptr[1], st[1], sd[1], j, u),                \
                           av = (uint64_t)(int64_t)CROSS_AT(T, ptr[1], st[1], sd[1], j, v),                \
                           bu = (uint64_t)(int64_t)CROSS_AT(T, ptr[2], st[2], sd[2], j, u),                \
                           bv = (uint64_t)(int64_t)CROSS_AT(T, ptr[2], st[2], sd[2], j, v);                \
            CROSS_AT(T, ptr[0], st[0], sd[0], j, i) = (T)(int64_t)(au * bv - av * bu);                     \
        }

/* Halves: each product rounded to the dtype, then the difference (c10::Half's operators round every result). */
#define CROSS_HALF(TO, FROM)                                                                               \
    for (int64_t j = 0; j < n; j++)                                                                        \
        for (int i = 0; i < 3; i++) {                                                                      \
            const int u = (i + 1) % 3, v = (i + 2) % 3;                                                    \
            const float p = FROM(TO(FROM(CROSS_AT(uint16_t, ptr[1], st[1], sd[1], j, u)) *                 \
                                    FROM(CROSS_AT(uint16_t, ptr[2], st[2], sd[2], j, v))));                \
            const float q = FROM(TO(FROM(CROSS_AT(uint16_t, ptr[1], st[1], sd[1], j, v)) *                 \
                                    FROM(CROSS_AT(uint16_t, ptr[2], st[2], sd[2], j, u))));                \
            CROSS_AT(uint16_t, ptr[0], st[0], sd[0], j, i) = TO(p - q);                                    \
        }

#define CROSS_COMPLEX(T)                                                                                   \
    for (int64_t j = 0; j < n; j++)                                                                        \
        for (int i = 0; i < 3; i++) {                                                                      \
            const int u = (i + 1) % 3, v = (i + 2) % 3;                                                    \
            const T au = CROSS_AT(T, ptr[1], st[1], sd[1], j, u), av = CROSS_AT(T, ptr[1], st[1], sd[1], j, v); \
            const T bu = CROSS_AT(T, ptr[2], st[2], sd[2], j, u), bv = CROSS_AT(T, ptr[2], st[2], sd[2], j, v); \
            T r;                                                                                           \
            r.re = (au.re * bv.re - au.im * bv.im) - (av.re * bu.re - av.im * bu.im);                      \
            r.im = (au.re * bv.im + au.im * bv.re) - (av.re * bu.im + av.im * bu.re);                      \
            CROSS_AT(T, ptr[0], st[0], sd[0], j, i) = r;                                                   \
        }

static void cross_run(void *ctx, char *const *ptr, const int64_t *st, int64_t n, int64_t pos) {
    (void)pos;
    const cross_args_t *a = ((const cross_job_t *)ctx)->args;
    const int64_t sd[3] = {a->out.strides[a->dim], a->a.strides[a->dim], a->b.strides[a->dim]};
    switch (a->out.dtype) {
    case AXON_FLOAT32: CROSS_NATIVE(float) break;
    case AXON_FLOAT64: CROSS_NATIVE(double) break;
    case AXON_FLOAT16: CROSS_HALF(axon_f32_to_f16, axon_f16_to_f32) break;
    case AXON_BFLOAT16: CROSS_HALF(axon_f32_to_bf16, axon_bf16_to_f32) break;
    case AXON_INT8: CROSS_INT(int8_t) break;
    case AXON_UINT8: CROSS_INT(uint8_t) break;
    case AXON_INT16: CROSS_INT(int16_t) break;
    case AXON_INT32: CROSS_INT(int32_t) break;
    case AXON_INT64: CROSS_INT(int64_t) break;
    case AXON_COMPLEX64: CROSS_COMPLEX(axon_c64_t) break;
    default: CROSS_COMPLEX(axon_c128_t) break;
    }
}

static void cross_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const cross_job_t *j = ctx;
    axon_iter_runs(&j->it, begin, end, cross_run, ctx);
}

static axon_status_t cross_kernel(const void *args, const axon_exec_t *ex) {
    cross_job_t j;
    j.args = args;
    /* the operands with one element along dim: each visit is one 3-vector */
    axon_tensor_t lanes[3] = {j.args->out, j.args->a, j.args->b};
    const axon_tensor_t *ts[3] = {&lanes[0], &lanes[1], &lanes[2]};
    for (int k = 0; k < 3; k++) lanes[k].sizes[j.args->dim] = 1;
    axon_iter_init(&j.it, 3, ts, 1);
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN / 8, cross_range, &j);
    return AXON_OK;
}

axon_status_t axon_kernel_cross(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *a,
                                const axon_tensor_t *b, int dim) {
    axon_status_t st = axon_kernel_check_operand(out, "cross", "out", 1);
    if (st == AXON_OK) st = axon_kernel_check_operand(a, "cross", "a", 0);
    if (st == AXON_OK) st = axon_kernel_check_operand(b, "cross", "b", 0);
    if (st != AXON_OK) return st;
    if (out->dtype == AXON_BOOL || a->dtype != out->dtype || b->dtype != out->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "cross: out, a and b must have one dtype other than bool (%s, %s, %s)",
                         axon_dtype_name(out->dtype), axon_dtype_name(a->dtype), axon_dtype_name(b->dtype));
    if (dim < 0 || dim >= out->ndim)
        return axon_fail(AXON_ERROR_INVALID_ARG, "cross: dim %d is out of range for %d dimensions", dim, out->ndim);
    if (a->ndim != out->ndim || b->ndim != out->ndim ||
        memcmp(a->sizes, out->sizes, sizeof(int64_t) * (size_t)out->ndim) != 0 ||
        memcmp(b->sizes, out->sizes, sizeof(int64_t) * (size_t)out->ndim) != 0) {
        char so[96], sa[96], sb[96];
        return axon_fail(AXON_ERROR_INVALID_ARG, "cross: shapes %s, %s and %s differ", axon_shape_format(out, so, 96),
                         axon_shape_format(a, sa, 96), axon_shape_format(b, sb, 96));
    }
    if (out->sizes[dim] != 3)
        return axon_fail(AXON_ERROR_INVALID_ARG, "cross: dimension %d has %lld elements, not 3", dim,
                         (long long)out->sizes[dim]);
    if (axon_tensor_numel(out) == 0) return AXON_OK;
    cross_args_t x;
    memset(&x, 0, sizeof x);
    x.out = *out, x.a = *a, x.b = *b, x.dim = dim;
    const uint64_t bytes = 3 * (uint64_t)axon_tensor_numel(out) * axon_dtype_size(out->dtype);
    axon_launch_t l = {cross_kernel, &x, sizeof x, "cross", bytes};
    return axon_stream_launch(s, &l);
}
