/* The reduction executor: runs the plan reduce.c decided.
 *
 *   INNER  one output at a time. Its elements arrive as runs along the fastest reduced dimension; contiguous runs of
 *          the work type are folded in place, anything else is converted into an L1 buffer first. Blocks of
 *          RD_BLOCK elements enter a binary cascade (a pairwise sum over blocks). Outputs are split over the pool.
 *   SPLIT  few outputs with many elements each (a full reduction): each output's elements are cut into fixed chunks,
 *          each chunk gives a partial state, and the partials are merged pairwise in chunk order.
 *   OUTER  a kept dimension is in's fastest (sum over dim 0 of a row-major matrix): each work item owns up to
 *          RD_VEC neighbouring outputs and folds whole rows into a vector of them, so memory is read in order.
 *          Blocks of RD_ROW_BLOCK rows enter a cascade of vectors. With few items, rows are cut into fixed chunks
 *          whose partial vectors are merged pairwise afterwards.
 *   EMPTY  nothing to reduce: every output gets the op's value for zero elements.
 * No chunk boundary depends on the thread count, so neither does any result. */
#include <string.h>

#include "dtype.h"
#include "internal.h"
#include "reduce_impl.h"

/* ---- cascades: merge a new partial with the previous one while they cover equal numbers of blocks ---- */

typedef struct rd_cascade {
    int top;
    int64_t weight[RD_LEVELS];
    rd_state_t lv[RD_LEVELS];
} rd_cascade_t;

static void rd_cascade_push(const rd_args_t *a, rd_cascade_t *c, const rd_state_t *st) {
    const rd_work_ops_t *w = &axon_rd_work_ops[a->op.work];
    if (c->top == RD_LEVELS) { /* unreachable for real sizes; keeps the stack bounded anyway */
        w->merge(&a->op, &c->lv[RD_LEVELS - 1], st);
        return;
    }
    c->lv[c->top] = *st;
    c->weight[c->top++] = 1;
    while (c->top >= 2 && c->weight[c->top - 1] == c->weight[c->top - 2]) {
        w->merge(&a->op, &c->lv[c->top - 2], &c->lv[c->top - 1]);
        c->weight[c->top - 2] *= 2;
        c->top--;
    }
}

/* The whole cascade as one state, merged newest-first into older levels (the pairwise order). */
static void rd_cascade_result(const rd_args_t *a, rd_cascade_t *c, rd_state_t *out) {
    const rd_work_ops_t *w = &axon_rd_work_ops[a->op.work];
    if (c->top == 0) {
        w->init(&a->op, out);
        return;
    }
    for (int i = c->top - 2; i >= 0; i--) w->merge(&a->op, &c->lv[i], &c->lv[i + 1]);
    *out = c->lv[0];
}

/* ---- INNER and SPLIT: one output's elements [r0, r1) ---- */

typedef struct rd_walk {
    const rd_args_t *a;
    const rd_work_ops_t *w;
    rd_cascade_t c;
    int64_t fill;                                   /* W values waiting in buf */
    _Alignas(64) unsigned char buf[RD_BLOCK * 8];
    unsigned char tmp[RD_BLOCK];                    /* bool stage of a->pre */
} rd_walk_t;

static void rd_walk_fold(rd_walk_t *k, const void *x, int64_t n) {
    rd_state_t st;
    k->w->fold(&k->a->op, &st, x, n);
    rd_cascade_push(k->a, &k->c, &st);
}

/* The same for n halves of a->half_fold's dtype in place: the state rd_walk_fold gives them converted. */
static void rd_walk_fold_halves(rd_walk_t *k, const void *x, int64_t n) {
    rd_state_t st;
    memset(&st, 0, sizeof st);
    st.a.f = k->a->half_fold(x, n);
    rd_cascade_push(k->a, &k->c, &st);
}

/* Load n elements at stride (in elements) into buf[dst_at..] as W values. */
static void rd_load(const rd_args_t *a, unsigned char *dst, unsigned char *tmp, const char *src, int64_t stride,
                    int64_t n) {
    if (a->pre) {
        a->pre((char *)tmp, 1, src, stride, n);
        a->load((char *)dst, 1, (const char *)tmp, 1, n);
    } else if (a->load) {
        a->load((char *)dst, 1, src, stride, n);
    } else if (stride == 1) {
        memcpy(dst, src, (size_t)n * a->w_esize);
    } else {
        axon_convert_get(axon_rd_work_ops[a->op.work].dtype, axon_rd_work_ops[a->op.work].dtype)(
            (char *)dst, 1, src, stride, n);
    }
}

