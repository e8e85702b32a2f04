/* Type inference for AXIR ops: what result types an op computes from its operand types and attributes
 * (docs/axir.md, "Operations"). The verifier compares these with the declared types. Symbolic dims are built in a
 * scratch arena and compared after simplification. */
#include <stdio.h>
#include <string.h>

#include "axir_impl.h"

int axir_infer_fail(axir_infer_ctx_t *c, const char *fmt, ...) {
    int k = snprintf(c->msg, sizeof c->msg, "%s: ", c->op);
    if (k < 0 || (size_t)k >= sizeof c->msg) return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + k, sizeof c->msg - (size_t)k, fmt, ap);
    va_end(ap);
    return 0;
}

#define TYPE(i) (&n->operands[(i)]->type)

static const char *tstr(axir_infer_ctx_t *c, const axon_axir_type_t *t, char *buf, size_t size) {
    return axir_type_str(c->f, t, buf, size);
}

static int deq(axir_infer_ctx_t *c, axon_axir_dim_t a, axon_axir_dim_t b) {
    return axon_axir_dim_equal(c->scratch, a, b);
}

static int is_static(axon_axir_dim_t d, int64_t v) { return d.expr == NULL && d.size == v; }

static int has_div(axon_axir_dim_t d) { return d.expr && axir_sym_has_div(d.expr); }

/* Dims an op needs equal: equal after simplification, or not comparable (a // or % in either, whose forms are not
 * canonical), so that only a provable mismatch is an error. */
static int compat(axir_infer_ctx_t *c, axon_axir_dim_t a, axon_axir_dim_t b) {
    return deq(c, a, b) || has_div(a) || has_div(b);
}

static int64_t attr_i(const axon_axir_node_t *n, const char *name, int64_t dflt) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, name);
    return a ? a->i : dflt;
}

/* A dim index d of a rank-r tensor, negatives from the end; a 0-d tensor takes 0 and -1, as in PyTorch. */
static int norm_dim(axir_infer_ctx_t *c, int64_t d, int rank, const char *what, int *out) {
    int wrap = rank > 0 ? rank : 1;
    if (d < -wrap || d >= wrap)
        return axir_infer_fail(c, "%s %lld is out of range for rank %d", what, (long long)d, rank);
    *out = (int)(d < 0 ? d + wrap : d);
    return 1;
}

/* The static ints of a list attribute (at most AXON_MAX_DIMS). */
static int list_ints(axir_infer_ctx_t *c, const axon_axir_node_t *n, const char *name, int64_t *vals, int *count) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, name);
    *count = 0;
    if (a == NULL) return 1;
    if (a->count > AXON_MAX_DIMS) return axir_infer_fail(c, "%s has %d entries, more than %d", name, a->count,
                                                          AXON_MAX_DIMS);
    for (int i = 0; i < a->count; i++) {
        if (a->items[i].expr) return axir_infer_fail(c, "%s must list integers, entry %d is symbolic", name, i);
        vals[i] = a->items[i].size;
    }
    *count = a->count;
    return 1;
}

static int check_dtype(axir_infer_ctx_t *c, const axon_axir_node_t *n, int i, axir_dtypes_t set) {
    axon_dtype_t d = TYPE(i)->dtype;
    if (axir_dtype_ok(set, d)) return 1;
    return axir_infer_fail(c, "operand %d has dtype %s, expected %s", i + 1, axon_axir_dtype_name(d),
                           axir_dtypes_text(set));
}

static int same_dtype(axir_infer_ctx_t *c, const axon_axir_node_t *n, int i, axon_dtype_t want) {
    if (TYPE(i)->dtype == want) return 1;
    return axir_infer_fail(c, "operand %d has dtype %s, expected %s", i + 1, axon_axir_dtype_name(TYPE(i)->dtype),
                           axon_axir_dtype_name(want));
}

/* Operand i has type want: its dtype, rank and dims. */
static int same_type(axir_infer_ctx_t *c, const axon_axir_node_t *n, int i, const axon_axir_type_t *want) {
    const axon_axir_type_t *t = TYPE(i);
    int same = t->dtype == want->dtype && t->rank == want->rank;
    for (int d = 0; same && d < t->rank; d++) same = compat(c, t->dims[d], want->dims[d]);
    if (same) return 1;
    char sa[160], sb[160];
    return axir_infer_fail(c, "operand %d is %s, expected %s", i + 1, tstr(c, t, sa, sizeof sa),
                           tstr(c, want, sb, sizeof sb));
}

/* NumPy broadcasting of a and b into out (dtype from a). */
static int broadcast(axir_infer_ctx_t *c, const axon_axir_type_t *a, const axon_axir_type_t *b,
                     axon_axir_type_t *out) {
    const axon_axir_type_t *big = a->rank >= b->rank ? a : b, *small = big == a ? b : a;
    axon_axir_type_t r = *big;
    r.dtype = a->dtype;
    int off = big->rank - small->rank;
    for (int i = 0; i < small->rank; i++) {
        axon_axir_dim_t x = big->dims[off + i], y = small->dims[i];
        if (compat(c, x, y) || is_static(y, 1)) continue;
        if (is_static(x, 1)) {
            r.dims[off + i] = y;
            continue;
        }
        char sa[160], sb[160];
        return axir_infer_fail(c, "shapes %s and %s do not broadcast (dimension %d from the right)",
                               tstr(c, a, sa, sizeof sa), tstr(c, b, sb, sizeof sb), small->rank - i);
    }
    *out = r;
    return 1;
}

