/* axon_kernel_conv and axon_kernel_conv_backward (axon/conv.h): argument checks on the calling thread, then one
 * command (conv_exec.c) whose phases are picked here.
 *
 * Both entry points first describe the problem as a plain convolution Y = conv(X, W) (conv_impl.h): a plain
 * convolution's in is X and its out Y; a transposed one's in is Y and its out X, with the same weight layout
 * [cy, cx / G, K...]. Then each requested result is one phase:
 *                   plain                              transposed
 *   out             phase 1: Y = conv(X=in) + bias     phase 2: X = conv^T(Y=in) + bias
 *   grad_in         phase 2 from Y = grad_out          phase 1 from X = grad_out
 *   grad_weight     phase 3 from X = in, dY = grad_out phase 3 from X = grad_out, dY = in
 *   grad_bias       phase 4: channel sums of grad_out (either way) */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conv_impl.h"
#include "internal.h"

/* Layouts an image operand may have; the command needs one that all of them share. */
enum { CV_CONTIGUOUS = 1, CV_CHANNELS_LAST = 2 };

/* A present operand: well-formed, float or int64, of dtype dt (dt < 0: sets it), and contiguous, or (an image
 * operand, when layouts is not NULL) contiguous or channels-last: *layouts keeps the layouts every image operand so
 * far has. */
static axon_status_t cv_operand_in(const char *op, const char *role, const axon_tensor_t *t, int dst, int *dt,
                                   int *layouts) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype) && t->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16, bfloat16 or int64",
                         op, role, axon_dtype_name(t->dtype));
    if (*dt < 0) *dt = (int)t->dtype;
    else if ((int)t->dtype != *dt)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s dtype %s differs from in's %s", op, role,
                         axon_dtype_name(t->dtype), axon_dtype_name((axon_dtype_t)*dt));
    if (layouts != NULL) {
        const int has = (axon_tensor_is_contiguous(t) ? CV_CONTIGUOUS : 0) |
                        (axon_tensor_is_channels_last(t) ? CV_CHANNELS_LAST : 0);
        if (has == 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s (shape %s) must be contiguous or channels-last", op, role,
                             axon_shape_format(t, sa, sizeof sa));
        if ((*layouts & has) == 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s (shape %s) is %s, unlike the operands before it: the "
                             "images and their gradients share one layout, the weight and its gradient one", op, role,
                             axon_shape_format(t, sa, sizeof sa),
                             has == CV_CONTIGUOUS ? "contiguous" : "channels-last");
        *layouts &= has;
        return AXON_OK;
    }
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, role,
                         axon_shape_format(t, sa, sizeof sa));
    return AXON_OK;
}

static axon_status_t cv_operand(const char *op, const char *role, const axon_tensor_t *t, int dst, int *dt) {
    return cv_operand_in(op, role, t, dst, dt, NULL);
}

/* t must have shape want[0..nd). */
static axon_status_t cv_shape(const char *op, const char *role, const axon_tensor_t *t, int nd,
                              const int64_t *want) {
    int same = t->ndim == nd;
    for (int i = 0; same && i < nd; i++) same = t->sizes[i] == want[i];
    if (same) return AXON_OK;
    char sa[160], sb[160];
    axon_tensor_t w;
    memset(&w, 0, sizeof w);
    w.ndim = nd;
    memcpy(w.sizes, want, sizeof(int64_t) * (size_t)nd);
    return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected %s", op, role,
                     axon_shape_format(t, sa, sizeof sa), axon_shape_format(&w, sb, sizeof sb));
}

