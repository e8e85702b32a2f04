/* axon_kernel_reduce's launch (axon/reduce.h): op names, argument checks, and the plan, decided on the host and
 * copied into the argument block, so the executor (reduce_exec.c) only runs it.
 *
 * The plan depends only on shapes, strides and dtypes. That is what makes results identical for any thread count:
 * chunk boundaries, and so the order in which partial results are merged, never move. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "reduce_impl.h"

static const char *const reduce_names[] = {
    "sum", "prod", "mean", "amax", "amin", "any", "all", "norm", "var", "std", "logsumexp", "count_nonzero", "xor",
    "nansum",
};
_Static_assert(sizeof reduce_names / sizeof reduce_names[0] == AXON_REDUCE_OP_COUNT,
               "every axon_reduce_op_t needs a name");

const char *axon_reduce_op_name(axon_reduce_op_t op) {
    return (unsigned)op < AXON_REDUCE_OP_COUNT ? reduce_names[op] : "invalid";
}


/* A complex SUM or MEAN is one real reduction over the float pairs: t with one more dimension, of size 2 and stride 1,
 * that it keeps (rd_plan folds rows of 2 lanes in groups, so the pairs are not the vector lanes). */
static void rd_pairs_view(const axon_tensor_t *t, axon_tensor_t *v) {
    *v = *t;
    v->dtype = t->dtype == AXON_COMPLEX64 ? AXON_FLOAT32 : AXON_FLOAT64;
    for (int i = 0; i < t->ndim; i++) v->strides[i] = t->strides[i] * 2;
    v->sizes[t->ndim] = 2;
    v->strides[t->ndim] = 1;
    v->ndim = t->ndim + 1;
}

/* Where t already has AXON_MAX_DIMS dimensions, two real reductions instead: part `im` of t viewed as its real dtype
 * at twice the strides. */
static void rd_part_view(const axon_tensor_t *t, int im, axon_tensor_t *v) {
    *v = *t;
    v->dtype = t->dtype == AXON_COMPLEX64 ? AXON_FLOAT32 : AXON_FLOAT64;
    v->data = (char *)t->data + (im ? axon_dtype_size(v->dtype) : 0);
    for (int i = 0; i < t->ndim; i++) v->strides[i] = t->strides[i] * 2;
}

/* The fold kind, finish and work type of op; 0 if the op has no identity for an empty reduction. */
static int rd_describe(axon_reduce_op_t op, const axon_reduce_params_t *p, axon_dtype_t in, axon_dtype_t out,
                       rd_op_t *d) {
    memset(d, 0, sizeof *d);
    d->work = rd_work_of(out);
    d->p = p->p;
    d->correction = p->correction;
    d->fin = RD_FIN_NONE;
    int has_identity = 1;
    switch (op) {
    case AXON_REDUCE_SUM: d->kind = RD_SUM; break;
    case AXON_REDUCE_PROD: d->kind = RD_PROD; break;
    case AXON_REDUCE_MEAN: d->kind = RD_SUM, d->fin = RD_FIN_MEAN; break;
    case AXON_REDUCE_AMAX: d->kind = RD_MAX, has_identity = 0; break;
    case AXON_REDUCE_AMIN: d->kind = RD_MIN, has_identity = 0; break;
    /* The nonzero tests read in's values: a float 0.5 must not be truncated to an integer 0 first. They load in
     * as bool (x != 0, NaN true) and count in int64, so a count never rounds. */
    case AXON_REDUCE_ANY: d->kind = RD_NZ_MAX, d->work = RD_W_I64; break;
    case AXON_REDUCE_ALL: d->kind = RD_NZ_MIN, d->work = RD_W_I64; break;
    case AXON_REDUCE_COUNT_NONZERO: d->kind = RD_NZ_SUM, d->work = RD_W_I64; break;
    case AXON_REDUCE_XOR: d->kind = RD_XOR, d->work = RD_W_I64; break;
    case AXON_REDUCE_NANSUM: d->kind = d->work == RD_W_I64 ? RD_SUM : RD_NAN_SUM; break;
    case AXON_REDUCE_NORM:
        if (p->p == 0) d->kind = RD_NZ_SUM;
        else if (p->p == 1) d->kind = RD_ABS_SUM;
        else if (p->p == 2) d->kind = RD_SQ_SUM, d->fin = RD_FIN_SQRT;
        else if (p->p == INFINITY) d->kind = RD_ABS_MAX, has_identity = 0;
        else if (p->p == -INFINITY) d->kind = RD_ABS_MIN, has_identity = 0;
        else d->kind = RD_POW_SUM, d->fin = RD_FIN_ROOT;
        break;
    case AXON_REDUCE_VAR: d->kind = RD_VAR, d->fin = RD_FIN_VAR; break;
    case AXON_REDUCE_STD: d->kind = RD_VAR, d->fin = RD_FIN_STD; break;
    case AXON_REDUCE_LOGSUMEXP: d->kind = RD_LSE, d->fin = RD_FIN_LSE; break;
    default: break;
    }
    (void)in;
    return has_identity;
}

