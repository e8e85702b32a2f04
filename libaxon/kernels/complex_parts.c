/* axon_kernel_complex_parts (axon/complex_parts.h): the three operands walked together by the strided iterator.
 * Polar runs the unary kernels' cos and sin loops over blocks of angles gathered into buffers, so each element gets
 * the very values a separate cos, sin and multiply would give (those loops are padded so that a value never depends
 * on where a block starts). */
#include <string.h>

#include "axon/complex_parts.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"
#include "pointwise_impl.h"

/* Angles per block: the cos, sin and angle buffers of double fill 6 KiB of the chunk's stack. */
#define CP_BLOCK 256

typedef struct cp_args {
    axon_tensor_t out, a, b;
    axon_complex_parts_t parts;
    pw_loop_fn cos_loop, sin_loop;
} cp_args_t;

typedef struct cp_job {
    const cp_args_t *args;
    axon_iter_t it;
} cp_job_t;

#define CP_CARTESIAN(T, C)                                                                                  \
    do {                                                                                                    \
        C *o = (C *)ptr[0];                                                                                 \
        const T *a = (const T *)ptr[1], *b = (const T *)ptr[2];                                             \
        for (int64_t i = 0; i < n; i++) {                                                                   \
            o[i * st[0]].re = a[i * st[1]];                                                                 \
            o[i * st[0]].im = b[i * st[2]];                                                                 \
        }                                                                                                   \
    } while (0)

/* Blocks of angles: gathered (unless contiguous), their cos and sin by the unary loops, then the products. */
#define CP_POLAR(T, C)                                                                                      \
    do {                                                                                                    \
        C *o = (C *)ptr[0];                                                                                 \
        const T *a = (const T *)ptr[1], *b = (const T *)ptr[2];                                             \
        T angle[CP_BLOCK], c[CP_BLOCK], s[CP_BLOCK];                                                        \
        for (int64_t off = 0; off < n; off += CP_BLOCK) {                                                   \
            const int64_t m = n - off < CP_BLOCK ? n - off : CP_BLOCK;                                      \
            const T *bb = b + off * st[2];                                                                  \
            if (st[2] != 1) {                                                                               \
                for (int64_t i = 0; i < m; i++) angle[i] = bb[i * st[2]];                                   \
                bb = angle;                                                                                 \
            }                                                                                               \
            const char *in[1] = {(const char *)bb};                                                         \
            x->cos_loop((char *)c, in, 0, m, &ctx);                                                         \
            x->sin_loop((char *)s, in, 0, m, &ctx);                                                         \
            for (int64_t i = 0; i < m; i++) {                                                               \
                const T r = a[(off + i) * st[1]];                                                           \
                o[(off + i) * st[0]].re = r * c[i];                                                         \
                o[(off + i) * st[0]].im = r * s[i];                                                         \
            }                                                                                               \
        }                                                                                                   \
    } while (0)

static void cp_run(void *ctx_, char *const *ptr, const int64_t *st, int64_t n, int64_t pos) {
    (void)pos;
    const cp_args_t *x = ((const cp_job_t *)ctx_)->args;
    pw_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    const int f64 = x->out.dtype == AXON_COMPLEX128;
    if (x->parts == AXON_PARTS_CARTESIAN) {
        if (f64) CP_CARTESIAN(double, axon_c128_t);
        else CP_CARTESIAN(float, axon_c64_t);
    } else {
        if (f64) CP_POLAR(double, axon_c128_t);
        else CP_POLAR(float, axon_c64_t);
    }
}

static void cp_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const cp_job_t *j = ctx;
    axon_iter_runs(&j->it, begin, end, cp_run, ctx);
}

static axon_status_t cp_kernel(const void *args, const axon_exec_t *ex) {
    cp_job_t j;
    j.args = args;
    const axon_tensor_t *ts[3] = {&j.args->out, &j.args->a, &j.args->b};
    axon_iter_init(&j.it, 3, ts, 1);
    /* polar costs about as much per element as a transcendental op; complex is a copy */
    const int64_t grain = j.args->parts == AXON_PARTS_POLAR ? AXON_KERNEL_GRAIN / 8 : AXON_KERNEL_GRAIN;
    axon_parallel_for(ex->pool, 0, j.it.numel, grain, cp_range, &j);
    return AXON_OK;
}

axon_status_t axon_kernel_complex_parts(axon_stream_t s, axon_complex_parts_t parts, const axon_tensor_t *out,
                                        const axon_tensor_t *a, const axon_tensor_t *b) {
    const char *op = parts == AXON_PARTS_POLAR ? "polar" : "complex";
    if (parts != AXON_PARTS_CARTESIAN && parts != AXON_PARTS_POLAR)
        return axon_fail(AXON_ERROR_INVALID_ARG, "complex_parts: unknown parts %d", (int)parts);
    axon_status_t st = axon_kernel_check_operand(out, op, "out", 1);
    if (st == AXON_OK) st = axon_kernel_check_operand(a, op, "a", 0);
    if (st == AXON_OK) st = axon_kernel_check_operand(b, op, "b", 0);
    if (st != AXON_OK) return st;
    const axon_dtype_t real = out->dtype == AXON_COMPLEX64 ? AXON_FLOAT32 : AXON_FLOAT64;
    if ((out->dtype != AXON_COMPLEX64 && out->dtype != AXON_COMPLEX128) || a->dtype != real || b->dtype != real)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: out, a and b must be complex64 and float32 or complex128 and "
                         "float64 (got %s, %s, %s)", op, axon_dtype_name(out->dtype), axon_dtype_name(a->dtype),
                         axon_dtype_name(b->dtype));
    if (a->ndim != out->ndim || b->ndim != out->ndim ||
        memcmp(a->sizes, out->sizes, sizeof(int64_t) * (size_t)out->ndim) != 0 ||
        memcmp(b->sizes, out->sizes, sizeof(int64_t) * (size_t)out->ndim) != 0) {
        char so[96], sa[96], sb[96];
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: shapes %s, %s and %s differ", op, axon_shape_format(out, so, 96),
                         axon_shape_format(a, sa, 96), axon_shape_format(b, sb, 96));
    }
    if (axon_tensor_numel(out) == 0) return AXON_OK;
    cp_args_t x;
    memset(&x, 0, sizeof x);
    x.out = *out, x.a = *a, x.b = *b, x.parts = parts;
    x.cos_loop = axon_pw_unary_loops[AXON_UNARY_COS][real];
    x.sin_loop = axon_pw_unary_loops[AXON_UNARY_SIN][real];
    const uint64_t bytes = 2 * (uint64_t)axon_tensor_numel(out) * axon_dtype_size(out->dtype);
    axon_launch_t l = {cp_kernel, &x, sizeof x, op, bytes};
    return axon_stream_launch(s, &l);
}
