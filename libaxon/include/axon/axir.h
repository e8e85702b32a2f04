/* AXIR, the Axon graph IR: its in-memory form, parser, printer and verifier. docs/axir.md is the reference for the
 * text form and the op set.
 *
 * Ownership: a module owns everything reachable from it (functions, values, nodes, names, symbolic expressions,
 * attributes) in one arena; pointers into it stay valid until axon_axir_module_destroy. Passes edit a module in place
 * through the builder functions below; they never free individual objects (an erased node stays in the arena).
 *
 * Structs are transparent so that passes can walk them directly; fields marked "derived" are recomputed by
 * axon_axir_func_recompute_uses and must not be written by hand. Not thread-safe: one module, one thread at a time. */
#ifndef AXON_AXIR_H
#define AXON_AXIR_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

#define AXON_AXIR_VERSION 1

/* ---- Symbolic dimensions ------------------------------------------------------------------------------------- */

typedef enum axon_sym_kind {
    AXON_SYM_CONST = 0,      /* value */
    AXON_SYM_VAR = 1,        /* var: index into the function's symbol table */
    AXON_SYM_ADD = 2,
    AXON_SYM_SUB = 3,
    AXON_SYM_MUL = 4,
    AXON_SYM_FLOORDIV = 5,   /* floor division, as Python's // */
    AXON_SYM_MOD = 6         /* Python's %: the sign of the divisor */
} axon_sym_kind_t;

typedef struct axon_sym_expr {
    axon_sym_kind_t kind;
    int64_t value;                       /* AXON_SYM_CONST */
    int32_t var;                         /* AXON_SYM_VAR */
    const struct axon_sym_expr *lhs;     /* binary kinds */
    const struct axon_sym_expr *rhs;
} axon_sym_expr_t;

/* One dimension: static when expr is NULL (then size holds it), symbolic otherwise (size is -1). */
typedef struct axon_axir_dim {
    int64_t size;
    const axon_sym_expr_t *expr;
} axon_axir_dim_t;

typedef struct axon_axir_type {
    axon_dtype_t dtype;
    int rank;                                /* 0..AXON_MAX_DIMS */
    axon_axir_dim_t dims[AXON_MAX_DIMS];
} axon_axir_type_t;

/* ---- Ops ----------------------------------------------------------------------------------------------------- */

typedef enum axon_axir_op_class {
    AXON_AXIR_CLASS_CONSTANT = 0,
    AXON_AXIR_CLASS_ELEMENTWISE = 1,     /* unary, binary, ternary; broadcasting */
    AXON_AXIR_CLASS_REDUCTION = 2,
    AXON_AXIR_CLASS_VIEW = 3,            /* result may alias its operand's memory */
    AXON_AXIR_CLASS_COPY = 4,            /* contiguous, cat */
    AXON_AXIR_CLASS_LIBRARY = 5,         /* GEMM, norms, attention, gathers: one libaxon kernel each */
    AXON_AXIR_CLASS_CALL = 6             /* fused: runs a kernel function */
} axon_axir_op_class_t;

