/* bfloat16, float16 and (for the shapes gemm.c picks) float32 GEMM through oneDNN's matmul primitive
 * (AXON_HAVE_ONEDNN), for gemm.c.
 *
 * Why oneDNN: it multiplies bf16 with the CPU's bf16 dot instructions (VDPBF16PS, or AMX where there is one),
 * about twice the float32 FMA rate, while the generic path converts to float32 and calls sgemm
 * (docs/benchmarks.md, "GEMM library choice"). Its float32 brgemm kernels also beat OpenBLAS's sgemm on
 * transformer-sized products with B transposed (gemm.c, gemm_lowp_takes).
 *
 * Every call runs on the calling thread alone with op->nthreads OpenMP threads, which gemm.c passes as 1 from each
 * pool participant (onednn_impl.h says why). A primitive's blocking is chosen for the thread count it was created
 * with, so that count is part of the cache key, and results are the same run after run. Primitives are kept in
 * onednn.c's cache, keyed by everything that shapes them (dtype, sizes, strides, alpha, beta, bias, threads). Only
 * the brgemm implementations are taken (see onednn_accept for why not oneDNN's "gemm:jit" ones). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_impl.h"

#ifdef AXON_HAVE_ONEDNN
#include "onednn_impl.h"

typedef struct onednn_key {
    int dtype, nthreads, ndims, has_bias;
    int64_t dims[3][3];          /* a, b, c: (batch, rows, cols); batch 1 for a broadcast operand */
    int64_t strides[3][3];
    float alpha, beta;
} onednn_key_t;

typedef struct onednn_matmul {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t md[4];    /* a, b, c, bias */
    size_t scratch_bytes;
} onednn_matmul_t;

static dnnl_data_type_t onednn_dtype(axon_dtype_t dt) {
    return dt == AXON_BFLOAT16 ? dnnl_bf16 : dt == AXON_FLOAT16 ? dnnl_f16 : dnnl_f32;
}

static void onednn_key_make(const axon_gemm_lowp_t *op, onednn_key_t *k) {
    memset(k, 0, sizeof *k); /* padding too: keys are compared with memcmp */
    k->dtype = op->dtype;
    k->nthreads = op->nthreads;
    k->ndims = op->bsz > 1 ? 3 : 2;
    k->has_bias = op->bias != NULL;
    k->alpha = op->alpha;
    k->beta = op->beta;
    const int64_t rows[3] = {op->m, op->k, op->m}, cols[3] = {op->k, op->n, op->n};
    const int64_t bs[3] = {op->a_bs, op->b_bs, op->c_bs}, rs[3] = {op->a_rs, op->b_rs, op->ldc},
                  cs[3] = {op->a_cs, op->b_cs, 1};
    for (int i = 0; i < 3; i++) {
        /* A batch stride of 0 is a broadcast: oneDNN takes that as a batch dimension of 1. */
        int64_t nb = op->bsz > 1 && (i == 2 || bs[i] != 0) ? op->bsz : 1;
        k->dims[i][0] = nb, k->dims[i][1] = rows[i], k->dims[i][2] = cols[i];
        k->strides[i][0] = nb > 1 ? bs[i] : rows[i] * cols[i];
        /* A dimension of size 1 may carry any stride; oneDNN wants one that keeps the layout plain. */
        k->strides[i][1] = rows[i] == 1 ? (cs[i] == 1 ? cols[i] : 1) : rs[i];
        k->strides[i][2] = cols[i] == 1 ? (rs[i] == 1 ? rows[i] : 1) : cs[i];
    }
}

static void onednn_matmul_free(void *obj) {
    onednn_matmul_t *m = obj;
    if (m->prim) dnnl_primitive_destroy(m->prim);
    free(m);
}

/* Only the brgemm kernels ("brg:<isa>"), in the order oneDNN ranks them. Reference kernels are scalar loops, slower
 * than the BLAS path. The "gemm:jit" ones fail (unimplemented) inside a PyTorch process: they set up their kernel
 * tables in std::call_once thunks that libdnnl exports and that bind to the same-named ones of the oneDNN inside
 * libtorch_cpu.so, which fill that library's tables instead. */
static int onednn_accept(const char *impl) { return strncmp(impl, "brg:", 4) == 0; }

/* Build the primitive for the key (onednn_key_t): *obj is NULL when oneDNN offers nothing onednn_accept takes.
 * -1 when out of memory. */
