/* Indexing ops that read through an index and write each output element once: index_select, gather, masked_fill
 * and cat, plus the bounds check every indexing command runs before it writes (index_impl.h).
 *
 * index_select is a gather whose index is the 1-d index broadcast (0 strides) to out's shape, so both run one loop:
 * out, index and `in` walked together in out's memory order, with in's stride at dim set to 0 so that its pointer
 * names the start of the line that index picks from. Embedding lookups ([V, D] rows by [N] indices) then copy
 * rows along D contiguously; when the elements after dim are dense rows in both tensors, index_select instead copies
 * whole rows (gather_rows). cat copies, for each position before dim, every input's dense block into out's row
 * with memcpy, in one parallel loop over all rows (cat_rows); an input that converts or is not dense from dim on
 * gets one element-wise copy into its slice of out instead, and so inherits the copy's conversions and layouts. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>

#include "internal.h"
#include "dtype.h"
#include "index_impl.h"

/* ---- shared checks ---- */

axon_status_t axon_ix_check_operand(const axon_tensor_t *t, const char *op, const char *role, int k, int is_dst) {
    axon_status_t st = is_dst ? axon_kernel_check_dst(t, op) : axon_kernel_check_src(t, op);
    if (st == AXON_OK) return AXON_OK;
    char what[96];
    if (k >= 0)
        snprintf(what, sizeof what, "%s: %s[%d]", op, role, k);
    else
        snprintf(what, sizeof what, "%s: %s", op, role);
    return is_dst ? axon_kernel_check_dst(t, what) : axon_kernel_check_src(t, what);
}

axon_status_t axon_ix_check_index(const axon_tensor_t *index, const char *op) {
    axon_status_t st = axon_ix_check_operand(index, op, "index", -1, 0);
    if (st != AXON_OK) return st;
    if (index->dtype != AXON_INT64 && index->dtype != AXON_INT32)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): Expected dtype int32/int64 for index, got %s", op,
                         axon_dtype_name(index->dtype));
    return AXON_OK;
}

axon_status_t axon_ix_wrap_dim(const char *op, int ndim, int *dim) {
    int n = ndim < 1 ? 1 : ndim;
    if (*dim < -n || *dim >= n)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dim %d is out of range for a tensor of %d dimensions", op, *dim,
                         ndim);
    if (*dim < 0) *dim += n;
    return AXON_OK;
}

axon_status_t axon_ix_scalar_bytes(axon_scalar_t value, axon_dtype_t dtype, unsigned char *bytes, const char *op) {
    union {
        double f;
        int64_t i;
        uint8_t b;
        axon_c128_t c;
    } v;
    switch (value.dtype) {
    case AXON_FLOAT64: v.f = value.f; break;
    case AXON_INT64: v.i = value.i; break;
    case AXON_BOOL: v.b = value.i != 0; break;
    case AXON_COMPLEX128: v.c.re = value.f, v.c.im = value.imag; break;
    default:
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: scalar dtype %s is not float64, int64, bool or complex128", op,
                         axon_dtype_name(value.dtype));
    }
    axon_convert_get(value.dtype, dtype)((char *)bytes, 1, (const char *)&v, 1, 1);
    return AXON_OK;
}

/* Each part is cut into pieces, claimed in order through the part's counter: a participant claims pieces of its own
 * part first, then of the others' (a helper that is late or busy elsewhere leaves its part to whoever is free). */
#define IX_PIECES_PER_PART 8

struct ix_parts {
    axon_range_fn fn;
    void *ctx;
    int64_t n;
    int parts;
    int64_t piece;                                       /* units per piece */
    _Atomic int64_t next[64];                            /* next piece of part i, counted within the part */
};

/* [b, e) of part i. */
static void ix_part_bounds(const struct ix_parts *p, int i, int64_t *b, int64_t *e) {
    const int64_t base = p->n / p->parts, rem = p->n % p->parts;
    *b = i * base + (i < rem ? i : rem);
    *e = *b + base + (i < rem);
}

