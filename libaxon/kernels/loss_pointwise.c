/* Element-wise losses and their backward (axon/loss.h): mse, smooth L1, Huber and binary cross-entropy.
 *
 * Elements are split into at most PL_BLOCKS blocks whose bounds depend only on numel; each block is one thread's
 * loop over chunks of PL_CHUNK elements converted to float64 on the stack, and keeps its own partial sum, added in
 * block order afterwards: the reduced loss is the same for any thread count. BCE scans its input first, so an input
 * outside [0, 1] fails the command before anything is written. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "axon/loss.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

#define PL_BLOCKS 256
#define PL_CHUNK 512
_Static_assert(PL_CHUNK % AXON_PARTS == 0, "a chunk leaves no tail in the parts but at a block's end");
#define PL_BCE_EPS ((double)1e-12f) /* PyTorch's floor on x (1 - x) in BCE's gradient: a float constant there */

static const char *const pl_names[AXON_PLOSS_COUNT] = {"mse_loss", "smooth_l1_loss", "huber_loss",
                                                         "binary_cross_entropy"};
_Static_assert(sizeof pl_names / sizeof pl_names[0] == AXON_PLOSS_COUNT, "one name per element-wise loss");

const char *axon_ploss_name(axon_ploss_t op) {
    return (unsigned)op < AXON_PLOSS_COUNT ? pl_names[op] : "invalid";
}

typedef struct pl_args {
    axon_ploss_t op;
    int backward;
    axon_loss_reduction_t red;
    int64_t n;
    double param;
    char *out;                   /* out or grad_in */
    const char *in, *target, *weight, *gout;
    size_t es_out, es_in, es_t, es_w, es_g;
    axon_convert_fn ld_in, ld_t, ld_w, ld_g, st_out;
    int f32;                     /* mse, smooth L1 or Huber with every operand float32: pl_f32 */
    int half;                    /* the same ops with every operand float16, or every one bfloat16: pl_half_range */
    axon_convert_fn ld_half, st_half; /* for half: that type to float32 and back */
} pl_args_t;

typedef struct pl_job {
    const pl_args_t *a;
    int64_t nblk;
    double g;                    /* backward, reduced: the gradient of every element (already / numel for MEAN) */
    _Atomic int bad;             /* BCE: an input outside [0, 1] was seen */
    double part[PL_BLOCKS];
} pl_job_t;

static double pl_loss(axon_ploss_t op, double x, double t, double p) {
    const double d = x - t, z = fabs(d);
    switch (op) {
    case AXON_PLOSS_MSE: return d * d;
    case AXON_PLOSS_SMOOTH_L1: return z < p ? 0.5 * z * z / p : z - 0.5 * p;
    case AXON_PLOSS_HUBER: return z < p ? 0.5 * z * z : p * (z - 0.5 * p);
    default: {
        double l1 = log1p(-x), l0 = log(x);
        return (t - 1.0) * (l1 > -100.0 ? l1 : -100.0) - t * (l0 > -100.0 ? l0 : -100.0);
    }
    }
}

/* dloss/dx * g, in the branch order of PyTorch's CPU kernels. */
static double pl_grad(axon_ploss_t op, double x, double t, double p, double g) {
    const double d = x - t;
    switch (op) {
    case AXON_PLOSS_MSE: return 2.0 * d * g;
    case AXON_PLOSS_SMOOTH_L1: return d <= -p ? -g : d >= p ? g : d * g / p;
    case AXON_PLOSS_HUBER: return d <= -p ? -g * p : d >= p ? g * p : d * g;
    default: {
        double den = (1.0 - x) * x;
        return g * d / (den > PL_BCE_EPS ? den : PL_BCE_EPS);
    }
    }
}

static void pl_bounds(const pl_job_t *j, int64_t b, int64_t *lo, int64_t *hi) {
    *lo = b * j->a->n / j->nblk;
    *hi = (b + 1) * j->a->n / j->nblk;
}

static void pl_load(axon_convert_fn f, double *buf, const char *p, size_t es, int64_t i, int64_t m) {
    f((char *)buf, 1, p + i * (int64_t)es, 1, m);
}

