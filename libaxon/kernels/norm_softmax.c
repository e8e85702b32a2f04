/* Softmax and log-softmax along one dimension, and their backward (axon/norm.h).
 *
 * A contiguous tensor along dim is [outer, len, inner]. A unit of work is one outer index and a block of up to
 * SM_LANES neighbouring inner indices ("lanes"): element (j, lane) of the block is at j * inner + lane, so for each
 * j the block's lanes are contiguous in memory. With inner == 1 (the last dim) a unit is one contiguous row. Values
 * are converted into float64 chunks of SM_CHUNK elements on the stack (kernels never allocate), and every pass over
 * a row re-reads it chunk by chunk: rows may be far longer than any buffer. Each unit is one thread's sequential
 * work, so results do not depend on the thread count. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "axon/norm.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"
#include "pointwise_impl.h"
#include "vec16.h"

#define SM_LANES 64
#define SM_CHUNK 4096           /* doubles: two buffers are 64 KiB of a worker's (8 MiB default) stack */
#define SM_HALF_ROW 4096        /* floats: half_rows' three row buffers are 48 KiB */

typedef struct sm_args {
    int backward, log;
    int safe;                    /* _safe_softmax: rows of all -inf give 0 */
    int f32_exp;                 /* no float64 tensor: exp in float32 (expf is several times faster than exp, and its
                                    ~1 ulp float32 error is below what a float32 or half result can hold) */
    int f32_rows;                /* float32 along the last dim: the float paths (sm_row_f32, sm_row_f32_backward) */
    int half_rows;               /* float16 or bfloat16 along the last dim, rows of up to SM_HALF_ROW: the same, through
                                    float buffers */
    int64_t outer, len, inner;
    char *out;                   /* out, or grad_in */
    const char *a;               /* in, or grad_out */
    const char *b;               /* NULL, or the forward's output */
    size_t es_out, es_a, es_b;
    axon_convert_fn load_a, load_b, store, load_out;
    axon_convert_fn to_float_a, to_float_b, from_float; /* half_rows' conversions */
} sm_args_t;

static double sm_exp(const sm_args_t *a, double v) { return a->f32_exp ? (double)expf((float)v) : exp(v); }

/* Load rows [j, j + n) of a block of m lanes at p (element size es) into buf[n][m]. */
static void sm_load(axon_convert_fn load, double *buf, const char *p, size_t es, int64_t inner, int64_t j,
                    int64_t n, int64_t m) {
    if (m == 1) {
        load((char *)buf, 1, p + j * inner * (int64_t)es, inner, n);
        return;
    }
    for (int64_t r = 0; r < n; r++) load((char *)(buf + r * m), 1, p + (j + r) * inner * (int64_t)es, 1, m);
}

static void sm_store(axon_convert_fn store, char *p, size_t es, const double *buf, int64_t inner, int64_t j,
                     int64_t n, int64_t m) {
    if (m == 1) {
        store(p + j * inner * (int64_t)es, inner, (const char *)buf, 1, n);
        return;
    }
    for (int64_t r = 0; r < n; r++) store(p + (j + r) * inner * (int64_t)es, 1, (const char *)(buf + r * m), 1, m);
}

/* Forward of a unit that fits in one chunk: loaded once, and softmax keeps exp(x - max) from the sum for the output,
 * so each element costs one exp instead of two (exp dominates the time). */
static void sm_unit_small(const sm_args_t *a, int64_t off, int64_t m, double *x) {
    double mx[SM_LANES], acc[SM_LANES];
    const int64_t n = a->len;
    sm_load(a->load_a, x, a->a + off * (int64_t)a->es_a, a->es_a, a->inner, 0, n, m);
    for (int64_t l = 0; l < m; l++) mx[l] = -INFINITY, acc[l] = 0.0;
    for (int64_t r = 0; r < n; r++)
        for (int64_t l = 0; l < m; l++) mx[l] = x[r * m + l] > mx[l] ? x[r * m + l] : mx[l];
    if (a->log) {
        for (int64_t r = 0; r < n; r++)
            for (int64_t l = 0; l < m; l++) acc[l] += sm_exp(a, x[r * m + l] - mx[l]);
        for (int64_t l = 0; l < m; l++) acc[l] = mx[l] + log(acc[l]);
        for (int64_t r = 0; r < n; r++)
            for (int64_t l = 0; l < m; l++) x[r * m + l] -= acc[l];
    } else {
        for (int64_t r = 0; r < n; r++)
            for (int64_t l = 0; l < m; l++) acc[l] += x[r * m + l] = sm_exp(a, x[r * m + l] - mx[l]);
        for (int64_t l = 0; l < m; l++) acc[l] = 1.0 / acc[l];
        for (int64_t r = 0; r < n; r++)
            for (int64_t l = 0; l < m; l++) x[r * m + l] *= acc[l];
    }
    sm_store(a->store, a->out + off * (int64_t)a->es_out, a->es_out, x, a->inner, 0, n, m);
}

