/* axon_kernel_matmul: checks and launch, then the plan the command runs on the stream's worker.
 *
 * The plan brings every operand to a form a BLAS call takes: a 3-D (batch, rows, cols) view in the compute dtype
 * (float32 for float32/16/bf16, float64, int64 for the integer dtypes) whose matrices are row- or column-major. What
 * already is one is used in place, with a transpose flag; anything else (another dtype, a broadcast or negative
 * stride, a gap-free but permuted layout) is copied by the copy kernel's body into host scratch that the worker
 * thread keeps for its next product (gemm_scratch.c).
 * A column-major out is computed as out^T = b^T @ a^T, so it needs no scratch either.
 *
 * The work is then cut into blocks of out (whole matrices when the batch alone spreads evenly over the pool,
 * otherwise strips along the longer of m and n) and each pool participant multiplies its blocks with a
 * single-threaded library call. Before its call a block gets out = beta * out + bias_scale * bias when there is a
 * bias, so the library can finish with beta = 1 and the bias costs one pass over a block that is in cache. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "axon/gemm.h"
#include "dtype.h"
#include "gemm_impl.h"
#include "internal.h"
#include "kernels_impl.h"

struct gemm_args {
    axon_tensor_t out, a, b, bias; /* out, a, b as 3-D views (a 2-D operand gets a batch of 1) */
    int has_bias;
    double alpha, beta, bias_scale;
    axon_gemm_epilogue_fn epi;     /* NULL = none; its context follows this struct, at GEMM_ARGS_BYTES */
    size_t epi_size;
};
#define GEMM_ARGS_BYTES ((sizeof(struct gemm_args) + 15) / 16 * 16)

/* One operand ready for the library: matrices row-major (trans 0) or column-major (trans 1) with row stride ld. */
typedef struct gemm_mat {
    char *data;
    int64_t sb;                  /* batch stride in elements; 0 when one matrix serves the whole batch */
    int trans;
    int64_t ld;
} gemm_mat_t;

struct gemm_job {
    axon_dtype_t cdt;            /* compute dtype: FLOAT32, FLOAT64 or INT64 */
    size_t es;
    axon_dtype_t adt, bdt;       /* of a and b as prepared: cdt, or 16-bit where the kernel widens them (gemm_avx512.c
                                  * both, gemm_skinny.c's dot form b) */
    int64_t m, n, k;             /* of the product the library computes (swapped for a column-major out) */
    gemm_mat_t a, b;
    char *c;
    int64_t csb, ldc;
    const char *bias;            /* NULL = none; in cdt */
    int64_t bias_stride;
    int bias_on_rows;            /* 1 when out was swapped: the bias index is then the row */
    double alpha, beta, bias_scale;
    int64_t bm, bn, nbm, nbn;    /* each matrix of out is cut into nbm x nbn blocks of (at most) bm x bn */
    atomic_int failed;           /* a library call could not allocate */
    int naive_ok;                /* out shares no memory with a or b: small blocks may run gemm_naive_ */
    axon_gemm_epilogue_fn epi;   /* the launch's epilogue, run per block of finished rows where a path knows them */
    const void *epi_ctx;
    int epi_rows;                /* the product's rows are out's own (no scratch, not swapped): blocks may run epi */
};

static int64_t gemm_min(int64_t x, int64_t y) { return x < y ? x : y; }

/* Row-major (trans 0) or column-major (trans 1) with ld fitting BLAS's int: 1, else 0 (copy it). A stride of a
 * dimension of size 1 is never used, so such a dimension takes whatever stride makes the layout valid. */
static int gemm_layout(int64_t r, int64_t c, int64_t s0, int64_t s1, int *trans, int64_t *ld) {
    if ((c == 1 || s1 == 1) && (r == 1 || s0 >= c)) {
        *trans = 0;
        *ld = r == 1 ? c : s0;
    } else if ((r == 1 || s0 == 1) && (c == 1 || s1 >= r)) {
        *trans = 1;
        *ld = c == 1 ? r : s1;
    } else {
        return 0;
    }
    return *ld <= INT32_MAX;
}

static axon_tensor_t gemm_contiguous(void *data, axon_dtype_t dt, int ndim, const int64_t *sizes) {
    axon_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dt;
    t.ndim = ndim;
    for (int64_t i = ndim - 1, step = 1; i >= 0; i--) {
        t.sizes[i] = sizes[i];
        t.strides[i] = step;
        step *= sizes[i];
    }
    return t;
}

/* The scratch out (batch, rows, cols) at data: row-major, or column-major matrices when col_major. */
static axon_tensor_t gemm_scratch_out(void *data, axon_dtype_t dt, const int64_t *sizes, int col_major) {
    axon_tensor_t t = gemm_contiguous(data, dt, 3, sizes);
    if (col_major) t.strides[1] = 1, t.strides[2] = sizes[1];
    return t;
}

/* Fill m from the 3-D view t, copying t into a new scratch buffer (*scratch, which the caller frees) if needed.
 * OUT_OF_MEMORY if that buffer cannot be had. A column-major t that only needs another dtype (a Linear's bf16 or
 * f16 weight, w.t()) is converted into a column-major scratch: read in its own order, it converts at streaming
 * speed, where a row-major copy would read it a column at a time (4 x 768 @ 768 x 768 float16 on that path, 2026-12-03:
 * 700-830 -> 172 us; on a CPU with AVX-512 such products now take gemm_avx512.c instead). */
static axon_status_t gemm_prepare(gemm_mat_t *m, const axon_tensor_t *t, axon_dtype_t cdt, axon_pool_t pool,
                                  int slot, void **scratch) {
    int64_t bsz = t->sizes[0], r = t->sizes[1], c = t->sizes[2];
    const int fits = gemm_layout(r, c, t->strides[1], t->strides[2], &m->trans, &m->ld);
    if (t->dtype == cdt && fits) {
        m->data = t->data;
        m->sb = bsz == 1 ? 0 : t->strides[0];
        return AXON_OK;
    }
    const int col_major = fits && m->trans;
    int64_t nb = bsz == 1 || t->strides[0] == 0 ? 1 : bsz; /* a broadcast batch is copied once */
    int64_t sizes[3] = {nb, r, c};
    size_t es = axon_dtype_size(cdt);
    if ((*scratch = axon_gemm_scratch(slot, (size_t)(nb * r * c) * es)) == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: %" PRId64 " x %" PRId64 " x %" PRId64
                         " %s scratch for an operand", nb, r, c, axon_dtype_name(cdt));
    axon_tensor_t dst = gemm_contiguous(*scratch, cdt, 3, sizes), src = *t;
    if (col_major) dst.strides[1] = 1, dst.strides[2] = r;
    src.sizes[0] = nb;
    axon_copy_execute(&dst, &src, pool);
    m->data = *scratch;
    m->sb = nb == 1 ? 0 : r * c;
    m->trans = col_major;
    m->ld = col_major ? r : c;
    return AXON_OK;
}

/* Block C (mi x nj at c, row stride ldc) = beta * C + bias_scale * bias (no bias: beta * C); beta 0 does not read
 * C. Runs before the library call when there is a bias, and instead of it when k == 0. */
#define GEMM_PREPASS(T, NAME)                                                                                      \
    static void NAME(const struct gemm_job *j, T *c, int64_t i0, int64_t mi, int64_t j0, int64_t nj) {             \
        const T *bias = (const T *)j->bias;                                                                         \
        T beta = (T)j->beta, bs = (T)j->bias_scale;                                                                 \
        for (int64_t i = 0; i < mi; i++) {                                                                          \
            T *row = c + i * j->ldc;                                                                                \
            for (int64_t q = 0; q < nj; q++) {                                                                      \
                T bv = bias ? bs * bias[(j->bias_on_rows ? i0 + i : j0 + q) * j->bias_stride] : 0;                   \
                row[q] = (beta == 0 ? 0 : beta * row[q]) + bv;                                                      \
            }                                                                                                       \
        }                                                                                                           \
    }
GEMM_PREPASS(float, gemm_prepass_f32)
GEMM_PREPASS(double, gemm_prepass_f64)

/* The complex prepass: real beta and bias_scale, a complex bias. */
#define GEMM_PREPASS_COMPLEX(T, R, NAME)                                                                           \
    static void NAME(const struct gemm_job *j, T *c, int64_t i0, int64_t mi, int64_t j0, int64_t nj) {             \
        const T *bias = (const T *)j->bias;                                                                         \
        R beta = (R)j->beta, bs = (R)j->bias_scale;                                                                 \
        for (int64_t i = 0; i < mi; i++) {                                                                          \
            T *row = c + i * j->ldc;                                                                                \
            for (int64_t q = 0; q < nj; q++) {                                                                      \
                T bv = {0, 0};                                                                                      \
                if (bias) {                                                                                         \
                    bv = bias[(j->bias_on_rows ? i0 + i : j0 + q) * j->bias_stride];                                \
                    bv.re *= bs, bv.im *= bs;                                                                       \
                }                                                                                                   \
                row[q].re = (beta == 0 ? 0 : beta * row[q].re) + bv.re;                                             \
                row[q].im = (beta == 0 ? 0 : beta * row[q].im) + bv.im;                                             \
            }                                                                                                       \
        }                                                                                                           \
    }
GEMM_PREPASS_COMPLEX(axon_c64_t, float, gemm_prepass_c64)
GEMM_PREPASS_COMPLEX(axon_c128_t, double, gemm_prepass_c128)

/* Integers wrap: through uint64_t, so an overflow is not undefined. */
static void gemm_prepass_i64(const struct gemm_job *j, int64_t *c, int64_t i0, int64_t mi, int64_t j0, int64_t nj) {
    const int64_t *bias = (const int64_t *)j->bias;
    uint64_t beta = (uint64_t)(int64_t)j->beta, bs = (uint64_t)(int64_t)j->bias_scale;
    for (int64_t i = 0; i < mi; i++) {
        int64_t *row = c + i * j->ldc;
        for (int64_t q = 0; q < nj; q++) {
            uint64_t bv = bias ? bs * (uint64_t)bias[(j->bias_on_rows ? i0 + i : j0 + q) * j->bias_stride] : 0;
            row[q] = (int64_t)((beta == 0 ? 0 : beta * (uint64_t)row[q]) + bv);
        }
    }
}

/* Products of at most this many multiply-adds run as plain loops (gemm_naive_): a library call's own checks and
 * set-up cost more (bmm of [8, 1, 4] and [8, 4, 1]: 8 MKL calls, 1.8 us against CPU's 0.8, whose bmm has the same
 * loops below 400). */
#define GEMM_NAIVE_MAX 512

