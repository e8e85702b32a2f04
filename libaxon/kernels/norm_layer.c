/* Layer norm and RMS norm over the trailing `normalized` elements, forward and backward (axon/norm.h).
 *
 * Rows are contiguous runs of n = normalized elements. The forward and grad_input run one row per step, rows in
 * parallel; each row is re-read chunk by chunk (converted into float64 on the stack: kernels never allocate), once
 * per pass, so row length is unbounded. The variance is two-pass (mean first, then the squared deviations) rather
 * than sum(x^2) - mean^2, which cancels catastrophically for rows with a large mean. Rows of float32, float16 and
 * bfloat16 (the models' dtypes) take loops that read floats (in place, or through float buffers) and vectorize;
 * float64 and mixed dtypes the general one through float64 chunks. grad_weight and grad_bias are sums over rows: on
 * the float paths each block of rows (fixed by the row count) sums its own, added in block order afterwards; on the
 * general path a second parallel loop over blocks of columns sums every row in row order. Either way the result is
 * the same for any thread count. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "axon/norm.h"
#include "axon/stream.h"
#include "internal.h"
#include "gemm_impl.h"
#include "kernels_impl.h"

#define LN_CHUNK 1024
#define LN_HALF_ROW 4096 /* floats: the half path's four row buffers are 64 KiB of a worker's stack */

typedef struct ln_args {
    int rms;
    int f32;                     /* float32 in, out (or grad_in and grad_out), weight and bias: the rows in place
                                    (ln_forward_row_float, ln_backward_row_float) */
    int half;                    /* float16 or bfloat16 in and out (grad_out and grad_in), rows of up to LN_HALF_ROW:
                                    the same through float buffers */
    int64_t rows, n;
    double eps;
    /* Forward: out, in, w, b, mean, rstd. Backward: gi, go, in, w, mean, rstd, gw, gb. NULL = absent. */
    char *out, *mean, *rstd, *gw, *gb;
    const char *in, *go, *w, *b;
    size_t es_out, es_mean, es_rstd, es_gw, es_gb, es_in, es_go, es_w, es_b;
    axon_convert_fn ld_in, ld_go, ld_w, ld_b, ld_mean, ld_rstd;
    axon_convert_fn st_out, st_mean, st_rstd, st_gw, st_gb;
    axon_convert_fn in_to_float, w_to_float, b_to_float, out_from_float; /* half's (grad_out has in's dtype) */
} ln_args_t;

static int64_t ln_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* buf[0..m) = tensor p (converted by ld) at elements [j, j + m); ones when p is NULL (no weight). */
static void ln_load(axon_convert_fn ld, double *buf, const char *p, size_t es, int64_t j, int64_t m) {
    if (p) ld((char *)buf, 1, p + j * (int64_t)es, 1, m);
    else for (int64_t i = 0; i < m; i++) buf[i] = 1.0;
}

static double ln_scalar(axon_convert_fn ld, const char *p, size_t es, int64_t i) {
    double v;
    ld((char *)&v, 1, p + i * (int64_t)es, 1, 1);
    return v;
}

#define LN_PARTS AXON_PARTS /* the partial sums of kernels_impl.h */

/* ln_forward_row for rows read as float: float32 in, out, weight and bias in place (each of the last two may be
 * absent), float16 and bfloat16 through float buffers (ln_forward_range). The same float64 statistics in the same
 * order (element i into part i % LN_PARTS, in row order: a row's chunks start at multiples of LN_CHUNK), without
 * converting every chunk through a stack buffer three times and the weight and bias once per row; the output in float
 * (so not ln_forward_row's bits). x is row r's input, y its output. */
