/* Tier 1: find a C compiler, key, cache, compile in the background, load, publish (tier1.h). */
#include "tier1.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels_impl.h"
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu.h"
#include "disk_cache.h"
#include "internal.h"
#include "sha256.h"

extern char **environ;

/* Flags of every tier-1 compile; part of the cache key. -ffp-contract=off: no fused multiply-adds, as in tier 0. */
static const char *const CC_FLAGS[] = {"-O3", "-march=native", "-std=c11", "-fPIC", "-shared", "-fno-math-errno",
                                       "-fno-trapping-math", "-ffp-contract=off", "-w",
#if defined(__x86_64__)
                                       /* GCC keeps to 256-bit vectors on AVX-512 machines unless told otherwise;
                                        * the kernels' AVX-512 clones use the full width too */
                                       "-mprefer-vector-width=512",
#endif
};
#define NUM_CC_FLAGS (sizeof CC_FLAGS / sizeof CC_FLAGS[0])

struct axon_tier1 {
    int nfuncs;
    const char **names;                  /* kernel function names (in the module's arena: the module outlives us) */
    _Atomic(axon_tier1_fn) *fns;
    char *source;
    char key[65];
    axon_disk_cache_t cache;
    char cc[1024];                       /* the compiler's path; "" if none */
    pthread_t thread;
    int has_thread;
    pthread_mutex_t join_lock;           /* several threads may wait for the same compile */
    void *library_handle;
    char library[AXON_CACHE_PATH_MAX + 160];
    atomic_int done;                     /* 1 once the library is loaded or given up on */
    axon_status_t status;                /* why not, when done and no library */
    char message[600];
};

/* ---- the C compiler ---- */

/* The first executable called name on PATH into out; 0 if none. */
static int find_on_path(const char *name, char *out, size_t n) {
    if (strchr(name, '/')) {
        snprintf(out, n, "%s", name);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len > 0 && (size_t)snprintf(out, n, "%.*s/%s", (int)len, path, name) < n && access(out, X_OK) == 0)
            return 1;
        path += len + (colon ? 1 : 0);
    }
    return 0;
}

/* $AXON_CC (empty: tier 1 off), else cc, gcc or clang. */
static int find_compiler(char *out, size_t n) {
    const char *env = getenv("AXON_CC");
    if (env) return *env && find_on_path(env, out, n);
    return find_on_path("cc", out, n) || find_on_path("gcc", out, n) || find_on_path("clang", out, n);
}

/* Runs argv with stdout and stderr to log_path; returns the exit status, or -1 if it could not start. */
static int run_logged(char *const argv[], const char *log_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The compiler's identity for the cache key: its path and the first line of `cc --version`, read once per path. */
static void compiler_identity(const char *cc, const axon_disk_cache_t *cache, char *out, size_t n) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char cached_cc[1024], cached_id[512];
    pthread_mutex_lock(&lock);
    if (strcmp(cached_cc, cc) != 0) {
        char log[AXON_CACHE_PATH_MAX + 160];
        cached_id[0] = '\0';
        if (axon_disk_cache_temp_path(cache, "version", log, sizeof log) == AXON_OK) {
            char *argv[] = {(char *)cc, (char *)"--version", NULL};
            if (run_logged(argv, log) == 0) {
                FILE *f = fopen(log, "r");
                if (f) {
                    if (!fgets(cached_id, sizeof cached_id, f)) cached_id[0] = '\0';
                    fclose(f);
                }
            }
            unlink(log);
        }
        snprintf(cached_cc, sizeof cached_cc, "%s", cc);
    }
    snprintf(out, n, "%s|%s", cc, cached_id);
    pthread_mutex_unlock(&lock);
}

/* ---- load and compile ---- */

static axon_status_t load(axon_tier1_t *t, const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return axon_fail(AXON_ERROR_CONFIG, "tier 1: cannot load %s: %s", path, dlerror());
    for (int i = 0; i < t->nfuncs; i++) {
        if (!t->names[i]) continue;
        char symbol[64];
        snprintf(symbol, sizeof symbol, "axon_t1_%d", i);
        void *fn = dlsym(h, symbol);
        if (!fn) {
            dlclose(h);
            return axon_fail(AXON_ERROR_CONFIG, "tier 1: %s lacks %s (a corrupt cache entry?)", path, symbol);
        }
        axon_tier1_fn f;
        memcpy(&f, &fn, sizeof f);   /* POSIX guarantees the object/function pointer round trip */
        atomic_store_explicit(&t->fns[i], f, memory_order_release);
    }
    t->library_handle = h;
    snprintf(t->library, sizeof t->library, "%s", path);
    return AXON_OK;
}

