/* Element-wise ops over lists (axon/foreach.h): unary, binary, ternary and fill, on the multi-tensor engine.
 *
 * Lists sit in fixed slots of the command: out, a, b, c, and w (a ternary op's weight list). A binary op's list
 * operand is slot b; a number operand (one value, a per-tensor value or a device number) is the command's number 0.
 * Each piece converts its operands block by block into the compute type only when their dtype differs from it, so
 * float32 and float64 lists run the plain typed loops straight over memory. The formulas are written as PyTorch's
 * CPU kernels write them (evaluation order included), so float32 results agree to the rounding of each step. */
#include <math.h>
#include <string.h>

#include "foreach_impl.h"
#include "internal.h"

enum { FE_OUT, FE_A, FE_B, FE_C, FE_W, FE_OPS_LISTS };

static const char *const fe_op_names[] = {
    "neg", "sqrt", "abs", "exp", "sign", "reciprocal", "copy", "add", "mul", "div", "maximum", "minimum", "pow",
    "addcmul", "addcdiv", "lerp",
};
_Static_assert(sizeof fe_op_names / sizeof fe_op_names[0] == AXON_FOREACH_OP_COUNT, "name every foreach op");

/* Command names for traces and errors (static strings, as axon_launch_t wants). */
static const char *const fe_launch_names[] = {
    "foreach_neg", "foreach_sqrt", "foreach_abs", "foreach_exp", "foreach_sign", "foreach_reciprocal",
    "foreach_copy", "foreach_add", "foreach_mul", "foreach_div", "foreach_maximum", "foreach_minimum",
    "foreach_pow", "foreach_addcmul", "foreach_addcdiv", "foreach_lerp",
};
_Static_assert(sizeof fe_launch_names / sizeof fe_launch_names[0] == AXON_FOREACH_OP_COUNT, "name every launch");

const char *axon_foreach_op_name(axon_foreach_op_t op) {
    return (unsigned)op < AXON_FOREACH_OP_COUNT ? fe_op_names[op] : "invalid";
}

/* Map x (and y from list b or the number s) through EXPR into o, elements of type W, as two plain loops so each vectorizes. */
#define FE_MAP2(EXPR)                                                   \
    do {                                                                \
        if (b)                                                          \
            for (int64_t k = 0; k < m; k++) {                           \
                const W x = a[k], y = b[k];                             \
                o[k] = (EXPR);                                          \
            }                                                           \
        else                                                            \
            for (int64_t k = 0; k < m; k++) {                           \
                const W x = a[k], y = s;                                \
                o[k] = (EXPR);                                          \
            }                                                           \
    } while (0)

/* The same for ternary ops with weight w from list wl or the number s. */
#define FE_MAP3(EXPR)                                                   \
    do {                                                                \
        if (wl)                                                         \
            for (int64_t k = 0; k < m; k++) {                           \
                const W x = a[k], y = b[k], z = cc ? cc[k] : 0, w = wl[k]; \
                (void)z;                                                \
                o[k] = (EXPR);                                          \
            }                                                           \
        else                                                            \
            for (int64_t k = 0; k < m; k++) {                           \
                const W x = a[k], y = b[k], z = cc ? cc[k] : 0, w = s;  \
                (void)z;                                                \
                o[k] = (EXPR);                                          \
            }                                                           \
    } while (0)

