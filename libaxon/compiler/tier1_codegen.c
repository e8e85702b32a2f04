/* Tier 1 code generation: one C function per fused elementwise kernel function (tier1.h).
 *
 * The generated function walks its flat range [begin, end) of the iteration space row by row: within a row every
 * operand advances by its innermost stride. When each operand's innermost stride is what the kernel's types say it
 * must be for a contiguous operand (1, or 0 where the type broadcasts that dimension), the row runs a loop whose
 * strides are literals, which the C compiler vectorizes; otherwise the same body runs with the strides as variables.
 * Every value in the body is a local of its compute type (float for f32/f16/bf16, double, the integer's own type,
 * uint8_t for bool); f16/bf16 results are rounded to their dtype right away, as eager mode stores them. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tier1.h"

/* kernels/dtype.h and kernels/pointwise_math.h, embedded at build time (CMakeLists.txt) */
extern const char axon_tier1_dtype_h[];
extern const char axon_tier1_pointwise_math_h[];

/* ---- dtypes ---- */

static int supported_dtype(axon_dtype_t d) { return d != AXON_COMPLEX64 && d != AXON_COMPLEX128 && d < AXON_DTYPE_COUNT; }

/* The C type values of dtype d are computed in. */
static const char *compute_type(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return "double";
    case AXON_FLOAT32: case AXON_FLOAT16: case AXON_BFLOAT16: return "float";
    case AXON_INT8: return "int8_t";
    case AXON_UINT8: case AXON_BOOL: return "uint8_t";
    case AXON_INT16: return "int16_t";
    case AXON_INT32: return "int32_t";
    default: return "int64_t";
    }
}

/* The C type of d's storage. */
static const char *storage_type(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT16: case AXON_BFLOAT16: return "uint16_t";
    case AXON_FLOAT32: return "float";
    default: return compute_type(d);
    }
}

/* dtype.h's short name, for its axon_<dn>_of_<natural> converters. */
static const char *short_name(axon_dtype_t d) {
    static const char *const names[] = {"f32", "f64", "f16", "bf16", "i8", "u8", "i16", "i32", "i64", "b8"};
    return (unsigned)d < sizeof names / sizeof names[0] ? names[d] : "?";
}

/* dtype.h's natural type name of a compute type: the suffix of its axon_<dst>_of_<natural> functions. */
static const char *natural(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return "f64";
    case AXON_FLOAT32: case AXON_FLOAT16: case AXON_BFLOAT16: return "f32";
    case AXON_INT64: return "i64";
    default: return "i32";
    }
}

/* ---- which ops ---- */

static int op_supported(axon_axir_op_t op, axon_dtype_t d) {
    switch (op) {
    case AXON_AXIR_OP_CONST: case AXON_AXIR_OP_CAST: case AXON_AXIR_OP_WHERE:
    case AXON_AXIR_OP_ADD: case AXON_AXIR_OP_SUB: case AXON_AXIR_OP_MUL:
    case AXON_AXIR_OP_MAXIMUM: case AXON_AXIR_OP_MINIMUM: case AXON_AXIR_OP_NEG: case AXON_AXIR_OP_ABS:
    case AXON_AXIR_OP_EQ: case AXON_AXIR_OP_NE: case AXON_AXIR_OP_LT: case AXON_AXIR_OP_LE:
    case AXON_AXIR_OP_GT: case AXON_AXIR_OP_GE: case AXON_AXIR_OP_LOGICAL_AND: case AXON_AXIR_OP_LOGICAL_OR:
    case AXON_AXIR_OP_LOGICAL_NOT: case AXON_AXIR_OP_SIGN: case AXON_AXIR_OP_RELU:
        return 1;
    case AXON_AXIR_OP_BITWISE_AND: case AXON_AXIR_OP_BITWISE_OR: case AXON_AXIR_OP_BITWISE_XOR:
    case AXON_AXIR_OP_BITWISE_NOT:
        return !axon_dtype_is_floating(d);
    case AXON_AXIR_OP_DIV: case AXON_AXIR_OP_POW: case AXON_AXIR_OP_REMAINDER: case AXON_AXIR_OP_FMOD:
    case AXON_AXIR_OP_ATAN2: case AXON_AXIR_OP_EXP: case AXON_AXIR_OP_EXP2: case AXON_AXIR_OP_EXPM1:
    case AXON_AXIR_OP_LOG: case AXON_AXIR_OP_LOG2: case AXON_AXIR_OP_LOG1P: case AXON_AXIR_OP_SQRT:
    case AXON_AXIR_OP_RSQRT: case AXON_AXIR_OP_SIN: case AXON_AXIR_OP_COS: case AXON_AXIR_OP_TAN:
    case AXON_AXIR_OP_TANH: case AXON_AXIR_OP_SIGMOID: case AXON_AXIR_OP_SILU: case AXON_AXIR_OP_ERF:
    case AXON_AXIR_OP_RECIPROCAL: case AXON_AXIR_OP_FLOOR: case AXON_AXIR_OP_CEIL: case AXON_AXIR_OP_ROUND:
    case AXON_AXIR_OP_TRUNC: case AXON_AXIR_OP_ISNAN: case AXON_AXIR_OP_GELU:
        return axon_dtype_is_floating(d);   /* integer division by zero must raise; tier 0 does that */
    default:
        return 0;
    }
}

