/* The convolution command (conv_impl.h): its four phases on the device's pool, each an im2col/col2im plus GEMM.
 *
 * Work units and why:
 *   1. y = conv(x, w): one unit per (batch element, group, block of output positions). Blocks keep the column
 *      buffer near CONV_COL_ELEMS elements (cache-sized, bounded whatever the image) and give the pool enough units
 *      when the batch is small. Units write disjoint parts of y.
 *   2. x = conv^T(y, w): one unit per (batch element, group, block of x's channels). Patches overlap, so blocks of
 *      output positions would write the same x elements; blocks of channels do not (a channel's column rows are
 *      its own), so a unit owns all of its channels' positions and accumulates them in scratch.
 *   3. dW: a sum over the batch. The batch is cut into one or two chunks per participant; each chunk sums
 *      into its own copy of dW, and the copies are added in chunk order. Units (chunk, group, block of x's channels)
 *      write disjoint columns of a copy and gather only their own channels' column rows.
 * Channels are split only when batch and groups alone give fewer than two units per participant.
 * Small images (float32 and float64, ce_fold): phases 1-3 put several images' columns side by side in one block,
 * units (block of images, group[, channels]) and (chunk, group, channels), so that products are not a few dozen
 * columns wide.
 * Layers whose output channels each read one input channel (depthwise) run phases 1-3 in conv_depthwise.c instead,
 * and float32 phases that conv_onednn.c takes (conv_impl.h: conv_onednn_phase) run on oneDNN's direct kernels.
 *   4. dbias: one unit per channel, summing in float64 in a fixed order.
 * Each participant mallocs its scratch once per parallel-for call, not per unit; a failed malloc is remembered and
 * reported as OUT_OF_MEMORY after the phase.
 *
 * bfloat16 and float16 forwards that conv_onednn.c leaves (all float16 ones, and bfloat16 ones with fewer images
 * than threads with groups) go to oneDNN's matmul (gemm_impl.h's axon_gemm_lowp: the CPU's bf16/fp16 dot
 * instructions or AMX, several times the float32 rate) when it is built in and offers both block shapes, and so do
 * float32 ones but 1x1 convolutions of stride 1 (ce_lowp_setup says why); the columns are then gathered in the
 * tensor's own dtype. The bias rides in the product as an extra column of the weight matrix against a row of ones in
 * the column buffer, so it is added in float32 before the one rounding, as on the float32 path. The
 * other phases, and half types without oneDNN, convert to float32. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"
#include "gemm_impl.h"
#include "internal.h"

/* Column-buffer budget per participant: 2^18 elements (1 MiB of float32). */
#define CONV_COL_ELEMS ((int64_t)1 << 18)
/* Most output positions of folded images in one product (ce_fold). */
#define CONV_FOLD_COLS 2048
/* Most bytes of phase 3's per-chunk copies of dW with two chunks per participant. */
#define CONV_DW_COPIES (32.0 * 1024 * 1024)

typedef struct conv_job {
    const conv_args_t *a;
    const conv_geom_t *g;
    axon_dtype_t cdt;                /* the compute dtype: float32, float64, or int64 (forward only, wrapping) */
    int direct;                      /* dt is the compute dtype: tensors are used in place */
    size_t es, esc;                  /* bytes per element of dt and of the compute dtype */
    axon_convert_fn ld, st;          /* dt -> compute dtype, compute dtype -> dt */
    const char *w;                   /* the weight in the compute dtype */
    const char *bias;                /* phase 1 or 2's bias in the compute dtype, or NULL */
    int64_t nb, nblk;                /* output positions per block, blocks per image */
    int64_t cb, ncb;                 /* phases 2 and 3: x channels per unit, channel blocks per group */
    int64_t nch;                     /* phase 3: batch chunks */
    char *parts;                     /* phase 3: nch copies of dW in the compute dtype */
    int lowp;                        /* phase 1 through oneDNN */
    char *wl;                        /* its weight matrix in dt: cy x kl, W with the bias as last column */
    int64_t kl;                      /* rows, plus 1 with a bias */
    int identity;                    /* 1x1 kernel, stride 1, no padding: the column buffer would be x itself */
    int64_t fold;                    /* images per column block (ce_fold); 1: blocks within one image */
    atomic_int failed;
} conv_job_t;

static int64_t ce_min(int64_t a, int64_t b) { return a < b ? a : b; }

