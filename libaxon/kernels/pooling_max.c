/* Max pooling and adaptive max pooling forward, and their shared backward (axon/pooling.h).
 *
 * The forward takes the window's largest element with PyTorch's rule: `v > max || isnan(v)`, starting from -inf
 * and the window's first element, so a NaN wins (the last NaN if several), ties keep the first, and the index is
 * the same one PyTorch returns. Rows of the output (one plane's fixed D and H) run in parallel. The backward is a
 * scatter by index, a plane per step: outputs of one plane may share an input element, so a plane is never split. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "axon/pooling.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"
#include "pooling_impl.h"

typedef struct pm_args {
    axon_pool_geom_t w;
    axon_spatial_t g;
    char *out, *idx;         /* forward: out, indices (NULL = not wanted); backward: grad_in, NULL */
    const char *in, *bidx;   /* forward: in, NULL; backward: grad_out, indices */
    axon_dtype_t dt_out, dt_in;
    int assign;              /* backward form: max_unpool, which stores in[o] at indices[o] instead of adding */
    int64_t channels;        /* > 0: float32 [N, C, spatial] tensors stored channels-last, C = channels; planes are
                                then (image, channel) pairs, element (n, c, p) at (n * plane + p) * C + c */
} pm_args_t;

/* The generic loop, one output row at a time over any window, with PyTorch's update rule: in double for the float
 * dtypes (exact for each) and in int64 for the integers, whose windows start from INT64_MIN, so a window of only the
 * dtype's lowest value keeps its first element, as CPU's loop does. */
#define PM_FORWARD_RANGE(NAME, T, LOAD, STORE, LOWEST, IS_NAN)                                                       \
    static void NAME(void *ctx, int64_t begin, int64_t end, int slot) {                                             \
        (void)slot;                                                                                                 \
        const pm_args_t *a = ctx;                                                                                   \
        const axon_spatial_t *g = &a->g;                                                                            \
        const int64_t per_plane = g->out[0] * g->out[1], ih = g->in[1], iw = g->in[2];                              \
        for (int64_t r = begin; r < end; r++) {                                                                     \
            const int64_t plane = r / per_plane, od = r % per_plane / g->out[1], oh = r % g->out[1];                \
            const axon_pool_span_t sd = axon_pool_span(&a->w, g, 0, od), sh = axon_pool_span(&a->w, g, 1, oh);      \
            const char *in = a->in + plane * g->in_size * (int64_t)axon_dtype_size(a->dt_in);                       \
            const int64_t o0 = r * g->out[2];                                                                       \
            for (int64_t ow = 0; ow < g->out[2]; ow++) {                                                            \
                const axon_pool_span_t sw = axon_pool_span(&a->w, g, 2, ow);                                        \
                int64_t best = (sd.first * ih + sh.first) * iw + sw.first;                                          \
                T max = LOWEST;                                                                                     \
                for (int64_t d = sd.first; d < sd.end; d += sd.step)                                                \
                    for (int64_t h = sh.first; h < sh.end; h += sh.step) {                                          \
                        const int64_t row = (d * ih + h) * iw;                                                      \
                        for (int64_t w = sw.first; w < sw.end; w += sw.step) {                                      \
                            T v = LOAD(a->dt_in, in, row + w);                                                      \
                            if (v > max || IS_NAN(v)) max = v, best = row + w;                                      \
                        }                                                                                           \
                    }                                                                                               \
                STORE(a->dt_out, a->out, o0 + ow, max);                                                             \
                if (a->idx) ((int64_t *)a->idx)[o0 + ow] = best;                                                    \
            }                                                                                                       \
        }                                                                                                           \
    }
#define PM_NEVER_NAN(v) 0
PM_FORWARD_RANGE(pm_forward_range, double, axon_spatial_load, axon_spatial_store, -INFINITY, isnan)
PM_FORWARD_RANGE(pm_forward_range_int, int64_t, axon_spatial_load_int, axon_spatial_store_int, INT64_MIN, PM_NEVER_NAN)

/* Outputs per block of pm_forward_row_f32's vector loop (its maxima and tap numbers live on the stack). */
#define PM_BLOCK 256
/* Windows of at most this many taps rebuild indices from a per-row table of tap offsets; larger ones decode the
 * tap number with divisions (four 64-bit divisions per output were most of a 2x2 pool's time). */