static void pl_scan_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    pl_job_t *j = ctx;
    const pl_args_t *a = j->a;
    double x[PL_CHUNK];
    for (int64_t b = begin; b < end && !atomic_load(&j->bad); b++) {
        int64_t lo, hi;
        pl_bounds(j, b, &lo, &hi);
        for (int64_t i = lo; i < hi; i += PL_CHUNK) {
            const int64_t m = hi - i < PL_CHUNK ? hi - i : PL_CHUNK;
            pl_load(a->ld_in, x, a->in, a->es_in, i, m);
            for (int64_t k = 0; k < m; k++)
                if (!(x[k] >= 0.0 && x[k] <= 1.0)) { /* NaN fails too */
                    atomic_store(&j->bad, 1);
                    return;
                }
        }
    }
}

/* x[k] = each element's loss (or gradient), weighted: one loop per op and direction, so the op is not switched on
 * per element and the loops vectorize (smooth L1 and Huber through a switch per element took 9x torch CPU's time). */
#define PL_VALUES(EXPR)                                                                                          \
    for (int64_t k = 0; k < m; k++) {                                                                            \
        const double gk = per_element_g ? g[k] : g0;                                                             \
        (void)gk;                                                                                                \
        x[k] = (EXPR) * (w ? w[k] : 1.0);                                                                        \
    }
AXON_CLONES static void pl_values(const pl_args_t *a, double g0, int per_element_g, double *restrict x,
                                  const double *restrict t, const double *restrict w, const double *restrict g,
                                  int64_t m) {
    const double p = a->param;
#define PL_OP(OP)                                                                                                \
    case OP:                                                                                                     \
        if (a->backward) {                                                                                       \
            PL_VALUES(pl_grad(OP, x[k], t[k], p, gk))                                                            \
        } else {                                                                                                 \
            PL_VALUES(pl_loss(OP, x[k], t[k], p))                                                                \
        }                                                                                                        \
        break;
    switch (a->op) {
        PL_OP(AXON_PLOSS_MSE)
        PL_OP(AXON_PLOSS_SMOOTH_L1)
        PL_OP(AXON_PLOSS_HUBER)
    default:
        PL_OP(AXON_PLOSS_BCE)
    }
#undef PL_OP
}

/* float32 mse, smooth L1 and Huber (no weight), the common cases, in one pass over [lo, hi): the same float64
 * values as pl_values (x and t widen exactly), summed into the same parts (chunks are whole multiples of the parts,
 * so only the block's end has a tail) or rounded once into out, without the stack copies and conversion calls. Inline
 * with op a constant (pl_f32). */
static inline __attribute__((always_inline)) void pl_f32_op(const pl_args_t *a, axon_ploss_t op, double g0,
                                                             int64_t lo, int64_t hi, double *part) {
    const float *restrict x = (const float *)a->in + lo, *restrict t = (const float *)a->target + lo;
    const int64_t m = hi - lo;
    const double p = a->param;
    if (!a->backward && a->red != AXON_LOSS_NONE) {
        double acc[AXON_PARTS];
        memcpy(acc, part, sizeof acc);
        int64_t i = 0;
        for (; i + AXON_PARTS <= m; i += AXON_PARTS)
            for (int k = 0; k < AXON_PARTS; k++) acc[k] += pl_loss(op, (double)x[i + k], (double)t[i + k], p);
        for (int k = 0; i < m; i++, k++) acc[k] += pl_loss(op, (double)x[i], (double)t[i], p);
        memcpy(part, acc, sizeof acc);
        return;
    }
    float *restrict o = (float *)a->out + lo;
    if (!a->backward) {
        for (int64_t i = 0; i < m; i++) o[i] = (float)pl_loss(op, (double)x[i], (double)t[i], p);
    } else if (a->red == AXON_LOSS_NONE) {
        const float *restrict g = (const float *)a->gout + lo;
        for (int64_t i = 0; i < m; i++) o[i] = (float)pl_grad(op, (double)x[i], (double)t[i], p, (double)g[i]);
    } else {
        for (int64_t i = 0; i < m; i++) o[i] = (float)pl_grad(op, (double)x[i], (double)t[i], p, g0);
    }
}

AXON_CLONES static void pl_f32(const pl_args_t *a, double g0, int64_t lo, int64_t hi, double *part) {
    switch (a->op) {
    case AXON_PLOSS_MSE: pl_f32_op(a, AXON_PLOSS_MSE, g0, lo, hi, part); break;
    case AXON_PLOSS_SMOOTH_L1: pl_f32_op(a, AXON_PLOSS_SMOOTH_L1, g0, lo, hi, part); break;
    default: pl_f32_op(a, AXON_PLOSS_HUBER, g0, lo, hi, part); break;
    }
}

