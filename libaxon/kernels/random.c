/* Random kernels on Philox4x32-10: uniform, normal, exponential, random_int, bernoulli (with one p, or a tensor of
 * them), and cauchy, log_normal and geometric.
 *
 * Element i of dst (logical row-major order) reads block i / epb of the stream (seed, offset), epb = 2 for 8-byte
 * dtypes (64 bits per element) and 4 otherwise (kernels.h has the exact lane layout). Because a value depends only
 * on i, chunks can go to any thread and dst can have any strides: the iterator walks dst in logical order and hands
 * out runs with their logical position. Values are made in double or int64 in short stack batches, one Philox block
 * at a time, then stored with the copy's conversion loops, so every dtype rounds by the copy rules. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "dtype.h"
#include "internal.h"
#include "kernels_impl.h"
#include "philox.h"

#define RNG_BATCH 256
#define RNG_TWO_PI 6.283185307179586476925286766559
/* Normals are made RNG_GROUP Philox blocks at a time (groups aligned to multiples of RNG_GROUP blocks), so that the
 * Box-Muller loop has a fixed trip count and vectorizes: every element then goes through the same vector code
 * whatever run or thread it falls in, and a value still depends only on its index. */
#define RNG_GROUP 16

#ifdef AXON_HAVE_LIBMVEC
/* libmvec's vector versions (kernels/pointwise_unary.c says why): with glibc's scalar ones, normal_ took 3.6x torch
 * CPU's time. */
double(log)(double) __attribute__((simd("notinbranch")));
double(sin)(double) __attribute__((simd("notinbranch")));
double(cos)(double) __attribute__((simd("notinbranch")));
#endif

enum rng_kind {
    RNG_UNIFORM,
    RNG_NORMAL,
    RNG_RANDOM_INT,
    RNG_BERNOULLI,
    RNG_BERNOULLI_TENSOR,
    RNG_EXPONENTIAL,
    RNG_CAUCHY,
    RNG_LOG_NORMAL,
    RNG_GEOMETRIC
};

static const char *const rng_names[] = {"uniform",     "normal", "random_int", "bernoulli", "bernoulli",
                                        "exponential", "cauchy", "log_normal", "geometric"};

struct rng_args {
    axon_tensor_t dst;
    uint64_t seed, offset;
    enum rng_kind kind;
    int wide;                    /* 64 random bits per element, 2 elements per block */
    double p0, p1;               /* uniform: from, to - from; normal and log_normal: mean, std; bernoulli and
                                    geometric: p; exponential: lambda; cauchy: median, sigma */
    double limit;                /* uniform: the largest value of dst's dtype below `to` */
    int64_t from;                /* random_int */
    uint64_t range;              /* random_int; 0 = 2^64 */
    axon_tensor_t p;             /* bernoulli with a tensor of probabilities: dst's shape (0 strides broadcast) */
};

struct rng_job {
    const struct rng_args *a;
    axon_iter_t it;              /* dst (and p), in logical order */
    _Atomic int64_t bad_p;       /* RNG_BERNOULLI_TENSOR: smallest position of a p outside [0, 1]; INT64_MAX if none */
};

static int rng_wide(axon_dtype_t d) { return d == AXON_FLOAT64 || d == AXON_INT64; }

uint64_t axon_philox_blocks(axon_dtype_t dtype, int64_t numel) {
    if (numel <= 0) return 0;
    uint64_t per = rng_wide(dtype) ? 2 : 4;
    return ((uint64_t)numel + per - 1) / per;
}

static uint64_t rng_bits64(const uint32_t *x, int j) { return x[2 * j] | (uint64_t)x[2 * j + 1] << 32; }

/* The normals of Philox blocks [g * RNG_GROUP, (g + 1) * RNG_GROUP) into f (RNG_GROUP * 4, or * 2 when wide): pair k
 * of uniforms, u1 in (0, 1] and u2 in [0, 1), gives f[2k] = r cos t and f[2k + 1] = r sin t (Box-Muller), pairs in
 * element order (a block's lanes 0-1 and 2-3, or its two 64-bit halves when wide). */
