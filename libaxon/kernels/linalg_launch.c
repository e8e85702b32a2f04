/* The checks and the batched command of the linear-algebra kernels (linalg_impl.h). */
#include <stdatomic.h>
#include <string.h>

#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"
#include "linalg_impl.h"

#ifdef AXON_HAVE_MKL
#include "mkl_layer.h"
int axon_linalg_available(void) { return 1; }
#else
int axon_linalg_available(void) { return 0; }
#endif

axon_dtype_t linalg_real_dtype(axon_dtype_t d) {
    return d == AXON_COMPLEX64 ? AXON_FLOAT32 : d == AXON_COMPLEX128 ? AXON_FLOAT64 : d;
}

void linalg_args_init(linalg_args_t *a, const char *name) {
    memset(a, 0, sizeof *a);
    a->name = name;
    a->rows = a->cols = -1;
}

static int linalg_dtype_ok(axon_dtype_t d) {
    return d == AXON_FLOAT32 || d == AXON_FLOAT64 || d == AXON_COMPLEX64 || d == AXON_COMPLEX128;
}

axon_status_t linalg_check_matrices(const axon_tensor_t *t, const char *op, const char *role, int64_t *batch,
                                    int64_t *rows, int64_t *cols) {
    axon_status_t st = axon_kernel_check_operand(t, op, role, 1);
    if (st != AXON_OK) return st;
    if (t->ndim < 2) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must have two or more dimensions, has %d", op,
                                      role, t->ndim);
    if (!linalg_dtype_ok(t->dtype))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has dtype %s; linear algebra takes float32, float64, "
                         "complex64 or complex128", op, role, axon_dtype_name(t->dtype));
    const int64_t r = t->sizes[t->ndim - 2], c = t->sizes[t->ndim - 1];
    if ((rows && *rows >= 0 && r != *rows) || (cols && *cols >= 0 && c != *cols)) {
        char buf[96];
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s; its matrices must be %lld x %lld", op, role,
                         axon_shape_format(t, buf, sizeof buf), (long long)(rows && *rows >= 0 ? *rows : r),
                         (long long)(cols && *cols >= 0 ? *cols : c));
    }
    if (r > INT32_MAX || c > INT32_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has %lld x %lld matrices; LAPACK takes at most 2^31 - 1 rows "
                         "and columns", op, role, (long long)r, (long long)c);
    /* column-major matrices one after another; dimensions of one element may have any stride */
    int64_t b = 1;
    for (int d = 0; d < t->ndim - 2; d++) b *= t->sizes[d];
    int64_t expect = r * c;
    int ok = (r <= 1 || t->strides[t->ndim - 2] == 1) && (c <= 1 || t->strides[t->ndim - 1] == r);
    for (int d = t->ndim - 3; d >= 0 && ok; d--) {
        if (t->sizes[d] > 1 && t->strides[d] != expect) ok = 0;
        expect *= t->sizes[d];
    }
    if (!ok && b * r * c > 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is not a batch of column-major matrices (strides [..., "
                         "rows * cols, 1, rows])", op, role);
    if (batch) *batch = b;
    if (rows) *rows = r;
    if (cols) *cols = c;
    return AXON_OK;
}

axon_status_t linalg_check_square(linalg_args_t *x, const axon_tensor_t *a, const char *role) {
    axon_status_t st = linalg_check_matrices(a, x->name, role, &x->batch, &x->rows, &x->cols);
    if (st == AXON_OK && x->rows != x->cols)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be square, is %lld x %lld", x->name, role,
                       (long long)x->rows, (long long)x->cols);
    return st;
}

axon_status_t linalg_check_rhs(const linalg_args_t *x, const axon_tensor_t *factor, const char *role,
                               const axon_tensor_t *b, int64_t *k) {
    int64_t bb = 0, n = x->rows;
    *k = -1;
    axon_status_t st = linalg_check_matrices(b, x->name, "b", &bb, &n, k);
    if (st == AXON_OK && bb != x->batch)
        st = axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has %lld matrices, b %lld", x->name, role, (long long)x->batch,
                       (long long)bb);
    if (st == AXON_OK) st = linalg_check_same_dtype(b, factor->dtype, x->name, "b");
    return st;
}

