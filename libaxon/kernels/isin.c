/* isin (axon/search.h): membership of each element in a set of test elements.
 *
 * The test elements are copied once as sort keys (float64 for the float dtypes, which hold every float16, bfloat16
 * and float32 value exactly; int64 for the integers and bool), NaNs dropped (a NaN equals nothing), and sorted; each
 * element is then one binary search, the elements split over the device's pool. -0.0 and 0.0 compare equal, as
 * they do under PyTorch's ==. The cost is O((m + n) log m) for m test elements, where PyTorch's CPU kernel switches
 * between a brute-force loop and a sort of both sets; the answers are the same. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "axon/search.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

typedef union isin_key {
    double f;
    int64_t i;
} isin_key_t;

typedef struct isin_args {
    const char *elements, *test;
    uint8_t *out;
    axon_dtype_t dtype;
    int floating, invert;
    int64_t n, m;                /* elements, test elements */
    isin_key_t *keys;            /* the sorted test keys (set by the kernel) */
    int64_t nkeys;
} isin_args_t;

static int isin_cmp_f(const void *x, const void *y) {
    const double a = ((const isin_key_t *)x)->f, b = ((const isin_key_t *)y)->f;
    return (a > b) - (a < b);
}

static int isin_cmp_i(const void *x, const void *y) {
    const int64_t a = ((const isin_key_t *)x)->i, b = ((const isin_key_t *)y)->i;
    return (a > b) - (a < b);
}

/* Element i of base (dtype d) as a key; the halves through the converter. */
static isin_key_t isin_key(axon_dtype_t d, const char *base, int64_t i) {
    isin_key_t k;
    switch (d) {
    case AXON_FLOAT32: k.f = ((const float *)(const void *)base)[i]; break;
    case AXON_FLOAT64: k.f = ((const double *)(const void *)base)[i]; break;
    case AXON_FLOAT16:
    case AXON_BFLOAT16: axon_convert_get(d, AXON_FLOAT64)((char *)&k.f, 1, base + i * 2, 1, 1); break;
    case AXON_INT8: k.i = ((const int8_t *)(const void *)base)[i]; break;
    case AXON_UINT8:
    case AXON_BOOL: k.i = ((const uint8_t *)(const void *)base)[i]; break;
    case AXON_INT16: k.i = ((const int16_t *)(const void *)base)[i]; break;
    case AXON_INT32: k.i = ((const int32_t *)(const void *)base)[i]; break;
    default: k.i = ((const int64_t *)(const void *)base)[i]; break;
    }
    return k;
}

static int isin_found(const isin_args_t *a, isin_key_t v) {
    int64_t lo = 0, hi = a->nkeys;
    if (a->floating) {
        if (v.f != v.f) return 0;
        while (lo < hi) {
            const int64_t mid = lo + ((hi - lo) >> 1);
            if (a->keys[mid].f < v.f) lo = mid + 1;
            else hi = mid;
        }
        return lo < a->nkeys && a->keys[lo].f == v.f;
    }
    while (lo < hi) {
        const int64_t mid = lo + ((hi - lo) >> 1);
        if (a->keys[mid].i < v.i) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->nkeys && a->keys[lo].i == v.i;
}

static void isin_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const isin_args_t *a = ctx;
    for (int64_t j = begin; j < end; j++)
        a->out[j] = (uint8_t)(isin_found(a, isin_key(a->dtype, a->elements, j)) != a->invert);
}

static axon_status_t isin_kernel(const void *args, const axon_exec_t *ex) {
    isin_args_t a = *(const isin_args_t *)args;
    a.keys = malloc((size_t)(a.m > 0 ? a.m : 1) * sizeof *a.keys);
    if (!a.keys)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "isin: %" PRId64 " sort keys of the test elements", a.m);
    a.nkeys = 0;
    for (int64_t i = 0; i < a.m; i++) {
        const isin_key_t k = isin_key(a.dtype, a.test, i);
        if (!a.floating || k.f == k.f) a.keys[a.nkeys++] = k;
    }
    qsort(a.keys, (size_t)a.nkeys, sizeof *a.keys, a.floating ? isin_cmp_f : isin_cmp_i);
    int64_t cost = 1;
    for (int64_t m = a.nkeys; m > 1; m >>= 1) cost++;
    const int64_t grain = AXON_KERNEL_GRAIN / (cost * 4);
    axon_parallel_for(ex->pool, 0, a.n, grain < 1 ? 1 : grain, isin_range, &a);
    free(a.keys);
    return AXON_OK;
}

axon_status_t axon_kernel_isin(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *elements,
                               const axon_tensor_t *test_elements, int invert) {
    const char *op = "isin";
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(elements, op, "elements", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(test_elements, op, "test_elements", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out, op, "out", 1)) != AXON_OK) return st;
    if (elements->dtype != test_elements->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: elements dtype %s differs from test_elements dtype %s", op,
                         axon_dtype_name(elements->dtype), axon_dtype_name(test_elements->dtype));
    if (elements->dtype == AXON_COMPLEX64 || elements->dtype == AXON_COMPLEX128 ||
        (axon_dtype_size(elements->dtype) == 1 && axon_dtype_is_floating(elements->dtype))) /* the float8s */
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: dtype %s is not supported", op, axon_dtype_name(elements->dtype));
    if (out->dtype != AXON_BOOL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out dtype %s is not bool", op, axon_dtype_name(out->dtype));
    if (!axon_tensor_is_contiguous(elements) || !axon_tensor_is_contiguous(test_elements) ||
        !axon_tensor_is_contiguous(out))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: elements, test_elements and out must be contiguous", op);
    int same = out->ndim == elements->ndim;
    for (int d = 0; same && d < out->ndim; d++) same = out->sizes[d] == elements->sizes[d];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out has shape %s, expected elements' shape %s", op,
                         axon_shape_format(out, sa, sizeof sa), axon_shape_format(elements, sb, sizeof sb));
    isin_args_t a;
    memset(&a, 0, sizeof a);
    a.n = axon_tensor_numel(elements);
    if (a.n == 0) return AXON_OK;
    a.m = axon_tensor_numel(test_elements);
    a.elements = elements->data;
    a.test = test_elements->data;
    a.out = out->data;
    a.dtype = elements->dtype;
    a.floating = axon_dtype_is_floating(a.dtype);
    a.invert = invert != 0;
    axon_launch_t l = {isin_kernel, &a, sizeof a, op,
                       (uint64_t)(a.n + a.m) * axon_dtype_size(a.dtype) + (uint64_t)a.n};
    return axon_stream_launch(s, &l);
}