static void ix_parts_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)begin, (void)end; /* the unit only makes this participant join; what it runs is decided here */
    struct ix_parts *p = ctx;
    const int own = slot < p->parts ? slot : 0;
    for (int k = 0; k < p->parts; k++) {
        const int i = (own + k) % p->parts;
        int64_t b, e;
        ix_part_bounds(p, i, &b, &e);
        for (;;) {
            const int64_t at = b + atomic_fetch_add_explicit(&p->next[i], 1, memory_order_relaxed) * p->piece;
            if (at >= e) break;
            p->fn(p->ctx, at, at + p->piece < e ? at + p->piece : e, slot);
        }
    }
}

void axon_ix_parallel_parts(axon_pool_t pool, int64_t n, double bytes, axon_range_fn fn, void *ctx) {
    int parts = axon_pool_size(pool);
    if (parts > 64) parts = 64;
    if (parts > n) parts = (int)n;
    if (parts <= 1 || bytes < (double)((int64_t)1 << 16)) {
        axon_parallel_for(pool, 0, n, n, fn, ctx); /* inline, with the caller's slot */
        return;
    }
    struct ix_parts p;
    p.fn = fn, p.ctx = ctx, p.n = n, p.parts = parts;
    const int64_t len = (n + parts - 1) / parts;
    p.piece = (len + IX_PIECES_PER_PART - 1) / IX_PIECES_PER_PART;
    for (int i = 0; i < parts; i++) atomic_init(&p.next[i], 0);
    axon_parallel_for(pool, 0, parts, 1, ix_parts_range, &p);
}

struct ix_scan {
    axon_iter_t it;
    int64_t size, lo;
    int is64;
    _Atomic int64_t first;       /* smallest visit position of a bad index; INT64_MAX if none */
};

void axon_ix_note_first(_Atomic int64_t *first, int64_t pos) {
    int64_t cur = atomic_load(first);
    while (pos < cur && !atomic_compare_exchange_weak(first, &cur, pos)) {
    }
}

/* Whether any of n contiguous int64 indices lies outside [lo, size): one unsigned compare each and no early exit, so
 * GCC vectorizes it (the general loop below, a load through is64 and an exit per element, was two fifths of a
 * scatter_add along rows). */
AXON_CLONES static int ix_any_outside_i64(const int64_t *restrict x, int64_t n, int64_t lo, int64_t size) {
    const uint64_t span = (uint64_t)size - (uint64_t)lo;
    uint64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad |= (uint64_t)x[i] - (uint64_t)lo >= span;
    return bad != 0;
}

#define IX_SCAN_BLOCK 1024 /* indices per vectorized check; a block with a bad one is walked to find the first */

static void ix_scan_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    struct ix_scan *j = ctx;
    const int64_t step = stride[0] * (int64_t)j->it.esize[0];
    const char *p = ptr[0];
    if (j->is64 && step == (int64_t)sizeof(int64_t)) { /* skip the blocks without a bad index */
        int64_t b = 0;
        while (b < n && !ix_any_outside_i64((const int64_t *)p + b, n - b < IX_SCAN_BLOCK ? n - b : IX_SCAN_BLOCK,
                                             j->lo, j->size))
            b += IX_SCAN_BLOCK;
        if (b >= n) return;
        p += b * step, pos += b, n -= b;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t v = ix_load(p + i * step, j->is64);
        if (v < j->lo || v >= j->size) {
            axon_ix_note_first(&j->first, pos + i);
            return;
        }
    }
}

static void ix_scan_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct ix_scan *j = ctx;
    axon_iter_runs(&j->it, begin, end, ix_scan_run, j);
}

axon_status_t axon_ix_check_bounds(const axon_tensor_t *index, int64_t size, int wrap, int dim, const char *op,
                                   axon_pool_t pool) {
    struct ix_scan j;
    axon_iter_init(&j.it, 1, &index, 1);
    if (j.it.numel == 0) return AXON_OK;
    j.size = size;
    j.lo = wrap ? -size : 0;
    j.is64 = index->dtype == AXON_INT64;
    atomic_init(&j.first, INT64_MAX);
    axon_parallel_for(pool, 0, j.it.numel, AXON_KERNEL_GRAIN, ix_scan_range, &j);
    return axon_ix_bounds_error(&j.it, 0, atomic_load(&j.first), j.is64, op, dim, size);
}

