/* Reductions along one dimension that keep position information: max/min with indices (axon_kernel_arg_reduce) and
 * cumulative sums and products (axon_kernel_cumulative).
 *
 * Both walk "lines" along dim. The other dimensions go into one iterator walked in in's memory order; a run of it
 * is a set of neighbouring lines. When dim is not in's fastest dimension (argmax over dim 0 of a row-major matrix),
 * lines of a run are processed RD_VEC at a time, lane-wise, reading each row of the block contiguously; otherwise
 * each line is scanned on its own from blocks converted into an L1 buffer. Values are compared and accumulated in
 * double (exact for every float dtype's values, and float64 accumulation for the scans) or int64; complex scans
 * accumulate in complex128, line by line. Each line is one thread's sequential work, so results never depend on the
 * thread count. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "complex_c128.h"
#include "dtype.h"
#include "internal.h"
#include "reduce_impl.h"

static const char *const arg_names[] = {"max", "min", "argmax", "argmin"};
_Static_assert(sizeof arg_names / sizeof arg_names[0] == AXON_ARG_REDUCE_OP_COUNT,
               "every axon_arg_reduce_op_t needs a name");
static const char *const cum_names[] = {"cumsum", "cumprod", "logcumsumexp"};
_Static_assert(sizeof cum_names / sizeof cum_names[0] == AXON_CUMULATIVE_OP_COUNT,
               "every axon_cumulative_op_t needs a name");

const char *axon_arg_reduce_op_name(axon_arg_reduce_op_t op) {
    return (unsigned)op < AXON_ARG_REDUCE_OP_COUNT ? arg_names[op] : "invalid";
}

const char *axon_cumulative_op_name(axon_cumulative_op_t op) {
    return (unsigned)op < AXON_CUMULATIVE_OP_COUNT ? cum_names[op] : "invalid";
}

typedef struct rdim_args {
    int scan;                    /* 1: cumulative; 0: arg reduction */
    int scan_kind;               /* RDIM_SCAN_SUM, _PROD or _LSE */
    int scan_arg;                /* cummax, cummin: running extreme and its index (lines only, never lanes) */
    int is_max;
    int is_int;                  /* work type int64, else double */
    int is_complex;              /* scans only: work type complex128 (lines only, never lanes) */
    int lanes;                   /* lane-wise: lines of a run are neighbours in memory */
    int f32_line;                /* arg reduction of float32 lines with unit stride: rdim_arg_line_f32 */
    int f32_scan_arg;            /* cummax, cummin of float32 lines, values and indices with unit strides:
                                    rdim_scan_arg_f32 */
    axon_iter_t kept;            /* tensor 0 in, 1 indices or out, 2 values (when present) */
    int64_t len;                 /* size along dim */
    int64_t dstride[3];          /* strides along dim, in elements */
    size_t es[3];
    axon_convert_fn load;        /* in -> work type */
    axon_convert_fn store;       /* work type -> out or values; NULL when there are no values */
} rdim_args_t;

/* x beats best: greater (smaller), or the first NaN. */
#define RDIM_BEATS(mx, x, best) ((mx) ? ((x) > (best)) : ((x) < (best))) | (((x) != (x)) & ((best) == (best)))