/* One unit: m lanes starting at element offset off. */
static void sm_unit(const sm_args_t *a, int64_t off, int64_t m) {
    double x[SM_CHUNK], y[SM_CHUNK], mx[SM_LANES], acc[SM_LANES];
    if (!a->backward && a->len * m <= SM_CHUNK) {
        sm_unit_small(a, off, m, x);
        return;
    }
    const char *pa = a->a + off * (int64_t)a->es_a;
    const char *pb = a->b ? a->b + off * (int64_t)a->es_b : NULL;
    char *po = a->out + off * (int64_t)a->es_out;
    const int64_t rows = SM_CHUNK / m;
    for (int64_t l = 0; l < m; l++) mx[l] = -INFINITY, acc[l] = 0.0;
    /* Forward: pass 1 finds each lane's maximum. Backward: pass 1 sums g * y (softmax) or g (log-softmax). */
    for (int64_t j = 0; j < a->len; j += rows) {
        int64_t n = a->len - j < rows ? a->len - j : rows;
        sm_load(a->load_a, x, pa, a->es_a, a->inner, j, n, m);
        if (!a->backward) {
            /* NaN is skipped here; it still reaches the sum in pass 2, so its row becomes NaN as in PyTorch. */
            for (int64_t r = 0; r < n; r++)
                for (int64_t l = 0; l < m; l++) mx[l] = x[r * m + l] > mx[l] ? x[r * m + l] : mx[l];
            continue;
        }
        if (a->log) {
            for (int64_t r = 0; r < n; r++)
                for (int64_t l = 0; l < m; l++) acc[l] += x[r * m + l];
            continue;
        }
        sm_load(a->load_b, y, pb, a->es_b, a->inner, j, n, m);
        for (int64_t r = 0; r < n; r++)
            for (int64_t l = 0; l < m; l++) acc[l] += x[r * m + l] * y[r * m + l];
    }
    if (!a->backward) {
        /* Pass 2: the sum of exp(x - max). An all -inf row gives -inf - -inf = NaN, PyTorch's answer. */
        for (int64_t j = 0; j < a->len; j += rows) {
            int64_t n = a->len - j < rows ? a->len - j : rows;
            sm_load(a->load_a, x, pa, a->es_a, a->inner, j, n, m);
            for (int64_t r = 0; r < n; r++)
                for (int64_t l = 0; l < m; l++) acc[l] += sm_exp(a, x[r * m + l] - mx[l]);
        }
        for (int64_t l = 0; l < m; l++) acc[l] = a->log ? log(acc[l]) : 1.0 / acc[l];
    }
    /* Last pass: write the result. */
    for (int64_t j = 0; j < a->len; j += rows) {
        int64_t n = a->len - j < rows ? a->len - j : rows;
        sm_load(a->load_a, x, pa, a->es_a, a->inner, j, n, m);
        if (a->backward) sm_load(a->load_b, y, pb, a->es_b, a->inner, j, n, m);
        for (int64_t r = 0; r < n; r++) {
            for (int64_t l = 0; l < m; l++) {
                double v = x[r * m + l];
                if (!a->backward) v = a->log ? v - mx[l] - acc[l] : sm_exp(a, v - mx[l]) * acc[l];
                else if (a->log) v = v - exp(y[r * m + l]) * acc[l]; /* float64: g - e * sum cancels */
                else v = y[r * m + l] * (v - acc[l]);
                x[r * m + l] = v;
            }
        }
        sm_store(a->store, po, a->es_out, x, a->inner, j, n, m);
    }
}

