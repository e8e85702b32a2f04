/* Embedding bags, forward and backward (axon/embedding_bag.h).
 *
 * The forward gives each participant whole bags and walks a bag's indices once per chunk of EB_CHUNK columns,
 * accumulating in a stack buffer (float32, or float64 for float64 tables): a row chunk is read where it lies when
 * the table is already in the accumulation type, else converted first. The weight's gradient splits the table's
 * rows: every participant scans all indices (or, for max, all of max_indices) and adds only into its own rows, in
 * index order, so no two threads write one row and the result does not depend on the thread count. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "axon/embedding_bag.h"
#include "axon/stream.h"
#include "index_impl.h"
#include "internal.h"
#include "kernels_impl.h"
#include "spatial_impl.h"

#define EB_CHUNK 256

typedef struct eb_args {
    axon_embedding_bag_params_t p;
    int64_t V, D, B, n, noffsets;
    int f64;                          /* accumulate in float64 */
    axon_tensor_t indices, offsets, o2b_t, mi_t;   /* for the run-time checks */
    const char *weight, *idx, *off, *o2b, *psw, *grad, *bag_size_in, *mi_in;
    char *out, *o2b_out, *bag_size, *mi, *gw, *gpsw;
    int64_t *counts;
    int idx64, off64, o2b64;
    axon_dtype_t dt_w, dt_out, dt_psw, dt_grad, dt_gpsw;
    axon_convert_fn ld_w, ld_grad, st_out;   /* rows to / from the accumulation type */
} eb_args_t;

static int64_t eb_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Bag b's index positions [start, end). */
static void eb_bag(const eb_args_t *a, int64_t b, int64_t *start, int64_t *end) {
    *start = ix_load(a->off + b * (a->off64 ? 8 : 4), a->off64);
    *end = b + 1 < a->B ? ix_load(a->off + (b + 1) * (a->off64 ? 8 : 4), a->off64) : a->n;
}

/* Index i (int32 or int64 indices). */
#define EB_IDX(a, i) ((a)->idx64 ? ((const int64_t *)(a)->idx)[i] : (int64_t)((const int32_t *)(a)->idx)[i])

/* Columns [d0, d0 + m) of row r of a table of dtype dt as the accumulation type: in place when dt is that type,
 * else converted into buf. */
static const void *eb_row(const eb_args_t *a, const char *table, axon_dtype_t dt, axon_convert_fn ld, int64_t r,
                          int64_t d0, int64_t m, void *buf) {
    const char *src = table + (size_t)(r * a->D + d0) * axon_dtype_size(dt);
    if (dt == (a->f64 ? AXON_FLOAT64 : AXON_FLOAT32)) return src;
    ld((char *)buf, 1, src, 1, m);
    return buf;
}

/* Rows are gathered at random from a table usually far larger than the caches, so a bag's loop waits on memory:
 * each step asks for the row EB_AHEAD indices further on (an index outside the table is skipped here and refused by
 * the check that ran before). */
#define EB_AHEAD 16

static void eb_prefetch(const eb_args_t *a, int64_t r, int64_t d0, int64_t m) {
    if (r < 0 || r >= a->V) return;
    const size_t es = axon_dtype_size(a->dt_w);
    const char *p = a->weight + (size_t)(r * a->D + d0) * es;
    for (size_t o = 0; o < (size_t)m * es; o += 64) __builtin_prefetch(p + o);
}