/* The op set of docs/axir.md. Append only within a version: the values go into cache keys. */
typedef enum axon_axir_op {
    AXON_AXIR_OP_INVALID = 0,
    /* constant */
    AXON_AXIR_OP_CONST, AXON_AXIR_OP_IOTA,
    /* elementwise unary */
    AXON_AXIR_OP_NEG, AXON_AXIR_OP_ABS, AXON_AXIR_OP_EXP, AXON_AXIR_OP_EXP2, AXON_AXIR_OP_EXPM1, AXON_AXIR_OP_LOG,
    AXON_AXIR_OP_LOG2, AXON_AXIR_OP_LOG1P, AXON_AXIR_OP_SQRT, AXON_AXIR_OP_RSQRT, AXON_AXIR_OP_SIN, AXON_AXIR_OP_COS,
    AXON_AXIR_OP_TAN, AXON_AXIR_OP_TANH, AXON_AXIR_OP_SIGMOID, AXON_AXIR_OP_RELU, AXON_AXIR_OP_SILU, AXON_AXIR_OP_ERF,
    AXON_AXIR_OP_RECIPROCAL, AXON_AXIR_OP_FLOOR, AXON_AXIR_OP_CEIL, AXON_AXIR_OP_ROUND, AXON_AXIR_OP_TRUNC,
    AXON_AXIR_OP_SIGN, AXON_AXIR_OP_LOGICAL_NOT, AXON_AXIR_OP_BITWISE_NOT, AXON_AXIR_OP_ISNAN, AXON_AXIR_OP_GELU,
    AXON_AXIR_OP_CAST,
    /* elementwise binary */
    AXON_AXIR_OP_ADD, AXON_AXIR_OP_SUB, AXON_AXIR_OP_MUL, AXON_AXIR_OP_DIV, AXON_AXIR_OP_POW, AXON_AXIR_OP_MAXIMUM,
    AXON_AXIR_OP_MINIMUM, AXON_AXIR_OP_REMAINDER, AXON_AXIR_OP_FMOD, AXON_AXIR_OP_ATAN2, AXON_AXIR_OP_BITWISE_AND,
    AXON_AXIR_OP_BITWISE_OR, AXON_AXIR_OP_BITWISE_XOR, AXON_AXIR_OP_LOGICAL_AND, AXON_AXIR_OP_LOGICAL_OR,
    AXON_AXIR_OP_EQ, AXON_AXIR_OP_NE, AXON_AXIR_OP_LT, AXON_AXIR_OP_LE, AXON_AXIR_OP_GT, AXON_AXIR_OP_GE,
    /* elementwise ternary */
    AXON_AXIR_OP_WHERE,
    /* reductions */
    AXON_AXIR_OP_SUM, AXON_AXIR_OP_PROD, AXON_AXIR_OP_MEAN, AXON_AXIR_OP_AMAX, AXON_AXIR_OP_AMIN, AXON_AXIR_OP_VAR,
    AXON_AXIR_OP_ARGMAX, AXON_AXIR_OP_ARGMIN,
    /* views */
    AXON_AXIR_OP_RESHAPE, AXON_AXIR_OP_PERMUTE, AXON_AXIR_OP_EXPAND, AXON_AXIR_OP_SLICE, AXON_AXIR_OP_SELECT,
    AXON_AXIR_OP_SQUEEZE, AXON_AXIR_OP_UNSQUEEZE,
    /* copies */
    AXON_AXIR_OP_CONTIGUOUS, AXON_AXIR_OP_CAT,
    /* library */
    AXON_AXIR_OP_MM, AXON_AXIR_OP_BMM, AXON_AXIR_OP_ADDMM, AXON_AXIR_OP_SOFTMAX, AXON_AXIR_OP_LOG_SOFTMAX,
    AXON_AXIR_OP_LAYER_NORM, AXON_AXIR_OP_RMS_NORM, AXON_AXIR_OP_EMBEDDING, AXON_AXIR_OP_GATHER,
    AXON_AXIR_OP_INDEX_SELECT, AXON_AXIR_OP_SDPA, AXON_AXIR_OP_SDPA_LSE, AXON_AXIR_OP_SDPA_BACKWARD,
    /* library, training: the backward kernels, the loss, dropout (which draws random numbers, as sdpa with dropout
     * does) and philox_state (where a draw's random numbers came from, for a backward that draws them again) */
    AXON_AXIR_OP_SOFTMAX_BACKWARD, AXON_AXIR_OP_LOG_SOFTMAX_BACKWARD, AXON_AXIR_OP_LAYER_NORM_BACKWARD,
    AXON_AXIR_OP_RMS_NORM_BACKWARD, AXON_AXIR_OP_EMBEDDING_BACKWARD, AXON_AXIR_OP_NLL_LOSS,
    AXON_AXIR_OP_NLL_LOSS_BACKWARD, AXON_AXIR_OP_NLL_LOSS_LOG_SOFTMAX_BACKWARD, AXON_AXIR_OP_DROPOUT,
    AXON_AXIR_OP_PHILOX_STATE,
    /* library, in place: writes into a parameter's storage (a static KV cache's update) */
    AXON_AXIR_OP_INDEX_COPY_INTO,
    /* call */
    AXON_AXIR_OP_FUSED,
    AXON_AXIR_OP_COUNT
} axon_axir_op_t;

