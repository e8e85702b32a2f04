/* Advanced indexing (index_advanced.h): x[i0, i1, ...] and its write, x[i0, ...] = v or += v.
 *
 * Both walk the iteration shape with an odometer over up to 2 + AXON_INDEX_MAX_INDICES operands (more than the
 * shared iterator's four), so they carry their own: size-1 dimensions dropped, byte offsets advanced per run of the
 * innermost dimension. index parallelizes over every position. index_put parallelizes only over the dimensions
 * where dst has a nonzero stride: two positions that differ there never write the same element. Each thread walks
 * the indexed positions in row-major order and, for each, its own range of the others, which is what makes
 * accumulation deterministic and equal to PyTorch's serial CPU loop while the inner loop stays along dst's rows. */
#include <inttypes.h>
#include <stdio.h>

#include "axon/index_advanced.h"
#include "internal.h"
#include "dtype.h"
#include "index_impl.h"

#define ADV_MAXT (2 + AXON_INDEX_MAX_INDICES)

struct adv_args {
    axon_tensor_t a, b;                          /* index: out, src; index_put: dst, values */
    axon_tensor_t idx[AXON_INDEX_MAX_INDICES];   /* iteration shape, broadcast */
    int64_t sizes[AXON_INDEX_MAX_INDICES];       /* size and stride (elements) of the indexed dimension */
    int64_t strides[AXON_INDEX_MAX_INDICES];
    int n;
    int put, accumulate;
};

struct adv_job {
    const struct adv_args *a;
    int nd, nt;
    int64_t sizes[AXON_MAX_DIMS];
    int64_t strides[ADV_MAXT][AXON_MAX_DIMS];    /* bytes */
    char *base[ADV_MAXT];
    /* index_put: the dimensions where dst does not move (indexed), walked serially around each thread's range of
     * the others (the walk above) */
    int ni;
    int64_t isizes[AXON_MAX_DIMS];
    int64_t istrides[ADV_MAXT][AXON_MAX_DIMS];   /* bytes */
    int64_t inner;                               /* product of isizes */
    int64_t jump[AXON_INDEX_MAX_INDICES];        /* strides[k] in bytes */
    int is64[AXON_INDEX_MAX_INDICES];
    size_t es;
    axon_convert_fn to_ct, from_ct;              /* accumulate: dtype <-> compute type */
    axon_dtype_t ct;
};

/* Offset (bytes) that the indices at p add to the indexed tensor's address; already bounds-checked. */
static inline int64_t adv_offset(const struct adv_job *j, char *const *p, int64_t i, const int64_t *step) {
    int64_t off = 0;
    for (int k = 0; k < j->a->n; k++) {
        int64_t v = ix_load(p[2 + k] + i * step[2 + k], j->is64[k]);
        v += v < 0 ? j->a->sizes[k] : 0;
        off += v * j->jump[k];
    }
    return off;
}

/* d += s in the compute type, rounding once. */
static void adv_accumulate(const struct adv_job *j, char *d, const char *s) {
    /* float32 and float64 add directly (a float32 sum rounded once equals the double sum rounded), float16 and
     * bfloat16 in float as torch CPU's += does (the float sum of two of them is exact or rounds far from a half's
     * rounding boundary, so it rounds to the half the exact sum does). */
    if (j->a->a.dtype == AXON_FLOAT32) {
        float x, y;
        memcpy(&x, d, 4), memcpy(&y, s, 4);
        x += y;
        memcpy(d, &x, 4);
        return;
    }
    if (j->a->a.dtype == AXON_FLOAT64) {
        double x, y;
        memcpy(&x, d, 8), memcpy(&y, s, 8);
        x += y;
        memcpy(d, &x, 8);
        return;
    }
    if (j->a->a.dtype == AXON_BFLOAT16) {
        axon_fk_store(AXON_FK_BF16, d, 0, axon_fk_load(AXON_FK_BF16, d, 0) + axon_fk_load(AXON_FK_BF16, s, 0));
        return;
    }
    if (j->a->a.dtype == AXON_FLOAT16) {
        axon_fk_store(AXON_FK_F16_SCALAR, d, 0,
                      axon_fk_load(AXON_FK_F16_SCALAR, d, 0) + axon_fk_load(AXON_FK_F16_SCALAR, s, 0));
        return;
    }
    union {
        double f;
        int64_t i;
        double c[2];
    } x, y;
    j->to_ct((char *)&x, 1, d, 1, 1);
    j->to_ct((char *)&y, 1, s, 1, 1);
    switch (j->ct) {
    case AXON_FLOAT64: x.f += y.f; break;
    case AXON_COMPLEX128: x.c[0] += y.c[0], x.c[1] += y.c[1]; break;
    default: x.i = (int64_t)((uint64_t)x.i + (uint64_t)y.i); break;
    }
    j->from_ct(d, 1, (const char *)&x, 1, 1);
}