AXON_CLONES static void rng_normal_group(const struct rng_args *a, uint64_t g, double *f) {
    enum { PAIRS = RNG_GROUP * 2 };
    double u1[PAIRS], u2[PAIRS];
    const int pairs = a->wide ? RNG_GROUP : PAIRS;
    for (int j = 0; j < RNG_GROUP; j++) {
        uint32_t x[4];
        axon_philox_block(a->seed, a->offset, g * RNG_GROUP + (uint64_t)j, x);
        if (a->wide) {
            u1[j] = (double)((rng_bits64(x, 0) >> 11) + 1) * 0x1p-53;
            u2[j] = (double)(rng_bits64(x, 1) >> 11) * 0x1p-53;
        } else {
            u1[2 * j] = ((double)x[0] + 1.0) * 0x1p-32, u2[2 * j] = (double)x[1] * 0x1p-32;
            u1[2 * j + 1] = ((double)x[2] + 1.0) * 0x1p-32, u2[2 * j + 1] = (double)x[3] * 0x1p-32;
        }
    }
    if (a->wide)
        for (int j = RNG_GROUP; j < PAIRS; j++) u1[j] = 1.0, u2[j] = 0.0; /* unused lanes of the fixed-length loop */
    /* Separate loops: in one, GCC would join cos(t) and sin(t) into a scalar sincos call. */
    double r[PAIRS], c[PAIRS], s[PAIRS];
    for (int k = 0; k < PAIRS; k++) r[k] = sqrt(-2.0 * log(u1[k])), u2[k] *= RNG_TWO_PI;
    for (int k = 0; k < PAIRS; k++) c[k] = cos(u2[k]);
    for (int k = 0; k < PAIRS; k++) s[k] = sin(u2[k]);
    for (int k = 0; k < pairs; k++) {
        f[2 * k] = a->p0 + a->p1 * (r[k] * c[k]);
        f[2 * k + 1] = a->p0 + a->p1 * (r[k] * s[k]);
    }
}

/* The values block b gives its 4 (or 2, when wide) elements: doubles in f or int64s in iv depending on the kind. */
static void rng_block(const struct rng_args *a, uint64_t b, double *f, int64_t *iv) {
    uint32_t x[4];
    axon_philox_block(a->seed, a->offset, b, x);
    const int n = a->wide ? 2 : 4;
    switch (a->kind) {
    case RNG_UNIFORM:
        for (int j = 0; j < n; j++) {
            double u = a->wide ? (double)(rng_bits64(x, j) >> 11) * 0x1p-53 : (double)(x[j] >> 8) * 0x1p-24;
            double v = a->p0 + u * a->p1;
            f[j] = v > a->limit ? a->limit : v; /* would round up to `to` */
        }
        break;
    case RNG_NORMAL: /* made by groups of blocks: rng_normal_group */
    case RNG_LOG_NORMAL:
        break;
    case RNG_EXPONENTIAL: /* u in (0, 1), never 0 or 1: every value finite and > 0 */
    case RNG_CAUCHY:      /* PyTorch's transformations of such a u */
    case RNG_GEOMETRIC:
        for (int j = 0; j < n; j++) {
            double u = a->wide ? ((double)(rng_bits64(x, j) >> 11) + 0.5) * 0x1p-53 : ((double)x[j] + 0.5) * 0x1p-32;
            if (a->kind == RNG_EXPONENTIAL) f[j] = -log(u) / a->p0;
            else if (a->kind == RNG_CAUCHY) f[j] = a->p0 + a->p1 * tan(RNG_TWO_PI / 2 * (u - 0.5));
            else f[j] = ceil(log(u) / log1p(-a->p0));
        }
        break;
    case RNG_RANDOM_INT:
        for (int j = 0; j < n; j++) {
            uint64_t r = a->wide ? rng_bits64(x, j) : x[j];
            if (a->range != 0) r %= a->range;
            iv[j] = (int64_t)((uint64_t)a->from + r); /* wraps like the int64 it documents */
        }
        break;
    case RNG_BERNOULLI:
    case RNG_BERNOULLI_TENSOR: /* the tensor form compares u with its p in rng_run */
        for (int j = 0; j < n; j++) {
            double u = a->wide ? (double)(rng_bits64(x, j) >> 11) * 0x1p-53 : (double)x[j] * 0x1p-32;
            f[j] = u;
            iv[j] = u < a->p0;
        }
        break;
    }
}

