/* What the convolution files share inside libaxon: the geometry of a plain convolution, the column-buffer
 * gather/scatter (conv_im2col.c) and the command that runs it (conv_exec.c, launched by conv.c). Never installed.
 *
 * Everything is phrased for a PLAIN convolution Y = conv(X, W): X [N, cx, xs...], W [cy, cx/G, ks...],
 * Y [N, cy, ys...]. A transposed convolution is described by swapping roles (its output is X, its input Y), because
 * its forward is the plain convolution's grad_input and its grad_input the plain forward. */
#ifndef AXON_CONV_IMPL_H
#define AXON_CONV_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "axon/conv.h"
#include "axon/stream.h"
#include "kernels_impl.h"

typedef struct conv_geom {
    int64_t batch, groups;
    int64_t cx, cy;                  /* channels of X and of Y, all groups */
    int64_t cxg, cyg;                /* per group */
    /* Spatial: 1-D and 2-D convolutions are padded in front to 3 dimensions of size 1 (stride 1, padding 0). */
    int64_t xs[3], ys[3], ks[3], stride[3], pad[3], dil[3];
    int64_t xsp, ysp, ksp;           /* products of xs, ys, ks */
    int64_t rows;                    /* cxg * ksp: rows of a column buffer, columns of a group's weight matrix */
} conv_geom_t;

/* col[r * m + j] = X[channel c, position read by output p0 + j through kernel offset k], r = c * ksp + k, for
 * rows r in [0, nrows) (nrows a multiple of ksp; g->rows for all of a group's channels) of the channels starting at
 * x in one batch element (dtype loaded with ld: any float dtype to the compute dtype); 0 where the patch reads
 * padding. col holds nrows * m elements of es_c bytes. */
void conv_im2col(const conv_geom_t *g, const char *x, size_t es_x, axon_convert_fn ld, char *col, size_t es_c,
                 int64_t p0, int64_t m, int64_t nrows);

/* conv_im2col with rows col_ld elements apart (>= m): several images' columns side by side in one buffer. */
void conv_im2col_ld(const conv_geom_t *g, const char *x, size_t es_x, axon_convert_fn ld, char *col, size_t es_c,
                    int64_t p0, int64_t m, int64_t nrows, int64_t col_ld);

/* The adjoint: acc[c * xsp + position] += col[r * m + j] over the same index map (padding reads are dropped).
 * col and acc are of dtype cdt: float32, float64 or int64 (which wraps). */
void conv_col2im(const conv_geom_t *g, const char *col, char *acc, axon_dtype_t cdt, int64_t p0, int64_t m,
                 int64_t nrows);

/* conv_col2im reading rows col_ld elements apart (>= m). */
void conv_col2im_ld(const conv_geom_t *g, const char *col, char *acc, axon_dtype_t cdt, int64_t p0, int64_t m,
                    int64_t nrows, int64_t col_ld);

/* The command's argument block: up to four phases, each skipped when its output is NULL. Data pointers are of
 * tensors of dtype dt, contiguous, or with nhwc the images X and Y and their gradients (x_*, y_*, b_src) channels-last
 * (element (n, c, position p) of X at (n * xsp + p) * cx + c); w and w_out are W in the plain layout [cy, cxg, ks...]
 * or with w_nhwc channels-last [cy, ks..., cxg]. */
typedef struct conv_args {
    conv_geom_t g;
    axon_dtype_t dt;
    int nhwc, w_nhwc;
    const char *w;
    char *y_out;                     /* phase 1: y_out = conv(x_in, w) + bias_y */
    const char *x_in, *bias_y;
    char *x_out;                     /* phase 2: x_out = conv^T(y_in, w) + bias_x */
    const char *y_in, *bias_x;
    char *w_out;                     /* phase 3: w_out = dW of conv(x_w, .) for the gradient y_w of its Y */
    const char *x_w, *y_w;
    char *b_out;                     /* phase 4: b_out[c] = sum of b_src[n, c, :] over n and space */
    const char *b_src;
    int64_t b_ch, b_sp;
} conv_args_t;

/* Phases 1-3 of a (conv_depthwise.c) when conv_depthwise_applies(&a->g): direct plane loops for convolutions whose
 * output channels each read one input channel. w and bias are phase 1's or 2's weight and bias in the compute dtype
 * (float64 for float64, else float32; bias may be NULL); small runs the phases on one participant. OUT_OF_MEMORY if
 * host scratch cannot be had. */
int conv_depthwise_applies(const conv_geom_t *g);
axon_status_t conv_depthwise_run(const conv_args_t *a, const axon_exec_t *ex, const char *w, const char *bias,
                                 int small);

/* Phase 1 (FORWARD), 2 (BACKWARD_DATA) or 3 (BACKWARD_WEIGHTS) of a float32 convolution (phase 1 of a bfloat16 one) on
 * oneDNN's direct kernels (conv_onednn.c), phase 2 with its bias. 1 when it ran the phase; 0 when the column path must:
 * another dtype, fewer images than pool participants with groups (or too few channels to share), a 1x1 convolution of
 * stride 1 over channels-first images, an input gradient with fewer than 16 input channels per group, no oneDNN kernel worth taking,
 * AXON_CONV=im2col, or a failure (nothing reported; the column path rewrites all of the phase's output). */
enum { CONV_ONEDNN_FORWARD, CONV_ONEDNN_BACKWARD_DATA, CONV_ONEDNN_BACKWARD_WEIGHTS };
int conv_onednn_phase(const conv_args_t *a, const axon_exec_t *ex, int phase);

/* The command body (conv_exec.c). OUT_OF_MEMORY if host scratch cannot be had. */
axon_status_t conv_execute(const void *args, const axon_exec_t *ex);

/* conv_execute for a->nhwc or a->w_nhwc (conv_channels_last.c): the phases oneDNN takes in those layouts run there,
 * the bias sums directly; the others run conv_execute on channels-first copies. OUT_OF_MEMORY if host scratch cannot
 * be had. */
axon_status_t conv_channels_last_execute(const conv_args_t *a, const axon_exec_t *ex);

#endif
