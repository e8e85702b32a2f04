/* The CPU port: device memory is anonymous mapped host RAM; kernels run on the stream's worker with the device's
 * pool; copies and fills are split across the pool because one core cannot saturate memory bandwidth. */
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* Below this a copy runs on the calling worker alone: waking helpers costs more than it saves. */
#define CPU_PARALLEL_COPY_MIN ((size_t)1 << 20)
#define CPU_COPY_CHUNK_ALIGN 4096

static axon_status_t cpu_mem_map(void *ctx, int device, size_t n, void **out) {
    const axon_hw_cpu_options_t *opt = ctx;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        *out = NULL;
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axon:%d: the system refused to map %zu bytes", device, n);
    }
#ifdef MADV_HUGEPAGE
    /* Opt-in: fewer page faults and TLB misses, but where the kernel compacts memory to find huge pages (defrag
     * "madvise", the usual default) a first touch can stall: on a 2-core VM a training step's first call took
     * 0.8-1.7 s with the advice and 0.18-0.25 s without (docs/benchmarks.md, "First calls"). */
    if (opt != NULL && opt->hugepages && n >= ((size_t)2 << 20)) madvise(p, n, MADV_HUGEPAGE);
#endif
    *out = p;
    return AXON_OK;
}

static void cpu_mem_unmap(void *ctx, int device, void *p, size_t n) {
    (void)ctx;
    (void)device;
    munmap(p, n);
}

static axon_status_t cpu_mem_protect(void *ctx, void *p, size_t n, int host_access) {
    (void)ctx;
    if (mprotect(p, n, host_access ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
        return axon_fail(AXON_ERROR_INTERNAL, "mprotect(%p, %zu) failed", p, n);
    return AXON_OK;
}

static axon_status_t cpu_execute(void *ctx, const axon_launch_t *l, const axon_exec_t *ex) {
    (void)ctx;
    return l->fn(l->args, ex);
}

struct copy_job {
    char *dst;
    const char *src;
    size_t n;
    int value;
    size_t chunk;
};

static void copy_range(void *arg, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct copy_job *j = arg;
    for (int64_t c = begin; c < end; c++) {
        size_t off = (size_t)c * j->chunk, len = j->n - off < j->chunk ? j->n - off : j->chunk;
        axon_move_bytes(j->dst + off, j->src + off, len);
    }
}

static void fill_range(void *arg, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct copy_job *j = arg;
    for (int64_t c = begin; c < end; c++) {
        size_t off = (size_t)c * j->chunk, len = j->n - off < j->chunk ? j->n - off : j->chunk;
        memset(j->dst + off, j->value, len);
    }
}

/* Split n bytes into page-aligned chunks, a few per participant so uneven progress evens out. */
static size_t chunk_size(size_t n, axon_pool_t pool) {
    size_t parts = (size_t)axon_pool_size(pool) * 4;
    size_t chunk = (n + parts - 1) / parts;
    chunk = (chunk + CPU_COPY_CHUNK_ALIGN - 1) / CPU_COPY_CHUNK_ALIGN * CPU_COPY_CHUNK_ALIGN;
    return chunk;
}

static axon_status_t cpu_copy(void *ctx, void *dst, const void *src, size_t n, axon_copy_kind_t kind,
                              const axon_exec_t *ex) {
    (void)ctx;
    (void)kind;
    if (n < CPU_PARALLEL_COPY_MIN || ex->pool == NULL || axon_pool_size(ex->pool) == 1) {
        memmove(dst, src, n);
        return AXON_OK;
    }
    if ((const char *)src < (char *)dst + n && (const char *)dst < (const char *)src + n) {
        memmove(dst, src, n); /* overlapping ranges need one ordered pass */
        return AXON_OK;
    }
    struct copy_job j = {dst, src, n, 0, chunk_size(n, ex->pool)};
    axon_parallel_for(ex->pool, 0, (int64_t)((n + j.chunk - 1) / j.chunk), 1, copy_range, &j);
    return AXON_OK;
}

static axon_status_t cpu_fill(void *ctx, void *dst, int value, size_t n, const axon_exec_t *ex) {
    (void)ctx;
    if (n < CPU_PARALLEL_COPY_MIN || ex->pool == NULL || axon_pool_size(ex->pool) == 1) {
        memset(dst, value, n);
        return AXON_OK;
    }
    struct copy_job j = {dst, NULL, n, value, chunk_size(n, ex->pool)};
    axon_parallel_for(ex->pool, 0, (int64_t)((n + j.chunk - 1) / j.chunk), 1, fill_range, &j);
    return AXON_OK;
}

static const axon_hw_ops_t cpu_ops = {
    .abi_version = AXON_HW_ABI_VERSION,
    .name = "cpu",
    .mem_map = cpu_mem_map,
    .mem_unmap = cpu_mem_unmap,
    .mem_protect = cpu_mem_protect,
    .execute = cpu_execute,
    .copy = cpu_copy,
    .fill = cpu_fill,
};

const axon_hw_ops_t *axon_hw_cpu(void) { return &cpu_ops; }
