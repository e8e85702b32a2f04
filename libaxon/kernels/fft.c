/* axon_kernel_fft (axon/fft.h) on MKL's DFTI.
 *
 * Each transformed dimension is one pass of 1-D transforms over a contiguous layout seen as [outer, n, inner]. DFTI
 * batches transforms along one dimension (a count and a distance), so a pass batches the rows (inner == 1: the
 * transforms are contiguous rows, distance n) or the columns (inner > 1: stride inner, distance 1, one call per
 * outer index). The batch is cut into groups so that the pool's participants get several calls each; a committed
 * descriptor may be used by several threads at once. MKL runs its sequential layer (mkl_layer.c): the pool, not
 * MKL, owns the cores. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "axon/fft.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

typedef struct fft_args {
    axon_tensor_t out, in;
    axon_fft_kind_t kind;
    int dims[AXON_MAX_DIMS];
    int ndims;
    int forward;
    double scale;
} fft_args_t;

static int fft_is_complex(axon_dtype_t d) { return d == AXON_COMPLEX64 || d == AXON_COMPLEX128; }

static axon_dtype_t fft_complex_of(axon_dtype_t real) {
    return real == AXON_FLOAT32 ? AXON_COMPLEX64 : real == AXON_FLOAT64 ? AXON_COMPLEX128 : AXON_DTYPE_COUNT;
}

#ifdef AXON_HAVE_MKL
#include <mkl_dfti.h>
#include <pthread.h>

#include "mkl_layer.h"

int axon_fft_available(void) { return 1; }

typedef enum fft_domain { FFT_COMPLEX, FFT_REAL_FORWARD, FFT_REAL_BACKWARD } fft_domain_t;

/* One pass: the calls of its descriptors over the pool. Offsets and distances in elements of each side. */
typedef struct fft_pass {
    DFTI_DESCRIPTOR_HANDLE full, tail;   /* `group` transforms per call; the last group's `tail` (NULL: none) */
    int forward, inplace;
    const char *src;
    char *dst;
    size_t src_es, dst_es;
    int64_t groups;                      /* calls per looped index */
    int64_t group;
    int64_t bdist_src, bdist_dst;        /* between transforms of a batch */
    int64_t ldist_src, ldist_dst;        /* between looped indices */
    _Atomic long status;                 /* the first failing MKL status, else 0 */
} fft_pass_t;

/* DFTI's entry points, from mkl_rt itself (axon_mkl_symbol): torch exports its own MKL's DFTI, on which a plain call
 * ran (with its OpenMP threads inside the pool's: fft2 of [64, 4096] complex64 1.35x torch CPU's time). */
typedef struct fft_mkl {
    MKL_LONG (*create)(DFTI_DESCRIPTOR_HANDLE *, enum DFTI_CONFIG_VALUE, enum DFTI_CONFIG_VALUE, MKL_LONG, ...);
    MKL_LONG (*commit)(DFTI_DESCRIPTOR_HANDLE);
    MKL_LONG (*forward)(DFTI_DESCRIPTOR_HANDLE, void *, ...);
    MKL_LONG (*backward)(DFTI_DESCRIPTOR_HANDLE, void *, ...);
    MKL_LONG (*set)(DFTI_DESCRIPTOR_HANDLE, enum DFTI_CONFIG_PARAM, ...);
    MKL_LONG (*free)(DFTI_DESCRIPTOR_HANDLE *);
    char *(*message)(MKL_LONG);
    MKL_LONG (*error_class)(MKL_LONG, MKL_LONG);
} fft_mkl_t;

static fft_mkl_t dfti;
static int dfti_ok;
static pthread_once_t dfti_once = PTHREAD_ONCE_INIT;

