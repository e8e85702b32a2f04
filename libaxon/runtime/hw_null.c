/* The null port: memory is real host memory (so the allocator and copies' validation work), but kernels, copies and
 * fills are only recorded, in the order the workers submit them. Scheduler and stream tests use it to observe
 * ordering without running anything. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"

struct axon_hw_null {
    pthread_mutex_t lock;
    const char **names;
    size_t count, cap;
};

axon_status_t axon_hw_null_create(axon_hw_null_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_hw_null_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (*out == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon_hw_null_create: no host memory");
    pthread_mutex_init(&(*out)->lock, NULL);
    return AXON_OK;
}

void axon_hw_null_destroy(axon_hw_null_t n) {
    if (n == NULL) return;
    pthread_mutex_destroy(&n->lock);
    free(n->names);
    free(n);
}

size_t axon_hw_null_count(axon_hw_null_t n) {
    if (n == NULL) return 0;
    pthread_mutex_lock(&n->lock);
    size_t c = n->count;
    pthread_mutex_unlock(&n->lock);
    return c;
}

const char *axon_hw_null_name(axon_hw_null_t n, size_t i) {
    if (n == NULL) return NULL;
    pthread_mutex_lock(&n->lock);
    const char *name = i < n->count ? n->names[i] : NULL;
    pthread_mutex_unlock(&n->lock);
    return name;
}

static axon_status_t record(void *ctx, const char *name) {
    axon_hw_null_t n = ctx;
    if (n == NULL) return AXON_OK;
    axon_status_t st = AXON_OK;
    pthread_mutex_lock(&n->lock);
    if (n->count == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 64;
        const char **grown = realloc(n->names, cap * sizeof *grown);
        if (grown) {
            n->names = grown;
            n->cap = cap;
        }
    }
    if (n->count < n->cap)
        n->names[n->count++] = name;
    else
        st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "null port: no host memory to record a submission");
    pthread_mutex_unlock(&n->lock);
    return st;
}

static axon_status_t null_mem_map(void *ctx, int device, size_t n, void **out) {
    (void)ctx;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        *out = NULL;
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d (null): the system refused to map %zu bytes", device, n);
    }
    *out = p;
    return AXON_OK;
}

static void null_mem_unmap(void *ctx, int device, void *p, size_t n) {
    (void)ctx;
    (void)device;
    munmap(p, n);
}

static axon_status_t null_execute(void *ctx, const axon_launch_t *l, const axon_exec_t *ex) {
    (void)ex;
    return record(ctx, l->name ? l->name : "kernel");
}

static axon_status_t null_copy(void *ctx, void *dst, const void *src, size_t n, axon_copy_kind_t kind,
                               const axon_exec_t *ex) {
    (void)dst, (void)src, (void)n, (void)kind, (void)ex;
    return record(ctx, "copy");
}

static axon_status_t null_fill(void *ctx, void *dst, int value, size_t n, const axon_exec_t *ex) {
    (void)dst, (void)value, (void)n, (void)ex;
    return record(ctx, "fill");
}

static const axon_hw_ops_t null_ops = {
    .abi_version = AXON_HW_ABI_VERSION,
    .name = "null",
    .mem_map = null_mem_map,
    .mem_unmap = null_mem_unmap,
    .mem_protect = NULL, /* strict mode is meaningless when nothing runs */
    .execute = null_execute,
    .copy = null_copy,
    .fill = null_fill,
};

const axon_hw_ops_t *axon_hw_null(void) { return &null_ops; }