static int ce_gemm(const conv_job_t *j, int ta, int tb, int64_t m, int64_t n, int64_t k, const char *a,
                   int64_t lda, const char *b, int64_t ldb, double beta, char *c, int64_t ldc) {
    if (j->cdt == AXON_INT64) {
        axon_gemm_i64(ta, tb, m, n, k, 1, (const int64_t *)a, lda, (const int64_t *)b, ldb, (int64_t)beta,
                      (int64_t *)c, ldc);
        return 0;
    }
    if (j->cdt == AXON_FLOAT64)
        return axon_gemm_f64(ta, tb, m, n, k, 1.0, (const double *)a, lda, (const double *)b, ldb, beta,
                             (double *)c, ldc);
    return axon_gemm_f32(ta, tb, m, n, k, 1.0f, (const float *)a, lda, (const float *)b, ldb, (float)beta,
                         (float *)c, ldc);
}

/* rows x m matrix c (row stride ldc) = bias[row] (or 0 without bias), in the compute dtype. */
static void ce_prefill(const conv_job_t *j, char *c, int64_t ldc, const char *bias, int64_t rows, int64_t m) {
    for (int64_t r = 0; r < rows; r++) {
        char *row = c + (size_t)(r * ldc) * j->esc;
        if (bias == NULL) {
            memset(row, 0, (size_t)m * j->esc);
        } else if (j->esc == 8) { /* float64 or int64: the bias's bits */
            uint64_t v;
            memcpy(&v, bias + (size_t)r * 8, 8);
            for (int64_t i = 0; i < m; i++) ((uint64_t *)row)[i] = v;
        } else {
            float v = ((const float *)bias)[r];
            for (int64_t i = 0; i < m; i++) ((float *)row)[i] = v;
        }
    }
}

/* The cyg x m block of Y at (n, group gi, positions p0..) as a compute-dtype matrix: in place when Y already is in
 * the compute dtype, else converted into buf. Returns the matrix; *ld its row stride. */
static const char *ce_yblock(const conv_job_t *j, const char *y, int64_t n, int64_t gi, int64_t p0, int64_t m,
                             char *buf, int64_t *ld) {
    const conv_geom_t *g = j->g;
    const char *src = y + (size_t)((n * g->cy + gi * g->cyg) * g->ysp + p0) * j->es;
    if (buf == NULL) {
        *ld = g->ysp;
        return src;
    }
    for (int64_t r = 0; r < g->cyg; r++)
        j->ld(buf + (size_t)(r * m) * j->esc, 1, src + (size_t)(r * g->ysp) * j->es, 1, m);
    *ld = m;
    return buf;
}

/* ---- phase 1: y = conv(x, w) + bias ---- */

/* The oneDNN product for a block of m output positions of group gi; col and c are dense scratch in dt. */
static axon_gemm_lowp_t ce_lowp_op(const conv_job_t *j, int64_t gi, int64_t m, const char *col, char *c) {
    axon_gemm_lowp_t o;
    memset(&o, 0, sizeof o);
    o.dtype = j->a->dt;
    o.nthreads = 1; /* one pool participant per call, as gemm.c does */
    o.bsz = 1, o.m = j->g->cyg, o.n = m, o.k = j->kl;
    o.a = j->wl ? j->wl + (size_t)(gi * j->g->cyg * j->kl) * j->es : NULL;
    o.a_rs = j->kl, o.a_cs = 1;
    o.b = col, o.b_rs = m, o.b_cs = 1;
    o.c = c, o.ldc = m;
    o.alpha = 1.0f, o.beta = 0.0f;
    return o;
}

static void ce_forward_lowp(conv_job_t *j, int64_t begin, int64_t end) {
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    const float one = 1.0f;
    axon_convert_fn same = axon_convert_get(a->dt, a->dt), ones = axon_convert_get(AXON_FLOAT32, a->dt);
    char *col = malloc((size_t)(j->kl * j->nb + 1) * j->es), *c = malloc((size_t)(g->cyg * j->nb + 1) * j->es);
    if (col == NULL || c == NULL) {
        atomic_store(&j->failed, 1);
        goto done;
    }
    for (int64_t u = begin; u < end; u++) {
        const int64_t n = u / (g->groups * j->nblk), gi = u / j->nblk % g->groups, p0 = u % j->nblk * j->nb;
        const int64_t m = ce_min(j->nb, g->ysp - p0);
        const char *x = a->x_in + (size_t)((n * g->cx + gi * g->cxg) * g->xsp) * j->es;
        conv_im2col(g, x, j->es, same, col, j->es, p0, m, g->rows);
        if (j->kl > g->rows) ones(col + (size_t)(g->rows * m) * j->es, 1, (const char *)&one, 0, m);
        axon_gemm_lowp_t o = ce_lowp_op(j, gi, m, col, c);
        if (axon_gemm_lowp(&o) != 0) {
            atomic_store(&j->failed, 1);
            continue;
        }
        char *y = a->y_out + (size_t)((n * g->cy + gi * g->cyg) * g->ysp + p0) * j->es;
        for (int64_t r = 0; r < g->cyg; r++)
            memcpy(y + (size_t)(r * g->ysp) * j->es, c + (size_t)(r * m) * j->es, (size_t)m * j->es);
    }
done:
    free(col);
    free(c);
}

