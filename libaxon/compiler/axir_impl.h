/* AXIR internals shared by axir_*.c: the module's arena, a growable text buffer, the op table's rows, and the
 * symbolic-expression helpers the parser, printer and verifier use. Never included outside libaxon/compiler/. */
#ifndef AXON_AXIR_IMPL_H
#define AXON_AXIR_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "axon/axir.h"

/* Limits that keep hostile text from exhausting the stack or memory (docs/axir.md, "Limits"). */
#define AXIR_MAX_NAME 256          /* bytes in a name, after its sigil */
#define AXIR_MAX_DIM_DEPTH 32      /* parenthesis nesting inside one dimension */
#define AXIR_MAX_DIM_OPS 64        /* binary operators inside one dimension */
#define AXIR_MAX_LIST 64           /* items in a list attribute */
#define AXIR_MAX_STRING 4096       /* bytes in a string attribute */
#define AXIR_HUGE_END (INT64_C(1) << 62) /* a slice end at or above this means "to the end" */

/* ---- the arena and the module (axir_module.c) ---- */

struct axir_chunk;

struct axon_axir_module {
    struct axir_chunk *chunks;     /* newest first */
    char *cur, *end;               /* free space in the newest chunk */
    int num_funcs, cap_funcs;
    axon_axir_func_t **funcs;      /* malloc'd; the functions themselves live in the arena */
    /* Per function (same index): the largest all-digit value name it has, so that a fresh "%<n>" costs O(1) rather
     * than a scan of the function; -2 until first needed (axir_build.c). Names set by hand bypass it, and a clash
     * that causes is caught by the verifier. */
    int64_t *max_numeric_name;
};

/* size zeroed bytes, 16-byte aligned, in m's arena; NULL on allocation failure. */
void *axir_alloc(axon_axir_module_t *m, size_t size);
/* Appends an existing function object to m's list. */
axon_status_t axir_module_append(axon_axir_module_t *m, axon_axir_func_t *f);

/* ---- text buffer (axir_print.c) ---- */

typedef struct axir_buf {
    char *data;
    size_t len, cap;
    int oom;                       /* an append failed; data holds what fit */
} axir_buf_t;