/* The dtype an op computes in: its first operand's (comparisons, isnan, cast read it), else its result's. */
static axon_dtype_t op_dtype(const axon_axir_node_t *n) {
    if (n->op == AXON_AXIR_OP_WHERE) return n->operands[1]->type.dtype;
    return n->num_operands > 0 ? n->operands[0]->type.dtype : n->results[0]->type.dtype;
}

static int same_shape(const axon_axir_type_t *a, const axon_axir_type_t *b) {
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++) {
        const axon_axir_dim_t x = a->dims[d], y = b->dims[d];
        if ((x.expr == NULL) != (y.expr == NULL)) return 0;
        if (x.expr == NULL ? x.size != y.size : axir_sym_compare(x.expr, y.expr) != 0) return 0;
    }
    return 1;
}

int axon_tier1_can_generate(const axon_axir_func_t *k, char *why, size_t n) {
    if (!k->is_kernel || k->num_results < 1) {
        snprintf(why, n, "@%s is not a kernel function with results", k->name);
        return 0;
    }
    if (k->num_params + k->num_results > AXON_TIER1_MAX_OPERANDS) {
        snprintf(why, n, "@%s: more than %d operands", k->name, AXON_TIER1_MAX_OPERANDS);
        return 0;
    }
    const axon_axir_type_t *iter = &k->result_types[0];
    for (int r = 0; r < k->num_results; r++) {
        /* Symbolic dims are compared as written (no simplification): a false "different" only keeps the kernel on
         * tier 0. */
        if (!same_shape(&k->result_types[r], iter)) {
            snprintf(why, n, "@%s: results of different shapes", k->name);
            return 0;
        }
        if (!supported_dtype(k->result_types[r].dtype)) {
            snprintf(why, n, "@%s: result dtype %s", k->name, axon_axir_dtype_name(k->result_types[r].dtype));
            return 0;
        }
    }
    for (const axon_axir_node_t *node = k->first; node; node = node->next) {
        if (node->num_results != 1 || !op_supported(node->op, op_dtype(node)) ||
            !supported_dtype(node->results[0]->type.dtype) ||
            (node->op == AXON_AXIR_OP_CONST && node->results[0]->type.rank > iter->rank)) {
            snprintf(why, n, "@%s: %s on %s", k->name, axon_axir_op_name(node->op),
                     axon_axir_dtype_name(op_dtype(node)));
            return 0;
        }
    }
    for (int p = 0; p < k->num_params; p++) {
        if (!supported_dtype(k->params[p]->type.dtype) || k->params[p]->type.rank > iter->rank) {
            snprintf(why, n, "@%s: parameter %%%s", k->name, k->params[p]->name);
            return 0;
        }
    }
    return 1;
}

/* ---- emission ---- */

/* Rounds a float expression to the precision of an f16/bf16 value; other dtypes unchanged. */
static void emit_rounded(axir_buf_t *b, axon_dtype_t d, const char *expr) {
    if (d == AXON_FLOAT16 || d == AXON_BFLOAT16)
        axir_buf_printf(b, "axon_%s_to_f32(axon_f32_to_%s(%s))", short_name(d), short_name(d), expr);
    else
        axir_buf_puts(b, expr);
}

static void value_name(const axon_axir_value_t *v, char *out, size_t n) { snprintf(out, n, "v%d", (int)v->id); }

