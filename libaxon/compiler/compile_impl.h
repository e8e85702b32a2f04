/* What the compiler's files share inside libaxon: the passes, the program's layout (steps, values, buffers) and the
 * per-call state of prepare and run. Never installed. docs/compiler.md describes the pipeline and the program. */
#ifndef AXON_COMPILE_IMPL_H
#define AXON_COMPILE_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "axon/compiler.h"
#include "axon/gemm.h"
#include "internal.h"
#include "tier1.h"

/* ---- passes (pass_*.c): each edits f in place and reports a malformed or unsupported graph in diag ---- */

typedef axon_status_t (*compile_pass_fn)(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag);

axon_status_t pass_canonicalize(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag);
axon_status_t pass_dce(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag);
axon_status_t pass_fold(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag);
/* Reorders the body (topologically) so that fusable producer/consumer chains are adjacent (pass_schedule.c). */
axon_status_t pass_schedule(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag);
axon_status_t pass_fuse(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag);
/* softmax(q @ k^T * c [+ mask]) @ v written out as bmm/softmax/bmm becomes one sdpa (pass_attention.c). */
axon_status_t pass_attention(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag);

/* Fills diag (if not NULL) with n's location and the message, sets this thread's error to the same text, returns st. */
axon_status_t compile_diag(axon_axir_diag_t *diag, const axon_axir_node_t *n, axon_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Erases n if none of its results has a use; 1 if it did. Trusts the use counts: passes recompute them once when they
 * start and then edit only through the builders (which keep them), or fix them by hand where they rewire operands. */
int compile_erase_if_dead(axon_axir_func_t *f, axon_axir_node_t *n);

/* The dtype that decides whether tier 0 runs n: the operands' for comparisons, isnan, logical_not and where's
 * branches, the weight's for embedding, else the first result's. */
axon_dtype_t compile_node_dtype(const axon_axir_node_t *n);

/* 1 if a const node holds a 0-d number equal to v (ints and bools compared exactly). */
int compile_const_equals(const axon_axir_node_t *n, double v);

/* ---- op mapping (compile_ops.c): AXIR op -> libaxon kernel op; 0 if none ---- */

int compile_map_unary(const axon_axir_node_t *n, axon_axir_op_t op, int *out);     /* n may be NULL: gelu = erf form */
int compile_map_binary(const axon_axir_node_t *n, axon_axir_op_t op, int *out);    /* n may be NULL: div = true div */
/* 1 if the op's result is bool and its compute dtype is its operands' (comparisons, logical ops, isnan). */
int compile_op_bool_result(axon_axir_op_t op);
/* 1 for views that keep row-major order (reshape, squeeze, unsqueeze): over contiguous memory, the same bytes. */
int compile_op_restride(axon_axir_op_t op);
/* 1 for matrix products (mm, bmm, addmm). */
int compile_op_product(axon_axir_op_t op);

/* Attribute readers with defaults. */
int64_t compile_attr_int(const axon_axir_node_t *n, const char *name, int64_t dflt);
double compile_attr_float(const axon_axir_node_t *n, const char *name, double dflt);

/* ---- the program (program_build.c) ---- */

#define PROG_NO_BUF (-1)

/* A region of the workspace (or an output buffer) that one value, or one step's scratch, owns from step `def` to step
 * `last`. Its size is the type's, evaluated per binding. */
typedef struct prog_buf {
    axon_axir_type_t type;
    int def, last;
    int output;                  /* >= 0: the caller's output buffer of that index, not the workspace */
} prog_buf_t;

/* What the program knows about one value of the entry function (indexed by value id). */
typedef struct prog_val {
    const axon_axir_value_t *v;  /* NULL for ids no longer in the function */
    int input;                   /* parameter index, or -1 */
    int buf;                     /* its own storage, or PROG_NO_BUF (views, inputs, unused optional results) */
    int contiguous;              /* known row-major at compile time (own storage) */
    int swap12;                  /* own storage laid out with dims 1 and 2 swapped: attention's [B, H, L, E] result
                                    stored as [B, L, H, E], so that the permute and reshape after it are views */
} prog_val_t;

typedef enum prog_step_kind {
    PROG_STEP_NODE = 0,          /* run node */
    PROG_STEP_COPY_OUT = 1       /* copy value into output `output` */
} prog_step_kind_t;

#define PROG_MAX_TEMPS 5

struct fused_prog;

typedef struct prog_step {
    prog_step_kind_t kind;
    const axon_axir_node_t *node;
    int temp[PROG_MAX_TEMPS];    /* step-local scratch buffers (contiguous copies, lse), PROG_NO_BUF if unused */
    int value, output;           /* COPY_OUT */
    const struct fused_prog *fused;   /* AXON_AXIR_OP_FUSED */
    /* A matrix product's step: the fused group at step `epilogue` (0: none) may run as its epilogue, on each block of
     * rows as the product finishes it; only view steps lie between (program_epilogue.c). */
    int epilogue;
} prog_step_t;

struct axon_program {
    axon_axir_module_t *module;
    axon_axir_func_t *func;
    int num_inputs, num_outputs, num_symbols;
    int num_values;
    prog_val_t *vals;
    int num_bufs;
    prog_buf_t *bufs;
    int num_steps;
    prog_step_t *steps;
    int num_fused;
    struct fused_prog **fused;
    struct axon_tier1 *tier1;    /* generated C for the fused groups (tier1.h); NULL without fused groups or opts->tier1 */
    int num_draws;               /* the random nodes (dropout), by their `draw` attribute: draws[k] has draw k */
    const axon_axir_node_t **draws;
    /* 1 for the caller's handle plus 1 per run still queued: a queued fused step reads the interpreter's program or
     * calls into tier 1's library, so axon_program_destroy only frees once the last run has executed. */
    atomic_int refs;
};

/* Lowers p->func into steps, values and buffers with their lifetimes (the memory plan). UNSUPPORTED names the first
 * node tier 0 cannot run. */
axon_status_t program_build(axon_program_t *p, axon_axir_diag_t *diag);

/* ---- one call (program_bind.c) ---- */

typedef struct prog_call {
    const axon_program_t *p;
    int64_t *syms;               /* num_symbols */
    size_t *offsets;             /* per buffer: byte offset in the workspace */
    size_t workspace;            /* bytes */
    axon_tensor_t *desc;         /* per value, filled while the steps are enqueued */
    const axon_tensor_t *inputs, *outputs;
    char *ws;
    uint64_t seed;               /* Philox: draw k takes the blocks from draw_offset[k] on (program_run.c) */
    uint64_t *draw_offset;       /* num_draws */
} prog_call_t;

/* Binds the symbols from the inputs (checking them), then lays out the workspace. Free with prog_call_end. */
axon_status_t prog_call_begin(const axon_program_t *p, int num_inputs, const axon_tensor_t *inputs, prog_call_t *c);
void prog_call_end(prog_call_t *c);
/* The sizes of type t under c's binding. INVALID_ARG for a negative size or a division by zero. */
axon_status_t prog_eval_type(const prog_call_t *c, const axon_axir_type_t *t, int64_t *sizes);
/* A contiguous descriptor. */
void prog_contiguous(axon_tensor_t *t, void *data, axon_dtype_t dtype, int ndim, const int64_t *sizes);

/* ---- steps (program_ops.c, program_views.c, fused_*.c) ---- */

axon_status_t prog_run_node(prog_call_t *c, axon_stream_t s, const prog_step_t *st);
/* Describes n's results that have storage of their own (c->desc), as prog_run_node does before it launches n. */
axon_status_t prog_bind_results(prog_call_t *c, const axon_axir_node_t *n);
/* Fused call node n's operands then results, as its group (interpreter or tier 1) takes them; ops holds at least
 * FUSED_MAX_INPUTS + FUSED_MAX_OUTPUTS. The tier-1 function for it once loaded, else NULL. */
axon_tier1_fn prog_group_operands(const prog_call_t *c, const axon_axir_node_t *n, axon_tensor_t *ops);
/* Launches matrix-product node n (mm, bmm, addmm) with epilogue epi (NULL: none). */
axon_status_t prog_run_gemm(prog_call_t *c, axon_stream_t s, const axon_axir_node_t *n, const axon_gemm_epilogue_t *epi);
/* Plans the epilogues of p's matrix products (prog_step_t.epilogue; program_epilogue.c). */
void program_plan_epilogues(axon_program_t *p);
/* Runs step i, a matrix product with a planned epilogue, the view steps after it and, where this call's layout
 * allows, its epilogue's group inside the product's command; *next: the first step still to run. */
axon_status_t prog_run_with_epilogue(prog_call_t *c, axon_stream_t s, int i, int *next);
/* Sets dst to a view of src with the given sizes if strides allow one (reshape, squeeze, unsqueeze); 0 if not. */
int prog_restride(const axon_tensor_t *src, int ndim, const int64_t *sizes, axon_tensor_t *dst);
/* View nodes: dst from src by descriptor arithmetic, sizes from the result type. reshape may copy into its own
 * buffer when the source's strides allow no view. */
axon_status_t prog_run_view(prog_call_t *c, axon_stream_t s, const prog_step_t *st);
/* t broadcast to the shape (ndim, sizes) by NumPy's rules: 0 strides for new and size-1 dimensions. */
void prog_broadcast(const axon_tensor_t *t, int ndim, const int64_t *sizes, axon_tensor_t *out);

/* ---- fused groups (fused_build.c, fused_exec.c) ---- */

#define FUSED_MAX_INPUTS 16
#define FUSED_MAX_OUTPUTS 4
#define FUSED_MAX_REGS 32

/* 1 if tier 0's tile interpreter can run node n inside a kernel function (float elementwise ops, masks). */
int fused_can_run(const axon_axir_node_t *n);
/* The float dtype the interpreter computes n in (AXON_FLOAT32 for float32/float16/bfloat16, AXON_FLOAT64), AXON_BOOL
 * for a node on bools only (logical ops), AXON_DTYPE_COUNT if it cannot run n. */
axon_dtype_t fused_work(const axon_axir_node_t *n);
/* How many trailing dimensions n reduces if it can end a fused group (sum, mean, amax, amin of a float operand over
 * trailing dimensions), else 0. */
int fused_reduce_dims(const axon_axir_node_t *n);
/* Compiles kernel function kf into an interpreter program. UNSUPPORTED (in diag) for an op it cannot run. */
axon_status_t fused_build(const axon_axir_func_t *kf, struct fused_prog **out, axon_axir_diag_t *diag);
void fused_destroy(struct fused_prog *fp);
/* Enqueues one fused group: outputs and inputs as the call node's results and operands. */
axon_status_t fused_launch(axon_stream_t s, const struct fused_prog *fp, int num_inputs, const axon_tensor_t *inputs,
                           int num_outputs, const axon_tensor_t *outputs);
/* The same group as the epilogue of a matrix product that one of its inputs reads (axon/gemm.h): fills ctx (at least
 * AXON_GEMM_EPILOGUE_MAX bytes, 16-byte aligned) and *epi. Groups that end in a reduction cannot be one. */
axon_status_t fused_epilogue(const struct fused_prog *fp, int num_inputs, const axon_tensor_t *inputs,
                             int num_outputs, const axon_tensor_t *outputs, void *ctx, axon_gemm_epilogue_t *epi);

#endif