/* Bernoulli with p: u[k] < p[k] into iv for m elements whose p run starts at pp (stride ps elements); a p outside
 * [0, 1] (or NaN) is noted at its position and gives 0. */
static void rng_bernoulli_p(struct rng_job *j, const double *u, const char *pp, int64_t ps, int64_t m, int64_t pos,
                            int64_t *iv) {
    double p[RNG_BATCH];
    const axon_tensor_t *pt = &j->a->p;
    axon_convert_get(pt->dtype, AXON_FLOAT64)((char *)p, 1, pp, ps, m);
    for (int64_t k = 0; k < m; k++) {
        if (!(p[k] >= 0 && p[k] <= 1)) {
            int64_t cur = atomic_load(&j->bad_p);
            while (pos + k < cur && !atomic_compare_exchange_weak(&j->bad_p, &cur, pos + k)) {
            }
            iv[k] = 0;
            continue;
        }
        iv[k] = u[k] < p[k];
    }
}

static void rng_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    const struct rng_args *a = ((const struct rng_job *)ctx)->a;
    const int with_p = a->kind == RNG_BERNOULLI_TENSOR;
    const int integer = a->kind == RNG_RANDOM_INT || a->kind == RNG_BERNOULLI || with_p;
    const int64_t per = a->wide ? 2 : 4, es = (int64_t)axon_dtype_size(a->dst.dtype);
    axon_convert_fn store = axon_convert_get(integer ? AXON_INT64 : AXON_FLOAT64, a->dst.dtype);
    double fbuf[RNG_BATCH];
    int64_t ibuf[RNG_BATCH];
    /* Values are made a unit at a time: one Philox block, or for normals a group of RNG_GROUP blocks. */
    const int normal = a->kind == RNG_NORMAL || a->kind == RNG_LOG_NORMAL;
    const int64_t unit = normal ? RNG_GROUP * per : per;
    for (int64_t done = 0; done < n;) {
        int64_t m = n - done < RNG_BATCH ? n - done : RNG_BATCH;
        for (int64_t k = 0, i = pos + done; k < m;) {
            double fv[RNG_GROUP * 4];
            int64_t iv[4];
            if (normal) rng_normal_group(a, (uint64_t)(i / unit), fv);
            else rng_block(a, (uint64_t)(i / unit), fv, iv);
            if (a->kind == RNG_LOG_NORMAL)
                for (int64_t j = 0; j < unit; j++) fv[j] = exp(fv[j]);
            for (int64_t j = i % unit; j < unit && k < m; j++, k++, i++) {
                if (integer && !with_p) ibuf[k] = iv[j];
                else fbuf[k] = fv[j];
            }
        }
        if (with_p) {
            const int64_t pes = (int64_t)axon_dtype_size(a->p.dtype);
            rng_bernoulli_p(ctx, fbuf, ptr[1] + done * stride[1] * pes, stride[1], m, pos + done, ibuf);
        }
        store(ptr[0] + done * stride[0] * es, stride[0], integer ? (const char *)ibuf : (const char *)fbuf, 1, m);
        done += m;
    }
}

static void rng_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct rng_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, rng_run, ctx);
}