#define RDIM_DEFINE(S, W)                                                                                         \
    /* One line of arg reduction: best value and index over x[0..n) continuing from (best, bi) at offset t0. */   \
    static void rdim_arg_line_##S(int mx, const W *x, int64_t n, int64_t t0, W *best, int64_t *bi) {             \
        for (int64_t i = 0; i < n; i++)                                                                           \
            if (RDIM_BEATS(mx, x[i], *best)) *best = x[i], *bi = t0 + i;                                          \
    }                                                                                                             \
    static void rdim_arg_lanes_##S(int mx, const W *x, int64_t m, int64_t t, W *best, int64_t *bi) {             \
        for (int64_t j = 0; j < m; j++) {                                                                         \
            int b = RDIM_BEATS(mx, x[j], best[j]);                                                                \
            best[j] = b ? x[j] : best[j];                                                                         \
            bi[j] = b ? t : bi[j];                                                                                \
        }                                                                                                         \
    }                                                                                                             \
    static void rdim_scan_##S(int kind, W *acc, W *x, int64_t n) {                                               \
        W a = *acc;                                                                                               \
        if (kind == RDIM_SCAN_PROD)                                                                               \
            for (int64_t i = 0; i < n; i++) x[i] = a = RDIM_MUL_##S(a, x[i]);                                     \
        else if (kind == RDIM_SCAN_LSE)                                                                           \
            for (int64_t i = 0; i < n; i++) x[i] = a = RDIM_LSE_##S(x[i], a);                                     \
        else                                                                                                      \
            for (int64_t i = 0; i < n; i++) x[i] = a = RDIM_ADD_##S(a, x[i]);                                     \
        *acc = a;                                                                                                 \
    }                                                                                                             \
    static void rdim_scan_lanes_##S(int kind, W *acc, const W *x, int64_t m) {                                   \
        if (kind == RDIM_SCAN_PROD)                                                                               \
            for (int64_t j = 0; j < m; j++) acc[j] = RDIM_MUL_##S(acc[j], x[j]);                                  \
        else if (kind == RDIM_SCAN_LSE)                                                                           \
            for (int64_t j = 0; j < m; j++) acc[j] = RDIM_LSE_##S(x[j], acc[j]);                                  \
        else                                                                                                      \
            for (int64_t j = 0; j < m; j++) acc[j] = RDIM_ADD_##S(acc[j], x[j]);                                  \
    }

/* The scans' folds; LSE is logcumsumexp's: PyTorch's log-add-exp of the new element x and the running value, in
 * float64 (its CPU accumulation type), with its rule for NaN (kept) and for equal infinities (x itself). */
enum { RDIM_SCAN_SUM, RDIM_SCAN_PROD, RDIM_SCAN_LSE };

static inline double rdim_log_add_exp(double x, double acc) {
    const double lo = acc != acc ? acc : acc < x ? acc : x, hi = acc != acc ? acc : x < acc ? acc : x;
    return lo != hi || isfinite(lo) ? hi + log1p(exp(lo - hi)) : x;
}

#define RDIM_LSE_f64(x, a) rdim_log_add_exp(x, a)
#define RDIM_LSE_i64(x, a) (x) /* not used: logcumsumexp is float only */
#define RDIM_ADD_f64(a, b) ((a) + (b))
#define RDIM_MUL_f64(a, b) ((a) * (b))
#define RDIM_ADD_i64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define RDIM_MUL_i64(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))

RDIM_DEFINE(f64, double)
RDIM_DEFINE(i64, int64_t)

typedef union rdim_buf {
    double d[RD_BLOCK];
    int64_t i[RD_BLOCK];
    axon_c128_t c[RD_BLOCK / 2];
} rdim_buf_t;

/* A complex scan line, in complex128 (PyTorch's CPU accumulation type for both complex dtypes), as c10::complex
 * computes (complex_c128.h): products with the running value on the left, logcumsumexp's log-add-exp of the new
 * element and the running value (which starts at -inf). */
static void rdim_line_complex(const rdim_args_t *a, char *const *p) {
    rdim_buf_t buf;
    const int prod = a->scan_kind == RDIM_SCAN_PROD, lse = a->scan_kind == RDIM_SCAN_LSE;
    axon_c128_t acc = axon_c128(prod ? 1.0 : lse ? -INFINITY : 0.0, 0.0);
    for (int64_t t0 = 0; t0 < a->len; t0 += RD_BLOCK / 2) {
        int64_t m = a->len - t0 < RD_BLOCK / 2 ? a->len - t0 : RD_BLOCK / 2;
        a->load((char *)buf.c, 1, p[0] + t0 * a->dstride[0] * (int64_t)a->es[0], a->dstride[0], m);
        for (int64_t i = 0; i < m; i++) {
            const axon_c128_t x = buf.c[i];
            acc = prod ? axon_c128_mul(acc, x) : lse ? axon_c128_log_add_exp(x, acc) : axon_c128_add(acc, x);
            buf.c[i] = acc;
        }
        a->store(p[1] + t0 * a->dstride[1] * (int64_t)a->es[1], a->dstride[1], (const char *)buf.c, 1, m);
    }
}

