/* Scaled dot-product attention forward (axon/attention.h), and the checks and scratch handling the backward shares
 * (attention_impl.h). The tile code is attention_tile.h, instantiated here for float and double. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
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

uint64_t axon_attention_philox_blocks(int64_t B, int64_t Hq, int64_t L, int64_t S) {
    if (B <= 0 || Hq <= 0 || L <= 0 || S <= 0) return 0;
    return ((uint64_t)B * (uint64_t)Hq * (uint64_t)L * (uint64_t)S + 3) / 4;
}

static void at_fill(at_operand_t *o, const axon_tensor_t *t, int f64) {
    memset(o, 0, sizeof *o);
    if (t == NULL) return;
    const axon_dtype_t cdt = f64 ? AXON_FLOAT64 : AXON_FLOAT32;
    o->data = t->data;
    for (int i = 0; i < t->ndim && i < 4; i++) o->st[i] = t->sizes[i] == 1 ? 0 : t->strides[i];
    o->dtype = t->dtype;
    o->es = axon_dtype_size(t->dtype);
    o->ld = axon_convert_get(t->dtype, cdt);
    o->st_fn = axon_convert_get(cdt, t->dtype);
}

axon_status_t at_operand(at_operand_t *o, const at_args_t *a, const char *op, const char *role,
                         const axon_tensor_t *t, int nd, const int64_t *want, int is_dst, int is_lse) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, is_dst);
    if (st != AXON_OK) return st;
    if (is_lse ? t->dtype != AXON_FLOAT32 && t->dtype != AXON_FLOAT64 : !axon_dtype_is_floating(t->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not %s", op, role, axon_dtype_name(t->dtype),
                         is_lse ? "float32 or float64" : "float32, float64, float16 or bfloat16");
    int same = t->ndim == nd;
    for (int i = 0; same && i < nd; i++) same = t->sizes[i] == want[i];
    if (!same) {
        char sw[160];
        int n = snprintf(sw, sizeof sw, "[");
        for (int i = 0; i < nd && n > 0 && (size_t)n < sizeof sw; i++)
            n += snprintf(sw + n, sizeof sw - (size_t)n, "%s%" PRId64, i ? ", " : "", want[i]);
        if (n > 0 && (size_t)n < sizeof sw) snprintf(sw + n, sizeof sw - (size_t)n, "]");
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected %s", op, role,
                         axon_shape_format(t, sa, sizeof sa), sw);
    }
    at_fill(o, t, a->f64);
    return AXON_OK;
}

axon_status_t at_prepare(at_args_t *a, const char *op, const axon_tensor_t *q, const axon_tensor_t *k,
                         const axon_tensor_t *v, const axon_tensor_t *mask, const axon_attention_params_t *p) {
    char sq[160], sk[160], sv[160];
    memset(a, 0, sizeof *a);
    if (p == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: params is NULL", op);
    const axon_tensor_t *in[3] = {q, k, v};
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        axon_status_t st = axon_kernel_check_operand(in[i], op, names[i], 0);
        if (st != AXON_OK) return st;
        if (!axon_dtype_is_floating(in[i]->dtype))
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16",
                             op, names[i], axon_dtype_name(in[i]->dtype));
        if (in[i]->ndim != 4)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be 4-d [batch, heads, length, head dim], got %s",
                             op, names[i], axon_shape_format(in[i], sq, sizeof sq));
    }
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: q, k and v dtypes differ (%s, %s, %s)", op,
                         axon_dtype_name(q->dtype), axon_dtype_name(k->dtype), axon_dtype_name(v->dtype));
    /* shapes formatted only for a message: snprintf costs a decoding step's call a few percent */
#define AT_SHAPES axon_shape_format(q, sq, sizeof sq), axon_shape_format(k, sk, sizeof sk)
    if (k->sizes[0] != q->sizes[0] || v->sizes[0] != q->sizes[0] || v->sizes[1] != k->sizes[1] ||
        v->sizes[2] != k->sizes[2] || k->sizes[3] != q->sizes[3])
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: shapes do not fit: q %s, k %s, v %s (expected q [B, Hq, L, E], k [B, Hkv, S, E], "
                         "v [B, Hkv, S, Ev])", op, AT_SHAPES, axon_shape_format(v, sv, sizeof sv));
    if (k->sizes[1] == 0 ? q->sizes[1] != 0 : q->sizes[1] % k->sizes[1] != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: q's %" PRId64 " heads are not a multiple of k and v's %" PRId64 " heads (q %s, k %s)",
                         op, q->sizes[1], k->sizes[1], AT_SHAPES);