static void rd_walk_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    rd_walk_t *k = ctx;
    const rd_args_t *a = k->a;
    const char *p = ptr[0];
    const int64_t s = stride[0], step = s * (int64_t)a->in_esize;
    /* Read whole blocks in place when the run is already W and contiguous. */
    if (k->fill == 0 && a->load == NULL && s == 1) {
        for (; n >= RD_BLOCK; n -= RD_BLOCK, p += RD_BLOCK * a->in_esize) rd_walk_fold(k, p, RD_BLOCK);
    }
    while (n > 0) {
        int64_t m = RD_BLOCK - k->fill < n ? RD_BLOCK - k->fill : n;
        rd_load(a, k->buf + k->fill * (int64_t)a->w_esize, k->tmp, p, s, m);
        k->fill += m;
        p += m * step;
        n -= m;
        if (k->fill == RD_BLOCK) {
            rd_walk_fold(k, k->buf, RD_BLOCK);
            k->fill = 0;
        }
    }
}

/* Fold elements [r0, r1) of the output whose element 0 is at `base` into *out. */
static void rd_reduce_one(rd_walk_t *k, char *base, int64_t r0, int64_t r1, rd_state_t *out) {
    const rd_args_t *a = k->a;
    k->c.top = 0;
    k->fill = 0;
    char *b = base + a->red_shift;
    if (a->red.ndim == 1 && (a->load == NULL || a->half_fold) && a->red.strides[0][0] == 1) {
        /* one contiguous run of W (or of halves) per output: every block folded in place, the last partial one too
         * (the same blocks rd_walk_run would fold, without copying that one into buf first) */
        const char *p = b + r0 * (int64_t)a->in_esize;
        for (int64_t n = r1 - r0; n > 0; n -= RD_BLOCK, p += RD_BLOCK * (int64_t)a->in_esize)
            (a->half_fold ? rd_walk_fold_halves : rd_walk_fold)(k, p, n < RD_BLOCK ? n : RD_BLOCK);
    } else if (a->red.ndim == 1) { /* one run per output: skip the iterator */
        int64_t s = a->red.strides[0][0];
        char *ptr[AXON_ITER_MAX_TENSORS] = {b + r0 * s * (int64_t)a->in_esize};
        rd_walk_run(k, ptr, &a->red.strides[0][0], r1 - r0, r0);
    } else {
        axon_iter_t it = a->red;
        it.data[0] = b;
        axon_iter_runs(&it, r0, r1, rd_walk_run, k);
    }
    if (k->fill > 0) rd_walk_fold(k, k->buf, k->fill);
    rd_cascade_result(a, &k->c, out);
}

static void rd_store_state(const rd_args_t *a, const rd_state_t *st, char *out) {
    unsigned char v[8];
    axon_rd_work_ops[a->op.work].finish(&a->op, st, a->count, v);
    a->store(out, 1, (const char *)v, 1, 1);
}

/* Rows that are one block each of W in place (a row sum of a [B, H] matrix): folded RD_ROWS_AT_ONCE at a time
 * into buf, finished and stored as a run, without the per-output walk and cascade (same values: a row of at most
 * RD_BLOCK elements is one fold, and a cascade of one state is that state). */
#define RD_ROWS_AT_ONCE 256
_Static_assert(RD_ROWS_AT_ONCE <= RD_BLOCK, "rd_walk_t.buf holds the rows' values");

static int rd_rows_in_place(const rd_args_t *a) {
    return rd_kind_is_simple(a->op.kind) && a->red.ndim == 1 && (a->load == NULL || a->half_fold) &&
           a->red.strides[0][0] == 1 && a->count <= RD_BLOCK;
}

