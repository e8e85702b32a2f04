/* Tests of the pinned host allocator (axon_host_*). */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* The size class a request of n bytes lands in: a power of two of at least 4 KiB and a page. */
static int64_t class_of(size_t n) {
    size_t c = (size_t)sysconf(_SC_PAGESIZE) > 4096 ? (size_t)sysconf(_SC_PAGESIZE) : 4096;
    while (c < n) c <<= 1;
    return (int64_t)c;
}

static axon_runtime_t new_runtime(void) {
    return check_runtime(1, (size_t)64 << 20, 2, NULL, NULL);
}

static axon_host_stats_t stats_of(axon_runtime_t rt) {
    axon_host_stats_t s;
    memset(&s, 0, sizeof s);
    CHECK_OK(axon_host_stats(rt, &s));
    return s;
}

static void test_alloc_gives_page_aligned_writable_memory_that_is_reused_after_free(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    void *p = NULL, *q = NULL;
    CHECK_OK(axon_host_alloc(rt, 1000, &p));
    REQUIRE(p != NULL);
    CHECK((uintptr_t)p % 4096 == 0);
    memset(p, 0xab, 4096); /* the whole size class is usable */
    CHECK_OK(axon_host_free(rt, p));
    CHECK_OK(axon_host_alloc(rt, 3000, &q)); /* same 4 KiB class: the cached buffer comes back */
    CHECK(q == p);
    CHECK_EQ_I64(stats_of(rt).num_host_alloc, 1);
    CHECK_OK(axon_host_free(rt, q));
    axon_runtime_destroy(rt);
}

static void test_sizes_round_up_to_power_of_two_classes_of_at_least_4_kib(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(axon_host_alloc(rt, 1, &a));
    CHECK_OK(axon_host_alloc(rt, 5000, &b));
    CHECK_OK(axon_host_alloc(rt, (1 << 20) + 1, &c));
    axon_host_stats_t s = stats_of(rt);
    CHECK_EQ_I64(s.reserved_bytes.current, class_of(1) + class_of(5000) + (2 << 20));
    CHECK_EQ_I64(class_of(5000), 8192);
    CHECK_EQ_I64(s.allocated_bytes.current, s.reserved_bytes.current);
    /* A freed buffer of one class does not serve another. */
    CHECK_OK(axon_host_free(rt, b));
    void *d = NULL;
    CHECK_OK(axon_host_alloc(rt, 100, &d));
    CHECK(d != b);
    CHECK_OK(axon_host_free(rt, a));
    CHECK_OK(axon_host_free(rt, c));
    CHECK_OK(axon_host_free(rt, d));
    axon_runtime_destroy(rt);
}

