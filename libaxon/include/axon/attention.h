/* Scaled dot-product attention, fused and tiled (flash-attention style), with its backward.
 *
 *     out[b, h, i, :] = sum_j  dropout(softmax_j(scale * q[b, h, i] . k[b, g(h), j] + mask[b, h, i, j])) v[b, g(h), j]
 *
 * for q [B, Hq, L, E], k [B, Hkv, S, E], v [B, Hkv, S, Ev]. Hq must be a multiple of Hkv; query head h reads key/value
 * head g(h) = h / (Hq / Hkv) (grouped-query attention; Hq == Hkv is plain multi-head attention).
 *
 * Life cycle: fill an axon_attention_params_t, launch the forward, keep its out and lse, launch the backward with
 * the same q, k, v, mask and params. Like every kernel (kernels.h), a launch checks its descriptors on the calling
 * thread, enqueues one command on stream s and returns at once; descriptors are copied at launch, the memory they
 * point at must stay alive until the command has run. Nothing is enqueued on error.
 *
 * Masking: is_causal lets query i see keys j <= i (top-left aligned, as PyTorch). mask (NULL = none) has at most 4
 * dimensions and broadcasts to [B, Hq, L, S] from the right (a dimension of size 1, or a stride of 0, repeats); a
 * bool mask keeps the scores where it is true, a float mask is added to them. Both may be combined. A row whose keys
 * are all masked out (-inf) gives out = 0 and zero gradients, as PyTorch's scaled_dot_product_attention does on CPU;
 * its lse is +inf (so that the backward's exp(score - lse) is 0 for it).
 *
 * Dropout: with dropout_p > 0 each attention weight (b, h, i, j) is kept with probability 1 - dropout_p and scaled
 * by 1 / (1 - dropout_p) (dropout_p == 1 zeroes all). Whether it is kept depends only on (seed, offset) and its index
 * n = ((b * Hq + h) * L + i) * S + j: Philox block offset + n / 4, lane n % 4 gives 32 bits x, u = (x >> 8) * 2^-24,
 * kept iff u >= dropout_p. The backward regenerates the same decisions instead of storing them. A launch consumes
 * axon_attention_philox_blocks(B, Hq, L, S) blocks; the caller advances its offset by that much.
 *
 * Algorithm: never the whole L x S matrix. Forward units of 64 query rows run in parallel over the device's pool, each
 * walking the keys in blocks of 128 with an online softmax (a decoding step with grouped-query heads, L == 1 and not
 * causal, takes a group's heads as the rows of one unit, so each key block is multiplied once per group). The backward
 * (flash-attention-2: D = rowsum(dout * out), weights recomputed from lse, dS = P * (dP - D)) runs one unit per (batch,
 * kv head) when there are enough of them for the pool, else separate passes for dk, dv (units of 64 keys) and dq (units
 * of 64 query rows). Tile products go to libaxon's GEMM (its BLAS single-threaded per worker, or the portable code;
 * tiles of a few query rows to its few-row float32 GEMM), with tiles of many query rows transposed first for the
 * products with K^T and V^T. The loops over the scores are compiled per instruction set; exp of a score more than 87
 * below its row's maximum is 0 there (not a subnormal). No two units write the same element and every sum runs in a
 * fixed order, so results are bitwise the same for any thread count. The command mallocs per-worker tile scratch (and,
 * for the one-pass backward, a dq accumulator per worker: at most 64 MiB in all) in host memory and frees it before it
 * ends.
 *
 * Dtypes: q, k and v share one of float32, float64, float16, bfloat16; out, dout, dq, dk, dv may be any of those
 * four; lse is float32 or float64. Half types and float32 compute in float32, float64 in float64; values are
 * converted on load and rounded once on store. Any strides are accepted for every tensor (outputs must not overlap
 * themselves or the inputs).
 *
 * Errors at launch: INVALID_ARG for bad descriptors, a tensor that is not 4-d (lse: 3-d), shapes that do not fit
 * (the message shows them), Hq not a multiple of Hkv, q, k and v of different dtypes, a mask that does not
 * broadcast, dropout_p outside [0, 1], NULL params; UNSUPPORTED for other dtypes. Errors while running:
 * OUT_OF_MEMORY if the tile scratch cannot be allocated (outputs then unspecified). */
#ifndef AXON_ATTENTION_H
#define AXON_ATTENTION_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

typedef struct axon_attention_params {
    double scale;                /* multiplies q . k; PyTorch's default is 1 / sqrt(E) */
    int is_causal;               /* nonzero: query i sees keys j <= i */
    double dropout_p;            /* in [0, 1]; 0 = no dropout (seed and offset unused) */
    uint64_t seed, offset;       /* the Philox stream of the dropout decisions */
    /* When not NULL (both): seed and offset are read from these int64 scalars when the command runs, not taken from
     * the fields above. A compiled backward gets them as tensors an earlier command on the stream may still write. */
    const int64_t *seed_at, *offset_at;
} axon_attention_params_t;

/* Philox blocks one forward consumes (the backward reuses them): ceil(B * Hq * L * S / 4); 0 if any is <= 0.
 * Cannot fail. */
AXON_API uint64_t axon_attention_philox_blocks(int64_t B, int64_t Hq, int64_t L, int64_t S);

/* Enqueue out [B, Hq, L, Ev] and lse [B, Hq, L] (log of each row's softmax denominator, scores included scale and
 * mask; +inf for a fully masked row) from q, k, v and mask (NULL = none). */
AXON_API axon_status_t axon_kernel_attention(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *lse,
                                             const axon_tensor_t *q, const axon_tensor_t *k, const axon_tensor_t *v,
                                             const axon_tensor_t *mask, const axon_attention_params_t *p);

/* Enqueue the gradients dq (q's shape), dk (k's), dv (v's) from dout (out's shape) and the forward's out and lse,
 * with the forward's q, k, v, mask and params. dq may be NULL (not computed); dk and dv may be NULL together. With
 * GQA, dk and dv sum over the query heads sharing a key/value head. No gradient for the mask. */
AXON_API axon_status_t axon_kernel_attention_backward(axon_stream_t s, const axon_tensor_t *dq,
                                                      const axon_tensor_t *dk, const axon_tensor_t *dv,
                                                      const axon_tensor_t *dout, const axon_tensor_t *q,
                                                      const axon_tensor_t *k, const axon_tensor_t *v,
                                                      const axon_tensor_t *mask, const axon_tensor_t *out,
                                                      const axon_tensor_t *lse, const axon_attention_params_t *p);

AXON_EXTERN_C_END

#endif