axon_status_t axon_ix_bounds_error(const axon_iter_t *it, int operand, int64_t first, int is64, const char *op,
                                   int dim, int64_t size) {
    if (first == INT64_MAX) return AXON_OK;
    int64_t v = ix_load(axon_iter_at(it, operand, first), is64);
    return axon_fail(AXON_ERROR_INVALID_ARG,
                     "%s(): index %" PRId64 " is out of bounds for dimension %d with size %" PRId64, op, v, dim, size);
}

/* ---- gather and index_select ---- */

struct gather_args {
    axon_tensor_t out, in, index;    /* index: out's shape (broadcast for index_select) */
    axon_tensor_t check;             /* the index as given, for the bounds check */
    int dim;
    int select;                      /* 1: index_select (names the op in messages) */
    int wrap;                        /* AXON_INDEX_WRAP */
};

struct gather_job {
    axon_iter_t it;                  /* out, index, in with 0 stride at dim */
    int64_t size, dstride;           /* in's size and stride (elements) at dim */
    int is64, wrap;
    _Atomic int64_t first_bad;       /* smallest visit position of an out-of-range index; INT64_MAX if none */
};

/* The common gather, 2-, 4- or 8-byte elements with out and an int64 index contiguous along the run: plain element
 * loops, the one along in's contiguous dim (sx 0, sd 1: gather along the last dim) without multiplies. A check and
 * early exit per element measured faster than checking a block first and vectorizing (GCC's gathers) on AMD Zen 4.
 * Returns the position of the first out-of-range index, or -1. Strides in elements. */
#define GATHER_DENSE(NAME, T)                                                                                      \
    AXON_CLONES static int64_t NAME(T *restrict o, const int64_t *restrict ix, const T *restrict in, int64_t sx,    \
                                    int64_t sd, int64_t n, int64_t size, int64_t wrap) {                           \
        if (sx == 0 && sd == 1) {                                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                                      \
                const int64_t v = ix[i] + (ix[i] < 0 ? wrap : 0);                                                  \
                if ((uint64_t)v >= (uint64_t)size) return i;                                                       \
                o[i] = in[v];                                                                                      \
            }                                                                                                      \
            return -1;                                                                                             \
        }                                                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                                          \
            const int64_t v = ix[i] + (ix[i] < 0 ? wrap : 0);                                                      \
            if ((uint64_t)v >= (uint64_t)size) return i;                                                           \
            o[i] = in[i * sx + v * sd];                                                                            \
        }                                                                                                          \
        return -1;                                                                                                 \
    }
GATHER_DENSE(gather_dense2, uint16_t)
GATHER_DENSE(gather_dense4, uint32_t)
GATHER_DENSE(gather_dense8, uint64_t)
#undef GATHER_DENSE

/* The bounds check runs inside the loop (a separate pass would read the index twice): a run stops at its first
 * out-of-range index, before writing through it, and the kernel reports the first one in visit order. */
static void gather_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    struct gather_job *j = ctx;
    const size_t es = j->it.esize[0];
    const int64_t so = stride[0] * (int64_t)es, si = stride[1] * (int64_t)j->it.esize[1];
    const int64_t sx = stride[2] * (int64_t)es, sd = j->dstride * (int64_t)es;
    /* in locals (the stores could alias j's fields, which would then be reloaded per element), and the common
     * element sizes as plain loads and stores */
    const int64_t size = j->size, wrap = j->wrap ? size : 0;
    const int is64 = j->is64;
    int64_t bad = -1;
    if (is64 && si == 8 && so == (int64_t)es && (es == 2 || es == 4 || es == 8)) {
        const int64_t ex = (int64_t)es;
        bad = es == 2   ? gather_dense2((uint16_t *)ptr[0], (const int64_t *)ptr[1], (const uint16_t *)ptr[2],
                                        sx / ex, sd / ex, n, size, wrap)
              : es == 4 ? gather_dense4((uint32_t *)ptr[0], (const int64_t *)ptr[1], (const uint32_t *)ptr[2],
                                        sx / ex, sd / ex, n, size, wrap)
                        : gather_dense8((uint64_t *)ptr[0], (const int64_t *)ptr[1], (const uint64_t *)ptr[2],
                                        sx / ex, sd / ex, n, size, wrap);
        if (bad >= 0) axon_ix_note_first(&j->first_bad, pos + bad);
        return;
    }