/* dst[i] += src[i] over contiguous float runs: the accumulate case of a run whose indices are fixed (x[idx] with
 * the index on an outer dim adds whole rows). Each element is still added once, in the run's order. */
AXON_CLONES static void adv_add_f32(float *restrict d, const float *restrict s, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}

AXON_CLONES static void adv_add_f64(double *restrict d, const double *restrict s, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}

/* The same for float16 and bfloat16 runs, widened to float and rounded back per element (adv_accumulate's rule);
 * through the float64 conversion calls, bfloat16 x[idx] += v took 4x torch CPU's time. */
static inline __attribute__((always_inline)) void adv_add_half(const int kind, void *d, const void *s, int64_t n) {
    for (int64_t i = 0; i < n; i++) axon_fk_store(kind, d, i, axon_fk_load(kind, d, i) + axon_fk_load(kind, s, i));
}

AXON_CLONES static void adv_add_bf16(void *d, const void *s, int64_t n) { adv_add_half(AXON_FK_BF16, d, s, n); }

AXON_CLONES static void adv_add_f16(void *d, const void *s, int64_t n) { adv_add_half(AXON_FK_F16, d, s, n); }

/* A run along which no index tensor moves (index strides 0 in the last iteration dim): one offset serves it, and
 * contiguous runs become a memcpy or a vector add. */
static int adv_run_fixed(const struct adv_job *j, char *const *p, const int64_t *step, int64_t n) {
    for (int k = 0; k < j->a->n; k++)
        if (step[2 + k] != 0) return 0;
    const size_t es = j->es;
    const int64_t off = adv_offset(j, p, 0, step);
    const int dense = step[0] == (int64_t)es && step[1] == (int64_t)es;
    char *d = p[0] + (j->a->put ? off : 0);
    const char *s = p[1] + (j->a->put ? 0 : off);
    if (!j->a->accumulate) {
        if (dense) {
            memcpy(d, s, (size_t)n * es);
        } else {
            for (int64_t i = 0; i < n; i++) ix_move(d + i * step[0], s + i * step[1], es);
        }
    } else if (dense && j->a->a.dtype == AXON_FLOAT32) {
        adv_add_f32((float *)(void *)d, (const float *)(const void *)s, n);
    } else if (dense && j->a->a.dtype == AXON_FLOAT64) {
        adv_add_f64((double *)(void *)d, (const double *)(const void *)s, n);
    } else if (dense && j->a->a.dtype == AXON_BFLOAT16) {
        adv_add_bf16(d, s, n);
    } else if (dense && j->a->a.dtype == AXON_FLOAT16) {
        adv_add_f16(d, s, n);
    } else {
        for (int64_t i = 0; i < n; i++) adv_accumulate(j, d + i * step[0], s + i * step[1]);
    }
    return 1;
}

static void adv_run(const struct adv_job *j, char *const *p, const int64_t *step, int64_t n) {
    const size_t es = j->es;
    if (n > 1 && adv_run_fixed(j, p, step, n)) return;
    if (!j->a->put) {
        for (int64_t i = 0; i < n; i++) ix_move(p[0] + i * step[0], p[1] + i * step[1] + adv_offset(j, p, i, step), es);
    } else if (!j->a->accumulate) {
        for (int64_t i = 0; i < n; i++) ix_move(p[0] + i * step[0] + adv_offset(j, p, i, step), p[1] + i * step[1], es);
    } else {
        for (int64_t i = 0; i < n; i++) adv_accumulate(j, p[0] + i * step[0] + adv_offset(j, p, i, step), p[1] + i * step[1]);
    }
}