#define PM_TAP_TABLE 1024

/* pm_forward_range for float32, float16 and bfloat16 in and out (the same dtype) and fixed windows. Outputs whose
 * window lies inside the row along w (every tap kw valid) are taken a block at a time, tap by tap in the generic
 * loop's order with its update rule, the winning tap's number kept per output (so the comparisons vectorize across
 * outputs); the index is rebuilt from it. Same values and indices as the generic loop (float16 took it at 9x
 * float32's time): halves are read as float and the maximum, one of the window's elements, stored back exactly (a NaN
 * comes back quiet). The few outputs at the row's ends go through the same rule one at a time. */
static inline __attribute__((always_inline)) void pm_forward_rows(const pm_args_t *a, int64_t begin, int64_t end,
                                                                  const int kind) {
    const size_t es = kind == AXON_FK_F32 ? 4 : 2;
    const axon_spatial_t *g = &a->g;
    const int64_t per_plane = g->out[0] * g->out[1], ih = g->in[1], iw = g->in[2], ow_n = g->out[2];
    const int64_t k2 = a->w.k[2], s2 = a->w.s[2], p2 = a->w.p[2], d2 = a->w.d[2];
    /* interior outputs along w: ow * s2 - p2 >= 0 and ow * s2 - p2 + (k2 - 1) * d2 < iw */
    int64_t lo = (p2 + s2 - 1) / s2, hi = iw - 1 + p2 - (k2 - 1) * d2 < 0 ? 0 : (iw - 1 + p2 - (k2 - 1) * d2) / s2 + 1;
    if (hi > ow_n) hi = ow_n;
    if (lo > hi) lo = hi;
    float mx[PM_BLOCK];
    int32_t tap[PM_BLOCK];
    int64_t tap_offset[PM_TAP_TABLE]; /* tap t's element, relative to the block's first output's w */
    for (int64_t r = begin; r < end; r++) {
        const int64_t plane = r / per_plane, od = r % per_plane / g->out[1], oh = r % g->out[1];
        const axon_pool_span_t sd = axon_pool_span(&a->w, g, 0, od), sh = axon_pool_span(&a->w, g, 1, oh);
        const char *in = a->in + plane * g->in_size * (int64_t)es;
        char *out = a->out + r * ow_n * (int64_t)es;
        int64_t *idx = a->idx ? (int64_t *)a->idx + r * ow_n : NULL;
        const int64_t nh = axon_pool_span_count(sh) > 0 ? axon_pool_span_count(sh) : 1; /* 1: tap 0 decodes */
        const int64_t taps = axon_pool_span_count(sd) * axon_pool_span_count(sh) * k2;
        const int table = idx != NULL && taps > 0 && taps <= PM_TAP_TABLE;
        if (table) {
            int64_t t = 0;
            for (int64_t d = sd.first; d < sd.end; d += sd.step)
                for (int64_t h = sh.first; h < sh.end; h += sh.step)
                    for (int64_t kw = 0; kw < k2; kw++) tap_offset[t++] = (d * ih + h) * iw - p2 + kw * d2;
        }
        for (int64_t b0 = lo; b0 < hi; b0 += PM_BLOCK) {
            const int64_t m = hi - b0 < PM_BLOCK ? hi - b0 : PM_BLOCK;
            for (int64_t j = 0; j < m; j++) mx[j] = -INFINITY, tap[j] = 0;
            int32_t t = 0;
            for (int64_t d = sd.first; d < sd.end; d += sd.step)
                for (int64_t h = sh.first; h < sh.end; h += sh.step)
                    for (int64_t kw = 0; kw < k2; kw++, t++) {
                        const char *src = in + ((d * ih + h) * iw + b0 * s2 - p2 + kw * d2) * (int64_t)es;
                        for (int64_t j = 0; j < m; j++) {
                            const float v = axon_fk_load(kind, src, j * s2);
                            const int up = v > mx[j] || v != v;
                            mx[j] = up ? v : mx[j];
                            tap[j] = up ? t : tap[j];
                        }
                    }
            for (int64_t j = 0; j < m; j++) axon_fk_store(kind, out, b0 + j, mx[j]);
            if (idx == NULL) continue;
            if (table) {
                for (int64_t j = 0; j < m; j++) idx[b0 + j] = tap_offset[tap[j]] + (b0 + j) * s2;
                continue;
            }
            for (int64_t j = 0; j < m; j++) {
                const int64_t kw = tap[j] % k2, hd = tap[j] / k2, hi_ = hd % nh, di = hd / nh;
                idx[b0 + j] = ((sd.first + di * sd.step) * ih + sh.first + hi_ * sh.step) * iw + (b0 + j) * s2 - p2 +
                              kw * d2;
            }
        }
        /* the ends of the row, where windows are clipped: the generic loop, one output at a time */
        for (int part = 0; part < 2; part++) {
            const int64_t e0 = part ? hi : 0, e1 = part ? ow_n : lo;
            for (int64_t ow = e0; ow < e1; ow++) {
                const axon_pool_span_t sw = axon_pool_span(&a->w, g, 2, ow);
                int64_t best = (sd.first * ih + sh.first) * iw + sw.first;
                float m = -INFINITY;
                for (int64_t d = sd.first; d < sd.end; d += sd.step)
                    for (int64_t h = sh.first; h < sh.end; h += sh.step)
                        for (int64_t w = sw.first; w < sw.end; w += sw.step) {
                            const float v = axon_fk_load(kind, in, (d * ih + h) * iw + w);
                            if (v > m || v != v) m = v, best = (d * ih + h) * iw + w;
                        }
                axon_fk_store(kind, out, ow, m);
                if (idx) idx[ow] = best;
            }
        }
    }
}

