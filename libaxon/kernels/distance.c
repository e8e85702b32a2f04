/* Pairwise distances and their gradients (axon/distance.h): cdist between the rows of two batched matrices, pdist
 * between the rows of one.
 *
 * Differences are taken in the dtype (d = a - b rounded once, as PyTorch's kernels take them), so that p = inf's
 * backward finds the coordinates whose |d| equals the stored distance exactly. Everything after that runs in float64:
 * a distance folds its M terms into DI_LANES running sums (or maxima), combined in lane order (the tail's terms
 * into lanes 0, 1, ... after the last full group); a gradient row adds
 * its terms coordinate by coordinate, DI_CHUNK coordinates at a time on the stack. One thread computes each output
 * row, so results do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "axon/distance.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

#define DI_LANES 8
#define DI_CHUNK 256

#ifdef AXON_HAVE_LIBMVEC
/* libmvec's vector pow (kernels/pointwise_unary.c says why), so that general p's terms vectorize */
double pow(double, double) __attribute__((simd("notinbranch")));
#endif

/* Which formula a p selects. DI_LT2 exists for the backward only: the forward of 0 < p < 2 is DI_GENERAL's. */
typedef enum di_kind { DI_ZERO, DI_ONE, DI_TWO, DI_INF, DI_LT2, DI_GENERAL } di_kind_t;

static di_kind_t di_kind_of(double p, int backward) {
    if (p == 0.0) return DI_ZERO;
    if (p == 1.0) return DI_ONE;
    if (p == 2.0) return DI_TWO;
    if (isinf(p)) return DI_INF;
    return backward && p < 2.0 ? DI_LT2 : DI_GENERAL;
}

typedef struct di_args {
    di_kind_t kind;
    double p;
    int f64;
    int pairs;                   /* pdist: one matrix, its pairs i < j */
    int backward;
    int64_t B, P, R, M;          /* pdist: B = 1, P = R = N */
    const char *x1, *x2, *grad, *dist;
    char *out;                   /* out, or grad_x1 */
} di_args_t;

static inline double di_sign(double d) { return d > 0.0 ? 1.0 : d < 0.0 ? -1.0 : d == 0.0 ? 0.0 : d; }

/* The larger of a and b: PyTorch CPU's scalar max (a unless a < b, so a NaN b is skipped), or, with keep_nan, its
 * vector maximum, which propagates a NaN of either. */
static inline double di_max(double a, double b, int keep_nan) {
    if (keep_nan && (a != a || b != b)) return a != a ? a : b;
    return a < b ? b : a;
}

/* dist(a, b) over m coordinates; T is the dtype. Every kind folds DI_LANES lanes (element k into lane k % DI_LANES)
 * so that its loop vectorizes; inlined into each CPU-feature clone of the row loops. */
#define DI_FOLD(T, EXPR)                                                                                         \
    for (; k + DI_LANES <= m; k += DI_LANES)                                                                     \
        for (int l = 0; l < DI_LANES; l++) {                                                                     \
            const double d = (double)(T)(a[k + l] - b[k + l]);                                                   \
            acc[l] = EXPR;                                                                                       \
        }                                                                                                        \
    for (int l = 0; k < m; k++, l++) {                                                                           \
        const double d = (double)(T)(a[k] - b[k]);                                                               \
        acc[l] = EXPR;                                                                                           \
    }
#define DI_DIST_FN(S, T)                                                                                         \
    static inline __attribute__((always_inline)) double di_dist_##S(const di_args_t *g, const T *a, const T *b,  \
                                                                    int64_t m) {                                 \
        double acc[DI_LANES] = {0};                                                                              \
        const double p = g->p;                                                                                   \
        int64_t k = 0;                                                                                           \
        switch (g->kind) {                                                                                       \
        case DI_ZERO: DI_FOLD(T, acc[l] + (d != d ? d : (double)(d != 0.0))) break;                              \
        case DI_ONE: DI_FOLD(T, acc[l] + fabs(d)) break;                                                         \
        case DI_TWO: DI_FOLD(T, acc[l] + d * d) break;                                                           \
        case DI_INF:                                                                                             \
            if (g->pairs) {                                                                                      \
                DI_FOLD(T, di_max(acc[l], fabs(d), 1))                                                           \
            } else {                                                                                             \
                DI_FOLD(T, di_max(acc[l], fabs(d), 0))                                                           \
            }                                                                                                    \
            for (int l = 1; l < DI_LANES; l++) acc[0] = di_max(acc[0], acc[l], g->pairs);                        \
            return acc[0];                                                                                       \
        default: DI_FOLD(T, acc[l] + pow(fabs(d), p)) break;                                                     \
        }                                                                                                        \
        double s = 0.0;                                                                                          \
        for (int l = 0; l < DI_LANES; l++) s += acc[l];                                                          \
        return g->kind == DI_TWO ? sqrt(s) : g->kind == DI_GENERAL ? pow(s, 1.0 / g->p) : s;                     \
    }