static void test_is_pinned_and_lookup_accept_interior_pointers_and_forget_freed_buffers(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    char *p = NULL;
    CHECK_OK(axon_host_alloc(rt, 10000, (void **)&p));
    REQUIRE(p != NULL);
    int local = 0;
    CHECK(axon_host_is_pinned(rt, p));
    CHECK(axon_host_is_pinned(rt, p + 9999));
    CHECK(!axon_host_is_pinned(rt, p + 10000)); /* past the requested size */
    CHECK(!axon_host_is_pinned(rt, &local));
    CHECK(!axon_host_is_pinned(rt, NULL));
    CHECK(!axon_host_is_pinned(NULL, p));
    void *base = NULL;
    size_t size = 0;
    CHECK_OK(axon_host_lookup(rt, p + 1234, &base, &size));
    CHECK(base == p);
    CHECK_EQ_I64(size, 10000);
    CHECK_STATUS(axon_host_lookup(rt, &local, &base, &size), AXON_ERROR_INVALID_ARG);
    CHECK(base == NULL);
    CHECK_OK(axon_host_free(rt, p));
    CHECK(!axon_host_is_pinned(rt, p));
    CHECK(!axon_host_is_pinned(rt, p + 10));
    CHECK_STATUS(axon_host_lookup(rt, p, &base, &size), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(rt);
}

static void test_is_pinned_tells_apart_many_neighbouring_buffers(void) {
    enum { N = 200 };
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    char *bufs[N];
    for (int i = 0; i < N; i++) CHECK_OK(axon_host_alloc(rt, 100 + (size_t)i * 97, (void **)&bufs[i]));
    for (int i = 0; i < N; i++) {
        void *base = NULL;
        size_t size = 0;
        CHECK_OK(axon_host_lookup(rt, bufs[i] + 50 + i * 50, &base, &size));
        CHECK(base == bufs[i]);
        CHECK_EQ_I64(size, 100 + i * 97);
    }
    for (int i = 0; i < N; i += 2) CHECK_OK(axon_host_free(rt, bufs[i]));
    for (int i = 0; i < N; i++) CHECK_EQ_I64(axon_host_is_pinned(rt, bufs[i] + 60), i % 2);
    for (int i = 1; i < N; i += 2) CHECK_OK(axon_host_free(rt, bufs[i]));
    axon_runtime_destroy(rt);
}

static void test_stats_count_allocations_segments_and_bytes_and_reset(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    void *a = NULL, *b = NULL;
    CHECK_OK(axon_host_alloc(rt, 4096, &a));
    CHECK_OK(axon_host_alloc(rt, 8192, &b));
    axon_host_stats_t s = stats_of(rt);
    CHECK_EQ_I64(s.allocation.current, 2);
    CHECK_EQ_I64(s.allocation.peak, 2);
    CHECK_EQ_I64(s.allocation.allocated, 2);
    CHECK_EQ_I64(s.segment.current, 2);
    CHECK_EQ_I64(s.allocated_bytes.current, 12288);
    CHECK_EQ_I64(s.reserved_bytes.current, 12288);
    CHECK_EQ_I64(s.num_host_alloc, 2);
    CHECK_EQ_I64(s.num_host_free, 0);

    CHECK_OK(axon_host_free(rt, b));
    s = stats_of(rt);
    CHECK_EQ_I64(s.allocation.current, 1);
    CHECK_EQ_I64(s.allocation.freed, 1);
    CHECK_EQ_I64(s.allocated_bytes.current, 4096);
    CHECK_EQ_I64(s.allocated_bytes.peak, 12288);
    CHECK_EQ_I64(s.reserved_bytes.current, 12288); /* cached, still reserved */

    CHECK_OK(axon_host_reset_peak(rt));
    s = stats_of(rt);
    CHECK_EQ_I64(s.allocated_bytes.peak, 4096);
    CHECK_EQ_I64(s.allocation.peak, 1);
    CHECK_EQ_I64(s.allocation.allocated, 2); /* a peak reset keeps the totals */

    CHECK_OK(axon_host_reset_accumulated(rt));
    s = stats_of(rt);
    CHECK_EQ_I64(s.allocation.allocated, 0);
    CHECK_EQ_I64(s.allocation.freed, 0);
    CHECK_EQ_I64(s.num_host_alloc, 0);
    CHECK_EQ_I64(s.allocation.current, 1); /* currents are not totals */
    CHECK_EQ_I64(s.allocated_bytes.peak, 4096);
    CHECK_OK(axon_host_free(rt, a));
    axon_runtime_destroy(rt);
}

static void test_empty_cache_returns_cached_buffers_and_keeps_live_ones(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(axon_host_alloc(rt, 4096, &a));
    CHECK_OK(axon_host_alloc(rt, 1 << 16, &b));
    CHECK_OK(axon_host_alloc(rt, 1 << 20, &c));
    CHECK_OK(axon_host_free(rt, b));
    CHECK_OK(axon_host_free(rt, c));
    CHECK_OK(axon_host_empty_cache(rt));
    axon_host_stats_t s = stats_of(rt);
    CHECK_EQ_I64(s.segment.current, 1);
    CHECK_EQ_I64(s.reserved_bytes.current, 4096);
    CHECK_EQ_I64(s.num_host_free, 2);
    CHECK(axon_host_is_pinned(rt, a));
    memset(a, 1, 4096); /* still mapped */
    CHECK_OK(axon_host_free(rt, a));
    CHECK_OK(axon_host_empty_cache(rt));
    CHECK_EQ_I64(stats_of(rt).reserved_bytes.current, 0);
    CHECK_OK(axon_host_empty_cache(rt)); /* on an empty cache: nothing to do */
    axon_runtime_destroy(rt);
}

static axon_status_t sleep_50ms_kernel(const void *args, const axon_exec_t *ex) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return AXON_OK;
}

