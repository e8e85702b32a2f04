/* Tests of the allocator's two debugging modes whose memory faults: strict mode (device memory faults on host access
 * outside the runtime's own commands) and AXON_ALLOC_GUARD (an access past an allocation's end, or to freed memory,
 * faults). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static axon_runtime_t guard_or_strict_runtime(int strict, int guard) {
    axon_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.device_count = 1;
    cfg.memory_capacity = (size_t)256 << 20;
    cfg.threads_per_device = 2;
    cfg.strict = strict;
    cfg.alloc_guard = guard;
    axon_runtime_t rt = NULL;
    if (axon_runtime_create(&cfg, &rt) != AXON_OK) fprintf(stderr, "strict_runtime: %s\n", axon_last_error());
    return rt;
}

static axon_runtime_t strict_runtime(int strict) { return guard_or_strict_runtime(strict, 0); }

/* Fork a child that reads (or writes) *p from the host, and return how it ended: the signal that killed it, or 0 if
 * it exited normally. The child restores the default SIGSEGV action first: a sanitizer's handler would otherwise turn
 * the fault into an ordinary exit with an error report. */
static int host_access_in_child(volatile unsigned char *p, int write) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        if (write) p[0] = 1;
        else (void)p[0];
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    if (WIFSIGNALED(status)) return WTERMSIG(status);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

struct fill_args {
    unsigned char *p;
    size_t n;
    unsigned char value;
};

static void fill_range(void *ctx, int64_t b, int64_t e, int slot) {
    const struct fill_args *a = ctx;
    memset(a->p + b, a->value, (size_t)(e - b));
}

/* Writes device memory from the stream worker and the device's pool helpers. */
static axon_status_t fill_kernel(const void *args, const axon_exec_t *ex) {
    struct fill_args a = *(const struct fill_args *)args;
    axon_parallel_for(ex->pool, 0, (int64_t)a.n, 4096, fill_range, &a);
    return AXON_OK;
}

static void test_host_access_to_device_memory_faults_in_strict_mode(void) {
    axon_runtime_t rt = strict_runtime(1);
    REQUIRE(rt != NULL);
    axon_device_t d = check_device(rt, 0);
    axon_device_props_t props;
    CHECK_OK(axon_device_properties(d, &props));
    CHECK_EQ_I64(props.strict, 1);
    void *small = NULL, *large = NULL;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &small));
    CHECK_OK(axon_mem_alloc(d, (size_t)8 << 20, NULL, &large));
    REQUIRE(small != NULL && large != NULL);
    CHECK_EQ_I64(host_access_in_child(small, 0), SIGSEGV);
    CHECK_EQ_I64(host_access_in_child(small, 1), SIGSEGV);
    CHECK_EQ_I64(host_access_in_child((unsigned char *)large + (4 << 20), 0), SIGSEGV);
    CHECK_OK(axon_mem_free(d, small));
    CHECK_OK(axon_mem_free(d, large));
    axon_runtime_destroy(rt);
}

static void test_a_kernel_on_a_stream_may_write_device_memory_in_strict_mode(void) {
    axon_runtime_t rt = strict_runtime(1);
    REQUIRE(rt != NULL);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s = NULL;
    CHECK_OK(axon_stream_create(d, 0, &s));
    size_t n = (size_t)1 << 20;
    unsigned char *p = NULL;
    CHECK_OK(axon_mem_alloc(d, n, s, (void **)&p));
    REQUIRE(p != NULL && s != NULL);
    struct fill_args a = {p, n, 0x5a};
    axon_launch_t l = {.fn = fill_kernel, .args = &a, .args_size = sizeof a, .name = "fill"};
    CHECK_OK(axon_stream_launch(s, &l));
    CHECK_OK(axon_stream_sync(s));
    unsigned char *host = malloc(n);
    REQUIRE(host != NULL);
    CHECK_OK(axon_memcpy(host, p, n, AXON_COPY_DEVICE_TO_HOST, s));
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += host[i] != 0x5a;
    CHECK_EQ_I64(wrong, 0);
    CHECK_EQ_I64(host_access_in_child(p, 0), SIGSEGV); /* closed again once the kernel is done */
    free(host);
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_stream_destroy(s));
    axon_runtime_destroy(rt);
}