/* acc[k] += the gradient term of d = a[k] - b[k] for k < m, given the pair's g and D (not called for DI_ZERO). */
#define DI_GRAD_FN(S, T)                                                                                         \
    static inline __attribute__((always_inline)) void di_grad_##S(const di_args_t *a_, double *restrict acc,     \
                                                                  const T *a, const T *b, int64_t m, double g,   \
                                                                  double D) {                                    \
        const double p = a_->p;                                                                                  \
        switch (a_->kind) {                                                                                      \
        case DI_ONE:                                                                                             \
            for (int64_t k = 0; k < m; k++) acc[k] += g * di_sign((double)(T)(a[k] - b[k]));                     \
            return;                                                                                              \
        case DI_TWO: {                                                                                           \
            if (D == 0.0) return;                                                                                \
            for (int64_t k = 0; k < m; k++) acc[k] += g * (double)(T)(a[k] - b[k]) / D;                          \
            return;                                                                                              \
        }                                                                                                        \
        case DI_INF:                                                                                             \
            for (int64_t k = 0; k < m; k++) {                                                                    \
                const double d = (double)(T)(a[k] - b[k]);                                                       \
                if (fabs(d) == D) acc[k] += g * di_sign(d);                                                      \
            }                                                                                                    \
            return;                                                                                              \
        case DI_LT2: {                                                                                           \
            if (D == 0.0) return;                                                                                \
            const double c = g / pow(D, p - 1.0);                                                                \
            for (int64_t k = 0; k < m; k++) {                                                                    \
                const double d = (double)(T)(a[k] - b[k]);                                                       \
                acc[k] += di_sign(d) * pow(fabs(d), p - 1.0) * c;                                                \
            }                                                                                                    \
            return;                                                                                              \
        }                                                                                                        \
        default: {                                                                                               \
            if (D == 0.0) return;                                                                                \
            const double c = g / pow(D, p - 1.0);                                                                \
            for (int64_t k = 0; k < m; k++) {                                                                    \
                const double d = (double)(T)(a[k] - b[k]);                                                       \
                acc[k] += d * pow(fabs(d), p - 2.0) * c;                                                         \
            }                                                                                                    \
            return;                                                                                              \
        }                                                                                                        \
        }                                                                                                        \
    }

DI_DIST_FN(f32, float)
DI_DIST_FN(f64, double)
DI_GRAD_FN(f32, float)
DI_GRAD_FN(f64, double)

static inline int64_t di_pair_index(int64_t n, int64_t i, int64_t j) { return i * n - i * (i + 1) / 2 + j - i - 1; }

/* Forward: output rows [begin, end) of B * P (pdist: P rows, row i holding its pairs with j > i). */
AXON_CLONES static void di_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const di_args_t *a = ctx;
    const size_t es = a->f64 ? 8 : 4;
    const int64_t M = a->M;
    for (int64_t r = begin; r < end; r++) {
        const int64_t b = r / a->P, i = r % a->P;
        const char *xi = a->x1 + (size_t)((b * a->P + i) * M) * es;
        const int64_t j0 = a->pairs ? i + 1 : 0;
        char *o = a->out + (size_t)(a->pairs ? di_pair_index(a->P, i, j0) : r * a->R) * es;
        for (int64_t j = j0; j < a->R; j++) {
            const char *xj = a->x2 + (size_t)((b * a->R + j) * M) * es;
            const double v = a->f64 ? di_dist_f64(a, (const double *)xi, (const double *)xj, M)
                                    : di_dist_f32(a, (const float *)xi, (const float *)xj, M);
            axon_f3264_store(o, j - j0, v, a->f64);
        }
    }
}

