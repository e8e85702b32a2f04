/* Complex products and log-sum-exps (axon_kernel_reduce's PROD and LOGSUMEXP with a complex out), which do not split
 * into a reduction of each part: each output is one sequential pass over its elements in complex128 (PyTorch CPU's
 * accumulation type for both complex dtypes), in in's memory order, outputs shared out over the pool, so a result
 * never depends on the thread count.
 *   PROD: the product by c10::complex's formula (complex_c128.h), from 1, in RC_LANES interleaved partial products
 *     (element k of an output into lane k % RC_LANES), multiplied together in lane order at the end: one chain of
 *     dependent multiplies per output ran at 12.7x torch CPU's time on [64, 4096] complex64 rows, 8 scalar lanes
 *     2.6x, the lanes as vectors 2.0x (CPU multiplies in complex64). With AVX2, contiguous complex64 and complex128
 *     are read in place and split into real and imaginary vectors as they load (rc_rounds_avx2).
 *   LOGSUMEXP: PyTorch's composite form, max-shifted by the largest real part m (0 when m is infinite):
 *     log(sum exp(z - m)) + m, a NaN real part making m NaN. Two passes over each output's elements.
 * Complex reductions are rare, and an output's elements are not split over threads: a whole-tensor product runs on
 * one. */
#include <math.h>
#include <string.h>

#include "complex_c128.h"
#include "cpu.h"
#include "internal.h"
#include "kernels_impl.h"
#include "reduce_impl.h"

/* Elements converted to complex128 at a time. */
#define RC_CHUNK 256
/* PROD's independent partial products per output: with AVX2, 4 vectors of real parts and 4 of imaginary ones, which
 * with their temporaries fit 16 registers (32 lanes spilled there: 4.0x torch CPU's time on [64, 4096] complex64
 * rows on a Zen 3). */
#define RC_LANES 16 /* rc_rounds_avx2 names its 4 groups */

typedef struct rc_args {
    int lse;                     /* LOGSUMEXP, else PROD */
    axon_iter_t kept;            /* in over the kept dims (reduced sizes 1), out */
    axon_iter_t red;             /* in over the reduced dims (kept sizes 1) */
    int64_t red_shift;           /* red.data[0] - in's data, bytes */
    axon_dtype_t in_dtype;
    axon_convert_fn load, store; /* in -> complex128, complex128 -> out */
} rc_args_t;

typedef struct rc_walk {
    const rc_args_t *a;
    int pass;                    /* LOGSUMEXP: 0 finds m, 1 sums */
    double m;
    axon_c128_t acc;             /* LOGSUMEXP's sum */
    axon_c128_t lane[RC_LANES];  /* PROD's partial products */
    int64_t k;                   /* PROD: elements so far */
} rc_walk_t;

/* One element of PROD into lane k % RC_LANES (k: the output's elements so far). */
static inline void rc_prod_one(rc_walk_t *w, axon_c128_t x) {
    const int l = (int)(w->k++ % RC_LANES);
    w->lane[l] = axon_c128_mul(w->lane[l], x);
}

/* Element i of x: complex64 (c64) or complex128, as complex128. */
static inline axon_c128_t rc_at(const char *x, int64_t i, int c64) {
    if (!c64) return ((const axon_c128_t *)x)[i];
    const axon_c64_t z = ((const axon_c64_t *)x)[i];
    return axon_c128(z.re, z.im);
}

/* PROD of the n elements of x (complex64 when c64, else complex128) into w's lanes: the elements before the next
 * full round of lanes one by one, then the full rounds by `rounds`, then the rest one by one. */
typedef void (*rc_rounds_fn)(rc_walk_t *w, const char *x, int64_t rounds, int c64);

static void rc_prod_with(rc_walk_t *w, const char *x, int64_t n, int c64, rc_rounds_fn rounds) {
    const int64_t es = c64 ? (int64_t)sizeof(axon_c64_t) : (int64_t)sizeof(axon_c128_t);
    int64_t j = 0;
    for (; j < n && w->k % RC_LANES != 0; j++) rc_prod_one(w, rc_at(x, j, c64));
    const int64_t r = (n - j) / RC_LANES;
    if (r > 0) rounds(w, x + j * es, r, c64);
    w->k += r * RC_LANES;
    for (j += r * RC_LANES; j < n; j++) rc_prod_one(w, rc_at(x, j, c64));
}