static axon_axir_dim_t dim_binary(axir_infer_ctx_t *c, axon_sym_kind_t k, axon_axir_dim_t a, axon_axir_dim_t b) {
    const axon_sym_expr_t *e =
        axon_sym_binary(c->scratch, k, axir_dim_expr(c->scratch, a), axir_dim_expr(c->scratch, b));
    return axir_dim_from_expr(c->scratch, e);
}

static axon_axir_dim_t numel(axir_infer_ctx_t *c, const axon_axir_dim_t *dims, int rank) {
    axon_axir_dim_t r = axir_dim_static(1);
    for (int i = 0; i < rank; i++) {
        if (r.expr == NULL && dims[i].expr == NULL) {
            if (__builtin_mul_overflow(r.size, dims[i].size, &r.size)) r = axir_dim_static(-1);
        } else {
            r = dim_binary(c, AXON_SYM_MUL, r, dims[i]);
        }
    }
    return r;
}

/* ---- op families ---- */

static int infer_elementwise(axir_infer_ctx_t *c, const axon_axir_node_t *n, const axir_op_info_t *info,
                             axon_axir_type_t *out) {
    axon_axir_type_t r;
    if (n->op == AXON_AXIR_OP_WHERE) {
        if (TYPE(0)->dtype != AXON_BOOL)
            return axir_infer_fail(c, "operand 1 (the condition) has dtype %s, expected bool",
                                   axon_axir_dtype_name(TYPE(0)->dtype));
        if (!same_dtype(c, n, 2, TYPE(1)->dtype)) return 0;
        if (!broadcast(c, TYPE(1), TYPE(2), &r) || !broadcast(c, &r, TYPE(0), &r)) return 0;
        r.dtype = TYPE(1)->dtype;
        out[0] = r;
        return 1;
    }
    if (!check_dtype(c, n, 0, info->dtypes)) return 0;
    r = *TYPE(0);
    if (n->num_operands == 2) {
        if (!same_dtype(c, n, 1, TYPE(0)->dtype) || !broadcast(c, TYPE(0), TYPE(1), &r)) return 0;
    }
    if (n->op == AXON_AXIR_OP_DIV) {
        const axon_axir_attr_t *mode = axon_axir_node_attr(n, "rounding_mode");
        if (mode == NULL && !axon_dtype_is_floating(r.dtype) && r.dtype != AXON_COMPLEX64 &&
            r.dtype != AXON_COMPLEX128)
            return axir_infer_fail(c, "true division of %s needs a floating dtype (cast first, or give rounding_mode)",
                                   axon_axir_dtype_name(r.dtype));
        if (mode && !axir_dtype_ok(AXIR_DT_REAL, r.dtype))
            return axir_infer_fail(c, "rounding_mode needs an integer or floating dtype, got %s",
                                   axon_axir_dtype_name(r.dtype));
    }
    if (info->result_bool) r.dtype = AXON_BOOL;
    if (n->op == AXON_AXIR_OP_CAST) r.dtype = out[0].dtype;
    out[0] = r;
    return 1;
}

static int infer_reduction(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    int reduce[AXON_MAX_DIMS] = {0};
    int keepdim = (int)attr_i(n, "keepdim", 0);
    if (n->op == AXON_AXIR_OP_ARGMAX || n->op == AXON_AXIR_OP_ARGMIN) {
        int d = 0;
        if (!norm_dim(c, attr_i(n, "dim", 0), x->rank, "dim", &d)) return 0;
        if (x->rank > 0) reduce[d] = 1;
    } else {
        int64_t dims[AXON_MAX_DIMS];
        int count;
        if (!list_ints(c, n, "dims", dims, &count)) return 0;
        for (int i = 0; i < count; i++) {
            int d = 0;
            if (!norm_dim(c, dims[i], x->rank, "dims entry", &d)) return 0;
            if (x->rank == 0) continue;
            if (reduce[d]) return axir_infer_fail(c, "dims lists dimension %d twice", d);
            reduce[d] = 1;
        }
        if (count == 0)   /* as in ATen: no dims reduces them all */
            for (int i = 0; i < x->rank; i++) reduce[i] = 1;
    }
    axon_axir_type_t r = *x;
    r.rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!reduce[i]) r.dims[r.rank++] = x->dims[i];
        else if (keepdim) r.dims[r.rank++] = axir_dim_static(1);
    }
    if (n->op == AXON_AXIR_OP_ARGMAX || n->op == AXON_AXIR_OP_ARGMIN) r.dtype = AXON_INT64;
    out[0] = r;
    return 1;
}

static int infer_reshape(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, "shape");
    const axon_axir_type_t *x = TYPE(0);
    if (a->count > AXON_MAX_DIMS) return axir_infer_fail(c, "shape has %d entries, more than %d", a->count,
                                                          AXON_MAX_DIMS);
    axon_axir_type_t r = *x;
    r.rank = a->count;
    int infer_at = -1;
    for (int i = 0; i < a->count; i++) {
        r.dims[i] = a->items[i];
        if (a->items[i].expr == NULL && a->items[i].size < 0) {
            if (a->items[i].size != -1 || infer_at >= 0)
                return axir_infer_fail(c, "shape entry %d is %lld; only one -1 is allowed", i,
                                       (long long)a->items[i].size);
            infer_at = i;
        }
    }
    axon_axir_dim_t in = numel(c, x->dims, x->rank);
    if (infer_at >= 0) {
        r.dims[infer_at] = axir_dim_static(1);
        axon_axir_dim_t rest = numel(c, r.dims, r.rank);
        if (in.expr == NULL && rest.expr == NULL) {
            if (rest.size == 0 || in.size < 0 || in.size % rest.size != 0)
                return axir_infer_fail(c, "cannot infer the -1 in shape: %lld elements into groups of %lld",
                                       (long long)in.size, (long long)rest.size);
            r.dims[infer_at] = axir_dim_static(in.size / rest.size);
        } else {
            r.dims[infer_at] = dim_binary(c, AXON_SYM_FLOORDIV, in, rest);
        }
    }
    axon_axir_dim_t got = numel(c, r.dims, r.rank);
    if (!deq(c, in, got) && !has_div(in) && !has_div(got) && !(in.expr == NULL && in.size < 0)) {
        char sa[160], sb[160];
        axon_axir_type_t t = r;
        return axir_infer_fail(c, "cannot reshape %s into %s: the element counts differ", tstr(c, x, sa, sizeof sa),
                               tstr(c, &t, sb, sizeof sb));
    }
    out[0] = r;
    return 1;
}

