/* The device caching allocator: alignment, reuse, split and merge, statistics, capacity and OOM, stream-aware reuse
 * (record_stream, cross-stream reuse), the pointer registry, bad input, and many threads at once. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static axon_status_t sleep_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    sleep_ms(*(const int *)args);
    return AXON_OK;
}

/* Keep stream s busy for ms milliseconds. */
static axon_status_t launch_sleep(axon_stream_t s, int ms) {
    axon_launch_t l = {sleep_kernel, &ms, sizeof ms, "sleep", 0};
    return axon_stream_launch(s, &l);
}

static axon_mem_stats_t stats_of(axon_device_t d) {
    axon_mem_stats_t s;
    memset(&s, 0, sizeof s);
    axon_mem_stats(d, &s);
    return s;
}

static axon_stream_t default_stream(axon_device_t d) {
    axon_stream_t s = NULL;
    axon_stream_default(d, &s);
    return s;
}

static void test_allocations_are_aligned_to_512_bytes(void) {
    axon_runtime_t rt = check_runtime(1, 256 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    size_t sizes[] = {1, 7, 511, 512, 513, 1000, 4097, MIB - 1, MIB, MIB + 1, 3 * MIB + 5, 11 * MIB + 3};
    void *p[sizeof sizes / sizeof sizes[0]];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_OK(axon_mem_alloc(d, sizes[i], NULL, &p[i]));
        CHECK(p[i] != NULL);
        CHECK_EQ_I64((uintptr_t)p[i] % AXON_MEM_ALIGNMENT, 0);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) CHECK_OK(axon_mem_free(d, p[i]));
    axon_runtime_destroy(rt);
}

static void test_zero_bytes_gives_null_and_ok(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p = (void *)1;
    CHECK_OK(axon_mem_alloc(d, 0, NULL, &p));
    CHECK(p == NULL);
    CHECK_EQ_I64(stats_of(d).allocation[AXON_POOL_ALL].current, 0);
    CHECK_OK(axon_mem_free(d, NULL));
    axon_runtime_destroy(rt);
}

static void test_freed_block_is_reused_at_once_on_its_stream(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p, *q;
    CHECK_OK(axon_mem_alloc(d, 1000, NULL, &p));
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 1000, NULL, &q));
    CHECK(q == p);
    CHECK_OK(axon_mem_free(d, q));
    /* Even while the stream still has work queued that may touch p: stream order protects it. */
    axon_stream_t s = default_stream(d);
    CHECK_OK(axon_mem_alloc(d, 5 * MIB, s, &p));
    CHECK_OK(launch_sleep(s, 30));
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 5 * MIB, s, &q));
    CHECK(q == p);
    CHECK_OK(axon_mem_free(d, q));
    CHECK_EQ_I64(stats_of(d).num_device_alloc, 2);
    axon_runtime_destroy(rt);
}

static void test_two_small_allocations_split_one_segment(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *a, *b;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &a));
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &b));
    CHECK((char *)b == (char *)a + 4096);
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.segment[AXON_POOL_ALL].current, 1);
    CHECK_EQ_I64(s.inactive_split[AXON_POOL_SMALL].current, 1);
    CHECK_EQ_I64(s.inactive_split_bytes[AXON_POOL_SMALL].current, 2 * MIB - 8192);
    CHECK_OK(axon_mem_free(d, a));
    CHECK_OK(axon_mem_free(d, b));
    s = stats_of(d);
    CHECK_EQ_I64(s.inactive_split[AXON_POOL_ALL].current, 0); /* one free block spans the segment again */
    CHECK_EQ_I64(s.inactive_split_bytes[AXON_POOL_ALL].current, 0);
    axon_runtime_destroy(rt);
}

static void test_freed_neighbours_merge_for_a_larger_request(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *a, *b, *c, *big;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &a));
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &b));
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &c)); /* fences a+b off from the rest of the segment */
    CHECK_OK(axon_mem_free(d, a));
    CHECK_OK(axon_mem_free(d, b));
    CHECK_EQ_I64(stats_of(d).inactive_split[AXON_POOL_SMALL].current, 2); /* a+b, and the tail after c */
    CHECK_OK(axon_mem_alloc(d, 8192, NULL, &big));
    CHECK(big == a);
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.segment[AXON_POOL_ALL].current, 1);
    CHECK_EQ_I64(s.num_device_alloc, 1);
    CHECK_OK(axon_mem_free(d, big));
    CHECK_OK(axon_mem_free(d, c));
    axon_runtime_destroy(rt);
}

