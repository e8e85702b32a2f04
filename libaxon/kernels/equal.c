/* axon_kernel_equal (axon/reduce.h): a and b walked together by the strided iterator in chunks; a chunk that finds
 * a difference clears the shared flag, and the others skip their work once it is clear. The flag goes to the
 * caller's host byte at the end. */
#include <stdatomic.h>
#include <string.h>

#include "axon/reduce.h"
#include "axon/stream.h"
#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"

typedef struct eq_args {
    axon_tensor_t a, b;
    unsigned char *same;         /* host memory */
} eq_args_t;

typedef struct eq_job {
    const eq_args_t *args;
    axon_iter_t it;
    atomic_int same;
} eq_job_t;

/* Whether the n elements of a run differ somewhere; LD widens an element to the type compared. */
#define EQ_RUN(T, LD)                                                                                       \
    do {                                                                                                    \
        const T *a = (const T *)ptr[0], *b = (const T *)ptr[1];                                             \
        for (int64_t i = 0; i < n; i++)                                                                     \
            if (!(LD(a[i * st[0]]) == LD(b[i * st[1]]))) return 1;                                          \
        return 0;                                                                                           \
    } while (0)

#define EQ_SAME(x) (x)
#define EQ_TRUTH(x) ((x) != 0)

#define EQ_COMPLEX(T)                                                                                       \
    do {                                                                                                    \
        const T *a = (const T *)ptr[0], *b = (const T *)ptr[1];                                             \
        for (int64_t i = 0; i < n; i++)                                                                     \
            if (!(a[i * st[0]].re == b[i * st[1]].re && a[i * st[0]].im == b[i * st[1]].im)) return 1;      \
        return 0;                                                                                           \
    } while (0)

static int eq_differs(axon_dtype_t d, char *const *ptr, const int64_t *st, int64_t n) {
    switch (d) {
    case AXON_FLOAT32: EQ_RUN(float, EQ_SAME);
    case AXON_FLOAT64: EQ_RUN(double, EQ_SAME);
    case AXON_FLOAT16: EQ_RUN(uint16_t, axon_f16_to_f32);
    case AXON_BFLOAT16: EQ_RUN(uint16_t, axon_bf16_to_f32);
    case AXON_INT8: EQ_RUN(int8_t, EQ_SAME);
    case AXON_UINT8: EQ_RUN(uint8_t, EQ_SAME);
    case AXON_INT16: EQ_RUN(int16_t, EQ_SAME);
    case AXON_INT32: EQ_RUN(int32_t, EQ_SAME);
    case AXON_INT64: EQ_RUN(int64_t, EQ_SAME);
    case AXON_BOOL: EQ_RUN(uint8_t, EQ_TRUTH);
    case AXON_COMPLEX64: EQ_COMPLEX(axon_c64_t);
    default: EQ_COMPLEX(axon_c128_t);
    }
}

static void eq_run(void *ctx, char *const *ptr, const int64_t *st, int64_t n, int64_t pos) {
    (void)pos;
    eq_job_t *j = ctx;
    if (atomic_load_explicit(&j->same, memory_order_relaxed) && eq_differs(j->args->a.dtype, ptr, st, n))
        atomic_store_explicit(&j->same, 0, memory_order_relaxed);
}

static void eq_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    eq_job_t *j = ctx;
    if (atomic_load_explicit(&j->same, memory_order_relaxed)) axon_iter_runs(&j->it, begin, end, eq_run, ctx);
}

static axon_status_t eq_kernel(const void *args, const axon_exec_t *ex) {
    eq_job_t j;
    j.args = args;
    atomic_init(&j.same, 1);
    if (axon_tensor_numel(&j.args->a) > 0) {
        const axon_tensor_t *ts[2] = {&j.args->a, &j.args->b};
        axon_iter_init(&j.it, 2, ts, 1);
        axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, eq_range, &j);
    }
    *j.args->same = (unsigned char)atomic_load(&j.same);
    return AXON_OK;
}

axon_status_t axon_kernel_equal(axon_stream_t s, const axon_tensor_t *a, const axon_tensor_t *b,
                                unsigned char *same) {
    axon_status_t st = axon_kernel_check_operand(a, "equal", "a", 0);
    if (st == AXON_OK) st = axon_kernel_check_operand(b, "equal", "b", 0);
    if (st != AXON_OK) return st;
    if (same == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "equal: same is NULL");
    if (a->dtype != b->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "equal: a and b must have one dtype (got %s and %s)",
                         axon_dtype_name(a->dtype), axon_dtype_name(b->dtype));
    if (a->ndim != b->ndim || memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) != 0) {
        char sa[96], sb[96];
        return axon_fail(AXON_ERROR_INVALID_ARG, "equal: shapes %s and %s differ", axon_shape_format(a, sa, 96),
                         axon_shape_format(b, sb, 96));
    }
    eq_args_t x;
    memset(&x, 0, sizeof x);
    x.a = *a, x.b = *b, x.same = same;
    const uint64_t bytes = 2 * (uint64_t)axon_tensor_numel(a) * axon_dtype_size(a->dtype);
    axon_launch_t l = {eq_kernel, &x, sizeof x, "equal", bytes};
    return axon_stream_launch(s, &l);
}
