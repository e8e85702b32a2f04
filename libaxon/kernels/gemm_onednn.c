/* bfloat16, float16 and (for the shapes gemm.c picks) float32 GEMM through oneDNN's matmul primitive
 * (AXON_HAVE_ONEDNN), for gemm.c.
 *
 * Why oneDNN: it multiplies bf16 with the CPU's bf16 dot instructions (VDPBF16PS, or AMX where there is one),
 * about twice the float32 FMA rate, while the generic path converts to float32 and calls sgemm
 * (docs/benchmarks.md, "GEMM library choice"). Its float32 brgemm kernels also beat OpenBLAS's sgemm on
 * transformer-sized products with B transposed (gemm.c, gemm_lowp_takes).
 *
 * Threads: Debian's oneDNN uses OpenMP (libgomp). Every call here runs on the calling thread alone: before creating or
 * running a primitive the thread sets its own OpenMP thread count (a per-thread setting) to op->nthreads, which
 * gemm.c passes as 1 from each worker-pool participant, so oneDNN never starts an OpenMP team of its own that would
 * compete with the pool for the same cores. A primitive's blocking is chosen for the thread count it was created
 * with, so that count is part of the cache key, and results are the same run after run.
 *
 * Cache: creating a matmul primitive costs tens of microseconds, so primitives are kept, keyed by everything that
 * shapes them (dtype, sizes, strides, alpha, beta, bias, threads), in a small LRU list guarded by one mutex. An entry
 * in use is pinned by a count and never freed under its user. A key oneDNN refuses, or serves only with a reference
 * implementation (slower than the BLAS path), is cached too, as "not offered", so it is asked only once. Only
 * the brgemm implementations are taken (see onednn_entry_create for why not oneDNN's "gemm:jit" ones); a primitive
 * whose run fails is marked broken and not offered again.
 *
 * Scratchpad: user-managed (oneDNN's library-managed one is tied to the creating thread), in one buffer per calling
 * thread that grows as needed and is freed when the thread exits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_impl.h"

#ifdef AXON_HAVE_ONEDNN
#include <pthread.h>

#include <oneapi/dnnl/dnnl.h>

void omp_set_num_threads(int n); /* libgomp's, which oneDNN links; declared here so no -fopenmp is needed */

#define ONEDNN_CACHE_CAPACITY 64

typedef struct onednn_key {
    int dtype, nthreads, ndims, has_bias;
    int64_t dims[3][3];          /* a, b, c: (batch, rows, cols); batch 1 for a broadcast operand */
    int64_t strides[3][3];
    float alpha, beta;
} onednn_key_t;

typedef struct onednn_entry {
    onednn_key_t key;
    dnnl_primitive_t prim;       /* NULL: oneDNN offers nothing better than the BLAS path for this key */
    dnnl_memory_desc_t md[4];    /* a, b, c, bias */
    size_t scratch_bytes;
    int refs;                    /* callers running prim now; the entry is freed only at 0 */
    int evicted;                 /* off the list; the last user frees it */
    int broken;                  /* a run failed: offered no more */
    struct onednn_entry *prev, *next;
} onednn_entry_t;

/* The one lock: guards the LRU list below (most recent first) and its entries' refs, evicted and broken. */
static pthread_mutex_t onednn_mu = PTHREAD_MUTEX_INITIALIZER;
static onednn_entry_t *onednn_head, *onednn_tail;
static int onednn_count;

/* Set once by onednn_init, read-only after. */
static pthread_once_t onednn_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t onednn_engine;
static pthread_key_t onednn_tls;
static int onednn_ok;

typedef struct onednn_thread {
    dnnl_stream_t stream;
    void *scratch;
    size_t scratch_cap;
} onednn_thread_t;

static void onednn_thread_free(void *p) {
    onednn_thread_t *t = p;
    if (!t) return;
    if (t->stream) dnnl_stream_destroy(t->stream);
    free(t->scratch);
    free(t);
}