/* Visit positions [begin, end) of the (reordered) iteration shape in row-major order. */
static void adv_walk(const struct adv_job *j, int64_t begin, int64_t end, const int64_t *shift) {
    const int nd = j->nd, nt = j->nt, last = nd - 1;
    int64_t c[AXON_MAX_DIMS], off[ADV_MAXT], step[ADV_MAXT];
    char *p[ADV_MAXT];
    int64_t r = begin;
    for (int d = last; d >= 0; d--) c[d] = r % j->sizes[d], r /= j->sizes[d];
    for (int t = 0; t < nt; t++) {
        off[t] = 0;
        for (int d = 0; d < nd; d++) off[t] += c[d] * j->strides[t][d];
        step[t] = j->strides[t][last];
    }
    for (int64_t pos = begin; pos < end;) {
        int64_t n = j->sizes[last] - c[last];
        if (n > end - pos) n = end - pos;
        for (int t = 0; t < nt; t++) p[t] = j->base[t] + shift[t] + off[t];
        adv_run(j, p, step, n);
        pos += n;
        if (pos >= end) break;
        c[last] += n;
        for (int t = 0; t < nt; t++) off[t] += n * step[t];
        for (int d = last; d > 0 && c[d] == j->sizes[d]; d--) {
            c[d] = 0, c[d - 1]++;
            for (int t = 0; t < nt; t++) off[t] += j->strides[t][d - 1] - j->sizes[d] * j->strides[t][d];
        }
    }
}

static void adv_index_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    static const int64_t none[ADV_MAXT];
    adv_walk(ctx, begin, end, none);
}

static void adv_put_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct adv_job *j = ctx;
    /* For each indexed position in row-major order, this thread's range of the other positions: every destination
     * element sees its updates in the iteration order, and the inner walk runs along dst's contiguous rows. */
    int64_t c[AXON_MAX_DIMS] = {0}, shift[ADV_MAXT] = {0};
    for (int64_t q = 0; q < j->inner; q++) {
        adv_walk(j, begin, end, shift);
        for (int d = j->ni - 1; d >= 0; d--) {
            for (int t = 0; t < j->nt; t++) shift[t] += j->istrides[t][d];
            if (++c[d] < j->isizes[d]) break;
            for (int t = 0; t < j->nt; t++) shift[t] -= c[d] * j->istrides[t][d];
            c[d] = 0;
        }
    }
}

static axon_status_t adv_kernel(const void *args, const axon_exec_t *ex) {
    const struct adv_args *a = args;
    const char *op = a->put ? "index_put_" : "index";
    /* Bounds first, over each index without its broadcast dimensions. */
    for (int k = 0; k < a->n; k++) {
        axon_tensor_t chk = a->idx[k];
        for (int d = 0; d < chk.ndim; d++)
            if (chk.strides[d] == 0) chk.sizes[d] = 1;
        axon_status_t st = axon_ix_check_bounds(&chk, a->sizes[k], 1, k, op, ex->pool);
        if (st != AXON_OK) return st;
    }
    struct adv_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.nt = 2 + a->n;
    j.es = axon_dtype_size(a->a.dtype);
    const axon_tensor_t *ts[ADV_MAXT];
    ts[0] = &a->a, ts[1] = &a->b;
    for (int k = 0; k < a->n; k++) {
        ts[2 + k] = &a->idx[k];
        j.is64[k] = a->idx[k].dtype == AXON_INT64;
        j.jump[k] = a->strides[k] * (int64_t)j.es;
    }
    for (int t = 0; t < j.nt; t++) j.base[t] = ts[t]->data;
    /* Keep dimensions of size > 1; for index_put, those where dst does not move (indexed) go to the serial walk. */
    j.inner = 1;
    for (int d = 0; d < a->a.ndim; d++) {
        if (a->a.sizes[d] == 1) continue;
        int indexed = a->put && a->a.strides[d] == 0;
        int at = indexed ? j.ni++ : j.nd++;
        (indexed ? j.isizes : j.sizes)[at] = a->a.sizes[d];
        for (int t = 0; t < j.nt; t++)
            (indexed ? j.istrides[t] : j.strides[t])[at] = ts[t]->strides[d] * (int64_t)axon_dtype_size(ts[t]->dtype);
        if (indexed) j.inner *= a->a.sizes[d];
    }
    if (j.nd == 0) j.sizes[j.nd++] = 1;
    int64_t outer = 1;
    for (int d = 0; d < j.nd; d++) outer *= j.sizes[d];
    if (!a->put) {
        axon_parallel_for(ex->pool, 0, outer, AXON_KERNEL_GRAIN / 4, adv_index_range, &j);
        return AXON_OK;
    }
    if (a->accumulate) {
        axon_dtype_t dt = a->a.dtype;
        j.ct = axon_dtype_is_floating(dt)                           ? AXON_FLOAT64
               : dt == AXON_COMPLEX64 || dt == AXON_COMPLEX128      ? AXON_COMPLEX128
                                                                    : AXON_INT64;
        j.to_ct = axon_convert_get(dt, j.ct);
        j.from_ct = axon_convert_get(j.ct, dt);
    }
    /* One range per thread at most: each range walks every indexed position, so smaller ones cut dst's rows into
     * shorter runs (a bfloat16 [4096, 256] += of 2048 rows ran 32-element pieces, 2x the time of 128-element ones). */
    const int64_t threads = axon_pool_size(ex->pool);
    int64_t grain = AXON_KERNEL_GRAIN / 4 / j.inner, even = (outer + threads - 1) / threads;
    grain = grain > even ? grain : even;
    axon_parallel_for(ex->pool, 0, outer, grain < 1 ? 1 : grain, adv_put_range, &j);
    return AXON_OK;
}