/* c = alpha op(a) op(b) + beta c for one small block, each element's products summed in order of k. */
#define GEMM_NAIVE(T, NAME)                                                                                         \
    static void NAME(const struct gemm_job *j, int64_t mi, int64_t nj, const T *a, const T *b, double beta, T *c) { \
        const int64_t lda = j->a.ld, ldb = j->b.ld, k = j->k;                                                       \
        const int64_t ars = j->a.trans ? 1 : lda, acs = j->a.trans ? lda : 1;                                       \
        const int64_t brs = j->b.trans ? 1 : ldb, bcs = j->b.trans ? ldb : 1;                                       \
        const T alpha = (T)j->alpha, bt = (T)beta;                                                                  \
        for (int64_t i = 0; i < mi; i++)                                                                            \
            for (int64_t q = 0; q < nj; q++) {                                                                      \
                T acc = 0;                                                                                          \
                for (int64_t p = 0; p < k; p++) acc += a[i * ars + p * acs] * b[p * brs + q * bcs];                 \
                T *out = c + i * j->ldc + q;                                                                        \
                *out = alpha * acc + (beta == 0 ? (T)0 : bt * *out);                                                \
            }                                                                                                       \
    }
GEMM_NAIVE(float, gemm_naive_f32)
GEMM_NAIVE(double, gemm_naive_f64)

/* Each index is one block of out: batch, then block row, then block column. */
static void gemm_blocks(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct gemm_job *j = ctx;
    const int64_t es = (int64_t)j->es, aes = (int64_t)axon_dtype_size(j->adt), per = j->nbm * j->nbn;
    for (int64_t u = begin; u < end; u++) {
        int64_t z = u / per, bi = u % per / j->nbn, bj = u % j->nbn;
        int64_t i0 = bi * j->bm, mi = gemm_min(j->bm, j->m - i0), j0 = bj * j->bn, nj = gemm_min(j->bn, j->n - j0);
        char *c = j->c + (z * j->csb + i0 * j->ldc + j0) * es;
        /* Row block i0 of op(A): rows of A, or columns when A is stored transposed; likewise columns of op(B). */
        const char *a = j->a.data + (z * j->a.sb + (j->a.trans ? i0 : i0 * j->a.ld)) * aes;
        const char *b = j->b.data + (z * j->b.sb + (j->b.trans ? j0 * j->b.ld : j0)) * (int64_t)axon_dtype_size(j->bdt);
        double beta = j->beta;
        if (j->bias || j->k == 0) {
            if (j->cdt == AXON_FLOAT32) gemm_prepass_f32(j, (float *)c, i0, mi, j0, nj);
            else if (j->cdt == AXON_FLOAT64) gemm_prepass_f64(j, (double *)c, i0, mi, j0, nj);
            else if (j->cdt == AXON_COMPLEX64) gemm_prepass_c64(j, (axon_c64_t *)c, i0, mi, j0, nj);
            else if (j->cdt == AXON_COMPLEX128) gemm_prepass_c128(j, (axon_c128_t *)c, i0, mi, j0, nj);
            else gemm_prepass_i64(j, (int64_t *)c, i0, mi, j0, nj);
            beta = 1;
            if (j->k == 0) continue;
        }
        int rc = 0;
        const int naive = j->naive_ok && j->adt == j->cdt && j->bdt == j->cdt && mi * nj * j->k <= GEMM_NAIVE_MAX;
        if (naive && j->cdt == AXON_FLOAT32)
            gemm_naive_f32(j, mi, nj, (const float *)a, (const float *)b, beta, (float *)c);
        else if (naive && j->cdt == AXON_FLOAT64)
            gemm_naive_f64(j, mi, nj, (const double *)a, (const double *)b, beta, (double *)c);
        else if (j->adt != j->cdt) /* both bfloat16: MKL's mixed product (gemm_kernel's GEMM_16_MKL) */
            rc = axon_gemm_bf16(j->a.trans, j->b.trans, mi, nj, j->k, (float)j->alpha, (const uint16_t *)a, j->a.ld,
                                (const uint16_t *)b, j->b.ld, (float)beta, (float *)c, j->ldc);
        else if (j->bdt != j->cdt)
            rc = axon_gemm_skinny_16(j->bdt, j->a.trans, mi, nj, j->k, (float)j->alpha, (const float *)a, j->a.ld, b,
                                     j->b.ld, (float)beta, (float *)c, j->ldc);
        else if (j->cdt == AXON_FLOAT32)
            rc = axon_gemm_f32(j->a.trans, j->b.trans, mi, nj, j->k, (float)j->alpha, (const float *)a, j->a.ld,
                               (const float *)b, j->b.ld, (float)beta, (float *)c, j->ldc);
        else if (j->cdt == AXON_FLOAT64)
            rc = axon_gemm_f64(j->a.trans, j->b.trans, mi, nj, j->k, j->alpha, (const double *)a, j->a.ld,
                               (const double *)b, j->b.ld, beta, (double *)c, j->ldc);
        else if (j->cdt == AXON_COMPLEX64)
            rc = axon_gemm_c64(j->a.trans, j->b.trans, mi, nj, j->k, j->alpha, a, j->a.ld, b, j->b.ld, beta, c,
                               j->ldc);
        else if (j->cdt == AXON_COMPLEX128)
            rc = axon_gemm_c128(j->a.trans, j->b.trans, mi, nj, j->k, j->alpha, a, j->a.ld, b, j->b.ld, beta, c,
                                j->ldc);
        else
            axon_gemm_i64(j->a.trans, j->b.trans, mi, nj, j->k, (int64_t)j->alpha, (const int64_t *)a, j->a.ld,
                          (const int64_t *)b, j->b.ld, (int64_t)beta, (int64_t *)c, j->ldc);
        if (rc != 0) atomic_store(&j->failed, 1);
    }
}

/* Cut out into blocks: whole matrices when the batch divides evenly over the pool, else strips of the longer side
 * (multiples of 16 rows or columns, so each library call keeps full vector tiles). Products under ~1 MFLOP run as
 * one block on the worker: waking the pool would cost more. Returns the number of blocks; *grain for the loop. */
static int64_t gemm_split(struct gemm_job *j, int64_t bsz, int nparts, int64_t *grain) {
    j->bm = j->m, j->bn = j->n, j->nbm = j->nbn = 1;
    double flop = 2.0 * (double)bsz * (double)j->m * (double)j->n * (double)(j->k > 0 ? j->k : 1);
    if (nparts > 1 && bsz % nparts != 0 && flop >= 1e6) {
        int64_t *len = j->m >= j->n ? &j->bm : &j->bn, *cnt = j->m >= j->n ? &j->nbm : &j->nbn, full = *len;
        int64_t piece = (full + nparts - 1) / nparts;
        piece = (piece + 15) / 16 * 16;
        *len = piece;
        *cnt = (full + piece - 1) / piece;
    }
    int64_t blocks = bsz * j->nbm * j->nbn;
    *grain = flop < 1e6 ? blocks : 1;
    return blocks;
}

/* bfloat16/float16 through oneDNN (gemm_onednn.c): the operands stay in their dtype. Each pool participant runs
 * single-threaded oneDNN calls on its blocks: a range of whole matrices when the batch spreads evenly (or is large),
 * else strips of each matrix, of rows unless there are too few. One single-threaded call per participant measured
 * faster than one call with an OpenMP team of the pool's size (which also leaves OpenMP threads spinning beside the
 * pool's), and it keeps a single thread runtime busy at a time. Every block of a plan has one of at
 * most two shapes (the full one and the tail), and both primitives are made before any block runs, so a shape oneDNN
 * does not offer is found while out is still untouched. */
struct gemm_lowp_job {
    axon_gemm_lowp_t op;         /* the whole product; blocks offset its pointers */
    int64_t zb;                  /* matrices per block when the batch is split, else 0 */
    int64_t piece, nstrips;      /* strip length along m (split_m) or n, and strips per matrix */
    int split_m;
    atomic_int failed;
};

/* Block u of j as a single-threaded oneDNN call. */
static axon_gemm_lowp_t gemm_lowp_block(const struct gemm_lowp_job *j, int64_t u) {
    axon_gemm_lowp_t o = j->op;
    const size_t es = axon_dtype_size(o.dtype);
    int64_t z0, i0 = 0, j0 = 0;
    o.nthreads = 1;
    if (j->zb > 0) {
        z0 = u * j->zb;
        o.bsz = gemm_min(j->zb, j->op.bsz - z0);
    } else {
        z0 = u / j->nstrips;
        int64_t q = u % j->nstrips * j->piece;
        if (j->split_m) i0 = q, o.m = gemm_min(j->piece, o.m - q);
        else j0 = q, o.n = gemm_min(j->piece, o.n - q);
        o.bsz = 1;
    }
    o.a = (const char *)o.a + (size_t)(z0 * o.a_bs + i0 * o.a_rs) * es;
    o.b = (const char *)o.b + (size_t)(z0 * o.b_bs + j0 * o.b_cs) * es;
    o.c = (char *)o.c + (size_t)(z0 * o.c_bs + i0 * o.ldc + j0) * es;
    if (o.bias) o.bias += j0;
    return o;
}

static void gemm_lowp_blocks(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct gemm_lowp_job *j = ctx;
    for (int64_t u = begin; u < end; u++) {
        axon_gemm_lowp_t o = gemm_lowp_block(j, u);
        if (axon_gemm_lowp(&o) != 0) atomic_store(&j->failed, 1);
    }
}

/* Cut j->op into blocks, the choice-th way, and return how many; 0 when that way repeats an earlier one.
 * 0: whole matrices per participant when the batch spreads evenly (or is much larger than the pool), else strips of
 *    rows, or of columns when there are too few rows for each part to get two 16-row tiles (strips of rows keep
 *    out's rows whole, and oneDNN's brgemm kernels, the AMX ones included, take a dense out only);
 * 1: strips of rows, when 0 cut columns (oneDNN 2.6 offers a strided out with a bias only as a reference kernel);
 * 2: one block on the stream's worker. Products under ~1 MFLOP are one block: waking the pool would cost more. */
static int64_t gemm_lowp_cut(struct gemm_lowp_job *j, int choice, int nparts) {
    const int64_t bsz = j->op.bsz, m = j->op.m, n = j->op.n;
    const double flop = 2.0 * (double)bsz * (double)m * (double)n * (double)j->op.k;
    const int one = nparts == 1 || flop < 1e6, whole = bsz % nparts == 0 || bsz >= 4 * nparts;
    const int rows = m >= n || m >= 32 * nparts;
    if ((choice == 0 && (one || whole)) || choice == 2) {
        if (choice == 2 && one) return 0;
        int64_t parts = choice == 2 || one ? 1 : nparts;
        j->zb = (bsz + parts - 1) / parts;
        return (bsz + j->zb - 1) / j->zb;
    }
    if (choice == 1 && (one || whole || rows || m < 2)) return 0;
    j->zb = 0;
    j->split_m = choice == 1 || rows;
    int64_t full = j->split_m ? m : n;
    j->piece = (full + nparts - 1) / nparts;
    if (j->piece >= 64) j->piece = (j->piece + 15) / 16 * 16; /* whole 16-row (or column) tiles, but keep balance */
    j->nstrips = (full + j->piece - 1) / j->piece;
    return bsz * j->nstrips;
}

