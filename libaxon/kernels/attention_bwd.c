/* Scaled dot-product attention backward (axon/attention.h), flash-attention-2 style. First D = rowsum(dout * out)
 * per query row. Then, when there are enough (batch, kv head) pairs to keep the pool busy, one pass with a unit per
 * pair that owns its dk, dv and (in a per-worker buffer) its query heads' dq. Otherwise two passes with smaller
 * units: dk and dv per block of keys (each unit walks every query row that sees its keys), then dq per block of
 * query rows, recomputing the weights and dP (two GEMMs more). No unit ever writes another's output, and both ways
 * add the same tiles in the same order, so results do not depend on the thread count. */
#include <stdlib.h>
#include <string.h>

#include "attention_impl.h"
#include "axon/stream.h"
#include "gemm_impl.h"
#include "internal.h"

#define AT_T float
#define AT_SFX f32
#define AT_GEMM axon_gemm_f32
#define AT_GEMM_FEW axon_gemm_skinny_f32
#define AT_CDT AXON_FLOAT32
#include "attention_tile.h"

#define AT_T double
#define AT_SFX f64
#define AT_GEMM axon_gemm_f64
#define AT_CDT AXON_FLOAT64
#include "attention_tile.h"

static void *at_slot(at_job_t *j, int slot) { return j->scratch + (size_t)slot * j->slot_bytes; }

static void at_d_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    for (int64_t u = begin; u < end; u++) {
        if (j->a->f64) at_backward_d_row_f64(j, u, at_slot(j, slot));
        else at_backward_d_row_f32(j, u, at_slot(j, slot));
    }
}

static void at_kv_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    for (int64_t u = begin; u < end; u++) {
        if (j->a->f64) at_backward_kv_unit_f64(j, u, at_slot(j, slot));
        else at_backward_kv_unit_f32(j, u, at_slot(j, slot));
    }
}

static void at_q_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    for (int64_t u = begin; u < end; u++) {
        if (j->a->f64) at_backward_q_unit_f64(j, u, at_slot(j, slot));
        else at_backward_q_unit_f32(j, u, at_slot(j, slot));
    }
}

static void at_fused_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    void *dqs = j->dqs + (size_t)slot * j->dqs_bytes;
    for (int64_t u = begin; u < end; u++) {
        if (j->a->f64) at_backward_fused_unit_f64(j, u, at_slot(j, slot), dqs);
        else at_backward_fused_unit_f32(j, u, at_slot(j, slot), dqs);
    }
}

/* Whether the one-pass backward pays: it needs all three gradients, a dq buffer per worker (kept under
 * AT_FUSED_MAX_BYTES in all), and enough (b, kv head) units to keep every worker busy, since it has fewer and
 * larger units than the two passes. Either way the results are bitwise the same. */
#define AT_FUSED_MAX_BYTES ((size_t)64 << 20)
static size_t at_fused_bytes(const at_args_t *a, int slots) {
    if (!a->dq.data || !a->dk.data) return 0;
    if (a->B * a->Hkv < 2 * (int64_t)slots) return 0;
    const size_t per = (size_t)(a->group * a->L * (a->E > 0 ? a->E : 1)) * (a->f64 ? sizeof(double) : sizeof(float));
    const size_t bytes = (per + 63) / 64 * 64;
    return bytes * (size_t)slots <= AT_FUSED_MAX_BYTES ? bytes : 0;
}

/* The rest of the backward on AMX tiles (at_amx_bwd_usable), once D is known; work: a unit's rough cost. */
static axon_status_t at_backward_amx(at_job_t *j, axon_pool_t pool, int64_t work, const char *op) {
    const at_args_t *a = j->a;
    const size_t bytes = at_amx_bwd_pack_bytes(a);
    if ((j->kpack = axon_gemm_scratch(AXON_GEMM_SCRATCH_PACK, bytes)) == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: %zu bytes for the packed blocks", op, bytes);
    at_amx_bwd_pack(j, pool);
    axon_status_t st = AXON_OK;
    if (a->dk.data) st = at_run(j, pool, at_amx_bwd_kv_units(a), work * a->group, at_amx_bwd_kv_range, op);
    if (st == AXON_OK && a->dq.data) st = at_run(j, pool, at_amx_bwd_q_units(a), work, at_amx_bwd_q_range, op);
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, j->kpack);
    return st;
}

