/* axon_kernel_fill.
 *
 * fill converts the value once, on the host, into dst's dtype and stores the bytes in the argument block; the kernel
 * is then a copy from a broadcast (all strides 0) source that points into its own argument copy, so every dst layout
 * the copy handles is handled here too. arange and linspace are in sequence.c. */

#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"

struct fill_args {
    axon_tensor_t dst;
    union {
        unsigned char bytes[16];
        double align;            /* complex128 elements need 8-byte alignment */
    } value;
};

/* Convert a scalar to one element of dtype `to` in out (16 bytes). INVALID_ARG for a scalar of another dtype. */
static axon_status_t fill_convert_scalar(axon_scalar_t v, axon_dtype_t to, void *out, const char *what) {
    union {
        double f;
        int64_t i;
        uint8_t b;
        axon_c128_t c;
    } src;
    switch (v.dtype) {
    case AXON_FLOAT64: src.f = v.f; break;
    case AXON_INT64: src.i = v.i; break;
    case AXON_BOOL: src.b = v.i != 0; break;
    case AXON_COMPLEX128: src.c.re = v.f, src.c.im = v.imag; break;
    default:
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: scalar dtype %s (%d) is not float64, int64, bool or complex128", what,
                         axon_dtype_name(v.dtype), (int)v.dtype);
    }
    axon_convert_get(v.dtype, to)(out, 1, (const char *)&src, 1, 1);
    return AXON_OK;
}

static axon_status_t fill_kernel(const void *args, const axon_exec_t *ex) {
    const struct fill_args *a = args;
    axon_tensor_t src = a->dst;
    src.data = (void *)a->value.bytes; /* read only: the copy never writes its source */
    for (int i = 0; i < src.ndim; i++) src.strides[i] = 0;
    axon_copy_execute(&a->dst, &src, ex->pool);
    return AXON_OK;
}

axon_status_t axon_kernel_fill(axon_stream_t s, const axon_tensor_t *dst, axon_scalar_t value) {
    axon_status_t st = axon_kernel_check_dst(dst, "fill: dst");
    if (st != AXON_OK) return st;
    struct fill_args a;
    memset(&a, 0, sizeof a);
    a.dst = *dst;
    if ((st = fill_convert_scalar(value, dst->dtype, a.value.bytes, "fill")) != AXON_OK) return st;
    int64_t n = axon_tensor_numel(dst);
    if (n == 0) return AXON_OK;
    axon_launch_t l = {fill_kernel, &a, sizeof a, "fill", (uint64_t)n * axon_dtype_size(dst->dtype)};
    return axon_stream_launch(s, &l);
}
