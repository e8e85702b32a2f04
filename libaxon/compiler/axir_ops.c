/* The AXIR op table: one row per op of docs/axir.md with its name, class, operand and result counts, the dtypes its
 * operands may have and its attribute schema. The parser, the verifier and the exported queries all read it, so an
 * op is added in one place. */
#include <string.h>

#include "axir_impl.h"

#define K_INT (1u << AXON_AXIR_ATTR_INT)
#define K_FLOAT (1u << AXON_AXIR_ATTR_FLOAT)
#define K_BOOL (1u << AXON_AXIR_ATTR_BOOL)
#define K_STR (1u << AXON_AXIR_ATTR_STRING)
#define K_LIST (1u << AXON_AXIR_ATTR_LIST)
#define REQ AXIR_ATTR_REQUIRED
#define OPT AXIR_ATTR_OPTIONAL

#define C_CONST AXON_AXIR_CLASS_CONSTANT
#define C_EW AXON_AXIR_CLASS_ELEMENTWISE
#define C_RED AXON_AXIR_CLASS_REDUCTION
#define C_VIEW AXON_AXIR_CLASS_VIEW
#define C_COPY AXON_AXIR_CLASS_COPY
#define C_LIB AXON_AXIR_CLASS_LIBRARY
#define C_CALL AXON_AXIR_CLASS_CALL