static void test_a_memcpy_round_trip_through_device_memory_works_in_strict_mode(void) {
    axon_runtime_t rt = strict_runtime(1);
    REQUIRE(rt != NULL);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s = NULL;
    CHECK_OK(axon_stream_default(d, &s));
    size_t n = 300000;
    void *dev = NULL, *dev2 = NULL;
    CHECK_OK(axon_mem_alloc(d, n, s, &dev));
    CHECK_OK(axon_mem_alloc(d, n, s, &dev2));
    unsigned char *src = malloc(n), *dst = malloc(n), *pinned = NULL;
    CHECK_OK(axon_host_alloc(rt, n, (void **)&pinned));
    REQUIRE(dev != NULL && dev2 != NULL && src != NULL && dst != NULL && pinned != NULL);
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 7 + 3);
    /* Pageable host memory is copied on the calling thread, pinned memory on the stream's worker. */
    CHECK_OK(axon_memcpy(dev, src, n, AXON_COPY_HOST_TO_DEVICE, s));
    CHECK_OK(axon_memcpy(dev2, dev, n, AXON_COPY_DEVICE_TO_DEVICE, s));
    CHECK_OK(axon_memcpy(pinned, dev2, n, AXON_COPY_DEVICE_TO_HOST, s));
    CHECK(memcmp(pinned, src, n) == 0);
    memset(dst, 0, n);
    CHECK_OK(axon_memcpy(dev, pinned, n, AXON_COPY_HOST_TO_DEVICE, s));
    CHECK_OK(axon_memcpy(dst, dev, n, AXON_COPY_DEVICE_TO_HOST, s));
    CHECK(memcmp(dst, src, n) == 0);
    CHECK_EQ_I64(host_access_in_child(dev, 0), SIGSEGV);
    free(src);
    free(dst);
    CHECK_OK(axon_host_free(rt, pinned));
    CHECK_OK(axon_mem_free(d, dev));
    CHECK_OK(axon_mem_free(d, dev2));
    axon_runtime_destroy(rt);
}

#define STRESS_STREAMS 4
#define STRESS_KERNELS 100

static void test_kernels_on_many_streams_at_once_never_see_memory_closed(void) {
    axon_runtime_t rt = strict_runtime(1);
    REQUIRE(rt != NULL);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s[STRESS_STREAMS] = {0};
    unsigned char *p[STRESS_STREAMS] = {0};
    size_t n = 64 << 10;
    for (int i = 0; i < STRESS_STREAMS; i++) {
        CHECK_OK(axon_stream_create(d, 0, &s[i]));
        CHECK_OK(axon_mem_alloc(d, n, s[i], (void **)&p[i]));
        REQUIRE(s[i] != NULL && p[i] != NULL);
    }
    /* Sections begin and end on several workers at once: every 0 <-> 1 crossing races with enters elsewhere. A wrong
     * close would kill this process with SIGSEGV inside a kernel. */
    for (int k = 0; k < STRESS_KERNELS; k++)
        for (int i = 0; i < STRESS_STREAMS; i++) {
            struct fill_args a = {p[i], n, (unsigned char)(k + i)};
            axon_launch_t l = {.fn = fill_kernel, .args = &a, .args_size = sizeof a, .name = "fill"};
            CHECK_OK(axon_stream_launch(s[i], &l));
        }
    unsigned char *host = malloc(n);
    REQUIRE(host != NULL);
    for (int i = 0; i < STRESS_STREAMS; i++) {
        CHECK_OK(axon_stream_sync(s[i]));
        CHECK_OK(axon_memcpy(host, p[i], n, AXON_COPY_DEVICE_TO_HOST, s[i]));
        CHECK_EQ_I64(host[0], (unsigned char)(STRESS_KERNELS - 1 + i));
        CHECK_EQ_I64(host[n - 1], (unsigned char)(STRESS_KERNELS - 1 + i));
        CHECK_OK(axon_mem_free(d, p[i]));
        CHECK_OK(axon_stream_destroy(s[i]));
    }
    free(host);
    axon_runtime_destroy(rt);
}

static axon_status_t sleep_kernel(const void *args, const axon_exec_t *ex) {
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return AXON_OK;
}

static void test_a_segment_mapped_while_a_kernel_runs_is_closed_when_it_ends(void) {
    axon_runtime_t rt = strict_runtime(1);
    REQUIRE(rt != NULL);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s = NULL, other = NULL;
    CHECK_OK(axon_stream_create(d, 0, &s));
    CHECK_OK(axon_stream_create(d, 0, &other));
    axon_launch_t l = {.fn = sleep_kernel, .name = "sleep"};
    CHECK_OK(axon_stream_launch(s, &l));
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL); /* let the kernel start, so the new segment is registered inside a section */
    void *p = NULL;
    CHECK_OK(axon_mem_alloc(d, (size_t)16 << 20, other, &p)); /* large: a fresh segment */
    REQUIRE(p != NULL);
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(host_access_in_child(p, 0), SIGSEGV);
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_stream_destroy(s));
    CHECK_OK(axon_stream_destroy(other));
    axon_runtime_destroy(rt);
}