static void test_stats_follow_a_known_sequence(void) {
    axon_runtime_t rt = check_runtime(1, 256 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *small, *large, *huge;
    CHECK_OK(axon_mem_alloc(d, 1000, NULL, &small));   /* 1024 bytes of a 2 MiB small segment */
    CHECK_OK(axon_mem_alloc(d, 3 * MIB, NULL, &large)); /* 3 MiB of a 20 MiB large segment */
    CHECK_OK(axon_mem_alloc(d, 31 * MIB + 1, NULL, &huge)); /* its own segment, rounded to 32 MiB */
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].current, 3);
    CHECK_EQ_I64(s.allocation[AXON_POOL_SMALL].current, 1);
    CHECK_EQ_I64(s.allocation[AXON_POOL_LARGE].current, 2);
    CHECK_EQ_I64(s.segment[AXON_POOL_ALL].current, 3);
    CHECK_EQ_I64(s.segment[AXON_POOL_SMALL].current, 1);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_SMALL].current, 2 * MIB);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_LARGE].current, 52 * MIB);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_ALL].current, 54 * MIB);
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_SMALL].current, 1024);
    /* 31 MiB + 1 rounds to 31 MiB + 512; the 1 MiB - 512 rest of its segment is too small to split off. */
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_LARGE].current, 3 * MIB + 32 * MIB);
    CHECK_EQ_I64(s.requested_bytes[AXON_POOL_ALL].current, 1000 + 3 * MIB + 31 * MIB + 1);
    CHECK_EQ_I64(s.active[AXON_POOL_ALL].current, 3);
    CHECK_EQ_I64(s.active_bytes[AXON_POOL_ALL].current, 1024 + 35 * MIB);
    CHECK_EQ_I64(s.inactive_split[AXON_POOL_SMALL].current, 1);
    CHECK_EQ_I64(s.inactive_split[AXON_POOL_LARGE].current, 1);
    CHECK_EQ_I64(s.inactive_split_bytes[AXON_POOL_LARGE].current, 17 * MIB);
    CHECK_EQ_I64(s.num_device_alloc, 3);
    CHECK_EQ_I64(s.capacity, 256 * MIB);

    CHECK_OK(axon_mem_free(d, small));
    CHECK_OK(axon_mem_free(d, huge));
    s = stats_of(d);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].current, 1);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].peak, 3);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].allocated, 3);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].freed, 2);
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_SMALL].current, 0);
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_SMALL].peak, 1024);
    CHECK_EQ_I64(s.requested_bytes[AXON_POOL_SMALL].current, 0);
    CHECK_EQ_I64(s.requested_bytes[AXON_POOL_SMALL].peak, 1000);
    CHECK_EQ_I64(s.active[AXON_POOL_SMALL].current, 0);
    CHECK_EQ_I64(s.inactive_split[AXON_POOL_SMALL].current, 0);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_ALL].current, 54 * MIB); /* cached, not released */

    CHECK_OK(axon_mem_reset_peak(d));
    s = stats_of(d);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].peak, 1);
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_ALL].peak, 3 * MIB);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].allocated, 3); /* totals survive a peak reset */

    CHECK_OK(axon_mem_reset_accumulated(d));
    s = stats_of(d);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].allocated, 0);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].freed, 0);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].current, 1);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_ALL].allocated, 0);
    CHECK_EQ_I64(s.num_device_alloc, 0);
    CHECK_OK(axon_mem_free(d, large));
    s = stats_of(d);
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_ALL].current, 0);
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_ALL].freed, 3 * MIB);
    axon_runtime_destroy(rt);
}

