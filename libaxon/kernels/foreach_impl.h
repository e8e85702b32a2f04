/* What the multi-tensor kernels share (foreach_list.c is the engine; foreach_ops.c, foreach_norm.c, optim_adam.c
 * and optim_sgd.c are its families). Never installed.
 *
 * A command's argument block is an fe_cmd_t header followed by variable-length arrays for its chunk of m tensors:
 *   int64_t start[m + 1]     element offset of tensor i in the chunk's combined range (start[m] = all elements)
 *   double values[m]         only with has_values: a per-tensor number
 *   char *ptr[nlists][m]     list k's data pointer of tensor i (NULL for an absent list)
 * Descriptors are reduced to pointers because every tensor is contiguous and sized like its list-0 (or shape_list)
 * entry: that is what lets ~60-120 tensors fit in one AXON_LAUNCH_MAX_ARGS block. */
#ifndef AXON_KERNELS_FOREACH_IMPL_H
#define AXON_KERNELS_FOREACH_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "axon/foreach.h"
#include "axon/optim.h"
#include "axon/stream.h"
#include "kernels_impl.h"

#define FE_MAX_LISTS 6
#define FE_MAX_NUMBERS 3
/* Elements per block of the families' loops: six 8-byte buffers of 256 fill 12 KiB of L1. */
#define FE_BLOCK 256

typedef struct fe_cmd fe_cmd_t;

/* A running command: its block and the numbers read from device memory when it started. */
typedef struct fe_job {
    const fe_cmd_t *c;
    double num[FE_MAX_NUMBERS];
} fe_job_t;

/* A family's work on elements [lo, hi) of the chunk's tensor i. */
typedef void (*fe_piece_fn)(const fe_job_t *j, int64_t i, int64_t lo, int64_t hi);

/* Per-family parameters, decided on the host. */
typedef struct fe_ops_params {
    axon_foreach_op_t op;
    int arity;                       /* 0 (fill), 1, 2 or 3 */
    int w_list;                      /* the weight / second operand is a list (slot FE_W) */
    double alpha;
} fe_ops_params_t;

typedef struct fe_adam_params {
    double beta1, beta2, weight_decay, eps;
    int amsgrad, maximize, decoupled, has_grad_scale;
} fe_adam_params_t;

typedef struct fe_sgd_params {
    double weight_decay, momentum, dampening;
    int nesterov, maximize, first_step, has_grad_scale;
} fe_sgd_params_t;

struct fe_cmd {
    fe_piece_fn piece;
    int per_tensor;                  /* parallel over tensors, each piece a whole tensor (norms) */
    int nlists;                      /* pointer arrays in the block */
    int has_values;                  /* a per-tensor number array in the block */
    int f64;                         /* compute in double (else float) */
    int skip_num;                    /* index of a number that makes the command a no-op when it is 1.0; -1 none */
    int64_t n;                       /* tensors in this chunk */
    axon_dtype_t dtype[FE_MAX_LISTS];
    const void *num_ptr[FE_MAX_NUMBERS];   /* device numbers read when the command runs; NULL: num_val */
    axon_dtype_t num_dtype[FE_MAX_NUMBERS];
    double num_val[FE_MAX_NUMBERS];
    union {
        fe_ops_params_t ops;
        fe_adam_params_t adam;
        fe_sgd_params_t sgd;
        double ord;
    } p;
};

static inline const int64_t *fe_start(const fe_cmd_t *c) { return (const int64_t *)(const void *)(c + 1); }
static inline const double *fe_values(const fe_cmd_t *c) { return (const double *)(fe_start(c) + c->n + 1); }
static inline char *fe_ptr(const fe_cmd_t *c, int k, int64_t i) {
    char *const *p = (char *const *)(const void *)(fe_values(c) + (c->has_values ? c->n : 0));
    return p[(int64_t)k * c->n + i];
}

/* What a family hands the engine: the header template (piece, nlists, per_tensor, skip_num, numbers, params; the
 * engine sets n, has_values, f64 and dtypes) and the checked lists. */
typedef struct fe_launch {
    const char *name;                /* static op name, for traces and errors */
    fe_cmd_t cmd;
    int64_t n;
    const axon_tensor_t *lists[FE_MAX_LISTS];   /* n descriptors each, or NULL for an absent list */
    int shape_list;                  /* the list whose element counts make the ranges */
    int compute_list;                /* the list whose dtype picks float or double math */
    const double *values;            /* n per-tensor numbers, or NULL */
} fe_launch_t;

/* Check list `lst` (n descriptors, role name for messages) of an op: valid, contiguous, one float dtype, and, when
 * ref is not NULL, each tensor with ref[i]'s sizes (ref_role names it). dst: the list is written. */
axon_status_t axon_fe_check_list(const char *op, const char *role, int64_t n, const axon_tensor_t *lst,
                                 const axon_tensor_t *ref, const char *ref_role, int dst);

/* Check a one-element float tensor (a device number: lr, grad_scale, found_inf, a 0-dim operand). */
axon_status_t axon_fe_check_number(const char *op, const char *role, const axon_tensor_t *t);

/* Number slot k of l: the one-element tensor t, read when the command runs (checked as above), or `value` if t is
 * NULL. */
axon_status_t axon_fe_set_number(fe_launch_t *l, int k, const char *role, const axon_tensor_t *t, double value);

/* Split l's lists into commands of as many tensors as fit and enqueue them. Lists must have been checked. */
axon_status_t axon_fe_submit(axon_stream_t s, const fe_launch_t *l);

/* Elements [off, off + m) of list k's tensor i as the compute type: the memory itself when its dtype is the
 * compute dtype, else converted into buf (FE_BLOCK doubles). */
void *axon_fe_load(const fe_cmd_t *c, int k, int64_t i, int64_t off, int64_t m, void *buf);

/* Where to compute elements [off, off + m) of list k's tensor i that are only written: the memory itself or buf. */
void *axon_fe_out(const fe_cmd_t *c, int k, int64_t i, int64_t off, int64_t m, void *buf);

/* Store v (what axon_fe_load or axon_fe_out returned) back: a conversion when it is a buffer, else nothing. */
void axon_fe_store(const fe_cmd_t *c, int k, int64_t i, int64_t off, int64_t m, const void *v);

#endif
