/* Tests of the worker pool (axon_parallel_for). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

static void sleep_ns(long ns) {
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- coverage ---- */

struct cover {
    int64_t base;                /* index of counts[0] */
    atomic_int *counts;
    int64_t end, grain;
    atomic_int short_chunks;     /* chunks shorter than grain that do not end the range */
    atomic_int bad_slots;
    int size;
};

static void cover_fn(void *ctx, int64_t b, int64_t e, int slot) {
    struct cover *c = ctx;
    if (slot < 0 || slot >= c->size) atomic_fetch_add(&c->bad_slots, 1);
    if (e - b < c->grain && e != c->end) atomic_fetch_add(&c->short_chunks, 1);
    for (int64_t i = b; i < e; i++) atomic_fetch_add_explicit(&c->counts[i - c->base], 1, memory_order_relaxed);
}

static void test_every_index_is_covered_exactly_once_for_many_ranges_and_grains(void) {
    static const int sizes[] = {2, 3, 5};
    static const int64_t begins[] = {0, 7, -1000};
    static const int64_t lengths[] = {0, 1, 2, 3, 7, 8, 100, 1000, 12345};
    static const int64_t grains[] = {-5, 0, 1, 3, 64, 999, 1000, 100000};
    atomic_int *counts = calloc(12345, sizeof *counts);
    REQUIRE(counts != NULL);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        axon_pool_t p = NULL;
        CHECK_OK(axon_pool_create(sizes[si], &p));
        if (p == NULL) break;
        CHECK_EQ_I64(axon_pool_size(p), sizes[si]);
        for (size_t bi = 0; bi < sizeof begins / sizeof *begins; bi++)
            for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++)
                for (size_t gi = 0; gi < sizeof grains / sizeof *grains; gi++) {
                    int64_t n = lengths[li];
                    for (int64_t i = 0; i < n; i++) atomic_init(&counts[i], 0);
                    struct cover c = {.base = begins[bi], .counts = counts, .end = begins[bi] + n,
                                      .grain = grains[gi] < 1 ? 1 : grains[gi], .size = sizes[si]};
                    atomic_init(&c.short_chunks, 0);
                    atomic_init(&c.bad_slots, 0);
                    axon_parallel_for(p, begins[bi], begins[bi] + n, grains[gi], cover_fn, &c);
                    int wrong = 0;
                    for (int64_t i = 0; i < n; i++) wrong += atomic_load(&counts[i]) != 1;
                    if (wrong || atomic_load(&c.short_chunks) || atomic_load(&c.bad_slots))
                        fprintf(stderr, "  size %d begin %lld n %lld grain %lld: %d wrong, %d short, %d bad slots\n",
                                sizes[si], (long long)begins[bi], (long long)n, (long long)grains[gi], wrong,
                                atomic_load(&c.short_chunks), atomic_load(&c.bad_slots));
                    CHECK_EQ_I64(wrong, 0);
                    CHECK_EQ_I64(atomic_load(&c.short_chunks), 0);
                    CHECK_EQ_I64(atomic_load(&c.bad_slots), 0);
                }
        axon_pool_destroy(p);
    }
    free(counts);
}

struct span_sum {
    atomic_uint_fast64_t total;
};

static void span_fn(void *ctx, int64_t b, int64_t e, int slot) {
    struct span_sum *s = ctx;
    atomic_fetch_add(&s->total, (uint64_t)e - (uint64_t)b);
}

static void test_a_range_spanning_all_of_int64_is_split_without_overflow(void) {
    axon_pool_t p = NULL;
    CHECK_OK(axon_pool_create(3, &p));
    REQUIRE(p != NULL);
    struct span_sum s;
    atomic_init(&s.total, 0);
    axon_parallel_for(p, INT64_MIN, INT64_MAX, 1, span_fn, &s);
    CHECK(atomic_load(&s.total) == UINT64_MAX);
    atomic_store(&s.total, 0);
    axon_parallel_for(p, INT64_MAX - 100, INT64_MAX, 7, span_fn, &s);
    CHECK_EQ_I64(atomic_load(&s.total), 100);
    axon_pool_destroy(p);
}

/* ---- slots ---- */

struct slot_check {
    atomic_uint_fast64_t held;   /* bit s: some chunk with slot s is running now */
    atomic_int clashes;
    atomic_int out_of_range;
    atomic_uint_fast64_t seen;   /* every slot that ran a chunk */
    int size;
};