static void test_empty_cache_releases_only_unused_segments(void) {
    axon_runtime_t rt = check_runtime(1, 256 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *keep, *drop, *big;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &keep));
    CHECK_OK(axon_mem_alloc(d, 2 * MIB, NULL, &drop)); /* large pool: its own 20 MiB segment */
    CHECK_OK(axon_mem_alloc(d, 30 * MIB, NULL, &big));
    CHECK_OK(axon_mem_free(d, drop));
    CHECK_OK(axon_mem_free(d, big));
    CHECK_EQ_I64(stats_of(d).reserved_bytes[AXON_POOL_ALL].current, 52 * MIB);
    CHECK_OK(axon_mem_empty_cache(d));
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_ALL].current, 2 * MIB);
    CHECK_EQ_I64(s.segment[AXON_POOL_ALL].current, 1);
    CHECK_EQ_I64(s.num_device_free, 2);
    CHECK(axon_mem_contains(d, keep, 4096));
    CHECK(!axon_mem_contains(d, big, 1));
    CHECK_OK(axon_mem_free(d, keep));
    CHECK_OK(axon_mem_empty_cache(d));
    CHECK_EQ_I64(stats_of(d).reserved_bytes[AXON_POOL_ALL].current, 0);
    axon_runtime_destroy(rt);
}

static void test_out_of_memory_names_the_sizes_and_the_allocator_recovers(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *a, *b = (void *)1;
    CHECK_OK(axon_mem_alloc(d, 40 * MIB, NULL, &a));
    CHECK_STATUS(axon_mem_alloc(d, 30 * MIB, NULL, &b), AXON_ERROR_OUT_OF_MEMORY);
    CHECK(b == NULL);
    CHECK_MSG("axon:0 out of memory");
    CHECK_MSG("tried to allocate 30.00 MiB");
    CHECK_MSG("capacity 64.00 MiB");
    CHECK_MSG("40.00 MiB allocated");
    CHECK_MSG("40.00 MiB reserved");
    CHECK_MSG("24.00 MiB free");
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.num_ooms, 1);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].current, 1);
    CHECK_OK(axon_mem_free(d, a));
    CHECK_OK(axon_mem_alloc(d, 30 * MIB, NULL, &b)); /* from the cached 40 MiB segment */
    CHECK_OK(axon_mem_free(d, b));
    /* 60 MiB fits only once the cached 40 MiB segment is released: a retry, not an OOM. */
    int64_t retries = stats_of(d).num_alloc_retries;
    CHECK_OK(axon_mem_alloc(d, 60 * MIB, NULL, &b));
    s = stats_of(d);
    CHECK_EQ_I64(s.num_alloc_retries, retries + 1);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_ALL].current, 60 * MIB);
    CHECK_EQ_I64(s.num_ooms, 1);
    CHECK_OK(axon_mem_free(d, b));
    axon_runtime_destroy(rt);
}

static void test_reserved_bytes_never_exceed_the_capacity(void) {
    axon_runtime_t rt = check_runtime(1, 32 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    enum { MAX = 256 };
    size_t sizes[] = {MIB, 3 * MIB, 200 * KIB};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        void *p[MAX];
        int n = 0;
        while (n < MAX && axon_mem_alloc(d, sizes[k], NULL, &p[n]) == AXON_OK) {
            n++;
            CHECK(stats_of(d).reserved_bytes[AXON_POOL_ALL].current <= (int64_t)(32 * MIB));
        }
        CHECK(n < MAX);
        CHECK_EQ_I64(axon_last_status(), AXON_ERROR_OUT_OF_MEMORY);
        if (sizes[k] == MIB) CHECK_EQ_I64(n, 32); /* two per 2 MiB small segment fill it exactly */
        if (sizes[k] == 3 * MIB) CHECK_EQ_I64(n, 10); /* 6 in a 20 MiB segment, then 3 MiB segments */
        for (int i = 0; i < n; i++) CHECK_OK(axon_mem_free(d, p[i]));
        CHECK_OK(axon_mem_empty_cache(d));
    }
    axon_runtime_destroy(rt);
}

static void test_capacity_below_one_segment_still_serves_requests(void) {
    axon_runtime_t rt = check_runtime(1, MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *a, *b, *c;
    CHECK_OK(axon_mem_alloc(d, 512 * KIB, NULL, &a));
    CHECK_OK(axon_mem_alloc(d, 512 * KIB, NULL, &b));
    CHECK_STATUS(axon_mem_alloc(d, 4096, NULL, &c), AXON_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_I64(stats_of(d).reserved_bytes[AXON_POOL_ALL].current, MIB);
    CHECK_OK(axon_mem_free(d, a));
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &c));
    CHECK(c == a);
    CHECK_OK(axon_mem_free(d, b));
    CHECK_OK(axon_mem_free(d, c));
    axon_runtime_destroy(rt);
}