/* Check p, in and weight; fill the geometry and out's shape (out_shape, nd = ndim of in). */
static axon_status_t cv_setup(const char *op, const axon_conv_params_t *p, const axon_tensor_t *in,
                              const axon_tensor_t *weight, int *dt, int *layouts, int *wlayouts, conv_geom_t *g,
                              int64_t *out_shape) {
    axon_status_t st;
    char sa[160], sb[160];
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: params is NULL", op);
    const int S = p->nspatial;
    if (S < 1 || S > AXON_CONV_MAX_SPATIAL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: nspatial must be 1..%d, got %d", op, AXON_CONV_MAX_SPATIAL, S);
    if (p->groups < 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: groups must be >= 1, got %" PRId64, op, p->groups);
    for (int i = 0; i < S; i++) {
        if (p->stride[i] < 1 || p->dilation[i] < 1 || p->padding[i] < 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dimension %d has stride %" PRId64 ", padding %" PRId64
                             ", dilation %" PRId64 " (need stride >= 1, padding >= 0, dilation >= 1)", op, i,
                             p->stride[i], p->padding[i], p->dilation[i]);
        const int64_t op_i = p->output_padding[i];
        if (!p->transposed ? op_i != 0
                           : op_i < 0 || (op_i >= p->stride[i] && op_i >= p->dilation[i]))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: output_padding %" PRId64 " in dimension %d must be %s",
                             op, op_i, i, p->transposed ? ">= 0 and below stride or dilation" : "0 (not transposed)");
    }
    if ((st = cv_operand_in(op, "in", in, 0, dt, layouts)) != AXON_OK) return st;
    if ((st = cv_operand_in(op, "weight", weight, 0, dt, wlayouts)) != AXON_OK) return st;
    const int nd = S + 2;
    if (in->ndim != nd || weight->ndim != nd)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in %s and weight %s must both have %d dimensions for %d "
                         "spatial ones", op, axon_shape_format(in, sa, sizeof sa),
                         axon_shape_format(weight, sb, sizeof sb), nd, S);
    const int64_t G = p->groups, N = in->sizes[0], C = in->sizes[1];
    /* Plain: weight [O, C/G, K]; transposed: weight [C, O/G, K]. */
    const int64_t in_per_group = p->transposed ? weight->sizes[0] : weight->sizes[1] * G;
    if (in_per_group != C)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: groups=%" PRId64 ", weight %s expects in to have %" PRId64
                         " channels, but in %s has %" PRId64, op, G, axon_shape_format(weight, sa, sizeof sa),
                         in_per_group, axon_shape_format(in, sb, sizeof sb), C);
    if (p->transposed ? C % G != 0 : weight->sizes[0] % G != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: groups=%" PRId64 " does not divide the %" PRId64 " %s "
                         "channels of weight %s", op, G, p->transposed ? C : weight->sizes[0],
                         p->transposed ? "input" : "output", axon_shape_format(weight, sa, sizeof sa));
    const int64_t O = p->transposed ? weight->sizes[1] * G : weight->sizes[0];
    memset(g, 0, sizeof *g);
    g->batch = N, g->groups = G;
    out_shape[0] = N, out_shape[1] = O;
    for (int i = 0; i < 3; i++) {
        g->xs[i] = g->ys[i] = g->ks[i] = g->stride[i] = g->dil[i] = 1;
        g->pad[i] = 0;
    }
    for (int i = 0; i < S; i++) {
        const int64_t I = in->sizes[2 + i], K = weight->sizes[2 + i];
        const int64_t s = p->stride[i], pd = p->padding[i], d = p->dilation[i];
        if (K < 1)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: weight %s has an empty kernel", op,
                             axon_shape_format(weight, sa, sizeof sa));
        const int64_t span = d * (K - 1) + 1; /* the dilated kernel's extent */
        int64_t Y;
        if (!p->transposed) {
            Y = I + 2 * pd < span ? 0 : (I + 2 * pd - span) / s + 1;
        } else {
            Y = (I - 1) * s - 2 * pd + span + p->output_padding[i];
            if (I == 0) Y = 0;
        }
        if (Y < 1 && I > 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in %s with weight %s, stride %" PRId64 ", padding %" PRId64
                             ", dilation %" PRId64 " gives output size %" PRId64 " in spatial dimension %d "
                             "(must be >= 1)", op, axon_shape_format(in, sa, sizeof sa),
                             axon_shape_format(weight, sb, sizeof sb), s, pd, d, Y, i);
        out_shape[2 + i] = Y;
        const int j = 3 - S + i; /* geometry dimension */
        g->xs[j] = p->transposed ? Y : I;
        g->ys[j] = p->transposed ? I : Y;
        g->ks[j] = K, g->stride[j] = s, g->pad[j] = pd, g->dil[j] = d;
    }
    g->cx = p->transposed ? O : C;
    g->cy = p->transposed ? C : O;
    g->cxg = g->cx / G, g->cyg = g->cy / G;
    g->xsp = g->xs[0] * g->xs[1] * g->xs[2];
    g->ysp = g->ys[0] * g->ys[1] * g->ys[2];
    g->ksp = g->ks[0] * g->ks[1] * g->ks[2];
    g->rows = g->cxg * g->ksp;
    if (g->rows > INT32_MAX || g->cyg > INT32_MAX || g->ysp > INT32_MAX || g->cxg * g->xsp > INT64_MAX / 8)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: in %s with weight %s: a GEMM dimension above 2^31 - 1", op,
                         axon_shape_format(in, sa, sizeof sa), axon_shape_format(weight, sb, sizeof sb));
    return AXON_OK;
}

/* An optional 1-D-like operand of n elements (any shape with n elements, contiguous). */
static axon_status_t cv_vector(const char *op, const char *role, const axon_tensor_t *t, int64_t n, int dst,
                               int *dt) {
    if (t == NULL) return AXON_OK;
    axon_status_t st = cv_operand(op, role, t, dst, dt);
    if (st != AXON_OK) return st;
    char sa[160];
    if (axon_tensor_numel(t) != n)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s %s must have %" PRId64 " elements (one per output channel)",
                         op, role, axon_shape_format(t, sa, sizeof sa), n);
    return AXON_OK;
}