/* Backward: rows [begin, end) of grad_x1, DI_CHUNK coordinates at a time. */
AXON_CLONES static void di_backward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const di_args_t *a = ctx;
    const size_t es = a->f64 ? 8 : 4;
    const int64_t M = a->M;
    double acc[DI_CHUNK];
    for (int64_t r = begin; r < end; r++) {
        const int64_t b = r / a->P, i = r % a->P;
        const char *xi = a->x1 + (size_t)(r * M) * es;
        for (int64_t k0 = 0; k0 < M; k0 += DI_CHUNK) {
            const int64_t m = M - k0 < DI_CHUNK ? M - k0 : DI_CHUNK;
            memset(acc, 0, sizeof acc);
            for (int64_t j = 0; a->kind != DI_ZERO && j < a->R; j++) {
                if (a->pairs && j == i) continue;
                const int64_t e = a->pairs ? (j > i ? di_pair_index(a->P, i, j) : di_pair_index(a->P, j, i))
                                           : r * a->R + j;
                const double g = axon_f3264_load(a->grad, e, a->f64), D = axon_f3264_load(a->dist, e, a->f64);
                const char *xj = a->x2 + (size_t)((b * a->R + j) * M + k0) * es;
                if (a->f64) di_grad_f64(a, acc, (const double *)xi + k0, (const double *)xj, m, g, D);
                else di_grad_f32(a, acc, (const float *)xi + k0, (const float *)xj, m, g, D);
            }
            for (int64_t k = 0; k < m; k++) axon_f3264_store(a->out, r * M + k0 + k, acc[k], a->f64);
        }
    }
}

static axon_status_t di_kernel(const void *args, const axon_exec_t *ex) {
    const di_args_t *a = args;
    const int64_t rows = a->B * a->P, per = (a->R > 0 ? a->R : 1) * (a->M > 0 ? a->M : 1);
    int64_t grain = AXON_KERNEL_GRAIN / per;
    if (grain < 1) grain = 1;
    axon_parallel_for(ex->pool, 0, rows, grain, a->backward ? di_backward_range : di_forward_range, (void *)a);
    return AXON_OK;
}

/* ---- launch ---- */

/* t is a contiguous float32/float64 tensor of dtype dt (AXON_DTYPE_COUNT: take t's) and the given sizes. */
static axon_status_t di_check(const char *op, const char *role, const axon_tensor_t *t, int dst, axon_dtype_t dt,
                              int ndim, const int64_t *sizes) {
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    if (t->dtype != AXON_FLOAT32 && t->dtype != AXON_FLOAT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32 or float64", op, role,
                         axon_dtype_name(t->dtype));
    return axon_kernel_check_shaped(t, op, role, dst, dt == AXON_DTYPE_COUNT ? t->dtype : dt, ndim, sizes,
                                    "axon/distance.h");
}

/* cdist's x1 [B, P, M] and x2 [B, R, M], into a's sizes and dtype. */
static axon_status_t di_check_pair(const char *op, const axon_tensor_t *x1, const axon_tensor_t *x2, di_args_t *a) {
    const int64_t any3[3] = {-1, -1, -1};
    axon_status_t st = di_check(op, "x1", x1, 0, AXON_DTYPE_COUNT, 3, any3);
    if (st != AXON_OK) return st;
    const int64_t x2s[3] = {x1->sizes[0], -1, x1->sizes[2]};
    if ((st = di_check(op, "x2", x2, 0, x1->dtype, 3, x2s)) != AXON_OK) return st;
    a->B = x1->sizes[0], a->P = x1->sizes[1], a->R = x2->sizes[1], a->M = x1->sizes[2];
    a->f64 = x1->dtype == AXON_FLOAT64;
    a->x1 = x1->data, a->x2 = x2->data;
    return AXON_OK;
}