/* Compiles the source into the cache and loads it. */
static axon_status_t compile_and_load(axon_tier1_t *t) {
    char src[AXON_CACHE_PATH_MAX + 160], so[AXON_CACHE_PATH_MAX + 160], log[AXON_CACHE_PATH_MAX + 160];
    char path[AXON_CACHE_PATH_MAX + 160];
    axon_status_t s = axon_disk_cache_store(&t->cache, t->key, "c", t->source, strlen(t->source));
    if (s != AXON_OK) return s;
    snprintf(src, sizeof src, "%s/%s.c", t->cache.dir, t->key);
    snprintf(log, sizeof log, "%s/%s.log", t->cache.dir, t->key);
    s = axon_disk_cache_temp_path(&t->cache, "so", so, sizeof so);
    if (s != AXON_OK) return s;
    char *argv[NUM_CC_FLAGS + 8];
    int argc = 0;
    argv[argc++] = t->cc;
    for (size_t i = 0; i < NUM_CC_FLAGS; i++) argv[argc++] = (char *)CC_FLAGS[i];
    argv[argc++] = (char *)"-o";
    argv[argc++] = so;
    argv[argc++] = src;
#ifdef AXON_HAVE_LIBMVEC
    argv[argc++] = (char *)"-lmvec";   /* the prelude declares libmvec's vector math (tier1_codegen.c) */
#endif
    argv[argc++] = (char *)"-lm";
    argv[argc] = NULL;
    int rc = run_logged(argv, log);
    if (rc != 0) {
        unlink(so);
        return axon_fail(AXON_ERROR_CONFIG, "tier 1: %s failed (exit %d) on %s; its output is in %s", t->cc, rc, src,
                         log);
    }
    unlink(log);
    s = axon_disk_cache_commit(&t->cache, t->key, "so", so, path, sizeof path);
    if (s != AXON_OK) return s;
    return load(t, path);
}

static void finish(axon_tier1_t *t, axon_status_t s) {
    if (s != AXON_OK) {
        t->status = s;
        snprintf(t->message, sizeof t->message, "%s", axon_last_error());
    }
    atomic_store_explicit(&t->done, 1, memory_order_release);
}

static void *compile_thread(void *arg) {
    axon_tier1_t *t = arg;
    finish(t, compile_and_load(t));
    return NULL;
}

/* ---- the module ---- */

static axon_status_t generate(axon_tier1_t *t, const axon_axir_module_t *m) {
    axir_buf_t b = {0};
    axon_tier1_prelude(&b);
    size_t prelude = b.len;
    for (int i = 0; i < t->nfuncs; i++) {
        const axon_axir_func_t *f = axon_axir_module_func(m, i);
        char symbol[64];
        snprintf(symbol, sizeof symbol, "axon_t1_%d", i);
        if (f->is_kernel && axon_tier1_generate(f, symbol, &b) == AXON_OK) t->names[i] = f->name;
    }
    if (b.oom) {
        free(b.data);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "tier 1: out of memory generating C");
    }
    if (b.len == prelude) {   /* no kernel function could be generated: nothing to compile */
        free(b.data);
        return AXON_OK;
    }
    t->source = b.data;
    return AXON_OK;
}

static void compute_key(axon_tier1_t *t) {
    axon_sha256_t h;
    axon_sha256_init(&h);
    char id[2048], cpu[256];
    compiler_identity(t->cc, &t->cache, id, sizeof id);
    axon_cpu_model(cpu, sizeof cpu);
    char head[512];
#ifdef AXON_HAVE_LIBMVEC
    const char *mvec = "mvec";
#else
    const char *mvec = "";
#endif
    snprintf(head, sizeof head, "axon tier1 | axir %d | libaxon %s | cpu %s %08x | %s |", AXON_AXIR_VERSION,
             axon_version(), cpu, axon_cpu_features(), mvec);
    axon_sha256_update(&h, head, strlen(head));
    axon_sha256_update(&h, id, strlen(id));
    for (size_t i = 0; i < NUM_CC_FLAGS; i++) axon_sha256_update(&h, CC_FLAGS[i], strlen(CC_FLAGS[i]) + 1);
    axon_sha256_update(&h, t->source, strlen(t->source));
    uint8_t digest[32];
    axon_sha256_final(&h, digest);
    axon_sha256_hex(digest, t->key);
}