static void gemm_lowp_strides(const gemm_mat_t *mt, int64_t *bs, int64_t *rs, int64_t *cs) {
    *bs = mt->sb;
    *rs = mt->trans ? 1 : mt->ld;
    *cs = mt->trans ? mt->ld : 1;
}

/* float32 goes to oneDNN too where its brgemm kernels measured faster than single-threaded OpenBLAS 0.3.21 (Sapphire
 * Rapids, per pool participant: 5-20% with B transposed, a Linear's weight, e.g. 256 x 256 @ 256 x 1024 1080 us
 * against 1510 us; about even otherwise; 9 to 32 rows 0.6-0.8x OpenBLAS's time): single matrices with more than 8
 * rows and columns (with 8 or fewer gemm_skinny.c is faster still) and at least 200^3 multiply-adds (~100 us). A
 * new shape costs 70-150 us to create its primitive (then 0.1 us to find), so smaller products, whose shapes a
 * cache of 64 may not keep, would pay more than they gain. Products above 1024^3 stay with OpenBLAS: on 2 threads
 * (benchmarks/ops.py, 2026-11-30) oneDNN took 55 ms at 2048^3 and 445 ms at 4096^3, OpenBLAS 52 and 404 (11-29) and
 * 58 and 429 (11-30, CPU 54 and 446 then): no gain there, a loss in one run. Batched float32 stays with OpenBLAS
 * (not measured). */
static int gemm_avx_wanted(int64_t bsz, int64_t m, int64_t n, int64_t k, int b_trans);

static int gemm_lowp_takes(axon_dtype_t dt, int64_t bsz, int64_t m, int64_t n, int64_t k, int b_trans) {
    if (dt == AXON_BFLOAT16 || dt == AXON_FLOAT16) return 1;
    if (gemm_avx_wanted(bsz, m, n, k, b_trans)) return 0;
    const double madds = (double)m * (double)n * (double)k;
    return dt == AXON_FLOAT32 && bsz == 1 && m > 8 && n > 8 && madds >= 8e6 && madds <= 1024.0 * 1024.0 * 1024.0;
}

/* float32 against MKL (when it is the BLAS; a throwaway script timing torch.mm against torch CPU, 2 threads, medians
 * of 3 interleaved rounds, 2026-11-30): MKL was 2-7% faster than oneDNN 2.6 from 2^28 multiply-adds (GPT-2's lm_head
 * 512 x 256 x 8192 0.97 against 0.99 of CPU's time, its gradient 512 x 8192 x 256 0.96 against 1.03, 1024^3 1.02
 * against 1.07) and at 2^27 with B row-major (512 x 1024 x 256: 1.05 against 1.13); oneDNN kept the edge at 2^27
 * with B stored transposed, a Linear's weight (0.99 against 1.07). Those were AVX-512 hosts. On an AVX2 one (AMD
 * EPYC, 2026-12-01, an ad-hoc script timing a @ b against torch CPU on one thread, medians of 7 x 20 calls) MKL's
 * sequential calls took 1.42x CPU's time for 256^3 with B row-major and 1.44x for 128 x 256 x 256, oneDNN 0.90 and
 * 1.02: there oneDNN keeps B row-major below 2^27 multiply-adds too. */
static int gemm_f32_blas_beats_onednn(int b_transposed, int64_t m, int64_t n, int64_t k) {
#ifdef AXON_HAVE_MKL
    const double madds = (double)m * (double)n * (double)k, big = 128.0 * 1024.0 * 1024.0;
    if (b_transposed) return madds > big;
    return axon_gemm_avx512_available() || madds >= big;
#else
    (void)b_transposed, (void)m, (void)n, (void)k;
    return 0;
#endif
}

/* Runs g through oneDNN and returns 1, with *st set; returns 0, having changed nothing, when oneDNN does not take
 * this product (not built in, another dtype, k == 0, out not row-major in its dtype, a shape it does not offer). */
static int gemm_lowp_try(const struct gemm_args *g, const axon_exec_t *ex, axon_status_t *st) {
    axon_dtype_t dt = g->out.dtype;
    const int64_t bsz = g->out.sizes[0], m = g->out.sizes[1], n = g->out.sizes[2], k = g->a.sizes[2];
    int ctrans;
    int64_t ldc;
    /* float32 with A stored transposed (a Linear's weight gradient, x^T @ dy): oneDNN 2.6 ran these at half
     * OpenBLAS's rate (2 threads, 2026-11-30: 8192 x 512 x 256 with A (512, 8192) 12.8 ms against CPU's 6.4; 256 x
     * 512 x 1024 1.66 ms against 0.84). */
    const int a_transposed = g->a.strides[2] != 1 && k > 1, b_transposed = g->b.strides[2] != 1 && n > 1;
    if (!gemm_lowp_takes(dt, bsz, m, n, k, b_transposed) || k == 0 || !axon_gemm_lowp_available() ||
        (dt == AXON_FLOAT32 && (a_transposed || gemm_f32_blas_beats_onednn(b_transposed, m, n, k))) ||
        !gemm_layout(m, n, g->out.strides[1], g->out.strides[2], &ctrans, &ldc) || ctrans ||
        (bsz > 1 && (g->a.strides[0] < 0 || g->b.strides[0] < 0 || g->out.strides[0] < 0))) /* oneDNN: none < 0 */
        return 0;
    void *sa = NULL, *sb = NULL;
    float *bias = NULL;
    int taken = 1;
    gemm_mat_t a = {0}, b = {0};
    struct gemm_lowp_job j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.failed, 0);
    if ((*st = gemm_prepare(&a, &g->a, dt, ex->pool, AXON_GEMM_SCRATCH_A, &sa)) != AXON_OK) goto done;
    if ((*st = gemm_prepare(&b, &g->b, dt, ex->pool, AXON_GEMM_SCRATCH_B, &sb)) != AXON_OK) goto done;
    if (g->has_bias) {
        if ((bias = malloc((size_t)n * sizeof *bias)) == NULL) {
            *st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: %" PRId64 " float32 bias scratch", n);
            goto done;
        }
        axon_tensor_t t = gemm_contiguous(bias, AXON_FLOAT32, 1, &n);
        axon_copy_execute(&t, &g->bias, ex->pool);
        for (int64_t q = 0; q < n; q++) bias[q] = (float)g->bias_scale * bias[q];
    }
    axon_gemm_lowp_t *o = &j.op;
    o->dtype = dt;
    o->nthreads = 1;
    o->bsz = bsz, o->m = m, o->n = n, o->k = k;
    o->a = a.data, o->b = b.data, o->c = g->out.data;
    gemm_lowp_strides(&a, &o->a_bs, &o->a_rs, &o->a_cs);
    gemm_lowp_strides(&b, &o->b_bs, &o->b_rs, &o->b_cs);
    o->c_bs = g->out.strides[0], o->ldc = ldc;
    o->alpha = (float)g->alpha, o->beta = (float)g->beta;
    o->bias = bias;
    const int nparts = axon_pool_size(ex->pool);
    int rc = 1;
    int64_t blocks = 0;
    for (int choice = 0; choice < 3 && rc == 1; choice++) {
        if ((blocks = gemm_lowp_cut(&j, choice, nparts)) == 0) continue;
        /* Block 0 has the full shape and the last block the tail's. */
        axon_gemm_lowp_t first = gemm_lowp_block(&j, 0), last = gemm_lowp_block(&j, blocks - 1);
        rc = axon_gemm_lowp_prepare(&first);
        if (rc == 0) rc = axon_gemm_lowp_prepare(&last);
    }
    if (rc == 1) {
        taken = 0;
        goto done;
    }
    if (rc == 0) axon_parallel_for(ex->pool, 0, blocks, 1, gemm_lowp_blocks, &j);
    if (rc != 0 || atomic_load(&j.failed))
        *st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: oneDNN %s matmul (%" PRId64 " x %" PRId64 " x %" PRId64
                        " x %" PRId64 ") failed: out of memory, or a oneDNN error", axon_dtype_name(dt), bsz, m, k, n);
done:
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_A, sa);
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_B, sb);
    free(bias);
    return taken;
}

/* bfloat16 on AMX tiles (gemm_amx.c), ahead of oneDNN 2.6, whose AMX kernels measured at about half its rate. With
 * more rows than columns B is packed once, its panels spread over the pool, and then each participant takes blocks of
 * mc rows of out; otherwise each participant packs and multiplies its own range of B's 32-column panels, every row of
 * out (one pass over the pool, and no participant packs a panel another uses). Blocks: a block of packed A (mc rows,
 * the whole depth) within 1 MiB of L2; depth slices of 512, so that the slice of a B panel the tile loop reads for
 * each of the block's 32-row units (32 KiB, of the 48 KiB L1 of every AMX CPU so far) stays in L1 while A's units
 * stream from L2 past it (gemm_amx.c's streaming loads; a throwaway harness of the tile loop on this project's
 * Sapphire Rapids host, partial sums included: 2611 GFLOP/s per core that way, 2076 without the hint, 2358 with
 * slices of 256, 1812 with slices of 1024); the block's partial sums between slices (float32, exact) within 256 KiB,
 * which sets how many panels a group multiplies slice by slice. Single matrices of at least 32 rows and columns and
 * a depth of 32 or more (fewer rows would leave tile rows empty) and more than 128^3 multiply-adds; oneDNN keeps the
 * smallest (64^3 2.8 against 4.6 us, 2026-11-30) and mid-size ones split by rows (GEMM_AMX_ROWS_MIN). Against oneDNN
 * 2.6 on 2 threads (an ad-hoc harness timing axon_kernel_matmul, best of 5, 2026-12-03): 1024^3 1478 -> 2183 GFLOP/s,
 * 2048^3 (AMX before too) 2257 -> 2595, a 1024 x 1024 x 4096 Linear 1690 -> 2539, 128 x 768 x 768 1188 -> 1892; with
 * slices of 512 and the prefetch (same harness, 2026-12-03 later): 1024^3 2554, 2048^3 2790-2893, 4096^3 2740. */
#define GEMM_AMX_TINY (128.0 * 128.0 * 128.0)
/* Split by rows (more rows than columns), the two passes over the pool cost more than oneDNN 2.6 loses from 256^3 to
 * 2^27 multiply-adds (2 threads, same harness: 512 x 512 x 128 1267-1385 GFLOP/s on oneDNN against 919-959, 512 x
 * 1024 x 256 1411-1707 against 1176-1273; past it 2048 x 512 x 256 1535-1565 against 1697-1774). */
#define GEMM_AMX_SMALL (256.0 * 256.0 * 256.0)
#define GEMM_AMX_ROWS_MIN (512.0 * 512.0 * 512.0)
#define GEMM_AMX_A_BYTES (1024 * 1024)
#define GEMM_AMX_MC_MAX 256
/* Past a depth of 4096 a block of A cannot stay in L2 anyway, and fewer rows per block only re-read B's panels from
 * L3 more often: 512 x 32000 x 1024 (a Llama LM head's input gradient) took 46 ms with the 32-row blocks the L2 rule
 * gave and 17 with 128 (torch CPU 15); 1024 x 16384 x 1024 29 -> 15, 2048 x 8192 x 2048 43 -> 26 ms. */