AXON_CLONES static void ln_forward_row_float(const ln_args_t *a, const float *x, float *y, const float *w,
                                             const float *b, int64_t r) {
    const int64_t n = a->n, bulk = n - n % LN_PARTS;
    double mean = 0.0, part[LN_PARTS] = {0};
    if (!a->rms) {
        for (int64_t i = 0; i < bulk; i += LN_PARTS)
            for (int k = 0; k < LN_PARTS; k++) part[k] += (double)x[i + k];
        for (int64_t i = bulk; i < n; i++) part[i - bulk] += (double)x[i];
        mean = axon_parts_total(part) / (double)n;
    }
    memset(part, 0, sizeof part);
    for (int64_t i = 0; i < bulk; i += LN_PARTS)
        for (int k = 0; k < LN_PARTS; k++) part[k] += ((double)x[i + k] - mean) * ((double)x[i + k] - mean);
    for (int64_t i = bulk; i < n; i++) part[i - bulk] += ((double)x[i] - mean) * ((double)x[i] - mean);
    const double rstd = 1.0 / sqrt(axon_parts_total(part) / (double)n + a->eps);
    /* The output in float, 8 lanes per vector with no conversions (in float64 it was 40% of the kernel and left it
     * at 2x torch CPU's time): x - mean with the mean split into two floats, so the difference is as exact as in
     * float64 even for rows with a large mean, as group norm's (norm_group.c); a few ulp of |x_hat * w| + |b|, as
     * torch CPU's float32 layer norm, where float64 rounded once. */
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi), rs = (float)rstd;
    if (w && b)
        for (int64_t i = 0; i < n; i++) y[i] = ((x[i] - mhi) - mlo) * rs * w[i] + b[i];
    else if (w)
        for (int64_t i = 0; i < n; i++) y[i] = ((x[i] - mhi) - mlo) * rs * w[i];
    else if (b)
        for (int64_t i = 0; i < n; i++) y[i] = ((x[i] - mhi) - mlo) * rs + b[i];
    else
        for (int64_t i = 0; i < n; i++) y[i] = ((x[i] - mhi) - mlo) * rs;
    if (a->mean) a->st_mean(a->mean + r * (int64_t)a->es_mean, 1, (const char *)&mean, 1, 1);
    if (a->rstd) a->st_rstd(a->rstd + r * (int64_t)a->es_rstd, 1, (const char *)&rstd, 1, 1);
}

AXON_CLONES static void ln_forward_row(const ln_args_t *a, int64_t r) {
    double x[LN_CHUNK], w[LN_CHUNK], b[LN_CHUNK];
    const char *px = a->in + r * a->n * (int64_t)a->es_in;
    double mean = 0.0, part[LN_PARTS] = {0};
    if (!a->rms) {
        for (int64_t j = 0; j < a->n; j += LN_CHUNK) {
            int64_t m = ln_min(LN_CHUNK, a->n - j);
            ln_load(a->ld_in, x, px, a->es_in, j, m);
            axon_parts_add(part, x, m);
        }
        mean = axon_parts_total(part) / (double)a->n;
    }
    memset(part, 0, sizeof part);
    for (int64_t j = 0; j < a->n; j += LN_CHUNK) {
        int64_t m = ln_min(LN_CHUNK, a->n - j);
        ln_load(a->ld_in, x, px, a->es_in, j, m);
        for (int64_t i = 0; i < m; i++) x[i] = (x[i] - mean) * (x[i] - mean);
        axon_parts_add(part, x, m);
    }
    const double ss = axon_parts_total(part);
    double rstd = 1.0 / sqrt(ss / (double)a->n + a->eps);
    for (int64_t j = 0; j < a->n; j += LN_CHUNK) {
        int64_t m = ln_min(LN_CHUNK, a->n - j);
        ln_load(a->ld_in, x, px, a->es_in, j, m);
        ln_load(a->ld_w, w, a->w, a->es_w, j, m);
        if (a->b) ln_load(a->ld_b, b, a->b, a->es_b, j, m);
        else memset(b, 0, sizeof(double) * (size_t)m);
        for (int64_t i = 0; i < m; i++) x[i] = (x[i] - mean) * rstd * w[i] + b[i];
        a->st_out(a->out + (r * a->n + j) * (int64_t)a->es_out, 1, (const char *)x, 1, m);
    }
    if (a->mean) a->st_mean(a->mean + r * (int64_t)a->es_mean, 1, (const char *)&mean, 1, 1);
    if (a->rstd) a->st_rstd(a->rstd + r * (int64_t)a->es_rstd, 1, (const char *)&rstd, 1, 1);
}

/* grad_in = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)), xhat = (x - mean) * rstd; RMS norm drops the
 * mean(g*w) term (its mean is not subtracted in the forward). */