/* Static text name of op ("add"); "invalid" outside the enum. */
AXON_API const char *axon_axir_op_name(axon_axir_op_t op);
/* The op called `name` (len bytes, not NUL-terminated), or AXON_AXIR_OP_INVALID. */
AXON_API axon_axir_op_t axon_axir_op_lookup(const char *name, size_t len);
/* The op's class; AXON_AXIR_CLASS_CONSTANT for AXON_AXIR_OP_INVALID. */
AXON_API axon_axir_op_class_t axon_axir_op_class(axon_axir_op_t op);
/* The op's operand count range (max -1: unbounded) and result count (-1: the callee's, for fused). 0 for an op
 * outside the enum, 1 otherwise. */
AXON_API int axon_axir_op_arity(axon_axir_op_t op, int *min_operands, int *max_operands, int *num_results);

/* ---- Attributes ---------------------------------------------------------------------------------------------- */

typedef enum axon_axir_attr_kind {
    AXON_AXIR_ATTR_INT = 0,
    AXON_AXIR_ATTR_FLOAT = 1,
    AXON_AXIR_ATTR_BOOL = 2,
    AXON_AXIR_ATTR_STRING = 3,
    AXON_AXIR_ATTR_DTYPE = 4,
    AXON_AXIR_ATTR_LIST = 5              /* of dims: ints, or symbolic expressions (reshape's shape) */
} axon_axir_attr_kind_t;

typedef struct axon_axir_attr {
    const char *name;
    axon_axir_attr_kind_t kind;
    int64_t i;                           /* INT, BOOL (0 or 1) */
    double f;                            /* FLOAT */
    const char *s;                       /* STRING (NUL-terminated; may not contain NUL) */
    axon_dtype_t dtype;                  /* DTYPE */
    int count;                           /* LIST */
    const axon_axir_dim_t *items;        /* LIST */
} axon_axir_attr_t;

/* ---- Graph --------------------------------------------------------------------------------------------------- */

struct axon_axir_node;
struct axon_axir_use;

typedef struct axon_axir_value {
    const char *name;                    /* without the '%' */
    axon_axir_type_t type;
    struct axon_axir_node *def;          /* NULL for a function parameter */
    int index;                           /* parameter index, or result index within def */
    int32_t id;                          /* unique within the function; dense from 0 */
    int num_uses;                        /* derived: operand slots and return slots that name this value */
} axon_axir_value_t;

typedef struct axon_axir_node {
    axon_axir_op_t op;
    const char *callee;                  /* AXON_AXIR_OP_FUSED: the kernel function's name; NULL otherwise */
    int num_operands;
    axon_axir_value_t **operands;
    int num_results;
    axon_axir_value_t **results;
    int num_attrs;
    axon_axir_attr_t *attrs;             /* sorted by name, unique */
    int line, col;                       /* where the parser read it; 0 for nodes a pass made */
    int32_t id;                          /* unique within the function */
    struct axon_axir_node *prev, *next;  /* program order */
} axon_axir_node_t;

typedef struct axon_axir_func {
    const char *name;                    /* without the '@' */
    int is_kernel;                       /* declared with `kernel` (a fused group), else `func` */
    int num_params;
    axon_axir_value_t **params;
    int num_results;
    axon_axir_type_t *result_types;      /* the signature's result types */
    axon_axir_value_t **returns;         /* the values the `return` statement names, num_results of them */
    axon_axir_node_t *first, *last;      /* the body, in program order */
    int num_symbols;
    const char **symbols;                /* symbol names, indexed by axon_sym_expr_t.var */
    int32_t next_value_id, next_node_id;
    int line, col;
} axon_axir_func_t;