#define RDIM_F32_LANES 64

/* The index rdim_arg_line_f64 would give on a float32 line with unit stride (the first of equal extremes, or the
 * first NaN), in two vectorizable passes instead of one compare-and-branch per element: the extreme by
 * RDIM_F32_LANES independent lanes (a NaN, once picked, stays: every comparison with it is false), then the first
 * element equal to it. The value is read back from that element, so -0 against +0 comes out as the scan's. */
AXON_CLONES static int64_t rdim_arg_line_f32(int mx, const float *restrict x, int64_t n) {
    float acc[RDIM_F32_LANES];
    for (int l = 0; l < RDIM_F32_LANES; l++) acc[l] = x[0];
    int64_t i = 0, nv = n - n % RDIM_F32_LANES;
    if (mx) {
        for (; i < nv; i += RDIM_F32_LANES)
            for (int l = 0; l < RDIM_F32_LANES; l++) acc[l] = RDIM_BEATS(1, x[i + l], acc[l]) ? x[i + l] : acc[l];
    } else {
        for (; i < nv; i += RDIM_F32_LANES)
            for (int l = 0; l < RDIM_F32_LANES; l++) acc[l] = RDIM_BEATS(0, x[i + l], acc[l]) ? x[i + l] : acc[l];
    }
    for (; i < n; i++) acc[0] = RDIM_BEATS(mx, x[i], acc[0]) ? x[i] : acc[0];
    float best = acc[0];
    for (int l = 1; l < RDIM_F32_LANES; l++) best = RDIM_BEATS(mx, acc[l], best) ? acc[l] : best;
    if (best != best) {
        for (i = 0; i < n; i++)
            if (x[i] != x[i]) return i;
    }
    for (i = 0; i < n; i++)
        if (x[i] == best) return i;
    return 0; /* not reached: best is one of the elements */
}

/* cummax / cummin over m loaded elements starting at position t0: PyTorch's rule, the running extreme moves to an
 * element that is NaN, or that is >= (<=) it while it is not NaN, so ties and NaNs take the latest index. The
 * running values replace the elements in buf; the indices go to idx (int64, stride a->dstride[1]). */
static void rdim_scan_arg(const rdim_args_t *a, rdim_buf_t *buf, int64_t m, int64_t t0, double *bd, int64_t *bi_val,
                          int64_t *bi, char *idx) {
    for (int64_t k = 0; k < m; k++) {
        if (a->is_int) {
            const int64_t x = buf->i[k];
            if (t0 + k == 0 || (a->is_max ? x >= *bi_val : x <= *bi_val)) *bi_val = x, *bi = t0 + k;
            buf->i[k] = *bi_val;
        } else {
            const double x = buf->d[k];
            if (t0 + k == 0 || x != x || (*bd == *bd && (a->is_max ? x >= *bd : x <= *bd))) *bd = x, *bi = t0 + k;
            buf->d[k] = *bd;
        }
        memcpy(idx + k * a->dstride[1] * 8, bi, 8);
    }
}

/* rdim_scan_arg on a float32 line read and written in place (x into values v, indices idx, all with unit stride),
 * instead of double blocks converted both ways and one strided index copy per element (1.2-1.5x torch CPU's time
 * for a [1024, 1024] cummax). The update stays a branch: a running extreme rarely moves, so the branch predicts and
 * the loop runs at its stores' pace, where a select would chain each element's compare to the last one's. */