static void ln_backward_row(const ln_args_t *a, int64_t r) {
    double x[LN_CHUNK], g[LN_CHUNK], w[LN_CHUNK];
    const int64_t base = r * a->n;
    double mean = a->rms ? 0.0 : ln_scalar(a->ld_mean, a->mean, a->es_mean, r);
    double rstd = ln_scalar(a->ld_rstd, a->rstd, a->es_rstd, r);
    double s1 = 0.0, s2 = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        double c1 = s1 / (double)a->n, c2 = s2 / (double)a->n;
        for (int64_t j = 0; j < a->n; j += LN_CHUNK) {
            int64_t m = ln_min(LN_CHUNK, a->n - j);
            ln_load(a->ld_in, x, a->in, a->es_in, base + j, m);
            ln_load(a->ld_go, g, a->go, a->es_go, base + j, m);
            ln_load(a->ld_w, w, a->w, a->es_w, j, m);
            for (int64_t i = 0; i < m; i++) {
                double gw = g[i] * w[i], xh = (x[i] - mean) * rstd;
                if (pass == 0) s1 += gw, s2 += gw * xh;
                else x[i] = rstd * (gw - c1 - xh * c2);
            }
            if (pass == 1) a->st_out(a->out + (base + j) * (int64_t)a->es_out, 1, (const char *)x, 1, m);
        }
        if (a->rms) s1 = 0.0;
    }
}

static void ln_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const ln_args_t *a = ctx;
    if (a->f32) {
        for (int64_t r = begin; r < end; r++)
            ln_forward_row_float(a, (const float *)(const void *)a->in + r * a->n,
                                 (float *)(void *)a->out + r * a->n, (const float *)(const void *)a->w,
                                 (const float *)(const void *)a->b, r);
        return;
    }
    if (a->half) {
        /* the weight and bias once per range, each row in and out through a buffer */
        float x[LN_HALF_ROW], y[LN_HALF_ROW], w[LN_HALF_ROW], b[LN_HALF_ROW];
        if (a->w) a->w_to_float((char *)w, 1, a->w, 1, a->n);
        if (a->b) a->b_to_float((char *)b, 1, a->b, 1, a->n);
        for (int64_t r = begin; r < end; r++) {
            a->in_to_float((char *)x, 1, a->in + r * a->n * (int64_t)a->es_in, 1, a->n);
            ln_forward_row_float(a, x, y, a->w ? w : NULL, a->b ? b : NULL, r);
            a->out_from_float(a->out + r * a->n * (int64_t)a->es_out, 1, (const char *)y, 1, a->n);
        }
        return;
    }
    for (int64_t r = begin; r < end; r++) ln_forward_row(a, r);
}

/* The sums of ln_backward_row_float's first pass, over g * w or g alone (w NULL): parts[0] of g * w, parts[1] of
 * g * w * (x - mean). Inline with w a constant NULL or not, so each loop has no test per element. */
static inline __attribute__((always_inline)) void ln_backward_sums(const float *x, const float *g, const float *w,
                                                                   int64_t n, double mean, double *s1, double *s2) {
    const int64_t bulk = n - n % LN_PARTS;
    double p1[LN_PARTS] = {0}, p2[LN_PARTS] = {0};
    for (int64_t i = 0; i < bulk; i += LN_PARTS)
        for (int k = 0; k < LN_PARTS; k++) {
            const double gw = w ? (double)g[i + k] * (double)w[i + k] : (double)g[i + k];
            p1[k] += gw, p2[k] += gw * ((double)x[i + k] - mean);
        }
    for (int64_t i = bulk; i < n; i++) {
        const double gw = w ? (double)g[i] * (double)w[i] : (double)g[i];
        p1[i - bulk] += gw, p2[i - bulk] += gw * ((double)x[i] - mean);
    }
    *s1 = axon_parts_total(p1), *s2 = axon_parts_total(p2);
}

/* ln_backward_row for rows read as float: grad_in = rstd * (g*w - c1 - (x - mean) * c2). The sums in float64, in
 * LN_PARTS partial sums, which vectorize (ln_backward_row's run in one); each element in float, 8 lanes per vector,
 * with x - mean taken against the mean split in two floats (as ln_forward_row_float), so a few ulp of the terms'
 * magnitudes, as torch CPU's float loop. The generic path converted every chunk through stack buffers twice per row
 * and took 4-5x torch CPU's time; each element in float64 still took 1.2x. */