AXON_CLONES static void pm_forward_rows_f32(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    pm_forward_rows(ctx, begin, end, AXON_FK_F32);
}
AXON_CLONES static void pm_forward_rows_bf16(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    pm_forward_rows(ctx, begin, end, AXON_FK_BF16);
}
AXON_CLONES static void pm_forward_rows_f16(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    pm_forward_rows(ctx, begin, end, AXON_FK_F16);
}

/* Channels per block of pm_forward_rows_cl's vector loop (maxima and indices on the stack). */
#define PM_CL_BLOCK 64

/* The forward over channels-last float32 tensors, one row of outputs (image, D, H) per step: each output's window
 * is visited tap by tap in the generic loop's order with its update rule, across a block of channels at a time (the
 * channels are contiguous, so the comparisons vectorize). Same values and indices as the generic loop. */
AXON_CLONES static void pm_forward_rows_cl(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const pm_args_t *a = ctx;
    const axon_spatial_t *g = &a->g;
    const int64_t C = a->channels, per_image = g->out[0] * g->out[1], ih = g->in[1], iw = g->in[2];
    float mx[PM_CL_BLOCK];
    int64_t best[PM_CL_BLOCK];
    for (int64_t r = begin; r < end; r++) {
        const int64_t n = r / per_image, od = r % per_image / g->out[1], oh = r % g->out[1];
        const axon_pool_span_t sd = axon_pool_span(&a->w, g, 0, od), sh = axon_pool_span(&a->w, g, 1, oh);
        const float *in = (const float *)a->in + n * g->in_size * C;
        for (int64_t ow = 0; ow < g->out[2]; ow++) {
            const axon_pool_span_t sw = axon_pool_span(&a->w, g, 2, ow);
            const int64_t o = (r * g->out[2] + ow) * C, first = (sd.first * ih + sh.first) * iw + sw.first;
            for (int64_t c0 = 0; c0 < C; c0 += PM_CL_BLOCK) {
                const int64_t m = C - c0 < PM_CL_BLOCK ? C - c0 : PM_CL_BLOCK;
                for (int64_t j = 0; j < m; j++) mx[j] = -INFINITY, best[j] = first;
                for (int64_t d = sd.first; d < sd.end; d += sd.step)
                    for (int64_t h = sh.first; h < sh.end; h += sh.step)
                        for (int64_t w = sw.first; w < sw.end; w += sw.step) {
                            const int64_t pos = (d * ih + h) * iw + w;
                            const float *src = in + pos * C + c0;
                            for (int64_t j = 0; j < m; j++) {
                                const float v = src[j];
                                const int up = v > mx[j] || v != v;
                                mx[j] = up ? v : mx[j];
                                best[j] = up ? pos : best[j];
                            }
                        }
                memcpy((float *)a->out + o + c0, mx, (size_t)m * sizeof(float));
                if (a->idx) memcpy((int64_t *)a->idx + o + c0, best, (size_t)m * sizeof(int64_t));
            }
        }
    }
}