#define RDIM_SCAN_ARG_F32(NAME, GE)                                                                               \
    AXON_CLONES static void NAME(const float *restrict x, float *restrict v, int64_t *restrict idx, int64_t n) { \
        float best = x[0];                                                                                        \
        int64_t bi = 0;                                                                                           \
        for (int64_t k = 0; k < n; k++) {                                                                         \
            const float e = x[k];                                                                                 \
            if (__builtin_expect(e != e || (best == best && GE(e, best)), 0)) best = e, bi = k;                   \
            v[k] = best;                                                                                          \
            idx[k] = bi;                                                                                          \
        }                                                                                                         \
    }
#define RDIM_GE(e, b) ((e) >= (b))
#define RDIM_LE(e, b) ((e) <= (b))
RDIM_SCAN_ARG_F32(rdim_cummax_f32, RDIM_GE)
RDIM_SCAN_ARG_F32(rdim_cummin_f32, RDIM_LE)
#undef RDIM_GE
#undef RDIM_LE
#undef RDIM_SCAN_ARG_F32

/* One line: p[k] points at tensor k's element 0 of the line. */
static void rdim_line(const rdim_args_t *a, char *const *p) {
    if (a->f32_scan_arg) {
        (a->is_max ? rdim_cummax_f32 : rdim_cummin_f32)((const float *)p[0], (float *)p[2], (int64_t *)p[1], a->len);
        return;
    }
    if (a->is_complex) {
        rdim_line_complex(a, p);
        return;
    }
    if (a->f32_line) {
        const float *x = (const float *)p[0];
        const int64_t bi = rdim_arg_line_f32(a->is_max, x, a->len);
        const double v = x[bi];
        memcpy(p[1], &bi, sizeof bi);
        if (a->store) a->store(p[2], 1, (const char *)&v, 1, 1);
        return;
    }
    rdim_buf_t buf;
    union {
        double d;
        int64_t i;
    } acc = {0}, best = {0};
    if (a->scan && a->scan_kind == RDIM_SCAN_PROD) {
        if (a->is_int) acc.i = 1;
        else acc.d = 1.0;
    } else if (a->scan && a->scan_kind == RDIM_SCAN_LSE) {
        acc.d = -INFINITY;
    }
    int64_t bi = 0;
    for (int64_t t0 = 0; t0 < a->len; t0 += RD_BLOCK) {
        int64_t m = a->len - t0 < RD_BLOCK ? a->len - t0 : RD_BLOCK;
        a->load((char *)&buf, 1, p[0] + t0 * a->dstride[0] * (int64_t)a->es[0], a->dstride[0], m);
        if (a->scan_arg) {
            rdim_scan_arg(a, &buf, m, t0, &best.d, &best.i, &bi, p[1] + t0 * a->dstride[1] * 8);
            a->store(p[2] + t0 * a->dstride[2] * (int64_t)a->es[2], a->dstride[2], (const char *)&buf, 1, m);
            continue;
        }
        if (a->scan) {
            if (a->is_int) rdim_scan_i64(a->scan_kind, &acc.i, buf.i, m);
            else rdim_scan_f64(a->scan_kind, &acc.d, buf.d, m);
            a->store(p[1] + t0 * a->dstride[1] * (int64_t)a->es[1], a->dstride[1], (const char *)&buf, 1, m);
            continue;
        }
        if (t0 == 0 && a->is_int) best.i = buf.i[0];
        else if (t0 == 0) best.d = buf.d[0];
        if (a->is_int) rdim_arg_line_i64(a->is_max, buf.i, m, t0, &best.i, &bi);
        else rdim_arg_line_f64(a->is_max, buf.d, m, t0, &best.d, &bi);
    }
    if (a->scan) return;
    memcpy(p[1], &bi, sizeof bi);
    if (a->store) a->store(p[2], 1, (const char *)&best, 1, 1);
}