static void slot_fn(void *ctx, int64_t b, int64_t e, int slot) {
    struct slot_check *c = ctx;
    if (slot < 0 || slot >= c->size) {
        atomic_fetch_add(&c->out_of_range, 1);
        return;
    }
    uint_fast64_t bit = (uint_fast64_t)1 << slot;
    if (atomic_fetch_or(&c->held, bit) & bit) atomic_fetch_add(&c->clashes, 1);
    atomic_fetch_or(&c->seen, bit);
    volatile uint64_t x = 0;
    for (int64_t i = b; i < e; i++)
        for (int k = 0; k < 200; k++) x += (uint64_t)i * (uint64_t)k;
    atomic_fetch_and(&c->held, ~bit);
}

static void test_slots_are_unique_among_participants_and_below_the_pool_size(void) {
    for (int size = 2; size <= 6; size += 2) {
        axon_pool_t p = NULL;
        CHECK_OK(axon_pool_create(size, &p));
        if (p == NULL) break;
        struct slot_check c = {.size = size};
        atomic_init(&c.held, 0);
        atomic_init(&c.clashes, 0);
        atomic_init(&c.out_of_range, 0);
        atomic_init(&c.seen, 0);
        for (int rep = 0; rep < 200; rep++) axon_parallel_for(p, 0, 4000, 1, slot_fn, &c);
        CHECK_EQ_I64(atomic_load(&c.clashes), 0);
        CHECK_EQ_I64(atomic_load(&c.out_of_range), 0);
        CHECK(atomic_load(&c.seen) & 1u);      /* the caller always takes part */
        CHECK(atomic_load(&c.seen) & ~1ull);   /* and over 200 calls with real work a helper joined too */
        axon_pool_destroy(p);
    }
}

/* ---- nesting ---- */

struct nest {
    axon_pool_t pool;
    atomic_int inner_calls;
    atomic_int inner_wrong;      /* inner chunk not on the outer thread, not the whole range, or another slot */
    atomic_int_fast64_t inner_indices;
};

struct nest_inner {
    struct nest *n;
    pthread_t outer_thread;
    int outer_slot;
};

static void nest_inner_fn(void *ctx, int64_t b, int64_t e, int slot) {
    struct nest_inner *in = ctx;
    atomic_fetch_add(&in->n->inner_calls, 1);
    if (!pthread_equal(pthread_self(), in->outer_thread) || b != 0 || e != 1000 || slot != in->outer_slot)
        atomic_fetch_add(&in->n->inner_wrong, 1);
    atomic_fetch_add(&in->n->inner_indices, e - b);
}

static void nest_outer_fn(void *ctx, int64_t b, int64_t e, int slot) {
    struct nest *n = ctx;
    for (int64_t i = b; i < e; i++) {
        struct nest_inner in = {.n = n, .outer_thread = pthread_self(), .outer_slot = slot};
        axon_parallel_for(n->pool, 0, 1000, 1, nest_inner_fn, &in);
    }
}

static void test_a_call_from_inside_a_parallel_body_runs_inline_on_the_same_slot(void) {
    struct nest n;
    CHECK_OK(axon_pool_create(3, &n.pool));
    REQUIRE(n.pool != NULL);
    atomic_init(&n.inner_calls, 0);
    atomic_init(&n.inner_wrong, 0);
    atomic_init(&n.inner_indices, 0);
    axon_parallel_for(n.pool, 0, 64, 1, nest_outer_fn, &n);
    CHECK_EQ_I64(atomic_load(&n.inner_calls), 64);
    CHECK_EQ_I64(atomic_load(&n.inner_wrong), 0);
    CHECK_EQ_I64(atomic_load(&n.inner_indices), 64 * 1000);
    axon_pool_destroy(n.pool);
}

/* ---- concurrent callers ---- */

struct sum_job {
    const int64_t *data;
    atomic_int_fast64_t sum;
};

static void sum_fn(void *ctx, int64_t b, int64_t e, int slot) {
    struct sum_job *j = ctx;
    int64_t s = 0;
    for (int64_t i = b; i < e; i++) s += j->data[i];
    atomic_fetch_add(&j->sum, s);
}

#define CALLER_N 20000

struct caller {
    axon_pool_t pool;
    const int64_t *data;
    int64_t expected;
    int wrong;
};

