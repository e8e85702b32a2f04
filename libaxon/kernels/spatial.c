/* The [planes, D, H, W] view and checks shared by the pooling and upsampling kernels (spatial_impl.h). */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"
#include "spatial_impl.h"

/* Well-formed, float, contiguous, rank nspatial + 1 .. AXON_MAX_DIMS. */
static axon_status_t sp_check_one(const char *op, int nspatial, const axon_tensor_t *t, const char *role, int dst,
                                  int integers_ok) {
    char sa[160];
    if (t == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, role);
    axon_status_t st = axon_kernel_check_operand(t, op, role, dst);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype) && !(integers_ok && axon_dtype_is_integer(t->dtype)))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16", op,
                         role, axon_dtype_name(t->dtype));
    if (t->ndim < nspatial + 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s needs at least %d dimensions (planes and %d spatial)",
                         op, role, axon_shape_format(t, sa, sizeof sa), nspatial + 1, nspatial);
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, role,
                         axon_shape_format(t, sa, sizeof sa));
    return AXON_OK;
}

axon_status_t axon_spatial_check(const char *op, int nspatial, const axon_tensor_t *in, const char *in_role,
                                 int in_dst, const axon_tensor_t *out, const char *out_role, int integers_ok,
                                 axon_spatial_t *g) {
    char sa[160], sb[160];
    memset(g, 0, sizeof *g);
    if (nspatial < 1 || nspatial > AXON_SPATIAL_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %d spatial dimensions, expected 1, 2 or 3", op, nspatial);
    axon_status_t st = sp_check_one(op, nspatial, in, in_role, in_dst, integers_ok);
    if (st == AXON_OK) st = sp_check_one(op, nspatial, out, out_role, !in_dst, integers_ok);
    if (st != AXON_OK) return st;
    if ((axon_dtype_is_integer(in->dtype) || axon_dtype_is_integer(out->dtype)) && in->dtype != out->dtype)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s and %s dtype %s differ (integers take one dtype)", op,
                         in_role, axon_dtype_name(in->dtype), out_role, axon_dtype_name(out->dtype));
    int lead = in->ndim - nspatial, same = in->ndim == out->ndim;
    for (int i = 0; same && i < lead; i++) same = in->sizes[i] == out->sizes[i];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: %s shape %s and %s shape %s must have the same rank and leading (batch, channel) sizes",
                         op, in_role, axon_shape_format(in, sa, sizeof sa), out_role,
                         axon_shape_format(out, sb, sizeof sb));
    axon_spatial_t r;
    r.planes = 1;
    for (int i = 0; i < lead; i++) r.planes *= in->sizes[i];
    r.in_size = r.out_size = 1;
    for (int k = 0; k < AXON_SPATIAL_MAX; k++) {
        int dim = k - (AXON_SPATIAL_MAX - nspatial); /* spatial dim k, counted from the first spatial dim */
        r.in[k] = dim < 0 ? 1 : in->sizes[lead + dim];
        r.out[k] = dim < 0 ? 1 : out->sizes[lead + dim];
        r.in_size *= r.in[k];
        r.out_size *= r.out[k];
    }
    if (r.planes > 0 && r.out_size > 0 && r.in_size == 0)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: %s shape %s has an empty spatial dimension but %s shape %s does not", op, in_role,
                         axon_shape_format(in, sa, sizeof sa), out_role, axon_shape_format(out, sb, sizeof sb));
    *g = r;
    return AXON_OK;
}

axon_status_t axon_spatial_check_indices(const char *op, const axon_tensor_t *indices, int dst,
                                         const axon_tensor_t *like) {
    char sa[160], sb[160];
    if (indices == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: indices is NULL", op);
    axon_status_t st = axon_kernel_check_operand(indices, op, "indices", dst);
    if (st != AXON_OK) return st;
    if (indices->dtype != AXON_INT64)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: indices dtype %s, expected int64", op,
                         axon_dtype_name(indices->dtype));
    int same = indices->ndim == like->ndim;
    for (int i = 0; same && i < like->ndim; i++) same = indices->sizes[i] == like->sizes[i];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: indices shape %s does not match %s", op,
                         axon_shape_format(indices, sa, sizeof sa), axon_shape_format(like, sb, sizeof sb));
    if (!axon_tensor_is_contiguous(indices))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: indices must be contiguous (shape %s)", op,
                         axon_shape_format(indices, sa, sizeof sa));
    return AXON_OK;
}