static void test_a_buffer_recorded_on_a_busy_stream_is_held_back_until_the_stream_finishes(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s = NULL;
    CHECK_OK(axon_stream_create(d, 0, &s));
    REQUIRE(s != NULL);
    void *p = NULL, *q = NULL, *r = NULL, *t = NULL;
    CHECK_OK(axon_host_alloc(rt, 1 << 16, &p));
    axon_launch_t l = {.fn = sleep_50ms_kernel, .name = "sleep_50ms"};
    CHECK_OK(axon_stream_launch(s, &l));
    CHECK_OK(axon_host_record_stream(rt, p, s));
    CHECK_OK(axon_host_record_stream(rt, (char *)p + 100, s)); /* twice, through an interior pointer: one use */
    CHECK_OK(axon_host_free(rt, p));
    CHECK(!axon_host_is_pinned(rt, p));
    CHECK_OK(axon_host_alloc(rt, 1 << 16, &q)); /* the kernel still runs: p must not come back */
    CHECK(q != NULL && q != p);
    CHECK_OK(axon_host_empty_cache(rt)); /* a held-back buffer is not cached, so it stays mapped */
    CHECK_EQ_I64(stats_of(rt).segment.current, 2);
    CHECK_OK(axon_stream_sync(s));
    CHECK_OK(axon_host_alloc(rt, 1 << 16, &r)); /* now p may be reused */
    CHECK(r == p);
    /* A buffer recorded on a stream that has finished its work is reusable at once. */
    CHECK_OK(axon_host_record_stream(rt, q, s));
    CHECK_OK(axon_host_free(rt, q));
    CHECK_OK(axon_host_alloc(rt, 1 << 16, &t));
    CHECK(t == q);
    CHECK_OK(axon_host_free(rt, r));
    CHECK_OK(axon_host_free(rt, t));
    CHECK_OK(axon_stream_destroy(s));
    axon_runtime_destroy(rt);
}

static void test_a_held_back_buffer_is_released_when_the_runtime_is_destroyed(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    axon_stream_t s = NULL;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    void *p = NULL, *live = NULL;
    CHECK_OK(axon_host_alloc(rt, 4096, &p));
    CHECK_OK(axon_host_alloc(rt, 4096, &live));
    axon_launch_t l = {.fn = sleep_50ms_kernel, .name = "sleep_50ms"};
    CHECK_OK(axon_stream_launch(s, &l));
    CHECK_OK(axon_host_record_stream(rt, p, s));
    CHECK_OK(axon_host_free(rt, p));
    axon_runtime_destroy(rt); /* ASan's leak check sees anything left behind */
}

