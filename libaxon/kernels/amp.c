/* GradScaler's unscale-and-check and scale update (axon/amp.h).
 *
 * The unscale command packs its chunk of the gradient list like the multi-tensor engine (foreach_list.c) does: a
 * header, start[m + 1] (prefix sums of the tensors' sizes) and one data pointer per tensor, and splits the combined
 * range over the pool. It has its own kernel rather than an engine family because it reduces as well as maps: each
 * worker only raises a shared flag, and the command's own thread writes found_inf once after the parallel loop, so
 * no two threads ever store to found_inf. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "axon/amp.h"
#include "axon/stream.h"
#include "foreach_impl.h"
#include "internal.h"

/* Elements converted per step of the half/bfloat16 path: one 1 KiB float buffer. */
#define AMP_BLOCK 256

typedef struct amp_unscale_cmd {
    int64_t n;                 /* tensors in this chunk */
    axon_dtype_t dtype;        /* of every gradient */
    float *found_inf;
    const float *inv_scale;
} amp_unscale_cmd_t;

static const int64_t *amp_start(const amp_unscale_cmd_t *c) { return (const int64_t *)(const void *)(c + 1); }
static char *amp_ptr(const amp_unscale_cmd_t *c, int64_t i) {
    return ((char *const *)(const void *)(amp_start(c) + c->n + 1))[i];
}

typedef struct amp_job {
    const amp_unscale_cmd_t *c;
    float inv;                 /* read once when the command starts */
    atomic_int found;
} amp_job_t;

/* x *= inv over m values in place; returns whether any was inf or NaN (checked before scaling, as PyTorch does). */
static int amp_float(float *x, int64_t m, float inv) {
    int bad = 0;
    for (int64_t k = 0; k < m; k++) bad |= !isfinite(x[k]);
    if (inv != 1.0f)
        for (int64_t k = 0; k < m; k++) x[k] *= inv;
    return bad;
}

static int amp_double(double *x, int64_t m, double inv) {
    int bad = 0;
    for (int64_t k = 0; k < m; k++) bad |= !isfinite(x[k]);
    if (inv != 1.0)
        for (int64_t k = 0; k < m; k++) x[k] *= inv;
    return bad;
}

/* Elements [lo, hi) of tensor i. Half types go through a float buffer: converted up, scaled, rounded once. */
static int amp_piece(const amp_job_t *j, int64_t i, int64_t lo, int64_t hi) {
    const amp_unscale_cmd_t *c = j->c;
    const size_t es = axon_dtype_size(c->dtype);
    char *p = amp_ptr(c, i) + (size_t)lo * es;
    if (c->dtype == AXON_FLOAT32) return amp_float((float *)(void *)p, hi - lo, j->inv);
    if (c->dtype == AXON_FLOAT64) return amp_double((double *)(void *)p, hi - lo, (double)j->inv);
    axon_convert_fn up = axon_convert_get(c->dtype, AXON_FLOAT32), down = axon_convert_get(AXON_FLOAT32, c->dtype);
    float buf[AMP_BLOCK];
    int bad = 0;
    for (int64_t off = 0; off < hi - lo; off += AMP_BLOCK) {
        const int64_t m = hi - lo - off < AMP_BLOCK ? hi - lo - off : AMP_BLOCK;
        char *q = p + (size_t)off * es;
        up((char *)buf, 1, q, 1, m);
        bad |= amp_float(buf, m, j->inv);
        if (j->inv != 1.0f) down(q, 1, (const char *)buf, 1, m);
    }
    return bad;
}

static void amp_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    amp_job_t *j = ctx;
    const amp_unscale_cmd_t *c = j->c;
    const int64_t *st = amp_start(c);
    int64_t lo = 0, hi = c->n; /* the last tensor starting at or before `begin` */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (st[mid] <= begin) lo = mid;
        else hi = mid;
    }
    int bad = 0;
    for (int64_t i = lo; i < c->n && begin < end; i++) {
        int64_t e = st[i + 1] < end ? st[i + 1] : end;
        if (e <= begin) continue; /* an empty tensor */
        bad |= amp_piece(j, i, begin - st[i], e - st[i]);
        begin = e;
    }
    if (bad) atomic_store_explicit(&j->found, 1, memory_order_relaxed);
}

static axon_status_t amp_unscale_kernel(const void *args, const axon_exec_t *ex) {
    amp_job_t j;
    j.c = args;
    j.inv = *j.c->inv_scale;
    atomic_init(&j.found, 0);
    axon_parallel_for(ex->pool, 0, amp_start(j.c)[j.c->n], AXON_KERNEL_GRAIN, amp_range, &j);
    /* axon_parallel_for returns after every chunk: the flag is final and this is the only store. */
    if (atomic_load_explicit(&j.found, memory_order_relaxed)) *j.c->found_inf = 1.0f;
    return AXON_OK;
}

