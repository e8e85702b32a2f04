/* Grid sampling, forward and backward (axon/grid_sample.h).
 *
 * A point's taps (input offsets and weights, and for the backward each weight's derivative along each coordinate)
 * are computed once per block of GS_BLOCK output points and then serve every channel: a block's channel loop is a
 * few multiply-adds per point, the taps dozens of operations. The loops live in grid_sample_body.h, instantiated
 * for float32 and float64 arithmetic. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "axon/grid_sample.h"
#include "axon/stream.h"
#include "grid_sample_gather.h"
#include "internal.h"
#include "kernels_impl.h"
#include "spatial_impl.h"

#define GS_BLOCK 64
#define GS_TAPS 16                            /* bicubic: 4 x 4 */
#define GS_FAR (INT64_MIN / 4)                /* an index outside every input, with room for + 1 */

typedef struct gs_args {
    int ns, first, align, f64;                /* first = 3 - ns: the view's first real spatial dim */
    int gather;                               /* axon_gs_taps_f32_avx512 runs here */
    axon_grid_interp_t interp;
    axon_grid_padding_t padding;
    int64_t N, C, in_sp[3], out_sp[3], isz, osz, nblk;   /* view [N, C, D, H, W]; nblk blocks per batch */
    const char *in, *grid, *gout;
    char *out, *gin, *ggrid;
    axon_dtype_t dt_in, dt_grid, dt_out, dt_gin, dt_ggrid;   /* dt_out: out (forward) or grad_out */
} gs_args_t;

#define GS_T float
#define GS_SUF f32
#define GS_M f
#include "grid_sample_body.h"
#undef GS_T
#undef GS_SUF
#undef GS_M

#define GS_T double
#define GS_SUF f64
#define GS_M
#include "grid_sample_body.h"
#undef GS_T
#undef GS_SUF
#undef GS_M

/* Operations per output point and channel, for the grain. */
static int64_t gs_work(const gs_args_t *a) {
    const int64_t taps = a->interp == AXON_GRID_NEAREST ? 1 : a->interp == AXON_GRID_BICUBIC ? 16 : 1 << a->ns;
    return 2 + taps * a->C;
}

static axon_status_t gs_forward_kernel(const void *args, const axon_exec_t *ex) {
    const gs_args_t *a = args;
    int64_t grain = AXON_KERNEL_GRAIN / (GS_BLOCK * gs_work(a));
    axon_parallel_for(ex->pool, 0, a->N * a->nblk, grain < 1 ? 1 : grain,
                      a->f64 ? gs_forward_range_f64 : gs_forward_range_f32, (void *)a);
    return AXON_OK;
}

static axon_status_t gs_backward_kernel(const void *args, const axon_exec_t *ex) {
    const gs_args_t *a = args;
    if (a->gin != NULL) {
        int64_t grain = AXON_KERNEL_GRAIN / (a->isz + a->osz * gs_work(a) / (a->C > 0 ? a->C : 1) + 1);
        axon_parallel_for(ex->pool, 0, a->N * a->C, grain < 1 ? 1 : grain,
                          a->f64 ? gs_grad_in_range_f64 : gs_grad_in_range_f32, (void *)a);
    }
    if (a->ggrid != NULL) {
        int64_t grain = AXON_KERNEL_GRAIN / (GS_BLOCK * gs_work(a));
        axon_parallel_for(ex->pool, 0, a->N * a->nblk, grain < 1 ? 1 : grain,
                          a->f64 ? gs_grad_grid_range_f64 : gs_grad_grid_range_f32, (void *)a);
    }
    return AXON_OK;
}

static axon_status_t gs_check_tensor(const char *op, const axon_tensor_t *t, const char *role, int dst, int ndim) {
    char sa[160];
    if (t == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, role);
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16", op,
                         role, axon_dtype_name(t->dtype));
    if (t->ndim != ndim)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s must have %d dimensions", op, role,
                         axon_shape_format(t, sa, sizeof sa), ndim);
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, role,
                         axon_shape_format(t, sa, sizeof sa));
    return AXON_OK;
}

