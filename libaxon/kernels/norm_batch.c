/* Batch norm forward (training and inference) and backward over a [N, C, S] tensor (axon/batchnorm.h), contiguous
 * or channels-last.
 *
 * Contiguous: one channel per step, channels in parallel. A channel is N runs of S contiguous elements, one per
 * batch index; its statistics are sums over those runs (in AXON_PARTS partial sums), each run re-read in chunks
 * converted into float64 on the stack, once per pass. Everything a channel needs (mean, invstd, weight, the running
 * stats) is per channel, so no partial sums cross threads and results do not depend on the thread count.
 *
 * Channels-last: M = N * S rows of C contiguous channels. Blocks of BN_CL_ROWS rows run in parallel, each summing
 * its rows into its own per-channel partials (vectorized across channels); the blocks' partials are then added in
 * block order, so results do not depend on the thread count either. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/batchnorm.h"
#include "axon/stream.h"
#include "internal.h"
#include "norm_impl.h"

typedef struct bn_args {
    int training, backward;
    int cl;                     /* in, out (grad_out, grad_in) channels-last: (n, c, s) at (n * S + s) * C + c */
    int f32;                    /* channels-last float32 images: bn_cl_row_f32 */
    int floats;                 /* contiguous forward, or training backward, of float32, float16 or bfloat16 (in,
                                   out, grad_out, grad_in of one dtype): bn_forward_channel_float,
                                   bn_backward_channel_float */
    axon_convert_fn in_to_float, out_from_float; /* its conversions for the halves (NULL for float32) */
    int64_t n, c, s;
    double momentum, eps;
    /* Forward: out, in, w, b, save_mean, save_invstd, running_mean, running_var.
     * Backward: out = grad_in, in, go, w, mean, inv (running_var when !training), gw, gb. */
    axon_norm_ref_t out, in, go, w, b, smean, sinv, rmean, rvar, mean, inv, gw, gb;
} bn_args_t;

static int64_t bn_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Sum over channel c of f(x) for the two statistics passes: x - shift, squared when `square`. The sums run in
 * AXON_PARTS partial sums, so they vectorize (the order depends on the shape alone). */
AXON_CLONES static double bn_sum(const bn_args_t *a, int64_t c, double shift, int square) {
    double x[AXON_NORM_CHUNK], part[AXON_PARTS] = {0};
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            if (square)
                for (int64_t i = 0; i < m; i++) x[i] = (x[i] - shift) * (x[i] - shift);
            axon_parts_add(part, x, m);
        }
    }
    return axon_parts_total(part);
}

/* Training statistics of channel c from its mean and its sum of squared deviations ss: save_mean, save_invstd and the
 * running statistics written; returns invstd. */
static double bn_training_stats(const bn_args_t *a, int64_t c, double mean, double ss) {
    const double count = (double)(a->n * a->s);
    const double invstd = 1.0 / sqrt(ss / count + a->eps);
    axon_norm_put(&a->smean, c, mean);
    axon_norm_put(&a->sinv, c, invstd);
    /* count == 1 gives 0/0 = NaN for the unbiased variance, as PyTorch's CPU kernel does. */
    if (a->rmean.p)
        axon_norm_put(&a->rmean, c, a->momentum * mean + (1.0 - a->momentum) * axon_norm_get(&a->rmean, c, 0));
    if (a->rvar.p)
        axon_norm_put(&a->rvar, c,
                      a->momentum * (ss / (count - 1.0)) + (1.0 - a->momentum) * axon_norm_get(&a->rvar, c, 0));
    return invstd;
}

AXON_CLONES static void bn_forward_channel(const bn_args_t *a, int64_t c) {
    double x[AXON_NORM_CHUNK];
    double mean, invstd;
    if (a->training) {
        mean = bn_sum(a, c, 0.0, 0) / (double)(a->n * a->s);
        invstd = bn_training_stats(a, c, mean, bn_sum(a, c, mean, 1));
    } else {
        mean = axon_norm_get(&a->rmean, c, 0.0);
        invstd = 1.0 / sqrt(axon_norm_get(&a->rvar, c, 0.0) + a->eps);
    }
    const double scale = invstd * axon_norm_get(&a->w, c, 1.0), shift = axon_norm_get(&a->b, c, 0.0);
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            for (int64_t i = 0; i < m; i++) x[i] = (x[i] - mean) * scale + shift;
            axon_norm_store(&a->out, x, base + j, m);
        }
    }
}

