/* Pooling window geometry: the checks on axon_pool_params_t and its expansion to 3 dims (pooling_impl.h). */
#include <string.h>

#include "internal.h"
#include "pooling_impl.h"

axon_status_t axon_pool_geom_fixed(const char *op, const axon_pool_params_t *p, int use_dilation,
                                   axon_pool_geom_t *w) {
    memset(w, 0, sizeof *w);
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: params is NULL", op);
    const int n = p->nspatial;
    if (n < 1 || n > AXON_SPATIAL_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %d spatial dimensions, expected 1, 2 or 3", op, n);
    for (int k = 0; k < AXON_SPATIAL_MAX; k++) w->k[k] = w->s[k] = w->d[k] = 1;
    for (int i = 0; i < n; i++) {
        const int k = AXON_SPATIAL_MAX - n + i;
        const int64_t dil = use_dilation ? p->dilation[i] : 1;
        if (p->kernel[i] < 1 || p->stride[i] < 1 || dil < 1 || p->padding[i] < 0)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "%s: spatial dim %d has kernel %lld, stride %lld, padding %lld, dilation %lld; kernel, "
                             "stride and dilation must be >= 1 and padding >= 0",
                             op, i, (long long)p->kernel[i], (long long)p->stride[i], (long long)p->padding[i],
                             (long long)dil);
        if (p->kernel[i] > INT32_MAX || dil > INT32_MAX || p->stride[i] > INT32_MAX || p->padding[i] > INT32_MAX)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: spatial dim %d: window parameters must be < 2^31", op, i);
        const int64_t effective = (p->kernel[i] - 1) * dil + 1;
        if (p->padding[i] > effective / 2)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "%s: pad should be at most half of effective kernel size, but got pad=%lld, "
                             "kernel_size=%lld and dilation=%lld (spatial dim %d)",
                             op, (long long)p->padding[i], (long long)p->kernel[i], (long long)dil, i);
        w->k[k] = p->kernel[i], w->s[k] = p->stride[i], w->p[k] = p->padding[i], w->d[k] = dil;
    }
    w->count_include_pad = p->count_include_pad != 0;
    w->divisor = p->divisor_override;
    return AXON_OK;
}

axon_status_t axon_pool_geom_adaptive(const char *op, int nspatial, axon_pool_geom_t *w) {
    memset(w, 0, sizeof *w);
    if (nspatial < 1 || nspatial > AXON_SPATIAL_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %d spatial dimensions, expected 1, 2 or 3", op, nspatial);
    w->adaptive = 1;
    return AXON_OK;
}
