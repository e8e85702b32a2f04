/* Dtype facts and tensor-descriptor checks (axon/tensor.h), plus the stricter checks the kernels apply. */
#include <inttypes.h>
#include <stdio.h>

#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"

static const char *const dtype_names[] = {
    "float32", "float64", "float16", "bfloat16", "int8", "uint8",
    "int16",   "int32",   "int64",   "bool",     "complex64", "complex128",
    "uint16",  "uint32",  "uint64",   "complex32",
};
_Static_assert(sizeof dtype_names / sizeof dtype_names[0] == AXON_DTYPE_COUNT, "every axon_dtype_t needs a name");

static const unsigned char dtype_sizes[] = {4, 8, 2, 2, 1, 1, 2, 4, 8, 1, 8, 16, 2, 4, 8, 4};
_Static_assert(sizeof dtype_sizes == AXON_DTYPE_COUNT, "every axon_dtype_t needs a size");

/* Alignment the kernels need: that of the storage type (a complex is aligned like its parts, but complex32 like
 * PyTorch's c10::complex<Half>, alignas(4): copies move it as one 32-bit word). */
static const unsigned char dtype_aligns[] = {4, 8, 2, 2, 1, 1, 2, 4, 8, 1, 4, 8, 2, 4, 8, 4};
_Static_assert(sizeof dtype_aligns == AXON_DTYPE_COUNT, "every axon_dtype_t needs an alignment");
_Static_assert(_Alignof(axon_c128_t) <= 8 && sizeof(axon_c128_t) == 16, "complex128 is two packed doubles");

size_t axon_dtype_size(axon_dtype_t d) { return (unsigned)d < AXON_DTYPE_COUNT ? dtype_sizes[d] : 0; }

const char *axon_dtype_name(axon_dtype_t d) { return (unsigned)d < AXON_DTYPE_COUNT ? dtype_names[d] : "invalid"; }

int axon_dtype_is_floating(axon_dtype_t d) {
    return d == AXON_FLOAT32 || d == AXON_FLOAT64 || d == AXON_FLOAT16 || d == AXON_BFLOAT16;
}

int axon_dtype_is_integer(axon_dtype_t d) {
    return d == AXON_INT8 || d == AXON_UINT8 || d == AXON_INT16 || d == AXON_INT32 || d == AXON_INT64;
}

void axon_tensor_extent(const axon_tensor_t *t, uintptr_t *lo, uintptr_t *hi) {
    int64_t first = 0, last = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 0) {
            *lo = *hi = (uintptr_t)t->data;
            return;
        }
        if (t->strides[d] < 0) first += (t->sizes[d] - 1) * t->strides[d];
        else last += (t->sizes[d] - 1) * t->strides[d];
    }
    const int64_t es = (int64_t)axon_dtype_size(t->dtype);
    *lo = (uintptr_t)t->data + (uintptr_t)(first * es);
    *hi = (uintptr_t)t->data + (uintptr_t)((last + 1) * es);
}

int64_t axon_tensor_numel(const axon_tensor_t *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->sizes[i];
    return n;
}

int axon_tensor_is_contiguous(const axon_tensor_t *t) {
    if (axon_tensor_numel(t) == 0) return 1;
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->sizes[i] == 1) continue;
        if (t->strides[i] != expected) return 0;
        expected *= t->sizes[i];
    }
    return 1;
}

int axon_tensor_is_channels_last(const axon_tensor_t *t) {
    if (t->ndim < 3) return 0;
    if (axon_tensor_numel(t) == 0) return 1;
    int64_t expected = 1;
    for (int k = 0; k < t->ndim; k++) { /* innermost first: C, then the spatial dims last to first, then N */
        const int i = k == 0 ? 1 : k == t->ndim - 1 ? 0 : t->ndim - k;
        if (t->sizes[i] == 1) continue;
        if (t->strides[i] != expected) return 0;
        expected *= t->sizes[i];
    }
    return 1;
}