/* Whether phase 1 can go to oneDNN; builds j->wl. 1 yes, 0 no, -1 out of memory. */
static int ce_lowp_setup(conv_job_t *j) {
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    /* float32 too: oneDNN's brgemm beat sgemm over the column buffer, whose products have only as many rows as the
     * layer has output channels (Zen 4 host, 2 threads: 3x3, 5x5 and 7x7 layers 1.1-1.5x faster), except where the
     * sgemm path reads x in place (a 1x1 convolution of stride 1: 1.4x slower through oneDNN's column copy). */
    const int f32 = a->dt == AXON_FLOAT32 && !j->identity;
    if ((a->dt != AXON_BFLOAT16 && a->dt != AXON_FLOAT16 && !f32) || g->rows == 0 || g->cyg == 0 ||
        !axon_gemm_lowp_available())
        return 0;
    j->kl = g->rows + (a->bias_y ? 1 : 0);
    const int64_t tail = g->ysp - (j->nblk - 1) * j->nb;
    axon_gemm_lowp_t full = ce_lowp_op(j, 0, j->nb, NULL, NULL), last = ce_lowp_op(j, 0, tail, NULL, NULL);
    int rc = axon_gemm_lowp_prepare(&full);
    if (rc == 0) rc = axon_gemm_lowp_prepare(&last);
    if (rc != 0) return rc < 0 ? -1 : 0;
    if ((j->wl = malloc((size_t)(g->cy * j->kl) * j->es)) == NULL) return -1;
    for (int64_t o = 0; o < g->cy; o++) {
        char *row = j->wl + (size_t)(o * j->kl) * j->es;
        memcpy(row, a->w + (size_t)(o * g->rows) * j->es, (size_t)g->rows * j->es);
        if (a->bias_y) memcpy(row + (size_t)g->rows * j->es, a->bias_y + (size_t)o * j->es, j->es);
    }
    return 1;
}

/* ---- folded blocks: the columns of several images side by side (ce_fold) ---- */

/* The columns of images n0 .. n0 + nf - 1 of group gi (rows c0 * ksp .. + nrows of the group's column rows) into col,
 * image f's at columns f * ysp .., rows ld elements apart. */
static void ce_fold_im2col(const conv_job_t *j, const char *xbase, int64_t n0, int64_t nf, int64_t gi, int64_t c0,
                           int64_t nrows, char *col, int64_t ld) {
    const conv_geom_t *g = j->g;
    for (int64_t f = 0; f < nf; f++) {
        const char *x = xbase + (size_t)(((n0 + f) * g->cx + gi * g->cxg + c0) * g->xsp) * j->es;
        char *dst = col + (size_t)(f * g->ysp) * j->esc;
        if (j->identity)
            for (int64_t r = 0; r < nrows; r++)
                j->ld(dst + (size_t)(r * ld) * j->esc, 1, x + (size_t)(r * g->xsp) * j->es, 1, g->ysp);
        else
            conv_im2col_ld(g, x, j->es, j->ld, dst, j->esc, 0, g->ysp, nrows, ld);
    }
}

/* Y's planes of group gi for images n0 .. n0 + nf - 1 as one compute-dtype matrix: row r (channel gi * cyg + r)
 * holds image f's plane at columns f * ysp .., rows ld elements apart. */
static void ce_fold_y(const conv_job_t *j, const char *ybase, int64_t n0, int64_t nf, int64_t gi, char *buf,
                      int64_t ld) {
    const conv_geom_t *g = j->g;
    for (int64_t f = 0; f < nf; f++)
        for (int64_t r = 0; r < g->cyg; r++)
            j->ld(buf + (size_t)(r * ld + f * g->ysp) * j->esc, 1,
                  ybase + (size_t)(((n0 + f) * g->cy + gi * g->cyg + r) * g->ysp) * j->es, 1, g->ysp);
}