static int onednn_matmul_create(const void *key, void **obj) {
    const onednn_key_t *k = key;
    onednn_matmul_t *e = calloc(1, sizeof *e);
    *obj = NULL;
    if (!e) return -1;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_matmul_desc_t desc;
    const int nd = k->ndims, off = 3 - nd; /* a 2-D key skips the batch dimension */
    dnnl_data_type_t dt = onednn_dtype(k->dtype);
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) {
        dnnl_dims_t d = {0}, s = {0}; /* the prototype takes full dnnl_dims_t arrays */
        for (int j = 0; j < nd; j++) d[j] = k->dims[i][off + j], s[j] = k->strides[i][off + j];
        ok = dnnl_memory_desc_init_by_strides(&e->md[i], nd, d, dt, s) == dnnl_success;
    }
    if (ok && k->has_bias) { /* float32 bias of shape (1, [1,] n), added by a binary post-op */
        dnnl_dims_t bd = {1, 1, 0};
        bd[nd - 1] = k->dims[2][2];
        ok = dnnl_memory_desc_init_by_tag(&e->md[3], nd, bd, dnnl_f32, nd == 3 ? dnnl_abc : dnnl_ab) ==
             dnnl_success;
    }
    ok = ok && dnnl_primitive_attr_create(&attr) == dnnl_success &&
         dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    if (ok && k->alpha != 1.0f) ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &k->alpha) == dnnl_success;
    if (ok && (k->beta != 0.0f || k->has_bias)) {
        /* Applied in this order after alpha: + beta * c, then + bias, all in float32, rounded once. */
        ok = dnnl_post_ops_create(&po) == dnnl_success;
        if (ok && k->beta != 0.0f) ok = dnnl_post_ops_append_sum(po, k->beta) == dnnl_success;
        if (ok && k->has_bias) ok = dnnl_post_ops_append_binary(po, dnnl_binary_add, &e->md[3]) == dnnl_success;
        ok = ok && dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    }
    ok = ok && dnnl_matmul_desc_init(&desc, &e->md[0], &e->md[1], NULL, &e->md[2]) == dnnl_success;
    dnnl_primitive_desc_t pd = ok ? axon_onednn_pick(&desc, attr, NULL, k->nthreads, onednn_accept) : NULL;
    if (pd) {
        e->scratch_bytes = axon_onednn_scratchpad_bytes(pd);
        if (dnnl_primitive_create(&e->prim, pd) != dnnl_success) e->prim = NULL;
        dnnl_primitive_desc_destroy(pd);
    }
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (e->prim) *obj = e;
    else free(e);
    return 0;
}

static axon_onednn_entry_t *onednn_matmul_acquire(const axon_gemm_lowp_t *op, onednn_key_t *k) {
    onednn_key_make(op, k);
    return axon_onednn_acquire(k, sizeof *k, onednn_matmul_create, onednn_matmul_free);
}

int axon_gemm_lowp_available(void) { return axon_onednn_available(); }

int axon_gemm_lowp_prepare(const axon_gemm_lowp_t *op) {
    if (!axon_onednn_available()) return 1;
    onednn_key_t k;
    axon_onednn_entry_t *e = onednn_matmul_acquire(op, &k);
    if (!e) return -1;
    int rc = axon_onednn_object(e) ? 0 : 1;
    axon_onednn_release(e);
    return rc;
}

int axon_gemm_lowp(const axon_gemm_lowp_t *op) {
    if (!axon_onednn_available()) return 1;
    onednn_key_t k;
    axon_onednn_entry_t *e = onednn_matmul_acquire(op, &k);
    if (!e) return -1;
    onednn_matmul_t *mm = axon_onednn_object(e);
    int rc = 1;
    if (mm) {
        rc = -1;
        dnnl_stream_t stream = NULL;
        char *scratch = NULL;
        dnnl_memory_t mem[5] = {NULL, NULL, NULL, NULL, NULL};
        void *ptr[5] = {(void *)op->a, (void *)op->b, op->c, (void *)op->bias, NULL};
        const int argi[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                             DNNL_ARG_ATTR_MULTIPLE_POST_OP(k.beta != 0.0f ? 1 : 0) | DNNL_ARG_SRC_1,
                             DNNL_ARG_SCRATCHPAD};
        dnnl_exec_arg_t args[5];
        int nargs = 0, ok = axon_onednn_thread(mm->scratch_bytes, &stream, &scratch) == 0;
        dnnl_memory_desc_t smd;
        ptr[4] = scratch;
        if (ok && mm->scratch_bytes > 0) {
            dnnl_dims_t sd = {(dnnl_dim_t)mm->scratch_bytes};
            ok = dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a) == dnnl_success;
        }
        for (int i = 0; i < 5 && ok; i++) {
            if ((i == 3 && !k.has_bias) || (i == 4 && mm->scratch_bytes == 0)) continue;
            ok = dnnl_memory_create(&mem[i], i == 4 ? &smd : &mm->md[i], axon_onednn_engine(), ptr[i]) ==
                 dnnl_success;
            args[nargs].arg = argi[i];
            args[nargs].memory = mem[i];
            nargs++;
        }
        if (ok && axon_onednn_run(mm->prim, stream, k.nthreads, nargs, args) == 0) rc = 0;
        for (int i = 0; i < 5; i++)
            if (mem[i]) dnnl_memory_destroy(mem[i]);
        if (rc != 0) axon_onednn_mark_broken(e);
    }
    axon_onednn_release(e);
    return rc;
}

const char *axon_gemm_lowp_backend_name(void) { return "onednn"; }

#else

int axon_gemm_lowp_available(void) { return 0; }
int axon_gemm_lowp_prepare(const axon_gemm_lowp_t *op) { return 1; }
int axon_gemm_lowp(const axon_gemm_lowp_t *op) { return 1; }
const char *axon_gemm_lowp_backend_name(void) { return "none"; }

#endif