/* The expression computing node n from its operands' locals, in the compute type of its result. */
static void emit_expr(axir_buf_t *b, const axon_axir_node_t *n) {
    char a[32] = "", c[32] = "", e[32] = "";
    if (n->num_operands > 0) value_name(n->operands[0], a, sizeof a);
    if (n->num_operands > 1) value_name(n->operands[1], c, sizeof c);
    if (n->num_operands > 2) value_name(n->operands[2], e, sizeof e);
    const axon_dtype_t d = op_dtype(n);
    const int dbl = d == AXON_FLOAT64;
    const char *f = dbl ? "" : "f";                      /* libm suffix */
    const char *W = compute_type(d);
    const int integer = !axon_dtype_is_floating(d) && d != AXON_BOOL;
    /* Integer + - * wrap, as in PyTorch: compute in the unsigned type of the same width. */
    const char *U = d == AXON_INT64 ? "uint64_t" : "uint32_t";
    switch (n->op) {
    case AXON_AXIR_OP_CONST: {
        const axon_axir_attr_t *v = axon_axir_node_attr(n, "value");
        const char *R = compute_type(n->results[0]->type.dtype);
        if (!v) axir_buf_printf(b, "(%s)0", R);
        else if (v->kind != AXON_AXIR_ATTR_FLOAT) axir_buf_printf(b, "(%s)INT64_C(%" PRId64 ")", R, v->i);
        else if (isnan(v->f)) axir_buf_printf(b, "(%s)NAN", R);
        else if (isinf(v->f)) axir_buf_printf(b, "(%s)(%sINFINITY)", R, v->f < 0 ? "-" : "");
        else {
            axir_buf_printf(b, "(%s)(", R);
            axir_print_float(b, v->f);   /* shortest round-tripping digits: a valid C double literal */
            axir_buf_puts(b, ")");
        }
        return;
    }
    case AXON_AXIR_OP_CAST: {
        const axon_dtype_t to = n->results[0]->type.dtype;
        if (to == AXON_BOOL) axir_buf_printf(b, "(uint8_t)(%s != 0)", a);
        else if (axon_dtype_is_floating(to)) {
            char conv[96];
            snprintf(conv, sizeof conv, "(%s)%s", compute_type(to), a);
            emit_rounded(b, to, conv);
        } else
            /* dtype.h's rules for float -> integer (no undefined behaviour out of range) */
            axir_buf_printf(b, "(%s)axon_%s_of_%s(%s)", compute_type(to), short_name(to), natural(d), a);
        return;
    }
    case AXON_AXIR_OP_NEG:
        if (integer) axir_buf_printf(b, "(%s)(0u - (%s)%s)", W, U, a);
        else axir_buf_printf(b, "(-%s)", a);
        return;
    case AXON_AXIR_OP_ABS:
        if (axon_dtype_is_floating(d)) axir_buf_printf(b, "fabs%s(%s)", f, a);
        else if (d == AXON_BOOL || d == AXON_UINT8) axir_buf_puts(b, a);
        else axir_buf_printf(b, "(%s)(%s < 0 ? 0u - (%s)%s : (%s)%s)", W, a, U, a, U, a);
        return;
    case AXON_AXIR_OP_SIGN: axir_buf_printf(b, "(%s)((%s > 0) - (%s < 0))", W, a, a); return;
    case AXON_AXIR_OP_RELU: axir_buf_printf(b, "(%s < 0 ? (%s)0 : %s)", a, W, a); return;
    case AXON_AXIR_OP_LOGICAL_NOT: axir_buf_printf(b, "(uint8_t)(%s == 0)", a); return;
    case AXON_AXIR_OP_BITWISE_NOT:
        if (d == AXON_BOOL) axir_buf_printf(b, "(uint8_t)!%s", a);
        else axir_buf_printf(b, "(%s)~%s", W, a);
        return;
    case AXON_AXIR_OP_ISNAN: axir_buf_printf(b, "(uint8_t)(%s != %s)", a, a); return;
    case AXON_AXIR_OP_EXP: axir_buf_printf(b, "%s(%s)", dbl ? "exp" : "pw_expf", a); return;
    case AXON_AXIR_OP_EXP2: axir_buf_printf(b, "exp2%s(%s)", f, a); return;
    case AXON_AXIR_OP_EXPM1: axir_buf_printf(b, "expm1%s(%s)", f, a); return;
    case AXON_AXIR_OP_LOG: axir_buf_printf(b, "log%s(%s)", f, a); return;
    case AXON_AXIR_OP_LOG2: axir_buf_printf(b, "log2%s(%s)", f, a); return;
    case AXON_AXIR_OP_LOG1P: axir_buf_printf(b, "log1p%s(%s)", f, a); return;
    case AXON_AXIR_OP_SQRT: axir_buf_printf(b, "sqrt%s(%s)", f, a); return;
    case AXON_AXIR_OP_RSQRT: axir_buf_printf(b, "((%s)1 / sqrt%s(%s))", W, f, a); return;
    case AXON_AXIR_OP_SIN: axir_buf_printf(b, "sin%s(%s)", f, a); return;
    case AXON_AXIR_OP_COS: axir_buf_printf(b, "cos%s(%s)", f, a); return;
    case AXON_AXIR_OP_TAN: axir_buf_printf(b, "tan%s(%s)", f, a); return;
    case AXON_AXIR_OP_TANH: axir_buf_printf(b, "tanh%s(%s)", f, a); return;
    case AXON_AXIR_OP_ERF: axir_buf_printf(b, "erf%s(%s)", f, a); return;
    case AXON_AXIR_OP_RECIPROCAL: axir_buf_printf(b, "((%s)1 / %s)", W, a); return;
    case AXON_AXIR_OP_FLOOR: axir_buf_printf(b, "pw_floor_%s(%s)", dbl ? "f64" : "f32", a); return;
    case AXON_AXIR_OP_CEIL: axir_buf_printf(b, "pw_ceil_%s(%s)", dbl ? "f64" : "f32", a); return;
    case AXON_AXIR_OP_ROUND: axir_buf_printf(b, "pw_rint_%s(%s)", dbl ? "f64" : "f32", a); return;
    case AXON_AXIR_OP_TRUNC: axir_buf_printf(b, "pw_trunc_%s(%s)", dbl ? "f64" : "f32", a); return;
    case AXON_AXIR_OP_SIGMOID:
        axir_buf_printf(b, "((%s)1 / ((%s)1 + %s(-%s)))", W, W, dbl ? "exp" : "pw_expf", a);
        return;
    case AXON_AXIR_OP_SILU: axir_buf_printf(b, "(%s / ((%s)1 + %s(-%s)))", a, W, dbl ? "exp" : "pw_expf", a); return;
    case AXON_AXIR_OP_GELU: {
        const axon_axir_attr_t *ap = axon_axir_node_attr(n, "approximate");
        if (ap && ap->kind == AXON_AXIR_ATTR_STRING && strcmp(ap->s, "tanh") == 0)
            axir_buf_printf(b,
                            "((%s)0.5 * %s * ((%s)1 + tanh%s((%s)0.79788456080286535588 * (%s + (%s)0.044715 * "
                            "(%s * %s * %s)))))",
                            W, a, W, f, W, a, W, a, a, a);
        else
            axir_buf_printf(b, "(%s * (%s)0.5 * ((%s)1 + %s(%s * (%s)0.70710678118654752440)))", a, W, W,
                            dbl ? "erf" : "pw_erf_f32", a, W);
        return;
    }
    case AXON_AXIR_OP_ADD: case AXON_AXIR_OP_SUB: case AXON_AXIR_OP_MUL: {
        const char *sym = n->op == AXON_AXIR_OP_ADD ? "+" : n->op == AXON_AXIR_OP_SUB ? "-" : "*";
        if (integer) axir_buf_printf(b, "(%s)((%s)%s %s (%s)%s)", W, U, a, sym, U, c);
        else if (d == AXON_BOOL && n->op == AXON_AXIR_OP_ADD) axir_buf_printf(b, "(uint8_t)(%s | %s)", a, c);
        else if (d == AXON_BOOL) axir_buf_printf(b, "(uint8_t)(%s & %s)", a, c);
        else axir_buf_printf(b, "(%s %s %s)", a, sym, c);
        return;
    }
    case AXON_AXIR_OP_DIV: {
        const axon_axir_attr_t *rm = axon_axir_node_attr(n, "rounding_mode");
        if (rm && rm->kind == AXON_AXIR_ATTR_STRING && strcmp(rm->s, "trunc") == 0)
            axir_buf_printf(b, "pw_trunc_%s(%s / %s)", dbl ? "f64" : "f32", a, c);
        else if (rm && rm->kind == AXON_AXIR_ATTR_STRING && strcmp(rm->s, "floor") == 0)
            axir_buf_printf(b, "pw_floor_%s(%s / %s)", dbl ? "f64" : "f32", a, c);
        else
            axir_buf_printf(b, "(%s / %s)", a, c);
        return;
    }
    case AXON_AXIR_OP_POW: axir_buf_printf(b, "pow%s(%s, %s)", f, a, c); return;
    case AXON_AXIR_OP_FMOD: axir_buf_printf(b, "fmod%s(%s, %s)", f, a, c); return;
    case AXON_AXIR_OP_REMAINDER:
        /* Python's %: the result takes the divisor's sign. */
        axir_buf_printf(b, "ax_remainder_%s(%s, %s)", dbl ? "f64" : "f32", a, c);
        return;
    case AXON_AXIR_OP_ATAN2: axir_buf_printf(b, "atan2%s(%s, %s)", f, a, c); return;
    case AXON_AXIR_OP_MAXIMUM: case AXON_AXIR_OP_MINIMUM: {
        const char *cmp = n->op == AXON_AXIR_OP_MAXIMUM ? ">" : "<";
        if (axon_dtype_is_floating(d)) /* NaN in either operand propagates */
            axir_buf_printf(b, "(%s != %s ? %s : %s != %s ? %s : %s %s %s ? %s : %s)", a, a, a, c, c, c, a, cmp, c, a,
                            c);
        else
            axir_buf_printf(b, "(%s %s %s ? %s : %s)", a, cmp, c, a, c);
        return;
    }
    case AXON_AXIR_OP_BITWISE_AND: axir_buf_printf(b, "(%s)(%s & %s)", W, a, c); return;
    case AXON_AXIR_OP_BITWISE_OR: axir_buf_printf(b, "(%s)(%s | %s)", W, a, c); return;
    case AXON_AXIR_OP_BITWISE_XOR: axir_buf_printf(b, "(%s)(%s ^ %s)", W, a, c); return;
    case AXON_AXIR_OP_LOGICAL_AND: axir_buf_printf(b, "(uint8_t)(%s != 0 && %s != 0)", a, c); return;
    case AXON_AXIR_OP_LOGICAL_OR: axir_buf_printf(b, "(uint8_t)(%s != 0 || %s != 0)", a, c); return;
    case AXON_AXIR_OP_EQ: axir_buf_printf(b, "(uint8_t)(%s == %s)", a, c); return;
    case AXON_AXIR_OP_NE: axir_buf_printf(b, "(uint8_t)(%s != %s)", a, c); return;
    case AXON_AXIR_OP_LT: axir_buf_printf(b, "(uint8_t)(%s < %s)", a, c); return;
    case AXON_AXIR_OP_LE: axir_buf_printf(b, "(uint8_t)(%s <= %s)", a, c); return;
    case AXON_AXIR_OP_GT: axir_buf_printf(b, "(uint8_t)(%s > %s)", a, c); return;
    case AXON_AXIR_OP_GE: axir_buf_printf(b, "(uint8_t)(%s >= %s)", a, c); return;
    case AXON_AXIR_OP_WHERE: axir_buf_printf(b, "(%s ? %s : %s)", a, c, e); return;
    default: axir_buf_puts(b, "0"); return;
    }
}

