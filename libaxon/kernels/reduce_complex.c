/* Complex products and log-sum-exps (axon_kernel_reduce's PROD and LOGSUMEXP with a complex out), which do not split
 * into a reduction of each part: each output is one sequential pass over its elements in complex128 (PyTorch CPU's
 * accumulation type for both complex dtypes), in in's memory order, outputs shared out over the pool, so a result
 * never depends on the thread count.
 *   PROD: the product by c10::complex's formula (complex_c128.h), from 1, in RC_LANES interleaved partial products
 *     (element k of an output into lane k % RC_LANES), multiplied together in lane order at the end: one chain of
 *     dependent multiplies per output ran at 12.7x torch CPU's time on [64, 4096] complex64 rows, 8 scalar lanes
 *     2.6x, the lanes as vectors 2.0x (CPU multiplies in complex64).
 *   LOGSUMEXP: PyTorch's composite form, max-shifted by the largest real part m (0 when m is infinite):
 *     log(sum exp(z - m)) + m, a NaN real part making m NaN. Two passes over each output's elements.
 * Complex reductions are rare, and an output's elements are not split over threads: a whole-tensor product runs on
 * one. */
#include <math.h>
#include <string.h>

#include "complex_c128.h"
#include "internal.h"
#include "kernels_impl.h"
#include "reduce_impl.h"

/* Elements converted to complex128 at a time. */
#define RC_CHUNK 256
/* PROD's independent partial products per output. */
#define RC_LANES 32
typedef double rc_vec_t __attribute__((vector_size(RC_LANES * sizeof(double))));

typedef struct rc_args {
    int lse;                     /* LOGSUMEXP, else PROD */
    axon_iter_t kept;            /* in over the kept dims (reduced sizes 1), out */
    axon_iter_t red;             /* in over the reduced dims (kept sizes 1) */
    int64_t red_shift;           /* red.data[0] - in's data, bytes */
    axon_convert_fn load, store; /* in -> complex128, complex128 -> out */
} rc_args_t;

typedef struct rc_walk {
    const rc_args_t *a;
    int pass;                    /* LOGSUMEXP: 0 finds m, 1 sums */
    double m;
    axon_c128_t acc;             /* LOGSUMEXP's sum */
    double re[RC_LANES], im[RC_LANES];   /* PROD's partial products */
    int64_t k;                   /* PROD: elements so far */
} rc_walk_t;

/* One element of PROD into lane k % RC_LANES (k: the output's elements so far). */
static inline void rc_prod_one(rc_walk_t *w, axon_c128_t x) {
    const int l = (int)(w->k++ % RC_LANES);
    const axon_c128_t r = axon_c128_mul(axon_c128(w->re[l], w->im[l]), x);
    w->re[l] = r.re, w->im[l] = r.im;
}

/* PROD of the n elements of x into w's lanes (the full rounds of lanes vectorize across them). */
AXON_CLONES static void rc_prod(rc_walk_t *w, const axon_c128_t *x, int64_t n) {
    int64_t j = 0;
    for (; j < n && w->k % RC_LANES != 0; j++) rc_prod_one(w, x[j]);
    /* a round of lanes as GCC vectors (four AVX-512 vectors each for the real and the imaginary parts, independent
     * chains enough to hide the multiplies' latency): GCC left the plain loop scalar, 3 cycles per element */
    rc_vec_t ar, ai;
    memcpy(&ar, w->re, sizeof ar), memcpy(&ai, w->im, sizeof ai);
    for (; j + RC_LANES <= n; j += RC_LANES, w->k += RC_LANES) {
        rc_vec_t xr, xi;
        for (int l = 0; l < RC_LANES; l++) xr[l] = x[j + l].re, xi[l] = x[j + l].im;
        const rc_vec_t re = ar * xr - ai * xi;
        ai = ar * xi + ai * xr, ar = re;
    }
    memcpy(w->re, &ar, sizeof ar), memcpy(w->im, &ai, sizeof ai);
    for (; j < n; j++) rc_prod_one(w, x[j]);
}

static void rc_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    rc_walk_t *w = ctx;
    const rc_args_t *a = w->a;
    axon_c128_t buf[RC_CHUNK];
    const int64_t step = stride[0] * (int64_t)a->red.esize[0];
    for (int64_t i = 0; i < n; i += RC_CHUNK) {
        const int64_t m = n - i < RC_CHUNK ? n - i : RC_CHUNK;
        a->load((char *)buf, 1, ptr[0] + i * step, stride[0], m);
        if (!a->lse) {
            rc_prod(w, buf, m);
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
        for (int l = 0; l < RC_LANES; l++) w.re[l] = 1.0;
        axon_iter_t it = a->red;
        it.data[0] = axon_iter_at(&a->kept, 0, o) + a->red_shift;
        axon_iter_runs(&it, 0, it.numel, rc_run, &w);
        axon_c128_t r = axon_c128(w.re[0], w.im[0]);
        for (int l = 1; l < RC_LANES; l++) r = axon_c128_mul(r, axon_c128(w.re[l], w.im[l]));
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
    a.load = axon_convert_get(in->dtype, AXON_COMPLEX128);
    a.store = axon_convert_get(AXON_COMPLEX128, out->dtype);
    const uint64_t bytes = (uint64_t)axon_tensor_numel(in) * axon_dtype_size(in->dtype) * (a.lse ? 2u : 1u) +
                           (uint64_t)axon_tensor_numel(out) * axon_dtype_size(out->dtype);
    axon_launch_t l = {rc_kernel, &a, sizeof a, axon_reduce_op_name(op), bytes};
    return axon_stream_launch(s, &l);
}