#define GEMM_AMX_MC_MIN 128
#define GEMM_AMX_KC 512
#define GEMM_AMX_PART_BYTES (256 * 1024)

/* Test and benchmark switches, read once (gemm_env_init): AXON_GEMM_AMX_BLOCKS=small gives the AMX tile kernel blocks
 * of 32 rows, depth slices of 64 and groups of two panels, so that the C test's small products cross every block
 * edge (a ctest entry runs it so); AXON_GEMM_F32=avx512 (below, gemm_avx_forced). */
static int gemm_amx_small_flag, gemm_avx_forced_flag;
static int gemm_env_is(const char *name, const char *value) {
    const char *e = getenv(name);
    return e != NULL && strcmp(e, value) == 0;
}
static void gemm_env_init(void) {
    gemm_amx_small_flag = gemm_env_is("AXON_GEMM_AMX_BLOCKS", "small");
    gemm_avx_forced_flag = gemm_env_is("AXON_GEMM_F32", "avx512");
}
static pthread_once_t gemm_env_once = PTHREAD_ONCE_INIT;
static int gemm_amx_small_blocks(void) {
    pthread_once(&gemm_env_once, gemm_env_init);
    return gemm_amx_small_flag;
}

struct gemm_amx_job {
    axon_gemm_amx_t op;
    const uint16_t *b;
    int64_t b_rs, b_cs;
    uint16_t *bp;                /* packed B */
    char *work;                  /* each participant's packed A and partial sums at work + slot * work_bytes */
    size_t work_bytes;
    int64_t npanels, per;        /* column split: panels per block */
};

static void gemm_amx_pack(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct gemm_amx_job *j = ctx;
    axon_gemm_amx_pack_b(j->bp, j->b, j->b_rs, j->b_cs, j->op.k, j->op.n, begin, end);
}

static void gemm_amx_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    struct gemm_amx_job *j = ctx;
    axon_gemm_amx_block(&j->op, begin * j->op.mc, gemm_min(j->op.m, end * j->op.mc), 0, j->npanels,
                        j->work + (size_t)slot * j->work_bytes);
}

static void gemm_amx_cols(void *ctx, int64_t begin, int64_t end, int slot) {
    struct gemm_amx_job *j = ctx;
    const int64_t p0 = begin * j->per, p1 = gemm_min(j->npanels, end * j->per);
    axon_gemm_amx_pack_b(j->bp, j->b, j->b_rs, j->b_cs, j->op.k, j->op.n, p0, p1);
    axon_gemm_amx_block(&j->op, 0, j->op.m, p0, p1, j->work + (size_t)slot * j->work_bytes);
}

/* The AMX kernels' bias: g's bias as float32, times bias_scale, into bias (n floats). */
static void gemm_amx_scaled_bias(const struct gemm_args *g, const axon_exec_t *ex, float *bias, int64_t n) {
    axon_tensor_t t = gemm_contiguous(bias, AXON_FLOAT32, 1, &n);
    axon_copy_execute(&t, &g->bias, ex->pool);
    for (int64_t q = 0; q < n; q++) bias[q] = (float)g->bias_scale * bias[q];
}

/* Few rows times a Linear's weight on AMX (gemm_amx.c, axon_gemm_amx_few): the weight is read once, as stored, and
 * the columns of out are split over the pool by 16. Products with too few rows for gemm_amx_try's tiles went to
 * oneDNN 2.6 at 1.2-1.8x torch CPU's time (16 x 4096 x 4096 1881 us against 1051, 2026-12-03). */
#define GEMM_AMX_FEW_ROWS 64

static void gemm_amx_few_cols(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    axon_gemm_amx_few(ctx, begin * 16, end * 16);
}

static int gemm_amx_few_try(const struct gemm_args *g, const axon_exec_t *ex, axon_status_t *st) {
    const int64_t bsz = g->out.sizes[0], m = g->out.sizes[1], n = g->out.sizes[2], k = g->a.sizes[2];
    int ctrans, btrans;
    int64_t ldc, ldw;
    if (g->out.dtype != AXON_BFLOAT16 || bsz != 1 || m < 2 || m > GEMM_AMX_FEW_ROWS || n % 16 != 0 || k % 32 != 0 ||
        k < 32 || !gemm_layout(k, n, g->b.strides[1], g->b.strides[2], &btrans, &ldw) || !btrans ||
        !gemm_layout(m, n, g->out.strides[1], g->out.strides[2], &ctrans, &ldc) || ctrans ||
        !axon_gemm_amx_available())
        return 0;
    axon_gemm_amx_few_t op;
    memset(&op, 0, sizeof op);
    float *bias = NULL;
    uint16_t *xp = axon_gemm_scratch(AXON_GEMM_SCRATCH_PACK, axon_gemm_amx_few_x_bytes(m, k));
    if (!xp || (g->has_bias && (bias = malloc((size_t)n * sizeof *bias)) == NULL)) {
        *st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: packed rows of a %" PRId64 " x %" PRId64 " x %" PRId64
                        " bfloat16 product", m, k, n);
        goto done;
    }
    if (bias) gemm_amx_scaled_bias(g, ex, bias, n);
    axon_gemm_amx_few_pack_x(xp, g->a.data, g->a.strides[1], g->a.strides[2], m, k);
    op.m = m, op.n = n, op.k = k;
    op.w = g->b.data, op.ldw = ldw;
    op.xp = xp;
    op.c = g->out.data, op.ldc = ldc;
    op.alpha = (float)g->alpha, op.beta = (float)g->beta;
    op.bias = bias;
    axon_parallel_for(ex->pool, 0, n / 16, 4, gemm_amx_few_cols, &op);
    *st = AXON_OK;
done:
    if (xp) axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, xp);
    free(bias);
    return 1;
}

/* Runs g on AMX and returns 1, with *st set; returns 0, having changed nothing, when it does not take g. */
static int gemm_amx_try(const struct gemm_args *g, const axon_exec_t *ex, axon_status_t *st) {
    const int64_t bsz = g->out.sizes[0], m = g->out.sizes[1], n = g->out.sizes[2], k = g->a.sizes[2];
    int ctrans;
    int64_t ldc;
    const double madds = (double)m * (double)n * (double)k;
    if (g->out.dtype != AXON_BFLOAT16 || bsz != 1 || m < 32 || n < 32 || k < 32 || madds <= GEMM_AMX_TINY ||
        (m > n && madds > GEMM_AMX_SMALL && madds <= GEMM_AMX_ROWS_MIN) ||
        !gemm_layout(m, n, g->out.strides[1], g->out.strides[2], &ctrans, &ldc) || ctrans ||
        !axon_gemm_amx_available())
        return 0;
    const int small = gemm_amx_small_blocks();
    const int nparts = axon_pool_size(ex->pool);
    const int64_t nch = axon_gemm_amx_chunks(k), npanels = (n + 31) / 32;
    int64_t mc = GEMM_AMX_A_BYTES / (nch * 2048) * 32;
    mc = small ? 32 : mc < GEMM_AMX_MC_MIN ? GEMM_AMX_MC_MIN : mc > GEMM_AMX_MC_MAX ? GEMM_AMX_MC_MAX : mc;
    const int by_rows = m > n;
    if (by_rows && (m + mc - 1) / mc < nparts) { /* too few blocks for the pool: smaller ones */
        int64_t even = (m + nparts - 1) / nparts;
        mc = even < 32 ? 32 : (even + 31) / 32 * 32;
    }
    const int64_t kc = small ? 64 : nch * 32 <= GEMM_AMX_KC ? nch * 32 : GEMM_AMX_KC;
    const int64_t per = (npanels + nparts - 1) / nparts, span = by_rows ? npanels : per;
    int64_t nb = small ? 2 : kc >= k ? span : GEMM_AMX_PART_BYTES / (((mc + 31) / 32) * 4096);
    nb = nb < 1 ? 1 : nb > span ? span : nb;
    struct gemm_amx_job j;
    memset(&j, 0, sizeof j);
    float *bias = NULL;
    j.work_bytes = axon_gemm_amx_work_bytes(mc, k, kc, nb); /* a multiple of 2 KiB */
    const size_t b_bytes = axon_gemm_amx_b_bytes(k, n);
    j.bp = axon_gemm_scratch(AXON_GEMM_SCRATCH_PACK, b_bytes + (size_t)nparts * j.work_bytes);
    j.work = j.bp ? (char *)j.bp + b_bytes : NULL;
    if (!j.bp || (g->has_bias && (bias = malloc((size_t)n * sizeof *bias)) == NULL)) {
        *st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: packed operands of a %" PRId64 " x %" PRId64 " x %" PRId64
                        " bfloat16 product", m, k, n);
        goto done;
    }
    if (bias) gemm_amx_scaled_bias(g, ex, bias, n);
    axon_gemm_amx_t *o = &j.op;
    o->m = m, o->n = n, o->k = k;
    o->a = g->a.data, o->a_rs = g->a.strides[1], o->a_cs = g->a.strides[2];
    o->bp = j.bp;
    o->c = g->out.data, o->ldc = ldc;
    o->alpha = (float)g->alpha, o->beta = (float)g->beta;
    o->bias = bias;
    o->mc = mc, o->kc = kc, o->nb = nb;
    j.b = g->b.data, j.b_rs = g->b.strides[1], j.b_cs = g->b.strides[2];
    j.npanels = npanels;
    if (by_rows) {
        axon_parallel_for(ex->pool, 0, npanels, 4, gemm_amx_pack, &j);
        axon_parallel_for(ex->pool, 0, (m + mc - 1) / mc, 1, gemm_amx_rows, &j);
    } else {
        j.per = per;
        axon_parallel_for(ex->pool, 0, (npanels + j.per - 1) / j.per, 1, gemm_amx_cols, &j);
    }
    *st = AXON_OK;
done:
    if (j.bp) axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, j.bp);
    free(bias);
    return 1;
}