/* Float32 rows along the last dimension, the common case (attention scores, classifier logits): float arithmetic
 * and the vectorizable pw_expf instead of the general float64 path. The sum uses 16 partial sums, fixed by the row
 * length alone, so results do not depend on the thread count. A NaN in the row makes the sum, hence every output,
 * NaN, and an
 * all -inf row gives NaN (-inf - -inf), as PyTorch does. */
#define SM_PARTS 16
/* The partial maxima and sums as one 16-lane vector (vec16.h): written as 16 scalar lanes, GCC 12 turned the maximum
 * into one serial chain of scalar vmaxss (a third of a float32 softmax's time at 1024 x 1024). Lane k is still the
 * maximum or sum of elements k, k + 16, ... in order, so the results are the same bits. */
_Static_assert(SM_PARTS == sizeof(v16f) / sizeof(float), "one lane per partial result");
/* One row of n floats, x into y (y may be a buffer of the row's own). */
AXON_CLONES static void sm_row_f32(const sm_args_t *a, const float *x, float *y, int64_t n) {
    /* The maximum in SM_PARTS lanes too (a NaN is skipped here, but reaches every output through its exp and the
     * sum). */
    v16f vmax = v16_splat(-INFINITY);
    int64_t i0 = 0;
    for (; i0 + SM_PARTS <= n; i0 += SM_PARTS) vmax = v16_max(v16_load(x + i0), vmax);
    float pmax[SM_PARTS];
    memcpy(pmax, &vmax, sizeof pmax);
    for (; i0 < n; i0++) pmax[0] = x[i0] > pmax[0] ? x[i0] : pmax[0];
    float mx = -INFINITY;
    for (int k = 0; k < SM_PARTS; k++) mx = pmax[k] > mx ? pmax[k] : mx;
    float part[SM_PARTS] = {0};
    int64_t i = 0;
    if (a->log) { /* the exponentials are only summed: not stored, one pass over y less */
        for (; i + SM_PARTS <= n; i += SM_PARTS)
            for (int k = 0; k < SM_PARTS; k++) part[k] += pw_expf(x[i + k] - mx);
        for (; i < n; i++) part[i % SM_PARTS] += pw_expf(x[i] - mx);
    } else {
        for (int64_t q = 0; q < n; q++) y[q] = pw_expf(x[q] - mx); /* a plain map: vectorizes */
        v16f vsum = v16_splat(0);
        for (; i + SM_PARTS <= n; i += SM_PARTS) vsum = v16_add(vsum, v16_load(y + i));
        memcpy(part, &vsum, sizeof part);
        for (; i < n; i++) part[i % SM_PARTS] += y[i];
    }
    float sum = 0;
    for (int k = 0; k < SM_PARTS; k++) sum += part[k];
    if (a->log) {
        const float shift = mx + logf(sum);
        for (int64_t j = 0; j < n; j++) y[j] = x[j] - shift;
    } else {
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < n; j++) y[j] *= inv;
    }
}

/* The backward of float32 rows along the last dimension, in float as PyTorch's CPU kernel computes it:
 * log-softmax: g - exp(y) * sum(g); softmax: y * (g - sum(g * y)). The sums use SM_PARTS partial sums, as above. */
AXON_CLONES static void sm_row_f32_backward(const sm_args_t *a, const float *g, const float *y, float *o,
                                             int64_t n) {
    float part[SM_PARTS] = {0};
    int64_t i = 0;
    if (a->log) {
        for (; i + SM_PARTS <= n; i += SM_PARTS)
            for (int k = 0; k < SM_PARTS; k++) part[k] += g[i + k];
        for (; i < n; i++) part[i % SM_PARTS] += g[i];
    } else {
        for (; i + SM_PARTS <= n; i += SM_PARTS)
            for (int k = 0; k < SM_PARTS; k++) part[k] += g[i + k] * y[i + k];
        for (; i < n; i++) part[i % SM_PARTS] += g[i] * y[i];
    }
    float sum = 0;
    for (int k = 0; k < SM_PARTS; k++) sum += part[k];
    if (a->log)
        for (int64_t j = 0; j < n; j++) o[j] = g[j] - pw_expf(y[j]) * sum;
    else
        for (int64_t j = 0; j < n; j++) o[j] = y[j] * (g[j] - sum);
}

