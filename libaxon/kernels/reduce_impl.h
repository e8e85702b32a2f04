/* What the reduction files share: the op description the launch decides (reduce.c), the per-accumulator-type folds
 * (reduce_ops.c) and the plan the executor runs (reduce_exec.c). Never installed.
 *
 * Every reduction is "load into the work type W (float, double or int64), fold blocks, merge partial states, finish":
 *   - a fold turns one contiguous block of W values into a state, with 32 independent lanes so the compiler
 *     vectorizes it and float error stays per-lane small;
 *   - merges combine states in a fixed pairwise order (a binary cascade), which keeps sums accurate and makes the
 *     result depend only on where blocks start, never on which thread ran them;
 *   - the vector forms (vfold, vmerge, vfinish) apply the same op lane-wise to rows, for reductions over an outer
 *     dimension, where consecutive memory belongs to different outputs. */
#ifndef AXON_KERNELS_REDUCE_IMPL_H
#define AXON_KERNELS_REDUCE_IMPL_H

#include <stdint.h>

#include "axon/reduce.h"
#include "axon/stream.h"
#include "kernels_impl.h"

/* Elements per fold: large enough to amortize a state merge, small enough (16 KiB of double) to stay in L1. */
#define RD_BLOCK 2048
/* Rows an outer reduction folds into one vector before it enters the cascade. */
#define RD_ROW_BLOCK 64
/* Lanes of the outer reduction's vectors: rows are read in runs of up to 4-8 KiB, long enough for the prefetcher
 * (512-byte runs at a large stride measured at half the bandwidth of a sequential read). */
#define RD_VEC 1024
/* A lane dimension this narrow whose rows lie back to back folds several rows as one (rd_args_t.group), up to
 * RD_GROUP_LANES lanes: one lane-wise pass per row of 2 values (sum(1) of [B, T, 2], a complex sum's float pairs)
 * cost a loop's setup per pair, 9x torch CPU's time. */
#define RD_NARROW_LANES 16
#define RD_GROUP_LANES 64
/* Levels of a cascade: 2^40 blocks is more than any tensor; deeper merges fold into the top level. */
#define RD_LEVELS 40

/* The op as the folds see it: a map applied to each element, then a combine. */
typedef enum rd_kind {
    RD_SUM,          /* x, + */
    RD_PROD,         /* x, * */
    RD_MAX,          /* x, max with NaN */
    RD_MIN,
    RD_NZ_SUM,       /* x != 0, + */
    RD_NZ_MAX,       /* x != 0, max (ANY) */
    RD_NZ_MIN,       /* x != 0, min (ALL) */
    RD_ABS_SUM,      /* |x|, + */
    RD_SQ_SUM,       /* x^2, + */
    RD_ABS_MAX,      /* |x|, max with NaN */
    RD_ABS_MIN,
    RD_POW_SUM,      /* |x|^p, + */
    RD_EXP_SUM,      /* exp(x - p), +: the sum inside RD_LSE's fold, never an op's kind */
    RD_NAN_SUM,      /* x, or 0 for a NaN, + */
    RD_VAR,          /* state (n, mean, m2) */
    RD_LSE,          /* state (shift, sum of exp(x - shift)) */
    RD_XOR,          /* x, ^ (int64 work only) */
    RD_KIND_COUNT
} rd_kind_t;

/* What to do with the folded value at the end. */
typedef enum rd_finish {
    RD_FIN_NONE,
    RD_FIN_MEAN,     /* / n */
    RD_FIN_SQRT,
    RD_FIN_ROOT,     /* ^(1/p) */
    RD_FIN_VAR,      /* m2 / max(0, n - correction) */
    RD_FIN_STD,
    RD_FIN_LSE,      /* log(sum) + shift */
} rd_finish_t;

/* Work types. */
typedef enum rd_work { RD_W_F32, RD_W_F64, RD_W_I64, RD_W_COUNT } rd_work_t;

typedef struct rd_op {
    rd_kind_t kind;
    rd_finish_t fin;
    rd_work_t work;
    double p, correction;
} rd_op_t;

typedef union rd_val {
    float f;
    double d;
    int64_t i;
} rd_val_t;

/* A partial result. Simple kinds use a; RD_VAR uses n, a (mean), b (m2); RD_LSE a (shift), b (sum). */
typedef struct rd_state {
    rd_val_t a, b;
    int64_t n;
} rd_state_t;

/* The folds of one work type. x, acc and rows hold W values. */
typedef struct rd_work_ops {
    axon_dtype_t dtype;                                                         /* W as a dtype */
    void (*init)(const rd_op_t *op, rd_state_t *st);                            /* the empty state */
    void (*fold)(const rd_op_t *op, rd_state_t *st, const void *x, int64_t n);  /* st = state of x[0..n), n >= 1 */
    void (*merge)(const rd_op_t *op, rd_state_t *a, const rd_state_t *b);       /* a = a then b */
    void (*finish)(const rd_op_t *op, const rd_state_t *st, int64_t count, void *out); /* one W result */
    /* Lane-wise, simple kinds only: acc[j] = identity; acc[j] = acc[j] op map(row[j]); a[j] = a[j] op b[j];
     * acc[j] = finish(acc[j]). */
    void (*vinit)(const rd_op_t *op, void *acc, int64_t n);
    void (*vfold)(const rd_op_t *op, void *acc, const void *row, int64_t n);
    void (*vmerge)(const rd_op_t *op, void *a, const void *b, int64_t n);
    void (*vfinish)(const rd_op_t *op, void *acc, int64_t n, int64_t count);
    /* Simple kinds: out[r] = fold(row r).a for `rows` rows of n (1 <= n <= RD_BLOCK) contiguous W values, `pitch`
     * bytes apart: one block per row, so the same value the cascade over that row gives, without a call per row. */
    void (*fold_rows)(const rd_op_t *op, void *out, const char *x, int64_t pitch, int64_t rows, int64_t n);
    /* vfold of `rows` rows of n W values, `pitch` bytes apart, in order: one call for a block of short rows. */
    void (*vfold_rows)(const rd_op_t *op, void *acc, const char *rows, int64_t pitch, int64_t nrows, int64_t n);
} rd_work_ops_t;