/* Phase 1 over folded blocks: unit u = (block of `fold` images, group); one product per unit. */
static void ce_forward_folded(conv_job_t *j, int64_t begin, int64_t end) {
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    const int64_t M = j->fold * g->ysp;
    char *col = malloc((size_t)(g->rows * M + 1) * j->esc), *c = malloc((size_t)(g->cyg * M + 1) * j->esc);
    if (col == NULL || c == NULL) {
        atomic_store(&j->failed, 1);
        goto done;
    }
    for (int64_t u = begin; u < end; u++) {
        const int64_t gi = u % g->groups, n0 = u / g->groups * j->fold, nf = ce_min(j->fold, g->batch - n0);
        const int64_t m = nf * g->ysp;
        const char *bias = j->bias ? j->bias + (size_t)(gi * g->cyg) * j->esc : NULL;
        double beta = 0.0;
        if (bias || g->rows == 0) {
            ce_prefill(j, c, M, bias, g->cyg, m);
            beta = 1.0;
        }
        if (g->rows > 0) {
            ce_fold_im2col(j, a->x_in, n0, nf, gi, 0, g->rows, col, M);
            const char *w = j->w + (size_t)(gi * g->cyg * g->rows) * j->esc;
            if (ce_gemm(j, 0, 0, g->cyg, m, g->rows, w, g->rows, col, M, beta, c, M) != 0) atomic_store(&j->failed, 1);
        }
        for (int64_t f = 0; f < nf; f++)
            for (int64_t r = 0; r < g->cyg; r++)
                j->st(a->y_out + (size_t)(((n0 + f) * g->cy + gi * g->cyg + r) * g->ysp) * j->es, 1,
                      c + (size_t)(r * M + f * g->ysp) * j->esc, 1, g->ysp);
    }
done:
    free(col);
    free(c);
}

static void ce_forward(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    conv_job_t *j = ctx;
    if (j->lowp) {
        ce_forward_lowp(j, begin, end);
        return;
    }
    if (j->fold > 1) {
        ce_forward_folded(j, begin, end);
        return;
    }
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    const int direct = j->direct;
    char *col = malloc((size_t)(g->rows * j->nb + 1) * j->esc);
    char *cbuf = direct ? NULL : malloc((size_t)(g->cyg * j->nb + 1) * j->esc);
    if (col == NULL || (!direct && cbuf == NULL)) {
        atomic_store(&j->failed, 1);
        goto done;
    }
    for (int64_t u = begin; u < end; u++) {
        const int64_t n = u / (g->groups * j->nblk), gi = u / j->nblk % g->groups, p0 = u % j->nblk * j->nb;
        const int64_t m = ce_min(j->nb, g->ysp - p0);
        char *y = a->y_out + (size_t)((n * g->cy + gi * g->cyg) * g->ysp + p0) * j->es;
        char *c = direct ? y : cbuf;
        const int64_t ldc = direct ? g->ysp : m;
        const char *bias = j->bias ? j->bias + (size_t)(gi * g->cyg) * j->esc : NULL;
        double beta = 0.0;
        if (bias || g->rows == 0) {
            ce_prefill(j, c, ldc, bias, g->cyg, m);
            beta = 1.0;
        }
        if (g->rows > 0) {
            const char *x = a->x_in + (size_t)((n * g->cx + gi * g->cxg) * g->xsp) * j->es;
            const char *b = col;
            int64_t ldb = m;
            if (j->identity && direct) b = x + (size_t)p0 * j->es, ldb = g->xsp;
            else conv_im2col(g, x, j->es, j->ld, col, j->esc, p0, m, g->rows);
            const char *w = j->w + (size_t)(gi * g->cyg * g->rows) * j->esc;
            if (ce_gemm(j, 0, 0, g->cyg, m, g->rows, w, g->rows, b, ldb, beta, c, ldc) != 0)
                atomic_store(&j->failed, 1);
        }
        if (!direct)
            for (int64_t r = 0; r < g->cyg; r++)
                j->st(y + (size_t)(r * g->ysp) * j->es, 1, cbuf + (size_t)(r * m) * j->esc, 1, m);
    }
done:
    free(col);
    free(cbuf);
}

/* ---- phase 2: x = conv^T(y, w) + bias ---- */

/* acc (cn channels of xsp elements, compute dtype) += bias of those channels. */
static void ce_add_bias(const conv_job_t *j, char *acc, const char *bias, int64_t cn) {
    const conv_geom_t *g = j->g;
    for (int64_t c = 0; c < cn; c++)
        for (int64_t i = 0; i < g->xsp; i++) {
            if (j->cdt == AXON_INT64) ((uint64_t *)acc)[c * g->xsp + i] += ((const uint64_t *)bias)[c];
            else if (j->cdt == AXON_FLOAT64) ((double *)acc)[c * g->xsp + i] += ((const double *)bias)[c];
            else ((float *)acc)[c * g->xsp + i] += ((const float *)bias)[c];
        }
}

/* Phase 2 over folded blocks: unit u = (block of `fold` images, group, block of x's channels); one product per unit
 * into the folded columns, then each image's col2im. */