/* Full rounds in scalars, lane by lane (the same operations as the AVX2 form, so the same bits). */
static void rc_rounds_portable(rc_walk_t *w, const char *x, int64_t rounds, int c64) {
    for (int64_t j = 0; j < rounds * RC_LANES; j += RC_LANES)
        for (int l = 0; l < RC_LANES; l++) w->lane[l] = axon_c128_mul(w->lane[l], rc_at(x, j + l, c64));
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define RC_TARGET __attribute__((target("avx2")))

/* Full rounds with real and imaginary parts in separate vectors: each group of 4 elements arrives as two vectors of
 * (re, im) pairs, whose unpacks give (re0, re2, re1, re3) and (im0, im2, im1, im3), so position q of group g's
 * vectors is lane 4g + RC_SWAP(q). The multiply is axon_c128_mul's formula lane by lane, so the bits are the
 * portable form's. Lanes kept interleaved (a multiply by (cr, cr, dr, dr) and by the swapped pairs) took 1.3x torch
 * CPU's time on [64, 4096] complex64 rows on a Zen 3, with 9 vector operations for 2 elements against 10 for 4 here;
 * GCC's generic vectors of them converted complex64 through the stack (2.1x). */
#define RC_SWAP(q) ((q) == 1 ? 2 : (q) == 2 ? 1 : (q))

/* Elements e..e+3 of x into group (pr, pi). */
#define RC_GROUP(pr, pi, e)                                                                                        \
    do {                                                                                                           \
        __m256d y0, y1;                                                                                            \
        if (c64) {                                                                                                 \
            const axon_c64_t *z = (const axon_c64_t *)x + (e);                                                     \
            y0 = _mm256_cvtps_pd(_mm_loadu_ps(&z[0].re)), y1 = _mm256_cvtps_pd(_mm_loadu_ps(&z[2].re));            \
        } else {                                                                                                   \
            const axon_c128_t *z = (const axon_c128_t *)x + (e);                                                   \
            y0 = _mm256_loadu_pd(&z[0].re), y1 = _mm256_loadu_pd(&z[2].re);                                        \
        }                                                                                                          \
        const __m256d yr = _mm256_unpacklo_pd(y0, y1), yi = _mm256_unpackhi_pd(y0, y1);                            \
        const __m256d r = _mm256_sub_pd(_mm256_mul_pd(pr, yr), _mm256_mul_pd(pi, yi));                             \
        pi = _mm256_add_pd(_mm256_mul_pd(pr, yi), _mm256_mul_pd(pi, yr));                                          \
        pr = r;                                                                                                    \
    } while (0)

/* (the groups are named variables: as an array GCC kept them on the stack, a store and a reload in every chain) */
RC_TARGET static void rc_rounds_avx2(rc_walk_t *w, const char *x, int64_t rounds, int c64) {
    double re[RC_LANES], im[RC_LANES];
    for (int l = 0; l < RC_LANES; l++) {
        const int lane = l / 4 * 4 + RC_SWAP(l % 4);
        re[l] = w->lane[lane].re, im[l] = w->lane[lane].im;
    }
    __m256d pr0 = _mm256_loadu_pd(re), pr1 = _mm256_loadu_pd(re + 4), pr2 = _mm256_loadu_pd(re + 8);
    __m256d pr3 = _mm256_loadu_pd(re + 12), pi0 = _mm256_loadu_pd(im), pi1 = _mm256_loadu_pd(im + 4);
    __m256d pi2 = _mm256_loadu_pd(im + 8), pi3 = _mm256_loadu_pd(im + 12);
    for (int64_t j = 0; j < rounds * RC_LANES; j += RC_LANES) {
        RC_GROUP(pr0, pi0, j);
        RC_GROUP(pr1, pi1, j + 4);
        RC_GROUP(pr2, pi2, j + 8);
        RC_GROUP(pr3, pi3, j + 12);
    }
    _mm256_storeu_pd(re, pr0), _mm256_storeu_pd(re + 4, pr1), _mm256_storeu_pd(re + 8, pr2);
    _mm256_storeu_pd(re + 12, pr3), _mm256_storeu_pd(im, pi0), _mm256_storeu_pd(im + 4, pi1);
    _mm256_storeu_pd(im + 8, pi2), _mm256_storeu_pd(im + 12, pi3);
    for (int l = 0; l < RC_LANES; l++) {
        const int lane = l / 4 * 4 + RC_SWAP(l % 4);
        w->lane[lane] = axon_c128(re[l], im[l]);
    }
}

RC_TARGET static void rc_rounds_avx2_c64(rc_walk_t *w, const char *x, int64_t rounds, int c64) {
    (void)c64;
    rc_rounds_avx2(w, x, rounds, 1);
}

RC_TARGET static void rc_rounds_avx2_c128(rc_walk_t *w, const char *x, int64_t rounds, int c64) {
    (void)c64;
    rc_rounds_avx2(w, x, rounds, 0);
}
#endif

static void rc_prod(rc_walk_t *w, const char *x, int64_t n, int c64) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (axon_cpu_features() & AXON_CPU_AVX2) {
        rc_prod_with(w, x, n, c64, c64 ? rc_rounds_avx2_c64 : rc_rounds_avx2_c128);
        return;
    }
#endif
    rc_prod_with(w, x, n, c64, rc_rounds_portable);
}

