/* What the attention files share (axon/attention.h): the argument block, the checks (attention_fwd.c), the tile
 * scratch layout and the dropout decisions. attention_tile.h holds the tile code itself, once per compute type.
 * Never installed. */
#ifndef AXON_ATTENTION_IMPL_H
#define AXON_ATTENTION_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "axon/attention.h"
#include "kernels_impl.h"
#include "philox.h"

/* Query rows per forward / dq unit and keys per dk, dv unit; also the other side's block. 64 x 64 tiles keep a
 * unit's working set (a few 16 KiB float tiles) in L2 and give the GEMM calls enough work to pay their overhead. */
#define AT_BLOCK 64
/* Keys per forward block: twice as many, so that the row reductions and rescaling of the online softmax, and the
 * GEMM calls, are spread over more keys (a 64 x 128 score tile still fits L1). The backward uses AT_BLOCK. */
#define AT_KBLOCK (2 * AT_BLOCK)

/* Tiles of at least this many query rows are transposed for the GEMMs that multiply them by K^T or V^T (at_rows_t
 * in attention_tile.h). */
#define AT_TRANSPOSE_ROWS 16

/* One operand: 4 strides in elements (lse uses 3, a broadcast mask has zeros), and its converters to and from the
 * compute type. */
typedef struct at_operand {
    char *data;                  /* NULL = absent */
    int64_t st[4];
    axon_dtype_t dtype;
    size_t es;
    axon_convert_fn ld, st_fn;
} at_operand_t;

/* The tile code a command runs: attention_tile.h's (float32 or float64), the bfloat16 forward or backward on AMX tiles
 * (at_amx_usable, at_amx_bwd_usable), the few-row bfloat16 forward (at_few_usable) or the float32 forward on AVX-512
 * register tiles (at_f32v_usable). */
typedef enum { AT_PATH_FLOAT = 0, AT_PATH_AMX_FWD, AT_PATH_AMX_BWD, AT_PATH_FEW, AT_PATH_F32V } at_path_t;

typedef struct at_args {
    int64_t B, Hq, Hkv, L, S, E, Ev, group;
    double scale, p, keep_scale; /* keep_scale = 1 / (1 - p), or 0 when p == 1 */
    uint64_t seed, offset;
    const int64_t *seed_at, *offset_at; /* read when the command runs (at_resolve_philox), when not NULL */
    int causal, dropout, mask_bool, f64;
    at_path_t path;              /* which tile code runs the command (and so which scratch layout at_run sizes) */
    at_operand_t q, k, v, mask, out, lse, dout, dq, dk, dv;
} at_args_t;

/* What the units of one command share: its arguments, per-slot scratch and the backward's D. */
typedef struct at_job {
    const at_args_t *a;
    char *scratch;
    size_t slot_bytes;
    void *d;                     /* backward: rowsum(dout * out) per (b, h, i), compute type */
    char *dqs;                   /* fused backward: per-slot dq accumulators of dqs_bytes each */
    size_t dqs_bytes;
    atomic_int failed;           /* a GEMM could not allocate its packing buffers */
    uint16_t *kpack, *vpack;     /* AMX: the forward's packed K and V (at_amx_pack), the backward's key and query
                                  * blocks (at_amx_bwd_pack) */
} at_job_t;

/* Checks q, k, v, mask and params and fills a (shapes, compute type, the inputs' operands). op names the call in
 * messages. */
axon_status_t at_prepare(at_args_t *a, const char *op, const axon_tensor_t *q, const axon_tensor_t *k,
                         const axon_tensor_t *v, const axon_tensor_t *mask, const axon_attention_params_t *p);

/* Checks t (dst or src) as `role` of shape want[0..nd) with a float dtype (lse: float32/float64 only) and fills o. */
axon_status_t at_operand(at_operand_t *o, const at_args_t *a, const char *op, const char *role,
                         const axon_tensor_t *t, int nd, const int64_t *want, int is_dst, int is_lse);

/* A decoding step with grouped-query heads (L == 1, group > 1, not causal) recast, once every operand is filled in,
 * as plain multi-head attention with the group's query heads as the rows of one query block: [B, Hq, 1, D] seen as
 * [B, Hkv, group, D] (a head stride is the row stride), so that each key/value block is multiplied once for the
 * whole group instead of once per head. Every row keeps its index n = ((b * Hq + h) * L + i) * S + j, so dropout
 * decisions and the backward's D do not change. */
void at_fold_groups(at_args_t *a);

/* Bytes of tile scratch one worker needs (the largest of the forward and backward layouts). */
size_t at_slot_bytes(const at_args_t *a);

/* The arguments as a command runs them: a's, with seed and offset read from seed_at / offset_at if given. */
static inline at_args_t at_resolve_philox(const at_args_t *a) {
    at_args_t r = *a;
    if (a->seed_at && a->offset_at) r.seed = (uint64_t)*a->seed_at, r.offset = (uint64_t)*a->offset_at;
    return r;
}

/* Runs fn over units with per-slot scratch; OUT_OF_MEMORY (with a message naming op) if the scratch or a GEMM
 * packing buffer could not be allocated. */
axon_status_t at_run(at_job_t *j, axon_pool_t pool, int64_t units, int64_t unit_work, axon_range_fn fn,
                     const char *op);