static void ce_backward_data_folded(conv_job_t *j, int64_t begin, int64_t end) {
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    const int64_t M = j->fold * g->ysp;
    char *col = malloc((size_t)(g->rows * M + 1) * j->esc), *ybuf = malloc((size_t)(g->cyg * M + 1) * j->esc);
    char *acc = malloc((size_t)(j->cb * g->xsp + 1) * j->esc);
    if (col == NULL || ybuf == NULL || acc == NULL) {
        atomic_store(&j->failed, 1);
        goto done;
    }
    for (int64_t u = begin; u < end; u++) {
        const int64_t b = u / (g->groups * j->ncb), gi = u / j->ncb % g->groups, c0 = u % j->ncb * j->cb;
        const int64_t n0 = b * j->fold, nf = ce_min(j->fold, g->batch - n0), m = nf * g->ysp;
        const int64_t cn = ce_min(j->cb, g->cxg - c0), nrows = cn * g->ksp;
        const char *w = j->w + (size_t)(gi * g->cyg * g->rows + c0 * g->ksp) * j->esc;
        const int have = g->cyg > 0 && nrows > 0;
        if (have) {
            ce_fold_y(j, a->y_in, n0, nf, gi, ybuf, M);
            /* col (nrows x m) = W_g[:, block]^T (nrows x cyg) @ the images' Y (cyg x m) */
            if (ce_gemm(j, 1, 0, nrows, m, g->cyg, w, g->rows, ybuf, M, 0.0, col, M) != 0) atomic_store(&j->failed, 1);
        }
        for (int64_t f = 0; f < nf; f++) {
            memset(acc, 0, (size_t)(cn * g->xsp) * j->esc);
            if (have && j->identity)
                for (int64_t r = 0; r < nrows; r++)
                    memcpy(acc + (size_t)(r * g->xsp) * j->esc, col + (size_t)(r * M + f * g->ysp) * j->esc,
                           (size_t)g->ysp * j->esc);
            else if (have)
                conv_col2im_ld(g, col + (size_t)(f * g->ysp) * j->esc, acc, j->cdt, 0, g->ysp, nrows, M);
            if (j->bias) ce_add_bias(j, acc, j->bias + (size_t)(gi * g->cxg + c0) * j->esc, cn);
            j->st(a->x_out + (size_t)(((n0 + f) * g->cx + gi * g->cxg + c0) * g->xsp) * j->es, 1, acc, 1,
                  cn * g->xsp);
        }
    }
done:
    free(col);
    free(ybuf);
    free(acc);
}

static void ce_backward_data(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    conv_job_t *j = ctx;
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    if (j->fold > 1) {
        ce_backward_data_folded(j, begin, end);
        return;
    }
    const int convert = !j->direct;
    char *col = malloc((size_t)(g->rows * j->nb + 1) * j->esc);
    char *ybuf = convert ? malloc((size_t)(g->cyg * j->nb + 1) * j->esc) : NULL;
    char *acc = malloc((size_t)(j->cb * g->xsp + 1) * j->esc);
    if (col == NULL || acc == NULL || (convert && ybuf == NULL)) {
        atomic_store(&j->failed, 1);
        goto done;
    }
    for (int64_t u = begin; u < end; u++) {
        const int64_t n = u / (g->groups * j->ncb), gi = u / j->ncb % g->groups, c0 = u % j->ncb * j->cb;
        const int64_t cn = ce_min(j->cb, g->cxg - c0), nrows = cn * g->ksp;
        memset(acc, 0, (size_t)(cn * g->xsp) * j->esc);
        /* Columns c0 * ksp .. of the group's weight matrix (cyg x rows) */
        const char *w = j->w + (size_t)(gi * g->cyg * g->rows + c0 * g->ksp) * j->esc;
        for (int64_t p0 = 0; p0 < g->ysp && g->cyg > 0 && nrows > 0; p0 += j->nb) {
            const int64_t m = ce_min(j->nb, g->ysp - p0);
            int64_t ldy;
            const char *yb = ce_yblock(j, a->y_in, n, gi, p0, m, ybuf, &ldy);
            /* col (nrows x m) = W_g[:, block]^T (nrows x cyg) @ Y block (cyg x m); col2im of a 1x1 kernel is the
             * identity, so the product then goes straight into acc. */
            int rc;
            if (j->identity) {
                rc = ce_gemm(j, 1, 0, nrows, m, g->cyg, w, g->rows, yb, ldy, 1.0, acc + (size_t)p0 * j->esc, g->xsp);
            } else {
                rc = ce_gemm(j, 1, 0, nrows, m, g->cyg, w, g->rows, yb, ldy, 0.0, col, m);
                if (rc == 0) conv_col2im(g, col, acc, j->cdt, p0, m, nrows);
            }
            if (rc != 0) atomic_store(&j->failed, 1);
        }
        if (j->bias) ce_add_bias(j, acc, j->bias + (size_t)(gi * g->cxg + c0) * j->esc, cn);
        j->st(a->x_out + (size_t)((n * g->cx + gi * g->cxg + c0) * g->xsp) * j->es, 1, acc, 1, cn * g->xsp);
    }
done:
    free(col);
    free(ybuf);
    free(acc);
}