/* One chunk of columns of bag b, in accumulation type T (float or double). */
#define EB_FORWARD_CHUNK(T)                                                                                        \
    do {                                                                                                           \
        T acc[EB_CHUNK], buf[EB_CHUNK];                                                                            \
        int64_t arg[EB_CHUNK];                                                                                     \
        int first = 1;                                                                                             \
        for (int64_t j = 0; j < m; j++) acc[j] = 0;                                                                \
        if (a->mi != NULL)                                                                                         \
            for (int64_t j = 0; j < m; j++) arg[j] = -1;                                                           \
        for (int64_t i = start; i < end; i++) {                                                                    \
            const int64_t r = EB_IDX(a, i);                                                                      \
            if (i + EB_AHEAD < a->n) eb_prefetch(a, EB_IDX(a, i + EB_AHEAD), d0, m);                             \
            if (r == a->p.padding_idx) continue;                                                                   \
            const T *row = eb_row(a, a->weight, a->dt_w, a->ld_w, r, d0, m, buf);                                  \
            if (a->p.mode == AXON_BAG_MAX) {                                                                       \
                for (int64_t j = 0; j < m; j++)                                                                    \
                    if (first || row[j] > acc[j]) acc[j] = row[j], arg[j] = r;                                      \
                first = 0;                                                                                         \
            } else if (a->psw != NULL) {                                                                           \
                const T s = (T)axon_spatial_load(a->dt_psw, a->psw, i);                                            \
                for (int64_t j = 0; j < m; j++) acc[j] += row[j] * s;                                              \
            } else {                                                                                               \
                for (int64_t j = 0; j < m; j++) acc[j] += row[j];                                                  \
            }                                                                                                      \
        }                                                                                                          \
        if (a->p.mode == AXON_BAG_MEAN && count > 0)                                                               \
            for (int64_t j = 0; j < m; j++) acc[j] /= (T)count;                                                    \
        char *dst = a->out + (size_t)(b * a->D + d0) * axon_dtype_size(a->dt_out);                                 \
        if (a->dt_out == (a->f64 ? AXON_FLOAT64 : AXON_FLOAT32)) memcpy(dst, acc, (size_t)m * sizeof(T));          \
        else a->st_out(dst, 1, (const char *)acc, 1, m);                                                           \
        if (a->mi != NULL) memcpy(a->mi + (size_t)(b * a->D + d0) * 8, arg, (size_t)m * 8);                        \
    } while (0)

/* Columns [d0, d0 + m) of bag b's float32 sum (weighted by psw if given) into acc, rows in index order. Inlined with
 * m a constant for the common widths, so that acc lives in vector registers instead of being loaded and stored back
 * for every row (a chain through store forwarding that held a 64-wide table at half of torch CPU's speed). */
__attribute__((always_inline)) static inline void eb_sum_rows_f32(const eb_args_t *a, const float *w, const float *psw,
                                                                  int64_t start, int64_t end, int64_t d0, int64_t m,
                                                                  float *restrict acc) {
    for (int64_t j = 0; j < m; j++) acc[j] = 0;
    for (int64_t i = start; i < end; i++) {
        if (i + EB_AHEAD < a->n) {
            const int64_t ra = EB_IDX(a, i + EB_AHEAD);
            if (ra >= 0 && ra < a->V)
                for (int64_t o = 0; o < m; o += 16) __builtin_prefetch(w + ra * a->D + d0 + o);
        }
        const int64_t r = EB_IDX(a, i);
        if (r == a->p.padding_idx) continue;
        const float *row = w + r * a->D + d0;
        if (psw != NULL) {
            const float sw = psw[i];
            for (int64_t j = 0; j < m; j++) acc[j] += row[j] * sw;
        } else {
            for (int64_t j = 0; j < m; j++) acc[j] += row[j];
        }
    }
}

/* Bag b in float32 sum or mean mode (the common case) as one tight loop per column chunk: the same sums in the same
 * order as EB_FORWARD_CHUNK, without its per-row dtype and mode tests. Returns 0, having done nothing, for other
 * cases. */