/* m neighbouring lines, lane-wise; p[k] points at line 0's element 0, s[k] steps between lines. */
static void rdim_lanes(const rdim_args_t *a, char *const *p, const int64_t *s, int64_t m) {
    _Alignas(64) rdim_buf_t acc;
    _Alignas(64) rdim_buf_t x;
    int64_t bi[RD_VEC];
    AXON_ASSERT(m <= RD_VEC);
    const int prod = a->scan && a->scan_kind == RDIM_SCAN_PROD, lse = a->scan && a->scan_kind == RDIM_SCAN_LSE;
    for (int64_t j = 0; j < m; j++) {
        if (a->is_int) acc.i[j] = prod;
        else acc.d[j] = lse ? -INFINITY : prod ? 1.0 : 0.0;
        bi[j] = 0;
    }
    for (int64_t t = 0; t < a->len; t++) {
        const char *row = p[0] + t * a->dstride[0] * (int64_t)a->es[0];
        if (a->scan) {
            a->load((char *)&x, 1, row, s[0], m);
            if (a->is_int) rdim_scan_lanes_i64(a->scan_kind, acc.i, x.i, m);
            else rdim_scan_lanes_f64(a->scan_kind, acc.d, x.d, m);
            a->store(p[1] + t * a->dstride[1] * (int64_t)a->es[1], s[1], (const char *)&acc, 1, m);
        } else if (t == 0) {
            a->load((char *)&acc, 1, row, s[0], m);
        } else {
            a->load((char *)&x, 1, row, s[0], m);
            if (a->is_int) rdim_arg_lanes_i64(a->is_max, x.i, m, t, acc.i, bi);
            else rdim_arg_lanes_f64(a->is_max, x.d, m, t, acc.d, bi);
        }
    }
    if (a->scan) return;
    for (int64_t j = 0; j < m; j++) memcpy(p[1] + j * s[1] * 8, &bi[j], 8);
    if (a->store) a->store(p[2], s[2], (const char *)&acc, 1, m);
}

/* Sum and product scans along in's fastest dimension (cumsum along rows), RDIM_LINES neighbouring lines at once: one
 * line's running sum is a chain of dependent float64 (or int64) adds that ran at the add's latency, 1.5x torch CPU's
 * time over a 1024 x 1024 float32 matrix (cumprod's multiplies 1.24x); with the lines' chains interleaved they
 * overlap. Each line still folds its own elements in order, from the same start, so the results are the bits
 * rdim_line gives. */
#define RDIM_LINES 8
#define RDIM_LINES_BLOCK 256

static int rdim_lines_apply(const rdim_args_t *a) {
    return a->scan && a->scan_kind != RDIM_SCAN_LSE && !a->scan_arg && !a->is_complex && !a->lanes;
}

static void rdim_lines_sum(const rdim_args_t *a, char *const *p, const int64_t *s) {
    _Alignas(64) union {
        double d[RDIM_LINES][RDIM_LINES_BLOCK];
        int64_t i[RDIM_LINES][RDIM_LINES_BLOCK];
    } buf;
    const int prod = a->scan_kind == RDIM_SCAN_PROD;
    double accd[RDIM_LINES];
    int64_t acci[RDIM_LINES];
    for (int j = 0; j < RDIM_LINES; j++) accd[j] = prod ? 1.0 : 0.0, acci[j] = prod;
    const int64_t in_step = a->dstride[0] * (int64_t)a->es[0], out_step = a->dstride[1] * (int64_t)a->es[1];
    for (int64_t t0 = 0; t0 < a->len; t0 += RDIM_LINES_BLOCK) {
        const int64_t m = a->len - t0 < RDIM_LINES_BLOCK ? a->len - t0 : RDIM_LINES_BLOCK;
        for (int j = 0; j < RDIM_LINES; j++)
            a->load((char *)buf.d[j], 1, p[0] + j * s[0] * (int64_t)a->es[0] + t0 * in_step, a->dstride[0], m);
        if (a->is_int && prod) {
            for (int64_t t = 0; t < m; t++)
                for (int j = 0; j < RDIM_LINES; j++) buf.i[j][t] = acci[j] = RDIM_MUL_i64(acci[j], buf.i[j][t]);
        } else if (a->is_int) {
            for (int64_t t = 0; t < m; t++)
                for (int j = 0; j < RDIM_LINES; j++) buf.i[j][t] = acci[j] = RDIM_ADD_i64(acci[j], buf.i[j][t]);
        } else if (prod) {
            for (int64_t t = 0; t < m; t++)
                for (int j = 0; j < RDIM_LINES; j++) buf.d[j][t] = accd[j] = RDIM_MUL_f64(accd[j], buf.d[j][t]);
        } else {
            for (int64_t t = 0; t < m; t++)
                for (int j = 0; j < RDIM_LINES; j++) buf.d[j][t] = accd[j] = RDIM_ADD_f64(accd[j], buf.d[j][t]);
        }
        for (int j = 0; j < RDIM_LINES; j++)
            a->store(p[1] + j * s[1] * (int64_t)a->es[1] + t0 * out_step, a->dstride[1], (const char *)buf.d[j], 1, m);
    }
}