static axon_status_t pm_forward_kernel(const void *args, const axon_exec_t *ex) {
    const pm_args_t *a = args;
    if (a->channels > 0) {
        const int64_t rows = a->g.planes / a->channels * a->g.out[0] * a->g.out[1];
        const int64_t window = a->w.adaptive ? 1 + a->g.in_size / a->g.out_size : a->w.k[0] * a->w.k[1] * a->w.k[2];
        const int64_t grain = AXON_KERNEL_GRAIN / (a->g.out[2] * window * a->channels + 1) + 1;
        axon_parallel_for(ex->pool, 0, rows, grain, pm_forward_rows_cl, (void *)a);
        return AXON_OK;
    }
    const int64_t rows = a->g.planes * a->g.out[0] * a->g.out[1];
    const int64_t window = a->w.adaptive ? 1 + a->g.in_size / a->g.out_size : a->w.k[0] * a->w.k[1] * a->w.k[2];
    const int64_t work = a->g.out[2] * window;
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    const int fixed = !a->w.adaptive && a->dt_in == a->dt_out && window < INT32_MAX;
    const axon_range_fn body = fixed && a->dt_in == AXON_FLOAT32    ? pm_forward_rows_f32
                               : fixed && a->dt_in == AXON_BFLOAT16 ? pm_forward_rows_bf16
                               : fixed && a->dt_in == AXON_FLOAT16  ? pm_forward_rows_f16
                               : axon_dtype_is_floating(a->dt_in)   ? pm_forward_range
                                                                    : pm_forward_range_int;
    axon_parallel_for(ex->pool, 0, rows, grain < 1 ? 1 : grain, body, (void *)a);
    return AXON_OK;
}

/* The backward's job: the arguments plus the position of the first bad index (INT64_MAX if none); its value is
 * read back from indices afterwards, so only one word needs to be atomic. */
typedef struct pm_job {
    const pm_args_t *a;
    _Atomic int64_t bad_pos;
} pm_job_t;

static void pm_note_bad(pm_job_t *j, int64_t pos) {
    int64_t cur = atomic_load(&j->bad_pos);
    while (pos < cur && !atomic_compare_exchange_weak(&j->bad_pos, &cur, pos)) {
    }
}

static void pm_backward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    pm_job_t *j = ctx;
    const pm_args_t *a = j->a;
    const axon_spatial_t *g = &a->g;
    const int64_t *idx = (const int64_t *)a->bidx;
    if (a->dt_in == AXON_FLOAT32 && a->dt_out == AXON_FLOAT32) {
        /* the loop below with typed loads and stores: the same values (the sum rounded once from float64), without
         * a dtype switch per element, which made max_unpool2d and max pooling's backward 1.8x torch CPU's time */
        for (int64_t p = begin; p < end; p++) {
            const int64_t gi0 = p * g->in_size, go0 = p * g->out_size;
            float *out = (float *)a->out + gi0;
            const float *in = (const float *)a->in + go0;
            const int64_t *ip = idx + go0;
            memset(out, 0, (size_t)g->in_size * sizeof *out);
            for (int64_t o = 0; o < g->out_size; o++) {
                const int64_t i = ip[o];
                if (i < 0 || i >= g->in_size) {
                    pm_note_bad(j, go0 + o);
                    break;
                }
                out[i] = a->assign ? in[o] : (float)((double)out[i] + (double)in[o]);
            }
        }
        return;
    }
    for (int64_t p = begin; p < end; p++) {
        const int64_t gi0 = p * g->in_size, go0 = p * g->out_size;
        axon_spatial_zero(a->dt_out, a->out, gi0, g->in_size);
        for (int64_t o = 0; o < g->out_size; o++) {
            const int64_t i = idx[go0 + o];
            if (i < 0 || i >= g->in_size) {
                pm_note_bad(j, go0 + o);
                break;
            }
            const double grad = axon_spatial_load(a->dt_in, a->in, go0 + o);
            if (a->assign) axon_spatial_store(a->dt_out, a->out, gi0 + i, grad); /* a repeated index: the last */
            else axon_spatial_store(a->dt_out, a->out, gi0 + i, axon_spatial_load(a->dt_out, a->out, gi0 + i) + grad);
        }
    }
}