/* bn_forward_channel for contiguous float32, float16 and bfloat16 images (a->floats): runs read as float (float32 in
 * place, halves converted BN_FLOAT_CHUNK at a time), the statistics over AXON_NORM_PARTS partial sums (bn_float_sum),
 * and the output in float with the mean split in two floats, as group norm's (norm_group.c). Through float64 chunks
 * a float16 [8, 32, 64, 64] image took 4x torch CPU's time in inference. */
#define BN_FLOAT_CHUNK 2048
_Static_assert(BN_FLOAT_CHUNK % AXON_NORM_PARTS == 0, "chunks leave no tail but at a run's end");
static inline const float *bn_floats(const axon_norm_ref_t *r, axon_convert_fn to_float, float *buf, int64_t at,
                                     int64_t m) {
    if (!to_float) return (const float *)(const void *)r->p + at;
    to_float((char *)buf, 1, r->p + at * (int64_t)r->es, 1, m);
    return buf;
}

/* Run j of image n of channel c (m elements) as floats: from the channel's floats when chan holds them (bn_range
 * widens a half channel once for all its passes), else as bn_floats reads it. */
static inline const float *bn_run(const bn_args_t *a, const axon_norm_ref_t *r, const float *chan, float *buf,
                                  int64_t c, int64_t n, int64_t j, int64_t m) {
    if (chan) return chan + n * a->s + j;
    return bn_floats(r, a->in_to_float, buf, (n * a->c + c) * a->s + j, m);
}

/* The sum of channel c's values (or of their squared distances to shift) over AXON_NORM_PARTS partial sums: float64
 * for float32 data, float for float16 and bfloat16 (axon_norm_run_sum_f32). */
#define BN_FLOAT_SUM(ACC, RUN_SUM)                                                                               \
    float buf[BN_FLOAT_CHUNK];                                                                                   \
    ACC part[AXON_NORM_PARTS] = {0};                                                                             \
    for (int64_t n = 0; n < a->n; n++)                                                                           \
        for (int64_t j = 0; j < a->s; j += BN_FLOAT_CHUNK) {                                                     \
            const int64_t m = bn_min(BN_FLOAT_CHUNK, a->s - j);                                                  \
            RUN_SUM(part, bn_run(a, &a->in, chan, buf, c, n, j, m), m, shift, square);                           \
        }                                                                                                        \
    double t = 0.0;                                                                                              \
    for (int k = 0; k < AXON_NORM_PARTS; k++) t += (double)part[k];                                              \
    return t;
AXON_CLONES static double bn_float_sum_f64(const bn_args_t *a, int64_t c, const float *chan, double shift,
                                           int square) {
    BN_FLOAT_SUM(double, axon_norm_run_sum_f64)
}
AXON_CLONES static double bn_float_sum_f32(const bn_args_t *a, int64_t c, const float *chan, double shift,
                                           int square) {
    BN_FLOAT_SUM(float, axon_norm_run_sum_f32)
}
#undef BN_FLOAT_SUM
static double bn_float_sum(const bn_args_t *a, int64_t c, const float *chan, double shift, int square) {
    return a->in_to_float ? bn_float_sum_f32(a, c, chan, shift, square) : bn_float_sum_f64(a, c, chan, shift, square);
}

AXON_CLONES static void bn_forward_channel_float(const bn_args_t *a, int64_t c, const float *chan) {
    float xb[BN_FLOAT_CHUNK], yb[BN_FLOAT_CHUNK];
    double mean, invstd;
    if (a->training) {
        mean = bn_float_sum(a, c, chan, 0.0, 0) / (double)(a->n * a->s);
        invstd = bn_training_stats(a, c, mean, bn_float_sum(a, c, chan, mean, 1));
    } else {
        mean = axon_norm_get(&a->rmean, c, 0.0);
        invstd = 1.0 / sqrt(axon_norm_get(&a->rvar, c, 0.0) + a->eps);
    }
    const float scale = (float)(invstd * axon_norm_get(&a->w, c, 1.0)), shift = (float)axon_norm_get(&a->b, c, 0.0);
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += BN_FLOAT_CHUNK) {
            const int64_t m = bn_min(BN_FLOAT_CHUNK, a->s - j);
            const float *x = bn_run(a, &a->in, chan, xb, c, n, j, m);
            float *y = a->out_from_float ? yb : (float *)(void *)a->out.p + base + j;
            for (int64_t i = 0; i < m; i++) y[i] = ((x[i] - mhi) - mlo) * scale + shift;
            if (a->out_from_float)
                a->out_from_float(a->out.p + (base + j) * (int64_t)a->out.es, 1, (const char *)yb, 1, m);
        }
    }
}