static int rd_needs_floating_out(axon_reduce_op_t op) {
    return op == AXON_REDUCE_MEAN || op == AXON_REDUCE_NORM || op == AXON_REDUCE_VAR || op == AXON_REDUCE_STD ||
           op == AXON_REDUCE_LOGSUMEXP;
}

static int64_t rd_abs(int64_t v) { return v < 0 ? -v : v; }
static int64_t rd_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The dimensions along which in does not move (stride 0: an expanded input) outermost, in their order. The iterator
 * sorts them innermost (the smallest stride), where a sum over an expanded dim folded a few copies of one element
 * per output (each through the strided loader) and a sum beside one took lanes over copies: 30-75x torch CPU's
 * time. Outermost, the fastest dimension that walks memory picks the path, and a copy re-reads cached rows. */
static void rd_zero_strides_outermost(axon_iter_t *it) {
    const axon_iter_t t = *it;
    int o = 0;
    for (int zero = 0; zero < 2; zero++)
        for (int d = 0; d < t.ndim; d++) {
            if ((t.strides[0][d] == 0) != zero) continue;
            it->sizes[o] = t.sizes[d];
            for (int k = 0; k < t.ntensors; k++) it->strides[k][o] = t.strides[k][d];
            o++;
        }
}

/* Pick the path and its chunking. a->kept, a->red, a->count and a->nout are set. */
static void rd_plan(rd_args_t *a) {
    const axon_iter_t *k = &a->kept, *r = &a->red;
    if (a->count == 0) {
        a->path = RD_PATH_EMPTY;
        return;
    }
    /* Fastest reduced and kept strides; a lone element, or reduced copies of one (stride 0), has no stride that
     * matters. Kept copies (stride 0: every output of them the same) go to OUTER's lanes, which read one element
     * per row, unless the reduced runs are contiguous. */
    int64_t rs = r->sizes[0] > 1 && r->strides[0][0] != 0 ? rd_abs(r->strides[0][0]) : INT64_MAX;
    int64_t ks = k->sizes[0] > 1 ? rd_abs(k->strides[0][0]) : INT64_MAX;
    if (ks == 0 && rs == 1) ks = INT64_MAX;
    if (rd_kind_is_simple(a->op.kind) && a->nout > 1 && a->count > 1 && ks < rs) {
        a->path = RD_PATH_OUTER;
        int64_t K = k->sizes[0];
        a->lanes = K < RD_VEC ? K : RD_VEC;
        a->items = (a->nout / K) * rd_ceil_div(K, a->lanes);
        a->group = 1;
        /* Narrow lanes over back-to-back rows: the largest group of at least 4 rows that divides the fastest
         * reduced dim becomes one row of red (its stride and size rescaled); the exec merges the groups' lanes. */
        if (K <= RD_NARROW_LANES && k->strides[0][0] == 1 && r->strides[0][0] == K) {
            for (int64_t g = RD_GROUP_LANES / K; g >= 4 && a->group == 1; g--)
                if (r->sizes[0] % g == 0) a->group = g;
            a->red.sizes[0] /= a->group;
            a->red.strides[0][0] *= a->group;
            a->red.numel /= a->group;
            a->lanes *= a->group;
        }
        a->rows = a->count / a->group;
        a->nchunks = 1;
        a->chunk = a->rows;
        int64_t rows_min = RD_SPLIT_MIN / a->lanes;
        rows_min = rd_ceil_div(rows_min < RD_ROW_BLOCK ? RD_ROW_BLOCK : rows_min, RD_ROW_BLOCK) * RD_ROW_BLOCK;
        int64_t fit = RD_PARTIAL_BYTES / (a->items * a->lanes * (int64_t)a->w_esize);
        if (a->items < 16 && a->rows >= 2 * rows_min && fit >= 2) {
            int64_t n = rd_ceil_div(a->rows, rows_min);
            if (n > fit) n = fit;
            a->chunk = rd_ceil_div(rd_ceil_div(a->rows, n), RD_ROW_BLOCK) * RD_ROW_BLOCK;
            a->nchunks = rd_ceil_div(a->rows, a->chunk);
        }
        return;
    }
    a->path = RD_PATH_INNER;
    a->nchunks = 1;
    a->chunk = a->count;
    if (a->nout <= RD_MAX_PARTIALS / 4 && a->count >= 2 * RD_SPLIT_MIN) {
        int64_t n = rd_ceil_div(a->count, RD_SPLIT_MIN), fit = RD_MAX_PARTIALS / a->nout;
        if (n > fit) n = fit;
        a->chunk = rd_ceil_div(rd_ceil_div(a->count, n), RD_BLOCK) * RD_BLOCK;
        a->nchunks = rd_ceil_div(a->count, a->chunk);
        if (a->nchunks > 1) a->path = RD_PATH_SPLIT;
    }
}