static void test_set_capacity_limits_and_releases_cache(void) {
    axon_runtime_t rt = check_runtime(1, 256 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p;
    size_t free_b = 0, total = 0;
    CHECK_OK(axon_mem_alloc(d, 100 * MIB, NULL, &p));
    CHECK_OK(axon_mem_get_info(d, &free_b, &total));
    CHECK_EQ_I64(total, 256 * MIB);
    CHECK_EQ_I64(free_b, 156 * MIB);
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_set_capacity(d, 64 * MIB));
    CHECK_EQ_I64(stats_of(d).reserved_bytes[AXON_POOL_ALL].current, 0);
    CHECK_EQ_I64(stats_of(d).capacity, 64 * MIB);
    CHECK_OK(axon_mem_get_info(d, &free_b, &total));
    CHECK_EQ_I64(total, 64 * MIB);
    CHECK_EQ_I64(free_b, 64 * MIB);
    CHECK_STATUS(axon_mem_alloc(d, 100 * MIB, NULL, &p), AXON_ERROR_OUT_OF_MEMORY);
    CHECK_MSG("capacity 64.00 MiB");
    CHECK_STATUS(axon_mem_set_capacity(d, 0), AXON_ERROR_INVALID_ARG);
    CHECK_EQ_I64(stats_of(d).capacity, 64 * MIB);
    CHECK_OK(axon_mem_set_capacity(d, 256 * MIB));
    CHECK_OK(axon_mem_alloc(d, 100 * MIB, NULL, &p));
    /* Lowering below what is live keeps the live memory and blocks further growth. */
    CHECK_OK(axon_mem_set_capacity(d, 50 * MIB));
    CHECK_EQ_I64(stats_of(d).reserved_bytes[AXON_POOL_ALL].current, 100 * MIB);
    CHECK_OK(axon_mem_get_info(d, &free_b, &total));
    CHECK_EQ_I64(free_b, 0);
    void *q;
    CHECK_STATUS(axon_mem_alloc(d, 4096, NULL, &q), AXON_ERROR_OUT_OF_MEMORY);
    CHECK_OK(axon_mem_free(d, p));
    axon_runtime_destroy(rt);
}

static void test_recorded_stream_holds_the_block_until_its_work_is_done(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t b;
    REQUIRE(axon_stream_create(d, 0, &b) == AXON_OK);
    void *p, *q, *r;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &p));
    CHECK_OK(axon_mem_record_stream(d, p, b));
    CHECK_OK(axon_mem_record_stream(d, p, b)); /* twice is once */
    CHECK_OK(axon_mem_record_stream(d, p, default_stream(d))); /* the allocation stream: a no-op */
    CHECK_OK(launch_sleep(b, 50));
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &q));
    CHECK(q != p);
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].current, 1);
    CHECK_EQ_I64(s.active[AXON_POOL_ALL].current, 2); /* the held-back block is still active */
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_ALL].current, 4096);
    CHECK_OK(axon_stream_sync(b));
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &r));
    CHECK(r == p);
    CHECK_OK(axon_mem_free(d, q));
    CHECK_OK(axon_mem_free(d, r));
    CHECK_EQ_I64(stats_of(d).active[AXON_POOL_ALL].current, 0);
    CHECK_OK(axon_stream_destroy(b));
    axon_runtime_destroy(rt);
}

static void test_block_recorded_on_many_streams_waits_for_all(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    enum { NS = 5 };
    axon_stream_t st[NS];
    for (int i = 0; i < NS; i++) REQUIRE(axon_stream_create(d, 0, &st[i]) == AXON_OK);
    void *p, *q;
    CHECK_OK(axon_mem_alloc(d, 8192, NULL, &p));
    for (int i = 0; i < NS; i++) CHECK_OK(axon_mem_record_stream(d, p, st[i]));
    CHECK_OK(launch_sleep(st[NS - 1], 50)); /* only the last recorded stream is busy */
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 8192, NULL, &q));
    CHECK(q != p);
    CHECK_OK(axon_mem_free(d, q));
    CHECK_OK(axon_stream_sync(st[NS - 1]));
    CHECK_OK(axon_mem_alloc(d, 8192, NULL, &q));
    CHECK(q == p);
    CHECK_OK(axon_mem_free(d, q));
    for (int i = 0; i < NS; i++) CHECK_OK(axon_stream_destroy(st[i]));
    axon_runtime_destroy(rt);
}