/* ---- phase 3: dW = sum over the batch of Y block @ col(X block)^T ---- */

static void ce_backward_weight(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    conv_job_t *j = ctx;
    const conv_geom_t *g = j->g;
    const conv_args_t *a = j->a;
    const int convert = !j->direct || j->fold > 1;
    const int64_t cols = j->fold > 1 ? j->fold * g->ysp : j->nb;
    char *col = malloc((size_t)(g->rows * cols + 1) * j->esc);
    char *ybuf = convert ? malloc((size_t)(g->cyg * cols + 1) * j->esc) : NULL;
    if (col == NULL || (convert && ybuf == NULL)) {
        atomic_store(&j->failed, 1);
        goto done;
    }
    for (int64_t u = begin; u < end; u++) {
        const int64_t ch = u / (g->groups * j->ncb), gi = u / j->ncb % g->groups, c0 = u % j->ncb * j->cb;
        const int64_t nrows = ce_min(j->cb, g->cxg - c0) * g->ksp;
        const int64_t n0 = ch * g->batch / j->nch, n1 = (ch + 1) * g->batch / j->nch;
        char *part = j->parts + (size_t)((ch * g->cy + gi * g->cyg) * g->rows + c0 * g->ksp) * j->esc;
        /* folded: `fold` images per product, so its depth is fold * ysp instead of one small image's ysp */
        for (int64_t n = n0; j->fold > 1 && n < n1; n += j->fold) {
            const int64_t nf = ce_min(j->fold, n1 - n), m = nf * g->ysp;
            ce_fold_y(j, a->y_w, n, nf, gi, ybuf, cols);
            ce_fold_im2col(j, a->x_w, n, nf, gi, c0, nrows, col, cols);
            if (ce_gemm(j, 0, 1, g->cyg, nrows, m, ybuf, cols, col, cols, 1.0, part, g->rows) != 0)
                atomic_store(&j->failed, 1);
        }
        for (int64_t n = n0; j->fold <= 1 && n < n1; n++) {
            const char *x = a->x_w + (size_t)((n * g->cx + gi * g->cxg + c0) * g->xsp) * j->es;
            for (int64_t p0 = 0; p0 < g->ysp; p0 += j->nb) {
                const int64_t m = ce_min(j->nb, g->ysp - p0);
                int64_t ldy;
                const char *yb = ce_yblock(j, a->y_w, n, gi, p0, m, ybuf, &ldy);
                const char *b = col;
                int64_t ldb = m;
                if (j->identity && j->direct) b = x + (size_t)p0 * j->es, ldb = g->xsp;
                else conv_im2col(g, x, j->es, j->ld, col, j->esc, p0, m, nrows);
                /* part[:, block] (cyg x nrows) += Y block (cyg x m) @ col^T (m x nrows) */
                if (ce_gemm(j, 0, 1, g->cyg, nrows, m, yb, ldy, b, ldb, 1.0, part, g->rows) != 0)
                    atomic_store(&j->failed, 1);
            }
        }
    }
done:
    free(col);
    free(ybuf);
}

/* dW elements [begin, end): the chunks' sums added in chunk order, stored in dt. */
static void ce_weight_reduce(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    conv_job_t *j = ctx;
    const int64_t total = j->g->cy * j->g->rows;
    for (int64_t i = begin; i < end; i++) {
        for (int64_t ch = 1; ch < j->nch; ch++) {
            if (j->cdt == AXON_FLOAT64) ((double *)j->parts)[i] += ((const double *)j->parts)[ch * total + i];
            else ((float *)j->parts)[i] += ((const float *)j->parts)[ch * total + i];
        }
    }
    j->st(j->a->w_out + (size_t)begin * j->es, 1, j->parts + (size_t)begin * j->esc, 1, end - begin);
}

/* ---- phase 4: dbias[c] = sum of b_src[n, c, :] ---- */

#define CONV_SUM_CHUNK 512