/* The loops over every score (attention_rows.c), compiled per instruction set; _f32 also serves the half types.
 * at_softmax_update: one online-softmax step for the m x n score tile s (row stride n) with running row maxima mx,
 * sums l and outputs acc (m x ev): s becomes exp(s - new max) (rows whose keys are all masked so far: 0), l and mx
 * are updated and acc rescaled. at_grad_rows: p = exp(p - lse[row]) (the weights), dp = p * (dp - dd[row]) (dS);
 * at_exp_rows: only the weights (dropout's backward applies its factors to both before dS).
 * at_add_rows: s (m x n, row stride lds) += x (row stride ldx, 0 repeats one row). at_transpose: y (d x m, row
 * stride m) = x (m x d, row stride ldx) transposed. */
void at_softmax_update_f32(float *s, int64_t m, int64_t n, float *mx, float *l, float *acc, int64_t ev);
void at_softmax_update_f64(double *s, int64_t m, int64_t n, double *mx, double *l, double *acc, int64_t ev);
void at_grad_rows_f32(float *p, float *dp, int64_t m, int64_t n, const float *lse, const float *dd);
void at_grad_rows_f64(double *p, double *dp, int64_t m, int64_t n, const double *lse, const double *dd);
void at_exp_rows_f32(float *p, int64_t m, int64_t n, const float *lse);
void at_exp_rows_f64(double *p, int64_t m, int64_t n, const double *lse);
void at_transpose_f32(const float *x, int64_t ldx, int64_t m, int64_t d, float *y);
void at_transpose_f64(const double *x, int64_t ldx, int64_t m, int64_t d, double *y);
void at_add_rows_f32(float *s, int64_t lds, int64_t m, int64_t n, const float *x, int64_t ldx);
void at_add_rows_f64(double *s, int64_t lds, int64_t m, int64_t n, const double *x, int64_t ldx);

/* The bfloat16 forward on AMX tiles (attention_amx.c), for query lengths of at least AT_AMX_MIN_ROWS (fewer rows
 * would be mostly padding of the 32-row tiles) and q, k, v in bfloat16 with unit stride along the head dim (head
 * dims are padded to multiples of 32 with zeros), on a CPU with AMX. at_amx_slot_bytes: its scratch per worker;
 * at_amx_pack_bytes: the packed K and V (j->kpack, then j->vpack), which at_amx_pack fills over the pool; then
 * at_amx_forward_range runs the at_amx_units(a) units (32 query rows of one head each). */
#define AT_AMX_MIN_ROWS 16
int at_amx_usable(const at_args_t *a);
size_t at_amx_slot_bytes(const at_args_t *a);
size_t at_amx_pack_bytes(const at_args_t *a);
void at_amx_pack(at_job_t *j, axon_pool_t pool);
int64_t at_amx_units(const at_args_t *a);
void at_amx_forward_range(void *ctx, int64_t begin, int64_t end, int slot);

/* The bfloat16 backward on AMX tiles (attention_amx_bwd.c), for what at_amx_usable takes with dout in bfloat16 with
 * unit stride along Ev. at_amx_bwd_pack lays out key and query blocks into
 * at_amx_bwd_pack_bytes(a) at j->kpack; then at_amx_bwd_kv_range (dk, dv; at_amx_bwd_kv_units of them) and
 * at_amx_bwd_q_range (dq) run independent units with at_amx_bwd_slot_bytes(a) of scratch each. */
int at_amx_bwd_usable(const at_args_t *a);
size_t at_amx_bwd_pack_bytes(const at_args_t *a);
size_t at_amx_bwd_slot_bytes(const at_args_t *a);
void at_amx_bwd_pack(at_job_t *j, axon_pool_t pool);
int64_t at_amx_bwd_kv_units(const at_args_t *a);
int64_t at_amx_bwd_q_units(const at_args_t *a);
void at_amx_bwd_kv_range(void *ctx, int64_t begin, int64_t end, int slot);
void at_amx_bwd_q_range(void *ctx, int64_t begin, int64_t end, int slot);

/* The bfloat16 forward for at most AT_FEW_ROWS query rows (decoding; attention_bf16_few.c; from AT_AMX_MIN_ROWS
 * on, the AMX forward): q, k, v in bfloat16 with unit stride along the head dim, no dropout, on a CPU with
 * AVX512-BF16. One unit per (b, h) of at_few_units, at_few_slot_bytes of scratch each, run by at_few_forward_range. */
#define AT_FEW_ROWS (AT_AMX_MIN_ROWS - 1)
int at_few_usable(const at_args_t *a);
size_t at_few_slot_bytes(const at_args_t *a);
int64_t at_few_units(const at_args_t *a);
void at_few_forward_range(void *ctx, int64_t begin, int64_t end, int slot);

/* The float32 forward on AVX-512 register tiles (attention_f32_avx512.c) for at least AT_AMX_MIN_ROWS query rows
 * (fewer: the tile code's few-row products), q, k, v in float32 with unit stride along head dims of at most 128, no
 * dropout, on a CPU with AVX-512F/BW/DQ/VL. Units as the tile code's (AT_BLOCK query rows of one head), at_f32v_units
 * of them, at_f32v_slot_bytes of scratch each, run by at_f32v_forward_range. */
int at_f32v_usable(const at_args_t *a);
size_t at_f32v_slot_bytes(const at_args_t *a);
int64_t at_f32v_units(const at_args_t *a);
void at_f32v_forward_range(void *ctx, int64_t begin, int64_t end, int slot);

/* Element n of the stream is kept iff its uniform (x >> 8) * 2^-24 is >= p. */
static inline int at_dropout_keep(uint32_t x, double p) { return (double)(x >> 8) * 0x1p-24 >= p; }

#endif