static axon_status_t rng_kernel(const void *args, const axon_exec_t *ex) {
    struct rng_job j = {args, {0}, INT64_MAX};
    const axon_tensor_t *t[2] = {&j.a->dst, &j.a->p};
    axon_iter_init(&j.it, j.a->kind == RNG_BERNOULLI_TENSOR ? 2 : 1, t, 0);
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, rng_range, &j);
    const int64_t bad = atomic_load(&j.bad_p);
    if (bad == INT64_MAX) return AXON_OK;
    double p;
    axon_convert_get(j.a->p.dtype, AXON_FLOAT64)((char *)&p, 1, axon_iter_at(&j.it, 1, bad), 1, 1);
    return axon_fail(AXON_ERROR_INVALID_ARG, "bernoulli: p=%g is not in [0, 1]", p);
}

/* Check dst for kind (floating dtypes only, if asked) and fill the common fields of a. */
static axon_status_t rng_prepare(struct rng_args *a, enum rng_kind kind, const axon_tensor_t *dst, uint64_t seed,
                                 uint64_t offset, int floating_only) {
    axon_status_t st = axon_kernel_check_operand(dst, rng_names[kind], "dst", 1);
    if (st != AXON_OK) return st;
    if (floating_only && !axon_dtype_is_floating(dst->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s is not a floating dtype", rng_names[kind],
                         axon_dtype_name(dst->dtype));
    if (dst->dtype == AXON_COMPLEX64 || dst->dtype == AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: complex dtype %s is not supported (fill its real view)",
                         rng_names[kind], axon_dtype_name(dst->dtype));
    memset(a, 0, sizeof *a);
    a->dst = *dst;
    a->seed = seed;
    a->offset = offset;
    a->kind = kind;
    a->wide = rng_wide(dst->dtype);
    return AXON_OK;
}

static axon_status_t rng_launch(axon_stream_t s, const struct rng_args *a) {
    int64_t n = axon_tensor_numel(&a->dst);
    if (n == 0) return AXON_OK;
    axon_launch_t l = {rng_kernel, a, sizeof *a, rng_names[a->kind], (uint64_t)n * axon_dtype_size(a->dst.dtype)};
    return axon_stream_launch(s, &l);
}

/* One element of dtype d, as a double, converted with the copy rules; and the element just below it. */
static double rng_round(axon_dtype_t d, double v) {
    union {
        double f;
        float f32;
        uint16_t h;
    } buf;
    double out;
    axon_convert_get(AXON_FLOAT64, d)((char *)&buf, 1, (const char *)&v, 1, 1);
    axon_convert_get(d, AXON_FLOAT64)((char *)&out, 1, (const char *)&buf, 1, 1);
    return out;
}

static double rng_below(axon_dtype_t d, double r) {
    if (d == AXON_FLOAT64) return nextafter(r, -INFINITY);
    if (d == AXON_FLOAT32) return nextafterf((float)r, -INFINITY);
    uint16_t h;
    double out;
    axon_convert_get(AXON_FLOAT64, d)((char *)&h, 1, (const char *)&r, 1, 1);
    /* Halves are sign-magnitude: one step toward -inf is magnitude - 1 when positive, + 1 when negative. */
    if ((h & 0x7FFFu) == 0) h = 0x8001u;
    else if (h & 0x8000u) h++;
    else h--;
    axon_convert_get(d, AXON_FLOAT64)((char *)&out, 1, (const char *)&h, 1, 1);
    return out;
}

axon_status_t axon_kernel_uniform(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                  double from, double to) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_UNIFORM, dst, seed, offset, 1);
    if (st != AXON_OK) return st;
    if (!(from <= to) || !isfinite(from) || !isfinite(to) || !isfinite(to - from))
        return axon_fail(AXON_ERROR_INVALID_ARG, "uniform: needs finite from <= to with a finite to - from; got "
                         "from=%g to=%g", from, to);
    a.p0 = from;
    a.p1 = to - from;
    /* PyTorch promises [from, to): a draw close below `to` must not round up to it in a narrow dtype. */
    double r = rng_round(dst->dtype, to);
    a.limit = r < to ? r : rng_below(dst->dtype, r);
    if (a.limit < from) a.limit = from; /* from == to, or no value of the dtype in between */
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_normal(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                 double mean, double std) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_NORMAL, dst, seed, offset, 1);
    if (st != AXON_OK) return st;
    if (!isfinite(mean) || !isfinite(std) || std < 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "normal: needs finite mean and std >= 0; got mean=%g std=%g", mean,
                         std);
    a.p0 = mean;
    a.p1 = std;
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_exponential(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                      double lambda) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_EXPONENTIAL, dst, seed, offset, 1);
    if (st != AXON_OK) return st;
    if (!(lambda > 0) || !isfinite(lambda))
        return axon_fail(AXON_ERROR_INVALID_ARG, "exponential: needs a finite lambda > 0; got lambda=%g", lambda);
    a.p0 = lambda;
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_cauchy(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                 double median, double sigma) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_CAUCHY, dst, seed, offset, 1);
    if (st != AXON_OK) return st;
    if (!isfinite(median) || !(sigma > 0) || !isfinite(sigma))
        return axon_fail(AXON_ERROR_INVALID_ARG, "cauchy: needs a finite median and sigma > 0; got median=%g sigma=%g",
                         median, sigma);
    a.p0 = median;
    a.p1 = sigma;
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_log_normal(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                     double mean, double std) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_LOG_NORMAL, dst, seed, offset, 1);
    if (st != AXON_OK) return st;
    if (!isfinite(mean) || !(std > 0) || !isfinite(std))
        return axon_fail(AXON_ERROR_INVALID_ARG, "log_normal: needs a finite mean and std > 0; got mean=%g std=%g",
                         mean, std);
    a.p0 = mean;
    a.p1 = std;
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_geometric(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                    double p) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_GEOMETRIC, dst, seed, offset, 0);
    if (st != AXON_OK) return st;
    if (dst->dtype == AXON_BOOL)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "geometric: dst dtype bool is not supported");
    if (!(p > 0 && p < 1)) return axon_fail(AXON_ERROR_INVALID_ARG, "geometric: p=%g is not in (0, 1)", p);
    a.p0 = p;
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_random_int(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                     int64_t from, uint64_t range) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_RANDOM_INT, dst, seed, offset, 0);
    if (st != AXON_OK) return st;
    if (!a.wide && (range == 0 || range > ((uint64_t)1 << 32))) {
        char text[32];
        if (range == 0) snprintf(text, sizeof text, "2^64");
        else snprintf(text, sizeof text, "%llu", (unsigned long long)range);
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "random_int: range %s needs 64 random bits, which only float64 and int64 get; dst is %s",
                         text, axon_dtype_name(dst->dtype));
    }
    a.from = from;
    a.range = range;
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_bernoulli(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset,
                                    double p) {
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_BERNOULLI, dst, seed, offset, 0);
    if (st != AXON_OK) return st;
    if (!(p >= 0 && p <= 1)) return axon_fail(AXON_ERROR_INVALID_ARG, "bernoulli: p=%g is not in [0, 1]", p);
    a.p0 = p;
    return rng_launch(s, &a);
}