AXON_CLONES static void bn_backward_channel(const bn_args_t *a, int64_t c) {
    double x[AXON_NORM_CHUNK], g[AXON_NORM_CHUNK];
    const double count = (double)(a->n * a->s);
    const double mean = axon_norm_get(&a->mean, c, 0.0);
    const double inv = a->training ? axon_norm_get(&a->inv, c, 0.0)
                                   : 1.0 / sqrt(axon_norm_get(&a->inv, c, 0.0) + a->eps);
    double part_g[AXON_PARTS] = {0}, part_dot[AXON_PARTS] = {0};
    /* Inference grad_in needs neither sum: skip the pass when nothing else does. */
    const int need_sums = a->gw.p || a->gb.p || (a->out.p && a->training);
    for (int64_t n = 0; need_sums && n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->in, x, base + j, m, 0.0);
            axon_norm_load(&a->go, g, base + j, m, 0.0);
            for (int64_t i = 0; i < m; i++) x[i] = g[i] * (x[i] - mean);
            axon_parts_add(part_g, g, m);
            axon_parts_add(part_dot, x, m);
        }
    }
    const double sum_g = axon_parts_total(part_g), dot = axon_parts_total(part_dot);
    axon_norm_put(&a->gw, c, dot * inv);
    axon_norm_put(&a->gb, c, sum_g);
    if (!a->out.p) return;
    const double w = axon_norm_get(&a->w, c, 1.0);
    const double gmean = a->training ? sum_g / count : 0.0, k = a->training ? dot * inv * inv / count : 0.0;
    for (int64_t n = 0; n < a->n; n++) {
        const int64_t base = (n * a->c + c) * a->s;
        for (int64_t j = 0; j < a->s; j += AXON_NORM_CHUNK) {
            int64_t m = bn_min(AXON_NORM_CHUNK, a->s - j);
            axon_norm_load(&a->go, g, base + j, m, 0.0);
            if (a->training) {
                axon_norm_load(&a->in, x, base + j, m, 0.0);
                for (int64_t i = 0; i < m; i++) g[i] = (g[i] - gmean - (x[i] - mean) * k) * inv * w;
            } else {
                for (int64_t i = 0; i < m; i++) g[i] = g[i] * inv * w;
            }
            axon_norm_store(&a->out, g, base + j, m);
        }
    }
}

/* bn_backward_channel in training for float32, float16 and bfloat16 in, grad_out and grad_in of one dtype
 * (a->floats), on runs read as float (float32 in place, halves converted BN_FLOAT_CHUNK at a time) instead of chunks
 * converted into float64 (1.7-2.7x torch CPU's time for float32 that way, 3-4x for bfloat16): the sums in float64 as
 * there, spread over BN_PARTS partial sums (element e of a run into part e % BN_PARTS; chunks are whole multiples of
 * the parts, so a run's order does not depend on its dtype) for independent chains of adds; grad_in in float
 * (8 lanes, no conversions) with the mean split in two floats as group norm does (norm_group.c). */
#define BN_PARTS 32
_Static_assert(BN_FLOAT_CHUNK % BN_PARTS == 0, "chunks keep a run's parts in step");

/* The sums of grad_out and of grad_out times the centred input over channel c, in float64 over BN_PARTS partial
 * sums (in float for 16-bit data, as the forward statistics are, grad_weight of a float32 weight drifted by up to
 * 2e-5 from the float64 reference: the gradients keep float64). */