static void fft_mkl_init(void) {
    *(void **)&dfti.create = axon_mkl_symbol("DftiCreateDescriptor");
    *(void **)&dfti.commit = axon_mkl_symbol("DftiCommitDescriptor");
    *(void **)&dfti.forward = axon_mkl_symbol("DftiComputeForward");
    *(void **)&dfti.backward = axon_mkl_symbol("DftiComputeBackward");
    *(void **)&dfti.set = axon_mkl_symbol("DftiSetValue");
    *(void **)&dfti.free = axon_mkl_symbol("DftiFreeDescriptor");
    *(void **)&dfti.message = axon_mkl_symbol("DftiErrorMessage");
    *(void **)&dfti.error_class = axon_mkl_symbol("DftiErrorClass");
    dfti_ok = dfti.create && dfti.commit && dfti.forward && dfti.backward && dfti.set && dfti.free && dfti.message &&
              dfti.error_class;
}

static void fft_units(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    fft_pass_t *p = ctx;
    for (int64_t u = begin; u < end; u++) {
        const int64_t l = u / p->groups, c = u % p->groups;
        DFTI_DESCRIPTOR_HANDLE h = c == p->groups - 1 && p->tail ? p->tail : p->full;
        const char *src = p->src + (size_t)(l * p->ldist_src + c * p->group * p->bdist_src) * p->src_es;
        char *dst = p->dst + (size_t)(l * p->ldist_dst + c * p->group * p->bdist_dst) * p->dst_es;
        MKL_LONG st;
        if (p->inplace) st = p->forward ? dfti.forward(h, dst) : dfti.backward(h, dst);
        else st = p->forward ? dfti.forward(h, (void *)src, dst) : dfti.backward(h, (void *)src, dst);
        if (st != 0) {
            long none = 0;
            atomic_compare_exchange_strong(&p->status, &none, (long)st);
        }
    }
}

/* A committed descriptor for `howmany` transforms of length n, or an MKL status. */
static MKL_LONG fft_descriptor(DFTI_DESCRIPTOR_HANDLE *h, int dbl, fft_domain_t domain, int forward, int64_t n,
                               int64_t howmany, int64_t stride_src, int64_t stride_dst, int64_t dist_src,
                               int64_t dist_dst, int inplace, double scale) {
    *h = NULL;
    MKL_LONG st = dfti.create(h, dbl ? DFTI_DOUBLE : DFTI_SINGLE, domain == FFT_COMPLEX ? DFTI_COMPLEX : DFTI_REAL, 1,
                              (MKL_LONG)n);
    if (st != 0) return st;
    MKL_LONG strides_src[2] = {0, (MKL_LONG)stride_src}, strides_dst[2] = {0, (MKL_LONG)stride_dst};
    /* DFTI reads a double for either precision's scale (a float argument is promoted anyway) */
    if ((st = dfti.set(*h, DFTI_PLACEMENT, inplace ? DFTI_INPLACE : DFTI_NOT_INPLACE)) != 0 ||
        (domain != FFT_COMPLEX && (st = dfti.set(*h, DFTI_CONJUGATE_EVEN_STORAGE, DFTI_COMPLEX_COMPLEX)) != 0) ||
        (st = dfti.set(*h, DFTI_NUMBER_OF_TRANSFORMS, (MKL_LONG)howmany)) != 0 ||
        (st = dfti.set(*h, DFTI_INPUT_DISTANCE, (MKL_LONG)dist_src)) != 0 ||
        (st = dfti.set(*h, DFTI_OUTPUT_DISTANCE, (MKL_LONG)dist_dst)) != 0 ||
        (st = dfti.set(*h, DFTI_INPUT_STRIDES, strides_src)) != 0 ||
        (st = dfti.set(*h, DFTI_OUTPUT_STRIDES, strides_dst)) != 0 ||
        (scale != 1.0 && (st = dfti.set(*h, forward ? DFTI_FORWARD_SCALE : DFTI_BACKWARD_SCALE, scale)) != 0) ||
        (st = dfti.commit(*h)) != 0) {
        dfti.free(h);
        *h = NULL;
    }
    return st;
}

static axon_status_t fft_mkl_error(MKL_LONG st, int64_t n) {
    if (dfti.error_class(st, DFTI_MEMORY_ERROR))
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "fft: MKL could not allocate for a transform of length %lld",
                         (long long)n);
    return axon_fail(AXON_ERROR_INTERNAL, "fft: MKL DFTI failed on a transform of length %lld: %s", (long long)n,
                     dfti.message(st));
}