/* The load of operand k at row offset j into a local of its compute type. */
static void emit_load(axir_buf_t *b, const axon_axir_value_t *v, int k, const char *j) {
    const axon_dtype_t d = v->type.dtype;
    char name[32];
    value_name(v, name, sizeof name);
    if (d == AXON_FLOAT16 || d == AXON_BFLOAT16)
        axir_buf_printf(b, "        const float %s = axon_%s_to_f32(p%d[%s]);\n", name, short_name(d), k, j);
    else
        axir_buf_printf(b, "        const %s %s = p%d[%s];\n", compute_type(d), name, k, j);
}

static void emit_store(axir_buf_t *b, const axon_axir_value_t *v, axon_dtype_t d, int k, const char *j) {
    char name[32];
    value_name(v, name, sizeof name);
    if (d == AXON_FLOAT16 || d == AXON_BFLOAT16)
        axir_buf_printf(b, "        p%d[%s] = axon_f32_to_%s(%s);\n", k, j, short_name(d), name);
    else if (d == AXON_BOOL)
        axir_buf_printf(b, "        p%d[%s] = (uint8_t)(%s != 0);\n", k, j, name);
    else
        axir_buf_printf(b, "        p%d[%s] = (%s)%s;\n", k, j, storage_type(d), name);
}