axon_status_t axon_tier1_start(const axon_axir_module_t *m, int sync, axon_tier1_t **out) {
    *out = NULL;
    axon_tier1_t *t = calloc(1, sizeof *t);
    int n = axon_axir_module_num_funcs(m);
    if (!t || !(t->names = calloc((size_t)n + 1, sizeof *t->names)) ||
        !(t->fns = calloc((size_t)n + 1, sizeof *t->fns))) {
        if (t) free((void *)t->names);
        free(t);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "tier 1: out of memory");
    }
    t->nfuncs = n;
    pthread_mutex_init(&t->join_lock, NULL);
    *out = t;
    axon_status_t s = generate(t, m);
    if (s != AXON_OK || !t->source) {
        finish(t, s == AXON_OK ? axon_fail(AXON_ERROR_UNSUPPORTED, "tier 1: no kernel function to compile") : s);
        return AXON_OK;
    }
    if (!find_compiler(t->cc, sizeof t->cc)) {
        t->cc[0] = '\0';
        finish(t, axon_fail(AXON_ERROR_UNSUPPORTED, "tier 1: no C compiler (set AXON_CC, or install cc); tier 0 runs"));
        return AXON_OK;
    }
    s = axon_disk_cache_open(&t->cache);
    if (s != AXON_OK) {
        finish(t, s);
        return AXON_OK;
    }
    compute_key(t);
    char path[AXON_CACHE_PATH_MAX + 160];
    if (axon_disk_cache_lookup(&t->cache, t->key, "so", path, sizeof path) && load(t, path) == AXON_OK) {
        finish(t, AXON_OK);
        return AXON_OK;
    }
    const char *env = getenv("AXON_COMPILE_SYNC");
    if (sync || (env && strcmp(env, "1") == 0) ||
        pthread_create(&t->thread, NULL, compile_thread, t) != 0) {
        finish(t, compile_and_load(t));
        return AXON_OK;
    }
    t->has_thread = 1;
    return AXON_OK;
}

axon_tier1_fn axon_tier1_lookup(const axon_tier1_t *t, const char *kernel_name) {
    if (!t || !atomic_load_explicit(&t->done, memory_order_acquire)) return NULL;
    for (int i = 0; i < t->nfuncs; i++)
        if (t->names[i] && strcmp(t->names[i], kernel_name) == 0)
            return atomic_load_explicit(&t->fns[i], memory_order_acquire);
    return NULL;
}

axon_status_t axon_tier1_wait(axon_tier1_t *t) {
    if (!t) return axon_fail(AXON_ERROR_INVALID_ARG, "tier 1: NULL");
    pthread_mutex_lock(&t->join_lock);
    if (t->has_thread) {
        pthread_join(t->thread, NULL);
        t->has_thread = 0;
    }
    pthread_mutex_unlock(&t->join_lock);
    if (t->library_handle) return AXON_OK;
    return axon_fail(t->status == AXON_OK ? AXON_ERROR_INTERNAL : t->status, "%s", t->message);
}

const char *axon_tier1_key(const axon_tier1_t *t) { return t ? t->key : ""; }
const char *axon_tier1_source(const axon_tier1_t *t) { return t ? t->source : NULL; }

const char *axon_tier1_library(const axon_tier1_t *t) {
    return t && atomic_load_explicit(&t->done, memory_order_acquire) && t->library_handle ? t->library : NULL;
}

void axon_tier1_destroy(axon_tier1_t *t) {
    if (!t) return;
    if (t->has_thread) pthread_join(t->thread, NULL);
    if (t->library_handle) dlclose(t->library_handle);
    pthread_mutex_destroy(&t->join_lock);
    free(t->source);
    free((void *)t->names);
    free((void *)t->fns);
    free(t);
}

/* ---- launch ---- */

typedef struct tier1_args {
    axon_tier1_fn fn;
    int nops, rank;
    int64_t total;
    int64_t sizes[AXON_MAX_DIMS];
    char *ptrs[AXON_TIER1_MAX_OPERANDS];
    int64_t strides[AXON_TIER1_MAX_OPERANDS * AXON_MAX_DIMS];
} tier1_args_t;

/* Merge the iteration's dimensions (axon_dims_coalesce): the generated kernels vectorize the innermost dimension in
 * blocks of 64 and send shorter rows through a buffer, so a contiguous [32, 16, 32, 32] (rows of 32) took 1.57 ns per
 * element in a ReLU backward's where(le(x, 0), 0, g) against 0.69 for the two eager ops; merged it is one row. */