/* The float versions of pl_loss and pl_grad (mse, smooth L1, Huber), with PyTorch's expressions. */
static inline float pl_lossf(axon_ploss_t op, float x, float t, float p) {
    const float d = x - t, z = fabsf(d);
    switch (op) {
    case AXON_PLOSS_MSE: return d * d;
    case AXON_PLOSS_SMOOTH_L1: return z < p ? 0.5f * z * z / p : z - 0.5f * p;
    default: return z < p ? 0.5f * z * z : p * (z - 0.5f * p);
    }
}

static inline float pl_gradf(axon_ploss_t op, float x, float t, float p, float g) {
    const float d = x - t;
    switch (op) {
    case AXON_PLOSS_MSE: return 2.0f * d * g;
    case AXON_PLOSS_SMOOTH_L1: return d <= -p ? -g : d >= p ? g : d * g / p;
    default: return d <= -p ? -g * p : d >= p ? g * p : d * g;
    }
}

/* v[k] = each element's loss or gradient (g NULL: every element's gradient is g0), one loop per op and direction. */
#define PL_HALF_VALUES(OP)                                                                                       \
    case OP:                                                                                                     \
        if (!backward)                                                                                           \
            for (int64_t k = 0; k < m; k++) v[k] = pl_lossf(OP, x[k], t[k], p);                                   \
        else if (g)                                                                                              \
            for (int64_t k = 0; k < m; k++) v[k] = pl_gradf(OP, x[k], t[k], p, g[k]);                             \
        else                                                                                                     \
            for (int64_t k = 0; k < m; k++) v[k] = pl_gradf(OP, x[k], t[k], p, g0);                               \
        break;
AXON_CLONES static void pl_half_values(axon_ploss_t op, int backward, float p, float g0, const float *restrict x,
                                       const float *restrict t, const float *restrict g, float *restrict v,
                                       int64_t m) {
    switch (op) {
        PL_HALF_VALUES(AXON_PLOSS_MSE)
        PL_HALF_VALUES(AXON_PLOSS_SMOOTH_L1)
    default:
        PL_HALF_VALUES(AXON_PLOSS_HUBER)
    }
}
#undef PL_HALF_VALUES

/* axon_parts_add of float values: m a multiple of AXON_PARTS except at a block's end. */
AXON_CLONES static void pl_half_sum(double *restrict acc, const float *restrict v, int64_t m) {
    int64_t k = 0;
    for (; k + AXON_PARTS <= m; k += AXON_PARTS)
        for (int q = 0; q < AXON_PARTS; q++) acc[q] += (double)v[k + q];
    for (int q = 0; k < m; k++, q++) acc[q] += (double)v[k];
}

/* float16 and bfloat16 mse, smooth L1 and Huber (no weight), every operand of one type, over [lo, hi) in chunks:
 * widened to float32 on the stack by convert.c's vector loops, each loss or gradient computed in float, as PyTorch's
 * CPU kernels compute 16-bit losses, and rounded once to the type or summed into the float64 parts as pl_range
 * sums. Through float64 chunks and a conversion call per operand, bfloat16 smooth L1 with its backward took 1.5x
 * torch CPU's time. */
static void pl_half_range(const pl_args_t *a, double g0, int64_t lo, int64_t hi, double *acc) {
    float x[PL_CHUNK], t[PL_CHUNK], g[PL_CHUNK], v[PL_CHUNK];
    const int per_element_g = a->backward && a->red == AXON_LOSS_NONE;
    for (int64_t i = lo; i < hi; i += PL_CHUNK) {
        const int64_t m = hi - i < PL_CHUNK ? hi - i : PL_CHUNK;
        a->ld_half((char *)x, 1, a->in + i * 2, 1, m);
        a->ld_half((char *)t, 1, a->target + i * 2, 1, m);
        if (per_element_g) a->ld_half((char *)g, 1, a->gout + i * 2, 1, m);
        pl_half_values(a->op, a->backward, (float)a->param, (float)g0, x, t, per_element_g ? g : NULL, v, m);
        if (a->backward || a->red == AXON_LOSS_NONE) {
            a->st_half(a->out + i * 2, 1, (const char *)v, 1, m);
            continue;
        }
        pl_half_sum(acc, v, m);
    }
}