/* The loop body over row offset j: loads, the ops in program order, stores. step[k] is the expression for operand
 * k's offset ("j", "0" or "j * s3"). */
static void emit_body(axir_buf_t *b, const axon_axir_func_t *k, char steps[][32]) {
    for (int p = 0; p < k->num_params; p++) emit_load(b, k->params[p], p, steps[p]);
    for (const axon_axir_node_t *n = k->first; n; n = n->next) {
        const axon_axir_value_t *r = n->results[0];
        const axon_dtype_t rd = r->type.dtype;
        char name[32];
        value_name(r, name, sizeof name);
        axir_buf_printf(b, "        const %s %s = ", compute_type(rd), name);
        axir_buf_t tmp = {0};
        emit_expr(&tmp, n);
        if (tmp.oom || !tmp.data) b->oom = 1;
        else if (n->op == AXON_AXIR_OP_CAST || n->op == AXON_AXIR_OP_CONST) axir_buf_puts(b, tmp.data);
        else emit_rounded(b, rd, tmp.data);
        free(tmp.data);
        axir_buf_puts(b, ";\n");
    }
    for (int r = 0; r < k->num_results; r++)
        emit_store(b, k->returns[r], k->result_types[r].dtype, k->num_params + r, steps[k->num_params + r]);
}

