/* tril / triu (shape.h): keep one side of a diagonal of the last two dimensions and zero the other.
 *
 * out and in are walked together in logical row-major order, so each run's (row, column) follows from its position
 * and then advances by counting; no division per element. The zero is all-zero bytes, valid in every dtype, so the
 * kernel only moves elements. In place (out == in) it rewrites kept elements with themselves. */
#include <inttypes.h>

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

static void tri_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    const struct tri_job *j = ctx;
    const size_t es = j->es;
    const int64_t so = stride[0] * (int64_t)es, si = stride[1] * (int64_t)es;
    int64_t col = pos % j->cols, row = pos / j->cols % j->rows;
    static const char zero[16];
    for (int64_t i = 0; i < n; i++) {
        int64_t off = col - row;
        int keep = j->a->upper ? off >= j->a->diagonal : off <= j->a->diagonal;
        char *d = ptr[0] + i * so;
        const char *src = keep ? ptr[1] + i * si : zero;
        if (d != src) ix_move(d, src, es);  /* in place, a kept element is already there */
        if (++col == j->cols) {
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