__attribute__((always_inline)) static inline int eb_sum_bag_f32(const eb_args_t *a, int64_t b, int64_t start,
                                                                int64_t end, int64_t count) {
    if (a->f64 || a->dt_w != AXON_FLOAT32 || a->dt_out != AXON_FLOAT32 || a->p.mode == AXON_BAG_MAX ||
        (a->psw != NULL && a->dt_psw != AXON_FLOAT32))
        return 0;
    const float *w = (const float *)a->weight, *psw = (const float *)a->psw;
    for (int64_t d0 = 0; d0 < a->D; d0 += EB_CHUNK) {
        const int64_t m = eb_min(EB_CHUNK, a->D - d0);
        float acc[EB_CHUNK];
        switch (m) {
        case 16: eb_sum_rows_f32(a, w, psw, start, end, d0, 16, acc); break;
        case 32: eb_sum_rows_f32(a, w, psw, start, end, d0, 32, acc); break;
        case 64: eb_sum_rows_f32(a, w, psw, start, end, d0, 64, acc); break;
        case 128: eb_sum_rows_f32(a, w, psw, start, end, d0, 128, acc); break;
        default: eb_sum_rows_f32(a, w, psw, start, end, d0, m, acc); break;
        }
        if (a->p.mode == AXON_BAG_MEAN && count > 0)
            for (int64_t j = 0; j < m; j++) acc[j] /= (float)count;
        memcpy((float *)a->out + b * a->D + d0, acc, (size_t)m * sizeof(float));
    }
    return 1;
}

AXON_CLONES static void eb_forward_range(void *ctx, int64_t begin, int64_t end_bag, int slot) {
    (void)slot;
    const eb_args_t *a = ctx;
    for (int64_t b = begin; b < end_bag; b++) {
        int64_t start, end, count = 0;
        eb_bag(a, b, &start, &end);
        for (int64_t i = start; i < end; i++) {
            if (a->o2b_out != NULL) ((int64_t *)a->o2b_out)[i] = b;
            count += EB_IDX(a, i) != a->p.padding_idx;
        }
        ((int64_t *)a->bag_size)[b] = count;
        if (eb_sum_bag_f32(a, b, start, end, count)) continue;
        for (int64_t d0 = 0; d0 < a->D; d0 += EB_CHUNK) {
            const int64_t m = eb_min(EB_CHUNK, a->D - d0);
            if (a->f64) EB_FORWARD_CHUNK(double);
            else EB_FORWARD_CHUNK(float);
        }
    }
}

/* offsets[0] == 0, non-decreasing, the last <= n: PyTorch CPU's checks (and what keeps every bag inside indices). */
static axon_status_t eb_check_offsets(const eb_args_t *a) {
    const size_t es = a->off64 ? 8 : 4;
    if (a->noffsets == 0) return AXON_OK;
    const int64_t first = ix_load(a->off, a->off64);
    if (first != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in "
                         "the mini-batch has to start from position 0. However, got %lld", (long long)first);
    for (int64_t b = 1; b < a->noffsets; b++) {
        const int64_t prev = ix_load(a->off + (b - 1) * es, a->off64), cur = ix_load(a->off + b * es, a->off64);
        if (cur < prev)
            return axon_fail(AXON_ERROR_INVALID_ARG, "embedding_bag: offsets must be non-decreasing, but offsets[%lld] "
                             "= %lld is below offsets[%lld] = %lld", (long long)b, (long long)cur, (long long)(b - 1),
                             (long long)prev);
    }
    const int64_t last = ix_load(a->off + (a->noffsets - 1) * es, a->off64);
    if (last > a->n)
        return axon_fail(AXON_ERROR_INVALID_ARG, "embedding_bag: offsets[-1] can not be greater than input's length "
                         "%lld, but got offsets[-1] of %lld", (long long)a->n, (long long)last);
    return AXON_OK;
}