static void rdim_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const rdim_args_t *a = ctx;
    const int nt = a->kept.ntensors;
    char *p[3] = {NULL, NULL, NULL};
    int64_t j0 = 0;
    if (rdim_lines_apply(a))
        for (; n - j0 >= RDIM_LINES; j0 += RDIM_LINES) {
            for (int k = 0; k < nt; k++) p[k] = ptr[k] + j0 * stride[k] * (int64_t)a->es[k];
            rdim_lines_sum(a, p, stride);
        }
    while (j0 < n) {
        int64_t m = a->lanes ? (n - j0 < RD_VEC ? n - j0 : RD_VEC) : 1;
        for (int k = 0; k < nt; k++) p[k] = ptr[k] + j0 * stride[k] * (int64_t)a->es[k];
        if (a->lanes) rdim_lanes(a, p, stride, m);
        else rdim_line(a, p);
        j0 += m;
    }
}

static void rdim_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const rdim_args_t *a = ctx;
    axon_iter_runs(&a->kept, begin, end, rdim_run, ctx);
}

static axon_status_t rdim_kernel(const void *args, const axon_exec_t *ex) {
    const rdim_args_t *a = args;
    int64_t grain = AXON_KERNEL_GRAIN / (a->len > 0 ? a->len : 1);
    axon_parallel_for(ex->pool, 0, a->kept.numel, grain < 1 ? 1 : grain, rdim_range, (void *)a);
    return AXON_OK;
}

static int rdim_same_shape(const axon_tensor_t *x, const axon_tensor_t *y) {
    if (x->ndim != y->ndim) return 0;
    for (int i = 0; i < x->ndim; i++)
        if (x->sizes[i] != y->sizes[i]) return 0;
    return 1;
}

static int64_t rdim_abs(int64_t v) { return v < 0 ? -v : v; }

/* Fill the iterator, strides along dim and the mode from n tensors (t[0] = in) whose views drop dim. */
static void rdim_setup(rdim_args_t *a, int n, const axon_tensor_t *const *t, int dim) {
    axon_tensor_t v[3];
    const axon_tensor_t *vp[3];
    for (int k = 0; k < n; k++) {
        v[k] = *t[k];
        v[k].sizes[dim] = 1;
        a->dstride[k] = t[k]->ndim ? t[k]->strides[dim] : 0;
        a->es[k] = axon_dtype_size(t[k]->dtype);
        vp[k] = &v[k];
    }
    a->len = t[0]->ndim ? t[0]->sizes[dim] : 1;
    axon_iter_init(&a->kept, n, vp, 1);
    a->lanes = a->kept.sizes[0] > 1 && a->len > 1 && rdim_abs(a->kept.strides[0][0]) < rdim_abs(a->dstride[0]);
}


/* Common checks; *dim is normalized. Complex in only where the caller says so. */
static axon_status_t rdim_check_dim(const char *name, const axon_tensor_t *in, int *dim, int complex_ok) {
    int nd = in->ndim ? in->ndim : 1;
    if (*dim < -nd || *dim >= nd)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dim %d is out of range for a %d-d tensor", name, *dim,
                         in->ndim);
    if (*dim < 0) *dim += nd;
    if (!complex_ok && rd_is_complex(in->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: complex dtypes are not supported (in %s)", name,
                         axon_dtype_name(in->dtype));
    return AXON_OK;
}