static int infer_permute(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    int64_t dims[AXON_MAX_DIMS];
    int count, seen[AXON_MAX_DIMS] = {0};
    if (!list_ints(c, n, "dims", dims, &count)) return 0;
    if (count != x->rank) return axir_infer_fail(c, "dims has %d entries for an operand of rank %d", count, x->rank);
    axon_axir_type_t r = *x;
    for (int i = 0; i < count; i++) {
        int d = 0;
        if (!norm_dim(c, dims[i], x->rank, "dims entry", &d)) return 0;
        if (seen[d]++) return axir_infer_fail(c, "dims is not a permutation: %d appears twice", d);
        r.dims[i] = x->dims[d];
    }
    out[0] = r;
    return 1;
}

static int infer_expand(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, "shape");
    const axon_axir_type_t *x = TYPE(0);
    if (a->count > AXON_MAX_DIMS || a->count < x->rank)
        return axir_infer_fail(c, "shape has %d entries for an operand of rank %d", a->count, x->rank);
    axon_axir_type_t r = *x;
    r.rank = a->count;
    int off = a->count - x->rank;
    for (int i = 0; i < a->count; i++) {
        axon_axir_dim_t want = a->items[i];
        int keep = want.expr == NULL && want.size == -1;
        if (want.expr == NULL && want.size < -1) return axir_infer_fail(c, "shape entry %d is negative", i);
        if (i < off) {
            if (keep) return axir_infer_fail(c, "shape entry %d is -1 for a new leading dimension", i);
            r.dims[i] = want;
            continue;
        }
        axon_axir_dim_t have = x->dims[i - off];
        if (keep || compat(c, have, want)) {
            r.dims[i] = have;
        } else if (is_static(have, 1)) {
            r.dims[i] = want;
        } else {
            char sa[160];
            return axir_infer_fail(c, "cannot expand %s: dimension %d is not 1 and differs from shape entry %d",
                                   tstr(c, x, sa, sizeof sa), i - off, i);
        }
    }
    out[0] = r;
    return 1;
}

static int infer_slice(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    if (x->rank == 0) return axir_infer_fail(c, "cannot slice a 0-d tensor");
    int d = 0;
    if (!norm_dim(c, attr_i(n, "dim", 0), x->rank, "dim", &d)) return 0;
    int64_t start = attr_i(n, "start", 0), end = attr_i(n, "end", 0), step = attr_i(n, "step", 1);
    if (step < 1) return axir_infer_fail(c, "step %lld must be positive", (long long)step);
    axon_axir_type_t r = *x;
    axon_axir_dim_t size = x->dims[d];
    if (size.expr == NULL) {
        /* PyTorch's clamping: negatives count from the end, then both ends are clamped into [0, size] */
        int64_t s = start < 0 ? (start < -size.size ? 0 : start + size.size) : (start > size.size ? size.size : start);
        int64_t e = end < 0 ? (end < -size.size ? 0 : end + size.size) : (end > size.size ? size.size : end);
        r.dims[d] = axir_dim_static(e <= s ? 0 : (e - s - 1) / step + 1);
    } else {
        /* symbolic: the ends are assumed in range (the front end traced them so) */
        axon_axir_dim_t s = start < 0 ? dim_binary(c, AXON_SYM_ADD, size, axir_dim_static(start))
                                      : axir_dim_static(start);
        axon_axir_dim_t e = end >= AXIR_HUGE_END ? size
                            : end < 0           ? dim_binary(c, AXON_SYM_ADD, size, axir_dim_static(end))
                                                : axir_dim_static(end);
        axon_axir_dim_t len = dim_binary(c, AXON_SYM_SUB, e, s);
        if (step > 1)
            len = dim_binary(c, AXON_SYM_FLOORDIV, dim_binary(c, AXON_SYM_ADD, len, axir_dim_static(step - 1)),
                             axir_dim_static(step));
        if (len.expr == NULL && len.size < 0) len.size = 0;
        r.dims[d] = len;
    }
    out[0] = r;
    return 1;
}

static int infer_select(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    if (x->rank == 0) return axir_infer_fail(c, "cannot select from a 0-d tensor");
    int d = 0;
    if (!norm_dim(c, attr_i(n, "dim", 0), x->rank, "dim", &d)) return 0;
    int64_t index = attr_i(n, "index", 0);
    if (x->dims[d].expr == NULL && (index >= x->dims[d].size || index < -x->dims[d].size))
        return axir_infer_fail(c, "index %lld is out of range for dimension %d of size %lld", (long long)index, d,
                               (long long)x->dims[d].size);
    axon_axir_type_t r = *x;
    r.rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != d) r.dims[r.rank++] = x->dims[i];
    out[0] = r;
    return 1;
}