static axon_status_t eb_forward_kernel(const void *args, const axon_exec_t *ex) {
    const eb_args_t *a = args;
    axon_status_t st = axon_ix_check_bounds(&a->indices, a->V, 0, 0, "embedding_bag", ex->pool);
    if (st == AXON_OK) st = eb_check_offsets(a);
    if (st != AXON_OK) return st;
    const int64_t per_bag = (a->n / (a->B > 0 ? a->B : 1) + 1) * (a->D + 1);
    const int64_t grain = AXON_KERNEL_GRAIN / per_bag;
    axon_parallel_for(ex->pool, 0, a->B, grain < 1 ? 1 : grain, eb_forward_range, (void *)a);
    return AXON_OK;
}

/* ---- backward ---- */

static void eb_counts_range(void *ctx, int64_t r0, int64_t r1, int slot) {
    (void)slot;
    const eb_args_t *a = ctx;
    for (int64_t r = r0; r < r1; r++) a->counts[r] = 0;
    for (int64_t i = 0; i < a->n; i++) {
        const int64_t r = EB_IDX(a, i);
        if (r >= r0 && r < r1) a->counts[r]++;
    }
}

/* grad_weight rows [r0, r1) in accumulation type T (grad_weight's own dtype: float32 or float64). */
#define EB_BACKWARD_ROWS(T)                                                                                        \
    do {                                                                                                           \
        T *gw = (T *)a->gw;                                                                                        \
        memset(gw + r0 * a->D, 0, (size_t)((r1 - r0) * a->D) * sizeof(T));                                         \
        if (a->p.mode == AXON_BAG_MAX) {                                                                           \
            const int64_t *mi = (const int64_t *)a->mi_in;                                                         \
            for (int64_t b = 0; b < a->B; b++)                                                                     \
                for (int64_t d0 = 0; d0 < a->D; d0 += EB_CHUNK) {                                                  \
                    const int64_t m = eb_min(EB_CHUNK, a->D - d0);                                                 \
                    const T *g = NULL;                                                                             \
                    for (int64_t j = 0; j < m; j++) {                                                              \
                        const int64_t r = mi[b * a->D + d0 + j];                                                   \
                        if (r < r0 || r >= r1) continue;                                                           \
                        if (g == NULL) g = eb_row(a, a->grad, a->dt_grad, a->ld_grad, b, d0, m, buf);              \
                        gw[r * a->D + d0 + j] += g[j];                                                             \
                    }                                                                                              \
                }                                                                                                  \
            break;                                                                                                 \
        }                                                                                                          \
        for (int64_t i = 0; i < a->n; i++) {                                                                       \
            const int64_t r = EB_IDX(a, i);                                                                      \
            if (r < r0 || r >= r1 || r == a->p.padding_idx) continue;                                              \
            const int64_t b = ix_load(a->o2b + i * (a->o2b64 ? 8 : 4), a->o2b64);                                  \
            T scale = 1;                                                                                           \
            if (a->counts != NULL) scale /= (T)a->counts[r];                                                       \
            if (a->psw != NULL) scale *= (T)axon_spatial_load(a->dt_psw, a->psw, i);                               \
            if (a->p.mode == AXON_BAG_MEAN) {                                                                      \
                const int64_t size = ((const int64_t *)a->bag_size_in)[b];                                         \
                if (size != 0) scale /= (T)size;                                                                   \
            }                                                                                                      \
            for (int64_t d0 = 0; d0 < a->D; d0 += EB_CHUNK) {                                                      \
                const int64_t m = eb_min(EB_CHUNK, a->D - d0);                                                     \
                const T *g = eb_row(a, a->grad, a->dt_grad, a->ld_grad, b, d0, m, buf);                            \
                T *dst = gw + r * a->D + d0;                                                                       \
                for (int64_t j = 0; j < m; j++) dst[j] += g[j] * scale;                                            \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)

static void eb_backward_range(void *ctx, int64_t r0, int64_t r1, int slot) {
    (void)slot;
    const eb_args_t *a = ctx;
    if (a->f64) {
        double buf[EB_CHUNK];
        EB_BACKWARD_ROWS(double);
    } else {
        float buf[EB_CHUNK];
        EB_BACKWARD_ROWS(float);
    }
}

/* Values of an int64 tensor in [lo, hi), or the first one outside as a failure naming `what`. */
static axon_status_t eb_check_range(const axon_tensor_t *t, int64_t lo, int64_t hi, const char *what) {
    const int64_t n = axon_tensor_numel(t);
    const int is64 = t->dtype == AXON_INT64;
    for (int64_t i = 0; i < n; i++) {
        const int64_t v = ix_load((const char *)t->data + i * (is64 ? 8 : 4), is64);
        if (v < lo || v >= hi)
            return axon_fail(AXON_ERROR_INVALID_ARG, "embedding_bag_backward: %s %lld is out of range [%lld, %lld)",
                             what, (long long)v, (long long)lo, (long long)hi);
    }
    return AXON_OK;
}

static axon_status_t eb_backward_kernel(const void *args, const axon_exec_t *ex) {
    const eb_args_t *a = args;
    axon_status_t st = axon_ix_check_bounds(&a->indices, a->V, 0, 0, "embedding_bag_backward", ex->pool);
    if (st == AXON_OK && a->p.mode != AXON_BAG_MAX) st = eb_check_range(&a->o2b_t, 0, a->B, "offset2bag value");
    if (st == AXON_OK && a->p.mode == AXON_BAG_MAX) st = eb_check_range(&a->mi_t, -1, a->V, "max_indices value");
    if (st != AXON_OK) return st;
    const int64_t grain = (a->V + 7) / 8;    /* each part scans every index: a few parts, not many */
    if (a->counts != NULL) axon_parallel_for(ex->pool, 0, a->V, grain, eb_counts_range, (void *)a);
    axon_parallel_for(ex->pool, 0, a->V, grain, eb_backward_range, (void *)a);
    return AXON_OK;
}

static void eb_psw_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const eb_args_t *a = ctx;
    double buf_w[EB_CHUNK], buf_g[EB_CHUNK];
    for (int64_t i = begin; i < end; i++) {
        const int64_t r = EB_IDX(a, i), b = ix_load(a->o2b + i * (a->o2b64 ? 8 : 4), a->o2b64);
        double dot = 0;
        if (r != a->p.padding_idx) {
            for (int64_t d0 = 0; d0 < a->D; d0 += EB_CHUNK) {
                const int64_t m = eb_min(EB_CHUNK, a->D - d0);
                if (a->f64) {
                    const double *w = eb_row(a, a->weight, a->dt_w, a->ld_w, r, d0, m, buf_w);
                    const double *g = eb_row(a, a->grad, a->dt_grad, a->ld_grad, b, d0, m, buf_g);
                    for (int64_t j = 0; j < m; j++) dot += w[j] * g[j];
                } else {
                    const float *w = eb_row(a, a->weight, a->dt_w, a->ld_w, r, d0, m, buf_w);
                    const float *g = eb_row(a, a->grad, a->dt_grad, a->ld_grad, b, d0, m, buf_g);
                    float s = 0;
                    for (int64_t j = 0; j < m; j++) s += w[j] * g[j];
                    dot += s;
                }
            }
        }
        axon_spatial_store(a->dt_gpsw, a->gpsw, i, dot);
    }
}

static axon_status_t eb_psw_kernel(const void *args, const axon_exec_t *ex) {
    const eb_args_t *a = args;
    axon_status_t st = axon_ix_check_bounds(&a->indices, a->V, 0, 0, "embedding_bag_backward", ex->pool);
    if (st == AXON_OK) st = eb_check_range(&a->o2b_t, 0, a->B, "offset2bag value");
    if (st != AXON_OK) return st;
    const int64_t grain = AXON_KERNEL_GRAIN / (2 * a->D + 1);
    axon_parallel_for(ex->pool, 0, a->n, grain < 1 ? 1 : grain, eb_psw_range, (void *)a);
    return AXON_OK;
}

/* ---- launch checks ---- */

/* t: well-formed, contiguous, of ndim dims with the given sizes (-1: any), of a float dtype (kind 0), an index
 * dtype (kind 1: int32 or int64) or int64 (kind 2). */
static axon_status_t eb_check(const char *op, const axon_tensor_t *t, const char *role, int dst, int kind, int ndim,
                              int64_t s0, int64_t s1) {
    char sa[160];
    if (t == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, role);
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    const int ok = kind == 0 ? axon_dtype_is_floating(t->dtype)
                   : kind == 1 ? t->dtype == AXON_INT32 || t->dtype == AXON_INT64 : t->dtype == AXON_INT64;
    if (!ok)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not %s", op, role, axon_dtype_name(t->dtype),
                         kind == 0 ? "float32, float64, float16 or bfloat16" : kind == 1 ? "int32 or int64" : "int64");
    if (t->ndim != ndim || (s0 >= 0 && t->sizes[0] != s0) || (ndim > 1 && s1 >= 0 && t->sizes[1] != s1) ||
        !axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s %s must be contiguous with %d dimension(s)%s", op, role,
                         axon_shape_format(t, sa, sizeof sa), ndim, s0 >= 0 ? " fitting the other tensors" : "");
    return AXON_OK;
}