static axon_status_t di_launch(axon_stream_t s, const char *op, di_args_t *a, const axon_tensor_t *out) {
    if (!(a->p >= 0.0)) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: p = %g must be non-negative", op, a->p);
    a->kind = di_kind_of(a->p, a->backward);
    a->out = out->data;
    if (a->B * a->P == 0 || (a->backward && a->M == 0)) return AXON_OK;
    const uint64_t es = a->f64 ? 8u : 4u;
    const uint64_t bytes = (uint64_t)axon_tensor_numel(out) * es + (uint64_t)(a->B * (a->P + a->R) * a->M) * es;
    axon_launch_t l = {di_kernel, a, sizeof *a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_cdist(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *x1,
                                const axon_tensor_t *x2, double p) {
    const char *op = "cdist";
    di_args_t a = {.p = p};
    axon_status_t st = di_check_pair(op, x1, x2, &a);
    if (st != AXON_OK) return st;
    const int64_t os[3] = {a.B, a.P, a.R};
    if ((st = di_check(op, "out", out, 1, x1->dtype, 3, os)) != AXON_OK) return st;
    return di_launch(s, op, &a, out);
}

axon_status_t axon_kernel_cdist_backward(axon_stream_t s, const axon_tensor_t *grad_x1, const axon_tensor_t *grad,
                                         const axon_tensor_t *x1, const axon_tensor_t *x2, const axon_tensor_t *dist,
                                         double p) {
    const char *op = "cdist_backward";
    di_args_t a = {.p = p, .backward = 1};
    axon_status_t st = di_check_pair(op, x1, x2, &a);
    if (st != AXON_OK) return st;
    const int64_t gs[3] = {a.B, a.P, a.R};
    if ((st = di_check(op, "grad", grad, 0, x1->dtype, 3, gs)) != AXON_OK) return st;
    if ((st = di_check(op, "dist", dist, 0, x1->dtype, 3, gs)) != AXON_OK) return st;
    if ((st = di_check(op, "grad_x1", grad_x1, 1, x1->dtype, 3, x1->sizes)) != AXON_OK) return st;
    a.grad = grad->data, a.dist = dist->data;
    return di_launch(s, op, &a, grad_x1);
}

axon_status_t axon_kernel_pdist(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *x, double p) {
    const char *op = "pdist";
    const int64_t any2[2] = {-1, -1};
    axon_status_t st = di_check(op, "x", x, 0, AXON_DTYPE_COUNT, 2, any2);
    if (st != AXON_OK) return st;
    const int64_t N = x->sizes[0], M = x->sizes[1], os[1] = {N * (N - 1) / 2};
    if ((st = di_check(op, "out", out, 1, x->dtype, 1, os)) != AXON_OK) return st;
    di_args_t a = {.p = p, .f64 = x->dtype == AXON_FLOAT64, .pairs = 1, .B = 1, .P = N, .R = N, .M = M,
                   .x1 = x->data, .x2 = x->data};
    if (N <= 1) a.P = 0; /* no pairs */
    return di_launch(s, op, &a, out);
}

axon_status_t axon_kernel_pdist_backward(axon_stream_t s, const axon_tensor_t *grad_x, const axon_tensor_t *grad,
                                         const axon_tensor_t *x, const axon_tensor_t *dist, double p) {
    const char *op = "pdist_backward";
    const int64_t any2[2] = {-1, -1};
    axon_status_t st = di_check(op, "x", x, 0, AXON_DTYPE_COUNT, 2, any2);
    if (st != AXON_OK) return st;
    const int64_t N = x->sizes[0], M = x->sizes[1], ps[1] = {N * (N - 1) / 2};
    if ((st = di_check(op, "grad", grad, 0, x->dtype, 1, ps)) != AXON_OK) return st;
    if ((st = di_check(op, "dist", dist, 0, x->dtype, 1, ps)) != AXON_OK) return st;
    if ((st = di_check(op, "grad_x", grad_x, 1, x->dtype, 2, x->sizes)) != AXON_OK) return st;
    di_args_t a = {.p = p, .f64 = x->dtype == AXON_FLOAT64, .pairs = 1, .backward = 1, .B = 1, .P = N, .R = N,
                   .M = M, .x1 = x->data, .x2 = x->data, .grad = grad->data, .dist = dist->data};
    return di_launch(s, op, &a, grad_x);
}