/* Rows [r0, r1) along the last dimension in float: float32 in place; float16 and bfloat16 rows (a->half_rows)
 * converted into float buffers and the result rounded once, as PyTorch's CPU kernel computes them (the float64 path
 * took 7x its time on [1024, 1024] float16). */
static void sm_rows_float(const sm_args_t *a, int64_t r0, int64_t r1) {
    const int64_t n = a->len;
    if (!a->half_rows) {
        for (int64_t r = r0; r < r1; r++) {
            const float *x = (const float *)(const void *)a->a + r * n, *yb = NULL;
            float *o = (float *)(void *)a->out + r * n;
            if (a->backward) yb = (const float *)(const void *)a->b + r * n, sm_row_f32_backward(a, x, yb, o, n);
            else sm_row_f32(a, x, o, n);
        }
        return;
    }
    /* as many whole rows per conversion as the buffers hold: short rows (attention's 128) converted one by one
     * paid three conversion calls per row */
    float x[SM_HALF_ROW], y[SM_HALF_ROW], o[SM_HALF_ROW];
    const int64_t group = SM_HALF_ROW / n;
    for (int64_t r = r0; r < r1; r += group) {
        const int64_t rows = r1 - r < group ? r1 - r : group, m = rows * n;
        a->to_float_a((char *)x, 1, a->a + r * n * (int64_t)a->es_a, 1, m);
        if (a->backward) a->to_float_b((char *)y, 1, a->b + r * n * (int64_t)a->es_b, 1, m);
        for (int64_t k = 0; k < rows; k++) {
            if (a->backward) sm_row_f32_backward(a, x + k * n, y + k * n, o + k * n, n);
            else sm_row_f32(a, x + k * n, o + k * n, n);
        }
        a->from_float(a->out + r * n * (int64_t)a->es_out, 1, (const char *)o, 1, m);
    }
}

/* _safe_softmax, after the softmax of m lanes at element offset off: a lane whose output came out NaN is checked,
 * and zeroed if its inputs are all -inf. Only NaN lanes are re-read, so unmasked rows cost one load. */
static void sm_zero_masked(const sm_args_t *a, int64_t off, int64_t m) {
    const double zero = 0.0;
    for (int64_t l = 0; l < m; l++) {
        double v;
        a->load_out((char *)&v, 1, a->out + (off + l) * (int64_t)a->es_out, 1, 1);
        if (v == v) continue;
        int masked = 1;
        for (int64_t j = 0; j < a->len && masked; j++) {
            a->load_a((char *)&v, 1, a->a + (off + j * a->inner + l) * (int64_t)a->es_a, 1, 1);
            masked = v == -INFINITY;
        }
        for (int64_t j = 0; j < a->len && masked; j++)
            a->store(a->out + (off + j * a->inner + l) * (int64_t)a->es_out, 1, (const char *)&zero, 1, 1);
    }
}

static void sm_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const sm_args_t *a = ctx;
    if (a->f32_rows || a->half_rows) {
        sm_rows_float(a, begin, end);
        for (int64_t r = begin; r < end && a->safe; r++) sm_zero_masked(a, r * a->len, 1);
        return;
    }
    const int64_t nblk = (a->inner + SM_LANES - 1) / SM_LANES;
    for (int64_t u = begin; u < end; u++) {
        int64_t o = u / nblk, l0 = (u % nblk) * SM_LANES;
        int64_t m = a->inner - l0 < SM_LANES ? a->inner - l0 : SM_LANES;
        sm_unit(a, o * a->len * a->inner + l0, m);
        if (a->safe) sm_zero_masked(a, o * a->len * a->inner + l0, m);
    }
}

static axon_status_t sm_kernel(const void *args, const axon_exec_t *ex) {
    const sm_args_t *a = args;
    const int64_t nblk = (a->inner + SM_LANES - 1) / SM_LANES;
    int64_t work = a->len * (a->inner < SM_LANES ? a->inner : SM_LANES);
    int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, a->outer * nblk, grain < 1 ? 1 : grain, sm_range, (void *)a);
    return AXON_OK;
}

