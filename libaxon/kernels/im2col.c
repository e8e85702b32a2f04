/* im2col and col2im over batches of 2-d images (axon/im2col.h): the convolutions' column gather and scatter
 * (conv_im2col.c) applied to one (image, channel) plane per step, with the patch layout as the op's output. */
#include <string.h>

#include "axon/im2col.h"
#include "axon/stream.h"
#include "conv_impl.h"
#include "internal.h"
#include "kernels_impl.h"

typedef struct i2c_args {
    conv_geom_t g;                   /* one channel: cx = cy = 1, rows = kh * kw */
    int64_t planes;                  /* N * C */
    size_t es;
    axon_convert_fn copy;            /* im2col: the dtype's own element copy */
    const char *src;
    char *dst;
    axon_dtype_t cdt;                /* col2im: float32 or float64 */
} i2c_args_t;

static void i2c_im2col_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const i2c_args_t *a = ctx;
    const conv_geom_t *g = &a->g;
    for (int64_t q = begin; q < end; q++)
        conv_im2col(g, a->src + (size_t)(q * g->xsp) * a->es, a->es, a->copy,
                    a->dst + (size_t)(q * g->ksp * g->ysp) * a->es, a->es, 0, g->ysp, g->ksp);
}

static void i2c_col2im_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const i2c_args_t *a = ctx;
    const conv_geom_t *g = &a->g;
    for (int64_t q = begin; q < end; q++) {
        char *img = a->dst + (size_t)(q * g->xsp) * a->es;
        memset(img, 0, (size_t)g->xsp * a->es);
        conv_col2im(g, a->src + (size_t)(q * g->ksp * g->ysp) * a->es, img, a->cdt, 0, g->ysp, g->ksp);
    }
}

static axon_status_t i2c_kernel(const void *args, const axon_exec_t *ex) {
    const i2c_args_t *a = args;
    const int64_t work = a->g.xsp + a->g.ksp * a->g.ysp;
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, a->planes, grain < 1 ? 1 : grain,
                      a->copy != NULL ? i2c_im2col_range : i2c_col2im_range, (void *)a);
    return AXON_OK;
}

static axon_status_t i2c_launch(axon_stream_t s, int fold, const axon_tensor_t *image, const axon_tensor_t *cols,
                                const axon_im2col_params_t *p) {
    const char *op = fold ? "col2im" : "im2col";
    char sa[160], sb[160];
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: params is NULL", op);
    if (image == NULL || cols == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: a tensor is NULL", op);
    axon_status_t st = axon_kernel_check_operand(image, op, "image", fold);
    if (st == AXON_OK) st = axon_kernel_check_operand(cols, op, "columns", !fold);
    if (st != AXON_OK) return st;
    if (image->dtype != cols->dtype)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: image dtype %s and columns dtype %s differ", op,
                         axon_dtype_name(image->dtype), axon_dtype_name(cols->dtype));
    if (fold && image->dtype != AXON_FLOAT32 && image->dtype != AXON_FLOAT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "col2im: dtype %s is not float32 or float64",
                         axon_dtype_name(image->dtype));
    for (int i = 0; i < 2; i++)
        if (p->kernel[i] < 1 || p->dilation[i] < 1 || p->stride[i] < 1 || p->padding[i] < 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: kernel %lld, dilation %lld and stride %lld must be >= 1 "
                             "and padding %lld >= 0 (dim %d)", op, (long long)p->kernel[i],
                             (long long)p->dilation[i], (long long)p->stride[i], (long long)p->padding[i], i);
    if (image->ndim != 4 || cols->ndim != 3 || !axon_tensor_is_contiguous(image) || !axon_tensor_is_contiguous(cols))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: image %s and columns %s must be contiguous [N, C, H, W] and "
                         "[N, C * kh * kw, L]", op, axon_shape_format(image, sa, sizeof sa),
                         axon_shape_format(cols, sb, sizeof sb));
    i2c_args_t a;
    memset(&a, 0, sizeof a);
    conv_geom_t *g = &a.g;
    g->batch = g->groups = g->cx = g->cy = g->cxg = g->cyg = 1;
    g->xs[0] = g->ys[0] = g->ks[0] = g->stride[0] = g->dil[0] = 1;
    int64_t out[2];
    for (int i = 0; i < 2; i++) {
        g->xs[1 + i] = image->sizes[2 + i], g->ks[1 + i] = p->kernel[i], g->stride[1 + i] = p->stride[i];
        g->pad[1 + i] = p->padding[i], g->dil[1 + i] = p->dilation[i];
        const int64_t span = p->dilation[i] * (p->kernel[i] - 1) + 1;
        out[i] = (image->sizes[2 + i] + 2 * p->padding[i] - span) / p->stride[i] + 1;
        g->ys[1 + i] = out[i];
    }
    g->xsp = g->xs[1] * g->xs[2], g->ksp = g->ks[1] * g->ks[2], g->ysp = out[0] * out[1], g->rows = g->ksp;
    if (out[0] < 1 || out[1] < 1 || cols->sizes[0] != image->sizes[0] ||
        cols->sizes[1] != image->sizes[1] * g->ksp || cols->sizes[2] != g->ysp)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: image %s and columns %s do not fit a %lld x %lld kernel "
                         "(%lld x %lld blocks)", op, axon_shape_format(image, sa, sizeof sa),
                         axon_shape_format(cols, sb, sizeof sb), (long long)p->kernel[0], (long long)p->kernel[1],
                         (long long)out[0], (long long)out[1]);
    a.planes = image->sizes[0] * image->sizes[1];
    if (a.planes == 0 || g->xsp == 0) return AXON_OK;
    a.es = axon_dtype_size(image->dtype);
    a.copy = fold ? NULL : axon_convert_get(image->dtype, image->dtype);
    a.cdt = image->dtype == AXON_FLOAT64 ? AXON_FLOAT64 : AXON_FLOAT32;
    a.src = fold ? cols->data : image->data;
    a.dst = fold ? image->data : cols->data;
    const uint64_t bytes = (uint64_t)a.planes * (uint64_t)(g->xsp + g->ksp * g->ysp) * a.es;
    axon_launch_t l = {i2c_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_im2col(axon_stream_t s, const axon_tensor_t *columns, const axon_tensor_t *image,
                                 const axon_im2col_params_t *p) {
    return i2c_launch(s, 0, image, columns, p);
}

axon_status_t axon_kernel_col2im(axon_stream_t s, const axon_tensor_t *image, const axon_tensor_t *columns,
                                 const axon_im2col_params_t *p) {
    return i2c_launch(s, 1, image, columns, p);
}