#define GATHER_LOOP(MOVE)                                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                                              \
        int64_t v = ix_load(ptr[1] + i * si, is64);                                                                \
        v += v < 0 ? wrap : 0;                                                                                     \
        if ((uint64_t)v >= (uint64_t)size) {                                                                       \
            bad = i;                                                                                               \
            break;                                                                                                 \
        }                                                                                                          \
        MOVE;                                                                                                      \
    }
    if (es == 4)
        GATHER_LOOP(memcpy(ptr[0] + i * so, ptr[2] + i * sx + v * sd, 4))
    else if (es == 8)
        GATHER_LOOP(memcpy(ptr[0] + i * so, ptr[2] + i * sx + v * sd, 8))
    else
        GATHER_LOOP(ix_move(ptr[0] + i * so, ptr[2] + i * sx + v * sd, es))
#undef GATHER_LOOP
    if (bad >= 0) axon_ix_note_first(&j->first_bad, pos + bad);
}

static void gather_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct gather_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, gather_run, j);
}

/* index_select whose elements after dim form dense rows in both in and out (an embedding lookup, a row pick from
 * a matrix): one memcpy of a whole row per (position before dim, index), instead of one index load and one move per
 * element. Units are those rows in out's order, so a chunk of units writes one stretch of out. */
struct gather_rows_job {
    const struct gather_args *a;
    int64_t n;                       /* index's numel: rows per position before dim */
    int64_t size;                    /* in's size at dim */
    int64_t es;
    size_t row;                      /* bytes per row */
    int is64;
};

static void gather_rows_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct gather_rows_job *j = ctx;
    const struct gather_args *a = j->a;
    const int dim = a->dim;
    const char *x = a->check.data;
    const int64_t xs = a->check.ndim ? a->check.strides[0] * (int64_t)axon_dtype_size(a->check.dtype) : 0;
    const int64_t os = a->out.strides[dim] * j->es, is = a->in.strides[dim] * j->es;
    for (int64_t u = begin; u < end;) {
        const int64_t o = u / j->n;
        char *ob = (char *)a->out.data + ix_outer_offset(&a->out, &a->out, dim, o) * j->es;
        const char *ib = (const char *)a->in.data + ix_outer_offset(&a->in, &a->out, dim, o) * j->es;
        for (int64_t i = u % j->n; i < j->n && u < end; i++, u++) {
            int64_t v = ix_load(x + i * xs, j->is64);
            v += v < 0 ? j->size : 0;
            memcpy(ob + i * os, ib + v * is, j->row);
        }
    }
}

/* Runs the row path (or finds an index out of range, into *st) and returns 1 when a's layout allows it, else returns
 * 0 having done nothing. */
static int gather_rows(const struct gather_args *a, axon_pool_t pool, axon_status_t *st) {
    int64_t inner_out, inner_in;
    const int64_t es = (int64_t)axon_dtype_size(a->out.dtype);
    if (!a->select || !ix_inner_rows(&a->out, a->dim, &inner_out) || !ix_inner_rows(&a->in, a->dim, &inner_in) ||
        inner_out != inner_in || inner_out * es < IX_ROW_MIN_BYTES)
        return 0;
    /* one index per row: a pass over the index first costs little */
    *st = axon_ix_check_bounds(&a->check, a->in.sizes[a->dim], a->wrap, a->dim, "index_select", pool);
    if (*st != AXON_OK) return 1;
    struct gather_rows_job j = {a, axon_tensor_numel(&a->check), a->in.sizes[a->dim], es, (size_t)(inner_out * es),
                                a->check.dtype == AXON_INT64};
    const int64_t rows = axon_tensor_numel(&a->out) / inner_out;
    axon_ix_parallel_parts(pool, rows, (double)rows * (double)j.row, gather_rows_range, &j);
    return 1;
}