static void rd_inner_outputs(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    rd_walk_t *k = ctx;
    const rd_args_t *a = k->a;
    if (rd_rows_in_place(a)) {
        const int64_t pitch = stride[0] * (int64_t)a->in_esize;
        for (int64_t j = 0; j < n; j += RD_ROWS_AT_ONCE) {
            int64_t m = n - j < RD_ROWS_AT_ONCE ? n - j : RD_ROWS_AT_ONCE;
            const char *rows = ptr[0] + j * pitch + a->red_shift;
            if (a->half_fold) {
                float *sums = (float *)(void *)k->buf;
                for (int64_t r = 0; r < m; r++) sums[r] = a->half_fold(rows + r * pitch, a->count);
            } else {
                k->w->fold_rows(&a->op, k->buf, rows, pitch, m, a->count);
            }
            k->w->vfinish(&a->op, k->buf, m, a->count);
            a->store(ptr[1] + j * stride[1] * (int64_t)a->out_esize, stride[1], (const char *)k->buf, 1, m);
        }
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        rd_state_t st;
        rd_reduce_one(k, ptr[0] + j * stride[0] * (int64_t)a->in_esize, 0, a->count, &st);
        rd_store_state(a, &st, ptr[1] + j * stride[1] * (int64_t)a->out_esize);
    }
}

static void rd_inner_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    rd_walk_t k;
    k.a = ctx;
    k.w = &axon_rd_work_ops[k.a->op.work];
    axon_iter_runs(&k.a->kept, begin, end, rd_inner_outputs, &k);
}

typedef struct rd_split_job {
    const rd_args_t *a;
    rd_state_t *partial;
} rd_split_job_t;

static void rd_split_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const rd_split_job_t *j = ctx;
    const rd_args_t *a = j->a;
    rd_walk_t k;
    k.a = a;
    k.w = &axon_rd_work_ops[a->op.work];
    for (int64_t u = begin; u < end; u++) {
        int64_t o = u / a->nchunks, c = u % a->nchunks;
        int64_t r0 = c * a->chunk, r1 = r0 + a->chunk < a->count ? r0 + a->chunk : a->count;
        rd_reduce_one(&k, axon_iter_at(&a->kept, 0, o), r0, r1, &j->partial[u]);
    }
}

/* Merge n states in a fixed pairwise tree into s[0]. */
static void rd_merge_tree(const rd_args_t *a, rd_state_t *s, int64_t n) {
    const rd_work_ops_t *w = &axon_rd_work_ops[a->op.work];
    for (int64_t step = 1; step < n; step *= 2)
        for (int64_t i = 0; i + step < n; i += 2 * step) w->merge(&a->op, &s[i], &s[i + step]);
}

static void rd_run_split(const rd_args_t *a, axon_pool_t pool) {
    rd_state_t partial[RD_MAX_PARTIALS];
    rd_split_job_t j = {a, partial};
    AXON_ASSERT(a->nout * a->nchunks <= RD_MAX_PARTIALS);
    axon_parallel_for(pool, 0, a->nout * a->nchunks, 1, rd_split_range, &j);
    for (int64_t o = 0; o < a->nout; o++) {
        rd_merge_tree(a, &partial[o * a->nchunks], a->nchunks);
        rd_store_state(a, &partial[o * a->nchunks], axon_iter_at(&a->kept, 1, o));
    }
}

/* ---- OUTER: rows folded lane-wise ---- */

#define RD_VLEVELS 12   /* 12 levels of 64-row blocks: pairwise up to 256K rows, then sequential on top */

typedef struct rd_rows {
    const rd_args_t *a;
    const rd_work_ops_t *w;
    int64_t width;                   /* lanes of this item */
    int64_t lane_stride;             /* in elements */
    int64_t rows;                    /* rows folded into blk so far */
    int top;
    int64_t weight[RD_VLEVELS];
    _Alignas(64) unsigned char blk[RD_VEC * 8];
    _Alignas(64) unsigned char row[RD_VEC * 8];
    unsigned char tmp[RD_VEC];
    _Alignas(64) unsigned char lv[RD_VLEVELS][RD_VEC * 8];
} rd_rows_t;

static void rd_rows_push(rd_rows_t *r) {
    const rd_op_t *op = &r->a->op;
    if (r->top == RD_VLEVELS) {
        r->w->vmerge(op, r->lv[RD_VLEVELS - 1], r->blk, r->width);
    } else {
        memcpy(r->lv[r->top], r->blk, (size_t)r->width * r->a->w_esize);
        r->weight[r->top++] = 1;
        while (r->top >= 2 && r->weight[r->top - 1] == r->weight[r->top - 2]) {
            r->w->vmerge(op, r->lv[r->top - 2], r->lv[r->top - 1], r->width);
            r->weight[r->top - 2] *= 2;
            r->top--;
        }
    }
    r->w->vinit(op, r->blk, r->width);
    r->rows = 0;
}

