/* The compiler's view of the op table: which libaxon kernel op runs each AXIR op, which dtypes tier 0 runs it in
 * (axon_compile_supports), attribute readers, and the diagnostics helpers the passes share. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "axon/pointwise.h"
#include "compile_impl.h"

axon_status_t compile_diag(axon_axir_diag_t *diag, const axon_axir_node_t *n, axon_status_t st, const char *fmt, ...) {
    char msg[sizeof diag->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (diag) {
        diag->line = n ? n->line : 0;
        diag->col = n ? n->col : 0;
        snprintf(diag->message, sizeof diag->message, "%s", msg);
    }
    return axon_fail(st, "%s", msg);
}

int compile_erase_if_dead(axon_axir_func_t *f, axon_axir_node_t *n) {
    for (int r = 0; r < n->num_results; r++)
        if (n->results[r]->num_uses > 0) return 0;
    return axon_axir_node_erase(f, n) == AXON_OK;
}

int64_t compile_attr_int(const axon_axir_node_t *n, const char *name, int64_t dflt) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, name);
    if (!a) return dflt;
    if (a->kind == AXON_AXIR_ATTR_FLOAT) return (int64_t)a->f;
    return a->i;
}

double compile_attr_float(const axon_axir_node_t *n, const char *name, double dflt) {
    const axon_axir_attr_t *a = axon_axir_node_attr(n, name);
    if (!a) return dflt;
    if (a->kind == AXON_AXIR_ATTR_FLOAT) return a->f;
    return (double)a->i;
}

int compile_const_equals(const axon_axir_node_t *n, double v) {
    if (!n || n->op != AXON_AXIR_OP_CONST || n->num_results != 1 || n->results[0]->type.rank != 0) return 0;
    const axon_axir_attr_t *a = axon_axir_node_attr(n, "value");
    if (!a) return 0;
    if (a->kind == AXON_AXIR_ATTR_FLOAT) return a->f == v;
    if (a->kind == AXON_AXIR_ATTR_INT || a->kind == AXON_AXIR_ATTR_BOOL) return (double)a->i == v;
    return 0;
}

int compile_map_unary(const axon_axir_node_t *n, axon_axir_op_t op, int *out) {
    switch (op) {
    case AXON_AXIR_OP_NEG: *out = AXON_UNARY_NEG; return 1;
    case AXON_AXIR_OP_ABS: *out = AXON_UNARY_ABS; return 1;
    case AXON_AXIR_OP_EXP: *out = AXON_UNARY_EXP; return 1;
    case AXON_AXIR_OP_EXP2: *out = AXON_UNARY_EXP2; return 1;
    case AXON_AXIR_OP_EXPM1: *out = AXON_UNARY_EXPM1; return 1;
    case AXON_AXIR_OP_LOG: *out = AXON_UNARY_LOG; return 1;
    case AXON_AXIR_OP_LOG2: *out = AXON_UNARY_LOG2; return 1;
    case AXON_AXIR_OP_LOG1P: *out = AXON_UNARY_LOG1P; return 1;
    case AXON_AXIR_OP_SQRT: *out = AXON_UNARY_SQRT; return 1;
    case AXON_AXIR_OP_RSQRT: *out = AXON_UNARY_RSQRT; return 1;
    case AXON_AXIR_OP_SIN: *out = AXON_UNARY_SIN; return 1;
    case AXON_AXIR_OP_COS: *out = AXON_UNARY_COS; return 1;
    case AXON_AXIR_OP_TAN: *out = AXON_UNARY_TAN; return 1;
    case AXON_AXIR_OP_TANH: *out = AXON_UNARY_TANH; return 1;
    case AXON_AXIR_OP_SIGMOID: *out = AXON_UNARY_SIGMOID; return 1;
    case AXON_AXIR_OP_RELU: *out = AXON_UNARY_RELU; return 1;
    case AXON_AXIR_OP_SILU: *out = AXON_UNARY_SILU; return 1;
    case AXON_AXIR_OP_ERF: *out = AXON_UNARY_ERF; return 1;
    case AXON_AXIR_OP_RECIPROCAL: *out = AXON_UNARY_RECIPROCAL; return 1;
    case AXON_AXIR_OP_FLOOR: *out = AXON_UNARY_FLOOR; return 1;
    case AXON_AXIR_OP_CEIL: *out = AXON_UNARY_CEIL; return 1;
    case AXON_AXIR_OP_ROUND: *out = AXON_UNARY_ROUND; return 1;
    case AXON_AXIR_OP_TRUNC: *out = AXON_UNARY_TRUNC; return 1;
    case AXON_AXIR_OP_SIGN: *out = AXON_UNARY_SIGN; return 1;
    case AXON_AXIR_OP_LOGICAL_NOT: *out = AXON_UNARY_LOGICAL_NOT; return 1;
    case AXON_AXIR_OP_BITWISE_NOT: *out = AXON_UNARY_BITWISE_NOT; return 1;
    case AXON_AXIR_OP_ISNAN: *out = AXON_UNARY_ISNAN; return 1;
    case AXON_AXIR_OP_GELU: {
        const axon_axir_attr_t *a = n ? axon_axir_node_attr(n, "approximate") : NULL;
        *out = a && a->kind == AXON_AXIR_ATTR_STRING && strcmp(a->s, "tanh") == 0 ? AXON_UNARY_GELU_TANH
                                                                                   : AXON_UNARY_GELU;
        return 1;
    }
    default: return 0;
    }
}

int compile_map_binary(const axon_axir_node_t *n, axon_axir_op_t op, int *out) {
    switch (op) {
    case AXON_AXIR_OP_ADD: *out = AXON_BINARY_ADD; return 1;
    case AXON_AXIR_OP_SUB: *out = AXON_BINARY_SUB; return 1;
    case AXON_AXIR_OP_MUL: *out = AXON_BINARY_MUL; return 1;
    case AXON_AXIR_OP_DIV: {
        const axon_axir_attr_t *a = n ? axon_axir_node_attr(n, "rounding_mode") : NULL;
        *out = AXON_BINARY_DIV;
        if (a && a->kind == AXON_AXIR_ATTR_STRING && strcmp(a->s, "trunc") == 0) *out = AXON_BINARY_DIV_TRUNC;
        if (a && a->kind == AXON_AXIR_ATTR_STRING && strcmp(a->s, "floor") == 0) *out = AXON_BINARY_DIV_FLOOR;
        return 1;
    }
    case AXON_AXIR_OP_POW: *out = AXON_BINARY_POW; return 1;
    case AXON_AXIR_OP_MAXIMUM: *out = AXON_BINARY_MAXIMUM; return 1;
    case AXON_AXIR_OP_MINIMUM: *out = AXON_BINARY_MINIMUM; return 1;
    case AXON_AXIR_OP_REMAINDER: *out = AXON_BINARY_REMAINDER; return 1;
    case AXON_AXIR_OP_FMOD: *out = AXON_BINARY_FMOD; return 1;
    case AXON_AXIR_OP_ATAN2: *out = AXON_BINARY_ATAN2; return 1;
    case AXON_AXIR_OP_BITWISE_AND: *out = AXON_BINARY_BITWISE_AND; return 1;
    case AXON_AXIR_OP_BITWISE_OR: *out = AXON_BINARY_BITWISE_OR; return 1;
    case AXON_AXIR_OP_BITWISE_XOR: *out = AXON_BINARY_BITWISE_XOR; return 1;
    case AXON_AXIR_OP_LOGICAL_AND: *out = AXON_BINARY_LOGICAL_AND; return 1;
    case AXON_AXIR_OP_LOGICAL_OR: *out = AXON_BINARY_LOGICAL_OR; return 1;
    case AXON_AXIR_OP_EQ: *out = AXON_BINARY_EQ; return 1;
    case AXON_AXIR_OP_NE: *out = AXON_BINARY_NE; return 1;
    case AXON_AXIR_OP_LT: *out = AXON_BINARY_LT; return 1;
    case AXON_AXIR_OP_LE: *out = AXON_BINARY_LE; return 1;
    case AXON_AXIR_OP_GT: *out = AXON_BINARY_GT; return 1;
    case AXON_AXIR_OP_GE: *out = AXON_BINARY_GE; return 1;
    default: return 0;
    }
}

int compile_op_bool_result(axon_axir_op_t op) {
    switch (op) {
    case AXON_AXIR_OP_EQ: case AXON_AXIR_OP_NE: case AXON_AXIR_OP_LT: case AXON_AXIR_OP_LE: case AXON_AXIR_OP_GT:
    case AXON_AXIR_OP_GE: case AXON_AXIR_OP_LOGICAL_AND: case AXON_AXIR_OP_LOGICAL_OR:
    case AXON_AXIR_OP_LOGICAL_NOT: case AXON_AXIR_OP_ISNAN:
        return 1;
    default: return 0;
    }
}

int compile_op_restride(axon_axir_op_t op) {
    return op == AXON_AXIR_OP_RESHAPE || op == AXON_AXIR_OP_SQUEEZE || op == AXON_AXIR_OP_UNSQUEEZE;
}

int compile_op_product(axon_axir_op_t op) {
    return op == AXON_AXIR_OP_MM || op == AXON_AXIR_OP_BMM || op == AXON_AXIR_OP_ADDMM;
}

axon_dtype_t compile_node_dtype(const axon_axir_node_t *n) {
    if (compile_op_bool_result(n->op) && n->num_operands > 0) return n->operands[0]->type.dtype;
    if (n->op == AXON_AXIR_OP_WHERE && n->num_operands == 3) return n->operands[1]->type.dtype;
    if (n->op == AXON_AXIR_OP_EMBEDDING && n->num_operands > 0) return n->operands[0]->type.dtype;
    if (n->num_results > 0) return n->results[0]->type.dtype;
    return AXON_DTYPE_COUNT;
}

static int is_complex(axon_dtype_t d) { return d == AXON_COMPLEX64 || d == AXON_COMPLEX128; }

AXON_API int axon_compile_supports(axon_axir_op_t op, axon_dtype_t dtype) {
    if ((unsigned)op >= AXON_AXIR_OP_COUNT || (unsigned)dtype >= AXON_DTYPE_COUNT) return 0;
    /* The compiler's values, constants and generated loops are real: complex graphs stay eager, although the
     * pointwise kernels take complex dtypes. */
    if (is_complex(dtype)) return 0;
    int k;
    if (op == AXON_AXIR_OP_CAST) return 1;
    if (compile_map_unary(NULL, op, &k)) return axon_unary_supports((axon_unary_op_t)k, dtype);
    /* div of integers runs in its rounding forms (true division of integers needs a floating result) */
    if (op == AXON_AXIR_OP_DIV && axon_binary_supports(AXON_BINARY_DIV_FLOOR, dtype)) return 1;
    if (compile_map_binary(NULL, op, &k)) return axon_binary_supports((axon_binary_op_t)k, dtype);
    switch (op) {
    case AXON_AXIR_OP_CONST: return 1;
    case AXON_AXIR_OP_IOTA: return dtype != AXON_BOOL;
    case AXON_AXIR_OP_WHERE: return axon_ternary_supports(AXON_TERNARY_WHERE, dtype);
    case AXON_AXIR_OP_SUM: case AXON_AXIR_OP_PROD: case AXON_AXIR_OP_AMAX: case AXON_AXIR_OP_AMIN:
        return 1;
    case AXON_AXIR_OP_ARGMAX: case AXON_AXIR_OP_ARGMIN: return dtype != AXON_BOOL;
    case AXON_AXIR_OP_MEAN: case AXON_AXIR_OP_VAR: return axon_dtype_is_floating(dtype);
    case AXON_AXIR_OP_RESHAPE: case AXON_AXIR_OP_PERMUTE: case AXON_AXIR_OP_EXPAND: case AXON_AXIR_OP_SLICE:
    case AXON_AXIR_OP_SELECT: case AXON_AXIR_OP_SQUEEZE: case AXON_AXIR_OP_UNSQUEEZE: case AXON_AXIR_OP_CONTIGUOUS:
    case AXON_AXIR_OP_CAT: case AXON_AXIR_OP_EMBEDDING: case AXON_AXIR_OP_GATHER: case AXON_AXIR_OP_INDEX_SELECT:
    case AXON_AXIR_OP_INDEX_COPY_INTO:
        return 1;
    case AXON_AXIR_OP_PHILOX_STATE: return dtype == AXON_INT64;
    case AXON_AXIR_OP_MM: case AXON_AXIR_OP_BMM: case AXON_AXIR_OP_ADDMM:
        return dtype != AXON_BOOL;
    case AXON_AXIR_OP_SOFTMAX: case AXON_AXIR_OP_LOG_SOFTMAX: case AXON_AXIR_OP_LAYER_NORM:
    case AXON_AXIR_OP_RMS_NORM: case AXON_AXIR_OP_SDPA: case AXON_AXIR_OP_SDPA_LSE: case AXON_AXIR_OP_SDPA_BACKWARD:
    case AXON_AXIR_OP_SOFTMAX_BACKWARD: case AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD: case AXON_AXIR_OP_LAYER_NORM_BACKWARD:
    case AXON_AXIR_OP_RMS_NORM_BACKWARD: case AXON_AXIR_OP_EMBEDDING_BACKWARD: case AXON_AXIR_OP_NLL_LOSS:
    case AXON_AXIR_OP_NLL_LOSS_BACKWARD: case AXON_AXIR_OP_NLL_LOSS_LOG_SOFTMAX_BACKWARD: case AXON_AXIR_OP_DROPOUT:
        return axon_dtype_is_floating(dtype);
    case AXON_AXIR_OP_FUSED: return axon_dtype_is_floating(dtype) || dtype == AXON_BOOL;   /* masks in groups */
    default: return 0;
    }
}