const char *axon_shape_format(const axon_tensor_t *t, char *buf, size_t n) {
    size_t used = 0;
    int ndim = t->ndim < 0 ? 0 : t->ndim > AXON_MAX_DIMS ? AXON_MAX_DIMS : t->ndim;
    used += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%" PRId64, i ? ", " : "", t->sizes[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

axon_status_t axon_tensor_check(const axon_tensor_t *t, const char *what) {
    if (what == NULL) what = "tensor";
    if (t == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s is NULL", what);
    if (t->ndim < 0 || t->ndim > AXON_MAX_DIMS)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s has %d dimensions; allowed are 0..%d", what, t->ndim,
                         AXON_MAX_DIMS);
    if ((unsigned)t->dtype >= AXON_DTYPE_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s has unknown dtype %d", what, (int)t->dtype);
    int64_t n = 1;
    int overflow = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->sizes[i] < 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s has negative size %" PRId64 " in dimension %d", what,
                             t->sizes[i], i);
        if (t->sizes[i] != 0 && n > INT64_MAX / t->sizes[i]) overflow = 1;
        else n *= t->sizes[i];
    }
    char shape[160];
    /* A zero size anywhere makes the product 0, even after an "overflow" in earlier dimensions. */
    for (int i = 0; i < t->ndim; i++)
        if (t->sizes[i] == 0) overflow = 0, n = 0;
    if (overflow)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s shape %s has more than 2^63 elements", what,
                         axon_shape_format(t, shape, sizeof shape));
    if (n > 0 && t->data == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s has %" PRId64 " elements but data is NULL", what, n);
    return AXON_OK;
}

axon_status_t axon_kernel_check_src(const axon_tensor_t *t, const char *what) {
    axon_status_t st = axon_tensor_check(t, what);
    if (st != AXON_OK) return st;
    if ((uintptr_t)t->data % dtype_aligns[t->dtype] != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s data %p is not aligned to %u bytes for %s", what, t->data,
                         (unsigned)dtype_aligns[t->dtype], dtype_names[t->dtype]);
    return AXON_OK;
}

axon_status_t axon_kernel_check_dst(const axon_tensor_t *t, const char *what) {
    axon_status_t st = axon_kernel_check_src(t, what);
    if (st != AXON_OK) return st;
    /* Only zero strides are caught, as PyTorch's cheap internal-overlap test does; other self-overlapping layouts
     * (which PyTorch cannot create without as_strided) get an unspecified result. A tensor with no elements has
     * nothing to overlap. */
    if (axon_tensor_numel(t) == 0) return AXON_OK;
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] == 0 && t->sizes[i] > 1)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "%s has overlapping elements (stride 0 in dimension %d of size %" PRId64 ")", what, i,
                             t->sizes[i]);
    return AXON_OK;
}

axon_status_t axon_kernel_check_operand(const axon_tensor_t *t, const char *op, const char *role, int is_dst) {
    /* Checked first under the bare role: the "op: role" prefix is formatted only for a failure's message, since the
     * checks pass on nearly every launch and snprintf costs more than they do (about 6% of a profiled 64-element
     * sum). */
    axon_status_t st = is_dst ? axon_kernel_check_dst(t, role) : axon_kernel_check_src(t, role);
    if (st == AXON_OK) return st;
    char what[96];
    snprintf(what, sizeof what, "%s: %s", op, role);
    return is_dst ? axon_kernel_check_dst(t, what) : axon_kernel_check_src(t, what);
}

axon_status_t axon_kernel_check_shaped(const axon_tensor_t *t, const char *op, const char *role, int is_dst,
                                       axon_dtype_t dt, int ndim, const int64_t *sizes, const char *header) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, is_dst);
    if (st != AXON_OK) return st;
    if (t->dtype != dt)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s, expected %s", op, role, axon_dtype_name(t->dtype),
                         axon_dtype_name(dt));
    int ok = t->ndim == ndim && axon_tensor_is_contiguous(t);
    for (int i = 0; ok && i < ndim; i++) ok = sizes[i] < 0 || t->sizes[i] == sizes[i];
    if (!ok)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s (shape %s) must be contiguous, of the shape documented in "
                         "%s", op, role, axon_shape_format(t, sa, sizeof sa), header);
    return AXON_OK;
}