axon_status_t axon_kernel_bernoulli_tensor(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *p,
                                           uint64_t seed, uint64_t offset) {
    char sa[160], sb[160];
    struct rng_args a;
    axon_status_t st = rng_prepare(&a, RNG_BERNOULLI_TENSOR, dst, seed, offset, 0);
    if (st != AXON_OK) return st;
    if ((st = axon_kernel_check_src(p, "bernoulli: p")) != AXON_OK) return st;
    if (!axon_dtype_is_floating(p->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "bernoulli: p must have a floating dtype, got %s",
                         axon_dtype_name(p->dtype));
    int same = p->ndim == dst->ndim;
    for (int d = 0; same && d < dst->ndim; d++) same = p->sizes[d] == dst->sizes[d];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "bernoulli: p %s must have dst's shape %s (broadcast it first)",
                         axon_shape_format(p, sa, sizeof sa), axon_shape_format(dst, sb, sizeof sb));
    a.p = *p;
    return rng_launch(s, &a);
}

/* randperm: Fisher-Yates over 0..n-1. Step i (from n - 1 down to 1) swaps element i with element j = x % (i + 1), x
 * being the 64 random bits of element i of the stream as axon_kernel_random_int draws them for int64; the modulo bias
 * (below (i + 1) / 2^64) is PyTorch's too. The swaps are sequential (each depends on the ones before), but the draws
 * are not: each batch of RP_BATCH steps has its j drawn over the pool first (the Philox rounds and the 64-bit
 * modulo were most of the time), then swapped on one thread. */