static void onednn_init(void) {
    if (pthread_key_create(&onednn_tls, onednn_thread_free) != 0) return;
    onednn_ok = dnnl_engine_create(&onednn_engine, dnnl_cpu, 0) == dnnl_success;
}

/* This thread's stream and a scratch buffer of at least `bytes`; NULL if either cannot be had. */
static onednn_thread_t *onednn_thread(size_t bytes) {
    onednn_thread_t *t = pthread_getspecific(onednn_tls);
    if (!t) {
        if ((t = calloc(1, sizeof *t)) == NULL) return NULL;
        if (pthread_setspecific(onednn_tls, t) != 0) {
            free(t);
            return NULL;
        }
    }
    if (!t->stream && dnnl_stream_create(&t->stream, onednn_engine, dnnl_stream_default_flags) != dnnl_success) {
        t->stream = NULL;
        return NULL;
    }
    if (bytes > t->scratch_cap) {
        free(t->scratch);
        t->scratch_cap = 0;
        if ((t->scratch = malloc(bytes)) == NULL) return NULL;
        t->scratch_cap = bytes;
    }
    return t;
}

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

static void onednn_entry_free(onednn_entry_t *e) {
    if (!e) return;
    if (e->prim) dnnl_primitive_destroy(e->prim);
    free(e);
}

/* Build the primitive for k. Returns the entry (prim NULL when not offered), or NULL when out of memory. */
static onednn_entry_t *onednn_entry_create(const onednn_key_t *k) {
    onednn_entry_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->key = *k;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd;
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
    omp_set_num_threads(k->nthreads); /* oneDNN sizes its blocking for the current thread count */
    dnnl_primitive_desc_iterator_t it = NULL;
    if (ok && dnnl_primitive_desc_iterator_create(&it, &desc, attr, onednn_engine, NULL) == dnnl_success) {
        /* Only the brgemm kernels ("brg:<isa>"), in the order oneDNN ranks them. Reference kernels are scalar loops,
         * slower than the BLAS path. The "gemm:jit" ones fail (unimplemented) inside a PyTorch process: they set
         * up their kernel tables in std::call_once thunks that libdnnl exports and that bind to the same-named ones
         * of the oneDNN inside libtorch_cpu.so, which fill that library's tables instead. */
        do {
            pd = dnnl_primitive_desc_iterator_fetch(it);
            const char *impl = NULL;
            if (pd && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
                strncmp(impl, "brg:", 4) == 0) {
                const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
                e->scratch_bytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
                if (dnnl_primitive_create(&e->prim, pd) != dnnl_success) e->prim = NULL;
            }
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        } while (!e->prim && dnnl_primitive_desc_iterator_next(it) == dnnl_success);
        dnnl_primitive_desc_iterator_destroy(it);
    }
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    return e;
}

static void onednn_unlink(onednn_entry_t *e) {
    if (e->prev) e->prev->next = e->next;
    else onednn_head = e->next;
    if (e->next) e->next->prev = e->prev;
    else onednn_tail = e->prev;
    e->prev = e->next = NULL;
    onednn_count--;
}

static void onednn_push_front(onednn_entry_t *e) {
    e->prev = NULL;
    e->next = onednn_head;
    if (onednn_head) onednn_head->prev = e;
    else onednn_tail = e;
    onednn_head = e;
    onednn_count++;
}

static void onednn_release(onednn_entry_t *e) {
    pthread_mutex_lock(&onednn_mu);
    int last = --e->refs == 0 && e->evicted;
    pthread_mutex_unlock(&onednn_mu);
    if (last) onednn_entry_free(e);
}

/* The cached entry for k, pinned (release it with onednn_release); NULL when out of memory. Creation runs outside
 * the lock; if two threads race to create one key, the second keeps its own copy off the list. */