static void *caller_main(void *arg) {
    struct caller *c = arg;
    for (int rep = 0; rep < 300; rep++) {
        struct sum_job j = {.data = c->data};
        atomic_init(&j.sum, 0);
        int64_t n = CALLER_N - rep * 13;
        axon_parallel_for(c->pool, 0, n, 16 + rep % 50, sum_fn, &j);
        if (atomic_load(&j.sum) != n * (n - 1) / 2) c->wrong++;
    }
    return NULL;
}

static void test_four_host_threads_share_a_pool_of_two_and_all_get_correct_results(void) {
    int64_t *data = malloc(CALLER_N * sizeof *data);
    REQUIRE(data != NULL);
    for (int64_t i = 0; i < CALLER_N; i++) data[i] = i;
    axon_pool_t p = NULL;
    CHECK_OK(axon_pool_create(2, &p));
    if (p == NULL) {
        free(data);
        return;
    }
    struct caller callers[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        callers[i] = (struct caller){.pool = p, .data = data};
        CHECK(pthread_create(&threads[i], NULL, caller_main, &callers[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK_EQ_I64(callers[i].wrong, 0);
    }
    axon_pool_destroy(p);
    free(data);
}

/* ---- sleeping and waking ---- */

static void slow_helper_fn(void *ctx, int64_t b, int64_t e, int slot) {
    /* Helpers' chunks outlast the caller's spin, so the caller must sleep and be woken by the last helper. */
    if (slot != 0) sleep_ns(2000000);
    sum_fn(ctx, b, e, slot);
}

static void test_callers_and_helpers_that_went_to_sleep_are_woken(void) {
    int64_t data[64];
    for (int i = 0; i < 64; i++) data[i] = i;
    axon_pool_t p = NULL;
    CHECK_OK(axon_pool_create(3, &p));
    REQUIRE(p != NULL);
    for (int rep = 0; rep < 30; rep++) {
        sleep_ns(rep % 2 ? 1000000 : 10000); /* 1 ms lets the helpers fall asleep; 10 us catches them spinning */
        struct sum_job j = {.data = data};
        atomic_init(&j.sum, 0);
        axon_parallel_for(p, 0, 64, 1, rep % 3 ? sum_fn : slow_helper_fn, &j);
        CHECK_EQ_I64(atomic_load(&j.sum), 64 * 63 / 2);
    }
    axon_pool_destroy(p);
}

/* ---- degenerate pools and bad input ---- */

struct inline_check {
    pthread_t caller;
    int calls;
    int wrong;
};

static void inline_fn(void *ctx, int64_t b, int64_t e, int slot) {
    struct inline_check *c = ctx;
    c->calls++;
    if (!pthread_equal(pthread_self(), c->caller) || b != 5 || e != 50005 || slot != 0) c->wrong++;
}

static void test_a_pool_of_one_and_a_null_pool_run_the_whole_range_inline(void) {
    axon_pool_t p = NULL;
    CHECK_OK(axon_pool_create(1, &p));
    REQUIRE(p != NULL);
    CHECK_EQ_I64(axon_pool_size(p), 1);
    struct inline_check c = {.caller = pthread_self()};
    axon_parallel_for(p, 5, 50005, 1, inline_fn, &c);
    axon_parallel_for(NULL, 5, 50005, 1, inline_fn, &c);
    CHECK_EQ_I64(c.calls, 2);
    CHECK_EQ_I64(c.wrong, 0);
    CHECK_EQ_I64(axon_pool_size(NULL), 1);
    axon_pool_destroy(p);
}

static void test_a_range_within_one_grain_runs_inline_in_one_chunk(void) {
    axon_pool_t p = NULL;
    CHECK_OK(axon_pool_create(4, &p));
    REQUIRE(p != NULL);
    struct inline_check c = {.caller = pthread_self()};
    axon_parallel_for(p, 5, 50005, 50000, inline_fn, &c);
    CHECK_EQ_I64(c.calls, 1);
    CHECK_EQ_I64(c.wrong, 0);
    axon_parallel_for(p, 5, 5, 1, inline_fn, &c);  /* empty: fn is not called */
    axon_parallel_for(p, 9, 5, 1, inline_fn, &c);  /* reversed: empty too */
    CHECK_EQ_I64(c.calls, 1);
    axon_pool_destroy(p);
}

static void test_create_rejects_bad_thread_counts_and_null_out(void) {
    axon_pool_t p = (axon_pool_t)&p;
    CHECK_STATUS(axon_pool_create(0, &p), AXON_ERROR_INVALID_ARG);
    CHECK(p == NULL);
    CHECK_MSG("nthreads");
    CHECK_STATUS(axon_pool_create(-3, &p), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_pool_create(2, NULL), AXON_ERROR_INVALID_ARG);
}

static void test_destroy_accepts_null(void) {
    axon_pool_destroy(NULL);
}

static void test_pools_can_be_created_and_destroyed_repeatedly(void) {
    for (int i = 0; i < 50; i++) {
        axon_pool_t p = NULL;
        CHECK_OK(axon_pool_create(1 + i % 4, &p));
        if (i % 2) {
            struct span_sum s;
            atomic_init(&s.total, 0);
            axon_parallel_for(p, 0, 1000, 1, span_fn, &s);
            CHECK_EQ_I64(atomic_load(&s.total), 1000);
        }
        axon_pool_destroy(p);
    }
}

/* ---- dispatch overhead ---- */

static void empty_fn(void *ctx, int64_t b, int64_t e, int slot) {}

/* Two chunks that each wait for the other to start: the call cannot finish unless a helper takes part. */
static void meet_fn(void *ctx, int64_t b, int64_t e, int slot) {
    atomic_int *arrived = ctx;
    atomic_fetch_add(arrived, 1);
    for (unsigned i = 1; atomic_load(arrived) < 2; i++)
        if (i % 4096 == 0) sched_yield(); /* the partner may wait for this core on a busy machine */
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_an_empty_parallel_for_over_two_threads_dispatches_in_microseconds(void) {
    enum { N = 20000 };
    axon_pool_t p = NULL;
    CHECK_OK(axon_pool_create(2, &p));
    REQUIRE(p != NULL);
    uint64_t *t = malloc(N * sizeof *t);
    REQUIRE(t != NULL);
    for (int i = 0; i < 1000; i++) axon_parallel_for(p, 0, 1 << 20, 1, empty_fn, NULL);
    for (int i = 0; i < N; i++) {
        uint64_t t0 = now_ns();
        axon_parallel_for(p, 0, 1 << 20, 1, empty_fn, NULL);
        t[i] = now_ns() - t0;
    }
    qsort(t, N, sizeof *t, cmp_u64);
    fprintf(stderr, "  empty parallel_for, 2 threads: median %.2f us, p90 %.2f us, p99 %.2f us\n",
            (double)t[N / 2] / 1e3, (double)t[N * 9 / 10] / 1e3, (double)t[N * 99 / 100] / 1e3);
    CHECK(t[N / 2] < 1000000); /* a loose bound: a shared CI machine may be slow, but never a millisecond */
    for (int i = 0; i < N; i++) {
        atomic_int arrived;
        atomic_init(&arrived, 0);
        uint64_t t0 = now_ns();
        axon_parallel_for(p, 0, 2, 1, meet_fn, &arrived);
        t[i] = now_ns() - t0;
    }
    qsort(t, N, sizeof *t, cmp_u64);
    fprintf(stderr, "  2-chunk parallel_for that needs the helper: median %.2f us, p90 %.2f us, p99 %.2f us\n",
            (double)t[N / 2] / 1e3, (double)t[N * 9 / 10] / 1e3, (double)t[N * 99 / 100] / 1e3);
    CHECK(t[N / 2] < 1000000);
    free(t);
    axon_pool_destroy(p);
}

int main(void) {
    RUN(test_every_index_is_covered_exactly_once_for_many_ranges_and_grains);
    RUN(test_a_range_spanning_all_of_int64_is_split_without_overflow);
    RUN(test_slots_are_unique_among_participants_and_below_the_pool_size);
    RUN(test_a_call_from_inside_a_parallel_body_runs_inline_on_the_same_slot);
    RUN(test_four_host_threads_share_a_pool_of_two_and_all_get_correct_results);
    RUN(test_callers_and_helpers_that_went_to_sleep_are_woken);
    RUN(test_a_pool_of_one_and_a_null_pool_run_the_whole_range_inline);
    RUN(test_a_range_within_one_grain_runs_inline_in_one_chunk);
    RUN(test_create_rejects_bad_thread_counts_and_null_out);
    RUN(test_destroy_accepts_null);
    RUN(test_pools_can_be_created_and_destroyed_repeatedly);
    RUN(test_an_empty_parallel_for_over_two_threads_dispatches_in_microseconds);
    return check_report();
}