/* float32 on gemm_avx512.c (ahead of oneDNN and OpenBLAS) for products of more than AXON_GEMM_SKINNY rows and
 * columns and at least GEMM_AVX_MIN, under GEMM_AVX_MAX multiply-adds per matrix (a single matrix is split over the
 * pool by rows when it has no fewer rows than columns: B packed in one pass over the pool, multiplied in a second). Measured against the previous path (two libaxon builds in one process, blocks of calls
 * alternated, medians; Sapphire Rapids, 2026-11-30, a machine loaded by other work). 2 workers with about one core,
 * 07:13: bmm 32 x 128 x 64 x 128 739 -> 655 us, Linears (weight (n, k), bias) 512 x 256 x 768 1479 -> 1365 us,
 * 64 x 512 x 2048 1370 -> 1080 us, 64 x 2048 x 512 1283 -> 1014 us; with about two cores, 07:16: 726 -> 672 us,
 * 719 -> 576 us, 689 -> 610 us, bmm 383 -> 328 us. benchmarks/ops.py (docs/benchmarks.md, "float32 GEMM: libaxon's
 * own AVX-512 kernel") agreed, but had 256^3 slower (median 123 -> 151 us; 1 worker in one process, 07:03: 271 ->
 * 222 us) and the 512 x 256 x 256 Linear even (248 -> 246 us; 574 -> 533 and 295 -> 316 in one process). On a quiet
 * machine (08:25, `torch.addmm` with a bias against torch CPU, medians of 3 interleaved rounds of 60 calls) the kernel
 * beat the oneDNN path those had: 512 x 256 x 256 1.37-1.41x -> 1.18x CPU's time, 256^3 1.76x -> 1.50x (OpenBLAS:
 * 1.62-1.67x and 1.91x), so every size from GEMM_AVX_MIN takes it. Left out: 512 x 1024 x 256 (2^27: 1780 -> 1868 us, 1.0-1.17x in five runs), 1024^3 and
 * 2048^3 (even on 1 and 2 workers: 14.1 -> 14.1 ms, 107 -> 106 ms), and under 2^20 (64^3 on 1 worker: OpenBLAS's
 * small-matrix path 4.0 against 4.9 us). Exactly 2^27 with fewer rows than columns is taken (GPT-2's 512 x 256 x 1024
 * MLP projection with its bias, quiet machine 07:50, against torch CPU: 1.14-1.20x -> 1.00-1.08x), with more rows not
 * (512 x 1024 x 256: 1.05-1.10x -> 1.19-1.28x).
 *
 * A single matrix (or each matrix of a batch that does not spread evenly over the pool) is shared out: B packed once,
 * its panels spread over the pool, then blocks of rows per participant; with few rows (packed A within
 * GEMM_AVX_COLS_BYTES, half an L2) A is packed once instead and each participant takes a range of B's panels. A batch
 * that spreads evenly runs whole matrices per participant. */
#define GEMM_AVX_COLS_BYTES ((size_t)1 << 20)
#define GEMM_AVX_MIN (1024.0 * 1024.0)
/* With MKL as the BLAS (through the pool, 2 threads, against torch CPU, medians of 2 interleaved rounds, 10:25-10:30
 * UTC 2026-11-30): MKL beat this kernel on batches (bmm 32 x 128 x 64 x 128 1.05 against 1.17 of CPU's time), below
 * 2^25 multiply-adds (128^3 1.16 against 2.02, 32 x 256 x 256 1.06 against 1.59, 256^3 1.01 against 1.23) and with B
 * row-major (256 x 512 x 256 0.98 against 1.22, 512 x 256 x 768 0.95 against 1.06-1.08, 64 x 2048 x 512 0.88 against
 * 1.16-1.18; lost 64 x 512 x 2048 1.06 against 1.00-1.02). This kernel keeps single Linears, B stored transposed, from
 * 2^25 (512 x 256 x 768 0.93 against oneDNN's 1.00, 64 x 512 x 2048 0.86 against 1.09, 64 x 2048 x 512 0.98 against
 * 1.10, 512 x 256 x 1024 1.01 against 1.07). */
#define GEMM_AVX_MIN_MKL (32.0 * 1024.0 * 1024.0)
#define GEMM_AVX_MAX (512.0 * 512.0 * 512.0)

/* AXON_GEMM_F32=avx512 sends every float32 product the kernel can take to it, whatever its size and whichever BLAS
 * was built in: its C test covers it that way, and a benchmark can compare the paths. Read once. */
static int gemm_avx_forced(void) {
    pthread_once(&gemm_env_once, gemm_env_init);
    return gemm_avx_forced_flag;
}

/* A single float32 product with more than AXON_GEMM_SKINNY and at most GEMM_AVX_BT_ROWS rows, B stored (n, k) (a
 * Linear's weight) and more than AXON_GEMM_SKINNY columns takes gemm_avx512_bt.c, which reads B in place, from
 * GEMM_AVX_MIN multiply-adds up whatever the BLAS. Against the paths these had (MKL below 2^25 and above 2^27
 * multiply-adds, the kernel's column panels between; F.linear with a bias, 2 threads, sync per call, medians of 7
 * rounds of 3 x 30 calls alternated in one process, 2026-12-06): 32 x 512 x 512 139 -> 82 us, 64 x 512 x 512 191 ->
 * 137, 32 x 768 x 768 291 -> 150, 128 x 768 x 768 607 -> 535, 64 x 512 x 2048 567 -> 495, 64 x 2048 x 512 598 -> 512,
 * 128 x 768 x 3072 2157 -> 1867, 64 x 4096 x 4096 8946 -> 6586, 200 x 1024 x 4096 5333 -> 5173; at 256 rows even
 * (256 x 512 x 512 509 -> 511, 256 x 384 x 384 263 -> 267, 256 x 768 x 768 1121 -> 1047), past them behind (512 x
 * 384 x 384 1.14x the row blocks' time). */
#define GEMM_AVX_BT_ROWS 256
/* Without AVX-512 gemm_avx2_bt.c takes them from 2 rows: gemm_skinny.c's dot form has only its portable loops there
 * (an AVX2 clone without fused multiply-adds) and MKL packs the weight. F.linear with a bias against torch CPU (AMD
 * EPYC Zen 3, 2 threads, best of 7 x 5-200 calls, 2026-12-07; before -> after): 64 x 512 x 2048 0.98 -> 0.70 of CPU's
 * time, 64 x 2048 x 512 0.85 -> 0.72, 32 x 768 x 768 0.94 -> 0.65, 128 x 768 x 768 1.02 -> 0.87, 256 x 512 x 512
 * 1.00 -> 1.01; 16 x 4096 x 4096 1.58 (17.9 ms) -> 0.29 (3.3 ms), 4 x 4096 x 4096 0.68 -> 0.30, 16 x 768 x 768 3.80
 * -> 0.56, 8 x 2048 x 2048 1.66 -> 0.39. One row stays a matrix-vector product (1 x 2048 x 2048 took 1.4x CPU's time
 * here, 7 of its 8 lanes idle), and past 256 rows the kernel measured even with MKL or behind (512 x 1024 x 256
 * 1.19x). */
static int gemm_avx_bt_shape(int64_t bsz, int64_t m, int64_t n, int b_trans) {
    const int64_t least = axon_gemm_avx512_available() ? AXON_GEMM_SKINNY + 1 : 2;
    return bsz == 1 && b_trans && m >= least && m <= GEMM_AVX_BT_ROWS && n > AXON_GEMM_SKINNY;
}

/* The kernel those products take: gemm_avx512_bt.c, or on a CPU without AVX-512 gemm_avx2_bt.c (the same scheme on
 * 8-lane vectors); NULL when neither runs here. */
typedef struct gemm_bt_kernel {
    int64_t (*groups)(int64_t m);
    int64_t (*blocks)(int64_t n);
    size_t (*a_bytes)(int64_t m, int64_t k);
    void (*pack_a)(const axon_gemm_avx512_t *op, float *ap, int64_t g0, int64_t g1);
    void (*cols)(const axon_gemm_avx512_t *op, const float *ap, int64_t b0, int64_t b1);
} gemm_bt_kernel_t;

static const gemm_bt_kernel_t gemm_bt_avx512 = {axon_gemm_avx512_bt_groups, axon_gemm_avx512_bt_blocks,
                                                axon_gemm_avx512_bt_a_bytes, axon_gemm_avx512_bt_pack_a,
                                                axon_gemm_avx512_bt_cols};
static const gemm_bt_kernel_t gemm_bt_avx2 = {axon_gemm_avx2_bt_groups, axon_gemm_avx2_bt_blocks,
                                              axon_gemm_avx2_bt_a_bytes, axon_gemm_avx2_bt_pack_a,
                                              axon_gemm_avx2_bt_cols};

static const gemm_bt_kernel_t *gemm_bt_kernel(void) {
    if (axon_gemm_avx512_available()) return &gemm_bt_avx512;
    return axon_gemm_avx2_bt_available() ? &gemm_bt_avx2 : NULL;
}

static int gemm_avx_wanted(int64_t bsz, int64_t m, int64_t n, int64_t k, int b_trans) {
    const double madds = (double)m * (double)n * (double)k;
    if (gemm_avx_forced())
        return (m > AXON_GEMM_SKINNY && n > AXON_GEMM_SKINNY && axon_gemm_avx512_available()) ||
               (gemm_avx_bt_shape(bsz, m, n, b_trans) && gemm_bt_kernel());
    if (gemm_avx_bt_shape(bsz, m, n, b_trans) && madds >= GEMM_AVX_MIN) return gemm_bt_kernel() != NULL;
    if (m <= AXON_GEMM_SKINNY || n <= AXON_GEMM_SKINNY || madds < GEMM_AVX_MIN) return 0;
    if (madds > GEMM_AVX_MAX) return 0;
#ifdef AXON_HAVE_MKL
    if (bsz > 1 || !b_trans || madds < GEMM_AVX_MIN_MKL) return 0;
#else
    (void)b_trans;
#endif
    if (bsz == 1 && m >= n && madds >= GEMM_AVX_MAX) return 0; /* split by rows: two passes over the pool */
    return axon_gemm_avx512_available();
}

struct gemm_avx_job {
    axon_gemm_avx512_t op;
    const struct gemm_job *j;    /* the product: operands (whole matrices per participant) and epilogue */
    int64_t z;                   /* rows and cols: the matrix of the batch being computed */
    atomic_int failed;
    float *bp, *ap, *local;      /* shared packed B (rows) or A (cols); each participant's scratch at local + slot * */
    size_t local_elems;          /* ... local_elems */
    int64_t np, units, blocks;   /* panels of B; rows: micro-panels of AXON_GEMM_AVX_MR rows, and their blocks */
    int64_t c0, c1;              /* rows: the chunk of panels packed in bp */
    unsigned char *bt_packed;    /* bt: per participant, whether its A (in local) is packed */
    const gemm_bt_kernel_t *bt;  /* bt: the kernel */
};

/* Few rows times a weight stored (n, k) (gemm_avx512_bt.c): each participant packs the whole of A into its own part
 * of the scratch when it takes its first blocks of columns, then computes them with B read in place. A packed once
 * and shared made every participant stream the packed rows the others had written, from their caches: Linears on 2
 * threads took 3-12% longer than with A packed twice (96 x 512 x 512 216 -> 209 us, 128 x 768 x 768 578 -> 539,
 * 64 x 2048 x 512 557 -> 508; both forms alternated in one process, medians of 7 rounds of 3 x 30 calls). */