#define UNARY(OP, NAME, DT) {AXON_AXIR_OP_##OP, NAME, C_EW, 1, 1, 1, DT, 0, {{0}}}
#define BINARY(OP, NAME, DT) {AXON_AXIR_OP_##OP, NAME, C_EW, 2, 2, 1, DT, 0, {{0}}}
#define COMPARE(OP, NAME, DT) {AXON_AXIR_OP_##OP, NAME, C_EW, 2, 2, 1, DT, 1, {{0}}}
#define REDUCE(OP, NAME, DT) \
    {AXON_AXIR_OP_##OP, NAME, C_RED, 1, 1, 1, DT, 0, {{"dims", K_LIST, REQ}, {"keepdim", K_BOOL, REQ}}}

static const axir_op_info_t axir_ops[AXON_AXIR_OP_COUNT] = {
    [AXON_AXIR_OP_INVALID] = {AXON_AXIR_OP_INVALID, "invalid", C_CONST, 0, 0, 0, AXIR_DT_ANY, 0, {{0}}},
    {AXON_AXIR_OP_CONST, "const", C_CONST, 0, 0, 1, AXIR_DT_ANY, 0, {{"value", K_INT | K_FLOAT | K_BOOL, REQ}}},
    {AXON_AXIR_OP_IOTA, "iota", C_CONST, 0, 0, 1, AXIR_DT_REAL, 0, {{"start", K_INT, REQ}, {"step", K_INT, REQ}}},
    UNARY(NEG, "neg", AXIR_DT_NUMERIC),
    UNARY(ABS, "abs", AXIR_DT_NUMERIC),
    UNARY(EXP, "exp", AXIR_DT_FLOAT),
    UNARY(EXP2, "exp2", AXIR_DT_FLOAT),
    UNARY(EXPM1, "expm1", AXIR_DT_FLOAT),
    UNARY(LOG, "log", AXIR_DT_FLOAT),
    UNARY(LOG2, "log2", AXIR_DT_FLOAT),
    UNARY(LOG1P, "log1p", AXIR_DT_FLOAT),
    UNARY(SQRT, "sqrt", AXIR_DT_FLOAT),
    UNARY(RSQRT, "rsqrt", AXIR_DT_FLOAT),
    UNARY(SIN, "sin", AXIR_DT_FLOAT),
    UNARY(COS, "cos", AXIR_DT_FLOAT),
    UNARY(TAN, "tan", AXIR_DT_FLOAT),
    UNARY(TANH, "tanh", AXIR_DT_FLOAT),
    UNARY(SIGMOID, "sigmoid", AXIR_DT_FLOAT),
    UNARY(RELU, "relu", AXIR_DT_REAL),
    UNARY(SILU, "silu", AXIR_DT_FLOAT),
    UNARY(ERF, "erf", AXIR_DT_FLOAT),
    UNARY(RECIPROCAL, "reciprocal", AXIR_DT_FLOAT),
    UNARY(FLOOR, "floor", AXIR_DT_REAL),
    UNARY(CEIL, "ceil", AXIR_DT_REAL),
    UNARY(ROUND, "round", AXIR_DT_REAL),
    UNARY(TRUNC, "trunc", AXIR_DT_REAL),
    UNARY(SIGN, "sign", AXIR_DT_REAL),
    {AXON_AXIR_OP_LOGICAL_NOT, "logical_not", C_EW, 1, 1, 1, AXIR_DT_ANY, 1, {{0}}},
    UNARY(BITWISE_NOT, "bitwise_not", AXIR_DT_INT_BOOL),
    {AXON_AXIR_OP_ISNAN, "isnan", C_EW, 1, 1, 1, AXIR_DT_ANY, 1, {{0}}},
    {AXON_AXIR_OP_GELU, "gelu", C_EW, 1, 1, 1, AXIR_DT_FLOAT, 0, {{"approximate", K_STR, REQ}}},
    UNARY(CAST, "cast", AXIR_DT_ANY),
    BINARY(ADD, "add", AXIR_DT_ANY),
    BINARY(SUB, "sub", AXIR_DT_NUMERIC),
    BINARY(MUL, "mul", AXIR_DT_ANY),
    {AXON_AXIR_OP_DIV, "div", C_EW, 2, 2, 1, AXIR_DT_NUMERIC, 0, {{"rounding_mode", K_STR, OPT}}},
    BINARY(POW, "pow", AXIR_DT_NUMERIC),
    BINARY(MAXIMUM, "maximum", AXIR_DT_ORDERED),
    BINARY(MINIMUM, "minimum", AXIR_DT_ORDERED),
    BINARY(REMAINDER, "remainder", AXIR_DT_REAL),
    BINARY(FMOD, "fmod", AXIR_DT_REAL),
    BINARY(ATAN2, "atan2", AXIR_DT_FLOAT),
    BINARY(BITWISE_AND, "bitwise_and", AXIR_DT_INT_BOOL),
    BINARY(BITWISE_OR, "bitwise_or", AXIR_DT_INT_BOOL),
    BINARY(BITWISE_XOR, "bitwise_xor", AXIR_DT_INT_BOOL),
    COMPARE(LOGICAL_AND, "logical_and", AXIR_DT_ANY),
    COMPARE(LOGICAL_OR, "logical_or", AXIR_DT_ANY),
    COMPARE(EQ, "eq", AXIR_DT_ANY),
    COMPARE(NE, "ne", AXIR_DT_ANY),
    COMPARE(LT, "lt", AXIR_DT_ORDERED),
    COMPARE(LE, "le", AXIR_DT_ORDERED),
    COMPARE(GT, "gt", AXIR_DT_ORDERED),
    COMPARE(GE, "ge", AXIR_DT_ORDERED),
    {AXON_AXIR_OP_WHERE, "where", C_EW, 3, 3, 1, AXIR_DT_ANY, 0, {{0}}},
    REDUCE(SUM, "sum", AXIR_DT_ANY),
    REDUCE(PROD, "prod", AXIR_DT_ANY),
    REDUCE(MEAN, "mean", AXIR_DT_FLOAT),
    REDUCE(AMAX, "amax", AXIR_DT_ANY),
    REDUCE(AMIN, "amin", AXIR_DT_ANY),
    {AXON_AXIR_OP_VAR, "var", C_RED, 1, 1, 1, AXIR_DT_FLOAT, 0,
     {{"correction", K_INT, REQ}, {"dims", K_LIST, REQ}, {"keepdim", K_BOOL, REQ}}},
    {AXON_AXIR_OP_ARGMAX, "argmax", C_RED, 1, 1, 1, AXIR_DT_REAL, 0, {{"dim", K_INT, REQ}, {"keepdim", K_BOOL, REQ}}},
    {AXON_AXIR_OP_ARGMIN, "argmin", C_RED, 1, 1, 1, AXIR_DT_REAL, 0, {{"dim", K_INT, REQ}, {"keepdim", K_BOOL, REQ}}},
    {AXON_AXIR_OP_RESHAPE, "reshape", C_VIEW, 1, 1, 1, AXIR_DT_ANY, 0, {{"shape", K_LIST, REQ}}},
    {AXON_AXIR_OP_PERMUTE, "permute", C_VIEW, 1, 1, 1, AXIR_DT_ANY, 0, {{"dims", K_LIST, REQ}}},
    {AXON_AXIR_OP_EXPAND, "expand", C_VIEW, 1, 1, 1, AXIR_DT_ANY, 0, {{"shape", K_LIST, REQ}}},
    {AXON_AXIR_OP_SLICE, "slice", C_VIEW, 1, 1, 1, AXIR_DT_ANY, 0,
     {{"dim", K_INT, REQ}, {"end", K_INT, REQ}, {"start", K_INT, REQ}, {"step", K_INT, REQ}}},
    {AXON_AXIR_OP_SELECT, "select", C_VIEW, 1, 1, 1, AXIR_DT_ANY, 0, {{"dim", K_INT, REQ}, {"index", K_INT, REQ}}},
    {AXON_AXIR_OP_SQUEEZE, "squeeze", C_VIEW, 1, 1, 1, AXIR_DT_ANY, 0, {{"dims", K_LIST, REQ}}},
    {AXON_AXIR_OP_UNSQUEEZE, "unsqueeze", C_VIEW, 1, 1, 1, AXIR_DT_ANY, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_CONTIGUOUS, "contiguous", C_COPY, 1, 1, 1, AXIR_DT_ANY, 0, {{0}}},
    {AXON_AXIR_OP_CAT, "cat", C_COPY, 1, -1, 1, AXIR_DT_ANY, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_MM, "mm", C_LIB, 2, 2, 1, AXIR_DT_NUMERIC, 0, {{0}}},
    {AXON_AXIR_OP_BMM, "bmm", C_LIB, 2, 2, 1, AXIR_DT_NUMERIC, 0, {{0}}},
    {AXON_AXIR_OP_ADDMM, "addmm", C_LIB, 3, 3, 1, AXIR_DT_NUMERIC, 0,
     {{"alpha", K_FLOAT, OPT}, {"beta", K_FLOAT, OPT}}},
    {AXON_AXIR_OP_SOFTMAX, "softmax", C_LIB, 1, 1, 1, AXIR_DT_FLOAT, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_LOG_SOFTMAX, "log_softmax", C_LIB, 1, 1, 1, AXIR_DT_FLOAT, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_LAYER_NORM, "layer_norm", C_LIB, 1, 3, 3, AXIR_DT_FLOAT, 0,
     {{"eps", K_FLOAT, REQ}, {"normalized_ndim", K_INT, REQ}}},
    {AXON_AXIR_OP_RMS_NORM, "rms_norm", C_LIB, 1, 2, 2, AXIR_DT_FLOAT, 0,
     {{"eps", K_FLOAT, REQ}, {"normalized_ndim", K_INT, REQ}}},
    {AXON_AXIR_OP_EMBEDDING, "embedding", C_LIB, 2, 2, 1, AXIR_DT_ANY, 0, {{0}}},
    {AXON_AXIR_OP_GATHER, "gather", C_LIB, 2, 2, 1, AXIR_DT_ANY, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_INDEX_SELECT, "index_select", C_LIB, 2, 2, 1, AXIR_DT_ANY, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_SDPA, "sdpa", C_LIB, 3, 4, 1, AXIR_DT_FLOAT, 0,
     {{"dropout_p", K_FLOAT, REQ}, {"is_causal", K_BOOL, REQ}, {"scale", K_FLOAT, OPT}, {"draw", K_INT, OPT}}},
    {AXON_AXIR_OP_SDPA_LSE, "sdpa_lse", C_LIB, 3, 4, 2, AXIR_DT_FLOAT, 0,
     {{"dropout_p", K_FLOAT, REQ}, {"is_causal", K_BOOL, REQ}, {"scale", K_FLOAT, OPT}, {"draw", K_INT, OPT}}},
    {AXON_AXIR_OP_SDPA_BACKWARD, "sdpa_backward", C_LIB, 6, 9, 3, AXIR_DT_FLOAT, 0,
     {{"is_causal", K_BOOL, REQ}, {"scale", K_FLOAT, OPT}, {"dropout_p", K_FLOAT, OPT}}},
    {AXON_AXIR_OP_SOFTMAX_BACKWARD, "softmax_backward", C_LIB, 2, 2, 1, AXIR_DT_FLOAT, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD, "log_softmax_backward", C_LIB, 2, 2, 1, AXIR_DT_FLOAT, 0,
     {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_LAYER_NORM_BACKWARD, "layer_norm_backward", C_LIB, 4, 5, 3, AXIR_DT_FLOAT, 0,
     {{"normalized_ndim", K_INT, REQ}}},
    {AXON_AXIR_OP_RMS_NORM_BACKWARD, "rms_norm_backward", C_LIB, 3, 4, 2, AXIR_DT_FLOAT, 0,
     {{"normalized_ndim", K_INT, REQ}}},
    {AXON_AXIR_OP_EMBEDDING_BACKWARD, "embedding_backward", C_LIB, 2, 2, 1, AXIR_DT_FLOAT, 0,
     {{"num_weights", K_INT, REQ}, {"padding_idx", K_INT, REQ}}},
    {AXON_AXIR_OP_NLL_LOSS, "nll_loss", C_LIB, 2, 3, 2, AXIR_DT_FLOAT, 0,
     {{"ignore_index", K_INT, REQ}, {"reduction", K_STR, REQ}}},
    {AXON_AXIR_OP_NLL_LOSS_BACKWARD, "nll_loss_backward", C_LIB, 4, 5, 1, AXIR_DT_FLOAT, 0,
     {{"ignore_index", K_INT, REQ}, {"reduction", K_STR, REQ}}},
    {AXON_AXIR_OP_NLL_LOSS_LOG_SOFTMAX_BACKWARD, "nll_loss_log_softmax_backward", C_LIB, 4, 5, 1, AXIR_DT_FLOAT, 0,
     {{"ignore_index", K_INT, REQ}, {"reduction", K_STR, REQ}}},
    {AXON_AXIR_OP_DROPOUT, "dropout", C_LIB, 1, 1, 2, AXIR_DT_FLOAT, 0, {{"draw", K_INT, REQ}, {"p", K_FLOAT, REQ}}},
    {AXON_AXIR_OP_PHILOX_STATE, "philox_state", C_LIB, 0, 0, 2, AXIR_DT_ANY, 0, {{"draw", K_INT, REQ}}},
    {AXON_AXIR_OP_INDEX_COPY_INTO, "index_copy_into", C_LIB, 3, 3, 1, AXIR_DT_ANY, 0, {{"dim", K_INT, REQ}}},
    {AXON_AXIR_OP_FUSED, "fused", C_CALL, 0, -1, -1, AXIR_DT_ANY, 0, {{0}}},
};

const axir_op_info_t *axir_op_info(axon_axir_op_t op) {
    if ((int)op <= AXON_AXIR_OP_INVALID || op >= AXON_AXIR_OP_COUNT) return NULL;
    return &axir_ops[op];
}

const char *axon_axir_op_name(axon_axir_op_t op) {
    const axir_op_info_t *info = axir_op_info(op);
    return info ? info->name : "invalid";
}

axon_axir_op_t axon_axir_op_lookup(const char *name, size_t len) {
    if (name == NULL) return AXON_AXIR_OP_INVALID;
    for (int i = 1; i < AXON_AXIR_OP_COUNT; i++)
        if (strlen(axir_ops[i].name) == len && memcmp(axir_ops[i].name, name, len) == 0) return (axon_axir_op_t)i;
    return AXON_AXIR_OP_INVALID;
}

axon_axir_op_class_t axon_axir_op_class(axon_axir_op_t op) {
    const axir_op_info_t *info = axir_op_info(op);
    return info ? info->cls : AXON_AXIR_CLASS_CONSTANT;
}

int axon_axir_op_arity(axon_axir_op_t op, int *min_operands, int *max_operands, int *num_results) {
    const axir_op_info_t *info = axir_op_info(op);
    if (info == NULL) return 0;
    if (min_operands) *min_operands = info->min_operands;
    if (max_operands) *max_operands = info->max_operands;
    if (num_results) *num_results = info->num_results;
    return 1;
}

int axir_dtype_ok(axir_dtypes_t set, axon_dtype_t d) {
    int fl = axon_dtype_is_floating(d), in = axon_dtype_is_integer(d);
    switch (set) {
    case AXIR_DT_ANY: return 1;
    case AXIR_DT_FLOAT: return fl;
    case AXIR_DT_NUMERIC: return d != AXON_BOOL;
    case AXIR_DT_REAL: return fl || in;
    case AXIR_DT_INT_BOOL: return in || d == AXON_BOOL;
    case AXIR_DT_INT: return in;
    case AXIR_DT_ORDERED: return d != AXON_COMPLEX64 && d != AXON_COMPLEX128;
    }
    return 0;
}

const char *axir_dtypes_text(axir_dtypes_t set) {
    switch (set) {
    case AXIR_DT_ANY: return "any dtype";
    case AXIR_DT_FLOAT: return "a floating dtype (f16, bf16, f32, f64)";
    case AXIR_DT_NUMERIC: return "a numeric dtype (not bool)";
    case AXIR_DT_REAL: return "an integer or floating dtype";
    case AXIR_DT_INT_BOOL: return "an integer or bool dtype";
    case AXIR_DT_INT: return "an integer dtype";
    case AXIR_DT_ORDERED: return "a dtype that is not complex";
    }
    return "?";
}