/* 1 if parameter type t is broadcast along the innermost iteration dim of a rank-`rank` space whose innermost dim
 * is `inner`: it has no dims, or its last dim is a static 1 where the iteration's is not. */
static int broadcast_inner(const axon_axir_type_t *t, const axon_axir_type_t *iter) {
    if (iter->rank == 0) return 0;
    if (t->rank == 0) return 1;
    const axon_axir_dim_t last = t->dims[t->rank - 1], it = iter->dims[iter->rank - 1];
    return last.expr == NULL && last.size == 1 && !(it.expr == NULL && it.size == 1);
}

/* Rows are computed in runs of this many elements by one vectorized body, and a shorter tail goes through the same
 * body on a zero-padded block, as kernels/pointwise_unary.c does: a vector math function and its scalar version may
 * differ in the last bit, and an element's value must not depend on where a row or a thread's range ends. */
#define T1_PAD 64

static axon_dtype_t operand_dtype(const axon_axir_func_t *k, int o) {
    return o < k->num_params ? k->params[o]->type.dtype : k->result_types[o - k->num_params].dtype;
}

axon_status_t axon_tier1_generate(const axon_axir_func_t *k, const char *symbol, axir_buf_t *b) {
    char why[256];
    if (!axon_tier1_can_generate(k, why, sizeof why)) return AXON_ERROR_UNSUPPORTED;
    const axon_axir_type_t *iter = &k->result_types[0];
    const int nops = k->num_params + k->num_results;
    char steps[AXON_TIER1_MAX_OPERANDS][32];
    int bcast[AXON_TIER1_MAX_OPERANDS];
    for (int o = 0; o < nops; o++) bcast[o] = o < k->num_params && broadcast_inner(&k->params[o]->type, iter);

    /* The row body over contiguous (or, where the type broadcasts the row, fixed) operands. */
    axir_buf_printf(b, "\n/* @%s */\n__attribute__((noinline)) static void %s_row(", k->name, symbol);
    for (int o = 0; o < nops; o++) {
        axon_dtype_t d = operand_dtype(k, o);
        axir_buf_printf(b, "%s%s *restrict p%d, ", o < k->num_params ? "const " : "", storage_type(d), o);
        snprintf(steps[o], sizeof steps[o], "%s", bcast[o] ? "0" : "j");
    }
    axir_buf_puts(b, "int64_t n) {\n    for (int64_t j = 0; j < n; j++) {\n");
    emit_body(b, k, steps);
    axir_buf_puts(b, "    }\n}\n");

    axir_buf_printf(b, "void %s(char *const *ptrs, const int64_t *strides, const int64_t *sizes, int rank, "
                       "int64_t begin, int64_t end) {\n", symbol);
    for (int o = 0; o < nops; o++) {
        axon_dtype_t d = operand_dtype(k, o);
        const char *cq = o < k->num_params ? "const " : "";
        axir_buf_printf(b, "    %s%s *const base%d = (%s%s *)ptrs[%d];\n", cq, storage_type(d), o, cq,
                        storage_type(d), o);
    }
    axir_buf_puts(b,
                  "    int64_t idx[8] = {0};\n"
                  "    int64_t rest = begin;\n"
                  "    for (int d = rank - 1; d >= 0; d--) {\n"
                  "        idx[d] = rest % sizes[d];\n"
                  "        rest /= sizes[d];\n"
                  "    }\n"
                  "    const int64_t inner = rank > 0 ? sizes[rank - 1] : 1;\n"
                  "    int64_t i = begin;\n"
                  "    while (i < end) {\n"
                  "        const int64_t j0 = rank > 0 ? idx[rank - 1] : 0;\n"
                  "        const int64_t n = inner - j0 < end - i ? inner - j0 : end - i;\n");
    for (int o = 0; o < nops; o++) {
        axon_dtype_t d = operand_dtype(k, o);
        axir_buf_printf(b, "        int64_t off%d = 0;\n", o);
        axir_buf_printf(b, "        for (int d = 0; d < rank - 1; d++) off%d += idx[d] * strides[%d * 8 + d];\n", o,
                        o);
        axir_buf_printf(b, "        const int64_t s%d = rank > 0 ? strides[%d * 8 + rank - 1] : 0;\n", o, o);
        axir_buf_printf(b, "        %s%s *p%d = base%d + off%d + j0 * s%d;\n", o < k->num_params ? "const " : "",
                        storage_type(d), o, o, o, o);
    }
    /* Fast rows: every operand's row stride is what its type promises for a dense operand (1, or 0 where the type
     * broadcasts the row): the vectorized body, then the tail through padded blocks. */
    axir_buf_puts(b, "        if (1");
    for (int o = 0; o < nops; o++) axir_buf_printf(b, " && s%d == %d", o, bcast[o] ? 0 : 1);
    axir_buf_printf(b, ") {\n            const int64_t bulk = n & ~(int64_t)%d;\n", T1_PAD - 1);
    axir_buf_printf(b, "            if (bulk > 0) %s_row(", symbol);
    for (int o = 0; o < nops; o++) axir_buf_printf(b, "p%d, ", o);
    axir_buf_puts(b, "bulk);\n            if (n > bulk) {\n                const int64_t tail = n - bulk;\n");
    for (int o = 0; o < nops; o++) {
        axon_dtype_t d = operand_dtype(k, o);
        if (bcast[o]) continue;
        axir_buf_printf(b, "                %s q%d[%d];\n", storage_type(d), o, T1_PAD);
        if (o < k->num_params)
            axir_buf_printf(b, "                memset(q%d, 0, sizeof q%d);\n"
                               "                memcpy(q%d, p%d + bulk, (size_t)tail * sizeof q%d[0]);\n",
                            o, o, o, o, o);
    }
    axir_buf_printf(b, "                %s_row(", symbol);
    for (int o = 0; o < nops; o++)
        if (bcast[o]) axir_buf_printf(b, "p%d, ", o);
        else axir_buf_printf(b, "q%d, ", o);
    axir_buf_printf(b, "%d);\n", T1_PAD);
    for (int o = k->num_params; o < nops; o++)
        axir_buf_printf(b, "                memcpy(p%d + bulk, q%d, (size_t)tail * sizeof q%d[0]);\n", o, o, o);
    /* Rows where an input the type calls dense is broadcast at run time (an expand the program made a view, its
     * stride 0): the vectorized body in blocks of T1_PAD, such inputs read from a block of their one value. */
    axir_buf_puts(b, "            }\n        } else if (1");
    for (int o = 0; o < nops; o++)
        if (bcast[o] || o >= k->num_params) axir_buf_printf(b, " && s%d == %d", o, bcast[o] ? 0 : 1);
        else axir_buf_printf(b, " && (s%d == 0 || s%d == 1)", o, o);
    axir_buf_puts(b, ") {\n");
    for (int o = 0; o < k->num_params; o++) {
        if (bcast[o]) continue;
        const char *st = storage_type(operand_dtype(k, o));
        axir_buf_printf(b, "            %s r%d[%d];\n", st, o, T1_PAD);
        axir_buf_printf(b, "            if (s%d == 0) for (int t = 0; t < %d; t++) r%d[t] = p%d[0];\n", o, T1_PAD, o, o);
    }
    axir_buf_printf(b, "            for (int64_t c = 0; c < n; c += %d) {\n", T1_PAD);
    axir_buf_printf(b, "                const int64_t m = n - c < %d ? n - c : %d;\n", T1_PAD, T1_PAD);
    for (int o = 0; o < nops; o++) {
        if (bcast[o]) continue;
        const char *st = storage_type(operand_dtype(k, o));
        if (o < k->num_params)
            axir_buf_printf(b, "                const %s *a%d = s%d ? p%d + c : r%d;\n", st, o, o, o, o);
        axir_buf_printf(b, "                %s q%d[%d];\n", st, o, T1_PAD);
        if (o < k->num_params)
            axir_buf_printf(b, "                if (m < %d) {\n                    memset(q%d, 0, sizeof q%d);\n"
                               "                    memcpy(q%d, a%d, (size_t)m * sizeof q%d[0]);\n"
                               "                    a%d = q%d;\n                }\n",
                            T1_PAD, o, o, o, o, o, o, o);
    }
    axir_buf_printf(b, "                %s_row(", symbol);
    for (int o = 0; o < nops; o++)
        if (bcast[o]) axir_buf_printf(b, "p%d, ", o);
        else if (o < k->num_params) axir_buf_printf(b, "a%d, ", o);
        else axir_buf_printf(b, "m < %d ? q%d : p%d + c, ", T1_PAD, o, o);
    axir_buf_printf(b, "%d);\n", T1_PAD);
    for (int o = k->num_params; o < nops; o++)
        axir_buf_printf(b, "                if (m < %d) memcpy(p%d + c, q%d, (size_t)m * sizeof q%d[0]);\n", T1_PAD, o,
                        o, o);
    axir_buf_puts(b, "            }\n");
    axir_buf_puts(b, "        } else {\n            for (int64_t j = 0; j < n; j++) {\n");
    for (int o = 0; o < nops; o++) snprintf(steps[o], sizeof steps[o], "j * s%d", o);
    emit_body(b, k, steps);
    axir_buf_puts(b,
                  "            }\n"
                  "        }\n"
                  "        i += n;\n"
                  "        /* next row: carry into the outer dims */\n"
                  "        if (rank > 0) {\n"
                  "            idx[rank - 1] = 0;\n"
                  "            for (int d = rank - 2; d >= 0; d--) {\n"
                  "                if (++idx[d] < sizes[d]) break;\n"
                  "                idx[d] = 0;\n"
                  "            }\n"
                  "        }\n"
                  "    }\n"
                  "}\n");
    return b->oom ? AXON_ERROR_OUT_OF_MEMORY : AXON_OK;
}

