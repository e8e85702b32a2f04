/* tril / triu (shape.h): keep one side of a diagonal of the last two dimensions and zero the other; and the
 * positions of such a side (tril_indices, triu_indices).
 *
 * out and in are walked together in logical row-major order, so each run's (row, column) follows from its position
 * and then advances by counting; no division per element. The zero is all-zero bytes, valid in every dtype, so the
 * kernel only moves elements. In place (out == in) it leaves kept elements where they are. */
#include <inttypes.h>
#include <string.h>

#include "axon/shape.h"
#include "internal.h"
#include "index_impl.h"

struct tri_args {
    axon_tensor_t out, in;
    int64_t diagonal;
    int upper;
};

struct tri_job {
    const struct tri_args *a;
    axon_iter_t it;
    int64_t rows, cols;
    size_t es;
};

/* n elements from ptr at byte strides so (out) and si (in): copied (src) or zeroed (src NULL). */
static void tri_segment(char *d, const char *src, int64_t so, int64_t si, int64_t n, size_t es) {
    static const char zero[16];
    if (so == (int64_t)es && (src == NULL || si == (int64_t)es)) { /* both contiguous: one call per segment */
        if (src == NULL) memset(d, 0, (size_t)n * es);
        else if (d != src) memmove(d, src, (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const char *e = src ? src + i * si : zero;
        if (d + i * so != e) ix_move(d + i * so, e, es); /* in place, a kept element is already there */
    }
}

/* A run cut at row ends and at the diagonal: each piece is copied or zeroed whole (element by element, tril of a
 * float32 matrix took 2x torch CPU's time). */
static void tri_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    const struct tri_job *j = ctx;
    const size_t es = j->es;
    const int64_t so = stride[0] * (int64_t)es, si = stride[1] * (int64_t)es;
    /* the diagonal clamped to where it still cuts a row, so row + diag cannot overflow */
    const int64_t diag = j->a->diagonal < -j->rows - 1 ? -j->rows - 1
                         : j->a->diagonal > j->cols + 1 ? j->cols + 1 : j->a->diagonal;
    int64_t col = pos % j->cols, row = pos / j->cols % j->rows;
    char *d = ptr[0];
    const char *src = ptr[1];
    while (n > 0) {
        const int64_t len = n < j->cols - col ? n : j->cols - col;
        /* columns kept in this row: tril [0, row + diag], triu [row + diag, cols); clamped to the run's piece */
        int64_t edge = j->a->upper ? row + diag : row + diag + 1;
        edge = edge < col ? col : edge > col + len ? col + len : edge;
        const int64_t first = edge - col; /* elements before the edge */
        tri_segment(d, j->a->upper ? NULL : src, so, si, first, es);
        tri_segment(d + first * so, j->a->upper ? src + first * si : NULL, so, si, len - first, es);
        d += len * so, src += len * si, n -= len, col += len;
        if (col == j->cols) {
            col = 0;
            if (++row == j->rows) row = 0;
        }
    }
}

static void tri_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct tri_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, tri_run, j);
}

static axon_status_t tri_kernel(const void *args, const axon_exec_t *ex) {
    const struct tri_args *a = args;
    struct tri_job j;
    j.a = a;
    const axon_tensor_t *ts[2] = {&a->out, &a->in};
    axon_iter_init(&j.it, 2, ts, 0);      /* logical order: the position gives (row, column) */
    j.rows = a->out.sizes[a->out.ndim - 2];
    j.cols = a->out.sizes[a->out.ndim - 1];
    j.es = axon_dtype_size(a->out.dtype);
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, tri_range, &j);
    return AXON_OK;
}