AXON_CLONES static void ln_backward_row_float(const ln_args_t *a, const float *x, const float *g, const float *w,
                                              float *gi, int64_t r) {
    const int64_t n = a->n;
    const double mean = a->rms ? 0.0 : ln_scalar(a->ld_mean, a->mean, a->es_mean, r);
    const double rstd = ln_scalar(a->ld_rstd, a->rstd, a->es_rstd, r);
    double s1, s2;
    if (w) ln_backward_sums(x, g, w, n, mean, &s1, &s2);
    else ln_backward_sums(x, g, NULL, n, mean, &s1, &s2);
    const double c1 = a->rms ? 0.0 : s1 / (double)n, c2 = s2 * rstd * rstd / (double)n;
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi), rs = (float)rstd;
    /* g*w - c1 with the product exact (an FMA) and c1 in two floats: a row of zero variance (rstd = 1/sqrt(eps), the
     * difference scaled up 300-fold) keeps its gradient's bits to a few ulp. */
    const float c1hi = (float)c1, c1lo = (float)(c1 - (double)c1hi), f2 = (float)c2;
    if (w)
        for (int64_t i = 0; i < n; i++)
            gi[i] = rs * ((fmaf(g[i], w[i], -c1hi) - c1lo) - ((x[i] - mhi) - mlo) * f2);
    else
        for (int64_t i = 0; i < n; i++) gi[i] = rs * (((g[i] - c1hi) - c1lo) - ((x[i] - mhi) - mlo) * f2);
}

/* The float paths' backward (a->f32 or a->half) in row blocks: each block computes its rows' grad_in and its own
 * sums of grad_weight and grad_bias in one pass over x and grad_out (a second pass over columns re-read both from
 * memory and took 2x torch CPU's time for its part, 3x on 2 threads, whose column blocks read each row in pieces).
 * Blocks are fixed by the row count alone (LN_BLOCKS of them at most), and their sums are added in block order
 * (ln_block_sums_range), so the result is the same for any thread count. Each element's term in float (x_hat with
 * the mean split in two floats, as the rows'), summed over runs of LN_COL_RUN rows in float, the runs into the
 * block's float64 sums: torch CPU sums a thread's rows in float, so this is the more exact of the two. */
#define LN_BLOCKS 32
#define LN_COL_RUN 8

static int64_t ln_block_rows(int64_t rows) { return rows <= LN_BLOCKS ? 1 : (rows + LN_BLOCKS - 1) / LN_BLOCKS; }

/* The block's accumulators in the scratch: float64 sums (grad_weight's, grad_bias's), then float runs (the same). */
typedef struct ln_block_acc {
    double *sw, *sb;
    float *rw, *rb;
} ln_block_acc_t;

static ln_block_acc_t ln_block_acc(const ln_args_t *a, double *scratch, int64_t nblocks, int64_t blk) {
    ln_block_acc_t acc;
    acc.sw = scratch + blk * a->n * 2, acc.sb = acc.sw + a->n;
    acc.rw = (float *)(void *)(scratch + nblocks * a->n * 2) + blk * a->n * 2, acc.rb = acc.rw + a->n;
    return acc;
}

/* Add row r's terms (x and g its row, as float) into the runs. */
AXON_CLONES static void ln_block_add_row(const ln_args_t *a, const ln_block_acc_t *acc, const float *x, const float *g,
                                        int64_t r) {
    const int64_t n = a->n;
    float *restrict rw = acc->rw, *restrict rb = acc->rb;
    if (a->gb)
        for (int64_t i = 0; i < n; i++) rb[i] += g[i];
    if (!a->gw) return;
    const double mean = a->rms ? 0.0 : ln_scalar(a->ld_mean, a->mean, a->es_mean, r);
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    const float rs = (float)ln_scalar(a->ld_rstd, a->rstd, a->es_rstd, r);
    for (int64_t i = 0; i < n; i++) rw[i] = fmaf(g[i], ((x[i] - mhi) - mlo) * rs, rw[i]);
}

AXON_CLONES static void ln_block_flush(const ln_args_t *a, const ln_block_acc_t *acc) {
    const int64_t n = a->n;
    for (int64_t i = 0; i < n; i++) acc->sw[i] += (double)acc->rw[i], acc->sb[i] += (double)acc->rb[i];
    memset(acc->rw, 0, sizeof(float) * (size_t)n);
    memset(acc->rb, 0, sizeof(float) * (size_t)n);
}