static void rc_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    rc_walk_t *w = ctx;
    const rc_args_t *a = w->a;
    /* PROD of contiguous complex64 or complex128 reads them in place: a pass converting them into buf first took a
     * third of the time */
    if (!a->lse && stride[0] == 1 && (a->in_dtype == AXON_COMPLEX64 || a->in_dtype == AXON_COMPLEX128)) {
        rc_prod(w, ptr[0], n, a->in_dtype == AXON_COMPLEX64);
        return;
    }
    axon_c128_t buf[RC_CHUNK];
    const int64_t step = stride[0] * (int64_t)a->red.esize[0];
    for (int64_t i = 0; i < n; i += RC_CHUNK) {
        const int64_t m = n - i < RC_CHUNK ? n - i : RC_CHUNK;
        a->load((char *)buf, 1, ptr[0] + i * step, stride[0], m);
        if (!a->lse) {
            rc_prod(w, (const char *)buf, m, 0);
            continue;
        }
        for (int64_t j = 0; j < m; j++) {
            const axon_c128_t z = buf[j];
            if (w->pass == 0) w->m = isnan(z.re) || z.re > w->m ? z.re : w->m;   /* a NaN, once taken, stays */
            else w->acc = axon_c128_add(w->acc, axon_c128_exp(axon_c128(z.re - w->m, z.im)));
        }
    }
}

static void rc_outputs(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const rc_args_t *a = ctx;
    for (int64_t o = begin; o < end; o++) {
        rc_walk_t w;
        memset(&w, 0, sizeof w);
        w.a = a, w.m = -INFINITY;
        for (int l = 0; l < RC_LANES; l++) w.lane[l] = axon_c128(1.0, 0.0);
        axon_iter_t it = a->red;
        it.data[0] = axon_iter_at(&a->kept, 0, o) + a->red_shift;
        axon_iter_runs(&it, 0, it.numel, rc_run, &w);
        axon_c128_t r = w.lane[0];
        for (int l = 1; l < RC_LANES; l++) r = axon_c128_mul(r, w.lane[l]);
        if (a->lse) {
            if (isinf(w.m)) w.m = 0.0;
            w.pass = 1;
            axon_iter_runs(&it, 0, it.numel, rc_run, &w);
            r = axon_c128_log(w.acc);
            r.re += w.m;
        }
        a->store(axon_iter_at(&a->kept, 1, o), 1, (const char *)&r, 1, 1);
    }
}

static axon_status_t rc_kernel(const void *args, const axon_exec_t *ex) {
    const rc_args_t *a = args;
    const int64_t grain = AXON_KERNEL_GRAIN / (a->red.numel > 0 ? 16 * a->red.numel : 1);
    axon_parallel_for(ex->pool, 0, a->kept.numel, grain < 1 ? 1 : grain, rc_outputs, (void *)a);
    return AXON_OK;
}

axon_status_t axon_rd_complex(axon_stream_t s, axon_reduce_op_t op, const axon_tensor_t *out,
                              const axon_tensor_t *in) {
    rc_args_t a;
    memset(&a, 0, sizeof a);
    a.lse = op == AXON_REDUCE_LOGSUMEXP;
    if (axon_tensor_numel(out) == 0) return AXON_OK;
    axon_tensor_t kv = *in, rv = *in;
    for (int i = 0; i < in->ndim; i++) {
        const int reduced = out->sizes[i] == 1 && in->sizes[i] != 1;
        kv.sizes[i] = reduced ? 1 : in->sizes[i];
        rv.sizes[i] = reduced ? in->sizes[i] : 1;
    }
    const axon_tensor_t *kt[2] = {&kv, out}, *rt[1] = {&rv};
    axon_iter_init(&a.kept, 2, kt, 1);
    axon_iter_init(&a.red, 1, rt, 1);
    a.red_shift = (int64_t)(a.red.data[0] - (char *)in->data);
    a.in_dtype = in->dtype;
    a.load = axon_convert_get(in->dtype, AXON_COMPLEX128);
    a.store = axon_convert_get(AXON_COMPLEX128, out->dtype);
    const uint64_t bytes = (uint64_t)axon_tensor_numel(in) * axon_dtype_size(in->dtype) * (a.lse ? 2u : 1u) +
                           (uint64_t)axon_tensor_numel(out) * axon_dtype_size(out->dtype);
    axon_launch_t l = {rc_kernel, &a, sizeof a, axon_reduce_op_name(op), bytes};
    return axon_stream_launch(s, &l);
}