AXON_CLONES static void bn_grad_sums(const bn_args_t *a, int64_t c, const float *cx, const float *cg, double mean,
                                     double *sum_g, double *dot) {
    float xb[BN_FLOAT_CHUNK], gb[BN_FLOAT_CHUNK];
    double pg[BN_PARTS] = {0}, pd[BN_PARTS] = {0};
    for (int64_t n = 0; n < a->n; n++)
        for (int64_t j = 0; j < a->s; j += BN_FLOAT_CHUNK) {
            const int64_t m = bn_min(BN_FLOAT_CHUNK, a->s - j), bulk = m - m % BN_PARTS;
            const float *x = bn_run(a, &a->in, cx, xb, c, n, j, m);
            const float *g = bn_run(a, &a->go, cg, gb, c, n, j, m);
            for (int64_t i = 0; i < bulk; i += BN_PARTS)
                for (int q = 0; q < BN_PARTS; q++) {
                    pg[q] += (double)g[i + q];
                    pd[q] += (double)g[i + q] * ((double)x[i + q] - mean);
                }
            for (int64_t i = bulk; i < m; i++) {
                pg[i - bulk] += (double)g[i];
                pd[i - bulk] += (double)g[i] * ((double)x[i] - mean);
            }
        }
    for (int q = 0; q < BN_PARTS; q++) *sum_g += pg[q], *dot += pd[q];
}
AXON_CLONES static void bn_backward_channel_float(const bn_args_t *a, int64_t c, const float *cx, const float *cg) {
    float xb[BN_FLOAT_CHUNK], gb[BN_FLOAT_CHUNK], ob[BN_FLOAT_CHUNK];
    const double count = (double)(a->n * a->s);
    const double mean = axon_norm_get(&a->mean, c, 0.0), inv = axon_norm_get(&a->inv, c, 0.0);
    double sum_g = 0.0, dot = 0.0;
    bn_grad_sums(a, c, cx, cg, mean, &sum_g, &dot);
    axon_norm_put(&a->gw, c, dot * inv);
    axon_norm_put(&a->gb, c, sum_g);
    if (!a->out.p) return;
    const double w = axon_norm_get(&a->w, c, 1.0), gmean = sum_g / count, k = dot * inv * inv / count;
    const float gm = (float)gmean, kf = (float)k, sc = (float)(inv * w);
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    for (int64_t n = 0; n < a->n; n++)
        for (int64_t j = 0; j < a->s; j += BN_FLOAT_CHUNK) {
            const int64_t base = (n * a->c + c) * a->s + j, m = bn_min(BN_FLOAT_CHUNK, a->s - j);
            const float *x = bn_run(a, &a->in, cx, xb, c, n, j, m);
            const float *g = bn_run(a, &a->go, cg, gb, c, n, j, m);
            float *dx = a->out_from_float ? ob : (float *)(void *)a->out.p + base;
            for (int64_t i = 0; i < m; i++) dx[i] = ((g[i] - gm) - ((x[i] - mhi) - mlo) * kf) * sc;
            if (a->out_from_float)
                a->out_from_float(a->out.p + base * (int64_t)a->out.es, 1, (const char *)ob, 1, m);
        }
}

/* Training reads a channel two or three times (the statistics, then the output; the gradient's sums, then grad_in):
 * a float16 or bfloat16 channel of at most BN_CHANNEL_FLOATS elements is widened once into floats that every pass
 * reads (L2-sized), instead of converting each run on each pass (half of a bfloat16 [16, 64, 32, 32] training step's
 * time, at 1.9x torch CPU's). */
#define BN_CHANNEL_FLOATS (64 * 1024)
static void bn_widen_channel(const bn_args_t *a, const axon_norm_ref_t *r, int64_t c, float *chan) {
    for (int64_t n = 0; n < a->n; n++)
        a->in_to_float((char *)(chan + n * a->s), 1, r->p + (n * a->c + c) * a->s * (int64_t)r->es, 1, a->s);
}

static void bn_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const bn_args_t *a = ctx;
    const int64_t count = a->n * a->s;
    float *cx = NULL, *cg = NULL;
    if (a->floats && a->in_to_float && a->training && count <= BN_CHANNEL_FLOATS) {
        cx = malloc((size_t)count * sizeof *cx);
        cg = a->backward && cx ? malloc((size_t)count * sizeof *cg) : NULL;
        if (a->backward && !cg) free(cx), cx = NULL; /* out of memory: convert run by run */
    }
    for (int64_t c = begin; c < end; c++) {
        if (cx) bn_widen_channel(a, &a->in, c, cx);
        if (cg) bn_widen_channel(a, &a->go, c, cg);
        if (a->backward && a->floats) bn_backward_channel_float(a, c, cx, cg);
        else if (a->backward) bn_backward_channel(a, c);
        else if (a->floats) bn_forward_channel_float(a, c, cx);
        else bn_forward_channel(a, c);
    }
    free(cx);
    free(cg);
}

/* ---- channels-last ---- */

#define BN_CL_ROWS 32

/* What one parallel pass over the rows does. */
enum { BN_CL_SUM, BN_CL_SQUARES, BN_CL_GRAD_SUMS, BN_CL_FORWARD, BN_CL_BACKWARD, BN_CL_BACKWARD_EVAL };

typedef struct bn_cl_job {
    const bn_args_t *a;
    int pass;
    int64_t rows, nblk;
    double *part;               /* [nblk][2][C]: each block's partial sums */
    double *mean, *k1, *k2, *k3; /* per channel: the mean, and the write passes' coefficients */
} bn_cl_job_t;