/* Transforms of length n along dimension d of contiguous layouts with `sizes` (src's) whose dimension d holds
 * n_src elements in src and n_dst in dst (they differ only for the real domains). */
static axon_status_t fft_pass(const axon_exec_t *ex, int dbl, fft_domain_t domain, int forward, const int64_t *sizes,
                              int ndim, int d, int64_t n, int64_t n_src, int64_t n_dst, const void *src, void *dst,
                              double scale) {
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; k++) outer *= sizes[k];
    for (int k = d + 1; k < ndim; k++) inner *= sizes[k];
    if (outer * inner == 0) return AXON_OK;
    const size_t real_es = dbl ? sizeof(double) : sizeof(float), complex_es = 2 * real_es;

    fft_pass_t p;
    memset(&p, 0, sizeof p);
    p.forward = forward;
    p.inplace = src == dst;
    p.src = src;
    p.dst = dst;
    p.src_es = domain == FFT_REAL_FORWARD ? real_es : complex_es;
    p.dst_es = domain == FFT_REAL_BACKWARD ? real_es : complex_es;
    atomic_init(&p.status, 0);
    /* rows (contiguous transforms, one batch) or columns (stride inner, a batch per outer index) */
    const int64_t batch = inner == 1 ? outer : inner, loops = inner == 1 ? 1 : outer;
    const int64_t stride = inner;
    p.bdist_src = inner == 1 ? n_src : 1;
    p.bdist_dst = inner == 1 ? n_dst : 1;
    p.ldist_src = n_src * inner;
    p.ldist_dst = n_dst * inner;
    /* about 4 calls per participant when the work is worth splitting */
    const int pool = axon_pool_size(ex->pool);
    const int64_t want = pool > 1 && outer * inner * n >= AXON_KERNEL_GRAIN ? 4 * (int64_t)pool : 1;
    int64_t groups = loops >= want ? 1 : (want + loops - 1) / loops;
    if (groups > batch) groups = batch;
    p.group = (batch + groups - 1) / groups;
    p.groups = (batch + p.group - 1) / p.group;
    const int64_t tail = batch - (p.groups - 1) * p.group;

    MKL_LONG st = fft_descriptor(&p.full, dbl, domain, forward, n, p.group, stride, stride, p.bdist_src,
                                 p.bdist_dst, p.inplace, scale);
    if (st == 0 && tail != p.group)
        st = fft_descriptor(&p.tail, dbl, domain, forward, n, tail, stride, stride, p.bdist_src, p.bdist_dst,
                            p.inplace, scale);
    if (st == 0) {
        axon_parallel_for(ex->pool, 0, loops * p.groups, 1, fft_units, &p);
        st = atomic_load(&p.status);
    }
    if (p.full) dfti.free(&p.full);
    if (p.tail) dfti.free(&p.tail);
    return st == 0 ? AXON_OK : fft_mkl_error(st, n);
}

/* The complex passes over dims[0..count) of a tensor of `sizes`: the first from src to dst, the others in place. */
static axon_status_t fft_complex_passes(const axon_exec_t *ex, int dbl, int forward, const int64_t *sizes, int ndim,
                                        const int *dims, int count, const void *src, void *dst, double scale) {
    axon_status_t st = AXON_OK;
    for (int k = 0; k < count && st == AXON_OK; k++) {
        const int64_t n = sizes[dims[k]];
        st = fft_pass(ex, dbl, FFT_COMPLEX, forward, sizes, ndim, dims[k], n, n, n, k == 0 ? src : dst, dst,
                      k == 0 ? scale : 1.0);
    }
    return st;
}