axon_status_t axon_kernel_reduce(axon_stream_t s, axon_reduce_op_t op, const axon_tensor_t *out,
                                 const axon_tensor_t *in, const axon_reduce_params_t *params) {
    if ((unsigned)op >= AXON_REDUCE_OP_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "reduce: op %d is out of range [0, %d)", (int)op,
                         AXON_REDUCE_OP_COUNT);
    const char *name = reduce_names[op];
    char sa[160], sb[160];
    axon_status_t st;
    if ((st = axon_kernel_check_operand(out, name, "out", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(in, name, "in", 0)) != AXON_OK) return st;
    /* ANY, ALL and COUNT_NONZERO of a complex in test x != 0 (either part nonzero) like any other in. */
    const int tests_nonzero = op == AXON_REDUCE_ANY || op == AXON_REDUCE_ALL || op == AXON_REDUCE_COUNT_NONZERO;
    /* complex32 is a storage dtype: read only to test x != 0, as PyTorch CPU reduces it in nothing else */
    if ((in->dtype == AXON_COMPLEX32 && !tests_nonzero) || out->dtype == AXON_COMPLEX32)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: complex32 is not supported (in %s, out %s)", name,
                         axon_dtype_name(in->dtype), axon_dtype_name(out->dtype));
    int complex = (rd_is_complex(in->dtype) && !tests_nonzero) || rd_is_complex(out->dtype);
    /* complex products and log-sum-exps run on their own (reduce_complex.c); sums and means reduce the parts */
    const int whole_complex = complex && (op == AXON_REDUCE_PROD || op == AXON_REDUCE_LOGSUMEXP) &&
                              rd_is_complex(out->dtype);
    if (complex && !whole_complex &&
        !((op == AXON_REDUCE_SUM || op == AXON_REDUCE_MEAN) && rd_is_complex(in->dtype) && rd_is_complex(out->dtype)))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: complex dtypes are not supported (in %s, out %s)", name,
                         axon_dtype_name(in->dtype), axon_dtype_name(out->dtype));
    if (op == AXON_REDUCE_XOR && axon_dtype_is_floating(out->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED,
                         "%s: out must have an integer or bool dtype, got %s (the xor of bits is an integer)", name,
                         axon_dtype_name(out->dtype));
    if (!complex && rd_needs_floating_out(op) && !axon_dtype_is_floating(out->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: out must have a floating dtype, got %s (in %s)", name,
                         axon_dtype_name(out->dtype), axon_dtype_name(in->dtype));
    int ok = out->ndim == in->ndim;
    for (int i = 0; ok && i < in->ndim; i++) ok = out->sizes[i] == in->sizes[i] || out->sizes[i] == 1;
    if (!ok)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: out shape %s is not in shape %s with size 1 on the reduced dimensions", name,
                         axon_shape_format(out, sa, sizeof sa), axon_shape_format(in, sb, sizeof sb));
    if (whole_complex) return axon_rd_complex(s, op, out, in);
    if (complex && in->ndim < AXON_MAX_DIMS) { /* one pass over the pairs, not one per part */
        axon_tensor_t pi, po;
        rd_pairs_view(in, &pi);
        rd_pairs_view(out, &po);
        return axon_kernel_reduce(s, op, &po, &pi, params);
    }
    if (complex) {
        for (int im = 0; im < 2; im++) {
            axon_tensor_t pi, po;
            rd_part_view(in, im, &pi);
            rd_part_view(out, im, &po);
            if ((st = axon_kernel_reduce(s, op, &po, &pi, params)) != AXON_OK) return st;
        }
        return AXON_OK;
    }
    axon_reduce_params_t p = params ? *params : axon_reduce_params_default();
    if (op == AXON_REDUCE_NORM && isnan(p.p))
        return axon_fail(AXON_ERROR_INVALID_ARG, "norm: p is NaN");
    rd_args_t a;
    memset(&a, 0, sizeof a);
    int has_identity = rd_describe(op, &p, in->dtype, out->dtype, &a.op);
    a.nout = axon_tensor_numel(out);
    if (a.nout == 0) return AXON_OK;
    /* in viewed two ways: over the kept dims (reduced sizes set to 1) and over the reduced dims (kept set to 1). */
    axon_tensor_t kv = *in, rv = *in;
    a.count = 1;
    for (int i = 0; i < in->ndim; i++) {
        int reduced = out->sizes[i] == 1 && in->sizes[i] != 1;
        kv.sizes[i] = reduced ? 1 : in->sizes[i];
        rv.sizes[i] = reduced ? in->sizes[i] : 1;
        if (reduced) a.count *= in->sizes[i];
    }
    if (a.count == 0 && !has_identity)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: cannot reduce over zero elements (in %s, out %s): the operation has no identity", name,
                         axon_shape_format(in, sa, sizeof sa), axon_shape_format(out, sb, sizeof sb));
    const axon_tensor_t *kt[2] = {&kv, out}, *rt[1] = {&rv};
    axon_iter_init(&a.kept, 2, kt, 1);
    axon_iter_init(&a.red, 1, rt, 1);
    rd_zero_strides_outermost(&a.kept);
    rd_zero_strides_outermost(&a.red);
    a.red_shift = (int64_t)(a.red.data[0] - (char *)in->data);
    a.name = name;
    axon_dtype_t wd = axon_rd_work_ops[a.op.work].dtype;
    int nonzero = a.op.kind == RD_NZ_MAX || a.op.kind == RD_NZ_MIN ||
                  (a.op.kind == RD_NZ_SUM && op == AXON_REDUCE_COUNT_NONZERO);
    if (nonzero && (axon_dtype_is_floating(in->dtype) || rd_is_complex(in->dtype) || in->dtype == AXON_COMPLEX32)) {
        a.pre = axon_convert_get(in->dtype, AXON_BOOL);
        a.load = axon_convert_get(AXON_BOOL, wd);
    } else if (op == AXON_REDUCE_XOR && axon_dtype_is_floating(in->dtype)) {
        /* the float64 bits of the values land in the int64 work buffer as they are; float64 is folded in place */
        if (in->dtype != AXON_FLOAT64) a.load = axon_convert_get(in->dtype, AXON_FLOAT64);
    } else if (in->dtype != wd) {
        a.load = axon_convert_get(in->dtype, wd);
    }
    if (a.op.kind == RD_SUM && !a.pre && wd == AXON_FLOAT32)
        a.half_sum = in->dtype == AXON_BFLOAT16 ? RD_HALF_BF16 : in->dtype == AXON_FLOAT16 ? RD_HALF_F16 : RD_HALF_NONE;
    a.half_fold = a.half_sum ? axon_rd_half_fold(a.half_sum) : NULL;
    a.store = axon_convert_get(wd, out->dtype);
    a.in_esize = axon_dtype_size(in->dtype);
    a.w_esize = axon_dtype_size(wd);
    a.out_esize = axon_dtype_size(out->dtype);
    rd_plan(&a);
    uint64_t bytes = (uint64_t)axon_tensor_numel(in) * a.in_esize + (uint64_t)a.nout * a.out_esize;
    axon_launch_t l = {axon_rd_kernel, &a, sizeof a, name, bytes};
    return axon_stream_launch(s, &l);
}
