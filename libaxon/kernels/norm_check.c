/* The operand check the batch and group norm launches share (norm_impl.h). */
#include <stdio.h>

#include "internal.h"
#include "norm_impl.h"

axon_status_t axon_norm_check(const char *op, const char *role, const axon_tensor_t *t, int64_t numel,
                              const axon_tensor_t *shape, int is_dst) {
    if (t == NULL) return AXON_OK;
    char sa[160], sb[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, is_dst);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16", op,
                         role, axon_dtype_name(t->dtype));
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, role,
                         axon_shape_format(t, sa, sizeof sa));
    if (shape) {
        int same = shape->ndim == t->ndim;
        for (int i = 0; same && i < t->ndim; i++) same = shape->sizes[i] == t->sizes[i];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s does not match in shape %s", op, role,
                             axon_shape_format(t, sa, sizeof sa), axon_shape_format(shape, sb, sizeof sb));
    } else if (axon_tensor_numel(t) != numel) {
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has %lld elements (shape %s), expected %lld", op, role,
                         (long long)axon_tensor_numel(t), axon_shape_format(t, sa, sizeof sa), (long long)numel);
    }
    return AXON_OK;
}