static axon_status_t fft_kernel(const void *args, const axon_exec_t *ex) {
    const fft_args_t *a = args;
    axon_mkl_use_sequential();
    pthread_once(&dfti_once, fft_mkl_init);
    if (!dfti_ok) return axon_fail(AXON_ERROR_INTERNAL, "fft: MKL's DFTI entry points were not found in mkl_rt");
    const int dbl = a->in.dtype == AXON_FLOAT64 || a->in.dtype == AXON_COMPLEX128;
    const int ndim = a->in.ndim, last = a->dims[a->ndims - 1];
    switch (a->kind) {
    case AXON_FFT_C2C:
        return fft_complex_passes(ex, dbl, a->forward, a->in.sizes, ndim, a->dims, a->ndims, a->in.data, a->out.data,
                                  a->scale);
    case AXON_FFT_R2C: {
        const int64_t n = a->in.sizes[last];
        if (a->out.sizes[last] == n) {
            /* the full spectrum: the complex transform of the input made complex */
            const int64_t numel = axon_tensor_numel(&a->in);
            void *z = malloc((size_t)numel * axon_dtype_size(a->out.dtype));
            if (z == NULL)
                return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "fft: cannot allocate %lld complex elements of scratch",
                                 (long long)numel);
            axon_convert_get(a->in.dtype, a->out.dtype)(z, 1, a->in.data, 1, numel);
            axon_status_t st = fft_complex_passes(ex, dbl, 1, a->in.sizes, ndim, a->dims, a->ndims, z, a->out.data,
                                                  a->scale);
            free(z);
            return st;
        }
        axon_status_t st = fft_pass(ex, dbl, FFT_REAL_FORWARD, 1, a->in.sizes, ndim, last, n, n, a->out.sizes[last],
                                    a->in.data, a->out.data, a->scale);
        for (int k = 0; k < a->ndims - 1 && st == AXON_OK; k++) {
            const int64_t m = a->out.sizes[a->dims[k]];
            st = fft_pass(ex, dbl, FFT_COMPLEX, 1, a->out.sizes, ndim, a->dims[k], m, m, m, a->out.data, a->out.data,
                          1.0);
        }
        return st;
    }
    case AXON_FFT_C2R: {
        const int64_t n = a->out.sizes[last];
        if (a->ndims == 1)   /* DFTI leaves the input alone (DFTI_DESTROY_INPUT is DFTI_AVOID by default) */
            return fft_pass(ex, dbl, FFT_REAL_BACKWARD, 0, a->in.sizes, ndim, last, n, a->in.sizes[last], n,
                            a->in.data, a->out.data, a->scale);
        /* the other dimensions into scratch, so that in is not written */
        const int64_t numel = axon_tensor_numel(&a->in);
        void *z = malloc((size_t)numel * axon_dtype_size(a->in.dtype));
        if (z == NULL)
            return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "fft: cannot allocate %lld complex elements of scratch",
                             (long long)numel);
        axon_status_t st =
            fft_complex_passes(ex, dbl, 0, a->in.sizes, ndim, a->dims, a->ndims - 1, a->in.data, z, 1.0);
        if (st == AXON_OK)
            st = fft_pass(ex, dbl, FFT_REAL_BACKWARD, 0, a->in.sizes, ndim, last, n, a->in.sizes[last], n, z,
                          a->out.data, a->scale);
        free(z);
        return st;
    }
    }
    return axon_fail(AXON_ERROR_INTERNAL, "fft: kind %d", (int)a->kind);
}
#else
int axon_fft_available(void) { return 0; }
#endif