extern const rd_work_ops_t axon_rd_work_ops[RD_W_COUNT];

static inline int rd_is_complex(axon_dtype_t d) { return d == AXON_COMPLEX64 || d == AXON_COMPLEX128; }

/* axon_kernel_reduce's PROD and LOGSUMEXP with a complex out, once its arguments are checked (reduce_complex.c). */
axon_status_t axon_rd_complex(axon_stream_t s, axon_reduce_op_t op, const axon_tensor_t *out, const axon_tensor_t *in);

/* 1 if kind has a lane-wise form (every kind but RD_VAR and RD_LSE). */
static inline int rd_kind_is_simple(rd_kind_t k) { return k != RD_VAR && k != RD_LSE; }

/* ---- the plan (reduce.c builds it at launch, reduce_exec.c runs it) ---- */

typedef enum rd_path {
    RD_PATH_EMPTY,   /* nothing to reduce: every output is finish(init) */
    RD_PATH_INNER,   /* one output at a time over its elements: reduced dims include in's fastest */
    RD_PATH_SPLIT,   /* few outputs, many elements: fixed chunks of each output, partial states, pairwise merge */
    RD_PATH_OUTER,   /* a kept dim is in's fastest: rows folded lane-wise into vectors of outputs */
} rd_path_t;

enum { RD_HALF_NONE, RD_HALF_BF16, RD_HALF_F16 };

/* rd_lanes_f32's RD_SUM of n float16 or bfloat16 values widened in registers (reduce_half.c): the same bits as
 * converting them into a float block and folding it. */
typedef float (*rd_half_fold_fn)(const void *x, int64_t n);
/* The fold for a->half_sum on this CPU, or NULL (no AVX2, or float16 without F16C). */
rd_half_fold_fn axon_rd_half_fold(int half_sum);

typedef struct rd_args {
    rd_op_t op;
    rd_path_t path;
    const char *name;
    axon_convert_fn pre;         /* NULL, or in -> bool before `load` (ANY, ALL, COUNT_NONZERO on floats) */
    axon_convert_fn load;        /* in (or bool) -> W; NULL when in's dtype is W (rows are read in place) */
    axon_convert_fn store;       /* W -> out */
    size_t in_esize, w_esize, out_esize;
    int64_t count;               /* elements per output */
    int64_t nout;
    /* Kept dims: tensor 0 is in (kept sizes, in's strides), tensor 1 is out; walked in in's memory order, so for
     * RD_PATH_OUTER dimension 0 is the lane dimension. */
    axon_iter_t kept;
    /* Reduced dims over in (reduced sizes, in's strides), in memory order; its data[0] minus in->data is the
     * offset that flipping negative strides added, applied to every output's base. */
    axon_iter_t red;
    int64_t red_shift;           /* bytes */
    int64_t nchunks;             /* RD_PATH_SPLIT: chunks per output; RD_PATH_OUTER: row chunks per item */
    int64_t chunk;               /* elements (SPLIT) or rows (OUTER) per chunk */
    int64_t lanes;               /* RD_PATH_OUTER: lanes per item (<= RD_VEC), times group */
    int64_t items;               /* RD_PATH_OUTER: (kept run, lane block) pairs */
    int64_t group;               /* RD_PATH_OUTER: rows of in per row of red (1, or red folds them as one) */
    int64_t rows;                /* RD_PATH_OUTER: rows of red, count / group */
    int half_sum;                /* RD_SUM of float16 (RD_HALF_F16) or bfloat16 (RD_HALF_BF16) into float32 lanes:
                                    OUTER widens rows inline (reduce_exec.c) */
    rd_half_fold_fn half_fold;   /* NULL, or half_sum's blocks folded from storage (INNER, SPLIT) */
} rd_args_t;

/* Chunking limits, fixed so that the plan never depends on the thread count. */
#define RD_MAX_PARTIALS 256          /* SPLIT: partial states per launch */
#define RD_SPLIT_MIN ((int64_t)1 << 15)  /* SPLIT: elements per chunk at least */
#define RD_PARTIAL_BYTES (48 * 1024) /* OUTER: stack for partial vectors */

/* The kernel every reduction launch enqueues (reduce_exec.c). */
axon_status_t axon_rd_kernel(const void *args, const axon_exec_t *ex);

/* W of a dtype's accumulation: float64 -> F64, other floating -> F32, integer and bool -> I64. */
static inline rd_work_t rd_work_of(axon_dtype_t d) {
    return d == AXON_FLOAT64 ? RD_W_F64 : axon_dtype_is_floating(d) ? RD_W_F32 : RD_W_I64;
}

#endif