/* acc[j] += row r's element j for nrows rows of n float16 or bfloat16 values, pitch bytes apart, widened inline: the
 * sums rd_load and vfold give row by row (the same adds in the same order), without a conversion call and a pass
 * through the row buffer per row of each lane block (2.6x torch CPU's time for a bfloat16 sum over dim 0). */
static inline __attribute__((always_inline)) void rd_vsum_half(const int kind, float *restrict acc, const char *rows,
                                                               int64_t pitch, int64_t nrows, int64_t n) {
    for (int64_t r = 0; r < nrows; r++) {
        const void *row = rows + r * pitch;
        for (int64_t j = 0; j < n; j++) acc[j] += axon_fk_load(kind, row, j);
    }
}

AXON_CLONES static void rd_vsum_bf16(float *acc, const char *rows, int64_t pitch, int64_t nrows, int64_t n) {
    rd_vsum_half(AXON_FK_BF16, acc, rows, pitch, nrows, n);
}

AXON_CLONES static void rd_vsum_f16(float *acc, const char *rows, int64_t pitch, int64_t nrows, int64_t n) {
    rd_vsum_half(AXON_FK_F16, acc, rows, pitch, nrows, n);
}

static void rd_rows_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    rd_rows_t *r = ctx;
    const rd_args_t *a = r->a;
    const int64_t step = stride[0] * (int64_t)a->in_esize;
    if (a->half_sum && r->lane_stride == 1) { /* half rows summed into float lanes: the in-place branch, widened */
        for (int64_t i = 0; i < n;) {
            int64_t m = RD_ROW_BLOCK - r->rows < n - i ? RD_ROW_BLOCK - r->rows : n - i;
            (a->half_sum == RD_HALF_BF16 ? rd_vsum_bf16 : rd_vsum_f16)((float *)(void *)r->blk, ptr[0] + i * step,
                                                                        step, m, r->width);
            i += m;
            r->rows += m;
            if (r->rows == RD_ROW_BLOCK) rd_rows_push(r);
        }
        return;
    }
    if (a->load == NULL && r->lane_stride == 1) { /* rows of W in place: up to the block's end in one call */
        for (int64_t i = 0; i < n;) {
            int64_t m = RD_ROW_BLOCK - r->rows < n - i ? RD_ROW_BLOCK - r->rows : n - i;
            r->w->vfold_rows(&a->op, r->blk, ptr[0] + i * step, step, m, r->width);
            i += m;
            r->rows += m;
            if (r->rows == RD_ROW_BLOCK) rd_rows_push(r);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const char *p = ptr[0] + i * step;
        rd_load(a, r->row, r->tmp, p, r->lane_stride, r->width);
        r->w->vfold(&a->op, r->blk, r->row, r->width);
        if (++r->rows == RD_ROW_BLOCK) rd_rows_push(r);
    }
}

typedef struct rd_outer_job {
    const rd_args_t *a;
    unsigned char *partial;          /* items * nchunks vectors of `lanes` W values, or NULL */
} rd_outer_job_t;

/* Item u's first output position and width (outputs; its vectors have width * group lanes). */
static int64_t rd_outer_item(const rd_args_t *a, int64_t item, int64_t *width) {
    int64_t K = a->kept.sizes[0], L = a->lanes / a->group, nb = (K + L - 1) / L;
    int64_t q = item / nb, b = item % nb;
    *width = K - b * L < L ? K - b * L : L;
    return q * K + b * L;
}

/* The group's width-lane slices of v merged into its first, then the outputs' finish. The upper half of the slices
 * folds into the lower half in one wide merge, log2(group) merges (one per slice cost a call per 2 values). */
static void rd_outer_finish(const rd_args_t *a, const rd_work_ops_t *w, unsigned char *v, int64_t width) {
    const int64_t gb = width * (int64_t)a->w_esize;
    for (int64_t g = a->group; g > 1; g -= g / 2) w->vmerge(&a->op, v, v + (g - g / 2) * gb, g / 2 * width);
    w->vfinish(&a->op, v, width, a->count);
}