static void ce_bias_sum(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    conv_job_t *j = ctx;
    const conv_args_t *a = j->a;
    axon_convert_fn ld = axon_convert_get(a->dt, AXON_FLOAT64), st = axon_convert_get(AXON_FLOAT64, a->dt);
    double buf[CONV_SUM_CHUNK];
    for (int64_t c = begin; c < end; c++) {
        double sum = 0.0;
        for (int64_t n = 0; n < j->g->batch; n++) {
            const char *src = a->b_src + (size_t)((n * a->b_ch + c) * a->b_sp) * j->es;
            for (int64_t i = 0; i < a->b_sp; i += CONV_SUM_CHUNK) {
                const int64_t m = ce_min(CONV_SUM_CHUNK, a->b_sp - i);
                ld((char *)buf, 1, src + (size_t)i * j->es, 1, m);
                for (int64_t q = 0; q < m; q++) sum += buf[q];
            }
        }
        st(a->b_out + (size_t)c * j->es, 1, (const char *)&sum, 1, 1);
    }
}

/* ---- the command ---- */

/* A malloc'ed compute-dtype copy of n elements of dt at src, or src itself when no conversion is needed (*owned
 * stays NULL). NULL only if the copy could not be allocated. */
static const char *ce_to_compute(const conv_job_t *j, const char *src, int64_t n, char **owned) {
    *owned = NULL;
    if (j->direct) return src;
    if ((*owned = malloc((size_t)(n + 1) * j->esc)) == NULL) return NULL;
    j->ld(*owned, 1, src, 1, n);
    return *owned;
}

/* Block size for phases 1-3: the column budget, but small enough that phase 1 has about two units per participant
 * when the batch alone is too small (multiples of 16 positions, for the GEMM's vector tiles). */
static void ce_blocks(conv_job_t *j, int nparts) {
    const conv_geom_t *g = j->g;
    int64_t nb = CONV_COL_ELEMS / (g->rows > 0 ? g->rows : 1);
    const int64_t units = g->batch * g->groups;
    if (units > 0 && units < 2 * (int64_t)nparts) {
        const int64_t want = (2 * (int64_t)nparts + units - 1) / units;
        nb = ce_min(nb, (g->ysp + want - 1) / want);
    }
    nb = (nb + 15) / 16 * 16;
    if (nb < 32) nb = 32;
    j->nb = ce_min(nb, g->ysp > 0 ? g->ysp : 1);
    j->nblk = (g->ysp + j->nb - 1) / j->nb;
}

/* Images per column block for phases 1 and 3 (float32 and float64): when one image's output positions are few (deep
 * layers: 4 x 4 to 14 x 14), a block per image makes each product a few dozen columns wide (or deep), which BLAS runs
 * far below its rate (a 1x1 layer on 4 x 4 maps took 4x torch CPU's time). Several images' columns then go side by
 * side, as many as the column budget holds, up to CONV_FOLD_COLS columns (longer products of a 64 x 64 layer's dW
 * ran slower than one image's), but no more than leaves two units per participant. 1: no folding. */
static int64_t ce_fold(const conv_job_t *j, int nparts, int small) {
    const conv_geom_t *g = j->g;
    if (!j->direct || small || g->ysp <= 0 || g->batch < 2) return 1;
    int64_t f = ce_min(CONV_COL_ELEMS / ((g->rows > 0 ? g->rows : 1) * g->ysp), CONV_FOLD_COLS / g->ysp);
    const int64_t by_units = g->batch * g->groups / (2 * (int64_t)nparts);
    f = ce_min(ce_min(f, by_units), g->batch);
    return f >= 2 ? f : 1;
}

/* Channel blocks for phases 2 and 3 when `units` (batch elements or chunks, times groups) leave participants idle;
 * none for a small problem, which runs on one participant anyway. */
static void ce_channel_blocks(conv_job_t *j, int64_t units, int nparts, int small) {
    const int64_t cxg = j->g->cxg;
    int64_t ncb = 1;
    if (!small && units > 0 && units < 2 * (int64_t)nparts) ncb = ce_min(cxg, (2 * (int64_t)nparts + units - 1) / units);
    j->cb = ncb > 1 ? (cxg + ncb - 1) / ncb : cxg;
    if (j->cb < 1) j->cb = 1;
    j->ncb = (cxg + j->cb - 1) / j->cb;
    if (j->ncb < 1) j->ncb = 1;
}