/* One block of m elements for compute type T. in[] holds the operand slots (NULL where absent). */
#define FE_OPS_LOOP(T, SQRT, FABS, EXP, POW)                                                                      \
    static void fe_ops_##T(const fe_ops_params_t *p, T *o, void *const *in, double num, int64_t m) {             \
        const T *a = in[FE_A], *b = in[FE_B], *cc = in[FE_C], *wl = in[FE_W];                                  \
        typedef T W; /* the maps' element type */                                                              \
        const T s = (T)num, al = (T)p->alpha;                                                                  \
        if (p->arity == 0) {                                                                                   \
            for (int64_t k = 0; k < m; k++) o[k] = s;                                                          \
            return;                                                                                            \
        }                                                                                                      \
        switch (p->op) {                                                                                       \
        case AXON_FOREACH_NEG: for (int64_t k = 0; k < m; k++) o[k] = -a[k]; break;                            \
        case AXON_FOREACH_SQRT: for (int64_t k = 0; k < m; k++) o[k] = SQRT(a[k]); break;                      \
        case AXON_FOREACH_ABS: for (int64_t k = 0; k < m; k++) o[k] = FABS(a[k]); break;                       \
        case AXON_FOREACH_EXP: for (int64_t k = 0; k < m; k++) o[k] = EXP(a[k]); break;                        \
        case AXON_FOREACH_SIGN: for (int64_t k = 0; k < m; k++) o[k] = (T)((0 < a[k]) - (a[k] < 0)); break;    \
        case AXON_FOREACH_RECIPROCAL: for (int64_t k = 0; k < m; k++) o[k] = (T)1 / a[k]; break;               \
        case AXON_FOREACH_COPY: if (o != a) memmove(o, a, sizeof(T) * (size_t)m); break;                       \
        case AXON_FOREACH_ADD: FE_MAP2(x + al * y); break;                                                     \
        case AXON_FOREACH_MUL: FE_MAP2(x * y); break;                                                          \
        case AXON_FOREACH_DIV: FE_MAP2(x / y); break;                                                          \
        case AXON_FOREACH_MAXIMUM: FE_MAP2((x != x || y != y) ? x + y : x > y ? x : y); break;                 \
        case AXON_FOREACH_MINIMUM: FE_MAP2((x != x || y != y) ? x + y : x < y ? x : y); break;                 \
        case AXON_FOREACH_POW: FE_MAP2(POW(x, y)); break;                                                      \
        case AXON_FOREACH_ADDCMUL: FE_MAP3(x + w * y * z); break;                                              \
        case AXON_FOREACH_ADDCDIV: FE_MAP3(x + w * y / z); break;                                              \
        case AXON_FOREACH_LERP: FE_MAP3(FABS(w) < (T)0.5 ? x + w * (y - x) : y - (y - x) * ((T)1 - w)); break; \
        default: break;                                                                                        \
        }                                                                                                      \
    }

FE_OPS_LOOP(float, sqrtf, fabsf, expf, powf)
FE_OPS_LOOP(double, sqrt, fabs, exp, pow)

static void fe_ops_piece(const fe_job_t *j, int64_t i, int64_t lo, int64_t hi) {
    const fe_cmd_t *c = j->c;
    if (c->p.ops.op == AXON_FOREACH_COPY && c->p.ops.arity == 1 && c->dtype[FE_A] == c->dtype[FE_OUT]) {
        /* A copy between lists of one dtype is one memmove per piece, not one per FE_BLOCK elements: the batched
         * copy-backs of a compiled optimizer step are memory-bound and ran slower than separate copies that way. */
        const size_t es = axon_dtype_size(c->dtype[FE_OUT]);
        char *o = fe_ptr(c, FE_OUT, i) + (size_t)lo * es;
        const char *a = fe_ptr(c, FE_A, i) + (size_t)lo * es;
        if (o != a) memmove(o, a, (size_t)(hi - lo) * es);
        return;
    }
    _Alignas(16) double buf[FE_OPS_LISTS][FE_BLOCK];
    const double num = c->has_values ? fe_values(c)[i] : j->num[0];
    for (int64_t off = lo; off < hi; off += FE_BLOCK) {
        const int64_t m = hi - off < FE_BLOCK ? hi - off : FE_BLOCK;
        void *in[FE_OPS_LISTS] = {NULL, NULL, NULL, NULL, NULL};
        for (int k = FE_A; k < c->nlists; k++)
            if (fe_ptr(c, k, i)) in[k] = axon_fe_load(c, k, i, off, m, buf[k]);
        void *o = axon_fe_out(c, FE_OUT, i, off, m, buf[FE_OUT]);
        if (c->f64) fe_ops_double(&c->p.ops, o, in, num, m);
        else fe_ops_float(&c->p.ops, o, in, num, m);
        axon_fe_store(c, FE_OUT, i, off, m, o);
    }
}