static void gemm_avx_bt_cols(void *ctx, int64_t begin, int64_t end, int slot) {
    struct gemm_avx_job *j = ctx;
    float *ap = j->local + (size_t)slot * j->local_elems;
    if (!j->bt_packed[slot]) {
        j->bt->pack_a(&j->op, ap, 0, j->bt->groups(j->op.m));
        j->bt_packed[slot] = 1;
    }
    j->bt->cols(&j->op, ap, begin, end);
}

/* Matrices [begin, end) of the batch, each on this thread alone. */
static void gemm_avx_whole(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct gemm_avx_job *w = ctx;
    const struct gemm_job *j = w->j;
    axon_gemm_avx512_t o = w->op;
    const size_t aes = axon_dtype_size(j->adt), bes = axon_dtype_size(j->bdt);
    for (int64_t z = begin; z < end; z++) {
        o.a = j->a.data + (size_t)(z * j->a.sb) * aes;
        o.b = j->b.data + (size_t)(z * j->b.sb) * bes;
        o.c = (float *)j->c + z * j->csb;
        if (axon_gemm_avx512_run(&o) != 0) atomic_store(&w->failed, 1);
        else if (j->epi && j->epi_rows) j->epi(j->epi_ctx, z * j->m * j->n, (z + 1) * j->m * j->n);
    }
}

static void gemm_avx_pack_b(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct gemm_avx_job *j = ctx;
    axon_gemm_avx512_pack_b(&j->op, j->bp, j->c0, j->c1, j->c0 + begin, j->c0 + end);
}

static void gemm_avx_pack_a(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct gemm_avx_job *j = ctx;
    axon_gemm_avx512_pack_a(&j->op, j->ap, begin, end);
}

static void gemm_avx_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    struct gemm_avx_job *j = ctx;
    /* block b: the micro-panels of rows [b * units / blocks, (b + 1) * units / blocks) */
    const int64_t r0 = begin * j->units / j->blocks * AXON_GEMM_AVX_MR;
    const int64_t r1 = gemm_min(j->op.m, end * j->units / j->blocks * AXON_GEMM_AVX_MR);
    axon_gemm_avx512_rows(&j->op, j->bp, j->c0, j->c1, r0, r1, j->local + (size_t)slot * j->local_elems);
    /* The last chunk of panels finishes these rows: their epilogue runs now, on this thread, while they are in cache */
    const struct gemm_job *g = j->j;
    if (g->epi && g->epi_rows && j->c1 == j->np) {
        const int64_t base = j->z * g->m * g->n;
        g->epi(g->epi_ctx, base + r0 * g->n, base + r1 * g->n);
    }
}

static void gemm_avx_cols(void *ctx, int64_t begin, int64_t end, int slot) {
    struct gemm_avx_job *j = ctx;
    axon_gemm_avx512_cols(&j->op, j->ap, begin, end, j->local + (size_t)slot * j->local_elems);
}

/* The product j (k >= 1, float32): whole matrices per participant when the batch spreads evenly over the pool (or is
 * much larger than it), else matrix by matrix, each shared out over the pool. */
static axon_status_t gemm_avx_run(const struct gemm_job *j, int64_t bsz, axon_pool_t pool, int *epi_done) {
    const int64_t m = j->m, n = j->n, k = j->k, nbias = j->bias_on_rows ? m : n;
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    const int psize = axon_pool_size(pool), nparts = flop < 1e6 ? 1 : psize; /* smaller: one thread */
    const int whole = bsz > 1 && (bsz % psize == 0 || bsz >= 4 * psize || bsz * flop < 1e6);
    struct gemm_avx_job w;
    memset(&w, 0, sizeof w);
    atomic_init(&w.failed, 0);
    w.np = axon_gemm_avx512_panels(n);
    const gemm_bt_kernel_t *bt_kernel = gemm_bt_kernel();
    const int bt = gemm_avx_bt_shape(bsz, m, n, j->b.trans) && j->adt == AXON_FLOAT32 && j->bdt == AXON_FLOAT32 &&
                   bt_kernel != NULL;
    const int cols = !bt && m < n && w.np >= 2 * nparts && axon_gemm_avx512_a_bytes(m, k) <= GEMM_AVX_COLS_BYTES;
    const int64_t chunk = axon_gemm_avx512_chunk(k, n);
    /* each part 64-byte aligned, as the packed panels of B need; bt: a flag per participant, then their As */
    size_t shared = bt ? (size_t)nparts : cols ? axon_gemm_avx512_a_bytes(m, k) : axon_gemm_avx512_b_bytes(k, chunk);
    shared = (shared + 63) / 64 * 64;
    w.bt = bt ? bt_kernel : NULL;
    w.local_elems = bt ? w.bt->a_bytes(m, k) / sizeof(float)
                  : cols ? (size_t)k * AXON_GEMM_AVX_NR : axon_gemm_avx512_block_bytes(k) / sizeof(float);
    w.local_elems = (w.local_elems + 15) / 16 * 16;
    float *bias = NULL, *mem = NULL;
    if (!whole)
        mem = axon_gemm_scratch(AXON_GEMM_SCRATCH_PACK, shared + (size_t)nparts * w.local_elems * sizeof(float));
    if ((!whole && !mem) || (j->bias && (bias = malloc((size_t)nbias * sizeof *bias)) == NULL)) {
        if (mem) axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, mem);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: packed operands of a %" PRId64 " x %" PRId64 " x %" PRId64
                         " float32 product", m, k, n);
    }
    for (int64_t q = 0; bias && q < nbias; q++)
        bias[q] = (float)j->bias_scale * ((const float *)j->bias)[q * j->bias_stride];
    axon_gemm_avx512_t *o = &w.op;
    o->m = m, o->n = n, o->k = k;
    o->src = j->adt; /* the same as bdt on this path */
    o->ta = j->a.trans, o->tb = j->b.trans, o->lda = j->a.ld, o->ldb = j->b.ld, o->ldc = j->ldc;
    o->alpha = (float)j->alpha, o->beta = (float)j->beta;
    o->bias = j->bias_on_rows ? NULL : bias;
    o->bias_rows = j->bias_on_rows ? bias : NULL;
    w.j = j;
    if (whole) {
        axon_parallel_for(pool, 0, bsz, bsz * flop < 1e6 ? bsz : 1, gemm_avx_whole, &w);
        free(bias);
        if (atomic_load(&w.failed))
            return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: packed operands of a %" PRId64 " x %" PRId64 " x %"
                             PRId64 " float32 product", m, k, n);
        *epi_done = j->epi != NULL && j->epi_rows;
        return AXON_OK;
    }
    w.local = mem + shared / sizeof(float);
    if (bt) { /* bsz == 1 */
        o->a = j->a.data, o->b = j->b.data, o->c = (float *)j->c;
        w.bt_packed = (unsigned char *)mem;
        memset(w.bt_packed, 0, (size_t)nparts);
        const int64_t nb = w.bt->blocks(n);
        /* a few runs of adjacent blocks per participant: B's rows are read in order, balanced as threads come free */
        const int64_t grain = nparts > 1 ? (nb + 4 * nparts - 1) / (4 * nparts) : nb;
        axon_parallel_for(pool, 0, nb, grain, gemm_avx_bt_cols, &w);
        axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, mem);
        free(bias);
        return AXON_OK;
    }
    if (cols) w.ap = mem;
    else w.bp = mem;
    /* rows: blocks of at most about AXON_GEMM_AVX_MC rows, a multiple of nparts of them, each of whole micro-panels
     * and within one micro-panel of each other. Blocks of a fixed size (a multiple of 14 rows) left a short last one
     * and one participant with a block more: 512 x 384 x 384 (7 blocks of 70 rows and one of 22) at 1.28x torch
     * CPU's time on 2 threads against 1.00 on 1, 448 rows 1.32x; even blocks 1.14x and 1.19x (2026-12-06, the two
     * alternated in one process, medians of 5 x 40 calls). */
    const int64_t per_part = (int64_t)nparts * AXON_GEMM_AVX_MC, nblk = nparts * ((m + per_part - 1) / per_part);
    w.units = (m + AXON_GEMM_AVX_MR - 1) / AXON_GEMM_AVX_MR;
    w.blocks = gemm_min(nblk, w.units);
    const size_t aes = axon_dtype_size(j->adt), bes = axon_dtype_size(j->bdt);
    for (int64_t z = 0; z < bsz; z++) {
        w.z = z;
        o->a = j->a.data + (size_t)(z * j->a.sb) * aes;
        o->b = j->b.data + (size_t)(z * j->b.sb) * bes;
        o->c = (float *)j->c + z * j->csb;
        if (cols) {
            const int64_t nu = (m + AXON_GEMM_AVX_MR - 1) / AXON_GEMM_AVX_MR;
            /* small pieces: the pool hands them out as threads come free */
            axon_parallel_for(pool, 0, nu, nparts > 1 ? 1 : nu, gemm_avx_pack_a, &w);
            axon_parallel_for(pool, 0, w.np, nparts > 1 ? 1 : w.np, gemm_avx_cols, &w);
        } else {
            for (w.c0 = 0; w.c0 < w.np; w.c0 = w.c1) {
                w.c1 = gemm_min(w.np, w.c0 + chunk);
                axon_parallel_for(pool, 0, w.c1 - w.c0, nparts > 1 ? 1 : w.c1 - w.c0, gemm_avx_pack_b, &w);
                axon_parallel_for(pool, 0, w.blocks, nparts > 1 ? 1 : w.blocks, gemm_avx_rows, &w);
            }
        }
    }
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, mem);
    free(bias);
    *epi_done = j->epi != NULL && j->epi_rows && !cols;
    return AXON_OK;
}

/* bfloat16 and float16 on gemm_avx512.c, which widens them to float32 as it packs (out through a float32 scratch):
 * oneDNN 2.6 has no float16 kernel here at all, so float16 paid a conversion pass over both operands before the BLAS
 * call, and without AMX its bfloat16 kernels use VDPBF16PS, which on this project's Sapphire Rapids host without AMX
 * (2026-12-03, bench_peak) peaks at 172 GFLOP/s on 2 threads against 347 for float32 FMAs. With AMX oneDNN (and
 * gemm_amx.c before it) keep bfloat16, and so does oneDNN's matrix-vector kernel (one row or column) without AMX:
 * 1 x 768 x 768 44 us against 97 on this kernel. Few rows count too, since for them the conversion pass cost as much
 * as the product (float16 4 x 768 x 768 against torch CPU: 1.9x its time before, 0.7x on the kernel; 1 x 4096 x 4096
 * 21x, then 1.9x). Past GEMM_AVX_MAX multiply-adds per matrix, where float32 itself leaves the kernel for the BLAS,
 * the operands are widened into float32 scratch for the BLAS (MKL) instead: in benchmarks/ops.py float16 1024^3 took
 * 7.6 ms that way against 10.6 on the kernel, 2048^3 62 against 80 ms; alternated runs of both in one quarter hour
 * were closer (bfloat16 1024^3 8.3-9.7 against 7.9-10.6 ms, 2048^3 70-85 against 61-78, a 1024 x 1024 x 4096 Linear
 * 29-36 against 32-42). Figures: docs/benchmarks.md, "16-bit GEMM on the float32 kernel". */