/* The launch's checks: kinds, dtypes, dims and shapes as axon/fft.h states them. */
static axon_status_t fft_check(const axon_tensor_t *out, const axon_tensor_t *in, axon_fft_kind_t kind,
                               const int *dims, int ndims, int forward) {
    axon_status_t st;
    if ((st = axon_kernel_check_operand(in, "fft", "in", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out, "fft", "out", 1)) != AXON_OK) return st;
    if (!axon_tensor_is_contiguous(in) || !axon_tensor_is_contiguous(out))
        return axon_fail(AXON_ERROR_INVALID_ARG, "fft: in and out must be contiguous");
    if ((unsigned)kind > AXON_FFT_C2R) return axon_fail(AXON_ERROR_INVALID_ARG, "fft: kind %d is not a transform", kind);
    const char *kind_name = kind == AXON_FFT_C2C ? "c2c" : kind == AXON_FFT_R2C ? "r2c" : "c2r";
    const axon_dtype_t want_in = kind == AXON_FFT_R2C ? in->dtype : kind == AXON_FFT_C2R ? fft_complex_of(out->dtype)
                                                                                       : out->dtype;
    const axon_dtype_t want_out = kind == AXON_FFT_R2C ? fft_complex_of(in->dtype) : out->dtype;
    const int in_ok = kind == AXON_FFT_R2C ? fft_complex_of(in->dtype) != AXON_DTYPE_COUNT : fft_is_complex(in->dtype);
    if (!in_ok || in->dtype != want_in || out->dtype != want_out)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "fft %s: dtypes %s -> %s are not a transform (c2c: complex64 or complex128 to the same; "
                         "r2c: float32 -> complex64, float64 -> complex128; c2r: the reverse)",
                         kind_name, axon_dtype_name(in->dtype), axon_dtype_name(out->dtype));
    if (kind == AXON_FFT_R2C && !forward) return axon_fail(AXON_ERROR_INVALID_ARG, "fft r2c: is always forward");
    if (kind == AXON_FFT_C2R && forward) return axon_fail(AXON_ERROR_INVALID_ARG, "fft c2r: is always backward");
    if (in->ndim != out->ndim)
        return axon_fail(AXON_ERROR_INVALID_ARG, "fft %s: in has %d dimensions, out %d", kind_name, in->ndim,
                         out->ndim);
    if (dims == NULL || ndims < 1 || ndims > in->ndim)
        return axon_fail(AXON_ERROR_INVALID_ARG, "fft %s: %d dims for a tensor of %d dimensions", kind_name, ndims,
                         in->ndim);
    unsigned seen = 0;
    for (int k = 0; k < ndims; k++) {
        if (dims[k] < 0 || dims[k] >= in->ndim || (seen >> dims[k] & 1u))
            return axon_fail(AXON_ERROR_INVALID_ARG, "fft %s: dims[%d] = %d is out of range or repeated", kind_name,
                             k, dims[k]);
        seen |= 1u << dims[k];
    }
    const int last = dims[ndims - 1];
    for (int k = 0; k < in->ndim; k++) {
        const int64_t i = in->sizes[k], o = out->sizes[k];
        const int ok = k != last || kind == AXON_FFT_C2C ? i == o
                       : kind == AXON_FFT_R2C            ? o == i / 2 + 1 || o == i
                                                         : i == o / 2 + 1;
        if (!ok) {
            char a[96], b[96];
            return axon_fail(AXON_ERROR_INVALID_ARG, "fft %s: shapes %s -> %s do not match along dimension %d",
                             kind_name, axon_shape_format(in, a, sizeof a), axon_shape_format(out, b, sizeof b), k);
        }
    }
    for (int k = 0; k < ndims; k++) {
        const int64_t n = kind == AXON_FFT_C2R ? out->sizes[dims[k]] : in->sizes[dims[k]];
        if (n < 1)
            return axon_fail(AXON_ERROR_INVALID_ARG, "fft %s: dimension %d has %lld elements; a transform needs one "
                             "or more", kind_name, dims[k], (long long)n);
    }
    return AXON_OK;
}

axon_status_t axon_kernel_fft(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                              axon_fft_kind_t kind, const int *dims, int ndims, int forward, double scale) {
    axon_status_t st = fft_check(out, in, kind, dims, ndims, forward);
    if (st != AXON_OK) return st;
#ifndef AXON_HAVE_MKL
    (void)s, (void)scale;
    return axon_fail(AXON_ERROR_UNSUPPORTED, "fft: this libaxon was built without MKL, which runs its transforms");
#else
    if (axon_tensor_numel(out) == 0) return AXON_OK;
    fft_args_t a;
    memset(&a, 0, sizeof a);
    a.out = *out;
    a.in = *in;
    a.kind = kind;
    memcpy(a.dims, dims, (size_t)ndims * sizeof *dims);
    a.ndims = ndims;
    a.forward = forward;
    a.scale = scale;
    const uint64_t bytes = (uint64_t)axon_tensor_numel(in) * axon_dtype_size(in->dtype) +
                           (uint64_t)axon_tensor_numel(out) * axon_dtype_size(out->dtype);
    axon_launch_t l = {fft_kernel, &a, sizeof a, "fft", bytes};
    return axon_stream_launch(s, &l);
#endif
}
