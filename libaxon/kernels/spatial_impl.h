/* What the pooling and upsampling kernels share inside libaxon (spatial.c): the layout of a batch of planes with 1
 * to 3 trailing spatial dimensions, its checks, and element loads and stores by dtype. Never installed.
 *
 * Every such kernel sees its tensors as [planes, D, H, W]: the leading dimensions (batch, channels, any number)
 * are flattened into planes, and an op over fewer than 3 spatial dimensions gets leading spatial sizes of 1. Work
 * is split over planes (or over rows of a plane's output), so every plane is one thread's sequential loop: scatters
 * into a plane (backward passes) never race and their order, hence the rounding, does not depend on the thread
 * count. */
#ifndef AXON_SPATIAL_IMPL_H
#define AXON_SPATIAL_IMPL_H

#include <stdint.h>

#include "axon/tensor.h"
#include "dtype.h"

/* Spatial dimensions an op may have: 1d, 2d or 3d. */
#define AXON_SPATIAL_MAX 3

typedef struct axon_spatial {
    int64_t planes;
    int64_t in[AXON_SPATIAL_MAX];    /* D, H, W of the input side (the forward's input, the backward's grad_in) */
    int64_t out[AXON_SPATIAL_MAX];   /* D, H, W of the output side (the forward's output, the backward's grad_out) */
    int64_t in_size, out_size;       /* elements per plane */
} axon_spatial_t;

/* Check the input-side tensor in and output-side tensor out of `op` over nspatial (1..3) trailing spatial dims and
 * fill g. Both must be well-formed, contiguous, float32/float64/float16/bfloat16 (or, with integers_ok, both of one
 * integer dtype: int8, int16, int32, int64 or uint8), of one rank in
 * [nspatial + 1, AXON_MAX_DIMS] with the same leading sizes; in_dst says which of the two is written. When out has
 * elements, every spatial size of in must be >= 1 (a kernel reads from in for each output element). Messages start
 * with "op: role". INVALID_ARG or UNSUPPORTED (dtype); g is zeroed on error. */
axon_status_t axon_spatial_check(const char *op, int nspatial, const axon_tensor_t *in, const char *in_role,
                                 int in_dst, const axon_tensor_t *out, const char *out_role, int integers_ok,
                                 axon_spatial_t *g);

/* Check argmax indices of `op`: int64, contiguous, the shape of like (already checked). */
axon_status_t axon_spatial_check_indices(const char *op, const axon_tensor_t *indices, int dst,
                                         const axon_tensor_t *like);

/* Element i of a float32/float64/float16/bfloat16 buffer, widened exactly to double. */
static inline double axon_spatial_load(axon_dtype_t d, const void *p, int64_t i) {
    switch (d) {
    case AXON_FLOAT32: return ((const float *)p)[i];
    case AXON_FLOAT64: return ((const double *)p)[i];
    case AXON_FLOAT16: return axon_f16_to_f32(((const uint16_t *)p)[i]);
    default: return axon_bf16_to_f32(((const uint16_t *)p)[i]);
    }
}

/* Store v rounded to d (the half types through float32, as PyTorch's casts). */
static inline void axon_spatial_store(axon_dtype_t d, void *p, int64_t i, double v) {
    switch (d) {
    case AXON_FLOAT32: ((float *)p)[i] = (float)v; break;
    case AXON_FLOAT64: ((double *)p)[i] = v; break;
    case AXON_FLOAT16: ((uint16_t *)p)[i] = axon_f64_to_f16(v); break;
    default: ((uint16_t *)p)[i] = axon_f64_to_bf16(v); break;
    }
}

/* Element i of an int8/int16/int32/int64/uint8 buffer, and its store: exact (doubles are not above 2^53). */
static inline int64_t axon_spatial_load_int(axon_dtype_t d, const void *p, int64_t i) {
    switch (d) {
    case AXON_INT8: return ((const int8_t *)p)[i];
    case AXON_INT16: return ((const int16_t *)p)[i];
    case AXON_INT32: return ((const int32_t *)p)[i];
    case AXON_UINT8: return ((const uint8_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}
static inline void axon_spatial_store_int(axon_dtype_t d, void *p, int64_t i, int64_t v) {
    switch (d) { /* v is a value loaded from the same dtype */
    case AXON_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case AXON_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case AXON_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case AXON_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
    }
}

/* Zero n elements from element `at`. */
static inline void axon_spatial_zero(axon_dtype_t d, void *p, int64_t at, int64_t n) {
    for (int64_t i = 0; i < n; i++) axon_spatial_store(d, p, at + i, 0.0);
}

#endif