typedef struct ln_blocks_job {
    const ln_args_t *a;
    double *scratch;             /* NULL: no weight or bias gradient wanted */
    int64_t nblocks, block_rows;
} ln_blocks_job_t;

/* Block blk's rows; buf: the half path's four row buffers of LN_HALF_ROW floats (x, grad_out, weight converted once
 * by the caller, grad_in), NULL for float32 (read and written in place). */
static void ln_block_run(const ln_blocks_job_t *j, int64_t blk, float *buf) {
    const ln_args_t *a = j->a;
    const int64_t n = a->n, r0 = blk * j->block_rows, r1 = ln_min(r0 + j->block_rows, a->rows);
    const float *w = buf ? (a->w ? buf + 2 * LN_HALF_ROW : NULL) : (const float *)(const void *)a->w;
    ln_block_acc_t acc = {0};
    if (j->scratch) {
        acc = ln_block_acc(a, j->scratch, j->nblocks, blk);
        memset(acc.sw, 0, sizeof(double) * (size_t)n * 2);
        memset(acc.rw, 0, sizeof(float) * (size_t)n * 2);
    }
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)(const void *)a->in + r * n, *g = (const float *)(const void *)a->go + r * n;
        float *gi = a->out ? (float *)(void *)a->out + r * n : NULL;
        if (buf) {
            a->in_to_float((char *)buf, 1, a->in + r * n * (int64_t)a->es_in, 1, n), x = buf;
            a->in_to_float((char *)(buf + LN_HALF_ROW), 1, a->go + r * n * (int64_t)a->es_go, 1, n);
            g = buf + LN_HALF_ROW, gi = buf + 3 * LN_HALF_ROW;
        }
        if (a->out) {
            ln_backward_row_float(a, x, g, w, gi, r);
            if (buf) a->out_from_float(a->out + r * n * (int64_t)a->es_out, 1, (const char *)gi, 1, n);
        }
        if (!j->scratch) continue;
        ln_block_add_row(a, &acc, x, g, r);
        if ((r - r0) % LN_COL_RUN == LN_COL_RUN - 1 || r == r1 - 1) ln_block_flush(a, &acc);
    }
}

static void ln_blocks_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const ln_blocks_job_t *j = ctx;
    const ln_args_t *a = j->a;
    if (!a->half) {
        for (int64_t blk = begin; blk < end; blk++) ln_block_run(j, blk, NULL);
        return;
    }
    float buf[4 * LN_HALF_ROW]; /* 64 KiB of a worker's stack, as the forward's half path */
    if (a->w) a->w_to_float((char *)(buf + 2 * LN_HALF_ROW), 1, a->w, 1, a->n);
    for (int64_t blk = begin; blk < end; blk++) ln_block_run(j, blk, buf);
}

/* Columns [begin, end) of grad_weight and grad_bias: the blocks' sums in block order. */
static void ln_block_sums_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const ln_blocks_job_t *j = ctx;
    const ln_args_t *a = j->a;
    double sw[LN_CHUNK], sb[LN_CHUNK];
    for (int64_t c0 = begin; c0 < end; c0 += LN_CHUNK) {
        const int64_t m = ln_min(LN_CHUNK, end - c0);
        memset(sw, 0, sizeof(double) * (size_t)m);
        memset(sb, 0, sizeof(double) * (size_t)m);
        for (int64_t blk = 0; blk < j->nblocks; blk++) {
            const ln_block_acc_t acc = ln_block_acc(a, j->scratch, j->nblocks, blk);
            for (int64_t i = 0; i < m; i++) sw[i] += acc.sw[c0 + i], sb[i] += acc.sb[c0 + i];
        }
        if (a->gw) a->st_gw(a->gw + c0 * (int64_t)a->es_gw, 1, (const char *)sw, 1, m);
        if (a->gb) a->st_gb(a->gb + c0 * (int64_t)a->es_gb, 1, (const char *)sb, 1, m);
    }
}

/* The float paths' backward; 0 when the scratch for the column sums could not be had (the caller falls back to
 * the general path's passes). */