/* Appends text without its quoted #include lines (the embedded headers include each other; the prelude already
 * holds them in order). */
static void put_embedded(axir_buf_t *b, const char *s) {
    while (*s) {
        const char *eol = strchr(s, '\n');
        size_t len = eol ? (size_t)(eol - s + 1) : strlen(s);
        if (!(len >= 10 && strncmp(s, "#include \"", 10) == 0)) axir_buf_put(b, s, len);
        s += len;
    }
}

void axon_tier1_prelude(axir_buf_t *b) {
    axir_buf_puts(b, "/* Generated by libaxon's tier-1 compiler. */\n"
                     "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
#ifdef AXON_HAVE_LIBMVEC
    /* As in kernels/pointwise_unary.c: libmvec's vector versions of every libm function the generated code calls,
     * so that loops calling them vectorize, and tier 0's pointwise loops (which declare the same) give the same
     * values. */
    axir_buf_puts(b, "#define AX_SIMD __attribute__((simd(\"notinbranch\")))\n");
    static const char *const fns[] = {"erf", "tanh", "tan", "atan", "sin", "cos", "exp2", "expm1", "log", "log2",
                                      "log1p"};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        axir_buf_printf(b, "float %sf(float) AX_SIMD;\ndouble %s(double) AX_SIMD;\n", fns[i], fns[i]);
    axir_buf_puts(b, "double exp(double) AX_SIMD;\n");
#endif
    put_embedded(b, axon_tier1_dtype_h);
    put_embedded(b, axon_tier1_pointwise_math_h);
    axir_buf_puts(b,
                  "\nstatic inline float ax_remainder_f32(float a, float b) {\n"
                  "    float r = fmodf(a, b);\n"
                  "    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;\n"
                  "}\n"
                  "static inline double ax_remainder_f64(double a, double b) {\n"
                  "    double r = fmod(a, b);\n"
                  "    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;\n"
                  "}\n");
}