/* A one-element tensor of dtype want (found_inf, inv_scale, scale, growth_tracker). */
static axon_status_t amp_check_number(const char *op, const char *role, const axon_tensor_t *t, axon_dtype_t want,
                                      int dst) {
    if (t == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, role);
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    if (t->dtype != want)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be %s, it is %s", op, role, axon_dtype_name(want),
                         axon_dtype_name(t->dtype));
    if (axon_tensor_numel(t) != 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must hold one element, it has %lld", op, role,
                         (long long)axon_tensor_numel(t));
    return AXON_OK;
}

axon_status_t axon_amp_non_finite_check_and_unscale(axon_stream_t s, int64_t n, const axon_tensor_t *grads,
                                                    const axon_tensor_t *found_inf,
                                                    const axon_tensor_t *inv_scale) {
    const char *op = "amp_non_finite_check_and_unscale";
    if (n < 0) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: list length %lld is negative", op, (long long)n);
    axon_status_t st = amp_check_number(op, "found_inf", found_inf, AXON_FLOAT32, 1);
    if (st == AXON_OK) st = amp_check_number(op, "inv_scale", inv_scale, AXON_FLOAT32, 0);
    if (st != AXON_OK || n == 0) return st;
    st = axon_fe_check_list(op, "grads", n, grads, NULL, NULL, 1);
    if (st != AXON_OK) return st;

    /* 16-byte aligned like the stream's own copy, so the arrays after the header are aligned too. */
    _Alignas(16) unsigned char block[AXON_LAUNCH_MAX_ARGS];
    const size_t fixed = sizeof(amp_unscale_cmd_t) + sizeof(int64_t), per = sizeof(int64_t) + sizeof(char *);
    const int64_t cap = (int64_t)((sizeof block - fixed) / per);
    for (int64_t first = 0; first < n; first += cap) {
        const int64_t m = n - first < cap ? n - first : cap;
        amp_unscale_cmd_t *c = (amp_unscale_cmd_t *)(void *)block;
        c->n = m;
        c->dtype = grads[0].dtype;
        c->found_inf = found_inf->data;
        c->inv_scale = inv_scale->data;
        int64_t *start = (int64_t *)(void *)(c + 1);
        char **ptr = (char **)(void *)(start + m + 1);
        start[0] = 0;
        for (int64_t i = 0; i < m; i++) {
            start[i + 1] = start[i] + axon_tensor_numel(&grads[first + i]);
            ptr[i] = grads[first + i].data;
        }
        if (start[m] == 0) continue; /* nothing to check */
        axon_launch_t launch = {amp_unscale_kernel, block, fixed + (size_t)m * per, op,
                                2 * (uint64_t)start[m] * axon_dtype_size(c->dtype)};
        st = axon_stream_launch(s, &launch);
        if (st != AXON_OK) return st;
    }
    return AXON_OK;
}

/* ---- the scale update ---- */

typedef struct amp_update_cmd {
    float *scale;
    int32_t *tracker;
    const float *found_inf;
    double growth, backoff;
    int64_t interval;
} amp_update_cmd_t;

static axon_status_t amp_update_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const amp_update_cmd_t *c = args;
    if (*c->found_inf != 0.0f) { /* NaN counts as found too, as in C++'s `if (float)` */
        *c->scale = (float)((double)*c->scale * c->backoff);
        *c->tracker = 0;
        return AXON_OK;
    }
    const int64_t successful = (int64_t)*c->tracker + 1; /* 64-bit: INT32_MAX + 1 must not overflow */
    if (successful == c->interval) {
        const float grown = (float)((double)*c->scale * c->growth);
        if (isfinite(grown)) *c->scale = grown;
        *c->tracker = 0;
    } else {
        *c->tracker = (int32_t)successful;
    }
    return AXON_OK;
}

axon_status_t axon_amp_update_scale(axon_stream_t s, const axon_tensor_t *scale, const axon_tensor_t *growth_tracker,
                                    const axon_tensor_t *found_inf, double growth_factor, double backoff_factor,
                                    int64_t growth_interval) {
    const char *op = "amp_update_scale";
    axon_status_t st = amp_check_number(op, "scale", scale, AXON_FLOAT32, 1);
    if (st == AXON_OK) st = amp_check_number(op, "growth_tracker", growth_tracker, AXON_INT32, 1);
    if (st == AXON_OK) st = amp_check_number(op, "found_inf", found_inf, AXON_FLOAT32, 0);
    if (st != AXON_OK) return st;
    amp_update_cmd_t c = {scale->data, growth_tracker->data, found_inf->data, growth_factor, backoff_factor,
                          growth_interval};
    axon_launch_t launch = {amp_update_kernel, &c, sizeof c, op, 2 * sizeof(float) + sizeof(int32_t)};
    return axon_stream_launch(s, &launch);
}