static axon_status_t gather_kernel(const void *args, const axon_exec_t *ex) {
    const struct gather_args *a = args;
    const char *op = a->select ? "index_select" : "gather";
    axon_status_t st = AXON_OK;
    if (gather_rows(a, ex->pool, &st)) return st;
    struct gather_job j;
    axon_tensor_t in0 = a->in;
    for (int d = 0; d < in0.ndim; d++) in0.sizes[d] = a->out.sizes[d];
    in0.strides[a->dim] = 0;
    const axon_tensor_t *ts[3] = {&a->out, &a->index, &in0};
    axon_iter_init(&j.it, 3, ts, 1);
    j.size = a->in.sizes[a->dim];
    j.dstride = a->in.strides[a->dim];
    j.is64 = a->index.dtype == AXON_INT64;
    j.wrap = a->wrap;
    atomic_init(&j.first_bad, INT64_MAX);
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN / 4, gather_range, &j);
    return axon_ix_bounds_error(&j.it, 1, atomic_load(&j.first_bad), j.is64, op, a->dim, j.size);
}

/* Checks common to gather and index_select; the index is already in out's shape. */
static axon_status_t gather_launch(axon_stream_t s, struct gather_args *a, const char *op) {
    char sa[160], sb[160];
    if (a->out.dtype != a->in.dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): out dtype %s does not match in dtype %s", op,
                         axon_dtype_name(a->out.dtype), axon_dtype_name(a->in.dtype));
    for (int d = 0; d < a->in.ndim; d++)
        if (d != a->dim && a->index.sizes[d] > a->in.sizes[d])
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): index %s is larger than in %s apart from dimension %d",
                             op, axon_shape_format(&a->index, sa, sizeof sa), axon_shape_format(&a->in, sb, sizeof sb),
                             a->dim);
    int64_t n = axon_tensor_numel(&a->out);
    if (n == 0) return AXON_OK;
    if (a->in.sizes[a->dim] == 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s(): cannot select from dimension %d of size 0", op, a->dim);
    axon_launch_t l = {gather_kernel, a, sizeof *a, op, (uint64_t)n * 2 * axon_dtype_size(a->out.dtype)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_gather(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in, int dim,
                                 const axon_tensor_t *index, unsigned flags) {
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_dst(out, "gather: out")) != AXON_OK) return st;
    if ((st = axon_kernel_check_src(in, "gather: in")) != AXON_OK) return st;
    if ((st = axon_ix_check_index(index, "gather")) != AXON_OK) return st;
    if (in->ndim < 1) return axon_fail(AXON_ERROR_INVALID_ARG, "gather: in must have at least one dimension");
    if ((st = axon_ix_wrap_dim("gather", in->ndim, &dim)) != AXON_OK) return st;
    int same = out->ndim == index->ndim && index->ndim == in->ndim;
    for (int d = 0; same && d < out->ndim; d++) same = out->sizes[d] == index->sizes[d];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "gather(): out %s must have index's shape %s and in's ndim %d",
                         axon_shape_format(out, sa, sizeof sa), axon_shape_format(index, sb, sizeof sb), in->ndim);
    struct gather_args a;
    memset(&a, 0, sizeof a);
    a.out = *out, a.in = *in, a.index = *index, a.check = *index, a.dim = dim, a.wrap = flags & AXON_INDEX_WRAP;
    return gather_launch(s, &a, "gather");
}