static int ln_backward_blocks(const ln_args_t *a, const axon_exec_t *ex) {
    ln_blocks_job_t j = {a, NULL, 0, ln_block_rows(a->rows)};
    j.nblocks = (a->rows + j.block_rows - 1) / j.block_rows;
    const size_t bytes = (size_t)j.nblocks * (size_t)a->n * (2 * sizeof(double) + 2 * sizeof(float));
    if ((a->gw || a->gb) && (j.scratch = axon_gemm_scratch(AXON_GEMM_SCRATCH_PACK, bytes ? bytes : 1)) == NULL)
        return 0;
    axon_parallel_for(ex->pool, 0, j.nblocks, 1, ln_blocks_range, &j);
    if (j.scratch) {
        int64_t cgrain = AXON_KERNEL_GRAIN / (j.nblocks > 0 ? j.nblocks : 1);
        cgrain = (cgrain + 63) / 64 * 64; /* blocks of columns do not share cache lines of grad_weight */
        axon_parallel_for(ex->pool, 0, a->n, cgrain, ln_block_sums_range, &j);
        axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, j.scratch);
    }
    return 1;
}

static void ln_backward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    for (int64_t r = begin; r < end; r++) ln_backward_row(ctx, r);
}

/* Columns [begin, end) of grad_weight (sum over rows of g * xhat) and grad_bias (sum of g), in blocks. */
static void ln_columns_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const ln_args_t *a = ctx;
    double x[LN_CHUNK], g[LN_CHUNK], sw[LN_CHUNK], sb[LN_CHUNK];
    for (int64_t c0 = begin; c0 < end; c0 += LN_CHUNK) {
        int64_t m = ln_min(LN_CHUNK, end - c0);
        memset(sw, 0, sizeof(double) * (size_t)m);
        memset(sb, 0, sizeof(double) * (size_t)m);
        for (int64_t r = 0; r < a->rows; r++) {
            ln_load(a->ld_go, g, a->go, a->es_go, r * a->n + c0, m);
            if (a->gb)
                for (int64_t i = 0; i < m; i++) sb[i] += g[i];
            if (!a->gw) continue;
            double mean = a->rms ? 0.0 : ln_scalar(a->ld_mean, a->mean, a->es_mean, r);
            double rstd = ln_scalar(a->ld_rstd, a->rstd, a->es_rstd, r);
            ln_load(a->ld_in, x, a->in, a->es_in, r * a->n + c0, m);
            for (int64_t i = 0; i < m; i++) sw[i] += g[i] * (x[i] - mean) * rstd;
        }
        if (a->gw) a->st_gw(a->gw + c0 * (int64_t)a->es_gw, 1, (const char *)sw, 1, m);
        if (a->gb) a->st_gb(a->gb + c0 * (int64_t)a->es_gb, 1, (const char *)sb, 1, m);
    }
}

static axon_status_t ln_kernel(const void *args, const axon_exec_t *ex) {
    const ln_args_t *a = args;
    int64_t grain = AXON_KERNEL_GRAIN / a->n;
    grain = grain < 1 ? 1 : grain;
    if (a->go == NULL) {
        axon_parallel_for(ex->pool, 0, a->rows, grain, ln_forward_range, (void *)a);
        return AXON_OK;
    }
    if ((a->f32 || a->half) && ln_backward_blocks(a, ex)) return AXON_OK;
    if (a->out) axon_parallel_for(ex->pool, 0, a->rows, grain, ln_backward_range, (void *)a);
    if (a->gw || a->gb) {
        /* A column block is a multiple of 64 so that blocks do not share cache lines of grad_weight. */
        int64_t cgrain = AXON_KERNEL_GRAIN / (a->rows > 0 ? a->rows : 1);
        cgrain = (cgrain + 63) / 64 * 64;
        axon_parallel_for(ex->pool, 0, a->n, cgrain, ln_columns_range, (void *)a);
    }
    return AXON_OK;
}

/* Check an optional tensor t: well-formed, float, contiguous, and `numel` elements (or in's shape if shape). */
static axon_status_t ln_check(const char *name, const char *role, const axon_tensor_t *t, int64_t numel,
                              const axon_tensor_t *shape, int dst) {
    if (t == NULL) return AXON_OK;
    char sa[160], sb[160];
    axon_status_t st = axon_kernel_check_operand(t, name, role, dst);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16",
                         name, role, axon_dtype_name(t->dtype));
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", name, role,
                         axon_shape_format(t, sa, sizeof sa));
    if (shape) {
        int same = shape->ndim == t->ndim;
        for (int i = 0; same && i < t->ndim; i++) same = shape->sizes[i] == t->sizes[i];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s does not match in shape %s", name, role,
                             axon_shape_format(t, sa, sizeof sa), axon_shape_format(shape, sb, sizeof sb));
    } else if (axon_tensor_numel(t) != numel) {
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has %lld elements (shape %s), expected %lld", name, role,
                         (long long)axon_tensor_numel(t), axon_shape_format(t, sa, sizeof sa), (long long)numel);
    }
    return AXON_OK;
}

