/* Fractional max pooling's forward (axon_kernel_fractional_max_pool, axon/pooling.h).
 *
 * Each plane's window starts along a dimension follow from its random sample with PyTorch's generate_intervals
 * arithmetic in the dtype (float32, float64, or float16 and bfloat16 as c10::Half and c10::BFloat16 compute: each
 * operation in float32, its result rounded to the dtype); the starts of one plane are computed once into stack
 * arrays of up to FMP_MAX_OUT per dim, so outputs wider than that are refused at launch. Planes are split over the
 * pool. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "axon/pooling.h"
#include "axon/stream.h"
#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"
#include "spatial_impl.h"

#define FMP_MAX_OUT 2048

typedef struct fmp_args {
    axon_spatial_t g;
    int64_t kernel[3];           /* D, H, W (1 for dims the op does not have) */
    axon_dtype_t dtype;
    int first, nspatial;
    const char *in, *samples;
    char *out;
    int64_t *indices;
} fmp_args_t;

/* Window starts of O outputs along a dim of size I for sample u (PyTorch's generate_intervals). */
#define FMP_STARTS(T, SUF)                                                                     \
    static void fmp_starts_##SUF(T u, int64_t I, int64_t O, int64_t k, int64_t *start) {       \
        if (O > 1) {                                                                           \
            const T alpha = (T)(I - k) / (T)(O - 1);                                           \
            for (int64_t i = 0; i < O - 1; i++)                                                \
                start[i] = (int64_t)(int)(((T)i + u) * alpha) - (int64_t)(int)(u * alpha);     \
        }                                                                                      \
        if (O > 0) start[O - 1] = I - k;                                                       \
    }
FMP_STARTS(float, f32)
FMP_STARTS(double, f64)

/* A float32 value rounded to the 16-bit dtype and back: the result of one c10::Half or c10::BFloat16 operation. */
static float fmp_round16(int bf16, float v) {
    return bf16 ? axon_bf16_to_f32(axon_f32_to_bf16(v)) : axon_f16_to_f32(axon_f32_to_f16(v));
}

/* FMP_STARTS for a 16-bit sample: alpha, i + u (i converted to the dtype first), the products, each rounded. */
static void fmp_starts_16(int bf16, float u, int64_t I, int64_t O, int64_t k, int64_t *start) {
    if (O > 1) {
        const float alpha = fmp_round16(bf16, fmp_round16(bf16, (float)(I - k)) / fmp_round16(bf16, (float)(O - 1)));
        const int64_t base = (int64_t)(int)fmp_round16(bf16, u * alpha);
        for (int64_t i = 0; i < O - 1; i++) {
            const float at = fmp_round16(bf16, fmp_round16(bf16, (float)i) + u);
            start[i] = (int64_t)(int)fmp_round16(bf16, at * alpha) - base;
        }
    }
    if (O > 0) start[O - 1] = I - k;
}

/* The planes [begin, end): starts per dim, then each output's maximum (NaN wins, the first of equal values). */
/* T: the element type; V: the type values are compared in; LOAD(p, i): element i of p as a V; STARTS(u, ...): the
 * window starts for sample element u. The output is the maximum element itself, copied. */
#define FMP_PLANES(T, V, SUF, LOAD, STARTS)                                                                      \
    static void fmp_planes_##SUF(const fmp_args_t *a, int64_t begin, int64_t end) {                              \
        const axon_spatial_t *g = &a->g;                                                                         \
        int64_t st[3][FMP_MAX_OUT];                                                                              \
        for (int64_t p = begin; p < end; p++) {                                                                  \
            const T *u = (const T *)a->samples + p * a->nspatial;                                                \
            for (int k = 0; k < 3; k++) {                                                                        \
                if (k < a->first) {                                                                              \
                    st[k][0] = 0;                                                                                \
                    continue;                                                                                    \
                }                                                                                                \
                /* 2d takes (W, H) from its samples, 3d (D, H, W) */                                             \
                const int j = a->nspatial == 2 ? (k == 2 ? 0 : 1) : k - a->first;                                \
                STARTS(LOAD(u, j), g->in[k], g->out[k], a->kernel[k], st[k]);                                   \
            }                                                                                                    \
            const T *in = (const T *)a->in + p * g->in_size;                                                     \
            T *out = (T *)a->out + p * g->out_size;                                                              \
            int64_t *idx = a->indices + p * g->out_size;                                                         \
            for (int64_t od = 0; od < g->out[0]; od++)                                                           \
                for (int64_t oh = 0; oh < g->out[1]; oh++)                                                       \
                    for (int64_t ow = 0; ow < g->out[2]; ow++) {                                                 \
                        const int64_t d0 = st[0][od], h0 = st[1][oh], w0 = st[2][ow];                            \
                        V best = (V)-INFINITY;                                                                   \
                        int64_t at = (d0 * g->in[1] + h0) * g->in[2] + w0;                                       \
                        for (int64_t d = d0; d < d0 + a->kernel[0]; d++)                                         \
                            for (int64_t h = h0; h < h0 + a->kernel[1]; h++)                                     \
                                for (int64_t w = w0; w < w0 + a->kernel[2]; w++) {                               \
                                    const int64_t i = (d * g->in[1] + h) * g->in[2] + w;                         \
                                    const V v = LOAD(in, i);                                                     \
                                    if (v > best || isnan(v)) best = v, at = i;                                  \
                                }                                                                                \
                        const int64_t o = (od * g->out[1] + oh) * g->out[2] + ow;                                \
                        out[o] = in[at], idx[o] = at;                                                            \
                    }                                                                                            \
        }                                                                                                        \
    }