/* One row chunk of bn_cl_blocks for float32 tensors: the same float64 arithmetic, read and written as floats
 * instead of through converted stack chunks (which made the generic loop 1.2-1.7x torch CPU's time). */
static inline void bn_cl_row_f32(const bn_args_t *a, int pass, int64_t at, int64_t m, const double *mean,
                                 const double *k1, const double *k2, const double *k3, double *q0, double *q1) {
    const float *x = (const float *)a->in.p + at, *g = a->go.p ? (const float *)a->go.p + at : NULL;
    float *out = a->out.p ? (float *)a->out.p + at : NULL;
    switch (pass) {
    case BN_CL_SUM:
        for (int64_t i = 0; i < m; i++) q0[i] += (double)x[i];
        break;
    case BN_CL_SQUARES:
        for (int64_t i = 0; i < m; i++) q0[i] += ((double)x[i] - mean[i]) * ((double)x[i] - mean[i]);
        break;
    case BN_CL_GRAD_SUMS:
        for (int64_t i = 0; i < m; i++) q0[i] += (double)g[i], q1[i] += (double)g[i] * ((double)x[i] - mean[i]);
        break;
    case BN_CL_FORWARD:
        for (int64_t i = 0; i < m; i++) out[i] = (float)(((double)x[i] - mean[i]) * k1[i] + k2[i]);
        break;
    case BN_CL_BACKWARD:
        for (int64_t i = 0; i < m; i++)
            out[i] = (float)(((double)g[i] - k2[i] - ((double)x[i] - mean[i]) * k3[i]) * k1[i]);
        break;
    default:
        for (int64_t i = 0; i < m; i++) out[i] = (float)((double)g[i] * k1[i]);
    }
}

AXON_CLONES static void bn_cl_blocks(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const bn_cl_job_t *j = ctx;
    const bn_args_t *a = j->a;
    const int64_t C = a->c;
    double x[AXON_NORM_CHUNK], g[AXON_NORM_CHUNK];
    for (int64_t blk = begin; blk < end; blk++) {
        double *p0 = j->part + blk * 2 * C, *p1 = p0 + C;
        if (j->pass <= BN_CL_GRAD_SUMS)
            for (int64_t c = 0; c < 2 * C; c++) p0[c] = 0.0;
        const int64_t r1 = bn_min((blk + 1) * BN_CL_ROWS, j->rows);
        for (int64_t r = blk * BN_CL_ROWS; r < r1; r++)
            for (int64_t c0 = 0; c0 < C; c0 += AXON_NORM_CHUNK) {
                const int64_t m = bn_min(AXON_NORM_CHUNK, C - c0), at = r * C + c0;
                const double *mean = j->mean + c0, *k1 = j->k1 + c0, *k2 = j->k2 + c0, *k3 = j->k3 + c0;
                double *q0 = p0 + c0, *q1 = p1 + c0;
                if (a->f32) {
                    bn_cl_row_f32(a, j->pass, at, m, mean, k1, k2, k3, q0, q1);
                    continue;
                }
                if (j->pass != BN_CL_BACKWARD_EVAL) axon_norm_load(&a->in, x, at, m, 0.0);
                if (j->pass >= BN_CL_GRAD_SUMS && j->pass != BN_CL_FORWARD) axon_norm_load(&a->go, g, at, m, 0.0);
                switch (j->pass) {
                case BN_CL_SUM:
                    for (int64_t i = 0; i < m; i++) q0[i] += x[i];
                    break;
                case BN_CL_SQUARES:
                    for (int64_t i = 0; i < m; i++) q0[i] += (x[i] - mean[i]) * (x[i] - mean[i]);
                    break;
                case BN_CL_GRAD_SUMS:
                    for (int64_t i = 0; i < m; i++) q0[i] += g[i], q1[i] += g[i] * (x[i] - mean[i]);
                    break;
                case BN_CL_FORWARD: /* k1 = scale, k2 = shift */
                    for (int64_t i = 0; i < m; i++) x[i] = (x[i] - mean[i]) * k1[i] + k2[i];
                    axon_norm_store(&a->out, x, at, m);
                    break;
                case BN_CL_BACKWARD: /* k1 = invstd * weight, k2 = mean of g, k3 = dot * invstd^2 / M */
                    for (int64_t i = 0; i < m; i++) g[i] = (g[i] - k2[i] - (x[i] - mean[i]) * k3[i]) * k1[i];
                    axon_norm_store(&a->out, g, at, m);
                    break;
                default: /* BN_CL_BACKWARD_EVAL: k1 = invstd * weight */
                    for (int64_t i = 0; i < m; i++) g[i] *= k1[i];
                    axon_norm_store(&a->out, g, at, m);
                }
            }
    }
}