static void test_bad_input_is_rejected_with_the_right_status(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    void *p = (void *)&p;
    CHECK_STATUS(axon_host_alloc(rt, 16, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_host_alloc(NULL, 16, &p), AXON_ERROR_INVALID_ARG);
    CHECK(p == NULL);
    p = (void *)&p;
    CHECK_OK(axon_host_alloc(rt, 0, &p));
    CHECK(p == NULL);
    CHECK_STATUS(axon_host_alloc(rt, SIZE_MAX, &p), AXON_ERROR_OUT_OF_MEMORY);
    CHECK(p == NULL);
    CHECK_OK(axon_host_free(rt, NULL));

    int local = 0;
    CHECK_STATUS(axon_host_free(rt, &local), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not the start of a pinned buffer");
    CHECK_OK(axon_host_alloc(rt, 100, &p));
    CHECK_STATUS(axon_host_free(rt, (char *)p + 8), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("inside");
    CHECK(axon_host_is_pinned(rt, p)); /* a failed free changes nothing */

    axon_stream_t s = NULL;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    CHECK_STATUS(axon_host_record_stream(rt, p, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_host_record_stream(rt, &local, s), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_host_free(rt, p));
    CHECK_STATUS(axon_host_free(rt, p), AXON_ERROR_MISUSE);
    CHECK_MSG("already freed");
    CHECK_STATUS(axon_host_record_stream(rt, p, s), AXON_ERROR_MISUSE);

    axon_runtime_t other = new_runtime();
    if (other != NULL) {
        axon_stream_t os = NULL;
        CHECK_OK(axon_stream_default(check_device(other, 0), &os));
        CHECK_OK(axon_host_alloc(rt, 100, &p));
        CHECK_STATUS(axon_host_record_stream(rt, p, os), AXON_ERROR_INVALID_ARG);
        CHECK_STATUS(axon_host_free(other, p), AXON_ERROR_INVALID_ARG); /* another runtime's buffer is foreign */
        CHECK_OK(axon_host_free(rt, p));
        axon_runtime_destroy(other);
    }

    CHECK_STATUS(axon_host_stats(rt, NULL), AXON_ERROR_INVALID_ARG);
    axon_host_stats_t st;
    CHECK_STATUS(axon_host_stats(NULL, &st), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_host_lookup(NULL, p, NULL, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_host_reset_peak(NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_host_reset_accumulated(NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_host_empty_cache(NULL), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(rt);
}

struct churn {
    axon_runtime_t rt;
    unsigned seed;
    int wrong;
};

static void *churn_main(void *arg) {
    struct churn *c = arg;
    enum { K = 8 };
    unsigned char *held[K] = {0};
    size_t sizes[K] = {0};
    for (int it = 0; it < 3000; it++) {
        int k = (int)(rand_r(&c->seed) % K);
        if (held[k] != NULL) {
            /* Our own bytes are intact: no other thread was handed this buffer meanwhile. */
            if (held[k][0] != (unsigned char)k || held[k][sizes[k] - 1] != (unsigned char)k) c->wrong++;
            if (!axon_host_is_pinned(c->rt, held[k] + sizes[k] / 2)) c->wrong++;
            if (axon_host_free(c->rt, held[k]) != AXON_OK) c->wrong++;
            held[k] = NULL;
        } else {
            sizes[k] = 1 + rand_r(&c->seed) % 100000;
            if (axon_host_alloc(c->rt, sizes[k], (void **)&held[k]) != AXON_OK) {
                c->wrong++;
                continue;
            }
            memset(held[k], k, sizes[k]);
        }
    }
    for (int k = 0; k < K; k++)
        if (held[k] != NULL) axon_host_free(c->rt, held[k]);
    return NULL;
}

static void test_threads_allocating_and_freeing_at_once_never_share_a_buffer(void) {
    axon_runtime_t rt = new_runtime();
    REQUIRE(rt != NULL);
    struct churn c[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct churn){.rt = rt, .seed = 12345u + (unsigned)i};
        CHECK(pthread_create(&t[i], NULL, churn_main, &c[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_I64(c[i].wrong, 0);
    }
    axon_host_stats_t s = stats_of(rt);
    CHECK_EQ_I64(s.allocation.current, 0);
    CHECK_EQ_I64(s.allocated_bytes.current, 0);
    axon_runtime_destroy(rt);
}

int main(void) {
    RUN(test_alloc_gives_page_aligned_writable_memory_that_is_reused_after_free);
    RUN(test_sizes_round_up_to_power_of_two_classes_of_at_least_4_kib);
    RUN(test_is_pinned_and_lookup_accept_interior_pointers_and_forget_freed_buffers);
    RUN(test_is_pinned_tells_apart_many_neighbouring_buffers);
    RUN(test_stats_count_allocations_segments_and_bytes_and_reset);
    RUN(test_empty_cache_returns_cached_buffers_and_keeps_live_ones);
    RUN(test_a_buffer_recorded_on_a_busy_stream_is_held_back_until_the_stream_finishes);
    RUN(test_a_held_back_buffer_is_released_when_the_runtime_is_destroyed);
    RUN(test_bad_input_is_rejected_with_the_right_status);
    RUN(test_threads_allocating_and_freeing_at_once_never_share_a_buffer);
    return check_report();
}