axon_status_t axon_kernel_triangle(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                   int64_t diagonal, int upper) {
    const char *op = upper ? "triu" : "tril";
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(out, op, "out", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(in, op, "in", 0)) != AXON_OK) return st;
    int same = out->ndim == in->ndim && out->dtype == in->dtype && in->ndim >= 2;
    for (int d = 0; same && d < in->ndim; d++) same = out->sizes[d] == in->sizes[d];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out %s %s and in %s %s must have one dtype, the same sizes and "
                         "at least 2 dimensions", op, axon_dtype_name(out->dtype),
                         axon_shape_format(out, sa, sizeof sa), axon_dtype_name(in->dtype),
                         axon_shape_format(in, sb, sizeof sb));
    struct tri_args a;
    memset(&a, 0, sizeof a);
    a.out = *out, a.in = *in, a.diagonal = diagonal, a.upper = upper != 0;
    int64_t n = axon_tensor_numel(out);
    if (n == 0) return AXON_OK;
    axon_launch_t l = {tri_kernel, &a, sizeof a, op, (uint64_t)n * 2 * axon_dtype_size(out->dtype)};
    return axon_stream_launch(s, &l);
}

/* ---- tril_indices / triu_indices ---- */

/* Row r's kept columns [first, end), with offset already clamped to [-rows - 1, cols + 1] so nothing overflows. */
static void tri_row_span(int64_t r, int64_t cols, int64_t offset, int upper, int64_t *first, int64_t *end) {
    int64_t lo = 0, hi = cols;
    if (upper) lo = r + offset < 0 ? 0 : r + offset;
    else hi = r + offset + 1 > cols ? cols : r + offset + 1;
    *first = lo;
    *end = hi < lo ? lo : hi;
}

static int64_t tri_clamp_offset(int64_t rows, int64_t cols, int64_t offset) {
    return offset < -rows - 1 ? -rows - 1 : offset > cols + 1 ? cols + 1 : offset;
}

int64_t axon_triangle_indices_count(int64_t rows, int64_t cols, int64_t offset, int upper) {
    if (rows <= 0 || cols <= 0) return 0;
    offset = tri_clamp_offset(rows, cols, offset);
    int64_t n = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t first, end;
        tri_row_span(r, cols, offset, upper, &first, &end);
        n += end - first;
    }
    return n;
}

struct tri_index_args {
    axon_tensor_t out;
    int64_t rows, cols, offset;
    int upper;
};

/* One pass in row-major order: the output is as long as the positions, which a plain loop writes at memory speed. */
static axon_status_t tri_index_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct tri_index_args *a = args;
    const int wide = a->out.dtype == AXON_INT64;
    const int64_t s0 = a->out.strides[0], s1 = a->out.strides[1];
    int64_t k = 0;
    for (int64_t r = 0; r < a->rows; r++) {
        int64_t first, end;
        tri_row_span(r, a->cols, a->offset, a->upper, &first, &end);
        for (int64_t c = first; c < end; c++, k++) {
            if (wide) {
                int64_t *o = a->out.data;
                o[k * s1] = r, o[s0 + k * s1] = c;
            } else {
                int32_t *o = a->out.data;
                o[k * s1] = (int32_t)r, o[s0 + k * s1] = (int32_t)c;
            }
        }
    }
    return AXON_OK;
}

axon_status_t axon_kernel_triangle_indices(axon_stream_t s, const axon_tensor_t *out, int64_t rows, int64_t cols,
                                           int64_t offset, int upper) {
    const char *op = upper ? "triu_indices" : "tril_indices";
    char sa[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(out, op, "out", 1)) != AXON_OK) return st;
    if (rows < 0 || cols < 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: rows %" PRId64 " and cols %" PRId64 " must be non-negative", op,
                         rows, cols);
    if (out->dtype != AXON_INT32 && out->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: out dtype %s is not int32 or int64", op,
                         axon_dtype_name(out->dtype));
    const int64_t n = axon_triangle_indices_count(rows, cols, offset, upper);
    if (out->ndim != 2 || out->sizes[0] != 2 || out->sizes[1] != n)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out shape %s is not [2, %" PRId64 "]", op,
                         axon_shape_format(out, sa, sizeof sa), n);
    if (n == 0) return AXON_OK;
    struct tri_index_args a;
    memset(&a, 0, sizeof a);
    a.out = *out, a.rows = rows, a.cols = cols, a.upper = upper != 0;
    a.offset = tri_clamp_offset(rows, cols, offset);
    axon_launch_t l = {tri_index_kernel, &a, sizeof a, op, (uint64_t)n * 2 * axon_dtype_size(out->dtype)};
    return axon_stream_launch(s, &l);
}