static void test_free_block_goes_to_another_stream_only_after_its_stream_completes(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t a = default_stream(d), b;
    REQUIRE(axon_stream_create(d, 0, &b) == AXON_OK);
    void *p, *q, *r;
    /* 12 MiB blocks fill their segments exactly, so where each lands is predictable. */
    CHECK_OK(axon_mem_alloc(d, 12 * MIB, a, &p));
    CHECK_OK(launch_sleep(a, 50));
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 12 * MIB, b, &q));
    CHECK(q != p); /* a's queued kernel may still use p */
    CHECK_OK(axon_mem_alloc(d, 12 * MIB, a, &r));
    CHECK(r == p); /* a itself may reuse it at once */
    CHECK_OK(axon_mem_free(d, r));
    CHECK_OK(axon_stream_sync(a));
    CHECK_OK(axon_mem_alloc(d, 12 * MIB, b, &r));
    CHECK(r == p);
    CHECK_EQ_I64(stats_of(d).num_device_alloc, 2);
    CHECK_OK(axon_mem_free(d, r));
    CHECK_OK(axon_mem_free(d, q));
    CHECK_OK(axon_stream_destroy(b));
    axon_runtime_destroy(rt);
}

static void test_other_stream_waits_for_guarded_block_when_device_is_full(void) {
    axon_runtime_t rt = check_runtime(1, 2 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t a = default_stream(d), b;
    REQUIRE(axon_stream_create(d, 0, &b) == AXON_OK);
    void *p, *q;
    CHECK_OK(axon_mem_alloc(d, 4096, a, &p));
    CHECK_OK(launch_sleep(a, 30));
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 4096, b, &q)); /* no room for a second segment: waits for a, then reuses */
    CHECK(q == p);
    CHECK_EQ_I64(stats_of(d).num_sync_all_streams, 1);
    CHECK_OK(axon_mem_free(d, q));
    CHECK_OK(axon_stream_destroy(b));
    axon_runtime_destroy(rt);
}

static void test_full_device_waits_for_held_back_blocks_before_failing(void) {
    axon_runtime_t rt = check_runtime(1, 4 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t b;
    REQUIRE(axon_stream_create(d, 0, &b) == AXON_OK);
    void *p, *q;
    CHECK_OK(axon_mem_alloc(d, 3 * MIB, NULL, &p)); /* only a 3 MiB segment still fits */
    CHECK_OK(axon_mem_record_stream(d, p, b));
    CHECK_OK(launch_sleep(b, 30));
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 3 * MIB, NULL, &q));
    CHECK(q == p);
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.num_sync_all_streams, 1);
    CHECK_EQ_I64(s.num_ooms, 0);
    CHECK_OK(axon_mem_free(d, q));
    CHECK_OK(axon_stream_destroy(b));
    axon_runtime_destroy(rt);
}

static void test_null_port_allocates_through_the_same_pool(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, axon_hw_null(), NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p, *q;
    CHECK_OK(axon_mem_alloc(d, 5000, NULL, &p));
    CHECK_OK(axon_mem_free(d, p));
    CHECK_OK(axon_mem_alloc(d, 5000, NULL, &q));
    CHECK(q == p);
    CHECK_OK(axon_mem_free(d, q));
    CHECK_OK(axon_mem_empty_cache(d));
    CHECK_EQ_I64(stats_of(d).num_device_free, 1);
    axon_runtime_destroy(rt);
}