/* Run one pass; for the summing passes, add the blocks' partials in block order into total0 (and total1). */
static void bn_cl_pass(bn_cl_job_t *j, const axon_exec_t *ex, int pass, double *total0, double *total1) {
    const int64_t C = j->a->c;
    j->pass = pass;
    const int64_t grain = AXON_KERNEL_GRAIN / (BN_CL_ROWS * C) + 1;
    axon_parallel_for(ex->pool, 0, j->nblk, grain, bn_cl_blocks, j);
    if (pass > BN_CL_GRAD_SUMS) return;
    for (int64_t c = 0; c < C; c++) total0[c] = 0.0, total1[c] = 0.0;
    for (int64_t b = 0; b < j->nblk; b++)
        for (int64_t c = 0; c < C; c++) total0[c] += j->part[b * 2 * C + c], total1[c] += j->part[(b * 2 + 1) * C + c];
}

static axon_status_t bn_cl_kernel(const bn_args_t *a, const axon_exec_t *ex) {
    const int64_t C = a->c;
    bn_cl_job_t j;
    memset(&j, 0, sizeof j);
    j.a = a, j.rows = a->n * a->s, j.nblk = (j.rows + BN_CL_ROWS - 1) / BN_CL_ROWS;
    double *buf = malloc(sizeof(double) * (size_t)(2 * C * (j.nblk > 0 ? j.nblk : 1) + 6 * C));
    if (buf == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: host scratch for %lld x %lld partial sums",
                         a->backward ? "batch_norm_backward" : "batch_norm", (long long)j.nblk, (long long)C);
    j.part = buf, j.mean = buf + 2 * C * (j.nblk > 0 ? j.nblk : 1);
    j.k1 = j.mean + C, j.k2 = j.k1 + C, j.k3 = j.k2 + C;
    double *t0 = j.k3 + C, *t1 = t0 + C;
    const double count = (double)j.rows;
    if (!a->backward) {
        if (a->training) {
            bn_cl_pass(&j, ex, BN_CL_SUM, t0, t1);
            for (int64_t c = 0; c < C; c++) j.mean[c] = t0[c] / count;
            bn_cl_pass(&j, ex, BN_CL_SQUARES, t0, t1);
        }
        for (int64_t c = 0; c < C; c++) {
            double invstd;
            if (a->training) {
                invstd = bn_training_stats(a, c, j.mean[c], t0[c]);
            } else {
                j.mean[c] = axon_norm_get(&a->rmean, c, 0.0);
                invstd = 1.0 / sqrt(axon_norm_get(&a->rvar, c, 0.0) + a->eps);
            }
            j.k1[c] = invstd * axon_norm_get(&a->w, c, 1.0), j.k2[c] = axon_norm_get(&a->b, c, 0.0);
        }
        bn_cl_pass(&j, ex, BN_CL_FORWARD, NULL, NULL);
        free(buf);
        return AXON_OK;
    }
    for (int64_t c = 0; c < C; c++) {
        j.mean[c] = axon_norm_get(&a->mean, c, 0.0);
        j.k3[c] = a->training ? axon_norm_get(&a->inv, c, 0.0) : 1.0 / sqrt(axon_norm_get(&a->inv, c, 0.0) + a->eps);
    }
    const int need_sums = a->gw.p || a->gb.p || (a->out.p && a->training);
    if (need_sums) bn_cl_pass(&j, ex, BN_CL_GRAD_SUMS, t0, t1);
    for (int64_t c = 0; c < C; c++) {
        const double inv = j.k3[c], sum_g = need_sums ? t0[c] : 0.0, dot = need_sums ? t1[c] : 0.0;
        axon_norm_put(&a->gw, c, dot * inv);
        axon_norm_put(&a->gb, c, sum_g);
        j.k1[c] = inv * axon_norm_get(&a->w, c, 1.0);
        j.k2[c] = a->training ? sum_g / count : 0.0;
        j.k3[c] = a->training ? dot * inv * inv / count : 0.0;
    }
    if (a->out.p && j.rows > 0) bn_cl_pass(&j, ex, a->training ? BN_CL_BACKWARD : BN_CL_BACKWARD_EVAL, NULL, NULL);
    free(buf);
    return AXON_OK;
}

