/* Convolutions whose images or weights are channels-last (conv_impl.h: conv_channels_last_execute), for
 * conv_exec.c.
 *
 * Why: PyTorch models converted with `.to(memory_format=torch.channels_last)` hand every convolution images stored
 * [N, spatial..., C] and weights stored [O, K..., C/G]. Copying them to channels-first and back around each call
 * cost 1.2-3.6x torch CPU's time, which runs oneDNN on those layouts directly. Here each phase oneDNN takes
 * (conv_onednn.c, which reads and writes the layouts itself) runs there; the bias gradient sums channel columns
 * directly; what remains (dtypes or shapes oneDNN does not take, AXON_CONV=im2col) runs conv_execute on
 * channels-first copies in host scratch, with the same results it gives for channels-first operands. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"
#include "internal.h"

/* Element (n, c, p) of an image tensor of `ch` channels and `sp` positions, as [N, C, sp] in either layout. */
static axon_tensor_t ccl_view(const char *data, axon_dtype_t dt, int64_t batch, int64_t ch, int64_t sp, int nhwc) {
    axon_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = (void *)data, t.dtype = dt, t.ndim = 3;
    t.sizes[0] = batch, t.sizes[1] = ch, t.sizes[2] = sp;
    t.strides[0] = ch * sp;
    t.strides[1] = nhwc ? 1 : sp;
    t.strides[2] = nhwc ? ch : 1;
    return t;
}

typedef struct ccl_bias_job {
    const conv_args_t *a;
    int64_t rows;                /* batch * positions */
} ccl_bias_job_t;

/* b_out[c] for channels [begin, end): the same float64 sum, in the same order (image by image, position by
 * position), as conv_exec.c's channels-first loop, read along rows of the channels-last tensor. */
static void ccl_bias_sum(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const ccl_bias_job_t *j = ctx;
    const conv_args_t *a = j->a;
    const size_t es = axon_dtype_size(a->dt);
    axon_convert_fn ld = axon_convert_get(a->dt, AXON_FLOAT64), st = axon_convert_get(AXON_FLOAT64, a->dt);
    enum { CCL_CH = 64 };
    double sum[CCL_CH], buf[CCL_CH];
    for (int64_t c0 = begin; c0 < end; c0 += CCL_CH) {
        const int64_t nc = end - c0 < CCL_CH ? end - c0 : CCL_CH;
        for (int64_t c = 0; c < nc; c++) sum[c] = 0.0;
        for (int64_t r = 0; r < j->rows; r++) {
            ld((char *)buf, 1, a->b_src + (size_t)(r * a->b_ch + c0) * es, 1, nc);
            for (int64_t c = 0; c < nc; c++) sum[c] += buf[c];
        }
        st(a->b_out + (size_t)c0 * es, 1, (const char *)sum, 1, nc);
    }
}

/* [batch, ch, sp] of dtype dt from one layout into the other: into channels-last when to_nhwc, else out of it. */
static void ccl_relayout(char *to, const char *from, axon_dtype_t dt, int64_t batch, int64_t ch, int64_t sp,
                         int to_nhwc, axon_pool_t pool) {
    axon_tensor_t dst = ccl_view(to, dt, batch, ch, sp, to_nhwc), src = ccl_view(from, dt, batch, ch, sp, !to_nhwc);
    axon_copy_execute(&dst, &src, pool);
}

/* A channels-first copy of an image tensor of `ch` channels and `sp` positions (from is channels-last), or NULL. */
static char *ccl_to_first(const conv_args_t *a, const char *from, int64_t ch, int64_t sp, axon_pool_t pool) {
    char *to = malloc((size_t)(a->g.batch * ch * sp) * axon_dtype_size(a->dt) + 1);
    if (to != NULL) ccl_relayout(to, from, a->dt, a->g.batch, ch, sp, 0, pool);
    return to;
}