/* Checks and launch shared by the four entry points. arity 0 is fill (value in w->value). */
static axon_status_t fe_ops_launch(axon_stream_t s, const char *name, int arity, axon_foreach_op_t op, int64_t n,
                                   const axon_tensor_t *out, const axon_tensor_t *a, const axon_tensor_t *b,
                                   const axon_tensor_t *c, const axon_foreach_arg_t *w, double alpha) {
    static const char *const roles[FE_OPS_LISTS] = {"out", "self", "other", "tensor2", "weight"};
    if (n < 0) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: list length %lld is negative", name, (long long)n);
    if (n == 0) return AXON_OK;
    fe_launch_t l;
    memset(&l, 0, sizeof l);
    l.name = name;
    l.n = n;
    l.cmd.piece = fe_ops_piece;
    l.cmd.skip_num = -1;
    l.cmd.nlists = arity == 0 ? 1 : arity == 1 ? 2 : arity == 2 ? 3 : FE_OPS_LISTS;
    l.cmd.p.ops.op = op;
    l.cmd.p.ops.arity = arity;
    l.cmd.p.ops.alpha = alpha;
    l.lists[FE_OUT] = out;
    l.lists[FE_A] = a;
    l.lists[FE_B] = b;
    l.lists[FE_C] = c;
    axon_status_t st = axon_fe_check_list(name, roles[FE_OUT], n, out, NULL, NULL, 1);
    for (int k = FE_A; st == AXON_OK && k < FE_W; k++)
        if (l.lists[k])
            st = axon_fe_check_list(name, k == FE_B && arity == 3 ? "tensor1" : roles[k], n, l.lists[k], out,
                                    roles[FE_OUT], 0);
    if (st != AXON_OK) return st;
    if (w) {
        int kinds = (w->tensors != NULL) + (w->values != NULL) + (w->number != NULL);
        if (kinds > 1)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the %s operand sets more than one of tensors, values and "
                             "number", name, arity == 3 ? "weight" : "other");
        if (w->tensors) {
            int slot = arity == 3 ? FE_W : FE_B;
            if ((st = axon_fe_check_list(name, roles[slot], n, w->tensors, out, roles[FE_OUT], 0)) != AXON_OK)
                return st;
            l.lists[slot] = w->tensors;
        } else if (w->number) {
            if ((st = axon_fe_check_number(name, "the number operand", w->number)) != AXON_OK) return st;
            l.cmd.num_ptr[0] = w->number->data;
            l.cmd.num_dtype[0] = w->number->dtype;
        } else if (w->values) {
            l.values = w->values;
        }
        l.cmd.num_val[0] = w->value;
    }
    l.shape_list = FE_OUT;
    l.compute_list = FE_OUT;
    return axon_fe_submit(s, &l);
}

axon_status_t axon_foreach_unary(axon_stream_t s, axon_foreach_op_t op, int64_t n, const axon_tensor_t *out,
                                 const axon_tensor_t *a) {
    if (!(op >= AXON_FOREACH_NEG && op <= AXON_FOREACH_COPY))
        return axon_fail(AXON_ERROR_INVALID_ARG, "foreach_unary: op %d (%s) is not a unary op", (int)op,
                         axon_foreach_op_name(op));
    if (n > 0 && a == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the self list is NULL", fe_launch_names[op]);
    return fe_ops_launch(s, fe_launch_names[op], 1, op, n, out, a, NULL, NULL, NULL, 1.0);
}

axon_status_t axon_foreach_binary(axon_stream_t s, axon_foreach_op_t op, int64_t n, const axon_tensor_t *out,
                                  const axon_tensor_t *a, const axon_foreach_arg_t *b, double alpha) {
    if (!(op >= AXON_FOREACH_ADD && op <= AXON_FOREACH_POW))
        return axon_fail(AXON_ERROR_INVALID_ARG, "foreach_binary: op %d (%s) is not a binary op", (int)op,
                         axon_foreach_op_name(op));
    const char *name = fe_launch_names[op];
    if (n > 0 && a == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the self list is NULL", name);
    if (b == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the other operand is NULL", name);
    if (op != AXON_FOREACH_ADD && alpha != 1.0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: alpha must be 1 for %s, got %g", name, fe_op_names[op], alpha);
    return fe_ops_launch(s, name, 2, op, n, out, a, NULL, NULL, b, alpha);
}

axon_status_t axon_foreach_ternary(axon_stream_t s, axon_foreach_op_t op, int64_t n, const axon_tensor_t *out,
                                   const axon_tensor_t *a, const axon_tensor_t *b, const axon_tensor_t *c,
                                   const axon_foreach_arg_t *w) {
    if (!(op >= AXON_FOREACH_ADDCMUL && op <= AXON_FOREACH_LERP))
        return axon_fail(AXON_ERROR_INVALID_ARG, "foreach_ternary: op %d (%s) is not a ternary op", (int)op,
                         axon_foreach_op_name(op));
    const char *name = fe_launch_names[op];
    if (n > 0 && (a == NULL || b == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the %s list is NULL", name, a ? "tensor1" : "self");
    if ((op == AXON_FOREACH_LERP) != (c == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: tensor2 must be %s", name, c ? "NULL for lerp" : "given");
    if (w == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the weight operand is NULL", name);
    return fe_ops_launch(s, name, 3, op, n, out, a, b, c, w, 1.0);
}

axon_status_t axon_foreach_fill(axon_stream_t s, int64_t n, const axon_tensor_t *out, double value) {
    axon_foreach_arg_t w;
    memset(&w, 0, sizeof w);
    w.value = value;
    return fe_ops_launch(s, "foreach_fill", 0, AXON_FOREACH_COPY, n, out, NULL, NULL, NULL, &w, 1.0);
}