/* pm_backward_range over channels-last float32 tensors, one image per step: its gradient zeroed, then every
 * output's gradient added at its index, outputs in order and channels across (so each element receives its adds in
 * the same order as the channels-first loop, with the same rounding). */
static void pm_backward_range_cl(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    pm_job_t *j = ctx;
    const pm_args_t *a = j->a;
    const axon_spatial_t *g = &a->g;
    const int64_t C = a->channels;
    for (int64_t n = begin; n < end; n++) {
        float *gi = (float *)a->out + n * g->in_size * C;
        const float *go = (const float *)a->in + n * g->out_size * C;
        const int64_t *ip = (const int64_t *)a->bidx + n * g->out_size * C;
        memset(gi, 0, (size_t)(g->in_size * C) * sizeof *gi);
        for (int64_t o = 0; o < g->out_size; o++)
            for (int64_t c = 0; c < C; c++) {
                const int64_t e = o * C + c, i = ip[e];
                if (i < 0 || i >= g->in_size) {
                    pm_note_bad(j, n * g->out_size * C + e);
                    goto next_image;
                }
                float *dst = gi + i * C + c;
                *dst = a->assign ? go[e] : (float)((double)*dst + (double)go[e]);
            }
    next_image:;
    }
}

static axon_status_t pm_backward_kernel(const void *args, const axon_exec_t *ex) {
    pm_job_t j;
    j.a = args;
    atomic_init(&j.bad_pos, INT64_MAX);
    const int64_t work = j.a->g.in_size + j.a->g.out_size;
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    if (j.a->channels > 0)
        axon_parallel_for(ex->pool, 0, j.a->g.planes / j.a->channels, 1, pm_backward_range_cl, &j);
    else
        axon_parallel_for(ex->pool, 0, j.a->g.planes, grain < 1 ? 1 : grain, pm_backward_range, &j);
    int64_t pos = atomic_load(&j.bad_pos);
    if (pos != INT64_MAX && j.a->assign) /* PyTorch's words */
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "max_unpool: Found an invalid max index: %lld (output volumes are of size %lld) at position "
                         "%lld (out is left partly written)",
                         (long long)((const int64_t *)j.a->bidx)[pos], (long long)j.a->g.in_size, (long long)pos);
    if (pos != INT64_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "max_pool_backward: index %lld at position %lld is out of range for an input plane of %lld "
                         "elements (grad_in is left partly written)",
                         (long long)((const int64_t *)j.a->bidx)[pos], (long long)pos, (long long)j.a->g.in_size);
    return AXON_OK;
}

/* Channels-last operands: when lead (the forward's in, the backward's grad_in) is a channels-last [N, C, spatial]
 * tensor that is not also contiguous, every other operand must be channels-last too and everything float32; the
 * checks then see contiguous twins (same data, dtype and shape) in twins[] and *channels is C. 0 (and nothing
 * changed) for channels-first operands. */
static axon_status_t pm_layout(const char *op, int nspatial, const axon_tensor_t **t, int count,
                               axon_tensor_t *twins, int64_t *channels) {
    *channels = 0;
    const axon_tensor_t *lead = t[0];
    if (lead == NULL || axon_tensor_check(lead, op) != AXON_OK || lead->ndim != nspatial + 2 ||
        axon_tensor_is_contiguous(lead) || !axon_tensor_is_channels_last(lead))
        return AXON_OK;
    for (int i = 0; i < count; i++) {
        if (t[i] == NULL) continue;
        if (axon_tensor_check(t[i], op) != AXON_OK || !axon_tensor_is_channels_last(t[i]))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the operands must share one layout: the first is "
                             "channels-last, operand %d is not", op, i + 1);
        if (t[i]->dtype != AXON_FLOAT32 && t[i]->dtype != AXON_INT64)
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: channels-last operands must be float32 (indices int64), "
                             "got %s", op, axon_dtype_name(t[i]->dtype));
        twins[i] = axon_tensor_row_major(t[i]);
        t[i] = &twins[i];
    }
    *channels = lead->sizes[1];
    return AXON_OK;
}