axon_status_t conv_channels_last_execute(const conv_args_t *a, const axon_exec_t *ex) {
    const conv_geom_t *g = &a->g;
    conv_args_t b = *a; /* what is left for the channels-first path, with channels-first copies */
    b.nhwc = 0;
    if (b.y_out && conv_onednn_phase(a, ex, CONV_ONEDNN_FORWARD)) b.y_out = NULL, b.x_in = NULL, b.bias_y = NULL;
    if (b.x_out && conv_onednn_phase(a, ex, CONV_ONEDNN_BACKWARD_DATA)) b.x_out = NULL, b.y_in = NULL, b.bias_x = NULL;
    if (b.w_out && (g->cy * g->rows == 0 || conv_onednn_phase(a, ex, CONV_ONEDNN_BACKWARD_WEIGHTS)))
        b.w_out = NULL, b.x_w = NULL, b.y_w = NULL;
    if (b.b_out && a->nhwc) {
        ccl_bias_job_t j = {a, g->batch * a->b_sp};
        axon_parallel_for(ex->pool, 0, a->b_ch, AXON_KERNEL_GRAIN / (j.rows + 1) + 1, ccl_bias_sum, &j);
        b.b_out = NULL, b.b_src = NULL;
    }
    if (!b.y_out && !b.x_out && !b.w_out && !b.b_out) return AXON_OK;

    /* Channels-first copies: of each image the remaining phases read (one copy per distinct tensor: a backward's
     * grad_out is both the input gradient's Y and the weight gradient's dY), and scratch for each one they write,
     * copied back after. */
    const char **reads[4] = {&b.x_in, &b.y_in, &b.x_w, &b.y_w};
    const char *from[4] = {NULL};
    char *owned[8] = {NULL};
    int nowned = 0;
    axon_status_t st = AXON_OK;
    for (int r = 0; r < 4 && a->nhwc; r++) {
        from[r] = *reads[r];
        if (from[r] == NULL) continue;
        const char *copy = NULL;
        for (int q = 0; q < r && copy == NULL; q++)
            if (from[q] == from[r]) copy = *reads[q];
        if (copy == NULL) {
            const int is_x = r % 2 == 0; /* x_in, x_w */
            if ((owned[nowned] = ccl_to_first(a, from[r], is_x ? g->cx : g->cy, is_x ? g->xsp : g->ysp,
                                              ex->pool)) == NULL)
                goto oom;
            copy = owned[nowned++];
        }
        *reads[r] = copy;
    }
    /* The weight as [cy, ks..., cxg] is [cy, cxg, ks...] with the last two dimensions' roles swapped. */
    const size_t es = axon_dtype_size(a->dt);
    if (a->w_nhwc && (b.y_out || b.x_out)) {
        char *w = owned[nowned++] = malloc((size_t)(g->cy * g->rows) * es + 1);
        if (w == NULL) goto oom;
        ccl_relayout(w, a->w, a->dt, g->cy, g->cxg, g->ksp, 0, ex->pool);
        b.w = w;
    }
    if (a->w_nhwc && b.w_out && (b.w_out = owned[nowned++] = malloc((size_t)(g->cy * g->rows) * es + 1)) == NULL)
        goto oom;
    if (a->nhwc && b.y_out &&
        (b.y_out = owned[nowned++] = malloc((size_t)(g->batch * g->cy * g->ysp) * es + 1)) == NULL)
        goto oom;
    if (a->nhwc && b.x_out &&
        (b.x_out = owned[nowned++] = malloc((size_t)(g->batch * g->cx * g->xsp) * es + 1)) == NULL)
        goto oom;
    b.w_nhwc = 0;
    if ((st = conv_execute(&b, ex)) != AXON_OK) goto done;
    if (a->w_nhwc && b.w_out) ccl_relayout(a->w_out, b.w_out, a->dt, g->cy, g->cxg, g->ksp, 1, ex->pool);
    if (a->nhwc && b.y_out) ccl_relayout(a->y_out, b.y_out, a->dt, g->batch, g->cy, g->ysp, 1, ex->pool);
    if (a->nhwc && b.x_out) ccl_relayout(a->x_out, b.x_out, a->dt, g->batch, g->cx, g->xsp, 1, ex->pool);
    goto done;
oom:
    st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "conv: host scratch for a channels-first copy of a [%" PRId64 ", %" PRId64
                   ", ...] image", g->batch, g->cx > g->cy ? g->cx : g->cy);
done:
    for (int i = 0; i < nowned; i++) free(owned[i]);
    return st;
}