#define FMP_PLAIN(p, i) ((p)[i])
#define FMP_F16(p, i) axon_f16_to_f32((p)[i])
#define FMP_BF16(p, i) axon_bf16_to_f32((p)[i])
#define FMP_STARTS_F16(...) fmp_starts_16(0, __VA_ARGS__)
#define FMP_STARTS_BF16(...) fmp_starts_16(1, __VA_ARGS__)
FMP_PLANES(float, float, f32, FMP_PLAIN, fmp_starts_f32)
FMP_PLANES(double, double, f64, FMP_PLAIN, fmp_starts_f64)
FMP_PLANES(uint16_t, float, f16, FMP_F16, FMP_STARTS_F16)
FMP_PLANES(uint16_t, float, bf16, FMP_BF16, FMP_STARTS_BF16)

static void fmp_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const fmp_args_t *a = ctx;
    switch (a->dtype) {
    case AXON_FLOAT64: fmp_planes_f64(a, begin, end); break;
    case AXON_FLOAT16: fmp_planes_f16(a, begin, end); break;
    case AXON_BFLOAT16: fmp_planes_bf16(a, begin, end); break;
    default: fmp_planes_f32(a, begin, end); break;
    }
}

static axon_status_t fmp_kernel(const void *args, const axon_exec_t *ex) {
    const fmp_args_t *a = args;
    const int64_t work = a->g.out_size * a->kernel[0] * a->kernel[1] * a->kernel[2];
    const int64_t grain = AXON_KERNEL_GRAIN / (work > 0 ? work : 1);
    axon_parallel_for(ex->pool, 0, a->g.planes, grain < 1 ? 1 : grain, fmp_range, (void *)a);
    return AXON_OK;
}

axon_status_t axon_kernel_fractional_max_pool(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *indices,
                                              const axon_tensor_t *in, const axon_tensor_t *samples,
                                              const int64_t *kernel, int nspatial) {
    static const char op[] = "fractional_max_pool";
    if (nspatial != 2 && nspatial != 3)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %d spatial dimensions (2 or 3)", op, nspatial);
    if (kernel == NULL || indices == NULL || samples == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: kernel, indices and samples are required", op);
    fmp_args_t a;
    memset(&a, 0, sizeof a);
    axon_status_t st = axon_spatial_check(op, nspatial, in, "in", 0, out, "out", 0, &a.g);
    if (st == AXON_OK) st = axon_spatial_check_indices(op, indices, 1, out);
    if (st == AXON_OK) st = axon_kernel_check_operand(samples, op, "samples", 0);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(in->dtype) || out->dtype != in->dtype || samples->dtype != in->dtype)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: in %s, out %s, samples %s (one floating dtype)", op,
                         axon_dtype_name(in->dtype), axon_dtype_name(out->dtype), axon_dtype_name(samples->dtype));
    if (!axon_tensor_is_contiguous(samples) || axon_tensor_numel(samples) != a.g.planes * nspatial)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: samples must be contiguous with %d values per plane (%lld planes)",
                         op, nspatial, (long long)a.g.planes);
    a.first = AXON_SPATIAL_MAX - nspatial;
    for (int k = 0; k < 3; k++) {
        a.kernel[k] = k < a.first ? 1 : kernel[k - a.first];
        if (a.kernel[k] < 1 || a.g.out[k] + a.kernel[k] - 1 > a.g.in[k])
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: kernel %lld and output size %lld do not fit input size %lld "
                             "(dim %d)", op, (long long)a.kernel[k], (long long)a.g.out[k], (long long)a.g.in[k],
                             k - a.first);
        if (a.g.out[k] > FMP_MAX_OUT)
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: output size %lld exceeds %d (dim %d)", op,
                             (long long)a.g.out[k], FMP_MAX_OUT, k - a.first);
    }
    if (a.g.planes == 0 || a.g.out_size == 0) return AXON_OK;
    a.dtype = in->dtype;
    a.nspatial = nspatial;
    a.in = in->data, a.samples = samples->data, a.out = out->data, a.indices = indices->data;
    const uint64_t es = axon_dtype_size(in->dtype);
    axon_launch_t l = {fmp_kernel, &a, sizeof a, op,
                       (uint64_t)a.g.planes * ((uint64_t)a.g.in_size * es + (uint64_t)a.g.out_size * (es + 8u))};
    return axon_stream_launch(s, &l);
}