static axon_status_t pm_forward_launch(axon_stream_t s, const char *op, const axon_tensor_t *out,
                                       const axon_tensor_t *indices, const axon_tensor_t *in,
                                       const axon_pool_geom_t *w, int nspatial) {
    pm_args_t a;
    memset(&a, 0, sizeof a);
    const axon_tensor_t *t[3] = {in, out, indices};
    axon_tensor_t twins[3];
    axon_status_t st = pm_layout(op, nspatial, t, 3, twins, &a.channels);
    if (st != AXON_OK) return st;
    in = t[0], out = t[1], indices = t[2];
    st = axon_spatial_check(op, nspatial, in, "in", 0, out, "out", !w->adaptive, &a.g);
    if (st == AXON_OK && indices) st = axon_spatial_check_indices(op, indices, 1, out);
    if (st != AXON_OK) return st;
    if (a.g.planes == 0 || a.g.out_size == 0) return AXON_OK;
    a.w = *w;
    a.out = out->data, a.in = in->data, a.idx = indices ? indices->data : NULL;
    a.dt_out = out->dtype, a.dt_in = in->dtype;
    const uint64_t n = (uint64_t)a.g.planes * (uint64_t)a.g.out_size;
    axon_launch_t l = {pm_forward_kernel, &a, sizeof a, op,
                       n * (axon_dtype_size(out->dtype) + (indices ? 8u : 0u)) +
                           (uint64_t)a.g.planes * (uint64_t)a.g.in_size * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_max_pool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *indices,
                                   const axon_tensor_t *in, const axon_pool_params_t *p) {
    axon_pool_geom_t w;
    axon_status_t st = axon_pool_geom_fixed("max_pool", p, 1, &w);
    if (st != AXON_OK) return st;
    return pm_forward_launch(s, "max_pool", out, indices, in, &w, p->nspatial);
}

axon_status_t axon_kernel_adaptive_max_pool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *indices,
                                            const axon_tensor_t *in, int nspatial) {
    axon_pool_geom_t w;
    axon_status_t st = axon_pool_geom_adaptive("adaptive_max_pool", nspatial, &w);
    if (st != AXON_OK) return st;
    return pm_forward_launch(s, "adaptive_max_pool", out, indices, in, &w, nspatial);
}

static axon_status_t pm_scatter_launch(axon_stream_t s, const char *op, int assign, const axon_tensor_t *dst,
                                       const char *dst_role, const axon_tensor_t *src, const char *src_role,
                                       const axon_tensor_t *indices, int nspatial) {
    pm_args_t a;
    memset(&a, 0, sizeof a);
    const axon_tensor_t *t[3] = {dst, src, indices};
    axon_tensor_t twins[3];
    axon_status_t st = pm_layout(op, nspatial, t, 3, twins, &a.channels);
    if (st != AXON_OK) return st;
    dst = t[0], src = t[1], indices = t[2];
    st = axon_spatial_check(op, nspatial, dst, dst_role, 1, src, src_role, 0, &a.g);
    if (st == AXON_OK) st = axon_spatial_check_indices(op, indices, 0, src);
    if (st != AXON_OK) return st;
    if (a.g.planes == 0 || a.g.in_size == 0) return AXON_OK;
    a.out = dst->data, a.in = src->data, a.bidx = indices->data;
    a.dt_out = dst->dtype, a.dt_in = src->dtype;
    a.assign = assign;
    const uint64_t n = (uint64_t)a.g.planes;
    axon_launch_t l = {pm_backward_kernel, &a, sizeof a, op,
                       n * ((uint64_t)a.g.in_size * axon_dtype_size(dst->dtype) +
                            (uint64_t)a.g.out_size * (axon_dtype_size(src->dtype) + 8u))};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_max_pool_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                            const axon_tensor_t *grad_out, const axon_tensor_t *indices,
                                            int nspatial) {
    return pm_scatter_launch(s, "max_pool_backward", 0, grad_in, "grad_in", grad_out, "grad_out", indices, nspatial);
}

axon_status_t axon_kernel_max_unpool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                     const axon_tensor_t *indices, int nspatial) {
    return pm_scatter_launch(s, "max_unpool", 1, out, "out", in, "in", indices, nspatial);
}