static axon_status_t bn_kernel(const void *args, const axon_exec_t *ex) {
    const bn_args_t *a = args;
    if (a->cl) return bn_cl_kernel(a, ex);
    const int64_t per = a->n * a->s > 0 ? a->n * a->s : 1;
    int64_t grain = AXON_KERNEL_GRAIN / per;
    axon_parallel_for(ex->pool, 0, a->c, grain < 1 ? 1 : grain, bn_range, (void *)a);
    return AXON_OK;
}

/* Layouts an image operand (in, out, grad_out, grad_in) may have; a call needs one they all share. */
enum { BN_CONTIGUOUS = 1, BN_CHANNELS_LAST = 2 };

/* t as the norm checks see it: a channels-last t that is not also contiguous is described to them with contiguous
 * strides (same data, dtype and shape), in *twin. *layouts keeps the layouts every image operand so far has; a t in
 * neither layout is passed on as it is, for the checks to refuse. */
static const axon_tensor_t *bn_image(const axon_tensor_t *t, axon_tensor_t *twin, int *layouts) {
    if (t == NULL || axon_tensor_check(t, "batch_norm") != AXON_OK) return t;
    const int has = (axon_tensor_is_contiguous(t) ? BN_CONTIGUOUS : 0) |
                    (axon_tensor_is_channels_last(t) ? BN_CHANNELS_LAST : 0);
    if (has == 0) return t;
    *layouts &= has;
    if (has & BN_CONTIGUOUS) return t;
    *twin = axon_tensor_row_major(t);
    return twin;
}

static axon_status_t bn_layouts(const char *op, int layouts) {
    if (layouts != 0) return AXON_OK;
    return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the input and output tensors must share one layout, all contiguous "
                     "or all channels-last", op);
}

/* in's [N, C, S] split, after in's own check. */
static axon_status_t bn_shape(const char *op, const axon_tensor_t *in, int64_t *n, int64_t *c, int64_t *s) {
    axon_status_t st = axon_norm_check(op, "in", in, 0, in, 0);
    if (st != AXON_OK) return st;
    if (in->ndim < 2) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in must have ndim >= 2, got %d", op, in->ndim);
    *n = in->sizes[0], *c = in->sizes[1], *s = 1;
    for (int i = 2; i < in->ndim; i++) *s *= in->sizes[i];
    return AXON_OK;
}