axon_status_t axon_kernel_index_select(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in, int dim,
                                       const axon_tensor_t *index, unsigned flags) {
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_dst(out, "index_select: out")) != AXON_OK) return st;
    if ((st = axon_kernel_check_src(in, "index_select: in")) != AXON_OK) return st;
    if ((st = axon_ix_check_index(index, "index_select")) != AXON_OK) return st;
    if (in->ndim < 1) return axon_fail(AXON_ERROR_INVALID_ARG, "index_select: in must have at least one dimension");
    if ((st = axon_ix_wrap_dim("index_select", in->ndim, &dim)) != AXON_OK) return st;
    if (index->ndim > 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "index_select(): Index is supposed to be a vector, got %s",
                         axon_shape_format(index, sa, sizeof sa));
    int64_t n = axon_tensor_numel(index);
    int same = out->ndim == in->ndim;
    for (int d = 0; same && d < out->ndim; d++) same = out->sizes[d] == (d == dim ? n : in->sizes[d]);
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "index_select(): out %s must be in %s with %" PRId64 " at dim %d",
                         axon_shape_format(out, sa, sizeof sa), axon_shape_format(in, sb, sizeof sb), n, dim);
    struct gather_args a;
    memset(&a, 0, sizeof a);
    a.out = *out, a.in = *in, a.check = *index, a.dim = dim, a.select = 1;
    a.wrap = flags & AXON_INDEX_WRAP;
    a.index = *out;
    a.index.data = index->data;
    a.index.dtype = index->dtype;
    for (int d = 0; d < out->ndim; d++) a.index.strides[d] = d == dim && index->ndim ? index->strides[0] : 0;
    return gather_launch(s, &a, "index_select");
}

/* ---- masked_fill ---- */

struct mfill_args {
    axon_tensor_t out, mask;
    union {
        unsigned char bytes[16];
        double align;
    } value;
};

struct mfill_job {
    axon_iter_t it;
    const unsigned char *value;
};

static void mfill_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const struct mfill_job *j = ctx;
    const size_t es = j->it.esize[0];
    const int64_t so = stride[0] * (int64_t)es, sm = stride[1];
    for (int64_t i = 0; i < n; i++)
        if (ptr[1][i * sm]) ix_move(ptr[0] + i * so, (const char *)j->value, es);
}

static void mfill_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct mfill_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, mfill_run, j);
}

static axon_status_t mfill_kernel(const void *args, const axon_exec_t *ex) {
    const struct mfill_args *a = args;
    struct mfill_job j;
    const axon_tensor_t *ts[2] = {&a->out, &a->mask};
    axon_iter_init(&j.it, 2, ts, 1);
    j.value = a->value.bytes;
    axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, mfill_range, &j);
    return AXON_OK;
}

axon_status_t axon_kernel_masked_fill(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *mask,
                                      axon_scalar_t value) {
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_dst(out, "masked_fill: out")) != AXON_OK) return st;
    if ((st = axon_kernel_check_src(mask, "masked_fill: mask")) != AXON_OK) return st;
    if (mask->dtype != AXON_BOOL && mask->dtype != AXON_UINT8)
        return axon_fail(AXON_ERROR_INVALID_ARG, "masked_fill: mask must be bool or uint8, got %s",
                         axon_dtype_name(mask->dtype));
    int same = out->ndim == mask->ndim;
    for (int d = 0; same && d < out->ndim; d++) same = out->sizes[d] == mask->sizes[d];
    if (!same)
        return axon_fail(AXON_ERROR_INVALID_ARG, "masked_fill: mask shape %s does not match out shape %s",
                         axon_shape_format(mask, sa, sizeof sa), axon_shape_format(out, sb, sizeof sb));
    struct mfill_args a;
    memset(&a, 0, sizeof a);
    a.out = *out, a.mask = *mask;
    /* Convert once here, as fill does; the kernel then only moves bytes. */
    if ((st = axon_ix_scalar_bytes(value, out->dtype, a.value.bytes, "masked_fill")) != AXON_OK) return st;
    int64_t n = axon_tensor_numel(out);
    if (n == 0) return AXON_OK;
    axon_launch_t l = {mfill_kernel, &a, sizeof a, "masked_fill", (uint64_t)n * (axon_dtype_size(out->dtype) + 1)};
    return axon_stream_launch(s, &l);
}

/* ---- cat ---- */

struct cat_args {
    axon_tensor_t out;
    int dim, n;
    axon_tensor_t in[AXON_CAT_MAX_INPUTS];   /* only the first n travel: the launch copies a prefix */
};
_Static_assert(sizeof(struct cat_args) <= AXON_LAUNCH_MAX_ARGS, "cat's inputs must fit one argument block");