static int infer_squeeze(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    int64_t dims[AXON_MAX_DIMS];
    int count, drop[AXON_MAX_DIMS] = {0};
    if (!list_ints(c, n, "dims", dims, &count)) return 0;
    for (int i = 0; i < count; i++) {
        int d = 0;
        if (!norm_dim(c, dims[i], x->rank, "dims entry", &d)) return 0;
        if (x->rank > 0 && is_static(x->dims[d], 1)) drop[d] = 1;   /* other sizes stay, as in PyTorch */
    }
    if (count == 0)
        for (int i = 0; i < x->rank; i++) drop[i] = is_static(x->dims[i], 1);
    axon_axir_type_t r = *x;
    r.rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) r.dims[r.rank++] = x->dims[i];
    out[0] = r;
    return 1;
}

static int infer_unsqueeze(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    if (x->rank >= AXON_MAX_DIMS) return axir_infer_fail(c, "the result would have more than %d dims", AXON_MAX_DIMS);
    int d = 0;
    int64_t dim = attr_i(n, "dim", 0);
    if (dim < -(x->rank + 1) || dim > x->rank)
        return axir_infer_fail(c, "dim %lld is out of range for rank %d", (long long)dim, x->rank);
    d = (int)(dim < 0 ? dim + x->rank + 1 : dim);
    axon_axir_type_t r = *x;
    r.rank = x->rank + 1;
    for (int i = 0, k = 0; i < r.rank; i++) r.dims[i] = i == d ? axir_dim_static(1) : x->dims[k++];
    out[0] = r;
    return 1;
}

static int infer_cat(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    if (x->rank == 0) return axir_infer_fail(c, "operand 1 is 0-d; cat needs rank >= 1");
    int d = 0;
    if (!norm_dim(c, attr_i(n, "dim", 0), x->rank, "dim", &d)) return 0;
    axon_axir_type_t r = *x;
    for (int i = 1; i < n->num_operands; i++) {
        const axon_axir_type_t *y = TYPE(i);
        if (!same_dtype(c, n, i, x->dtype)) return 0;
        if (y->rank != x->rank)
            return axir_infer_fail(c, "operand %d has rank %d, expected %d", i + 1, y->rank, x->rank);
        for (int k = 0; k < x->rank; k++) {
            if (k == d) continue;
            if (!compat(c, x->dims[k], y->dims[k])) {
                char sa[160], sb[160];
                return axir_infer_fail(c, "operand %d is %s, which differs from %s outside dim %d", i + 1,
                                       tstr(c, y, sa, sizeof sa), tstr(c, x, sb, sizeof sb), d);
            }
        }
        r.dims[d] = dim_binary(c, AXON_SYM_ADD, r.dims[d], y->dims[d]);
    }
    out[0] = r;
    return 1;
}

static int need_rank(axir_infer_ctx_t *c, const axon_axir_node_t *n, int i, int rank) {
    if (TYPE(i)->rank == rank) return 1;
    return axir_infer_fail(c, "operand %d has rank %d, expected %d", i + 1, TYPE(i)->rank, rank);
}

static int dims_match(axir_infer_ctx_t *c, const axon_axir_node_t *n, int i, int di, int j, int dj,
                      const char *what) {
    if (compat(c, TYPE(i)->dims[di], TYPE(j)->dims[dj])) return 1;
    char sa[160], sb[160];
    return axir_infer_fail(c, "%s: operand %d is %s, operand %d is %s", what, i + 1, tstr(c, TYPE(i), sa, sizeof sa),
                           j + 1, tstr(c, TYPE(j), sb, sizeof sb));
}

static int infer_matmul(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    int a = n->op == AXON_AXIR_OP_ADDMM ? 1 : 0, b = a + 1;
    int batched = n->op == AXON_AXIR_OP_BMM, rank = batched ? 3 : 2;
    if (!check_dtype(c, n, a, AXIR_DT_NUMERIC)) return 0;
    for (int i = 0; i < n->num_operands; i++)
        if (!same_dtype(c, n, i, TYPE(a)->dtype)) return 0;
    if (!need_rank(c, n, a, rank) || !need_rank(c, n, b, rank)) return 0;
    if (batched && !dims_match(c, n, a, 0, b, 0, "batch sizes differ")) return 0;
    if (!dims_match(c, n, a, rank - 1, b, rank - 2, "inner dimensions differ")) return 0;
    axon_axir_type_t r = *TYPE(a);
    r.dims[rank - 1] = TYPE(b)->dims[rank - 1];
    if (n->op == AXON_AXIR_OP_ADDMM) {
        axon_axir_type_t t;
        if (TYPE(0)->rank > 2) return axir_infer_fail(c, "operand 1 (bias) has rank %d, expected at most 2",
                                                      TYPE(0)->rank);
        if (!broadcast(c, &r, TYPE(0), &t)) return 0;
        for (int i = 0; i < 2; i++)
            if (!compat(c, t.dims[i], r.dims[i]))
                return axir_infer_fail(c, "operand 1 (bias) does not broadcast to the product's shape");
    }
    out[0] = r;
    return 1;
}