static size_t ln_es(const axon_tensor_t *t) { return t ? axon_dtype_size(t->dtype) : 0; }
static void *ln_data(const axon_tensor_t *t) { return t ? t->data : NULL; }
static axon_convert_fn ln_ld(const axon_tensor_t *t) { return t ? axon_convert_get(t->dtype, AXON_FLOAT64) : NULL; }
static axon_convert_fn ln_st(const axon_tensor_t *t) { return t ? axon_convert_get(AXON_FLOAT64, t->dtype) : NULL; }

/* An absent weight or bias, or one whose values float holds exactly (float32, float16, bfloat16). */
static int ln_floatish(const axon_tensor_t *t) {
    return !t || t->dtype == AXON_FLOAT32 || t->dtype == AXON_FLOAT16 || t->dtype == AXON_BFLOAT16;
}

/* Shared launch: t[] = {out/grad_in, mean, rstd, in, weight, bias, grad_out, grad_weight, grad_bias}. */
enum { LN_OUT, LN_MEAN, LN_RSTD, LN_IN, LN_W, LN_B, LN_GO, LN_GW, LN_GB, LN_NT };

static axon_status_t ln_launch(axon_stream_t s, const char *name, int rms, int backward,
                               const axon_tensor_t *const *t, int64_t n, double eps) {
    static const char *const roles[LN_NT] = {"out",  "mean", "rstd",     "in",       "weight",
                                             "bias", "grad_out", "grad_weight", "grad_bias"};
    axon_status_t st;
    const char *out_role = backward ? "grad_in" : roles[LN_OUT];
    if (t[LN_IN] == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in is NULL", name);
    if ((st = ln_check(name, "in", t[LN_IN], 0, t[LN_IN], 0)) != AXON_OK) return st;
    if (n < 1) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: normalized must be >= 1, got %lld", name, (long long)n);
    int64_t numel = axon_tensor_numel(t[LN_IN]);
    if (numel % n != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: normalized %lld does not divide in's %lld elements", name,
                         (long long)n, (long long)numel);
    int64_t rows = numel / n;
    for (int k = 0; k < LN_NT; k++) {
        if (k == LN_IN) continue;
        int shaped = k == LN_OUT || k == LN_GO;
        int dst = k == LN_OUT || k == LN_GW || k == LN_GB || (!backward && (k == LN_MEAN || k == LN_RSTD));
        int64_t want = (k == LN_MEAN || k == LN_RSTD) ? rows : n;
        if ((st = ln_check(name, k == LN_OUT ? out_role : roles[k], t[k], want, shaped ? t[LN_IN] : NULL, dst)) !=
            AXON_OK)
            return st;
    }
    if (backward) {
        if (t[LN_GO] == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: grad_out is NULL", name);
        if (t[LN_RSTD] == NULL || (!rms && t[LN_MEAN] == NULL))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the forward's %s is NULL", name,
                             t[LN_RSTD] ? "mean" : "rstd");
        if (!t[LN_OUT] && !t[LN_GW] && !t[LN_GB]) return AXON_OK;
    } else if (t[LN_OUT] == NULL) {
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out is NULL", name);
    }
    if (rows == 0 && !(backward && (t[LN_GW] || t[LN_GB]))) return AXON_OK;
    ln_args_t a;
    memset(&a, 0, sizeof a);
    a.rms = rms;
    a.rows = rows;
    a.n = n;
    a.eps = eps;
    a.out = ln_data(t[LN_OUT]), a.mean = ln_data(t[LN_MEAN]), a.rstd = ln_data(t[LN_RSTD]);
    a.gw = ln_data(t[LN_GW]), a.gb = ln_data(t[LN_GB]);
    a.in = ln_data(t[LN_IN]), a.go = ln_data(t[LN_GO]), a.w = ln_data(t[LN_W]), a.b = ln_data(t[LN_B]);
    a.es_out = ln_es(t[LN_OUT]), a.es_mean = ln_es(t[LN_MEAN]), a.es_rstd = ln_es(t[LN_RSTD]);
    a.es_gw = ln_es(t[LN_GW]), a.es_gb = ln_es(t[LN_GB]), a.es_in = ln_es(t[LN_IN]), a.es_go = ln_es(t[LN_GO]);
    a.es_w = ln_es(t[LN_W]), a.es_b = ln_es(t[LN_B]);
    a.ld_in = ln_ld(t[LN_IN]), a.ld_go = ln_ld(t[LN_GO]), a.ld_w = ln_ld(t[LN_W]), a.ld_b = ln_ld(t[LN_B]);
    a.ld_mean = ln_ld(t[LN_MEAN]), a.ld_rstd = ln_ld(t[LN_RSTD]);
    a.st_out = ln_st(t[LN_OUT]), a.st_gw = ln_st(t[LN_GW]), a.st_gb = ln_st(t[LN_GB]);
    /* The float paths: forward's in and out, backward's in, grad_out and grad_in (when wanted) of one dtype. */
    const axon_dtype_t h = t[LN_IN]->dtype;
    const int same = (!t[LN_OUT] || t[LN_OUT]->dtype == h) && (!backward || t[LN_GO]->dtype == h);
    a.f32 = h == AXON_FLOAT32 && same && (!t[LN_W] || t[LN_W]->dtype == AXON_FLOAT32) &&
            (!t[LN_B] || t[LN_B]->dtype == AXON_FLOAT32);
    a.half = (h == AXON_FLOAT16 || h == AXON_BFLOAT16) && same && n <= LN_HALF_ROW && ln_floatish(t[LN_W]) &&
             ln_floatish(t[LN_B]);
    if (h == AXON_FLOAT16 || h == AXON_BFLOAT16) {
        a.in_to_float = axon_convert_get(h, AXON_FLOAT32), a.out_from_float = axon_convert_get(AXON_FLOAT32, h);
        if (t[LN_W]) a.w_to_float = axon_convert_get(t[LN_W]->dtype, AXON_FLOAT32);
        if (t[LN_B]) a.b_to_float = axon_convert_get(t[LN_B]->dtype, AXON_FLOAT32);
    }
    if (!backward) a.st_mean = ln_st(t[LN_MEAN]), a.st_rstd = ln_st(t[LN_RSTD]);
    axon_launch_t l = {ln_kernel, &a, sizeof a, name, (uint64_t)numel * (a.es_in + a.es_out + a.es_go)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_layer_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mean,
                                     const axon_tensor_t *rstd, const axon_tensor_t *in, const axon_tensor_t *weight,
                                     const axon_tensor_t *bias, int64_t normalized, double eps) {
    const axon_tensor_t *t[LN_NT] = {out, mean, rstd, in, weight, bias, NULL, NULL, NULL};
    return ln_launch(s, "layer_norm", 0, 0, t, normalized, eps);
}

axon_status_t axon_kernel_layer_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                              const axon_tensor_t *grad_weight, const axon_tensor_t *grad_bias,
                                              const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                              const axon_tensor_t *mean, const axon_tensor_t *rstd,
                                              const axon_tensor_t *weight, int64_t normalized) {
    const axon_tensor_t *t[LN_NT] = {grad_in, mean, rstd, in, weight, NULL, grad_out, grad_weight, grad_bias};
    return ln_launch(s, "layer_norm_backward", 0, 1, t, normalized, 0.0);
}

axon_status_t axon_kernel_rms_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *rstd,
                                   const axon_tensor_t *in, const axon_tensor_t *weight, int64_t normalized,
                                   double eps) {
    const axon_tensor_t *t[LN_NT] = {out, NULL, rstd, in, weight, NULL, NULL, NULL, NULL};
    return ln_launch(s, "rms_norm", 1, 0, t, normalized, eps);
}

axon_status_t axon_kernel_rms_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                            const axon_tensor_t *grad_weight, const axon_tensor_t *grad_out,
                                            const axon_tensor_t *in, const axon_tensor_t *rstd,
                                            const axon_tensor_t *weight, int64_t normalized) {
    const axon_tensor_t *t[LN_NT] = {grad_in, NULL, rstd, in, weight, NULL, grad_out, grad_weight, NULL};
    return ln_launch(s, "rms_norm_backward", 1, 1, t, normalized, 0.0);
}