typedef struct axon_axir_module axon_axir_module_t;   /* opaque: the arena and the function list */

/* Where and why text or a module is malformed. line and col are 1-based; 0 when there is no location (a module that
 * a pass built). message has no location prefix; axon_axir_diag_format adds "axir:LINE:COL: ". */
typedef struct axon_axir_diag {
    int line, col;
    char message[512];
} axon_axir_diag_t;

/* Writes "axir:LINE:COL: message" (or just the message without a location) into buf (size bytes, always
 * NUL-terminated). Returns buf. */
AXON_API char *axon_axir_diag_format(const axon_axir_diag_t *d, char *buf, size_t size);

/* ---- Module life cycle, parse, print, verify ----------------------------------------------------------------- */

/* An empty module (version AXON_AXIR_VERSION). AXON_ERROR_OUT_OF_MEMORY if the arena cannot be made. */
AXON_API axon_status_t axon_axir_module_create(axon_axir_module_t **out);
/* Frees m and everything in it. NULL is a no-op. */
AXON_API void axon_axir_module_destroy(axon_axir_module_t *m);

AXON_API int axon_axir_module_num_funcs(const axon_axir_module_t *m);
AXON_API axon_axir_func_t *axon_axir_module_func(const axon_axir_module_t *m, int index);
/* The function called name, or NULL. */
AXON_API axon_axir_func_t *axon_axir_module_find(const axon_axir_module_t *m, const char *name);

/* Parses len bytes of text (need not be NUL-terminated). On success *out is a new module that passed
 * axon_axir_verify. On failure returns AXON_ERROR_INVALID_ARG, *out is NULL and diag (if not NULL) says where and why.
 * Never reads past len, never crashes on any input. */
AXON_API axon_status_t axon_axir_parse(const char *text, size_t len, axon_axir_module_t **out, axon_axir_diag_t *diag);

/* The canonical text of m, malloc'd and NUL-terminated, in *text (caller frees with free()); *len (if not NULL) is
 * its length. AXON_ERROR_OUT_OF_MEMORY on allocation failure. */
AXON_API axon_status_t axon_axir_print(const axon_axir_module_t *m, char **text, size_t *len);
/* The canonical text of one function. */
AXON_API axon_status_t axon_axir_print_func(const axon_axir_module_t *m, const axon_axir_func_t *f, char **text,
                                            size_t *len);

/* AXON_OK if m is well formed (docs/axir.md): unique names, defs before uses, operand counts, dtypes, attributes,
 * result types equal to the inferred ones, symbols bound by parameters, fused callees that exist with matching
 * signatures. Otherwise AXON_ERROR_INVALID_ARG with the first problem in diag, located at the node's line and col. */
AXON_API axon_status_t axon_axir_verify(const axon_axir_module_t *m, axon_axir_diag_t *diag);

/* ---- Types and symbols --------------------------------------------------------------------------------------- */

/* The AXIR spelling of a dtype ("f32", "bf16", "bool"); "invalid" outside the enum. */
AXON_API const char *axon_axir_dtype_name(axon_dtype_t d);
/* 1 and *out set if name (len bytes) is a dtype spelling, else 0. */
AXON_API int axon_axir_dtype_lookup(const char *name, size_t len, axon_dtype_t *out);

/* A simplified expression equal to e (constants folded, terms collected), allocated in m. Two expressions are equal
 * for every binding when their simplified forms are structurally equal (axon_sym_equal); the converse need not hold,
 * so a verifier that finds them unequal reports a mismatch only when both are static. */
AXON_API const axon_sym_expr_t *axon_sym_simplify(axon_axir_module_t *m, const axon_sym_expr_t *e);
/* 1 if a and b are structurally equal after simplification (both dims static and equal, or both symbolic). */
AXON_API int axon_axir_dim_equal(axon_axir_module_t *m, axon_axir_dim_t a, axon_axir_dim_t b);
/* Evaluates e with symbol k = values[k]. AXON_ERROR_INVALID_ARG for a division by zero or a var outside nvalues. */
AXON_API axon_status_t axon_sym_eval(const axon_sym_expr_t *e, const int64_t *values, int nvalues, int64_t *out);