#undef AT_SHAPES
    if (!(p->dropout_p >= 0 && p->dropout_p <= 1))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dropout_p=%g is not in [0, 1]", op, p->dropout_p);
    a->B = q->sizes[0], a->Hq = q->sizes[1], a->L = q->sizes[2], a->E = q->sizes[3];
    a->Hkv = k->sizes[1], a->S = k->sizes[2], a->Ev = v->sizes[3];
    a->group = a->Hkv > 0 ? a->Hq / a->Hkv : 1;
    a->scale = p->scale;
    a->causal = p->is_causal != 0;
    a->dropout = p->dropout_p > 0;
    a->p = p->dropout_p;
    a->keep_scale = p->dropout_p < 1 ? 1.0 / (1.0 - p->dropout_p) : 0.0;
    a->seed = p->seed, a->offset = p->offset;
    if ((p->seed_at == NULL) != (p->offset_at == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: seed_at and offset_at must be given together", op);
    a->seed_at = a->dropout ? p->seed_at : NULL, a->offset_at = a->dropout ? p->offset_at : NULL;
    a->f64 = q->dtype == AXON_FLOAT64;
    at_fill(&a->q, q, a->f64), at_fill(&a->k, k, a->f64), at_fill(&a->v, v, a->f64);
    if (mask) {
        axon_status_t st = axon_kernel_check_operand(mask, op, "mask", 0);
        if (st != AXON_OK) return st;
        if (mask->dtype != AXON_BOOL && !axon_dtype_is_floating(mask->dtype))
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: mask dtype %s is not bool or a float type", op,
                             axon_dtype_name(mask->dtype));
        const int64_t full[4] = {a->B, a->Hq, a->L, a->S};
        int fits = mask->ndim <= 4;
        for (int i = 0; fits && i < mask->ndim; i++) {
            int64_t s = mask->sizes[mask->ndim - 1 - i];
            fits = s == full[3 - i] || s == 1;
        }
        if (!fits)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "%s: mask shape %s does not broadcast to [B, Hq, L, S] = [%" PRId64 ", %" PRId64
                             ", %" PRId64 ", %" PRId64 "]", op, axon_shape_format(mask, sq, sizeof sq), a->B, a->Hq,
                             a->L, a->S);
        at_fill(&a->mask, mask, a->f64);
        memset(a->mask.st, 0, sizeof a->mask.st); /* right-aligned; missing and size-1 dimensions repeat */
        for (int i = 0; i < mask->ndim; i++)
            a->mask.st[4 - mask->ndim + i] = mask->sizes[i] == 1 ? 0 : mask->strides[i];
        a->mask_bool = mask->dtype == AXON_BOOL;
    }
    return AXON_OK;
}

/* A query-row operand [B, Hq, 1, D] (lse: [B, Hq, 1]) seen as [B, Hkv, group, D]. */
static void at_fold(at_operand_t *o, int64_t group, int nd) {
    if (!o->data) return;
    const int64_t head = o->st[1], last = nd == 4 ? o->st[3] : 0;
    o->st[1] = group * head, o->st[2] = head;
    if (nd == 4) o->st[3] = last;
}

void at_fold_groups(at_args_t *a) {
    if (a->L != 1 || a->group <= 1 || a->causal) return;
    at_fold(&a->q, a->group, 4), at_fold(&a->out, a->group, 4), at_fold(&a->dout, a->group, 4);
    at_fold(&a->dq, a->group, 4), at_fold(&a->lse, a->group, 3), at_fold(&a->mask, a->group, 4);
    a->Hq = a->Hkv, a->L = a->group, a->group = 1;
}

size_t at_slot_bytes(const at_args_t *a) {
    const size_t b = AT_BLOCK, kb = AT_KBLOCK, e = (size_t)(a->E > 0 ? a->E : 1), ev = (size_t)(a->Ev > 0 ? a->Ev : 1);
    /* q, qt, acc_e: b x e; k: kb x e; dout, gt, acc_v: b x ev; v: kb x ev; s: b x kb; dp, pd: b x b; three rows of
     * b; mrow, z: kb (attention_tile.h). */
    const size_t bytes = (3 * b * e + kb * e + 3 * b * ev + kb * ev + b * kb + 2 * b * b + 3 * b + 2 * kb) *
                         (a->f64 ? sizeof(double) : sizeof(float));
    const size_t other = a->path == AT_PATH_AMX_FWD ? at_amx_slot_bytes(a)
                         : a->path == AT_PATH_AMX_BWD ? at_amx_bwd_slot_bytes(a)
                         : a->path == AT_PATH_FEW ? at_few_slot_bytes(a)
                         : a->path == AT_PATH_F32V ? at_f32v_slot_bytes(a) : 0;
    return bytes > other ? bytes : other;
}