static int infer_norm(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0);
    int64_t k = attr_i(n, "normalized_ndim", 0);
    if (k < 1 || k > x->rank)
        return axir_infer_fail(c, "normalized_ndim %lld must be in [1, %d] (the operand's rank)", (long long)k,
                               x->rank);
    for (int i = 1; i < n->num_operands; i++) {
        const axon_axir_type_t *w = TYPE(i);
        if (!same_dtype(c, n, i, x->dtype)) return 0;
        int ok = w->rank == k;
        for (int j = 0; ok && j < k; j++) ok = compat(c, w->dims[j], x->dims[x->rank - k + j]);
        if (!ok) {
            char sa[160], sb[160];
            return axir_infer_fail(c, "operand %d is %s; it must be the last %lld dims of %s", i + 1,
                                   tstr(c, w, sa, sizeof sa), (long long)k, tstr(c, x, sb, sizeof sb));
        }
    }
    out[0] = *x;
    /* statistics: one per normalized group, kept as size-1 dims; f32 for f16/bf16 inputs is accepted too */
    for (int i = 1; i < n->num_results; i++) {
        axon_dtype_t want = out[i].dtype == AXON_FLOAT32 ? AXON_FLOAT32 : x->dtype;
        out[i] = *x;
        out[i].dtype = want;
        for (int j = x->rank - (int)k; j < x->rank; j++) out[i].dims[j] = axir_dim_static(1);
    }
    return 1;
}

static int infer_index(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0), *idx = TYPE(1);
    if (!check_dtype(c, n, 1, AXIR_DT_INT)) return 0;
    axon_axir_type_t r = *x;
    if (n->op == AXON_AXIR_OP_EMBEDDING) {
        if (!need_rank(c, n, 0, 2)) return 0;
        if (idx->rank + 1 > AXON_MAX_DIMS)
            return axir_infer_fail(c, "the result would have more than %d dims", AXON_MAX_DIMS);
        r = *idx;
        r.dtype = x->dtype;
        r.dims[r.rank++] = x->dims[1];
    } else if (n->op == AXON_AXIR_OP_GATHER) {
        int d = 0;
        if (!norm_dim(c, attr_i(n, "dim", 0), x->rank, "dim", &d)) return 0;
        if (idx->rank != x->rank) return axir_infer_fail(c, "operand 2 (index) has rank %d, expected %d", idx->rank,
                                                         x->rank);
        r = *idx;
        r.dtype = x->dtype;
    } else {
        int d = 0;
        if (!norm_dim(c, attr_i(n, "dim", 0), x->rank, "dim", &d)) return 0;
        if (idx->rank > 1) return axir_infer_fail(c, "operand 2 (index) has rank %d, expected 0 or 1", idx->rank);
        if (x->rank > 0) r.dims[d] = idx->rank == 1 ? idx->dims[0] : axir_dim_static(1);
    }
    out[0] = r;
    return 1;
}

/* index_copy_into(x, index, src) {dim}: src has x's dtype and rank, and x's sizes except at dim, where it has one
 * slice per index. The result is x itself after the write (the verifier checks that x is a parameter no other node
 * reads). */
static int infer_index_copy_into(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *x = TYPE(0), *idx = TYPE(1), *src = TYPE(2);
    int d = 0;
    if (!check_dtype(c, n, 1, AXIR_DT_INT) || !same_dtype(c, n, 2, x->dtype) || !need_rank(c, n, 2, x->rank) ||
        !norm_dim(c, attr_i(n, "dim", 0), x->rank, "dim", &d))
        return 0;
    if (idx->rank > 1) return axir_infer_fail(c, "operand 2 (index) has rank %d, expected 0 or 1", idx->rank);
    for (int i = 0; i < x->rank; i++) {
        const axon_axir_dim_t want = i == d ? (idx->rank == 1 ? idx->dims[0] : axir_dim_static(1)) : x->dims[i];
        if (!compat(c, src->dims[i], want)) {
            char sa[160], sb[160];
            return axir_infer_fail(c, "operand 3 (source) is %s; it must be %s with %s index entries at dim %d",
                                   tstr(c, src, sa, sizeof sa), tstr(c, x, sb, sizeof sb),
                                   idx->rank == 1 ? "the" : "1 for the 0-d", d);
        }
    }
    out[0] = *x;
    return 1;
}

/* q, k, v at operands b, b + 1, b + 2 and the optional mask at operand mi: the attention's checks. */
static int check_attention(axir_infer_ctx_t *c, const axon_axir_node_t *n, int b, int mi) {
    const axon_axir_type_t *q = TYPE(b), *k = TYPE(b + 1);
    if (!check_dtype(c, n, b, AXIR_DT_FLOAT) || !same_dtype(c, n, b + 1, q->dtype) ||
        !same_dtype(c, n, b + 2, q->dtype))
        return 0;
    int r = q->rank;
    if (r < 2) return axir_infer_fail(c, "operand %d (query) has rank %d, expected at least 2", b + 1, r);
    if (!need_rank(c, n, b + 1, r) || !need_rank(c, n, b + 2, r)) return 0;
    for (int i = 0; i < r - 2; i++) {
        /* Grouped-query attention: key and value may have fewer heads (dim r-3) than the query, a divisor of its. */
        const axon_axir_dim_t qh = q->dims[i], kh = k->dims[i];
        if (i == r - 3 && !qh.expr && !kh.expr && kh.size > 0 && qh.size > kh.size && qh.size % kh.size == 0) {
            if (!dims_match(c, n, b + 1, i, b + 2, i, "key and value head counts differ")) return 0;
            continue;
        }
        if (!dims_match(c, n, b, i, b + 1, i, "batch dimensions differ") ||
            !dims_match(c, n, b, i, b + 2, i, "batch dimensions differ"))
            return 0;
    }
    if (!dims_match(c, n, b, r - 1, b + 1, r - 1, "query and key head sizes differ") ||
        !dims_match(c, n, b + 1, r - 2, b + 2, r - 2, "key and value lengths differ"))
        return 0;
    const axon_axir_attr_t *p = axon_axir_node_attr(n, "dropout_p");
    if (p && !(p->f >= 0.0 && p->f < 1.0)) return axir_infer_fail(c, "dropout_p %g is not in [0, 1)", p->f);
    if (mi >= 0) {
        const axon_axir_type_t *mask = TYPE(mi);
        if (mask->dtype != AXON_BOOL && mask->dtype != q->dtype)
            return axir_infer_fail(c, "operand %d (mask) has dtype %s, expected bool or %s", mi + 1,
                                   axon_axir_dtype_name(mask->dtype), axon_axir_dtype_name(q->dtype));
        axon_axir_type_t scores = *q, t;
        scores.dims[r - 1] = k->dims[r - 2];
        if (mask->rank > r || !broadcast(c, &scores, mask, &t)) {
            char sa[160], sb[160];
            return axir_infer_fail(c, "operand %d (mask) %s does not broadcast to the scores %s", mi + 1,
                                   tstr(c, mask, sa, sizeof sa), tstr(c, &scores, sb, sizeof sb));
        }
        for (int i = 0; i < r; i++)
            if (!compat(c, t.dims[i], scores.dims[i]))
                return axir_infer_fail(c, "operand %d (mask) does not broadcast to the scores", mi + 1);
    }
    return 1;
}

