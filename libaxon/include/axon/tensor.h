/* Tensor descriptors: what every kernel is told about its operands.
 *
 * A descriptor does not own memory. It names a dtype, a shape and element strides over memory the caller keeps alive
 * until the command that uses it has run (device memory from axon_mem_alloc, or host memory). `data` points at
 * element 0 with any storage offset already applied, so a view is just another descriptor over the same bytes.
 * Descriptors are small plain structs: kernels copy them into their argument blocks at launch, and the caller may
 * reuse or discard its own copy at once.
 *
 * Life cycle: fill one in (or build it with the glue from an ATen tensor), check it with axon_tensor_check if it came
 * from outside, pass it to kernels. Nothing to destroy. */
#ifndef AXON_TENSOR_H
#define AXON_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"
#include "axon/status.h"

AXON_EXTERN_C_BEGIN

/* Element types. Append only: the values are part of the ABI and the name table is checked against the count.
 * AXON_BOOL is one byte holding 0 or 1; complex types are (real, imaginary) pairs of float / double.
 * AXON_UINT16/32/64 are storage dtypes, as in PyTorch, which computes little in them: copies and casts take them, and
 * so do the operands and results of pointwise ops that compute in another dtype; no kernel computes in them.
 * AXON_COMPLEX32 is a storage dtype too: (real, imaginary) pairs of float16, which such ops read as complex64 and
 * round back on store, as PyTorch CPU computes complex32 arithmetic in complex<float>. */
typedef enum axon_dtype {
    AXON_FLOAT32 = 0,
    AXON_FLOAT64 = 1,
    AXON_FLOAT16 = 2,            /* IEEE binary16 */
    AXON_BFLOAT16 = 3,           /* the upper half of a float32 */
    AXON_INT8 = 4,
    AXON_UINT8 = 5,
    AXON_INT16 = 6,
    AXON_INT32 = 7,
    AXON_INT64 = 8,
    AXON_BOOL = 9,
    AXON_COMPLEX64 = 10,
    AXON_COMPLEX128 = 11,
    AXON_UINT16 = 12,            /* storage dtypes: see below */
    AXON_UINT32 = 13,
    AXON_UINT64 = 14,
    AXON_COMPLEX32 = 15,         /* storage dtype */
    AXON_DTYPE_COUNT
} axon_dtype_t;

/* Bytes per element of d; 0 for a value outside the enum. Cannot fail. */
AXON_API size_t axon_dtype_size(axon_dtype_t d);

/* Static lower-case name of d ("float32", "bfloat16"); "invalid" for a value outside the enum. Never NULL. */
AXON_API const char *axon_dtype_name(axon_dtype_t d);

/* 1 for float32/64/16 and bfloat16, 0 otherwise (complex types are not "floating" here, as in PyTorch). */
AXON_API int axon_dtype_is_floating(axon_dtype_t d);

/* 1 for int8/uint8/int16/int32/int64, 0 otherwise (bool is not an integer dtype, nor are the storage dtypes
 * uint16/32/64, in which no kernel computes). */
AXON_API int axon_dtype_is_integer(axon_dtype_t d);

#define AXON_MAX_DIMS 8

typedef struct axon_tensor {
    void *data;                          /* points at element 0, offset already applied */
    axon_dtype_t dtype;
    int ndim;                            /* 0..AXON_MAX_DIMS; 0 is a scalar with one element */
    int64_t sizes[AXON_MAX_DIMS];        /* entries past ndim are ignored */
    int64_t strides[AXON_MAX_DIMS];      /* in elements, may be 0 (broadcast) or negative */
} axon_tensor_t;

/* Product of the sizes (1 for ndim 0). Assumes a descriptor that passed axon_tensor_check. Cannot fail. */
AXON_API int64_t axon_tensor_numel(const axon_tensor_t *t);

/* The bytes [*lo, *hi) that t's elements span (lo == hi when it has none), whatever its strides. Cannot fail. */
AXON_API void axon_tensor_extent(const axon_tensor_t *t, uintptr_t *lo, uintptr_t *hi);

/* 1 if the elements lie in row-major order with no gaps (dimensions of size 1 may have any stride, as in PyTorch),
 * or if t has no elements; 0 otherwise. Cannot fail. */
AXON_API int axon_tensor_is_contiguous(const axon_tensor_t *t);

/* 1 if t is an image batch [N, C, spatial...] (3 or more dimensions) stored channels-last with no gaps: PyTorch's
 * channels_last / channels_last_3d, memory order N, spatial..., C (dimensions of size 1 may have any stride), or if
 * t has no elements; 0 otherwise. A tensor can be both this and contiguous (C == 1, or one position). Cannot fail. */
AXON_API int axon_tensor_is_channels_last(const axon_tensor_t *t);

/* AXON_OK if t is a well-formed descriptor: not NULL, ndim in [0, AXON_MAX_DIMS], a known dtype, sizes >= 0 whose
 * product fits in int64, and data not NULL when there are elements. Otherwise AXON_ERROR_INVALID_ARG with a message
 * that starts with `what` ("copy: dst"). Does not look at the memory. */
AXON_API axon_status_t axon_tensor_check(const axon_tensor_t *t, const char *what);

/* A fill value. dtype says which field holds it: AXON_FLOAT64 -> f, AXON_INT64 -> i, AXON_BOOL -> i (0 or 1),
 * AXON_COMPLEX128 -> f (real) and imag. Kernels convert it to the destination dtype with the copy rules. */
typedef struct axon_scalar {
    axon_dtype_t dtype;          /* AXON_FLOAT64, AXON_INT64, AXON_BOOL or AXON_COMPLEX128 */
    double f;
    int64_t i;
    double imag;
} axon_scalar_t;

static inline axon_scalar_t axon_scalar_float(double v) {
    axon_scalar_t s = {AXON_FLOAT64, v, 0, 0.0};
    return s;
}

static inline axon_scalar_t axon_scalar_int(int64_t v) {
    axon_scalar_t s = {AXON_INT64, 0.0, v, 0.0};
    return s;
}

static inline axon_scalar_t axon_scalar_bool(int v) {
    axon_scalar_t s = {AXON_BOOL, 0.0, v != 0, 0.0};
    return s;
}

static inline axon_scalar_t axon_scalar_complex(double re, double im) {
    axon_scalar_t s = {AXON_COMPLEX128, re, 0, im};
    return s;
}

AXON_EXTERN_C_END

#endif