static void pl_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    pl_job_t *j = ctx;
    const pl_args_t *a = j->a;
    double x[PL_CHUNK], t[PL_CHUNK], w[PL_CHUNK], g[PL_CHUNK];
    const int per_element_g = a->backward && a->red == AXON_LOSS_NONE;
    for (int64_t b = begin; b < end; b++) {
        int64_t lo, hi;
        pl_bounds(j, b, &lo, &hi);
        double acc[AXON_PARTS] = {0};
        if (a->f32 || a->half) {
            if (a->f32) pl_f32(a, j->g, lo, hi, acc);
            else pl_half_range(a, j->g, lo, hi, acc);
            j->part[b] = axon_parts_total(acc);
            continue;
        }
        for (int64_t i = lo; i < hi; i += PL_CHUNK) {
            const int64_t m = hi - i < PL_CHUNK ? hi - i : PL_CHUNK;
            pl_load(a->ld_in, x, a->in, a->es_in, i, m);
            pl_load(a->ld_t, t, a->target, a->es_t, i, m);
            if (a->weight) pl_load(a->ld_w, w, a->weight, a->es_w, i, m);
            if (per_element_g) pl_load(a->ld_g, g, a->gout, a->es_g, i, m);
            pl_values(a, j->g, per_element_g, x, t, a->weight ? w : NULL, g, m);
            if (a->backward || a->red == AXON_LOSS_NONE)
                a->st_out(a->out + i * (int64_t)a->es_out, 1, (const char *)x, 1, m);
            else
                axon_parts_add(acc, x, m);
        }
        j->part[b] = axon_parts_total(acc);
    }
}

static axon_status_t pl_kernel(const void *args, const axon_exec_t *ex) {
    const pl_args_t *a = args;
    pl_job_t j;
    j.a = a;
    j.nblk = a->n < PL_BLOCKS ? a->n : PL_BLOCKS;
    j.g = 0.0;
    atomic_init(&j.bad, 0);
    const int64_t per = j.nblk ? a->n / j.nblk : 1;
    int64_t grain = AXON_KERNEL_GRAIN / (per > 0 ? per : 1);
    if (grain < 1) grain = 1;
    if (a->op == AXON_PLOSS_BCE && !a->backward) {
        axon_parallel_for(ex->pool, 0, j.nblk, grain, pl_scan_range, &j);
        if (atomic_load(&j.bad))
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "binary_cross_entropy(): all elements of input should be between 0 and 1");
    }
    if (a->backward && a->red != AXON_LOSS_NONE) {
        pl_load(a->ld_g, &j.g, a->gout, a->es_g, 0, 1);
        if (a->red == AXON_LOSS_MEAN) j.g /= (double)a->n;
    }
    axon_parallel_for(ex->pool, 0, j.nblk, grain, pl_range, &j);
    if (a->backward || a->red == AXON_LOSS_NONE) return AXON_OK;
    double sum = 0.0;
    for (int64_t b = 0; b < j.nblk; b++) sum += j.part[b];
    if (a->red == AXON_LOSS_MEAN) sum /= (double)a->n; /* 0 / 0 = NaN for no elements, as PyTorch's mean */
    a->st_out(a->out, 1, (const char *)&sum, 1, 1);
    return AXON_OK;
}

/* ---- launch ---- */

/* A float, contiguous operand of ref's shape (ref NULL: exactly one element). */
static axon_status_t pl_check(const char *op, const char *role, const axon_tensor_t *t, const axon_tensor_t *ref,
                              int dst) {
    char sa[160], sb[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16", op,
                         role, axon_dtype_name(t->dtype));
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, role,
                         axon_shape_format(t, sa, sizeof sa));
    if (!ref) {
        if (axon_tensor_numel(t) != 1)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected one element", op, role,
                             axon_shape_format(t, sa, sizeof sa));
        return AXON_OK;
    }
    int same = ref->ndim == t->ndim;
    for (int i = 0; same && i < t->ndim; i++) same = ref->sizes[i] == t->sizes[i];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s does not match in's shape %s", op, role,
                         axon_shape_format(t, sa, sizeof sa), axon_shape_format(ref, sb, sizeof sb));
    return AXON_OK;
}