/* The log-sum-exp of each query row: q's batch dims and length, in float32 (float64 for a float64 q). */
static axon_axir_type_t attention_lse(const axon_axir_type_t *q) {
    axon_axir_type_t l = *q;
    l.rank = q->rank - 1;
    l.dtype = q->dtype == AXON_FLOAT64 ? AXON_FLOAT64 : AXON_FLOAT32;
    return l;
}

/* With dropout, the forward names its draw; the backward takes the forward's Philox seed and offset (i64[] each,
 * philox_state's results) after its other operands. */
static int check_attention_dropout(axir_infer_ctx_t *c, const axon_axir_node_t *n) {
    const axon_axir_attr_t *p = axon_axir_node_attr(n, "dropout_p");
    const int dropout = p && p->f > 0.0;
    if (n->op != AXON_AXIR_OP_SDPA_BACKWARD) {
        const axon_axir_attr_t *draw = axon_axir_node_attr(n, "draw");
        if (dropout && (!draw || draw->i < 0))
            return axir_infer_fail(c, "dropout_p %g needs a draw (INT >= 0): its place in the call's Philox stream",
                                   p->f);
        return 1;
    }
    const int extra = n->num_operands - 6 - (axon_axir_sdpa_backward_mask(n) >= 0);
    if (dropout && extra != 2)
        return axir_infer_fail(c, "dropout_p %g: expected the forward's Philox seed and offset as the last two operands "
                                  "(dout, q, k, v, out, lse[, mask], seed, offset)", p->f);
    if (!dropout && extra != 0)
        return axir_infer_fail(c, "%d operands without dropout, expected 6 or 7 (dout, q, k, v, out, lse[, mask])",
                               n->num_operands);
    for (int k = n->num_operands - extra; k < n->num_operands; k++)
        if (TYPE(k)->dtype != AXON_INT64 || TYPE(k)->rank != 0)
            return axir_infer_fail(c, "operand %d (the Philox %s) must be i64[]", k + 1,
                                   k == n->num_operands - 2 ? "seed" : "offset");
    return 1;
}

/* sdpa: out; sdpa_lse: out and the log-sum-exp the backward needs; sdpa_backward(dout, q, k, v, out, lse[, mask][,
 * seed, offset]): dq, dk, dv. */
static int infer_sdpa(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const int bwd = n->op == AXON_AXIR_OP_SDPA_BACKWARD, b = bwd ? 1 : 0;
    const int mask = bwd ? axon_axir_sdpa_backward_mask(n) : n->num_operands > 3 ? 3 : -1;
    if (!check_attention(c, n, b, mask) || !check_attention_dropout(c, n)) return 0;
    const axon_axir_type_t *q = TYPE(b), *v = TYPE(b + 2);
    const int r = q->rank;
    axon_axir_type_t o = *q;
    o.dims[r - 1] = v->dims[r - 1];
    if (!bwd) {
        out[0] = o;
        if (n->op == AXON_AXIR_OP_SDPA_LSE) out[1] = attention_lse(q);
        return 1;
    }
    /* dout and out have the output's type, lse the forward's */
    const axon_axir_type_t lse = attention_lse(q);
    const axon_axir_type_t *want[3] = {&o, &o, &lse};
    const int at[3] = {0, 4, 5};
    for (int i = 0; i < 3; i++)
        if (!same_type(c, n, at[i], want[i])) return 0;
    out[0] = *q;
    out[1] = *TYPE(2);
    out[2] = *v;
    return 1;
}

/* softmax_backward / log_softmax_backward(grad_out, out) {dim}: grad_in, of out's type. */
static int infer_softmax_backward(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    int d = 0;
    if (!check_dtype(c, n, 1, AXIR_DT_FLOAT) || !same_type(c, n, 0, TYPE(1)) ||
        !norm_dim(c, attr_i(n, "dim", 0), TYPE(1)->rank, "dim", &d))
        return 0;
    out[0] = *TYPE(1);
    return 1;
}

/* layer_norm_backward(grad_out, x, mean, rstd[, weight]) and rms_norm_backward(grad_out, x, rstd[, weight]): x's
 * gradient, then the weight's (and the bias's), each of the type the forward's weight has. The statistics have the
 * forward's types (infer_norm). */