enum { GEMM_16_LIBRARY, GEMM_16_KERNEL, GEMM_16_WIDENED, GEMM_16_DOT, GEMM_16_MKL };
/* Decode steps: up to this many rows times a Linear's weight (B stored (n, k)) stream B through gemm_skinny.c's dot
 * form, widened as it is read, with A widened into a small scratch. Against the kernel (or oneDNN for one bfloat16
 * row), alternated in one process while another job held the cores (2026-12-03 06:20 UTC, best of 2 x 7 x 30
 * F.linear calls): float16 1 x 4096 x 4096 4120 -> 2044 us, 4 x 768 x 768 197 -> 52, 8 x 4096 x 4096 6053 -> 5110;
 * bfloat16 1 x 768 x 768 90 -> 64 (oneDNN before), 4 x 4096 x 4096 4803 -> 2174, 8 x 768 x 3072 1264 -> 1080; at 16
 * rows it was even or behind (bfloat16 16 x 4096 x 4096 8752 -> 9726). On a host with AMX, bfloat16 decode steps
 * take it too: there oneDNN ran them at 1.2-2.1x torch CPU's time, this path at 0.38-0.73 for up to 4 rows and
 * 1.01-1.25 for 8 (an ad-hoc script, best of 9 x 30 F.linear calls with a bias, 2 threads, 2026-12-03 19:05 UTC:
 * 1 x 4096 x 4096 1180 -> 621 us, CPU 980; 4 x 4096 x 4096 2141 -> 730, CPU 997; 8 x 4096 x 4096 1853 -> 1276, CPU
 * 1020; 4 x 768 x 768 57 -> 27, CPU 47). */
#define GEMM_16_DOT_ROWS 8

/* Without AVX-512 (no kernel of this project's for 16-bit operands), bfloat16 products go to MKL's
 * cblas_gemm_bf16bf16f32, which widens as it packs: the library route widens both operands into float32 scratch
 * first, a pass over all of B for a product that may use each element of it only a few times. Zen 3, 2 threads,
 * F.linear with a bias (session 39; widened with kept scratch -> MKL): 4 x 768 x 768 205-225 -> 109 us, 16 x 4096 x
 * 4096 21.4-22.0 -> 11.0-11.2 ms, 4 x 4096 x 4096 8.5-11.1 -> 8.5-8.9 ms; 64 x 512 x 2048, 512 x 1024 x 256,
 * 128 x 768 x 3072 and squares even. MKL's matrix-vector products (one row or column: 1 x 768 x 768 83-86 -> 112-176
 * us) and its float16 products (4 x 768 x 768 198 -> 534 us, 128 x 768 x 3072 3.96 -> 5.62 ms) ran slower than
 * widening, so they keep it. */
static int gemm_16_mkl_wanted(axon_dtype_t dt, int64_t m, int64_t n) {
    return dt == AXON_BFLOAT16 && m > 1 && n > 1 && axon_gemm_bf16_available();
}

static int gemm_16bit_route(const struct gemm_args *g) {
    const axon_dtype_t dt = g->out.dtype;
    const int64_t m = g->out.sizes[1], n = g->out.sizes[2], k = g->a.sizes[2];
    if ((dt != AXON_BFLOAT16 && dt != AXON_FLOAT16) || g->a.dtype != dt || g->b.dtype != dt) return GEMM_16_LIBRARY;
    if (k < 1) return GEMM_16_LIBRARY;
    if (!axon_gemm_avx512_available()) return gemm_16_mkl_wanted(dt, m, n) ? GEMM_16_MKL : GEMM_16_LIBRARY;
    int btrans = 0;
    int64_t ld;
    if (m <= GEMM_16_DOT_ROWS && gemm_layout(k, n, g->b.strides[1], g->b.strides[2], &btrans, &ld) && btrans)
        return GEMM_16_DOT;
    if (dt == AXON_BFLOAT16 && axon_gemm_amx_available()) return GEMM_16_LIBRARY;
    if (dt == AXON_BFLOAT16 && (m == 1 || n == 1)) return GEMM_16_LIBRARY;
    const double madds = (double)m * (double)n * (double)k;
    return madds > GEMM_AVX_MAX && m > AXON_GEMM_SKINNY && n > AXON_GEMM_SKINNY ? GEMM_16_WIDENED : GEMM_16_KERNEL;
}

static axon_dtype_t gemm_compute_dtype(axon_dtype_t d) {
    if (d == AXON_FLOAT64 || d == AXON_COMPLEX64 || d == AXON_COMPLEX128) return d;
    return axon_dtype_is_floating(d) ? AXON_FLOAT32 : AXON_INT64;
}

/* A whole product of at most GEMM_SMALL_MAX multiply-adds (over the batch) in floating point, computed at once from
 * the strided views: no operand preparation, no library call. 16-bit dtypes accumulate in float32 and round once,
 * as their other paths do; float64 in double. bfloat16 [5, 5] @ [5, 5] went through oneDNN's primitive in 3.2 us,
 * against CPU's 1.0. */
#define GEMM_SMALL_MAX 512
/* 16-bit products start at oneDNN's or the AMX kernel's fixed ~3 us, so plain loops pay further (bfloat16 baddbmm
 * of [5, 5, 5] and [5, 5, 10], 1250 multiply-adds); at 16^3 the loop was the slower again. */
#define GEMM_SMALL_MAX_16 2048

#define GEMM_SMALL(T, W, LOAD, STORE, NAME)                                                                         \
    static void NAME(const struct gemm_args *g) {                                                                   \
        const axon_tensor_t *o = &g->out, *a = &g->a, *b = &g->b;                                                   \
        const T *ad = a->data, *bd = b->data, *bias = g->has_bias ? g->bias.data : NULL;                           \
        T *od = o->data;                                                                                            \
        const W alpha = (W)g->alpha, beta = (W)g->beta, bs = (W)g->bias_scale;                                      \
        for (int64_t z = 0; z < o->sizes[0]; z++)                                                                   \
            for (int64_t i = 0; i < o->sizes[1]; i++)                                                               \
                for (int64_t q = 0; q < o->sizes[2]; q++) {                                                         \
                    const T *ar = ad + z * a->strides[0] + i * a->strides[1];                                       \
                    const T *bc = bd + z * b->strides[0] + q * b->strides[2];                                       \
                    W acc = 0;                                                                                      \
                    for (int64_t p = 0; p < a->sizes[2]; p++)                                                       \
                        acc += LOAD(ar[p * a->strides[2]]) * LOAD(bc[p * b->strides[1]]);                           \
                    T *out = od + z * o->strides[0] + i * o->strides[1] + q * o->strides[2];                        \
                    W v = alpha * acc;                                                                              \
                    if (beta != 0) v += beta * LOAD(*out);                                                          \
                    if (bias) v += bs * LOAD(bias[q * g->bias.strides[0]]);                                         \
                    *out = STORE(v);                                                                                \
                }                                                                                                   \
    }
#define GEMM_SAME(x) (x)
GEMM_SMALL(float, float, GEMM_SAME, GEMM_SAME, gemm_small_f32)
GEMM_SMALL(double, double, GEMM_SAME, GEMM_SAME, gemm_small_f64)
GEMM_SMALL(uint16_t, float, axon_bf16_to_f32, axon_f32_to_bf16, gemm_small_bf16)
GEMM_SMALL(uint16_t, float, axon_f16_to_f32, axon_f32_to_f16, gemm_small_f16)
#undef GEMM_SAME

/* 1 if out's memory meets a's or b's (mm(x, y, out=x)): the plain loops would read what they already wrote, and the
 * libraries and kernels may write blocks of out while other threads still read (pack) the operands (MKL's small
 * products on an AVX2 EPYC cleared out first and returned zeros), so such a product is computed into scratch. */
static int gemm_out_meets_inputs(const struct gemm_args *g) {
    uintptr_t olo, ohi, lo, hi;
    axon_tensor_extent(&g->out, &olo, &ohi);
    axon_tensor_extent(&g->a, &lo, &hi);
    if (olo < hi && lo < ohi) return 1;
    axon_tensor_extent(&g->b, &lo, &hi);
    return olo < hi && lo < ohi;
}

/* meets: gemm_out_meets_inputs(g), which gemm_kernel computes once for both plain-loop paths. */
static int gemm_small_try(const struct gemm_args *g, int meets) {
    const axon_dtype_t dt = g->out.dtype;
    if (g->a.dtype != dt || g->b.dtype != dt || (g->has_bias && g->bias.dtype != dt)) return 0;
    const double work = (double)g->out.sizes[0] * (double)g->out.sizes[1] * (double)g->out.sizes[2] *
                        (double)g->a.sizes[2];
    const int half = dt == AXON_BFLOAT16 || dt == AXON_FLOAT16;
    if (work > (half ? GEMM_SMALL_MAX_16 : GEMM_SMALL_MAX) || meets) return 0;
    switch (dt) {
    case AXON_FLOAT32: gemm_small_f32(g); return 1;
    case AXON_FLOAT64: gemm_small_f64(g); return 1;
    case AXON_BFLOAT16: gemm_small_bf16(g); return 1;
    case AXON_FLOAT16: gemm_small_f16(g); return 1;
    default: return 0;
    }
}