axon_status_t at_run(at_job_t *j, axon_pool_t pool, int64_t units, int64_t unit_work, axon_range_fn fn,
                     const char *op) {
    if (units <= 0) return AXON_OK;
    const size_t slots = (size_t)axon_pool_size(pool);
    j->slot_bytes = (at_slot_bytes(j->a) + 63) / 64 * 64; /* each slot on its own cache lines */
    if ((j->scratch = malloc(slots * j->slot_bytes)) == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: %zu bytes of tile scratch for %zu workers", op,
                         slots * j->slot_bytes, slots);
    int64_t grain = AXON_KERNEL_GRAIN / (unit_work > 0 ? unit_work : 1);
    axon_parallel_for(pool, 0, units, grain < 1 ? 1 : grain, fn, j);
    free(j->scratch);
    j->scratch = NULL;
    if (atomic_load(&j->failed))
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: packing buffers of the portable GEMM", op);
    return AXON_OK;
}

static void at_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    at_job_t *j = ctx;
    void *scratch = j->scratch + (size_t)slot * j->slot_bytes;
    for (int64_t u = begin; u < end; u++) {
        if (j->a->f64) at_forward_unit_f64(j, u, scratch);
        else at_forward_unit_f32(j, u, scratch);
    }
}

static axon_status_t at_forward_kernel(const void *args, const axon_exec_t *ex) {
    at_args_t resolved = at_resolve_philox(args), *a = &resolved;
    at_job_t j;
    memset(&j, 0, sizeof j);
    j.a = a;
    atomic_init(&j.failed, 0);
    const int64_t units = a->B * a->Hq * ((a->L + AT_BLOCK - 1) / AT_BLOCK);
    const int64_t rows = a->L < AT_BLOCK ? a->L : AT_BLOCK; /* a unit's query rows: few when decoding */
    const int64_t work = rows * (a->S + 1) * (a->E + a->Ev + 1);
    if (at_few_usable(a)) {
        a->path = AT_PATH_FEW;
        return at_run(&j, ex->pool, at_few_units(a), work, at_few_forward_range, "attention");
    }
    if (at_f32v_usable(a)) {
        a->path = AT_PATH_F32V;
        return at_run(&j, ex->pool, at_f32v_units(a), work, at_f32v_forward_range, "attention");
    }
    if (!at_amx_usable(a)) return at_run(&j, ex->pool, units, work, at_forward_range, "attention");
    a->path = AT_PATH_AMX_FWD;
    const size_t bytes = at_amx_pack_bytes(a);
    if ((j.kpack = axon_gemm_scratch(AXON_GEMM_SCRATCH_PACK, bytes)) == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "attention: %zu bytes for the packed keys and values", bytes);
    at_amx_pack(&j, ex->pool);
    const axon_status_t st = at_run(&j, ex->pool, at_amx_units(a), work, at_amx_forward_range, "attention");
    axon_gemm_scratch_done(AXON_GEMM_SCRATCH_PACK, j.kpack);
    return st;
}

axon_status_t axon_kernel_attention(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *lse,
                                    const axon_tensor_t *q, const axon_tensor_t *k, const axon_tensor_t *v,
                                    const axon_tensor_t *mask, const axon_attention_params_t *p) {
    const char *op = "attention";
    at_args_t a;
    axon_status_t st = at_prepare(&a, op, q, k, v, mask, p);
    if (st != AXON_OK) return st;
    const int64_t so[4] = {a.B, a.Hq, a.L, a.Ev};
    if ((st = at_operand(&a.out, &a, op, "out", out, 4, so, 1, 0)) != AXON_OK) return st;
    if ((st = at_operand(&a.lse, &a, op, "lse", lse, 3, so, 1, 1)) != AXON_OK) return st;
    if (a.B * a.Hq * a.L == 0) return AXON_OK;
    at_fold_groups(&a);
    const uint64_t bytes = (uint64_t)(axon_tensor_numel(q) * (int64_t)a.q.es + axon_tensor_numel(k) * (int64_t)a.k.es +
                                      axon_tensor_numel(v) * (int64_t)a.v.es + axon_tensor_numel(out) * (int64_t)a.out.es);
    axon_launch_t l = {at_forward_kernel, &a, sizeof a, op, bytes};
    return axon_stream_launch(s, &l);
}