static axon_status_t at_backward_kernel(const void *args, const axon_exec_t *ex) {
    at_args_t resolved = at_resolve_philox(args), *a = &resolved;
    const char *op = "attention_backward";
    at_job_t j;
    memset(&j, 0, sizeof j);
    j.a = a;
    atomic_init(&j.failed, 0);
    const int64_t rows = a->B * a->Hq * a->L;
    const size_t es = a->f64 ? sizeof(double) : sizeof(float);
    if ((j.d = malloc((size_t)(rows > 0 ? rows : 1) * es)) == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: %zu bytes for rowsum(dout * out)", op, (size_t)rows * es);
    const int64_t work = AT_BLOCK * (a->S + a->L + 1) * (a->E + a->Ev + 1); /* rough cost of one unit */
    axon_status_t st = at_run(&j, ex->pool, rows, a->Ev + 1, at_d_range, op);
    if (st == AXON_OK && at_amx_bwd_usable(a)) {
        a->path = AT_PATH_AMX_BWD;
        st = at_backward_amx(&j, ex->pool, work, op);
        free(j.d);
        return st;
    }
    const int slots = axon_pool_size(ex->pool);
    if ((j.dqs_bytes = at_fused_bytes(a, slots)) > 0 && (j.dqs = malloc(j.dqs_bytes * (size_t)slots)) != NULL) {
        if (st == AXON_OK) st = at_run(&j, ex->pool, a->B * a->Hkv, 1 << 30, at_fused_range, op);
        free(j.dqs);
        free(j.d);
        return st;
    }
    if (st == AXON_OK && (a->dk.data || a->dv.data))
        st = at_run(&j, ex->pool, a->B * a->Hkv * ((a->S + AT_BLOCK - 1) / AT_BLOCK), work * a->group, at_kv_range,
                    op);
    if (st == AXON_OK && a->dq.data)
        st = at_run(&j, ex->pool, a->B * a->Hq * ((a->L + AT_BLOCK - 1) / AT_BLOCK), work, at_q_range, op);
    free(j.d);
    return st;
}

axon_status_t axon_kernel_attention_backward(axon_stream_t s, const axon_tensor_t *dq, const axon_tensor_t *dk,
                                             const axon_tensor_t *dv, const axon_tensor_t *dout,
                                             const axon_tensor_t *q, const axon_tensor_t *k, const axon_tensor_t *v,
                                             const axon_tensor_t *mask, const axon_tensor_t *out,
                                             const axon_tensor_t *lse, const axon_attention_params_t *p) {
    const char *op = "attention_backward";
    at_args_t a;
    axon_status_t st = at_prepare(&a, op, q, k, v, mask, p);
    if (st != AXON_OK) return st;
    if ((dk == NULL) != (dv == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dk and dv must be given together (dk %s, dv %s)", op,
                         dk ? "given" : "NULL", dv ? "given" : "NULL");
    const int64_t so[4] = {a.B, a.Hq, a.L, a.Ev}, sq[4] = {a.B, a.Hq, a.L, a.E};
    const int64_t sk[4] = {a.B, a.Hkv, a.S, a.E}, sv[4] = {a.B, a.Hkv, a.S, a.Ev};
    if ((st = at_operand(&a.dout, &a, op, "dout", dout, 4, so, 0, 0)) != AXON_OK) return st;
    if ((st = at_operand(&a.out, &a, op, "out", out, 4, so, 0, 0)) != AXON_OK) return st;
    if ((st = at_operand(&a.lse, &a, op, "lse", lse, 3, so, 0, 1)) != AXON_OK) return st;
    if (dq && (st = at_operand(&a.dq, &a, op, "dq", dq, 4, sq, 1, 0)) != AXON_OK) return st;
    if (dk && (st = at_operand(&a.dk, &a, op, "dk", dk, 4, sk, 1, 0)) != AXON_OK) return st;
    if (dv && (st = at_operand(&a.dv, &a, op, "dv", dv, 4, sv, 1, 0)) != AXON_OK) return st;
    const int64_t nq = dq ? axon_tensor_numel(dq) : 0, nk = dk ? axon_tensor_numel(dk) + axon_tensor_numel(dv) : 0;
    if (nq == 0 && nk == 0) return AXON_OK;
    at_fold_groups(&a);
    const uint64_t bytes = (uint64_t)(nq + nk + 2 * axon_tensor_numel(dout)) * (uint64_t)a.dout.es;
    axon_launch_t l = {at_backward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}