/* The product of g; *epi_done = 1 when the path ran g's epilogue itself, block by block. */
static axon_status_t gemm_product(const struct gemm_args *g, const axon_exec_t *ex, int *epi_done) {
    axon_status_t st = AXON_OK;
    const int meets = gemm_out_meets_inputs(g);
    if (gemm_small_try(g, meets)) return AXON_OK;
    if (!meets && (gemm_amx_few_try(g, ex, &st) || gemm_amx_try(g, ex, &st))) return st;
    const int route16 = gemm_16bit_route(g), avx16 = route16 == GEMM_16_KERNEL, mkl16 = route16 == GEMM_16_MKL;
    if (route16 == GEMM_16_LIBRARY && !meets && gemm_lowp_try(g, ex, &st)) return st;
    const axon_dtype_t cdt = gemm_compute_dtype(g->out.dtype), adt = avx16 || mkl16 ? g->out.dtype : cdt;
    const axon_dtype_t bdt = avx16 || mkl16 || route16 == GEMM_16_DOT ? g->out.dtype : cdt;
    const int64_t bsz = g->out.sizes[0], m = g->out.sizes[1], n = g->out.sizes[2], k = g->a.sizes[2];
    void *sa = NULL, *sb = NULL, *sc = NULL, *sbias = NULL;
    struct gemm_job j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.failed, 0);
    j.cdt = cdt;
    j.es = axon_dtype_size(cdt);
    j.adt = adt, j.bdt = bdt;
    j.alpha = g->alpha, j.beta = g->beta, j.bias_scale = g->bias_scale;
    j.naive_ok = !meets;
    j.epi = g->epi;
    j.epi_ctx = (const char *)g + GEMM_ARGS_BYTES;
    gemm_mat_t a = {0}, b = {0};
    if (k > 0) { /* with k == 0 the operands are never read */
        if ((st = gemm_prepare(&a, &g->a, adt, ex->pool, AXON_GEMM_SCRATCH_A, &sa)) != AXON_OK) goto done;
        if ((st = gemm_prepare(&b, &g->b, bdt, ex->pool, AXON_GEMM_SCRATCH_B, &sb)) != AXON_OK) goto done;
    }
    int ctrans = 0;
    int64_t ldc = 0;
    /* A 16-bit product with few columns is computed transposed (into a column-major scratch), so that the kernel's
     * 32-column panels are not mostly padding. */
    const int sc_cm = avx16 && n <= AXON_GEMM_SKINNY && n < m;
    if (!meets && g->out.dtype == cdt && gemm_layout(m, n, g->out.strides[1], g->out.strides[2], &ctrans, &ldc)) {
        j.c = g->out.data;
        j.csb = g->out.strides[0];
    } else {
        if ((sc = axon_gemm_scratch(AXON_GEMM_SCRATCH_C, (size_t)(bsz * m * n) * j.es)) == NULL) {
            st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: %" PRId64 " x %" PRId64 " x %" PRId64
                           " %s scratch for out", bsz, m, n, axon_dtype_name(cdt));
            goto done;
        }
        axon_tensor_t t = gemm_scratch_out(sc, cdt, g->out.sizes, sc_cm);
        if (g->beta != 0) axon_copy_execute(&t, &g->out, ex->pool);
        j.c = sc, j.csb = m * n, ldc = sc_cm ? m : n, ctrans = sc_cm;
    }
    if (g->has_bias) {
        j.bias = g->bias.data;
        j.bias_stride = g->bias.strides[0];
        if (g->bias.dtype != cdt) {
            if ((sbias = malloc((size_t)n * j.es)) == NULL) {
                st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: %" PRId64 " %s bias scratch", n,
                               axon_dtype_name(cdt));
                goto done;
            }
            axon_tensor_t t = gemm_contiguous(sbias, cdt, 1, &n);
            axon_copy_execute(&t, &g->bias, ex->pool);
            j.bias = sbias, j.bias_stride = 1;
        }
    }
    j.ldc = ldc;
    j.k = k;
    j.epi_rows = !ctrans && !sc;
    if (!ctrans) {
        j.m = m, j.n = n, j.a = a, j.b = b;
    } else { /* out^T = b^T @ a^T: swap the operands and flip their transposes */
        j.m = n, j.n = m, j.a = b, j.b = a;
        j.a.trans ^= 1, j.b.trans ^= 1;
        j.bias_on_rows = 1;
    }
    int64_t grain, blocks = gemm_split(&j, bsz, axon_pool_size(ex->pool), &grain);
    if (avx16 || (!mkl16 && cdt == AXON_FLOAT32 && gemm_avx_wanted(bsz, j.m, j.n, k, j.b.trans))) {
        if ((st = gemm_avx_run(&j, bsz, ex->pool, epi_done)) != AXON_OK) goto done;
        blocks = 0;
    }
    if (blocks > 0) axon_parallel_for(ex->pool, 0, blocks, grain, gemm_blocks, &j);
    if (atomic_load(&j.failed)) {
        st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "matmul: packing buffers of the portable GEMM");
        goto done;
    }
    if (sc) {
        axon_tensor_t t = gemm_scratch_out(sc, cdt, g->out.sizes, sc_cm);
        axon_copy_execute(&g->out, &t, ex->pool);
    }
done:
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_A, sa);
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_B, sb);
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_C, sc);
    free(sbias);
    return st;
}

struct gemm_epi_job {
    axon_gemm_epilogue_fn fn;
    const void *ctx;
    int64_t n;                   /* elements per row of out */
};

static void gemm_epi_rows(void *ctx, int64_t r0, int64_t r1, int slot) {
    (void)slot;
    const struct gemm_epi_job *e = ctx;
    e->fn(e->ctx, r0 * e->n, r1 * e->n);
}

static axon_status_t gemm_kernel(const void *args, const axon_exec_t *ex) {
    const struct gemm_args *g = args;
    int epi_done = 0;
    axon_status_t st = gemm_product(g, ex, &epi_done);
    if (st != AXON_OK || !g->epi || epi_done) return st;
    /* Paths that do not know when rows are final (libraries, scratch outputs, column splits): the epilogue runs over
     * all of out afterwards, rows shared out over the pool. */
    const int64_t rows = g->out.sizes[0] * g->out.sizes[1], n = g->out.sizes[2];
    struct gemm_epi_job e = {g->epi, (const char *)g + GEMM_ARGS_BYTES, n};
    axon_parallel_for(ex->pool, 0, rows, (AXON_KERNEL_GRAIN + n - 1) / n, gemm_epi_rows, &e);
    return AXON_OK;
}

/* The batch of a 2-D view is 1 with stride 0. */
static axon_tensor_t gemm_view3(const axon_tensor_t *t) {
    axon_tensor_t v = *t;
    if (t->ndim == 2) {
        v.ndim = 3;
        v.sizes[0] = 1, v.sizes[1] = t->sizes[0], v.sizes[2] = t->sizes[1];
        v.strides[0] = 0, v.strides[1] = t->strides[0], v.strides[2] = t->strides[1];
    }
    return v;
}

static axon_status_t gemm_check_scalar(double v, const char *name, axon_dtype_t dt) {
    if (axon_dtype_is_integer(dt) && !(v == floor(v) && fabs(v) < 0x1p63))
        return axon_fail(AXON_ERROR_INVALID_ARG, "matmul: %s %g is not a whole number, as %s needs", name, v,
                         axon_dtype_name(dt));
    return AXON_OK;
}

axon_status_t axon_kernel_matmul(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *a,
                                 const axon_tensor_t *b, const axon_gemm_params_t *p) {
    axon_status_t st;
    if ((st = axon_kernel_check_dst(out, "matmul: out")) != AXON_OK) return st;
    if ((st = axon_kernel_check_src(a, "matmul: a")) != AXON_OK) return st;
    if ((st = axon_kernel_check_src(b, "matmul: b")) != AXON_OK) return st;
    axon_gemm_params_t prm = p ? *p : axon_gemm_params_default();
    if (prm.bias && (st = axon_kernel_check_src(prm.bias, "matmul: bias")) != AXON_OK) return st;
    if (a->dtype != out->dtype || b->dtype != out->dtype || (prm.bias && prm.bias->dtype != out->dtype))
        return axon_fail(AXON_ERROR_INVALID_ARG, "matmul: dtypes differ: out %s, a %s, b %s%s%s",
                         axon_dtype_name(out->dtype), axon_dtype_name(a->dtype), axon_dtype_name(b->dtype),
                         prm.bias ? ", bias " : "", prm.bias ? axon_dtype_name(prm.bias->dtype) : "");
    axon_dtype_t dt = out->dtype;
    if (!axon_dtype_is_floating(dt) && !axon_dtype_is_integer(dt) && dt != AXON_COMPLEX64 && dt != AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "matmul: dtype %s is not supported", axon_dtype_name(dt));
    char so[160], sa[160], sb[160];
    int nd = out->ndim;
    int ok = (nd == 2 || nd == 3) && a->ndim == nd && b->ndim == nd;
    if (ok) {
        int o = nd - 2; /* index of the first matrix dimension */
        ok = a->sizes[o + 1] == b->sizes[o] && out->sizes[o] == a->sizes[o] && out->sizes[o + 1] == b->sizes[o + 1];
        if (nd == 3) ok = ok && a->sizes[0] == out->sizes[0] && b->sizes[0] == out->sizes[0];
    }
    if (!ok)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "matmul: shapes do not match: a %s @ b %s -> out %s (need (m, k) @ (k, n) -> (m, n), "
                         "or the same with one leading batch dimension on all three)",
                         axon_shape_format(a, sa, sizeof sa), axon_shape_format(b, sb, sizeof sb),
                         axon_shape_format(out, so, sizeof so));
    struct gemm_args g;
    memset(&g, 0, sizeof g);
    g.out = gemm_view3(out), g.a = gemm_view3(a), g.b = gemm_view3(b);
    const int64_t m = g.out.sizes[1], n = g.out.sizes[2], k = g.a.sizes[2];
    if (prm.bias) {
        if (prm.bias->ndim != 1 || prm.bias->sizes[0] != n)
            return axon_fail(AXON_ERROR_INVALID_ARG, "matmul: bias shape %s is not [%" PRId64 "] for out %s",
                             axon_shape_format(prm.bias, sa, sizeof sa), n, axon_shape_format(out, so, sizeof so));
        g.bias = *prm.bias;
        g.has_bias = 1;
    }
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "matmul: a %s @ b %s: dimensions above 2^31 - 1",
                         axon_shape_format(a, sa, sizeof sa), axon_shape_format(b, sb, sizeof sb));
    if ((st = gemm_check_scalar(prm.alpha, "alpha", dt)) != AXON_OK) return st;
    if ((st = gemm_check_scalar(prm.beta, "beta", dt)) != AXON_OK) return st;
    if ((st = gemm_check_scalar(prm.bias_scale, "bias_scale", dt)) != AXON_OK) return st;
    g.alpha = prm.alpha, g.beta = prm.beta, g.bias_scale = prm.bias_scale;
    int64_t numel = axon_tensor_numel(out);
    if (numel == 0) return AXON_OK;
    uint64_t bytes = (uint64_t)(axon_tensor_numel(a) + axon_tensor_numel(b) + numel * (prm.beta != 0 ? 2 : 1)) *
                     axon_dtype_size(dt);
    if (!prm.epilogue) {
        axon_launch_t l = {gemm_kernel, &g, sizeof g, "matmul", bytes};
        return axon_stream_launch(s, &l);
    }
    const axon_gemm_epilogue_t *e = prm.epilogue;
    if (!e->fn || (e->ctx_size > 0 && !e->ctx) || e->ctx_size > AXON_GEMM_EPILOGUE_MAX)
        return axon_fail(AXON_ERROR_INVALID_ARG, "matmul: epilogue without a function, or with a context of %zu bytes "
                         "(at most %d)", e->ctx_size, AXON_GEMM_EPILOGUE_MAX);
    g.epi = e->fn;
    g.epi_size = e->ctx_size;
    _Alignas(16) unsigned char block[GEMM_ARGS_BYTES + AXON_GEMM_EPILOGUE_MAX];
    memcpy(block, &g, sizeof g);
    if (e->ctx_size) memcpy(block + GEMM_ARGS_BYTES, e->ctx, e->ctx_size);
    axon_launch_t l = {gemm_kernel, block, GEMM_ARGS_BYTES + e->ctx_size, "matmul", bytes};
    return axon_stream_launch(s, &l);
}