static void test_lookup_finds_the_allocation_from_an_interior_pointer(void) {
    axon_runtime_t rt = check_runtime(2, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d1 = check_device(rt, 1);
    void *p;
    axon_mem_info_t info;
    CHECK_OK(axon_mem_alloc(d1, 10000, NULL, &p));
    CHECK_OK(axon_mem_lookup(rt, (char *)p + 5000, &info));
    CHECK(info.device == d1);
    CHECK(info.base == p);
    CHECK_EQ_I64(info.size, 10000);
    CHECK_EQ_I64(info.live, 1);
    CHECK_OK(axon_mem_lookup(rt, p, &info));
    CHECK(info.base == p);
    CHECK_OK(axon_mem_free(d1, p));
    CHECK_OK(axon_mem_lookup(rt, (char *)p + 5000, &info)); /* cached memory is still device memory */
    CHECK_EQ_I64(info.live, 0);
    CHECK(info.device == d1);
    int local = 0;
    CHECK_STATUS(axon_mem_lookup(rt, &local, &info), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not device memory");
    CHECK_STATUS(axon_mem_lookup(NULL, p, &info), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_lookup(rt, p, NULL), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(rt);
}

static void test_contains_checks_the_whole_range_against_mapped_segments(void) {
    axon_runtime_t rt = check_runtime(2, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d0 = check_device(rt, 0), d1 = check_device(rt, 1);
    void *p;
    CHECK_OK(axon_mem_alloc(d0, 4096, NULL, &p)); /* the start of a 2 MiB segment */
    CHECK(axon_mem_contains(d0, p, 4096));
    CHECK(axon_mem_contains(d0, (char *)p + 100, 2 * MIB - 100));
    CHECK(!axon_mem_contains(d0, (char *)p + 100, 2 * MIB - 99));
    CHECK(!axon_mem_contains(d0, p, SIZE_MAX));
    CHECK(!axon_mem_contains(d1, p, 1));
    int local = 0;
    CHECK(!axon_mem_contains(d0, &local, sizeof local));
    CHECK(!axon_mem_contains(NULL, p, 1));
    CHECK_OK(axon_mem_free(d0, p));
    CHECK(axon_mem_contains(d0, p, 4096)); /* cached, still mapped */
    axon_runtime_destroy(rt);
}

static void test_alloc_with_null_out_or_device_is_invalid_arg(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p = (void *)1;
    axon_mem_stats_t s;
    size_t a, b;
    CHECK_STATUS(axon_mem_alloc(d, 100, NULL, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out is NULL");
    CHECK_STATUS(axon_mem_alloc(NULL, 100, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK(p == NULL);
    CHECK_STATUS(axon_mem_free(NULL, p), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_record_stream(NULL, p, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_stats(NULL, &s), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_stats(d, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_reset_peak(NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_reset_accumulated(NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_empty_cache(NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_get_info(NULL, &a, &b), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_get_info(d, NULL, &b), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_set_capacity(NULL, MIB), AXON_ERROR_INVALID_ARG);
    CHECK_EQ_I64(stats_of(d).allocation[AXON_POOL_ALL].allocated, 0);
    axon_runtime_destroy(rt);
}

static void test_free_of_foreign_pointer_is_invalid_arg(void) {
    axon_runtime_t rt = check_runtime(2, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d0 = check_device(rt, 0), d1 = check_device(rt, 1);
    void *host = malloc(64), *p;
    CHECK_STATUS(axon_mem_free(d0, host), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not allocated by axon:0");
    free(host);
    CHECK_OK(axon_mem_alloc(d1, 4096, NULL, &p));
    CHECK_STATUS(axon_mem_free(d0, p), AXON_ERROR_INVALID_ARG); /* another device's memory */
    CHECK_MSG("not allocated by axon:0");
    CHECK_OK(axon_mem_free(d1, p));
    axon_runtime_destroy(rt);
}

static void test_free_of_interior_pointer_is_invalid_arg_and_changes_nothing(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &p));
    CHECK_STATUS(axon_mem_free(d, (char *)p + 512), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("interior pointer");
    CHECK_EQ_I64(stats_of(d).allocation[AXON_POOL_ALL].current, 1);
    CHECK_OK(axon_mem_free(d, p));
    CHECK_EQ_I64(stats_of(d).allocation[AXON_POOL_ALL].current, 0);
    axon_runtime_destroy(rt);
}

static void test_double_free_is_misuse(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p, *q;
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &p));
    CHECK_OK(axon_mem_alloc(d, 4096, NULL, &q));
    CHECK_OK(axon_mem_free(d, q));
    CHECK_STATUS(axon_mem_free(d, q), AXON_ERROR_MISUSE);
    CHECK_MSG("double free");
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].current, 1);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].freed, 1);
    CHECK_OK(axon_mem_free(d, p));
    axon_runtime_destroy(rt);
}

static void test_record_stream_on_freed_or_foreign_pointer_fails(void) {
    axon_runtime_t rt = check_runtime(2, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d0 = check_device(rt, 0), d1 = check_device(rt, 1);
    axon_stream_t s0 = default_stream(d0), s1 = default_stream(d1);
    void *p;
    int local;
    CHECK_OK(axon_mem_alloc(d0, 4096, NULL, &p));
    CHECK_STATUS(axon_mem_record_stream(d0, p, s1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("belongs to axon:1");
    CHECK_STATUS(axon_mem_record_stream(d0, p, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_record_stream(d0, NULL, s0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_mem_record_stream(d0, &local, s0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not allocated by axon:0");
    CHECK_STATUS(axon_mem_alloc(d0, 4096, s1, &p), AXON_ERROR_INVALID_ARG); /* allocating for another device */
    CHECK(p == NULL);
    void *q;
    CHECK_OK(axon_mem_alloc(d0, 4096, NULL, &q));
    CHECK_OK(axon_mem_free(d0, q));
    CHECK_STATUS(axon_mem_record_stream(d0, q, s0), AXON_ERROR_MISUSE);
    CHECK_MSG("freed");
    axon_runtime_destroy(rt);
}

static void test_huge_request_is_out_of_memory_not_overflow(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    void *p = (void *)1;
    size_t sizes[] = {SIZE_MAX, SIZE_MAX - 100, SIZE_MAX / 2 + 1, 64 * MIB + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_STATUS(axon_mem_alloc(d, sizes[i], NULL, &p), AXON_ERROR_OUT_OF_MEMORY);
        CHECK(p == NULL);
        CHECK_MSG("axon:0 out of memory");
    }
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.num_ooms, 4);
    CHECK_EQ_I64(s.reserved_bytes[AXON_POOL_ALL].current, 0);
    CHECK_OK(axon_mem_alloc(d, 64 * MIB, NULL, &p)); /* exactly the capacity still fits */
    CHECK_OK(axon_mem_free(d, p));
    axon_runtime_destroy(rt);
}

static void test_destroy_releases_live_allocations(void) {
    axon_runtime_t rt = check_runtime(1, 256 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t b;
    REQUIRE(axon_stream_create(d, 0, &b) == AXON_OK);
    void *p;
    for (int i = 0; i < 50; i++) CHECK_OK(axon_mem_alloc(d, (size_t)(i + 1) * 100 * KIB, NULL, &p));
    CHECK_OK(axon_mem_record_stream(d, p, b));
    CHECK_OK(axon_mem_record_stream(d, p, default_stream(d)));
    axon_runtime_destroy(rt); /* ASan reports any leaked block records */
}

struct worker {
    axon_device_t dev;
    int id;
    int errors;
};

static uint64_t next_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static int pattern_ok(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

/* Random alloc/free on the thread's own stream; each live block holds its own byte, so any overlap between live
 * blocks (of any thread) shows up as a wrong byte when the block is freed. */
static void *worker_main(void *arg) {
    struct worker *w = arg;
    enum { SLOTS = 32, OPS = 10000 };
    void *ptr[SLOTS] = {0};
    size_t len[SLOTS] = {0};
    unsigned char val[SLOTS] = {0};
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(w->id + 1);
    axon_stream_t s = NULL;
    if (w->id % 2 == 1 && axon_stream_create(w->dev, 0, &s) != AXON_OK) w->errors++;
    for (int op = 0; op < OPS; op++) {
        int i = (int)(next_rand(&x) % SLOTS);
        if (ptr[i] == NULL) {
            uint64_t r = next_rand(&x);
            size_t n = r % 64 == 0 ? 1 + (size_t)(r >> 8) % (4 * MIB) : 1 + (size_t)(r >> 8) % (64 * KIB);
            if (axon_mem_alloc(w->dev, n, s, &ptr[i]) != AXON_OK) {
                w->errors++;
                continue;
            }
            len[i] = n;
            val[i] = (unsigned char)(w->id * SLOTS + i + op);
            memset(ptr[i], val[i], n);
        } else {
            if (!pattern_ok(ptr[i], len[i], val[i])) w->errors++;
            if (axon_mem_free(w->dev, ptr[i]) != AXON_OK) w->errors++;
            ptr[i] = NULL;
        }
    }
    for (int i = 0; i < SLOTS; i++)
        if (ptr[i] != NULL) {
            if (!pattern_ok(ptr[i], len[i], val[i])) w->errors++;
            if (axon_mem_free(w->dev, ptr[i]) != AXON_OK) w->errors++;
        }
    if (s != NULL && axon_stream_destroy(s) != AXON_OK) w->errors++;
    return NULL;
}

static void test_threads_allocating_at_once_never_share_memory(void) {
    axon_runtime_t rt = check_runtime(1, (size_t)1 << 30, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    enum { NT = 4 };
    pthread_t t[NT];
    struct worker w[NT];
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){d, i, 0};
        REQUIRE(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_I64(w[i].errors, 0);
    }
    axon_mem_stats_t s = stats_of(d);
    CHECK_EQ_I64(s.allocation[AXON_POOL_ALL].current, 0);
    CHECK_EQ_I64(s.allocated_bytes[AXON_POOL_ALL].current, 0);
    CHECK_EQ_I64(s.active_bytes[AXON_POOL_ALL].current, 0);
    CHECK_EQ_I64(s.requested_bytes[AXON_POOL_ALL].current, 0);
    CHECK_EQ_I64(s.inactive_split[AXON_POOL_ALL].current, 0);
    CHECK_OK(axon_mem_empty_cache(d));
    CHECK_EQ_I64(stats_of(d).reserved_bytes[AXON_POOL_ALL].current, 0);
    axon_runtime_destroy(rt);
}

/* Not a timed assertion (benchmarks belong in scripts): prints what a cached alloc/free pair costs; target <= 100 ns. */
static void test_cached_alloc_free_pair_cost_is_reported(void) {
    axon_runtime_t rt = check_runtime(1, 64 * MIB, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s = default_stream(d);
    enum { N = 1000000 };
    void *p;
    CHECK_OK(axon_mem_alloc(d, 4096, s, &p));
    CHECK_OK(axon_mem_free(d, p));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < N; i++) {
        axon_mem_alloc(d, 4096, s, &p);
        axon_mem_free(d, p);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / N;
    fprintf(stderr, "  cached alloc+free pair: %.1f ns\n", ns);
    CHECK_EQ_I64(stats_of(d).num_device_alloc, 1);
    axon_runtime_destroy(rt);
}

int main(void) {
    RUN(test_allocations_are_aligned_to_512_bytes);
    RUN(test_zero_bytes_gives_null_and_ok);
    RUN(test_freed_block_is_reused_at_once_on_its_stream);
    RUN(test_two_small_allocations_split_one_segment);
    RUN(test_freed_neighbours_merge_for_a_larger_request);
    RUN(test_stats_follow_a_known_sequence);
    RUN(test_empty_cache_releases_only_unused_segments);
    RUN(test_out_of_memory_names_the_sizes_and_the_allocator_recovers);
    RUN(test_reserved_bytes_never_exceed_the_capacity);
    RUN(test_capacity_below_one_segment_still_serves_requests);
    RUN(test_set_capacity_limits_and_releases_cache);
    RUN(test_recorded_stream_holds_the_block_until_its_work_is_done);
    RUN(test_block_recorded_on_many_streams_waits_for_all);
    RUN(test_free_block_goes_to_another_stream_only_after_its_stream_completes);
    RUN(test_other_stream_waits_for_guarded_block_when_device_is_full);
    RUN(test_full_device_waits_for_held_back_blocks_before_failing);
    RUN(test_null_port_allocates_through_the_same_pool);
    RUN(test_lookup_finds_the_allocation_from_an_interior_pointer);
    RUN(test_contains_checks_the_whole_range_against_mapped_segments);
    RUN(test_alloc_with_null_out_or_device_is_invalid_arg);
    RUN(test_free_of_foreign_pointer_is_invalid_arg);
    RUN(test_free_of_interior_pointer_is_invalid_arg_and_changes_nothing);
    RUN(test_double_free_is_misuse);
    RUN(test_record_stream_on_freed_or_foreign_pointer_fails);
    RUN(test_huge_request_is_out_of_memory_not_overflow);
    RUN(test_destroy_releases_live_allocations);
    RUN(test_threads_allocating_at_once_never_share_memory);
    RUN(test_cached_alloc_free_pair_cost_is_reported);
    return check_report();
}