static axon_status_t bn_enqueue(axon_stream_t s, const bn_args_t *a, const char *op, const axon_tensor_t *in) {
    if (a->n * a->c * a->s == 0) return AXON_OK;
    axon_launch_t l = {bn_kernel, a, sizeof *a, op,
                       (uint64_t)axon_tensor_numel(in) * (a->backward ? 3u : 2u) * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_batch_norm(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *save_mean,
                                     const axon_tensor_t *save_invstd, const axon_tensor_t *running_mean,
                                     const axon_tensor_t *running_var, const axon_tensor_t *in,
                                     const axon_tensor_t *weight, const axon_tensor_t *bias, int training,
                                     double momentum, double eps) {
    const char *op = "batch_norm";
    axon_status_t st;
    int64_t n = 0, c = 0, sp = 0;
    if (in == NULL || out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, in == NULL ? "in" : "out");
    int layouts = BN_CONTIGUOUS | BN_CHANNELS_LAST;
    axon_tensor_t in_twin, out_twin;
    const axon_tensor_t *in_c = bn_image(in, &in_twin, &layouts), *out_c = bn_image(out, &out_twin, &layouts);
    if ((st = bn_shape(op, in_c, &n, &c, &sp)) != AXON_OK) return st;
    if ((st = axon_norm_check(op, "out", out_c, 0, in_c, 1)) != AXON_OK || (st = bn_layouts(op, layouts)) != AXON_OK ||
        (st = axon_norm_check(op, "weight", weight, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "bias", bias, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "running_mean", running_mean, c, NULL, training)) != AXON_OK ||
        (st = axon_norm_check(op, "running_var", running_var, c, NULL, training)) != AXON_OK ||
        (st = axon_norm_check(op, "save_mean", save_mean, c, NULL, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "save_invstd", save_invstd, c, NULL, 1)) != AXON_OK)
        return st;
    if (!training && (running_mean == NULL || running_var == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: inference needs running_mean and running_var", op);
    if (!training && (save_mean || save_invstd))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: inference computes no save_mean or save_invstd", op);
    bn_args_t a;
    memset(&a, 0, sizeof a);
    a.training = training != 0;
    a.cl = !(layouts & BN_CONTIGUOUS);
    a.f32 = a.cl && in->dtype == AXON_FLOAT32 && out->dtype == AXON_FLOAT32;
    const axon_dtype_t h = in->dtype;
    a.floats = !a.cl && (h == AXON_FLOAT32 || h == AXON_FLOAT16 || h == AXON_BFLOAT16) && out->dtype == h;
    if (a.floats && h != AXON_FLOAT32)
        a.in_to_float = axon_convert_get(h, AXON_FLOAT32), a.out_from_float = axon_convert_get(AXON_FLOAT32, h);
    a.n = n, a.c = c, a.s = sp;
    a.momentum = momentum, a.eps = eps;
    a.out = axon_norm_ref(out), a.in = axon_norm_ref(in), a.w = axon_norm_ref(weight), a.b = axon_norm_ref(bias);
    a.smean = axon_norm_ref(save_mean), a.sinv = axon_norm_ref(save_invstd);
    a.rmean = axon_norm_ref(running_mean), a.rvar = axon_norm_ref(running_var);
    return bn_enqueue(s, &a, op, in);
}

axon_status_t axon_kernel_batch_norm_backward(axon_stream_t s, const axon_tensor_t *grad_in,
                                              const axon_tensor_t *grad_weight, const axon_tensor_t *grad_bias,
                                              const axon_tensor_t *grad_out, const axon_tensor_t *in,
                                              const axon_tensor_t *weight, const axon_tensor_t *mean,
                                              const axon_tensor_t *invstd, int training, double eps) {
    const char *op = "batch_norm_backward";
    const char *inv_role = training ? "invstd" : "running_var";
    axon_status_t st;
    int64_t n = 0, c = 0, sp = 0;
    if (in == NULL || grad_out == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, in == NULL ? "in" : "grad_out");
    int layouts = BN_CONTIGUOUS | BN_CHANNELS_LAST;
    axon_tensor_t twins[3];
    const axon_tensor_t *in_c = bn_image(in, &twins[0], &layouts), *go_c = bn_image(grad_out, &twins[1], &layouts);
    const axon_tensor_t *gi_c = bn_image(grad_in, &twins[2], &layouts);
    if ((st = bn_shape(op, in_c, &n, &c, &sp)) != AXON_OK) return st;
    if (mean == NULL || invstd == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", op, mean == NULL ? "mean" : inv_role);
    if ((st = axon_norm_check(op, "grad_out", go_c, 0, in_c, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_in", gi_c, 0, in_c, 1)) != AXON_OK ||
        (st = bn_layouts(op, layouts)) != AXON_OK ||
        (st = axon_norm_check(op, "weight", weight, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "mean", mean, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, inv_role, invstd, c, NULL, 0)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_weight", grad_weight, c, NULL, 1)) != AXON_OK ||
        (st = axon_norm_check(op, "grad_bias", grad_bias, c, NULL, 1)) != AXON_OK)
        return st;
    if (!grad_in && !grad_weight && !grad_bias) return AXON_OK;
    bn_args_t a;
    memset(&a, 0, sizeof a);
    a.training = training != 0, a.backward = 1;
    a.cl = !(layouts & BN_CONTIGUOUS);
    a.n = n, a.c = c, a.s = sp;
    a.eps = eps;
    a.out = axon_norm_ref(grad_in), a.in = axon_norm_ref(in), a.go = axon_norm_ref(grad_out);
    a.w = axon_norm_ref(weight), a.mean = axon_norm_ref(mean), a.inv = axon_norm_ref(invstd);
    a.gw = axon_norm_ref(grad_weight), a.gb = axon_norm_ref(grad_bias);
    a.f32 = a.cl && in->dtype == AXON_FLOAT32 && grad_out->dtype == AXON_FLOAT32 &&
            (!grad_in || grad_in->dtype == AXON_FLOAT32);
    const axon_dtype_t h = in->dtype;
    a.floats = !a.cl && a.training && (h == AXON_FLOAT32 || h == AXON_FLOAT16 || h == AXON_BFLOAT16) &&
               grad_out->dtype == h && (!grad_in || grad_in->dtype == h);
    if (a.floats && h != AXON_FLOAT32)
        a.in_to_float = axon_convert_get(h, AXON_FLOAT32), a.out_from_float = axon_convert_get(AXON_FLOAT32, h);
    if (n * sp == 0 && c > 0 && (grad_weight || grad_bias)) {
        /* No elements: the sums are zero, but grad_weight and grad_bias still have C values to write. */
        a.n = 1, a.s = 0;
    }
    if (a.n * a.c * a.s == 0 && !(a.c > 0 && (grad_weight || grad_bias))) return AXON_OK;
    axon_launch_t l = {bn_kernel, &a, sizeof a, op, (uint64_t)axon_tensor_numel(in) * 3u * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}