static axon_status_t eb_params(const char *op, const axon_embedding_bag_params_t *p, const axon_tensor_t *psw) {
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: params is NULL", op);
    if ((unsigned)p->mode >= AXON_BAG_MODE_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: mode %d is not an axon_bag_mode_t", op, (int)p->mode);
    if (psw != NULL && p->mode != AXON_BAG_SUM)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: per_sample_weights are only supported for mode='sum'", op);
    return AXON_OK;
}

static axon_dtype_t eb_acc(int f64) { return f64 ? AXON_FLOAT64 : AXON_FLOAT32; }

axon_status_t axon_kernel_embedding_bag(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *offset2bag,
                                        const axon_tensor_t *bag_size, const axon_tensor_t *max_indices,
                                        const axon_tensor_t *weight, const axon_tensor_t *indices,
                                        const axon_tensor_t *offsets, const axon_tensor_t *per_sample_weights,
                                        const axon_embedding_bag_params_t *p) {
    const char *op = "embedding_bag";
    axon_status_t st = eb_params(op, p, per_sample_weights);
    if (st == AXON_OK) st = eb_check(op, weight, "weight", 0, 0, 2, -1, -1);
    if (st == AXON_OK) st = eb_check(op, indices, "indices", 0, 1, 1, -1, -1);
    if (st == AXON_OK) st = eb_check(op, offsets, "offsets", 0, 1, 1, -1, -1);
    if (st != AXON_OK) return st;
    eb_args_t a;
    memset(&a, 0, sizeof a);
    a.p = *p, a.V = weight->sizes[0], a.D = weight->sizes[1], a.n = indices->sizes[0];
    a.noffsets = offsets->sizes[0];
    a.B = a.noffsets - (p->include_last_offset ? 1 : 0);
    if (a.B < 0) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: include_last_offset needs at least one offset", op);
    st = eb_check(op, out, "out", 1, 0, 2, a.B, a.D);
    if (st == AXON_OK && out->dtype != weight->dtype)
        st = axon_fail(AXON_ERROR_UNSUPPORTED, "%s: out dtype %s differs from weight dtype %s", op,
                       axon_dtype_name(out->dtype), axon_dtype_name(weight->dtype));
    if (st == AXON_OK && offset2bag != NULL) st = eb_check(op, offset2bag, "offset2bag", 1, 2, 1, a.n, -1);
    if (st == AXON_OK) st = eb_check(op, bag_size, "bag_size", 1, 2, 1, a.B, -1);
    if (st == AXON_OK && p->mode == AXON_BAG_MAX) st = eb_check(op, max_indices, "max_indices", 1, 2, 2, a.B, a.D);
    if (st == AXON_OK && per_sample_weights != NULL)
        st = eb_check(op, per_sample_weights, "per_sample_weights", 0, 0, 1, a.n, -1);
    if (st != AXON_OK) return st;
    if (a.B == 0 && a.n == 0) return AXON_OK;
    a.f64 = weight->dtype == AXON_FLOAT64;
    a.indices = *indices, a.offsets = *offsets;
    a.weight = weight->data, a.idx = indices->data, a.off = offsets->data;
    a.idx64 = indices->dtype == AXON_INT64, a.off64 = offsets->dtype == AXON_INT64;
    a.out = out->data, a.bag_size = bag_size->data;
    a.o2b_out = offset2bag != NULL ? offset2bag->data : NULL;
    a.mi = p->mode == AXON_BAG_MAX ? max_indices->data : NULL;
    a.psw = per_sample_weights != NULL ? per_sample_weights->data : NULL;
    a.dt_psw = per_sample_weights != NULL ? per_sample_weights->dtype : AXON_FLOAT32;
    a.dt_w = weight->dtype, a.dt_out = out->dtype;
    a.ld_w = axon_convert_get(weight->dtype, eb_acc(a.f64));
    a.st_out = axon_convert_get(eb_acc(a.f64), out->dtype);
    const uint64_t bytes = (uint64_t)a.n * (uint64_t)a.D * axon_dtype_size(weight->dtype) +
                           (uint64_t)a.B * (uint64_t)a.D * axon_dtype_size(out->dtype);
    axon_launch_t l = {eb_forward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_embedding_bag_backward(axon_stream_t s, const axon_tensor_t *grad_weight,
                                                 const axon_tensor_t *grad, const axon_tensor_t *indices,
                                                 const axon_tensor_t *offset2bag, const axon_tensor_t *bag_size,
                                                 const axon_tensor_t *max_indices,
                                                 const axon_tensor_t *per_sample_weights, const axon_tensor_t *counts,
                                                 const axon_embedding_bag_params_t *p) {
    const char *op = "embedding_bag_backward";
    axon_status_t st = eb_params(op, p, per_sample_weights);
    if (st == AXON_OK) st = eb_check(op, grad_weight, "grad_weight", 1, 0, 2, -1, -1);
    if (st == AXON_OK && grad_weight->dtype != AXON_FLOAT32 && grad_weight->dtype != AXON_FLOAT64)
        st = axon_fail(AXON_ERROR_UNSUPPORTED, "%s: grad_weight dtype %s is not float32 or float64", op,
                       axon_dtype_name(grad_weight->dtype));
    if (st == AXON_OK) st = eb_check(op, grad, "grad", 0, 0, 2, -1, grad_weight->sizes[1]);
    if (st == AXON_OK) st = eb_check(op, indices, "indices", 0, 1, 1, -1, -1);
    if (st != AXON_OK) return st;
    eb_args_t a;
    memset(&a, 0, sizeof a);
    a.p = *p, a.V = grad_weight->sizes[0], a.D = grad_weight->sizes[1], a.n = indices->sizes[0];
    a.B = grad->sizes[0];
    if (p->mode == AXON_BAG_MAX) {
        st = eb_check(op, max_indices, "max_indices", 0, 2, 2, a.B, a.D);
    } else {
        st = eb_check(op, offset2bag, "offset2bag", 0, 1, 1, a.n, -1);
        if (st == AXON_OK && p->mode == AXON_BAG_MEAN) st = eb_check(op, bag_size, "bag_size", 0, 2, 1, a.B, -1);
    }
    if (st == AXON_OK && per_sample_weights != NULL)
        st = eb_check(op, per_sample_weights, "per_sample_weights", 0, 0, 1, a.n, -1);
    if (st == AXON_OK && counts != NULL) st = eb_check(op, counts, "counts", 1, 2, 1, a.V, -1);
    if (st != AXON_OK) return st;
    if (a.V == 0 || a.D == 0) return AXON_OK;
    a.f64 = grad_weight->dtype == AXON_FLOAT64;
    a.indices = *indices, a.idx = indices->data, a.idx64 = indices->dtype == AXON_INT64;
    if (p->mode == AXON_BAG_MAX) {
        a.mi_t = *max_indices, a.mi_in = max_indices->data;
    } else {
        a.o2b_t = *offset2bag, a.o2b = offset2bag->data, a.o2b64 = offset2bag->dtype == AXON_INT64;
        if (p->mode == AXON_BAG_MEAN) a.bag_size_in = bag_size->data;
    }
    a.psw = per_sample_weights != NULL ? per_sample_weights->data : NULL;
    a.dt_psw = per_sample_weights != NULL ? per_sample_weights->dtype : AXON_FLOAT32;
    a.counts = counts != NULL ? (int64_t *)counts->data : NULL;
    a.gw = grad_weight->data;
    a.grad = grad->data, a.dt_grad = grad->dtype, a.ld_grad = axon_convert_get(grad->dtype, eb_acc(a.f64));
    const uint64_t bytes = (uint64_t)(a.V + a.n) * (uint64_t)a.D * axon_dtype_size(grad_weight->dtype);
    axon_launch_t l = {eb_backward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_embedding_bag_psw_backward(axon_stream_t s, const axon_tensor_t *grad_psw,
                                                     const axon_tensor_t *grad, const axon_tensor_t *weight,
                                                     const axon_tensor_t *indices, const axon_tensor_t *offset2bag,
                                                     const axon_embedding_bag_params_t *p) {
    const char *op = "embedding_bag_per_sample_weights_backward";
    axon_status_t st = eb_params(op, p, NULL);
    if (st == AXON_OK && p->mode != AXON_BAG_SUM)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "%s: per_sample_weights are only supported for mode='sum'", op);
    if (st == AXON_OK) st = eb_check(op, weight, "weight", 0, 0, 2, -1, -1);
    if (st == AXON_OK) st = eb_check(op, indices, "indices", 0, 1, 1, -1, -1);
    if (st == AXON_OK) st = eb_check(op, grad, "grad", 0, 0, 2, -1, weight->sizes[1]);
    if (st == AXON_OK) st = eb_check(op, offset2bag, "offset2bag", 0, 1, 1, indices->sizes[0], -1);
    if (st == AXON_OK) st = eb_check(op, grad_psw, "grad_per_sample_weights", 1, 0, 1, indices->sizes[0], -1);
    if (st != AXON_OK) return st;
    eb_args_t a;
    memset(&a, 0, sizeof a);
    a.p = *p, a.V = weight->sizes[0], a.D = weight->sizes[1], a.n = indices->sizes[0], a.B = grad->sizes[0];
    if (a.n == 0) return AXON_OK;
    a.f64 = weight->dtype == AXON_FLOAT64 || grad->dtype == AXON_FLOAT64;
    a.indices = *indices, a.idx = indices->data, a.idx64 = indices->dtype == AXON_INT64;
    a.o2b_t = *offset2bag, a.o2b = offset2bag->data, a.o2b64 = offset2bag->dtype == AXON_INT64;
    a.weight = weight->data, a.dt_w = weight->dtype, a.ld_w = axon_convert_get(weight->dtype, eb_acc(a.f64));
    a.grad = grad->data, a.dt_grad = grad->dtype, a.ld_grad = axon_convert_get(grad->dtype, eb_acc(a.f64));
    a.gpsw = grad_psw->data, a.dt_gpsw = grad_psw->dtype;
    const uint64_t bytes = (uint64_t)a.n * (uint64_t)a.D * 2 * axon_dtype_size(weight->dtype);
    axon_launch_t l = {eb_psw_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}