/* Builders for expressions, allocated in m. NULL on allocation failure. */
AXON_API const axon_sym_expr_t *axon_sym_const(axon_axir_module_t *m, int64_t value);
AXON_API const axon_sym_expr_t *axon_sym_var(axon_axir_module_t *m, int32_t var);
AXON_API const axon_sym_expr_t *axon_sym_binary(axon_axir_module_t *m, axon_sym_kind_t kind,
                                                const axon_sym_expr_t *lhs, const axon_sym_expr_t *rhs);

/* ---- Builders, for passes and for front ends that do not go through text ------------------------------------- */

/* A new empty function; NULL on allocation failure or if the name is taken. */
AXON_API axon_axir_func_t *axon_axir_func_add(axon_axir_module_t *m, const char *name, int is_kernel);
/* The index of symbol `name` in f, adding it if new; -1 on allocation failure. */
AXON_API int32_t axon_axir_func_symbol(axon_axir_module_t *m, axon_axir_func_t *f, const char *name);
/* Appends a parameter. name NULL picks a fresh one. */
AXON_API axon_axir_value_t *axon_axir_func_add_param(axon_axir_module_t *m, axon_axir_func_t *f, const char *name,
                                                     const axon_axir_type_t *type);
/* Sets the return values (and result types, from their types). */
AXON_API axon_status_t axon_axir_func_set_returns(axon_axir_module_t *m, axon_axir_func_t *f, int n,
                                                  axon_axir_value_t *const *values);

/* A new node, inserted before `before` (appended when NULL), with fresh result values of the given types (names
 * picked fresh: "%<id>"). attrs are copied and sorted. callee only for AXON_AXIR_OP_FUSED. NULL on allocation
 * failure. Does not verify. */
AXON_API axon_axir_node_t *axon_axir_node_create(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *before,
                                                 axon_axir_op_t op, const char *callee, int num_operands,
                                                 axon_axir_value_t *const *operands, int num_results,
                                                 const axon_axir_type_t *result_types, int num_attrs,
                                                 const axon_axir_attr_t *attrs);
/* Unlinks n from f's body. Its results must have no uses left (AXON_ERROR_MISUSE otherwise). A result whose num_uses
 * is 0 is taken at its word, so that erasing dead nodes stays linear: the builders keep num_uses current; after
 * rewiring operands by hand, call axon_axir_func_recompute_uses first. */
AXON_API axon_status_t axon_axir_node_erase(axon_axir_func_t *f, axon_axir_node_t *n);
/* Replaces every use of `from` (operands and returns) in f with `to`. */
AXON_API void axon_axir_replace_uses(axon_axir_func_t *f, axon_axir_value_t *from, axon_axir_value_t *to);
/* Recomputes the derived num_uses of every value in f. */
AXON_API void axon_axir_func_recompute_uses(axon_axir_func_t *f);

/* The attribute called name on n, or NULL. */
AXON_API const axon_axir_attr_t *axon_axir_node_attr(const axon_axir_node_t *n, const char *name);

/* 1 if n draws random numbers when it runs: a dropout, or an sdpa / sdpa_lse whose dropout_p is above 0. */
AXON_API int axon_axir_node_draws(const axon_axir_node_t *n);
/* sdpa_backward's operands are (dout, q, k, v, out, lse[, mask][, seed, offset]): the forward's Philox seed and offset
 * come last when its dropout_p is above 0. The index of the mask operand, or -1 when there is none. */
AXON_API int axon_axir_sdpa_backward_mask(const axon_axir_node_t *n);

/* Copies len bytes of s into m's arena (NUL-terminated). NULL on allocation failure. */
AXON_API const char *axon_axir_strdup(axon_axir_module_t *m, const char *s, size_t len);

AXON_EXTERN_C_END

#endif