void axir_buf_put(axir_buf_t *b, const char *s, size_t n);
void axir_buf_puts(axir_buf_t *b, const char *s);
void axir_buf_printf(axir_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void axir_print_dim(axir_buf_t *b, const axon_axir_func_t *f, axon_axir_dim_t d);
void axir_print_expr(axir_buf_t *b, const axon_axir_func_t *f, const axon_sym_expr_t *e);
void axir_print_type(axir_buf_t *b, const axon_axir_func_t *f, const axon_axir_type_t *t);
/* A double as AXIR prints it: shortest round-tripping %g, always with '.' or an exponent; inf, -inf, nan. */
void axir_print_float(axir_buf_t *b, double v);
/* The type as text into out (size bytes, truncated); for messages. */
const char *axir_type_str(const axon_axir_func_t *f, const axon_axir_type_t *t, char *out, size_t size);

/* ---- diagnostics (axir_module.c) ---- */

/* Sets d (if not NULL) and this thread's error to "axir:LINE:COL: message"; returns AXON_ERROR_INVALID_ARG. */
axon_status_t axir_diag(axon_axir_diag_t *d, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
axon_status_t axir_vdiag(axon_axir_diag_t *d, int line, int col, const char *fmt, va_list ap);

/* ---- the op table (axir_ops.c) ---- */

/* What dtypes an op's (first) operand may have. */
typedef enum axir_dtypes {
    AXIR_DT_ANY = 0,
    AXIR_DT_FLOAT,                 /* f16, bf16, f32, f64 */
    AXIR_DT_NUMERIC,               /* any but bool (complex included) */
    AXIR_DT_REAL,                  /* integers and floats: no bool, no complex */
    AXIR_DT_INT_BOOL,              /* integers and bool */
    AXIR_DT_INT,                   /* integers (indices) */
    AXIR_DT_ORDERED                /* anything but complex: integers, floats and bool compare and order */
} axir_dtypes_t;

enum { AXIR_ATTR_OPTIONAL = 0, AXIR_ATTR_REQUIRED = 1 };

typedef struct axir_attr_spec {
    const char *name;
    unsigned kinds;                /* bit (1u << axon_axir_attr_kind_t) per accepted kind */
    int required;
} axir_attr_spec_t;

#define AXIR_MAX_ATTR_SPECS 4

typedef struct axir_op_info {
    axon_axir_op_t op;
    const char *name;
    axon_axir_op_class_t cls;
    int min_operands, max_operands;     /* max -1: unbounded */
    int num_results;                    /* -1: the callee's */
    axir_dtypes_t dtypes;
    int result_bool;                    /* elementwise: the result dtype is bool */
    axir_attr_spec_t attrs[AXIR_MAX_ATTR_SPECS];
} axir_op_info_t;

/* The row for op; NULL outside the enum (AXON_AXIR_OP_INVALID included). */
const axir_op_info_t *axir_op_info(axon_axir_op_t op);
int axir_dtype_ok(axir_dtypes_t set, axon_dtype_t d);
const char *axir_dtypes_text(axir_dtypes_t set);

/* ---- symbolic expressions (axir_sym.c) ---- */

/* Total order on expressions by structure: kind, value, var, then operands. */
int axir_sym_compare(const axon_sym_expr_t *a, const axon_sym_expr_t *b);
/* 1 if e mentions no symbol. */
int axir_sym_is_const(const axon_sym_expr_t *e);
/* 1 if e contains a floor division or modulo (equality then cannot be decided by comparing forms). */
int axir_sym_has_div(const axon_sym_expr_t *e);
/* e with var k replaced by map[k] (a dim of another function); NULL on allocation failure or a var outside n. */
const axon_sym_expr_t *axir_sym_subst(axon_axir_module_t *m, const axon_sym_expr_t *e, const axon_axir_dim_t *map,
                                      int n);
/* The dim as an expression (a constant for a static dim). */
const axon_sym_expr_t *axir_dim_expr(axon_axir_module_t *m, axon_axir_dim_t d);
/* A dim from an expression: static when it simplifies to a constant. */
axon_axir_dim_t axir_dim_from_expr(axon_axir_module_t *m, const axon_sym_expr_t *e);
axon_axir_dim_t axir_dim_static(int64_t size);

/* ---- type inference (axir_infer.c), used by the verifier ---- */

typedef struct axir_infer_ctx {
    axon_axir_module_t *scratch;          /* arena for the expressions inference makes; freed after verify */
    const axon_axir_module_t *m;
    const axon_axir_func_t *f;
    const char *op;                       /* the op's name, prefixed to messages */
    char msg[400];                        /* why inference failed */
} axir_infer_ctx_t;

/* n's result types into out (n->num_results entries, which the caller has checked against the op table), from its
 * operands' types and attributes; out starts as the declared types, and dims the op leaves open (a const's shape,
 * iota's length) keep them. 0 with c->msg set when the operands or attributes are wrong for the op. Attributes have
 * been checked against the op's schema. Not for fused (the verifier checks calls against the callee). */
int axir_infer(axir_infer_ctx_t *c, const axon_axir_node_t *n, axon_axir_type_t *out);
/* c->msg = "<op>: " + the formatted text; returns 0. */
int axir_infer_fail(axir_infer_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- builders' internals (axir_build.c) ---- */

/* A new value of f with the given name (an arena string; NULL picks a fresh number) and the next id. */
axon_axir_value_t *axir_value_new(axon_axir_module_t *m, axon_axir_func_t *f, const char *name,
                                  const axon_axir_type_t *type, axon_axir_node_t *def, int index);
/* Links n into f's body before `before` (at the end when NULL). */
void axir_node_link(axon_axir_func_t *f, axon_axir_node_t *n, axon_axir_node_t *before);
/* A sorted deep copy of attrs in m's arena; NULL on allocation failure or when num_attrs is 0. */
axon_axir_attr_t *axir_attrs_copy(axon_axir_module_t *m, int num_attrs, const axon_axir_attr_t *attrs);

/* ---- names ---- */

/* 1 if s is a valid value or function name after its sigil: [A-Za-z0-9_.]+ of at most AXIR_MAX_NAME bytes. */
int axir_name_ok(const char *s);
/* 1 if s is a valid symbol: [A-Za-z_][A-Za-z0-9_.]*, not a dtype spelling. */
int axir_symbol_name_ok(const char *s);

#endif