static void rd_outer_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const rd_outer_job_t *j = ctx;
    const rd_args_t *a = j->a;
    rd_rows_t r;
    r.a = a;
    r.w = &axon_rd_work_ops[a->op.work];
    r.lane_stride = a->kept.strides[0][0];
    for (int64_t u = begin; u < end; u++) {
        int64_t item = u / a->nchunks, c = u % a->nchunks, width;
        int64_t pos = rd_outer_item(a, item, &width);
        r.width = width * a->group;
        int64_t r0 = c * a->chunk, r1 = r0 + a->chunk < a->rows ? r0 + a->chunk : a->rows;
        r.top = 0;
        r.w->vinit(&a->op, r.blk, r.width);
        r.rows = 0;
        axon_iter_t it = a->red;
        it.data[0] = axon_iter_at(&a->kept, 0, pos) + a->red_shift;
        axon_iter_runs(&it, r0, r1, rd_rows_run, &r);
        if (r.rows > 0) rd_rows_push(&r);
        for (int i = r.top - 2; i >= 0; i--) r.w->vmerge(&a->op, r.lv[i], r.lv[i + 1], r.width);
        if (j->partial) {
            memcpy(j->partial + u * a->lanes * (int64_t)a->w_esize, r.lv[0], (size_t)r.width * a->w_esize);
        } else {
            rd_outer_finish(a, r.w, r.lv[0], width);
            a->store(axon_iter_at(&a->kept, 1, pos), a->kept.strides[1][0], (const char *)r.lv[0], 1, width);
        }
    }
}

static void rd_run_outer(const rd_args_t *a, axon_pool_t pool) {
    _Alignas(64) unsigned char partial[RD_PARTIAL_BYTES];
    rd_outer_job_t j = {a, a->nchunks > 1 ? partial : NULL};
    AXON_ASSERT(a->nchunks == 1 || a->items * a->nchunks * a->lanes * (int64_t)a->w_esize <= RD_PARTIAL_BYTES);
    int64_t per = a->lanes * a->chunk, grain = AXON_KERNEL_GRAIN / (per > 0 ? per : 1);
    axon_parallel_for(pool, 0, a->items * a->nchunks, grain < 1 ? 1 : grain, rd_outer_range, &j);
    if (!j.partial) return;
    const rd_work_ops_t *w = &axon_rd_work_ops[a->op.work];
    const int64_t vb = a->lanes * (int64_t)a->w_esize;
    for (int64_t item = 0; item < a->items; item++) {
        int64_t width, pos = rd_outer_item(a, item, &width);
        unsigned char *v = partial + item * a->nchunks * vb;
        for (int64_t step = 1; step < a->nchunks; step *= 2)
            for (int64_t i = 0; i + step < a->nchunks; i += 2 * step)
                w->vmerge(&a->op, v + i * vb, v + (i + step) * vb, width * a->group);
        rd_outer_finish(a, w, v, width);
        a->store(axon_iter_at(&a->kept, 1, pos), a->kept.strides[1][0], (const char *)v, 1, width);
    }
}

/* ---- EMPTY ---- */

typedef struct rd_fill_job {
    const rd_args_t *a;
    unsigned char value[8];
} rd_fill_job_t;

static void rd_fill_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const rd_fill_job_t *j = ctx;
    j->a->store(ptr[1], stride[1], (const char *)j->value, 0, n);
}

static void rd_fill_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const rd_fill_job_t *j = ctx;
    axon_iter_runs(&j->a->kept, begin, end, rd_fill_run, ctx);
}

static void rd_run_empty(const rd_args_t *a, axon_pool_t pool) {
    rd_fill_job_t j;
    j.a = a;
    rd_state_t st;
    axon_rd_work_ops[a->op.work].init(&a->op, &st);
    axon_rd_work_ops[a->op.work].finish(&a->op, &st, 0, j.value);
    axon_parallel_for(pool, 0, a->nout, AXON_KERNEL_GRAIN, rd_fill_range, &j);
}

axon_status_t axon_rd_kernel(const void *args, const axon_exec_t *ex) {
    const rd_args_t *a = args;
    switch (a->path) {
    case RD_PATH_EMPTY: rd_run_empty(a, ex->pool); break;
    case RD_PATH_SPLIT: rd_run_split(a, ex->pool); break;
    case RD_PATH_OUTER: rd_run_outer(a, ex->pool); break;
    case RD_PATH_INNER: {
        int64_t grain = AXON_KERNEL_GRAIN / a->count;
        axon_parallel_for(ex->pool, 0, a->nout, grain < 1 ? 1 : grain, rd_inner_range, (void *)a);
        break;
    }
    }
    return AXON_OK;
}