/* The row path: out seen as [outer, row] bytes, each row the dense block of out's elements from dim on for one
 * position before dim; row input t fills bytes [at[t], at[t] + len[t]) of every row from its own dense block. The
 * units of the parallel loop are bytes of that [outer, row] space, so one loop balances many narrow rows (cat along
 * the last dim) and a few wide ones (cat along dim 0) alike; a part copies the pieces of the inputs it overlaps.
 * Tensors are numbered t = 0 for out and 1..m for the inputs on the row path; the dims before dim are merged where
 * every one of them allows (usually into one), innermost first. */
struct cat_rows_job {
    int64_t row;                                      /* bytes per row of out */
    int m, nd;                                        /* inputs on the row path; merged outer dims */
    char *base[AXON_CAT_MAX_INPUTS + 1];
    int64_t at[AXON_CAT_MAX_INPUTS + 1], len[AXON_CAT_MAX_INPUTS + 1];
    int64_t size[AXON_MAX_DIMS];
    int64_t stride[AXON_CAT_MAX_INPUTS + 1][AXON_MAX_DIMS];   /* bytes */
    unsigned char on_rows[AXON_CAT_MAX_INPUTS];       /* per input of the launch */
};

static void cat_rows_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct cat_rows_job *j = ctx;
    const int m = j->m, nd = j->nd;
    /* Byte offsets of row o in each tensor, stepped from row to row like an odometer over the outer dims: one
     * division per dim per part rather than per row and input. */
    int64_t coord[AXON_MAX_DIMS], off[AXON_CAT_MAX_INPUTS + 1] = {0};
    int64_t o = begin / j->row, rest = o;
    for (int i = 0; i < nd; i++) {
        coord[i] = rest % j->size[i], rest /= j->size[i];
        for (int t = 0; t <= m; t++) off[t] += coord[i] * j->stride[t][i];
    }
    for (; o * j->row < end; o++) {
        char *ob = j->base[0] + off[0];
        const int64_t lo = o * j->row < begin ? begin - o * j->row : 0;
        const int64_t hi = end - o * j->row < j->row ? end - o * j->row : j->row;
        if (lo == 0 && hi == j->row) { /* a whole row (the common case, kept short) */
            for (int t = 1; t <= m; t++) axon_copy_bytes_short(ob + j->at[t], j->base[t] + off[t], (size_t)j->len[t]);
        } else {
            for (int t = 1; t <= m; t++) {
                const int64_t from = j->at[t] > lo ? j->at[t] : lo;
                const int64_t to = j->at[t] + j->len[t] < hi ? j->at[t] + j->len[t] : hi;
                if (from < to)
                    axon_copy_bytes_short(ob + from, j->base[t] + off[t] + (from - j->at[t]), (size_t)(to - from));
            }
        }
        for (int i = 0; i < nd; i++) {
            const int last = ++coord[i] == j->size[i];
            const int64_t steps = last ? 1 - j->size[i] : 1;
            for (int t = 0; t <= m; t++) off[t] += steps * j->stride[t][i];
            if (!last) break;
            coord[i] = 0;
        }
    }
}

/* Fills j for the inputs that can take the row path (out's dtype, dense from dim on, as out must be); returns how
 * many do. */