static axon_status_t adv_launch(axon_stream_t s, struct adv_args *a, const axon_tensor_t *indices, int n,
                                const int64_t *sizes, const int64_t *strides) {
    const char *op = a->put ? "index_put_" : "index";
    char sa[160], sb[160], what[64];
    if (n < 1 || n > AXON_INDEX_MAX_INDICES || !indices || !sizes || !strides)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %d index tensors (indices, sizes, strides %s); one launch takes "
                         "1 to %d", op, n, indices && sizes && strides ? "given" : "not all given",
                         AXON_INDEX_MAX_INDICES);
    if (a->b.dtype != a->a.dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): dtypes %s and %s differ", op, axon_dtype_name(a->a.dtype),
                         axon_dtype_name(a->b.dtype));
    const axon_tensor_t *shaped[1 + AXON_INDEX_MAX_INDICES];
    shaped[0] = &a->b;
    for (int k = 0; k < n; k++) {
        axon_status_t st = axon_ix_check_index(&indices[k], op);
        if (st != AXON_OK) return st;
        if (sizes[k] < 0)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: sizes[%d] = %" PRId64 " is negative", op, k, sizes[k]);
        a->idx[k] = indices[k], a->sizes[k] = sizes[k], a->strides[k] = strides[k];
        shaped[1 + k] = &indices[k];
    }
    for (int t = 0; t <= n; t++) {
        int same = shaped[t]->ndim == a->a.ndim;
        for (int d = 0; same && d < a->a.ndim; d++) same = shaped[t]->sizes[d] == a->a.sizes[d];
        if (!same) {
            if (t) snprintf(what, sizeof what, "indices[%d]", t - 1);
            else snprintf(what, sizeof what, "%s", a->put ? "values" : "src");
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): %s shape %s does not match the iteration shape %s", op,
                             what, axon_shape_format(shaped[t], sa, sizeof sa),
                             axon_shape_format(&a->a, sb, sizeof sb));
        }
    }
    /* index_put's determinism rests on this: where dst moves, the indices do not (the caller's broadcast gives it). */
    for (int d = 0; a->put && d < a->a.ndim; d++)
        for (int k = 0; k < n; k++)
            if (a->a.sizes[d] > 1 && a->a.strides[d] != 0 && indices[k].strides[d] != 0)
                return axon_fail(AXON_ERROR_INVALID_ARG, "index_put_(): indices[%d] varies along dimension %d, where "
                                 "dst has stride %" PRId64 " (expected 0: an indexed dimension)", k, d,
                                 a->a.strides[d]);
    a->n = n;
    int64_t numel = axon_tensor_numel(&a->a);
    if (numel == 0) return AXON_OK;
    axon_launch_t l = {adv_kernel, a, sizeof *a, op, (uint64_t)numel * (2 * axon_dtype_size(a->a.dtype) + 8u * n)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_index(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *src,
                                const axon_tensor_t *indices, int n, const int64_t *sizes, const int64_t *strides) {
    axon_status_t st;
    if ((st = axon_kernel_check_dst(out, "index: out")) != AXON_OK) return st;
    if ((st = axon_kernel_check_src(src, "index: src")) != AXON_OK) return st;
    struct adv_args a;
    memset(&a, 0, sizeof a);
    a.a = *out, a.b = *src;
    return adv_launch(s, &a, indices, n, sizes, strides);
}

axon_status_t axon_kernel_index_put(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *values,
                                    const axon_tensor_t *indices, int n, const int64_t *sizes,
                                    const int64_t *strides, int accumulate) {
    axon_status_t st;
    /* dst has 0 strides by design (the indexed dimensions), so it passes the source checks, not the dst ones. */
    if ((st = axon_kernel_check_src(dst, "index_put_: dst")) != AXON_OK) return st;
    if ((st = axon_kernel_check_src(values, "index_put_: values")) != AXON_OK) return st;
    struct adv_args a;
    memset(&a, 0, sizeof a);
    a.a = *dst, a.b = *values, a.put = 1, a.accumulate = accumulate != 0;
    return adv_launch(s, &a, indices, n, sizes, strides);
}