/* Checks one tensor: well-formed, a float dtype, contiguous, and (if ref) ref's shape. */
static axon_status_t sm_check(const char *name, const char *role, const axon_tensor_t *t, const axon_tensor_t *ref,
                              int dst) {
    char sa[160], sb[160];
    axon_status_t st = axon_kernel_check_operand(t, name, role, dst);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16",
                         name, role, axon_dtype_name(t->dtype));
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", name, role,
                         axon_shape_format(t, sa, sizeof sa));
    if (ref) {
        int same = ref->ndim == t->ndim;
        for (int i = 0; same && i < t->ndim; i++) same = ref->sizes[i] == t->sizes[i];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s does not match %s", name, role,
                             axon_shape_format(t, sa, sizeof sa), axon_shape_format(ref, sb, sizeof sb));
    }
    return AXON_OK;
}

static axon_status_t sm_launch(axon_stream_t s, const char *name, const axon_tensor_t *out, const axon_tensor_t *a,
                               const axon_tensor_t *b, int dim, int is_log, int safe) {
    axon_status_t st;
    if ((st = sm_check(name, b ? "grad_out" : "in", a, NULL, 0)) != AXON_OK) return st;
    if (b && (st = sm_check(name, "out", b, a, 0)) != AXON_OK) return st;
    if ((st = sm_check(name, b ? "grad_in" : "out", out, a, 1)) != AXON_OK) return st;
    int nd = a->ndim ? a->ndim : 1;
    if (dim < -nd || dim >= nd)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dim %d is out of range for a %d-d tensor", name, dim, a->ndim);
    if (dim < 0) dim += nd;
    if (axon_tensor_numel(a) == 0) return AXON_OK;
    sm_args_t g;
    memset(&g, 0, sizeof g);
    g.backward = b != NULL;
    g.log = is_log != 0;
    g.safe = safe;
    g.f32_exp = out->dtype != AXON_FLOAT64 && a->dtype != AXON_FLOAT64 && (!b || b->dtype != AXON_FLOAT64);
    g.outer = 1;
    g.inner = 1;
    g.len = a->ndim ? a->sizes[dim] : 1;
    for (int i = 0; i < a->ndim; i++) {
        if (i < dim) g.outer *= a->sizes[i];
        if (i > dim) g.inner *= a->sizes[i];
    }
    g.out = out->data;
    g.a = a->data;
    g.b = b ? b->data : NULL;
    g.es_out = axon_dtype_size(out->dtype);
    g.es_a = axon_dtype_size(a->dtype);
    g.es_b = b ? axon_dtype_size(b->dtype) : 0;
    g.load_a = axon_convert_get(a->dtype, AXON_FLOAT64);
    g.load_b = b ? axon_convert_get(b->dtype, AXON_FLOAT64) : NULL;
    g.store = axon_convert_get(AXON_FLOAT64, out->dtype);
    g.load_out = axon_convert_get(out->dtype, AXON_FLOAT64);
    g.f32_rows = g.inner == 1 && a->dtype == AXON_FLOAT32 && out->dtype == AXON_FLOAT32 &&
                 (!b || b->dtype == AXON_FLOAT32);
    const axon_dtype_t h = a->dtype;
    g.half_rows = g.inner == 1 && (h == AXON_FLOAT16 || h == AXON_BFLOAT16) && out->dtype == h &&
                  (!b || b->dtype == h) && g.len <= SM_HALF_ROW;
    if (g.half_rows) {
        g.to_float_a = g.to_float_b = axon_convert_get(h, AXON_FLOAT32);
        g.from_float = axon_convert_get(AXON_FLOAT32, h);
    }
    uint64_t n = (uint64_t)axon_tensor_numel(a);
    axon_launch_t l = {sm_kernel, &g, sizeof g, name, n * (g.es_a + g.es_b + g.es_out)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_softmax(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in, int dim,
                                  int is_log) {
    return sm_launch(s, is_log ? "log_softmax" : "softmax", out, in, NULL, dim, is_log, 0);
}

axon_status_t axon_kernel_safe_softmax(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in, int dim) {
    return sm_launch(s, "safe_softmax", out, in, NULL, dim, 0, 1);
}

axon_status_t axon_kernel_softmax_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                           const axon_tensor_t *grad_out, const axon_tensor_t *out, int dim,
                                           int is_log) {
    if (out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "softmax_backward: out (the forward's output) is NULL");
    return sm_launch(s, is_log ? "log_softmax_backward" : "softmax_backward", grad_in, grad_out, out, dim,
                     is_log, 0);
}