static int cat_rows_plan(const struct cat_args *a, struct cat_rows_job *j) {
    const int dim = a->dim;
    const int64_t es = (int64_t)axon_dtype_size(a->out.dtype);
    int64_t inner, in_inner, at = 0;
    const axon_tensor_t *ts[AXON_CAT_MAX_INPUTS + 1] = {&a->out};
    j->m = 0;
    memset(j->on_rows, 0, sizeof j->on_rows);
    if (!ix_inner_rows(&a->out, dim - 1, &inner)) return 0;
    j->row = inner * es;
    const int64_t per_slot = j->row / a->out.sizes[dim];   /* bytes of one slot along dim */
    for (int k = 0; k < a->n; k++) {
        const int64_t w = a->in[k].sizes[dim] * per_slot;
        if (w > 0 && a->in[k].dtype == a->out.dtype && ix_inner_rows(&a->in[k], dim - 1, &in_inner)) {
            const int t = ++j->m;
            ts[t] = &a->in[k], j->at[t] = at, j->len[t] = w, j->on_rows[k] = 1;
        }
        at += w;
    }
    if (j->m == 0) return 0;
    /* Outer dims, innermost first: size-1 dims dropped, a dim merged into the one inside it when every tensor's
     * stride allows. */
    j->nd = 0;
    for (int d = dim - 1; d >= 0; d--) {
        const int64_t size = a->out.sizes[d];
        if (size == 1) continue;
        int merge = j->nd > 0;
        for (int t = 0; merge && t <= j->m; t++)
            merge = ts[t]->strides[d] * es == j->stride[t][j->nd - 1] * j->size[j->nd - 1];
        if (merge) {
            j->size[j->nd - 1] *= size;
            continue;
        }
        j->size[j->nd] = size;
        for (int t = 0; t <= j->m; t++) j->stride[t][j->nd] = ts[t]->strides[d] * es;
        j->nd++;
    }
    for (int t = 0; t <= j->m; t++) j->base[t] = (char *)ts[t]->data;
    return j->m;
}

static axon_status_t cat_kernel(const void *args, const axon_exec_t *ex) {
    const struct cat_args *a = args;
    const int64_t es = (int64_t)axon_dtype_size(a->out.dtype);
    struct cat_rows_job j;
    const int rows = cat_rows_plan(a, &j);
    if (rows > 0) {
        const int64_t bytes = axon_tensor_numel(&a->out) * es;
        axon_ix_parallel_parts(ex->pool, bytes, (double)bytes, cat_rows_range, &j);
        if (rows == a->n) return AXON_OK;
    }
    axon_tensor_t slice = a->out;
    for (int k = 0; k < a->n; k++) {
        slice.sizes[a->dim] = a->in[k].sizes[a->dim];
        if (!j.on_rows[k] && axon_tensor_numel(&slice)) axon_copy_execute(&slice, &a->in[k], ex->pool);
        slice.data = (char *)slice.data + slice.sizes[a->dim] * slice.strides[a->dim] * es;
    }
    return AXON_OK;
}

axon_status_t axon_kernel_cat(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *inputs, int n, int dim) {
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_dst(out, "cat: out")) != AXON_OK) return st;
    if (!inputs || n < 1 || n > AXON_CAT_MAX_INPUTS)
        return axon_fail(AXON_ERROR_INVALID_ARG, "cat: %d inputs (with inputs %s); one launch takes 1 to %d", n,
                         inputs ? "given" : "NULL", AXON_CAT_MAX_INPUTS);
    if (out->ndim < 1) return axon_fail(AXON_ERROR_INVALID_ARG, "cat: out must have at least one dimension");
    if ((st = axon_ix_wrap_dim("cat", out->ndim, &dim)) != AXON_OK) return st;
    struct cat_args a;
    memset(&a, 0, sizeof a);
    a.out = *out, a.dim = dim, a.n = n;
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
        const axon_tensor_t *t = &inputs[k];
        if ((st = axon_ix_check_operand(t, "cat", "inputs", k, 0)) != AXON_OK) return st;
        int same = t->ndim == out->ndim;
        for (int d = 0; same && d < out->ndim; d++) same = d == dim || t->sizes[d] == out->sizes[d];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "cat: inputs[%d] shape %s does not match out %s except at dim %d",
                             k, axon_shape_format(t, sa, sizeof sa), axon_shape_format(out, sb, sizeof sb), dim);
        total += t->sizes[dim];
        a.in[k] = *t;
    }
    if (total != out->sizes[dim])
        return axon_fail(AXON_ERROR_INVALID_ARG, "cat: inputs add up to %" PRId64 " at dim %d, out has %" PRId64,
                         total, dim, out->sizes[dim]);
    int64_t numel = axon_tensor_numel(out);
    if (numel == 0) return AXON_OK;
    axon_launch_t l = {cat_kernel, &a, offsetof(struct cat_args, in) + (size_t)n * sizeof(axon_tensor_t), "cat",
                       (uint64_t)numel * 2 * axon_dtype_size(out->dtype)};
    return axon_stream_launch(s, &l);
}