static int infer_norm_backward(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const int nstats = n->op == AXON_AXIR_OP_LAYER_NORM_BACKWARD ? 2 : 1;
    const axon_axir_type_t *x = TYPE(1);
    const int64_t k = attr_i(n, "normalized_ndim", 0);
    if (!check_dtype(c, n, 1, AXIR_DT_FLOAT) || !same_type(c, n, 0, x)) return 0;
    if (k < 1 || k > x->rank)
        return axir_infer_fail(c, "normalized_ndim %lld must be in [1, %d] (operand 2's rank)", (long long)k, x->rank);
    axon_axir_type_t stat = *x, w = *x;
    for (int j = x->rank - (int)k; j < x->rank; j++) stat.dims[j] = axir_dim_static(1);
    w.rank = (int)k;
    for (int j = 0; j < k; j++) w.dims[j] = x->dims[x->rank - k + j];
    stat.dtype = TYPE(2)->dtype == AXON_FLOAT32 ? AXON_FLOAT32 : x->dtype;   /* f32 statistics for f16/bf16 too */
    for (int i = 2; i < 2 + nstats; i++)
        if (!same_type(c, n, i, &stat)) return 0;
    if (n->num_operands > 2 + nstats && !same_type(c, n, 2 + nstats, &w)) return 0;
    out[0] = *x;
    for (int r = 1; r < n->num_results; r++) out[r] = w;
    return 1;
}

/* embedding_backward(grad [..., D], indices [...]) {num_weights, padding_idx}: the weight's gradient [num_weights, D]. */
static int infer_embedding_backward(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_type_t *g = TYPE(0), *idx = TYPE(1);
    if (!check_dtype(c, n, 0, AXIR_DT_FLOAT) || !check_dtype(c, n, 1, AXIR_DT_INT)) return 0;
    if (g->rank != idx->rank + 1)
        return axir_infer_fail(c, "operand 1 (grad) has rank %d, expected the indices' rank plus one (%d)", g->rank,
                               idx->rank + 1);
    for (int d = 0; d < idx->rank; d++)
        if (!dims_match(c, n, 0, d, 1, d, "grad and indices differ")) return 0;
    const int64_t v = attr_i(n, "num_weights", 0);
    if (v < 0) return axir_infer_fail(c, "num_weights %lld is negative", (long long)v);
    out[0] = *g;
    out[0].rank = 2;
    out[0].dims[0] = axir_dim_static(v);
    out[0].dims[1] = g->dims[g->rank - 1];
    return 1;
}

/* The log-probabilities logp ([N, C] or [C]), target ([N] or [], i64) and optional weight ([C]) of the nll_loss
 * family at operands l, l + 1 and w (w >= num_operands: none). */
static int check_nll(axir_infer_ctx_t *c, const axon_axir_node_t *n, int l, int w) {
    const axon_axir_type_t *x = TYPE(l);
    if (!check_dtype(c, n, l, AXIR_DT_FLOAT) || !same_dtype(c, n, l + 1, AXON_INT64)) return 0;
    if (x->rank != 1 && x->rank != 2)
        return axir_infer_fail(c, "operand %d (log-probabilities) has rank %d, expected 1 or 2", l + 1, x->rank);
    if (!need_rank(c, n, l + 1, x->rank - 1)) return 0;
    /* Symbolic batch sizes are left to the kernel's launch check: a flattened [batch * length] target is often
     * spelled with other symbols than the logits it matches (s38*s97 against s3*s88), equal only at run time. */
    const axon_axir_type_t *t = TYPE(l + 1);
    if (x->rank == 2 && !x->dims[0].expr && !t->dims[0].expr &&
        !dims_match(c, n, l, 0, l + 1, 0, "log-probabilities and target have different batch sizes"))
        return 0;
    if (w < n->num_operands) {
        axon_axir_type_t want = *x;
        want.rank = 1;
        want.dims[0] = x->dims[x->rank - 1];
        if (!same_type(c, n, w, &want)) return 0;
    }
    return 1;
}

/* The loss's type: the target's shape for reduction "none", else 0-d; logp's dtype. */
static axon_axir_type_t nll_loss_type(const axon_axir_node_t *n, int l) {
    axon_axir_type_t r = *TYPE(l + 1);
    const axon_axir_attr_t *red = axon_axir_node_attr(n, "reduction");
    r.dtype = TYPE(l)->dtype;
    if (!red || strcmp(red->s, "none") != 0) r.rank = 0;
    return r;
}

/* nll_loss(logp, target[, weight]): (loss, total_weight). nll_loss_backward and nll_loss_log_softmax_backward
 * (grad_out, logp, target, total_weight[, weight]): logp's gradient (for the second, that of the logits logp came
 * from). */
static int infer_nll(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    axon_axir_type_t scalar = *TYPE(n->op == AXON_AXIR_OP_NLL_LOSS ? 0 : 1);
    scalar.rank = 0;
    if (n->op == AXON_AXIR_OP_NLL_LOSS) {
        if (!check_nll(c, n, 0, 2)) return 0;
        out[0] = nll_loss_type(n, 0);
        out[1] = scalar;
        return 1;
    }
    if (!check_nll(c, n, 1, 4)) return 0;
    const axon_axir_type_t g = nll_loss_type(n, 1);
    if (!same_type(c, n, 0, &g) || !same_type(c, n, 3, &scalar)) return 0;
    out[0] = *TYPE(1);
    return 1;
}