static onednn_entry_t *onednn_acquire(const onednn_key_t *k) {
    onednn_entry_t *e, *victim = NULL;
    pthread_mutex_lock(&onednn_mu);
    for (e = onednn_head; e; e = e->next)
        if (memcmp(&e->key, k, sizeof *k) == 0) break;
    if (e) {
        onednn_unlink(e);
        onednn_push_front(e);
        e->refs++;
    }
    pthread_mutex_unlock(&onednn_mu);
    if (e) return e;
    if ((e = onednn_entry_create(k)) == NULL) return NULL;
    pthread_mutex_lock(&onednn_mu);
    e->refs = 1;
    onednn_push_front(e);
    if (onednn_count > ONEDNN_CACHE_CAPACITY) {
        victim = onednn_tail;
        onednn_unlink(victim);
        victim->evicted = 1;
        if (victim->refs > 0) victim = NULL; /* its last user frees it */
    }
    pthread_mutex_unlock(&onednn_mu);
    onednn_entry_free(victim);
    return e;
}

int axon_gemm_lowp_available(void) {
    pthread_once(&onednn_once, onednn_init);
    return onednn_ok;
}

int axon_gemm_lowp_prepare(const axon_gemm_lowp_t *op) {
    if (!axon_gemm_lowp_available()) return 1;
    onednn_key_t k;
    onednn_key_make(op, &k);
    onednn_entry_t *e = onednn_acquire(&k);
    if (!e) return -1;
    pthread_mutex_lock(&onednn_mu);
    int rc = e->prim && !e->broken ? 0 : 1;
    pthread_mutex_unlock(&onednn_mu);
    onednn_release(e);
    return rc;
}

int axon_gemm_lowp(const axon_gemm_lowp_t *op) {
    if (!axon_gemm_lowp_available()) return 1;
    onednn_key_t k;
    onednn_key_make(op, &k);
    onednn_entry_t *e = onednn_acquire(&k);
    if (!e) return -1;
    int rc = 1;
    if (e->prim) {
        rc = -1;
        onednn_thread_t *t = onednn_thread(e->scratch_bytes);
        dnnl_memory_t mem[5] = {NULL, NULL, NULL, NULL, NULL};
        void *ptr[5] = {(void *)op->a, (void *)op->b, op->c, (void *)op->bias, t ? t->scratch : NULL};
        const int argi[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                             DNNL_ARG_ATTR_MULTIPLE_POST_OP(k.beta != 0.0f ? 1 : 0) | DNNL_ARG_SRC_1,
                             DNNL_ARG_SCRATCHPAD};
        dnnl_exec_arg_t args[5];
        int nargs = 0, ok = t != NULL;
        dnnl_memory_desc_t smd;
        if (ok && e->scratch_bytes > 0) {
            dnnl_dims_t sd = {(dnnl_dim_t)e->scratch_bytes};
            ok = dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a) == dnnl_success;
        }
        for (int i = 0; i < 5 && ok; i++) {
            if ((i == 3 && !k.has_bias) || (i == 4 && e->scratch_bytes == 0)) continue;
            ok = dnnl_memory_create(&mem[i], i == 4 ? &smd : &e->md[i], onednn_engine, ptr[i]) == dnnl_success;
            args[nargs].arg = argi[i];
            args[nargs].memory = mem[i];
            nargs++;
        }
        if (ok) {
            omp_set_num_threads(k.nthreads);
            if (dnnl_primitive_execute(e->prim, t->stream, nargs, args) == dnnl_success &&
                dnnl_stream_wait(t->stream) == dnnl_success)
                rc = 0;
        }
        for (int i = 0; i < 5; i++)
            if (mem[i]) dnnl_memory_destroy(mem[i]);
        if (rc != 0 && t) {
            pthread_mutex_lock(&onednn_mu);
            e->broken = 1;
            pthread_mutex_unlock(&onednn_mu);
        }
    }
    onednn_release(e);
    return rc;
}

const char *axon_gemm_lowp_backend_name(void) { return "onednn"; }

#else

int axon_gemm_lowp_available(void) { return 0; }
int axon_gemm_lowp_prepare(const axon_gemm_lowp_t *op) { return 1; }
int axon_gemm_lowp(const axon_gemm_lowp_t *op) { return 1; }
const char *axon_gemm_lowp_backend_name(void) { return "none"; }

#endif