/* Check in, grid and the output-side tensor `o` (out or grad_out) and fill a's shape fields. */
static axon_status_t gs_check(const char *op, const axon_grid_sample_params_t *p, const axon_tensor_t *in,
                              const axon_tensor_t *grid, const axon_tensor_t *o, const char *o_role, int o_dst,
                              gs_args_t *a) {
    char sa[160], sb[160];
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: params is NULL", op);
    if (p->nspatial != 2 && p->nspatial != 3)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %d spatial dimensions, expected 2 or 3", op, p->nspatial);
    if ((unsigned)p->interp >= AXON_GRID_INTERP_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: interpolation mode %d is not an axon_grid_interp_t", op,
                         (int)p->interp);
    if ((unsigned)p->padding >= AXON_GRID_PADDING_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: padding mode %d is not an axon_grid_padding_t", op,
                         (int)p->padding);
    if (p->interp == AXON_GRID_BICUBIC && p->nspatial != 2)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: bicubic interpolation only supports 2 spatial dimensions", op);
    const int nd = p->nspatial + 2;
    axon_status_t st = gs_check_tensor(op, in, "input", 0, nd);
    if (st == AXON_OK) st = gs_check_tensor(op, grid, "grid", 0, nd);
    if (st == AXON_OK) st = gs_check_tensor(op, o, o_role, o_dst, nd);
    if (st != AXON_OK) return st;
    memset(a, 0, sizeof *a);
    a->ns = p->nspatial, a->first = 3 - p->nspatial, a->interp = p->interp, a->padding = p->padding;
    a->align = p->align_corners != 0;
    a->N = in->sizes[0], a->C = in->sizes[1], a->isz = a->osz = 1;
    for (int k = 0; k < 3; k++) {
        a->in_sp[k] = k < a->first ? 1 : in->sizes[2 + k - a->first];
        a->out_sp[k] = k < a->first ? 1 : grid->sizes[1 + k - a->first];
        a->isz *= a->in_sp[k], a->osz *= a->out_sp[k];
    }
    int ok = grid->sizes[0] == a->N && grid->sizes[nd - 1] == a->ns && o->sizes[0] == a->N && o->sizes[1] == a->C;
    for (int k = 0; k < a->ns; k++) ok = ok && o->sizes[2 + k] == grid->sizes[1 + k];
    if (!ok)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: input %s, grid %s and %s %s do not fit [N, C, spatial...], "
                         "[N, out spatial..., %d] and [N, C, out spatial...]", op, axon_shape_format(in, sa, sizeof sa),
                         axon_shape_format(grid, sb, sizeof sb), o_role, axon_shape_format(o, sa, sizeof sa), a->ns);
    if (a->N * a->C * a->osz > 0 && a->isz == 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: input %s has an empty spatial dimension", op,
                         axon_shape_format(in, sa, sizeof sa));
    a->nblk = (a->osz + GS_BLOCK - 1) / GS_BLOCK;
    a->in = in->data, a->grid = grid->data, a->dt_in = in->dtype, a->dt_grid = grid->dtype, a->dt_out = o->dtype;
    a->f64 = in->dtype == AXON_FLOAT64 || grid->dtype == AXON_FLOAT64 || o->dtype == AXON_FLOAT64;
    a->gather = axon_gs_gather_available();
    return AXON_OK;
}

axon_status_t axon_kernel_grid_sample(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                      const axon_tensor_t *grid, const axon_grid_sample_params_t *p) {
    const char *op = p != NULL && p->nspatial == 3 ? "grid_sampler_3d" : "grid_sampler_2d";
    gs_args_t a;
    axon_status_t st = gs_check(op, p, in, grid, out, "out", 1, &a);
    if (st != AXON_OK) return st;
    if (a.N * a.C * a.osz == 0) return AXON_OK;
    a.out = out->data;
    const uint64_t bytes = (uint64_t)(a.N * a.C) * (uint64_t)(a.isz * axon_dtype_size(in->dtype) +
                                                              a.osz * axon_dtype_size(out->dtype)) +
                           (uint64_t)(a.N * a.osz * a.ns) * axon_dtype_size(grid->dtype);
    axon_launch_t l = {gs_forward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_grid_sample_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                               const axon_tensor_t *grad_grid, const axon_tensor_t *grad_out,
                                               const axon_tensor_t *in, const axon_tensor_t *grid,
                                               const axon_grid_sample_params_t *p) {
    const char *op = p != NULL && p->nspatial == 3 ? "grid_sampler_3d_backward" : "grid_sampler_2d_backward";
    char sa[160], sb[160];
    gs_args_t a;
    axon_status_t st = gs_check(op, p, in, grid, grad_out, "grad_output", 0, &a);
    if (st != AXON_OK) return st;
    if (grad_in == NULL && grad_grid == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: neither grad_input nor grad_grid is asked for", op);
    const axon_tensor_t *pairs[2][2] = {{grad_in, in}, {grad_grid, grid}};
    const char *roles[2] = {"grad_input", "grad_grid"};
    for (int i = 0; i < 2; i++) {
        const axon_tensor_t *g = pairs[i][0], *like = pairs[i][1];
        if (g == NULL) continue;
        st = gs_check_tensor(op, g, roles[i], 1, like->ndim);
        if (st != AXON_OK) return st;
        for (int k = 0; k < like->ndim; k++)
            if (g->sizes[k] != like->sizes[k])
                return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s differs from %s", op, roles[i],
                                 axon_shape_format(g, sa, sizeof sa), axon_shape_format(like, sb, sizeof sb));
        if (g->dtype == AXON_FLOAT64) a.f64 = 1;
    }
    a.gout = grad_out->data;
    if (grad_in != NULL) a.gin = grad_in->data, a.dt_gin = grad_in->dtype;
    if (grad_grid != NULL) a.ggrid = grad_grid->data, a.dt_ggrid = grad_grid->dtype;
    if (a.N * a.C * a.isz == 0 && a.N * a.osz == 0) return AXON_OK;
    const uint64_t bytes = (uint64_t)(a.N * a.C) * (uint64_t)(a.isz * axon_dtype_size(in->dtype) * 2 +
                                                              a.osz * axon_dtype_size(grad_out->dtype) * 2) +
                           (uint64_t)(a.N * a.osz * a.ns) * axon_dtype_size(grid->dtype) * 2;
    axon_launch_t l = {gs_backward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}