/* dropout(x) {draw, p}: (out of x's type, the keep-mask: bool of x's shape). */
static int infer_dropout(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_attr_t *p = axon_axir_node_attr(n, "p");
    if (!check_dtype(c, n, 0, AXIR_DT_FLOAT)) return 0;
    if (!(p->f >= 0.0 && p->f <= 1.0)) return axir_infer_fail(c, "p %g is not in [0, 1]", p->f);
    if (attr_i(n, "draw", 0) < 0) return axir_infer_fail(c, "draw %lld is negative", (long long)attr_i(n, "draw", 0));
    out[0] = *TYPE(0);
    out[1] = *TYPE(0);
    out[1].dtype = AXON_BOOL;
    return 1;
}

/* philox_state {draw}: the Philox seed and first block of the function's draw `draw` in this call, i64[] each (what
 * a backward that draws the same numbers again takes). */
static int infer_philox_state(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    if (attr_i(n, "draw", 0) < 0) return axir_infer_fail(c, "draw %lld is negative", (long long)attr_i(n, "draw", 0));
    for (int r = 0; r < 2; r++) {
        memset(&out[r], 0, sizeof out[r]);
        out[r].dtype = AXON_INT64;
    }
    return 1;
}

static int infer_constant(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    axon_dtype_t d = out[0].dtype;
    if (n->op == AXON_AXIR_OP_IOTA) {
        if (!axir_dtype_ok(AXIR_DT_REAL, d))
            return axir_infer_fail(c, "result dtype %s, expected an integer or floating dtype",
                                   axon_axir_dtype_name(d));
        if (out[0].rank != 1) return axir_infer_fail(c, "result has rank %d, expected 1", out[0].rank);
        return 1;
    }
    const axon_axir_attr_t *v = axon_axir_node_attr(n, "value");
    if (v->kind == AXON_AXIR_ATTR_FLOAT && !axon_dtype_is_floating(d) && d != AXON_COMPLEX64 &&
        d != AXON_COMPLEX128)
        return axir_infer_fail(c, "a float value needs a floating result dtype, got %s", axon_axir_dtype_name(d));
    return 1;
}

int axir_infer(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axir_op_info_t *info = axir_op_info(n->op);
    switch (info->cls) {
    case AXON_AXIR_CLASS_CONSTANT: return infer_constant(c, n, out);
    case AXON_AXIR_CLASS_ELEMENTWISE: return infer_elementwise(c, n, info, out);
    case AXON_AXIR_CLASS_REDUCTION:
        return check_dtype(c, n, 0, info->dtypes) && infer_reduction(c, n, out);
    case AXON_AXIR_CLASS_CALL: return axir_infer_fail(c, "calls are checked against their callee");
    default: break;
    }
    switch (n->op) {
    case AXON_AXIR_OP_RESHAPE: return infer_reshape(c, n, out);
    case AXON_AXIR_OP_PERMUTE: return infer_permute(c, n, out);
    case AXON_AXIR_OP_EXPAND: return infer_expand(c, n, out);
    case AXON_AXIR_OP_SLICE: return infer_slice(c, n, out);
    case AXON_AXIR_OP_SELECT: return infer_select(c, n, out);
    case AXON_AXIR_OP_SQUEEZE: return infer_squeeze(c, n, out);
    case AXON_AXIR_OP_UNSQUEEZE: return infer_unsqueeze(c, n, out);
    case AXON_AXIR_OP_CONTIGUOUS: out[0] = *TYPE(0); return 1;
    case AXON_AXIR_OP_CAT: return infer_cat(c, n, out);
    case AXON_AXIR_OP_MM:
    case AXON_AXIR_OP_BMM:
    case AXON_AXIR_OP_ADDMM: return infer_matmul(c, n, out);
    case AXON_AXIR_OP_SOFTMAX:
    case AXON_AXIR_OP_LOG_SOFTMAX: {
        int d = 0;
        if (!check_dtype(c, n, 0, info->dtypes) || !norm_dim(c, attr_i(n, "dim", 0), TYPE(0)->rank, "dim", &d))
            return 0;
        out[0] = *TYPE(0);
        return 1;
    }
    case AXON_AXIR_OP_LAYER_NORM:
    case AXON_AXIR_OP_RMS_NORM: return check_dtype(c, n, 0, info->dtypes) && infer_norm(c, n, out);
    case AXON_AXIR_OP_EMBEDDING:
    case AXON_AXIR_OP_GATHER:
    case AXON_AXIR_OP_INDEX_SELECT: return infer_index(c, n, out);
    case AXON_AXIR_OP_SDPA: case AXON_AXIR_OP_SDPA_LSE: case AXON_AXIR_OP_SDPA_BACKWARD: return infer_sdpa(c, n, out);
    case AXON_AXIR_OP_SOFTMAX_BACKWARD:
    case AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD: return infer_softmax_backward(c, n, out);
    case AXON_AXIR_OP_LAYER_NORM_BACKWARD:
    case AXON_AXIR_OP_RMS_NORM_BACKWARD: return infer_norm_backward(c, n, out);
    case AXON_AXIR_OP_EMBEDDING_BACKWARD: return infer_embedding_backward(c, n, out);
    case AXON_AXIR_OP_NLL_LOSS:
    case AXON_AXIR_OP_NLL_LOSS_BACKWARD:
    case AXON_AXIR_OP_NLL_LOSS_LOG_SOFTMAX_BACKWARD: return infer_nll(c, n, out);
    case AXON_AXIR_OP_DROPOUT: return infer_dropout(c, n, out);
    case AXON_AXIR_OP_PHILOX_STATE: return infer_philox_state(c, n, out);
    case AXON_AXIR_OP_INDEX_COPY_INTO: return infer_index_copy_into(c, n, out);
    default: return axir_infer_fail(c, "no type rule for this op");
    }
}