axon_status_t axon_kernel_conv(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                               const axon_tensor_t *weight, const axon_tensor_t *bias, const axon_conv_params_t *p) {
    const char *op = p && p->transposed ? "conv_transpose" : "conv";
    int dt = -1;
    int64_t shape[AXON_MAX_DIMS];
    int layouts = CV_CONTIGUOUS | CV_CHANNELS_LAST, wlayouts = layouts;
    conv_args_t a;
    memset(&a, 0, sizeof a);
    axon_status_t st = cv_setup(op, p, in, weight, &dt, &layouts, &wlayouts, &a.g, shape);
    if (st != AXON_OK) return st;
    if ((st = cv_operand_in(op, "out", out, 1, &dt, &layouts)) != AXON_OK) return st;
    if ((st = cv_shape(op, "out", out, in->ndim, shape)) != AXON_OK) return st;
    if ((st = cv_vector(op, "bias", bias, shape[1], 0, &dt)) != AXON_OK) return st;
    if (axon_tensor_numel(out) == 0) return AXON_OK;
    a.dt = (axon_dtype_t)dt;
    a.nhwc = !(layouts & CV_CONTIGUOUS), a.w_nhwc = !(wlayouts & CV_CONTIGUOUS);
    a.w = weight->data;
    if (!p->transposed) a.y_out = out->data, a.x_in = in->data, a.bias_y = bias ? bias->data : NULL;
    else a.x_out = out->data, a.y_in = in->data, a.bias_x = bias ? bias->data : NULL;
    const uint64_t es = axon_dtype_size(a.dt);
    axon_launch_t l = {conv_execute, &a, sizeof a, op,
                       (uint64_t)(axon_tensor_numel(in) + axon_tensor_numel(weight) + axon_tensor_numel(out)) * es};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_conv_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                        const axon_tensor_t *grad_weight, const axon_tensor_t *grad_bias,
                                        const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                        const axon_tensor_t *weight, const axon_conv_params_t *p) {
    const char *op = p && p->transposed ? "conv_transpose_backward" : "conv_backward";
    int dt = -1;
    int64_t shape[AXON_MAX_DIMS];
    int layouts = CV_CONTIGUOUS | CV_CHANNELS_LAST, wlayouts = layouts;
    conv_args_t a;
    memset(&a, 0, sizeof a);
    axon_status_t st = cv_setup(op, p, in, weight, &dt, &layouts, &wlayouts, &a.g, shape);
    if (st != AXON_OK) return st;
    if ((st = cv_operand_in(op, "grad_out", grad_out, 0, &dt, &layouts)) != AXON_OK) return st;
    if ((st = cv_shape(op, "grad_out", grad_out, in->ndim, shape)) != AXON_OK) return st;
    if (grad_in) {
        if ((st = cv_operand_in(op, "grad_in", grad_in, 1, &dt, &layouts)) != AXON_OK) return st;
        if ((st = cv_shape(op, "grad_in", grad_in, in->ndim, in->sizes)) != AXON_OK) return st;
    }
    if (grad_weight) {
        if ((st = cv_operand_in(op, "grad_weight", grad_weight, 1, &dt, &wlayouts)) != AXON_OK) return st;
        if ((st = cv_shape(op, "grad_weight", grad_weight, weight->ndim, weight->sizes)) != AXON_OK) return st;
    }
    if ((st = cv_vector(op, "grad_bias", grad_bias, shape[1], 1, &dt)) != AXON_OK) return st;
    if (dt == AXON_INT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: int64 convolutions have no gradient", op);
    a.dt = (axon_dtype_t)dt;
    a.nhwc = !(layouts & CV_CONTIGUOUS), a.w_nhwc = !(wlayouts & CV_CONTIGUOUS);
    a.w = weight->data;
    const int t = p->transposed;
    /* An empty input or output image contributes nothing: gradients that remain are zero-sized or sums of zero
     * terms, which the phases produce with no special case. */
    if (grad_in && axon_tensor_numel(grad_in) > 0) {
        if (!t) a.x_out = grad_in->data, a.y_in = grad_out->data;
        else a.y_out = grad_in->data, a.x_in = grad_out->data;
    }
    if (grad_weight && axon_tensor_numel(grad_weight) > 0) {
        a.w_out = grad_weight->data;
        a.x_w = t ? grad_out->data : in->data;
        a.y_w = t ? in->data : grad_out->data;
    }
    if (grad_bias && axon_tensor_numel(grad_bias) > 0) {
        a.b_out = grad_bias->data, a.b_src = grad_out->data;
        a.b_ch = shape[1];
        a.b_sp = t ? a.g.xsp : a.g.ysp;
    }
    if (!a.x_out && !a.y_out && !a.w_out && !a.b_out) return AXON_OK;
    const uint64_t es = axon_dtype_size(a.dt);
    axon_launch_t l = {conv_execute, &a, sizeof a, op,
                       (uint64_t)(2 * axon_tensor_numel(in) + 2 * axon_tensor_numel(weight) +
                                  2 * axon_tensor_numel(grad_out)) * es};
    return axon_stream_launch(s, &l);
}