axon_status_t axon_kernel_arg_reduce(axon_stream_t s, axon_arg_reduce_op_t op, const axon_tensor_t *out_values,
                                     const axon_tensor_t *out_indices, const axon_tensor_t *in, int dim) {
    if ((unsigned)op >= AXON_ARG_REDUCE_OP_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "arg_reduce: op %d is out of range [0, %d)", (int)op,
                         AXON_ARG_REDUCE_OP_COUNT);
    const char *name = arg_names[op];
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(in, name, "in", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out_indices, name, "out_indices", 1)) != AXON_OK) return st;
    if (out_values && op >= AXON_ARG_REDUCE_ARGMAX)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out_values must be NULL (only max and min return values)",
                         name);
    if (out_values) {
        if ((st = axon_kernel_check_operand(out_values, name, "out_values", 1)) != AXON_OK) return st;
        if (out_values->dtype == AXON_COMPLEX64 || out_values->dtype == AXON_COMPLEX128)
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: complex out_values are not supported", name);
    }
    if ((st = rdim_check_dim(name, in, &dim, 0)) != AXON_OK) return st;
    if (out_indices->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out_indices must be int64, got %s", name,
                         axon_dtype_name(out_indices->dtype));
    axon_tensor_t want = *in;
    if (in->ndim) want.sizes[dim] = 1;
    const axon_tensor_t *outs[2] = {out_indices, out_values};
    for (int k = 0; k < 2; k++)
        if (outs[k] && !rdim_same_shape(outs[k], &want))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s is not in shape %s with size 1 at dim %d",
                             name, k ? "out_values" : "out_indices", axon_shape_format(outs[k], sa, sizeof sa),
                             axon_shape_format(in, sb, sizeof sb), dim);
    if (axon_tensor_numel(out_indices) == 0) return AXON_OK;
    if (in->ndim && in->sizes[dim] == 0)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: cannot reduce over dim %d of size 0 (in %s): the operation has no identity", name, dim,
                         axon_shape_format(in, sa, sizeof sa));
    rdim_args_t a;
    memset(&a, 0, sizeof a);
    a.is_max = op == AXON_ARG_REDUCE_MAX || op == AXON_ARG_REDUCE_ARGMAX;
    a.is_int = !axon_dtype_is_floating(in->dtype);
    axon_dtype_t wd = a.is_int ? AXON_INT64 : AXON_FLOAT64;
    a.load = axon_convert_get(in->dtype, wd);
    if (out_values) a.store = axon_convert_get(wd, out_values->dtype);
    const axon_tensor_t *ts[3] = {in, out_indices, out_values};
    rdim_setup(&a, out_values ? 3 : 2, ts, dim);
    a.f32_line = in->dtype == AXON_FLOAT32 && a.dstride[0] == 1 && !a.lanes;
    axon_launch_t l = {rdim_kernel, &a, sizeof a, name,
                       (uint64_t)axon_tensor_numel(in) * a.es[0] + (uint64_t)axon_tensor_numel(out_indices) * 8};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_cumulative(axon_stream_t s, axon_cumulative_op_t op, const axon_tensor_t *out,
                                     const axon_tensor_t *in, int dim) {
    if ((unsigned)op >= AXON_CUMULATIVE_OP_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "cumulative: op %d is out of range [0, %d)", (int)op,
                         AXON_CUMULATIVE_OP_COUNT);
    const char *name = cum_names[op];
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(out, name, "out", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(in, name, "in", 0)) != AXON_OK) return st;
    if ((st = rdim_check_dim(name, in, &dim, 1)) != AXON_OK) return st;
    if (rd_is_complex(in->dtype) && !rd_is_complex(out->dtype))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: a complex in (%s) needs a complex out, got %s", name,
                         axon_dtype_name(in->dtype), axon_dtype_name(out->dtype));
    if (!rdim_same_shape(out, in))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out shape %s does not match in shape %s", name,
                         axon_shape_format(out, sa, sizeof sa), axon_shape_format(in, sb, sizeof sb));
    if (axon_tensor_numel(in) == 0) return AXON_OK;
    rdim_args_t a;
    memset(&a, 0, sizeof a);
    a.scan = 1;
    a.scan_kind = op == AXON_CUMULATIVE_PROD ? RDIM_SCAN_PROD : op == AXON_CUMULATIVE_LOGSUMEXP ? RDIM_SCAN_LSE
                                                                                               : RDIM_SCAN_SUM;
    a.is_complex = rd_is_complex(out->dtype);
    a.is_int = !a.is_complex && !axon_dtype_is_floating(out->dtype);
    if (a.scan_kind == RDIM_SCAN_LSE && a.is_int)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: out dtype %s is not floating", name, axon_dtype_name(out->dtype));
    axon_dtype_t wd = a.is_complex ? AXON_COMPLEX128 : a.is_int ? AXON_INT64 : AXON_FLOAT64;
    a.load = axon_convert_get(in->dtype, wd);
    a.store = axon_convert_get(wd, out->dtype);
    const axon_tensor_t *ts[2] = {in, out};
    rdim_setup(&a, 2, ts, dim);
    if (a.is_complex) a.lanes = 0;
    axon_launch_t l = {rdim_kernel, &a, sizeof a, name,
                       (uint64_t)axon_tensor_numel(in) * (a.es[0] + a.es[1])};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_cumulative_extreme(axon_stream_t s, axon_arg_reduce_op_t op, const axon_tensor_t *out_values,
                                             const axon_tensor_t *out_indices, const axon_tensor_t *in, int dim) {
    if (op != AXON_ARG_REDUCE_MAX && op != AXON_ARG_REDUCE_MIN)
        return axon_fail(AXON_ERROR_INVALID_ARG, "cumulative_extreme: op must be max or min, got %d", (int)op);
    const char *name = op == AXON_ARG_REDUCE_MAX ? "cummax" : "cummin";
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(in, name, "in", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out_values, name, "out_values", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out_indices, name, "out_indices", 1)) != AXON_OK) return st;
    if ((st = rdim_check_dim(name, in, &dim, 0)) != AXON_OK) return st;
    if (out_values->dtype == AXON_COMPLEX64 || out_values->dtype == AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: complex out_values are not supported", name);
    if (out_indices->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out_indices must be int64, got %s", name,
                         axon_dtype_name(out_indices->dtype));
    const axon_tensor_t *outs[2] = {out_values, out_indices};
    for (int k = 0; k < 2; k++)
        if (!rdim_same_shape(outs[k], in))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s does not match in shape %s", name,
                             k ? "out_indices" : "out_values", axon_shape_format(outs[k], sa, sizeof sa),
                             axon_shape_format(in, sb, sizeof sb));
    if (axon_tensor_numel(in) == 0) return AXON_OK;
    rdim_args_t a;
    memset(&a, 0, sizeof a);
    a.scan = 1;
    a.scan_arg = 1;
    a.is_max = op == AXON_ARG_REDUCE_MAX;
    a.is_int = !axon_dtype_is_floating(in->dtype);
    axon_dtype_t wd = a.is_int ? AXON_INT64 : AXON_FLOAT64;
    a.load = axon_convert_get(in->dtype, wd);
    a.store = axon_convert_get(wd, out_values->dtype);
    const axon_tensor_t *ts[3] = {in, out_indices, out_values};
    rdim_setup(&a, 3, ts, dim);
    a.lanes = 0;
    a.f32_scan_arg = in->dtype == AXON_FLOAT32 && out_values->dtype == AXON_FLOAT32 && a.dstride[0] == 1 &&
                     a.dstride[1] == 1 && a.dstride[2] == 1;
    axon_launch_t l = {rdim_kernel, &a, sizeof a, name,
                       (uint64_t)axon_tensor_numel(in) * (a.es[0] + a.es[2] + 8)};
    return axon_stream_launch(s, &l);
}