static void test_host_access_to_device_memory_does_not_fault_when_strict_is_off(void) {
    axon_runtime_t rt = strict_runtime(0);
    REQUIRE(rt != NULL);
    axon_device_t d = check_device(rt, 0);
    void *p = NULL;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &p));
    REQUIRE(p != NULL);
    CHECK_EQ_I64(host_access_in_child(p, 0), 0);
    CHECK_EQ_I64(host_access_in_child(p, 1), 0);
    CHECK_OK(axon_mem_free(d, p));
    axon_runtime_destroy(rt);
}

static void test_strict_mode_needs_a_port_with_mem_protect(void) {
    axon_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.device_count = 1;
    cfg.memory_capacity = (size_t)16 << 20;
    cfg.threads_per_device = 1;
    cfg.strict = 1;
    cfg.hw = axon_hw_null();
    axon_runtime_t rt = (axon_runtime_t)&cfg;
    CHECK_STATUS(axon_runtime_create(&cfg, &rt), AXON_ERROR_UNSUPPORTED);
    CHECK(rt == NULL);
    CHECK_MSG("strict mode needs a port with mem_protect");
}

/* AXON_ALLOC_GUARD: every allocation is its own mapping, its rounded end (the AXON_MEM_ALIGNMENT multiple kernels may
 * touch) meets an inaccessible page, and freed memory is unmapped once no stream may use it. */
static void test_guard_allocations_fault_past_their_end_and_once_freed(void) {
    axon_runtime_t rt = guard_or_strict_runtime(0, 1);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    const size_t sizes[] = {1, 100, AXON_MEM_ALIGNMENT, 4096, 5000, ((size_t)1 << 20) + 3};
    unsigned char *p[6];
    axon_mem_stats_t st0, st1;
    CHECK_OK(axon_mem_stats(d, &st0));
    for (int i = 0; i < 6; i++) {
        CHECK_OK(axon_mem_alloc(d, sizes[i], NULL, (void **)&p[i]));
        REQUIRE(p[i]);
        CHECK((uintptr_t)p[i] % AXON_MEM_ALIGNMENT == 0);
        const size_t end = (sizes[i] + AXON_MEM_ALIGNMENT - 1) / AXON_MEM_ALIGNMENT * AXON_MEM_ALIGNMENT;
        memset(p[i], 7, end);
        CHECK_EQ_I64(host_access_in_child(p[i] + end - 1, 1), 0);
        CHECK_EQ_I64(host_access_in_child(p[i] + end, 1), SIGSEGV);
        CHECK_EQ_I64(host_access_in_child(p[i] + end, 0), SIGSEGV);
    }
    CHECK_OK(axon_mem_stats(d, &st1));
    CHECK_EQ_I64(st1.num_device_alloc - st0.num_device_alloc, 6);   /* nothing shares a mapping */
    CHECK_OK(axon_mem_free(d, p[3]));
    CHECK_OK(axon_mem_free(d, p[1]));
    void *q = NULL;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &q));   /* unmaps what was freed, and reuses nothing */
    CHECK(q != p[3] && q != p[1]);
    CHECK_EQ_I64(host_access_in_child(p[3], 0), SIGSEGV);
    CHECK_EQ_I64(host_access_in_child(p[1], 1), SIGSEGV);
    CHECK_EQ_I64(host_access_in_child(p[0], 1), 0);
    CHECK_OK(axon_mem_free(d, q));
    for (int i = 0; i < 6; i++)
        if (i != 1 && i != 3) CHECK_OK(axon_mem_free(d, p[i]));
    axon_runtime_destroy(rt);
}

int main(void) {
    RUN(test_host_access_to_device_memory_faults_in_strict_mode);
    RUN(test_a_kernel_on_a_stream_may_write_device_memory_in_strict_mode);
    RUN(test_a_memcpy_round_trip_through_device_memory_works_in_strict_mode);
    RUN(test_kernels_on_many_streams_at_once_never_see_memory_closed);
    RUN(test_a_segment_mapped_while_a_kernel_runs_is_closed_when_it_ends);
    RUN(test_host_access_to_device_memory_does_not_fault_when_strict_is_off);
    RUN(test_strict_mode_needs_a_port_with_mem_protect);
    RUN(test_guard_allocations_fault_past_their_end_and_once_freed);
    return check_report();
}