static void tier1_coalesce(tier1_args_t *a) {
    int64_t *strides[AXON_TIER1_MAX_OPERANDS];
    for (int k = 0; k < a->nops; k++) strides[k] = &a->strides[k * AXON_MAX_DIMS];
    axon_dims_coalesce(&a->rank, a->sizes, a->nops, strides);
}

static void tier1_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const tier1_args_t *a = ctx;
    a->fn(a->ptrs, a->strides, a->sizes, a->rank, begin, end);
}

static axon_status_t tier1_kernel(const void *args, const axon_exec_t *ex) {
    const tier1_args_t *a = args;
    /* ~32 KiB of float32 output per task: enough to amortize the hand-off, small enough to balance 2-16 threads. */
    axon_parallel_for(ex->pool, 0, a->total, 8192, tier1_range, (void *)a);
    return AXON_OK;
}

/* The launch block of fn over iter (operands ops: parameters, then results), its dimensions merged. */
static axon_status_t tier1_prepare(tier1_args_t *ap, axon_tier1_fn fn, int nops, const axon_tensor_t *ops,
                                   const axon_tensor_t *iter) {
    if (!fn || nops < 1 || nops > AXON_TIER1_MAX_OPERANDS)
        return axon_fail(AXON_ERROR_INVALID_ARG, "tier 1 launch: %d operands (1..%d)", nops, AXON_TIER1_MAX_OPERANDS);
    tier1_args_t a;
    memset(&a, 0, sizeof a);
    a.fn = fn;
    a.nops = nops;
    a.rank = iter->ndim;
    a.total = axon_tensor_numel(iter);
    for (int d = 0; d < iter->ndim; d++) a.sizes[d] = iter->sizes[d];
    for (int k = 0; k < nops; k++) {
        const axon_tensor_t *t = &ops[k];
        if (t->ndim > iter->ndim) return axon_fail(AXON_ERROR_INVALID_ARG, "tier 1 launch: operand %d rank", k);
        a.ptrs[k] = t->data;
        for (int d = 0; d < iter->ndim; d++) {
            int od = d - (iter->ndim - t->ndim);   /* NumPy alignment: trailing dims match */
            int64_t stride = 0;
            if (od >= 0) {
                if (t->sizes[od] == iter->sizes[d]) stride = t->strides[od];
                else if (t->sizes[od] != 1)
                    return axon_fail(AXON_ERROR_INVALID_ARG, "tier 1 launch: operand %d size %lld at dim %d vs %lld",
                                     k, (long long)t->sizes[od], d, (long long)iter->sizes[d]);
            }
            a.strides[k * AXON_MAX_DIMS + d] = iter->sizes[d] == 1 ? 0 : stride;
        }
    }
    tier1_coalesce(&a);
    *ap = a;
    return AXON_OK;
}

axon_status_t axon_tier1_launch(axon_stream_t s, axon_tier1_fn fn, int nops, const axon_tensor_t *ops,
                                const axon_tensor_t *iter) {
    tier1_args_t a;
    axon_status_t st = tier1_prepare(&a, fn, nops, ops, iter);
    if (st != AXON_OK || a.total == 0) return st;
    /* The block carries only the operands used; the fixed-size arrays keep the layout simple. */
    axon_launch_t l = {tier1_kernel, &a, sizeof a, "tier1_fused", 0};
    return axon_stream_launch(s, &l);
}

/* An epilogue's ranges are elements of the iteration space, which merging dimensions leaves in the same order. */
static void tier1_epilogue_range(const void *ctx, int64_t begin, int64_t end) {
    const tier1_args_t *a = ctx;
    a->fn(a->ptrs, a->strides, a->sizes, a->rank, begin, end);
}

_Static_assert(sizeof(tier1_args_t) <= AXON_GEMM_EPILOGUE_MAX, "a tier-1 launch block must fit a GEMM epilogue");

axon_status_t axon_tier1_epilogue(axon_tier1_fn fn, int nops, const axon_tensor_t *ops, const axon_tensor_t *iter,
                                  void *ctx, axon_gemm_epilogue_t *epi) {
    axon_status_t st = tier1_prepare(ctx, fn, nops, ops, iter);
    if (st != AXON_OK) return st;
    epi->fn = tier1_epilogue_range;
    epi->ctx = ctx;
    epi->ctx_size = sizeof(tier1_args_t);
    return AXON_OK;
}