static axon_status_t pl_launch(axon_stream_t s, axon_ploss_t op, int backward, const axon_tensor_t *out,
                               const axon_tensor_t *gout, const axon_tensor_t *in, const axon_tensor_t *target,
                               const axon_tensor_t *weight, axon_loss_reduction_t reduction, double param) {
    if ((unsigned)op >= AXON_PLOSS_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "pointwise_loss: op %d is not an element-wise loss", (int)op);
    const char *name = pl_names[op];
    if ((unsigned)reduction >= AXON_LOSS_REDUCTION_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: reduction %d is not none (0), mean (1) or sum (2)", name,
                         (int)reduction);
    if ((op == AXON_PLOSS_SMOOTH_L1 && !(param >= 0.0)) || (op == AXON_PLOSS_HUBER && !(param > 0.0)))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s %g must be %s", name,
                         op == AXON_PLOSS_HUBER ? "delta" : "beta", param,
                         op == AXON_PLOSS_HUBER ? "positive" : "non-negative");
    if (weight && op != AXON_PLOSS_BCE)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: takes no weight", name);
    axon_status_t st;
    if ((st = pl_check(name, "in", in, in, 0)) != AXON_OK) return st;
    if ((st = pl_check(name, "target", target, in, 0)) != AXON_OK) return st;
    if (weight && (st = pl_check(name, "weight", weight, in, 0)) != AXON_OK) return st;
    const int full_out = backward || reduction == AXON_LOSS_NONE;
    if ((st = pl_check(name, backward ? "grad_in" : "out", out, full_out ? in : NULL, 1)) != AXON_OK) return st;
    if (backward && (st = pl_check(name, "grad_out", gout, reduction == AXON_LOSS_NONE ? in : NULL, 0)) != AXON_OK)
        return st;
    const int64_t n = axon_tensor_numel(in);
    if (n == 0 && full_out) return AXON_OK;
    pl_args_t g;
    memset(&g, 0, sizeof g);
    g.op = op;
    g.backward = backward;
    g.red = reduction;
    g.n = n;
    g.param = param;
    g.out = out->data;
    g.es_out = axon_dtype_size(out->dtype);
    g.st_out = axon_convert_get(AXON_FLOAT64, out->dtype);
    g.in = in->data;
    g.es_in = axon_dtype_size(in->dtype);
    g.ld_in = axon_convert_get(in->dtype, AXON_FLOAT64);
    g.target = target->data;
    g.es_t = axon_dtype_size(target->dtype);
    g.ld_t = axon_convert_get(target->dtype, AXON_FLOAT64);
    if (weight) {
        g.weight = weight->data;
        g.es_w = axon_dtype_size(weight->dtype);
        g.ld_w = axon_convert_get(weight->dtype, AXON_FLOAT64);
    }
    if (backward) {
        g.gout = gout->data;
        g.es_g = axon_dtype_size(gout->dtype);
        g.ld_g = axon_convert_get(gout->dtype, AXON_FLOAT64);
    }
    g.f32 = op != AXON_PLOSS_BCE && in->dtype == AXON_FLOAT32 && target->dtype == AXON_FLOAT32 &&
                out->dtype == AXON_FLOAT32 && (!backward || gout->dtype == AXON_FLOAT32);
    const axon_dtype_t dt = in->dtype;
    g.half = op != AXON_PLOSS_BCE && (dt == AXON_FLOAT16 || dt == AXON_BFLOAT16) && target->dtype == dt &&
             out->dtype == dt && (!backward || gout->dtype == dt);
    if (g.half) {
        g.ld_half = axon_convert_get(dt, AXON_FLOAT32);
        g.st_half = axon_convert_get(AXON_FLOAT32, dt);
    }
    axon_launch_t l = {pl_kernel, &g, sizeof g, name, (uint64_t)n * (g.es_in + g.es_t + g.es_w + g.es_out)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_pointwise_loss(axon_stream_t s, axon_ploss_t op, const axon_tensor_t *out,
                                         const axon_tensor_t *in, const axon_tensor_t *target,
                                         const axon_tensor_t *weight, axon_loss_reduction_t reduction, double param) {
    return pl_launch(s, op, 0, out, NULL, in, target, weight, reduction, param);
}

axon_status_t axon_kernel_pointwise_loss_backward(axon_stream_t s, axon_ploss_t op, const axon_tensor_t *grad_in,
                                                  const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                                  const axon_tensor_t *target, const axon_tensor_t *weight,
                                                  axon_loss_reduction_t reduction, double param) {
    return pl_launch(s, op, 1, grad_in, grad_out, in, target, weight, reduction, param);
}