axon_status_t conv_execute(const void *args, const axon_exec_t *ex) {
    const conv_args_t *a = args;
    if (a->nhwc || a->w_nhwc) return conv_channels_last_execute(a, ex);
    const conv_geom_t *g = &a->g;
    const int nparts = axon_pool_size(ex->pool);
    axon_status_t st = AXON_OK;
    char *wown = NULL, *bown = NULL;
    conv_job_t j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.failed, 0);
    j.a = a, j.g = g;
    j.direct = a->dt == AXON_FLOAT32 || a->dt == AXON_FLOAT64 || a->dt == AXON_INT64;
    const axon_dtype_t cdt = j.direct ? a->dt : AXON_FLOAT32;
    j.cdt = cdt;
    j.es = axon_dtype_size(a->dt), j.esc = axon_dtype_size(cdt);
    j.ld = axon_convert_get(a->dt, cdt), j.st = axon_convert_get(cdt, a->dt);
    ce_blocks(&j, nparts);
    j.identity = g->ksp == 1;
    for (int i = 0; i < 3; i++)
        j.identity = j.identity && g->stride[i] == 1 && g->pad[i] == 0 && g->xs[i] == g->ys[i];
    /* Phases 1-3 cost about 2 * N * cy * ysp * rows flops each; below ~1 MFLOP waking the pool costs more. */
    const double flop = 2.0 * (double)g->batch * (double)g->cy * (double)g->ysp * (double)g->rows;
    const int small = flop < 1e6;
    if (a->y_out || a->x_out) {
        if ((j.w = ce_to_compute(&j, a->w, g->cy * g->rows, &wown)) == NULL) goto oom;
        const char *b = a->y_out ? a->bias_y : a->bias_x;
        const int64_t nbias = a->y_out ? g->cy : g->cx;
        if (b && (j.bias = ce_to_compute(&j, b, nbias, &bown)) == NULL) goto oom;
    }
    j.fold = ce_fold(&j, nparts, small);
    const int dw = cdt != AXON_INT64 && conv_depthwise_applies(g);
    if (dw && (a->y_out || a->x_out || a->w_out)) {
        if ((st = conv_depthwise_run(a, ex, j.w, j.bias, small)) != AXON_OK) goto done;
    } else if (a->y_out && !conv_onednn_phase(a, ex, CONV_ONEDNN_FORWARD)) {
        const int lowp = j.fold > 1 ? 0 : ce_lowp_setup(&j);
        if (lowp < 0) goto oom;
        j.lowp = lowp;
        const int64_t units = j.fold > 1 ? (g->batch + j.fold - 1) / j.fold * g->groups : g->batch * g->groups * j.nblk;
        axon_parallel_for(ex->pool, 0, units, small ? units : 1, ce_forward, &j);
        if (atomic_load(&j.failed) && j.lowp) {
            st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "conv: oneDNN %s product (%" PRId64 " x %" PRId64 " x %" PRId64
                           ") failed: out of memory, or a oneDNN error", axon_dtype_name(a->dt), g->cyg, j.kl, j.nb);
            goto done;
        }
        if (atomic_load(&j.failed)) goto oom;
    }
    if (a->x_out && !dw && !conv_onednn_phase(a, ex, CONV_ONEDNN_BACKWARD_DATA)) {
        const int64_t images = j.fold > 1 ? (g->batch + j.fold - 1) / j.fold : g->batch;
        ce_channel_blocks(&j, images * g->groups, nparts, small);
        const int64_t units = images * g->groups * j.ncb;
        axon_parallel_for(ex->pool, 0, units, small ? units : 1, ce_backward_data, &j);
        if (atomic_load(&j.failed)) goto oom;
    }
    if (a->w_out && g->cy * g->rows > 0 && !dw && !conv_onednn_phase(a, ex, CONV_ONEDNN_BACKWARD_WEIGHTS)) {
        /* Two chunks per participant when folded blocks leave the batch enough images: with one, a pool of two
         * has too few units and splits channels instead, making each product a few columns wide. */
        const int64_t per_part = j.fold > 1 ? 2 * j.fold : 2;
        const double copies = 2.0 * nparts * (double)(g->cy * g->rows) * (double)j.esc; /* bytes of dW copies */
        const int two = g->batch >= per_part * nparts && copies <= CONV_DW_COPIES;
        j.nch = small || g->batch < 1 ? 1 : ce_min(g->batch, two ? 2 * nparts : nparts);
        if ((j.parts = calloc((size_t)(j.nch * g->cy * g->rows), j.esc)) == NULL) goto oom;
        ce_channel_blocks(&j, j.nch * g->groups, nparts, small);
        const int64_t units = j.nch * g->groups * j.ncb;
        axon_parallel_for(ex->pool, 0, units, small ? units : 1, ce_backward_weight, &j);
        if (atomic_load(&j.failed)) goto oom;
        axon_parallel_for(ex->pool, 0, g->cy * g->rows, AXON_KERNEL_GRAIN, ce_weight_reduce, &j);
    }
    if (a->b_out) axon_parallel_for(ex->pool, 0, a->b_ch, AXON_KERNEL_GRAIN / (a->b_sp * g->batch + 1) + 1,
                                    ce_bias_sum, &j);
    goto done;
oom:
    st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "conv: host scratch for a %" PRId64 " x %" PRId64
                   " column block (%s compute)", g->rows, j.nb, axon_dtype_name(cdt));
done:
    free(wown);
    free(bown);
    free(j.parts);
    free(j.wl);
    return st;
}