axon_status_t linalg_check_vectors(const axon_tensor_t *t, const char *op, const char *role, axon_dtype_t dtype,
                                   int64_t batch, int64_t per) {
    axon_status_t st = axon_kernel_check_operand(t, op, role, 1);
    if (st != AXON_OK) return st;
    if (t->dtype != dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has dtype %s, expected %s", op, role,
                         axon_dtype_name(t->dtype), axon_dtype_name(dtype));
    if (axon_tensor_numel(t) != batch * per || !axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous with %lld x %lld elements, has %lld", op,
                         role, (long long)batch, (long long)per, (long long)axon_tensor_numel(t));
    return AXON_OK;
}

axon_status_t linalg_check_same_dtype(const axon_tensor_t *t, axon_dtype_t want, const char *op, const char *role) {
    if (t->dtype == want) return AXON_OK;
    return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has dtype %s, expected %s", op, role, axon_dtype_name(t->dtype),
                     axon_dtype_name(want));
}

typedef struct linalg_run {
    const linalg_args_t *a;
    int64_t parts;        /* units per matrix: parts of its right-hand sides, or 1 */
    _Atomic int status;   /* the first failure of a matrix, else 0 */
} linalg_run_t;

static void linalg_units(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    linalg_run_t *r = ctx;
    for (int64_t u = begin; u < end; u++) {
        const int64_t i = u / r->parts, p = u % r->parts, n = r->a->rhs;
        const int st = r->a->part_fn ? r->a->part_fn(r->a, i, n * p / r->parts, n * (p + 1) / r->parts)
                                     : r->a->fn(r->a, i);
        if (st != 0) {
            int none = 0;
            atomic_compare_exchange_strong(&r->status, &none, st);
        }
    }
}

static axon_status_t linalg_kernel(const void *args, const axon_exec_t *ex) {
    const linalg_args_t *a = args;
#ifdef AXON_HAVE_MKL
    axon_mkl_use_sequential();
#endif
    linalg_run_t r = {a, 1, 0};
    /* fewer matrices than workers: cut each solve's right-hand sides into parts of at least 16 */
    const int64_t pool = axon_pool_size(ex->pool);
    if (a->part_fn && a->batch < pool && a->rhs >= 32) {
        r.parts = (2 * pool + a->batch - 1) / a->batch;
        if (r.parts > a->rhs / 16) r.parts = a->rhs / 16;
    }
    /* one unit each: a factorization or solve of even a small matrix outweighs a wake-up */
    axon_parallel_for(ex->pool, 0, a->batch * r.parts, a->rows * a->cols >= 64 ? 1 : 16, linalg_units, &r);
    const int st = atomic_load(&r.status);
    if (st == 0) return AXON_OK;
    if (st == LINALG_NOMEM || st == LINALG_NOMEM_INFO)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: cannot allocate LAPACK's workspace for a %lld x %lld matrix",
                         a->name, (long long)a->rows, (long long)a->cols);
    if (st == LINALG_BAD_PIVOT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: pivots must be between 1 and the number of rows (%lld); they "
                         "are not an LU's", a->name, (long long)a->rows);
    return axon_fail(AXON_ERROR_INTERNAL, "%s: LAPACK rejected its argument %d", a->name, -st);
}

axon_status_t linalg_launch(axon_stream_t s, linalg_args_t *a, int needs_lapack) {
#ifndef AXON_HAVE_MKL
    if (needs_lapack)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: this libaxon was built without MKL, whose LAPACK it calls",
                         a->name);
#else
    (void)needs_lapack;
#endif
    if (a->batch == 0) return AXON_OK;
    uint64_t bytes = 0;
    for (int k = 0; k < LINALG_MAX_OPERANDS; k++)
        if (a->present[k]) bytes += (uint64_t)axon_tensor_numel(&a->t[k]) * axon_dtype_size(a->t[k].dtype);
    axon_launch_t l = {linalg_kernel, a, sizeof *a, a->name, bytes};
    return axon_stream_launch(s, &l);
}