#define RP_BATCH ((int64_t)1 << 16)

struct randperm_args {
    axon_tensor_t dst;
    uint64_t seed, offset;
};

struct randperm_job {
    const struct randperm_args *a;
    int64_t hi;          /* the batch's steps are hi - k for k in [0, RP_BATCH) */
    int64_t *j;          /* j[k]: the element step hi - k swaps with */
};

static void randperm_draw(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct randperm_job *jb = ctx;
    uint32_t x[4];
    uint64_t have = UINT64_MAX;
    for (int64_t k = begin; k < end; k++) {
        const int64_t i = jb->hi - k;
        if ((uint64_t)i / 2 != have) axon_philox_block(jb->a->seed, jb->a->offset, have = (uint64_t)i / 2, x);
        jb->j[k] = (int64_t)(rng_bits64(x, (int)(i % 2)) % (uint64_t)(i + 1));
    }
}

static axon_status_t randperm_kernel(const void *args, const axon_exec_t *ex) {
    const struct randperm_args *a = args;
    int64_t *d = a->dst.data;
    const int64_t n = a->dst.sizes[0];
    for (int64_t i = 0; i < n; i++) d[i] = i;
    if (n < 2) return AXON_OK;
    const int64_t cap = n - 1 < RP_BATCH ? n - 1 : RP_BATCH;
    struct randperm_job jb = {a, 0, malloc((size_t)cap * sizeof(int64_t))};
    if (jb.j == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "randperm: %lld draws", (long long)cap);
    for (int64_t hi = n - 1; hi > 0; hi -= cap) {
        const int64_t m = hi < cap ? hi : cap; /* steps hi down to hi - m + 1 >= 1 */
        jb.hi = hi;
        axon_parallel_for(ex->pool, 0, m, 4096, randperm_draw, &jb);
        for (int64_t k = 0; k < m; k++) {
            const int64_t i = hi - k, r = jb.j[k], t = d[i];
            d[i] = d[r];
            d[r] = t;
        }
    }
    free(jb.j);
    return AXON_OK;
}

axon_status_t axon_kernel_randperm(axon_stream_t s, const axon_tensor_t *dst, uint64_t seed, uint64_t offset) {
    axon_status_t st = axon_kernel_check_dst(dst, "randperm: dst");
    if (st != AXON_OK) return st;
    if (dst->dtype != AXON_INT64 || dst->ndim != 1 || (dst->sizes[0] > 1 && dst->strides[0] != 1))
        return axon_fail(AXON_ERROR_INVALID_ARG, "randperm: dst must be a contiguous 1-d int64 tensor");
    if (dst->sizes[0] == 0) return AXON_OK;
    struct randperm_args a = {*dst, seed, offset};
    axon_launch_t l = {randperm_kernel, &a, sizeof a, "randperm", (uint64_t)dst->sizes[0] * 16};
    return axon_stream_launch(s, &l);
}
